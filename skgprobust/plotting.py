"""Plots of certified results.

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.inspection``.
"""

from .inspection import (
    plot_decision_map,
    plot_explanation,
    plot_explanation_heatmap,
    plot_robustness_curve,
    robustness_curve,
)

__all__ = ["robustness_curve", "plot_robustness_curve", "plot_explanation", "plot_explanation_heatmap", "plot_decision_map"]
