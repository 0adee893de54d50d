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
"""

import re

import numpy as np

from ._common import check_classifier_args, prepare, row_seeds
from ._delta import Explanation, class_targets, explain_rows, feature_names_of
from ._driver import RangeProblem, certify_rows
from ._perturbation import resolve_features

__all__ = [
    "DOCS",
    "ProbaOnly",
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
    Refine until both gaps (min_upper - min_lower, max_upper -
    max_lower) are <= epsilon for every column, or the budget is spent.""",
    "epsilon_explain": """\
epsilon : float, default=1e-2
    Precision of each of the four ranges behind an entry.""",
    "features": """\
features : array-like of int, bool or str, default=None
    Features allowed to move; the others stay fixed. None: all.""",
    "features_explain": """\
features : array-like of int, bool or str, default=None
    Features to explain (None: all).""",
    "domain": """\
domain : tuple (low, high), default=None
    Valid input range; the box is clipped to it.""",
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
    (Props. 5-6, much slower; the reference).""",
    "variance_bound_regressor": """\
variance_bound : {"default", "paper"}, default="default"
    For statistic="std": the closed-form variance bounds (default)
    or the paper's QP/LP (Props. 5-6, much slower; the reference).""",
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
    (or to-be-fitted) one-vs-one model of more than two classes."""
    if estimator.multi_class != "one_vs_one":
        return True
    return getattr(estimator, "n_classes_", None) == 2


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


def fill_doc(obj):
    """Replace each docstring line ``%(key)s`` of ``obj`` with ``DOCS[key]``,
    indented as that line; returns ``obj`` (a decorator for functions and
    classes). An unknown key raises KeyError at definition time."""
    doc = obj.__doc__
    if not doc:
        return obj
    lines = []
    for line in doc.split("\n"):
        m = _KEY_LINE.match(line)
        if m is None:
            lines.append(line)
            continue
        indent = m.group("indent")
        lines.extend(indent + entry if entry else entry for entry in DOCS[m.group("key")].split("\n"))
    obj.__doc__ = "\n".join(lines)
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


def explain_classes(estimator, X, gamma, *, features, target, domain, predict, proba_pairs, reference, check=None, **run):
    """``explain`` of a classifier: the Delta metric of the probability of
    the explained class (``target``, or each row's predicted class).

    ``proba_pairs()`` returns ``c -> (objective, negated objective)`` of
    column c of ``reference(P)`` (the model's own probabilities); it is
    called once, after the arguments are checked. ``check()``, if given, is
    run right after the estimator and X are validated.
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
    return explanation(estimator, X, lo, hi, gamma, feats, labels, idx.tolist(), problems, **run)


def certify_classes(estimator, X, gamma, *, delta, norm, predict, solver, features, domain, max_iter, time_limit,
                    n_jobs, random_state, verbose):
    """``certify`` of a classifier: the class ``predict`` gives at each
    row's centre, proven constant over its box.

    ``solver(X)`` returns ``(row_func, shared)`` for
    :func:`~skgprobust._engine._driver.certify_rows` (row_func is called as
    ``row_func(shared, x0, lo, hi, label, rng)``); it runs after the
    arguments and X are validated. Counterexamples are re-checked with
    ``predict`` itself.
    """
    check_classifier_args(delta, norm)
    X, lo, hi = prepare(estimator, X, gamma, features, domain, max_iter, time_limit)
    n, d = X.shape
    func, shared = solver(X)
    labels = predict(X) if n else np.empty(0, dtype=estimator.classes_.dtype)
    rows = list(zip(X, lo, hi, labels, row_seeds(random_state, n)))

    def violates(idx, P):
        return predict(P) != labels[idx]

    return certify_rows(func, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)
