"""Safe active learning with certified safety (Li et al., AISTATS 2022).

:class:`SafeActiveLearner` runs the seed's pool-based loop (entropy
acquisition under a probabilistic safety constraint) for any (multi-output)
GP regressor; :func:`certify_safe` proves the safety constraint over whole
boxes, not only at the pool points, and :func:`certified_safe_fraction`
measures the proven-safe volume of a domain. :class:`MAPOptimizer` (and
:func:`map_optimizer` / :func:`lmc_map_optimizer`) fit the hyperparameters as
the maximum a posteriori estimate under the seed's priors (``SEED_PRIORS``);
:class:`HyperparameterPosteriorRegressor` averages over posterior samples of
them instead (the seed's Bayesian treatment; optional dependency emcee).
"""

from ._bayes import HyperparameterPosteriorRegressor, mixture_moments
from ._learner import ActiveLearningHistory, SafeActiveLearner
from ._priors import SEED_PRIORS, GammaPrior, MAPOptimizer, NormalPrior, lmc_map_optimizer, map_optimizer
from ._safety import SafetyMargin, certified_safe_fraction, certify_safe, safety_probability

__all__ = [
    "SafeActiveLearner",
    "ActiveLearningHistory",
    "certify_safe",
    "certified_safe_fraction",
    "safety_probability",
    "SafetyMargin",
    "MAPOptimizer",
    "GammaPrior",
    "NormalPrior",
    "map_optimizer",
    "lmc_map_optimizer",
    "SEED_PRIORS",
    "HyperparameterPosteriorRegressor",
    "mixture_moments",
]
