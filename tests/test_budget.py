"""Budgets that hold: ``time_limit`` bounds each row's wall time (setup, local
search and branch and bound together) and every exit leaves valid bounds.

The machine may be loaded (other processes share its cores), so the time
checks allow time_limit * 1.1 + 0.05 s plus a little scheduling slack, and
the synthetic objectives sleep instead of computing (sleeping costs the same
wall time whatever the load).
"""

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from skgprobust._engine._bnb import BranchAndBound
from skgprobust._engine._search import local_search, polish
from skgprobust._engine._solve import Budget, solve_deviation, solve_range, solve_sign

from ._helpers import BOUND_TOL

LIMIT = 0.5
#: The contract (10% + 50 ms) and a little slack for a loaded machine.
ALLOWED = 1.1 * LIMIT + 0.05 + 0.03


class SlowQuadratic:
    """f(x) = sign * ||x - c||^2 + offset, whose ``bound`` sleeps ``box_cost``
    per box (and ``value_and_grad`` ``grad_cost`` per call). The bound is the
    exact minimum over the box minus half the box's squared diameter, so
    branch and bound never converges at epsilon = 0 but every bound is valid."""

    def __init__(self, c, offset=0.0, box_cost=0.05, grad_cost=0.0, sign=1.0):
        self.c, self.offset, self.sign = np.asarray(c, float), offset, sign
        self.box_cost, self.grad_cost = box_cost, grad_cost
        self.n_boxes = 0

    def value(self, X):
        return self.sign * np.sum((np.atleast_2d(X) - self.c) ** 2, axis=1) + self.offset

    def value_and_grad(self, X):
        time.sleep(self.grad_cost)
        X = np.atleast_2d(X)
        return self.value(X), 2.0 * self.sign * (X - self.c)

    def _minimiser(self, lo, hi):
        if self.sign > 0:
            return np.clip(self.c, lo, hi)
        return np.where(np.abs(lo - self.c) > np.abs(hi - self.c), lo, hi)  # farthest corner

    def bound(self, lo, hi):
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        time.sleep(self.box_cost * len(lo))
        self.n_boxes += len(lo)
        p = self._minimiser(lo, hi)
        lower = self.value(p) - 0.5 * np.sum((hi - lo) ** 2, axis=1)
        return SimpleNamespace(lower=lower, argmin=p, score=hi - lo)

    def true_min(self, lo, hi):
        return float(self.value(self._minimiser(lo, hi)[None])[0])


def _box(d=3):
    return -np.ones(d), np.ones(d), np.zeros(d)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# -- (1) expensive boxes: the limit holds, bounds stay valid, B&B runs ---------


def test_solve_range_holds_time_limit_with_slow_boxes():
    lo, hi, x0 = _box()
    fs = [SlowQuadratic([0.3, -0.2, 0.1]), SlowQuadratic([-0.5, 0.4, 0.0], offset=1.0)]
    budget = Budget(None, LIMIT)
    out, wall = _timed(lambda: solve_range(fs, lo, hi, x0, 0.0, budget, np.random.default_rng(0)))
    assert wall <= ALLOWED and out.time <= ALLOWED, (wall, out.time)
    assert out.n_iter > 0
    for f, lower, x in zip(fs, out.lower, out.argmin):
        assert lower <= f.true_min(lo, hi) + BOUND_TOL
        assert np.all((lo <= x) & (x <= hi))
    assert not out.converged.any()


def test_solve_sign_holds_time_limit_with_slow_boxes():
    lo, hi, x0 = _box()
    # min is 0.01 > 0 at c, but the relaxation needs many splits to prove it.
    f = SlowQuadratic([0.9, 0.9, 0.9], offset=0.01)
    budget = Budget(None, LIMIT)
    out, wall = _timed(lambda: solve_sign(f, lo, hi, x0, budget, np.random.default_rng(0), lambda x: False))
    assert wall <= ALLOWED and out.time <= ALLOWED, (wall, out.time)
    assert out.status == "unknown" and out.n_iter > 0
    assert out.bound <= f.true_min(lo, hi) + BOUND_TOL


def test_solve_deviation_holds_time_limit_with_slow_boxes():
    lo, hi, x0 = _box()
    c = np.array([0.9, 0.9, 0.9])
    fmin, fmax = SlowQuadratic(c), SlowQuadratic(c, sign=-1.0)  # the mean and its negation
    center = fmin.value(x0[None])  # 2.43; the mean ranges over [0, 10.83]
    true_dev = max(center[0] - fmin.true_min(lo, hi), -fmax.true_min(lo, hi) - center[0])
    delta = true_dev + 0.1  # robust, but far too tight to prove in the time
    budget = Budget(None, LIMIT)
    out, wall = _timed(lambda: solve_deviation(
        [(fmin, fmax)], center, lo, hi, x0, delta, np.inf, budget, np.random.default_rng(0),
        lambda x: abs(fmin.value(x[None])[0] - center[0]),
    ))
    assert wall <= ALLOWED and out.time <= ALLOWED, (wall, out.time)
    assert out.status == "unknown" and out.n_iter > 0
    assert out.bound >= true_dev - BOUND_TOL  # an upper bound of the worst deviation


def test_time_limit_counts_the_setup():
    """The row's clock starts with its Budget: time spent before the solver
    (e.g. the estimator's per-row setup) is taken from the same limit."""
    lo, hi, x0 = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1])
    budget = Budget(None, LIMIT)
    time.sleep(0.3)
    out, _ = _timed(lambda: solve_range([f], lo, hi, x0, 0.0, budget, np.random.default_rng(0)))
    assert budget.elapsed() <= ALLOWED and out.time <= ALLOWED
    assert out.lower[0] <= f.true_min(lo, hi) + BOUND_TOL


def test_root_is_bounded_even_when_the_time_is_up():
    """A deadline in the past still gives a valid (root) bound and no split."""
    lo, hi, x0 = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1], box_cost=0.0)
    budget = Budget(None, 1e-9)
    out = solve_range([f], lo, hi, x0, 0.0, budget, np.random.default_rng(0))
    assert f.n_boxes == 1 and out.n_iter == 0
    assert np.isfinite(out.lower[0]) and out.lower[0] <= f.true_min(lo, hi)


def test_step_shrinks_the_batch_to_the_deadline():
    lo, hi, _ = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1], box_cost=0.02)
    state = BranchAndBound(f, lo, hi, batch_size=16)
    assert state.split_time >= 0.04
    # Room for about 3 splits of 2 x 0.02 s: not the whole batch of 16.
    t0 = time.perf_counter()
    k = state.step(deadline=t0 + 0.13)
    assert 1 <= k <= 3 and time.perf_counter() - t0 <= 0.13 + 0.05
    # Deadline passed: nothing is popped, the state is unchanged and valid.
    n_open, lower = len(state._heap), state.lower
    assert state.step(deadline=time.perf_counter() - 1.0) == 0
    assert len(state._heap) == n_open and state.lower == lower
    # One split does not fit but ends within the grace: it is done.
    assert state.step(deadline=time.perf_counter() + 0.01, grace=0.2) == 1
    # ... and not when it would overrun the grace.
    assert state.step(deadline=time.perf_counter() + 0.01, grace=0.0) == 0


def test_step_without_deadline_is_unchanged():
    """No deadline: the same boxes, bounds and incumbents as a plain run."""
    lo, hi, _ = _box()
    a = BranchAndBound(SlowQuadratic([0.3, -0.2, 0.1], box_cost=0.0), lo, hi)
    b = BranchAndBound(SlowQuadratic([0.3, -0.2, 0.1], box_cost=0.0), lo, hi)
    for _ in range(5):
        assert a.step() == b.step(deadline=time.perf_counter() + 60.0, grace=1.0)
    assert a.lower == b.lower and a.best_f == b.best_f and a.n_iter == b.n_iter


# -- (2) local search capped -----------------------------------------------------


def test_slow_local_search_leaves_time_for_branch_and_bound():
    lo, hi, x0 = _box()
    # 30 gradient steps would take 30 * 0.1 = 3 s, six times the limit.
    f = SlowQuadratic([0.3, -0.2, 0.1], box_cost=0.01, grad_cost=0.1)
    budget = Budget(None, LIMIT)
    out, wall = _timed(lambda: solve_range([f], lo, hi, x0, 0.0, budget, np.random.default_rng(0)))
    assert wall <= ALLOWED, wall
    assert out.n_iter > 0
    assert out.lower[0] <= f.true_min(lo, hi) + BOUND_TOL


def test_local_search_stops_at_its_deadline():
    lo, hi, x0 = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1], grad_cost=0.05)
    t0 = time.perf_counter()
    x, fx = local_search(f, lo, hi, x0[None], deadline=t0 + 0.12)
    assert time.perf_counter() - t0 <= 0.12 + 0.05
    assert np.all((lo <= x) & (x <= hi)) and fx == pytest.approx(f.value(x[None])[0])
    # A deadline already passed: no gradient step, the starts are evaluated.
    x, fx = local_search(f, lo, hi, x0[None], deadline=time.perf_counter() - 1.0)
    assert np.array_equal(x, x0) and fx == f.value(x0[None])[0]


def test_local_search_without_deadline_is_unchanged():
    lo, hi, x0 = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1])
    a = local_search(f, lo, hi, x0[None])
    b = local_search(f, lo, hi, x0[None], deadline=time.perf_counter() + 60.0)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]


# -- (3) end to end on a real estimator -----------------------------------------


def test_regressor_std_range_rows_hold_time_limit():
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessRegressor

    rng = np.random.default_rng(0)
    d, n = 4, 300
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    reg = RobustGaussianProcessRegressor(
        kernel=C(1.0) * RBF(np.ones(d)) + WhiteKernel(1e-2), optimizer=None
    ).fit(X, y)
    Xt = X[:2]  # two rows: each holds its own limit, and the setup is shared
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = reg.prediction_range(Xt, 0.2, statistic="std", epsilon=1e-12, time_limit=LIMIT, random_state=0)
    wall = time.perf_counter() - t0
    assert np.all(r.time <= ALLOWED), r.time
    assert np.all(r.time >= 0.5 * LIMIT), r.time  # it did use its time
    assert wall / len(Xt) <= ALLOWED + 0.2, wall  # + per-call setup shared by the rows
    assert np.all(r.n_iter > 0)
    _, std = reg.predict(np.vstack([Xt, rng.uniform(Xt[0] - 0.2, Xt[0] + 0.2, size=(200, d))]), return_std=True)
    row0 = std[[0] + list(range(len(Xt), len(Xt) + 200))]  # row 0 and the samples in its box
    assert r.min_lower[0, 0] <= row0.min() + BOUND_TOL
    assert r.max_upper[0, 0] >= row0.max() - BOUND_TOL


def test_budget_warning_points_at_the_callers_line():
    """BudgetExhaustedWarning names the user's file (the first frame outside
    the package), for ranges and certify, regressor and classifier alike."""
    from sklearn.gaussian_process.kernels import RBF

    from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (20, 2))
    y = np.sin(3 * X[:, 0])
    reg = RobustGaussianProcessRegressor(RBF(0.3), optimizer=None).fit(X, y)
    clf = RobustGaussianProcessClassifier(RBF(0.3), optimizer=None).fit(X, y > 0)
    calls = [
        lambda: reg.prediction_range(X[:1], 0.5, epsilon=1e-9, max_iter=1),
        lambda: clf.prediction_range(X[:1], 0.5, epsilon=1e-9, max_iter=1),
        lambda: clf.certify(X[:4], 0.3, max_iter=1),
    ]
    for call in calls:
        with pytest.warns(BudgetExhaustedWarning) as record:
            call()
        assert {w.filename for w in record if w.category is BudgetExhaustedWarning} == {__file__}


def test_polish_stops_at_its_deadline_and_never_worsens():
    lo, hi, x0 = _box()
    f = SlowQuadratic([0.3, -0.2, 0.1], sign=-1.0, grad_cost=0.05)  # concave: the farthest corner
    t0 = time.perf_counter()
    x, fx = polish(f, lo, hi, x0, f.value(x0[None])[0], deadline=t0 + 0.12)
    assert time.perf_counter() - t0 <= 0.12 + 0.05 + 0.03
    assert np.all((lo <= x) & (x <= hi)) and fx == f.value(x[None])[0] and fx <= f.value(x0[None])[0]
    # Deadline already passed: the start comes back unchanged.
    x, fx = polish(f, lo, hi, x0, 7.0, deadline=time.perf_counter() - 1.0)
    assert np.array_equal(x, x0) and fx == 7.0


def test_local_search_stops_when_it_stalls():
    """``stall_tol``: the search ends once its best value has improved by less
    than stall_tol over STALL_STEPS steps; it returns an evaluated point of
    the box with its value, within stall_tol-scale of the full search on a
    smooth objective, after fewer evaluations. stall_tol=None is the full
    search (bitwise)."""
    from skgprobust._engine._search import STALL_STEPS

    class Counting:
        def __init__(self, f):
            self.f, self.n = f, 0

        def value(self, X):
            return self.f.value(X)

        def value_and_grad(self, X):
            self.n += 1
            return self.f.value_and_grad(X)

    lo, hi, x0 = _box()
    base = SlowQuadratic([0.3, -0.2, 0.1])
    full, stalled = Counting(base), Counting(base)
    xa, fa = local_search(full, lo, hi, x0[None])
    xb, fb = local_search(stalled, lo, hi, x0[None], stall_tol=1e-3)
    assert full.n == 30 and STALL_STEPS < stalled.n < full.n
    assert np.all((lo <= xb) & (xb <= hi)) and fb == base.value(xb[None])[0]
    assert fa <= fb <= fa + 1e-2
    xc, fc = local_search(Counting(base), lo, hi, x0[None], stall_tol=None)
    assert np.array_equal(xa, xc) and fa == fc
