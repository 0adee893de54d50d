"""Unit tests of the branch-and-bound engine and its controllers on small
synthetic objectives whose minima and bounds are known by hand.

Only behaviour that does not depend on batch sizes or timing is asserted:
budgets are ``max_iter`` budgets, single splits use ``step(max_boxes=1)``.
"""

import numpy as np
import pytest

from skgprobust._bounds._mean import BoxBound
from skgprobust._engine._bnb import BranchAndBound
from skgprobust._engine._search import local_search, polish
from skgprobust._engine._solve import (
    DEFAULT_MAX_ITER,
    Budget,
    solve_deviation,
    solve_range,
    solve_sign,
)

from ._helpers import BOUND_TOL

# --------------------------------------------------------------------------
# Synthetic objectives
# --------------------------------------------------------------------------


class Recorder:
    """Base: keeps every box handed to ``bound`` and the bound returned, so
    tests can rebuild the tree (parents, leaves) from the outside."""

    def __init__(self):
        self.calls = []  # list of (lo (B, d), hi (B, d), lower (B,))
        self.state = None  # set by the test to check settling at split time

    def _record(self, lo, hi, lower):
        self.calls.append((np.array(lo, float), np.array(hi, float), np.array(lower, float)))

    def boxes(self):
        """Every bounded box as a list of (lo tuple, hi tuple, lower)."""
        return [(tuple(l), tuple(h), float(b)) for lo, hi, lb in self.calls for l, h, b in zip(lo, hi, lb)]

    def parents(self):
        """Boxes that were split: the union of each consecutive child pair
        of every call after the root's."""
        out = set()
        for lo, hi, _ in self.calls[1:]:
            for m in range(0, len(lo), 2):
                out.add((tuple(np.minimum(lo[m], lo[m + 1])), tuple(np.maximum(hi[m], hi[m + 1]))))
        return out

    def leaves(self):
        """Bounded boxes never split, with their lower bounds."""
        split = self.parents()
        return [(l, h, b) for l, h, b in self.boxes() if (l, h) not in split]

    def value_and_grad(self, X):
        return self.value(X), self.grad(X)


class Lipschitz(Recorder):
    """f with a Lipschitz lower bound: f(c) - sum_j L_j w_j / 2 where L_j
    bounds |df/dx_j| over the box (mean value theorem), c the centre. Split
    score L_j w_j (coordinate j's share of the slack). Sound, loose, and
    monotone under box inclusion (a child's bound is >= its parent's)."""

    def __init__(self, f, grad, grad_bound):
        super().__init__()
        self.f, self.grad, self.grad_bound = f, grad, grad_bound
        self._lower_of = {}

    def value(self, X):
        return self.f(np.atleast_2d(X))

    def bound(self, lo, hi):
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        c = 0.5 * (lo + hi)
        slack = self.grad_bound(lo, hi) * (hi - lo)
        lower = self.f(c) - 0.5 * slack.sum(1)
        if self.state is not None and len(self.calls) > 0:
            # Called from step(): every parent must still be open (below the
            # incumbent and, in decision mode, at or below the target).
            for m in range(0, len(lo), 2):
                parent = (tuple(np.minimum(lo[m], lo[m + 1])), tuple(np.maximum(hi[m], hi[m + 1])))
                lb = self._lower_of[parent]
                assert lb < self.state.upper
                assert self.state.target is None or lb <= self.state.target
        self._record(lo, hi, lower)
        self._lower_of.update({(tuple(l), tuple(h)): float(b) for l, h, b in zip(lo, hi, lower)})
        return BoxBound(lower, c.copy(), slack)


def quadratic(a, c, shift=0.0):
    """f(x) = shift + sum_j a_j (x_j - c_j)^2 with a_j of any sign, Lipschitz bound.
    Returns (objective, exact_min(lo, hi), exact_max(lo, hi))."""
    a, c = np.asarray(a, float), np.asarray(c, float)

    def f(X):
        return shift + (a * (X - c) ** 2).sum(1)

    def grad(X):
        return 2 * a * (X - c)

    def grad_bound(lo, hi):
        return 2 * np.abs(a) * np.maximum(np.abs(lo - c), np.abs(hi - c))

    def extreme(lo, hi, sign):
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        near = a * (np.clip(c, lo, hi) - c) ** 2
        far = a * np.maximum((lo - c) ** 2, (hi - c) ** 2)
        lowest = np.where(a >= 0, near, far)  # per coordinate, separable
        highest = np.where(a >= 0, far, near)
        return shift + float((lowest if sign > 0 else highest).sum())

    return Lipschitz(f, grad, grad_bound), (lambda lo, hi: extreme(lo, hi, +1)), (lambda lo, hi: extreme(lo, hi, -1))


def wavy():
    """f(x) = sin(3 x0) + cos(2 x1) + 0.5 x0 x1 (non-convex, non-separable).
    Returns (objective, grad_bound)."""

    def f(X):
        return np.sin(3 * X[:, 0]) + np.cos(2 * X[:, 1]) + 0.5 * X[:, 0] * X[:, 1]

    def grad(X):
        return np.column_stack([3 * np.cos(3 * X[:, 0]) + 0.5 * X[:, 1], -2 * np.sin(2 * X[:, 1]) + 0.5 * X[:, 0]])

    def grad_bound(lo, hi):
        m = np.maximum(np.abs(lo), np.abs(hi))
        return np.column_stack([3 + 0.5 * m[:, 1], 2 + 0.5 * m[:, 0]])

    return Lipschitz(f, grad, grad_bound), grad_bound


def grid_min(f, lo, hi, n, grad_bound):
    """Minimum of f on an n^d grid and a certified lower bound of the true
    minimum (grid minimum - Lipschitz slack of half a cell)."""
    axes = [np.linspace(l, h, n) for l, h in zip(lo, hi)]
    P = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(lo))
    v = f(P)
    h = (np.asarray(hi) - np.asarray(lo)) / (n - 1)
    L = grad_bound(np.asarray(lo, float)[None], np.asarray(hi, float)[None])[0]
    return float(v.min()), float(v.min() - 0.5 * (L * h).sum())


class Scripted(Recorder):
    """Fixed lower bound and fixed split scores: isolates the split rule.
    ``value`` is 0 everywhere, ``lower`` < 0, so nothing is settled by the
    incumbent."""

    def __init__(self, score, lower=-1.0):
        super().__init__()
        self.score, self.lower = np.asarray(score, float), lower

    def value(self, X):
        return np.zeros(len(np.atleast_2d(X)))

    def grad(self, X):
        return np.zeros_like(np.atleast_2d(X))

    def bound(self, lo, hi):
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        lower = np.full(len(lo), self.lower)
        self._record(lo, hi, lower)
        return BoxBound(lower, 0.5 * (lo + hi), np.broadcast_to(self.score, lo.shape).copy())


def split_coordinates(obj):
    """Per split (after the root's), the coordinate the children differ in."""
    out = []
    for lo, hi, _ in obj.calls[1:]:
        for m in range(0, len(lo), 2):
            diff = np.flatnonzero((hi[m] != hi[m + 1]) | (lo[m] != lo[m + 1]))
            assert len(diff) == 1  # a bisection changes exactly one coordinate
            j = int(diff[0])
            assert hi[m, j] == lo[m + 1, j]  # the halves meet at the midpoint
            assert hi[m, j] == 0.5 * (lo[m, j] + hi[m + 1, j])
            out.append(j)
    return out


def run(state, max_splits):
    """Split one box at a time until exhausted or max_splits, yielding after each."""
    for _ in range(max_splits):
        if state.exhausted:
            return
        assert state.step(max_boxes=1) == 1
        yield


# --------------------------------------------------------------------------
# Split rule
# --------------------------------------------------------------------------


@pytest.mark.parametrize("score, expected", [([1.0, 3.0, 2.0], 1), ([5.0, 0.0, 0.0], 0), ([0.0, 0.0, 1e-12], 2)])
def test_split_bisects_the_largest_score(score, expected):
    obj = Scripted(score)
    state = BranchAndBound(obj, np.zeros(3), np.ones(3))
    assert state.step(max_boxes=1) == 1 and state.n_iter == 1
    assert split_coordinates(obj) == [expected]
    lo, hi, _ = obj.calls[1]
    assert lo[1, expected] == hi[0, expected] == 0.5


def test_zero_scores_split_the_widest_coordinate_and_cycle():
    # All scores 0: the relative-width tie-break decides, so the widest
    # coordinate is bisected and every coordinate is eventually split.
    obj = Scripted([0.0, 0.0, 0.0])
    state = BranchAndBound(obj, np.zeros(3), np.array([4.0, 1.0, 2.0]))
    assert state.step(max_boxes=1) == 1
    assert split_coordinates(obj) == [0]
    for _ in run(state, 40):
        pass
    assert set(split_coordinates(obj)) == {0, 1, 2}
    # Along any root-to-leaf path the widths stay within a factor 2 of each
    # other once all are split (widest first), so no coordinate is starved.
    for lo, hi, _ in obj.calls[-1:]:
        w = hi - lo
        assert np.all(w.max(1) <= 2 * w.min(1) + 1e-12)


def test_equal_scores_tie_break_by_width():
    obj = Scripted([1.0, 1.0])
    BranchAndBound(obj, np.zeros(2), np.array([1.0, 3.0])).step(max_boxes=1)
    assert split_coordinates(obj) == [1]


def test_zero_score_coordinate_split_once_scored_one_is_unsplittable():
    # Coordinate 0 always has the largest score, but it is only a few ulps
    # wide: once it cannot be halved any more, coordinate 1 (score 0) is split.
    x = 1.0
    lo = np.array([x, 0.0])
    hi = np.array([x + 64 * np.spacing(x), 1.0])
    obj = Scripted([1.0, 0.0])
    state = BranchAndBound(obj, lo, hi)
    for _ in run(state, 30):
        pass
    js = split_coordinates(obj)
    assert js[0] == 0 and 1 in js
    # Coordinate 0 is never split below the unsplittable width.
    first_1 = js.index(1)
    assert all(j == 0 for j in js[:first_1])
    for l, h, _ in obj.boxes():
        assert h[0] - l[0] >= 8 * np.spacing(x)


def test_unsplittable_coordinate_is_never_bisected():
    # Coordinate 0 has the top score but is two ulps wide: only 1 is split.
    lo = np.array([1.0, -1.0])
    hi = np.array([np.nextafter(np.nextafter(1.0, 2), 2), 1.0])
    obj = Scripted([10.0, 1.0])
    state = BranchAndBound(obj, lo, hi)
    for _ in run(state, 5):
        pass
    assert split_coordinates(obj) == [1] * 5
    assert all(l[0] == lo[0] and h[0] == hi[0] for l, h, _ in obj.boxes())


def test_unsplittable_boxes_are_settled_not_requeued():
    # A bound that never reaches the incumbent (lower = -1 < 0 = value): the
    # only way out is boxes too narrow to split, which must be settled.
    x = 1.0
    lo, hi = np.array([x]), np.array([x + 64 * np.spacing(x)])
    obj = Scripted([1.0], lower=-1.0)
    state = BranchAndBound(obj, lo, hi)
    n = 0
    while not state.exhausted:
        n += state.step()
        assert n < 1000, "unsplittable boxes are re-queued"
    assert state.step() == 0 and state.n_iter == n
    assert state.lower == -1.0 and state.upper == 0.0
    assert 0 < n < 64  # a handful of bisections, not an endless loop
    # A box that is unsplittable from the start is settled at construction.
    obj = Scripted([1.0], lower=-2.0)
    state = BranchAndBound(obj, np.array([x]), np.array([np.nextafter(x, 2)]))
    assert state.exhausted and state.lower == -2.0 and state.step() == 0 and state.n_iter == 0


# --------------------------------------------------------------------------
# Settling, exhaustion and the lower bound
# --------------------------------------------------------------------------


def check_lower_is_min_over_leaves(state, obj):
    leaves = obj.leaves()
    assert state.lower == min(min(b for _, _, b in leaves), state.upper)


def test_settled_boxes_never_split_and_lower_is_min_over_leaves():
    obj, fmin, _ = quadratic([1.0, 3.0], [0.3, -0.2])
    lo, hi = np.array([-1.0, -1.0]), np.array([2.0, 1.0])
    state = BranchAndBound(obj, lo, hi)
    obj.state = state  # bound() asserts every split parent was still open
    for _ in run(state, 200):
        check_lower_is_min_over_leaves(state, obj)
        assert state.lower <= fmin(lo, hi) <= state.upper
    # Some boxes were settled (their lower bound reached the incumbent) and
    # they still count in ``lower``.
    settled = [b for _, _, b in obj.leaves() if b >= state.upper]
    assert settled


def test_target_mode_settles_boxes_above_target():
    # f = 1 + |x - c|^2 > 0.5 everywhere: every box whose bound exceeds the
    # target 0.5 is settled, the rest split until none is open.
    obj, fmin, _ = quadratic([1.0, 1.0], [0.0, 0.0], shift=1.0)
    lo, hi = np.array([-2.0, -2.0]), np.array([2.0, 2.0])
    state = BranchAndBound(obj, lo, hi, target=0.5)
    obj.state = state
    for _ in run(state, 10_000):
        check_lower_is_min_over_leaves(state, obj)
        assert state.lower <= fmin(lo, hi)
    assert state.exhausted and state.lower > 0.5
    assert all(b > 0.5 or b >= state.upper for _, _, b in obj.leaves())


def test_exact_bound_is_exhausted_at_the_root():
    # A bound attained at its argmin: lower == incumbent, the root is settled.
    a, c = np.array([1.0, 2.0]), np.array([0.5, 5.0])

    class Exact(Recorder):
        def value(self, X):
            return (a * (np.atleast_2d(X) - c) ** 2).sum(1)

        def bound(self, lo, hi):
            x = np.clip(c, lo, hi)
            return BoxBound(self.value(x), x, np.ones_like(lo))

    lo, hi = np.zeros(2), np.ones(2)
    state = BranchAndBound(Exact(), lo, hi)
    assert state.exhausted and state.step() == 0 and state.n_iter == 0
    assert state.lower == state.upper == 2.0 * 16 and state.gap == 0
    np.testing.assert_array_equal(state.best_x, [0.5, 1.0])


def test_zero_width_box_is_exhausted():
    obj, fmin, _ = quadratic([1.0, -2.0], [0.1, 0.2])
    x = np.array([0.7, -0.4])
    state = BranchAndBound(obj, x, x)
    assert state.exhausted and state.step() == 0
    assert state.lower == state.upper == pytest.approx(fmin(x, x), abs=1e-15)
    np.testing.assert_array_equal(state.best_x, x)
    out = solve_range([obj], x, x, x, 1e-6, Budget(max_iter=10), np.random.default_rng(0))
    assert out.n_iter == 0 and out.converged.all() and out.lower[0] == state.lower


def test_candidates_become_the_incumbent():
    obj, _, _ = quadratic([1.0], [0.9])
    state = BranchAndBound(obj, np.array([-1.0]), np.array([1.0]), candidates=[[0.9], [5.0]])
    assert state.upper == 0.0 and state.best_x[0] == 0.9  # out-of-box candidates are clipped in
    state = BranchAndBound(obj, np.array([-1.0]), np.array([0.0]), candidates=[[5.0]])
    assert state.best_x[0] == 0.0 and state.upper == pytest.approx(0.81)


# --------------------------------------------------------------------------
# Anytime soundness and convergence
# --------------------------------------------------------------------------


def test_anytime_soundness_on_a_fine_grid():
    obj, gb = wavy()
    lo, hi = np.array([-1.5, -1.0]), np.array([1.0, 2.0])
    g_min, true_min_lb = grid_min(obj.f, lo, hi, 1501, gb)
    state = BranchAndBound(obj, lo, hi)
    lowers = []
    for _ in run(state, 3000):
        # lower <= true minimum <= grid minimum; upper is a value at a point in the box.
        assert state.lower <= g_min
        assert state.upper >= true_min_lb
        assert np.all((state.best_x >= lo) & (state.best_x <= hi))
        assert state.upper == obj.value(state.best_x)[0]
        lowers.append(state.lower)
    # Monotone bounds (this objective's): the certified minimum never drops.
    assert np.all(np.diff(lowers) >= -1e-12)
    assert state.gap < 1e-2


@pytest.mark.parametrize("epsilon", [1e-2, 1e-3])
def test_solve_range_converges_to_epsilon(epsilon):
    obj, gb = wavy()
    neg = Lipschitz(lambda X: -obj.f(X), lambda X: -obj.grad(X), gb)
    lo, hi = np.array([-1.5, -1.0]), np.array([1.0, 2.0])
    g_min, min_lb = grid_min(obj.f, lo, hi, 1501, gb)
    g_max_neg, max_neg_lb = grid_min(neg.f, lo, hi, 1501, gb)
    budget = Budget(max_iter=100_000)
    out = solve_range([obj, neg], lo, hi, np.zeros(2), epsilon, budget, np.random.default_rng(0))
    assert out.converged.all() and out.n_iter == budget.used < 100_000
    for k, (f, gm, lb) in enumerate([(obj, g_min, min_lb), (neg, g_max_neg, max_neg_lb)]):
        assert out.lower[k] <= gm
        upper = f.value(out.argmin[k])[0]
        assert upper - out.lower[k] <= epsilon
        assert out.lower[k] >= lb - epsilon
        assert np.all((out.argmin[k] >= lo) & (out.argmin[k] <= hi))


def test_solve_range_exact_quadratic_minimum():
    obj, fmin, fmax = quadratic([2.0, -1.0, 0.5], [0.2, 0.0, 3.0])
    lo, hi = -np.ones(3), np.ones(3)
    out = solve_range([obj], lo, hi, np.zeros(3), 1e-6, Budget(max_iter=50_000), np.random.default_rng(1))
    assert out.converged[0]
    assert fmin(lo, hi) - 1e-6 <= out.lower[0] <= fmin(lo, hi)
    assert obj.value(out.argmin[0])[0] - fmin(lo, hi) <= 1e-6


# --------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------


def test_budget_accounting():
    b = Budget()
    assert b.max_iter == DEFAULT_MAX_ITER and b.time_limit is None
    assert b.remaining() == DEFAULT_MAX_ITER and not b.spent()
    b = Budget(max_iter=5)
    assert b.remaining() == 5 and not b.spent()
    b.used = 3
    assert b.remaining() == 2 and not b.spent()
    b.used = 5
    assert b.remaining() == 0 and b.spent()
    b = Budget(max_iter=0)
    assert b.max_iter == 0 and b.spent()  # 0 is a budget, not "default"
    b = Budget(time_limit=3600.0)
    assert b.max_iter is None and b.remaining() is None and not b.spent()
    assert Budget(time_limit=0.0).spent()
    assert Budget(max_iter=10, time_limit=0.0).spent()
    assert b.elapsed() >= 0


def loose_objectives():
    obj, fmin, fmax = quadratic([1.0, 3.0, -2.0], [0.3, -0.2, 0.1], shift=0.5)
    neg, _, _ = quadratic([-1.0, -3.0, 2.0], [0.3, -0.2, 0.1], shift=-0.5)
    return obj, neg, fmin, fmax


@pytest.mark.parametrize("max_iter", [1, 2, 7, 16, 17, 33, 250])
def test_max_iter_caps_splits_exactly(max_iter):
    obj, neg, fmin, fmax = loose_objectives()
    lo, hi = -np.ones(3), np.ones(3)
    budget = Budget(max_iter=max_iter)
    out = solve_range([obj, neg], lo, hi, np.zeros(3), 1e-12, budget, np.random.default_rng(0))
    assert out.n_iter == budget.used == max_iter and not out.converged.all()
    assert sum(len(c[0]) for c in obj.calls[1:] + neg.calls[1:]) == 2 * max_iter  # two children per split
    assert out.lower[0] <= fmin(lo, hi) and out.lower[1] <= -fmax(lo, hi)


def test_max_iter_zero_returns_the_root_bound():
    obj, neg, fmin, fmax = loose_objectives()
    lo, hi = -np.ones(3), np.ones(3)
    out = solve_range([obj, neg], lo, hi, np.zeros(3), 1e-12, Budget(max_iter=0), np.random.default_rng(0))
    assert out.n_iter == 0 and len(obj.calls) == len(neg.calls) == 1
    assert out.lower[0] == obj.calls[0][2][0] and out.lower[1] == neg.calls[0][2][0]
    assert out.lower[0] <= fmin(lo, hi) and out.lower[1] <= -fmax(lo, hi)


def test_step_respects_max_boxes():
    obj, _, _, _ = loose_objectives()
    state = BranchAndBound(obj, -np.ones(3), np.ones(3))
    total = 0
    for k in [1, 1, 2, 3, 5]:
        n = state.step(max_boxes=k)
        assert 1 <= n <= k
        total += n
        assert state.n_iter == total


# --------------------------------------------------------------------------
# solve_sign
# --------------------------------------------------------------------------


def sign_problem(shift):
    # f = shift + (x0 - 0.2)^2 + 2 (x1 + 0.1)^2 - x2^2 on [-1, 1]^3, min = shift - 1.
    return quadratic([1.0, 2.0, -1.0], [0.2, -0.1, 0.0], shift=shift)


def test_solve_sign_robust_with_a_proof():
    obj, fmin, _ = sign_problem(1.5)
    lo, hi = -np.ones(3), np.ones(3)
    calls = []
    out = solve_sign(obj, lo, hi, np.zeros(3), Budget(max_iter=5000), np.random.default_rng(0), calls.append)
    assert out.status == "robust" and 0 < out.bound <= fmin(lo, hi)
    assert np.all(np.isnan(out.counterexample)) and not calls


def test_solve_sign_not_robust_only_when_confirmed():
    obj, fmin, _ = sign_problem(0.5)  # min -0.5 < 0
    lo, hi = -np.ones(3), np.ones(3)
    asked = []

    def changes(x):
        asked.append(x.copy())
        return obj.value(x)[0] <= 0

    out = solve_sign(obj, lo, hi, np.zeros(3), Budget(max_iter=5000), np.random.default_rng(0), changes)
    assert out.status == "not_robust" and len(asked) == 1
    x = out.counterexample
    assert np.all((x >= lo) & (x <= hi)) and obj.value(x)[0] <= 0
    np.testing.assert_array_equal(x, asked[0])
    assert out.bound <= fmin(lo, hi)


def test_solve_sign_unknown_when_model_disagrees():
    obj, fmin, _ = sign_problem(0.5)
    lo, hi = -np.ones(3), np.ones(3)
    asked = []
    out = solve_sign(
        obj, lo, hi, np.zeros(3), Budget(max_iter=5000), np.random.default_rng(0), lambda x: asked.append(x) or False
    )
    assert out.status == "unknown" and asked  # asked, refused: no false counterexample
    assert np.all(np.isnan(out.counterexample)) and out.bound <= fmin(lo, hi)


@pytest.mark.parametrize("max_iter", [0, 1, 5, 40])
def test_solve_sign_unknown_on_budget(max_iter):
    obj, fmin, _ = sign_problem(1.0 + 1e-7)  # min 1e-7 > 0: true, but hard to prove
    lo, hi = -np.ones(3), np.ones(3)
    out = solve_sign(obj, lo, hi, np.zeros(3), Budget(max_iter=max_iter), np.random.default_rng(0), lambda x: True)
    assert out.status == "unknown" and out.n_iter == max_iter
    assert out.bound <= fmin(lo, hi) and np.all(np.isnan(out.counterexample))


# --------------------------------------------------------------------------
# solve_deviation
# --------------------------------------------------------------------------


A = np.array([[1.0, -2.0], [0.5, 1.5]])  # output p: sum_j A[p, j] (x_j - C[p, j])^2 + S[p]
C = np.array([[0.3, -0.4], [-0.2, 0.6]])
S = np.array([1.0, -2.0])


def deviation_problem(P):
    objs, ranges = [], []
    for p in range(P):
        f, fmin, fmax = quadratic(A[p], C[p], S[p])
        g, _, _ = quadratic(-A[p], C[p], -S[p])
        objs.append((f, g))
        ranges.append((f, fmin, fmax))
    return objs, ranges


def true_deviation(ranges, center, lo, hi, norm):
    """Exact sup of ||m(x) - center|| over the box for P = 1 or norm inf;
    for P > 1 under norms 1, 2 the per-output maxima's norm (an upper bound,
    what solve_deviation can prove) and the grid maximum (a lower bound)."""
    per = np.array([max(fmax(lo, hi) - c, c - fmin(lo, hi), 0.0) for (_, fmin, fmax), c in zip(ranges, center)])
    axes = [np.linspace(l, h, 401) for l, h in zip(lo, hi)]
    G = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(lo))
    M = np.column_stack([f.value(G) for f, _, _ in ranges])
    grid = float(np.linalg.norm(M - center, ord=norm, axis=1).max())
    return float(np.linalg.norm(per, ord=norm)), grid, float(per.max())


LO, HI, X0 = np.array([-0.5, -0.3]), np.array([0.4, 0.5]), np.array([0.0, 0.1])

def deviation_setup(P, norm):
    objs, ranges = deviation_problem(P)
    center = np.array([f.value(X0)[0] for f, _, _ in ranges])
    provable, grid, single = true_deviation(ranges, center, LO, HI, norm)
    assert grid <= provable + 1e-12 and single <= provable + 1e-12

    def deviation(x):
        return float(np.linalg.norm([f.value(x)[0] for f, _, _ in ranges] - center, ord=norm))

    return objs, center, deviation, provable, grid, single


@pytest.mark.parametrize(
    "P, norm",
    [(1, 1), (1, 2), (1, np.inf), (2, 1), (2, 2), (2, np.inf)],
)
def test_solve_deviation_robust(P, norm):
    # Above what the per-output bounds can prove: robust, with a bound between
    # the attained deviation and delta.
    objs, center, deviation, provable, grid, _ = deviation_setup(P, norm)
    delta = 1.05 * provable
    out = solve_deviation(
        objs, center, LO, HI, X0, delta, norm, Budget(max_iter=20_000), np.random.default_rng(0), deviation
    )
    assert out.status == "robust" and grid <= out.bound <= delta
    assert np.all(np.isnan(out.counterexample))


@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("P", [1, 2])
def test_solve_deviation_not_robust(P, norm):
    # Below one output's own worst deviation (which the per-output searches
    # reach): not robust, with a counterexample the model confirms.
    objs, center, deviation, provable, grid, single = deviation_setup(P, norm)
    delta = 0.9 * single
    out = solve_deviation(
        objs, center, LO, HI, X0, delta, norm, Budget(max_iter=20_000), np.random.default_rng(0), deviation
    )
    assert out.status == "not_robust" and out.bound >= grid - BOUND_TOL
    x = out.counterexample
    assert np.all((x >= LO) & (x <= HI)) and deviation(x) > delta


@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_solve_deviation_unknown_on_budget(norm):
    objs, center, _, provable, _, _ = deviation_setup(1, norm)
    delta = provable * (1 + 1e-9)  # true, but not provable in 3 splits
    out = solve_deviation(
        objs, center, LO, HI, X0, delta, norm, Budget(max_iter=3), np.random.default_rng(0), lambda x: 0.0
    )
    assert out.status == "unknown" and out.n_iter == 3 and out.bound >= provable
    assert np.all(np.isnan(out.counterexample))


def test_solve_deviation_model_refuses_counterexample():
    # The model's own deviation never exceeds delta: no false "not_robust".
    objs, center, _, _, _, _ = deviation_setup(2, 2)
    out = solve_deviation(
        objs, center, LO, HI, X0, 1e-3, 2, Budget(max_iter=200), np.random.default_rng(0), lambda x: 0.0
    )
    assert out.status == "unknown" and out.n_iter == 200 and out.bound > 1e-3


# --------------------------------------------------------------------------
# Local search: the sign corner and the quasi-Newton polish
# --------------------------------------------------------------------------


class _Fn:
    def __init__(self, f, g):
        self.f, self.g, self.n_eval = f, g, 0

    def value(self, X):
        X = np.atleast_2d(X)
        self.n_eval += len(X)
        return self.f(X)

    def value_and_grad(self, X):
        return self.value(X), self.g(np.atleast_2d(X))


def test_sign_corner_reaches_the_vertex_minimum_of_a_badly_scaled_linear_function():
    # 64 coordinates whose slopes span 4 decades: the scaled steps move the
    # small-slope coordinates by a fraction of their width; the corner is exact.
    c = np.geomspace(1e-3, 10.0, 64) * np.where(np.arange(64) % 2, 1.0, -1.0)
    fn = _Fn(lambda X: X @ c, lambda X: np.broadcast_to(c, X.shape))
    lo, hi = -np.ones(64), np.ones(64)
    exact = -np.abs(c).sum()
    _, plain = local_search(fn, lo, hi, np.zeros((1, 64)), n_steps=5)
    x, f = local_search(fn, lo, hi, np.zeros((1, 64)), n_steps=5, corner=True)
    assert plain > exact + 1e-3
    assert f == pytest.approx(exact, rel=1e-12) and np.array_equal(x, np.where(c > 0, lo, hi))


def test_polish_improves_a_curved_minimum_and_stays_in_the_box():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(20, 20))
    H = A @ A.T / 20 + np.diag(np.geomspace(1e-2, 1.0, 20))
    b = rng.normal(size=20) * 3.0
    fn = _Fn(lambda X: 0.5 * np.einsum("ni,ij,nj->n", X, H, X) - X @ b, lambda X: X @ H - b)
    lo, hi = -np.ones(20), np.ones(20)
    x0, f0 = local_search(fn, lo, hi, np.zeros((1, 20)), n_steps=10)
    n0 = fn.n_eval
    x, f = polish(fn, lo, hi, x0, f0, max_eval=30)
    assert fn.n_eval - n0 <= 30
    for cap in (1, 2, 3, 5):  # the cap holds exactly (scipy's maxfun only between iterations)
        n0 = fn.n_eval
        polish(fn, lo, hi, np.zeros(20), 0.0, max_eval=cap)
        assert fn.n_eval - n0 <= cap
    assert f < f0 and f == fn.value(x[None])[0]
    assert np.all((lo <= x) & (x <= hi))
    # Where the start is already the minimum it comes back unchanged (never worse).
    xv = np.where(b > 0, hi, lo)
    lin = _Fn(lambda X: -X @ np.abs(b) * np.sign(b), lambda X: np.broadcast_to(-b, X.shape))
    x2, f2 = polish(lin, lo, hi, xv, lin.value(xv[None])[0])
    assert f2 == lin.value(xv[None])[0]


def test_polish_ends_on_non_finite_values():
    fn = _Fn(lambda X: np.where(X[:, 0] > 0.5, np.nan, -X[:, 0]), lambda X: -np.eye(1, X.shape[1]).repeat(len(X), 0))
    lo, hi = np.zeros(3), np.ones(3)
    x, f = polish(fn, lo, hi, np.zeros(3), 0.0)
    assert np.isfinite(f) and f <= 0.0 and f == fn.value(x[None])[0]


# --------------------------------------------------------------------------
# Second bound (objective.tighten): only for boxes about to be split
# --------------------------------------------------------------------------


class Tightened(Lipschitz):
    """A Lipschitz objective with a second bound: the exact minimum of a
    separable quadratic (tighter, valid). Records the boxes it tightens and
    checks, through ``state``, that each was still open when tightened."""

    def __init__(self, a, c):
        obj, self.fmin, _ = quadratic(a, c)
        super().__init__(obj.f, obj.grad, obj.grad_bound)
        self.tightened = []

    def tighten(self, lo, hi):
        lower = np.array([self.fmin(l, h) for l, h in zip(lo, hi)])
        if self.state is not None:
            for l, h in zip(lo, hi):
                # only boxes still open (below the incumbent) reach tighten
                assert self._lower_of[(tuple(l), tuple(h))] < self.state.upper
        self.tightened.extend(zip(map(tuple, lo), map(tuple, hi)))
        return BoxBound(lower, 0.5 * (lo + hi), None)


def test_tighten_only_on_split_boxes_and_children_inherit_it():
    # A wavy first bound and a quadratic whose exact minimum is not at the
    # centre: the incumbent starts above the minimum, so boxes get split.
    a, c = [2.0, 1.0, 0.5], [0.7, -0.4, 0.3]
    lo, hi = -np.ones(3), np.ones(3)
    obj = Tightened(a, c)
    state = BranchAndBound(obj, lo, hi, candidates=np.zeros((1, 3)), batch_size=1)
    obj.state = state
    true_min = obj.fmin(lo, hi)
    assert state.step() == 1  # the root: tightened to its exact minimum, then split (or settled)
    assert obj.tightened == [(tuple(lo), tuple(hi))]
    assert abs(state.lower - true_min) <= 1e-12  # whatever was pushed inherits the root's tightened bound
    run(state, 50)
    assert state.lower <= true_min + BOUND_TOL
    bounded = {(l, h) for l, h, _ in obj.boxes()}
    assert set(obj.tightened) <= bounded  # only boxes the search bounded and popped
    assert obj.parents() <= set(obj.tightened)  # every split box was tightened first
    assert len(obj.tightened) == len(set(obj.tightened))  # each at most once


def test_tighten_never_called_when_the_root_converges():
    obj = Tightened([1.0, 1.0], [0.0, 0.0])
    out = solve_range([obj], -0.1 * np.ones(2), 0.1 * np.ones(2), np.zeros(2), 1.0, Budget(max_iter=100),
                      np.random.default_rng(0))
    assert out.converged[0] and out.n_iter == 0 and not obj.tightened


def test_tighten_settles_the_root_in_one_step():
    # Loose first bound, exact second bound: the first step tightens the root
    # to the exact minimum, which the incumbent (the centre, the minimiser)
    # attains: settled, nothing split.
    obj = Tightened([1.0, 3.0], [0.0, 0.0])
    lo, hi = -np.ones(2), np.ones(2)
    state = BranchAndBound(obj, lo, hi, candidates=np.zeros((1, 2)))
    assert state.gap > 0
    assert state.step() == 1
    assert state.exhausted and state.gap == 0.0 and len(obj.calls) == 1  # only the root was ever bounded
