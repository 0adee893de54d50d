"""Variance bounds of non-stationary and general kernels: the RKHS remainder
(``KernelAdapter.rkhs_increment``) and the joint Taylor model of the diagonal
(``KernelAdapter.diag_taylor``), see the module docstring of
``skgprobust._bounds._variance`` ("The RKHS remainder", "Non-constant
diagonals").

Every check compares with scikit-learn's own numbers: the kernel object's
values (``k(x, x) - 2 k(x, c) + k(c, c)``, ``k.diag``) and the regressor's
``predict(return_std=True)`` / the classifier's ``predict_proba`` and latent
variance, at dense points of each box plus L-BFGS-B (``_helpers.attack``).
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.gaussian_process.kernels import (
    RBF,
    DotProduct,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.kernels import make_adapter

from ._helpers import FAST, SLOW, attack, taylor_model_value

KERNELS = {
    "rbf": lambda d: C(2.0) * RBF(np.linspace(0.5, 1.5, d)),
    "matern0.5": lambda d: Matern(0.7, nu=0.5),
    "matern2.5": lambda d: C(0.5) * Matern(np.linspace(0.5, 1.5, d), nu=2.5),
    "rq": lambda d: RationalQuadratic(0.8, 0.3),
    "ess-1d": lambda d: ExpSineSquared(0.9, 1.7),
    "dp": lambda d: DotProduct(0.7),
    "c*dp3": lambda d: C(0.3) * DotProduct(0.2) ** 3,
    "rbf+dp+white": lambda d: C(2.0) * RBF(1.0) + DotProduct(0.5) + WhiteKernel(0.1),
    "rbf*dp": lambda d: C(2.0) * RBF(np.linspace(0.5, 1.5, d)) * DotProduct(0.5),
    "m25*c*dp2": lambda d: Matern(1.0, nu=2.5) * (C(0.5) * DotProduct(1.0) ** 2),
    "rbf**2": lambda d: RBF(1.0) ** 2,
    "(rbf+dp)**2": lambda d: (RBF(1.0) + DotProduct(0.3)) ** 2,
    "ess*rbf-1d": lambda d: C(3.0) * ExpSineSquared(1.0, 2.0) * RBF(4.0),
}


def _dims(name):
    return [1] if name.endswith("-1d") else [1, 2, 3]


def _box_points(rng, lo, hi, n=3000):
    d = len(lo)
    P = [lo + (hi - lo) * rng.random((n, d)), np.array(list(itertools.product(*zip(lo, hi))))]
    return np.vstack(P)


def _cross(kernel, P, c):
    """||k_x - k_c||^2 = k(x, x) - 2 k(x, c) + k(c, c) of the cross-covariance
    part (the RKHS increment is about the sections k(., x) that sklearn's
    k(X, Y) returns, where a WhiteKernel is 0: its noise is taken off the
    diagonal terms), and a magnitude for the tolerance."""
    kd = kernel.diag(P)
    kc = kernel.diag(c[None])[0]
    kxc = kernel(P, c[None])[:, 0]
    white = sum(k.noise_level for k in _whites(kernel))
    return (kd - white) - 2 * kxc + (kc - white), kd + kc


def _whites(kernel):
    if isinstance(kernel, WhiteKernel):
        return [kernel]
    out = []
    for name in ("k1", "k2"):
        if hasattr(kernel, name) and type(kernel).__name__ == "Sum":
            out += _whites(getattr(kernel, name))
    return out


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_rkhs_increment_bounds_sampled(name):
    rng = np.random.default_rng(0)
    for d in _dims(name):
        kernel = KERNELS[name](d)
        Xs = rng.uniform(-2, 2, (5, d))
        ad = make_adapter(kernel, Xs)
        for half in (1e-6, 1e-3, 0.05, 0.5, 2.0):
            c = rng.uniform(-2, 2, (4, d))
            c[0] = 100.0 if d == 1 else c[0]  # large offset
            lo, hi = c - half, c + half
            D = ad.rkhs_increment(lo, hi)
            assert D.shape == (4,) and np.all(D >= 0)
            assert np.all(np.isfinite(D)), (name, D)
            for b in range(4):
                P = _box_points(rng, lo[b], hi[b], 1000)
                inc, scale = _cross(kernel, P, 0.5 * (lo[b] + hi[b]))
                assert np.all(inc <= D[b] + 1e-13 * scale), (name, d, half, inc.max(), D[b])
        # second order (O(h^2)) for the smooth kernels: h -> h / 10 divides by ~100
        if name not in ("matern0.5",):
            D1 = ad.rkhs_increment(c - 1e-2, c + 1e-2)
            D2 = ad.rkhs_increment(c - 1e-3, c + 1e-3)
            assert np.all(D2 <= 0.02 * D1 + 1e-15)


def test_rkhs_increment_refused_where_not_psd():
    Xs = np.zeros((2, 2))
    lo, hi = np.zeros((1, 2)), np.ones((1, 2))
    for k in (ExpSineSquared(1.0, 1.0), C(-1.0) * RBF(1.0), C(-1.0) * RBF(1.0) + DotProduct(1.0)):
        ad = make_adapter(k, Xs)
        assert not ad.psd
        assert np.all(np.isinf(ad.rkhs_increment(lo, hi)))


DIAG = ["dp", "c*dp3", "rbf+dp+white", "rbf*dp", "m25*c*dp2"]


@pytest.mark.parametrize("name", DIAG)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_diag_taylor_lower_models(name, d):
    """sign k(x, x) >= model on the box (dense points, vertices), exact at the
    centre, remainder O(h^3)."""
    rng = np.random.default_rng(d)
    kernel = KERNELS[name](d)
    ad = make_adapter(kernel, rng.uniform(-2, 2, (3, d)))
    c = rng.uniform(-3, 3, (5, d))
    c[0] = 50.0
    for half in (1e-4, 0.05, 0.7, 3.0):
        lo, hi = c - half, c + half
        for sign in (1.0, -1.0):
            tm = ad.diag_taylor(lo, hi, sign)
            assert tm is not None and np.all(tm.rem <= 0)
            for b in range(len(c)):
                P = _box_points(rng, lo[b], hi[b], 2000)
                f = sign * kernel.diag(P)
                g = f - taylor_model_value(tm, b, P - c[b])
                assert g.min() >= -1e-12 * (1 + np.abs(f).max()), (name, sign, half, g.min())
                assert tm.value[b] == pytest.approx(sign * kernel.diag(c[b][None])[0], rel=1e-13, abs=1e-13)
    r = [-ad.diag_taylor(c - h, c + h).rem for h in (1e-2, 1e-3)]
    assert np.all(r[1] <= 2e-3 * r[0] + 1e-300)


def test_stationary_diag_is_constant_and_others_none():
    Xs = np.zeros((2, 2))
    lo, hi = -np.ones((3, 2)), np.ones((3, 2))
    tm = make_adapter(C(2.0) * RBF(1.0) + WhiteKernel(0.5), Xs).diag_taylor(lo, hi, -1.0)
    np.testing.assert_allclose(tm.value, -2.5)
    assert np.all(tm.grad == 0) and np.all(tm.rem == 0)
    # no model of a diagonal that is neither constant nor polynomial
    assert make_adapter((RBF(1.0) + DotProduct(1.0)) ** 2, Xs).diag_taylor(lo, hi) is None


# --------------------------------------------------------------------------
# Fitted models: sklearn's variance inside the bounds; std ranges converge
# --------------------------------------------------------------------------

REGRESSORS = {
    "rbf+dp": lambda d: C(1.0) * RBF(np.ones(d)) + DotProduct(1.0) + WhiteKernel(0.01),
    "rbf*dp": lambda d: C(1.0) * RBF(np.ones(d)) * DotProduct(1.0) + WhiteKernel(0.01),
    "m25*dp2": lambda d: C(1.0) * Matern(np.ones(d), nu=2.5) * DotProduct(1.0) ** 2 + WhiteKernel(0.01),
    "dp+white": lambda d: C(1.0) * DotProduct(1.0) + WhiteKernel(0.01),
    "m05+white": lambda d: C(1.0) * Matern(np.ones(d), nu=0.5) + WhiteKernel(0.01),
}


def _fit(name, d, N=80, seed=0, noise=0.05, offset=0.0, normalize_y=True):
    rng = np.random.default_rng(seed)
    X = offset + rng.uniform(-2, 2, (N, d))
    y = np.sin(X - offset).sum(1) + 0.5 * (X[:, 0] - offset) + noise * rng.normal(size=N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianProcessRegressor(REGRESSORS[name](d), normalize_y=normalize_y,
                                              random_state=0).fit(X, y), X


def _sk_var(reg, P):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reg.predict(np.atleast_2d(P), return_std=True)[1] ** 2


def _check_var_box(reg, lo, hi, rng, n=2000):
    bm = reg._bound_model()
    var = bm.variances("default")[0]
    s2 = float(bm.latents[0].scale[0]) ** 2
    vb = var.bounds(lo[None], hi[None])
    res = attack(lambda P: _sk_var(reg, P), lo, hi, rng, n_samples=n)
    assert vb.lower[0] * s2 <= res.min and res.max <= vb.upper[0] * s2, (vb.lower[0] * s2, res.min,
                                                                          res.max, vb.upper[0] * s2)
    return vb.lower[0] * s2, vb.upper[0] * s2, res


@pytest.mark.parametrize("name", sorted(REGRESSORS))
@pytest.mark.parametrize("d", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_fitted_variance_boxes(name, d):
    reg, X = _fit(name, d, seed=d)
    rng = np.random.default_rng(d)
    widths = []
    for width in (0.3, 1e-2, 1e-4, 0.0):
        for c in (X[0], 0.5 * (X[1] + X[2]), rng.uniform(-2.5, 2.5, d)):
            lo_, hi_, res = _check_var_box(reg, c - width, c + width, rng)
            if width == 1e-4:
                widths.append((hi_ - lo_) / max(res.max, 1e-300))
    # converged-size boxes are tight (relative width of the variance range)
    if name != "m05+white":
        assert np.median(widths) < 0.05, widths


def test_large_offset_and_tiny_noise():
    reg, X = _fit("rbf+dp", 2, seed=3, noise=1e-3, offset=1e3)
    rng = np.random.default_rng(0)
    for width in (0.2, 1e-3, 1e-7):
        _check_var_box(reg, X[3] + 0.01 - width, X[3] + 0.01 + width, rng)


@pytest.mark.parametrize("name", ["rbf+dp", "rbf*dp"])
def test_std_ranges_converge_and_hold(name):
    """Fitted 2-D regressors (normalize_y, small noise): std ranges to 1% of
    the std at gamma = 2% of the feature std (before the joint diagonal
    model: lower end 0 after 5 s on every row)."""
    reg, X = _fit(name, 2, N=100)
    x = X[:3] + 0.05
    gamma = 0.02 * X.std(0)
    s = np.sqrt(_sk_var(reg, x))
    rng = np.random.default_rng(1)
    for i in range(len(x)):
        r = reg.prediction_range(x[i:i + 1], gamma, statistic="std", epsilon=0.01 * s[i], max_iter=400)
        assert r.converged[0, 0]
        res = attack(lambda P: np.sqrt(_sk_var(reg, P)), x[i] - gamma, x[i] + gamma, rng, n_samples=2000)
        assert r.min_lower[0, 0] <= res.min and res.max <= r.max_upper[0, 0]


def test_classifier_rbf_plus_dotproduct():
    """A Laplace GPC with a trend kernel: probability ranges contain
    predict_proba, robust rows keep their label at sampled points."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, (60, 2))
    y = (X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) > 0).astype(int)
    clf = RobustGaussianProcessClassifier(C(4.0) * RBF(1.0) + DotProduct(0.5), optimizer=None).fit(X, y)
    Xt = X[:4] + 0.03
    r = clf.prediction_range(Xt, 0.1, epsilon=0.02, max_iter=300)
    cert = clf.certify(Xt, 0.1, max_iter=300)
    for i, x in enumerate(Xt):
        P = _box_points(rng, x - 0.1, x + 0.1, 3000)
        pp = clf.predict_proba(P)
        assert np.all(r.min_lower[i] <= pp.min(0)) and np.all(pp.max(0) <= r.max_upper[i])
        if cert.status[i] == "robust":
            assert np.all(clf.predict(P) == clf.predict(x[None])[0])
    assert np.mean(r.converged) >= 0.5


# --------------------------------------------------------------------------
# Sweep
# --------------------------------------------------------------------------


@st.composite
def _cases(draw):
    name = draw(st.sampled_from(sorted(REGRESSORS)))
    d = draw(st.integers(1, 3))
    N = draw(st.integers(5, 60))
    noise = draw(st.sampled_from([1e-3, 1e-2, 0.1]))
    offset = draw(st.sampled_from([0.0, 0.0, 50.0]))
    normalize_y = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    width = draw(st.sampled_from([0.0, 1e-7, 1e-4, 1e-2, 0.2, 1.0]))
    where = draw(st.sampled_from(["train", "between", "random"]))
    return name, d, N, noise, offset, normalize_y, seed, width, where


def _sweep_case(case, n):
    name, d, N, noise, offset, normalize_y, seed, width, where = case
    reg, X = _fit(name, d, N=N, seed=seed, noise=noise, offset=offset, normalize_y=normalize_y)
    rng = np.random.default_rng(seed)
    c = {"train": X[0], "between": 0.5 * (X[0] + X[-1]), "random": offset + rng.uniform(-2.5, 2.5, d)}[where]
    hw = width * rng.uniform(0.1, 1.0, d)
    _check_var_box(reg, c - hw, c + hw, rng, n=n)


@FAST
@given(_cases())
def test_sweep_fast(case):
    _sweep_case(case, 500)


@pytest.mark.slow
@SLOW
@given(_cases())
def test_sweep(case):
    _sweep_case(case, 2000)


@pytest.mark.parametrize("alpha", [1e-3, 0.05, 1.0, 1e3, 1e5, 1.4e5])
@pytest.mark.parametrize("power", [1, 2])
def test_rational_quadratic_increment_in_50_digits(alpha, power):
    """Soundness hunt: RationalQuadratic's computed psi errs by ~alpha u near
    phi = 0, and the increment built on it was 107x too small at alpha =
    1e5 (half-width 9e-6); now from -expm1(-alpha log1p(t)). Checked against
    the exact 2 (1 - psi(phi)^e) at the box's corners, in 50 digits."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    k = RationalQuadratic(2.0, alpha) ** power if power > 1 else RationalQuadratic(2.0, alpha)
    ad = make_adapter(k, np.zeros((2, 1)))
    rng = np.random.default_rng(0)
    for h in 10.0 ** rng.uniform(-9, 0.5, 60):
        c = rng.uniform(-3, 3)
        lo, hi = np.array([[c - h]]), np.array([[c + h]])
        D = ad.rkhs_increment(lo, hi)[0]
        cc = 0.5 * (lo + hi)[0, 0]
        for x in (lo[0, 0], hi[0, 0]):
            phi = ((mp.mpf(x) - mp.mpf(cc)) / 2) ** 2
            exact = 2 * (1 - ((1 + phi / (2 * mp.mpf(alpha))) ** (-mp.mpf(alpha))) ** power)
            assert exact <= D, (h, float(exact), D)
