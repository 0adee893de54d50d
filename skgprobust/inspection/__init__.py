"""Inspecting robust GP estimators: explanations, attacks, plots, LIME.

* the Delta explanation's result types (:class:`Explanation`,
  :class:`GlobalExplanation`) and the adversarial gap curves of the paper's
  Fig. 6 (:func:`adversarial_gap_curve`, :class:`GapCurve`);
* adversarial attacks (:func:`gpfgs`, :func:`gpjm`, :func:`pgd`,
  :func:`attack_succeeded`): counterexamples, never proofs;
* plots (matplotlib, imported only when a plot is drawn);
* the side-by-side comparison with LIME (``lime`` imported only when used).

Explanations themselves come from the estimators' ``explain`` methods or
:func:`skgprobust.explain`.
"""

from .._engine._delta import Explanation, GlobalExplanation
from ._attacks import attack_succeeded, gpfgs, gpjm, pgd
from ._compare import LimeComparison, compare_with_lime
from ._explain import GapCurve, adversarial_gap_curve
from ._plotting import (
    plot_decision_map,
    plot_explanation,
    plot_explanation_heatmap,
    plot_robustness_curve,
    robustness_curve,
)

__all__ = [
    "Explanation",
    "GlobalExplanation",
    "GapCurve",
    "adversarial_gap_curve",
    "gpfgs",
    "gpjm",
    "pgd",
    "attack_succeeded",
    "compare_with_lime",
    "LimeComparison",
    "robustness_curve",
    "plot_robustness_curve",
    "plot_explanation",
    "plot_explanation_heatmap",
    "plot_decision_map",
]
