"""skgprobust.pipeline: certificates through preprocessing, checked in RAW input space.

Every check compares with the pipeline's own ``predict`` on raw points
sampled in the raw box (uniform samples, all corners, points on the faces),
never with skgprobust's internals.
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline as SkPipeline
from sklearn.pipeline import make_pipeline as sk_make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
)

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.pipeline import (
    Pipeline,
    RoundTripWarning,
    UnsupportedStepError,
    certify,
    explain,
    make_pipeline,
    prediction_range,
)

from .test_explain import dense_delta

from ._helpers import BOUND_TOL

#: Reproducibility slack: a reported value (min_upper at argmin) against a
#: re-evaluation of the pipeline, and the dense-Delta estimates (not model
#: values; see test_explain). Bounds against model values: BOUND_TOL = 0.
TOL = 1e-9
N_SAMPLES = 2000

# Raw features on very different scales; the last one is constant in the
# training data (zero scale: StandardScaler scale_ = 1, MinMaxScaler range 1).
OFFSET = np.array([0.0, 500.0, 3.0])
SCALE = np.array([1.0, 100.0, 0.0])
GAMMA = np.array([0.25, 25.0, 0.05])


def _raw(rng, n, spread=2.0):
    return OFFSET + SCALE * rng.uniform(-spread, spread, (n, 3))


def _label(X):
    return (np.sin(1.5 * X[:, 0]) + (X[:, 1] - 500.0) / 100.0 > 0).astype(int)


def _target(X):
    return np.sin(X[:, 0]) + 0.5 * np.cos((X[:, 1] - 500.0) / 50.0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = _raw(rng, 45)
    # Test rows partly outside the training range (exercises MinMaxScaler clip),
    # and a moving value for the constant feature.
    X_test = _raw(rng, 8, spread=2.3)
    X_test[:, 2] = [3.0, 3.0, 3.02, 2.97, 3.0, 3.0, 3.1, 3.0]
    return X, _label(X), _target(X), X_test


def _preprocessors():
    return {
        "standard": [StandardScaler()],
        "minmax": [MinMaxScaler(feature_range=(-1.0, 2.0))],
        "minmax_clip": [MinMaxScaler(clip=True)],
        "maxabs": [MaxAbsScaler()],
        "maxabs_clip": [MaxAbsScaler(clip=True)],
        "select_reorder": [ColumnTransformer([("sc", StandardScaler(), [1, 0])], remainder="drop")],
        "columns_mixed": [
            ColumnTransformer(
                [("mm", MinMaxScaler(), [0]), ("keep", "passthrough", [2])],
                remainder=StandardScaler(),
                transformer_weights={"mm": 2.0},
            )
        ],
        "duplicate_column": [
            ColumnTransformer([("a", StandardScaler(), [0, 1]), ("b", MinMaxScaler(), [0]), ("c", "passthrough", [2])])
        ],
        "chain": [StandardScaler(), "passthrough", FunctionTransformer(), MinMaxScaler(clip=True)],
        "nested": [SkPipeline([("a", MaxAbsScaler()), ("b", StandardScaler())]), None],
    }


PREPROCESSORS = list(_preprocessors())


def _steps(name, final):
    steps = [(f"s{i}", s) for i, s in enumerate(_preprocessors()[name])]
    return SkPipeline(steps + [("gp", final)])


def _clf():
    return RobustGaussianProcessClassifier(kernel=ConstantKernel(3.0) * RBF(0.6), optimizer=None)


def _reg():
    return RobustGaussianProcessRegressor(kernel=ConstantKernel(1.0) * RBF(0.5) + WhiteKernel(1e-2), optimizer=None)


def raw_box(X, gamma, features=None, domain=None):
    """The raw box per row, computed here (not by skgprobust)."""
    g = np.broadcast_to(np.asarray(gamma, float), X.shape[1:]).copy()
    if features is not None:
        mask = np.zeros(X.shape[1], bool)
        mask[np.asarray(features)] = True
        g = np.where(mask, g, 0.0)
    lo, hi = X - g, X + g
    if domain is not None:
        lo, hi = np.maximum(lo, domain[0]), np.minimum(hi, domain[1])
    return lo, hi


def box_samples(lo, hi, rng, n=N_SAMPLES):
    """Uniform points, all corners, the centre and points on the faces of [lo, hi]."""
    d = len(lo)
    bits = (np.arange(2**d)[:, None] >> np.arange(d)[None]) & 1
    face = lo + (hi - lo) * rng.random((n // 4, d))
    j = rng.integers(d, size=len(face))
    face[np.arange(len(face)), j] = np.where(rng.random(len(face)) < 0.5, lo[j], hi[j])
    return np.vstack([lo + (hi - lo) * rng.random((n, d)), np.where(bits == 1, hi, lo), 0.5 * (lo + hi), face])


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------
# Soundness in raw space, every supported preprocessing
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", PREPROCESSORS)
def test_classifier_certificates_hold_in_raw_space(data, name):
    X, y, _, X_test = data
    pipe = _steps(name, _clf()).fit(X, y)
    res = quiet(certify, pipe, X_test, GAMMA, max_iter=300, random_state=0)
    assert res.counterexample.shape == X_test.shape
    labels = pipe.predict(X_test)
    lo, hi = raw_box(X_test, GAMMA)
    rng = np.random.default_rng(1)
    for i in range(len(X_test)):
        if res.status[i] == "robust":
            assert np.all(pipe.predict(box_samples(lo[i], hi[i], rng)) == labels[i]), (name, i)
            assert res.bound[i] > 0
        elif res.status[i] == "not_robust":
            c = res.counterexample[i]
            assert np.all((c >= lo[i]) & (c <= hi[i])), (name, i)
            assert pipe.predict(c[None])[0] != labels[i], (name, i)
        else:
            assert np.all(np.isnan(res.counterexample[i]))
    # Not vacuous: proofs and counterexamples both occur.
    assert res.robust.any(), name
    assert (res.status == "not_robust").any(), name


@pytest.mark.parametrize("name", PREPROCESSORS)
def test_regressor_range_brackets_pipeline_predict(data, name):
    X, _, t, X_test = data
    pipe = _steps(name, _reg()).fit(X, t)
    rows = X_test[:4]
    r = quiet(prediction_range, pipe, rows, GAMMA, epsilon=1e-3, max_iter=400, random_state=0)
    lo, hi = raw_box(rows, GAMMA)
    rng = np.random.default_rng(2)
    assert r.argmin.shape == (len(rows), 1, 3) and r.argmax.shape == (len(rows), 1, 3)
    for i in range(len(rows)):
        v = pipe.predict(box_samples(lo[i], hi[i], rng))
        assert v.min() >= r.min_lower[i, 0] - BOUND_TOL, (name, i)
        assert v.max() <= r.max_upper[i, 0] + BOUND_TOL, (name, i)
        for pt, val in ((r.argmin[i, 0], r.min_upper[i, 0]), (r.argmax[i, 0], r.max_lower[i, 0])):
            assert np.all((pt >= lo[i]) & (pt <= hi[i])), (name, i)
            assert abs(pipe.predict(pt[None])[0] - val) <= TOL, (name, i)
        assert r.min_lower[i, 0] <= r.min_upper[i, 0] + BOUND_TOL
        assert r.max_lower[i, 0] <= r.max_upper[i, 0] + BOUND_TOL
    assert r.converged.all(), name


@pytest.mark.parametrize("name", ["standard", "minmax_clip", "columns_mixed"])
def test_regressor_delta_certificates_hold_in_raw_space(data, name):
    X, _, t, X_test = data
    pipe = _steps(name, _reg()).fit(X, t)
    delta = 0.15
    res = quiet(certify, pipe, X_test, GAMMA, delta=delta, max_iter=400, random_state=0)
    lo, hi = raw_box(X_test, GAMMA)
    rng = np.random.default_rng(3)
    for i in range(len(X_test)):
        y0 = pipe.predict(X_test[i : i + 1])[0]
        if res.status[i] == "robust":
            v = pipe.predict(box_samples(lo[i], hi[i], rng))
            assert np.abs(v - y0).max() <= res.bound[i] + BOUND_TOL, (name, i)
            assert res.bound[i] <= delta
        elif res.status[i] == "not_robust":
            c = res.counterexample[i]
            assert np.all((c >= lo[i]) & (c <= hi[i]))
            assert abs(pipe.predict(c[None])[0] - y0) > delta
    assert res.robust.any() and (res.status == "not_robust").any(), res.status


# --------------------------------------------------------------------------
# Tightness: a scaler in front is the same problem as pre-scaled data
# --------------------------------------------------------------------------


def test_standard_scaler_pipeline_matches_prescaled_model(data):
    X, y, _, X_test = data
    pipe = _steps("standard", _clf()).fit(X, y)
    sc, gp = pipe[0], pipe[-1]
    direct = quiet(gp.certify, sc.transform(X_test), GAMMA / sc.scale_, max_iter=300, random_state=0)
    through = quiet(certify, pipe, X_test, GAMMA, max_iter=300, random_state=0)
    np.testing.assert_array_equal(direct.status, through.status)
    # The pushed box also contains the float32 image of the raw box (float32
    # queries; test_ranges_hold_for_float32_queries): wider by up to half a
    # float32 ulp of the scaled inputs, so the bound through the pipeline is
    # never above the direct one and within ~1e-5 of it (1e-6 before).
    assert np.all(through.bound <= direct.bound + 1e-12 * (1 + np.abs(direct.bound)))
    np.testing.assert_allclose(direct.bound, through.bound, rtol=1e-4, atol=1e-9)


def test_zero_scale_feature_moves_at_unit_scale(data):
    """A feature constant in training still moves: scale 1 (StandardScaler,
    MaxAbsScaler of 0) or the feature range (MinMaxScaler)."""
    from skgprobust.pipeline import _Preprocessing, _push, _split

    X, y, _, X_test = data
    for name, factor in (("standard", 1.0), ("minmax", 3.0), ("maxabs", 1.0 / 3.0)):
        pipe = _steps(name, _clf()).fit(X, y)
        p = _push(_Preprocessing(*_split(pipe)), X_test, GAMMA, None, None)
        assert len(p.groups) == 1  # no clipping: one call for all rows
        gz = p.groups[0][1]
        # Exact up to the float32 hull (float32 queries: a few float32 ulps of the scaled values).
        assert GAMMA[2] * factor <= gz[2] <= GAMMA[2] * factor + 2.0**-21 * (1 + np.abs(p.Z0).max()), name


# --------------------------------------------------------------------------
# features= and domain= in raw units, DataFrame pipelines
# --------------------------------------------------------------------------


def test_features_by_name_and_domain_in_raw_units(data):
    pd = pytest.importorskip("pandas")
    X, _, t, X_test = data
    cols = ["a", "b", "c"]
    Xf = pd.DataFrame(X, columns=cols)
    ct = ColumnTransformer([("num", StandardScaler(), ["b", "a"]), ("const", MinMaxScaler(), ["c"])])
    pipe = SkPipeline([("ct", ct), ("gp", _reg())]).fit(Xf, t)
    rows = X_test[:4]
    low = rows.min(0) - np.array([0.1, 5.0, 0.0])
    high = rows.max(0) + np.array([0.1, 5.0, 0.0])
    gamma = np.array([0.4, 40.0, 0.1])
    r = quiet(
        prediction_range,
        pipe,
        pd.DataFrame(rows, columns=cols),
        gamma,
        features=["a", "b"],
        domain=(low, high),
        epsilon=1e-3,
        max_iter=400,
        random_state=0,
    )
    r_idx = quiet(prediction_range, pipe, rows, gamma, features=[0, 1], domain=(low, high), epsilon=1e-3, max_iter=400, random_state=0)
    np.testing.assert_array_equal(r.min_lower, r_idx.min_lower)
    lo, hi = raw_box(rows, gamma, features=[0, 1], domain=(low, high))
    assert np.all(lo[:, 2] == rows[:, 2]) and np.all(hi[:, 2] == rows[:, 2])
    rng = np.random.default_rng(4)
    for i in range(len(rows)):
        for pt in (r.argmin[i, 0], r.argmax[i, 0]):
            assert np.all((pt >= lo[i]) & (pt <= hi[i]))
            assert pt[2] == rows[i, 2]  # a fixed feature stays put
        v = pipe.predict(pd.DataFrame(box_samples(lo[i], hi[i], rng), columns=cols))
        assert v.min() >= r.min_lower[i, 0] - BOUND_TOL and v.max() <= r.max_upper[i, 0] + BOUND_TOL
    # The box is clipped, not shifted: a domain that pins the box gives a point range.
    pinned = quiet(prediction_range, pipe, rows[:1], gamma, domain=(rows[0], rows[0]), epsilon=1e-3, random_state=0)
    y0 = pipe.predict(pd.DataFrame(rows[:1], columns=cols))[0]
    assert pinned.min_lower[0, 0] <= y0 + BOUND_TOL and pinned.max_upper[0, 0] >= y0 - BOUND_TOL
    assert pinned.max_upper[0, 0] - pinned.min_lower[0, 0] <= 1e-3 + TOL
    # Wrong column order is refused rather than silently misread.
    with pytest.raises(ValueError, match="feature names"):
        certify(pipe, pd.DataFrame(rows[:, ::-1], columns=cols[::-1]), gamma, delta=0.1)


def test_domain_clips_classifier_box(data):
    X, y, _, X_test = data
    pipe = _steps("minmax_clip", _clf()).fit(X, y)
    low, high = X_test.min(0), X_test.max(0)
    res = quiet(certify, pipe, X_test, GAMMA, domain=(low, high), max_iter=300, random_state=0)
    lo, hi = raw_box(X_test, GAMMA, domain=(low, high))
    labels = pipe.predict(X_test)
    rng = np.random.default_rng(5)
    for i in np.flatnonzero(res.robust):
        assert np.all(pipe.predict(box_samples(lo[i], hi[i], rng)) == labels[i])
    for i in np.flatnonzero(res.status == "not_robust"):
        c = res.counterexample[i]
        assert np.all((c >= lo[i]) & (c <= hi[i])) and pipe.predict(c[None])[0] != labels[i]


# --------------------------------------------------------------------------
# Refusals and the round trip
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "step, kind",
    [
        (PolynomialFeatures(2), "PolynomialFeatures"),
        (PCA(2), "PCA"),
        (FunctionTransformer(np.log1p), "FunctionTransformer"),
        (ColumnTransformer([("oh", OneHotEncoder(), [2])], remainder="passthrough"), "OneHotEncoder"),
    ],
)
def test_unsupported_step_is_refused_by_name(data, step, kind):
    X, y, _, X_test = data
    X = np.abs(X)  # log1p-friendly
    pipe = SkPipeline([("prep", step), ("gp", _clf())]).fit(X, y)
    for fn in (certify, prediction_range):
        with pytest.raises(UnsupportedStepError, match="prep") as err:
            fn(pipe, np.abs(X_test), 0.1)
        msg = str(err.value)
        assert kind in msg and "StandardScaler" in msg and "MinMaxScaler" in msg
    assert issubclass(UnsupportedStepError, TypeError) and issubclass(UnsupportedStepError, ValueError)


def test_non_positive_transformer_weight_is_refused(data):
    X, y, _, X_test = data
    ct = ColumnTransformer([("a", StandardScaler(), [0, 1, 2])], transformer_weights={"a": -1.0})
    pipe = SkPipeline([("ct", ct), ("gp", _clf())]).fit(X, y)
    with pytest.raises(UnsupportedStepError, match="weight"):
        certify(pipe, X_test, 0.1)


def test_final_step_must_be_robust(data):
    X, y, _, X_test = data
    pipe = sk_make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="certify"):
        certify(pipe, X_test, 0.1)
    with pytest.raises(TypeError, match="certify"):
        prediction_range(LogisticRegression().fit(X, y), X_test, 0.1)


class _LyingClassifier(RobustGaussianProcessClassifier):
    """Claims every row is not robust, with the centre as 'counterexample'."""

    def certify(self, X, gamma, **kwargs):
        res = super().certify(X, gamma, max_iter=0)
        res.status[:] = "not_robust"
        res.robust[:] = False
        res.counterexample = np.asarray(X, dtype=float).copy()
        return res


def test_unverified_counterexample_is_downgraded_to_unknown(data):
    X, y, _, X_test = data
    pipe = SkPipeline([("sc", StandardScaler()), ("gp", _LyingClassifier(kernel=RBF(1.0), optimizer=None))]).fit(X, y)
    with pytest.warns(RoundTripWarning):
        res = quiet(certify, pipe, X_test, GAMMA)
    assert np.all(res.status == "unknown") and not res.robust.any()
    assert np.all(np.isnan(res.counterexample))


def test_counterexamples_survive_round_trip(data):
    X, y, _, X_test = data
    pipe = _steps("standard", _clf()).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoundTripWarning)
        res = quiet(certify, pipe, X_test, 2 * GAMMA, max_iter=300, random_state=0)
    assert (res.status == "not_robust").sum() >= 2


# --------------------------------------------------------------------------
# Plain estimators, the Pipeline subclass
# --------------------------------------------------------------------------


def test_bare_estimator_and_identity_pipeline_delegate(data):
    X, y, _, X_test = data
    clf = _clf().fit(X, y)
    direct = quiet(clf.certify, X_test, GAMMA, max_iter=100, random_state=0)
    for est in (clf, SkPipeline([("p", "passthrough"), ("gp", clf)])):
        res = quiet(certify, est, X_test, GAMMA, max_iter=100, random_state=0)
        np.testing.assert_array_equal(res.status, direct.status)
        np.testing.assert_array_equal(res.bound, direct.bound)


def test_pipeline_subclass(data):
    X, y, _, X_test = data
    pipe = make_pipeline(StandardScaler(), _clf()).fit(X, y)
    assert isinstance(pipe, Pipeline) and isinstance(clone(pipe), Pipeline)
    a = quiet(pipe.certify, X_test, GAMMA, max_iter=200, random_state=0)
    b = quiet(certify, pipe, X_test, GAMMA, max_iter=200, random_state=0)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.bound, b.bound)
    r = quiet(pipe.prediction_range, X_test[:2], GAMMA, max_iter=50, random_state=0)
    assert r.min_lower.shape[0] == 2 and r.argmin.shape[::2] == (2, 3)
    pickle.loads(pickle.dumps(pipe))
    plain = Pipeline([("sc", StandardScaler()), ("lr", LogisticRegression())]).fit(X, y)
    assert not hasattr(plain, "certify") and not hasattr(plain, "prediction_range")


@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_multiclass_pipeline_certificates_hold_in_raw_space(multi_class):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(0.3), optimizer=None, multi_class=multi_class)
    pipe = SkPipeline([("mm", MinMaxScaler()), ("gp", clf)]).fit(X[::2], y[::2])
    rows, gamma = X[1::12], np.array([0.3, 0.2, 0.4, 0.2])
    res = quiet(certify, pipe, rows, gamma, max_iter=200, random_state=0)
    labels = pipe.predict(rows)
    lo, hi = raw_box(rows, gamma)
    rng = np.random.default_rng(6)
    for i in range(len(rows)):
        if res.robust[i]:
            assert np.all(pipe.predict(box_samples(lo[i], hi[i], rng)) == labels[i])
        elif res.status[i] == "not_robust":
            c = res.counterexample[i]
            assert np.all((c >= lo[i]) & (c <= hi[i])) and pipe.predict(c[None])[0] != labels[i]
    assert res.robust.any() and (res.status == "not_robust").any(), res.status


@pytest.mark.parametrize("name", ["minmax_clip", "maxabs_clip", "standard", "columns_mixed"])
@pytest.mark.parametrize("use_domain", [False, True])
def test_model_space_boxes_enclose_the_raw_boxes_tightly(data, name, use_domain):
    """The estimator's boxes (one half-width per group, a shared domain)
    contain the image of each raw box and exceed it by rounding only, also
    when a clipping scaler or the domain makes the mapped boxes asymmetric."""
    from skgprobust.pipeline import _Preprocessing, _push, _split

    X, y, _, X_test = data
    pipe = _steps(name, _clf()).fit(X, y)
    pre = _Preprocessing(*_split(pipe))
    gamma = 4 * GAMMA  # wide boxes: many rows reach the clip range or the domain
    domain = (X_test.min(0) - 0.1 * SCALE, X_test.max(0) + 0.1 * SCALE) if use_domain else None
    p = _push(pre, X_test, gamma, None, domain)
    lo, hi = raw_box(X_test, gamma, domain=domain)
    ZL, ZH = pre.transform(lo), pre.transform(hi)
    rows = np.concatenate([r for r, _ in p.groups])
    assert sorted(rows.tolist()) == list(range(len(X_test)))
    low, high = p.domain
    for r, gz in p.groups:
        blo, bhi = np.maximum(p.Z0[r] - gz, low), np.minimum(p.Z0[r] + gz, high)
        assert np.all(blo <= ZL[r]) and np.all(bhi >= ZH[r])
        # Tight up to rounding and the float32 hull (a few float32 ulps of the scaled values).
        tol = 1e-8 + 2.0**-21 * (1.0 + np.abs(p.Z0).max(axis=0))
        assert np.all(ZL[r] - blo <= tol) and np.all(bhi - ZH[r] <= tol)
    if name == "standard":
        assert len(p.groups) == 1


def test_pandas_output_pipeline(data):
    """set_output(transform="pandas"): the final estimator is fitted on named columns."""
    pytest.importorskip("pandas")
    X, _, t, X_test = data
    ct = ColumnTransformer([("sc", StandardScaler(), [0, 1]), ("mm", MinMaxScaler(), [2])])
    pipe = SkPipeline([("ct", ct), ("gp", _reg())]).set_output(transform="pandas").fit(X, t)
    assert hasattr(pipe[-1], "feature_names_in_")
    rows = X_test[:3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "feature names" warnings either
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = prediction_range(pipe, rows, GAMMA, epsilon=1e-3, max_iter=300, random_state=0)
        c = certify(pipe, rows, GAMMA, delta=0.2, max_iter=300, random_state=0)
    lo, hi = raw_box(rows, GAMMA)
    rng = np.random.default_rng(7)
    for i in range(len(rows)):
        v = pipe.predict(box_samples(lo[i], hi[i], rng))
        assert v.min() >= r.min_lower[i, 0] - BOUND_TOL and v.max() <= r.max_upper[i, 0] + BOUND_TOL
        if c.robust[i]:
            assert np.abs(v - pipe.predict(rows[i : i + 1])[0]).max() <= c.bound[i] + BOUND_TOL


def test_classifier_proba_range_through_pipeline(data):
    X, y, _, X_test = data
    pipe = _steps("minmax_clip", _clf()).fit(X, y)
    rows = X_test[:3]
    r = quiet(prediction_range, pipe, rows, GAMMA, epsilon=1e-2, max_iter=200, random_state=0)
    k = r.min_lower.shape[1]
    lo, hi = raw_box(rows, GAMMA)
    rng = np.random.default_rng(8)
    for i in range(len(rows)):
        P = pipe.predict_proba(box_samples(lo[i], hi[i], rng, n=500))[:, -k:]
        assert np.all(P.min(0) >= r.min_lower[i] - BOUND_TOL) and np.all(P.max(0) <= r.max_upper[i] + BOUND_TOL)
        for j in range(k):
            for pt, val in ((r.argmin[i, j], r.min_upper[i, j]), (r.argmax[i, j], r.max_lower[i, j])):
                assert np.all((pt >= lo[i]) & (pt <= hi[i]))
                assert abs(pipe.predict_proba(pt[None])[0, -k:][j] - val) <= TOL


# --------------------------------------------------------------------------
# explain through pipelines
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["standard", "duplicate_column", "minmax_clip"])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_explain_through_pipeline_contains_dense_delta(data, name, kind):
    X, y, t, X_test = data
    pipe = _steps(name, _clf() if kind == "classifier" else _reg())
    pipe.fit(X, y if kind == "classifier" else t)
    rows = X_test[:3]
    ex = quiet(explain, pipe, rows, GAMMA, epsilon=1e-3, random_state=0)
    assert ex.values.shape == (3, 3) and ex.feature_names.tolist() == ["x0", "x1", "x2"]
    assert np.all((ex.lower <= ex.values + BOUND_TOL) & (ex.values <= ex.upper + BOUND_TOL))
    for r in range(len(rows)):
        if kind == "classifier":
            c = list(pipe.classes_).index(ex.target[r])

            def fn(P):
                return pipe.predict_proba(P)[:, c]

        else:

            def fn(P):
                return pipe.predict(P)

        for j in range(3):
            # dense grid + bounded scalar refinement of each 1-D segment
            delta = dense_delta(fn, rows[r], j, GAMMA[j], GAMMA[j])
            assert ex.lower[r, j] - TOL <= delta <= ex.upper[r, j] + TOL


def test_explain_pipeline_matches_prescaled_model_and_method(data):
    X, y, _, X_test = data
    pipe = make_pipeline(StandardScaler(), _clf()).fit(X, y)
    scaled = clone(_clf()).fit(pipe[0].transform(X), y)
    ex_p = quiet(pipe.explain, X_test[:2], GAMMA, features=[0, 1], epsilon=1e-4, random_state=0)
    ex_m = scaled.explain(pipe[0].transform(X_test[:2]), GAMMA / pipe[0].scale_, features=[0, 1], epsilon=1e-4,
                          random_state=0)
    assert np.allclose(ex_p.values, ex_m.values, atol=5e-4)
    assert ex_p.features.tolist() == [0, 1] and np.array_equal(ex_p.target, ex_m.target)
    with pytest.raises(ValueError, match="method='bounds'"):
        explain(pipe, X_test[:1], GAMMA, method="search")
    with pytest.raises(ValueError, match="not in classes_"):
        explain(pipe, X_test[:1], GAMMA, target=9)
    # A bare estimator goes straight to its own explain.
    assert np.array_equal(explain(scaled, pipe[0].transform(X_test[:1]), 0.1, random_state=0).values,
                          scaled.explain(pipe[0].transform(X_test[:1]), 0.1, random_state=0).values)
    with pytest.raises(UnsupportedStepError):
        explain(sk_make_pipeline(PCA(2), _clf()).fit(X, y), X_test[:1], GAMMA)


def test_explain_pipeline_exact_one_sided_boxes_at_ulp_scale():
    # A raw feature near 1e8 with a tiny spread: one raw ulp is 0.0055 standard
    # deviations. The one-sided boxes of gamma = 3 ulp hold 4 representable
    # values each, so Delta is exact; a float midpoint +- half-width box once
    # missed x or overshot the edge and the certified Delta was off by 0.075.
    from skgprobust.pipeline import explain

    u = np.spacing(1e8)
    rng = np.random.default_rng(0)
    k = rng.integers(-300, 300, 60)
    X = np.column_stack([1e8 + k * u, rng.normal(size=60)])
    y = (k + 40 * X[:, 1] > 0).astype(int)
    pipe = sk_make_pipeline(StandardScaler(), RobustGaussianProcessClassifier(kernel=1.0 * RBF([1.0, 1.0]), random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    for m in (-40, -13, 5, 20, 38):
        x = np.array([[1e8 + m * u, 0.0]])
        ex = explain(pipe, x, np.array([3 * u, 0.1]), features=[0], epsilon=1e-6, max_iter=300, random_state=0)
        P = np.column_stack([x[0, 0] + np.arange(-3, 4) * u, np.zeros(7)])
        p = pipe.predict_proba(P)[:, list(pipe.classes_).index(ex.target[0])]
        plus, minus = p[3:], p[:4]
        delta = (plus.max() - minus.max()) + (plus.min() - minus.min())
        assert ex.lower[0, 0] - BOUND_TOL <= delta <= ex.upper[0, 0] + BOUND_TOL, (m, delta, ex.lower[0, 0], ex.upper[0, 0])


@pytest.mark.parametrize("scaler", [MinMaxScaler, StandardScaler, MaxAbsScaler])
def test_ranges_hold_for_float32_queries(scaler):
    """sklearn's scalers transform float32 input in float32, so the model sees
    fl32(T(x)), up to half a float32 ulp outside the float64 image of the box.
    The certified range covers float32 queries too (hunt 2, violation V1:
    min_lower exceeded pipe.predict by 2e-7 before the float32 hull)."""
    rng = np.random.default_rng(7)
    d = int(rng.choice([1, 2]))  # the hunt's draw (d = 2, scale 30, offset 0)
    X = (rng.normal(size=(20, d)) * float(rng.choice([1.0, 30.0])) + float(rng.choice([0.0, 1e3, 1e4])))
    X = X.astype(np.float32).astype(np.float64)
    y = np.sin(X.sum(1) / X.std()) * 10 + X.sum(1) / X.std()
    gpr = RobustGaussianProcessRegressor(ConstantKernel(100.0) * RBF(0.3), alpha=1e-8, optimizer=None)
    pipe = make_pipeline(scaler(), gpr).fit(X, y)
    x0, g = X[2:3], 0.01 * X.std()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        res = pipe.prediction_range(x0, g, epsilon=1e-12, max_iter=400, random_state=0)
    lo, hi = x0[0] - g, x0[0] + g
    # float32 points in the box: uniform, and the corners rounded inwards to float32
    lo32, hi32 = lo.astype(np.float32), hi.astype(np.float32)
    lo32 = np.where(lo32 < lo, np.nextafter(lo32, np.float32(np.inf)), lo32)
    hi32 = np.where(hi32 > hi, np.nextafter(hi32, np.float32(-np.inf)), hi32)
    corners = np.array(np.meshgrid(*zip(lo32, hi32))).reshape(d, -1).T.astype(np.float32)
    P = np.vstack([(lo + (hi - lo) * np.random.default_rng(0).random((20000, d))).astype(np.float32), corners])
    P = P[np.all((P >= lo) & (P <= hi), axis=1)]
    v = np.asarray(pipe.predict(P), dtype=np.float64)
    assert res.min_lower[0, 0] <= v.min() and v.max() <= res.max_upper[0, 0]
    assert np.all(res.min_lower <= res.min_upper) and np.all(res.max_lower <= res.max_upper)


def test_float16_queries_are_evaluated_in_float64():
    """float16 raw queries (rounded to ~1e-3 by sklearn's scalers, which keep
    float16) are given to the steps as float64 by skgprobust's Pipeline, so
    the certified range holds for them (hunt 2, V2: 0.045 outside before),
    for arrays and DataFrame columns alike."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20, 2)).astype(np.float16).astype(np.float64) * 4
    y = np.sin(X.sum(1)) * 10 + X.sum(1)
    gpr = RobustGaussianProcessRegressor(ConstantKernel(100.0) * RBF(0.3), alpha=1e-8, optimizer=None)
    pipe = make_pipeline(MinMaxScaler(), gpr).fit(X, y)
    x0, g = X[2:3], 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        res = pipe.prediction_range(x0, g, epsilon=1e-9, max_iter=300, random_state=0)
    lo, hi = x0[0] - g, x0[0] + g
    P = (lo + (hi - lo) * rng.random((20000, 2))).astype(np.float16)
    P = P[np.all((P >= lo) & (P <= hi), axis=1)]
    v = np.asarray(pipe.predict(P), dtype=np.float64)
    np.testing.assert_array_equal(v, pipe.predict(P.astype(np.float64)))
    assert res.min_lower[0, 0] <= v.min() and v.max() <= res.max_upper[0, 0]
    frame = pd.DataFrame(P[:50])
    np.testing.assert_array_equal(pipe.predict(frame), pipe.predict(P[:50].astype(np.float64)))


class _Echo(BaseEstimator):
    """A final step that returns what the preprocessing gave it (as
    float64), through every method a Pipeline forwards raw input with."""

    def fit(self, X, y=None):
        self.seen_ = np.array(X, dtype=np.float64)
        return self

    def _echo(self, X):
        return np.array(X, dtype=np.float64)

    def predict(self, X):
        return self._echo(X)

    def predict_proba(self, X):
        return self._echo(X)

    def predict_log_proba(self, X):
        return self._echo(X)

    def decision_function(self, X):
        return self._echo(X)

    def score_samples(self, X):
        return self._echo(X)[:, 0]

    def transform(self, X):
        return self._echo(X)

    def fit_predict(self, X, y=None):
        return self.fit(X).seen_

    def score(self, X, y=None, sample_weight=None):
        return self._echo(X)  # what it was given (a real score would reduce it)


def test_float16_input_reaches_the_steps_as_float64_in_every_method():
    """Every Pipeline method that runs the steps on raw input (the review
    found only predict / predict_proba cast) gives float16 input to them as
    float64: each answer equals the one for the float64 values of the same
    numbers, and differs from scikit-learn's Pipeline, whose MinMaxScaler
    computes in float16 (so each check fails without the cast)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 2)) * [3.0, 50.0] + [0.0, 700.0]
    X16 = (rng.normal(size=(25, 2)) * [3.0, 50.0] + [0.0, 700.0]).astype(np.float16)
    X64 = X16.astype(np.float64)
    ours = make_pipeline(MinMaxScaler(), _Echo()).fit(X)
    plain = SkPipeline(ours.steps)  # the same fitted steps
    methods = ("predict", "predict_proba", "predict_log_proba", "decision_function", "score_samples", "transform",
               "score")
    for name in methods:
        exact = getattr(ours, name)(X64)
        for query in (X16, pd.DataFrame(X16), X16.tolist()):
            np.testing.assert_array_equal(getattr(ours, name)(query), exact, err_msg=name)
        assert not np.array_equal(getattr(plain, name)(X16), exact), name  # float16 arithmetic differs
    for name in ("fit_predict", "fit_transform"):
        exact = getattr(clone(ours), name)(X64)
        np.testing.assert_array_equal(getattr(clone(ours), name)(X16), exact, err_msg=name)
        assert not np.array_equal(getattr(clone(plain), name)(X16), exact), name
    fitted = clone(ours).fit(X16)
    np.testing.assert_array_equal(fitted[-1].seen_, clone(ours).fit(X64)[-1].seen_)
    assert not np.array_equal(clone(plain).fit(X16)[-1].seen_, fitted[-1].seen_)
    # With a GP at the end: the scores and probabilities are the certified float64 ones.
    y = (np.sin(X[:, 0]) + (X[:, 1] - 700.0) / 50.0 > 0).astype(int)
    t = np.sin(X[:, 0]) + (X[:, 1] - 700.0) / 50.0
    clf = make_pipeline(MinMaxScaler(), _clf()).fit(X, y)
    reg = make_pipeline(MinMaxScaler(), _reg()).fit(X, t)
    np.testing.assert_array_equal(clf.predict_proba(X16), clf.predict_proba(X64))
    t16 = np.sin(X64[:, 0]) + (X64[:, 1] - 700.0) / 50.0
    assert reg.score(X16, t16) == reg.score(X64, t16)
    assert reg.score(X16, t16) != SkPipeline(reg.steps).score(X16, t16)


def test_float32_overflow_of_the_preprocessing_warns():
    """A box corner whose float32 image overflows cannot be covered by the
    float32 hull: a warning at the caller's line says float32 queries of
    those boxes are outside the certificates (float64 ones stay covered)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 2))
    X[:, 0] = X[:, 0] * 1e37 + 1e38
    y = rng.normal(size=15)
    pipe = make_pipeline(StandardScaler(), RobustGaussianProcessRegressor(RBF(1.0), optimizer=None)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        with warnings.catch_warnings(record=True) as quiet_record:
            warnings.simplefilter("always", RuntimeWarning)
            pipe.prediction_range(X[:1], [3.3e38, 0.1], max_iter=5)  # float32 corners stay finite
        assert not [w for w in quiet_record if "overflows in float32" in str(w.message)]
        with pytest.warns(RuntimeWarning, match="overflows in float32") as record:
            res = pipe.prediction_range(X[:1], [4.3e38, 0.1], max_iter=5)
    assert any(w.filename == __file__ for w in record if "overflows in float32" in str(w.message))
    v = pipe.predict(np.array([X[0] - [4.3e38, 0.0], X[0]]))
    assert res.min_lower[0, 0] <= v.min() and v.max() <= res.max_upper[0, 0]
