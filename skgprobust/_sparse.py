"""Sparse Gaussian process regression (FITC, DTC, VFE) with certified bounds.

The model
---------
M inducing inputs Z (``inducing_points_``), the fitted kernel k (its
WhiteKernel summands included), the noise-free cross-covariance
k_c(x, x') (what ``kernel_(X, Z)`` returns: a WhiteKernel adds nothing
between two different index positions) and, per training point, the noise

    n_i = k(x_i, x_i) - k_c(x_i, x_i) + alpha_i

(the kernel's WhiteKernel variance at x_i, as ``kernel_.diag`` counts it,
plus the constructor's ``alpha``; sklearn's GPR adds the same two to the
diagonal of its Gram matrix). With Kzz = k_c(Z, Z) + j I (a relative jitter
j = 1e-8 mean(diag k_c(Z, Z))), Kxz = k_c(X, Z), Q = Kxz Kzz^-1 Kzx and
q_ii = diag(Q), the three approximations of Quinonero-Candela & Rasmussen
(2005) and Titsias (2009) are y ~ N(0, Q + Lambda) with

* ``"dtc"`` (deterministic training conditional): Lambda = diag(n);
* ``"vfe"`` (variational free energy): the same Lambda and predictive, but
  the hyperparameters maximise the evidence lower bound
  log N(y | 0, Q + Lambda) - 1/2 sum_i (k_c(x_i, x_i) - q_ii) / n_i;
* ``"fitc"`` (fully independent training conditional):
  Lambda = diag(k_c(x_i, x_i) - q_ii + n_i).

Predictive (each of the three): Sigma = (Kzz + Kzx Lambda^-1 Kxz)^-1,

    mean(x) = k_c(x, Z) beta,  beta = Sigma Kzx Lambda^-1 y,
    var(x)  = k(x, x) - k_c(x, Z) (Kzz^-1 - Sigma) k_c(Z, x),

``k(x, x)`` as ``kernel_.diag`` returns it (WhiteKernel included, alpha
not: sklearn's GPR convention, so ``return_std`` is the std of a new noisy
observation when the noise is a WhiteKernel and of the latent function when
it is ``alpha``). ``normalize_y`` scales both as in sklearn.

These are the paper's Eq. 1-2 with the M inducing inputs as support, so the
bounds of :mod:`skgprobust._engine` run over M points, never over N.

:class:`SparseGaussianProcessClassifier` (probit likelihood; two classes,
or one binary model per class / pair) uses the same prior with the EP or
Laplace approximation of the posterior over the inducing values; its
predictive latent mean and variance have the same form (Lambda = diag(1 /
tau) from the EP sites or diag(1 / W) from the Laplace curvature), so it
shares the variance factor below; its objective, "vfe" included, and the
analytic gradient are in its docstring and :func:`_probit_chain`.

The factor of the variance
--------------------------
Kzz = Lz Lz^T; U = Lz^-1 Kzx Lambda^-1/2 (never formed: U U^T is summed over
chunks of rows), U U^T = E diag(mu) E^T (eigen-decomposition). Then
Kzz + Kzx Lambda^-1 Kxz = Lz (I + U U^T) Lz^T, so

    Sigma           = Lz^-T E diag(1 / (1 + mu)) E^T Lz^-1,
    Kzz^-1 - Sigma  = Lz^-T E diag(mu / (1 + mu)) E^T Lz^-1 = (L L^T)^-1,
    L L^T           = Lz E diag((1 + mu) / mu) E^T Lz^T.

L is this matrix's Cholesky factor, computed without forming it: with
W = Lz E diag(sqrt((1 + mu) / mu)), W^T = Q R (QR) gives W W^T = R^T R, so
L = R^T (rows signed to a positive diagonal). ``predict`` computes the
variance exactly as the latent-model protocol states it,
``var = k(x, x) - ||solve_triangular(L, k_c(Z, x))||^2`` (clipped at 0,
times ``_y_train_std**2``), with the stored L, so the engine's rounding
margins (which use a condition estimate of this very L) cover the numbers
``predict`` returns; whether L is an accurate factor of the real-arithmetic
Kzz^-1 - Sigma matters for fidelity to the approximation, not for the
soundness of the bounds.

Conditioning. L L^T is fixed by the model, so its Cholesky factor is unique:
no equivalent triangular form is better conditioned. Since L L^T = (Lz E
D^1/2)(Lz E D^1/2)^T with D = diag((1 + mu) / mu), the singular values of L
are those of Lz E D^1/2, and

    cond(L) <= cond(Lz) sqrt(max D / min D) <= cond(Lz) sqrt(1 + 1 / mu_min).

Small noise makes mu *large* (U scales as noise^-1/2), so D -> I and
L -> Lz: the exact-GP limit is well behaved, unlike Kzz^-1 - Sigma formed by
subtraction. The poorly conditioned case is a direction of the inducing
space that the data barely inform (mu -> 0). mu is floored at ``_MU_FLOOR``
= 1e-10: that changes Kzz^-1 - Sigma by at most 1e-10 in the whitened
coordinates, i.e. the variance by at most 1e-10 k_c(x, x) (||Lz^-1 k_c(Z,
x)||^2 <= k_c(x, x)), and caps sqrt(1 + 1 / mu_min) at 1e5. cond(Lz) is at
most about sqrt(1 / 1e-8) = 1e4 by the jitter. Measured (tests): 100
inducing inputs in [-3, 3] for an RBF of length scale 1 (k(Z, Z) singular
to working precision before the jitter) give cond(L) below 1e5 for noise
1e-10 to 1e-2, and the std ranges bracket predict on dense grids. The
jitter also keeps the engine's lemma ``0 <= S <= Kzz^-1`` (used by the
high signal-to-noise variance bound, :mod:`skgprobust._bounds._variance`)
true with room to spare in real arithmetic: S = Kzz_j^-1 - Sigma <=
Kzz_j^-1 <= k_c(Z, Z)^-1. For the *float* L (a QR, not a Cholesky of
fl(K) + noise: ``LatentModel(cholesky_factor=False)``) the variance
bounds do not assume it: they certify L L^T >= Kc - e I directly
(:class:`~skgprobust._bounds._variance.NonCholeskyLatentVariance`; a
Cholesky certificate of fl(L L^T) - fl(Kc), unscaled and row-scaled, with
its rounding), which credits the jitter (e = 0, so rho = 0, on the fitted
models measured, far-from-data inducing inputs included); where e > 0
remains, the per-point form q(x) <= k_c(x, x) + e ||a(x)||^2 limits the
cost (module doc of :mod:`skgprobust._bounds._variance`).

The marginal likelihood and its gradient
----------------------------------------
Per target p (P targets; the objective is their sum, as in sklearn):
log N(y | 0, Q + Lambda) = -1/2 (y^T Lambda^-1 y - c^T diag(1/(1+mu)) c)
- 1/2 (sum log lambda_i + sum log(1 + mu_j)) - N/2 log 2 pi, c = E^T Lz^-1
Kzx Lambda^-1 y. With alpha_y = Lambda^-1 (y - Kxz beta) and
W = alpha_y alpha_y^T - P (Q + Lambda)^-1 the gradient of the Gaussian part
(Woodbury; beta = Kzz^-1 Kzx alpha_y since Kzx alpha_y = Kzz beta) is

    d/dKxz   = alpha_y beta^T - P Lambda^-1 Kxz Sigma          (N x M)
    d/dKzz   = -1/2 (beta beta^T - P (Kzz^-1 - Sigma))         (M x M)
    d/dlam_i = 1/2 W_ii = 1/2 (alpha_y,i^2 - P (1/lam_i - k_i^T Sigma k_i / lam_i^2)),

plus, for FITC, lam_i = k_c(x_i, x_i) - q_ii + n_i (dq_ii = 2 k_i^T Kzz^-1
dk_i - k_i^T Kzz^-1 dKzz Kzz^-1 k_i) and, for VFE, the trace term's own
derivatives. They are contracted with the kernel's hyperparameter
derivatives of k_c(X, Z), k_c(Z, Z), k(x_i, x_i) and k_c(x_i, x_i) chunk by
chunk: O(N M^2 + N M n_theta) time, O(chunk M n_theta + M^2) memory, no
N x N matrix anywhere. The cross-covariance derivatives come from closed
forms for Sum, Product, Exponentiation, ConstantKernel, WhiteKernel, RBF and
Matern (nu = 0.5, 1.5, 2.5, inf); any other kernel node is evaluated by
sklearn on the stacked inputs [X; Z] (its off-diagonal block).
"""

import numbers
import warnings

import numpy as np
from scipy.linalg import cholesky, eigh, qr, solve_triangular
from scipy.linalg.blas import dsyrk as _dsyrk
from scipy.special import log_ndtr
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, clone
from sklearn.cluster import kmeans_plusplus
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as K
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
# Private, kept on purpose: the function sklearn's GaussianProcessRegressor
# uses, so normalize_y matches it bit for bit (zero-variance targets included).
from sklearn.preprocessing._data import _handle_zeros_in_scale
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._bounds._links import ProbitLink
from ._engine._common import check_not_compound
from ._engine._latent import BoundModel, LatentModel, fitted_decision_kind
from ._gpc import RobustGaussianProcessClassifier
from ._gpr import RobustGaussianProcessRegressor
from ._hyperopt import optimise_hyperparameters

APPROXIMATIONS = ("fitc", "dtc", "vfe")

#: Relative jitter added to the diagonal of k_c(Z, Z).
_JITTER = 1e-8
#: Floor of the eigenvalues mu of U U^T (see the module doc).
_MU_FLOOR = 1e-10
#: Elements per chunk of the (rows x M x n_theta) derivative arrays.
_CHUNK_ELEMENTS = 2_000_000
#: Largest Lz^-1 Kzx (bytes) kept between the two passes of a gradient evaluation.
_CACHE_BYTES = 4e8


# ---------------------------------------------------------------------------
# Kernel values and hyperparameter derivatives without N x N matrices
# ---------------------------------------------------------------------------


def _n_free(kernel):
    return len(kernel.theta)


def _stacked_cross(kernel, X, Y):
    """k(X, Y) and d/dtheta from sklearn on [X; Y] (off-diagonal block)."""
    n = len(X)
    Kfull, G = kernel(np.vstack([X, Y]), eval_gradient=True)
    return Kfull[:n, n:], G[:n, n:, :]


def _scaled_sqdist(kernel, X, Y):
    ls = np.asarray(kernel.length_scale, dtype=np.float64)
    aniso = np.iterable(kernel.length_scale) and len(kernel.length_scale) > 1
    Xs, Ys = X / ls, Y / ls
    D2 = cdist(Xs, Ys, metric="sqeuclidean")
    if aniso and not kernel.hyperparameter_length_scale.fixed:
        Dj = (Xs[:, None, :] - Ys[None, :, :]) ** 2
    else:
        Dj = D2[:, :, None]
    return D2, Dj


def _cross_grad(kernel, X, Y):
    """(k_c(X, Y), d k_c(X, Y) / d theta) with shape (nX, nY, n_theta).

    Cross-covariance between different index positions: WhiteKernel parts
    contribute 0 (sklearn's convention for k(X, Y))."""
    if isinstance(kernel, K.Sum):
        K1, G1 = _cross_grad(kernel.k1, X, Y)
        K2, G2 = _cross_grad(kernel.k2, X, Y)
        return K1 + K2, np.concatenate([G1, G2], axis=2)
    if isinstance(kernel, K.Product):
        K1, G1 = _cross_grad(kernel.k1, X, Y)
        K2, G2 = _cross_grad(kernel.k2, X, Y)
        return K1 * K2, np.concatenate([G1 * K2[:, :, None], K1[:, :, None] * G2], axis=2)
    if isinstance(kernel, K.Exponentiation):
        Kb, Gb = _cross_grad(kernel.kernel, X, Y)
        e = kernel.exponent
        return Kb**e, e * (Kb ** (e - 1))[:, :, None] * Gb
    t = type(kernel)
    if t is K.ConstantKernel:
        Kc = np.full((len(X), len(Y)), kernel.constant_value, dtype=np.float64)
        n = 0 if kernel.hyperparameter_constant_value.fixed else 1
        return Kc, np.repeat(Kc[:, :, None], n, axis=2)
    if t is K.WhiteKernel:
        n = 0 if kernel.hyperparameter_noise_level.fixed else 1
        return np.zeros((len(X), len(Y))), np.zeros((len(X), len(Y), n))
    if t is K.RBF or (t is K.Matern and float(kernel.nu) in (0.5, 1.5, 2.5, np.inf)):
        nu = np.inf if t is K.RBF else float(kernel.nu)
        D2, Dj = _scaled_sqdist(kernel, X, Y)
        d = np.sqrt(D2)
        if nu == 0.5:
            Kc = np.exp(-d)
        elif nu == 1.5:
            Kc = (1.0 + np.sqrt(3.0) * d) * np.exp(-np.sqrt(3.0) * d)
        elif nu == 2.5:
            Kc = (1.0 + np.sqrt(5.0) * d + 5.0 / 3.0 * D2) * np.exp(-np.sqrt(5.0) * d)
        else:
            Kc = np.exp(-0.5 * D2)
        if kernel.hyperparameter_length_scale.fixed:
            return Kc, np.empty((len(X), len(Y), 0))
        if nu == 0.5:
            with np.errstate(invalid="ignore", divide="ignore"):
                G = np.where(d[:, :, None] > 0, Kc[:, :, None] * Dj / d[:, :, None], 0.0)
        elif nu == 1.5:
            G = 3.0 * Dj * np.exp(-np.sqrt(3.0) * d)[:, :, None]
        elif nu == 2.5:
            G = 5.0 / 3.0 * Dj * ((1.0 + np.sqrt(5.0) * d) * np.exp(-np.sqrt(5.0) * d))[:, :, None]
        else:
            G = Kc[:, :, None] * Dj
        return Kc, G
    return _stacked_cross(kernel, X, Y)


def _radial_slope(nu, D2):
    """-2 dk/d(D2) of the RBF / Matern(nu) profile k as a function of the
    scaled squared distance D2, so that d k / d log l_j = slope * D_j and
    d k / d y_j = slope * (x_j - y_j) / l_j^2 (0 at D2 = 0 for nu = 0.5,
    where the derivative does not exist, as in sklearn)."""
    if nu == np.inf:
        return np.exp(-0.5 * D2)
    d = np.sqrt(D2)
    if nu == 0.5:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d > 0, np.exp(-d) / d, 0.0)
    if nu == 1.5:
        return 3.0 * np.exp(-np.sqrt(3.0) * d)
    return (5.0 / 3.0) * (1.0 + np.sqrt(5.0) * d) * np.exp(-np.sqrt(5.0) * d)


def _quadratic_contract(Wp, Xs, Ys, aniso):
    """sum_im Wp_im D_imj with D_imj = (Xs_ij - Ys_mj)^2 (per feature j when
    aniso, summed over j otherwise), without the (n, m, d) array:
    (x - y)^2 = x^2 - 2 x y + y^2 (inputs centred first)."""
    c = Ys.mean(axis=0) if len(Ys) else 0.0
    Xs, Ys = Xs - c, Ys - c
    r, col = Wp.sum(axis=1), Wp.sum(axis=0)
    per = r @ (Xs * Xs) - 2.0 * np.einsum("ij,ij->j", Xs, Wp @ Ys) + col @ (Ys * Ys)
    return per if aniso else np.array([per.sum()])


def _cross_contract(kernel, X, Y, W):
    """sum_im W_im d k_c(X, Y)_im / d theta (shape (n_theta,)), i.e.
    ``einsum("im,imk->k", W, _cross_grad(kernel, X, Y)[1])`` without the
    (n, m, n_theta) array for the kernels with closed forms."""
    if isinstance(kernel, K.Sum):
        return np.concatenate([_cross_contract(kernel.k1, X, Y, W), _cross_contract(kernel.k2, X, Y, W)])
    if isinstance(kernel, K.Product):
        K1, K2 = kernel.k1(X, Y), kernel.k2(X, Y)
        return np.concatenate([_cross_contract(kernel.k1, X, Y, W * K2), _cross_contract(kernel.k2, X, Y, W * K1)])
    if isinstance(kernel, K.Exponentiation):
        e = kernel.exponent
        return _cross_contract(kernel.kernel, X, Y, W * e * kernel.kernel(X, Y) ** (e - 1))
    t = type(kernel)
    if t is K.ConstantKernel:
        n = 0 if kernel.hyperparameter_constant_value.fixed else 1
        return np.full(n, kernel.constant_value * W.sum())
    if t is K.WhiteKernel:
        return np.zeros(0 if kernel.hyperparameter_noise_level.fixed else 1)
    if t is K.RBF or (t is K.Matern and float(kernel.nu) in (0.5, 1.5, 2.5, np.inf)):
        if kernel.hyperparameter_length_scale.fixed:
            return np.zeros(0)
        nu = np.inf if t is K.RBF else float(kernel.nu)
        ls = np.asarray(kernel.length_scale, dtype=np.float64)
        aniso = np.iterable(kernel.length_scale) and len(kernel.length_scale) > 1
        Xs, Ys = X / ls, Y / ls
        D2 = cdist(Xs, Ys, metric="sqeuclidean")
        Wp = W * _radial_slope(nu, D2)
        return _quadratic_contract(Wp, Xs, Ys, aniso)
    _, G = _stacked_cross(kernel, X, Y)
    return np.einsum("im,imk->k", W, G)


def _input_contract(kernel, X, Y, W):
    """sum_i W_im d k_c(x_i, y_m) / d y_m, shape (m, d): the derivative of
    sum(W * k_c(X, Y)) with respect to the rows of Y, in closed form for
    sums, products and powers of ConstantKernel, WhiteKernel, RBF and
    Matern (nu = 0.5, 1.5, 2.5, inf); ValueError for other kernels."""
    if isinstance(kernel, K.Sum):
        return _input_contract(kernel.k1, X, Y, W) + _input_contract(kernel.k2, X, Y, W)
    if isinstance(kernel, K.Product):
        K1, K2 = kernel.k1(X, Y), kernel.k2(X, Y)
        return _input_contract(kernel.k1, X, Y, W * K2) + _input_contract(kernel.k2, X, Y, W * K1)
    if isinstance(kernel, K.Exponentiation):
        e = kernel.exponent
        return _input_contract(kernel.kernel, X, Y, W * e * kernel.kernel(X, Y) ** (e - 1))
    t = type(kernel)
    if t is K.ConstantKernel or t is K.WhiteKernel:
        return np.zeros(Y.shape)
    if t is K.RBF or (t is K.Matern and float(kernel.nu) in (0.5, 1.5, 2.5, np.inf)):
        nu = np.inf if t is K.RBF else float(kernel.nu)
        ls = np.broadcast_to(np.asarray(kernel.length_scale, dtype=np.float64), (X.shape[1],))
        D2 = cdist(X / ls, Y / ls, metric="sqeuclidean")
        Wp = W * _radial_slope(nu, D2)  # d k / d y_j = slope * (x_j - y_j) / l_j^2
        return (Wp.T @ X - Wp.sum(axis=0)[:, None] * Y) / ls**2
    raise ValueError(
        f"optimize_inducing=True needs input derivatives of the kernel; {type(kernel).__name__} has none here "
        "(supported: sums, products and powers of ConstantKernel, WhiteKernel, RBF, Matern nu in 0.5, 1.5, 2.5, inf)."
    )


def _diag_parts(kernel, X, eval_gradient=False):
    """Per row: (w(x), k_c(x, x)) with w(x) = k(x, x) - k_c(x, x), the
    WhiteKernel parts of the prior variance (``diag`` counts them, the
    cross-covariance of x with a copy of itself does not), and with
    eval_gradient their derivatives (n, n_theta).

    w is computed from the kernel's structure, never as the difference of
    the two sums: Sum w = w1 + w2, Product w = c1 w2 + w1 c2 + w1 w2,
    Exponentiation (c + w)^e - c^e (as c^e expm1(e log1p(w / c)); exactly 0
    where w = 0), WhiteKernel w = its
    noise level, other leaves 0 (scikit-learn's leaves have k(X) = k(X, X)
    except WhiteKernel; a user leaf outside ``_NO_WHITE_LEAVES`` keeps the
    difference of its two Gram entries). Taking k(x, x) - k_c(x, x) from
    two rounded sums lost the noise below the kernel's rounding: with a
    DotProduct term on unscaled inputs (k(x, x) ~ 3e11, one ulp ~6e-5) fit
    refused WhiteKernel(1e-7) as "no noise" or silently used ~6e-5 in its
    place (session 19 soundness hunt)."""
    n = len(X)
    if isinstance(kernel, (K.Sum, K.Product)):
        a = _diag_parts(kernel.k1, X, eval_gradient)
        b = _diag_parts(kernel.k2, X, eval_gradient)
        if isinstance(kernel, K.Sum):
            out = (a[0] + b[0], a[1] + b[1])
            if eval_gradient:
                out += (np.hstack([a[2], b[2]]), np.hstack([a[3], b[3]]))
            return out
        (wa, ca), (wb, cb) = a[:2], b[:2]
        out = (ca * wb + wa * cb + wa * wb, ca * cb)
        if eval_gradient:
            # d/d theta_a of (ca + wa)(cb + wb) - ca cb, and of theta_b.
            out += (
                np.hstack([a[3] * wb[:, None] + a[2] * (cb + wb)[:, None],
                           wa[:, None] * b[3] + (ca + wa)[:, None] * b[2]]),
                np.hstack([a[3] * cb[:, None], ca[:, None] * b[3]]),
            )
        return out
    if isinstance(kernel, K.Exponentiation):
        w, c, *g = _diag_parts(kernel.kernel, X, eval_gradient)
        e = kernel.exponent
        f = c + w
        # (c + w)^p - c^p = c^p expm1(p log1p(w / c)) without the cancellation
        # of the plain difference (w = 1e-9 next to c = 1: 8e-8 relative);
        # exactly 0 where w = 0; the plain difference where c <= 0 or c + w
        # <= 0 (a negative white part inside the power: log1p's domain, and
        # 0 * log1p(-1) = NaN for the derivative's p = 0).
        pos = (c > 0) & (f > 0)
        cs = np.where(pos, c, 1.0)

        def powdiff(p):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(pos, cs**p * np.expm1(p * np.log1p(w / cs)), f**p - c**p)

        out = (powdiff(e), c**e)
        if eval_gradient:
            # d/d theta of f^e - c^e = e f^(e-1) g_w + e (f^(e-1) - c^(e-1)) g_c.
            dc = e * (c ** (e - 1))[:, None] * g[1]
            out += (e * (f ** (e - 1))[:, None] * g[0] + e * powdiff(e - 1)[:, None] * g[1], dc)
        return out
    t = type(kernel)
    p = _n_free(kernel)
    if t is K.ConstantKernel:
        v = np.full(n, kernel.constant_value, dtype=np.float64)
        g = np.repeat(v[:, None], p, axis=1)
        return (np.zeros(n), v, np.zeros((n, p)), g) if eval_gradient else (np.zeros(n), v)
    if isinstance(kernel, K.WhiteKernel):
        v = np.full(n, kernel.noise_level, dtype=np.float64)
        out = (v, np.zeros(n))
        return out + (np.repeat(v[:, None], p, axis=1), np.zeros((n, p))) if eval_gradient else out
    if t is K.RBF or t is K.Matern:
        one = np.ones(n)
        return (np.zeros(n), one, np.zeros((n, p)), np.zeros((n, p))) if eval_gradient else (np.zeros(n), one)
    # Any other kernel: sklearn on [x; x] per chunk of rows.
    f, c, gf, gc = np.empty(n), np.empty(n), np.empty((n, p)), np.empty((n, p))
    step = 256
    for s in range(0, n, step):
        Xc = X[s : s + step]
        m = len(Xc)
        Kk, G = kernel(np.vstack([Xc, Xc]), eval_gradient=True)
        i = np.arange(m)
        f[s : s + m], c[s : s + m] = Kk[i, i], Kk[i, m + i]
        gf[s : s + m], gc[s : s + m] = G[i, i], G[i, m + i]
    if isinstance(kernel, _NO_WHITE_LEAVES):
        w, gw = np.zeros(n), np.zeros((n, p))
    else:
        w, gw = f - c, gf - gc
    return (w, c, gw, gc) if eval_gradient else (w, c)


#: scikit-learn's leaf kernels with k(X) = k(X, X) (no white part).
_NO_WHITE_LEAVES = (K.DotProduct, K.RationalQuadratic, K.ExpSineSquared, K.PairwiseKernel, K.RBF, K.Matern,
                    K.ConstantKernel)


# ---------------------------------------------------------------------------
# The approximate marginal likelihood, its gradient and the fitted state
# ---------------------------------------------------------------------------


def _chunks(N, M, n_theta):
    step = max(16, int(_CHUNK_ELEMENTS // max(1, M * max(1, n_theta))))
    return [slice(s, min(N, s + step)) for s in range(0, N, step)]


def _kzz(kernel, Z, eval_gradient):
    if eval_gradient:
        Kzz, G = _cross_grad(kernel, Z, Z)
        Kzz = 0.5 * (Kzz + Kzz.T)
    else:
        Kzz, G = kernel(Z, Z), None
    jit = _JITTER * max(float(np.mean(np.diag(Kzz))), np.finfo(float).tiny)
    Kzz = Kzz.copy()
    Kzz[np.diag_indices_from(Kzz)] += jit
    if G is not None:
        G = G.copy()
        dj = _JITTER * np.mean(np.diagonal(G, axis1=0, axis2=1), axis=1)
        idx = np.arange(len(Z))
        G[idx, idx, :] += dj
    return Kzz, G


def _checked_factor(L):
    """The fitted posterior factor L (L L^T = the inverse of Kzz^-1 -
    Sigma's inverse, module doc), or a ValueError naming the problem when
    it is singular or not finite: with a noise far below the kernel's scale
    (e.g. no WhiteKernel and alpha = 1e-300) the factor's QR can lose rank,
    and predict and the bounds would then fail later with a bare
    LinAlgError (session 19 hunt: vfe, N = 1200, 40 inducing points)."""
    dg = np.abs(np.diag(L))
    if not (np.all(np.isfinite(L)) and np.all(dg > 0)):
        raise ValueError(
            "The sparse posterior's factor is singular or not finite (the noise is too small for this kernel's "
            "scale, or the inducing points are degenerate): add a WhiteKernel to the kernel, increase alpha, "
            "or use fewer / distinct inducing points."
        )
    return L


def _noise_check(n):
    if not np.all(n > 0) or not np.all(np.isfinite(n)):
        raise ValueError(
            "The noise variance must be positive at every training point: add a WhiteKernel to the kernel "
            "or use alpha > 0."
        )


def sparse_objective(kernel, X, y, Z, approximation, alpha, eval_gradient=False, state=False, wrt_z=False):
    """Approximate log marginal likelihood (the ELBO for "vfe") of the
    sparse model, optionally its gradient w.r.t. ``kernel.theta`` (followed
    by the gradient w.r.t. ``Z.ravel()`` when ``wrt_z``) and the fitted
    state (module doc). y is (N, P), already normalised."""
    N, M = len(X), len(Z)
    P = y.shape[1]
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (N,))
    Kzz, dKzz = _kzz(kernel, Z, eval_gradient)
    try:
        Lz = cholesky(Kzz, lower=True, check_finite=False)
    except np.linalg.LinAlgError as exc:
        exc.args = (f"The kernel {kernel} is not positive definite on the inducing points.",) + exc.args
        raise
    chunks = _chunks(N, M, 4 if eval_gradient else 1)

    UUt = np.zeros((M, M))
    Vy = np.zeros((M, P))
    yLy = np.zeros(P)
    logdet_lam = 0.0
    trace = 0.0
    lam_all = np.empty(N)
    # Keep Lz^-1 Kzx for the gradient pass when it fits in _CACHE_BYTES.
    cache = [] if (eval_gradient and 8.0 * N * M <= _CACHE_BYTES) else None
    for sl in chunks:
        Kxz = kernel(X[sl], Z)
        white, cov = _diag_parts(kernel, X[sl])
        n = white + alpha[sl]
        _noise_check(n)
        V = solve_triangular(Lz, Kxz.T, lower=True, check_finite=False)
        if cache is not None:
            cache.append(V)
        q = np.einsum("ij,ij->j", V, V)
        lam = n if approximation != "fitc" else np.maximum(cov - q, 0.0) + n
        lam_all[sl] = lam
        UUt = _syrk(V / np.sqrt(lam), UUt)
        Vy += (V / lam) @ y[sl]
        yLy += np.einsum("ij,ij->j", y[sl], y[sl] / lam[:, None])
        logdet_lam += float(np.sum(np.log(lam)))
        if approximation == "vfe":
            trace += float(np.sum(np.maximum(cov - q, 0.0) / n))
    UUt = np.triu(UUt) + np.triu(UUt, 1).T
    mu, E = eigh(UUt, check_finite=False)
    mu = np.maximum(mu, _MU_FLOOR)
    c = E.T @ Vy
    quad = np.sum(c * c / (1.0 + mu)[:, None], axis=0)
    logdet_B = float(np.sum(np.log1p(mu)))
    lml = float(np.sum(-0.5 * (yLy - quad) - 0.5 * (logdet_lam + logdet_B) - 0.5 * N * np.log(2 * np.pi)))
    if approximation == "vfe":
        lml -= 0.5 * P * trace
    w = E @ (c / (1.0 + mu)[:, None])  # Lz^T beta
    beta = solve_triangular(Lz, w, lower=True, trans="T", check_finite=False)
    out = [lml]
    if eval_gradient:
        out.append(
            _gradient(kernel, X, y, Z, approximation, alpha, Lz, E, mu, beta, w, lam_all, UUt, dKzz, chunks, cache, wrt_z)
        )
    if state:
        out.append({"L": _variance_factor(Lz, E, mu), "beta": beta, "Lz": Lz})
    return tuple(out) if len(out) > 1 else out[0]


def _variance_factor(Lz, E, mu):
    """Lower-triangular L with L L^T = Lz E diag((1 + mu) / mu) E^T Lz^T,
    i.e. (L L^T)^-1 = Kzz^-1 - Sigma, by QR of W^T (W = Lz E diag(sqrt((1
    + mu) / mu))): W^T = Q R gives W W^T = R^T R (module doc)."""
    Wm = Lz @ (E * np.sqrt((1.0 + mu) / mu))
    R = qr(Wm.T, mode="r", check_finite=False)[0]
    return np.tril(R.T * np.where(np.diag(R) < 0, -1.0, 1.0)[None, :])


def _syrk(A, C):
    """C + A A^T (upper triangle only), BLAS syrk."""
    return _dsyrk(1.0, A, beta=1.0, c=C, trans=0, lower=0, overwrite_c=1)


def _gradient(kernel, X, y, Z, approximation, alpha, Lz, E, mu, beta, w, lam_all, UUt, dKzz, chunks, cache, wrt_z):
    """Gradient of :func:`sparse_objective` (module doc), in whitened
    coordinates: with V = Lz^-1 Kzx and B1 = E diag(1/(1+mu)) E^T,
    Sigma = Lz^-T B1 Lz^-1 and d/dKxz = a beta^T + Y Lz^-1,
    Y = -P Lambda^-1 V^T B1 + diag(coef) V^T (coef: FITC -2 g, VFE P / n)."""
    M, P = len(Z), y.shape[1]
    B1 = (E / (1.0 + mu)) @ E.T
    Linv = solve_triangular(Lz, np.eye(M), lower=True, check_finite=False)  # Lz^-1
    Dm = (E * (mu / (1.0 + mu))) @ E.T
    Kinv_minus_Sigma = Linv.T @ Dm @ Linv
    grad = np.zeros(len(kernel.theta))
    G_kzz = -0.5 * (beta @ beta.T - P * Kinv_minus_Sigma)
    H_fitc = np.zeros((M, M))
    gZ = np.zeros(Z.shape) if wrt_z else None
    for k, sl in enumerate(chunks):
        if cache is not None:
            V = cache[k]
        else:
            V = solve_triangular(Lz, kernel(X[sl], Z).T, lower=True, check_finite=False)
        white, cov, dwhite, dcov = _diag_parts(kernel, X[sl], eval_gradient=True)
        n = white + alpha[sl]
        lam = lam_all[sl]
        a = (y[sl] - V.T @ w) / lam[:, None]  # Kxz beta = V^T Lz^T beta
        VB = V.T @ B1
        s = np.einsum("ij,ji->i", VB, V)  # k_i^T Sigma k_i
        g = 0.5 * (np.sum(a * a, axis=1) - P * (1.0 / lam - s / lam**2))  # d/dlam
        Y = (-P / lam)[:, None] * VB
        dF_dn = g.copy()
        dF_dc = np.zeros_like(g)
        if approximation == "fitc":
            dF_dc += g
            Y -= (2.0 * g)[:, None] * V.T
            H_fitc += (V * g) @ V.T
        elif approximation == "vfe":
            q = np.einsum("ij,ij->j", V, V)
            dF_dc -= 0.5 * P / n
            dF_dn += 0.5 * P * np.maximum(cov - q, 0.0) / n**2
            Y += (P / n)[:, None] * V.T
        dF_dK = a @ beta.T + solve_triangular(Lz, Y.T, lower=True, trans="T", check_finite=False).T
        grad += _cross_contract(kernel, X[sl], Z, dF_dK)
        if wrt_z:
            gZ += _input_contract(kernel, X[sl], Z, dF_dK)
        # n = white + alpha
        grad += dF_dn @ dwhite + dF_dc @ dcov
    if approximation == "fitc":
        G_kzz += Linv.T @ H_fitc @ Linv
    elif approximation == "vfe":
        G_kzz -= 0.5 * P * (Linv.T @ UUt @ Linv)  # Lambda = diag(n): U U^T = Lz^-1 Kzx N^-1 Kxz Lz^-T
    G_kzz = 0.5 * (G_kzz + G_kzz.T)
    grad += np.einsum("ij,ijk->k", G_kzz, dKzz)
    if wrt_z:
        # k(Z, Z) depends on Z through both arguments (G_kzz and k symmetric);
        # the jitter does not (diag k(z, z) is constant for these kernels).
        gZ += 2.0 * _input_contract(kernel, Z, Z, G_kzz)
        return np.concatenate([grad, gZ.ravel()])
    return grad


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------


def _maximise(estimator, obj_func, kernel, rng, extra=None):
    """sklearn's hyperparameter search through the package's one optimiser
    loop (:func:`skgprobust._hyperopt.optimise_hyperparameters`):
    ``estimator.optimizer`` from the kernel's theta (followed by ``extra``,
    unbounded, e.g. the inducing inputs), then ``n_restarts_optimizer``
    starts with log-uniform theta (and the initial ``extra``). Sets the best
    theta on ``kernel``; returns the best ``extra`` (None without one) and
    the smallest objective value."""
    best, value = optimise_hyperparameters(
        estimator.optimizer, obj_func, kernel.theta, kernel.bounds, estimator.n_restarts_optimizer, rng, extra=extra
    )
    p = len(kernel.theta)
    kernel.theta = best[:p]
    kernel._check_bounds_params()
    return (best[p:] if extra is not None else None), value


class SparseGaussianProcessRegressor(RobustGaussianProcessRegressor):
    """Sparse Gaussian process regressor (FITC, DTC or VFE) with certified bounds.

    The latent function is summarised by its values at M inducing inputs,
    so fitting costs O(N M^2) time and O(N + M^2) memory (no N x N matrix)
    and prediction O(M^2) per point. Hyperparameters maximise the
    approximation's (log) marginal likelihood (the evidence lower bound for
    ``"vfe"``) with its analytic gradient, as sklearn's
    :class:`~sklearn.gaussian_process.GaussianProcessRegressor` does with the
    exact one. :meth:`certify`, :meth:`prediction_range` and :meth:`explain`
    work as for :class:`RobustGaussianProcessRegressor`, over the M inducing
    inputs: their cost per row does not grow with N. The bounds hold for the
    numbers this estimator's own ``predict`` returns, up to the relative
    margin ``skgprobust.bounds.margin_rtol(M, d)`` (times the condition
    estimate of the variance factor ``L_`` for the std).

    Parameters
    ----------
    kernel : kernel instance, default=None
        The prior covariance. None: ``ConstantKernel(1.0, "fixed") *
        RBF(1.0, "fixed")``, as in sklearn. Model observation noise with a
        ``WhiteKernel`` summand (fitted with the other hyperparameters);
        its variance is part of the predictive std, as in sklearn.
    inducing_points : int or array-like of shape (M, n_features), default=100
        An int M: M distinct training inputs chosen by k-means++ seeding
        (:func:`sklearn.cluster.kmeans_plusplus`, deterministic for a
        ``random_state``); more than the number of training samples N
        warns and uses all N (as :class:`sklearn.kernel_approximation.Nystroem`
        does). An array: the inducing inputs themselves; more rows than N,
        or a width other than n_features, is a ValueError.
    approximation : {"vfe", "dtc", "fitc"}, default="vfe"
        Titsias' variational free energy, the deterministic training
        conditional or the fully independent training conditional
        (Quinonero-Candela & Rasmussen 2005). "vfe" and "dtc" share the
        predictive and differ in the objective.
    alpha : float or ndarray of shape (n_samples,), default=1e-10
        Noise variance added at the training points (not to the predictive
        variance), as sklearn's ``alpha``.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        As in sklearn's GaussianProcessRegressor.
    n_restarts_optimizer : int, default=0
        Further optimiser runs from log-uniform random hyperparameters.
    optimize_inducing : bool, default=False
        Also optimise the inducing inputs (M x n_features more variables,
        unbounded) with the analytic gradient of the objective. Needs input
        derivatives of the kernel: sums, products and powers of
        ConstantKernel, WhiteKernel, RBF and Matern (nu in 0.5, 1.5, 2.5,
        inf); ValueError for other kernels.
    normalize_y : bool, default=False
        Standardise the targets before fitting (undone in predictions).
    copy_X_train : bool, default=True
        Keep a copy of the training data (``log_marginal_likelihood(theta)``
        needs it).
    n_targets : int, default=None
        Number of targets of the prior (unfitted ``predict`` / ``sample_y``).
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of inducing inputs, the optimiser restarts and
        ``sample_y``.

    Attributes
    ----------
    inducing_points_ : ndarray of shape (M, n_features)
    kernel_ : kernel instance
        The fitted kernel.
    alpha_ : ndarray of shape (M,) or (M, n_targets)
        Weights beta of the predictive mean (normalised units):
        ``mean = k(x, Z) @ alpha_ * std + mean_y``.
    L_ : ndarray of shape (M, M)
        Lower-triangular factor with ``L_ L_^T = (Kzz^-1 - Sigma)^-1``; the
        predictive variance is ``k(x, x) - ||L_^-1 k(Z, x)||^2``.
    X_train_, y_train_ : ndarray
        Training data (y normalised when normalize_y).
    log_marginal_likelihood_value_ : float
        Objective at the fitted hyperparameters.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    RobustGaussianProcessRegressor : the exact (dense) model.

    Notes
    -----
    See the module :mod:`skgprobust._sparse` for the formulas, the factor
    ``L_`` and its conditioning.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgprobust import SparseGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 5, (500, 1))
    >>> y = np.sin(X).ravel() + 0.1 * rng.normal(size=500)
    >>> reg = SparseGaussianProcessRegressor(RBF() + WhiteKernel(), inducing_points=20, random_state=0).fit(X, y)
    >>> r = reg.prediction_range([[2.5]], gamma=0.1, epsilon=1e-3)
    >>> bool(r.min_lower[0, 0] <= reg.predict([[2.5]])[0] <= r.max_upper[0, 0])
    True
    """

    _parameter_constraints = {
        **GaussianProcessRegressor._parameter_constraints,
        "inducing_points": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "approximation": [StrOptions(set(APPROXIMATIONS))],
        "optimize_inducing": ["boolean"],
    }

    _fitted_attributes = ("inducing_points_", "alpha_", "L_")

    def __init__(
        self,
        kernel=None,
        *,
        inducing_points=100,
        approximation="vfe",
        alpha=1e-10,
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        optimize_inducing=False,
        normalize_y=False,
        copy_X_train=True,
        n_targets=None,
        random_state=None,
    ):
        self.kernel = kernel
        self.inducing_points = inducing_points
        self.approximation = approximation
        self.alpha = alpha
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.optimize_inducing = optimize_inducing
        self.normalize_y = normalize_y
        self.copy_X_train = copy_X_train
        self.n_targets = n_targets
        self.random_state = random_state

    # -- fitting ----------------------------------------------------------------
    def _choose_inducing(self, X, rng, check_rows=True):
        """Inducing inputs from ``self.inducing_points`` (see the class doc);
        ``check_rows=False`` accepts an array of more rows than X (a binary
        model of a multi-class classifier sees a subset of the training set
        that the array was checked against)."""
        N, d = X.shape
        Z = self.inducing_points
        if isinstance(Z, numbers.Integral) and not isinstance(Z, bool):
            if Z > N:
                warnings.warn(
                    f"inducing_points={Z} is more than the number of training samples (n_samples = {N}); "
                    f"using all {N} training inputs as inducing points.",
                    UserWarning,
                )
                Z = N
            return kmeans_plusplus(X, n_clusters=int(Z), random_state=rng)[0].astype(np.float64)
        Z = np.asarray(Z)
        if Z.ndim != 2 or Z.shape[0] == 0:
            raise ValueError(f"inducing_points must be an int or a 2-D array of shape (M, {d}), got shape {Z.shape}.")
        if Z.shape[1] != d:
            raise ValueError(
                f"inducing_points has {Z.shape[1]} features, but the training data has {d} features."
            )
        if check_rows and Z.shape[0] > N:
            raise ValueError(
                f"inducing_points has {Z.shape[0]} rows, more than the number of training samples (n_samples = {N})."
            )
        try:
            Z = np.asarray(Z, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("inducing_points must be numeric.") from None
        if not np.all(np.isfinite(Z)):
            raise ValueError("inducing_points contains NaN or infinity.")
        return Z.copy()

    def _objective(self, theta, eval_gradient=False, state=False, X=None, y=None):
        kernel = self.kernel_.clone_with_theta(theta) if theta is not None else self.kernel_
        X = self.X_train_ if X is None else X
        y = self.y_train_ if y is None else y
        return sparse_objective(
            kernel, X, y.reshape(len(X), -1), self.inducing_points_, self.approximation, self._alpha_vec,
            eval_gradient=eval_gradient, state=state,
        )

    def fit(self, X, y):
        """Fit the sparse model: inducing inputs, hyperparameters, predictive.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Training targets.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        check_not_compound(self.kernel)
        self.kernel_ = C(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed") \
            if self.kernel is None else clone(self.kernel)
        rng = check_random_state(self.random_state)
        self._rng = rng
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        # Same memory layout whatever the input (a DataFrame gives Fortran
        # order): BLAS results, hence the optimiser's path, do not depend on it.
        X, y = np.ascontiguousarray(X), np.ascontiguousarray(y)
        n_targets_seen = y.shape[1] if y.ndim > 1 else 1
        if self.n_targets is not None and n_targets_seen != self.n_targets:
            raise ValueError(
                "The number of targets seen in `y` is different from the parameter "
                f"`n_targets`. Got {n_targets_seen} != {self.n_targets}."
            )
        N = len(X)
        alpha = np.asarray(self.alpha, dtype=np.float64)
        if alpha.ndim > 0 and alpha.shape[0] != N:
            if alpha.shape[0] == 1:
                alpha = alpha[0]
            else:
                raise ValueError(
                    f"alpha must be a scalar or an array with same number of entries as y. ({alpha.shape[0]} != {N})"
                )
        self._alpha_vec = np.broadcast_to(alpha, (N,)).copy()
        if self.normalize_y:
            self._y_train_mean = np.mean(y, axis=0)
            self._y_train_std = _handle_zeros_in_scale(np.std(y, axis=0), copy=False)
            y = (y - self._y_train_mean) / self._y_train_std
        else:
            shape = (y.shape[1],) if y.ndim == 2 else 1
            self._y_train_mean = np.zeros(shape=shape)
            self._y_train_std = np.ones(shape=shape)
        self.inducing_points_ = self._choose_inducing(X, rng)
        self.X_train_ = np.copy(X) if self.copy_X_train else X
        self.y_train_ = np.copy(y) if self.copy_X_train else y

        if self.optimizer is not None and (self.kernel_.n_dims > 0 or self.optimize_inducing):
            p, shape = self.kernel_.n_dims, self.inducing_points_.shape
            wrt_z = bool(self.optimize_inducing)
            if wrt_z:  # refuse a kernel without input derivatives before optimising
                Z1 = self.inducing_points_[:1]
                _input_contract(self.kernel_, Z1, Z1, np.zeros((1, 1)))

            def obj_func(params, eval_gradient=True):
                kernel = self.kernel_.clone_with_theta(params[:p])
                Z = params[p:].reshape(shape) if wrt_z else self.inducing_points_
                out = sparse_objective(
                    kernel, self.X_train_, self.y_train_.reshape(len(self.X_train_), -1), Z, self.approximation,
                    self._alpha_vec, eval_gradient=eval_gradient, wrt_z=wrt_z,
                )
                if eval_gradient:
                    return -out[0], -out[1]
                return -out

            Z, _ = _maximise(self, obj_func, self.kernel_, rng, self.inducing_points_.ravel() if wrt_z else None)
            if wrt_z:
                self.inducing_points_ = Z.reshape(shape)
        lml, st = self._objective(None, state=True)
        self.log_marginal_likelihood_value_ = lml
        beta = st["beta"]
        self.alpha_ = beta[:, 0] if (y.ndim == 1) else beta
        self.L_ = _checked_factor(st["L"])
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The approximation's log marginal likelihood (the ELBO for "vfe").

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-transformed hyperparameters; None: the fitted value.
        eval_gradient : bool, default=False
            Also return the gradient with respect to theta.
        clone_kernel : bool, default=True
            Accepted for sklearn compatibility (the kernel is always cloned).

        Returns
        -------
        log_likelihood : float
            The approximation's log marginal likelihood (the ELBO for "vfe").
        log_likelihood_gradient : ndarray of shape (n_kernel_params,)
            Only when eval_gradient is True.
        """
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        check_is_fitted(self, self._fitted_attributes)
        return self._objective(np.asarray(theta, dtype=np.float64), eval_gradient=eval_gradient)

    # -- prediction ---------------------------------------------------------------
    def predict(self, X, return_std=False, return_cov=False):
        """Predictive mean and optionally std or covariance (sklearn's semantics).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.
        return_std : bool, default=False
            Also return the predictive standard deviation.
        return_cov : bool, default=False
            Also return the predictive covariance.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Predictive mean.
        y_std : ndarray, only when return_std
            ``sqrt(max(k(x, x) - ||L_^-1 k(Z, x)||^2, 0))`` times the
            target scale; k(x, x) includes WhiteKernel noise, not alpha.
        y_cov : ndarray, only when return_cov
            Predictive covariance of the query points.
        """
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        if not hasattr(self, "inducing_points_"):
            return GaussianProcessRegressor.predict(self, X, return_std=return_std, return_cov=return_cov)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        K_trans = self.kernel_(X, self.inducing_points_)
        weights = np.asarray(self.alpha_).reshape(len(self.inducing_points_), -1) * self._y_train_std
        y_mean = K_trans @ weights + self._y_train_mean
        if y_mean.shape[1] == 1:
            y_mean = y_mean[:, 0]
        if not return_cov and not return_std:
            return y_mean
        V = solve_triangular(self.L_, K_trans.T, lower=True, check_finite=False)
        if return_cov:
            y_cov = self.kernel_(X) - V.T @ V
            y_cov = np.outer(y_cov, self._y_train_std**2).reshape(*y_cov.shape, -1)
            if y_cov.shape[2] == 1:
                y_cov = np.squeeze(y_cov, axis=2)
            return y_mean, y_cov
        y_var = self.kernel_.diag(X).copy()
        y_var -= np.einsum("ij,ij->j", V, V)
        neg = y_var < 0
        if np.any(neg):
            warnings.warn("Predicted variances smaller than 0. Setting those variances to 0.")
            y_var[neg] = 0.0
        y_var = np.outer(y_var, self._y_train_std**2).reshape(*y_var.shape, -1)
        if y_var.shape[1] == 1:
            y_var = np.squeeze(y_var, axis=1)
        return y_mean, np.sqrt(y_var)

    # -- the bound model ----------------------------------------------------------
    def _fit_token(self):
        return self.alpha_

    def _build_bound_model(self):
        Z = self.inducing_points_
        weights = np.asarray(self.alpha_, dtype=np.float64).reshape(len(Z), -1)
        P = weights.shape[1]
        std = np.broadcast_to(np.asarray(self._y_train_std, dtype=np.float64), (P,))
        mean = np.broadcast_to(np.asarray(self._y_train_mean, dtype=np.float64), (P,))
        latent = LatentModel(Z, weights * std, mean, std, self.kernel_, L=self.L_, cholesky_factor=False)
        return BoundModel("regression", [latent])

    def _model_predict(self, X, return_std=False):
        """This model's ``predict`` (what the bounds are checked against)."""
        return self.predict(X, return_std=return_std)


# ---------------------------------------------------------------------------
# Binary classification: probit likelihood, EP or Laplace over the inducing values
# ---------------------------------------------------------------------------


def _probit_terms(z):
    """log Phi(z) and r = phi(z) / Phi(z), stably for z << 0."""
    logcdf = log_ndtr(z)
    r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - logcdf)
    return logcdf, r


def _probit_setup(kernel, X, s, Z, approximation, eval_gradient=False):
    """The whitened sparse probit model (see :class:`SparseGaussianProcessClassifier`):
    Lz (Kzz = Lz Lz^T, jittered), V = Lz^-1 Kzx, q_i = ||V_:i||^2, the
    conditional variances t_i = max(k_c(x_i, x_i) - q_i, 0) and d_i (the
    latent variance left given u: WhiteKernel part, plus t_i for "fitc"),
    and the probit slopes c_i = s_i (1 + d_i)^-1/2 of P(y_i | v) = Phi(c_i
    (V^T v)_i); with eval_gradient also the kernel derivatives the chain rule
    of :func:`_probit_chain` needs."""
    Kzz, dKzz = _kzz(kernel, Z, eval_gradient)
    try:
        Lz = cholesky(Kzz, lower=True, check_finite=False)
    except np.linalg.LinAlgError as exc:
        exc.args = (f"The kernel {kernel} is not positive definite on the inducing points.",) + exc.args
        raise
    V = solve_triangular(Lz, kernel(X, Z).T, lower=True, check_finite=False)
    parts = _diag_parts(kernel, X, eval_gradient)
    white, cov = parts[0], parts[1]
    q = np.einsum("ij,ij->j", V, V)
    t = np.maximum(cov - q, 0.0)
    d = white.copy()
    if approximation == "fitc":
        d = d + t
    st = {"Lz": Lz, "V": V, "c": s / np.sqrt(1.0 + d), "d": d, "t": t, "active": cov - q > 0}
    if eval_gradient:
        st.update(dKzz=dKzz, dwhite=parts[2], dcov=parts[3])
    return st


def _whitened_probit(kernel, X, s, Z, approximation):
    """Lz, V = Lz^-1 Kzx and the probit slopes c_i = s_i (1 + d_i)^-1/2 of
    P(y_i | v) = Phi(c_i (V^T v)_i) (see :class:`SparseGaussianProcessClassifier`)."""
    st = _probit_setup(kernel, X, s, Z, approximation)
    return st["Lz"], st["V"], st["c"]


def _vfe_penalty(st):
    """The collapsed-bound correction -1/2 sum_i t_i / (1 + d_i) of the
    "vfe" objective (see :class:`SparseGaussianProcessClassifier`)."""
    return -0.5 * float(np.sum(st["t"] / (1.0 + st["d"])))


def _posterior_state(Lz, V, prec, v_mean):
    """beta and the variance factor L for a Gaussian posterior over v with
    precision I + V diag(prec) V^T and mean v_mean."""
    M = len(Lz)
    UUt = _syrk(V * np.sqrt(prec), np.zeros((M, M)))
    UUt = np.triu(UUt) + np.triu(UUt, 1).T
    mu, E = eigh(UUt, check_finite=False)
    mu = np.maximum(mu, _MU_FLOOR)
    beta = solve_triangular(Lz, v_mean, lower=True, trans="T", check_finite=False)
    return mu, {"beta": beta, "L": _variance_factor(Lz, E, mu)}


def _chol_solve(L, B):
    """(L L^T)^-1 B for a lower Cholesky factor L."""
    return solve_triangular(
        L, solve_triangular(L, B, lower=True, check_finite=False), lower=True, trans="T", check_finite=False
    )


def _ep_core(V, c, max_iter, sites0=None, tol=1e-12, damping=0.5, gradient=False):
    """EP in the whitened coordinates (see :func:`_ep_fit`). Returns
    (log Z_EP, (tau, nu), v_mean, G) with G = (dF/dV, dF/dc) at the sites'
    fixed point (None unless ``gradient``)."""
    N, M = V.shape[1], V.shape[0]
    if sites0 is not None and len(sites0[0]) == N:
        tau, nu = sites0[0].copy(), sites0[1].copy()
    else:
        tau, nu = np.zeros(N), np.zeros(N)

    def marginals(tau, nu):
        B = _syrk(V * np.sqrt(tau), np.eye(M))
        B = np.triu(B) + np.triu(B, 1).T
        LB = cholesky(B, lower=True, check_finite=False)
        A = solve_triangular(LB, V, lower=True, check_finite=False)
        b = solve_triangular(LB, V @ nu, lower=True, check_finite=False)
        return np.einsum("ij,ij->j", A, A), A.T @ b, LB, b

    def tilted(var, mean, tau, nu):
        # A point whose marginal variance vanishes (k(x_i, Z) ~ 0: no
        # inducing input near it) is deterministic under q; its site has no
        # effect there, so the cavity is taken as the marginal itself.
        flat = var <= 1e-12 * max(1.0, float(np.max(var)))
        varc = np.where(flat, 1.0, var)
        tau_c = np.maximum(1.0 / varc - tau, 1e-300)
        s2 = np.where(flat, var, 1.0 / tau_c)
        m = np.where(flat, mean, (mean / varc - nu) * s2)
        den = np.sqrt(1.0 + c * c * s2)
        z = c * m / den
        logZ, r = _probit_terms(z)
        mu_hat = m + c * s2 * r / den
        # s2_hat / s2 = 1 - q r (z + r) lies in (0, 1) for the probit; floored
        # against cancellation when c^2 s2 is huge.
        ratio = np.maximum(1.0 - (c * c * s2) / (1.0 + c * c * s2) * r * (z + r), 1e-12)
        return m, s2, logZ, mu_hat, s2 * ratio, flat, r, den

    for _ in range(max_iter):
        var, mean, _, _ = marginals(tau, nu)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            m, s2, _, mu_hat, s2_hat, flat, _, _ = tilted(var, mean, tau, nu)
            tau_new = np.where(flat, tau, np.maximum(1.0 / s2_hat - 1.0 / s2, 0.0))
            nu_new = np.where(flat, nu, mu_hat / s2_hat - m / s2)
        tau_new = (1.0 - damping) * tau + damping * tau_new
        nu_new = (1.0 - damping) * nu + damping * nu_new
        done = np.max(np.abs(tau_new - tau)) <= tol * (1.0 + np.max(np.abs(tau))) and np.max(
            np.abs(nu_new - nu)
        ) <= tol * (1.0 + np.max(np.abs(nu)))
        tau, nu = tau_new, nu_new
        if done:
            break
    var, mean, LB, b = marginals(tau, nu)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m, s2, logZ, _, _, _, r, den = tilted(var, mean, tau, nu)
    t1 = 1.0 + tau * s2
    lml = float(
        logZ.sum() + 0.5 * np.sum(np.log(t1)) - np.sum(np.log(np.diag(LB))) + 0.5 * b @ b
        + np.sum((tau * m * m - 2.0 * m * nu - nu * nu * s2) / (2.0 * t1))
    )
    v_mean = solve_triangular(LB, b, lower=True, trans="T", check_finite=False)
    G = None
    if gradient:
        # At the fixed point log Z_EP is stationary in the sites, so its
        # derivative is the explicit one (GPML Sec. 5.5.2, eq. 5.27): in the
        # prior Q = V^T V, that of log N(nu / tau | 0, Q + diag(1 / tau)),
        # dF/dQ = 1/2 (g g^T - (T - T Sigma T)), g = nu - tau * mean; in
        # V, dF/dV = 2 V dF/dQ = (V g) g^T - B^-1 V T. In the likelihood,
        # that of the tilted normalisers log Phi(c m / sqrt(1 + c^2 s2)) at
        # the fixed cavities.
        g = nu - tau * mean
        G_V = np.outer(V @ g, g) - _chol_solve(LB, V * tau)
        G_c = r * m / den**3
        G = (G_V, G_c)
    return lml, (tau, nu), v_mean, LB, G


def _ep_fit(kernel, X, s, Z, approximation, max_iter, sites0=None, state=False, tol=1e-12, damping=0.5):
    """Expectation propagation for the sparse probit model in the whitened
    inducing coordinates (prior v ~ N(0, I), likelihood terms
    Phi(c_i (V^T v)_i)): parallel updates of Gaussian sites on m = V^T v
    (precision tau_i >= 0: the probit is log-concave), damped by 1/2, until
    the site parameters change by less than ``tol`` (relative) or
    ``max_iter`` sweeps. Returns (log Z_EP, sites[, state]), with

        log Z_EP = sum_i log Z_i + 1/2 sum_i log(1 + tau_i s2_i) - 1/2 log|B|
                   + 1/2 (V nu)^T B^-1 (V nu)
                   + sum_i (tau_i m_i^2 - 2 m_i nu_i - nu_i^2 s2_i) / (2 (1 + tau_i s2_i)),

    B = I + V diag(tau) V^T, (m_i, s2_i) the cavity moments and Z_i the
    tilted normalisers (GPML eq. 3.65 in these coordinates)."""
    st = _probit_setup(kernel, X, s, Z, approximation)
    lml, sites, v_mean, _, _ = _ep_core(st["V"], st["c"], max_iter, sites0, tol, damping)
    if not state:
        return lml, sites
    return lml, sites, _posterior_state(st["Lz"], st["V"], sites[0], v_mean)[1]


def _laplace_core(V, c, max_iter, v0=None, gradient=False):
    """Newton on Psi(v) = sum_i log Phi(c_i (V^T v)_i) - ||v||^2 / 2
    (concave). Returns (log q(y), v_hat, W, G) with W the curvature at the
    mode and G = (dF/dV, dF/dc) (None unless ``gradient``)."""
    M = V.shape[0]
    v = np.zeros(M) if v0 is None or len(v0) != M else np.array(v0, dtype=np.float64)

    def psi(v):
        logcdf, _ = _probit_terms(c * (V.T @ v))
        return float(logcdf.sum() - 0.5 * v @ v)

    cur = psi(v)
    for _ in range(max_iter):
        z = c * (V.T @ v)
        _, r = _probit_terms(z)
        W = c * c * r * (z + r)
        grad = V @ (c * r) - v
        H = _syrk(V * np.sqrt(W), np.eye(M))
        H = np.triu(H) + np.triu(H, 1).T
        step = _chol_solve(cholesky(H, lower=True, check_finite=False), grad)
        decrement = float(grad @ step)
        t = 1.0
        while True:
            new = psi(v + t * step)
            if new >= cur - 1e-12 * abs(cur) or t < 1e-8:
                break
            t *= 0.5
        v = v + t * step
        # Stop at a negligible change of Psi and Newton decrement (the
        # gradient below assumes the mode: dPsi/dv = 0).
        done = abs(new - cur) <= 1e-10 * max(1.0, abs(cur)) and decrement <= 1e-18 * max(1.0, abs(cur))
        cur = new
        if done:
            break
    m = V.T @ v
    z = c * m
    _, r = _probit_terms(z)
    h = r * (z + r)
    W = c * c * h
    A = _syrk(V * np.sqrt(W), np.eye(M))
    A = np.triu(A) + np.triu(A, 1).T
    LA = cholesky(A, lower=True, check_finite=False)
    lml = cur - float(np.sum(np.log(np.diag(LA))))
    G = None
    if gradient:
        # Implicit differentiation through the mode (GPML Alg. 5.1 in these
        # coordinates): F = Psi(v_hat) - 1/2 log|A|, A = I + V W V^T,
        # W_i = c_i^2 h(z_i), h = -(log Phi)'' = r (z + r), h' = -h (z + r) + r (1 - h).
        AV = solve_triangular(LA, V, lower=True, check_finite=False)
        Sig = np.einsum("ij,ij->j", AV, AV)  # posterior variance of m_i
        hp = -h * (z + r) + r * (1.0 - h)
        a = -0.5 * Sig * c**3 * hp
        sv = _chol_solve(LA, V @ a)
        tv = V.T @ sv
        G_V = np.outer(v, c * r + a - W * tv) + np.outer(sv, c * r) - _chol_solve(LA, V * W)
        G_c = r * m - 0.5 * Sig * (2.0 * c * h + c * c * hp * m) + tv * (r - c * h * m)
        G = (G_V, G_c)
    return lml, v, W, G


def _laplace_fit(kernel, X, s, Z, approximation, max_iter, v0=None, state=False):
    """Laplace approximation of the sparse probit model (see
    :class:`SparseGaussianProcessClassifier`) in the whitened inducing
    coordinates v = Lz^-1 u: Newton on
    Psi(v) = sum_i log Phi(c_i (V^T v)_i) - ||v||^2 / 2 (concave), with
    V = Lz^-1 Kzx and c_i = s_i (1 + d_i)^-1/2 (d_i the latent variance left
    given u: WhiteKernel part for "dtc", plus k(x_i, x_i) - Q_ii for
    "fitc"). Returns (log q(y), v_hat[, state])."""
    st = _probit_setup(kernel, X, s, Z, approximation)
    lml, v, W, _ = _laplace_core(st["V"], st["c"], max_iter, v0)
    if not state:
        return lml, v
    return lml, v, _posterior_state(st["Lz"], st["V"], W, v)[1]


def _probit_chain(kernel, X, Z, st, G_V, G_c, approximation, wrt_z=False):
    """d F / d theta from dF/dV and dF/dc (V = Lz^-1 Kzx, c_i = s_i (1 +
    d_i)^-1/2), plus the "vfe" correction's own derivative.

    F depends on V only through Q = V^T V (v -> R v, R orthogonal, leaves
    every approximation unchanged), so S = G_V V^T is symmetric and, with
    Kzz = Lz Lz^T, dF/dKzz = -1/2 Lz^-T S Lz^-1 (the Cholesky factor's
    derivative drops out); dF/dKzx = Lz^-T G_V. The diagonal terms chain
    through d_i (the WhiteKernel part w_i, plus t_i for "fitc") and q_i = ||V_:i||^2
    (dq/dV = 2 V). O(N M^2 + N M n_theta) time, O(chunk M) extra memory.
    With ``wrt_z`` the gradient with respect to ``Z.ravel()`` follows
    (through k(X, Z) and both arguments of k(Z, Z); d_i's diagonal terms and
    the jitter do not depend on Z), as for the regressor."""
    V, Lz, c, d, t = st["V"], st["Lz"], st["c"], st["d"], st["t"]
    active = st["active"].astype(np.float64)
    dd = G_c * (-0.5 * c / (1.0 + d))
    dq = np.zeros_like(dd)
    dcov = np.zeros_like(dd)
    if approximation == "fitc":  # d = w + (cov - q)_+
        dq -= dd * active
        dcov += dd * active
    elif approximation == "vfe":  # + (-1/2 sum t / (1 + d)), t = (cov - q)_+
        dd = dd + 0.5 * t / (1.0 + d) ** 2
        dq += 0.5 * active / (1.0 + d)
        dcov -= 0.5 * active / (1.0 + d)
    G_V = G_V + 2.0 * V * dq
    S = G_V @ V.T
    S = 0.5 * (S + S.T)
    M = len(Z)
    Linv = solve_triangular(Lz, np.eye(M), lower=True, check_finite=False)
    G_kzz = -0.5 * (Linv.T @ S @ Linv)
    dKxz = solve_triangular(Lz, G_V, lower=True, trans="T", check_finite=False).T
    grad = np.einsum("ij,ijk->k", G_kzz, st["dKzz"])
    gZ = np.zeros(Z.shape) if wrt_z else None
    for sl in _chunks(len(X), M, 4):
        grad += _cross_contract(kernel, X[sl], Z, dKxz[sl])
        if wrt_z:
            gZ += _input_contract(kernel, X[sl], Z, dKxz[sl])
    grad += dd @ st["dwhite"] + dcov @ st["dcov"]
    if wrt_z:
        gZ += 2.0 * _input_contract(kernel, Z, Z, G_kzz)
        return np.concatenate([grad, gZ.ravel()])
    return grad


def _classifier_objective(kernel, X, s, Z, approximation, inference, max_iter, warm=None, eval_gradient=False,
                          state=False, wrt_z=False):
    """The classifier's objective (see :class:`SparseGaussianProcessClassifier`):
    ``(value, warm start, gradient or None, state or None)``."""
    st = _probit_setup(kernel, X, s, Z, approximation, eval_gradient)
    if inference == "ep":
        lml, warm, v_mean, _, G = _ep_core(st["V"], st["c"], max_iter, warm, gradient=eval_gradient)
        prec = warm[0]
    else:
        lml, warm, prec, G = _laplace_core(st["V"], st["c"], max_iter, warm, gradient=eval_gradient)
        v_mean = warm
    if approximation == "vfe":
        lml += _vfe_penalty(st)
    grad = _probit_chain(kernel, X, Z, st, G[0], G[1], approximation, wrt_z) if eval_gradient else None
    fitted = _posterior_state(st["Lz"], st["V"], prec, v_mean)[1] if state else None
    return lml, warm, grad, fitted


class _SparseBinaryProbit(BaseEstimator):
    """The fitted binary sparse probit model (``base_estimator_``, or each
    estimator of a ``OneVsRestClassifier`` / ``OneVsOneClassifier`` of them):
    the counterpart of sklearn's ``_BinaryGaussianProcessClassifierLaplace``,
    fitted on validated float64 X and two labels. Predictive latent mean
    k(x, Z) beta and variance k(x, x) - ||L^-1 k(Z, x)||^2,
    p1 = Phi(mean / sqrt(1 + var)) (exactly :class:`ProbitLink`'s value).
    See :class:`SparseGaussianProcessClassifier` for the parameters."""

    def __init__(
        self,
        kernel=None,
        *,
        inducing_points=100,
        approximation="fitc",
        inference="ep",
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        max_iter_predict=100,
        copy_X_train=True,
        random_state=None,
        optimize_inducing=False,
    ):
        self.kernel = kernel
        self.inducing_points = inducing_points
        self.approximation = approximation
        self.inference = inference
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.optimize_inducing = optimize_inducing

    _choose_inducing = SparseGaussianProcessRegressor._choose_inducing

    def fit(self, X, y):
        self.kernel_ = C(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed") \
            if self.kernel is None else clone(self.kernel)
        rng = check_random_state(self.random_state)
        X = np.ascontiguousarray(X, dtype=np.float64)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError(f"The binary sparse model needs 2 classes; got {len(self.classes_)}.")
        # An array was checked against the whole training set by the public fit.
        self.inducing_points_ = self._choose_inducing(X, rng, check_rows=False)
        self.X_train_ = np.copy(X) if self.copy_X_train else X
        self._s = np.where(y_enc == 1, 1.0, -1.0)
        self._warm = None

        wrt_z = bool(self.optimize_inducing)
        if self.optimizer is not None and (self.kernel_.n_dims > 0 or wrt_z):
            p, shape = self.kernel_.n_dims, self.inducing_points_.shape
            if wrt_z:  # refuse a kernel without input derivatives before optimising
                Z1 = self.inducing_points_[:1]
                _input_contract(self.kernel_, Z1, Z1, np.zeros((1, 1)))

            def obj_func(params, eval_gradient=True):
                # Non-finite (an extreme theta): -inf, as sklearn's GPs return
                # for a kernel that is not positive definite; the warm start is kept.
                Z = params[p:].reshape(shape) if wrt_z else self.inducing_points_
                try:
                    value, warm, grad, _ = _classifier_objective(
                        self.kernel_.clone_with_theta(params[:p]), self.X_train_, self._s, Z, self.approximation,
                        self.inference, self.max_iter_predict, self._warm, eval_gradient=eval_gradient, wrt_z=wrt_z,
                    )
                except np.linalg.LinAlgError:
                    value, grad = -np.inf, None
                if not np.isfinite(value) or (grad is not None and not np.all(np.isfinite(grad))):
                    return (np.inf, np.zeros(len(params))) if eval_gradient else np.inf
                self._warm = warm
                return (-value, -grad) if eval_gradient else -value

            Z, _ = _maximise(self, obj_func, self.kernel_, rng, self.inducing_points_.ravel() if wrt_z else None)
            if wrt_z:
                self.inducing_points_ = Z.reshape(shape)
        value, _, _, st = self._objective(None, warm=self._warm, state=True)
        self.log_marginal_likelihood_value_ = value
        self.beta_, self.L_ = st["beta"], _checked_factor(st["L"])
        del self._warm
        return self

    def _objective(self, theta, eval_gradient=False, warm=None, state=False):
        kernel = self.kernel_ if theta is None else self.kernel_.clone_with_theta(theta)
        return _classifier_objective(
            kernel, self.X_train_, self._s, self.inducing_points_, self.approximation, self.inference,
            self.max_iter_predict, warm, eval_gradient=eval_gradient, state=state,
        )

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The objective (see :class:`SparseGaussianProcessClassifier`) and
        optionally its analytic gradient with respect to theta."""
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        check_is_fitted(self)
        value, _, grad, _ = self._objective(np.asarray(theta, dtype=np.float64), eval_gradient=eval_gradient)
        return (value, grad) if eval_gradient else value

    def latent_mean_and_variance(self, X):
        X = np.asarray(X, dtype=np.float64)
        K = self.kernel_(X, self.inducing_points_)
        V = solve_triangular(self.L_, K.T, lower=True, check_finite=False)
        return K @ self.beta_, self.kernel_.diag(X) - np.einsum("ij,ij->j", V, V)

    def predict_proba(self, X):
        mean, var = self.latent_mean_and_variance(X)
        p1 = ProbitLink().value(mean, var)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        mean = np.asarray(self.kernel_(np.asarray(X, dtype=np.float64), self.inducing_points_) @ self.beta_)
        return np.where(mean > 0, self.classes_[1], self.classes_[0])


class SparseGaussianProcessClassifier(RobustGaussianProcessClassifier):
    """Sparse GP classifier (probit likelihood; expectation propagation or
    Laplace; FITC, DTC or VFE) with certified robustness.

    The latent function is summarised by its values u at M inducing inputs
    Z: given u, the latent value at x_i is Gaussian with mean
    k(x_i, Z) Kzz^-1 u and variance d_i (``"dtc"`` and ``"vfe"``: only the
    kernel's WhiteKernel variance; ``"fitc"``: plus t_i = k(x_i, x_i) -
    Q_ii, the fully independent training conditional). With the probit
    likelihood the d_i integrate out exactly, P(y_i | u) = Phi(s_i m_i /
    sqrt(1 + d_i)), and the posterior over u is approximated by expectation
    propagation (``inference="ep"``, the paper's Sec. 7.3: parallel damped
    site updates, O(N M^2) per sweep) or Laplace's method (``"laplace"``:
    Newton, O(N M^2) per iteration), both in whitened coordinates with
    O(N M) memory. Either gives a Gaussian posterior over u, so the
    predictive latent mean and variance have the paper's form (Eq. 1-2) over
    the M inducing inputs,

        mean(x) = k(x, Z) beta,   var(x) = k(x, x) - ||L^-1 k(Z, x)||^2,

    (L as for :class:`SparseGaussianProcessRegressor`, with Lambda =
    diag(1 / tau) from the EP site precisions or diag(1 / W) from the
    Laplace curvature), and ``predict_proba`` is the exact probit-Gaussian
    integral Phi(mean / sqrt(1 + var)); ``predict`` is class 1 iff mean > 0.
    :meth:`certify` (mean bounds only for two classes), :meth:`prediction_range`
    (``statistic="proba"`` with the exact probit link bounds of the paper's
    Prop. 8, or ``"latent_mean"``) and :meth:`explain` work as for
    :class:`RobustGaussianProcessClassifier`, over the M inducing inputs.
    More than two classes: one binary sparse model per class (one-vs-rest,
    probabilities normalised as sklearn does) or per pair (one-vs-one, no
    ``predict_proba``), as :class:`EPGaussianProcessClassifier`.

    Hyperparameters maximise the objective F (below) with L-BFGS-B and its
    analytic gradient: for EP the explicit derivative at the sites' fixed
    point (GPML Sec. 5.5.2), for Laplace the implicit derivative through the
    mode (GPML Alg. 5.1), both in the whitened coordinates, O(N M^2) per
    evaluation; each evaluation warm-starts from the previous sites / mode.

    The ``"vfe"`` objective. Titsias' (2009) collapsed bound for a Gaussian
    likelihood subtracts sum_i t_i / (2 sigma^2), the curvature 1 / sigma^2
    of log N(y_i | f_i, sigma^2) times the conditional variance t_i. The
    same argument holds for any log-likelihood whose curvature is bounded:
    -(d / dz)^2 log Phi(z) = r(z) (z + r(z)) lies in (0, 1), so with
    f_i | u ~ N(a_i u, t_i) (a_i = k(x_i, Z) Kzz^-1) and c_i^2 = 1 / (1 + d_i),
    E[log Phi(s_i c_i f_i)] >= log Phi(s_i c_i a_i u) - c_i^2 t_i / 2 (second
    order Taylor bound, cf. Boehning & Lindsay 1988), and Jensen's inequality
    with q(f, u) = p(f | u) q(u), maximised over q(u), gives

        log p(y) >= log Z_DTC(y) - 1/2 sum_i t_i / (1 + d_i),

    Z_DTC(y) = int N(u | 0, Kzz) prod_i Phi(s_i c_i a_i u) du the DTC
    model's evidence (equality for t = 0, e.g. Z = X). ``"vfe"`` therefore
    uses the DTC posterior (EP or Laplace of Z_DTC: its predictions equal
    ``"dtc"``'s at the same hyperparameters and inducing inputs) and the
    objective F = log Z_DTC^approx - 1/2 sum_i t_i / (1 + d_i), which
    penalises inducing sets that leave the training latents uncertain, as
    the regressor's VFE does. F is a lower bound on log p(y) where the EP /
    Laplace value is one on log Z_DTC (not guaranteed for either; EP is
    typically very accurate). ``"dtc"`` and ``"fitc"`` maximise
    log Z^approx itself. This affects only which hyperparameters and
    inducing inputs the fit selects: no certificate uses F, every bound is
    about the fitted model's own ``predict`` / ``predict_proba`` whatever
    they are. (A guaranteed lower bound would replace log Z_DTC^approx by
    the Jensen bound E_q[sum_i log Phi(s_i c_i a_i u)] - KL(q || N(0, Kzz))
    at the approximate posterior q, which needs a certified lower bound of
    one-dimensional Gaussian expectations of log Phi; not implemented.)

    Parameters
    ----------
    kernel : kernel instance, default=None
        None: ``ConstantKernel(1.0, "fixed") * RBF(1.0, "fixed")``.
    inducing_points : int or array-like of shape (M, n_features), default=100
        As in :class:`SparseGaussianProcessRegressor`.
    approximation : {"fitc", "dtc", "vfe"}, default="fitc"
        Training conditional of the latent values given u, and objective
        (see above).
    inference : {"ep", "laplace"}, default="ep"
        Approximation of the posterior over the inducing values.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Maximiser of the log-marginal likelihood over the kernel's
        hyperparameters, as in sklearn; None keeps the kernel fixed.
    n_restarts_optimizer : int, default=0
        Extra optimiser starts from hyperparameters drawn log-uniformly
        within their bounds.
    max_iter_predict : int, default=100
        EP sweeps (until the sites change by < 1e-12 relative) or Newton
        iterations per fit.
    copy_X_train : bool, default=True
        Store a copy of the training inputs (otherwise a reference).
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser restarts and the choice of inducing points.
    multi_class : {"one_vs_rest", "one_vs_one"}, default="one_vs_rest"
        More than two classes, as sklearn's GaussianProcessClassifier.
    n_jobs : int, default=None
        Parallel fits of the binary models (more than two classes only).
    optimize_inducing : bool, default=False
        Also optimise the inducing inputs (M x n_features more variables,
        unbounded, analytic gradient), as
        :class:`SparseGaussianProcessRegressor` does; the same kernels
        (sums, products and powers of ConstantKernel, WhiteKernel, RBF,
        Matern with nu in 0.5, 1.5, 2.5, inf); ValueError for others.

    Attributes
    ----------
    base_estimator_ : object
        The fitted binary model (``predict``, ``predict_proba``,
        ``latent_mean_and_variance``, ``inducing_points_``, ``beta_``,
        ``L_``), or a ``OneVsRestClassifier`` / ``OneVsOneClassifier`` of them.
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    kernel_ : kernel instance
    inducing_points_ : ndarray of shape (M, n_features)
        Two classes only (each binary model of a multi-class fit has its own).
    log_marginal_likelihood_value_ : float
        The objective F (mean over the binary models for more classes).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    """

    _parameter_constraints = {
        "kernel": [K.Kernel, None],
        "inducing_points": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "approximation": [StrOptions(set(APPROXIMATIONS))],
        "optimizer": [StrOptions({"fmin_l_bfgs_b"}), callable, None],
        "n_restarts_optimizer": [Interval(numbers.Integral, 0, None, closed="left")],
        "inference": [StrOptions({"ep", "laplace"})],
        "max_iter_predict": [Interval(numbers.Integral, 1, None, closed="left")],
        "copy_X_train": ["boolean"],
        "random_state": ["random_state"],
        "multi_class": [StrOptions({"one_vs_rest", "one_vs_one"})],
        "n_jobs": [numbers.Integral, None],
        "optimize_inducing": ["boolean"],
    }

    warm_start = False

    def __init__(
        self,
        kernel=None,
        *,
        inducing_points=100,
        approximation="fitc",
        inference="ep",
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        max_iter_predict=100,
        copy_X_train=True,
        random_state=None,
        multi_class="one_vs_rest",
        n_jobs=None,
        optimize_inducing=False,
    ):
        self.kernel = kernel
        self.inducing_points = inducing_points
        self.approximation = approximation
        self.inference = inference
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.optimize_inducing = optimize_inducing

    def fit(self, X, y):
        """Fit the sparse probit model(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        check_not_compound(self.kernel)
        X, y = validate_data(self, X, y, dtype=np.float64)
        X = np.ascontiguousarray(X)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ == 1:
            raise ValueError(
                f"{type(self).__name__} requires 2 or more distinct classes; got 1 class ({self.classes_[0]!r})."
            )
        if not isinstance(self.inducing_points, numbers.Integral):
            _SparseBinaryProbit._choose_inducing(self, X, None)  # width, rows <= N, finite: ValueError
        base = _SparseBinaryProbit(
            self.kernel, inducing_points=self.inducing_points, approximation=self.approximation,
            inference=self.inference, optimizer=self.optimizer, n_restarts_optimizer=self.n_restarts_optimizer,
            max_iter_predict=self.max_iter_predict, copy_X_train=self.copy_X_train, random_state=self.random_state,
            optimize_inducing=self.optimize_inducing,
        )
        if self.n_classes_ > 2:
            wrapper = OneVsRestClassifier if self.multi_class == "one_vs_rest" else OneVsOneClassifier
            base = wrapper(base, n_jobs=self.n_jobs)
        self.base_estimator_ = base.fit(X, y)
        if self.n_classes_ > 2:
            self.log_marginal_likelihood_value_ = float(
                np.mean([e.log_marginal_likelihood() for e in self.base_estimator_.estimators_])
            )
            if hasattr(self, "inducing_points_"):
                del self.inducing_points_
        else:
            self.log_marginal_likelihood_value_ = self.base_estimator_.log_marginal_likelihood()
            self.inducing_points_ = self.base_estimator_.inducing_points_
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

    def predict(self, X):
        """Class labels: the binary model's sign of the latent mean, or
        the one-vs-rest / one-vs-one combination of the binary models.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        C : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        check_is_fitted(self, self._fitted_attributes)
        return self.base_estimator_.predict(validate_data(self, X, reset=False, dtype=np.float64))

    def latent_mean_and_variance(self, X):
        """Predictive latent mean and variance at X (two classes only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        latent_mean, latent_var : ndarray of shape (n_samples,)
            The binary model's latent predictive mean and variance.
        """
        check_is_fitted(self, self._fitted_attributes)
        if self.n_classes_ > 2:
            raise ValueError("latent_mean_and_variance is available for two classes only.")
        return self.base_estimator_.latent_mean_and_variance(validate_data(self, X, reset=False, dtype=np.float64))

    def _build_bound_model(self):
        base = self.base_estimator_
        ests = base.estimators_ if hasattr(base, "estimators_") else [base]
        kind = fitted_decision_kind(self)  # the fitted wrapper's rule, not the parameter
        latents = [
            LatentModel(e.inducing_points_, e.beta_[:, None], [0.0], [1.0], e.kernel_, L=e.L_, cholesky_factor=False)
            for e in ests
        ]
        return BoundModel(kind, latents, classes=self.classes_, link=ProbitLink())
