"""Adapters for ConstantKernel, WhiteKernel, DotProduct and ExpSineSquared."""

import numpy as np
from scipy.spatial.distance import cdist

from .._fp import UNIT_ROUNDOFF as _U
from ._base import KernelAdapter, Relaxation, TaylorModel, input_rounding, interval_lower


class ConstantAdapter(KernelAdapter):
    """k(x, y) = c."""

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.c = float(kernel.constant_value)
        self.nonnegative = self.c >= 0

    def values(self, X):
        return np.full((len(X), len(self.Xs)), self.c)

    def value_and_grad(self, X):
        n, N, d = len(X), len(self.Xs), self.Xs.shape[1]
        return self.values(X), np.zeros((n, N, d))

    def interval(self, lo, hi):
        k = np.full((len(lo), len(self.Xs)), self.c)
        return k, k

    def relax(self, lo, hi, w):
        B, d = lo.shape
        s = self.c * w.sum(-1)
        zeros = np.zeros((B, d))
        return Relaxation(s, zeros, zeros.copy(), s, abs(self.c) * np.abs(w).sum(-1), zeros.copy())

    def taylor(self, lo, hi, w):
        B, d = lo.shape
        s = self.c * w.sum(-1)
        return TaylorModel(s, np.zeros((B, d)), np.zeros((B, d)), np.zeros((B, d, d)), np.zeros(B),
                           abs(self.c) * np.abs(w).sum(-1))


class WhiteAdapter(ConstantAdapter):
    """WhiteKernel: zero cross-covariance; k(x, x) = noise_level (see ``diag``)."""

    def __init__(self, kernel, Xs):
        KernelAdapter.__init__(self, kernel, Xs)
        self.c = 0.0


class DotProductAdapter(KernelAdapter):
    """k(x, y) = sigma_0^2 + x . y: linear in x, so the relaxation is exact."""

    nonnegative = False

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.s2 = float(kernel.sigma_0) ** 2

    def values(self, X):
        return np.inner(np.asarray(X, dtype=np.float64), self.Xs) + self.s2

    def value_and_grad(self, X):
        K = self.values(X)
        return K, np.broadcast_to(self.Xs, (len(X),) + self.Xs.shape).copy()

    def interval(self, lo, hi):
        p1 = lo[:, None, :] * self.Xs[None]
        p2 = hi[:, None, :] * self.Xs[None]
        return (np.minimum(p1, p2).sum(-1) + self.s2, np.maximum(p1, p2).sum(-1) + self.s2)

    def diag_interval(self, lo, hi):
        sq_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo * lo, hi * hi))
        sq_hi = np.maximum(lo * lo, hi * hi)
        return self.s2 + sq_lo.sum(-1), self.s2 + sq_hi.sum(-1)

    def rounding(self, lo, hi):
        # The inner product errs by <= d u sum_j |x_j| |x_ij| (any order), which
        # cancellation can make large next to |k| itself.
        amax = np.maximum(np.abs(lo), np.abs(hi))
        d = self.Xs.shape[1]
        return (d + 2) * _U * (amax @ np.abs(self.Xs).T + self.s2)

    def relax(self, lo, hi, w):
        center = 0.5 * (lo + hi)
        v = w @ self.Xs  # (B, d)
        const = self.s2 * w.sum(-1) + (center * v).sum(-1)
        klo, khi = self.interval(lo, hi)
        mag = (np.abs(w) * np.maximum(np.abs(klo), np.abs(khi))).sum(-1) + np.abs(center * v).sum(-1)
        B, d = lo.shape
        return Relaxation(const, np.zeros((B, d)), v, interval_lower(w, klo, khi), mag, np.zeros((B, d)))

    def taylor(self, lo, hi, w):
        # Linear in x: the model is exact (no remainder).
        rel = self.relax(lo, hi, w)
        B, d = lo.shape
        return TaylorModel(rel.const, rel.beta, np.zeros((B, d)), np.zeros((B, d, d)), np.zeros(B), rel.mag)


class ExpSineSquaredAdapter(KernelAdapter):
    """k = exp(-2 sin^2(pi d / p) / l^2), d the Euclidean distance: interval bounds
    from the range of d over the box (not separable, so no relaxation)."""

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.ls = float(kernel.length_scale)
        self.p = float(kernel.periodicity)

    def values(self, X):
        d = cdist(np.asarray(X, dtype=np.float64), self.Xs, "euclidean")
        return np.exp(-2 * (np.sin(np.pi * d / self.p) / self.ls) ** 2)

    def value_and_grad(self, X):
        X = np.asarray(X, dtype=np.float64)
        d = cdist(X, self.Xs, "euclidean")
        arg = np.pi * d / self.p
        K = np.exp(-2 * (np.sin(arg) / self.ls) ** 2)
        dk_dd = K * (-2.0 / self.ls**2) * np.sin(2 * arg) * (np.pi / self.p)
        unit = (X[:, None, :] - self.Xs[None]) / np.where(d > 0, d, 1.0)[:, :, None]
        return K, (dk_dd * (d > 0))[:, :, None] * unit

    def rounding(self, lo, hi):
        # |dk/dd| <= 2 pi / (p l^2); d errs by <= 3u (||x|| + ||x_i||) and
        # fl(pi d / p) by 2u of itself, i.e. as if d erred by 2u d more.
        amax = np.maximum(np.abs(lo), np.abs(hi))
        return 6.0 * (2.0 * np.pi / (self.p * self.ls**2)) * input_rounding(amax, self.Xs, 1.0)

    def interval(self, lo, hi):
        center, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        aE = np.abs(self.Xs[None] - center[:, None, :])
        dmin = np.sqrt((np.maximum(aE - h[:, None, :], 0.0) ** 2).sum(-1))
        dmax = np.sqrt(((aE + h[:, None, :]) ** 2).sum(-1))
        # Arguments widened outward so that rounding never hides a turning point.
        a1 = np.pi * dmin / self.p * (1 - 1e-12) - 1e-300
        a2 = np.pi * dmax / self.p * (1 + 1e-12) + 1e-300
        s1, s2 = np.sin(a1) ** 2, np.sin(a2) ** 2
        has_zero = np.floor(a2 / np.pi) >= np.ceil(a1 / np.pi)
        has_one = np.floor((a2 - np.pi / 2) / np.pi) >= np.ceil((a1 - np.pi / 2) / np.pi)
        smin = np.where(has_zero, 0.0, np.minimum(s1, s2))
        smax = np.where(has_one, 1.0, np.maximum(s1, s2))
        return np.exp(-2 * smax / self.ls**2), np.exp(-2 * smin / self.ls**2)
