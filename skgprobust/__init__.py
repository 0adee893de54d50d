"""skgprobust: provable robustness guarantees for scikit-learn Gaussian processes."""

from .classifier import RobustGaussianProcessClassifier
from .exceptions import BudgetExhaustedWarning, UnsupportedKernelError
from .kernels import register_adapter, supported_kernels
from .regressor import RobustGaussianProcessRegressor
from .results import CertificationResult, RangeResult

__version__ = "0.1.0"

__all__ = [
    "RobustGaussianProcessRegressor",
    "RobustGaussianProcessClassifier",
    "CertificationResult",
    "RangeResult",
    "UnsupportedKernelError",
    "BudgetExhaustedWarning",
    "register_adapter",
    "supported_kernels",
]
