"""Two-class link bounds (moved to a private module).

Kept so that the import path documented in earlier releases keeps working;
new code should use the estimators.
"""

from ._bounds._links import FiveErfLink, Link, LogisticLink, ProbitLink, verify_five_erf_shape

__all__ = ["Link", "FiveErfLink", "ProbitLink", "LogisticLink", "verify_five_erf_shape"]
