"""A third-party StationaryAdapter is not PSD unless it says so."""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, Matern, RationalQuadratic

from skgprobust.kernels import StationaryAdapter, make_adapter, register_adapter


class _TruncatedQuadratic(RBF):
    """k = (1 - phi)_+^2, phi the squared scaled distance: psi is convex and
    decreasing (what StationaryAdapter asks of a subclass) but the kernel
    is not PSD (its Fourier transform, a Bessel function, changes sign)."""

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        ls = np.abs(np.asarray(self.length_scale, dtype=np.float64))
        phi = (((X[:, None, :] - Y[None, :, :]) / ls) ** 2).sum(-1)
        return np.maximum(1.0 - phi, 0.0) ** 2


class _TruncatedQuadraticAdapter(StationaryAdapter):
    def psi(self, phi):
        return np.maximum(1.0 - phi, 0.0) ** 2

    def dpsi(self, phi):
        return -2.0 * np.maximum(1.0 - phi, 0.0)

    def taylor(self, lo, hi, w, ranges=None):
        return None


def test_third_party_stationary_adapter_is_not_psd_by_default():
    """StationaryAdapter set ``psd = True`` for every subclass, so a
    registered convex-decreasing psi that is not a covariance got the
    variance bounds' lemma (0 <= r^T S r <= k(x, x)) without proof. Now
    only RBF, Matern and RationalQuadratic (and their powers) say PSD."""
    from skgprobust.kernels import _REGISTRY

    before = dict(_REGISTRY)
    try:
        register_adapter(_TruncatedQuadratic, _TruncatedQuadraticAdapter)
        Xs = np.zeros((3, 2))
        ad = make_adapter(_TruncatedQuadratic(1.0), Xs)
        assert isinstance(ad, StationaryAdapter)
        assert ad.psd is False
        for k in (RBF(1.0), Matern(1.0, nu=1.5), RationalQuadratic(1.0, 2.0), RBF(1.0) ** 2):
            assert make_adapter(k, Xs).psd is True
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(before)
