"""Objectives of the branch and bound (moved to a private module).

Kept so that the import path documented in earlier releases keeps working;
new code should use the estimators.
"""

from ._engine._softmax_objectives import SoftmaxMarginObjective, SoftmaxProbabilities, SoftmaxProbaObjective

__all__ = ["SoftmaxProbabilities", "SoftmaxProbaObjective", "SoftmaxMarginObjective"]
