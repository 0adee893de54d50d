"""RationalQuadratic coefficients in the Taylor models: their rounding.

The Taylor models' rounding arguments (module docstring of
``skgprobust.kernels._radial``, ``StationaryAdapter.taylor``) budget ~40 u of
relative error for the computed psi and its derivatives. RationalQuadratic
computes psi as the power -alpha of a base near 1 (its derivatives divide psi
by the base), which errs by ~alpha u; ``coefficient_ulps`` declares the
excess and the models widen their margin by it. Checked here against 50-digit arithmetic (mpmath), not against our own
numbers.
"""

import mpmath as mp
import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    DotProduct,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
)
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust.kernels import make_adapter
from skgprobust.kernels.stationary import StationaryAdapter

U = 2.0**-53


def _exact(k, a, phi):
    b = 1 + mp.mpf(phi) / (2 * a)
    return [b**-a, -(b ** (-a - 1)) / 2, (a + 1) / (4 * a) * b ** (-a - 2),
            -(a + 1) * (a + 2) / (8 * a * a) * b ** (-a - 3)][k]


@pytest.mark.parametrize("alpha", [1e-3, 0.1, 0.5, 0.7, 1.0, 100.0, 1e4, 1e5, 2e16])
def test_declared_ulps_cover_the_coefficient_errors(alpha):
    """|computed - exact| <= (40 + coefficient_ulps) u |exact| for psi and
    its first three derivatives, at small and moderate phi (where the base
    is nearest 1) and at phi where log(base) reaches ~600 (a rounded
    exponent -alpha - k erred there by ~(alpha + k) u log(base): 400 u at
    alpha 0.7, referee); for alpha >= 100 the error exceeds the plain 40 u
    budget (so the declaration is needed). alpha = 2e16: alpha u > 1, the
    declaration's expm1 form (the first-order 2 (alpha + 3) is 1.85x too
    small there)."""
    mp.mp.dps = 80
    ad = make_adapter(RationalQuadratic(1.0, alpha), np.zeros((1, 1)))
    rng = np.random.default_rng(0)
    big = 2.0 * alpha * np.expm1(rng.uniform(0.0, 1.0, 150) * min(600.0, 600.0 / alpha))  # log(base) up to 600
    phi = np.concatenate([rng.uniform(0, 1e-3, 150), rng.uniform(0, 10, 150), big, [0.0, 1e-300, 1e-12]])
    budget = 40.0 + ad.coefficient_ulps()
    worst = 0.0
    a = mp.mpf(alpha)
    for k, f in enumerate((ad.psi, ad.dpsi, ad.d2psi, ad.d3psi)):
        got = f(phi)
        for p, g in zip(phi, got):
            ex = _exact(k, a, float(p))
            if abs(ex) < mp.mpf(1e-290) or not np.isfinite(g):  # underflow: no relative error to check
                continue
            worst = max(worst, float(abs((mp.mpf(float(g)) - ex) / ex)) / U)
    assert worst <= budget
    if alpha >= 100.0:
        assert worst > 40.0


def test_other_stationary_kernels_declare_nothing():
    X = np.zeros((1, 2))
    for k in (RBF(1.0), Matern(1.0, nu=2.5), Matern(1.0, nu=1.5)):
        assert make_adapter(k, X).coefficient_ulps() == 0.0


def _mag(adapter, lo, hi, w, monkeypatch, zero):
    if zero:
        monkeypatch.setattr(StationaryAdapter, "coefficient_ulps", lambda self: 0.0)
        monkeypatch.setattr(type(_rq_of(adapter)), "coefficient_ulps", lambda self: 0.0)
    tm = adapter.taylor(lo, hi, w)
    monkeypatch.undo()
    return tm.mag


def _rq_of(adapter):
    stack = [adapter]
    while stack:
        a = stack.pop()
        if type(a).__name__ == "RationalQuadraticAdapter":
            return a
        stack.extend(getattr(a, n) for n in ("k1", "k2", "other") if getattr(a, n, None) is not None)
    raise AssertionError("no RationalQuadratic factor")


@pytest.mark.parametrize("kernel,d", [
    (C(3.0) * RationalQuadratic(0.7, 1e5), 1),  # StationaryAdapter.taylor (scaled)
    (RationalQuadratic([0.7, 1.3], 2e3), 2),  # anisotropic: StationaryAdapter.taylor
    (RationalQuadratic(0.7, 1e5) * ExpSineSquared(1.0, 2.0), 1),  # radial_taylor of a product
    (RationalQuadratic(0.7, 1e5) * ExpSineSquared(1.0, 2.0) * DotProduct(0.5), 1),  # radial_polynomial_taylor
])
def test_models_widen_their_margin_by_the_declared_ulps(kernel, d, monkeypatch):
    """Every Taylor model built from a RationalQuadratic factor has its
    magnitude (hence its relative margin) raised by 1 + ulps / 256."""
    rng = np.random.default_rng(1)
    Xs = rng.normal(size=(30, d))
    ad = make_adapter(kernel, Xs)
    lo = rng.normal(size=(4, d)) * 0.5
    hi = lo + 0.05
    w = rng.normal(size=(4, 30)) * 10.0
    alpha = _rq_of(ad).a
    wide = _mag(ad, lo, hi, w, monkeypatch, zero=False)
    plain = _mag(ad, lo, hi, w, monkeypatch, zero=True)
    assert np.all(np.isfinite(wide)) and np.all(plain > 0)
    np.testing.assert_allclose(wide / plain, 1.0 + _rq_of(ad).coefficient_ulps() / 256.0, rtol=1e-12)
    assert _rq_of(ad).coefficient_ulps() >= 2.0 * (alpha + 3.0)
