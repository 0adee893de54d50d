"""LIME side by side, and adversarial examples from an explanation (Fig. 6)."""

import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs, make_moons

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.inspection import compare_with_lime
from skgprobust.inspection import adversarial_gap_curve


@pytest.fixture(scope="module")
def clf():
    X, y = make_moons(60, noise=0.2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianProcessClassifier(random_state=0).fit(X, y), X


def test_lime_weights_aligned_with_delta(clf):
    pytest.importorskip("lime")
    model, X = clf
    c = compare_with_lime(model, X, X[:4], 0.3, random_state=0, num_samples=1000)
    ex = model.explain(X[:4], 0.3, random_state=0)
    assert np.array_equal(c.explanation.values, ex.values)
    assert c.lime_weights.shape == (4, 2) and np.all(np.isfinite(c.lime_weights))
    assert c.sign_agreement.shape == (2,) and np.all((0 <= c.sign_agreement) & (c.sign_agreement <= 1))
    # A smooth 2-D model: LIME's local slopes agree in sign with our Delta.
    assert c.sign_agreement.min() >= 0.75
    assert np.array_equal(c.certified_sign, (ex.lower > 0) | (ex.upper < 0))
    frame = c.to_frame()
    assert frame.index.tolist() == ["x0", "x1"] and "sign_agreement" in frame
    # Reproducible for a fixed seed (LIME is not, otherwise).
    c2 = compare_with_lime(model, X, X[:4], 0.3, explanation=ex, random_state=0, num_samples=1000)
    assert np.array_equal(c.lime_weights, c2.lime_weights)


def test_lime_subset_of_features_and_regressor():
    pytest.importorskip("lime")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(-1, 1, (40, 3)), columns=["a", "b", "c"])
    reg = RobustGaussianProcessRegressor(alpha=1e-3).fit(X, 2 * X["a"] - 3 * X["c"])
    c = compare_with_lime(reg, X, X.iloc[:3], 0.2, features=["c", "a"], random_state=0, num_samples=1000)
    assert c.feature_names.tolist() == ["a", "c"] and c.lime_weights.shape == (3, 2)
    # Linear target: both methods see a positive effect of a, negative of c.
    assert np.all(c.lime_weights[:, 0] > 0) and np.all(c.lime_weights[:, 1] < 0)
    assert np.all(c.sign_agreement == 1.0)
    with pytest.raises(ValueError, match="rows"):
        compare_with_lime(reg, X, X.iloc[:2], 0.2, explanation=c.explanation)


def test_missing_lime_is_a_clear_import_error(clf, monkeypatch):
    model, X = clf
    monkeypatch.setitem(sys.modules, "lime", None)
    monkeypatch.setitem(sys.modules, "lime.lime_tabular", None)
    with pytest.raises(ImportError, match="pip install lime"):
        compare_with_lime(model, X, X[:1], 0.1)


def test_gap_curve_from_delta(clf):
    model, X = clf
    x = X[0]
    ex = model.explain(x[None], 0.8, random_state=0)
    curve = adversarial_gap_curve(model, x, 0.8, ex.values[0])
    assert curve.betas.tolist() == [0, 1, 2]
    p = model.predict_proba(curve.points)
    c = list(model.classes_).index(model.predict(x[None])[0])
    assert np.allclose(curve.gaps, p[:, c] - p[:, 1 - c])
    assert curve.gaps[0] > 0  # the unmodified point keeps its class
    assert np.all(np.abs(curve.points - x) <= 0.8 + 1e-12)
    # The most important feature moves first, against its weight's sign.
    i = curve.order[0]
    assert i == np.argmax(np.abs(ex.values[0]))
    assert np.sign(curve.points[1, i] - x[i]) == -np.sign(ex.values[0][i])
    if curve.first_adversarial is not None:
        b = curve.first_adversarial
        assert model.predict(curve.points[list(curve.betas).index(b)][None])[0] != model.predict(x[None])[0]


def test_gap_curve_options_and_errors(clf):
    model, X = clf
    Xb, yb = make_blobs(40, n_features=3, centers=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m3 = RobustGaussianProcessClassifier(random_state=0).fit(Xb, yb)
    curve = adversarial_gap_curve(m3, Xb[0], 0.5, [0.3, -0.1], features=[2, 0], target=m3.classes_[1], betas=[1, 2],
                                  domain=(Xb.min(0), Xb.max(0)))
    assert curve.order.tolist() == [2, 0] and curve.betas.tolist() == [1, 2]
    assert curve.points[0, 2] == max(Xb[0, 2] - 0.5, Xb[:, 2].min()) and curve.points[0, 0] == Xb[0, 0]
    assert curve.points[1, 0] == min(Xb[0, 0] + 0.5, Xb[:, 0].max())
    with pytest.raises(ValueError, match="entries"):
        adversarial_gap_curve(model, X[0], 0.1, [1.0])
    with pytest.raises(ValueError, match="not in classes_"):
        adversarial_gap_curve(model, X[0], 0.1, [1.0, 2.0], target=5)
    with pytest.raises(ValueError, match="betas"):
        adversarial_gap_curve(model, X[0], 0.1, [1.0, 2.0], betas=[3])
    with pytest.raises(ValueError, match="one row"):
        adversarial_gap_curve(model, X[:2], 0.1, [1.0, 2.0])
    reg = RobustGaussianProcessRegressor().fit(X, X[:, 0])
    with pytest.raises(TypeError, match="classifier"):
        adversarial_gap_curve(reg, X[0], 0.1, [1.0, 2.0])
