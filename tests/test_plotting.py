"""Plots render under Agg and return the matplotlib objects; the robustness
curve's numbers are consistent (attack inside the certified bounds)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.inspection import (
    plot_decision_map,
    plot_explanation,
    plot_explanation_heatmap,
    plot_robustness_curve,
    robustness_curve,
)

matplotlib = pytest.importorskip("matplotlib")  # optional dependency: skip the module cleanly without it
matplotlib.use("Agg")
import matplotlib.axes  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(scope="module")
def clf():
    X, y = make_moons(50, noise=0.2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianProcessClassifier(random_state=0).fit(X, y), X


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("attack", ["pgd", "gpfgs", "gpjm", None])
def test_robustness_curve_attack_within_bounds(clf, attack):
    model, X = clf
    gammas = [0.0, 0.1, 0.3]
    c = robustness_curve(model, X[0], gammas, attack=attack, epsilon=1e-3)
    assert np.all(c["min_lower"] <= c["min_upper"] + 1e-12) and np.all(c["max_lower"] <= c["max_upper"] + 1e-12)
    # Wider boxes: the minimum cannot rise, the maximum cannot fall.
    assert np.all(np.diff(c["min_lower"]) <= 1e-3 + 1e-9) and np.all(np.diff(c["max_upper"]) >= -1e-3 - 1e-9)
    p0 = model.predict_proba(X[:1])[0, c["column"]]
    assert np.all(c["min_lower"] <= p0 + 1e-9) and np.all(p0 <= c["max_upper"] + 1e-9)
    if attack is None:
        assert np.all(np.isnan(c["attack"]))
    else:
        assert np.all((c["min_lower"] - 1e-9 <= c["attack"]) & (c["attack"] <= c["max_upper"] + 1e-9))


def test_plot_robustness_curve_returns_axes(clf):
    model, X = clf
    ax = plot_robustness_curve(model, X[1], [0.05, 0.2], epsilon=1e-2)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(ax.collections) >= 2 and ax.get_legend() is not None
    fig, ax2 = plt.subplots()
    assert plot_robustness_curve(model, X[1], [0.1], attack=None, ax=ax2) is ax2
    with pytest.raises(ValueError, match="attack must be"):
        plot_robustness_curve(model, X[1], [0.1], attack="fgsm")


def test_regressor_curve():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 1))
    reg = RobustGaussianProcessRegressor(alpha=1e-3).fit(X, np.sin(2 * X[:, 0]))
    c = robustness_curve(reg, X[0], [0.1, 0.3], epsilon=1e-3)
    assert np.all((c["min_lower"] - 1e-9 <= c["attack"]) & (c["attack"] <= c["max_upper"] + 1e-9))
    assert isinstance(plot_robustness_curve(reg, X[0], [0.1]), matplotlib.axes.Axes)


def test_plot_explanation_bars_and_heatmap(clf):
    model, X = clf
    ex = model.explain(X[:3], gamma=0.3, target=1)  # one target: the mean over rows is drawn below
    ax = plot_explanation(ex, row=0)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ax.patches) == 2 and sorted(labels) == sorted(str(f) for f in ex.feature_names)
    ax = plot_explanation(ex, top=1)
    assert len(ax.patches) == 1 and ax.get_title() == "mean over rows"
    ax = plot_explanation_heatmap(ex, (1, 2), row=None)
    assert ax.images and ax.images[0].get_array().shape == (1, 2)
    with pytest.raises(ValueError, match="does not fit"):
        plot_explanation_heatmap(ex, (1, 1))
    # a row that is not an index of the explanation's rows is named (UX audit, session 26)
    assert plot_explanation(ex, row=-1).get_title() == "row -1"
    for bad in (3, -4, 1.5, True, "0"):
        with pytest.raises(ValueError, match="row must be None or an integer index"):
            plot_explanation(ex, row=bad)
        with pytest.raises(ValueError, match="row must be None or an integer index"):
            plot_explanation_heatmap(ex, (1, 2), row=bad)


def test_heatmap_of_image_subset():
    X, y = make_blobs(40, n_features=9, centers=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobustGaussianProcessClassifier(random_state=0).fit(X, y)
    ex = model.explain(X[:1], gamma=0.5, features=[0, 4, 8], method="search")
    ax = plot_explanation_heatmap(ex, (3, 3))
    img = np.asarray(ax.images[0].get_array())
    assert np.isnan(img[0, 1]) and np.isfinite(img[1, 1])
    assert isinstance(plot_explanation(ex, row=0), matplotlib.axes.Axes)  # NaN bounds: no whiskers


def test_decision_map(clf):
    model, X = clf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cert = model.certify(X[:10], gamma=0.2, max_iter=50, random_state=0)
    ax = plot_decision_map(model, X[:10], cert, gamma=0.2, resolution=40)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(int(s.split("(")[-1][:-1]) for s in labels) == 10
    assert len(ax.patches) == 10
    with pytest.raises(ValueError, match="two features"):
        plot_decision_map(model, np.zeros((3, 3)), cert)
    with pytest.raises(ValueError, match="rows"):
        plot_decision_map(model, X[:5], cert)
    Xb, yb = make_blobs(30, centers=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m3 = RobustGaussianProcessClassifier(random_state=0).fit(Xb, yb)
        c3 = m3.certify(Xb[:4], gamma=0.1, max_iter=20)
    assert isinstance(plot_decision_map(m3, Xb[:4], c3, resolution=30), matplotlib.axes.Axes)


@pytest.fixture(scope="module")
def small_reg():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (15, 2))
    return RobustGaussianProcessRegressor(alpha=1e-2, optimizer=None).fit(X, np.sin(X[:, 0])), X


@pytest.mark.parametrize("target", [-1, 1.7, 3, True, "0"])
def test_regressor_curve_target_is_an_output_index(small_reg, target):
    """target was int()-ed: -1 meant the last output, 1.7 output 1 (eco-hunt D9)."""
    reg, X = small_reg
    with pytest.raises(ValueError, match=r"target must be an output index in \[0, 0\]"):
        robustness_curve(reg, X[0], [0.1], target=target, attack=None)


def test_decision_map_needs_a_classifier(small_reg):
    """A regressor failed with "has no attribute 'classes_'" (eco-hunt D5)."""
    reg, X = small_reg
    from skgprobust.exceptions import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match="needs a fitted classifier"):
        plot_decision_map(reg, X[:2, :2], None)


def test_curve_attack_support_is_checked_first(small_reg):
    """An attack the model does not support is refused before any
    prediction_range (was: a plain TypeError after the first one) (eco-hunt D11)."""
    from skgprobust.exceptions import UnsupportedModelError

    reg, X = small_reg

    from sklearn.base import BaseEstimator, RegressorMixin

    class NoAttacks(RegressorMixin, BaseEstimator):  # not a model the attacks handle
        n_features_in_ = 2

        def predict(self, X):
            return np.zeros(len(X))

        def prediction_range(self, *a, **k):
            raise AssertionError("prediction_range ran before the attack check")

    with pytest.raises(UnsupportedModelError, match="Attacks need"):
        robustness_curve(NoAttacks(), X[0], [0.1], attack="pgd")
    assert robustness_curve(reg, X[0], [0.0], attack=None, epsilon=0.5)["column"] == 0


def test_inspection_keeps_feature_names_quiet():
    """Named pandas input gave "X does not have valid feature names" warnings:
    5 from robustness_curve, 3 from adversarial_gap_curve, 1 from
    plot_decision_map (eco-hunt D10)."""
    pd = pytest.importorskip("pandas")
    from skgprobust.inspection import adversarial_gap_curve

    X, y = make_moons(20, noise=0.2, random_state=0)
    df = pd.DataFrame(X, columns=["a", "b"])
    model = RobustGaussianProcessClassifier(optimizer=None).fit(df, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")
        c = robustness_curve(model, df.iloc[0], [0.1], attack="gpfgs", epsilon=0.5, max_iter=5)
        c1 = robustness_curve(model, df.iloc[:1], [0.1], attack="gpfgs", epsilon=0.5, max_iter=5)
        adversarial_gap_curve(model, df.iloc[0], 0.2, [1.0, -1.0])
        cert = model.certify(df.iloc[:3], 0.1, max_iter=5)
        plot_decision_map(model, df.iloc[:3], cert, resolution=5)
    np.testing.assert_array_equal(c["max_upper"], c1["max_upper"])
    with pytest.raises(ValueError, match="feature names"):
        robustness_curve(model, df.iloc[0].rename({"a": "z"}), [0.1], attack=None)
