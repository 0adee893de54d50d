"""RobustGaussianProcessRegressor: sklearn's GPR plus certified bounds."""

import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from ._engine._api import explained_features, explanation, fill_doc
from ._engine._common import (
    BoundModelMixin,
    check_delta_norm,
    check_epsilon,
    check_output_index,
    check_statistic,
    float64_inputs,
    prepare,
    row_seeds,
)
from ._engine._driver import RangeProblem, certify_rows, range_rows
from ._engine._latent import check_variance_bound, regressor_bound_model
from ._engine._objectives import StdObjective
from ._engine._solve import Budget, solve_deviation


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

    def fit(self, X, y):
        """Fit the Gaussian process regressor (sklearn's ``fit``, inputs in float64).

        Numeric training inputs are stored as float64 (sklearn keeps float32),
        so that ``predict`` evaluates every kernel in float64, the arithmetic
        the certified bounds are proven for (see
        ``skgprobust._engine._common.float64_inputs``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target values.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return super().fit(float64_inputs(X, self.kernel), y)

    def predict(self, X, return_std=False, return_cov=False):
        """Predict using the Gaussian process regression model (sklearn's
        ``predict``, with numeric queries converted to float64 first).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Query points.
        return_std : bool, default=False
            Also return the predictive standard deviation.
        return_cov : bool, default=False
            Also return the joint predictive covariance.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Predictive mean.
        y_std : ndarray, optional
            Predictive standard deviation (``return_std=True``).
        y_cov : ndarray, optional
            Predictive covariance (``return_cov=True``).
        """
        return super().predict(float64_inputs(X, self.kernel), return_std=return_std, return_cov=return_cov)

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

    @fill_doc
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
        %(box)s
        %(epsilon_range)s
        statistic : {"mean", "std"}, default="mean"
            The predictive mean per target, as ``predict`` returns it
            (normalize_y undone), or the predictive standard deviation per
            target, as ``predict(return_std=True)`` returns it (WhiteKernel
            and normalize_y included; negative variances clipped to 0).
        %(run_range)s
        %(variance_bound_regressor)s

        Returns
        -------
        %(range_returns)s
            Arrays of shape (n_samples, n_targets).
        """
        check_statistic(statistic, ("mean", "std"), "a regressor")
        check_epsilon(epsilon)
        check_variance_bound(variance_bound)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        problem = self._range_problem(statistic, variance_bound)
        return range_rows(
            {0: problem}, [0] * len(X), X, lo, hi, epsilon=epsilon, max_iter=max_iter, time_limit=time_limit,
            n_jobs=n_jobs, random_state=random_state, verbose=verbose,
        )

    @fill_doc
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
        %(box)s
        %(delta_regressor)s
        %(norm_regressor)s
        %(run)s

        Returns
        -------
        %(certify_returns)s
            ``bound`` is a proven upper bound of the worst-case deviation.
        """
        delta = check_delta_norm(delta, norm)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        n, d = X.shape
        # One predict per row, the same call that checks candidates: a batched
        # predict can differ in the last bits, enough to make x* itself look
        # like a counterexample when delta = 0.
        centers = np.array([self._predict_values(x[None])[0] for x in X]) if n else np.empty((0, 1))
        shared = (self, self._bound_model().mean_pairs(), delta, norm, max_iter, time_limit)
        rows = list(zip(X, lo, hi, centers, row_seeds(random_state, n)))

        def violates(idx, P):
            dev = [np.linalg.norm(self._predict_values(p[None])[0] - centers[i], ord=norm) for i, p in zip(idx, P)]
            return np.array(dev) > delta

        return certify_rows(_certify_row, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)

    @fill_doc
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
        %(box_explain)s
        %(target_output)s
        %(epsilon_explain)s
        %(method)s
        %(run_explain)s

        Returns
        -------
        %(explain_returns)s
        """
        X, lo, hi = prepare(self, X, gamma, None, domain, max_iter, time_limit)
        n = len(X)
        feats = explained_features(self, X, features)
        pairs = self._bound_model().mean_pairs()
        target = check_output_index(target, len(pairs))

        def reference(P):
            return self._predict_values(P)[:, [target]]

        problems = {target: RangeProblem([pairs[target]], reference)}
        return explanation(
            self, X, lo, hi, gamma, feats, np.full(n, target), [target] * n, problems, epsilon=epsilon,
            method=method, max_iter=max_iter, time_limit=time_limit, n_jobs=n_jobs, random_state=random_state,
            verbose=verbose,
        )
