"""Each of the three box bounds of the posterior mean, tested on its own.

``AffineMean.bound`` returns the best of the interval bound, the separable
relaxation and the Taylor model; a bug in one of them could hide behind the
others in end-to-end tests, so each is attacked separately here against
sklearn's own kernel values, on boxes from degenerate (h = 0) to large, with
large weights of both signs.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgprobust._bounds._mean import AffineMean, margin_rtol, minimise_separable, taylor_lower
from skgprobust.kernels import make_adapter
from skgprobust.kernels.stationary import StationaryAdapter


def _kernels(d, rng):
    ls = lambda: rng.uniform(0.3, 2.0, d)  # noqa: E731
    return [
        ConstantKernel(50.0) * RBF(ls()),
        Matern(ls(), nu=0.5),
        Matern(ls(), nu=1.5),
        ConstantKernel(3.0) * Matern(ls(), nu=2.5) + WhiteKernel(0.1),
        Matern(1.0, nu=np.inf),
        RationalQuadratic(0.8, alpha=0.5),
        RBF(0.7) + Matern(ls(), nu=2.5),
        DotProduct(0.5) + ConstantKernel(2.0) * RBF(ls()),
    ]


def _cases(seed, n_cases):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        d = int(rng.integers(1, 5))
        N = int(rng.choice([1, 7, 60]))
        Xs = rng.normal(size=(N, d))
        for kernel in _kernels(d, rng):
            w = rng.normal(size=N) * 10 ** rng.uniform(-1, 4)
            h_scale = rng.choice([0.0, 1e-6, 1e-2, 0.2, 1.0])
            centre = Xs[rng.integers(N)] + rng.normal(size=d) * rng.choice([0.0, 0.05, 1.0])
            h = h_scale * rng.random(d) * (rng.random(d) > 0.2)
            yield kernel, Xs, w, centre - h, centre + h, rng


def _sampled_min(kernel, Xs, w, lo, hi, rng, n=3000):
    d = len(lo)
    corners = lo + (hi - lo) * rng.integers(0, 2, size=(64, d))
    P = np.vstack([0.5 * (lo + hi), corners, lo + (hi - lo) * rng.random((n, d))])
    vals = kernel(P, Xs) @ w  # sklearn's own numbers
    return vals.min(), np.abs(kernel(P[:1], Xs) * w).sum() + 1.0


TOL_REL = 1e-12  # relative to sum_i |w_i k_i| at the centre: far above rounding


@pytest.mark.parametrize("seed", range(4))
def test_each_bound_is_sound_alone(seed):
    for kernel, Xs, w, lo, hi, rng in _cases(seed, 6):
        ad = make_adapter(kernel, Xs)
        W = w[None]
        rel, tm = ad.linearise(lo[None], hi[None], W)
        h = 0.5 * (hi - lo)[None]
        m, mag = _sampled_min(kernel, Xs, w, lo, hi, rng)
        # interval bound
        assert rel.ilb[0] <= m + TOL_REL * mag, (kernel, "interval")
        # separable relaxation, minimised exactly over the box
        q, _ = minimise_separable(rel.alpha, rel.beta, h)
        assert rel.const[0] + q[0] <= m + TOL_REL * mag, (kernel, "relaxation")
        # Taylor model
        if tm is not None:
            lt, _ = taylor_lower(tm, h)
            assert lt[0] <= m + TOL_REL * mag, (kernel, "taylor", lt[0], m)
        # and the combination with its margin
        lb = AffineMean(ad, w, 0.0).bound(lo[None], hi[None]).lower[0]
        assert lb <= m


def test_taylor_model_exact_at_degenerate_box():
    # On a single point the model is the function value: the bound must be
    # within the rounding margin of sklearn's value, and below it.
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(200, 3))
    kernel = ConstantKernel(30.0) * RBF([1.0, 2.0, 0.5])
    w = rng.normal(size=200) * 100
    x = rng.normal(size=3)
    f = AffineMean(make_adapter(kernel, Xs), w, 1.5)
    lb = f.bound(x[None], x[None]).lower[0]
    val = (kernel(x[None], Xs) @ w)[0] + 1.5
    mag = np.abs(kernel(x[None], Xs) * w).sum()
    assert lb <= val
    # The model's magnitude counts derivative terms too: a few times sum|w k|.
    assert val - lb <= 8 * margin_rtol(200, 3) * (mag + 1.5) + 1e-300


def test_taylor_bound_keeps_the_cancellation_of_large_weights():
    # Large opposite-sign weights: the per-point relaxation loses their
    # cancellation (gap ~ sum|w| h^2); the Taylor model keeps the exact centre
    # value, gradient and Hessian, so its gap is far smaller and still shrinks
    # at least quadratically.
    rng = np.random.default_rng(1)
    Xs = rng.normal(size=(100, 2))
    kernel = RBF([0.8, 1.2])
    w = rng.normal(size=100) * 1e3
    ad = make_adapter(kernel, Xs)
    x = np.array([0.1, -0.2])
    t_gaps, r_gaps = [], []
    for h in (0.04, 0.02, 0.01):
        lo, hi = (x - h)[None], (x + h)[None]
        rel, tm = ad.linearise(lo, hi, w[None])
        hh = np.full((1, 2), h)
        lt, _ = taylor_lower(tm, hh)
        q, _ = minimise_separable(rel.alpha, rel.beta, hh)
        m, _ = _sampled_min(kernel, Xs, w, lo[0], hi[0], rng, n=20000)
        t_gaps.append(m - lt[0])
        r_gaps.append(m - max(rel.const[0] + q[0], rel.ilb[0]))
    assert all(g >= -1e-9 for g in t_gaps + r_gaps)
    assert all(t < r / 10 for t, r in zip(t_gaps, r_gaps)), (t_gaps, r_gaps)
    assert t_gaps[0] / t_gaps[1] > 3.5 and t_gaps[1] / t_gaps[2] > 3.5, t_gaps


@pytest.mark.parametrize(
    "kernel",
    [RBF(), Matern(nu=0.5), Matern(nu=1.5), Matern(nu=2.5), Matern(nu=np.inf), RationalQuadratic(alpha=0.3)],
    ids=lambda k: repr(k),
)
def test_psi_derivative_signs_and_monotonicity(kernel):
    # The bounds rely on: psi' increasing (psi convex), psi'' > 0 decreasing,
    # psi''' < 0 with |psi'''| decreasing; and on the formulas being right.
    ad = make_adapter(kernel, np.zeros((1, 1)))
    assert isinstance(ad, StationaryAdapter)
    p = np.linspace(1e-3, 60.0, 20001)
    d1, d2, d3 = ad.dpsi(p), ad.d2psi(p), ad.d3psi(p)
    assert np.all(np.diff(d1) > 0)
    assert np.all(d2 > 0) and np.all(np.diff(d2) < 0)
    assert np.all(d3 < 0) and np.all(np.diff(np.abs(d3)) < 0)
    e = 1e-6
    q = np.linspace(0.05, 30.0, 500)
    for f, df in ((ad.psi, ad.dpsi), (ad.dpsi, ad.d2psi), (ad.d2psi, ad.d3psi)):
        fd = (f(q + e) - f(q - e)) / (2 * e)
        np.testing.assert_allclose(df(q), fd, rtol=1e-5, atol=1e-12)


def test_margin_scales_with_summation_length():
    assert margin_rtol(1000, 11) == pytest.approx((8 * 1011 + 256) * 2.0**-53)
    assert margin_rtol(10, 2) < margin_rtol(10_000, 2) < 1e-11
