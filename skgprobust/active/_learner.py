"""Pool-based safe active learning for (multi-output) GP regression.

The loop of Li, Rakitsch and Zimmer, "Safe Active Learning for Multi-Output
Gaussian Processes" (AISTATS 2022), Alg. 1: a model of the outputs (any
regressor with ``predict(X, return_std=True)``; ``return_cov=True`` for fully
observed queries, e.g. :class:`~skgprobust.MultiOutputGaussianProcessRegressor`)
and a GP of the safety values. Each iteration

1. keeps the pool candidates whose safety probability exceeds 1 - delta
   (the seed's Eq. 8; or, with ``certify_gamma``, only candidates whose whole
   box around them is *proven* safe by :func:`~skgprobust.active.certify_safe`),
2. among them queries the one with the largest predictive entropy (the
   seed's Eq. 7: per (x, output) variance when outputs are observed one at a
   time, ``observe="partial"``; the log-determinant of the P x P predictive
   covariance when all outputs are observed together, ``observe="full"``),
   or a uniformly random one (``strategy="random"``, the RS baseline),
3. observes the outputs and the safety value there and refits both models
   (hyperparameters warm-started from the previous fit).

The baselines of the seed are settings of the same class: RS_MOGP
(``strategy="random"``), AL_indGPs (a multi-output model with independent
outputs, W = I) and AL_MOGP_nosafe (``safety=False``).
"""

import numbers
from dataclasses import dataclass, fields

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._engine._common import check_bool, check_budget, check_n_jobs, check_verbose
from .._engine._perturbation import check_finite_array, resolve_features

from ._safety import (
    align_by_names,
    certified_safe_fraction,
    certify_safe,
    check_safety_setup,
    is_safe,
    safety_probability,
    safety_quantile,
)

OBSERVE = ("partial", "full")
STRATEGIES = ("entropy", "random")


def _finite_scalar(value, name):
    """``value`` as a float: a finite real number (a Python or NumPy scalar or
    a 0-d array, not a bool or a string), else a ValueError naming it."""
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf" or not np.isfinite(arr):
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    return float(arr)


@dataclass
class ActiveLearningHistory:
    """Per-iteration record of :meth:`SafeActiveLearner.run` (one entry per query).

    Attributes
    ----------
    X : ndarray of shape (n_iter, n_features)
        The queried inputs.
    output : ndarray of int, shape (n_iter,)
        The queried output (-1 when all outputs were observed).
    z : ndarray of shape (n_iter,)
        The safety value observed at each query.
    safe : ndarray of bool, shape (n_iter,)
        Whether the observed safety value is on the safe side of the threshold.
    safe_query_ratio : ndarray of shape (n_iter,)
        Fraction of safe queries so far.
    n_observations : ndarray of int, shape (n_iter,)
        Observed output values after the query (the seed's N_sum).
    rmse : ndarray of shape (n_iter,)
        RMSE of the model's mean on the safe test points, averaged over the
        outputs (NaN without test data).
    log_density : ndarray of shape (n_iter,)
        Mean log predictive density of the safe test outputs (Gaussian with
        the model's predictive std; NaN without test data).
    safety_precision : ndarray of shape (n_iter,)
        Among the test points the safety model calls safe, the fraction that
        are truly safe (NaN when it calls none safe or without test data).
    time : ndarray of shape (n_iter,)
        Seconds per iteration (query + observation + refit + metrics).
    """

    X: np.ndarray
    output: np.ndarray
    z: np.ndarray
    safe: np.ndarray
    safe_query_ratio: np.ndarray
    n_observations: np.ndarray
    rmse: np.ndarray
    log_density: np.ndarray
    safety_precision: np.ndarray
    time: np.ndarray

    def __len__(self):
        return len(self.output)

    def to_frame(self):
        """The per-iteration scalars as a pandas DataFrame (requires pandas).

        Returns
        -------
        frame : pandas.DataFrame
            One row per iteration, one column per 1-D field (``X`` omitted).
        """
        import pandas as pd

        return pd.DataFrame({f.name: getattr(self, f.name) for f in fields(self) if np.ndim(getattr(self, f.name)) == 1})


#: certify_safe's arguments that the learner sets itself (its own parameters).
_OWN_CERTIFY_ARGS = ("threshold", "safe_side", "delta")


def _check_certify_options(options):
    """``certify_options`` must name keyword arguments of :func:`certify_safe`
    other than those the learner passes itself; the run arguments are checked
    as ``certify_safe`` would check them. Done at ``fit``, so a bad option
    fails at once, not at the first :meth:`SafeActiveLearner.query`."""
    import inspect

    own = sorted(set(options) & set(_OWN_CERTIFY_ARGS))
    if own:
        raise ValueError(
            f"certify_options cannot set {own}: the learner passes its own threshold, safe_side and delta."
        )
    if options.get("features") is not None:
        raise ValueError(
            "certify_options cannot set features: a candidate is eligible only when its whole certify_gamma box "
            "is proven safe, and a box moved along some features only would prove less. Give certify_gamma 0 "
            "for the features that must not move instead."
        )
    allowed = [p for p in inspect.signature(certify_safe).parameters
               if p not in ("model", "X", "gamma", "features", *_OWN_CERTIFY_ARGS)]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"certify_options has unknown key(s) {unknown}; it takes {allowed}.")
    check_budget(options.get("max_iter"), options.get("time_limit"))
    check_n_jobs(options.get("n_jobs"))
    check_verbose(options.get("verbose", 0))


def _as_2d_float(X, name):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return X


def _predict_moments(model, X, full):
    """(mean (n, P), std (n, P)) and, when ``full``, covariances (n, P, P)."""
    if full:
        mean, cov = model.predict(X, return_cov=True)
        mean = np.asarray(mean, dtype=np.float64).reshape(len(X), -1)
        cov = np.asarray(cov, dtype=np.float64)
        if cov.shape != (len(X), mean.shape[1], mean.shape[1]):
            raise ValueError(
                "observe='full' needs a model whose predict(X, return_cov=True) returns per-point "
                f"(n_samples, n_outputs, n_outputs) covariances, got shape {cov.shape}."
            )
        return mean, np.sqrt(np.maximum(np.diagonal(cov, axis1=1, axis2=2), 0.0)), cov
    mean, std = model.predict(X, return_std=True)
    return (np.asarray(mean, dtype=np.float64).reshape(len(X), -1),
            np.asarray(std, dtype=np.float64).reshape(len(X), -1), None)


class SafeActiveLearner(BaseEstimator):
    """Safe active learning of a (multi-output) GP regressor (the seed's Alg. 1).

    Parameters
    ----------
    model : regressor
        The model of the outputs, cloned at :meth:`fit`. It must accept
        targets with NaN entries (unobserved outputs) when
        ``observe="partial"`` (e.g. :class:`~skgprobust.MultiOutputGaussianProcessRegressor`),
        and give ``predict(X, return_cov=True)`` with (n, P, P) covariances
        when ``observe="full"``.
    safety_model : regressor
        A GP regressor of the safety values (cloned at :meth:`fit`); for
        :meth:`certify_safe` and ``certify_gamma`` one of this package's
        single-output regressors (:func:`skgprobust.active.certify_safe`).
    threshold : float, default=0.0
        The safety threshold t.
    safe_side : {"below", "above"}, default="below"
        Safe means the safety value is <= t ("below") or >= t ("above").
    delta : float in (0, 1], default=0.05
        Allowed risk: x may be queried when P(safe at x) > 1 - delta.
    observe : {"partial", "full"}, default="partial"
        Query one (x, output) pair per iteration, or all outputs at x.
    strategy : {"entropy", "random"}, default="entropy"
        Largest predictive entropy among the safe candidates, or a uniformly
        random safe candidate (the seed's RS baseline).
    safety : bool, default=True
        False drops the safety constraint (the seed's "nosafe" reference).
    certify_gamma : float, array-like of shape (n_features,) or None, default=None
        When set, a candidate is eligible only when the safety of the whole
        l_inf box of this half-width around it is *proven* (see
        :meth:`certify_safe`), not only at the point.
    certify_options : dict or None, default=None
        Keyword arguments of :func:`~skgprobust.active.certify_safe`
        (``max_iter``, ``time_limit``, ``domain``, ``n_jobs``, ...).
    warm_start : bool, default=True
        Refit each model starting from its previous fit: estimators with a
        ``warm_start`` parameter (e.g. the multi-output GP) refit themselves
        with it on; others are cloned with ``kernel`` set to the previously
        fitted ``kernel_``.
    normalize_entropy : bool, default=False
        False: the seed's entropy, in the outputs' own units. True: each
        output's predictive variance is divided by the variance of its
        observed values before outputs are compared (partial observation:
        ``log var_p(x) - log var(Y_p)``; full: the log-determinant minus
        ``sum_p log var(Y_p)``). Not in the seed: with raw units an output
        that varies little over the initial (safe) data is never queried
        (measured on EngE: the HC output took up to 100% of the queries).
    hyperparameter_posterior : dict or None, default=None
        None: each model predicts with its own fitted hyperparameters (point
        estimates, e.g. by a :class:`~skgprobust.active.MAPOptimizer`). A
        dict (``{}`` for the defaults): the seed's Bayesian treatment (its
        appendix I): both models are wrapped in
        :class:`~skgprobust.active.HyperparameterPosteriorRegressor` with
        these keyword arguments (``n_samples``, ``n_burn``, ``n_steps``, ...;
        needs the optional dependency emcee), so the entropy and the safety
        probability use the moment-matched predictive over posterior samples
        of the hyperparameters, the chains warm-started across iterations.
        Not compatible with ``certify_gamma`` (no bounds for a mixture).
    random_state : int, RandomState instance or None, default=None
        Seeds the random strategy, the certification's local search and the
        hyperparameter samplers.

    Attributes
    ----------
    model_ : regressor
        The fitted model of the outputs.
    safety_model_ : regressor
        The fitted safety model.
    X_ : ndarray of shape (n, n_features)
        Inputs with at least one observed output.
    Y_ : ndarray of shape (n, n_outputs)
        Observed outputs (NaN: not observed).
    Xz_ : ndarray of shape (m, n_features)
        Inputs with an observed safety value.
    z_ : ndarray of shape (m,)
        Observed safety values.
    n_outputs_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X had feature names at :meth:`fit`; later inputs with
        feature names must have the same, in the same order (else
        ``ValueError``), as in scikit-learn.
    """

    def __init__(self, model, safety_model, *, threshold=0.0, safe_side="below", delta=0.05, observe="partial",
                 strategy="entropy", safety=True, certify_gamma=None, certify_options=None, warm_start=True,
                 normalize_entropy=False, hyperparameter_posterior=None, random_state=None):
        self.model = model
        self.safety_model = safety_model
        self.threshold = threshold
        self.safe_side = safe_side
        self.delta = delta
        self.observe = observe
        self.strategy = strategy
        self.safety = safety
        self.certify_gamma = certify_gamma
        self.certify_options = certify_options
        self.warm_start = warm_start
        self.normalize_entropy = normalize_entropy
        self.hyperparameter_posterior = hyperparameter_posterior
        self.random_state = random_state

    # -- setup -----------------------------------------------------------------
    def _check_params(self):
        check_safety_setup(self.threshold, self.safe_side, self.delta)
        for name in ("safety", "warm_start", "normalize_entropy"):
            check_bool(getattr(self, name), name)
        if self.observe not in OBSERVE:
            raise ValueError(f"observe must be 'partial' or 'full', got {self.observe!r}.")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be 'entropy' or 'random', got {self.strategy!r}.")
        if self.certify_options is not None and not isinstance(self.certify_options, dict):
            raise ValueError(f"certify_options must be a dict or None, got {self.certify_options!r}.")
        _check_certify_options(self.certify_options or {})
        if self.hyperparameter_posterior is not None:
            if not isinstance(self.hyperparameter_posterior, dict):
                raise ValueError("hyperparameter_posterior must be a dict of HyperparameterPosteriorRegressor "
                                 f"options or None, got {self.hyperparameter_posterior!r}.")
            if self.certify_gamma is not None:
                raise ValueError("certify_gamma needs a single GP safety model: it cannot be combined with "
                                 "hyperparameter_posterior (a mixture over hyperparameter samples has no bounds).")

    def _templates(self):
        """The (model, safety model) templates, wrapped for the Bayesian treatment when asked."""
        if self.hyperparameter_posterior is None:
            return self.model, self.safety_model
        from ._bayes import HyperparameterPosteriorRegressor

        opts = dict(self.hyperparameter_posterior)
        seed = check_random_state(self.random_state).randint(2**31 - 1, size=2)
        return tuple(HyperparameterPosteriorRegressor(m, **dict({"random_state": int(s)}, **opts))
                     for m, s in zip((self.model, self.safety_model), seed))

    def fit(self, X, Y, z):
        """Fit both models on the initial data.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Training inputs.
        Y : array-like of shape (n, n_outputs)
            Initial outputs; NaN marks an unobserved output.
        z : array-like of shape (n,)
            Safety values at X (all observed).

        Returns
        -------
        self : SafeActiveLearner
            The learner, fitted / updated.
        """
        self._check_params()
        X = self._check_X(X, reset=True)
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        if Y.shape[0] != X.shape[0] or Y.ndim != 2:
            raise ValueError(f"Y must have shape (n_samples, n_outputs) with n_samples={len(X)}, got {Y.shape}.")
        if np.any(np.isinf(Y)):
            raise ValueError("Y contains infinity.")
        empty = np.flatnonzero(np.all(np.isnan(Y), axis=0))
        if empty.size:
            raise ValueError(f"Y has no observed value in output column(s) {empty.tolist()}.")
        z = np.asarray(z, dtype=np.float64).reshape(-1)
        if z.shape[0] != X.shape[0]:
            raise ValueError(f"z must have one safety value per row of X ({len(X)}), got {z.shape[0]}.")
        if not np.all(np.isfinite(z)):
            raise ValueError("z contains NaN or infinity.")
        g = None
        if self.certify_gamma is not None:
            # A pandas Series is aligned by the fitted feature names.
            g = check_finite_array(self.certify_gamma, "certify_gamma", X.shape[1], feature_names=self._names())
            if np.any(g < 0):
                raise ValueError(f"certify_gamma must be non-negative, got {self.certify_gamma!r}.")
        self._certify_gamma = g
        self.n_features_in_ = X.shape[1]
        self.n_outputs_ = Y.shape[1]
        keep = ~np.all(np.isnan(Y), axis=1)
        self.X_, self.Y_ = X[keep].copy(), Y[keep].copy()
        self.Xz_, self.z_ = X.copy(), z.copy()
        self._rng = check_random_state(self.random_state)
        self.model_ = None
        self.safety_model_ = None
        self._model_template, self._safety_template = self._templates()
        self._refit()
        return self

    def _refit(self):
        self.model_ = self._fit_one(self._model_template, self.model_, self.X_,
                                    self.Y_ if self.n_outputs_ > 1 else self.Y_[:, 0])
        self.safety_model_ = self._fit_one(self._safety_template, self.safety_model_, self.Xz_, self.z_)

    def _fit_one(self, template, previous, X, y):
        if self.warm_start and previous is not None:
            params = previous.get_params()
            if "warm_start" in params:
                # The estimator warm-starts itself from its fitted state.
                return previous.set_params(warm_start=True).fit(X, y)
            if hasattr(previous, "kernel_") and "kernel" in params:
                return clone(template).set_params(kernel=previous.kernel_).fit(X, y)
        return clone(template).fit(X, y)

    def _names(self):
        return getattr(self, "feature_names_in_", None)

    def _check_X(self, X, name="X", reset=False, check_names=True):
        """X as a finite float64 (n, n_features) array (1-D: one feature).

        Feature names as sklearn's ``validate_data``: ``reset=True`` (fit)
        records ``feature_names_in_`` from a DataFrame (and forgets earlier
        ones otherwise); later a DataFrame whose columns differ from the
        fitted names, or come in another order, is refused (its columns
        would be read by position: a point unsafe under the model could be
        called, or proven, safe), and a mismatch of names against no names
        is warned about. The models themselves are fitted on arrays.
        """
        if check_names:
            validate_data(self, X, reset=reset, skip_check_array=True, ensure_2d=False)
        X = _as_2d_float(X, name)
        if not reset and X.shape[1] != self.n_features_in_:
            raise ValueError(f"{name} has {X.shape[1]} features, but the learner was fitted with {self.n_features_in_}.")
        return X

    # -- scores ----------------------------------------------------------------
    def _mixture_safety(self, X):
        """P(safe) under a hyperparameter-posterior safety model: the mean
        of the samples' Gaussian probabilities (exact for the mixture, the
        seed's Eq. 30); None for a single GP."""
        components = getattr(self.safety_model_, "predict_components", None)
        if components is None:
            return None
        means, stds = components(X)
        probs = [safety_probability(np.ravel(m), np.ravel(s), float(self.threshold), self.safe_side)
                 for m, s in zip(means, stds)]
        return np.mean(probs, axis=0)

    def safety_probability(self, X):
        """P(safe at x) under the safety model (under a hyperparameter
        posterior: the mixture's, the mean over the samples).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Candidate inputs.

        Returns
        -------
        p : ndarray of shape (n,)
            The probability that the safety value at each row is safe.
        """
        check_is_fitted(self, "safety_model_")
        X = self._check_X(X)
        p = self._mixture_safety(X)
        if p is not None:
            return p
        mean, std = self.safety_model_.predict(X, return_std=True)
        return safety_probability(np.ravel(mean), np.ravel(std), float(self.threshold), self.safe_side)

    def is_safe(self, X):
        """The safety decision P(safe at x) > 1 - delta (bool, shape (n,)),
        evaluated as mean +- z std against the threshold (see
        :mod:`skgprobust.active`); under a hyperparameter posterior, the
        mixture's probability against 1 - delta (delta = 1: every point).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Candidate inputs.

        Returns
        -------
        safe : ndarray of bool, shape (n,)
            The safety decision at each row.
        """
        check_is_fitted(self, "safety_model_")
        return self._is_safe(self._check_X(X))

    def _is_safe(self, X):
        """:meth:`is_safe` of a validated float array (no feature-name check)."""
        p = self._mixture_safety(X)
        if p is not None:
            return np.ones(len(X), dtype=bool) if float(self.delta) >= 1.0 else p > 1.0 - float(self.delta)
        mean, std = self.safety_model_.predict(X, return_std=True)
        return is_safe(np.ravel(mean), np.ravel(std), float(self.threshold), self.safe_side,
                       safety_quantile(float(self.delta)))

    def acquisition(self, X):
        """Predictive entropy (the seed's Eq. 7, up to its constant).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Candidate inputs.

        Returns
        -------
        score : ndarray of shape (n, n_outputs) when ``observe="partial"``
            (log of each output's predictive variance), or (n,) when
            ``observe="full"`` (log-determinant of the predictive covariance).
        """
        check_is_fitted(self, "model_")
        return self._acquisition(self._check_X(X))

    def _acquisition(self, X):
        """:meth:`acquisition` of a validated float array."""
        _, std, cov = _predict_moments(self.model_, X, self.observe == "full")
        log_scale = np.zeros(self.n_outputs_)
        if self.normalize_entropy:
            for p in range(self.n_outputs_):
                y = self.Y_[~np.isnan(self.Y_[:, p]), p]
                v = float(np.var(y)) if len(y) > 1 else 0.0
                log_scale[p] = np.log(v) if v > 0 else 0.0
        with np.errstate(divide="ignore"):
            if cov is None:
                return 2.0 * np.log(std) - log_scale
            sign, logdet = np.linalg.slogdet(cov)
            return np.where(sign > 0, logdet - log_scale.sum(), -np.inf)

    def certify_safe(self, X, gamma, **kwargs):
        """Prove the safety model calls every point of the box around each
        row safe, with the learner's threshold, safe_side and delta.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            The box centres.
        gamma : float or array-like of shape (n_features,)
            Half-width of the l_inf box per feature (a pandas Series is
            aligned by the fitted feature names).
        **kwargs
            Further keyword arguments of
            :func:`skgprobust.active.certify_safe` (``features``, ``domain``,
            ``max_iter``, ``time_limit``, ``n_jobs``, ``random_state``, ...);
            ``features`` may name the fitted feature names.

        Returns
        -------
        result : CertificationResult
            As :func:`skgprobust.active.certify_safe` returns it.
        """
        check_is_fitted(self, "safety_model_")
        X = self._check_X(X)
        # The safety model is fitted on arrays: names are resolved here.
        names = self._names()
        gamma = align_by_names(gamma, "gamma", names)
        if names is not None and kwargs.get("features") is not None:
            kwargs["features"] = resolve_features(kwargs["features"], X.shape[1], names)
        return self._certify_safe(X, gamma, **kwargs)

    def _certify_safe(self, X, gamma, **kwargs):
        """:meth:`certify_safe` of a validated float array."""
        return certify_safe(self.safety_model_, X, gamma, threshold=float(self.threshold), safe_side=self.safe_side,
                            delta=float(self.delta), **kwargs)

    def certified_safe_fraction(self, low, high, cells=10, **kwargs):
        """Fraction of the box [low, high] proven safe, on a grid of cells,
        with the learner's threshold, safe_side and delta.

        Parameters
        ----------
        low, high : float or array-like of shape (n_features,)
            Corners of the region (a scalar applies to every feature; a
            pandas Series is aligned by the fitted feature names).
        cells : int or array-like of int, default=10
            Grid cells per feature.
        **kwargs
            Further keyword arguments of
            :func:`skgprobust.active.certified_safe_fraction` (not
            ``features`` nor ``domain``: every cell is certified whole).

        Returns
        -------
        fraction, centers, result
            As :func:`skgprobust.active.certified_safe_fraction` returns them.
        """
        check_is_fitted(self, "safety_model_")
        # The safety model is fitted on arrays: labelled corners are aligned here.
        low, high = align_by_names(low, "low", self._names()), align_by_names(high, "high", self._names())
        return certified_safe_fraction(self.safety_model_, low, high, cells, threshold=float(self.threshold),
                                       safe_side=self.safe_side, delta=float(self.delta), **kwargs)

    # -- the loop --------------------------------------------------------------
    def _eligible(self, X_pool):
        """Boolean (n_pool,): candidates the safety rule allows."""
        if not self.safety:
            return np.ones(len(X_pool), dtype=bool)
        ok = self._is_safe(X_pool)
        if self._certify_gamma is not None and ok.any():
            opts = dict(self.certify_options or {})
            opts.setdefault("random_state", 0)
            idx = np.flatnonzero(ok)
            import warnings

            from ..exceptions import BudgetExhaustedWarning

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BudgetExhaustedWarning)
                res = self._certify_safe(X_pool[idx], self._certify_gamma, **opts)
            ok[idx[~res.robust]] = False
        return ok

    def query(self, X_pool, available=None):
        """The next query among the pool's eligible candidates.

        Parameters
        ----------
        X_pool : array-like of shape (n_pool, n_features)
            The candidate inputs.
        available : array-like of bool, default=None
            Which candidates (shape (n_pool,)) or (candidate, output) pairs
            (shape (n_pool, n_outputs), ``observe="partial"``) may still be
            queried. None: all.

        Returns
        -------
        x : ndarray of shape (n_features,)
            The chosen candidate (a copy of its pool row).
        output : int or None
            The output to observe (``observe="partial"``), None when all are.

        Raises
        ------
        ValueError
            When no candidate is eligible (none is safe, or none available).
        """
        check_is_fitted(self, "model_")
        X_pool = self._check_X(X_pool, "X_pool")
        i, p = self._query_index(X_pool, available)
        return X_pool[i].copy(), p

    def _query_index(self, X_pool, available=None):
        check_is_fitted(self, "model_")
        n, P = len(X_pool), self.n_outputs_
        partial = self.observe == "partial"
        shape = (n, P) if partial else (n,)
        if available is None:
            avail = np.ones(shape, dtype=bool)
        else:
            avail = np.asarray(available, dtype=bool)
            if partial and avail.ndim == 1:
                avail = np.repeat(avail[:, None], P, axis=1)
            if avail.shape != shape:
                raise ValueError(f"available must have shape {shape}, got {avail.shape}.")
        cand = avail & (self._eligible(X_pool)[:, None] if partial else self._eligible(X_pool))
        if not cand.any():
            raise ValueError("No eligible candidate in the pool: none is available and safe under the safety model.")
        if self.strategy == "random":
            flat = np.flatnonzero(cand.ravel())
            k = int(flat[self._rng.randint(len(flat))])
        else:
            # Score only the rows with a candidate (the predictions are per
            # point): under a hyperparameter posterior every scored point costs
            # one prediction per sample.
            rows = np.flatnonzero(cand.any(axis=1) if partial else cand)
            score = np.full(shape, -np.inf)
            score[rows] = np.where(cand[rows], self._acquisition(X_pool[rows]), -np.inf)
            k = int(np.argmax(score.ravel()))
            if not np.isfinite(score.ravel()[k]):
                flat = np.flatnonzero(cand.ravel())
                k = int(flat[0])
        if partial:
            return k // P, k % P
        return k, None

    def update(self, x, y, z, output=None):
        """Add one observation and refit both models.

        Parameters
        ----------
        x : array-like of shape (n_features,), pandas Series or one-row DataFrame
            The observed input: an array is read by position (as
            :meth:`query` returns it), a Series is aligned by its labels and
            a DataFrame's columns are checked against the fitted feature
            names (as in :meth:`query`).
        y : float (``observe="partial"``) or array-like of shape (n_outputs,)
            The observed output value (partial) or values (full, NaN for
            unobserved).
        z : float
            Safety value at x.
        output : int or None
            The observed output (required when ``observe="partial"``).

        Returns
        -------
        self : SafeActiveLearner
            The learner, fitted / updated.
        """
        check_is_fitted(self, "model_")
        if hasattr(x, "columns"):
            X = self._check_X(x, "x")
            if len(X) != 1:
                raise ValueError(f"x must be one point, got {len(X)} rows.")
            x = X[0]
        elif getattr(x, "ndim", None) == 1 and hasattr(x, "index"):
            x = check_finite_array(x, "x", self.n_features_in_, feature_names=self._names())
        else:
            x = self._check_X(np.asarray(x, dtype=np.float64).reshape(1, -1), "x", check_names=False)[0]
        return self._update(x, y, z, output)

    def _update(self, x, y, z, output):
        """:meth:`update` with a validated float point x (n_features,)."""
        z = _finite_scalar(z, "z")
        row = np.full(self.n_outputs_, np.nan)
        if self.observe == "partial":
            if output is None or not isinstance(output, numbers.Integral) or not 0 <= output < self.n_outputs_:
                raise ValueError(f"output must be an output index in [0, {self.n_outputs_ - 1}], got {output!r}.")
            row[int(output)] = _finite_scalar(y, "y")
        else:
            yv = np.asarray(y, dtype=np.float64).reshape(-1)
            if yv.shape != (self.n_outputs_,) or not np.all(np.isfinite(yv)):
                raise ValueError(f"y must be {self.n_outputs_} finite output values, got {y!r}.")
            row[:] = yv
        # Another output at an input already observed fills that row (and the
        # safety value, observed there already, is not duplicated: duplicated
        # noise-free rows would make the Gram matrices singular).
        same = np.flatnonzero(np.all(self.X_ == x, axis=1))
        if same.size:
            j = same[0]
            self.Y_[j] = np.where(np.isnan(row), self.Y_[j], row)
        else:
            self.X_ = np.vstack([self.X_, x])
            self.Y_ = np.vstack([self.Y_, row])
        if not np.any(np.all(self.Xz_ == x, axis=1)):
            self.Xz_ = np.vstack([self.Xz_, x])
            self.z_ = np.append(self.z_, float(z))
        self._refit()
        return self

    def _is_truly_safe(self, z):
        z = np.asarray(z, dtype=np.float64)
        return z <= self.threshold if self.safe_side == "below" else z >= self.threshold

    def _metrics(self, X_test, Y_test, z_test):
        if X_test is None:
            return np.nan, np.nan, np.nan
        truly = self._is_truly_safe(z_test)
        mean, std, _ = _predict_moments(self.model_, X_test, False)
        rmse = ld = np.nan
        if truly.any():
            err = mean[truly] - Y_test[truly]
            obs = ~np.isnan(Y_test[truly])
            per_output = [np.sqrt(np.mean(err[obs[:, p], p] ** 2)) for p in range(err.shape[1]) if obs[:, p].any()]
            rmse = float(np.mean(per_output))
            s = np.maximum(std[truly], 1e-300)
            logp = -0.5 * np.log(2 * np.pi * s * s) - 0.5 * (err / s) ** 2
            ld = float(np.mean(logp[obs]))
        called = self._is_safe(X_test)
        prec = float(np.mean(truly[called])) if called.any() else np.nan
        return rmse, ld, prec

    def run(self, oracle, X_pool, n_iter, *, X_test=None, Y_test=None, z_test=None, replace=False, callback=None):
        """Alg. 1: ``n_iter`` queries from the pool, with metrics per iteration.

        Parameters
        ----------
        oracle : callable
            ``oracle(x, output) -> (y, z)``: the observed output value (a
            float; an array of all outputs when ``output`` is None) and the
            safety value at x.
        X_pool : array-like of shape (n_pool, n_features)
            The candidate inputs.
        n_iter : int
            Number of queries.
        X_test, Y_test, z_test : array-like, optional
            Test inputs, outputs (n_test, n_outputs) and safety values for the
            metrics (RMSE and log density on the truly safe test points,
            safety-model precision).
        replace : bool, default=False
            Whether a queried (candidate, output) pair may be queried again.
        callback : callable, default=None
            ``callback(iteration, learner)`` after each query and refit (e.g.
            to record :meth:`certified_safe_fraction` as the data grow).

        Returns
        -------
        history : ActiveLearningHistory
            The queries and the metrics after each.
        """
        import time

        check_is_fitted(self, "model_")
        X_pool = self._check_X(X_pool, "X_pool")
        if not isinstance(n_iter, numbers.Integral) or isinstance(n_iter, bool) or n_iter < 0:
            raise ValueError(f"n_iter must be a non-negative integer, got {n_iter!r}.")
        if X_test is not None:
            X_test = self._check_X(X_test, "X_test")
            Y_test = np.asarray(Y_test, dtype=np.float64).reshape(len(X_test), -1)
            z_test = np.asarray(z_test, dtype=np.float64).reshape(-1)
            if Y_test.shape[1] != self.n_outputs_ or z_test.shape[0] != len(X_test):
                raise ValueError("Y_test must be (n_test, n_outputs) and z_test (n_test,).")
        partial = self.observe == "partial"
        avail = np.ones((len(X_pool), self.n_outputs_) if partial else len(X_pool), dtype=bool)
        rec = {k: [] for k in ("X", "output", "z", "safe", "n_observations", "rmse", "log_density",
                               "safety_precision", "time")}
        for _ in range(int(n_iter)):
            t0 = time.perf_counter()
            i, p = self._query_index(X_pool, avail)
            x = X_pool[i]
            y, z = oracle(x.copy(), p)
            if not replace:
                if partial:
                    avail[i, p] = False
                else:
                    avail[i] = False
            self._update(x, y, float(z), output=p)
            rmse, ld, prec = self._metrics(X_test, Y_test, z_test)
            rec["X"].append(x.copy())
            rec["output"].append(-1 if p is None else p)
            rec["z"].append(float(z))
            rec["safe"].append(bool(self._is_truly_safe(z)))
            rec["n_observations"].append(int(np.sum(~np.isnan(self.Y_))))
            rec["rmse"].append(rmse)
            rec["log_density"].append(ld)
            rec["safety_precision"].append(prec)
            rec["time"].append(time.perf_counter() - t0)
            if callback is not None:
                callback(len(rec["time"]) - 1, self)
        safe = np.array(rec["safe"], dtype=bool)
        return ActiveLearningHistory(
            X=np.array(rec["X"], dtype=np.float64).reshape(-1, self.n_features_in_),
            output=np.array(rec["output"], dtype=int),
            z=np.array(rec["z"]),
            safe=safe,
            safe_query_ratio=np.cumsum(safe) / np.arange(1, len(safe) + 1) if len(safe) else np.array([]),
            n_observations=np.array(rec["n_observations"], dtype=int),
            rmse=np.array(rec["rmse"]),
            log_density=np.array(rec["log_density"]),
            safety_precision=np.array(rec["safety_precision"]),
            time=np.array(rec["time"]),
        )
