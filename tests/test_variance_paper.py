"""The paper's variance bounds (Props. 5-6, cvxpy + ECOS) as a reference method.

Everything is compared with sklearn's own variance: the regressor's
``kernel_.diag(P) - ||solve_triangular(L_, kernel_(P, X_train_).T)||^2`` and
the binary classifier's ``base_estimator_.latent_mean_and_variance(P)[1]``.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.linalg import solve_triangular
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    ExpSineSquared,
    Matern,
    WhiteKernel,
)

from skgprobust import UnsupportedKernelError
from skgprobust.kernels import make_adapter
from skgprobust._bounds._variance import LatentVariance
from skgprobust._bounds._variance_paper import PaperLatentVariance

TOL = 1e-9
N_SAMPLES = 2000


def _data(seed, N, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    return rng, X


def _kernel(name, d):
    if name == "rbf":
        return RBF([0.8] * d) if d > 1 else RBF(0.8)
    if name == "matern":
        return Matern(length_scale=1.1, nu=2.5)
    return ConstantKernel(2.0) * RBF(0.7) + WhiteKernel(0.05)


def regressor(seed, N, d, kname):
    rng, X = _data(seed, N, d)
    y = np.sin(2 * X).sum(1) + 0.1 * rng.normal(size=N)
    gpr = GaussianProcessRegressor(_kernel(kname, d), alpha=1e-2, optimizer=None).fit(X, y)

    def var(P):
        v = solve_triangular(gpr.L_, gpr.kernel_(P, gpr.X_train_).T, lower=True)
        return gpr.kernel_.diag(P) - np.einsum("ij,ij->j", v, v)

    return rng, X, var, (make_adapter(gpr.kernel_, gpr.X_train_), gpr.L_, None)


def classifier(seed, N, d, kname):
    rng, X = _data(seed, N, d)
    y = (X[:, 0] + 0.3 * rng.normal(size=N) > 0).astype(int)
    gpc = GaussianProcessClassifier(_kernel(kname, d), optimizer=None).fit(X, y)
    base = gpc.base_estimator_

    def var(P):
        return base.latent_mean_and_variance(P)[1]

    return rng, X, var, (make_adapter(base.kernel_, base.X_train_), base.L_, base.W_sr_)


def make(model, **kw):
    adapter, L, col = model[3]
    return PaperLatentVariance(adapter, L, col, **kw)


def random_boxes(rng, X, n):
    d = X.shape[1]
    centre = X[rng.integers(len(X), size=n)] + 0.5 * rng.normal(size=(n, d))
    h = rng.uniform(0.02, 0.5, size=(n, 1)) * rng.uniform(0.5, 1.0, size=(n, d))
    return centre - h, centre + h


def samples(rng, lo, hi, n=N_SAMPLES):
    d = len(lo)
    bits = (np.arange(2**d)[:, None] >> np.arange(d)[None]) & 1
    return np.vstack([lo + (hi - lo) * rng.random((n, d)), np.where(bits == 1, hi, lo), 0.5 * (lo + hi)[None]])


def assert_contains(var, vb, lo, hi, rng):
    assert np.all(np.isfinite(vb.lower)) and np.all(np.isfinite(vb.upper))
    assert np.all(vb.lower <= vb.upper)
    for b in range(len(lo)):
        assert np.all(vb.arg_min[b] >= lo[b]) and np.all(vb.arg_min[b] <= hi[b])
        assert np.all(vb.arg_max[b] >= lo[b]) and np.all(vb.arg_max[b] <= hi[b])
        P = np.vstack([samples(rng, lo[b], hi[b]), vb.arg_min[b], vb.arg_max[b]])
        v = var(P)
        assert v.min() >= vb.lower[b] - TOL, (b, v.min(), vb.lower[b])
        assert v.max() <= vb.upper[b] + TOL, (b, v.max(), vb.upper[b])


CASES = [
    (regressor, 0, 12, 1, "rbf"),
    (regressor, 1, 25, 2, "matern"),
    (regressor, 2, 40, 3, "crbf_white"),
    (classifier, 3, 15, 1, "matern"),
    (classifier, 4, 30, 2, "rbf"),
    (classifier, 5, 40, 3, "crbf_white"),
]


@pytest.mark.parametrize("factory,seed,N,d,kname", CASES)
def test_paper_bounds_contain_sklearn_variance(factory, seed, N, d, kname):
    model = factory(seed, N, d, kname)
    rng, X, var = model[:3]
    pv = make(model)
    lo, hi = random_boxes(rng, X, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the solver must not fail here
        vb = pv.bounds(lo, hi)
    assert_contains(var, vb, lo, hi, rng)
    # The incumbents are where the bounds are attained up to the relaxation:
    # the variance there lies inside the bounds (checked above) and the
    # upper bound's incumbent is a good point, not an arbitrary one.
    assert np.all(var(vb.arg_max) >= vb.lower)


def test_range_lps_subset_is_sound():
    model = regressor(7, 30, 2, "rbf")
    rng, X, var = model[:3]
    lo, hi = random_boxes(rng, X, 2)
    full = make(model).bounds(lo, hi)
    part = make(model, range_lps=3, psi_tangents=2, phi_tangents=3).bounds(lo, hi)
    assert_contains(var, part, lo, hi, rng)
    # Fewer range LPs: interval ranges elsewhere, a weaker lower bound.
    assert np.all(part.lower <= full.lower + 1e-6)


def test_incumbent_matches_qp_solution():
    model = classifier(8, 20, 2, "rbf")
    rng, X, var = model[:3]
    pv = make(model)
    lo, hi = random_boxes(rng, X, 2)
    vb = pv.bounds(lo, hi)
    for b in range(2):
        P = samples(rng, lo[b], hi[b])
        # The QP minimiser's x is near-optimal for the maximum of var.
        assert var(vb.arg_max[b : b + 1])[0] >= var(P).max() - 0.5 * (vb.upper[b] - vb.lower[b])


# ---------------------------------------------------------------------------
# Solver failures: never an exception, never NaN, always valid
# ---------------------------------------------------------------------------


def _failing(problem, **kw):
    raise cp.SolverError("injected failure")


def _garbage(seed):
    rng = np.random.default_rng(seed)

    def solve(problem, **kw):
        problem.solve(solver=cp.ECOS)
        for con in problem.constraints:
            for dv in con.dual_variables:
                dv.save_value(rng.normal(scale=10.0, size=dv.shape))
        for v in problem.variables():
            v.save_value(rng.normal(scale=10.0, size=v.shape))

    return solve


def _nan_duals(problem, **kw):
    problem.solve(solver=cp.ECOS)
    for con in problem.constraints:
        for dv in con.dual_variables:
            dv.save_value(np.full(dv.shape, np.nan))


@pytest.mark.parametrize(
    "kw,fallback",
    [
        (dict(solver=_failing), True),
        (dict(solver="NO_SUCH_SOLVER"), True),
        (dict(solver_opts={"max_iters": 1}), True),
        (dict(solver=_nan_duals), True),
        (dict(solver=_garbage(0)), False),
    ],
    ids=["raises", "bad-name", "ecos-1-iter", "nan-duals", "garbage-duals"],
)
@pytest.mark.parametrize("factory", [regressor, classifier])
def test_solver_failure_gives_valid_bounds_and_warning(factory, kw, fallback):
    model = factory(11, 15, 2, "crbf_white")
    rng, X, var = model[:3]
    lo, hi = random_boxes(rng, X, 2)
    pv = make(model, range_lps=2, **kw)
    with pytest.warns(RuntimeWarning, match="variance_bound='paper'"):
        vb = pv.bounds(lo, hi)
    assert_contains(var, vb, lo, hi, rng)
    default = LatentVariance.bounds(pv, lo, hi)
    if fallback:
        np.testing.assert_array_equal(vb.lower, default.lower)
        np.testing.assert_array_equal(vb.upper, default.upper)


def test_monkeypatched_solve_failure(monkeypatch):
    model = classifier(12, 12, 1, "rbf")
    rng, X, var = model[:3]
    lo, hi = random_boxes(rng, X, 2)
    pv = make(model)
    monkeypatch.setattr(cp.Problem, "solve", lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.warns(RuntimeWarning, match="boom"):
        vb = pv.bounds(lo, hi)
    assert_contains(var, vb, lo, hi, rng)


def test_range_lp_failure_uses_interval_ranges():
    model = regressor(13, 15, 1, "rbf")
    rng, X, var = model[:3]
    lo, hi = random_boxes(rng, X, 1)
    pv = make(model)
    calls = {"n": 0}

    def flaky(problem, **kw):
        calls["n"] += 1
        if problem is pv._problems["rlp"] and calls["n"] % 2:
            raise cp.SolverError("flaky")
        problem.solve(solver=cp.ECOS)

    pv.solver = flaky
    with pytest.warns(RuntimeWarning, match="range LPs failed"):
        vb = pv.bounds(lo, hi)
    assert_contains(var, vb, lo, hi, rng)


# ---------------------------------------------------------------------------
# Convergence and the certificate
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [regressor, classifier])
def test_bounds_converge_as_boxes_shrink(factory):
    model = factory(21, 20, 2, "rbf")
    rng, X, var = model[:3]
    pv = make(model)
    c = X[3] + 0.1
    hs = [0.4, 0.1, 0.025, 0.00625]
    lo = np.array([c - h for h in hs])
    hi = np.array([c + h for h in hs])
    vb = pv.bounds(lo, hi)
    gaps = vb.upper - vb.lower
    assert np.all(np.diff(gaps) < 0), gaps
    # The gap contains the true range of var over the box (O(h)); what the
    # relaxations add on top of it is O(h^2): a 4x smaller box divides the
    # excess by well over 4 once the box is small.
    excess = []
    for b in range(len(hs)):
        v = var(samples(rng, lo[b], hi[b]))
        assert vb.lower[b] <= v.min() + TOL and v.max() <= vb.upper[b] + TOL
        excess.append((v.min() - vb.lower[b]) + (vb.upper[b] - v.max()))
    excess = np.array(excess)
    assert np.all(np.diff(excess) < 0), excess
    assert excess[-1] < excess[-2] / 8, excess
    assert gaps[-1] < 2e-2 * gaps[0], gaps
    assert excess[-1] < 1e-3 * excess[0], excess


def test_certificate_close_to_solver_objective():
    # With accurate duals the float64 dual certificate matches the solver's
    # objective (the bound is not loosened by the construction).
    model = regressor(31, 20, 2, "matern")
    rng, X, var = model[:3]
    pv = make(model)
    lo, hi = random_boxes(rng, X, 1)
    pv._problems = pv._build()
    bd = pv._box_data(lo[0], hi[0])
    pv._set(bd)
    qlow, mag, x, obj, r0 = pv._qp_lower(bd)
    assert qlow <= obj + 1e-9
    assert obj - qlow < 1e-5 * (1 + abs(obj))
    # Range LPs and LP (20), whose certificate uses cvxpy's sign convention
    # for the equality r_hat = V^T r: a wrong sign would show up as a gap.
    hL, hU = pv._ranges(bd, 0, pytest.fail)
    i = int(np.argmax(pv.lam))
    assert pv._range_lp(bd, pv.V[:, i]) == pytest.approx(hL[i], abs=1e-12)
    assert pv._problems["rlp"].value - hL[i] < 1e-6 * (1 + abs(hL[i]))
    mlow, mag, x, obj, r0 = pv._final_lp(bd, pv.lam, hL, hU)
    assert mlow <= obj + 1e-9
    assert obj - mlow < 1e-5 * (1 + abs(obj))


def test_empty_and_point_boxes():
    model = regressor(41, 10, 2, "rbf")
    rng, X, var = model[:3]
    pv = make(model)
    vb = pv.bounds(np.zeros((0, 2)), np.zeros((0, 2)))
    assert vb.lower.shape == (0,)
    # A degenerate (zero-width) box, including one on a training input.
    lo = np.vstack([X[0], X[1] + 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a degenerate LP may fall back
        vb = pv.bounds(lo, lo.copy())
    v = var(lo)
    assert np.all(vb.lower <= v + TOL) and np.all(v <= vb.upper + TOL)


# ---------------------------------------------------------------------------
# Unsupported kernels
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel,name",
    [
        (DotProduct(1.0), "DotProduct"),
        (ExpSineSquared(1.0, 2.0), "ExpSineSquared"),
        (RBF(1.0) * DotProduct(1.0), "DotProduct"),
        (RBF(1.0) + ConstantKernel(1.0), "ConstantKernel"),
        (RBF(1.0) + Matern(1.0, nu=1.5), "Matern"),
        (RBF(1.0) ** 0.5, "0.5"),  # log-domain power: its own rounding, which the reference does not read
        ((ConstantKernel(2.0) * RBF(1.0)) ** 2, "RBF"),  # ScaledPowerAdapter: a rounded c^e
    ],
)
def test_unsupported_kernel_raises(kernel, name):
    """An unsupported kernel raises UnsupportedKernelError (was a bare
    NotImplementedError before session 27), naming the kernel."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 1))
    gpr = GaussianProcessRegressor(kernel, alpha=1e-1, optimizer=None).fit(X, X[:, 0])
    with pytest.raises(UnsupportedKernelError, match=name):
        PaperLatentVariance(make_adapter(gpr.kernel_, gpr.X_train_), gpr.L_)
