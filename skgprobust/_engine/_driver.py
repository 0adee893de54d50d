"""One driver for every question: rows -> controllers -> results.

Every public method that certifies or bounds something (the estimators'
``certify`` / ``prediction_range`` / ``explain``, pipelines, scorers) goes
through the functions here, so each of these rules is written once:

* **rows**: one independent problem per box, mapped over joblib workers
  (:func:`~skgprobust._engine._common.map_rows`) with one random stream per row
  so results do not depend on ``n_jobs``;
* **range assembly** (:func:`range_rows`, :func:`range_result`): the certified
  lower bound of each minimum (and upper bound of each maximum) comes from
  branch and bound; the other end of each interval is the model's *own*
  value at the incumbent point, re-evaluated with its ``predict`` /
  ``predict_proba``; and the reported bound is never looser than that value
  (``min_lower <= min_upper``), which absorbs the rounding of the model's own
  evaluation without ever raising a lower bound;
* **counterexamples** (:func:`certify_rows`, :func:`recheck`): a row is
  ``"not_robust"`` only if the model's own prediction at the counterexample,
  re-evaluated after the controllers finished, violates the property;
  otherwise it is demoted to ``"unknown"``.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import BudgetExhaustedWarning
from ._common import map_rows, row_seeds, user_stacklevel
from ._results import CertificationResult, RangeResult
from ._search import local_search, polish, random_starts
from ._solve import Budget, RangeOutcome, solve_range

METHODS = ("bounds", "search")

#: Random starts of the local search per box (method="search").
N_SEARCH_STARTS = 4


@dataclass
class RangeProblem:
    """A statistic with k output columns, as the driver bounds it over boxes.

    Attributes
    ----------
    pairs : list of (objective, objective)
        ``(f, -f)`` per distinct objective f: branch and bound minimises both.
    reference : callable
        ``reference(P) -> (m, k)``: the model's own statistic (every column)
        at the points P (m, d), as its ``predict`` / ``predict_proba`` returns it.
    columns : ndarray of int, shape (k,)
        The pair behind each column (default: column j is pair j).
    scale : ndarray of shape (k,)
        Column j equals ``scale[j] * f`` of its pair (e.g. one unit-scale std
        objective serves every target of a regressor; default 1).
    """

    pairs: list
    reference: object
    columns: np.ndarray = None
    scale: np.ndarray = None

    def __post_init__(self):
        if self.columns is None:
            self.columns = np.arange(len(self.pairs))
        self.columns = np.asarray(self.columns, dtype=int)
        self.scale = np.ones(len(self.columns)) if self.scale is None else np.asarray(self.scale, dtype=np.float64)

    @property
    def n_columns(self):
        return len(self.columns)

    def objectives(self):
        return [f for pair in self.pairs for f in pair]

    def unit_epsilon(self, epsilon):
        """Epsilon in objective units (the tightest over the columns)."""
        return epsilon / max(float(np.max(np.abs(self.scale), initial=0.0)), 1e-300)


def _range_row(shared, x0, lo, hi, key, rng):
    tasks, max_iter, time_limit, method = shared
    budget = Budget(max_iter, time_limit)
    objectives, unit_epsilon = tasks[key]
    if method == "bounds":
        return solve_range(objectives, lo, hi, x0, unit_epsilon, budget, rng)
    # Local search only: an estimate, no bound. The box's two extreme corners
    # join the starts (for the one-sided segments of explain, its two ends).
    starts = np.vstack([x0[None], lo[None], hi[None], random_starts(lo, hi, N_SEARCH_STARTS, rng)])
    points = np.array([
        polish(f, lo, hi, *local_search(f, lo, hi, starts, deadline=dl, corner=True), deadline=dl)[0]
        for f, dl in zip(objectives, budget.search_deadlines(len(objectives)))
    ])
    return RangeOutcome(
        lower=np.full(len(objectives), np.nan), argmin=points, converged=np.zeros(len(objectives), dtype=bool),
        n_iter=0, time=budget.elapsed(),
    )


def range_rows(problems, keys, X, lo, hi, *, epsilon, max_iter=None, time_limit=None, n_jobs=None,
               random_state=None, verbose=0, label="prediction_range", method="bounds", seeds=None, warn=True):
    """Certified ranges of ``problems[keys[i]]`` over box i, for every row i.

    Parameters
    ----------
    problems : dict
        key -> :class:`RangeProblem`; all with the same number of columns k.
    keys : sequence of length n
        The problem of each row.
    X, lo, hi : ndarray of shape (n, d)
        Centres (a candidate point of each box) and boxes.
    epsilon, max_iter, time_limit, n_jobs, random_state, verbose
        As the estimators' ``prediction_range``; budgets apply per row.
    method : {"bounds", "search"}
        "search": local search only (bounds NaN).
    seeds : list of numpy Generators, optional
        One per row (default: independent streams from ``random_state``).

    Returns
    -------
    RangeResult
        Arrays of shape (n, k).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    n, d = X.shape
    keys = list(keys)
    k = next(iter(problems.values())).n_columns
    seeds = row_seeds(random_state, n) if seeds is None else seeds
    rows = list(zip(X, lo, hi, keys, seeds))
    # Workers get the objectives only (the reference, which may hold the
    # whole estimator, stays here).
    tasks = {key: (p.objectives(), p.unit_epsilon(epsilon)) for key, p in problems.items()}
    outs = map_rows(_range_row, (tasks, max_iter, time_limit, method), rows, n_jobs, verbose, label)
    shape = (n, k)
    min_lower, max_upper = np.full(shape, np.nan), np.full(shape, np.nan)
    min_upper, max_lower = np.full(shape, np.nan), np.full(shape, np.nan)
    argmin, argmax = np.full(shape + (d,), np.nan), np.full(shape + (d,), np.nan)
    # The model's own values at the incumbents: one batched call per problem.
    for key in dict.fromkeys(keys):
        problem = problems[key]
        rows_k = np.array([i for i in range(n) if keys[i] == key], dtype=int)
        m = 2 * len(problem.pairs)
        lower = np.array([outs[i].lower for i in rows_k]).reshape(len(rows_k), m)
        points = np.array([outs[i].argmin for i in rows_k]).reshape(len(rows_k), m, d)
        vals = np.asarray(problem.reference(points.reshape(-1, d)), dtype=np.float64).reshape(len(rows_k), m, k)
        j = np.arange(k)
        p = problem.columns
        s = problem.scale
        min_upper[rows_k] = vals[:, 2 * p, j]
        max_lower[rows_k] = vals[:, 2 * p + 1, j]
        min_lower[rows_k] = s * lower[:, 2 * p]
        max_upper[rows_k] = -s * lower[:, 2 * p + 1]
        argmin[rows_k] = points[:, 2 * p]
        argmax[rows_k] = points[:, 2 * p + 1]
    return range_result(
        min_lower, min_upper, argmin, max_lower, max_upper, argmax, epsilon,
        [o.n_iter for o in outs], [o.time for o in outs], warn=warn,
    )


def range_result(min_lower, min_upper, argmin, max_lower, max_upper, argmax, epsilon, n_iter, times, *, warn=True):
    """Assemble a :class:`RangeResult` from (n, k) arrays.

    ``min_upper`` / ``max_lower`` are the model's own values at ``argmin`` /
    ``argmax`` (points of the box), so the true minimum is <= min_upper:
    ``min_lower`` is lowered to it where rounding put it above (never raised),
    and ``max_upper`` raised likewise. NaN bounds (method="search") stay NaN.
    """
    min_upper = np.asarray(min_upper, dtype=np.float64)
    max_lower = np.asarray(max_lower, dtype=np.float64)
    min_lower = np.fmin(np.asarray(min_lower, dtype=np.float64), np.where(np.isnan(min_lower), np.nan, min_upper))
    max_upper = np.fmax(np.asarray(max_upper, dtype=np.float64), np.where(np.isnan(max_upper), np.nan, max_lower))
    with np.errstate(invalid="ignore"):
        converged = (min_upper - min_lower <= epsilon) & (max_upper - max_lower <= epsilon)
    res = RangeResult(
        min_lower=min_lower,
        min_upper=min_upper,
        max_lower=max_lower,
        max_upper=max_upper,
        converged=converged,
        argmin=np.asarray(argmin, dtype=np.float64),
        argmax=np.asarray(argmax, dtype=np.float64),
        n_iter=np.asarray(n_iter, dtype=int),
        time=np.asarray(times, dtype=float),
    )
    n_open = int(np.sum(~res.converged & ~np.isnan(min_lower)))
    if warn and n_open:
        warnings.warn(
            f"{n_open} of {res.converged.size} ranges did not reach epsilon={epsilon} within the budget; "
            "their bounds are valid but wider.",
            BudgetExhaustedWarning,
            stacklevel=user_stacklevel(),
        )
    return res


# ---------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------


def recheck(status, counterexamples, violates):
    """Demote counterexamples the model does not confirm (in place).

    ``violates(rows, points) -> bool (m,)`` asks the model's own prediction
    whether each point violates the property of its row. Returns the rows
    demoted to ``"unknown"``.
    """
    flagged = np.flatnonzero(np.asarray(status) == "not_robust")
    if not flagged.size:
        return flagged
    ok = np.asarray(violates(flagged, counterexamples[flagged]), dtype=bool)
    lost = flagged[~ok]
    status[lost] = "unknown"
    counterexamples[lost] = np.nan
    return lost


def certify_rows(row_func, shared, rows, *, d, n_jobs=None, verbose=0, violates):
    """Run a decision controller per row, re-check every counterexample with
    ``violates`` (see :func:`recheck`) and build the :class:`CertificationResult`."""
    outs = map_rows(row_func, shared, rows, n_jobs, verbose, "certify")
    status = np.array([o.status for o in outs], dtype="<U10")
    cex = np.array([o.counterexample for o in outs], dtype=np.float64).reshape(-1, d)
    recheck(status, cex, violates)
    return certification_result(status, cex, [o.bound for o in outs], [o.n_iter for o in outs],
                                [o.time for o in outs])


def certification_result(status, counterexample, bound, n_iter, times, *, warn=True):
    """A :class:`CertificationResult` (warns when rows are left unknown)."""
    status = np.asarray(status, dtype="<U10")
    res = CertificationResult(
        robust=status == "robust",
        status=status,
        counterexample=np.asarray(counterexample, dtype=np.float64),
        bound=np.asarray(bound, dtype=float),
        n_iter=np.asarray(n_iter, dtype=int),
        time=np.asarray(times, dtype=float),
    )
    n_unknown = int(np.sum(res.status == "unknown"))
    if warn and n_unknown:
        warnings.warn(
            f"{n_unknown} of {len(res)} rows are 'unknown': neither a proof nor a counterexample that the "
            "model's own predict confirms was found. Usually the budget (max_iter/time_limit) ran out; a row "
            "also stays unknown when its bound cannot be told apart from the decision threshold within the "
            "floating-point margin (e.g. gamma = 0, or delta = 0 for a regressor), when its one-vs-one votes "
            "tie, or when predict does not confirm a candidate counterexample (a tie broken the other way). "
            "n_iter and time give the work spent per row.",
            BudgetExhaustedWarning,
            stacklevel=user_stacklevel(),
        )
    return res
