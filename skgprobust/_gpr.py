"""RobustGaussianProcessRegressor: sklearn's GPR plus certified bounds."""

import numbers
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from ._engine._common import BoundModelMixin, check_epsilon, prepare, row_seeds
from ._engine._delta import Explanation, explain_rows, feature_names_of
from ._engine._driver import RangeProblem, certify_rows, range_rows
from ._engine._latent import check_variance_bound, regressor_bound_model
from ._engine._objectives import StdObjective
from ._engine._perturbation import resolve_features
from ._engine._solve import Budget, solve_deviation

_NORMS = (1, 2, np.inf)


def _certify_row(shared, x0, lo, hi, center, rng):
    gpr, objectives, delta, norm, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)

    def deviation(x):
        return float(np.linalg.norm(gpr._predict_values(x[None])[0] - center, ord=norm))

    return solve_deviation(objectives, center, lo, hi, x0, delta, norm, budget, rng, deviation)


class RobustGaussianProcessRegressor(BoundModelMixin, GaussianProcessRegressor):
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

    def _fit_token(self):
        return self.alpha_

    def _build_bound_model(self):
        return regressor_bound_model(self)

    def _predict_values(self, X):
        """sklearn's own ``predict`` as (n, n_targets), for arrays of points
        (what every bound of the mean is checked against)."""
        X = np.atleast_2d(X)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            y = GaussianProcessRegressor.predict(self, X)
        return np.asarray(y, dtype=np.float64).reshape(len(X), -1)

    def _predict_std_values(self, X):
        """sklearn's own predictive std as (n, n_targets), for arrays of points."""
        X = np.atleast_2d(X)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            warnings.filterwarnings("ignore", message="Predicted variances smaller than 0")
            _, std = GaussianProcessRegressor.predict(self, X, return_std=True)
        return np.asarray(std, dtype=np.float64).reshape(len(X), -1)

    def _range_problem(self, statistic="mean", variance_bound="default"):
        """The :class:`RangeProblem` of a statistic: one column per target."""
        bm = self._bound_model()
        if statistic == "mean":
            return RangeProblem(bm.mean_pairs(), self._predict_values)
        # One unit-scale objective serves every target: std_p = s_p sqrt(var).
        var = bm.variances(check_variance_bound(variance_bound))[0]
        scale = bm.latents[0].scale
        pair = (StdObjective(var, 1.0), StdObjective(var, -1.0))
        return RangeProblem([pair], self._predict_std_values, columns=np.zeros(len(scale), dtype=int), scale=scale)

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
        check_variance_bound(variance_bound)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        problem = self._range_problem(statistic, variance_bound)
        return range_rows(
            {0: problem}, [0] * len(X), X, lo, hi, epsilon=epsilon, max_iter=max_iter, time_limit=time_limit,
            n_jobs=n_jobs, random_state=random_state, verbose=verbose,
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
        centers = np.array([self._predict_values(x[None])[0] for x in X]) if n else np.empty((0, 1))
        shared = (self, self._bound_model().mean_pairs(), float(delta), norm, max_iter, time_limit)
        rows = list(zip(X, lo, hi, centers, row_seeds(random_state, n)))

        def violates(idx, P):
            dev = [np.linalg.norm(self._predict_values(p[None])[0] - centers[i], ord=norm) for i, p in zip(idx, P)]
            return np.array(dev) > delta

        return certify_rows(_certify_row, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)

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
        pairs = self._bound_model().mean_pairs()
        if not isinstance(target, numbers.Integral) or isinstance(target, bool) or not 0 <= target < len(pairs):
            raise ValueError(f"target must be an output index in [0, {len(pairs) - 1}], got {target!r}.")
        target = int(target)

        def reference(P):
            return self._predict_values(P)[:, [target]]

        problems = {target: RangeProblem([pairs[target]], reference)}
        values, low, high, converged, times = explain_rows(
            X, lo, hi, feats, [target] * n, problems, epsilon=epsilon, max_iter=max_iter, time_limit=time_limit,
            n_jobs=n_jobs, random_state=random_state, method=method, verbose=verbose,
        )
        return Explanation(
            values, low, high, converged, feats, feature_names_of(self, feats), np.full(n, target),
            np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,))[feats].copy(), times,
        )
