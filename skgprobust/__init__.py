"""skgprobust: provable robustness guarantees for scikit-learn Gaussian processes.

The public API is what ``__all__`` lists here, plus the public subpackages
:mod:`skgprobust.pipeline` (pipelines), :mod:`skgprobust.active` (safe
active learning with certified safety), :mod:`skgprobust.inspection`
(explanations, attacks, plots, LIME), :mod:`skgprobust.kernels` (kernel
adapters: the extension API) and :mod:`skgprobust.exceptions`. Every other
module is private.
"""

# Old documented import paths (skgprobust.explain, .scoring, ...) are small
# re-exporting modules; ``explain`` must be imported before the function of
# the same name below replaces the package attribute (the module stays in
# sys.modules, so ``from skgprobust.explain import ...`` keeps working).
from . import explain as _explain_module  # noqa: F401
from ._engine._delta import Explanation
from ._engine._results import CertificationResult, RangeResult
from ._gpc import RobustGaussianProcessClassifier
from ._ep import EPGaussianProcessClassifier
from ._gpr import RobustGaussianProcessRegressor
from ._multioutput import MultiOutputGaussianProcessRegressor
from ._scoring import make_robustness_scorer
from ._softmax_gpc import SoftmaxGaussianProcessClassifier
from ._sparse import SparseGaussianProcessClassifier, SparseGaussianProcessRegressor
from .exceptions import (
    BudgetExhaustedWarning,
    RoundTripWarning,
    UnsupportedKernelError,
    UnsupportedModelError,
    UnsupportedStepError,
)
from .kernels import register_adapter, supported_kernels
from .pipeline import certify, explain, prediction_range

__version__ = "0.1.0"

__all__ = [
    "RobustGaussianProcessClassifier",
    "RobustGaussianProcessRegressor",
    "EPGaussianProcessClassifier",
    "SoftmaxGaussianProcessClassifier",
    "SparseGaussianProcessRegressor",
    "SparseGaussianProcessClassifier",
    "MultiOutputGaussianProcessRegressor",
    "certify",
    "prediction_range",
    "explain",
    "make_robustness_scorer",
    "CertificationResult",
    "RangeResult",
    "Explanation",
    "register_adapter",
    "supported_kernels",
    "UnsupportedKernelError",
    "UnsupportedModelError",
    "UnsupportedStepError",
    "BudgetExhaustedWarning",
    "RoundTripWarning",
]
