"""Bayesian treatment of GP hyperparameters: posterior samples and
moment-matched predictions (the seed's appendices I.1-I.2).

Li, Rakitsch and Zimmer (AISTATS 2022) do not plug one hyperparameter
estimate into their GPs: they draw hyperparameter vectors from the posterior
``p(theta | D) ~ exp(lml(theta)) p(theta)`` (HMC, 100 samples) and predict
with the mixture ``1/S sum_s p(f(x) | x, D, theta_s)`` (their Eq. 30),
approximated for the entropy acquisition by the Gaussian with the mixture's
first two moments (appendix I.2)::

    mu(x)    = 1/S sum_s mu_s(x)
    Sigma(x) = 1/S sum_s (Sigma_s(x) + mu_s(x) mu_s(x)^T) - mu(x) mu(x)^T
             = 1/S sum_s Sigma_s(x) + 1/S sum_s (mu_s - mu)(mu_s - mu)^T.

:class:`HyperparameterPosteriorRegressor` does this for a single-output
:class:`~sklearn.gaussian_process.GaussianProcessRegressor` (e.g. the
safety model, a :class:`~skgprobust.RobustGaussianProcessRegressor`) and for
:class:`~skgprobust.MultiOutputGaussianProcessRegressor`, with the affine
invariant ensemble sampler of ``emcee`` (Foreman-Mackey et al. 2013; an
optional dependency, ``pip install skgprobust[bayes]``) instead of the
seed's HMC. The target is the log posterior of sklearn's coordinates
``theta`` (logarithms of the positive hyperparameters, the LMC weights W as
they are): the model's own log marginal likelihood plus the seed's priors
(:data:`~skgprobust.active.SEED_PRIORS`) as densities of theta, i.e. with
the Jacobian of ``v = exp(t)`` (``GammaPrior(jacobian=True)``), so the
samples are draws of the hyperparameters' posterior under the Gamma priors
on the values, as GPflow's HMC targets; theta outside the estimator's
hyperparameter bounds has zero density.

The safety probability is not moment-matched: under the mixture it is
exactly the mean of the samples' Gaussian probabilities,
``P(safe at x) = 1/S sum_s Phi(+-(threshold - mu_s(x)) / sigma_s(x))``
(:meth:`HyperparameterPosteriorRegressor.predict_components` gives the
per-sample moments; :class:`~skgprobust.active.SafeActiveLearner` uses
them). Matching two moments understates the tails of a spread-out mixture:
for samples N(0, 1) and N(0, 3^2), threshold 3.7 (safe below), the matched
Gaussian gives P(safe) = 0.951, the mixture 0.946 (unsafe at delta = 0.05).

Cost control (the seed runs 2300 HMC steps per refit): the chain starts at
the estimator's own fit (e.g. the MAP estimate of
:class:`~skgprobust.active.MAPOptimizer`) with ``n_burn`` ensemble steps;
with ``warm_start`` each later fit (one more observation) continues the
previous ensemble for ``n_steps`` steps only. The ``n_samples``
hyperparameter vectors are distinct walkers of the final ensemble (an
ensemble of ``n_walkers >= 2 dim`` walkers is a set of approximately
independent posterior draws once it has mixed).

Soundness: nothing certified here. The certified bounds of the package are
for single GPs; a mixture's moments have none (:func:`certify_safe` refuses
this model with a clear error).
"""

import copy
import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._multioutput import batched_gram, gaussian_lml_batch, sq_diffs
from ._priors import GammaPrior, MAPOptimizer, kernel_prior_layout, lmc_prior_layout


def _require_emcee():
    try:
        import emcee
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "HyperparameterPosteriorRegressor needs the optional dependency emcee (>= 3.1): "
            "pip install 'skgprobust[bayes]' (or pip install emcee)."
        ) from exc
    return emcee


def _with_jacobian(prior):
    """The prior as a density of theta = log(value) (Gamma priors), as the sampler needs."""
    if isinstance(prior, GammaPrior) and not prior.jacobian:
        return GammaPrior(prior.shape, prior.rate, jacobian=True)
    return prior


def mixture_moments(means, spreads, kind="std"):
    """Moments of an equally weighted mixture of Gaussians (the seed's appendix I.2).

    Parameters
    ----------
    means : ndarray of shape (S, n) or (S, n, P)
        Component means.
    spreads : ndarray
        Component standard deviations (``kind="std"``, the shape of
        ``means``), per-point covariances (``kind="cov"``, shape (S, n, P, P)
        for (S, n, P) means) or joint covariances across points
        (``kind="cov"``, shape (S, n, n) for (S, n) means).
    kind : {"std", "cov"}

    Returns
    -------
    mean : ndarray
        ``1/S sum_s mu_s``.
    spread : ndarray
        The mixture's standard deviation (``"std"``) or covariance
        (``"cov"``): ``1/S sum_s Sigma_s + 1/S sum_s (mu_s - mu)(mu_s - mu)^T``.
    """
    means = np.asarray(means, dtype=np.float64)
    spreads = np.asarray(spreads, dtype=np.float64)
    S = means.shape[0]
    mean = means.mean(axis=0)
    dev = means - mean
    if kind == "std":
        var = np.mean(spreads * spreads, axis=0) + np.mean(dev * dev, axis=0)
        return mean, np.sqrt(var)
    if kind != "cov":
        raise ValueError(f"kind must be 'std' or 'cov', got {kind!r}.")
    if means.ndim == 3:  # (S, n, P): per-point P x P covariances
        return mean, spreads.mean(axis=0) + np.einsum("snp,snq->npq", dev, dev) / S
    return mean, spreads.mean(axis=0) + dev.T @ dev / S  # (S, n): joint covariance across points


class _GPRAdapter:
    """theta, bounds, prior layout, log marginal likelihood and per-theta
    models of a fitted single-output sklearn GP regressor."""

    def __init__(self, fitted):
        self.fitted = fitted
        # sklearn's log_marginal_likelihood(theta, clone_kernel=False) sets the
        # kernel's theta in place: evaluate on a scratch copy, never on the model.
        self._scratch = copy.deepcopy(fitted)
        self.theta = np.asarray(fitted.kernel_.theta, dtype=np.float64)
        self.bounds = np.asarray(fitted.kernel_.bounds, dtype=np.float64).reshape(-1, 2)

    def layout(self, priors):
        return kernel_prior_layout(self.fitted.kernel_, priors)

    def lml(self, theta):
        return float(self._scratch.log_marginal_likelihood(theta, clone_kernel=False))

    def lml_batch(self, T):
        """Log marginal likelihoods (S,) at the thetas T (S, dim): sklearn's
        formula (targets as stored, normalised when ``normalize_y``; ``alpha``
        on the diagonal), batched (single-target models; a multi-target one
        falls back to :meth:`lml` per theta)."""
        f = self.fitted
        y = np.asarray(f.y_train_, dtype=np.float64)
        if y.ndim != 1:
            return np.array([self.lml(t) for t in T])
        if not hasattr(self, "_D2"):
            self._D2 = sq_diffs(f.X_train_)
        K = batched_gram(f.kernel_, f.X_train_, T, self._D2)
        idx = np.arange(K.shape[1])
        K[:, idx, idx] += f.alpha
        return gaussian_lml_batch(K, y)

    def model(self, template, theta, X, y):
        k = self.fitted.kernel_.clone_with_theta(theta)
        return clone(template).set_params(kernel=k, optimizer=None).fit(X, y)

    @staticmethod
    def refit(template, previous_theta, previous_fitted, X, y):
        """A fitted template on new data at the previous theta (no optimisation)."""
        k = previous_fitted.kernel_.clone_with_theta(previous_theta)
        return clone(template).set_params(kernel=k, optimizer=None).fit(X, y)


class _LMCAdapter:
    """The same for :class:`~skgprobust.MultiOutputGaussianProcessRegressor`,
    through its public API: ``theta_``, ``bounds_``, the batched
    ``log_marginal_likelihood`` and ``clone_with_theta``."""

    def __init__(self, fitted):
        self.fitted = fitted
        self.theta = np.asarray(fitted.theta_, dtype=np.float64)
        self.bounds = np.asarray(fitted.bounds_, dtype=np.float64).reshape(-1, 2)

    def layout(self, priors):
        f = self.fitted
        # theta_'s layout as fitted (not the current parameters).
        fixed = f.theta_layout_
        W_fixed, noise_fixed = fixed["W_fixed"], fixed["noise_fixed"]
        layout = lmc_prior_layout(f.kernels_, f.n_outputs_, f.n_latent_, W_fixed=W_fixed, noise_fixed=noise_fixed,
                                  priors=priors)
        if len(layout) != len(self.theta):  # pragma: no cover - guards the layout rule above
            raise ValueError("Could not map the priors onto the parameter vector of the multi-output GP.")
        return layout

    def lml(self, theta):
        return float(self.fitted.log_marginal_likelihood(theta))

    def lml_batch(self, T):
        """Log marginal likelihoods (S,) at the parameter vectors T (S, dim)."""
        return self.fitted.log_marginal_likelihood(T)

    def model(self, template, theta, X, y):
        return self.refit(template, theta, self.fitted, X, y)

    @staticmethod
    def refit(template, previous_theta, previous_fitted, X, y):
        """The model at ``previous_theta`` (the parameter layout of
        ``previous_fitted``) on (X, y), without optimisation."""
        return previous_fitted.clone_with_theta(previous_theta).set_params(optimizer=None).fit(X, y)


def _adapter(fitted):
    from .._multioutput import MultiOutputGaussianProcessRegressor

    if isinstance(fitted, MultiOutputGaussianProcessRegressor):
        return _LMCAdapter(fitted)
    if hasattr(fitted, "kernel_") and hasattr(fitted, "log_marginal_likelihood"):
        return _GPRAdapter(fitted)
    raise ValueError(
        "HyperparameterPosteriorRegressor needs a GaussianProcessRegressor-like estimator (kernel_, "
        "log_marginal_likelihood(theta)) or a MultiOutputGaussianProcessRegressor, got "
        f"{type(fitted).__name__}."
    )


class HyperparameterPosteriorRegressor(RegressorMixin, BaseEstimator):
    """GP regression averaged over posterior samples of its hyperparameters.

    The Bayesian treatment of the seed (appendix I): hyperparameter vectors
    drawn from ``p(theta | D) ~ exp(lml(theta)) p(theta)`` by emcee's
    ensemble sampler (optional dependency), predictions by the first two
    moments of the mixture of the per-sample GP posteriors (appendix I.2,
    :func:`mixture_moments`). See the module documentation for the target
    density and the cost controls.

    Parameters
    ----------
    estimator : regressor
        A single-output sklearn ``GaussianProcessRegressor`` (or
        :class:`~skgprobust.RobustGaussianProcessRegressor`) or a
        :class:`~skgprobust.MultiOutputGaussianProcessRegressor`; cloned and
        fitted first (its own ``optimizer``, e.g. a
        :class:`~skgprobust.active.MAPOptimizer`, gives the chain's start).
    n_samples : int, default=32
        Hyperparameter vectors averaged in predictions (distinct walkers of
        the final ensemble; at most ``n_walkers``).
    n_walkers : int or None, default=None
        Walkers of the ensemble; None: ``max(2 dim + 2, n_samples)`` for
        ``dim`` free hyperparameters (rounded up to even).
    n_burn : int, default=300
        Ensemble steps of a cold fit (the seed's HMC drops its first 300).
    n_steps : int, default=20
        Ensemble steps of a warm-started fit (``warm_start=True`` after a
        first fit): the chain continues from the previous ensemble, its
        start moved into the new posterior by these steps.
    priors : dict or None, default=None
        Role -> prior overrides of :data:`~skgprobust.active.SEED_PRIORS`
        (``variance``, ``length_scale``, ``noise``, ``weight``); Gamma priors
        are applied as densities of log(value) (with the Jacobian), see the
        module documentation. When ``estimator.optimizer`` is a
        :class:`~skgprobust.active.MAPOptimizer` its layout is used instead
        (Gamma entries turned into densities of the log).
    init_scale : float, default=1e-2
        Standard deviation of the initial walkers around the estimator's fit
        (in theta's coordinates).
    warm_start : bool, default=False
        Continue the previous chain at the next :meth:`fit` (the safe
        active learner turns this on between iterations).
    random_state : int, RandomState instance or None, default=None
        Seeds the walkers' start, the sampler and the choice of samples.

    Attributes
    ----------
    estimator_ : regressor
        The estimator fitted at the start of the chain (cold fit) or at the
        previous sample's hyperparameters (warm fit) on the current data.
    samples_ : ndarray of shape (n_samples, dim)
        The hyperparameter vectors (theta coordinates) averaged in predictions.
    estimators_ : list of regressors
        One fitted model per sample.
    acceptance_fraction_ : float
        Mean acceptance fraction of the last run of the sampler.
    log_posterior_ : ndarray of shape (n_samples,)
        Log posterior (up to a constant) at each sample.
    chain_state_ : ndarray of shape (n_walkers, dim)
        The final ensemble (the start of a warm fit).
    n_evaluations_ : int
        Log posterior evaluations of the last fit.
    """

    def __init__(self, estimator, *, n_samples=32, n_walkers=None, n_burn=300, n_steps=20, priors=None,
                 init_scale=1e-2, warm_start=False, random_state=None):
        self.estimator = estimator
        self.n_samples = n_samples
        self.n_walkers = n_walkers
        self.n_burn = n_burn
        self.n_steps = n_steps
        self.priors = priors
        self.init_scale = init_scale
        self.warm_start = warm_start
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            inner = self.estimator.__sklearn_tags__()
            tags.target_tags.multi_output = inner.target_tags.multi_output
            tags.target_tags.single_output = inner.target_tags.single_output
            tags.input_tags.allow_nan = inner.input_tags.allow_nan
        except AttributeError:  # pragma: no cover
            pass
        return tags

    def _check_params(self):
        for name, low in (("n_samples", 1), ("n_burn", 0), ("n_steps", 0)):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}.")
        if self.n_walkers is not None and (not isinstance(self.n_walkers, numbers.Integral)
                                           or isinstance(self.n_walkers, bool) or self.n_walkers < 2):
            raise ValueError(f"n_walkers must be an integer >= 2 or None, got {self.n_walkers!r}.")
        if not isinstance(self.init_scale, numbers.Real) or not np.isfinite(self.init_scale) or self.init_scale <= 0:
            raise ValueError(f"init_scale must be a positive number, got {self.init_scale!r}.")
        if self.priors is not None and not isinstance(self.priors, dict):
            raise ValueError(f"priors must be a dict or None, got {self.priors!r}.")

    def _layout(self, adapter):
        opt = getattr(self.estimator, "optimizer", None)
        if isinstance(opt, MAPOptimizer) and len(opt.layout) == len(adapter.theta):
            layout = opt.layout
        else:
            layout = adapter.layout(self.priors)
        return [None if p is None else _with_jacobian(p) for p in layout]

    def fit(self, X, y):
        """Fit the estimator, then sample its hyperparameters' posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            As the wrapped estimator accepts (NaN = unobserved output for the
            multi-output GP).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_params()
        emcee = _require_emcee()
        warm = self.warm_start and hasattr(self, "chain_state_")
        if not warm:
            self._rng = check_random_state(self.random_state)
        if warm:
            fitted = self._adapter_cls.refit(self.estimator, self.samples_[0], self.estimator_, X, y)
        else:
            fitted = clone(self.estimator).fit(X, y)
        adapter = _adapter(fitted)
        dim = len(adapter.theta)
        if warm and self.chain_state_.shape[1] != dim:
            raise ValueError("warm_start: the number of hyperparameters changed since the previous fit.")
        layout = self._layout(adapter)
        lo, hi = adapter.bounds[:, 0], adapter.bounds[:, 1]
        counter = [0]

        def log_prob(T):
            T = np.atleast_2d(np.asarray(T, dtype=np.float64))
            counter[0] += len(T)
            out = np.full(len(T), -np.inf)
            inside = np.flatnonzero(np.all((T >= lo) & (T <= hi), axis=1))
            if inside.size:
                v = adapter.lml_batch(T[inside])
                lp = np.zeros(inside.size)
                for j, pr in enumerate(layout):  # each prior is elementwise in its coordinate
                    if pr is not None:
                        lp += pr(T[inside, j])[0]
                out[inside] = np.where(np.isfinite(v), v + lp, -np.inf)
            return out

        if dim == 0:
            samples = np.zeros((1, 0))
            self.chain_state_ = samples
            self.acceptance_fraction_ = np.nan
            lp = log_prob(np.zeros((1, 0)))
        else:
            nw = self.n_walkers if self.n_walkers is not None else max(2 * dim + 2, self.n_samples)
            nw += nw % 2
            if nw < dim + 1:
                raise ValueError(f"n_walkers ({nw}) must exceed the number of hyperparameters ({dim}).")
            if warm and len(self.chain_state_) == nw:
                start, steps = self.chain_state_.copy(), self.n_steps
            else:
                # A ball around the estimator's fit; a coordinate at a bound is
                # pushed inwards (clipping would put every walker on the same
                # value, which the stretch move can never leave).
                eps = self.init_scale * self._rng.standard_normal((nw, dim))
                start = adapter.theta + eps
                out = (start < lo) | (start > hi)
                start[out] = (adapter.theta - eps)[out]
                start, steps = np.clip(start, lo, hi), self.n_burn
            sampler = emcee.EnsembleSampler(nw, dim, log_prob, vectorize=True)
            state = emcee.State(start, random_state=self._rng.get_state())
            if steps:
                state = sampler.run_mcmc(state, steps, skip_initial_state_check=True)
                self.acceptance_fraction_ = float(np.mean(sampler.acceptance_fraction))
                coords, lps = state.coords, state.log_prob
                self._rng.set_state(sampler.random_state)
            else:
                self.acceptance_fraction_ = np.nan
                coords, lps = start, log_prob(start)
            self.chain_state_ = np.array(coords)
            ok = np.flatnonzero(np.isfinite(lps))
            if ok.size == 0:
                raise ValueError("Every walker has zero posterior density: check the hyperparameter bounds and priors.")
            pick = self._rng.choice(ok, size=min(self.n_samples, ok.size), replace=False)
            samples, lp = self.chain_state_[pick], np.asarray(lps)[pick]
        self.estimator_ = fitted
        self._adapter_cls = type(adapter)
        self.samples_ = samples
        self.log_posterior_ = np.asarray(lp, dtype=np.float64)
        self.estimators_ = [adapter.model(self.estimator, t, X, y) for t in samples]
        self.n_evaluations_ = counter[0]
        for attr in ("n_features_in_", "feature_names_in_", "n_outputs_"):
            if hasattr(fitted, attr):
                setattr(self, attr, getattr(fitted, attr))
        return self

    def predict_components(self, X):
        """Per-sample predictive means and standard deviations.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Query points.

        Returns
        -------
        means, stds : ndarray
            Of shape (n_samples, n) (single output) or (n_samples, n, P)
            (multi-output), one row per hyperparameter sample.
        """
        check_is_fitted(self, "estimators_")
        outs = [m.predict(X, return_std=True) for m in self.estimators_]
        return np.array([o[0] for o in outs]), np.array([o[1] for o in outs])

    def predict(self, X, return_std=False, return_cov=False):
        """Mean (and std or covariance) of the moment-matched mixture.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Query points.
        return_std : bool, default=False
            Also return the predictive standard deviation.
        return_cov : bool, default=False
            The covariance as the wrapped estimator returns it: (n, n) across
            points for a single-output GPR, (n, P, P) per point for the
            multi-output GP.

        Returns
        -------
        mean : ndarray
            Mean of the mixture over the hyperparameter samples.
        std or cov : ndarray, only when requested
            Its standard deviation or covariance (moment matched: the
            samples' mean variance plus the variance of their means).
        """
        check_is_fitted(self, "estimators_")
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        if not (return_std or return_cov):
            return np.mean([m.predict(X) for m in self.estimators_], axis=0)
        kind = "std" if return_std else "cov"
        outs = [m.predict(X, return_std=return_std, return_cov=return_cov) for m in self.estimators_]
        return mixture_moments(np.array([o[0] for o in outs]), np.array([o[1] for o in outs]), kind)
