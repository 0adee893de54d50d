"""ExpSineSquared (periodic) kernels: the radial Taylor model and its products.

The adapter's Taylor model (``ExpSineSquaredAdapter.taylor``, built by
``kernels/_radial.py``) and the product rule (``ProductAdapter.taylor`` for
radial factors) must give lower bounds of sum_i w_i k(x, x_i) on the whole
box, for signed weights, 1-D and 2-D inputs, small and large boxes, and
inputs with a large offset (dates ~2000). Checked at >= 2000 dense points per
box plus a local minimisation of f - model, against sklearn's own kernel.
"""

import os
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgprobust import RobustGaussianProcessRegressor
from skgprobust._bounds._mean import affine_lower
from skgprobust._fp import margin_rtol
from skgprobust.kernels import make_adapter
from skgprobust.kernels._radial import parts_of, radial_geometry

from ._helpers import HEALTH, taylor_model_value

C = ConstantKernel
VALUE_TOL = 1e-12
SWEEP = int(os.environ.get("SKGPROBUST_SWEEP_EXAMPLES", "50"))


def _kernel(name, ls, p):
    return {
        "ess": ExpSineSquared(ls, p),
        "c*rbf*ess": C(3.0) * RBF(4.0 * p) * ExpSineSquared(ls, p),
        "ess*rq": ExpSineSquared(ls, p) * RationalQuadratic(1.5 * p, 0.7),
        "ess*matern25": ExpSineSquared(ls, p) * Matern(2.0 * p, nu=2.5),
        "co2-seasonal+": C(2.0) * RBF(3.0 * p) * ExpSineSquared(ls, p) + C(0.3) * RBF(0.5 * p) + WhiteKernel(0.1),
    }[name]


NAMES = ["ess", "c*rbf*ess", "ess*rq", "ess*matern25", "co2-seasonal+"]


# --------------------------------------------------------------------------
# Values and derivatives
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("offset", [0.0, 1978.0])
def test_values_match_sklearn(name, d, offset):
    rng = np.random.default_rng(0)
    kernel = _kernel(name, 0.8, 1.3)
    Xs = offset + rng.uniform(-3, 3, (20, d))
    ad = make_adapter(kernel, Xs)
    X = np.vstack([offset + rng.uniform(-4, 4, (60, d)), Xs[:3]])
    np.testing.assert_allclose(ad.values(X), kernel(X, Xs), rtol=0, atol=VALUE_TOL)


def _psi_mp(s, ls, p):
    """psi(s) = exp(-(1 - cos(2 pi sqrt(s) / p)) / l^2), continued to s < 0 as
    the entire function it is (cos(c sqrt(s)) = cosh(c sqrt(-s))), so that
    mpmath's central differences also work at s = 0."""
    return mpmath.exp(-(1 - mpmath.re(mpmath.cos(2 * mpmath.pi * mpmath.sqrt(s) / p))) / ls**2)


@pytest.mark.parametrize("ls, p", [(0.8, 1.3), (5.16, 1.0), (1.0, 0.1), (0.3, 7.0)])
def test_centre_derivatives_match_high_precision(ls, p):
    """psi, psi', psi'' in s at the box centre (incl. s = 0 and the series
    range z < 0.5) agree with mpmath's derivatives."""
    mpmath.mp.dps = 40
    ad = make_adapter(ExpSineSquared(ls, p), np.zeros((1, 1)))
    z = np.array([0.0, 1e-6, 0.01, 0.3, 0.4999, 0.5, 0.7, 2.0, 3.1, 9.0, 40.0, 400.0])
    s = (z / ad.c) ** 2
    geom = radial_geometry(np.sqrt(s)[:, None], np.sqrt(s)[:, None], np.zeros((1, 1)))
    parts = ad.radial_parts(geom)
    for i, si in enumerate(s):
        ref = [mpmath.diff(lambda t: _psi_mp(t, ls, p), mpmath.mpf(si), k) for k in range(3)]
        scale = [1.0, ad.a * ad.c**2, ad.a * ad.c**4 * (1 + ad.a)]
        for k, got in enumerate((parts.c0[i, 0], parts.c1[i, 0], parts.c2[i, 0])):
            assert abs(got - float(ref[k])) <= 1e-11 * scale[k], (k, si, got, float(ref[k]))


@pytest.mark.parametrize("name", ["ess", "c*rbf*ess", "ess*rq"])
@pytest.mark.parametrize("ls, p", [(0.8, 1.3), (5.16, 1.0), (0.4, 0.7)])
def test_derivative_ranges_contain_sampled_derivatives(name, ls, p):
    """The ranges [lo_k, hi_k] of psi^(k), k = 0..3, over [sL, sU] contain
    the high-precision derivatives at points of that s-range."""
    mpmath.mp.dps = 30
    rng = np.random.default_rng(1)
    kernel = _kernel(name, ls, p)
    Xs = np.zeros((1, 1))
    ad = make_adapter(kernel, Xs)

    def psi(t):
        if name == "ess":
            return _psi_mp(t, ls, p)
        if name == "c*rbf*ess":
            return 3.0 * mpmath.exp(-t / (2 * (4.0 * p) ** 2)) * _psi_mp(t, ls, p)
        a = 0.7
        return _psi_mp(t, ls, p) * (1 + t / (2 * a * (1.5 * p) ** 2)) ** -a

    centres = np.concatenate([[0.0, 0.01 * p], rng.uniform(0, 4 * p, 10)])
    halves = rng.choice([1e-3, 0.05, 0.3, 1.0], size=len(centres)) * p
    lo, hi = (centres - halves)[:, None], (centres + halves)[:, None]
    geom = radial_geometry(lo, hi, Xs)
    parts = parts_of(ad, geom)
    for b in range(len(lo)):
        sL, sU = geom.sL[b, 0], geom.sU[b, 0]
        for t in np.concatenate([[sL, sU], rng.uniform(sL, sU, 6)]):
            for k in range(4):
                v = float(mpmath.diff(psi, mpmath.mpf(t), k))
                tol = 1e-9 * (1 + abs(v))
                lo_k, hi_k = parts.lo[k][b, 0], parts.hi[k][b, 0]
                assert lo_k - tol <= v <= hi_k + tol, (k, t, v, lo_k, hi_k)


# --------------------------------------------------------------------------
# Taylor model: lower bounds at dense points plus local optimisation
# --------------------------------------------------------------------------


def _dense(rng, lo, hi, n=2500):
    d = len(lo)
    if d == 1:
        P = np.linspace(lo[0], hi[0], n)[:, None]
    else:
        m = int(np.ceil(np.sqrt(n)))
        g = [np.linspace(lo[j], hi[j], m) for j in range(d)]
        P = np.stack(np.meshgrid(*g), -1).reshape(-1, d)
    return np.vstack([P, lo + (hi - lo) * rng.random((500, d))])


def _check_taylor(kernel, Xs, lo, hi, w, rng):
    """Model <= f (up to the rounding the bounds subtract) at dense points of
    each box and at local minima of f - model; and affine_lower <= f."""
    ad = make_adapter(kernel, Xs)
    rel, tm = ad.linearise(lo, hi, w)
    assert tm is not None
    assert np.all(tm.rem <= 0)
    E = ad.rounding(lo, hi)
    bb = affine_lower(ad, w, 0.0, lo, hi)
    centre = 0.5 * (lo + hi)
    d = lo.shape[1]
    rtol = margin_rtol(len(Xs), d)
    for b in range(len(lo)):
        tol = (np.abs(w[b]) * E[b]).sum() + rtol * tm.mag[b] + 1e-12 * (1 + np.abs(w[b]).sum())
        P = _dense(rng, lo[b], hi[b])
        f = kernel(P, Xs) @ w[b]
        gap = f - taylor_model_value(tm, b, P - centre[b])
        assert gap.min() >= -tol, (b, gap.min(), tol)
        assert f.min() >= bb.lower[b] - 1e-12, (b, f.min(), bb.lower[b])

        def obj(x):
            x = np.clip(x, lo[b], hi[b])
            return float((kernel(x[None], Xs) @ w[b])[0] - taylor_model_value(tm, b, (x - centre[b])[None])[0])

        for j in np.argsort(gap)[:3]:
            res = minimize(obj, P[j], method="L-BFGS-B", bounds=list(zip(lo[b], hi[b])))
            assert res.fun >= -tol, (b, res.fun, tol)
    return tm


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("offset", [0.0, 2000.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_taylor_lower_bounds_dense(name, d, offset, seed):
    rng = np.random.default_rng(seed + 10 * d)
    ls = 10 ** rng.uniform(-0.5, 0.8)
    p = 10 ** rng.uniform(-0.7, 0.7)
    kernel = _kernel(name, ls, p)
    N = 25
    Xs = offset + rng.uniform(-3, 3, (N, d))
    B = 8
    centres = offset + rng.uniform(-3, 3, (B, d))
    centres[:2] = Xs[:2]  # boxes around support points (s = 0 inside)
    half = np.array([1e-4, 1e-2, 0.1, 0.5, 2.0, 1e-2, 0.3, 1.0])[:, None] * np.ones((1, d))
    if d == 2:
        half[5, 1] = 0.0  # one coordinate fixed
    lo, hi = centres - half, centres + half
    w = rng.normal(size=(B, N)) * rng.choice([1.0, 100.0], size=(B, 1))
    w[2] = np.abs(w[2])
    w[3] = -np.abs(w[3])
    _check_taylor(kernel, Xs, lo, hi, w, rng)


def test_non_radial_product_has_no_taylor_model():
    """An anisotropic RBF times ExpSineSquared in 2-D is not a function of
    ||x - x_i||: no Taylor model (the McCormick relaxation remains)."""
    Xs = np.random.default_rng(0).uniform(-1, 1, (5, 2))
    ad = make_adapter(RBF([0.5, 2.0]) * ExpSineSquared(1.0, 1.0), Xs)
    lo, hi = np.zeros((2, 2)), np.ones((2, 2))
    assert ad.taylor(lo, hi, np.ones((2, 5))) is None
    # an isotropic one (equal length scales) is radial
    ad = make_adapter(RBF([0.5, 0.5]) * ExpSineSquared(1.0, 1.0), Xs)
    assert ad.taylor(lo, hi, np.ones((2, 5))) is not None


@pytest.mark.parametrize("name", ["ess", "c*rbf*ess"])
def test_taylor_gap_shrinks_cubically(name):
    """Convergence: the remainder is O(h^3) (h -> h/10: gap / ~1000), also far
    from the support points and with a large offset."""
    rng = np.random.default_rng(3)
    kernel = _kernel(name, 1.0, 1.0)
    Xs = 1958 + rng.uniform(0, 40, (200, 1))
    ad = make_adapter(kernel, Xs)
    c = 1958 + rng.uniform(5, 35, (6, 1))
    w = rng.normal(size=(6, 200)) * 1000
    rems = []
    for h in (1e-2, 1e-3):
        tm = ad.taylor(c - h, c + h, w)
        rems.append(-tm.rem)
    assert np.all(rems[1] <= 2e-3 * rems[0])


# --------------------------------------------------------------------------
# Input rounding with large offsets
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [ExpSineSquared(1.0, 1.0), ExpSineSquared(0.3, 0.37),
                                    C(4.0) * RBF(100.0) * ExpSineSquared(1.0, 1.0)], ids=repr)
@pytest.mark.parametrize("offset", [1978.0, 3.2e6])
@pytest.mark.parametrize("d", [1, 2])
def test_rounding_covers_sklearn_values(kernel, offset, d):
    rng = np.random.default_rng(0)
    Xs = offset + rng.uniform(0, 40, (30, d))
    X = offset + rng.uniform(0, 40, (300, d))
    ad = make_adapter(kernel, Xs)
    E = ad.rounding(X, X)
    D = X.astype(np.longdouble)[:, None, :] - Xs.astype(np.longdouble)[None]
    r = np.sqrt((D**2).sum(-1))
    ess = kernel if isinstance(kernel, ExpSineSquared) else kernel.k2
    ref = np.exp(-2 * np.sin(np.pi * r / ess.periodicity) ** 2 / ess.length_scale**2)
    if ess is not kernel:
        ref = ref * 4.0 * np.exp(-0.5 * r**2 / 100.0**2)
    err = np.abs(kernel(X, Xs) - ref.astype(np.float64))
    assert np.all(err <= E + 1e-13 * np.abs(ref.astype(np.float64)) + 1e-300), float((err - E).max())


# --------------------------------------------------------------------------
# End to end: CO2-structured regressors on a synthetic monthly series
# --------------------------------------------------------------------------


def _co2_series(n, seed=0):
    rng = np.random.default_rng(seed)
    t = 1958.0 + (np.arange(n) + 0.5) / 12.0
    y = 315 + 1.3 * (t - 1958) + 0.012 * (t - 1958) ** 2 + 3 * np.sin(2 * np.pi * t) + rng.normal(0, 0.3, n)
    return t[:, None], y - y.mean()


CO2_KERNELS = {
    # the example 2
    "ex2": 17.8**2 * RBF(513.0) * ExpSineSquared(5.16, 1.0) + WhiteKernel(0.0267),
    # sklearn's CO2 kernel structure, hyperparameters as fitted by bench_periodic
    "co2": (120.0**2 * RBF(76.7) + 12.7**2 * RBF(1e5) * ExpSineSquared(4.56, 1.0)
            + 0.0581**2 * RationalQuadratic(alpha=0.34, length_scale=307.0)
            + 0.179**2 * RBF(0.00555) + WhiteKernel(0.0595)),
}


@pytest.mark.parametrize("name", list(CO2_KERNELS))
def test_co2_mean_ranges_converge_and_contain_predict(name):
    X, y = _co2_series(240)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel=CO2_KERNELS[name], optimizer=None).fit(X, y)
    rows = np.array([[1960.3], [1964.7], [1977.4]])
    gamma = 0.01
    r = reg.prediction_range(rows, gamma, epsilon=0.1, time_limit=20, random_state=0)
    assert r.converged.all()
    rng = np.random.default_rng(0)
    for i, x in enumerate(rows[:, 0]):
        P = np.concatenate([np.linspace(x - gamma, x + gamma, 2001), x + rng.uniform(-gamma, gamma, 500)])[:, None]
        mu = GaussianProcessRegressor.predict(reg, P)
        tol = 1e-9 * np.abs(mu).max()
        assert mu.min() >= r.min_lower[i, 0] - tol
        assert mu.max() <= r.max_upper[i, 0] + tol
        assert r.min_upper[i, 0] >= mu.min() - 0.1 - tol and r.max_lower[i, 0] <= mu.max() + 0.1 + tol
        # the witnesses are sklearn's own values
        np.testing.assert_allclose(GaussianProcessRegressor.predict(reg, r.argmin[i]), r.min_upper[i], rtol=1e-9)


def test_gallery_prior_posterior_kernel_converges():
    """plot_gpr_prior_posterior's ExpSineSquared model (alpha=1e-10): mean
    ranges at gamma = 1% of the input range converge quickly."""
    rng = np.random.RandomState(4)
    X = rng.uniform(0, 5, 10).reshape(-1, 1)
    y = np.sin((X[:, 0] - 2.5) ** 2)
    kernel = 1.0 * ExpSineSquared(length_scale=1.0, periodicity=3.0)
    reg = RobustGaussianProcessRegressor(kernel=kernel, optimizer=None).fit(X, y)
    rows = np.linspace(0.25, 4.75, 6)[:, None]
    r = reg.prediction_range(rows, 0.05, epsilon=1e-3, time_limit=2, random_state=0)
    assert r.converged.all()
    for i, x in enumerate(rows[:, 0]):
        P = np.linspace(x - 0.05, x + 0.05, 2001)[:, None]
        mu = GaussianProcessRegressor.predict(reg, P)
        assert r.min_lower[i, 0] - 1e-9 <= mu.min() and mu.max() <= r.max_upper[i, 0] + 1e-9


# --------------------------------------------------------------------------
# Randomised sweep (slow)
# --------------------------------------------------------------------------


@st.composite
def _cases(draw):
    d = draw(st.integers(1, 2))
    name = draw(st.sampled_from(NAMES))
    ls = draw(st.floats(0.2, 8.0))
    p = draw(st.floats(0.1, 6.0))
    offset = draw(st.sampled_from([0.0, 1000.0, 1978.0, 2500.0]))
    half = draw(st.sampled_from([1e-5, 1e-3, 0.02, 0.2, 1.0, 3.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    return d, name, ls, p, offset, half, seed


@pytest.mark.slow
@settings(deadline=None, max_examples=SWEEP, suppress_health_check=HEALTH, print_blob=True)
@given(_cases())
def test_sweep_taylor_lower_bounds(case):
    d, name, ls, p, offset, half, seed = case
    rng = np.random.default_rng(seed)
    kernel = _kernel(name, ls, p)
    N = int(rng.integers(3, 30))
    Xs = offset + rng.uniform(-4, 4, (N, d))
    B = 4
    centres = offset + rng.uniform(-4, 4, (B, d))
    centres[0] = Xs[0]
    hw = half * rng.uniform(0.2, 1.0, (B, d))
    w = rng.normal(size=(B, N)) * 10 ** rng.uniform(-1, 3, (B, 1))
    _check_taylor(kernel, Xs, centres - hw, centres + hw, w, rng)
