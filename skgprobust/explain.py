"""Certified per-feature sensitivity: the paper's Delta metric (Sec. 7.4).

For a row x*, a feature i and a radius gamma, the one-sided boxes are
``T+ = [x*, x* + gamma e_i]`` and ``T- = [x* - gamma e_i, x*]`` (clipped to
the domain), and::

    Delta_i = (pi_max(T+) - pi_max(T-)) + (pi_min(T+) - pi_min(T-))

with pi the statistic explained (a class probability of a classifier, the
mean of a regressor). Each of the four extremes comes from the shared branch
and bound as a certified interval ``[lower, upper]`` (one end is the model's
own value at a point of the box), so Delta gets the interval obtained by
interval arithmetic and an estimate from the attained values. As gamma -> 0,
Delta_i ~ 2 gamma d pi / d x_i.
"""

from dataclasses import dataclass

import numpy as np

from ._common import check_epsilon, map_rows, row_seeds
from .search import local_search, random_starts
from .solve import Budget, solve_range

METHODS = ("bounds", "search")

#: Random starts of the local search per one-sided box (method="search").
N_SEARCH_STARTS = 4


@dataclass
class Explanation:
    """Delta per row and explained feature, with certified bounds.

    Attributes
    ----------
    values : ndarray of shape (n, k)
        Delta from the extremes the model attains at the points found
        (``lower <= values <= upper``).
    lower, upper : ndarray of shape (n, k)
        Certified bounds on Delta (NaN for ``method="search"``).
    converged : ndarray of bool, shape (n, k)
        All four ranges behind the entry reached epsilon.
    features : ndarray of int, shape (k,)
        Column indices of the explained features.
    feature_names : ndarray of str, shape (k,)
        Their names (``feature_names_in_`` when fitted on a DataFrame, else
        ``"x0"``, ``"x1"``, ...).
    target : ndarray of shape (n,)
        The class explained per row (classifier) or the output index
        (regressor).
    gamma : ndarray of shape (k,)
        Radius per explained feature.
    time : ndarray of float, shape (n,)
        Seconds per row.
    """

    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    converged: np.ndarray
    features: np.ndarray
    feature_names: np.ndarray
    target: np.ndarray
    gamma: np.ndarray
    time: np.ndarray

    def __len__(self):
        return len(self.values)

    def as_map(self, row=None):
        """Like LIME's ``Explanation.as_map()``: ``{target: [(feature, Delta), ...]}``
        sorted by decreasing ``|Delta|``, with feature column indices.

        Parameters
        ----------
        row : int or None, default=None
            One row's map, or (None) a list with one map per row.
        """
        if row is None:
            return [self.as_map(r) for r in range(len(self))]
        v = self.values[row]
        order = np.argsort(-np.abs(v), kind="stable")
        target = self.target[row]
        key = target.item() if hasattr(target, "item") else target
        return {key: [(int(self.features[j]), float(v[j])) for j in order]}

    def global_(self):
        """Mean over rows (global interpretability, the paper's Fig. 5).

        The mean of the per-row lower (upper) bounds bounds the mean Delta.
        """
        return GlobalExplanation(
            values=self.values.mean(axis=0),
            lower=self.lower.mean(axis=0),
            upper=self.upper.mean(axis=0),
            features=self.features,
            feature_names=self.feature_names,
        )

    def to_frame(self):
        """Long format: one row per (row, feature) with value and bounds (pandas)."""
        import pandas as pd

        n, k = self.values.shape
        return pd.DataFrame(
            {
                "row": np.repeat(np.arange(n), k),
                "target": np.repeat(np.asarray(self.target, dtype=object), k),
                "feature": np.tile(self.feature_names, n),
                "value": self.values.ravel(),
                "lower": self.lower.ravel(),
                "upper": self.upper.ravel(),
                "converged": self.converged.ravel(),
            }
        )

    def __repr__(self):
        n, k = self.values.shape
        return f"Explanation(n={n}, features={k}, converged={int(self.converged.sum())}/{n * k})"


@dataclass
class GlobalExplanation:
    """Mean Delta per feature over the explained rows, with bounds."""

    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    features: np.ndarray
    feature_names: np.ndarray

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            {"value": self.values, "lower": self.lower, "upper": self.upper}, index=list(self.feature_names)
        )


def one_sided_boxes(X, lo, hi, features):
    """T+ and T- per row and feature: arrays (n, 2k, d), T+ of feature j at
    index 2j, T- at 2j + 1. ``lo``/``hi`` are the full boxes (domain-clipped)."""
    n, d = X.shape
    k = len(features)
    blo = np.repeat(X[:, None, :], 2 * k, axis=1)
    bhi = blo.copy()
    j = np.arange(k)
    blo[:, 2 * j + 1, features] = lo[:, features]
    bhi[:, 2 * j, features] = hi[:, features]
    return blo, bhi


def _delta_row(shared, x0, blo, bhi, target, rng):
    """Min and max of the statistic over each one-sided box of one row."""
    pairs, epsilon, max_iter, time_limit, method = shared
    f_min, f_max = pairs[target]
    budget = Budget(max_iter, time_limit)
    n_box, d = blo.shape
    lower = np.full((n_box, 2), np.nan)
    points = np.empty((n_box, 2, d))
    converged = np.zeros(n_box, dtype=bool)
    n_iter = 0
    for b in range(n_box):
        if method == "bounds":
            # Each one-sided box gets the full budget: they are independent problems.
            out = solve_range([f_min, f_max], blo[b], bhi[b], x0, epsilon, Budget(max_iter, time_limit), rng)
            lower[b], points[b], converged[b] = out.lower, out.argmin, out.converged.all()
            n_iter += out.n_iter
        else:
            starts = np.vstack([x0[None], random_starts(blo[b], bhi[b], N_SEARCH_STARTS, rng)])
            for s, f in enumerate((f_min, f_max)):
                points[b, s] = local_search(f, blo[b], bhi[b], starts)[0]
    return lower, points, converged, n_iter, budget.elapsed()


def explain_rows(X, lo, hi, features, targets, pairs, reference, *, epsilon, max_iter, time_limit, n_jobs,
                 random_state, method, verbose=0):
    """Delta for every row and explained feature.

    Parameters
    ----------
    X, lo, hi : ndarray of shape (n, d)
        Rows and their full (gamma, domain-clipped) boxes.
    features : ndarray of int, shape (k,)
    targets : sequence of length n
        Key into ``pairs`` per row.
    pairs : dict
        target -> (objective of the statistic, its negation).
    reference : callable
        ``reference(P, target) -> (m,)``: the model's own statistic at P.

    Returns
    -------
    values, lower, upper : ndarray of shape (n, k)
    converged : ndarray of bool, shape (n, k)
    times : ndarray of shape (n,)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    check_epsilon(epsilon)
    n, d = X.shape
    k = len(features)
    blo, bhi = one_sided_boxes(X, lo, hi, features)
    rows = list(zip(X, blo, bhi, targets, row_seeds(random_state, n)))
    outs = map_rows(
        _delta_row, (pairs, epsilon, max_iter, time_limit, method), rows, n_jobs, verbose, "explain"
    )
    if n == 0 or k == 0:
        empty = np.empty((n, k))
        return empty, empty.copy(), empty.copy(), np.zeros((n, k), dtype=bool), np.array([o[4] for o in outs])
    lower = np.array([o[0] for o in outs])  # (n, 2k, 2)
    points = np.array([o[1] for o in outs])  # (n, 2k, 2, d)
    vals = np.empty((n, 2 * k, 2))
    for r in range(n):
        vals[r] = reference(points[r].reshape(-1, d), targets[r]).reshape(2 * k, 2)
    min_up, max_lo = vals[..., 0], vals[..., 1]
    # Lower bounds may be lowered (never raised) to absorb the rounding of the
    # model's value at the incumbent.
    min_lo = np.minimum(lower[..., 0], min_up)
    max_up = np.maximum(-lower[..., 1], max_lo)
    p, m = slice(0, None, 2), slice(1, None, 2)  # T+ and T- boxes
    values, low, high = delta_from_ranges(
        (min_lo[:, p], min_up[:, p], max_lo[:, p], max_up[:, p]), (min_lo[:, m], min_up[:, m], max_lo[:, m], max_up[:, m])
    )
    conv = np.array([o[2] for o in outs])
    converged = conv[:, p] & conv[:, m]
    return values, low, high, converged, np.array([o[4] for o in outs])


def class_targets(classes_, target, n, predict):
    """Labels explained per row and their column in ``classes_``.

    ``target`` None: ``predict()`` (the model's predicted labels); one label
    or one per row otherwise, each checked against ``classes_``.
    """
    classes = list(classes_)
    if target is None:
        labels = np.asarray(predict()) if n else np.empty(0, dtype=classes_.dtype)
    else:
        labels = np.asarray(target, dtype=classes_.dtype if np.ndim(target) else None)
        labels = np.broadcast_to(labels, (n,)) if labels.ndim == 0 else labels
        if labels.shape != (n,):
            raise ValueError(f"target must be one label or one per row ({n}), got shape {labels.shape}.")
        unknown = sorted({str(t) for t in labels.tolist() if t not in classes})
        if unknown:
            raise ValueError(f"target labels {unknown} are not in classes_ {classes_.tolist()}.")
    return labels, np.array([classes.index(t) for t in labels.tolist()], dtype=int)


def _ordered_features(features, d, feature_names=None):
    """Column indices in the order given (weights align with it); a boolean
    mask gives its columns in order. Validated like ``resolve_features``."""
    from .perturbation import resolve_features

    if features is None:
        return np.arange(d)
    f = np.atleast_1d(np.asarray(features))
    mask = resolve_features(f, d, feature_names)  # raises on bad input
    if f.dtype == bool:
        return np.flatnonzero(mask)
    if f.dtype.kind in "US" or f.dtype == object:
        names = [str(n) for n in feature_names]
        f = np.array([names.index(str(n)) for n in f.tolist()])
    f = f.astype(int)
    if len(np.unique(f)) != len(f):
        raise ValueError(f"features has duplicate entries: {features!r}.")
    return f


def delta_from_ranges(plus, minus):
    """Delta's estimate and certified interval from the ranges over T+ and T-.

    ``plus`` and ``minus`` are ``(min_lower, min_upper, max_lower, max_upper)``
    arrays; ``min_upper`` / ``max_lower`` are values the model attains.
    """
    min_lo_p, min_up_p, max_lo_p, max_up_p = plus
    min_lo_m, min_up_m, max_lo_m, max_up_m = minus
    values = (max_lo_p - max_lo_m) + (min_up_p - min_up_m)
    low = (max_lo_p - max_up_m) + (min_lo_p - min_up_m)
    high = (max_up_p - max_lo_m) + (min_up_p - min_lo_m)
    return values, low, high


def feature_names_of(estimator, features):
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return np.array([f"x{j}" for j in features], dtype=object)
    return np.asarray(names, dtype=object)[features]


@dataclass
class GapCurve:
    """Adversarial gap as more features are modified (paper Fig. 6).

    Attributes
    ----------
    betas : ndarray of int, shape (m,)
        Number of features modified.
    gaps : ndarray of shape (m,)
        ``pi_gap`` at the modified point: the probability of the target
        class minus the largest other class probability, as the model's
        ``predict_proba`` returns them; < 0 means an adversarial example.
    points : ndarray of shape (m, d)
        The modified inputs.
    order : ndarray of int, shape (k,)
        Features in the order they are modified.
    """

    betas: np.ndarray
    gaps: np.ndarray
    points: np.ndarray
    order: np.ndarray

    @property
    def first_adversarial(self):
        """Smallest beta with a negative gap (None if none)."""
        hit = np.flatnonzero(self.gaps < 0)
        return int(self.betas[hit[0]]) if len(hit) else None


def adversarial_gap_curve(estimator, x, gamma, weights, *, features=None, target=None, betas=None, domain=None):
    """Modify the beta most important features of one row, for growing beta.

    Each of the top-beta features (by ``|weights|``) moves by its gamma
    against its weight's sign (a positive weight means raising the feature
    raises the target's probability, so it is lowered), clipped to the
    domain; the gap ``p_target - max_{k != target} p_k`` is read from the
    model's own ``predict_proba``. With our Delta or LIME's weights as
    ``weights``, this is the comparison of the paper's Fig. 6.

    Parameters
    ----------
    estimator : fitted classifier with ``predict_proba`` and ``classes_``
    x : array-like of shape (n_features,)
    gamma : float or array-like of shape (n_features,)
    weights : array-like of shape (k,)
        Importance of each of ``features`` (e.g. ``explanation.values[r]``).
    features : array-like of int of shape (k,), default=None
        Columns the weights refer to (None: all, k = n_features).
    target : label, default=None
        Class whose gap is tracked (None: the predicted class of x).
    betas : array-like of int, default=None
        Numbers of features to modify (None: 0, 1, ..., k).
    domain : tuple (low, high), default=None
        Valid input range; modified values are clipped to it.

    Returns
    -------
    curve : GapCurve
    """
    from sklearn.base import is_classifier

    from .perturbation import make_boxes

    if not (is_classifier(estimator) and hasattr(estimator, "predict_proba")):
        raise TypeError("adversarial_gap_curve needs a fitted classifier with predict_proba.")
    x = validate_row(estimator, x)
    d = len(x)
    feats = _ordered_features(features, d, getattr(estimator, "feature_names_in_", None))
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape != feats.shape:
        raise ValueError(f"weights has {w.size} entries for {feats.size} features.")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite.")
    lo, hi = make_boxes(x[None], gamma, domain=domain, feature_names=getattr(estimator, "feature_names_in_", None))
    classes = list(estimator.classes_)
    label = estimator.predict(x[None])[0] if target is None else target
    if label not in classes:
        raise ValueError(f"target {target!r} is not in classes_ {estimator.classes_.tolist()}.")
    c = classes.index(label)
    order = feats[np.argsort(-np.abs(w), kind="stable")]
    w_of = dict(zip(feats.tolist(), w.tolist()))
    betas = np.arange(len(feats) + 1) if betas is None else np.asarray(betas, dtype=int).reshape(-1)
    if np.any((betas < 0) | (betas > len(feats))):
        raise ValueError(f"betas must lie in [0, {len(feats)}].")
    points = np.repeat(x[None], len(betas), axis=0)
    for row, beta in enumerate(betas):
        for i in order[:beta]:
            points[row, i] = lo[0, i] if w_of[int(i)] > 0 else hi[0, i] if w_of[int(i)] < 0 else x[i]
    P = np.asarray(estimator.predict_proba(points))
    others = np.delete(P, c, axis=1)
    return GapCurve(betas, P[:, c] - others.max(axis=1), points, order)


def validate_row(estimator, x):
    """One row as a float64 (d,) array, checked like predict's input."""
    from sklearn.utils.validation import validate_data

    x = np.asarray(x, dtype=np.float64) if not hasattr(x, "columns") else x
    if getattr(x, "ndim", 2) == 1:
        x = x[None]
    X = validate_data(estimator, x, reset=False, dtype=np.float64)
    if len(X) != 1:
        raise ValueError(f"expected one row, got {len(X)}.")
    return X[0]
