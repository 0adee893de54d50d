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
from ._search import local_search, random_starts
from ._solve import Budget, solve_range

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


