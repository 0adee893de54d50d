"""Robustness scorers for model selection (``GridSearchCV``, ``cross_validate``).

:func:`make_robustness_scorer` returns a plain callable
``scorer(estimator, X, y) -> float`` that certifies every row of ``X`` with
:func:`skgprobust.pipeline.certify` (so fitted pipelines ending in a robust
estimator work too) and summarises the result. Rows whose budget runs out
("unknown") count as **not** proven: the scores are lower bounds of the true
robust fractions.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ._engine._common import check_budget, check_n_jobs, check_verbose
from ._engine._latent import check_variance_bound
from .exceptions import BudgetExhaustedWarning
from .pipeline import certify, final_estimator

__all__ = ["make_robustness_scorer", "RobustnessScorer", "METRICS"]

#: Metrics of :func:`make_robustness_scorer`.
METRICS = ("certified_accuracy", "robustness_rate", "delta_robust_rate")

_DEFAULT_MAX_ITER = 500

#: certify's keywords that the scorer passes on as ``**certify_kwargs`` (its
#: own arguments aside); ``variance_bound`` is the classifiers' only.
_CERTIFY_EXTRA = ("features", "domain", "verbose", "variance_bound")


def _check_gamma(gamma):
    if gamma is None or isinstance(gamma, str):
        raise ValueError(f"gamma must be a non-negative scalar or per-feature array, got {gamma!r}.")
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim > 1 or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"gamma must be a non-negative scalar or per-feature array, got {gamma!r}.")
    return gamma


class RobustnessScorer:
    """Callable ``(estimator, X, y) -> float``; build it with :func:`make_robustness_scorer`.

    Attributes
    ----------
    gamma, metric, delta, norm, max_iter, time_limit, n_jobs, random_state, certify_kwargs
        As given to :func:`make_robustness_scorer`.
    """

    def __init__(self, gamma, metric, delta, norm, max_iter, time_limit, n_jobs, random_state, certify_kwargs):
        self.gamma = gamma
        self.metric = metric
        self.delta = delta
        self.norm = norm
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.certify_kwargs = dict(certify_kwargs)

    def _kind(self, estimator):
        final = final_estimator(estimator)
        if is_classifier(final):
            return "classifier"
        if is_regressor(final):
            return "regressor"
        raise TypeError(f"{type(final).__name__} is neither a classifier nor a regressor.")

    def certify(self, estimator, X):
        """The :class:`~skgprobust.CertificationResult` behind the score."""
        kind = self._kind(estimator)
        kwargs = dict(
            max_iter=self.max_iter,
            time_limit=self.time_limit,
            n_jobs=self.n_jobs,
            random_state=self.random_state,
            **self.certify_kwargs,
        )
        if kind == "regressor":
            if self.metric == "certified_accuracy":
                raise ValueError(
                    "metric='certified_accuracy' needs a classifier; use 'delta_robust_rate' for a regressor."
                )
            if self.delta is None:
                raise ValueError(
                    f"metric={self.metric!r} on a regressor needs delta, the allowed change of the predictive mean."
                )
            kwargs.update(delta=self.delta, norm=self.norm)
        elif self.metric == "delta_robust_rate":
            raise ValueError("metric='delta_robust_rate' needs a regressor; use 'robustness_rate' for a classifier.")
        with warnings.catch_warnings():
            # "unknown" rows count as not proven; the warning would repeat per fold.
            warnings.simplefilter("ignore", BudgetExhaustedWarning)
            return certify(estimator, X, self.gamma, **kwargs)

    def __call__(self, estimator, X, y=None):
        """The score of ``estimator`` on ``X``.

        Parameters
        ----------
        estimator : estimator or Pipeline
            A fitted robust estimator, or a pipeline ending in one.
        X : array-like of shape (n_samples, n_features)
            The rows certified.
        y : array-like of shape (n_samples,) or (n_samples, 1), default=None
            True labels; needed by "certified_accuracy" only.

        Returns
        -------
        score : float
            The metric's fraction of rows, in [0, 1].
        """
        res = self.certify(estimator, X)
        if len(res) == 0:
            return 0.0
        if self.metric == "certified_accuracy":
            if y is None:
                raise ValueError("metric='certified_accuracy' needs the true labels y.")
            # y of shape (n,) or (n, 1), as sklearn's metrics take it: compared as (n,)
            # (a column broadcast against (n,) predictions to an (n, n) table).
            y = column_or_1d(y)
            check_consistent_length(y, res.robust)
            correct = np.asarray(estimator.predict(X)) == y
            return float(np.mean(correct & res.robust))
        return float(np.mean(res.robust))

    def __repr__(self):
        args = [f"gamma={self.gamma!r}", f"metric={self.metric!r}"]
        if self.delta is not None:
            args.append(f"delta={self.delta!r}")
        if self.norm != np.inf:
            args.append(f"norm={self.norm!r}")
        args.append(f"max_iter={self.max_iter!r}")
        for name in ("time_limit", "n_jobs"):
            if getattr(self, name) is not None:
                args.append(f"{name}={getattr(self, name)!r}")
        if self.random_state != 0:
            args.append(f"random_state={self.random_state!r}")
        args += [f"{k}={v!r}" for k, v in self.certify_kwargs.items()]
        return f"make_robustness_scorer({', '.join(args)})"


def make_robustness_scorer(
    gamma,
    *,
    metric="certified_accuracy",
    delta=None,
    norm=np.inf,
    max_iter=_DEFAULT_MAX_ITER,
    time_limit=None,
    n_jobs=None,
    random_state=0,
    **certify_kwargs,
):
    """A scorer of proven robustness, for ``scoring=`` in model selection.

    Parameters
    ----------
    gamma : float or array-like of shape (n_features,)
        Half-width of the l_inf box per feature, in the units of the raw X
        given to the estimator (a pipeline's input).
    metric : {"certified_accuracy", "robustness_rate", "delta_robust_rate"}, default="certified_accuracy"
        - "certified_accuracy" (classifiers): fraction of rows predicted
          correctly **and** proven robust.
        - "robustness_rate": fraction proven robust (for a regressor:
          delta-robust, so ``delta`` is needed).
        - "delta_robust_rate" (regressors): fraction proven delta-robust,
          ``||mean(x) - mean(x*)||_norm <= delta`` on the box.
    delta : float, default=None
        Allowed change of a regressor's mean; required by "delta_robust_rate"
        (and by "robustness_rate" on a regressor).
    norm : {1, 2, np.inf}, default=np.inf
        Norm over a regressor's targets.
    max_iter : int, default=500
        Boxes split per row. An iteration budget keeps scores reproducible.
    time_limit : float, default=None
        Seconds per row (scores then depend on machine speed).
    n_jobs : int, default=None
        Rows certified in parallel (joblib).
    random_state : int, default=0
        Seeds the local search, for reproducible scores.
    **certify_kwargs
        More arguments of ``certify``: ``features``, ``domain``, ``verbose``
        and (classifiers) ``variance_bound``; any other name raises
        ``TypeError`` here, as bad ``max_iter`` / ``time_limit`` / ``n_jobs``
        raise ``ValueError``.

    Returns
    -------
    scorer : RobustnessScorer
        ``scorer(estimator, X, y) -> float`` in [0, 1], greater is better.
        Rows left "unknown" count as not robust.

    Examples
    --------
    >>> from sklearn.model_selection import cross_validate
    >>> from sklearn.datasets import make_moons
    >>> from skgprobust import RobustGaussianProcessClassifier
    >>> from skgprobust.scoring import make_robustness_scorer
    >>> X, y = make_moons(60, noise=0.2, random_state=0)
    >>> scoring = {"accuracy": "accuracy", "certified": make_robustness_scorer(0.05, max_iter=50)}
    >>> cv = cross_validate(RobustGaussianProcessClassifier(random_state=0), X, y, cv=2, scoring=scoring)
    >>> sorted(cv)[:2]
    ['fit_time', 'score_time']
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}.")
    _check_gamma(gamma)
    if metric == "delta_robust_rate" and delta is None:
        raise ValueError("metric='delta_robust_rate' needs delta, the allowed change of the predictive mean.")
    if metric == "certified_accuracy" and delta is not None:
        raise ValueError(
            "delta applies to regressors, but metric='certified_accuracy' (the default) is for classifiers: "
            "pass metric='delta_robust_rate' (or 'robustness_rate') with delta for a regressor."
        )
    if delta is not None and (not isinstance(delta, numbers.Real) or not np.isfinite(delta) or delta < 0):
        raise ValueError(f"delta must be a non-negative finite number, got {delta!r}.")
    if norm not in (1, 2, np.inf):
        raise ValueError(f"norm must be one of 1, 2, np.inf, got {norm!r}.")
    for key in ("X", "gamma", "metric"):
        if key in certify_kwargs:  # pragma: no cover - caught by Python for gamma/metric
            raise TypeError(f"{key!r} cannot be a certify keyword here.")
    # Checked here, once, rather than at every scoring call: in GridSearchCV
    # (error_score=np.nan) a bad argument otherwise turns every score into NaN
    # with one warning per fold.
    check_budget(max_iter, time_limit)
    check_n_jobs(n_jobs)
    unknown = sorted(set(certify_kwargs) - set(_CERTIFY_EXTRA))
    if unknown:
        raise TypeError(
            f"make_robustness_scorer got unexpected certify keyword(s) {unknown}; "
            f"the others it passes on are {list(_CERTIFY_EXTRA)}."
        )
    if "verbose" in certify_kwargs:
        check_verbose(certify_kwargs["verbose"])
    if "variance_bound" in certify_kwargs:
        if delta is not None:
            raise TypeError("variance_bound is a classifier option; a regressor metric (delta given) cannot take it.")
        check_variance_bound(certify_kwargs["variance_bound"])
    return RobustnessScorer(gamma, metric, delta, norm, max_iter, time_limit, n_jobs, random_state, certify_kwargs)
