"""RobustGaussianProcessRegressor: sklearn's GPR plus certified bounds."""

import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from ._engine._api import RegressorBoundsMixin, fill_doc
from ._engine._common import check_gram, check_not_compound, discard_fit, float64_inputs, quiet_feature_names
from ._engine._driver import RangeProblem
from ._engine._latent import check_variance_bound, regressor_bound_model
from ._engine._objectives import StdObjective


class RobustGaussianProcessRegressor(RegressorBoundsMixin, GaussianProcessRegressor):
    """Gaussian process regressor with certified robustness bounds.

    A drop-in subclass of :class:`sklearn.gaussian_process.GaussianProcessRegressor`
    (same parameters, fitting and predictions) that adds :meth:`certify` and
    :meth:`prediction_range`. The bounds hold for the numbers this
    estimator's own ``predict`` returns, up to a relative floating-point
    margin of ``skgprobust.bounds.margin_rtol(N, d)`` (about 8 (N + d) * 2**-53)
    times the magnitude of the summed terms.

    Parameters
    ----------
    kernel : kernel instance, default=None
        The GP covariance (sklearn's default ``ConstantKernel(1.0,
        constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")``
        when None); its hyperparameters are optimised at fit unless
        ``optimizer=None``. Certification needs an adapter for every part of
        the fitted kernel (:func:`skgprobust.kernels.make_adapter`); others
        raise :class:`~skgprobust.exceptions.UnsupportedKernelError` at the
        first bound.
    alpha : float or ndarray of shape (n_samples,), default=1e-10
        Value added to the diagonal of the kernel matrix at fit (noise
        variance or jitter), as in sklearn.
    optimizer : 'fmin_l_bfgs_b', callable or None, default='fmin_l_bfgs_b'
        Maximiser of the log-marginal likelihood over the kernel's
        hyperparameters; None keeps the kernel fixed.
    n_restarts_optimizer : int, default=0
        Extra optimiser starts from hyperparameters drawn log-uniformly
        within their bounds.
    normalize_y : bool, default=False
        Standardise the targets at fit (mean 0, variance 1 per target); the
        bounds hold for the de-normalised predictions ``predict`` returns.
    copy_X_train : bool, default=True
        Store a copy of the training inputs (otherwise a reference).
    n_targets : int, default=None
        Number of targets, used by ``sample_y`` before fit, as in sklearn.
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser restarts.

    Attributes
    ----------
    X_train_ : ndarray of shape (n_samples, n_features)
        The training inputs.
    y_train_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        The (normalised, if ``normalize_y``) training targets.
    kernel_ : kernel instance
        The fitted kernel.
    L_ : ndarray of shape (n_samples, n_samples)
        Lower Cholesky factor of ``kernel_(X_train_) + alpha``.
    alpha_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Dual coefficients of the training points in the predictive mean.
    log_marginal_likelihood_value_ : float
        Log-marginal likelihood of ``kernel_.theta``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names seen during fit, when X has string column names.

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : the parent class.
    SparseGaussianProcessRegressor : FITC / DTC / VFE approximations.
    MultiOutputGaussianProcessRegressor : linear model of coregionalisation.

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

    # certify / prediction_range / explain: RegressorBoundsMixin's, with
    # these docstring parts (skgprobust/_engine/_api.py).
    _variance_bound_methods = ("prediction_range",)
    _method_docs = {
        "certify": """\
Prove ``||mean(x) - mean(x*)||_norm <= delta`` on the box around each row.

delta-robustness of the predictive mean (paper Prop. 13), over all
targets. The proof bounds each target's worst deviation separately,
so with several targets and norm 1 or 2 it is sufficient but not
necessary (such rows may stay "unknown").""",
        "certify_result": "``bound`` is a proven upper bound of the worst-case deviation.",
        "prediction_range": "Certified range of the predictive mean over the box around each row.",
        "statistic": """\
statistic : {"mean", "std"}, default="mean"
    The predictive mean per target, as ``predict`` returns it
    (normalize_y undone), or the predictive standard deviation per
    target, as ``predict(return_std=True)`` returns it (WhiteKernel
    and normalize_y included; negative variances clipped to 0).""",
        "range_result": "Arrays of shape (n_samples, n_targets).",
        "explain": """\
Per-feature sensitivity of the predictive mean with certified bounds.

The paper's Delta metric (Sec. 7.4) on the mean of output ``target``:
``Delta_i = (max(T+) - max(T-)) + (min(T+) - min(T-))`` over the
one-sided boxes ``T+ = [x, x + gamma e_i]`` and
``T- = [x - gamma e_i, x]``; about ``2 gamma d mean / d x_i`` for
small gamma.""",
    }

    @fill_doc
    def fit(self, X, y):
        """Fit the Gaussian process regressor (sklearn's ``fit``, inputs in float64).

        %(fit_float64)s
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target values.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_not_compound(self.kernel)
        super().fit(float64_inputs(X, self.kernel), y)
        # As the classifiers: a kernel that is not a covariance at the
        # training inputs (indefinite Gram matrix, e.g. C(-1) * RBF with a
        # large alpha), or whose values there are not finite, is refused.
        # sklearn's fit adds alpha before its Cholesky factor and checks
        # nothing about k itself; the variance bounds need a PSD kernel and
        # the NaN predictions of a non-finite Gram matrix satisfy no bound.
        try:
            check_gram(self.kernel_(self.X_train_), self.kernel_, type(self).__name__)
        except np.linalg.LinAlgError:
            discard_fit(self)  # not fitted: certify / predict must not use that model
            raise
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

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

    def _model_predict(self, X, return_std=False):
        """The model's own ``predict`` on float64 arrays (sklearn's here),
        what every bound is checked against."""
        return GaussianProcessRegressor.predict(self, X, return_std=return_std)

    def _predict_values(self, X):
        """The model's own predictive mean as (n, n_targets), for arrays of points."""
        return self._predict_columns(X, std=False)

    def _predict_std_values(self, X):
        """The model's own predictive std as (n, n_targets), for arrays of points."""
        return self._predict_columns(X, std=True)

    def _predict_columns(self, X, std):
        X = np.atleast_2d(X)
        with quiet_feature_names(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Predicted variances smaller than 0")
            y = self._model_predict(X, return_std=True)[1] if std else self._model_predict(X)
        return np.asarray(y, dtype=np.float64).reshape(len(X), -1)

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
