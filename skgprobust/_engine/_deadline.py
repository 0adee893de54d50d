"""The current row's deadline for optional work.

Objectives may do work that only sharpens a bound that is already sound
(e.g. the latent slices of the one-vs-rest probability ranges). That work
must not make a row overrun its ``time_limit``: the row's solver publishes,
per thread, the ``time.perf_counter()`` value after which such work is
skipped (a share of the row's time), and the objectives read it here. No
bound depends on it: skipping only leaves the bound as it was.

The row's solver also opens a scratch dict (:func:`row_scratch`) for state
that must last one row and no longer, e.g. the call budget of the latent
slices per root box: kept per model across rows, it made a row's bounds
depend on the rows solved before it and, with joblib's threading backend,
on which thread solved what.
"""

import threading
import time
from contextlib import contextmanager

#: Share of a row's ``time_limit`` that optional tightening may use.
OPTIONAL_SHARE = 0.5

_ROW = threading.local()


def optional_work_deadline():
    """``time.perf_counter()`` value after which optional tightening is
    skipped, or None (no time limit: the work is bounded by call budgets)."""
    return getattr(_ROW, "deadline", None)


def row_scratch():
    """The current row's scratch dict.

    Returns
    -------
    scratch : dict
        A dict that lives while the current row is solved (opened by
        :func:`row_deadline`, one per thread), so that what objectives
        keep in it (call budgets per box) never reaches another row or
        another thread. Outside a row, a new empty dict on every call.
    """
    scratch = getattr(_ROW, "scratch", None)
    return {} if scratch is None else scratch


def optional_work_expired():
    """True once the current row's optional-work deadline has passed."""
    dl = optional_work_deadline()
    return dl is not None and time.perf_counter() >= dl


def row_time_expired():
    """True once the current row's whole ``time_limit`` has passed: work
    that only sharpens a sound bound (e.g. the joint one-vs-rest ratio bound
    of each root) is then skipped, so a row ends near its time limit."""
    end = getattr(_ROW, "end", None)
    return end is not None and time.perf_counter() >= end


def row_epsilon():
    """The current range row's ``epsilon`` (the gap that ends it), or None
    (a decision, or outside a row). Objectives may skip tightening that
    cannot matter at that precision (a choice of work: no bound depends on
    it)."""
    return getattr(_ROW, "epsilon", None)


@contextmanager
def row_deadline(budget, epsilon=None):
    """Publish ``budget``'s optional-work deadline, a fresh
    :func:`row_scratch` and the row's ``epsilon`` (:func:`row_epsilon`) for
    the enclosed solve."""
    prev = (getattr(_ROW, "deadline", None), getattr(_ROW, "end", None), getattr(_ROW, "scratch", None),
            getattr(_ROW, "epsilon", None))
    _ROW.scratch = {}
    _ROW.deadline = None if budget.time_limit is None else budget.start + OPTIONAL_SHARE * budget.time_limit
    _ROW.end = None if budget.time_limit is None else budget.start + budget.time_limit
    _ROW.epsilon = None if epsilon is None else float(epsilon)
    try:
        yield
    finally:
        _ROW.deadline, _ROW.end, _ROW.scratch, _ROW.epsilon = prev
