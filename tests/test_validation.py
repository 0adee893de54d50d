"""Argument checks: every bad input gets a clear exception, good unusual inputs work."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, PairwiseKernel

from skgprobust import (
    BudgetExhaustedWarning,
    RobustGaussianProcessClassifier,
    RobustGaussianProcessRegressor,
    UnsupportedKernelError,
)

from ._helpers import BOUND_TOL, TOL, attack, expected_box, gpc_latent, gpc_predict, gpr_predict, in_box

pd = pytest.importorskip("pandas")


def _methods(reg, clf):
    """(name, bound method, extra kwargs) for the four entry points."""
    return [
        ("reg.prediction_range", reg.prediction_range, {}),
        ("reg.certify", reg.certify, {"delta": 0.5}),
        ("clf.prediction_range", clf.prediction_range, {}),
        ("clf.certify", clf.certify, {}),
    ]


@pytest.fixture
def methods(fitted_reg, fitted_clf):
    return _methods(fitted_reg, fitted_clf)


ENTRY_POINTS = ["reg.prediction_range", "reg.certify", "clf.prediction_range", "clf.certify"]


def _get(methods, name):
    return next((m, kw) for n, m, kw in methods if n == name)


# --------------------------------------------------------------------------
# Not fitted
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_unfitted_raises_not_fitted(name):
    reg, clf = RobustGaussianProcessRegressor(), RobustGaussianProcessClassifier()
    method, kw = _get(_methods(reg, clf), name)
    with pytest.raises(NotFittedError):
        method(np.zeros((1, 2)), 0.1, **kw)


# --------------------------------------------------------------------------
# X
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "X",
    [
        np.zeros((2, 3)),  # wrong number of features
        np.zeros((2, 1)),
        np.array([[0.1, np.nan]]),
        np.array([[np.inf, 0.0]]),
        np.array([[0.0, -np.inf]]),
    ],
    ids=["too_many_features", "too_few_features", "nan", "inf", "-inf"],
)
def test_bad_X_raises_value_error(methods, name, X):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError):
        method(X, 0.1, **kw)


# --------------------------------------------------------------------------
# gamma
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "gamma",
    [-0.1, np.nan, np.inf, [0.1, -0.1], [0.1, np.nan], [0.1], [0.1, 0.2, 0.3], [[0.1, 0.1]], None, "0.1",
     [0.1, [0.2, 0.3]]],
    ids=["negative", "nan", "inf", "one_negative", "one_nan", "too_short", "too_long", "2d", "none", "string",
         "ragged"],
)
def test_bad_gamma_raises_value_error(methods, name, gamma):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError, match="gamma"):
        method(np.zeros((1, 2)), gamma, **kw)


# --------------------------------------------------------------------------
# features
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "features",
    [[2], [-1], [0, 5], [True, False, True], [True], [0.5], ["a"]],
    ids=["index_too_large", "negative_index", "one_out_of_range", "mask_too_long", "mask_too_short", "float", "name_without_names"],
)
def test_bad_features_raise_value_error(methods, name, features):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError):
        method(np.zeros((1, 2)), 0.1, features=features, **kw)


# --------------------------------------------------------------------------
# Budgets, epsilon, delta, norm, statistic
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "budget",
    [
        {"max_iter": -1},
        {"max_iter": 1.5},
        {"max_iter": "10"},
        {"time_limit": 0},
        {"time_limit": -1.0},
        {"time_limit": np.nan},
        {"time_limit": np.inf},
        {"time_limit": "1"},
    ],
    ids=repr,
)
def test_bad_budget_raises_value_error(methods, name, budget):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError):
        method(np.zeros((1, 2)), 0.1, **budget, **kw)


@pytest.mark.parametrize("name", ["reg.prediction_range", "clf.prediction_range"])
@pytest.mark.parametrize("epsilon", [0, -1e-3, np.nan, np.inf, "0.1", None], ids=repr)
def test_bad_epsilon_raises_value_error(methods, name, epsilon):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError):
        method(np.zeros((1, 2)), 0.1, epsilon=epsilon, **kw)


def test_regressor_certify_requires_delta(fitted_reg):
    with pytest.raises(ValueError):
        fitted_reg.certify(np.zeros((1, 2)), 0.1)


@pytest.mark.parametrize("delta", [-0.1, np.nan, np.inf, "1"], ids=repr)
def test_regressor_certify_bad_delta(fitted_reg, delta):
    with pytest.raises(ValueError):
        fitted_reg.certify(np.zeros((1, 2)), 0.1, delta=delta)


@pytest.mark.parametrize("norm", [0, 3, -1, "fro", "inf"], ids=repr)
def test_regressor_certify_bad_norm(fitted_reg, norm):
    with pytest.raises(ValueError):
        fitted_reg.certify(np.zeros((1, 2)), 0.1, delta=0.5, norm=norm)


def test_classifier_certify_rejects_regression_arguments(fitted_clf):
    with pytest.raises(ValueError):
        fitted_clf.certify(np.zeros((1, 2)), 0.1, delta=0.5)
    with pytest.raises(ValueError):
        fitted_clf.certify(np.zeros((1, 2)), 0.1, norm=2)


def test_invalid_statistics(fitted_reg, fitted_clf):
    X = np.zeros((1, 2))
    with pytest.raises(ValueError, match="statistic"):
        fitted_reg.prediction_range(X, 0.1, statistic="proba")
    with pytest.raises(ValueError, match="statistic"):
        fitted_clf.prediction_range(X, 0.1, statistic="std")
    with pytest.raises(ValueError):
        fitted_reg.prediction_range(X, 0.1, statistic="median")
    with pytest.raises(ValueError):
        fitted_clf.prediction_range(X, 0.1, statistic="mean_of_something")


def test_one_vs_one_has_no_probabilities():
    X, y = make_classification(n_samples=30, n_features=2, n_redundant=0, n_informative=2, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    clf = RobustGaussianProcessClassifier(kernel=RBF(1.0), optimizer=None, multi_class="one_vs_one").fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "prediction_range")
    c = clf.certify(X[:3], 0.01, random_state=0)
    assert c.status.shape == (3,)
    # Two classes: sklearn gives probabilities for one-vs-one too.
    clf2 = RobustGaussianProcessClassifier(kernel=RBF(1.0), optimizer=None, multi_class="one_vs_one").fit(X, y > 0)
    assert hasattr(clf2, "predict_proba") and hasattr(clf2, "prediction_range")


def test_bad_variance_bound_name():
    X, y = make_classification(n_samples=30, n_features=2, n_redundant=0, n_informative=2, random_state=0)
    clf = RobustGaussianProcessClassifier(kernel=RBF(1.0), optimizer=None).fit(X, y)
    with pytest.raises(ValueError, match="variance_bound"):
        clf.prediction_range(X[:2], 0.1, variance_bound="fast")


# --------------------------------------------------------------------------
# Domain
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "domain",
    [
        (0.5, 1.0),  # x = 0 below low
        (-1.0, -0.5),  # x = 0 above high
        ([-1.0, 0.1], [1.0, 1.0]),  # second feature below low
        (1.0, -1.0),  # low > high
        (0.0,),  # not a pair
        ([-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]),  # wrong length
        (np.nan, 1.0),
        (np.inf, 1.0),  # +inf is no lower bound
        (-1.0, [1.0, -np.inf]),  # -inf is no upper bound
    ],
    ids=["below", "above", "one_feature_outside", "low_gt_high", "not_a_pair", "wrong_length", "nan", "low_inf",
         "high_minus_inf"],
)
def test_bad_domain_raises_value_error(methods, name, domain):
    method, kw = _get(methods, name)
    with pytest.raises(ValueError):
        method(np.zeros((1, 2)), 0.1, domain=domain, **kw)


def test_domain_infinite_side_per_feature(fitted_reg):
    # -inf / +inf mark one feature unbounded on that side (None: all features).
    X = np.array([[0.0, 0.0], [0.95, -0.5]])
    a = fitted_reg.prediction_range(X, 0.2, domain=([-0.05, -np.inf], [np.inf, 0.02]), epsilon=1e-3, random_state=0)
    b = fitted_reg.prediction_range(X, 0.2, domain=([-0.05, -10.0], [10.0, 0.02]), epsilon=1e-3, random_state=0)
    np.testing.assert_array_equal(a.min_lower, b.min_lower)
    np.testing.assert_array_equal(a.max_upper, b.max_upper)


def test_domain_clips_the_box(fitted_reg):
    X = np.array([[0.0, 0.0], [0.95, -0.5]])
    domain = ([-0.05, -1.0], [1.0, 0.02])
    r = fitted_reg.prediction_range(X, 0.2, domain=domain, epsilon=1e-3, random_state=0)
    lo, hi = expected_box(X, 0.2, domain=domain)
    assert np.all(lo[:, 0] >= -0.05) and np.all(hi[:, 1] <= 0.02)
    for i in range(2):
        assert in_box(r.argmin[i, 0], lo[i], hi[i]) and in_box(r.argmax[i, 0], lo[i], hi[i])
        atk = attack(lambda P: gpr_predict(fitted_reg, P)[:, 0], lo[i], hi[i], np.random.default_rng(i))
        assert atk.min >= r.min_lower[i, 0] - BOUND_TOL and atk.max <= r.max_upper[i, 0] + BOUND_TOL


# --------------------------------------------------------------------------
# Unsupported kernels
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel",
    [Matern(1.0, nu=1.0), Matern(1.0, nu=3.0), PairwiseKernel(metric="rbf"), ConstantKernel(1.0) * Matern(nu=1.0)],
    ids=repr,
)
def test_unsupported_kernel_raises(kernel, reg_data, clf_data):
    X, y = reg_data
    reg = RobustGaussianProcessRegressor(kernel=kernel, alpha=1e-2, optimizer=None).fit(X, y)
    np.testing.assert_array_equal(reg.predict(X[:2]), reg.predict(X[:2]))  # sklearn itself is fine with it
    with pytest.raises(UnsupportedKernelError):
        reg.prediction_range(X[:2], 0.1)
    with pytest.raises(UnsupportedKernelError):
        reg.certify(X[:2], 0.1, delta=0.5)
    Xc, yc = clf_data
    clf = RobustGaussianProcessClassifier(kernel=kernel, optimizer=None).fit(Xc, yc)
    with pytest.raises(UnsupportedKernelError):
        clf.certify(Xc[:2], 0.1)
    with pytest.raises(UnsupportedKernelError):
        clf.prediction_range(Xc[:2], 0.1)


def test_unsupported_kernel_error_is_a_type_error():
    assert issubclass(UnsupportedKernelError, TypeError)
    assert issubclass(BudgetExhaustedWarning, UserWarning)


# --------------------------------------------------------------------------
# Inputs that must work
# --------------------------------------------------------------------------


def test_dataframe_input_and_features_by_name(reg_data, clf_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=["a", "b"])
    reg = RobustGaussianProcessRegressor(kernel=RBF([1.0, 0.7]), alpha=1e-2, optimizer=None).fit(df, y)
    np.testing.assert_array_equal(reg.feature_names_in_, ["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "feature names" warning either
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r_name = reg.prediction_range(df.iloc[:3], 0.2, features=["b"], epsilon=1e-3, random_state=0)
        r_idx = reg.prediction_range(df.iloc[:3], 0.2, features=[1], epsilon=1e-3, random_state=0)
        c = reg.certify(df.iloc[:3], 0.2, delta=0.3, features=np.array(["a"]), random_state=0)
    for name in ("min_lower", "min_upper", "max_lower", "max_upper", "argmin", "argmax"):
        np.testing.assert_array_equal(getattr(r_name, name), getattr(r_idx, name))
    # Feature "a" stayed fixed in the range, "b" stayed fixed in certify.
    np.testing.assert_array_equal(r_name.argmin[:, 0, 0], X[:3, 0])
    np.testing.assert_array_equal(r_name.argmax[:, 0, 0], X[:3, 0])
    nr = c.status == "not_robust"
    np.testing.assert_array_equal(c.counterexample[nr, 1], X[:3][nr, 1])
    with pytest.raises(ValueError):
        reg.prediction_range(df.iloc[:1], 0.2, features=["c"])
    with pytest.raises(ValueError):
        reg.prediction_range(df.rename(columns={"a": "z"}).iloc[:1], 0.2)

    Xc, yc = clf_data
    dfc = pd.DataFrame(Xc, columns=["u", "v"])
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(0.8), optimizer=None).fit(dfc, yc)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        c1 = clf.certify(dfc.iloc[:5], 0.3, features=["v"], random_state=0)
        c2 = clf.certify(dfc.iloc[:5], 0.3, features=[1], random_state=0)
    np.testing.assert_array_equal(c1.status, c2.status)
    np.testing.assert_array_equal(c1.bound, c2.bound)
    for i in np.flatnonzero(c1.status == "not_robust"):
        assert c1.counterexample[i, 0] == Xc[i, 0]
        assert gpc_predict(clf, c1.counterexample[i])[0] != gpc_predict(clf, Xc[i])[0]


def test_float32_input(reg_data, clf_data):
    X, y = reg_data
    X32 = X.astype(np.float32)
    reg = RobustGaussianProcessRegressor(kernel=Matern([1.0, 0.8], nu=2.5), alpha=1e-2, optimizer=None).fit(X32, y)
    r = reg.prediction_range(X32[:3], np.float32(0.2), epsilon=1e-3, random_state=0)
    lo, hi = expected_box(X32[:3], np.float32(0.2))
    for i in range(3):
        assert in_box(r.argmin[i, 0], lo[i], hi[i])
        assert abs(r.min_upper[i, 0] - gpr_predict(reg, r.argmin[i, 0])[0, 0]) <= TOL
        atk = attack(lambda P: gpr_predict(reg, P)[:, 0], lo[i], hi[i], np.random.default_rng(i))
        assert atk.min >= r.min_lower[i, 0] - BOUND_TOL and atk.max <= r.max_upper[i, 0] + BOUND_TOL
    c = reg.certify(X32[:3], 0.2, delta=0.5, random_state=0)
    assert c.status.shape == (3,)

    Xc, yc = clf_data
    clf = RobustGaussianProcessClassifier(kernel=RBF(0.8), optimizer=None).fit(Xc.astype(np.float32), yc)
    c = clf.certify(Xc[:5].astype(np.float32), 0.1, random_state=0)
    assert set(c.status) <= {"robust", "not_robust", "unknown"}
    for i in np.flatnonzero(c.status == "not_robust"):
        assert gpc_predict(clf, c.counterexample[i])[0] != gpc_predict(clf, Xc[i].astype(np.float32))[0]


def test_list_input_and_scalar_or_array_gamma_agree(fitted_reg):
    X = [[0.1, 0.2], [-0.3, 0.4]]
    a = fitted_reg.prediction_range(X, 0.2, epsilon=1e-3, random_state=0)
    b = fitted_reg.prediction_range(np.array(X), np.array([0.2, 0.2]), epsilon=1e-3, random_state=0)
    c = fitted_reg.prediction_range(np.array(X), [0.2, 0.2], features=[True, True], epsilon=1e-3, random_state=0)
    for r in (b, c):
        np.testing.assert_array_equal(a.min_lower, r.min_lower)
        np.testing.assert_array_equal(a.max_upper, r.max_upper)


@pytest.mark.filterwarnings("ignore:features selects no feature")
def test_zero_gamma_and_no_moving_features_give_the_prediction(fitted_reg, fitted_clf):
    X = np.array([[0.1, 0.2], [-1.3, 0.4]])
    y = gpr_predict(fitted_reg, X)
    for kw in ({"gamma": 0.0}, {"gamma": 0.5, "features": []}, {"gamma": [0.0, 0.0]}):
        r = fitted_reg.prediction_range(X, epsilon=1e-6, random_state=0, **kw)
        assert np.all(r.converged)
        np.testing.assert_array_equal(r.argmin[:, 0], X)
        np.testing.assert_array_equal(r.argmax[:, 0], X)
        assert np.all(np.abs(r.min_upper - y) <= TOL) and np.all(np.abs(r.max_lower - y) <= TOL)
        assert np.all(r.min_lower <= y + BOUND_TOL) and np.all(r.max_upper >= y - BOUND_TOL)
        assert np.all(r.max_upper - r.min_lower <= 1e-6)
        c = fitted_reg.certify(X, delta=1e-6, random_state=0, **kw)
        np.testing.assert_array_equal(c.status, ["robust", "robust"])
        assert np.all(c.bound <= TOL)
        cc = fitted_clf.certify(X, random_state=0, **kw)
        np.testing.assert_array_equal(cc.status, ["robust", "robust"])


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize("features", [[0, 0], [1, 0, 1]], ids=["index_twice", "index_twice_unsorted"])
def test_a_feature_twice_raises(methods, name, features):
    """UX audit (session 26): a feature listed twice was silently
    de-duplicated (a typo went unnoticed); refused by name."""
    method, kw = _get(methods, name)
    with pytest.raises(ValueError, match="more than once"):
        method(np.zeros((1, 2)), 5.0, features=features, **kw)


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize("features", [[], np.zeros(2, dtype=bool)], ids=["empty", "all_false_mask"])
def test_no_feature_warns(methods, name, features):
    """UX audit (session 26): a selection of no feature certifies every row
    whatever gamma (each box is its row: sound, but likely a filter that
    matched nothing): it warns."""
    method, kw = _get(methods, name)
    with pytest.warns(UserWarning, match="selects no feature"):
        method(np.zeros((1, 2)), 5.0, features=features, **kw)


def test_features_by_name_twice_or_mixed_with_indices_raise(reg_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=["a", "b"])
    reg = RobustGaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0), optimizer=None).fit(df, y)
    with pytest.raises(ValueError, match=r"\['b'\] listed more than once"):
        reg.prediction_range(df[:1], 0.1, features=["b", "b"], max_iter=5)
    with pytest.raises(ValueError, match="mixes indices and names"):
        reg.prediction_range(df[:1], 0.1, features=[0, "b"], max_iter=5)
    with pytest.raises(ValueError, match=r"Unknown feature names \['c'\]"):
        reg.prediction_range(df[:1], 0.1, features=["c"], max_iter=5)


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    "kw",
    [{"gamma": True}, {"gamma": [True, False]}, {"gamma": [True, 0.5]}, {"domain": ([True, 0.0], None)},
     {"time_limit": True}, {"epsilon": True}, {"delta": True}],
    ids=repr,
)
def test_booleans_are_not_numbers(methods, name, kw):
    """UX audit (session 26): gamma=True was taken as 1.0, time_limit=True
    as one second, epsilon / delta = True as 1.0; refused as max_iter=True is."""
    method, base = _get(methods, name)
    kw = {**base, **kw}
    if "epsilon" in kw and not name.endswith("prediction_range"):
        pytest.skip("certify takes no epsilon")
    if "delta" in kw and name != "reg.certify":
        pytest.skip("only a regressor's certify takes delta")
    gamma = kw.pop("gamma", 0.1)
    with pytest.raises(ValueError):
        method(np.zeros((1, 2)), gamma, **kw)


def test_empty_feature_name_list_and_bool_mask(fitted_reg):
    X = np.array([[0.1, 0.2]])
    r = fitted_reg.prediction_range(X, 0.5, features=np.array([False, True]), epsilon=1e-3, random_state=0)
    assert r.argmin[0, 0, 0] == 0.1 and r.argmax[0, 0, 0] == 0.1


@pytest.mark.parametrize(
    "encode",
    [
        lambda b: np.where(b, "yes", "no"),
        lambda b: np.where(b, 1, -1),
        lambda b: b,
        lambda b: np.where(b, -7.5, 2.0),  # class 1 (classes_[1]) is the negative-latent side here
    ],
    ids=["str", "pm1", "bool", "float_reversed"],
)
def test_classifier_label_types(encode):
    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, (30, 2))
    y = encode(np.sin(2 * X[:, 0]) + X[:, 1] > 0)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(3.0) * RBF(0.7), optimizer=None).fit(X, y)
    X_test = X[:8]
    gamma = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        c = clf.certify(X_test, gamma, random_state=0)
    labels = clf.predict(X_test)
    assert {"robust", "not_robust"} <= set(c.status.tolist())
    lo, hi = expected_box(X_test, gamma)
    for i in range(len(X_test)):
        atk = attack(lambda P: gpc_latent(clf, P), lo[i], hi[i], np.random.default_rng(i), n_samples=2000)
        sign = 1.0 if labels[i] == clf.classes_[1] else -1.0
        margin_min = min(sign * atk.min, sign * atk.max)
        assert c.bound[i] <= margin_min + BOUND_TOL
        if c.status[i] == "robust":
            assert np.all(clf.predict(atk.points) == labels[i])
        elif c.status[i] == "not_robust":
            assert in_box(c.counterexample[i], lo[i], hi[i])
            assert clf.predict(c.counterexample[i][None])[0] != labels[i]


def test_verbose_progress_bar(capsys):
    import numpy as np
    from sklearn.datasets import make_moons

    from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

    X, y = make_moons(30, noise=0.2, random_state=0)
    clf = RobustGaussianProcessClassifier(random_state=0).fit(X, y)
    quiet = clf.certify(X[:3], gamma=0.01, random_state=0)
    assert capsys.readouterr().err == ""
    loud = clf.certify(X[:3], gamma=0.01, random_state=0, verbose=1)
    err = capsys.readouterr().err
    assert "[skgprobust] certify" in err and "3/3 rows" in err
    assert "nan" not in err  # no time-left estimate before the first row ends
    assert np.array_equal(quiet.status, loud.status)
    clf.prediction_range(X[:2], gamma=0.01, verbose=True)
    assert "prediction_range" in capsys.readouterr().err
    clf.explain(X[:2], gamma=0.01, verbose=1)
    assert "explain" in capsys.readouterr().err
    reg = RobustGaussianProcessRegressor().fit(X, X[:, 0])
    # max_iter: the optimised kernel is degenerate (316**2 * RBF(816)); the
    # std range never reaches epsilon and used the whole default budget (~2 s).
    reg.prediction_range(X[:2], gamma=0.01, statistic="std", verbose=1, max_iter=5)
    assert "2/2 rows" in capsys.readouterr().err
    serial = reg.certify(X[:2], gamma=0.01, delta=0.1)
    capsys.readouterr()
    par = reg.certify(X[:2], gamma=0.01, delta=0.1, verbose=1, n_jobs=2)  # joblib's messages
    assert "Parallel" in capsys.readouterr().err
    assert np.array_equal(serial.status, par.status)
    for bad in (-1, 0.5, "yes"):
        with pytest.raises(ValueError, match="verbose"):
            clf.certify(X[:1], gamma=0.01, verbose=bad)


# --------------------------------------------------------------------------
# Defects found by the ecosystem hunt (session 8)
# --------------------------------------------------------------------------


def test_gamma_and_domain_series_are_aligned_by_feature_name(reg_data):
    from skgprobust._engine._perturbation import make_boxes

    X = reg_data[0][:3]
    names = np.array(["a", "b"], dtype=object)
    lo, hi = make_boxes(X, pd.Series({"b": 0.0, "a": 0.5}), feature_names=names)
    lo_ref, hi_ref = make_boxes(X, [0.5, 0.0], feature_names=names)
    np.testing.assert_array_equal(lo, lo_ref)
    np.testing.assert_array_equal(hi, hi_ref)
    dom = (pd.Series({"b": -2.5, "a": -np.inf}), pd.Series({"b": np.inf, "a": 2.5}))
    got = make_boxes(X, 3.0, domain=dom, feature_names=names)
    ref = make_boxes(X, 3.0, domain=([-np.inf, -2.5], [2.5, np.inf]), feature_names=names)
    np.testing.assert_array_equal(got, ref)
    # a default 0..d-1 index stays positional
    np.testing.assert_array_equal(make_boxes(X, pd.Series([0.0, 0.5]))[0], make_boxes(X, [0.0, 0.5])[0])
    for bad, names_ in [
        (pd.Series({"a": 0.1, "c": 0.2}), names),  # unknown label
        (pd.Series({"a": 0.1}), names),  # missing name
        (pd.Series([0.1, 0.2], index=["a", "a"]), names),  # duplicated
        (pd.Series({"a": 0.1, "b": 0.2}), None),  # names without fitted names
    ]:
        with pytest.raises(ValueError, match="pandas Series"):
            make_boxes(X, bad, feature_names=names_)
    with pytest.raises(ValueError, match="domain low.*pandas Series"):
        make_boxes(X, 0.1, domain=(pd.Series({"x": 0.0, "b": 0.0}), None), feature_names=names)


def test_gamma_series_by_name_through_an_estimator(reg_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=["a", "b"])
    reg = RobustGaussianProcessRegressor(kernel=RBF([1.0, 0.7]), alpha=1e-2, optimizer=None).fit(df, y)
    kw = dict(epsilon=1e-2, random_state=0)
    r = reg.prediction_range(df.iloc[:1], pd.Series({"b": 0.0, "a": 0.5}), **kw)
    ref = reg.prediction_range(df.iloc[:1], [0.5, 0.0], **kw)
    np.testing.assert_array_equal(r.min_lower, ref.min_lower)
    np.testing.assert_array_equal(r.max_upper, ref.max_upper)


def test_features_boolean_series_is_aligned_by_feature_name(reg_data):
    """A boolean ``features`` Series was read by position (soundness hunt F1):
    Series({c: True, a: False, b: False}) moved feature a, and certify proved
    "robust" a box where moving c changes the mean by 1.85."""
    from skgprobust._engine._perturbation import resolve_features
    from skgprobust.inspection._explain import ordered_features

    names = np.array(["a", "b", "c"], dtype=object)
    mask = pd.Series([True, False, False], index=["c", "a", "b"])
    np.testing.assert_array_equal(resolve_features(mask, 3, names), [False, False, True])
    np.testing.assert_array_equal(ordered_features(mask, 3, names), [2])
    # default index: positional, as before
    np.testing.assert_array_equal(resolve_features(pd.Series([True, False, False]), 3, names), [True, False, False])
    with pytest.raises(ValueError, match="features given as a pandas Series"):
        resolve_features(pd.Series([True, False], index=["a", "x"]), 2, names[:2])
    # end to end: only c moves (y depends on c alone)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(-2, 2, (30, 3)), columns=names)
    y = np.sin(3 * df["c"].to_numpy())
    reg = RobustGaussianProcessRegressor(kernel=RBF([1.0, 1.0, 1.0]), alpha=1e-6, optimizer=None).fit(df, y)
    kw = dict(max_iter=50, random_state=0)
    r = reg.prediction_range(df.iloc[:1], 1.0, features=mask, **kw)
    ref = reg.prediction_range(df.iloc[:1], 1.0, features=["c"], **kw)
    np.testing.assert_array_equal(r.min_lower, ref.min_lower)
    np.testing.assert_array_equal(r.max_upper, ref.max_upper)
    t = np.linspace(-1.0, 1.0, 401)
    P = np.repeat(df.iloc[:1].to_numpy(), len(t), axis=0)
    P[:, 2] += t
    v = reg.predict(pd.DataFrame(P, columns=names))
    assert r.min_lower[0, 0] <= v.min() and v.max() <= r.max_upper[0, 0]


def _compound_cases():
    import skgprobust as sg

    return [
        ("rgpr", lambda k: sg.RobustGaussianProcessRegressor(k, optimizer=None), "r"),
        ("sgpr", lambda k: sg.SparseGaussianProcessRegressor(k, optimizer=None, inducing_points=5), "r"),
        ("sgpc", lambda k: sg.SparseGaussianProcessClassifier(k, optimizer=None, inducing_points=5), "c"),
        ("softmax", lambda k: sg.SoftmaxGaussianProcessClassifier(k, optimizer=None), "c"),
        ("multioutput", lambda k: sg.MultiOutputGaussianProcessRegressor(k, optimizer=None), "r"),
    ]


@pytest.mark.parametrize("name, make, kind", _compound_cases(), ids=[c[0] for c in _compound_cases()])
def test_compound_kernel_is_refused_at_fit(name, make, kind, reg_data, clf_data):
    """Was: "Input must be 1- or 2-d." (np.diag, sparse) or "'CompoundKernel'
    object has no attribute 'k1'" (softmax, RGPR) from deep inside (eco-hunt D4)."""
    from sklearn.gaussian_process.kernels import CompoundKernel

    X, y = reg_data if kind == "r" else clf_data
    with pytest.raises(ValueError, match="kernel cannot be a CompoundKernel"):
        make(CompoundKernel([RBF(1.0), RBF(2.0)])).fit(X[:20], y[:20])


@pytest.mark.parametrize("bad", ["x", 1.5, 0, True])
def test_n_jobs_is_checked(methods, fitted_clf, bad):
    """n_jobs="x" failed inside joblib ("'<' not supported"), 1.5 was accepted (eco-hunt D6)."""
    calls = [(m, kw) for _, m, kw in methods] + [(fitted_clf.explain, {})]
    for call, kw in calls:
        with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
            call(np.zeros((1, 2)), 0.1, n_jobs=bad, **kw)


def test_pipeline_functions_refuse_unboundable_models_with_unsupported_model_error(reg_data):
    """skgprobust.certify on sklearn's own GPR raised a plain TypeError, unlike
    the other "cannot bound this model" cases (eco-hunt D11)."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    from skgprobust.exceptions import UnsupportedModelError
    from skgprobust.pipeline import certify, prediction_range

    X, y = reg_data
    gpr = GaussianProcessRegressor(RBF(1.0), optimizer=None).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="has no certify/prediction_range"):
        certify(gpr, X[:1], 0.1, delta=0.1)
    with pytest.raises(UnsupportedModelError, match="has no certify/prediction_range"):
        prediction_range(gpr, X[:1], 0.1)


def test_classifiers_refuse_an_indefinite_kernel(clf_data):
    """ExpSineSquared on two features is not a covariance (Gram min eigenvalue
    ~ -1.7 here); the Laplace and softmax classifiers fitted it silently at
    chance-level training accuracy, and certify then certified that model
    (eco-hunt D15; EP: D1, tests/test_ep.py)."""
    from numpy.linalg import LinAlgError
    from sklearn.gaussian_process.kernels import ExpSineSquared

    from skgprobust import SoftmaxGaussianProcessClassifier

    X, y = clf_data
    X, y = X[:20], y[:20]
    bad = ExpSineSquared(1.0, 3.0)
    assert np.linalg.eigvalsh(bad(X)).min() < -0.1
    y3 = np.arange(20) % 3
    for est, yy in [
        (RobustGaussianProcessClassifier(bad, optimizer=None), y),
        (RobustGaussianProcessClassifier(bad, optimizer=None), y3),  # one-vs-rest: each binary model
        (SoftmaxGaussianProcessClassifier(bad, optimizer=None), y3),
        (SoftmaxGaussianProcessClassifier(bad, optimizer=None, shared_kernel=False), y3),
    ]:
        with pytest.raises(LinAlgError, match="not positive semi-definite"):
            est.fit(X, yy)
        with pytest.raises(NotFittedError):  # nothing left to certify
            est.certify(X[:1], 0.1)
    # valid kernels on a singular Gram matrix (repeated rows) still fit
    Xd, yd = np.vstack([X, X[:4]]), np.r_[y, y[:4]]
    RobustGaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), optimizer=None).fit(Xd, yd)
    SoftmaxGaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), optimizer=None).fit(Xd, np.r_[y3, y3[:4]])


def test_classifier_fit_names_a_kernel_whose_laplace_fit_fails(clf_data):
    """UX audit (session 26): with ``DotProduct() ** -1`` sklearn's own
    Laplace fit fails first, with a bare LinAlgError ("leading minor not
    positive definite"); the error now names the kernel, and nothing is left
    fitted."""
    from numpy.linalg import LinAlgError
    from sklearn.gaussian_process.kernels import DotProduct

    X, y = clf_data
    est = RobustGaussianProcessClassifier(DotProduct(1.0) ** -1, optimizer=None)
    with pytest.raises(LinAlgError, match=r"DotProduct\(sigma_0=1\) \*\* -1 is not positive semi-definite"):
        est.fit(X[:20], y[:20])
    with pytest.raises(NotFittedError):
        est.certify(X[:1], 0.1)


def test_unknown_target_label_is_shown_as_given(fitted_clf):
    with pytest.raises(ValueError, match=r"target labels \[7\] are not in classes_"):
        fitted_clf.explain(np.zeros((1, 2)), 0.1, target=7, max_iter=5)


@pytest.mark.parametrize("kind", ["classifier", "regressor", "ovr"])
def test_training_inputs_changed_in_place_are_refused(kind):
    """UX audit and referee (session 26): with ``copy_X_train=False`` the
    estimator's ``X_train_`` is the caller's array. Changed in place, the
    model predict computes is no longer a fitted GP (new inputs, factors and
    weights of the old ones): the cached bounds said 'robust' for the old
    model, and bounds rebuilt on the new inputs with the old factors were
    unsound (reversed inputs of a 3-class model: 'robust' rows whose predict
    changed in the box). Now every call after such a change raises, whether
    the change came before or after the first call; a refit clears it; an
    unchanged model still certifies, also after a pickle round trip."""
    import pickle

    rng = np.random.RandomState(0)
    X = np.sort(rng.uniform(-1, 1, (45, 1)), axis=0) if kind == "ovr" else rng.uniform(-1, 1, (30, 2))
    x = X[:1] + 0.01

    def make():
        Xtrain = X.copy()
        if kind == "regressor":
            est = RobustGaussianProcessRegressor(1.0 * RBF(0.5), alpha=1e-4, optimizer=None, copy_X_train=False)
            return est.fit(Xtrain, np.sin(3 * X[:, 0])), Xtrain
        y = np.digitize(X[:, 0], [-0.3, 0.3]) if kind == "ovr" else (X[:, 0] > 0).astype(int)
        est = RobustGaussianProcessClassifier(ConstantKernel(100.0, "fixed") * RBF(0.5, "fixed"), optimizer=None,
                                              copy_X_train=False)
        return est.fit(Xtrain, y), Xtrain

    for before_first_call in (False, True):
        est, Xtrain = make()
        if not before_first_call:
            est.prediction_range(x, 0.05, max_iter=2)
            clone = pickle.loads(pickle.dumps(est))
            clone.prediction_range(x, 0.05, max_iter=2)  # unchanged: no false alarm in a new object
        Xtrain[:] = Xtrain[::-1].copy()
        certify_kw = {"delta": 0.1} if kind == "regressor" else {}
        with pytest.raises(ValueError, match="changed in place after fit"):
            est.prediction_range(x, 0.05, max_iter=2)
        with pytest.raises(ValueError, match="changed in place after fit"):
            est.certify(x, 0.05, max_iter=2, **certify_kw)
        y_new = est.predict(Xtrain)  # predict itself still runs (sklearn's), on the changed inputs
        est.fit(Xtrain, y_new)
        est.certify(x, 0.05, max_iter=2, **certify_kw)  # a refit clears it
