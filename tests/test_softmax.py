"""Certified softmax probability bounds (skgprobust._bounds._softmax).

References never come from the module itself: m = 2 against scipy's quad
of the 1-D integral E[sigmoid(f_1 - f_2)], m <= 4 against a product
Gauss-Hermite rule (exact to ~1e-15 for latent standard deviations <= 1.1,
checked against quad below), larger m against Monte Carlo with a
5-standard-error allowance. Each check evaluates the reference at the
corners of the (mu, var) box, at mixed corners and at random interior
points.
"""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import expit, logsumexp

from skgprobust._bounds import _softmax as sm
from skgprobust._bounds._softmax import softmax_gaussian_bounds, softmax_gaussian_mc

#: Reference accuracy (quad / Gauss-Hermite) plus the documented margin.
TOL = 1e-9

FAST = settings(deadline=None, max_examples=30, derandomize=True, print_blob=True)
SLOW = settings(
    deadline=None, max_examples=int(os.environ.get("SKGPROBUST_SWEEP_EXAMPLES", "200")), print_blob=True
)

#: Largest latent variance drawn where Gauss-Hermite is the reference.
GH_MAX_VAR = 1.2


# --------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------


def quad_softmax2(mu, var):
    """E[softmax(f)_0], m = 2, as a 1-D integral: f_0 - f_1 ~ N(d, s^2)."""
    d = mu[0] - mu[1]
    s = np.sqrt(var[0] + var[1])
    if s == 0:
        return float(expit(d))
    f = lambda z: expit(d + s * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
    return quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-13, limit=200)[0]


def gh_softmax(mu, var, n_nodes=None):
    """E[softmax(f)] by an n_nodes^m product Gauss-Hermite rule (m <= 4)."""
    mu, var = np.asarray(mu, float), np.asarray(var, float)
    m = len(mu)
    n_nodes = n_nodes or {2: 60, 3: 50, 4: 28}[m]
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    grids = np.meshgrid(*[x] * m, indexing="ij")
    F = np.stack([mu[j] + np.sqrt(var[j]) * grids[j] for j in range(m)], axis=-1)
    P = np.exp(F - logsumexp(F, axis=-1, keepdims=True))
    W = np.ones([n_nodes] * m)
    for j in range(m):
        W = W * w.reshape([-1 if k == j else 1 for k in range(m)])
    return np.tensordot(W, P, axes=m)


def probe_points(lo, hi, vlo, vhi, rng, n_random=4):
    """(mu, var) pairs: all-low, all-high and mixed corners, interior points."""
    m = len(lo)
    pts = [(lo, vlo), (hi, vhi), (lo, vhi), (hi, vlo)]
    for _ in range(3):
        a, b = rng.random(m) < 0.5, rng.random(m) < 0.5
        pts.append((np.where(a, lo, hi), np.where(b, vlo, vhi)))
    for _ in range(n_random):
        pts.append((lo + rng.random(m) * (hi - lo), vlo + rng.random(m) * (vhi - vlo)))
    return pts


@st.composite
def interval_boxes(draw, m, max_var=GH_MAX_VAR, B=None):
    """(mu_lo, mu_hi, var_lo, var_hi), each (B, m): centres at several
    scales, widths from 0 (degenerate) to wide, var_lo often 0, var_hi
    sometimes 0 (point masses)."""
    B = B or draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.3, 1.0, 3.0, 8.0]))
    centre = rng.normal(size=(B, m)) * scale
    width = rng.choice([0.0, 0.0, 1e-6, 0.01, 0.3, 2.0], size=(B, m)) * rng.random((B, m))
    vlo = rng.choice([0.0, 0.0, 1e-8, 0.05, 0.5], size=(B, m)) * rng.random((B, m))
    vhi = vlo + rng.choice([0.0, 0.0, 1e-8, 0.05, 0.5, 1.0], size=(B, m)) * rng.random((B, m))
    vhi = np.minimum(vhi, max_var)
    vlo = np.minimum(vlo, vhi)
    return centre, centre + width, vlo, vhi


grids = st.sampled_from([(None, None), (3, 2), (5, 4), (16, 16), (32, 8), (64, 256)])


def check_invariants(lo, hi):
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all((0.0 <= lo) & (lo <= hi) & (hi <= 1.0))
    assert np.all(lo.sum(axis=1) <= 1.0 + 1e-12)
    assert np.all(hi.sum(axis=1) >= 1.0 - 1e-12)


def assert_contains(lo, hi, ref, tol, what):
    bad = (ref < lo - tol) | (ref > hi + tol)
    assert not np.any(bad), f"{what}: reference {ref} outside [{lo}, {hi}]"


# --------------------------------------------------------------------------
# The references themselves
# --------------------------------------------------------------------------


def test_gauss_hermite_reference_matches_quad():
    rng = np.random.default_rng(0)
    for _ in range(20):
        mu = rng.normal(size=2) * 3
        var = rng.random(2) * GH_MAX_VAR
        assert abs(gh_softmax(mu, var)[0] - quad_softmax2(mu, var)) < 1e-12
    # m = 3 and 4 against m = 2 embeddings: a class at -inf-ish mean drops out.
    mu, var = np.array([0.3, -0.2, -60.0]), np.array([0.7, 1.1, 0.0])
    assert abs(gh_softmax(mu, var)[0] - quad_softmax2(mu[:2], var[:2])) < 1e-12
    mu, var = np.array([0.3, -0.2, -60.0, -70.0]), np.array([0.7, 1.1, 0.0, 0.0])
    assert abs(gh_softmax(mu, var)[0] - quad_softmax2(mu[:2], var[:2])) < 1e-11


# --------------------------------------------------------------------------
# Soundness
# --------------------------------------------------------------------------


@FAST
@given(data=st.data(), grid=grids)
def test_two_classes_against_quad(data, grid):
    lo_mu, hi_mu, vlo, vhi = data.draw(interval_boxes(2, max_var=9.0))
    n_cells, n_lse = grid
    lo, hi = softmax_gaussian_bounds(lo_mu, hi_mu, vlo, vhi, n_cells=n_cells, n_lse=n_lse)
    check_invariants(lo, hi)
    rng = np.random.default_rng(1)
    for b in range(len(lo)):
        for mu, var in probe_points(lo_mu[b], hi_mu[b], vlo[b], vhi[b], rng):
            p0 = quad_softmax2(mu, var)
            assert_contains(lo[b], hi[b], np.array([p0, 1 - p0]), TOL, f"box {b} at mu={mu}, var={var}")


@pytest.mark.slow  # ~20 s: runs in CI's slow job
@FAST
@given(data=st.data(), m=st.sampled_from([3, 4]), grid=grids)
def test_three_and_four_classes_against_gauss_hermite(data, m, grid):
    lo_mu, hi_mu, vlo, vhi = data.draw(interval_boxes(m, B=1 if m == 4 else None))
    n_cells, n_lse = grid
    lo, hi = softmax_gaussian_bounds(lo_mu, hi_mu, vlo, vhi, n_cells=n_cells, n_lse=n_lse)
    check_invariants(lo, hi)
    rng = np.random.default_rng(2)
    for b in range(len(lo)):
        for mu, var in probe_points(lo_mu[b], hi_mu[b], vlo[b], vhi[b], rng, n_random=2 if m == 4 else 4):
            assert_contains(lo[b], hi[b], gh_softmax(mu, var), TOL, f"box {b} at mu={mu}, var={var}")


@pytest.mark.parametrize("m", [3, 5, pytest.param(2, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow)])
def test_monte_carlo_containment(m):
    """Large variances too (where quadrature is harder): 5 standard errors."""
    rng = np.random.default_rng(10 + m)
    B = 6
    centre = rng.normal(size=(B, m)) * 2
    width = rng.choice([0.0, 0.01, 0.5], size=(B, m))
    vlo = rng.choice([0.0, 0.5, 2.0], size=(B, m))
    vhi = vlo + rng.choice([0.0, 0.1, 4.0], size=(B, m))
    lo, hi = softmax_gaussian_bounds(centre, centre + width, vlo, vhi)
    check_invariants(lo, hi)
    mus, vs, owner = [], [], []
    for b in range(B):
        for mu, var in probe_points(centre[b], centre[b] + width[b], vlo[b], vhi[b], rng, n_random=2):
            mus.append(mu), vs.append(var), owner.append(b)
    est, se = softmax_gaussian_mc(np.array(mus), np.array(vs), 40_000, rng)
    owner = np.array(owner)
    assert np.all(est >= lo[owner] - 5 * se - 1e-12)
    assert np.all(est <= hi[owner] + 5 * se + 1e-12)


def test_point_intervals_zero_variance_exact():
    """var = 0 and a point mean: the bound is softmax(mu) up to the margin."""
    rng = np.random.default_rng(3)
    for m in (2, 3, 5, 8):
        mu = rng.normal(size=(4, m)) * 3
        z = np.zeros_like(mu)
        lo, hi = softmax_gaussian_bounds(mu, mu, z, z, n_cells=8, n_lse=16)
        exact = np.exp(mu - logsumexp(mu, axis=1, keepdims=True))
        np.testing.assert_allclose(lo, exact, rtol=0, atol=1e-10)
        np.testing.assert_allclose(hi, exact, rtol=0, atol=1e-10)
        assert np.all(lo <= exact) and np.all(exact <= hi)


def test_zero_variance_mean_interval_is_exact_range():
    """var = 0: pi_c = softmax(mu)_c is monotone in each mean, so its range
    over the box is attained at two corners; the bounds contain and (with a
    fine grid) approach it."""
    mu_lo = np.array([[0.0, 0.5, -1.0]])
    mu_hi = mu_lo + np.array([[0.2, 0.1, 0.4]])
    z = np.zeros_like(mu_lo)
    lo, hi = softmax_gaussian_bounds(mu_lo, mu_hi, z, z, n_cells=256, n_lse=1024)
    for c in range(3):
        worst = np.where(np.arange(3) == c, mu_lo[0], mu_hi[0])
        best = np.where(np.arange(3) == c, mu_hi[0], mu_lo[0])
        p_min = np.exp(worst[c] - logsumexp(worst))
        p_max = np.exp(best[c] - logsumexp(best))
        assert lo[0, c] <= p_min <= lo[0, c] + 0.01
        assert hi[0, c] - 0.01 <= p_max <= hi[0, c]


def test_zero_lower_variance_includes_point_masses():
    """var in [0, v]: the point mass at mu is inside; a coarse grid whose
    edges sit exactly on the means must still contain it."""
    mu = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.5]])
    vlo = np.zeros_like(mu)
    vhi = np.full_like(mu, 0.5)
    for n_cells in (3, 4, 7):
        lo, hi = softmax_gaussian_bounds(mu, mu, vlo, vhi, n_cells=n_cells, n_lse=4)
        for b in range(2):
            for var in (vlo[b], vhi[b], np.array([0.0, 0.5, 0.0]), np.array([0.5, 0.0, 0.25])):
                assert_contains(lo[b], hi[b], gh_softmax(mu[b], var), TOL, f"n_cells={n_cells}")


def test_extreme_latent_values_stay_sound():
    """Means hundreds apart (exp underflows): finite, sound, and correct limits."""
    mu = np.array([[0.0, 400.0, -400.0], [800.0, 0.0, 799.0]])
    var = np.array([[1.0, 0.5, 2.0], [0.0, 1.0, 0.1]])
    lo, hi = softmax_gaussian_bounds(mu, mu + 1.0, var, var)
    check_invariants(lo, hi)
    # The true values are ~exp(-400); the bounds are off by at most the
    # documented floating-point margin (~1e-9 with the default grid).
    assert hi[0, 0] < 1e-8 and lo[0, 1] > 1 - 1e-8 and hi[0, 2] < 1e-8
    # Row 1: classes 0 and 2 share the mass (f_0 - f_2 in [0, 2] +- noise).
    assert hi[1, 1] < 1e-8 and lo[1, 0] > 0.4 and lo[1, 2] > 0.0


def test_large_variance_sound_by_monte_carlo():
    rng = np.random.default_rng(4)
    mu = np.array([[0.0, 1.0, -1.0, 0.5]])
    var = np.array([[25.0, 16.0, 36.0, 9.0]])
    lo, hi = softmax_gaussian_bounds(mu, mu, var, var)
    est, se = softmax_gaussian_mc(mu, var, 200_000, rng)
    assert np.all(lo - 5 * se <= est) and np.all(est <= hi + 5 * se)
    assert np.all(hi - lo < 0.1)


# --------------------------------------------------------------------------
# Tightness: convergence and comparison with the paper's combination
# --------------------------------------------------------------------------


def test_convergence_as_grid_refines_and_intervals_shrink():
    mu = np.array([[0.4, -0.3, 0.1]])
    var = np.array([[0.5, 0.3, 0.8]])
    exact = gh_softmax(mu[0], var[0])
    # Point intervals: the gap shrinks (about like 1 / n_cells) to 0.
    gaps = []
    for n_cells in (16, 32, 64, 128):
        lo, hi = softmax_gaussian_bounds(mu, mu, var, var, n_cells=n_cells)
        assert np.all(lo[0] <= exact + TOL) and np.all(exact <= hi[0] + TOL)
        gaps.append((hi - lo).max())
    assert all(g2 < 0.7 * g1 for g1, g2 in zip(gaps, gaps[1:])), gaps
    assert gaps[-1] < 0.015  # measured 0.0128 (0.026 at 64 cells, 0.0064 at 256)
    # Shrinking intervals around the point: the gap tends to the point's.
    widths = [(hi - lo).max() for lo, hi in (
        softmax_gaussian_bounds(mu - h, mu + h, var * (1 - h), var * (1 + h), n_cells=128)
        for h in (0.3, 0.1, 0.01, 0.001, 0.0)
    )]
    assert all(w2 < w1 for w1, w2 in zip(widths, widths[1:])), widths
    assert widths[-2] - widths[-1] < 2e-3  # the true range over h = 1e-3 is itself ~1e-3 wide


def test_default_grid_gap_on_point_intervals():
    """Default grid, point intervals, moderate variances: gap < 0.01 for m = 2
    (256 cells) and < 0.02 for m = 3 (64 cells) with latent variances <= 0.1."""
    rng = np.random.default_rng(5)
    mu = rng.normal(size=(16, 2))
    var = rng.uniform(0.0, 1.0, size=(16, 2))
    lo, hi = softmax_gaussian_bounds(mu, mu, var, var)
    assert (hi - lo).max() < 0.01
    mu = rng.normal(size=(16, 3))
    var = rng.uniform(0.0, 0.1, size=(16, 3))
    lo, hi = softmax_gaussian_bounds(mu, mu, var, var)
    assert (hi - lo).max() < 0.02  # measured 0.013


def _corner_softmax(x, c):
    """softmax_c at corners x (..., m) with +-inf entries (limits)."""
    others = np.delete(x, c, axis=-1)
    lse = others[..., 0]
    for j in range(1, others.shape[-1]):
        lse = np.logaddexp(lse, others[..., j])
    with np.errstate(invalid="ignore"):
        v = expit(x[..., c] - lse)
    return v


def _paper_and_knapsack(mu_lo, mu_hi, vlo, vhi, n_cells):
    """Reference combinations on the same latent grid: the paper's Prop. 10
    (sum over joint cells of corner value times the product of per-output
    cell-probability minima / maxima) and the fractional knapsack over the
    joint-cell intervals with sum 1. One box, m <= 3."""
    m = len(mu_lo)
    edges = sm._latent_edges(mu_lo[None], mu_hi[None], np.sqrt(vhi)[None], n_cells, 8.0)[0]
    a = np.concatenate([np.full((m, 1), -np.inf), edges], axis=1)
    b = np.concatenate([edges, np.full((m, 1), np.inf)], axis=1)
    p_lo, p_hi = sm._cell_prob_bounds(a, b, mu_lo[:, None], mu_hi[:, None], vlo[:, None], vhi[:, None])
    idx = np.stack(np.meshgrid(*[np.arange(n_cells)] * m, indexing="ij"), -1).reshape(-1, m)
    J_lo = np.prod(p_lo[np.arange(m), idx], axis=1)
    J_hi = np.prod(p_hi[np.arange(m), idx], axis=1)
    A, Bd = a[np.arange(m), idx], b[np.arange(m), idx]
    out = {"paper": np.zeros((2, m)), "knapsack": np.zeros((2, m))}
    for c in range(m):
        own = np.arange(m) == c
        s_inf = _corner_softmax(np.where(own, A, Bd), c)
        s_sup = _corner_softmax(np.where(own, Bd, A), c)
        out["paper"][:, c] = (s_inf @ J_lo, s_sup @ J_hi)
        for row, (s, order) in enumerate(((s_inf, np.argsort(s_inf)), (s_sup, np.argsort(-s_sup)))):
            extra = np.clip(1.0 - J_lo.sum() - np.concatenate([[0], np.cumsum((J_hi - J_lo)[order])[:-1]]), 0, None)
            p = J_lo.copy()
            p[order] += np.minimum(extra, (J_hi - J_lo)[order])
            out["knapsack"][row, c] = s @ p
    return out


@FAST
@given(data=st.data(), m=st.sampled_from([2, 3]), n_cells=st.sampled_from([4, 6, 9]))
def test_at_least_as_tight_as_paper_and_knapsack(data, m, n_cells):
    """Same latent grid, exact product (no rounding of logsumexp): our lower
    bound >= the fractional-knapsack one >= the paper's, upper symmetric.
    var_lo > 0 so that the cell conventions (point masses) play no role."""
    lo_mu, hi_mu, vlo, vhi = data.draw(interval_boxes(m, B=1))
    vlo, vhi = vlo + 0.01, vhi + 0.01
    lo, hi = softmax_gaussian_bounds(lo_mu, hi_mu, vlo, vhi, n_cells=n_cells, n_lse=n_cells ** (m - 1))
    ref = _paper_and_knapsack(lo_mu[0], hi_mu[0], vlo[0], vhi[0], n_cells)
    assert np.all(ref["paper"][0] <= ref["knapsack"][0] + 1e-12)
    assert np.all(ref["knapsack"][1] <= ref["paper"][1] + 1e-12)
    assert np.all(lo[0] >= ref["knapsack"][0] - 1e-9)
    assert np.all(hi[0] <= ref["knapsack"][1] + 1e-9)


def test_strictly_tighter_than_knapsack_on_mean_intervals():
    mu_lo = np.array([[0.0, 0.3, -0.2]])
    mu_hi = mu_lo + 0.5
    var = np.full_like(mu_lo, 0.4)
    lo, hi = softmax_gaussian_bounds(mu_lo, mu_hi, var, var, n_cells=8, n_lse=64)
    ref = _paper_and_knapsack(mu_lo[0], mu_hi[0], var[0], var[0], 8)
    assert np.all(hi[0] - lo[0] < ref["knapsack"][1] - ref["knapsack"][0] - 0.05)


def test_rounding_logsumexp_costs_little():
    mu = np.array([[0.2, -0.1, 0.4, 0.0]])
    var = np.array([[0.3, 0.5, 0.2, 0.4]])
    exact = softmax_gaussian_bounds(mu, mu, var, var, n_cells=24, n_lse=24**3)
    rounded = softmax_gaussian_bounds(mu, mu, var, var, n_cells=24, n_lse=4 * 24)
    gap_exact = (exact[1] - exact[0]).mean()
    gap_rounded = (rounded[1] - rounded[0]).mean()
    assert gap_exact <= gap_rounded + 1e-12 and gap_rounded < 1.3 * gap_exact


# --------------------------------------------------------------------------
# Lemma 12 on its own, and the plumbing
# --------------------------------------------------------------------------


@pytest.mark.parametrize("left_closed", [False, True])
def test_cell_probability_extrema_against_dense_grid(left_closed):
    """inf / sup of P(f in cell) over the (mu, var) rectangle: never outside
    the dense-grid range, and close to it (they are exact)."""
    rng = np.random.default_rng(6)
    for _ in range(300):
        a = rng.normal() * 2
        b = a + abs(rng.normal()) * rng.choice([0.0, 0.1, 1.0, 3.0])
        a = -np.inf if rng.random() < 0.2 else a
        b = np.inf if rng.random() < 0.2 else b
        ml = rng.normal() * 2
        mh = ml + abs(rng.normal()) * rng.choice([0.0, 0.1, 1.0])
        vl = abs(rng.normal()) * rng.choice([0.0, 0.0, 0.01, 1.0])
        vh = vl + abs(rng.normal()) * rng.choice([0.0, 0.1, 1.0, 4.0])
        p_inf, p_sup = sm._cell_prob_bounds(a, b, ml, mh, vl, vh, left_closed=left_closed)
        M = np.linspace(ml, mh, 201)
        if np.isfinite(a) and np.isfinite(b):
            M = np.append(M, np.clip((a + b) / 2, ml, mh))
        MM, VV = np.meshgrid(M, np.linspace(vl, vh, 201))
        inside = (a <= MM) & (MM < b) if left_closed else (a < MM) & (MM <= b)
        P = np.where(VV > 0, sm._gauss_interval_prob(a, b, MM, np.sqrt(VV)), inside)
        assert P.min() >= p_inf - 1e-13 and P.max() <= p_sup + 1e-13
        if vl > 0:  # continuous in (mu, var): the dense grid gets close
            assert P.min() - p_inf < 1e-9 and p_sup - P.max() < 2e-3


def test_one_box_as_1d_arrays_and_empty_batch():
    lo, hi = softmax_gaussian_bounds([0.0, 1.0, 2.0], [0.1, 1.0, 2.0], [0.1, 0.0, 0.2], [0.2, 0.0, 0.2])
    assert lo.shape == hi.shape == (3,)
    lo2, hi2 = softmax_gaussian_bounds(*(np.array([x]) for x in (
        [0.0, 1.0, 2.0], [0.1, 1.0, 2.0], [0.1, 0.0, 0.2], [0.2, 0.0, 0.2])))
    np.testing.assert_array_equal(lo, lo2[0])
    np.testing.assert_array_equal(hi, hi2[0])
    e = np.zeros((0, 3))
    lo, hi = softmax_gaussian_bounds(e, e, e, e)
    assert lo.shape == hi.shape == (0, 3)


def test_chunking_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(7)
    mu = rng.normal(size=(9, 3))
    var = rng.random((9, 3))
    full = softmax_gaussian_bounds(mu, mu + 0.1, var, var + 0.1, n_cells=16)
    monkeypatch.setattr(sm, "_CHUNK_ELEMENTS", 1)  # one box per chunk
    chunked = softmax_gaussian_bounds(mu, mu + 0.1, var, var + 0.1, n_cells=16)
    np.testing.assert_array_equal(full[0], chunked[0])
    np.testing.assert_array_equal(full[1], chunked[1])


def _ok(m=3, B=2):
    z = np.zeros((B, m))
    return [z, z + 1.0, z + 0.1, z + 0.2]


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: a.__setitem__(1, np.zeros((2, 4))), "shape"),
        (lambda a: a.__setitem__(3, np.zeros((3, 3))), "shape"),
        (lambda a: a.__setitem__(0, np.zeros((2, 3, 1))), r"\(B, m\)"),
        (lambda a: a.__setitem__(1, a[1] - 2.0), "mu_lo > mu_hi"),
        (lambda a: a.__setitem__(2, a[2] - 1.0), "negative"),
        (lambda a: a.__setitem__(2, a[3] + 1.0), "var_lo > var_hi"),
        (lambda a: a[0].__setitem__((0, 0), np.nan), "mu_lo contains NaN"),
        (lambda a: a[3].__setitem__((1, 2), np.inf), "var_hi contains NaN or infinite"),
        (lambda a: a.__setitem__(0, "abc"), "mu_lo"),
        (lambda a: a.__setitem__(1, a[1] + 1e101), "not supported"),
    ],
)
def test_bad_intervals_raise(change, match):
    args = _ok()
    change(args)
    with pytest.raises(ValueError, match=match):
        softmax_gaussian_bounds(*args)


def test_bad_parameters_raise():
    args = _ok()
    with pytest.raises(ValueError, match="m >= 2"):
        softmax_gaussian_bounds(*(a[:, :1] for a in args))
    for kw, match in [
        ({"n_cells": 2}, "n_cells"),
        ({"n_cells": 8.5}, "n_cells"),
        ({"n_lse": 1}, "n_lse"),
        ({"tail_sigmas": -1.0}, "tail_sigmas"),
        ({"tail_sigmas": np.nan}, "tail_sigmas"),
        ({"max_elements": 0}, "max_elements"),
    ]:
        with pytest.raises(ValueError, match=match):
            softmax_gaussian_bounds(*args, **kw)
    with pytest.raises(ValueError, match="max_elements"):
        softmax_gaussian_bounds(*_ok(m=6), n_cells=64, n_lse=64**5)


def test_monte_carlo_helper():
    rng = np.random.default_rng(8)
    mu = np.array([[0.0, 1.0], [2.0, 2.0]])
    var = np.array([[0.0, 0.0], [1.0, 1.0]])
    est, se = softmax_gaussian_mc(mu, var, 20_000, rng, chunk=3000)
    np.testing.assert_allclose(est[0], [expit(-1.0), expit(1.0)], atol=1e-12)
    assert np.all(se[0] < 1e-8)  # zero in exact arithmetic; cancellation in the variance
    assert abs(est[1, 0] - 0.5) < 5 * se[1, 0] + 1e-12
    np.testing.assert_allclose(est.sum(1), 1.0)
    with pytest.raises(ValueError):
        softmax_gaussian_mc(mu, -var - 1, 10, rng)


# --------------------------------------------------------------------------
# Slow sweep (``-m slow``)
# --------------------------------------------------------------------------


@pytest.mark.slow
@SLOW
@given(data=st.data(), m=st.sampled_from([2, 3, 4, 5, 6]), grid=grids)
def test_slow_sweep_reference_containment(data, m, grid):
    lo_mu, hi_mu, vlo, vhi = data.draw(interval_boxes(m, max_var=GH_MAX_VAR if m <= 4 else 4.0, B=2))
    n_cells, n_lse = grid
    lo, hi = softmax_gaussian_bounds(lo_mu, hi_mu, vlo, vhi, n_cells=n_cells, n_lse=n_lse)
    check_invariants(lo, hi)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for b in range(len(lo)):
        pts = probe_points(lo_mu[b], hi_mu[b], vlo[b], vhi[b], rng, n_random=2)
        if m <= 4:
            for mu, var in pts:
                assert_contains(lo[b], hi[b], gh_softmax(mu, var), TOL, f"m={m} mu={mu} var={var}")
        else:
            est, se = softmax_gaussian_mc(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]), 20_000, rng)
            assert np.all(est >= lo[b] - 5 * se - 1e-12) and np.all(est <= hi[b] + 5 * se + 1e-12)


# --------------------------------------------------------------------------
# Engine interface: a softmax model over m latent GP outputs
# --------------------------------------------------------------------------


#: Gauss-Hermite nodes per latent output of the engine tests' model, and the
#: quadrature error the model declares (checked against 50 nodes below).
GH_ENGINE_NODES, GH_ENGINE_TOL = 14, 1e-8


def _softmax_model(m=3, seed=0):
    """m independent latent GPs (the per-class latent functions of a
    one-vs-rest GPC with a fixed unit-amplitude kernel, so latent variances
    stay <= 1 and a 14-node Gauss-Hermite rule is accurate to 1e-8), combined
    by a softmax.
    Returns the SoftmaxProbabilities and the model's own proba(X)."""
    import warnings

    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF

    from skgprobust._engine._latent import from_classifier
    from skgprobust._engine._softmax_objectives import SoftmaxProbabilities

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(m, 2)) * 1.5
    X = np.vstack([c + 0.8 * rng.normal(size=(25, 2)) for c in centres])
    y = np.repeat(np.arange(m), 25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gpc = GaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(X, y)
    estimators = gpc.base_estimator_.estimators_
    x_gh, w_gh = np.polynomial.hermite_e.hermegauss(GH_ENGINE_NODES)
    w_gh = w_gh / w_gh.sum()
    grids = np.stack(np.meshgrid(*[x_gh] * m, indexing="ij"), axis=-1).reshape(-1, m)
    W = np.prod(np.stack(np.meshgrid(*[w_gh] * m, indexing="ij"), axis=-1).reshape(-1, m), axis=1)

    def proba(Xq):
        # sklearn's own latent means and variances, then a product Gauss-Hermite rule.
        mv = [e.latent_mean_and_variance(Xq) for e in estimators]
        mu = np.column_stack([a for a, _ in mv])
        sd = np.sqrt(np.maximum(np.column_stack([v for _, v in mv]), 0.0))
        F = mu[:, None, :] + sd[:, None, :] * grids[None]
        F -= F.max(axis=-1, keepdims=True)
        E = np.exp(F)
        return np.einsum("g,ngc->nc", W, E / E.sum(axis=-1, keepdims=True))

    models = from_classifier(gpc)
    outputs = [(mdl, 0, mdl.variance("default")) for mdl in models]
    return SoftmaxProbabilities(outputs, proba, tolerance=GH_ENGINE_TOL), X


def test_softmax_engine_gauss_hermite_model_is_accurate():
    probs, X = _softmax_model()
    P = probs.p(X)
    assert P.shape == (len(X), 3) and np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
    # The tolerance handed to the engine covers the quadrature error.
    for x, p in zip(X[::7], P[::7]):
        mu = np.array([o[0].mean(x[None])[0, 0] for o in probs.outputs])
        var = np.array([o[2].value(x[None])[0] for o in probs.outputs])
        assert np.max(np.abs(gh_softmax(mu, var, 50) - p)) < GH_ENGINE_TOL / 10


@pytest.mark.slow  # ~30 s: runs in CI's slow job
def test_softmax_engine_range_and_certify_are_sound():
    from skgprobust._engine._softmax_objectives import SoftmaxMarginObjective, SoftmaxProbaObjective
    from skgprobust._engine._solve import Budget, solve_range, solve_sign

    from ._helpers import attack

    probs, X = _softmax_model()
    rng = np.random.default_rng(3)
    gamma, eps = 0.3, 0.02
    statuses = []
    for x in X[::15]:
        lo, hi = x - gamma, x + gamma
        objectives = [SoftmaxProbaObjective(probs, c, s) for c in range(3) for s in (+1, -1)]
        out = solve_range(objectives, lo, hi, x, eps, Budget(max_iter=400), rng)
        low, high = out.lower[0::2], -out.lower[1::2]
        assert np.all(out.converged), out
        for c in range(3):
            res = attack(lambda P, c=c: probs.p(P)[:, c], lo, hi, rng, n_samples=2000, n_starts=2)
            assert low[c] <= res.min + 1e-9 and res.max <= high[c] + 1e-9
            # Converged: the incumbents are within epsilon of the bounds.
            assert res.min - low[c] <= eps + 1e-9 and high[c] - res.max <= eps + 1e-9
        # certify the argmax; a counterexample must change the model's argmax.
        c_star = int(np.argmax(probs.p(x[None])[0]))
        margin = SoftmaxMarginObjective(probs, c_star)
        dec = solve_sign(
            margin, lo, hi, x, Budget(max_iter=200), rng,
            changes_decision=lambda z: int(np.argmax(probs.p(z[None])[0])) != c_star,
        )
        statuses.append(dec.status)
        if dec.status == "robust":
            res = attack(lambda P: margin.value(P), lo, hi, rng, n_samples=2000, n_starts=2)
            assert res.min > 0
        elif dec.status == "not_robust":
            assert np.all((dec.counterexample >= lo) & (dec.counterexample <= hi))
            assert int(np.argmax(probs.p(dec.counterexample[None])[0])) != c_star
    assert "robust" in statuses


def test_softmax_probabilities_validation():
    from skgprobust._engine._softmax_objectives import SoftmaxProbabilities

    probs, _ = _softmax_model()
    with pytest.raises(ValueError, match="m >= 2"):
        SoftmaxProbabilities(probs.outputs[:1], probs.proba)
    with pytest.raises(ValueError, match="tolerance"):
        SoftmaxProbabilities(probs.outputs, probs.proba, tolerance=-1.0)
    bad = SoftmaxProbabilities(probs.outputs, lambda X: np.zeros((len(X), 2)))
    with pytest.raises(ValueError, match="proba returned shape"):
        bad.p(np.zeros((3, 2)))


def test_softmax_engine_unbounded_latent_box_gives_trivial_probabilities():
    # A huge box drives the latent mean/variance bounds beyond the
    # discretisation's range (or to inf): [0, 1] is returned, no exception.
    probs, X = _softmax_model()
    lo = np.vstack([X[:1] - 1e200, X[:1] - 0.01])
    hi = np.vstack([X[:1] + 1e200, X[:1] + 0.01])
    p_lo, p_hi, _ = probs.p_box(lo, hi)
    assert np.all(p_lo[0] <= 0.0) and np.all(p_hi[0] >= 1.0)
    p = probs.p(X[:1])[0]
    assert np.all(p_lo[1] <= p) and np.all(p <= p_hi[1]) and np.all(p_hi[1] - p_lo[1] < 0.5)


# --------------------------------------------------------------------------
# The fixed node rule (what SoftmaxGaussianProcessClassifier.predict_proba
# returns) and its exact box bounds
# --------------------------------------------------------------------------


def _rule_boxes(data, m):
    mu0 = np.array(data.draw(st.lists(st.floats(-6, 6), min_size=m, max_size=m)))
    wmu = np.array(data.draw(st.lists(st.sampled_from([0.0, 1e-6, 0.05, 0.5, 2.0]), min_size=m, max_size=m)))
    v0 = np.array(data.draw(st.lists(st.sampled_from([0.0, 1e-8, 0.3, 2.0, 9.0, 40.0]), min_size=m, max_size=m)))
    wv = np.array(data.draw(st.lists(st.sampled_from([0.0, 1e-7, 0.1, 1.0, 5.0]), min_size=m, max_size=m)))
    return mu0, mu0 + wmu, v0, v0 + wv


def _check_rule_box(mu_lo, mu_hi, v_lo, v_hi, rng, n=300):
    """Rule values at corners, mixed corners and interior points of the
    (mu, var) box lie in the bounds; the pairwise margin bound holds."""
    m = len(mu_lo)
    p_lo, p_hi = sm.node_rule_bounds(mu_lo[None], mu_hi[None], v_lo[None], v_hi[None])
    t = rng.random((n, 2 * m))
    t[: n // 3] = np.round(t[: n // 3])  # corners and mixed corners
    mu = mu_lo + t[:, :m] * (mu_hi - mu_lo)
    var = v_lo + t[:, m:] * (v_hi - v_lo)
    R = sm.node_rule_value(mu, var)
    assert np.all(p_lo[0] <= R.min(0) + 1e-12) and np.all(R.max(0) <= p_hi[0] + 1e-12)
    for c in range(m):
        low = sm.node_rule_margin_lower(mu_lo[None], mu_hi[None], v_lo[None], v_hi[None], c)[0]
        margin = R[:, c] - np.delete(R, c, axis=1).max(axis=1)
        assert low <= margin.min() + 1e-12
        assert low >= p_lo[0, c] - np.delete(p_hi[0], c).max() - 1e-12  # never looser than separate bounds


@settings(parent=FAST, max_examples=12)  # the slow sweep below runs more
@given(data=st.data(), m=st.sampled_from([2, 3, 4, 7, 10]))
def test_node_rule_bounds_contain_rule_values(data, m):
    mu_lo, mu_hi, v_lo, v_hi = _rule_boxes(data, m)
    _check_rule_box(mu_lo, mu_hi, v_lo, v_hi, np.random.default_rng(data.draw(st.integers(0, 2**16))))


@pytest.mark.slow
@SLOW
@given(data=st.data(), m=st.sampled_from([2, 3, 4, 5, 6, 8, 10]))
def test_slow_sweep_node_rule_bounds(data, m):
    mu_lo, mu_hi, v_lo, v_hi = _rule_boxes(data, m)
    _check_rule_box(mu_lo, mu_hi, v_lo, v_hi, np.random.default_rng(data.draw(st.integers(0, 2**16))), n=500)


def test_node_rule_bounds_exact_at_points_and_converge():
    rng = np.random.default_rng(5)
    for m in (2, 3, 6, 10):
        mu = rng.normal(size=m) * 2
        var = rng.uniform(0, 5, size=m)
        R = sm.node_rule_value(mu[None], var[None])[0]
        p_lo, p_hi = sm.node_rule_bounds(mu[None], mu[None], var[None], var[None])
        assert np.all(p_lo[0] <= R) and np.all(R <= p_hi[0]) and np.max(p_hi - p_lo) <= 3 * sm.RULE_MARGIN
        widths = []
        for h in (1e-1, 1e-2, 1e-3):
            p_lo, p_hi = sm.node_rule_bounds((mu - h)[None], (mu + h)[None], (var * (1 - h))[None], (var * (1 + h))[None])
            widths.append(np.max(p_hi - p_lo))
        assert widths[2] < 0.02 * widths[0]  # first order in the box


def test_node_rule_extreme_latents_stay_sound_and_finite():
    rng = np.random.default_rng(6)
    for m in (3, 10):
        mu_lo = np.array([-800.0, 700.0] + [0.0] * (m - 2))
        mu_hi = mu_lo + np.array([1e3, 1e-3] + [1.0] * (m - 2))
        v_lo, v_hi = np.zeros(m), np.full(m, 1e4)
        p_lo, p_hi = sm.node_rule_bounds(mu_lo[None], mu_hi[None], v_lo[None], v_hi[None])
        assert np.all(np.isfinite(p_lo)) and np.all(np.isfinite(p_hi))
        _check_rule_box(mu_lo, mu_hi, v_lo, v_hi, rng)


def test_node_rule_is_deterministic_and_batch_independent():
    rng = np.random.default_rng(7)
    for m in (3, 10):
        Z, W = sm.node_rule(m)
        assert Z.shape == (4096, m) or m <= 3
        assert np.all(W > 0) and abs(W.sum() - 1) < 1e-12
        mu, var = rng.normal(size=(50, m)), rng.uniform(0, 4, size=(50, m))
        full = sm.node_rule_value(mu, var)
        for i in (0, 17, 49):
            np.testing.assert_array_equal(sm.node_rule_value(mu[i : i + 1], var[i : i + 1])[0], full[i])


@pytest.mark.parametrize("m", [3, 10])
def test_node_rule_margin_competitor_subset_matches_full_pairs(m):
    """``competitors`` bounds only the listed pairs: the full call's columns
    up to the node sum's order (S u = 4.5e-13 at most, inside RULE_MARGIN;
    the latent branch and bound re-bounds the unproven pairs only), each a
    lower bound of R_c - R_k at sampled points of the box, and bad subsets
    raise."""
    rng = np.random.default_rng(m)
    B = 3
    mu_lo = rng.normal(size=(B, m))
    mu_hi = mu_lo + rng.uniform(0, 0.5, size=(B, m))
    v_lo = rng.uniform(0.1, 2.0, size=(B, m))
    v_hi = v_lo + rng.uniform(0, 1.0, size=(B, m))
    c = 1
    others = [k for k in range(m) if k != c]
    low, pairs = sm.node_rule_margin_lower(mu_lo, mu_hi, v_lo, v_hi, c, return_pairs=True)
    sub = others[::-2]  # a reversed subset
    low_s, pairs_s = sm.node_rule_margin_lower(mu_lo, mu_hi, v_lo, v_hi, c, return_pairs=True, competitors=sub)
    np.testing.assert_allclose(pairs_s, pairs[:, [others.index(k) for k in sub]], rtol=0, atol=4096 * 2.0**-53)
    np.testing.assert_array_equal(low_s, pairs_s.min(axis=1))
    assert np.all(low <= low_s + 4096 * 2.0**-53)
    for b in range(B):
        t = rng.random((100, m))
        R = sm.node_rule_value(mu_lo[b] + t * (mu_hi[b] - mu_lo[b]), v_lo[b] + rng.random((100, m)) * (v_hi[b] - v_lo[b]))
        assert np.all(R[:, [c]] - R[:, sub] >= pairs_s[b])
    for bad in ([], [c], [m]):
        with pytest.raises(ValueError, match="competitors"):
            sm.node_rule_margin_lower(mu_lo, mu_hi, v_lo, v_hi, c, competitors=bad)


@pytest.mark.parametrize("m", [3, 10])
def test_node_intervals_equal_the_selection_formula_bitwise(m):
    """_node_intervals forms mu + s z+ + s' z- (one product an exact zero;
    for an antithetic rule the second half as mu - Q from the first half's
    products) instead of mu + where(z >= 0, s, s') z: the same numbers bit for bit,
    zero variances and zero nodes included (up to the sign of a zero, which
    exp does not see), and the shifted exponentials agree bitwise."""
    rng = np.random.default_rng(m)
    Z, _ = sm.node_rule(m)
    B = 5
    mu_lo = rng.normal(0, 3, (B, m))
    mu_hi = mu_lo + rng.uniform(0, 2, (B, m))
    v_lo = rng.uniform(0, 4, (B, m))
    v_hi = v_lo + rng.uniform(0, 3, (B, m))
    v_lo[0] = 0.0
    v_lo[1, 0] = v_hi[1, 0] = 0.0
    s_lo, s_hi = np.sqrt(v_lo), np.sqrt(v_hi)
    pos = Z[None] >= 0
    ref_lo = mu_lo[:, None, :] + np.where(pos, s_lo[:, None, :], s_hi[:, None, :]) * Z[None]
    ref_hi = mu_hi[:, None, :] + np.where(pos, s_hi[:, None, :], s_lo[:, None, :]) * Z[None]
    assert (sm._split_nodes(Z)[2] > 0) == (m > 3)  # the antithetic path (half the products) beyond 3
    f_lo, f_hi = sm._node_intervals(mu_lo, mu_hi, v_lo, v_hi, Z)
    assert np.array_equal(f_lo, ref_lo) and np.array_equal(f_hi, ref_hi)
    shift = ref_hi.max(axis=2, keepdims=True)
    e_lo, e_hi = sm._exp_shifted(f_lo, f_hi)
    assert np.array_equal(e_lo, np.exp(ref_lo - shift))
    assert np.array_equal(e_hi, np.maximum(np.exp(ref_hi - shift), sm._TINY))
