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

Rounding constant (``DotProductPowerAdapter.mean_rtol`` and the exact
monomial coefficients): numpy's ``** 2`` / ``** 1`` fast paths, the exact
coefficients against rational arithmetic, sklearn's predict error against the
margin at points of random rank-deficient fits (sum |alpha_| up to 5e10,
compared with F(x) in rationals), bounds at degenerate and tiny boxes
against predict, mean ranges against dense sampling plus L-BFGS-B, the
gallery's ``C * DotProduct**2`` regressor converging on every row, and a
slow hypothesis sweep of all of it.
"""

import os
import warnings
from fractions import Fraction

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
from skgprobust._engine._latent import from_regressor
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


# --------------------------------------------------------------------------
# Exact coefficients and the per-kernel rounding constant (mean_rtol)
# --------------------------------------------------------------------------


def test_numpy_power_fast_paths():
    """The rounding proof's pi = u for p <= 2: numpy evaluates ``a ** 2`` as
    square(a) (one rounding) and ``a ** 1`` as a copy, so sklearn's
    Exponentiation(DotProduct, p) is fl(t~ * t~) / t~ for the same t~."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(50, 3)) * 7.0, rng.normal(size=(40, 3)) * 0.3
    t = DotProduct(0.7)(X, Y)
    for e in (2, 2.0):
        assert np.array_equal(Exponentiation(DotProduct(0.7), e)(X, Y), t * t)
    for e in (1, 1.0):
        assert np.array_equal(Exponentiation(DotProduct(0.7), e)(X, Y), t)


def _exact_beta(ad, w):
    """The monomial coefficients of sum_i w_i (s + x . x_i)^p, in rationals."""
    from math import comb, factorial, prod

    Fr = Fraction
    s = Fr(ad.s2)
    out = []
    for alpha in ad._alphas:
        k = int(alpha.sum())
        c = comb(ad.p, k) * s ** (ad.p - k) * factorial(k) / prod(factorial(int(a)) for a in alpha)
        out.append(c * sum(Fr(float(wi)) * prod(Fr(float(x)) ** int(a) for x, a in zip(xi, alpha))
                           for wi, xi in zip(w, ad.Xs)))
    return out


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_exact_coefficients_are_correctly_rounded(p, d):
    from skgprobust.kernels.polynomial import _ExactPolynomial

    rng = np.random.default_rng(10 * p + d)
    Xs = rng.normal(size=(9, d)) * rng.choice([1e-3, 1.0, 40.0])
    # Opposite-signed huge weights that nearly cancel, as a rank-deficient fit has.
    w = rng.normal(size=9) * 1e10
    w[-1] = -w[:-1].sum()
    ad = DotProductPowerAdapter(_kernel(p, 0.37), Xs)
    ex = _ExactPolynomial(ad, w)
    assert ex.ok
    exact = _exact_beta(ad, w)
    assert np.array_equal(ex.beta, np.array([float(b) for b in exact]))


@pytest.mark.parametrize("p", PS)
def test_exact_and_per_term_models_agree(p):
    rng = np.random.default_rng(p)
    Xs = rng.normal(size=(12, 2))
    w = rng.normal(size=12)
    ad = DotProductPowerAdapter(_kernel(p, 0.5), Xs)
    lo = rng.normal(size=(6, 2))
    hi = lo + rng.uniform(0, 0.4, size=(6, 2))
    W = np.broadcast_to(w, (6, 12))
    exact = ad._polynomial(lo, hi, W)
    per_term = ad._model(lo, hi, np.array(W))
    for a, b in zip(exact[:3], per_term[:3]):  # V, G, M: the same numbers up to rounding
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    # the exact remainder keeps the cancellation between support points
    assert np.all(exact[3] >= per_term[3] - 1e-12)


def test_mean_rtol_hook():
    Xs = np.random.default_rng(0).normal(size=(30, 2))
    u = 2.0**-53
    ad = DotProductPowerAdapter(_kernel(2, 1.0), Xs)
    assert ad.mean_rtol(30, 2) == (30 + 13) * u
    assert DotProductPowerAdapter(_kernel(3, 1.0), Xs).mean_rtol(30, 2) == (30 + 28) * u
    # Past N + p (d + 2) = 2^20 the generous default.
    assert ad.mean_rtol(2**20, 2) == margin_rtol(2**20, 2)
    prod_ad = make_adapter(ConstantKernel(0.3) * DotProduct(1.0) ** 2, Xs)
    assert prod_ad.mean_rtol(30, 2) == (30 + 15) * u
    # A plain DotProduct is the case p = 1; WhiteKernel's cross-covariances
    # are exactly 0; sums of adapters with their own constants: max + 2u.
    assert make_adapter(DotProduct(1.0), Xs).mean_rtol(30, 2) == (30 + 13) * u
    assert make_adapter(WhiteKernel(0.1), Xs).mean_rtol(30, 2) == 0.0
    assert make_adapter(DotProduct(1.0) ** 2 + WhiteKernel(0.1), Xs).mean_rtol(30, 2) == (30 + 15) * u
    gallery = ConstantKernel(0.2) * DotProduct(1.0) + ConstantKernel(0.3) * DotProduct(0.5) ** 3
    assert make_adapter(gallery, Xs).mean_rtol(30, 2) == (30 + 28 + 4) * u
    nested = gallery + WhiteKernel(0.1)
    assert make_adapter(nested, Xs).mean_rtol(30, 2) == (30 + 28 + 6) * u
    # Adapters without a proof of their own keep margin_rtol, and so does a
    # sum with one such child.
    for k in (RBF(1.0), ConstantKernel(2.0) * RBF(1.0), DotProduct(1.0) ** 2 * RBF(1.0),
              DotProduct(1.0) * RBF(1.0), DotProduct(1.0) ** 2 + RBF(0.1), ConstantKernel(1.0) + DotProduct(1.0),
              RBF(1.0) + WhiteKernel(0.1)):
        assert make_adapter(k, Xs).mean_rtol(30, 2) == margin_rtol(30, 2)


#: Kernel families of the rank-deficient fits: ``power`` [C *] DotProduct ** p
#: (p 1-3, an Exponentiation); ``plain`` [C *] DotProduct (no Exponentiation:
#: DotProductAdapter); ``white`` [C *] DotProduct [** 2] + WhiteKernel (a
#: SumAdapter with a zero child); ``mix`` C * DotProduct + C * DotProduct ** 2
#: [+ WhiteKernel] (sums of products, nested).
FAMILIES = ["power", "plain", "white", "mix"]


def _rank_deficient(seed, family="power"):
    """A GPR with a dot-product kernel of the given family (``FAMILIES``)
    fitted (optimizer=None, jitter tiny) on more distinct points than
    monomials of degree <= p: K is singular and alpha_ huge with cancelling
    signs (the gallery's situation), or None when sklearn's Cholesky fails."""
    from scipy.special import comb

    rng = np.random.default_rng(seed)
    d = int(rng.choice([1, 1, 2, 3]))
    p = int(rng.choice([1, 2, 2, 3]))
    if family == "plain":
        p = 1
    elif family == "white":
        p = int(rng.choice([1, 2]))
    elif family == "mix":
        p = 2
    N = int(comb(d + p, p, exact=True)) + int(rng.integers(2, 12))
    offset = float(rng.choice([0.0, 0.0, 3.0, 40.0]))
    X = offset + rng.uniform(-2.5, 2.5, size=(N, d))
    y = np.sin(X.sum(1) - offset) + 0.3 * rng.normal(size=N)

    def s0():
        return float(rng.choice([0.0, 0.1, 1.0, 3.0]))

    def scaled(k):
        return ConstantKernel(float(rng.choice([0.1, 3.7])), "fixed") * k

    if family == "power":
        kernel = Exponentiation(DotProduct(s0(), "fixed"), p)
        if rng.random() < 0.6:
            kernel = scaled(kernel)
    elif family in ("plain", "white"):
        kernel = DotProduct(s0(), "fixed") if p == 1 else Exponentiation(DotProduct(s0(), "fixed"), p)
        if rng.random() < 0.5:
            kernel = scaled(kernel)
    else:
        kernel = scaled(DotProduct(s0(), "fixed")) + scaled(Exponentiation(DotProduct(s0(), "fixed"), 2))
    white = family == "white" or (family == "mix" and rng.random() < 0.5)
    kmax = float(kernel.diag(X).max())  # large offsets: a jitter relative to the kernel's scale
    normalize = bool(rng.integers(2))
    for alpha in (1e-10, 1e-8, 1e-6, 1e-13 * kmax, 1e-11 * kmax):
        k = kernel + WhiteKernel(alpha, "fixed") if white else kernel
        reg = RobustGaussianProcessRegressor(k, alpha=alpha, optimizer=None, normalize_y=normalize)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return reg.fit(X, y), X, rng
        except np.linalg.LinAlgError:
            continue
    return None


def _margin(ad, W, m, lo, hi, scale=1.0):
    """The rounding margin affine_lower subtracts over each box (B,):
    mean_rtol (mag + |m|) plus the input rounding sum_i |w_i| rounding_i
    (``scale`` multiplies the constant)."""
    N, d = W.shape[1], lo.shape[1]
    rel, _ = ad.linearise(lo, hi, W)
    return scale * ad.mean_rtol(N, d) * (rel.mag + abs(m)) + np.einsum("bi,bi->b", np.abs(W), ad.rounding(lo, hi))


def _exact_k(k, x, xi):
    """k(x, x_i) in rationals for sums and products of ConstantKernel,
    WhiteKernel (0 off the diagonal), DotProduct and its integer powers; the
    float sigma_0 ** 2, as sklearn and the adapters use it."""
    from sklearn.gaussian_process.kernels import Product, Sum

    Fr, t = Fraction, type(k)
    if t is Sum:
        return _exact_k(k.k1, x, xi) + _exact_k(k.k2, x, xi)
    if t is Product:
        return _exact_k(k.k1, x, xi) * _exact_k(k.k2, x, xi)
    if t is ConstantKernel:
        return Fr(float(k.constant_value))
    if t is WhiteKernel:
        return Fr(0)
    if t is DotProduct:
        return Fr(float(k.sigma_0) ** 2) + sum(Fr(float(a)) * Fr(float(b)) for a, b in zip(x, xi))
    assert t is Exponentiation
    return _exact_k(k.kernel, x, xi) ** int(k.exponent)


def _exact_mean(reg, x):
    """F(x) = m + sum_i w_i k(x, x_i) in rationals, w = fl(alpha_ * std) (the
    bound model's weights)."""
    w = reg.alpha_.ravel() * float(np.ravel(reg._y_train_std)[0])
    m = Fraction(float(np.ravel(reg._y_train_mean)[0]))
    return m + sum(Fraction(float(wi)) * _exact_k(reg.kernel_, x, xi) for wi, xi in zip(w, reg.X_train_))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", range(8))
def test_rank_deficient_predict_error_within_margin(seed, family):
    """The constant itself: at points x (boxes [x, x]), sklearn's predict
    differs from the exact F(x) by less than the margin the bounds subtract
    (mean_rtol (mag + |m|) + input rounding), and the bounds at tiny boxes
    around x (where the margin is everything) contain predict(x)."""
    fitted = _rank_deficient(seed if family == "power" else 1000 * FAMILIES.index(family) + seed, family)
    if fitted is None:
        pytest.skip("sklearn's Cholesky failed")
    reg, X, rng = fitted
    assert np.abs(reg.alpha_).sum() > 1e3  # rank-deficient: large cancelling weights
    N, d = X.shape
    w = reg.alpha_.ravel() * float(np.ravel(reg._y_train_std)[0])
    m = float(np.ravel(reg._y_train_mean)[0])
    lm = from_regressor(reg)  # the bound model's weights are these w, m
    assert np.array_equal(lm.weights[:, 0], w) and lm.offset[0] == m
    ad = lm.adapter
    P = np.vstack([X[:5], X.min(0) + (X.max(0) - X.min(0)) * rng.random((60, d))])
    pred = gpr_predict(reg, P)[:, 0]
    W = np.broadcast_to(w, (len(P), N))
    margin = _margin(ad, W, m, P, P)
    ratio = 0.0
    for x, v, mg in zip(P[:25], pred[:25], margin[:25]):
        err = abs(float(_exact_mean(reg, x) - Fraction(float(v))))
        assert err <= mg
        ratio = max(ratio, err / mg)
    assert ratio < 0.5  # measured well below 0.5: the constant has headroom
    for tiny in (0.0, 1e-13, 1e-9):
        lo, hi = P - tiny * np.maximum(1.0, np.abs(P)), P + tiny * np.maximum(1.0, np.abs(P))
        lower = affine_lower(ad, W, m, lo, hi).lower
        upper = -affine_lower(ad, -W, -m, lo, hi).lower
        assert np.all(lower <= pred) and np.all(pred <= upper)
        # and the bounds are tight: at most the margin (plus the box) away
        assert np.all(upper - lower <= 4 * margin + 1e-9 * np.abs(pred) + 1e6 * tiny * np.abs(w).sum())


def _check_mean_ranges(reg, X, Xt, gamma, rng, time_limit=5.0, n_samples=2000):
    """prediction_range(mean) on rows Xt: every converged or not, predict at
    dense samples and L-BFGS-B extremes lies inside [min_lower, max_upper];
    the certified extremes are sklearn's values at points of the box."""
    eps = 0.01 * float(np.std(reg.predict(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = reg.prediction_range(Xt, gamma, epsilon=eps, time_limit=time_limit, random_state=0)
    for i, x in enumerate(Xt):
        lo, hi = x - gamma, x + gamma
        a = attack(lambda P: gpr_predict(reg, P)[:, 0], lo, hi, rng, n_samples=n_samples)
        assert res.min_lower[i, 0] <= a.min and a.max <= res.max_upper[i, 0]
        assert res.min_lower[i, 0] <= res.min_upper[i, 0] and res.max_lower[i, 0] <= res.max_upper[i, 0]
        assert np.all(np.abs(res.argmin[i] - x) <= gamma + 1e-12)
    return res, eps


@pytest.mark.parametrize("family", FAMILIES)
# one seed per family in the default run (each row may run to its 1 s
# limit; seed 0 took ~3 s per family), the other five in the slow job
@pytest.mark.parametrize("seed", [1] + [pytest.param(s, marks=pytest.mark.slow) for s in (0, 2, 3, 4, 5)])
def test_rank_deficient_mean_ranges_hold(seed, family):
    fitted = _rank_deficient(100 + seed + 1000 * FAMILIES.index(family), family)
    if fitted is None:
        pytest.skip("sklearn's Cholesky failed")
    reg, X, rng = fitted
    gamma = 0.01 * np.ptp(X, axis=0)
    Xt = X[:3]
    res, eps = _check_mean_ranges(reg, X, Xt, gamma, rng, time_limit=1.0, n_samples=1000)
    # Convergence is required where the rounding margin leaves room for it:
    # on some of these models sklearn's own predict jitters by more than
    # epsilon inside the box (measured +-1.3 against epsilon 0.009), and no
    # sound range of its outputs can then be epsilon-tight.
    N = len(X)
    ad = make_adapter(reg.kernel_, reg.X_train_)
    W = np.broadcast_to(reg.alpha_.ravel() * float(np.ravel(reg._y_train_std)[0]), (len(Xt), N))
    lo, hi = Xt - gamma, Xt + gamma
    margin = _margin(ad, W, float(np.ravel(reg._y_train_mean)[0]), lo, hi)
    roomy = margin < eps / 3
    assert res.converged[roomy].all()


def _gallery_dot_product_regressor():
    """sklearn's "prior and posterior of different kernels" example, as
    benchmarks/bench_gallery.py rebuilds it (same random draws)."""
    rng = np.random.RandomState(1)
    X = np.linspace(0, 10, 1000).reshape(-1, 1)
    y = np.squeeze(X * np.sin(X))
    idx = rng.choice(np.arange(y.size), size=6, replace=False)
    rng.normal(0, 0.75, size=idx.size)
    rng.uniform(0, 5, 30)
    rng.normal(0, 0.5, 30)
    Xp = rng.uniform(0, 5, 10)[:, None]
    yp = np.sin((Xp[:, 0] - 2.5) ** 2)
    reg = RobustGaussianProcessRegressor(
        ConstantKernel(0.1, (0.01, 10.0)) * DotProduct(1.0, (0.1, 10.0)) ** 2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg.fit(Xp, yp)
    return reg, Xp, yp


def test_gallery_dot_product_mean_ranges_converge():
    """Issue 12's gallery target for the pair that stalled at the rounding
    margin (sum |alpha_| ~ 2.4e10): every row converges at gamma = 1% of the
    feature range, epsilon = 1% of std(y), and the ranges hold."""
    reg, X, y = _gallery_dot_product_regressor()
    assert np.abs(reg.alpha_).sum() > 1e9
    gamma = 0.01 * np.ptp(X, axis=0)
    eps = 0.01 * float(np.std(y))
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = reg.prediction_range(X, gamma, epsilon=eps, time_limit=5.0, random_state=0)
    assert res.converged.all()
    for i, x in enumerate(X):
        a = attack(lambda P: gpr_predict(reg, P)[:, 0], x - gamma, x + gamma, rng, n_samples=2000)
        assert res.min_lower[i, 0] <= a.min and a.max <= res.max_upper[i, 0]
        assert res.min_upper[i, 0] - res.min_lower[i, 0] <= eps
        assert res.max_upper[i, 0] - res.max_lower[i, 0] <= eps


@pytest.mark.slow
# each example may run its rows to the 1 s limit: a third of the sweep budget
@settings(parent=SWEEP, max_examples=max(10, SWEEP.max_examples // 3))
@given(seed=st.integers(0, 2**31 - 1), rel=st.sampled_from([0.001, 0.01, 0.05]), family=st.sampled_from(FAMILIES))
def test_rank_deficient_sweep(seed, rel, family):
    """Slow sweep: random rank-deficient regressors of every kernel family
    (offsets up to 40, normalize_y on and off), mean ranges against dense
    sampling and L-BFGS-B, and the predict error against the margin."""
    fitted = _rank_deficient(seed, family)
    if fitted is None:
        return
    reg, X, rng = fitted
    gamma = rel * np.ptp(X, axis=0)
    _check_mean_ranges(reg, X, X[rng.choice(len(X), 2, replace=False)], gamma, rng, time_limit=2.0,
                       n_samples=1000)
    N, d = X.shape
    w = reg.alpha_.ravel() * float(np.ravel(reg._y_train_std)[0])
    m = float(np.ravel(reg._y_train_mean)[0])
    ad = make_adapter(reg.kernel_, reg.X_train_)
    P = X.min(0) + (X.max(0) - X.min(0)) * rng.random((400, d))
    pred = gpr_predict(reg, P)[:, 0]
    W = np.broadcast_to(w, (len(P), N))
    lower = affine_lower(ad, W, m, P, P).lower
    upper = -affine_lower(ad, -W, -m, P, P).lower
    assert np.all(lower <= pred) and np.all(pred <= upper)


def test_exact_path_groups_and_pickling():
    """Mean objectives stack w and -w in one call: both groups take the exact
    path (same V, G, M as the per-term model); more distinct weight vectors
    than MAX_GROUPS fall back; the coefficient cache is not pickled."""
    import pickle

    rng = np.random.default_rng(5)
    Xs = rng.normal(size=(12, 2))
    w = rng.normal(size=12)
    ad = DotProductPowerAdapter(_kernel(2, 0.5), Xs)
    lo = rng.normal(size=(3, 2))
    lo, hi = np.vstack([lo, lo]), np.vstack([lo, lo]) + 0.2
    W = np.vstack([np.broadcast_to(w, (3, 12)), np.broadcast_to(-w, (3, 12))])
    assert len(ad._weight_groups(W)) == 2
    exact, per_term = ad._polynomial(lo, hi, W), ad._model(lo, hi, W)
    for a, b in zip(exact[:3], per_term[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(exact[0][:3], -exact[0][3:])
    assert ad._weight_groups(rng.normal(size=(ad.MAX_GROUPS + 1, 12))) is None
    assert len(ad._cache) == 2
    clone = pickle.loads(pickle.dumps(ad))
    assert clone._cache == {}
    np.testing.assert_array_equal(clone._polynomial(lo, hi, W)[0], exact[0])


# --------------------------------------------------------------------------
# Plain DotProduct, WhiteKernel and sums: the routed adapter and constants
# --------------------------------------------------------------------------


def test_plain_dot_product_routed():
    """A plain DotProduct gets the p = 1 polynomial adapter: sklearn's values
    bit for bit (no power applied), the same diagonal, and its TwoProduct +
    fsum coefficients equal the integer path's exactly."""
    import skgprobust.kernels.polynomial as poly
    from skgprobust.kernels.basic import DotProductAdapter

    rng = np.random.default_rng(3)
    for t in range(40):
        N, d = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        Xs = rng.normal(size=(N, d)) * 10.0 ** rng.integers(-4, 5) + rng.choice([0.0, 3.0, 40.0, 1e4])
        k = DotProduct(float(rng.choice([0.0, 0.1, 1.0, 3.3])))
        ad = make_adapter(k, Xs)
        assert type(ad) is DotProductAdapter and isinstance(ad, DotProductPowerAdapter) and ad.p == 1
        P = rng.normal(size=(7, d)) * 3
        np.testing.assert_array_equal(ad.values(P), k(P, Xs))
        np.testing.assert_array_equal(ad.diag(P), k.diag(P))
        w = rng.normal(size=N) * 10.0 ** rng.integers(-3, 11)
        h = N // 2
        w[:h] = -w[h:2 * h] * (1 + 1e-12 * rng.normal(size=h))  # heavy cancellation
        fast = poly._linear_coefficients(ad, w)
        assert fast is not None
        Ex, Ms, Es, pw = ad._int_support()
        try:
            poly._linear_coefficients, saved = (lambda a, w: None), poly._linear_coefficients
            slow = poly._ExactPolynomial(ad, w).beta
        finally:
            poly._linear_coefficients = saved
        np.testing.assert_array_equal(fast, slow)
    # outside the TwoProduct range: the integer path
    assert poly._linear_coefficients(ad, np.full(len(ad.Xs), 2.0**-600)) is None
    with pytest.raises(ValueError):
        DotProductAdapter(DotProduct(1.0) ** 2, np.zeros((2, 1)))


#: u = 2^-53; the adversarial weights below: 1, then N - 2 copies of u, then -1.
_U = 2.0**-53


@pytest.mark.parametrize("kind", ["plain", "scaled", "white", "power2"])
def test_constant_sharp_on_adversarial_weights(kind):
    """The rounding constant against the worst case it must cover: a fitted
    regressor on N = 256 copies of x = 1 (d = 1, sigma_0 = 0, so every
    k(1, x_i) = 1 exactly) whose alpha_ is replaced by v = [1, u, ..., u, -1].
    The exact mean at x = 1 is (N - 2) u, but sklearn's K @ v loses many
    of the u's (1 + u rounds to 1): predicting two rows, OpenBLAS's gemv
    (two accumulators here) returns 127 u for 254 u, an error of 0.24 N u
    mag (mag ~ 2; one row goes through a 32-lane dot product that loses only
    7 u). The certified bounds at x (a degenerate box, where the
    rounding margin is everything) and prediction_range around it contain
    predict; with ``mean_rtol`` made 10x smaller they would not, so the
    constant is within 10x of what this model needs and these tests are
    sharp."""
    N = 256
    X = np.ones((N, 1))
    y = np.random.default_rng(0).normal(size=N)
    base = DotProduct(0.0, "fixed")
    kernel = {"plain": base, "scaled": ConstantKernel(1.0, "fixed") * base,
              "white": base + WhiteKernel(1.0, "fixed"), "power2": Exponentiation(base, 2)}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel, alpha=1.0, optimizer=None).fit(X, y)
    v = np.full(N, _U)
    v[0], v[-1] = 1.0, -1.0
    reg.alpha_ = v.reshape(reg.alpha_.shape)
    lm = from_regressor(reg)
    assert np.array_equal(lm.weights[:, 0], v) and lm.offset[0] == 0.0
    ad = lm.adapter
    x = np.ones((2, 1))
    pred = gpr_predict(reg, x)[:, 0]
    exact = float(_exact_mean(reg, x[0]))
    assert exact == (N - 2) * _U
    W = np.broadcast_to(v, (2, N))
    margin = _margin(ad, W, 0.0, x, x)
    err = abs(exact - pred[0])
    assert err <= margin[0]
    if err <= _margin(ad, W, 0.0, x, x, scale=0.1)[0]:
        pytest.skip(f"this BLAS sums too accurately for the worst case (error {err / _U:.0f} u)")

    def bounds():
        lower = affine_lower(ad, W, 0.0, x, x).lower
        upper = -affine_lower(ad, -W, -0.0, x, x).lower
        return lower, upper

    lower, upper = bounds()
    assert np.all(lower <= pred) and np.all(pred <= upper)
    gamma = np.array([1e-12])
    res = reg.prediction_range(x, gamma, epsilon=1e-9, time_limit=2.0, random_state=0)
    assert np.all(res.min_lower[:, 0] <= pred) and np.all(pred <= res.max_upper[:, 0])
    # The same bounds with a 10x smaller constant exclude predict's value.
    full = ad.mean_rtol
    ad.mean_rtol = lambda n, d: 0.1 * full(n, d)
    lower10, upper10 = bounds()
    assert not (lower10[0] <= pred[0] <= upper10[0])


@pytest.mark.parametrize("kernel", [WhiteKernel(0.5), ConstantKernel(2.0) * WhiteKernel(0.5),
                                    WhiteKernel(0.5) + WhiteKernel(0.1)])
@pytest.mark.parametrize("normalize_y", [False, True])
def test_white_only_mean_is_its_offset(kernel, normalize_y):
    """WhiteKernel's cross-covariances are exact zeros (``mean_rtol`` 0, or
    2 u per product / sum level): predict returns the offset exactly, and the
    bounds at any box are that number."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 2)) + 40.0
    y = rng.normal(size=15) * 1e3 + 7.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel, optimizer=None, normalize_y=normalize_y).fit(X, y)
    lm = from_regressor(reg)
    ad = lm.adapter
    assert ad.mean_rtol(15, 2) <= 4 * 2.0**-53
    lo = X[:4] - 0.3
    hi = X[:4] + 0.3
    W = np.broadcast_to(lm.weights[:, 0], (4, 15))
    m = float(lm.offset[0])
    pred = gpr_predict(reg, box_points(lo[0], hi[0], rng, 200))[:, 0]
    assert np.all(pred == pred[0])
    lower = affine_lower(ad, W, m, lo, hi).lower
    upper = -affine_lower(ad, -W, -m, lo, hi).lower
    assert np.all(lower <= pred[0]) and np.all(pred[0] <= upper)
    assert np.all(upper - lower <= 4 * 2.0**-52 * abs(pred[0]) + 1e-290)
