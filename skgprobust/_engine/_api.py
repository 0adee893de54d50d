"""What the robust estimators' ``certify`` / ``prediction_range`` / ``explain``
share: their docstring text and the bodies that are the same for every
classifier (or every model).

Docstrings
----------
:data:`DOCS` holds one numpydoc entry per parameter (and per Returns entry)
the methods document. A method's docstring names an entry on a line of its
own, ``%(key)s``, and :func:`fill_doc` replaces that line with the entry,
indented as the line was, when the class is defined. Only such whole lines
are replaced (no ``%`` formatting of the rest), so a docstring may contain
``%`` freely, and an unknown key fails at import time, not in the docs build.

Method bodies
-------------
:func:`certify_classes` is ``certify`` of a classifier (same class over the
box, checked by the model's own ``predict``), :func:`explain_classes` the
Delta metric of one class probability, :func:`explanation` the common tail
of every ``explain``; :class:`ProbaOnly` hides the probability methods of
one-vs-one multi-class models (which have no ``predict_proba``). Each estimator keeps what is its own (its row solver,
its objectives, its reference function) and passes it in.

Public methods
--------------
:class:`RegressorBoundsMixin` and :class:`ClassifierBoundsMixin` own the
public ``certify``, ``prediction_range`` and ``explain`` of the two kinds of
estimator: each method (signature, docstring, body) is written once per kind
here, and an estimator implements only a few private hooks (listed in the
mixins' docstrings) plus ``_method_docs``, the parts of the docstrings that
are its own (summaries, the ``statistic`` entry, notes on the results).

The estimators differ in which methods take ``variance_bound`` (declared by
``_variance_bound_methods``), so for each class that declares
``_method_docs`` the mixin defines the three methods, with exactly the
signature that class documents, as a generated forwarder to the kind's one
body (the way :mod:`dataclasses` writes ``__init__``): a real function, so
``inspect.signature``, the docs, and the errors of a wrong call (a
TypeError naming ``Class.method()``) are those of a hand-written method.
Subclasses that do not declare ``_method_docs`` (EP, sparse) inherit them.
"""

import dataclasses
import linecache
import re
import warnings

import numpy as np

from ._common import (
    BoundModelMixin,
    check_classifier_args,
    check_delta_norm,
    check_epsilon,
    check_output_index,
    check_statistic,
    prepare,
    row_seeds,
    user_stacklevel,
)
from ._delta import Explanation, class_targets, explain_rows, feature_names_of, one_sided_boxes
from ._driver import RangeProblem, certify_rows, range_rows
from ._latent import check_variance_bound, fitted_decision_kind
from ._perturbation import resolve_features
from ._solve import Budget, solve_deviation

__all__ = [
    "DOCS",
    "ClassifierBoundsMixin",
    "ProbaOnly",
    "RegressorBoundsMixin",
    "certify_classes",
    "explain_classes",
    "explained_features",
    "explanation",
    "fill_doc",
    "proba_available",
]

#: One numpydoc entry per key: the first line ``name : type``, the
#: description indented by four spaces.
DOCS = {
    "X": """\
X : array-like of shape (n_samples, n_features)
    Centres of the boxes.""",
    "gamma": """\
gamma : float or array-like of shape (n_features,)
    Half-width of the l_inf box per feature, in the units of X.""",
    "gamma_explain": """\
gamma : float or array-like of shape (n_features,)
    Half-width of the one-sided boxes per feature, in the units of X.""",
    "delta_classifier": """\
delta : None
    Regressors only; must be None here.""",
    "norm_classifier": """\
norm : np.inf
    Regressors only; must be left at its default here.""",
    "delta_regressor": """\
delta : float
    Allowed change of the mean; required.""",
    "norm_regressor": """\
norm : {1, 2, np.inf}, default=np.inf
    Norm over the outputs (targets).""",
    "epsilon_range": """\
epsilon : float, default=1e-2
    Positive and finite. Refine until both gaps (min_upper - min_lower,
    max_upper - max_lower) are <= epsilon for every column, or the budget
    is spent.""",
    "epsilon_explain": """\
epsilon : float, default=1e-2
    Precision (positive, finite) of each of the four ranges behind an
    entry.""",
    "features": """\
features : array-like of int, bool or str, default=None
    Features allowed to move; the others stay fixed. None: all. Indices,
    a boolean mask or fitted feature names, each feature at most once (a
    repeat raises); a selection of no feature warns (each box is then its
    row alone).""",
    "features_explain": """\
features : array-like of int, bool or str, default=None
    Features to explain (None: all); the results list them in the order of
    X's columns, whatever the order given (``feature_names`` says which).""",
    "domain": """\
domain : tuple (low, high), default=None
    Valid input range: each end a scalar, one value per feature, or None
    (unbounded). Every row of X must lie in it (else a ValueError naming
    the rows); the box is clipped to it.""",
    "max_iter": """\
max_iter : int, default=None
    Boxes split per row (5000 when both budgets are None).""",
    "max_iter_range": """\
max_iter : int, default=None
    Boxes split per row, all output columns together (5000 when both
    budgets are None).""",
    "max_iter_explain": """\
max_iter : int, default=None
    Boxes split per one-sided box (5000 when both budgets are None).""",
    "time_limit": """\
time_limit : float, default=None
    Seconds per row.""",
    "time_limit_explain": """\
time_limit : float, default=None
    Seconds per one-sided box.""",
    "n_jobs": """\
n_jobs : int, default=None
    Rows run in parallel with joblib; results do not depend on it.""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Seeds the random starts of the local search.""",
    "verbose": """\
verbose : int, default=0
    Progress on stderr while rows run (a text bar when serial,
    joblib's messages when ``n_jobs`` runs them in parallel).""",
    "variance_bound_classifier": """\
variance_bound : {"default", "paper"}, default="default"
    Variance bounds for one-vs-rest models (unused for two classes
    and one-vs-one): the closed-form default or the paper's QP/LP
    (Props. 5-6, much slower; the reference; one stationary kernel,
    optionally times a constant and plus white noise, else
    ``UnsupportedKernelError``).""",
    "variance_bound_regressor": """\
variance_bound : {"default", "paper"}, default="default"
    For statistic="std": the closed-form variance bounds (default)
    or the paper's QP/LP (Props. 5-6, much slower; the reference; one
    stationary kernel, optionally times a constant and plus white
    noise, else ``UnsupportedKernelError``).""",
    "method": """\
method : {"bounds", "search"}, default="bounds"
    "bounds": certified intervals by branch and bound. "search":
    local search only (fast estimate; ``lower``/``upper`` are NaN).""",
    "target_class": """\
target : label or array-like of shape (n_samples,), default=None
    Class explained (a label of ``classes_``), per row or for all
    rows; None: the predicted class of each row.""",
    "target_output": """\
target : int, default=0
    Output column (target index) whose mean is explained.""",
    "certify_returns": """\
result : CertificationResult
    ``status`` per row: "robust" (proven), "not_robust" (a
    counterexample in the box, re-checked with the model's own
    ``predict``, is in ``counterexample``) or "unknown" (the budget was
    spent first).""",
    "range_returns": """\
result : RangeResult
    ``min_lower <= min over the box <= min_upper`` and
    ``max_lower <= max over the box <= max_upper``, per row and column;
    ``min_upper`` / ``max_lower`` are values the model's own predict
    returns at ``argmin`` / ``argmax``.""",
    "explain_returns": """\
explanation : Explanation
    ``values`` (Delta from the points found) and its certified bounds
    ``lower <= values <= upper`` (NaN for ``method="search"``), of
    shape (n_samples, n_features explained).""",
}


class ProbaOnly:
    """Like sklearn's ``available_if``: the method exists (``hasattr``) unless
    the model is a one-vs-one model of more than two classes, and then
    accessing it raises an AttributeError that says why and what to use."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is not None and not proba_available(obj):
            raise AttributeError(
                f"{type(obj).__name__}.{self.name} is not available: a one-vs-one multi-class model "
                "(multi_class='one_vs_one') has no predict_proba, so its probabilities cannot be bounded. "
                "Use certify() (one-vs-one decisions are certified through the pairwise votes), or fit with "
                "multi_class='one_vs_rest' for probabilities, prediction_range and explain."
            )
        if obj is None:
            return self.fn
        return self.fn.__get__(obj, owner)


def proba_available(estimator):
    """predict_proba / prediction_range exist unless the model is a fitted
    (or to-be-fitted) one-vs-one model of more than two classes: the fitted
    wrapper decides once fitted (``set_params`` after a fit does not change
    what ``predict`` uses), the parameter before."""
    if hasattr(estimator, "base_estimator_") and hasattr(estimator, "classes_"):
        return fitted_decision_kind(estimator) != "one_vs_one"
    if estimator.multi_class != "one_vs_one":
        return True
    return getattr(estimator, "n_classes_", None) == 2


# ``fit`` of the estimators that subclass sklearn's GPs: the description and
# the start of the Parameters (then their own ``y``).
DOCS["fit_float64"] = """\
Numeric training inputs are stored as float64 (sklearn keeps float32),
so that ``predict`` evaluates every kernel in float64, the arithmetic
the certified bounds are proven for (see
``skgprobust._engine._common.float64_inputs``).

Parameters
----------
X : array-like of shape (n_samples, n_features) or list of object
    Training inputs."""

# Groups, in the order of the signatures: the boxes (X, gamma; for explain
# also the features explained), and the budget and execution parameters.
DOCS["box"] = "\n".join(DOCS[k] for k in ("X", "gamma"))
DOCS["box_explain"] = "\n".join(DOCS[k] for k in ("X", "gamma_explain", "features_explain"))
DOCS["run"] = "\n".join(DOCS[k] for k in ("features", "domain", "max_iter", "time_limit", "n_jobs", "random_state",
                                          "verbose"))
DOCS["run_range"] = "\n".join(DOCS[k] for k in ("features", "domain", "max_iter_range", "time_limit", "n_jobs",
                                                "random_state", "verbose"))
DOCS["run_explain"] = "\n".join(DOCS[k] for k in ("domain", "max_iter_explain", "time_limit_explain", "n_jobs",
                                                  "random_state", "verbose"))

_KEY_LINE = re.compile(r"^(?P<indent>[ \t]*)%\((?P<key>\w+)\)s[ \t]*$")


def fill_text(doc, docs=DOCS):
    """``doc`` with each line ``%(key)s`` replaced by ``docs[key]``, indented
    as that line (a key mapped to "" removes its line)."""
    lines = []
    for line in doc.split("\n"):
        m = _KEY_LINE.match(line)
        if m is None:
            lines.append(line)
            continue
        indent, text = m.group("indent"), docs[m.group("key")]
        if text:
            lines.extend(indent + entry if entry else entry for entry in text.split("\n"))
    return "\n".join(lines)


def fill_doc(obj):
    """Replace each docstring line ``%(key)s`` of ``obj`` with ``DOCS[key]``,
    indented as that line; returns ``obj`` (a decorator for functions and
    classes). An unknown key raises KeyError at definition time."""
    if obj.__doc__:
        obj.__doc__ = fill_text(obj.__doc__)
    return obj


def explained_features(estimator, X, features):
    """Indices of the features ``explain`` reports (``features`` given as
    for the boxes: ints, a boolean mask or feature names)."""
    return np.flatnonzero(resolve_features(features, X.shape[1], getattr(estimator, "feature_names_in_", None)))


def explanation(estimator, X, lo, hi, gamma, feats, labels, targets, problems, **run):
    """Run the Delta metric of ``problems[targets[i]]`` on row i and wrap it
    in an :class:`Explanation` (``run``: epsilon, method, max_iter,
    time_limit, n_jobs, random_state, verbose)."""
    d = X.shape[1]
    values, low, high, converged, times = explain_rows(X, lo, hi, feats, list(targets), problems, **run)
    return Explanation(
        values, low, high, converged, feats, feature_names_of(estimator, feats), np.asarray(labels),
        np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,))[feats].copy(), times,
    )


def explain_classes(estimator, X, gamma, *, features, target, domain, predict, proba_pairs, reference, check=None,
                    finite=None, **run):
    """``explain`` of a classifier: the Delta metric of the probability of
    the explained class (``target``, or each row's predicted class).

    ``proba_pairs()`` returns ``c -> (objective, negated objective)`` of
    column c of ``reference(P)`` (the model's own probabilities); it is
    called once, after the arguments are checked. ``check()``, if given, is
    run right after the estimator and X are validated. ``finite(lo, hi)``,
    if given, says per box whether the probabilities are proven finite
    there (:func:`_probabilities_finite`): a feature whose one-sided boxes
    are not both proven is reported not converged, with a warning.
    """
    X, lo, hi = prepare(estimator, X, gamma, None, domain, run["max_iter"], run["time_limit"])
    if check is not None:
        check()
    feats = explained_features(estimator, X, features)
    labels, idx = class_targets(estimator.classes_, target, len(X), lambda: predict(X))
    pair = proba_pairs()

    def problem(c):
        def column(P):
            return reference(P)[:, [c]]

        return RangeProblem([pair(c)], column)

    problems = {c: problem(c) for c in sorted(set(idx.tolist()))}
    res = explanation(estimator, X, lo, hi, gamma, feats, labels, idx.tolist(), problems, **run)
    if finite is None or not res.converged.size:
        return res
    blo, bhi = one_sided_boxes(X, lo, hi, feats)  # (n, 2k, d)
    n, k2, d = blo.shape
    ok = finite(blo.reshape(-1, d), bhi.reshape(-1, d)).reshape(n, k2 // 2, 2).all(axis=2)
    if ok.all():
        return res
    _warn_nan(int((~ok).sum()), ok.size, "explained features")
    return dataclasses.replace(res, converged=res.converged & ok)


def certify_classes(estimator, X, gamma, *, delta, norm, predict, solver, features, domain, max_iter, time_limit,
                    n_jobs, random_state, verbose):
    """``certify`` of a classifier: the class ``predict`` gives at each
    row's centre, proven constant over its box.

    ``solver(X)`` returns ``(row_func, shared)`` for
    :func:`~skgprobust._engine._driver.certify_rows` (row_func is called as
    ``row_func(shared, x0, lo, hi, label, rng)``); it runs after the
    arguments and X are validated. Counterexamples are re-checked with
    ``predict`` itself, one point per call (the candidate's class against
    its row centre's).
    """
    check_classifier_args(delta, norm)
    X, lo, hi = prepare(estimator, X, gamma, features, domain, max_iter, time_limit)
    n, d = X.shape
    func, shared = solver(X)
    labels = predict(X) if n else np.empty(0, dtype=estimator.classes_.dtype)
    rows = list(zip(X, lo, hi, labels, row_seeds(random_state, n)))

    # A counterexample is confirmed with one predict per point, of the
    # candidate and of its row's centre alike: where two classes' scores
    # tie, a batched predict can break the tie differently from a one-row
    # call, and the centre itself must not count as a point where the
    # decision changes. (A proof needs a strictly positive margin, so the
    # batch's labels are the one-row labels of every row proven robust.)
    def violates(idx, P):
        return np.array([predict(p[None])[0] != predict(X[i][None])[0] for i, p in zip(idx, P)], dtype=bool)

    return certify_rows(func, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)


# -- The public methods, once per kind ------------------------------------------

#: The run parameters every public method ends with (before ``variance_bound``).
_RUN = (("features", None), ("domain", None), ("max_iter", None), ("time_limit", None), ("n_jobs", None),
        ("random_state", None), ("verbose", 0))

#: Docstring templates; ``%(certify)s`` etc. are the class's own parts
#: (``_method_docs``), ``%(delta)s`` etc. the kind's entries.
_TEMPLATES = {
    "certify": '''
        %(certify)s

        Parameters
        ----------
        %(box)s
        %(delta)s
        %(norm)s
        %(run)s
        %(variance_bound)s

        Returns
        -------
        %(certify_returns)s
            %(certify_result)s
        ''',
    "prediction_range": '''
        %(prediction_range)s

        Parameters
        ----------
        %(box)s
        %(epsilon_range)s
        %(statistic)s
        %(run_range)s
        %(variance_bound)s

        Returns
        -------
        %(range_returns)s
            %(range_result)s
        ''',
    "explain": '''
        %(explain)s

        Parameters
        ----------
        %(box_explain)s
        %(target)s
        %(epsilon_explain)s
        %(method)s
        %(run_explain)s
        %(variance_bound)s

        Returns
        -------
        %(explain_returns)s
        ''',
}


def _keywords(method, defaults):
    """The keyword-only parameters (name, default) of a public method
    (``defaults``: the kind's defaults of ``statistic`` and ``target``)."""
    if method == "certify":
        return (("delta", None), ("norm", np.inf)) + _RUN
    if method == "prediction_range":
        return (("epsilon", 1e-2), ("statistic", defaults["statistic"])) + _RUN
    return (("features", None), ("target", defaults["target"]), ("epsilon", 1e-2), ("method", "bounds")) + _RUN[1:]


def _forwarder(cls, name, keywords, body, doc):
    """``cls.<name>(self, X, gamma, *, <keywords>)``, calling ``body`` with
    the same arguments: a function with exactly that signature, compiled as
    a method of a class named like ``cls`` (so a wrong call's TypeError
    names ``Class.name()``, as a hand-written method's does)."""
    names = [k for k, _ in keywords]
    src = (
        f"class {cls.__name__}:\n"
        f"    def {name}(self, X, gamma, *, {', '.join(names)}):\n"
        f"        return _body(self, X, gamma, {', '.join(f'{k}={k}' for k in names)})\n"
    )
    filename = f"<skgprobust: {cls.__module__}.{cls.__qualname__}.{name}>"
    namespace = {"_body": body}
    exec(compile(src, filename, "exec"), namespace)  # a fixed template, as dataclasses writes __init__
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # source in tracebacks
    fn = vars(namespace[cls.__name__])[name]
    fn.__kwdefaults__ = dict(keywords)
    fn.__module__, fn.__qualname__, fn.__doc__ = cls.__module__, f"{cls.__qualname__}.{name}", doc
    return fn


def _certify_row(shared, x0, lo, hi, center, rng):
    """A regressor's row: ``||mean(x) - center||_norm <= delta`` on [lo, hi],
    candidates checked with the model's own ``_predict_values``."""
    estimator, objectives, delta, norm, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)

    def deviation(x):
        return float(np.linalg.norm(estimator._predict_values(x[None])[0] - center, ord=norm))

    return solve_deviation(objectives, center, lo, hi, x0, delta, norm, budget, rng, deviation)


def _regressor_certify(est, X, gamma, *, delta, norm, features, domain, max_iter, time_limit, n_jobs, random_state,
                       verbose):
    delta = check_delta_norm(delta, norm)
    X, lo, hi = prepare(est, X, gamma, features, domain, max_iter, time_limit)
    n, d = X.shape
    # One predict per row, the same call that checks candidates: a batched
    # predict can differ in the last bits, enough to make x* itself look
    # like a counterexample when delta = 0.
    centers = np.array([est._predict_values(x[None])[0] for x in X]) if n else np.empty((0, 1))
    shared = (est, est._bound_model().mean_pairs(), delta, norm, max_iter, time_limit)
    rows = list(zip(X, lo, hi, centers, row_seeds(random_state, n)))

    def violates(idx, P):
        dev = [np.linalg.norm(est._predict_values(p[None])[0] - centers[i], ord=norm) for i, p in zip(idx, P)]
        return np.array(dev) > delta

    return certify_rows(_certify_row, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)


def _range(est, X, gamma, statistic, variance_bound, *, epsilon, features, domain, max_iter, time_limit, n_jobs,
           random_state, verbose, boxes=False):
    """The common part of ``prediction_range``: the range problem of the
    statistic (``est._range_problem``), run row by row (with ``boxes``: and
    the boxes ``lo, hi``)."""
    check_epsilon(epsilon)
    check_variance_bound(variance_bound)
    X, lo, hi = prepare(est, X, gamma, features, domain, max_iter, time_limit)
    problem = est._range_problem(statistic, variance_bound)
    res = range_rows(
        {0: problem}, [0] * len(X), X, lo, hi, epsilon=epsilon, max_iter=max_iter, time_limit=time_limit,
        n_jobs=n_jobs, random_state=random_state, verbose=verbose,
    )
    return (res, lo, hi) if boxes else res


def _regressor_range(est, X, gamma, *, statistic, variance_bound="default", **run):
    check_statistic(statistic, ("mean", "std"), "a regressor")
    return _range(est, X, gamma, statistic, variance_bound, **run)


def _regressor_explain(est, X, gamma, *, features, target, epsilon, method, domain, max_iter, time_limit, n_jobs,
                       random_state, verbose):
    X, lo, hi = prepare(est, X, gamma, None, domain, max_iter, time_limit)
    n = len(X)
    feats = explained_features(est, X, features)
    pairs = est._bound_model().mean_pairs()
    target = check_output_index(target, len(pairs))

    def reference(P):
        return est._predict_values(P)[:, [target]]

    problems = {target: RangeProblem([pairs[target]], reference)}
    return explanation(
        est, X, lo, hi, gamma, feats, np.full(n, target), [target] * n, problems, epsilon=epsilon, method=method,
        max_iter=max_iter, time_limit=time_limit, n_jobs=n_jobs, random_state=random_state, verbose=verbose,
    )


def _classifier_certify(est, X, gamma, *, delta, norm, features, domain, max_iter, time_limit, n_jobs, random_state,
                        verbose, variance_bound="default"):
    est._before_certify()
    return certify_classes(
        est, X, gamma, delta=delta, norm=norm, predict=est._predict_labels,
        solver=lambda X: est._row_solver(X, variance_bound, max_iter, time_limit), features=features,
        domain=domain, max_iter=max_iter, time_limit=time_limit, n_jobs=n_jobs, random_state=random_state,
        verbose=verbose,
    )


def _classifier_range(est, X, gamma, *, statistic, variance_bound="default", **run):
    check_statistic(statistic, ("proba", "latent_mean"))
    res, lo, hi = _range(est, X, gamma, statistic, variance_bound, boxes=True, **run)
    # After _finish_range, which may rebuild the result (binary models: both
    # columns from class 1's) and recompute converged from the gaps alone
    # (hunt, session 25: the flag was lost there).
    res = est._finish_range(res, statistic, run["epsilon"])
    if statistic == "proba":
        res = _not_converged_where_nan(est, res, lo, hi, variance_bound)
    return res


def _probabilities_finite(est, lo, hi, variance_bound):
    """(B,) bool: the model's ``predict_proba`` is proven finite on box b
    (lo, hi: (B, d)); all True for models without that failure mode.

    sklearn's Laplace ``predict_proba`` (and the probit link's) is NaN where
    the latent variance it computes falls to or below the link's floor
    (:meth:`~skgprobust._engine._latent.BoundModel.probabilities_finite`:
    variances of ~1e-300 at amplitudes ~1e14 with duplicated inputs, or
    negative ones from a kernel that is not PSD, such as ExpSineSquared on
    several features). The check is the one ``certify`` runs before it
    reads a decision from the probabilities."""
    bm = est._bound_model()
    if not hasattr(bm, "probabilities_finite_boxes") or getattr(bm, "kind", None) not in ("binary", "one_vs_rest"):
        return np.ones(len(lo), dtype=bool)
    return bm.probabilities_finite_boxes(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64),
                                         variance_bound)


def _warn_nan(n_bad, n, what):
    warnings.warn(
        f"{n_bad} of {n} {what}: the model's predict_proba may be NaN in the box (its computed latent variance "
        "is not proven positive there); their bounds hold for the finite values only and they are reported "
        "not converged.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _not_converged_where_nan(est, res, lo, hi, variance_bound):
    """Rows whose box may hold points where the model's ``predict_proba`` is
    NaN (:func:`_probabilities_finite`) are not reported converged, with a
    warning: no bound holds for NaN; the certified range still bounds every
    finite value in the box."""
    ok = _probabilities_finite(est, lo, hi, variance_bound)
    if ok.all():
        return res
    _warn_nan(int((~ok).sum()), len(ok), "rows")
    return dataclasses.replace(res, converged=res.converged & ok[:, None])


def _classifier_explain(est, X, gamma, *, features, target, epsilon, method, domain, max_iter, time_limit, n_jobs,
                        random_state, verbose, variance_bound="default"):
    return explain_classes(
        est, X, gamma, features=features, target=target, domain=domain, predict=est._predict_labels,
        proba_pairs=lambda: est._proba_pairs(variance_bound), reference=est._proba_reference,
        check=lambda: check_variance_bound(variance_bound),
        finite=lambda lo, hi: _probabilities_finite(est, lo, hi, variance_bound), epsilon=epsilon, method=method,
        max_iter=max_iter, time_limit=time_limit, n_jobs=n_jobs, random_state=random_state, verbose=verbose,
    )


def _kind_docs(kind, target):
    """The entries that differ between the kinds."""
    return {key: DOCS[f"{key}_{kind}"] for key in ("delta", "norm", "variance_bound")} | {"target": DOCS[target]}


class _BoundsMixin(BoundModelMixin):
    """Defines ``certify`` / ``prediction_range`` / ``explain`` on each
    subclass that declares ``_method_docs`` (see the module docstring).

    ``_method_docs`` maps "certify", "prediction_range" and "explain" to the
    method's summary (and extended description), "statistic" to the
    numpydoc entry of ``prediction_range``'s ``statistic``, and
    "certify_result" / "range_result" to the note under the Returns entry.
    """

    #: Public methods that take ``variance_bound`` (the class's choice).
    _variance_bound_methods = ()
    #: Public methods wrapped in :class:`ProbaOnly` (the class's choice).
    _proba_only_methods = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_method_docs" not in cls.__dict__:
            return  # inherits its parent's methods
        for name, body in cls._bodies.items():
            if name in cls.__dict__:
                continue  # written by hand in the class itself
            keywords = _keywords(name, cls._defaults)
            docs = {**DOCS, **cls._kind_docs, **cls._method_docs}
            if name in cls._variance_bound_methods:
                keywords += (("variance_bound", "default"),)
            else:
                docs["variance_bound"] = ""
            method = _forwarder(cls, name, keywords, body, fill_text(_TEMPLATES[name], docs).lstrip())
            if name in cls._proba_only_methods:
                method = ProbaOnly(method)
                method.__set_name__(cls, name)
            setattr(cls, name, method)


class RegressorBoundsMixin(_BoundsMixin):
    """The public methods of a regressor (its mean, per output column).

    Hooks: ``_build_bound_model()`` / ``_fit_token()`` (see
    :class:`~skgprobust._engine._common.BoundModelMixin`), whose bound model
    gives ``mean_pairs()``; ``_predict_values(X)``, the model's own mean as
    (n, n_outputs); ``_range_problem(statistic, variance_bound)``, the
    :class:`RangeProblem` of "mean" or "std". The bodies use nothing else,
    so another regressor may call them, e.g.
    ``RobustGaussianProcessRegressor.certify(self, ...)``.
    """

    _defaults = {"statistic": "mean", "target": 0}
    _bodies = {"certify": _regressor_certify, "prediction_range": _regressor_range, "explain": _regressor_explain}
    _kind_docs = _kind_docs("regressor", target="target_output")


class ClassifierBoundsMixin(_BoundsMixin):
    """The public methods of a classifier (its predicted class and its
    ``predict_proba``).

    Hooks: ``_build_bound_model()`` / ``_fit_token()``;
    ``_predict_labels(X)``, the model's own ``predict``;
    ``_row_solver(X, variance_bound, max_iter, time_limit)``, the
    ``solver`` of :func:`certify_classes`; ``_range_problem(statistic,
    variance_bound)``, the :class:`RangeProblem` of "proba" or
    "latent_mean"; ``_proba_pairs(variance_bound)``, ``c -> (objective,
    negated objective)`` of the probability of class column c, and
    ``_proba_reference(P)``, the model's own ``predict_proba`` (the
    ``proba_pairs`` / ``reference`` of :func:`explain_classes`);
    optionally ``_finish_range(result, statistic, epsilon)``.
    """

    _defaults = {"statistic": "proba", "target": None}
    _bodies = {"certify": _classifier_certify, "prediction_range": _classifier_range, "explain": _classifier_explain}
    _kind_docs = _kind_docs("classifier", target="target_class")

    def _finish_range(self, result, statistic, epsilon):
        """The :class:`RangeResult` of ``prediction_range`` from that of the
        range problem (by default the same)."""
        return result

    def _before_certify(self):
        """Runs first in ``certify``, before the arguments are checked (by
        default nothing)."""
