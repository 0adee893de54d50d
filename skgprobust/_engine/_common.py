"""Plumbing shared by the robust estimators: argument checks, row mapping."""

import ctypes
import hashlib
import multiprocessing
import numbers
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from itertools import chain

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from ._perturbation import make_boxes


_PACKAGE_FILES = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, "<skgprobust:")


def user_stacklevel():
    """The ``stacklevel`` that makes ``warnings.warn`` (called by the
    function that calls this) point at the first frame outside the package:
    the user's call of ``certify`` etc., however many of the package's own
    frames (public method, shared body, driver) lie between. Frames of the
    generated public methods (:mod:`._api`) count as the package's. (Python
    3.12's ``skip_file_prefixes`` does the same.)"""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_FILES):
        frame, level = frame.f_back, level + 1
    return level


@contextmanager
def quiet_feature_names():
    """A context in which sklearn's "X does not have valid feature names"
    warning is ignored: for the package's own predict calls on float arrays
    of points (box samples, attack iterates, grids), made after the user's
    input has been validated with its names.

    Yields
    ------
    None
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        yield


def _is_real(value):
    """A real number that is not a bool (``True`` is an Integral, so a Real:
    taken as 1.0 it would silently be a 1-second budget or a tolerance of 1;
    rejected as for ``max_iter``)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_budget(max_iter, time_limit):
    if max_iter is not None and (
        not isinstance(max_iter, numbers.Integral) or isinstance(max_iter, bool) or max_iter < 0
    ):
        raise ValueError(f"max_iter must be a non-negative integer or None, got {max_iter!r}.")
    if time_limit is not None:
        if not _is_real(time_limit) or not np.isfinite(time_limit) or time_limit <= 0:
            raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}.")


def check_not_compound(kernel):
    """Refuse a ``CompoundKernel`` at ``fit`` with sklearn's own message (its
    GP classifier's check): these models use one kernel for the latent
    function(s), and a CompoundKernel otherwise fails deep inside (``np.diag``
    of a 3-D Gram tensor, or ``clone_with_theta``'s missing ``k1``)."""
    from sklearn.gaussian_process.kernels import CompoundKernel

    if isinstance(kernel, CompoundKernel):
        raise ValueError("kernel cannot be a CompoundKernel")


def check_gram(K, kernel, model):
    """Raise ``LinAlgError`` unless the Gram matrix K (of ``kernel`` at the
    training inputs) is positive semi-definite up to rounding.

    The classifiers factor only B = I + W^1/2 K W^1/2 (W the likelihood's
    curvature or EP's site precisions), which stays positive definite for
    small W even when K is indefinite, so without this check a kernel that is
    not a covariance (``Exponentiation(RBF(), -1)``, ``ExpSineSquared`` on
    more than one feature) fits silently to a meaningless model (negative
    latent variances, chance-level training accuracy) that ``certify`` would
    then certify. The test is a Cholesky factor of K + j I with
    j = 1e-8 max|diag K| (plus the smallest normal number): far above the
    rounding of a valid (even singular) Gram matrix, far below the negative
    eigenvalues of a kernel that is not a covariance. It only refuses; it
    changes nothing the fit computes.

    A Gram matrix with non-finite entries (inf or NaN: an overflowing
    amplitude or power, a zero length scale) is refused first, by name: the
    model's own predictions are NaN there, and a certified range (finite or
    not) would not hold for them. ``LinAlgError`` is a ``ValueError``.
    """
    from scipy.linalg import cholesky

    K = np.asarray(K)
    if not np.all(np.isfinite(K)):
        raise np.linalg.LinAlgError(
            f"The kernel {kernel} has non-finite values (inf or NaN) at the training inputs: {model} cannot "
            "fit it (its predictions would be NaN), and no bound would hold for them."
        )
    jitter = 1e-8 * float(np.max(np.abs(np.diag(K)), initial=0.0)) + np.finfo(np.float64).tiny
    try:
        cholesky(K + jitter * np.eye(len(K)), lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError(
            f"The kernel {kernel} is not positive semi-definite at the training inputs (Cholesky of "
            f"K + {jitter:.3g} I failed): it is not a valid covariance, and {model} cannot fit it."
        ) from None


def discard_fit(estimator):
    """Remove every fitted attribute (name ending in "_", sklearn's
    convention) after a ``fit`` that failed part-way, so the estimator reads
    as not fitted (``NotFittedError``) rather than as the failed model."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


def check_epsilon(epsilon):
    if not _is_real(epsilon) or not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}.")


def check_statistic(statistic, allowed, model=None):
    """``statistic`` must be one of ``allowed`` (``model`` names the kind of
    model in the message, e.g. "a regressor")."""
    if statistic not in allowed:
        names = " or ".join(repr(a) for a in allowed)
        where = f" for {model}" if model else ""
        raise ValueError(f"statistic must be {names}{where}, got {statistic!r}.")


def check_classifier_args(delta, norm):
    """A classifier's ``certify`` takes ``delta`` and ``norm`` only to share
    the regressors' signature: they must be left at their defaults."""
    if delta is not None:
        raise ValueError("delta applies to regressors; a classifier is certified on its predicted class.")
    if norm != np.inf:
        raise ValueError("norm applies to regressors' outputs; leave it at np.inf for a classifier.")


NORMS = (1, 2, np.inf)


def check_delta_norm(delta, norm):
    """A regressor's ``certify``: ``delta`` a required non-negative finite
    number, ``norm`` one of :data:`NORMS`. Returns ``float(delta)``."""
    if delta is None:
        raise ValueError("certify on a regressor needs delta, the allowed change of the predictive mean.")
    if not _is_real(delta) or not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be a non-negative finite number, got {delta!r}.")
    if norm not in NORMS:
        raise ValueError(f"norm must be one of 1, 2, np.inf, got {norm!r}.")
    return float(delta)


def check_output_index(target, n_outputs):
    """``target`` an output column index in [0, n_outputs). Returns it as int."""
    if not isinstance(target, numbers.Integral) or isinstance(target, bool) or not 0 <= target < n_outputs:
        raise ValueError(f"target must be an output index in [0, {n_outputs - 1}], got {target!r}.")
    return int(target)


def float64_inputs(X, kernel):
    """Numeric inputs as float64 (training inputs at ``fit``, queries at
    ``predict`` / ``predict_proba``), so the model evaluates every kernel in
    float64 whatever dtype the user passes.

    sklearn validates GP inputs with ``dtype="numeric"``, so float32 (or
    integer) inputs stay as they are, and kernels that do not promote then
    compute in float32: ``DotProduct`` evaluates ``np.inner(X, X_train_)``
    and ``diag(X)`` in the inputs' dtype, and its powers and a rank-deficient
    ``alpha_`` amplify that rounding. Every bound here is proven for the
    float64 evaluation at the (exactly representable) float64 value of the
    query, which is what the models compute after this conversion; a float32
    value converts to float64 exactly, so the point is the same point.
    Non-vector kernels and non-numeric data are passed through unchanged
    (they are refused later, by name).
    """
    if kernel is not None and not kernel.requires_vector_input:
        return X
    if hasattr(X, "dtypes") and hasattr(X, "astype"):  # pandas DataFrame
        try:
            kinds = [np.dtype(d).kind for d in X.dtypes]
        except TypeError:  # extension dtypes: let sklearn's validation decide
            return X
        if all(k in "fiub" for k in kinds) and any(np.dtype(d) != np.float64 for d in X.dtypes):
            return X.astype(np.float64)
        return X
    if isinstance(X, np.ndarray):
        if X.dtype.kind in "fiub" and X.dtype != np.float64:
            return X.astype(np.float64)
        return X
    # lists / tuples of float32 rows (what iterating a float32 array gives)
    # would become a float32 array in sklearn's validation
    try:
        arr = np.asarray(X)
    except Exception:  # ragged or exotic input: sklearn's validation reports it
        return X
    if arr.dtype.kind in "fiub" and arr.dtype != np.float64:
        return arr.astype(np.float64)
    return X


def prepare(estimator, X, gamma, features, domain, max_iter, time_limit):
    """Check the estimator is fitted and boundable, validate X (float64,
    finite, right width and names) and build the boxes.

    The bound model is fetched (built once per fit) *before* X is validated,
    so an unsupported kernel or model is refused by name
    (UnsupportedKernelError) rather than by an error from input validation
    (e.g. a string kernel's non-numeric training data).
    """
    # sklearn's GPR is tagged requires_fit=False (it predicts from the prior),
    # so the check must name the attributes fit sets.
    check_is_fitted(estimator, estimator._fitted_attributes)
    estimator._bound_model()
    check_budget(max_iter, time_limit)
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    lo, hi = make_boxes(
        X, gamma, features=features, domain=domain, feature_names=getattr(estimator, "feature_names_in_", None)
    )
    return X, lo, hi


def bound_model_of(estimator):
    """The (cached) :class:`~skgprobust._engine._latent.BoundModel` of a fitted
    robust estimator."""
    return estimator._bound_model()


class BoundModelMixin:
    """Keeps the estimator's :class:`~skgprobust._engine._latent.BoundModel`
    (built lazily, once per fit) and leaves it out of pickles.

    Subclasses define ``_build_bound_model()`` and ``_fit_token()``: an object
    that a refit replaces (e.g. ``alpha_``), so a refit invalidates the cache.

    The cache is also invalidated when any fitted attribute (every instance
    attribute that is not a constructor parameter) is *reassigned*, e.g. a
    hand-set ``kernel_``: the cached model keeps references to the objects it
    was built from and is reused only while each of them is still the one
    the estimator holds (identity, so no id reuse after garbage collection).
    Fitted arrays modified *in place* are read-only by contract, as in
    scikit-learn (refit instead), with one exception checked here: with
    ``copy_X_train=False`` the training inputs ``X_train_`` (of the
    estimator, its ``base_estimator_`` / ``estimators_`` and theirs) are the
    caller's own array, which the caller may well change after fit. The
    model is then no longer the fitted one (``predict`` combines the new
    inputs with the factors and weights fitted on the old ones, for which
    the variance bounds' lemma does not hold), so no bound is computed: the
    contents are hashed at fit (``_skgp_note_fit``; else at the first call)
    and on every call (O(N d), a stable hash, also across processes), and a
    change raises a ValueError asking for a refit (UX audit and referee,
    session 26: first a robust certificate for the old inputs while
    ``predict`` read the new ones; then, rebuilt on the new inputs with the
    old factors, 'robust' rows whose ``predict`` changed in the box).
    """

    def _fit_state(self):
        params = self.get_params(deep=False)
        state = [(k, v) for k, v in self.__dict__.items() if k not in params and not k.startswith("_skgp")]
        return (self._fit_token(), state)

    def _shared_inputs_digest(self):
        """Digests of the ``X_train_`` arrays the estimator may share with the
        caller (``copy_X_train=False``); () otherwise."""
        if getattr(self, "copy_X_train", True):
            return ()
        base = self.__dict__.get("base_estimator_")
        owners = [self, base, *(getattr(base, "estimators_", None) or ()), *(self.__dict__.get("estimators_") or ())]
        digest, seen = [], {}
        for owner in owners:
            a = getattr(owner, "X_train_", None) if owner is not None else None
            if isinstance(a, np.ndarray) and a.dtype.kind in "biufc":
                # one-vs-rest / one-vs-one binaries hold the caller's one array:
                # hashed once per call (10 classes of digits: 3.9 -> 0.4 ms)
                if id(a) not in seen:
                    seen[id(a)] = hashlib.blake2b(np.ascontiguousarray(a).view(np.uint8).ravel(),
                                                  digest_size=16).hexdigest()
                digest.append((a.shape, a.dtype.str, seen[id(a)]))
        return tuple(digest)

    def _skgp_note_fit(self):
        """Record the caller-owned training inputs' digest at the end of fit
        (with the fit token it belongs to)."""
        if not getattr(self, "copy_X_train", True):
            self.__dict__["_skgp_fit_inputs"] = (self._fit_token(), self._shared_inputs_digest())

    def _check_shared_inputs(self):
        """Raise if ``X_train_`` (``copy_X_train=False``) changed since fit."""
        if getattr(self, "copy_X_train", True):
            return
        now, token = self._shared_inputs_digest(), self._fit_token()
        rec = self.__dict__.get("_skgp_fit_inputs")
        if rec is None or rec[0] is not token:  # not recorded at this fit: from the first call on
            self.__dict__["_skgp_fit_inputs"] = (token, now)
            return
        if rec[1] != now:
            raise ValueError(
                "The training inputs X_train_ were changed in place after fit (copy_X_train=False): the fitted "
                "model's factors and weights belong to the old inputs, so predict no longer computes a fitted GP "
                "and no bound can be certified for it. Refit the estimator (or fit with copy_X_train=True)."
            )

    @staticmethod
    def _same_state(a, b):
        if a[0] is not b[0] or len(a[1]) != len(b[1]):
            return False
        return all(ka == kb and va is vb for (ka, va), (kb, vb) in zip(a[1], b[1]))

    def _bound_model(self):
        self._check_shared_inputs()
        token = self._fit_state()
        cached = self.__dict__.get("_skgp_bound_model")
        if cached is not None and self._same_state(cached[0], token):
            return cached[1]
        with _CACHE_LOCK:
            cached = self.__dict__.get("_skgp_bound_model")
            if cached is not None and self._same_state(cached[0], token):
                return cached[1]
            model = self._build_bound_model()
            self.__dict__["_skgp_bound_model"] = (token, model)
            return model

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_skgp_bound_model", None)
        return state


_CACHE_LOCK = threading.RLock()


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


def check_n_jobs(n_jobs):
    """``n_jobs`` None or a non-zero integer (joblib's meaning; not a bool).
    Anything else failed inside joblib ("'<' not supported between 'str' and
    'int'") or, for a float, was accepted silently."""
    if n_jobs is not None and (
        not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0
    ):
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    return n_jobs


def check_bool(value, name):
    """``value`` a bool (Python's or numpy's), as scikit-learn's "boolean"
    parameter constraint asks. Anything else is refused by name: a truthy
    string such as ``"False"`` or a number would otherwise switch the option
    on silently.

    Parameters
    ----------
    value : object
        The parameter's value.
    name : str
        The parameter's name, for the message.

    Returns
    -------
    value : bool
        ``bool(value)``.

    Raises
    ------
    ValueError
        If ``value`` is not a bool.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool (True or False), got {value!r}.")
    return bool(value)


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
        # No estimate of the time left before the first row ends.
        left = f", ~{elapsed / self.done * (self.total - self.done):.1f} s left" if self.done else ""
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(
            f"\r[skgprobust] {self.label} [{bar}] {self.done}/{self.total} rows, "
            f"{elapsed:.1f} s elapsed{left}{end}"
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
    n_workers = effective_n_jobs(check_n_jobs(n_jobs))
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
