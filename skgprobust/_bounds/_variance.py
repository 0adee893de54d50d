"""Posterior-variance bounds over many boxes at once (paper Sec. 4.2).

Every latent model here has ``var(x) = k(x, x) - q(x)`` with

    q(x) = ||A r(x)||^2 = r^T S r,   r(x) = k(Xs, x),   S = A^T A,

where ``A`` is the triangular factor sklearn itself uses (``L_^-1`` for the
regressor, ``L_^-1 diag(W_sr_)`` for the Laplace classifier). The default
method needs no LP/QP:

* upper bound of var (lower bound of q): q is convex in r, so its tangent
  plane at r0 = r(centre) lies below it everywhere,
  ``q(r) >= q0 + g.(r - r0)`` with ``g = 2 S r0``; the minimum of
  ``g . r(x)`` over the box is a mean-type bound (Prop. 2 / Taylor model,
  :func:`~skgprobust._bounds._mean.affine_lower`). The error is the dropped
  ``||A (r - r0)||^2``, O(h^2) in the box width.
* lower bound of var (upper bound of q): ``q(r) = q0 + g.(r - r0) +
  ||A (r - r0)||^2`` exactly. The linear part is bounded like the mean; the
  quadratic part by the smaller of ``lambda_max(S) ||dr||^2`` (dr from kernel
  intervals) and a spectral split that bounds the projections of r on the top
  eigenvectors of S with mean-type bounds (keeping the cancellation across
  training points that the paper's LP relaxation loses).

Both converge as the box shrinks, so branch and bound reaches any epsilon.

Soundness margin: the bounds are exact in real arithmetic for the matrix A;
rounding in A, in sklearn's own triangular solve and in the sums is covered
by ``margin_rtol(N, d) * kappa * scale``, kappa an upper estimate of the
condition number of sklearn's triangular factor (see :meth:`LatentVariance.margin`).
That holds because q(r0), its gradient and point values are computed with
triangular solves, as sklearn does; the explicit S (condition kappa^2) is used
only for its spectrum, widened by a computed bound on its error (``s_err``).
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol
from ._mean import affine_lower

# Work per box that the spectral split may spend (m * N * d).
_SPECTRAL_BUDGET = 2e5
# The spectral split is used only when lambda_max(S) k(x, x) exceeds this,
# i.e. for nearly noise-free regressors, where lambda_max(S) ~ 1 / noise
# makes the plain lambda_max ||dr||^2 term useless; elsewhere (e.g. the
# Laplace GPC, lambda_max(S) <= max W <= 1/4) splitting boxes is cheaper.
_SPECTRAL_MIN_GAIN = 50.0
# ... and only when the spectrum of S decays within the m directions kept:
# the remainder is lam_m ||dr||^2, so with lam_m > this fraction of
# lambda_max (a flat spectrum, e.g. a Laplace GPC with a large kernel
# amplitude) the split costs 2m bounds per box and gains almost nothing.
_SPECTRAL_MAX_REST = 0.05


@dataclass
class VarianceBound:
    """Bounds of the latent variance over B boxes."""

    lower: np.ndarray  # (B,)
    upper: np.ndarray  # (B,)
    arg_min: np.ndarray  # (B, d) candidate point for the minimum of var
    arg_max: np.ndarray  # (B, d) candidate point for the maximum of var
    score: np.ndarray  # (B, d) split scores


def _norm2_estimate(matvec, rmatvec, n, iters=30):
    """Upper estimate of the spectral norm (power iteration, times 1.5)."""
    v = np.random.default_rng(0).normal(size=n)
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(iters):
        w = rmatvec(matvec(v))
        s = np.linalg.norm(w)
        if s == 0:
            return 0.0
        v = w / s
    return 1.5 * np.sqrt(s)


class LatentVariance:
    """``var(x) = k(x, x) - ||A k(Xs, x)||^2`` for one latent model.

    Parameters
    ----------
    adapter : KernelAdapter
        Adapter of the fitted kernel on the support inputs.
    L : ndarray of shape (N, N)
        Lower-triangular factor sklearn solves with.
    col_scale : ndarray of shape (N,) or None
        Column scaling D of ``A = L^-1 D`` (``W_sr_`` for the Laplace GPC).
    """

    def __init__(self, adapter, L, col_scale=None):
        self.adapter = adapter
        L = np.asarray(L, dtype=np.float64)
        N = L.shape[0]
        self.L = L
        self.col_scale = None if col_scale is None else np.asarray(col_scale, dtype=np.float64)
        A = solve_triangular(L, np.eye(N), lower=True, check_finite=False)
        if self.col_scale is not None:
            A = A * self.col_scale[None, :]
        self.A = A
        self.S = A.T @ A
        lam, V = np.linalg.eigh(self.S)
        lam = np.maximum(lam, 0.0)[::-1]  # S is PSD; clip rounding below 0
        self.lam, self.V = lam, V[:, ::-1]
        # Condition estimate of the factor (sklearn's solve errs by ~ kappa u).
        norm_L = _norm2_estimate(lambda v: L @ v, lambda v: L.T @ v, N)
        norm_Linv = _norm2_estimate(
            lambda v: solve_triangular(L, v, lower=True, check_finite=False),
            lambda v: solve_triangular(L, v, lower=True, trans="T", check_finite=False),
            N,
        )
        self.kappa = max(1.0, norm_L * norm_Linv)
        # The explicit S (used only for its spectrum) squares the condition
        # number: it differs from the exact (L^-1 D)^T (L^-1 D) by s_err in
        # norm, which is added to every eigenvalue bound below. Near-noise-free
        # regressors (alpha = 1e-10, lambda_max ~ 1e10) need this; q(r0) and
        # its gradient are computed with triangular solves, as sklearn does.
        self.s_err = self._s_error(A, norm_Linv) if N else 0.0
        self.lam_max = (float(lam[0]) + self.s_err) * (1 + 1e-10) if N else 0.0

    def _s_error(self, A, norm_Linv):
        """Upper bound of ||fl(A^T A) - (L^-1 D)^T (L^-1 D)||_2."""
        N = A.shape[0]
        D = np.ones(N) if self.col_scale is None else self.col_scale
        absL, absA = np.abs(self.L), np.abs(A)
        # ||A - L^-1 D|| <= ||L^-1|| ||L A - D||; the residual is computed in
        # float, so add its own rounding, (N + 2) u || |L| |A| ||.
        res = np.linalg.norm(self.L @ A - np.diag(D)) + (N + 2) * _U * np.linalg.norm(absL @ absA)
        dA = norm_Linv * res
        nA = np.linalg.norm(A)
        gam = (N + 2) * _U
        return float(2.0 * dA * nA + dA * dA + gam * np.linalg.norm(absA.T @ absA) + 1e-300)

    def _apply_A(self, R):
        """``A R^T`` for rows R (n, N), by a triangular solve as sklearn does."""
        Rs = R if self.col_scale is None else R * self.col_scale
        return solve_triangular(self.L, Rs.T, lower=True, check_finite=False)

    def _grad_q(self, W):
        """``2 S r`` given ``W = A r^T`` (N, n): rows (n, N)."""
        G = solve_triangular(self.L, W, lower=True, trans="T", check_finite=False).T
        if self.col_scale is not None:
            G = G * self.col_scale
        return 2.0 * G

    @property
    def n_support(self):
        return self.A.shape[0]

    # -- point values ----------------------------------------------------
    def value(self, X):
        """var(x) per row of X (n,), in the same form sklearn computes it."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        R = self.adapter.values(X)
        if self.n_support == 0:
            return self.adapter.diag(X)
        Z = self._apply_A(R)
        return self.adapter.diag(X) - np.einsum("ij,ij->j", Z, Z)

    def value_and_grad(self, X):
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        R, dR = self.adapter.value_and_grad(X)
        if self.n_support == 0:
            q, dq = np.zeros(len(X)), np.zeros_like(X)
        else:
            W = self._apply_A(R)
            q = np.einsum("ij,ij->j", W, W)
            dq = np.einsum("nid,ni->nd", dR, self._grad_q(W))
        kd = self.adapter.diag(X)
        # d/dx k(x, x) is 0 for stationary kernels; DotProduct-like diagonals
        # are handled by a central difference (only the local search uses it).
        if not self.adapter.kernel.is_stationary():
            eps = 1e-6 * np.maximum(1.0, np.abs(X))
            dkd = np.empty_like(X)
            for j in range(X.shape[1]):
                Xp, Xm = X.copy(), X.copy()
                Xp[:, j] += eps[:, j]
                Xm[:, j] -= eps[:, j]
                dkd[:, j] = (self.adapter.diag(Xp) - self.adapter.diag(Xm)) / (2 * eps[:, j])
        else:
            dkd = 0.0
        return kd - q, dkd - dq

    # -- box bounds ------------------------------------------------------
    def margin(self, scale, d):
        """Absolute rounding margin for quantities of size ``scale``."""
        return margin_rtol(self.n_support, d) * self.kappa * scale

    def bounds(self, lo, hi):
        """Lower and upper bounds of var over each box (see module doc)."""
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        B, d = lo.shape
        N = self.n_support
        centre = 0.5 * (lo + hi)
        r0 = self.adapter.values(centre)  # (B, N)
        if N == 0:
            q0, g = np.zeros(B), np.zeros((B, 0))
        else:
            W0 = self._apply_A(r0)  # (N, B)
            q0 = np.einsum("ib,ib->b", W0, W0)
            g = self._grad_q(W0)
        g_r0 = np.einsum("bi,bi->b", g, r0)
        klo, khi = self.adapter.interval(lo, hi)
        dlo, dhi = self.adapter.diag_interval(lo, hi)

        both = affine_lower(self.adapter, np.vstack([g, -g]), 0.0, np.vstack([lo, lo]), np.vstack([hi, hi]))
        gmin, gmax = both.lower[:B], -both.lower[B:]

        # Lower bound of q (tangent plane), never below 0.
        q_lower = np.maximum(q0 - g_r0 + gmin, 0.0)
        # Upper bound of q: linear part plus the quadratic remainder e.
        dr = np.maximum(khi - r0, r0 - klo)
        dr = np.maximum(dr, 0.0)
        dr2 = np.einsum("bi,bi->b", dr, dr)
        e = self.lam_max * dr2
        m = self._n_top(B, d) if self.lam_max * np.max(np.abs(dhi), initial=0.0) > _SPECTRAL_MIN_GAIN else 0
        if m > 0:
            e = np.minimum(e, self._spectral(lo, hi, r0, dr2, m))
        q_upper = q0 - g_r0 + gmax + e

        rmax = np.abs(r0) + np.maximum(np.abs(klo), np.abs(khi))
        scale = (
            np.abs(q0)
            + np.einsum("bi,bi->b", np.abs(g), rmax)
            # the solve's error in g is bounded in 2-norm: |dg . dr| <= ||dg|| ||dr||
            + np.linalg.norm(g, axis=1) * np.linalg.norm(rmax, axis=1)
            + np.abs(dhi)
            + e
        )
        mg = self.margin(scale, d) + self.input_rounding(lo, hi, dhi)
        lower = dlo - q_upper - mg
        upper = dhi - q_lower + mg
        lower = np.where(np.isfinite(lower), lower, -np.inf)
        upper = np.where(np.isfinite(upper), upper, np.inf)
        return VarianceBound(lower, upper, both.argmin[B:], both.argmin[:B], both.score[:B])

    def input_rounding(self, lo, hi, dhi):
        """(B,) bound on |q(r~) - q(r)| when the kernel values r~ carry the
        input-rounding error of :meth:`KernelAdapter.rounding` (|dr| <= E):
        ``2 ||A r|| ||A dr|| + ||A dr||^2`` with ``||A r||^2 = q <= k(x, x)``."""
        if self.n_support == 0:
            return np.zeros(len(lo))
        nE = np.linalg.norm(self.adapter.rounding(lo, hi), axis=1)
        a = np.sqrt(self.lam_max) * nE
        return 2.0 * np.sqrt(np.maximum(dhi, 0.0)) * a + a * a

    def _n_top(self, B, d):
        N = self.n_support
        if N == 0 or self.lam_max == 0:
            return 0
        m = int(min(N, _SPECTRAL_BUDGET // max(1, N * d)))
        rest = (self.lam[m] if m < len(self.lam) else 0.0) + self.s_err
        return m if rest <= _SPECTRAL_MAX_REST * self.lam_max else 0

    def _spectral(self, lo, hi, r0, dr2, m):
        """sum_{j<m} lam_j max(z_j - z0_j)^2 + lam_m ||dr||^2, z_j = v_j . r(x)."""
        B, d = lo.shape
        Vt = self.V[:, :m].T  # (m, N)
        W = np.concatenate([np.repeat(Vt[None], B, 0), np.repeat(-Vt[None], B, 0)], axis=1)  # (B, 2m, N)
        W = W.reshape(B * 2 * m, -1)
        LO = np.repeat(lo, 2 * m, axis=0)
        HI = np.repeat(hi, 2 * m, axis=0)
        bb = affine_lower(self.adapter, W, 0.0, LO, HI).lower.reshape(B, 2, m)
        zmin, zmax = bb[:, 0], -bb[:, 1]
        z0 = r0 @ self.V[:, :m]
        dz = np.maximum(np.maximum(zmax - z0, z0 - zmin), 0.0)
        # ||A dr||^2 <= dr^T fl(S) dr + s_err ||dr||^2, fl(S) = V diag(lam) V^T
        # up to eigh's backward error (inside s_err's rounding term scale).
        rest = (self.lam[m] if m < len(self.lam) else 0.0) + self.s_err
        return (self.lam[:m] * dz * dz).sum(-1) * (1 + 1e-12) + rest * dr2
