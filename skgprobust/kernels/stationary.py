"""Adapters for kernels of the form k(x, y) = psi(phi(x, y)).

phi is the squared, length-scaled Euclidean distance, separable over the
coordinates, and every psi here is *convex and decreasing* on [0, inf)
(RBF, Matern nu in {0.5, 1.5, 2.5, inf}, RationalQuadratic; the derivative
of each psi below is increasing in phi, see ``tests/test_kernels.py``). For a
convex psi the tangent at any phi_0 is a lower bounding line on all of
[0, inf) and the chord over [phi_L, phi_U] is an upper bounding line there
(paper Lemma 1, Cases 1-2; note the intercept of the tangent is
psi(phi_0) - b * phi_0, the paper's App. A.1 has a typo there).
"""

import numpy as np
from scipy.spatial.distance import cdist

from ._base import KernelAdapter, Relaxation, interval_lower

# psi(phi) below this range is treated as a point: constant bounding lines.
_TINY = 1e-200


class StationaryAdapter(KernelAdapter):
    """Shared bounding code; subclasses give ``psi``/``dpsi`` and length scales."""

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        d = self.Xs.shape[1]
        self.length_scale = self._length_scales(d)
        self.inv_ls2 = 1.0 / self.length_scale**2
        self.Zs = self.Xs / self.length_scale

    def _length_scales(self, d):
        ls = np.asarray(self.kernel.length_scale, dtype=np.float64)
        return np.broadcast_to(ls, (d,)).astype(np.float64) if ls.ndim == 0 else ls

    # psi and its derivative as functions of phi (squared scaled distance)
    def psi(self, phi):
        raise NotImplementedError

    def dpsi(self, phi):
        raise NotImplementedError

    def _phi(self, X):
        return cdist(np.asarray(X, dtype=np.float64) / self.length_scale, self.Zs, "sqeuclidean")

    def values(self, X):
        return self.psi(self._phi(X))

    def value_and_grad(self, X):
        X = np.asarray(X, dtype=np.float64)
        phi = self._phi(X)
        slope = np.where(phi > _TINY, self.dpsi(np.maximum(phi, _TINY)), 0.0)
        diff = X[:, None, :] - self.Xs[None, :, :]
        return self.psi(phi), (2.0 * slope)[:, :, None] * diff * self.inv_ls2

    def _ranges(self, lo, hi):
        """Scaled signed offsets Es (B, d, N) of the support points from each box
        centre, the scaled half-widths hs (B, d), and phi over each box: its
        minimum, maximum and value at the centre, each (B, N).

        Layout (B, d, N) keeps the reductions over d vectorised along N.
        """
        sw = 1.0 / self.length_scale
        Es = self.Zs.T[None, :, :] - (0.5 * (lo + hi) * sw)[:, :, None]
        aE = np.abs(Es)
        hs = 0.5 * (hi - lo) * sw
        near = np.maximum(aE - hs[:, :, None], 0.0)
        pL = np.einsum("bdn,bdn->bn", near, near)
        pc = np.einsum("bdn,bdn->bn", aE, aE)
        # max phi = sum (|e| + h)^2 = pc + 2 h.|e| + |h|^2
        pU = pc + 2.0 * np.matmul(hs[:, None, :], aE)[:, 0, :] + (hs * hs).sum(-1)[:, None]
        return Es, aE, hs, pL, pU, pc

    def interval(self, lo, hi):
        _, _, _, pL, pU, _ = self._ranges(lo, hi)
        return self.psi(pU), self.psi(pL)

    def relax(self, lo, hi, w):
        Es, aE, hs, pL, pU, pc = self._ranges(lo, hi)
        klo, khi = self.psi(pU), self.psi(pL)
        width = pU - pL
        point = (width <= 0.0) | (pU <= _TINY)
        # Lower line (tangent at the midpoint), for w > 0.
        pm = np.maximum(0.5 * (pL + pU), _TINY)
        bt = np.where(point, 0.0, self.dpsi(pm))
        at = np.where(point, klo, self.psi(pm) - bt * pm)
        # Upper line (chord), for w < 0.
        bc = np.where(point, 0.0, (klo - khi) / np.where(point, 1.0, width))
        ac = np.where(point, khi, khi - bc * pL)
        pos = w > 0
        a = np.where(pos, at, ac)
        b = np.where(pos, bt, bc)
        cc = w * b
        sw = 1.0 / self.length_scale
        const = (w * a).sum(-1) + (cc * pc).sum(-1)
        alpha = cc.sum(-1)[:, None] * self.inv_ls2
        # sum_i cc_i phi_i(x) in u = x - centre: phi_i = sum_j sw_j^2 (u_j - e_ij)^2
        beta = -2.0 * sw * np.matmul(Es, cc[:, :, None])[:, :, 0]
        ilb = interval_lower(w, klo, khi)
        mag = (np.abs(w) * (np.abs(a) + np.abs(b) * pU + khi)).sum(-1)
        # Each coordinate's share of the phi-ranges, ~ 4 h_j |e_ij|, weighted by
        # the point's influence |w_i psi'_i|: where bisection tightens most.
        score = hs * (4.0 * np.matmul(aE, np.abs(cc)[:, :, None])[:, :, 0] + hs * np.abs(cc).sum(-1)[:, None])
        return Relaxation(const, alpha, beta, ilb, mag, score)


class RBFAdapter(StationaryAdapter):
    """RBF: psi(phi) = exp(-phi / 2)."""

    def values(self, X):
        return np.exp(-0.5 * self._phi(X))

    def psi(self, phi):
        return np.exp(-0.5 * phi)

    def dpsi(self, phi):
        return -0.5 * np.exp(-0.5 * phi)


class MaternAdapter(StationaryAdapter):
    """Matern for nu in {0.5, 1.5, 2.5, inf}; r = sqrt(phi).

    dpsi/dphi: nu=0.5: -exp(-r) / (2 r); nu=1.5: -1.5 exp(-sqrt3 r);
    nu=2.5: -(5/6) (1 + sqrt5 r) exp(-sqrt5 r); all increasing in r.
    """

    SUPPORTED_NU = (0.5, 1.5, 2.5, np.inf)

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.nu = float(kernel.nu)

    def values(self, X):
        # Same operations as sklearn (euclidean cdist, formula in r).
        if self.nu == np.inf:
            return np.exp(-0.5 * self._phi(X))
        r = cdist(np.asarray(X, dtype=np.float64) / self.length_scale, self.Zs, "euclidean")
        return self._psi_r(r)

    def _psi_r(self, r):
        if self.nu == 0.5:
            return np.exp(-r)
        if self.nu == 1.5:
            s = r * np.sqrt(3.0)
            return (1.0 + s) * np.exp(-s)
        if self.nu == 2.5:
            s = r * np.sqrt(5.0)
            return (1.0 + s + s**2 / 3.0) * np.exp(-s)
        return np.exp(-0.5 * r**2)

    def psi(self, phi):
        if self.nu == np.inf:
            return np.exp(-0.5 * phi)
        return self._psi_r(np.sqrt(phi))

    def dpsi(self, phi):
        if self.nu == np.inf:
            return -0.5 * np.exp(-0.5 * phi)
        r = np.sqrt(phi)
        if self.nu == 0.5:
            return -np.exp(-r) / (2.0 * r)
        if self.nu == 1.5:
            return -1.5 * np.exp(-np.sqrt(3.0) * r)
        s = np.sqrt(5.0) * r
        return -(5.0 / 6.0) * (1.0 + s) * np.exp(-s)


class RationalQuadraticAdapter(StationaryAdapter):
    """RationalQuadratic: psi(phi) = (1 + phi / (2 alpha)) ** -alpha, phi = d^2 / l^2."""

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.a = float(kernel.alpha)

    def values(self, X):
        d2 = cdist(np.asarray(X, dtype=np.float64), self.Xs, "sqeuclidean")
        return (1 + d2 / (2 * self.a * float(self.kernel.length_scale) ** 2)) ** -self.a

    def psi(self, phi):
        return (1.0 + phi / (2.0 * self.a)) ** -self.a

    def dpsi(self, phi):
        return -0.5 * (1.0 + phi / (2.0 * self.a)) ** (-self.a - 1.0)


class PoweredStationaryAdapter(StationaryAdapter):
    """Exponentiation psi(phi) ** e of a stationary kernel, e >= 1.

    Still convex and decreasing in phi: (psi^e)'' = e psi^(e-2)
    ((e-1) psi'^2 + psi psi'') >= 0, so the same relaxation applies.
    """

    def __init__(self, kernel, base):
        KernelAdapter.__init__(self, kernel, base.Xs)
        self.base, self.e = base, float(kernel.exponent)
        self.length_scale, self.inv_ls2, self.Zs = base.length_scale, base.inv_ls2, base.Zs

    def values(self, X):
        return self.base.values(X) ** self.e

    def psi(self, phi):
        return self.base.psi(phi) ** self.e

    def dpsi(self, phi):
        return self.e * self.base.psi(phi) ** (self.e - 1.0) * self.base.dpsi(phi)
