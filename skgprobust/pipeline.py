"""Certify scikit-learn pipelines whose final step is a robust GP estimator.

:func:`certify`, :func:`prediction_range` and :func:`explain` accept a fitted
``RobustGaussianProcessClassifier`` / ``RobustGaussianProcessRegressor`` or a
fitted :class:`sklearn.pipeline.Pipeline` ending in one. The perturbation set
is given in the units of the **raw** input columns (what you pass to
``pipe.predict``), and counterexamples / ``argmin`` / ``argmax`` come back in
raw units too.

How the box goes through the preprocessing
------------------------------------------
Only steps where every output column is a monotone non-decreasing function of
exactly one input column are accepted (per-feature scalers, column selection,
identity). For such a map ``T`` and a box ``[lo, hi]``, the image
``T([lo, hi])`` lies inside ``[T(lo), T(hi)]`` -- also in floating point,
because rounding to nearest is monotone. The corners are pushed through the
pipeline's **own** ``transform`` (so the model sees exactly these numbers), and
the estimator certifies a box in its input space that contains every
``[T(lo_i), T(hi_i)]`` (per-feature half-widths and a shared ``domain``,
widened by a few ulps and checked). A proof for that box is a proof for the
raw box. sklearn's scalers transform float32 input in float32, so for float32
queries the model sees numbers up to half a float32 ulp outside that image;
the box is widened to cover them too (:func:`_float32_hull`), so certificates
hold for float64 and float32 raw queries alike. float16 queries (rounded to
about 1e-3 by the scalers) are not covered by that widening: this module's
:class:`Pipeline` gives float16 input to its steps as float64 in every
method that takes raw input (``fit``, ``predict``, ``predict_proba``,
``predict_log_proba``, ``decision_function``, ``score_samples``, ``score``,
``transform``, ``fit_transform``, ``fit_predict``); a plain scikit-learn
Pipeline queried with float16 data is outside the certificates. Other steps (PCA, PolynomialFeatures, encoders, custom functions)
raise :class:`UnsupportedStepError`.

Points found in the model's input space are mapped back with the exact
inverse of each affine step, clipped into the raw box, and re-checked with
``pipe.predict`` on the raw point; a counterexample that does not survive the
round trip is reported as ``"unknown"``, never as an unverified
``"not_robust"``. For ranges, the values reported at ``argmin`` / ``argmax``
are the model's own values at ``T(argmin)`` / ``T(argmax)``.
"""

import inspect
import numbers
import time
import warnings
from dataclasses import dataclass, fields
from typing import Callable

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline as _SkPipeline
from sklearn.pipeline import make_pipeline as _sk_make_pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, MinMaxScaler, StandardScaler
from sklearn.utils import check_array
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .exceptions import BudgetExhaustedWarning, RoundTripWarning, UnsupportedModelError, UnsupportedStepError
from ._engine._delta import Explanation, class_targets, delta_from_ranges
from ._engine._common import user_stacklevel
from ._engine._perturbation import make_boxes, resolve_features
from ._engine._driver import certification_result, range_result, recheck

__all__ = [
    "certify",
    "prediction_range",
    "explain",
    "final_estimator",
    "Pipeline",
    "make_pipeline",
    "UnsupportedStepError",
    "RoundTripWarning",
    "SUPPORTED_STEPS",
]

#: Preprocessing steps :func:`certify` and :func:`prediction_range` can map a box through.
SUPPORTED_STEPS = (
    "StandardScaler",
    "MinMaxScaler (clip=False or clip=True)",
    "MaxAbsScaler (clip=False or clip=True)",
    "'passthrough' or None",
    "FunctionTransformer(func=None) (the identity)",
    "ColumnTransformer whose transformers select, drop or pass columns through to supported steps "
    "(dense output, positive transformer_weights)",
    "a nested Pipeline of supported steps",
)


def _unsupported(name, step, why=""):
    why = f" ({why})" if why else ""
    kind = step if isinstance(step, str) else type(step).__name__
    return UnsupportedStepError(
        f"Pipeline step {name!r} ({kind}) is not supported{why}: a box of inputs can only be mapped soundly "
        "through steps where each output column is a monotone function of one input column. Supported steps: "
        + "; ".join(SUPPORTED_STEPS)
        + "."
    )


# --------------------------------------------------------------------------
# Column maps: which input column feeds each output column, and the inverse
# --------------------------------------------------------------------------


@dataclass
class _ColumnMap:
    """A per-column monotone map from n_in input columns to len(src) outputs.

    ``src[k]`` is the input column output column ``k`` depends on.
    ``inverse(Z)`` maps an (m, n_out) array to (m, n_in) input values, NaN
    where an input column does not reach the output (dropped).
    """

    n_in: int
    src: np.ndarray
    inverse: Callable


def _identity(n):
    return _ColumnMap(n, np.arange(n), lambda Z: np.array(Z, dtype=np.float64))


def _positive_finite(arr, name, step, attr):
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise _unsupported(name, step, f"{attr} must be finite and positive")
    return arr


def _finite(arr, name, step, attr):
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise _unsupported(name, step, f"{attr} must be finite")
    return arr


def _check_width(name, step, n_in):
    n = getattr(step, "n_features_in_", n_in)
    if n != n_in:
        raise ValueError(f"Pipeline step {name!r} was fitted on {n} columns but receives {n_in}.")


def _scaler_map(name, step, n_in):
    check_is_fitted(step)
    _check_width(name, step, n_in)
    t = type(step)
    if t is StandardScaler:
        # transform: x -= mean_ (with_mean); x /= scale_ (with_std); scale_ > 0
        # (sklearn sets it to 1 for constant features).
        scale = step.scale_ if step.with_std and step.scale_ is not None else None
        mean = step.mean_ if step.with_mean and step.mean_ is not None else None
        scale = None if scale is None else _positive_finite(scale, name, step, "scale_")
        mean = None if mean is None else _finite(mean, name, step, "mean_")

        def inverse(Z):
            X = np.array(Z, dtype=np.float64)
            if scale is not None:
                X = X * scale
            if mean is not None:
                X = X + mean
            return X

    elif t is MinMaxScaler:
        # transform: x * scale_ + min_, then clip to feature_range if clip. scale_ > 0
        # (a zero data range counts as 1). The clip is monotone too.
        scale = _positive_finite(step.scale_, name, step, "scale_")
        offset = _finite(step.min_, name, step, "min_")

        def inverse(Z):
            return (np.asarray(Z, dtype=np.float64) - offset) / scale

    elif t is MaxAbsScaler:
        # transform: x / scale_ (then clip to [-1, 1] if clip); scale_ > 0.
        scale = _positive_finite(step.scale_, name, step, "scale_")

        def inverse(Z):
            return np.asarray(Z, dtype=np.float64) * scale

    else:  # pragma: no cover - guarded by the caller
        raise _unsupported(name, step)
    return _ColumnMap(n_in, np.arange(n_in), inverse)


def _compose(maps, n_in):
    if not maps:
        return _identity(n_in)
    src = np.arange(n_in)
    for m in maps:
        src = src[m.src]

    def inverse(Z):
        V = Z
        for m in reversed(maps):
            V = m.inverse(V)
        return V

    return _ColumnMap(n_in, src, inverse)


def _pipeline_map(name, pipe, n_in):
    maps = []
    n = n_in
    for sub_name, step in pipe.steps:
        m = _step_map(f"{name} > {sub_name}", step, n)
        maps.append(m)
        n = len(m.src)
    return _compose(maps, n_in)


def _column_transformer_map(name, ct, n_in):
    check_is_fitted(ct)
    _check_width(name, ct, n_in)
    if getattr(ct, "sparse_output_", False):
        raise _unsupported(name, ct, "sparse output")
    indices = getattr(ct, "_transformer_to_input_indices", None)
    if indices is None:  # pragma: no cover - sklearn < 1.2
        raise _unsupported(name, ct, "this scikit-learn version does not record the selected columns")
    weights = ct.transformer_weights or {}
    blocks = []  # (input indices, sub-map, weight)
    for sub_name, trans, _ in ct.transformers_:
        if isinstance(trans, str) and trans == "drop":
            continue
        idx = np.asarray(indices[sub_name], dtype=np.int64)
        if idx.size == 0:
            continue
        full = f"{name} > {sub_name}"
        sub = _identity(idx.size) if isinstance(trans, str) and trans == "passthrough" else _step_map(full, trans, idx.size)
        w = weights.get(sub_name)
        if w is not None:
            if not isinstance(w, numbers.Real) or not np.isfinite(w) or w <= 0:
                raise _unsupported(full, trans, f"transformer weight {w!r} is not a positive number")
            w = float(w)
        blocks.append((idx, sub, w))
    src = np.concatenate([idx[sub.src] for idx, sub, _ in blocks]) if blocks else np.empty(0, dtype=np.int64)
    widths = [len(sub.src) for _, sub, _ in blocks]
    starts = np.concatenate([[0], np.cumsum(widths)]).astype(int)

    def inverse(Z):
        Z = np.asarray(Z, dtype=np.float64)
        V = np.full((Z.shape[0], n_in), np.nan)
        for (idx, sub, w), a, b in zip(blocks, starts[:-1], starts[1:]):
            Zb = Z[:, a:b] if w is None else Z[:, a:b] / w
            Vb = sub.inverse(Zb)
            for j, col in enumerate(idx):  # the first block that determines a column wins
                V[:, col] = np.where(np.isnan(V[:, col]), Vb[:, j], V[:, col])
        return V

    return _ColumnMap(n_in, src, inverse)


def _step_map(name, step, n_in):
    """The column map of one fitted step, or UnsupportedStepError."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return _identity(n_in)
    if isinstance(step, str):
        raise _unsupported(name, step)
    t = type(step)
    if t in (StandardScaler, MinMaxScaler, MaxAbsScaler):
        return _scaler_map(name, step, n_in)
    if t is FunctionTransformer:
        if step.func is not None:
            raise _unsupported(name, step, "only func=None, the identity, can be mapped")
        return _identity(n_in)
    if t is ColumnTransformer:
        return _column_transformer_map(name, step, n_in)
    if isinstance(step, _SkPipeline):
        return _pipeline_map(name, step, n_in)
    raise _unsupported(name, step)


# --------------------------------------------------------------------------
# The preprocessing of a pipeline
# --------------------------------------------------------------------------


def _is_identity(step):
    return step is None or (isinstance(step, str) and step == "passthrough")


def final_estimator(estimator):
    """The robust estimator at the end of a (nested) Pipeline, or ``estimator``
    itself.

    Parameters
    ----------
    estimator : estimator or Pipeline
        A robust estimator, or a (nested) Pipeline ending in one.

    Returns
    -------
    final : estimator
        The last step, the one with ``certify`` / ``prediction_range``.

    Raises
    ------
    UnsupportedModelError
        The estimator (or the last step) has no ``certify``.
    """
    return _split(estimator)[1]


def _split(estimator, prefix=""):
    """(preprocessing steps [(qualified name, step)], final robust estimator)."""
    if isinstance(estimator, _SkPipeline):
        steps = []
        for name, step in estimator.steps[:-1]:
            steps.append((prefix + name, step))
        last_name, last = estimator.steps[-1]
        inner, final = _split(last, prefix + last_name + " > ")
        return steps + inner, final
    if not callable(getattr(estimator, "certify", None)):
        what = f"The final step {prefix[:-3]!r}" if prefix else "The estimator"
        raise UnsupportedModelError(
            f"{what} ({type(estimator).__name__}) has no certify/prediction_range: pass a fitted "
            "RobustGaussianProcessClassifier / RobustGaussianProcessRegressor, or a Pipeline ending in one."
        )
    return [], estimator


class _Preprocessing:
    """The preprocessing steps of a pipeline, as a box-mapping object."""

    def __init__(self, steps, final):
        self.steps = [(n, s) for n, s in steps if not _is_identity(s)]
        self.final = final
        first = self.steps[0][1] if self.steps else final
        check_is_fitted(final, getattr(final, "_fitted_attributes", None))
        if not hasattr(first, "n_features_in_"):
            check_is_fitted(first)
        self.n_in = int(first.n_features_in_)
        names = getattr(first, "feature_names_in_", None)
        self.feature_names = None if names is None else np.asarray(names, dtype=object)
        maps, n = [], self.n_in
        for name, step in self.steps:
            m = _step_map(name, step, n)
            maps.append(m)
            n = len(m.src)
        self.map = _compose(maps, self.n_in)
        self.n_out = n
        out_names = getattr(final, "feature_names_in_", None)
        self.out_names = None if out_names is None else list(out_names)

    def raw_frame(self, A, dtype=np.float64):
        """A raw (m, d) float array in the form the pipeline was fitted on."""
        A = np.array(A, dtype=dtype)  # a fresh copy: steps may transform in place
        if self.feature_names is None:
            return A
        import pandas as pd

        return pd.DataFrame(A, columns=list(self.feature_names))

    def transform(self, A, dtype=np.float64):
        """The model inputs, as float64 (m, n_out), from raw rows (m, d)
        given to the steps as ``dtype`` (float32: what the steps compute for
        float32 queries)."""
        Z = self.raw_frame(A, dtype)
        for _, step in self.steps:
            Z = step.transform(Z)
        if hasattr(Z, "toarray"):
            Z = Z.toarray()
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape != (len(A), self.n_out):
            raise RuntimeError(f"The preprocessing produced shape {Z.shape}, expected {(len(A), self.n_out)}.")
        return Z

    def model_frame(self, Z):
        """Model inputs in the form the final estimator was fitted on."""
        if self.out_names is None:
            return Z
        import pandas as pd

        return pd.DataFrame(Z, columns=self.out_names)

    def check_map(self, x0):
        """Defensive probe: moving raw column j may only change outputs fed by j."""
        d = self.n_in
        P = np.tile(x0, (d + 1, 1))
        P[np.arange(1, d + 1), np.arange(d)] += np.abs(x0) + 1.0
        Z = self.transform(P)
        changed = Z[1:] != Z[:1]  # (d, n_out)
        allowed = self.map.src[None, :] == np.arange(d)[:, None]
        if np.any(changed & ~allowed):
            raise RuntimeError("skgprobust.pipeline: the column map of the preprocessing does not match its transform.")

    def to_raw(self, Zp, centers, lo, hi):
        """Model-space points (m, n_out) -> raw points (m, d) inside [lo, hi]."""
        V = np.asarray(self.map.inverse(np.asarray(Zp, dtype=np.float64)), dtype=np.float64).reshape(len(Zp), self.n_in)
        V = np.where(np.isnan(V), centers, V)
        return np.clip(V, lo, hi)


def _validate_raw(pre, X):
    if pre.feature_names is not None and hasattr(X, "columns"):
        cols = [str(c) for c in X.columns]
        if cols != [str(c) for c in pre.feature_names]:
            raise ValueError(
                f"The columns of X {cols} differ from the feature names seen in fit {list(pre.feature_names)} "
                "(same names in the same order are required)."
            )
    X = check_array(X, dtype=np.float64)
    if X.shape[1] != pre.n_in:
        raise ValueError(f"X has {X.shape[1]} features, but the pipeline expects {pre.n_in}.")
    return X


def _enclose(Z0, ZL, ZH, low, high):
    """Per-feature half-widths ``gz`` such that the estimator's boxes
    ``max(Z0 - gz, low) .. min(Z0 + gz, high)`` contain ``[ZL_i, ZH_i]`` for
    every row (checked with the same float operations the estimator uses)."""
    gz = np.maximum(Z0 - ZL, ZH - Z0).max(axis=0) * (1.0 + 2.0**-49)
    for _ in range(200):
        lo_z, hi_z = np.maximum(Z0 - gz, low), np.minimum(Z0 + gz, high)
        bad = np.any(lo_z > ZL, axis=0) | np.any(hi_z < ZH, axis=0)
        if not bad.any():
            return gz
        gz = np.where(bad, np.maximum(np.nextafter(gz, np.inf), gz * (1.0 + 2.0**-48)), gz)
    raise RuntimeError("skgprobust.pipeline: could not enclose the mapped boxes.")  # pragma: no cover


@dataclass
class _Pushed:
    X: np.ndarray  # raw centres (n, d)
    lo: np.ndarray  # raw boxes (n, d)
    hi: np.ndarray
    Z0: np.ndarray  # model-space centres (n, k)
    groups: list  # [(row indices, gz (k,))]: one estimator call per group
    domain: tuple  # shared model-space domain (low, high), each (k,)


def _push(pre, X, gamma, features, domain):
    """Map the raw boxes into boxes of the model's input space.

    The estimator takes one half-width per feature and one domain for all
    rows. The domain is the hull of the mapped boxes, so every bound that is
    common to the rows (a raw ``domain``, a scaler's clip range) is exact;
    rows needing the same half-widths (all of them, up to rounding, unless a
    clipping scaler flattens the map at a row's centre) share one call.
    """
    X = _validate_raw(pre, X)
    lo, hi = make_boxes(X, gamma, features=features, domain=domain, feature_names=pre.feature_names)
    return _push_boxes(pre, X, lo, hi)


def _push_boxes(pre, X, lo, hi):
    """As :func:`_push`, for given raw boxes ``[lo, hi]`` containing the rows of X."""
    n = len(X)
    pre.check_map(X[0])
    Z = pre.transform(np.vstack([X, lo, hi]))
    if not np.all(np.isfinite(Z)):
        raise ValueError("The preprocessing maps some box corners to non-finite values.")
    Z0, ZL, ZH = Z[:n], Z[n : 2 * n], Z[2 * n :]
    if np.any(ZL > Z0) or np.any(Z0 > ZH):  # pragma: no cover - every supported step is monotone
        raise RuntimeError("skgprobust.pipeline: the preprocessing is not monotone on these boxes.")
    if pre.steps:
        ZL, ZH = _float32_hull(pre, lo, hi, ZL, ZH)
    low, high = ZL.min(axis=0), ZH.max(axis=0)
    return _Pushed(X, lo, hi, Z0, _group_rows(Z0, ZL, ZH, low, high), (low, high))


_F32_MAX = float(np.finfo(np.float32).max)


def _float32_hull(pre, lo, hi, ZL, ZH):
    """Widen the model-space boxes ``[ZL, ZH]`` to what the steps compute
    for **float32** queries inside the raw boxes.

    sklearn's scalers keep float32 input and transform it in float32, so a
    float32 raw point x in ``[lo, hi]`` reaches the estimator as fl32(T(x)),
    which may lie up to half a float32 ulp outside the float64 image
    ``[T(lo), T(hi)]`` (the estimator itself then works in float64, exactly
    on these numbers). Such an x satisfies ``rd32(lo) <= x <= ru32(hi)``
    (lo rounded down, hi rounded up to float32, clipped to the float32
    range); every supported step is a composition of monotone
    non-decreasing rounded float32 operations per column (subtract,
    multiply or divide by a positive scale, add, clip), so fl32(T(x)) lies
    in ``[fl32(T(rd32(lo))), fl32(T(ru32(hi)))]``. Every box is widened per
    feature by the largest excess of that interval over the float64 image
    (over all rows), so it covers float64 and float32 queries alike.
    A corner whose float32 image overflows (raw values or scalings near the
    float32 range, 3.4e38) cannot be covered: it adds nothing on its side
    and a warning says that float32 queries of those boxes are outside the
    certificates.
    """
    with np.errstate(all="ignore"):  # overflow to +-inf is clipped back just below
        lo32 = np.clip(lo, -_F32_MAX, _F32_MAX).astype(np.float32)
        hi32 = np.clip(hi, -_F32_MAX, _F32_MAX).astype(np.float32)
        lo32 = np.where(lo32.astype(np.float64) > lo, np.nextafter(lo32, np.float32(-np.inf)), lo32)
        hi32 = np.where(hi32.astype(np.float64) < hi, np.nextafter(hi32, np.float32(np.inf)), hi32)
        lo32 = np.clip(lo32, -_F32_MAX, _F32_MAX).astype(np.float32)
        hi32 = np.clip(hi32, -_F32_MAX, _F32_MAX).astype(np.float32)
        Z32 = pre.transform(np.vstack([lo32, hi32]), dtype=np.float32)
    n = len(lo)
    ZL32, ZH32 = Z32[:n], Z32[n:]
    ok_lo, ok_hi = np.isfinite(ZL32), np.isfinite(ZH32)
    if not (ok_lo.all() and ok_hi.all()):
        warnings.warn(
            "skgprobust.pipeline: the preprocessing overflows in float32 at some box corners; the certificates "
            "cover float64 queries of these boxes, not float32 ones.",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    # One widening per feature for all rows (the largest excess), so that rows
    # keep sharing one half-width vector (_group_rows); nextafter covers the
    # rounding of the subtraction / addition.
    excess = np.maximum(np.where(ok_lo, ZL - ZL32, 0.0), np.where(ok_hi, ZH32 - ZH, 0.0))
    w = np.maximum(excess, 0.0).max(axis=0)
    if not np.any(w > 0):
        return ZL, ZH
    return np.nextafter(ZL - w, -np.inf), np.nextafter(ZH + w, np.inf)


def _group_rows(Z0, ZL, ZH, low, high):
    """Split the rows into groups that one half-width vector serves exactly.

    A row fits a half-width ``gz`` when its estimator box
    ``max(Z0 - gz, low) .. min(Z0 + gz, high)`` is its mapped box up to a
    relative 2**-29 (rounding); every box contains its mapped box anyway.
    """
    need = np.maximum(Z0 - ZL, ZH - Z0)
    top = need.max(axis=0)
    tol = 2.0**-29 * top + 8 * np.finfo(float).eps * np.abs(Z0).max(axis=0)
    keys = np.round(need / np.where(top > 0, top, 1.0) * 2.0**30).astype(np.int64)
    remaining, groups = np.arange(len(Z0)), []
    while remaining.size:
        r = remaining
        gz = _enclose(Z0[r], ZL[r], ZH[r], low, high)
        lo_b, hi_b = np.maximum(Z0[r] - gz, low), np.minimum(Z0[r] + gz, high)
        fits = np.all((lo_b >= ZL[r] - tol) & (hi_b <= ZH[r] + tol), axis=1)
        if not fits.any():
            fits = np.all(keys[r] == keys[r[0]], axis=1)
            gz = _enclose(Z0[r[fits]], ZL[r[fits]], ZH[r[fits]], low, high)
        groups.append((r[fits], gz))
        remaining = r[~fits]
    return groups



def _call_groups(method, pre, p, *args, **kwargs):
    """Run ``method(Z0[rows], gz, ...)`` per group and reassemble the rows in order."""
    parts = []
    for rows, gz in p.groups:
        parts.append((rows, method(pre.model_frame(p.Z0[rows]), gz, *args, domain=p.domain, **kwargs)))
    if len(parts) == 1:
        return parts[0][1]
    order = np.argsort(np.concatenate([rows for rows, _ in parts]), kind="stable")
    first = parts[0][1]
    merged = {
        f.name: np.concatenate([np.asarray(getattr(r, f.name)) for _, r in parts])[order] for f in fields(first)
    }
    return type(first)(**merged)


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------


def certify(estimator, X, gamma, **kwargs):
    """Certify a fitted robust estimator, or a Pipeline ending in one, on raw inputs.

    Parameters
    ----------
    estimator : RobustGaussianProcessClassifier, RobustGaussianProcessRegressor or Pipeline
        Fitted. A :class:`sklearn.pipeline.Pipeline` must end in a robust
        estimator and its other steps must be in :data:`skgprobust.pipeline.SUPPORTED_STEPS`.
    X : array-like of shape (n_samples, n_features)
        Raw inputs, as passed to ``estimator.predict``.
    gamma : float or array-like of shape (n_features,)
        Half-width of the l_inf box per raw feature, in raw units.
    **kwargs
        Passed to the final estimator's ``certify`` (``delta``, ``norm``,
        ``max_iter``, ``time_limit``, ``n_jobs``, ``random_state``).
        ``features`` (indices, mask or names of the raw columns) and
        ``domain`` (``(low, high)`` in raw units) refer to the raw inputs.

    Returns
    -------
    result : CertificationResult
        As the estimator's, with ``counterexample`` in raw units (re-checked
        with ``estimator.predict`` on the raw point). ``bound`` is the bound
        proven for the mapped box, which contains the image of the raw box.

    Raises
    ------
    UnsupportedStepError
        A preprocessing step cannot be mapped soundly.
    """
    steps, final = _split(estimator)
    if not steps or all(_is_identity(s) for _, s in steps):
        return final.certify(X, gamma, **kwargs)
    if is_regressor(final):
        kind = "regressor"
    elif is_classifier(final):
        kind = "classifier"
    else:
        raise TypeError(f"{type(final).__name__} is neither a classifier nor a regressor; cannot re-check counterexamples.")
    pre = _Preprocessing(steps, final)
    features, domain = kwargs.pop("features", None), kwargs.pop("domain", None)
    p = _push(pre, X, gamma, features, domain)
    res = _call_groups(final.certify, pre, p, **kwargs)
    n, d = p.X.shape
    status = np.asarray(res.status).astype(str).copy()
    # Counterexamples found in the model's input space, mapped back into the
    # raw boxes and re-checked with the pipeline's own predict on raw points.
    cex = np.full((n, d), np.nan)
    flagged = np.flatnonzero(status == "not_robust")
    if flagged.size:
        cex[flagged] = pre.to_raw(res.counterexample[flagged], p.X[flagged], p.lo[flagged], p.hi[flagged])

    def violates(rows, cand):
        ok = _recheck(estimator, pre, kind, p.X[rows], cand, kwargs)
        return ok & np.all((cand >= p.lo[rows]) & (cand <= p.hi[rows]), axis=1)

    lost = recheck(status, cex, violates)
    if lost.size:
        warnings.warn(
            f"{lost.size} counterexample(s) found in the model's input space did not change the pipeline's "
            "prediction after mapping back to raw inputs (floating-point round trip); reported as 'unknown'.",
            RoundTripWarning,
            stacklevel=2,
        )
    return certification_result(status, cex, res.bound, res.n_iter, res.time, warn=False)


def _recheck(estimator, pre, kind, centers, cand, kwargs):
    """Does each raw candidate violate the property, according to ``estimator.predict``?"""
    ok = np.zeros(len(cand), dtype=bool)
    if kind == "classifier":
        # single-row predicts, as the estimator itself confirms them (a tie
        # can break differently inside a batch)
        for i in range(len(cand)):
            c0 = np.asarray(estimator.predict(pre.raw_frame(centers[i : i + 1]))).ravel()
            c1 = np.asarray(estimator.predict(pre.raw_frame(cand[i : i + 1]))).ravel()
            ok[i] = bool(c1[0] != c0[0])
        return ok
    delta, norm = kwargs.get("delta"), kwargs.get("norm", np.inf)
    for i in range(len(cand)):  # single-row predicts, as the estimator itself compares them
        y0 = np.asarray(estimator.predict(pre.raw_frame(centers[i : i + 1])), dtype=float).ravel()
        y1 = np.asarray(estimator.predict(pre.raw_frame(cand[i : i + 1])), dtype=float).ravel()
        ok[i] = bool(np.linalg.norm(y1 - y0, ord=norm) > delta)
    return ok


def _default(method, name):
    try:
        p = inspect.signature(method).parameters.get(name)
    except (TypeError, ValueError):  # pragma: no cover
        p = None
    return None if p is None or p.default is inspect.Parameter.empty else p.default


def prediction_range(estimator, X, gamma, **kwargs):
    """Certified range of a fitted robust estimator's prediction, or a Pipeline ending in one.

    Parameters
    ----------
    estimator : RobustGaussianProcessClassifier, RobustGaussianProcessRegressor or Pipeline
        Fitted; see :func:`certify`.
    X : array-like of shape (n_samples, n_features)
        Raw inputs.
    gamma : float or array-like of shape (n_features,)
        Half-width of the l_inf box per raw feature, in raw units.
    **kwargs
        Passed to the final estimator's ``prediction_range`` (``epsilon``,
        ``statistic``, ``max_iter``, ``time_limit``, ``n_jobs``,
        ``random_state``); ``features`` and ``domain`` refer to raw inputs.

    Returns
    -------
    result : RangeResult
        ``min_lower`` / ``max_upper`` are proven for a box containing the
        image of the raw box; ``argmin`` / ``argmax`` are raw points of the
        raw box and ``min_upper`` / ``max_lower`` the model's values there.
    """
    steps, final = _split(estimator)
    if not steps or all(_is_identity(s) for _, s in steps):
        return final.prediction_range(X, gamma, **kwargs)
    pre = _Preprocessing(steps, final)
    features, domain = kwargs.pop("features", None), kwargs.pop("domain", None)
    p = _push(pre, X, gamma, features, domain)
    return _range_pushed(pre, final, p, kwargs)


def _range_pushed(pre, final, p, kwargs):
    """prediction_range over the pushed raw boxes ``p`` (see :func:`prediction_range`)."""
    res = _call_groups(final.prediction_range, pre, p, **kwargs)
    n, d = p.X.shape
    k = res.min_lower.shape[1]
    epsilon = kwargs.get("epsilon", _default(final.prediction_range, "epsilon"))
    pts = np.concatenate([res.argmin, res.argmax], axis=1).reshape(n * 2 * k, -1)  # row-major: (n, 2k)
    rep = lambda A: np.repeat(A, 2 * k, axis=0)  # noqa: E731
    raw = pre.to_raw(pts, rep(p.X), rep(p.lo), rep(p.hi))
    # The model's own statistic at the points it will actually see: a range over
    # a zero-width box is the value there (min_upper is evaluated at the point).
    point_kwargs = {key: kwargs[key] for key in ("statistic", "epsilon") if key in kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        at = final.prediction_range(
            pre.model_frame(pre.transform(raw)), 0.0, max_iter=0, random_state=0, **point_kwargs
        )
    vals = np.asarray(at.min_upper, dtype=float).reshape(n, 2 * k, k)
    j = np.arange(k)
    min_upper, max_lower = vals[:, j, j], vals[:, k + j, j]
    raw = raw.reshape(n, 2 * k, d)
    # min_upper / max_lower are values attained in the raw box: the driver's
    # range assembly lowers min_lower to them where needed (never raises it).
    return range_result(
        res.min_lower, min_upper, raw[:, :k], max_lower, res.max_upper, raw[:, k:], epsilon, res.n_iter, res.time,
        warn=False,
    )


def explain(estimator, X, gamma, *, features=None, target=None, epsilon=1e-2, domain=None, method="bounds", **kwargs):
    """Delta per raw feature (see the estimators' ``explain``) of a robust
    estimator or a Pipeline ending in one, with the boxes in raw units.

    Each one-sided raw box ``[x, x + gamma e_i]`` (and ``[x - gamma e_i, x]``)
    is mapped through the preprocessing exactly as :func:`prediction_range`
    maps its boxes (the raw box itself, not a float midpoint and half-width);
    Delta and its bounds follow as in the estimator's ``explain``.

    Parameters
    ----------
    estimator : RobustGaussianProcessClassifier, RobustGaussianProcessRegressor or Pipeline
        Fitted; see :func:`certify`.
    X : array-like of shape (n_samples, n_features)
        Raw inputs.
    gamma : float or array-like of shape (n_features,)
        Radius per raw feature, in raw units.
    features : array-like of int, bool or str, default=None
        Raw features explained (None: all).
    target : label, array-like or int, default=None
        Classifier: the class explained (None: the pipeline's prediction per
        row). Regressor: the output index (None: 0).
    epsilon : float, default=1e-2
        Tolerance of the four one-sided ranges behind each feature's Delta.
    domain : tuple (low, high), default=None
        Valid raw input range.
    method : {"bounds"}, default="bounds"
        Pipelines support the certified method only.
    **kwargs
        Passed to :func:`prediction_range` (``max_iter``, ``time_limit``,
        ``n_jobs``, ``random_state``, ``variance_bound``, ``verbose``).

    Returns
    -------
    explanation : Explanation
        Delta per row and raw feature, with certified bounds, as the final
        estimator's ``explain`` returns it.
    """
    steps, final = _split(estimator)
    if not steps or all(_is_identity(s) for _, s in steps):
        if not is_classifier(final) and target is None:
            target = 0
        return final.explain(
            X, gamma, features=features, target=target, epsilon=epsilon, domain=domain, method=method, **kwargs
        )
    if method != "bounds":
        raise ValueError(f"Pipelines support method='bounds' only, got {method!r}.")
    pre = _Preprocessing(steps, final)
    X = _validate_raw(pre, X)
    n, d = X.shape
    lo, hi = make_boxes(X, gamma, domain=domain, feature_names=pre.feature_names)
    feats = np.flatnonzero(resolve_features(features, d, pre.feature_names))
    if is_classifier(final):
        labels, cols = class_targets(final.classes_, target, n, lambda: estimator.predict(pre.raw_frame(X)))
    else:
        target = 0 if target is None else target
        if not isinstance(target, numbers.Integral) or isinstance(target, bool) or target < 0:
            raise ValueError(f"target must be an output index, got {target!r}.")
        cols = np.full(n, int(target))
        labels = cols.copy()
    k = len(feats)
    # (4 statistics, side, n, k): min_lower, min_upper, max_lower, max_upper.
    ranges = np.empty((4, 2, n, k))
    converged = np.ones((n, k), dtype=bool)
    start = time.perf_counter()
    for jj, j in enumerate(feats):
        for side, edge in enumerate((hi[:, j], lo[:, j])):
            # The exact one-sided raw boxes (a float midpoint +- half-width
            # could miss x or overshoot the edge by an ulp, which the model's
            # slope in scaled units can turn into a large error).
            LO, HI = X.copy(), X.copy()
            LO[:, j], HI[:, j] = np.minimum(X[:, j], edge), np.maximum(X[:, j], edge)
            centres = X.copy()
            centres[:, j] = np.clip(0.5 * (LO[:, j] + HI[:, j]), LO[:, j], HI[:, j])
            r = _range_pushed(pre, final, _push_boxes(pre, centres, LO, HI), dict(kwargs, epsilon=epsilon))
            c = cols
            if np.any(c >= r.min_lower.shape[1]):
                raise ValueError(f"target output {int(c.max())} does not exist ({r.min_lower.shape[1]} outputs).")
            sel = (np.arange(n), c)
            for s, name in enumerate(("min_lower", "min_upper", "max_lower", "max_upper")):
                ranges[s, side, :, jj] = getattr(r, name)[sel]
            converged[:, jj] &= r.converged[sel]
    values, low, high = delta_from_ranges(tuple(ranges[:, 0]), tuple(ranges[:, 1]))
    names = pre.feature_names if pre.feature_names is not None else np.array([f"x{j}" for j in range(d)], dtype=object)
    gam = np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,))[feats].copy()
    elapsed = (time.perf_counter() - start) / max(n, 1)
    return Explanation(
        values, low, high, converged, feats, np.asarray(names, dtype=object)[feats], labels, gam, np.full(n, elapsed)
    )


# --------------------------------------------------------------------------
# A Pipeline with the methods
# --------------------------------------------------------------------------


def _final_has(attr):
    def check(self):
        try:
            _, final = _split(self)
        except TypeError:
            return False
        return callable(getattr(final, attr, None))

    return check


def _sklearn_has(name):
    """Available exactly when scikit-learn's Pipeline offers ``name`` for
    this instance (its own ``available_if`` check, whatever the version)."""

    def check(self):
        getattr(super(Pipeline, self), name)  # raises AttributeError as sklearn's check does
        return True

    return check


def _no_float16(X):
    """X with float16 data as float64 (arrays, lists and DataFrame columns);
    other input unchanged. Every :class:`Pipeline` method that gives raw
    input to the steps goes through here. The certified boxes cover float64
    and float32 raw queries (:func:`_float32_hull`), not the coarser
    float16 rounding of the scalers (up to 1e-3 relative), which keep
    float16 input in float16."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and dtype == np.float16:
        return np.asarray(X, dtype=np.float64)
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "astype"):
        f16 = [c for c, t in zip(X.columns, dtypes) if t == np.float16]
        if f16:
            return X.astype({c: np.float64 for c in f16})
        return X
    if isinstance(X, (list, tuple)):
        try:
            arr = np.asarray(X)
        except ValueError:  # ragged: left to the steps' own validation
            return X
        if arr.dtype == np.float16:
            return arr.astype(np.float64)
    return X


class Pipeline(_SkPipeline):
    """A :class:`sklearn.pipeline.Pipeline` with ``certify``, ``prediction_range`` and ``explain``.

    Same parameters and behaviour as scikit-learn's Pipeline; the extra
    methods are :func:`skgprobust.pipeline.certify`,
    :func:`skgprobust.pipeline.prediction_range` and
    :func:`skgprobust.pipeline.explain` applied to ``self``, with the
    perturbation given in raw input units.

    Parameters
    ----------
    steps : list of tuples
        ``(name, estimator)`` pairs, the last one a fitted-able estimator of
        this suite (for the certified methods), as in sklearn.
    transform_input : list of str, default=None
        Names of metadata parameters transformed by the steps, as in
        sklearn (>= 1.6).
    memory : str or object with the joblib.Memory interface, default=None
        Caches the fitted transformers, as in sklearn.
    verbose : bool, default=False
        Print the time of each step's fit.

    Attributes
    ----------
    named_steps : Bunch
        The steps by name.
    classes_ : ndarray of shape (n_classes,)
        The final classifier's class labels.
    n_features_in_ : int
        Number of features seen by the first step during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names seen by the first step during fit.

    See Also
    --------
    skgprobust.pipeline.make_pipeline : build one without naming the steps.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skgprobust import RobustGaussianProcessClassifier
    >>> from skgprobust.pipeline import make_pipeline
    >>> X, y = make_moons(60, noise=0.2, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), RobustGaussianProcessClassifier(random_state=0)).fit(X, y)
    >>> pipe.certify(X[:3], gamma=0.01, random_state=0).status.shape
    (3,)
    """

    # Every method that gives raw input to the steps casts float16 input to
    # float64 first (_no_float16): sklearn's scalers keep float16, and the
    # certificates cover the float64 (and float32) image of a raw box only.
    # inverse_transform takes output-space data and is left as sklearn's.

    def fit(self, X, y=None, **params):
        """Fit the steps in turn, as :meth:`sklearn.pipeline.Pipeline.fit`.

        Float16 input is given to the steps as float64 (what the
        certificates cover).

        Parameters
        ----------
        X : iterable
            Training data, the first step's input.
        y : iterable, default=None
            Training targets.
        **params : dict of str -> object
            Fit parameters of the steps (``stepname__param``) or, with
            metadata routing, routed metadata, as in sklearn.

        Returns
        -------
        self : Pipeline
            This pipeline, fitted.
        """
        return super().fit(_no_float16(X), y, **params)

    @available_if(_sklearn_has("fit_transform"))
    def fit_transform(self, X, y=None, **params):
        """As :meth:`sklearn.pipeline.Pipeline.fit_transform`; float16 input
        is given to the steps as float64."""
        return super().fit_transform(_no_float16(X), y, **params)

    @available_if(_sklearn_has("fit_predict"))
    def fit_predict(self, X, y=None, **params):
        """As :meth:`sklearn.pipeline.Pipeline.fit_predict`; float16 input is
        given to the steps as float64."""
        return super().fit_predict(_no_float16(X), y, **params)

    @available_if(_sklearn_has("predict"))
    def predict(self, X, **params):
        """As :meth:`sklearn.pipeline.Pipeline.predict`; float16 input is
        given to the steps as float64 (what the certificates cover)."""
        return super().predict(_no_float16(X), **params)

    @available_if(_sklearn_has("predict_proba"))
    def predict_proba(self, X, **params):
        """As :meth:`sklearn.pipeline.Pipeline.predict_proba`; float16 input
        is given to the steps as float64 (what the certificates cover)."""
        return super().predict_proba(_no_float16(X), **params)

    @available_if(_sklearn_has("predict_log_proba"))
    def predict_log_proba(self, X, **params):
        """As :meth:`sklearn.pipeline.Pipeline.predict_log_proba`; float16
        input is given to the steps as float64."""
        return super().predict_log_proba(_no_float16(X), **params)

    @available_if(_sklearn_has("decision_function"))
    def decision_function(self, X, **params):
        """As :meth:`sklearn.pipeline.Pipeline.decision_function`; float16
        input is given to the steps as float64."""
        return super().decision_function(_no_float16(X), **params)

    @available_if(_sklearn_has("score_samples"))
    def score_samples(self, X):
        """As :meth:`sklearn.pipeline.Pipeline.score_samples`; float16 input
        is given to the steps as float64."""
        return super().score_samples(_no_float16(X))

    @available_if(_sklearn_has("transform"))
    def transform(self, X, **params):
        """As :meth:`sklearn.pipeline.Pipeline.transform`; float16 input is
        given to the steps as float64."""
        return super().transform(_no_float16(X), **params)

    @available_if(_sklearn_has("score"))
    def score(self, X, y=None, sample_weight=None, **params):
        """As :meth:`sklearn.pipeline.Pipeline.score`; float16 input is given
        to the steps as float64 (the predictions scored are the certified
        ones)."""
        return super().score(_no_float16(X), y, sample_weight=sample_weight, **params)

    @available_if(_final_has("certify"))
    def certify(self, X, gamma, **kwargs):
        """See :func:`skgprobust.pipeline.certify`."""
        return certify(self, X, gamma, **kwargs)

    @available_if(_final_has("prediction_range"))
    def prediction_range(self, X, gamma, **kwargs):
        """See :func:`skgprobust.pipeline.prediction_range`."""
        return prediction_range(self, X, gamma, **kwargs)

    @available_if(_final_has("explain"))
    def explain(self, X, gamma, **kwargs):
        """See :func:`skgprobust.pipeline.explain`."""
        return explain(self, X, gamma, **kwargs)


def make_pipeline(*steps, **kwargs):
    """:func:`sklearn.pipeline.make_pipeline` returning a :class:`skgprobust.pipeline.Pipeline`.

    Parameters
    ----------
    *steps : list of estimators
        The steps, named after their lower-cased class names.
    **kwargs : dict
        ``memory``, ``transform_input`` and ``verbose``, as in sklearn.

    Returns
    -------
    p : Pipeline
        A :class:`skgprobust.pipeline.Pipeline` of the steps.
    """
    return Pipeline(**_sk_make_pipeline(*steps, **kwargs).get_params(deep=False))
