"""Softmax-Gaussian probability bounds (moved to a private module).

Kept so that the import path documented in earlier releases keeps working;
new code should use the estimators.
"""

from ._bounds._softmax import softmax_gaussian_bounds, softmax_gaussian_mc

__all__ = ["softmax_gaussian_bounds", "softmax_gaussian_mc"]
