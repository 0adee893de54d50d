"""Inspection helpers around the Delta metric: adversarial gap curves (paper Fig. 6)."""

from dataclasses import dataclass

import numpy as np

from .._engine._common import quiet_feature_names
from .._engine._perturbation import make_boxes, resolve_features


def ordered_features(features, d, feature_names=None):
    """Column indices in the order given (weights align with it); a boolean
    mask gives its columns in order. Validated like ``resolve_features``."""
    if features is None:
        return np.arange(d)
    f = np.atleast_1d(np.asarray(features))
    mask = resolve_features(features, d, feature_names)  # raises on bad input; aligns a boolean Series
    if f.dtype == bool:
        return np.flatnonzero(mask)
    if f.dtype.kind in "US" or f.dtype == object:
        names = [str(n) for n in feature_names]
        f = np.array([names.index(str(n)) for n in f.tolist()])
    f = f.astype(int)
    if len(np.unique(f)) != len(f):
        raise ValueError(f"features has duplicate entries: {features!r}.")
    return f



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
        The model whose probability the perturbations move.
    x : array-like of shape (n_features,)
        The explained point.
    gamma : float or array-like of shape (n_features,)
        The perturbation size per feature.
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
        The gaps (probability of ``target`` minus the largest other class)
        and modified points per beta, and the feature order used.
    """
    from sklearn.base import is_classifier

    if not (is_classifier(estimator) and hasattr(estimator, "predict_proba")):
        raise TypeError("adversarial_gap_curve needs a fitted classifier with predict_proba.")
    x = validate_row(estimator, x)
    d = len(x)
    feats = ordered_features(features, d, getattr(estimator, "feature_names_in_", None))
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape != feats.shape:
        raise ValueError(f"weights has {w.size} entries for {feats.size} features.")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite.")
    lo, hi = make_boxes(x[None], gamma, domain=domain, feature_names=getattr(estimator, "feature_names_in_", None))
    classes = list(estimator.classes_)
    with quiet_feature_names():  # x was validated with its names above
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
    with quiet_feature_names():
        P = np.asarray(estimator.predict_proba(points))
    others = np.delete(P, c, axis=1)
    return GapCurve(betas, P[:, c] - others.max(axis=1), points, order)


def validate_row(estimator, x):
    """One row as a float64 (d,) array, checked like predict's input (a
    pandas Series is one row whose index holds the feature names)."""
    from sklearn.utils.validation import validate_data

    if hasattr(x, "to_frame") and getattr(x, "ndim", None) == 1:  # pandas Series: keep its names
        x = x.to_frame().T
    x = np.asarray(x, dtype=np.float64) if not hasattr(x, "columns") else x
    if getattr(x, "ndim", 2) == 1:
        x = x[None]
    X = validate_data(estimator, x, reset=False, dtype=np.float64)
    if len(X) != 1:
        raise ValueError(f"expected one row, got {len(X)}.")
    return X[0]
