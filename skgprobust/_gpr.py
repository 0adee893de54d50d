"""RobustGaussianProcessRegressor: sklearn's GPR plus certified bounds."""

import numbers
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from ._engine._common import certification_result, check_epsilon, map_rows, prepare, range_result, row_seeds
from ._bounds._mean import AffineMean
from ._engine._delta import Explanation, explain_rows, feature_names_of
from ._engine._latent import from_regressor
from ._engine._perturbation import resolve_features
from ._engine._objectives import StdObjective
from ._engine._solve import Budget, solve_deviation, solve_range

_NORMS = (1, 2, np.inf)


def _model_std(gpr, X):
    """sklearn's own predictive std, as (n, n_targets)."""
    X = np.atleast_2d(X)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        warnings.filterwarnings("ignore", message="Predicted variances smaller than 0")
        _, std = GaussianProcessRegressor.predict(gpr, X, return_std=True)
    return np.asarray(std, dtype=np.float64).reshape(len(X), -1)


def _model_predict(gpr, X):
    """sklearn's own predict, as (n, n_targets), for points given as arrays."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        y = GaussianProcessRegressor.predict(gpr, np.atleast_2d(X))
    return np.asarray(y, dtype=np.float64).reshape(len(np.atleast_2d(X)), -1)


def _mean_objectives(gpr):
    model = from_regressor(gpr)
    objs = []
    for p in range(model.n_outputs):
        f = AffineMean(model.adapter, model.weights[:, p], model.offset[p])
        objs.append((f, f.negated()))
    return objs


def _range_row(shared, x0, lo, hi, rng):
    objectives, epsilon, max_iter, time_limit = shared
    return solve_range(objectives, lo, hi, x0, epsilon, Budget(max_iter, time_limit), rng)


def _certify_row(shared, x0, lo, hi, center, rng):
    gpr, objectives, delta, norm, max_iter, time_limit = shared

    def deviation(x):
        return float(np.linalg.norm(_model_predict(gpr, x)[0] - center, ord=norm))

    return solve_deviation(objectives, center, lo, hi, x0, delta, norm, Budget(max_iter, time_limit), rng, deviation)


class RobustGaussianProcessRegressor(GaussianProcessRegressor):
    """Gaussian process regressor with certified robustness bounds.

    A drop-in subclass of :class:`sklearn.gaussian_process.GaussianProcessRegressor`
    (same parameters, fitting and predictions) that adds :meth:`certify` and
    :meth:`prediction_range`. The bounds hold for the numbers this
    estimator's own ``predict`` returns, up to a relative floating-point
    margin of ``skgprobust.bounds.margin_rtol(N, d)`` (about 8 (N + d) * 2**-53)
    times the magnitude of the summed terms.

    See :class:`sklearn.gaussian_process.GaussianProcessRegressor` for the
    parameters and fitted attributes.

    Examples
    --------
    >>> import numpy as np
    >>> from skgprobust import RobustGaussianProcessRegressor
    >>> X = np.linspace(0, 5, 20).reshape(-1, 1)
    >>> reg = RobustGaussianProcessRegressor().fit(X, np.sin(X).ravel())
    >>> r = reg.prediction_range([[2.5]], gamma=0.1, epsilon=1e-3)
    >>> bool(r.min_lower[0, 0] <= reg.predict([[2.5]])[0] <= r.max_upper[0, 0])
    True
    """

    _fitted_attributes = ("X_train_", "alpha_")

    def prediction_range(
        self,
        X,
        gamma,
        *,
        epsilon=1e-2,
        statistic="mean",
        features=None,
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
        variance_bound="default",
    ):
        """Certified range of the predictive mean over the box around each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Centres of the boxes.
        gamma : float or array-like of shape (n_features,)
            Half-width of the l_inf box per feature, in the units of X.
        epsilon : float, default=1e-2
            Refine until both gaps (min_upper - min_lower, max_upper -
            max_lower) are <= epsilon, or the budget is spent.
        statistic : {"mean", "std"}, default="mean"
            The predictive mean per target, as ``predict`` returns it
            (normalize_y undone), or the predictive standard deviation per
            target, as ``predict(return_std=True)`` returns it (WhiteKernel
            and normalize_y included; negative variances clipped to 0).
        features : array-like of int, bool or str, default=None
            Features allowed to move; the others stay fixed. None: all.
        domain : tuple (low, high), default=None
            Valid input range; the box is clipped to it.
        max_iter : int, default=None
            Boxes split per row (5000 when both budgets are None).
        time_limit : float, default=None
            Seconds per row.
        n_jobs : int, default=None
            Rows run in parallel with joblib; results do not depend on it.
        random_state : int, RandomState instance or None, default=None
            Seeds the random starts of the local search.
        verbose : int, default=0
            Progress on stderr while rows run (a text bar when serial,
            joblib's messages when ``n_jobs`` runs them in parallel).
        variance_bound : {"default", "paper"}, default="default"
            For statistic="std": the closed-form variance bounds (default)
            or the paper's QP/LP (Props. 5-6, much slower; the reference).

        Returns
        -------
        result : RangeResult
            Arrays of shape (n_samples, n_targets).
        """
        if statistic not in ("mean", "std"):
            raise ValueError(f"statistic must be 'mean' or 'std' for a regressor, got {statistic!r}.")
        check_epsilon(epsilon)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        if statistic == "std":
            return self._std_range(X, lo, hi, epsilon, max_iter, time_limit, n_jobs, random_state, variance_bound,
                                   verbose)
        objectives = [f for pair in _mean_objectives(self) for f in pair]
        P = len(objectives) // 2
        rows = list(zip(X, lo, hi, row_seeds(random_state, len(X))))
        outs = map_rows(
            _range_row, (objectives, epsilon, max_iter, time_limit), rows, n_jobs, verbose,
            "prediction_range",
        )
        n, d = X.shape
        lower = np.array([o.lower for o in outs]).reshape(n, 2 * P)
        points = np.array([o.argmin for o in outs]).reshape(n, 2 * P, d)
        vals = _model_predict(self, points.reshape(-1, d)).reshape(n, 2 * P, P) if n else np.empty((0, 2 * P, P))
        idx = np.arange(P)
        return range_result(
            lower[:, 0::2],
            vals[:, 2 * idx, idx],
            points[:, 0::2],
            vals[:, 2 * idx + 1, idx],
            -lower[:, 1::2],
            points[:, 1::2],
            epsilon,
            [o.n_iter for o in outs],
            [o.time for o in outs],
        )

    def _std_range(self, X, lo, hi, epsilon, max_iter, time_limit, n_jobs, random_state, variance_bound, verbose=0):
        # One unit-scale objective serves every target: std_p = s_p sqrt(var).
        model = from_regressor(self)
        var = model.variance(variance_bound)
        scale = model.scale
        objectives = [StdObjective(var, 1.0), StdObjective(var, -1.0)]
        unit_eps = epsilon / max(float(scale.max()), 1e-300)
        rows = list(zip(X, lo, hi, row_seeds(random_state, len(X))))
        outs = map_rows(
            _range_row, (objectives, unit_eps, max_iter, time_limit), rows, n_jobs, verbose,
            "prediction_range",
        )
        n, d = X.shape
        P = len(scale)
        lower = np.array([o.lower for o in outs]).reshape(n, 2)
        points = np.array([o.argmin for o in outs]).reshape(n, 2, d)
        vals = _model_std(self, points.reshape(-1, d)).reshape(n, 2, P) if n else np.empty((0, 2, P))
        min_lo = np.minimum(lower[:, :1] * scale, vals[:, 0])
        max_up = np.maximum(-lower[:, 1:] * scale, vals[:, 1])
        return range_result(
            min_lo, vals[:, 0], np.repeat(points[:, :1], P, 1),
            vals[:, 1], max_up, np.repeat(points[:, 1:], P, 1),
            epsilon, [o.n_iter for o in outs], [o.time for o in outs],
        )

    def certify(
        self,
        X,
        gamma,
        *,
        delta=None,
        norm=np.inf,
        features=None,
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        """Prove ``||mean(x) - mean(x*)||_norm <= delta`` on the box around each row.

        delta-robustness of the predictive mean (paper Prop. 13), over all
        targets. The proof bounds each target's worst deviation separately,
        so with several targets and norm 1 or 2 it is sufficient but not
        necessary (such rows may stay "unknown").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        gamma : float or array-like of shape (n_features,)
            Half-width of the l_inf box per feature.
        delta : float
            Allowed change of the mean; required.
        norm : {1, 2, np.inf}, default=np.inf
            Norm over the targets.
        features, domain, max_iter, time_limit, n_jobs, random_state, verbose
            As in :meth:`prediction_range`.

        Returns
        -------
        result : CertificationResult
            ``bound`` is a proven upper bound of the worst-case deviation.
        """
        if delta is None:
            raise ValueError("certify on a regressor needs delta, the allowed change of the predictive mean.")
        if not isinstance(delta, numbers.Real) or not np.isfinite(delta) or delta < 0:
            raise ValueError(f"delta must be a non-negative finite number, got {delta!r}.")
        if norm not in _NORMS:
            raise ValueError(f"norm must be one of 1, 2, np.inf, got {norm!r}.")
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        n, d = X.shape
        # One predict per row, the same call that checks candidates: a batched
        # predict can differ in the last bits, enough to make x* itself look
        # like a counterexample when delta = 0.
        centers = np.array([_model_predict(self, x)[0] for x in X]) if n else np.empty((0, 1))
        shared = (self, _mean_objectives(self), float(delta), norm, max_iter, time_limit)
        rows = list(zip(X, lo, hi, centers, row_seeds(random_state, n)))
        outs = map_rows(_certify_row, shared, rows, n_jobs, verbose, "certify")
        # Re-check every counterexample with the model before reporting it.
        for i, o in enumerate(outs):
            if o.status == "not_robust":
                dev = np.linalg.norm(_model_predict(self, o.counterexample)[0] - centers[i], ord=norm)
                if not dev > delta:
                    o.status, o.counterexample = "unknown", np.full(d, np.nan)
        return certification_result(outs, d)

    def explain(
        self,
        X,
        gamma,
        *,
        features=None,
        target=0,
        epsilon=1e-2,
        method="bounds",
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        """Per-feature sensitivity of the predictive mean with certified bounds.

        The paper's Delta metric (Sec. 7.4) on the mean of output ``target``:
        ``Delta_i = (max(T+) - max(T-)) + (min(T+) - min(T-))`` over the
        one-sided boxes ``T+ = [x, x + gamma e_i]`` and
        ``T- = [x - gamma e_i, x]``; about ``2 gamma d mean / d x_i`` for
        small gamma.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        gamma : float or array-like of shape (n_features,)
        features : array-like of int, bool or str, default=None
            Features to explain (None: all).
        target : int, default=0
            Output column of a multi-target regressor.
        epsilon : float, default=1e-2
        method : {"bounds", "search"}, default="bounds"
            "bounds": certified intervals; "search": local search only
            (``lower``/``upper`` NaN).
        domain, max_iter, time_limit, n_jobs, random_state, verbose
            As in :meth:`prediction_range`; ``max_iter`` and ``time_limit``
            apply to each one-sided box.

        Returns
        -------
        explanation : Explanation
        """
        X, lo, hi = prepare(self, X, gamma, None, domain, max_iter, time_limit)
        n, d = X.shape
        feats = np.flatnonzero(resolve_features(features, d, getattr(self, "feature_names_in_", None)))
        objectives = _mean_objectives(self)
        if not isinstance(target, numbers.Integral) or isinstance(target, bool) or not 0 <= target < len(objectives):
            raise ValueError(f"target must be an output index in [0, {len(objectives) - 1}], got {target!r}.")
        target = int(target)

        def reference(P, p):
            return _model_predict(self, P)[:, p]

        values, low, high, converged, times = explain_rows(
            X, lo, hi, feats, [target] * n, {target: objectives[target]}, reference, epsilon=epsilon,
            max_iter=max_iter, time_limit=time_limit, n_jobs=n_jobs, random_state=random_state, method=method,
            verbose=verbose,
        )
        return Explanation(
            values, low, high, converged, feats, feature_names_of(self, feats), np.full(n, target),
            np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,))[feats].copy(), times,
        )
