"""Per-row controllers on top of the branch-and-bound engine.

* :func:`solve_range`: certified min and max of several objectives over one box,
  refined until every gap is <= epsilon or the budget is spent.
* :func:`solve_sign`: decision "is f > 0 on the whole box?" for a binary
  classifier's latent mean, stopping at a proof or a verified counterexample.
* :func:`solve_deviation`: delta-robustness of a vector of means under an
  l_p norm (paper Prop. 13).

Budgets: ``max_iter`` is the number of boxes split per row (all of the row's
sub-problems together), ``time_limit`` the seconds per row. When both are
None, ``DEFAULT_MAX_ITER`` applies. Every exit path returns valid bounds.

Time limits hold for the whole row: its clock starts when its
:class:`Budget` is created (the estimators create it at the start of the
row), so the root bounds, the local search and branch and bound all count.
The local search gets at most ``SEARCH_SHARE`` of the time left when it
starts (split evenly between the row's sub-problems) and stops between
gradient steps (a range objective's search also once it stalls: less than
``STALL_SHARE * epsilon`` of improvement over a few steps), so branch and
bound always gets the rest; branch and bound
pops only as many boxes as its measured cost per split predicts to fit
before the deadline, and checks the clock between chunks of a batch (see
:mod:`._bnb`). A row can still end after its deadline by up to
``grace()`` seconds (one split predicted to fit within the grace, or a
misprediction of at most one chunk), plus whatever a single root bound or
gradient step costs: the root of every sub-problem is always bounded, so
that a valid bound exists.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ._bnb import BranchAndBound
from ._deadline import row_deadline
from ._search import local_search, polish, random_starts

DEFAULT_MAX_ITER = 5000
N_RANDOM_STARTS = 6

#: Largest share of the time left that the local search of a row may take.
SEARCH_SHARE = 0.25
#: A range objective's local search stops once its best value improves by
#: less than this fraction of epsilon over a few steps (``stall_tol`` of
#: :func:`~._search.local_search`).
STALL_SHARE = 0.05
#: A last split may end ``GRACE_SHARE * time_limit + GRACE_SECONDS`` after the
#: deadline (half of the 10% + 50 ms tolerance; the rest absorbs mispredictions).
GRACE_SHARE = 0.05
GRACE_SECONDS = 0.025


@dataclass
class Budget:
    max_iter: int = None
    time_limit: float = None
    start: float = field(default_factory=time.perf_counter)
    used: int = 0

    def __post_init__(self):
        if self.max_iter is None and self.time_limit is None:
            self.max_iter = DEFAULT_MAX_ITER

    def spent(self):
        if self.max_iter is not None and self.used >= self.max_iter:
            return True
        return self.time_limit is not None and time.perf_counter() - self.start >= self.time_limit

    def remaining(self):
        """Boxes that may still be split (None: no iteration limit)."""
        return None if self.max_iter is None else self.max_iter - self.used

    def elapsed(self):
        return time.perf_counter() - self.start

    @property
    def deadline(self):
        """``time.perf_counter()`` value at which the row's time is up (None: no time limit)."""
        return None if self.time_limit is None else self.start + self.time_limit

    def grace(self):
        """Seconds a last split predicted to overrun the deadline may take."""
        return 0.0 if self.time_limit is None else GRACE_SHARE * self.time_limit + GRACE_SECONDS

    def step(self, state):
        """One batch of ``state.step`` within the budget; returns the boxes
        split (0 with open boxes left: the time is up)."""
        k = state.step(self.remaining(), deadline=self.deadline, grace=self.grace())
        self.used += k
        return k

    def search_deadlines(self, n):
        """Deadlines of ``n`` successive local searches that share at most
        ``SEARCH_SHARE`` of the time left now. A generator: each deadline is
        computed just before its search starts, so time one search leaves
        unused moves on to the next (all None without a time limit)."""
        if self.deadline is None:
            yield from [None] * n
            return
        end = time.perf_counter() + SEARCH_SHARE * max(self.deadline - time.perf_counter(), 0.0)
        for i in range(n):
            now = time.perf_counter()
            yield now + max(end - now, 0.0) / (n - i)


def _starts(state, x0, rng):
    return np.vstack([x0[None], state.best_x[None], random_starts(state.lo, state.hi, N_RANDOM_STARTS, rng)])


def _improve(state, x0, rng, deadline=None, stall_tol=None):
    """Local search from x0, the incumbent, random starts and the sign-of-the-
    gradient corner of x0, then a quasi-Newton polish of its best point
    (:func:`~._search.polish`; not when the search already reached the
    state's target, a decision's counterexample); the result is offered to
    the state. Nothing when ``deadline`` has passed."""
    if deadline is not None and time.perf_counter() >= deadline:
        return
    x, f = local_search(state.objective, state.lo, state.hi, _starts(state, x0, rng), deadline=deadline,
                        corner=True, stall_tol=stall_tol)
    if state.target is None or not f <= state.target:  # a decision's counterexample needs no polish
        x, _ = polish(state.objective, state.lo, state.hi, x, f, deadline=deadline)
    state.offer(x[None])


@dataclass
class RangeOutcome:
    lower: np.ndarray  # (k,) lower bound of each objective's minimum
    argmin: np.ndarray  # (k, d) point attaining the best value found
    converged: np.ndarray  # (k,) gap <= epsilon
    n_iter: int
    time: float


def solve_range(objectives, lo, hi, x0, epsilon, budget, rng):
    """Certified minimum of each objective over [lo, hi], to epsilon."""
    with row_deadline(budget, epsilon):
        return _solve_range(objectives, lo, hi, x0, epsilon, budget, rng)


def _solve_range(objectives, lo, hi, x0, epsilon, budget, rng):
    states = [BranchAndBound(f, lo, hi, candidates=x0) for f in objectives]
    todo = [s for s in states if s.gap > epsilon and not s.exhausted]
    for s, deadline in zip(todo, budget.search_deadlines(len(todo))):
        _improve(s, x0, rng, deadline, stall_tol=STALL_SHARE * epsilon)
    while not budget.spent():
        open_ = [s for s in states if s.gap > epsilon and not s.exhausted]
        if not open_:
            break
        worst = max(open_, key=lambda s: s.gap)
        if budget.step(worst) == 0 and not worst.exhausted:
            break  # out of time
    return RangeOutcome(
        lower=np.array([s.lower for s in states]),
        argmin=np.array([s.best_x for s in states]),
        converged=np.array([s.gap <= epsilon for s in states]),
        n_iter=sum(s.n_iter for s in states),
        time=budget.elapsed(),
    )


@dataclass
class DecisionOutcome:
    status: str  # "robust", "not_robust", "unknown"
    bound: float  # proven bound on the worst case (meaning depends on question)
    counterexample: np.ndarray  # (d,) or NaN
    n_iter: int
    time: float


def solve_sign(objective, lo, hi, x0, budget, rng, changes_decision):
    """Decide ``objective > 0`` on [lo, hi].

    ``objective`` is the latent margin signed towards the predicted class
    (positive where the prediction is unchanged); ``changes_decision(x)`` is
    the model's own check that ``x`` gets another label.
    """
    nan = np.full(len(lo), np.nan)
    state = BranchAndBound(objective, lo, hi, candidates=x0, target=0.0)

    def outcome(status, cex=nan):
        return DecisionOutcome(status, state.lower, cex, state.n_iter, budget.elapsed())

    searched = False
    while True:
        if state.lower > 0:
            return outcome("robust")
        if state.best_f <= 0:
            if changes_decision(state.best_x):
                return outcome("not_robust", state.best_x.copy())
            return outcome("unknown")  # a tie the model breaks our way: stop honestly
        if not searched:
            _improve(state, x0, rng, next(budget.search_deadlines(1)))
            searched = True
            continue
        if state.exhausted or budget.spent():
            return outcome("unknown")
        if budget.step(state) == 0 and not state.exhausted:
            return outcome("unknown")  # out of time


def _deviation_order(states, dev, low, high, norm):
    """Sub-problems of :func:`solve_deviation` by how much refining them can
    lower the bound: the gap of a side that is the active one of its output
    (its bound is that output's deviation bound), weighted by the output's
    share of the norm (norm 1: 1; norm 2: dev_p / ||dev||; inf: the largest
    output only). Refining by contribution alone starved the loose outputs:
    a converged sub-problem with the largest contribution was split forever.
    """
    P = len(dev)
    if norm == np.inf:
        w = (dev >= dev.max()).astype(float)
    elif norm == 2:
        tot = np.linalg.norm(dev)
        w = dev / tot if tot > 0 else np.ones(P)
    else:
        w = np.ones(P)
    score, contrib = np.zeros(2 * P), np.ravel(np.column_stack([low, high]))
    for p in range(P):
        for side, val in enumerate((low[p], high[p])):
            i = 2 * p + side
            if val >= dev[p] and dev[p] > 0:
                score[i] = w[p] * max(states[i].gap, 0.0)
    # Ties (e.g. all gaps 0) fall back to the largest contribution.
    order = np.lexsort((-contrib, -score))
    return [int(i) for i in order if not states[i].exhausted]


def solve_deviation(objectives, center, lo, hi, x0, delta, norm, budget, rng, deviation):
    """Decide ``||mean(x) - center||_norm <= delta`` on [lo, hi] (Prop. 13).

    ``objectives`` holds, per output p, the pair (mean_p, -mean_p).
    ``deviation(x)`` returns the model's own ``||mean(x) - center||``. The
    proof bounds each output's worst deviation separately, so for several
    outputs under norm 1 or 2 it is sufficient, not necessary.
    """
    P = len(center)
    per_output = norm == np.inf or P == 1
    states = []
    for p, (fmin, fmax) in enumerate(objectives):
        states.append(BranchAndBound(fmin, lo, hi, candidates=x0, target=center[p] - delta if per_output else None))
        states.append(BranchAndBound(fmax, lo, hi, candidates=x0, target=-center[p] - delta if per_output else None))

    def dev_bounds():
        low = np.array([center[p] - states[2 * p].lower for p in range(P)])
        high = np.array([-states[2 * p + 1].lower - center[p] for p in range(P)])
        return np.maximum(np.maximum(low, high), 0.0), low, high

    def bound():
        return float(np.linalg.norm(dev_bounds()[0], ord=norm))

    checked = {}

    def find_counterexample():
        # Ask the model only about incumbents that changed since last time.
        for i, s in enumerate(states):
            if checked.get(i) != s.best_f:
                checked[i] = s.best_f
                if deviation(s.best_x) > delta:
                    return s.best_x.copy()
        return None

    searched = False
    while True:
        b = bound()
        if b <= delta:
            return DecisionOutcome("robust", b, np.full(len(lo), np.nan), sum(s.n_iter for s in states), budget.elapsed())
        cex = find_counterexample()
        if cex is not None:
            return DecisionOutcome("not_robust", b, cex, sum(s.n_iter for s in states), budget.elapsed())
        if not searched:
            for s, deadline in zip(states, budget.search_deadlines(len(states))):
                _improve(s, x0, rng, deadline)
            searched = True
            continue
        order = _deviation_order(states, *dev_bounds(), norm)
        if not order or budget.spent():
            return DecisionOutcome("unknown", b, np.full(len(lo), np.nan), sum(s.n_iter for s in states), budget.elapsed())
        if budget.step(states[order[0]]) == 0 and not states[order[0]].exhausted:
            # Out of time (nothing was split, so b is still current).
            return DecisionOutcome("unknown", b, np.full(len(lo), np.nan), sum(s.n_iter for s in states), budget.elapsed())
