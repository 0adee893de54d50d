"""The Lagrangian (Shor) dual bound of the Taylor models' quadratic part
(``_bounds/_mean.py``: ``dual_quadratic_lower``, used by ``taylor_lower`` in
d >= 8): soundness against brute force, sampling and L-BFGS-B on sklearn's
own kernel values, never looser than the eigenvalue / Gershgorin bounds, and
the gain on the 64-D digits mean differences that motivated it (issue 12)."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.datasets import load_digits
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, RationalQuadratic

import skgprobust._bounds._mean as mean_mod
from skgprobust._bounds._mean import affine_lower, dual_quadratic_lower, taylor_lower
from skgprobust.kernels import TaylorModel, make_adapter

from ._helpers import SLOW


def _quad(A, g, v):
    return g @ v + 0.5 * v @ A @ v


def _quad_min(A, g, rng, starts=20):
    """Best value found of g.v + v^T A v / 2 over [-1, 1]^d: every vertex
    (d <= 10), random points and L-BFGS-B from many starts."""
    d = len(g)
    best = np.inf
    if d <= 10:
        for s in itertools.product((-1.0, 1.0), repeat=d):
            best = min(best, _quad(A, g, np.array(s)))
    V = rng.uniform(-1, 1, (2000, d))
    best = min(best, float((V @ g + 0.5 * np.einsum("nd,de,ne->n", V, A, V)).min()))
    for _ in range(starts):
        o = minimize(lambda v: (_quad(A, g, v), g + A @ v), rng.uniform(-1, 1, d), jac=True,
                     method="L-BFGS-B", bounds=[(-1.0, 1.0)] * d)
        best = min(best, o.fun)
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("d", [1, 3, 8, 10])
def test_dual_quadratic_lower_is_sound(seed, d):
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(d, d))
    A = (R + R.T) * rng.choice([1e-3, 0.1, 1.0, 30.0])
    A = A + np.eye(d) * rng.normal() * np.abs(A).max()
    g = rng.normal(size=d) * rng.choice([1e-3, 1.0, 100.0])
    lower, v = dual_quadratic_lower(A[None], g[None])
    assert np.all(np.abs(v) <= 1.0)
    true = _quad_min(A, g, rng)
    assert lower[0] <= true
    assert np.isfinite(lower[0])


def test_dual_quadratic_lower_exact_for_separable_concave():
    """Diagonal concave A: the minimum is at the vertex -sign(g), and the dual
    with lambda_j = |g_j| / 2 - A_jj / 2 attains it."""
    rng = np.random.default_rng(0)
    d = 16
    A = -np.diag(rng.uniform(0.0, 0.5, d))
    g = rng.normal(size=d)
    lower, _ = dual_quadratic_lower(A[None], g[None])
    true = -np.abs(g).sum() + 0.5 * np.trace(A)
    assert lower[0] <= true
    assert lower[0] >= true - 1e-3 * (1 + abs(true))  # 12 ascent steps: within 0.1%


def _random_taylor(rng, B, d):
    R = rng.normal(size=(B, d, d))
    M = (R + R.transpose(0, 2, 1)) * 0.3
    return TaylorModel(rng.normal(size=B), rng.normal(size=(B, d)), rng.normal(size=(B, d)) * 0.3, M,
                       -np.abs(rng.normal(size=B)) * 0.01, np.ones(B))


@pytest.mark.parametrize("seed", range(6))
def test_taylor_lower_not_looser_and_sound(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    B, d = 4, 9
    tm = _random_taylor(rng, B, d)
    h = rng.uniform(0.01, 1.0, (B, d))
    new, u = taylor_lower(tm, h, dual=True)
    # without the dual bound: the eigenvalue / Gershgorin bounds only
    monkeypatch.setattr(mean_mod, "dual_quadratic_lower", lambda A, g: (np.full(len(g), -np.inf), 0 * g))
    old, _ = taylor_lower(tm, h, dual=True)
    assert np.all(new >= old)
    assert np.all(np.abs(u) <= h)
    for b in range(B):
        A = tm.M[b] * np.outer(h[b], h[b]) + 2 * np.diag(tm.diag[b] * h[b] ** 2)
        true = tm.value[b] + tm.rem[b] + _quad_min(A, tm.grad[b] * h[b], rng, starts=10)
        assert new[b] <= true


def _attack(kernel, Xs, w, lo, hi, rng, n=3000, starts=12):
    """Smallest value of sklearn's kernel(x, Xs) @ w found in the box."""
    P = rng.uniform(lo, hi, (n, len(lo)))
    best = float((kernel(P, Xs) @ w).min())
    f = lambda x: float(kernel(x[None], Xs)[0] @ w)  # noqa: E731
    for s in P[np.argsort(kernel(P, Xs) @ w)[:starts]]:
        o = minimize(f, s, method="L-BFGS-B", bounds=list(zip(lo, hi)))
        best = min(best, f(np.clip(o.x, lo, hi)))
    return best


KERNELS = [RBF(2.5), ConstantKernel(3.0) * RBF(1.5), Matern(2.0, nu=2.5), Matern(3.0, nu=1.5),
           RationalQuadratic(2.0, alpha=1.5)]


@pytest.mark.parametrize("kernel", KERNELS, ids=str)
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_affine_lower_high_dim_sound(kernel, offset):
    rng = np.random.default_rng(1)
    d, N = 24, 60
    Xs = rng.uniform(0, 1, (N, d)) + offset
    w = rng.normal(size=N) * 5.0
    ad = make_adapter(kernel, Xs)
    for half in (0.01, 0.05, 0.2):
        x = rng.uniform(0, 1, d) + offset
        lo, hi = x - half, x + half
        bb = affine_lower(ad, w[None], 0.0, lo[None], hi[None])
        assert bb.lower[0] <= _attack(kernel, Xs, w, lo, hi, rng)
        assert np.all((bb.argmin >= lo) & (bb.argmin <= hi))


def test_digits_mean_difference_gain(monkeypatch):
    """The 64-D digits setting of issue 12: a difference of two one-vs-rest
    latent means (mixed-sign weights) over a box of half-width 0.05. The dual
    bound is sound (below the attack) and gains on the eigenvalue bound."""
    D = load_digits()
    X = D.data / 16.0
    rng = np.random.default_rng(0)
    Xs = X[:300]
    y = D.target[:300]
    w = (y == 8).astype(float) - (y == 9).astype(float)
    w = w - 0.5 * w.mean()
    kernel = ConstantKernel(20.0) * RBF(2.5)
    ad = make_adapter(kernel, Xs)
    x = X[1037]
    lo, hi = np.maximum(x - 0.05, 0.0), np.minimum(x + 0.05, 1.0)
    new = affine_lower(ad, w[None], 0.0, lo[None], hi[None]).lower[0]
    true = _attack(kernel, Xs, w, lo, hi, rng, n=2000, starts=6)
    assert new <= true
    monkeypatch.setattr(mean_mod, "dual_quadratic_lower", lambda A, g: (np.full(len(g), -np.inf), 0 * g))
    old = affine_lower(ad, w[None], 0.0, lo[None], hi[None]).lower[0]
    assert new > old
    assert true - new < 0.5 * (true - old)


@pytest.mark.slow
@SLOW
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(8, 40),
    n=st.integers(2, 80),
    ls=st.floats(0.3, 6.0),
    amp=st.floats(0.1, 50.0),
    half=st.floats(1e-4, 0.5),
    kind=st.sampled_from(["rbf", "m25", "m15", "rq"]),
    offset=st.sampled_from([0.0, 1e4]),
)
def test_affine_lower_high_dim_sweep(seed, d, n, ls, amp, half, kind, offset):
    rng = np.random.default_rng(seed)
    base = {"rbf": RBF(ls), "m25": Matern(ls, nu=2.5), "m15": Matern(ls, nu=1.5),
            "rq": RationalQuadratic(ls, alpha=2.0)}[kind]
    kernel = ConstantKernel(amp) * base
    Xs = rng.uniform(0, 1, (n, d)) + offset
    w = rng.normal(size=n) * rng.choice([0.1, 1.0, 20.0])
    x = rng.uniform(0, 1, d) + offset
    lo, hi = x - half, x + half
    bb = affine_lower(make_adapter(kernel, Xs), w[None], 0.0, lo[None], hi[None])
    assert bb.lower[0] <= _attack(kernel, Xs, w, lo, hi, rng, n=1000, starts=4)


@pytest.mark.parametrize("kernel", KERNELS, ids=str)
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_quadratic_remainder_model_alone_sound(kernel, offset):
    """The alternative model (remainder as a concave quadratic form, attribute
    ``alt`` of the stationary Taylor model) is a valid lower bound by itself
    (its dual bound minus the rounding margin below the attack)."""
    rng = np.random.default_rng(2)
    d, N = 16, 40
    Xs = rng.uniform(0, 1, (N, d)) + offset
    w = rng.normal(size=N) * 5.0
    ad = make_adapter(kernel, Xs)
    found = 0
    for half in (0.02, 0.1, 0.4):
        x = rng.uniform(0, 1, d) + offset
        lo, hi = (x - half)[None], (x + half)[None]
        _, tm = ad.linearise(lo, hi, w[None])
        alt = getattr(tm, "alt", None)
        if alt is None:
            continue
        found += 1
        h = 0.5 * (hi - lo)
        A2 = alt[0] * h[:, :, None] * h[:, None, :] + 2.0 * np.eye(d) * (tm.diag * h * h)[:, :, None]
        q, _ = dual_quadratic_lower(A2, tm.grad * h)
        rtol = ad.mean_rtol(N, d) if hasattr(ad, "mean_rtol") else mean_mod.margin_rtol(N, d)
        lower = tm.value + q + alt[1] - rtol * tm.mag - np.abs(w) @ ad.rounding(lo, hi)[0]
        assert alt[2][0] <= tm.mag[0]
        assert lower[0] <= _attack(kernel, Xs, w, lo[0], hi[0], rng)
    assert found == 3
