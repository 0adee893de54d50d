"""Layer 1, pure numerics: sound bounds over input boxes.

Posterior-mean bounds (``_mean``), posterior-variance bounds (``_variance``,
and the paper's QP/LP in ``_variance_paper``), two-class link bounds
(``_links``) and softmax bounds (``_softmax``). Together with the kernel
adapters of :mod:`skgprobust.kernels` this layer knows nothing of
estimators, branch and bound or rows: it maps boxes to bounds. Private.
"""
