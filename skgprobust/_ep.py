"""EPGaussianProcessClassifier: probit GP classification by Expectation Propagation.

The model
---------
Binary labels y_i in {-1, +1}, latent f ~ GP(0, k), probit likelihood
p(y_i | f_i) = Phi(y_i f_i). Expectation Propagation (Minka 2001; Rasmussen &
Williams, GPML Sec. 3.6, Algs. 3.5-3.6) replaces each likelihood term by an
unnormalised Gaussian *site* t_i(f_i) = Z~_i N(f_i | nu~_i / tau~_i,
1 / tau~_i) (precision tau~_i, precision times mean nu~_i), chosen so that
the posterior q(f) = N(mu, Sigma), Sigma = (K^-1 + T~)^-1, mu = Sigma nu~,
matches the moments of each *tilted* distribution (cavity times the true
likelihood term). With S~ = diag(tau~) and B = I + S~^1/2 K S~^1/2 = L L^T,

    Sigma = K - V^T V,   V = L^-1 S~^1/2 K                    (never inverts K)

and the predictive latent at x (Alg. 3.6)

    mean(x) = k(x, X) @ w,          w = nu~ - S~^1/2 L^-T L^-1 S~^1/2 K nu~
    var(x)  = k(x, x) - ||L^-1 diag(S~^1/2) k(X, x)||^2

with P(y = +1 | x) = Phi(mean / sqrt(1 + var)), the exact probit-Gaussian
integral. This is precisely the latent-model protocol of
:mod:`skgprobust._engine._latent` with ``L = chol(B)``, ``col_scale =
sqrt(tau~)`` and ``weights = w`` (the same form as sklearn's Laplace GPC with
``W_sr_`` replaced by the square roots of the site precisions), so the
existing mean / variance bounds, the probit link bounds (paper Prop. 8) and
the branch and bound apply unchanged.

Why the certificates hold for *this* estimator
----------------------------------------------
The bounds are proven for the two protocol formulas evaluated with the
stored factors, whatever values the sites have, provided tau~ >= 0 (then
S = S~^1/2 B^-1 S~^1/2 is PSD and 0 <= P <= I, the lemma the variance bounds
rest on; the proof is the one in :mod:`skgprobust._bounds._variance` with
Dc = S~^1/2, Dw = 0). Nothing requires EP to have converged: on every exit
path (converged, ``max_iter_predict`` sweeps spent, a skipped site update)
the stored ``L_``, ``W_sr_`` and ``weights_`` are recomputed together from
the final sites, so they describe one well-defined Gaussian process, and
``predict`` / ``predict_proba`` / ``latent_mean_and_variance`` evaluate
exactly the protocol formulas with them:

* the latent mean as ``kernel_(X_train_, X).T @ weights_`` and the variance
  as ``kernel_.diag(X) - ||solve_triangular(L_, W_sr_ * K_star)||^2``, the
  same operations as sklearn's ``latent_mean_and_variance`` (whose rounding
  the mean and variance bounds already cover);
* the probability with :meth:`~skgprobust._bounds._links.ProbitLink.value`
  itself (``ndtr(mean / sqrt(1 + max(var, 0)))``), the very function whose
  monotone range the bounds use (floating-point division, addition and sqrt
  are correctly rounded, hence monotone; ``ndtr``'s own few-ulp error is
  covered by the link's margin of 1e-15);
* ``predict``: class 1 iff the latent mean is > 0 (Phi(z) > 1/2 iff z > 0,
  so it is the class of larger probability, ties to class 0 as in sklearn).

Site updates and guards
-----------------------
Sequential sweeps (default, GPML Alg. 3.5): each site in turn, with a rank-one
update of Sigma and a fresh Cholesky factorisation of B after every sweep
(which also removes the drift of the rank-one updates). Parallel sweeps
(``ep_updates="parallel"``): all sites from the same posterior marginals,
then one factorisation; each step is damped (new site = 1/2 old + 1/2
proposal, in natural parameters) because undamped parallel EP can oscillate.
Convergence: the largest change of any site parameter in a sweep,
``max |d tau~| / (1 + tau~)`` and ``max |d nu~| / (1 + |nu~|)``, is <= ``tol``.

For the probit likelihood exact EP keeps every site precision in [0, 1]:
the tilted variance is s2_hat = s2c (1 - s2c r (z + r) / (1 + s2c)) with
r = N(z)/Phi(z) and 0 < r (z + r) < 1 (the variance of a truncated
Gaussian), so s2c / (1 + s2c) < s2_hat <= s2c, i.e. 0 <= 1/s2_hat - 1/s2c
< 1. (So ``W_sr_`` <= 1, like sklearn's Laplace ``W_sr_`` <= 1/2, and B is
as well conditioned as there.) Rounding can still produce tiny negative
values or a non-positive cavity precision on near-deterministic sites. The standard guards apply:
a site whose cavity precision 1/Sigma_ii - tau~_i is not positive, or whose
moments are not finite, keeps its old parameters for that sweep; a new site
precision below zero is set to zero (tau~ >= 0 is what the square roots and
the bounds need). The tilted moments use the log-domain ratio
N(z)/Phi(z) = exp(log phi(z) - log Phi(z)) so that large negative z do not
underflow.

Marginal likelihood and gradient
--------------------------------
log Z_EP (GPML eq. 3.65, in the stable form of Sec. 3.6.3 that never divides
by tau~, with tau_-i, nu_-i the cavity parameters and mu_-i = nu_-i / tau_-i):

    sum_i log Phi(y_i mu_-i / sqrt(1 + 1/tau_-i))
    + 1/2 sum_i log(1 + tau~_i / tau_-i) - sum_i log L_ii
    + 1/2 nu~^T Sigma nu~ - 1/2 sum_i nu~_i^2 / (tau_-i + tau~_i)
    + 1/2 sum_i nu_-i (tau~_i mu_-i - 2 nu~_i) / (tau_-i + tau~_i)

At an EP fixed point the derivative of log Z_EP with respect to the site
parameters vanishes (Seeger 2005), so the gradient in the kernel
hyperparameters is that of the Gaussian term with the sites held fixed
(GPML eq. 5.27): d log Z_EP / d theta_j = 1/2 tr((w w^T - R) dK/d theta_j),
R = S~^1/2 B^-1 S~^1/2, w the predictive weights above. Away from
convergence (loose ``tol``) it is the gradient of a nearby function; the
tests compare it with finite differences at tight tolerance.
"""

import math
import warnings
from numbers import Real

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.linalg.blas import dger as _dger
from scipy.special import log_ndtr
# Two semi-private sklearn names are kept on purpose, the ones every
# sklearn-compatible estimator that extends an sklearn estimator's
# ``_parameter_constraints`` needs (there is no public path for either):
# ``_fit_context`` runs the same parameter validation as the parent
# GaussianProcessClassifier.fit (honouring ``skip_parameter_validation``), and
# ``Interval`` / ``StrOptions`` are the vocabulary of those constraints.
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._bounds._links import ProbitLink
from ._engine._common import check_gram, discard_fit
from ._engine._latent import BoundModel, LatentModel, fitted_decision_kind
from ._gpc import RobustGaussianProcessClassifier
from ._hyperopt import optimise_hyperparameters

EP_UPDATES = ("sequential", "parallel")

#: Damping of the parallel updates (fraction of the proposed step taken).
PARALLEL_DAMPING = 0.5

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_PROBIT = ProbitLink()


def _tilted(y, nu_cav, tau_cav):
    """Moments of the tilted distribution Phi(y f) N(f | mu_c, 1/tau_c).

    Returns (log Zhat, mu_hat, s2_hat) element-wise (GPML eqs. 3.58, 3.82).
    """
    s2c = 1.0 / tau_cav
    muc = nu_cav * s2c
    denom = np.sqrt(1.0 + s2c)
    z = y * muc / denom
    logZ = log_ndtr(z)
    ratio = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - logZ)  # N(z) / Phi(z), stable for z << 0
    mu_hat = muc + y * s2c * ratio / denom
    s2_hat = s2c - s2c * s2c * ratio * (z + ratio) / (1.0 + s2c)
    return logZ, mu_hat, s2_hat


def _site_update(y, nu_cav, tau_cav, tau_old, nu_old):
    """Proposed site parameters from the cavities, with the guards of the
    module doc (old parameters kept where the update is not valid)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ok = tau_cav > 0
        safe_tau = np.where(ok, tau_cav, 1.0)
        _, mu_hat, s2_hat = _tilted(y, np.where(ok, nu_cav, 0.0), safe_tau)
        ok &= np.isfinite(mu_hat) & np.isfinite(s2_hat) & (s2_hat > 0)
        tau_new = np.maximum(1.0 / s2_hat - safe_tau, 0.0)
        nu_new = mu_hat / s2_hat - nu_cav
        ok &= np.isfinite(tau_new) & np.isfinite(nu_new)
    return np.where(ok, tau_new, tau_old), np.where(ok, nu_new, nu_old)


def _site_update_scalar(y, nu_cav, tau_cav, tau_old, nu_old):
    """:func:`_site_update` for one site in plain floats (the sequential
    sweep's inner loop; the same formulas and guards)."""
    if not tau_cav > 0:
        return tau_old, nu_old
    s2c = 1.0 / tau_cav
    muc = nu_cav * s2c
    denom = math.sqrt(1.0 + s2c)
    z = y * muc / denom
    ratio = math.exp(-0.5 * z * z - _LOG_SQRT_2PI - float(log_ndtr(z)))
    mu_hat = muc + y * s2c * ratio / denom
    s2_hat = s2c - s2c * s2c * ratio * (z + ratio) / (1.0 + s2c)
    if not (math.isfinite(mu_hat) and math.isfinite(s2_hat) and s2_hat > 0):
        return tau_old, nu_old
    tau_new = max(1.0 / s2_hat - tau_cav, 0.0)
    nu_new = mu_hat / s2_hat - nu_cav
    if not (math.isfinite(tau_new) and math.isfinite(nu_new)):
        return tau_old, nu_old
    return tau_new, nu_new


def _factor(K, tau, nu):
    """Posterior of the sites (tau, nu): L = chol(B), sqrt(tau), Sigma, mu, w."""
    sW = np.sqrt(tau)
    B = np.eye(len(K)) + sW[:, None] * K * sW[None, :]
    L = cholesky(B, lower=True)
    V = solve_triangular(L, sW[:, None] * K, lower=True)
    Sigma = K - V.T @ V
    mu = Sigma @ nu
    # GPML Alg. 3.6: w = nu - S^1/2 L^-T L^-1 S^1/2 K nu.
    w = nu - sW * cho_solve((L, True), sW * (K @ nu))
    return L, sW, Sigma, mu, w


def expectation_propagation(K, y, *, tol=1e-6, max_sweeps=100, updates="sequential", tau0=None, nu0=None):
    """Run EP for the probit likelihood on the Gram matrix K.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance of the latent values at the training inputs.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    tol : float
        Convergence tolerance on the site parameters (module doc).
    max_sweeps : int
        At most this many sweeps over the sites.
    updates : {"sequential", "parallel"}
    tau0, nu0 : ndarray of shape (n,), optional
        Initial sites (warm start); zeros by default.

    Returns
    -------
    state : dict
        ``tau``, ``nu`` (sites), ``L``, ``W_sr``, ``weights``, ``Sigma``,
        ``mu`` (all recomputed from the final sites), ``lml`` (log Z_EP),
        ``n_sweeps``, ``converged``.
    """
    n = len(K)
    y = np.asarray(y, dtype=np.float64)
    tau = np.zeros(n) if tau0 is None else np.maximum(np.array(tau0, dtype=np.float64), 0.0)
    nu = np.zeros(n) if nu0 is None else np.array(nu0, dtype=np.float64)
    L, sW, Sigma, mu, w = _factor(K, tau, nu)
    converged, sweeps = False, 0
    while sweeps < max_sweeps:
        sweeps += 1
        tau_prev, nu_prev = tau.copy(), nu.copy()
        if updates == "sequential":
            # Sigma is symmetric: its transpose is a Fortran-ordered view of
            # the same memory, which BLAS dger updates in place.
            St = Sigma.T
            for i in range(n):
                s_ii = Sigma[i, i]
                tau_cav = 1.0 / s_ii - tau[i]
                nu_cav = mu[i] / s_ii - nu[i]
                t_new, n_new = _site_update_scalar(y[i], nu_cav, tau_cav, tau[i], nu[i])
                dtau, dnu = t_new - tau[i], n_new - nu[i]
                tau[i], nu[i] = t_new, n_new
                denom = 1.0 + dtau * s_ii
                if denom > 0:
                    # Sigma' = Sigma - c s s^T, mu' = Sigma' nu' (nu' = nu + dnu e_i):
                    # mu' = mu + (dnu - c (mu_i + dnu s_ii)) s.
                    c = dtau / denom
                    si = Sigma[i].copy()  # row i = column i (symmetric), contiguous
                    mu = mu + (dnu - c * (mu[i] + dnu * s_ii)) * si
                    if c != 0.0:
                        St = _dger(-c, si, si, a=St, overwrite_a=1)
                        Sigma = St.T
                else:
                    # A rank-one update that would lose positive definiteness
                    # (rounding): refactor from the sites instead.
                    L, sW, Sigma, mu, w = _factor(K, tau, nu)
                    Sigma = np.ascontiguousarray(Sigma)
                    St = Sigma.T
        else:
            d = np.diag(Sigma)
            with np.errstate(divide="ignore", invalid="ignore"):
                tau_cav = 1.0 / d - tau
                nu_cav = mu / d - nu
            t_new, n_new = _site_update(y, nu_cav, tau_cav, tau, nu)
            tau = np.maximum((1.0 - PARALLEL_DAMPING) * tau + PARALLEL_DAMPING * t_new, 0.0)
            nu = (1.0 - PARALLEL_DAMPING) * nu + PARALLEL_DAMPING * n_new
        L, sW, Sigma, mu, w = _factor(K, tau, nu)
        change = max(
            float(np.max(np.abs(tau - tau_prev) / (1.0 + tau), initial=0.0)),
            float(np.max(np.abs(nu - nu_prev) / (1.0 + np.abs(nu)), initial=0.0)),
        )
        if change <= tol:
            converged = True
            break
    return {
        "tau": tau, "nu": nu, "L": L, "W_sr": sW, "weights": w, "Sigma": Sigma, "mu": mu,
        "lml": _log_marginal(y, tau, nu, L, Sigma, mu), "n_sweeps": sweeps, "converged": converged,
    }


def _log_marginal(y, tau, nu, L, Sigma, mu):
    """log Z_EP in the stable form of the module doc (-inf where a cavity
    precision is not positive: no EP approximation there)."""
    d = np.diag(Sigma)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau_cav = 1.0 / d - tau
        nu_cav = mu / d - nu
    if not np.all(np.isfinite(tau_cav) & (tau_cav > 0)):
        return -np.inf
    mu_cav = nu_cav / tau_cav
    z = y * mu_cav / np.sqrt(1.0 + 1.0 / tau_cav)
    tt = tau_cav + tau
    return float(
        np.sum(log_ndtr(z))
        + 0.5 * np.sum(np.log1p(tau / tau_cav))
        - np.sum(np.log(np.diag(L)))
        + 0.5 * nu @ mu
        - 0.5 * np.sum(nu * nu / tt)
        + 0.5 * np.sum(nu_cav * (tau * mu_cav - 2.0 * nu) / tt)
    )


def _latent_moments(kernel, X_train, weights, L, W_sr, X):
    """The protocol's mean and variance (the operations of sklearn's
    ``latent_mean_and_variance``, with the EP factors)."""
    K_star = kernel(X_train, X)
    mean = K_star.T.dot(weights)
    v = solve_triangular(L, W_sr[:, np.newaxis] * K_star, lower=True)
    var = kernel.diag(X) - np.einsum("ij,ij->j", v, v)
    return mean, var


class _BinaryGaussianProcessClassifierEP(BaseEstimator):
    """Binary GP classification with the probit likelihood and EP.

    The counterpart of sklearn's ``_BinaryGaussianProcessClassifierLaplace``
    (same parameters and fitting protocol); see the module docstring for the
    algorithm and :class:`EPGaussianProcessClassifier` for the parameters.

    Attributes
    ----------
    X_train_, y_train_ (labels in {0, 1}), classes_, kernel_
        As sklearn's binary Laplace classifier.
    tau_tilde_, nu_tilde_ : ndarray of shape (n_samples,)
        The EP site precisions and precision-times-means.
    W_sr_ : ndarray of shape (n_samples,)
        sqrt(tau_tilde_).
    L_ : ndarray of shape (n_samples, n_samples)
        Lower Cholesky factor of I + W_sr K W_sr.
    weights_ : ndarray of shape (n_samples,)
        Predictive weights: latent mean = k(x, X_train_) @ weights_.
    n_sweeps_ : int
    converged_ : bool
    log_marginal_likelihood_value_ : float
    """

    def __init__(
        self,
        kernel=None,
        *,
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        max_iter_predict=100,
        warm_start=False,
        copy_X_train=True,
        random_state=None,
        tol=1e-6,
        ep_updates="sequential",
    ):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.tol = tol
        self.ep_updates = ep_updates

    # -- EP ------------------------------------------------------------------
    def _run_ep(self, K):
        check_gram(K, self.kernel_, "EP")
        warm = self.warm_start and getattr(self, "_ep_sites", None) is not None and len(self._ep_sites[0]) == len(K)
        tau0, nu0 = self._ep_sites if warm else (None, None)
        state = expectation_propagation(
            K, 2.0 * self.y_train_ - 1.0, tol=self.tol, max_sweeps=self.max_iter_predict,
            updates=self.ep_updates, tau0=tau0, nu0=nu0,
        )
        if self.warm_start:
            self._ep_sites = (state["tau"], state["nu"])
        return state

    def fit(self, X, y):
        """Fit the EP approximation (and the kernel hyperparameters).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training inputs.
        y : array-like of shape (n_samples,)
            Binary targets.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if self.kernel is None:
            self.kernel_ = C(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")
        else:
            self.kernel_ = clone(self.kernel)
        rng = check_random_state(self.random_state)
        self.X_train_ = np.copy(X) if self.copy_X_train else X
        encoder = LabelEncoder()
        self.y_train_ = encoder.fit_transform(y)
        self.classes_ = encoder.classes_
        if self.classes_.size != 2:
            raise ValueError(
                f"{type(self).__name__} requires 2 classes; got {self.classes_.size} class(es) {self.classes_}."
            )

        if self.optimizer is not None and self.kernel_.n_dims > 0:

            def obj_func(theta, eval_gradient=True):
                if eval_gradient:
                    lml, grad = self.log_marginal_likelihood(theta, eval_gradient=True, clone_kernel=False)
                    return -lml, -grad
                return -self.log_marginal_likelihood(theta, clone_kernel=False)

            theta, value = optimise_hyperparameters(
                self.optimizer, obj_func, self.kernel_.theta, self.kernel_.bounds, self.n_restarts_optimizer, rng
            )
            self.kernel_.theta = theta
            # sklearn's own GP estimators warn the same way (ConvergenceWarning
            # when an optimum sits on a bound); a Kernel method with no public
            # equivalent, kept rather than copied.
            self.kernel_._check_bounds_params()
            self.log_marginal_likelihood_value_ = -value

        state = self._run_ep(self.kernel_(self.X_train_))
        if self.optimizer is None or self.kernel_.n_dims == 0:
            self.log_marginal_likelihood_value_ = state["lml"]
        self.tau_tilde_, self.nu_tilde_ = state["tau"], state["nu"]
        self.W_sr_, self.L_, self.weights_ = state["W_sr"], state["L"], state["weights"]
        self.n_sweeps_, self.converged_ = state["n_sweeps"], state["converged"]
        if not self.converged_:
            warnings.warn(
                f"EP did not converge to tol={self.tol} in max_iter_predict={self.max_iter_predict} sweeps; "
                "predictions use the last sites (the certified bounds still hold for them).",
                ConvergenceWarning,
            )
        return self

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The EP approximation log Z_EP of the log marginal likelihood.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-transformed kernel hyperparameters; None: the fitted value.
        eval_gradient : bool, default=False
            Also return the gradient (sites held at their fixed point).
        clone_kernel : bool, default=True
            If False, ``kernel_`` itself is set to theta (faster).

        Returns
        -------
        log_likelihood : float
        log_likelihood_gradient : ndarray of shape (n_kernel_params,), optional
        """
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        if clone_kernel:
            kernel = self.kernel_.clone_with_theta(theta)
        else:
            kernel = self.kernel_
            kernel.theta = theta
        if eval_gradient:
            K, dK = kernel(self.X_train_, eval_gradient=True)
        else:
            K = kernel(self.X_train_)
        try:
            state = self._run_ep(K)
        except np.linalg.LinAlgError:
            return (-np.inf, np.zeros_like(theta, dtype=np.float64)) if eval_gradient else -np.inf
        if not eval_gradient:
            return state["lml"]
        sW, L, w = state["W_sr"], state["L"], state["weights"]
        R = sW[:, None] * cho_solve((L, True), np.diag(sW))
        grad = 0.5 * (np.einsum("i,ijk,j->k", w, dK, w) - np.einsum("ij,jik->k", R, dK))
        return state["lml"], grad

    # -- predictions -----------------------------------------------------------
    def latent_mean_and_variance(self, X):
        """Latent mean and variance at X (GPML Alg. 3.6).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Query points.

        Returns
        -------
        latent_mean, latent_var : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return _latent_moments(self.kernel_, self.X_train_, self.weights_, self.L_, self.W_sr_, X)

    def predict(self, X):
        """Class 1 iff the latent mean is > 0 (the class of larger probability)."""
        check_is_fitted(self)
        f_star = self.kernel_(self.X_train_, X).T.dot(self.weights_)
        return np.where(f_star > 0, self.classes_[1], self.classes_[0])

    def predict_proba(self, X):
        """[1 - p, p], p = Phi(mean / sqrt(1 + var)): the exact probit predictive."""
        mean, var = self.latent_mean_and_variance(X)
        p = _PROBIT.value(mean, var)
        return np.vstack((1.0 - p, p)).T


class EPGaussianProcessClassifier(RobustGaussianProcessClassifier):
    """Gaussian process classifier with the probit likelihood and Expectation
    Propagation, with certified robustness.

    Binary classification by EP (Rasmussen & Williams, GPML Sec. 3.6, Algs.
    3.5-3.6): ``predict_proba`` is the exact probit predictive
    ``Phi(mu / sqrt(1 + var))`` of the EP posterior, and the kernel
    hyperparameters maximise the EP approximation of the marginal likelihood
    (with its exact gradient at the EP fixed point). More than two classes:
    one-vs-rest (probabilities normalised, as sklearn) or one-vs-one (pairwise
    votes, no ``predict_proba``). :meth:`certify`, :meth:`prediction_range`
    and :meth:`explain` work as for
    :class:`~skgprobust.RobustGaussianProcessClassifier`; the probability
    bounds use the probit link (paper Prop. 8).

    Parameters
    ----------
    kernel : kernel instance, default=None
        None: ``1.0 * RBF(1.0)`` with fixed hyperparameters (as sklearn).
    optimizer : 'fmin_l_bfgs_b', callable or None, default='fmin_l_bfgs_b'
        As in :class:`sklearn.gaussian_process.GaussianProcessClassifier`:
        ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``
        minimises the negative EP log marginal likelihood; None keeps the
        kernel's hyperparameters.
    n_restarts_optimizer : int, default=0
        Extra optimiser runs from log-uniform random starts within the bounds.
    max_iter_predict : int, default=100
        Maximum number of EP sweeps over the training points.
    warm_start : bool, default=False
        Start each EP run from the sites of the previous one (faster
        hyperparameter optimisation).
    copy_X_train : bool, default=True
        Store a copy of the training inputs (otherwise a reference).
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser restarts.
    multi_class : {'one_vs_rest', 'one_vs_one'}, default='one_vs_rest'
        How more than two classes are handled, as in sklearn's
        GaussianProcessClassifier.
    n_jobs : int, default=None
        Parallel fits of the binary models (multi-class only); the
        certification methods take their own ``n_jobs``.
    tol : float, default=1e-6
        EP stops when no site parameter changed by more than ``tol``
        (relative) in a sweep.
    ep_updates : {'sequential', 'parallel'}, default='sequential'
        Site updates one at a time (GPML Alg. 3.5) or all at once from the
        same marginals (damped by 1/2; one factorisation per sweep).

    Attributes
    ----------
    base_estimator_ : estimator
        The binary EP model, or a ``OneVsRestClassifier`` /
        ``OneVsOneClassifier`` of them.
    classes_, n_classes_, kernel_, log_marginal_likelihood_value_, n_features_in_, feature_names_in_
        As in :class:`sklearn.gaussian_process.GaussianProcessClassifier`
        (``log_marginal_likelihood_value_`` is log Z_EP).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skgprobust import EPGaussianProcessClassifier
    >>> X, y = make_classification(n_samples=60, n_features=3, n_redundant=0, random_state=0)
    >>> clf = EPGaussianProcessClassifier(random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> clf.certify(X[:3], gamma=0.01, random_state=0).status.shape
    (3,)
    """

    _parameter_constraints: dict = {
        **GaussianProcessClassifier._parameter_constraints,
        "tol": [Interval(Real, 0, None, closed="neither")],
        "ep_updates": [StrOptions(set(EP_UPDATES))],
    }

    def __init__(
        self,
        kernel=None,
        *,
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        max_iter_predict=100,
        warm_start=False,
        copy_X_train=True,
        random_state=None,
        multi_class="one_vs_rest",
        n_jobs=None,
        tol=1e-6,
        ep_updates="sequential",
    ):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.tol = tol
        self.ep_updates = ep_updates

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the EP classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if isinstance(self.kernel, CompoundKernel):
            raise ValueError("kernel cannot be a CompoundKernel")
        if self.kernel is None or self.kernel.requires_vector_input:
            # float64, not sklearn's "numeric": see _engine._common.float64_inputs
            X, y = validate_data(self, X, y, multi_output=False, ensure_2d=True, dtype=np.float64)
        else:
            X, y = validate_data(self, X, y, multi_output=False, ensure_2d=False, dtype=None)
        base = _BinaryGaussianProcessClassifierEP(
            kernel=self.kernel,
            optimizer=self.optimizer,
            n_restarts_optimizer=self.n_restarts_optimizer,
            max_iter_predict=self.max_iter_predict,
            warm_start=self.warm_start,
            copy_X_train=self.copy_X_train,
            random_state=self.random_state,
            tol=self.tol,
            ep_updates=self.ep_updates,
        )
        self.classes_ = np.unique(y)
        self.n_classes_ = self.classes_.size
        if self.n_classes_ == 1:
            raise ValueError(
                f"{type(self).__name__} requires 2 or more distinct classes; got 1 class "
                f"(only class {self.classes_[0]} is present)"
            )
        if self.n_classes_ > 2:
            if self.multi_class == "one_vs_rest":
                base = OneVsRestClassifier(base, n_jobs=self.n_jobs)
            else:
                base = OneVsOneClassifier(base, n_jobs=self.n_jobs)
        try:
            self.base_estimator_ = base.fit(X, y)
        except np.linalg.LinAlgError:
            # A refused kernel (not positive semi-definite): never leave a
            # previous fit in place to be certified under the new classes_.
            discard_fit(self)
            raise
        if self.n_classes_ > 2:
            self.log_marginal_likelihood_value_ = float(
                np.mean([e.log_marginal_likelihood() for e in self.base_estimator_.estimators_])
            )
        else:
            self.log_marginal_likelihood_value_ = self.base_estimator_.log_marginal_likelihood()
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

    def _build_bound_model(self):
        return ep_bound_model(self)


def _latent_model(binary):
    """The protocol's LatentModel of one fitted binary EP model."""
    return LatentModel(
        binary.X_train_, binary.weights_, [0.0], [1.0], binary.kernel_, L=binary.L_, col_scale=binary.W_sr_
    )


def ep_bound_model(clf):
    """The :class:`~skgprobust._engine._latent.BoundModel` of a fitted
    :class:`EPGaussianProcessClassifier`: probit link, one latent model for
    two classes, one per class (one-vs-rest) or per pair i < j (one-vs-one,
    positive for class j, as ``OneVsOneClassifier`` trains them)."""
    base = clf.base_estimator_
    ests = base.estimators_ if hasattr(base, "estimators_") else [base]
    return BoundModel(fitted_decision_kind(clf), [_latent_model(e) for e in ests], classes=clf.classes_, link=ProbitLink())
