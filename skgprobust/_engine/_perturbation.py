"""The perturbation set: validated l_inf boxes around each input row."""

import numbers
import warnings

import numpy as np


def _align_series(value, name, d, feature_names):
    """A pandas Series given per feature, as a plain array in feature order.

    A Series is aligned by its labels, never by position: labels that are the
    fitted feature names (in any order) are reordered to the fitted order; a
    default index 0..d-1 is positional. Any other index (unknown, missing or
    duplicated names, or names when the estimator was fitted without any) is
    refused, so a labelled value can never be read in the wrong order.
    Anything that is not a Series is returned unchanged.
    """
    if not (hasattr(value, "index") and hasattr(value, "reindex") and getattr(value, "ndim", None) == 1):
        return value
    labels = list(value.index)
    if labels == list(range(len(labels))):
        return value.to_numpy()
    if feature_names is not None:
        names = [str(f) for f in feature_names]
        keys = [str(f) for f in labels]
        if len(set(keys)) == len(keys) and sorted(keys) == sorted(names):
            return value.to_numpy()[[keys.index(f) for f in names]]
        unknown = [f for f in keys if f not in names]
        missing = [f for f in names if f not in keys]
        raise ValueError(
            f"{name} given as a pandas Series must be indexed by the fitted feature names {names} "
            f"(each once) or by 0..{d - 1}; unknown labels {unknown}, missing names {missing}."
        )
    raise ValueError(
        f"{name} given as a pandas Series with index {labels}, but the estimator was fitted without "
        f"feature names: index it by 0..{d - 1} or pass an array."
    )


def _has_bool(value):
    """Whether ``value`` (a scalar, a list / tuple, maybe nested, an array or
    a pandas object) is or holds a boolean."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if hasattr(value, "to_numpy") and hasattr(value, "dtype"):
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        return value.dtype == bool or (value.dtype == object and any(_has_bool(v) for v in value.ravel()))
    if isinstance(value, (list, tuple)):
        return any(_has_bool(v) for v in value)
    return False


def _refuse_bool(value, name):
    """A radius or a domain end given as booleans (``gamma=True`` read as 1.0
    moved every feature by 1; UX audit, session 26) raises."""
    if _has_bool(value):
        raise ValueError(f"{name} must be a number or an array of numbers, got booleans: {value!r}.")


def check_finite_array(value, name, d, allow_inf=None, feature_names=None):
    """Validated (d,) float array; ``allow_inf`` = -inf or +inf admits that
    infinity (an unbounded side of a domain), never NaN or the other one.
    A pandas Series is aligned by its labels (:func:`_align_series`)."""
    value = _align_series(value, name, d, feature_names)
    try:
        arr = np.asarray(value, dtype=np.float64) if not isinstance(value, str) else None
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != d):
        raise ValueError(f"{name} must be a scalar or an array of length n_features={d}, got {value!r}.")
    ok = np.isfinite(arr) if allow_inf is None else np.isfinite(arr) | (arr == allow_inf)
    if not np.all(ok):
        what = "finite" if allow_inf is None else f"finite or {allow_inf}"
        raise ValueError(f"{name} must be {what}, got {value!r}.")
    return np.broadcast_to(arr, (d,)).astype(np.float64)


def resolve_features(features, d, feature_names=None):
    """Boolean mask (d,) of the features allowed to move.

    ``features`` may be None (all), integer indices, a boolean mask of length
    d, or feature names when the estimator was fitted on a DataFrame. A
    boolean mask given as a pandas Series is aligned by its labels, as a
    ``gamma`` Series (:func:`_align_series`): read by position, a mask
    indexed by the feature names in another order moved other features than
    it names (a "robust" certificate for the wrong box).

    A selection of no feature (an empty list, an all-False mask) warns: its
    boxes are the rows themselves (sound, but every row is certified
    whatever gamma: likely a name filter that matched nothing; UX audit,
    session 26). A feature listed twice raises (a typo that would otherwise
    go unnoticed).
    """
    if features is None:
        return np.ones(d, dtype=bool)
    mask = _resolve_features(features, d, feature_names)
    if not mask.any():
        from ._common import user_stacklevel  # (_common imports this module)

        warnings.warn(
            f"features selects no feature (got {features!r}): nothing moves, so each box is its row alone and "
            "every row is certified whatever gamma. Pass features=None to move all features.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return mask


def _resolve_features(features, d, feature_names):
    """The mask of :func:`resolve_features` (features not None)."""
    if getattr(features, "ndim", None) == 1 and hasattr(features, "index") and np.asarray(features).dtype == bool:
        features = _align_series(features, "features", d, feature_names)
    feats = np.atleast_1d(np.asarray(features))
    if feats.dtype == bool:
        if feats.shape != (d,):
            raise ValueError(f"A boolean features mask must have length n_features={d}, got {feats.shape}.")
        return feats.copy()
    if feats.dtype.kind in "US" or feats.dtype == object:
        given = list(features) if isinstance(features, (list, tuple)) else feats.tolist()
        if any(isinstance(f, str) for f in given) and any(
            isinstance(f, numbers.Integral) and not isinstance(f, bool) for f in given
        ):
            raise ValueError(f"features mixes indices and names, got {features!r}: give all indices or all names.")
        if feature_names is None:
            raise ValueError("features given by name, but the estimator was not fitted on data with feature names.")
        names = list(map(str, feature_names))
        missing = [str(f) for f in feats if str(f) not in names]
        if missing:
            raise ValueError(f"Unknown feature names {missing}; known: {names}.")
        feats = np.array([names.index(str(f)) for f in feats])
    if feats.dtype.kind not in "iu" and not all(isinstance(f, numbers.Integral) for f in feats.tolist()):
        raise ValueError(f"features must be integer indices, a boolean mask or names, got {features!r}.")
    feats = feats.astype(np.int64)
    if feats.size and (feats.min() < 0 or feats.max() >= d):
        raise ValueError(f"Feature indices must be in [0, {d - 1}], got {feats.tolist()}.")
    if len(np.unique(feats)) != len(feats):
        values, counts = np.unique(feats, return_counts=True)
        twice = values[counts > 1].tolist()
        if feature_names is not None:
            twice = [str(feature_names[i]) for i in twice]
        raise ValueError(f"duplicate features: {twice} listed more than once (got {features!r}).")
    mask = np.zeros(d, dtype=bool)
    mask[feats] = True
    return mask


def make_boxes(X, gamma, *, features=None, domain=None, feature_names=None):
    """Boxes [lo, hi] of shape (n, d): X +- gamma on the moving features, clipped to domain.

    Parameters
    ----------
    X : ndarray of shape (n, d), validated float64
    gamma : float or array-like of shape (d,)
        Half-width of the l_inf box per feature, in the units of X; >= 0.
        A pandas Series is aligned by feature name (:func:`_align_series`),
        and so are Series given as domain bounds.
    features : see :func:`resolve_features`
    domain : tuple (low, high), optional
        Valid input range (scalars or arrays of length d; None for an
        unbounded side, -inf / +inf for an unbounded feature); the box is
        intersected with it. Every row must lie inside the domain.
    """
    n, d = X.shape
    if gamma is None:
        raise ValueError("gamma is required (a non-negative scalar or per-feature array).")
    _refuse_bool(gamma, "gamma")
    g = check_finite_array(gamma, "gamma", d, feature_names=feature_names)
    if np.any(g < 0):
        raise ValueError(f"gamma must be non-negative, got {gamma!r}.")
    g = np.where(resolve_features(features, d, feature_names), g, 0.0)
    lo, hi = X - g, X + g
    if domain is not None:
        try:
            low, high = domain
        except (TypeError, ValueError):
            raise ValueError(f"domain must be a pair (low, high), got {domain!r}.") from None
        _refuse_bool(low, "domain low")
        _refuse_bool(high, "domain high")
        low = (
            check_finite_array(low, "domain low", d, -np.inf, feature_names)
            if low is not None
            else np.full(d, -np.inf)
        )
        high = (
            check_finite_array(high, "domain high", d, np.inf, feature_names)
            if high is not None
            else np.full(d, np.inf)
        )
        if np.any(low > high):
            raise ValueError("domain low must be <= high for every feature.")
        outside = np.any((X < low) | (X > high), axis=1)
        if outside.any():
            raise ValueError(f"Rows {np.flatnonzero(outside)[:10].tolist()} of X lie outside the domain.")
        lo, hi = np.maximum(lo, low), np.minimum(hi, high)
    return lo, hi
