"""Integer powers of DotProduct (issue 12, example 3): the exact polynomial
model of ``sum_i w_i (sigma_0^2 + x . x_i)^p`` (skgprobust/kernels/polynomial.py).

Adapter level: values and gradients against sklearn (and complex-step /
central differences); intervals, diagonal and rounding bounds against sampled
values; relaxation, Taylor and combined lower bounds of weighted sums with
random signed weights against dense sampling plus local optimisation (the
attack of tests/_helpers.py), for p in {1, 2, 3}, sigma_0 in {0, 0.01, 1},
d in {1, 2, 5}, small and large boxes, offsets up to 1e4. End to end: the
example-3 regressor (C * DotProduct ** 2 + WhiteKernel, normalize_y=True) and
sklearn's XOR classifier (1.0 * DotProduct(1.0) ** 2): converged ranges
contain the model's own predictions, certify results survive PGD.
"""

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Exponentiation,
    ExpSineSquared,
    WhiteKernel,
)

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust._bounds._mean import affine_lower, minimise_separable, taylor_lower
from skgprobust._fp import margin_rtol
from skgprobust.inspection import attack_succeeded, pgd
from skgprobust.kernels import make_adapter
from skgprobust.kernels.composite import ExponentiationAdapter, ProductAdapter
from skgprobust.kernels.polynomial import DotProductPowerAdapter

from ._helpers import HEALTH, attack, box_points, gpc_latent, gpr_predict

PS = [1, 2, 3]

#: Examples of the slow sweep (``-m slow``); CI may lower it.
SWEEP = settings(deadline=None, max_examples=int(os.environ.get("SKGPROBUST_SWEEP_EXAMPLES", "50")),
                 suppress_health_check=HEALTH, print_blob=True)
SIGMAS = [0.0, 0.01, 1.0]
DIMS = [1, 2, 5]


def _kernel(p, s0):
    return Exponentiation(DotProduct(sigma_0=s0), p)


def _sum_fn(kernel, Xs, w):
    """sum_i w_i k(x, x_i) as sklearn's predict computes it (K @ w)."""
    return lambda P: kernel(np.asarray(P, float), Xs) @ w


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------


def test_registration():
    Xs = np.random.default_rng(0).normal(size=(5, 2))
    assert isinstance(make_adapter(DotProduct(1.0) ** 2, Xs), DotProductPowerAdapter)
    assert isinstance(make_adapter(Exponentiation(DotProduct(0.3), 3), Xs), DotProductPowerAdapter)
    assert isinstance(make_adapter(Exponentiation(DotProduct(0.3), 1.0), Xs), DotProductPowerAdapter)
    prod = make_adapter(ConstantKernel(3.0) * DotProduct(0.1) ** 2, Xs)
    assert isinstance(prod, ProductAdapter) and isinstance(prod.other, DotProductPowerAdapter)
    # Not a positive integer power of a DotProduct: the general adapter.
    assert isinstance(make_adapter(Exponentiation(ConstantKernel(1.0) * DotProduct(0.1), 2), Xs), ExponentiationAdapter)
    lo, hi = Xs[:2] - 0.1, Xs[:2] + 0.1
    W = np.ones((2, 5))
    # Taylor models flow through products with constants and sums.
    for k in (ConstantKernel(3.0) * DotProduct(0.1) ** 2 + WhiteKernel(0.1),
              DotProduct(0.1) ** 2 + ConstantKernel(2.0) * RBF(0.7)):
        assert make_adapter(k, Xs).taylor(lo, hi, W) is not None


# --------------------------------------------------------------------------
# Values, gradients, intervals, diagonal, rounding
# --------------------------------------------------------------------------


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("s0", SIGMAS)
@pytest.mark.parametrize("d", DIMS)
def test_values_and_gradients(p, s0, d):
    rng = np.random.default_rng(p * 100 + d)
    Xs, X = rng.normal(size=(20, d)) * 2, rng.normal(size=(15, d)) * 2
    k = _kernel(p, s0)
    ad = make_adapter(k, Xs)
    K = k(X, Xs)
    scale = np.abs(K).max()
    np.testing.assert_allclose(ad.values(X), K, rtol=1e-10, atol=1e-10 * scale)
    K2, G = ad.value_and_grad(X)
    np.testing.assert_allclose(K2, K, rtol=1e-10, atol=1e-10 * scale)
    # Complex step: exact to rounding for a polynomial.
    hstep = 1e-20
    Gc = np.empty_like(G)
    for j in range(d):
        Z = X.astype(complex)
        Z[:, j] += 1j * hstep
        Gc[:, :, j] = ((np.inner(Z, Xs) + s0**2) ** p).imag / hstep
    gscale = np.abs(Gc).max()
    np.testing.assert_allclose(G, Gc, rtol=1e-10, atol=1e-10 * gscale)
    # Central differences (step-size limited accuracy).
    step = 1e-5
    for j in range(d):
        E = np.zeros(d)
        E[j] = step
        fd = (k(X + E, Xs) - k(X - E, Xs)) / (2 * step)
        np.testing.assert_allclose(G[:, :, j], fd, rtol=1e-6, atol=1e-6 * gscale)
    np.testing.assert_allclose(ad.diag(X), k.diag(X), rtol=1e-12)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("s0", SIGMAS)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("half", [0.01, 1.0])
def test_intervals_contain_sampled_values(p, s0, d, half):
    rng = np.random.default_rng(7 + p + d)
    Xs = rng.normal(size=(12, d)) * 2
    k = _kernel(p, s0)
    ad = make_adapter(k, Xs)
    C = rng.normal(size=(4, d))
    lo, hi = C - half, C + half
    klo, khi = ad.interval(lo, hi)
    dlo, dhi = ad.diag_interval(lo, hi)
    for b in range(4):
        P = box_points(lo[b], hi[b], rng, 2000)
        K = k(P, Xs)
        tol = 1e-12 * np.abs(K).max(0) + 1e-300
        assert np.all(K >= klo[b] - tol) and np.all(K <= khi[b] + tol)
        D = k.diag(P)
        assert np.all(D >= dlo[b] * (1 - 1e-12)) and np.all(D <= dhi[b] * (1 + 1e-12))
        # the diagonal interval is tight: attained at the vertices
        assert D.max() >= dhi[b] * (1 - 1e-12)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("s0", [0.0, 1.0])
@pytest.mark.parametrize("offset", [0.0, 1e4, 3.2e9])
def test_rounding_covers_sklearn_values(p, s0, offset):
    rng = np.random.default_rng(3)
    d = 3
    Xs = offset + rng.uniform(-3, 3, (25, d))
    X = np.vstack([offset + rng.uniform(-3, 3, (200, d)), rng.uniform(-3, 3, (50, d)) * offset])
    X = np.where(rng.random(X.shape) < 0.2, -X, X)  # signs mixed: cancellation in x . x_i
    k = _kernel(p, s0)
    ad = make_adapter(k, Xs)
    E = ad.rounding(X, X)
    assert E.shape == (250, 25) and np.all(E >= 0)
    ref = (X.astype(np.longdouble) @ Xs.astype(np.longdouble).T + np.longdouble(s0) ** 2) ** p
    err = np.abs(k(X, Xs).astype(np.longdouble) - ref).astype(np.float64)
    ref = ref.astype(np.float64)
    assert np.all(err <= E + 1e-13 * np.abs(ref) + 1e-300), float((err - E - 1e-13 * np.abs(ref)).max())


# --------------------------------------------------------------------------
# Lower bounds of weighted sums
# --------------------------------------------------------------------------


def _lower_bounds(kernel, Xs, W, lo, hi):
    """(combined, relaxation-only, Taylor-only) lower bounds, each with the
    margins affine_lower applies."""
    ad = make_adapter(kernel, Xs)
    B, d = lo.shape
    rtol = margin_rtol(W.shape[1], d)
    absolute = np.einsum("bi,bi->b", np.abs(W), ad.rounding(lo, hi))
    rel, tm = ad.linearise(lo, hi, W)
    rel2, tm2 = ad.relax(lo, hi, W), ad.taylor(lo, hi, W)
    h = 0.5 * (hi - lo)
    q, _ = minimise_separable(rel2.alpha, rel2.beta, h)
    lb_rel = np.maximum(rel2.const + q, rel2.ilb) - rtol * rel2.mag - absolute
    np.testing.assert_array_equal(rel.const, rel2.const)
    if tm2 is None:  # a summand without a Taylor model
        assert tm is None
        lb_tay = np.full(B, -np.inf)
    else:
        lb_tay = taylor_lower(tm2, h)[0] - rtol * tm2.mag - absolute
        np.testing.assert_array_equal(tm.M, tm2.M)
    return affine_lower(ad, W, 0.0, lo, hi).lower, lb_rel, lb_tay


def _check_weighted_sum(kernel, d, half, offset, seed, n_samples=2000, tight=None):
    rng = np.random.default_rng(seed)
    N, B = 25, 3
    Xs = offset + rng.normal(size=(N, d)) * 1.5
    C = offset + rng.normal(size=(B, d)) * 1.5
    lo, hi = C - half, C + half
    # Signed weights with large magnitudes and strong cancellation.
    W = rng.normal(size=(B, N)) * 10.0 ** rng.uniform(-2, 4, size=(B, 1))
    W[:, 0] -= W.sum(1)  # sum w = 0: the constant parts cancel
    lbs = _lower_bounds(kernel, Xs, W, lo, hi)
    for b in range(B):
        res = attack(_sum_fn(kernel, Xs, W[b]), lo[b], hi[b], rng, n_samples=n_samples)
        for name, lb in zip(("combined", "relax", "taylor"), lbs):
            assert lb[b] <= res.min, (name, b, float(lb[b]), res.min)
        assert lbs[0][b] >= max(lbs[1][b], lbs[2][b]) - 1e-9 * abs(lbs[0][b])
        if tight is not None:
            span = res.max - res.min
            assert res.min - lbs[0][b] <= tight * max(span, 1e-12), (b, res.min - lbs[0][b], span)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("s0", SIGMAS)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("half", [0.02, 1.0])
@pytest.mark.parametrize("offset", [0.0, 30.0, 1e4])
def test_weighted_sum_lower_bounds(p, s0, d, half, offset):
    seed = 1000 * p + 100 * d + int(10 * s0) + int(half > 0.5) * 7 + int(offset) % 97
    _check_weighted_sum(_kernel(p, s0), d, half, offset, seed)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("d", DIMS)
def test_weighted_sum_bound_tight_on_small_boxes(p, d):
    """p <= 2: the model is exact, the only gap is the separable bound of the
    quadratic part, O(h^2): a few percent of the range on small boxes."""
    _check_weighted_sum(_kernel(p, 0.5), d, 0.02, 0.0, 17 * p + d, tight=0.05 if p == 2 else 1e-6)


def test_weighted_sum_p3_converges():
    """p = 3: the remainder is O(h^3): the gap relative to the range shrinks with the box."""
    rng = np.random.default_rng(5)
    d, N = 2, 25
    k = _kernel(3, 0.3)
    Xs = rng.normal(size=(N, d))
    w = rng.normal(size=N) * 100
    c = rng.normal(size=d)
    gaps = []
    for half in (0.1, 0.01, 0.001):
        lo, hi = (c - half)[None], (c + half)[None]
        lb = _lower_bounds(k, Xs, w[None], lo, hi)[0][0]
        res = attack(_sum_fn(k, Xs, w), lo[0], hi[0], rng, n_samples=2000)
        assert lb <= res.min
        gaps.append((res.min - lb) / (res.max - res.min))
    assert gaps[2] < 0.05 and gaps[2] < gaps[0]


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(3.0) * DotProduct(0.2) ** 2 + WhiteKernel(0.1),
        DotProduct(0.2) ** 2 + ConstantKernel(2.0) * RBF(0.7),
        Exponentiation(DotProduct(0.0), 3) + ExpSineSquared(1.0, 2.0),  # no Taylor model: relaxations add
        DotProduct(0.5) ** 2 * RBF(1.5),  # McCormick envelope on top of the polynomial's relaxation
    ],
    ids=["c*dp2+white", "dp2+c*rbf", "dp3+expsine", "dp2*rbf"],
)
@pytest.mark.parametrize("half", [0.05, 0.5])
def test_composite_weighted_sum_lower_bounds(kernel, half):
    _check_weighted_sum(kernel, 2, half, 0.0, 11 + int(10 * half))


@pytest.mark.slow
@SWEEP
@given(
    p=st.integers(1, 4),
    s0=st.sampled_from([0.0, 0.01, 0.3, 1.0, 5.0]),
    d=st.integers(1, 6),
    half=st.floats(1e-4, 3.0),
    offset=st.sampled_from([0.0, 1.0, 100.0, 1e4]),
    seed=st.integers(0, 2**31 - 1),
)
def test_weighted_sum_lower_bounds_sweep(p, s0, d, half, offset, seed):
    _check_weighted_sum(_kernel(p, s0), d, half, offset, seed, n_samples=2000)


# --------------------------------------------------------------------------
# End to end: the example-3 regressor and sklearn's XOR classifier
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example3_regressor():
    X, y = make_friedman1(n_samples=200, n_features=5, noise=0.5, random_state=0)
    y = y / 10
    kernel = ConstantKernel(1.0) * DotProduct(1.0) ** 2 + WhiteKernel(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0).fit(X, y)
    return reg, X


@pytest.fixture(scope="module")
def xor_classifier():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 2)
    Y = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(kernel=1.0 * DotProduct(sigma_0=1.0) ** 2).fit(X, Y)
    return clf, X


def _sampled_range(fn, lo, hi, rng, n=2000):
    v = np.asarray(fn(box_points(lo, hi, rng, n)), float)
    return v.min(), v.max()


def test_example3_mean_ranges(example3_regressor):
    reg, X = example3_regressor
    rng = np.random.default_rng(0)
    Xt = X[:8]
    gamma = 0.05
    res = reg.prediction_range(Xt, gamma, epsilon=1e-3, time_limit=5.0, random_state=0)
    assert res.converged.all()
    for i, x in enumerate(Xt):
        lo, hi = x - gamma, x + gamma
        vmin, vmax = _sampled_range(lambda P: gpr_predict(reg, P)[:, 0], lo, hi, rng)
        assert res.min_lower[i, 0] <= vmin and vmax <= res.max_upper[i, 0]
        # the upper bound of the min / lower bound of the max are sklearn's own
        # values (up to the last bits: BLAS sums one row and a batch differently)
        assert np.isclose(gpr_predict(reg, res.argmin[i])[0, 0], res.min_upper[i, 0], rtol=1e-12)
        assert np.isclose(gpr_predict(reg, res.argmax[i])[0, 0], res.max_lower[i, 0], rtol=1e-12)
        # and the range is tight: within 1% of the sampled range
        width = res.max_upper[i, 0] - res.min_lower[i, 0]
        assert width <= (vmax - vmin) * 1.01 + 2e-3


def test_example3_certify_survives_attack(example3_regressor):
    reg, X = example3_regressor
    Xt = X[10:22]
    res = reg.certify(Xt, 0.05, delta=0.05, time_limit=5.0, random_state=0)
    assert (res.status != "unknown").all()
    adv = pgd(reg, Xt, 0.05, delta=0.05, random_state=0)
    hit = attack_succeeded(reg, Xt, adv, delta=0.05)
    assert not np.any(hit & res.robust)
    for i in np.flatnonzero(res.status == "not_robust"):
        ce = res.counterexample[i]
        assert np.all(np.abs(ce - Xt[i]) <= 0.05 + 1e-12)
        assert abs(gpr_predict(reg, ce)[0, 0] - gpr_predict(reg, Xt[i])[0, 0]) > 0.05


def test_xor_latent_ranges(xor_classifier):
    clf, X = xor_classifier
    rng = np.random.default_rng(1)
    Xt = X[:10]
    gamma = 0.05
    res = clf.prediction_range(Xt, gamma, statistic="latent_mean", epsilon=1e-2, time_limit=5.0, random_state=0)
    assert res.converged.all()
    for i, x in enumerate(Xt):
        lo, hi = x - gamma, x + gamma
        vmin, vmax = _sampled_range(lambda P: gpc_latent(clf, P), lo, hi, rng)
        assert res.min_lower[i, 0] <= vmin and vmax <= res.max_upper[i, 0]
        assert res.max_upper[i, 0] - res.min_lower[i, 0] <= (vmax - vmin) * 1.01 + 2e-2


@pytest.mark.parametrize("gamma", [0.05, 0.3])
def test_xor_certify_survives_attack(xor_classifier, gamma):
    clf, X = xor_classifier
    rng = np.random.default_rng(2)
    Xt = X[20:45]
    res = clf.certify(Xt, gamma, time_limit=5.0, random_state=0)
    assert (res.status != "unknown").all()
    adv = pgd(clf, Xt, gamma, random_state=0)
    assert not np.any(attack_succeeded(clf, Xt, adv) & res.robust)
    labels = clf.predict(Xt)
    for i, x in enumerate(Xt):
        if res.robust[i]:
            P = box_points(x - gamma, x + gamma, rng, 2000)
            assert np.all(clf.predict(P) == labels[i])
        elif res.status[i] == "not_robust":
            assert clf.predict(res.counterexample[i][None])[0] != labels[i]
    if gamma == 0.3:
        assert (res.status == "not_robust").any()  # points near the axes flip
