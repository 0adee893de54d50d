"""Delta explanations and adversarial gap curves.

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.inspection``.
"""

from .inspection import Explanation, GapCurve, GlobalExplanation, adversarial_gap_curve

__all__ = ["Explanation", "GlobalExplanation", "GapCurve", "adversarial_gap_curve"]
