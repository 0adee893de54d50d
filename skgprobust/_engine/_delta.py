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

from ._common import check_epsilon, row_seeds
from ._driver import METHODS, range_rows
from ._results import frame_index

#: 2 u and the smallest subnormal: the outward rounding of :func:`delta_from_ranges`.
_ROUND = np.finfo(np.float64).eps  # 2 u
_TINY = np.nextafter(0.0, 1.0)



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

        Returns
        -------
        map : dict or list of dict
            ``{target: [(feature, Delta), ...]}``, or one such dict per row.
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
        Only rows explained for one target can be averaged: a classifier's
        ``explain`` without ``target`` explains each row's predicted class,
        and the mean of Delta of different classes' probabilities is no
        statistic of the model (for two classes their Deltas are opposite:
        such a mean could "prove" a sign that the probability of either
        class does not have).

        Returns
        -------
        global : GlobalExplanation
            Mean ``values``, ``lower`` and ``upper`` per feature.

        Raises
        ------
        ValueError
            If the rows were explained for different targets (pass one
            ``target`` to ``explain``).
        """
        targets = np.asarray(self.target, dtype=object).ravel()
        if len(targets) and any(t != targets[0] for t in targets[1:]):
            found = list(dict.fromkeys(t.item() if hasattr(t, "item") else t for t in targets))
            raise ValueError(
                f"global_ averages rows explained for one target, but these rows explain the targets {found}: "
                "a mean of Delta over different classes' probabilities is not a statistic of the model; "
                "explain the rows for one target (explain(X, gamma, target=label))."
            )
        return GlobalExplanation(
            values=self.values.mean(axis=0),
            lower=self.lower.mean(axis=0),
            upper=self.upper.mean(axis=0),
            features=self.features,
            feature_names=self.feature_names,
        )

    def to_frame(self, index=None):
        """Long format: one row per (row, feature) with value and bounds (pandas).

        Parameters
        ----------
        index : array-like of shape (n,), default=None
            Labels of the explained rows for the ``row`` column, e.g. the
            input DataFrame's ``X.index`` (None: 0..n-1).

        Returns
        -------
        frame : pandas.DataFrame
            Columns ``row``, ``target``, ``feature``, ``value``, ``lower``,
            ``upper`` and ``converged``.
        """
        import pandas as pd

        n, k = self.values.shape
        labels = frame_index(index, n)
        rows = np.arange(n) if labels is None else np.asarray(labels, dtype=object)
        return pd.DataFrame(
            {
                "row": np.repeat(rows, k),
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
    """Mean Delta per feature over the explained rows, with bounds.

    Attributes
    ----------
    values : ndarray of shape (n_features_explained,)
        Mean Delta estimate per feature.
    lower, upper : ndarray of shape (n_features_explained,)
        Certified bounds of the mean Delta.
    features : ndarray of int
        Column indices of the explained features.
    feature_names : ndarray of str
        Their names.
    """

    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    features: np.ndarray
    feature_names: np.ndarray

    def to_frame(self):
        """The global explanation as a table (pandas).

        Returns
        -------
        frame : pandas.DataFrame
            One row per feature (indexed by its name), with columns
            ``value``, ``lower`` and ``upper``.
        """
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


def explain_rows(X, lo, hi, features, targets, problems, *, epsilon, max_iter, time_limit, n_jobs,
                 random_state, method, verbose=0):
    """Delta for every row and explained feature.

    Every one-sided box of every row is one row of the driver
    (:func:`~skgprobust._engine._driver.range_rows`): ``max_iter`` and
    ``time_limit`` apply to each box, boxes of all rows share the workers, and
    the range assembly (the model's own values at the incumbents) is the
    driver's.

    Parameters
    ----------
    X, lo, hi : ndarray of shape (n, d)
        Rows and their full (gamma, domain-clipped) boxes.
    features : ndarray of int, shape (k,)
    targets : sequence of length n
        Key into ``problems`` per row.
    problems : dict
        target -> :class:`~skgprobust._engine._driver.RangeProblem` of the
        explained statistic (one column).

    Returns
    -------
    values, lower, upper : ndarray of shape (n, k)
    converged : ndarray of bool, shape (n, k)
    times : ndarray of shape (n,)
        Seconds per row (all its boxes).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    check_epsilon(epsilon)
    n, d = X.shape
    k = len(features)
    if n == 0 or k == 0:
        empty = np.empty((n, k))
        return empty, empty.copy(), empty.copy(), np.zeros((n, k), dtype=bool), np.zeros(n)
    blo, bhi = one_sided_boxes(X, lo, hi, features)  # (n, 2k, d)
    # One independent stream per box: results do not depend on n_jobs.
    seeds = row_seeds(random_state, n * 2 * k)
    res = range_rows(
        problems, np.repeat(np.asarray(targets, dtype=object), 2 * k).tolist(), np.repeat(X, 2 * k, axis=0),
        blo.reshape(-1, d), bhi.reshape(-1, d), epsilon=epsilon, max_iter=max_iter, time_limit=time_limit,
        n_jobs=n_jobs, verbose=verbose, label="explain", method=method, seeds=seeds, warn=False,
    )

    def per_box(a):
        return np.asarray(a).reshape(n, 2 * k)

    ranges = [per_box(getattr(res, name)[:, 0]) for name in ("min_lower", "min_upper", "max_lower", "max_upper")]
    p, m = slice(0, None, 2), slice(1, None, 2)  # T+ and T- boxes
    values, low, high = delta_from_ranges([r[:, p] for r in ranges], [r[:, m] for r in ranges])
    conv = per_box(res.converged[:, 0])
    converged = conv[:, p] & conv[:, m]
    if method == "search":
        converged[:] = False
    return values, low, high, converged, per_box(res.time).sum(axis=1)


def class_targets(classes_, target, n, predict):
    """Labels explained per row and their column in ``classes_``.

    ``target`` None: ``predict()`` (the model's predicted labels); one label
    or one per row otherwise, each checked against ``classes_`` *before* any
    conversion (so "apple" is not truncated to "a", nor 1.9 floored to 1),
    and returned as the matching entries of ``classes_`` (its dtype).
    """
    classes = list(classes_)
    if target is None:
        labels = np.asarray(predict()) if n else np.empty(0, dtype=classes_.dtype)
        return labels, np.array([classes.index(t) for t in labels.tolist()], dtype=int)
    given = np.asarray(target) if np.ndim(target) == 0 else np.asarray(target, dtype=object)
    given = np.broadcast_to(given, (n,)) if given.ndim == 0 else given
    if given.shape != (n,):
        raise ValueError(f"target must be one label or one per row ({n}), got shape {given.shape}.")
    values = given.tolist()
    unknown = [t for t in values if t not in classes]
    try:
        unknown = list(dict.fromkeys(unknown))  # once each, as given (7, not '7')
    except TypeError:  # an unhashable label: listed as given
        pass
    if unknown:
        raise ValueError(f"target labels {unknown} are not in classes_ {classes_.tolist()}.")
    cols = np.array([classes.index(t) for t in values], dtype=int)
    return classes_[cols], cols


def delta_from_ranges(plus, minus):
    """Delta's estimate and certified interval from the ranges over T+ and T-.

    ``plus`` and ``minus`` are ``(min_lower, min_upper, max_lower, max_upper)``
    arrays; ``min_upper`` / ``max_lower`` are values the model attains.

    The interval holds for Delta in exact arithmetic of the (float) extremes:
    ``low = fl(fl(a1) + fl(a2))`` errs from ``a1 + a2`` by at most u (|a1| +
    |a2|) (1 + u) + u |low| (two differences, one sum, round to nearest), so
    each end is moved outward by 2 u (|fl(a1)| + |fl(a2)| + |low|) plus the
    smallest subnormal (underflow); NaN / infinite ends stay as they are.
    """
    min_lo_p, min_up_p, max_lo_p, max_up_p = plus
    min_lo_m, min_up_m, max_lo_m, max_up_m = minus
    values = (max_lo_p - max_lo_m) + (min_up_p - min_up_m)
    with np.errstate(invalid="ignore", over="ignore"):
        a1, a2 = max_lo_p - max_up_m, min_lo_p - min_up_m
        low = a1 + a2
        low = low - _ROUND * (np.abs(a1) + np.abs(a2) + np.abs(low)) - _TINY
        b1, b2 = max_up_p - max_lo_m, min_up_p - min_lo_m
        high = b1 + b2
        high = high + _ROUND * (np.abs(b1) + np.abs(b2) + np.abs(high)) + _TINY
    return values, low, high


def feature_names_of(estimator, features):
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return np.array([f"x{j}" for j in features], dtype=object)
    return np.asarray(names, dtype=object)[features]


