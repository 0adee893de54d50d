"""Plumbing shared by the robust estimators: argument checks, row mapping."""

import ctypes
import multiprocessing
import numbers
import sys
import time
import warnings
from itertools import chain

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import BudgetExhaustedWarning
from ._perturbation import make_boxes
from ._results import CertificationResult, RangeResult


def check_budget(max_iter, time_limit):
    if max_iter is not None and (
        not isinstance(max_iter, numbers.Integral) or isinstance(max_iter, bool) or max_iter < 0
    ):
        raise ValueError(f"max_iter must be a non-negative integer or None, got {max_iter!r}.")
    if time_limit is not None:
        if not isinstance(time_limit, numbers.Real) or not np.isfinite(time_limit) or time_limit <= 0:
            raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}.")


def check_epsilon(epsilon):
    if not isinstance(epsilon, numbers.Real) or not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}.")


def prepare(estimator, X, gamma, features, domain, max_iter, time_limit):
    """Validate X (float64, finite, right width and names) and build the boxes."""
    # sklearn's GPR is tagged requires_fit=False (it predicts from the prior),
    # so the check must name the attributes fit sets.
    check_is_fitted(estimator, estimator._fitted_attributes)
    check_budget(max_iter, time_limit)
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    lo, hi = make_boxes(
        X, gamma, features=features, domain=domain, feature_names=getattr(estimator, "feature_names_in_", None)
    )
    return X, lo, hi


def row_seeds(random_state, n):
    """One independent seed per row, so results do not depend on n_jobs."""
    base = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return [np.random.default_rng(s) for s in np.random.SeedSequence(base).spawn(n)]


_MALLOC_TUNED = False


def _keep_freed_memory():
    """In a worker process (glibc only): keep freed memory instead of giving
    it back to the kernel. The bound computations allocate and free many
    large temporaries; with glibc's defaults each one is a fresh mmap whose
    pages are faulted in and zeroed again, and two workers doing that at once
    were ~25% slower per row than one (n_jobs=2 gave 1.5x instead of 1.85x
    on 2 cores). Thresholds: temporaries up to 32 MiB stay on the heap, and
    up to 256 MiB of free heap is kept."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED or not sys.platform.startswith("linux"):
        return
    if multiprocessing.parent_process() is None:
        # Threading backend (or a worker that is not a child process): this
        # is the user's own process, whose allocator we leave alone.
        return
    _MALLOC_TUNED = True
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: leave the allocator alone
        pass


def _run_chunk(func, shared, rows, worker=False):
    if worker:
        _keep_freed_memory()
    return [func(shared, *row) for row in rows]


def check_verbose(verbose):
    if not isinstance(verbose, numbers.Integral) or verbose < 0:
        raise ValueError(f"verbose must be a non-negative integer (or bool), got {verbose!r}.")
    return int(verbose)


class _Progress:
    """A one-line text progress bar on stderr (serial runs)."""

    def __init__(self, total, label, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self._write()

    def _write(self, end=""):
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(
            f"\r[skgprobust] {self.label} [{bar}] {self.done}/{self.total} rows, "
            f"{elapsed:.1f} s elapsed, ~{left:.1f} s left{end}"
        )
        self.stream.flush()

    def update(self):
        self.done += 1
        self._write("\n" if self.done == self.total else "")


def map_rows(func, shared, rows, n_jobs, verbose=0, label="rows"):
    """``[func(shared, *row) for row in rows]``, across joblib workers.

    ``verbose > 0`` shows progress: a text bar on stderr when serial,
    joblib's progress messages when parallel.
    """
    verbose = check_verbose(verbose)
    n_workers = effective_n_jobs(n_jobs)
    if n_workers == 1 or len(rows) <= 1:
        if not verbose:
            return _run_chunk(func, shared, rows)
        bar, out = _Progress(len(rows), label), []
        for row in rows:
            out.append(func(shared, *row))
            bar.update()
        return out
    n_chunks = min(len(rows), 4 * n_workers)
    chunks = [c for c in np.array_split(np.arange(len(rows)), n_chunks) if len(c)]
    out = Parallel(n_jobs=n_jobs, verbose=10 * verbose)(
        delayed(_run_chunk)(func, shared, [rows[i] for i in c], True) for c in chunks
    )
    return list(chain.from_iterable(out))


def certification_result(outcomes, d):
    status = np.array([o.status for o in outcomes], dtype=object).astype(str)
    if len(outcomes) == 0:
        status = np.empty(0, dtype="<U10")
    cex = np.array([o.counterexample for o in outcomes]).reshape(-1, d)
    res = CertificationResult(
        robust=status == "robust",
        status=status,
        counterexample=cex,
        bound=np.array([o.bound for o in outcomes], dtype=float),
        n_iter=np.array([o.n_iter for o in outcomes], dtype=int),
        time=np.array([o.time for o in outcomes], dtype=float),
    )
    n_unknown = int(np.sum(res.status == "unknown"))
    if n_unknown:
        warnings.warn(
            f"{n_unknown} of {len(res)} rows are 'unknown': the budget (max_iter/time_limit) ran out "
            "before a proof or a counterexample was found.",
            BudgetExhaustedWarning,
            stacklevel=3,
        )
    return res


def range_result(lower_min, upper_min, arg_min, lower_max, upper_max, arg_max, epsilon, n_iter, times):
    """Assemble a RangeResult from (n, k) arrays; ``upper_min``/``lower_max`` are
    the model's own values at ``arg_min``/``arg_max``."""
    res = RangeResult(
        min_lower=lower_min,
        min_upper=upper_min,
        max_lower=lower_max,
        max_upper=upper_max,
        converged=(upper_min - lower_min <= epsilon) & (upper_max - lower_max <= epsilon),
        argmin=arg_min,
        argmax=arg_max,
        n_iter=np.asarray(n_iter, dtype=int),
        time=np.asarray(times, dtype=float),
    )
    n_open = int(np.sum(~res.converged))
    if n_open:
        warnings.warn(
            f"{n_open} of {res.converged.size} ranges did not reach epsilon={epsilon} within the budget; "
            "their bounds are valid but wider.",
            BudgetExhaustedWarning,
            stacklevel=3,
        )
    return res
