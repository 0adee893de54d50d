"""Posterior-mean bounds (moved to a private module).

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.kernels`` / the estimators.
"""

from ._bounds._mean import AffineMean, BoxBound, affine_lower, minimise_separable, taylor_lower
from ._fp import margin_rtol

__all__ = ["AffineMean", "BoxBound", "affine_lower", "margin_rtol", "minimise_separable", "taylor_lower"]
