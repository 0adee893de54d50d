"""Robustness scorers for model selection.

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.make_robustness_scorer``.
"""

from ._scoring import METRICS, RobustnessScorer, make_robustness_scorer

__all__ = ["make_robustness_scorer", "RobustnessScorer", "METRICS"]
