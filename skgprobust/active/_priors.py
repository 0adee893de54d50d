"""Hyperparameter priors and MAP fitting for the safe active learner's GPs.

Li, Rakitsch and Zimmer (AISTATS 2022, appendix I.1) do not fit the GP
hyperparameters by maximum likelihood: they put independent priors on them
and average predictions over HMC samples of the posterior. With a few dozen
points, type-II maximum likelihood over-fits in ways that matter to the
learner: noise variances collapse towards 0 (an output whose variance
vanishes is never queried again) and ARD length scales of the safety GP run
to their upper bounds in 14 input dimensions (the safety model then
extrapolates confidently and calls far-away unsafe points safe). The seed's
priors are

* ``Gamma(2.5, 1)`` (shape, rate) on kernel variances,
* ``Gamma(1.5, 1)`` on length scales,
* ``Gamma(1.5, 3)`` on noise variances,
* ``Normal(0, 2^2)`` on the LMC mixing weights W.

This module gives the *maximum a posteriori* point estimate under those
priors (the seed's Bayesian average over posterior samples is
:class:`~skgprobust.active.HyperparameterPosteriorRegressor`, which starts
its chains at this estimate): :class:`MAPOptimizer` is an
sklearn-style ``optimizer`` callable that maximises ``log marginal
likelihood + log prior`` with L-BFGS-B, so it plugs into
``GaussianProcessRegressor(optimizer=...)``,
:class:`~skgprobust.RobustGaussianProcessRegressor` and
:class:`~skgprobust.MultiOutputGaussianProcessRegressor` unchanged.

The optimised coordinates are sklearn's: the logarithm of each positive
hyperparameter (``theta = log(value)``) and W itself. By default a prior
density p(v) on a positive value v enters as ``log p(e^t)``: the MAP
estimate is the mode of the posterior in the hyperparameters' own units,
GPflow's MAP convention (the seed's code base). ``GammaPrior(...,
jacobian=True)`` uses the density of ``t = log v`` instead (``log p(e^t) +
t``, the coordinates an HMC sampler moves in). Measured on the toy set
(sin & sigmoid, 12 initial points, normalised outputs), the Jacobian
variant's noise mode (shape / rate = 0.5 of the normalised variance) often
explained the outputs as noise (length scale stuck at the prior mean 1.5).

Soundness: nothing certified depends on how the hyperparameters were
chosen; every bound of the package is for the fitted model's own
``predict``, whatever its hyperparameters.
"""

import numbers

import numpy as np
import scipy.optimize
from sklearn.gaussian_process.kernels import Kernel


class GammaPrior:
    """Gamma(shape, rate) prior on a positive hyperparameter v, evaluated at
    ``t = log v`` (sklearn's coordinates).

    Parameters
    ----------
    shape : float > 0
        Shape parameter of the Gamma density.
    rate : float > 0
        Rate parameter (inverse scale).
    jacobian : bool, default=False
        False: the log density of v itself, ``(shape - 1) t - rate e^t``
        (up to a constant), so the MAP estimate is the posterior mode in the
        hyperparameters' own units (GPflow's MAP convention, the seed's
        code base; the prior's mode is ``(shape - 1) / rate``). True: the
        density of t, with the change of variables' Jacobian, ``shape t -
        rate e^t`` (the mode of the density an HMC sampler in log
        coordinates targets; the prior's mode in t is the prior mean
        ``shape / rate``).
    """

    def __init__(self, shape, rate, jacobian=False):
        for name, v in (("shape", shape), ("rate", rate)):
            if not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"GammaPrior {name} must be a positive number, got {v!r}.")
        self.shape, self.rate, self.jacobian = float(shape), float(rate), bool(jacobian)

    def __call__(self, t):
        """(log density up to a constant, derivative), elementwise in t."""
        t = np.asarray(t, dtype=np.float64)
        e = np.exp(t)
        a = self.shape if self.jacobian else self.shape - 1.0
        return a * t - self.rate * e, a - self.rate * e

    def __repr__(self):
        return f"GammaPrior({self.shape:g}, {self.rate:g}{', jacobian=True' if self.jacobian else ''})"


class NormalPrior:
    """Normal(loc, scale^2) prior on an unconstrained value (e.g. an LMC weight).

    Parameters
    ----------
    loc : float
        Mean of the Normal density.
    scale : float > 0
        Its standard deviation.
    """

    def __init__(self, loc, scale):
        if not isinstance(scale, numbers.Real) or not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"NormalPrior scale must be a positive number, got {scale!r}.")
        self.loc, self.scale = float(loc), float(scale)

    def __call__(self, w):
        w = np.asarray(w, dtype=np.float64)
        r = (w - self.loc) / self.scale
        return -0.5 * r * r, -r / self.scale

    def __repr__(self):
        return f"NormalPrior({self.loc:g}, {self.scale:g})"


#: The seed's priors (appendix I.1), by role.
SEED_PRIORS = {
    "variance": GammaPrior(2.5, 1.0),
    "length_scale": GammaPrior(1.5, 1.0),
    "noise": GammaPrior(1.5, 3.0),
    "weight": NormalPrior(0.0, 2.0),
}

def _prior_table(priors):
    """:data:`SEED_PRIORS` with the overrides ``priors`` (role -> prior).

    Every key must be one of the roles; a misspelt role ("lengthscale",
    "weights") was ignored, so the seed's prior was used without a word.
    """
    if priors is None:
        return dict(SEED_PRIORS)
    if not isinstance(priors, dict):
        raise ValueError(f"priors must be a dict of role -> prior or None, got {priors!r}.")
    unknown = sorted(map(repr, set(priors) - set(SEED_PRIORS)))
    if unknown:
        raise ValueError(f"priors has unknown role(s) {', '.join(unknown)}; the roles are {sorted(SEED_PRIORS)}.")
    for role, prior in priors.items():
        if prior is not None and not callable(prior):
            raise ValueError(f"priors[{role!r}] must be a prior (e.g. GammaPrior, NormalPrior) or None, got {prior!r}.")
    return dict(SEED_PRIORS, **priors)


#: sklearn hyperparameter names (the last ``__`` part) and their role.
_ROLES = {"constant_value": "variance", "length_scale": "length_scale", "noise_level": "noise"}


def kernel_prior_layout(kernel, priors=None):
    """Per-entry priors of ``kernel.theta`` (None where no prior applies).

    Free hyperparameters named ``constant_value`` (ConstantKernel) get the
    variance prior, ``length_scale`` (RBF, Matern, ... one per dimension for
    ARD) the length-scale prior, ``noise_level`` (WhiteKernel) the noise
    prior; any other (periodicity, alpha, sigma_0, ...) gets none (flat).

    Parameters
    ----------
    kernel : sklearn kernel
    priors : dict or None
        Role -> prior, overriding :data:`SEED_PRIORS` entries.

    Returns
    -------
    layout : list of prior or None, length ``len(kernel.theta)``
    """
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be an sklearn kernel, got {kernel!r}.")
    table = _prior_table(priors)
    layout = []
    for hp in kernel.hyperparameters:
        if hp.fixed:
            continue
        role = _ROLES.get(hp.name.rsplit("__", 1)[-1])
        layout += [table.get(role) if role else None] * hp.n_elements
    if len(layout) != len(kernel.theta):  # pragma: no cover - sklearn invariant
        raise ValueError("Could not map the kernel's hyperparameters onto its theta.")
    return layout


def lmc_prior_layout(kernels, n_outputs, n_latent, W_fixed=False, noise_fixed=False, priors=None):
    """Per-entry priors of the parameter vector of
    :class:`~skgprobust.MultiOutputGaussianProcessRegressor`:
    ``[theta of each latent kernel, W.ravel() (unless fixed), log noise
    variances (unless fixed)]``.

    Parameters
    ----------
    kernels : sklearn kernel or list of L kernels
        The latent kernel(s) (one shared kernel is repeated ``n_latent``
        times, as the estimator clones it per latent).
    n_outputs, n_latent : int
    W_fixed, noise_fixed : bool
        Whether W (e.g. ``W="identity"``) / the noise variances are fixed.
    priors : dict or None
        Role -> prior overrides (roles ``variance``, ``length_scale``,
        ``noise``, ``weight``).
    """
    table = _prior_table(priors)
    ks = list(kernels) if isinstance(kernels, (list, tuple)) else [kernels] * int(n_latent)
    layout = [p for k in ks for p in kernel_prior_layout(k, priors)]
    if not W_fixed:
        layout += [table["weight"]] * (int(n_outputs) * int(n_latent))
    if not noise_fixed:
        layout += [table["noise"]] * int(n_outputs)
    return layout


class MAPOptimizer:
    """sklearn ``optimizer`` callable: maximum a posteriori hyperparameters.

    ``MAPOptimizer(layout)(obj_func, initial_theta, bounds)`` minimises
    ``obj_func(theta) - sum_i log p_i(theta_i)`` (``obj_func`` is sklearn's
    negative log marginal likelihood with its gradient) by L-BFGS-B within
    ``bounds`` and returns ``(theta_opt, value)``. The returned value is the
    negative log *posterior* (up to a constant), so restarts compare
    posteriors.

    Parameters
    ----------
    layout : list of prior or None
        One entry per element of theta (see :func:`kernel_prior_layout`,
        :func:`lmc_prior_layout`); None: no prior on that entry.
    maxiter : int, default=15000
        L-BFGS-B iteration limit (scipy's default).
    """

    def __init__(self, layout, maxiter=15000):
        self.layout = list(layout)
        self.maxiter = maxiter

    def log_prior(self, theta):
        """The log prior density of theta and its gradient.

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            Log-transformed hyperparameters, in the layout's order.

        Returns
        -------
        value : float
            Sum of the log prior densities (entries without a prior add 0).
        grad : ndarray of shape (n_params,)
            Its gradient with respect to theta.
        """
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (len(self.layout),):
            raise ValueError(f"theta has {theta.size} entries but the prior layout has {len(self.layout)}.")
        value, grad = 0.0, np.zeros_like(theta)
        for i, prior in enumerate(self.layout):
            if prior is not None:
                v, g = prior(theta[i])
                value += float(v)
                grad[i] = g
        return value, grad

    def __call__(self, obj_func, initial_theta, bounds=None):
        def fun(theta):
            v, g = obj_func(theta, eval_gradient=True)
            lp, glp = self.log_prior(theta)
            return v - lp, np.asarray(g, dtype=np.float64) - glp

        res = scipy.optimize.minimize(fun, np.asarray(initial_theta, dtype=np.float64), method="L-BFGS-B", jac=True,
                                      bounds=bounds, options={"maxiter": self.maxiter})
        return res.x, float(res.fun)

    def __repr__(self):
        return f"MAPOptimizer({self.layout!r})"


def map_optimizer(kernel, priors=None):
    """:class:`MAPOptimizer` with the seed's priors for a single-output GP
    regressor with this ``kernel`` (the ``optimizer`` argument of
    ``GaussianProcessRegressor`` / :class:`~skgprobust.RobustGaussianProcessRegressor`).

    Parameters
    ----------
    kernel : sklearn kernel
        The regressor's kernel (its free hyperparameters get priors by role,
        see :func:`kernel_prior_layout`).
    priors : dict or None, default=None
        Role -> prior, overriding :data:`SEED_PRIORS` entries.

    Returns
    -------
    optimizer : MAPOptimizer
        Pass it as the estimator's ``optimizer``.
    """
    return MAPOptimizer(kernel_prior_layout(kernel, priors))


def lmc_map_optimizer(kernel, n_outputs, n_latent, W="free", noise="free", priors=None):
    """:class:`MAPOptimizer` with the seed's priors for
    :class:`~skgprobust.MultiOutputGaussianProcessRegressor` (its ``optimizer``
    argument). ``W="fixed"`` for ``W="identity"`` or ``W_bounds="fixed"``,
    ``noise="fixed"`` for ``noise_level_bounds="fixed"``.

    Parameters
    ----------
    kernel : sklearn kernel or list of kernels
        The estimator's latent kernel(s) (see :func:`lmc_prior_layout`).
    n_outputs, n_latent : int
        Numbers of outputs and latent functions.
    W : {"free", "fixed"}, default="free"
        Whether the mixing matrix is fitted.
    noise : {"free", "fixed"}, default="free"
        Whether the noise variances are fitted.
    priors : dict or None, default=None
        Role -> prior overrides (roles ``variance``, ``length_scale``,
        ``noise``, ``weight``).

    Returns
    -------
    optimizer : MAPOptimizer
        Pass it as the estimator's ``optimizer``.
    """
    for name, value in (("W", W), ("noise", noise)):
        if value not in ("free", "fixed"):
            raise ValueError(f"{name} must be 'free' or 'fixed', got {value!r}.")
    return MAPOptimizer(lmc_prior_layout(kernel, n_outputs, n_latent, W_fixed=W == "fixed",
                                         noise_fixed=noise == "fixed", priors=priors))
