"""Adversarial attacks: boxes, effectiveness, agreement with certify, errors.

Margins and deviations are measured with scikit-learn's own numbers
(``latent_mean_and_variance``, ``predict``), never skgprobust's objectives.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.base import clone
from sklearn.gaussian_process.kernels import RBF
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgprobust import (
    MultiOutputGaussianProcessRegressor,
    RobustGaussianProcessClassifier,
    RobustGaussianProcessRegressor,
    SoftmaxGaussianProcessClassifier,
)
from skgprobust.inspection import attack_succeeded, gpfgs, gpjm, pgd
from skgprobust.exceptions import UnsupportedModelError

from ._helpers import BOUND_TOL, gpc_latent, gpr_predict

ATTACKS = [gpfgs, gpjm, pgd]


def run(attack, model, X, gamma, **kw):
    """The attack, seeded when it is random."""
    return attack(model, X, gamma, **kw, **({"random_state": 0} if attack is pgd else {}))


def binary_margin(clf, X, X_adv):
    """sklearn's latent mean at X_adv, signed towards the class predicted at X
    (> 0: the decision is kept)."""
    f = gpc_latent(clf, X_adv)
    return np.where(clf.predict(X) == clf.classes_[1], f, -f)


@pytest.fixture(scope="module")
def ovr():
    """A one-vs-rest model of three classes in 3-D: (model, X, y)."""
    X, y = make_blobs(45, n_features=3, centers=3, cluster_std=1.5, random_state=0)
    return RobustGaussianProcessClassifier(1.0 * RBF(2.0), optimizer=None).fit(X, y), X, y


@pytest.fixture(scope="module")
def softmax(ovr):
    """The softmax model of the same three classes."""
    _, X, y = ovr
    return SoftmaxGaussianProcessClassifier(1.0 * RBF(2.0), optimizer=None).fit(X, y)


@pytest.fixture(params=["binary", "ovr", "regressor", pytest.param("softmax", marks=pytest.mark.slow), "multioutput"])
def case(request, fitted_clf, clf_data, ovr, softmax, fitted_reg, reg_data):
    """(model, rows mixing robust and non-robust ones at gamma, gamma, attack_succeeded keywords)."""
    if request.param == "binary":
        X = clf_data[0]
        near = np.argsort(np.abs(gpc_latent(fitted_clf, X)))[:12]  # rows near the decision boundary
        return fitted_clf, X[near], 0.3, {}
    if request.param == "ovr":
        return ovr[0], ovr[1][:20], 1.0, {}
    if request.param == "softmax":
        return softmax, ovr[1][:20], 1.0, {}
    if request.param == "multioutput":
        X, y = reg_data
        Y = np.column_stack([y, np.cos(X.sum(1))])
        mo = MultiOutputGaussianProcessRegressor(RBF(1.0), noise_level=0.01, optimizer=None).fit(X, Y)
        return mo, X[:6], 0.3, {"delta": 0.3}
    return fitted_reg, reg_data[0][:6], 0.3, {"delta": 0.3}


@pytest.mark.parametrize("attack", ATTACKS)
def test_points_in_box_and_shapes(attack, case):
    model, X, _, _ = case
    X, d, gamma = X[:6], X.shape[1], 0.4
    X_adv = run(attack, model, X, gamma)
    assert X_adv.shape == X.shape and isinstance(X_adv, np.ndarray)
    assert np.all(np.abs(X_adv - X) <= gamma + 1e-12)
    assert np.any(X_adv != X)
    # One row in, one row out, and the same point as in a batch.
    np.testing.assert_allclose(run(attack, model, X[2], gamma), X_adv[2], atol=1e-12)
    # Fixed features stay put, per-feature gamma and the domain hold.
    gammas = np.linspace(0.1, 0.5, d)
    low, high = X.min(0), X.max(0)
    X_adv = run(attack, model, X, gammas, features=list(range(1, d)), domain=(low, high))
    np.testing.assert_array_equal(X_adv[:, 0], X[:, 0])
    assert np.all(np.abs(X_adv - X) <= gammas + 1e-12)
    assert np.all((X_adv >= low) & (X_adv <= high))


def test_dataframe_input(fitted_clf, clf_data):
    X, y = clf_data
    df = pd.DataFrame(X, columns=["a", "b"])
    clf = RobustGaussianProcessClassifier(fitted_clf.kernel, optimizer=None).fit(df, y)
    X_adv = gpjm(clf, df.iloc[:4], 0.3, features=["b"])
    assert isinstance(X_adv, np.ndarray)
    np.testing.assert_array_equal(X_adv, gpjm(fitted_clf, X[:4], 0.3, features=[1]))
    np.testing.assert_array_equal(gpfgs(clf, df.iloc[1], 0.3), gpfgs(fitted_clf, X[1], 0.3))
    assert attack_succeeded(clf, df.iloc[:4], X_adv).shape == (4,)


def test_pgd_margin_at_most_gpfgs(fitted_clf, clf_data):
    X = clf_data[0][:12]
    for gamma in (0.05, 0.3):
        m_pgd = binary_margin(fitted_clf, X, pgd(fitted_clf, X, gamma, random_state=0))
        m_fgs = binary_margin(fitted_clf, X, gpfgs(fitted_clf, X, gamma))
        assert np.all(m_pgd <= m_fgs + 1e-9)


def test_gpfgs_lowers_the_margin(fitted_clf, clf_data):
    X = clf_data[0][:15]
    X_adv = gpfgs(fitted_clf, X, 0.01)
    assert np.all(binary_margin(fitted_clf, X, X_adv) < binary_margin(fitted_clf, X, X))


def test_regressor_pgd_reaches_the_certified_range(fitted_reg, reg_data):
    X = reg_data[0][:5]
    gamma = 0.3
    dev_pgd = np.abs(gpr_predict(fitted_reg, pgd(fitted_reg, X, gamma, random_state=0)) - gpr_predict(fitted_reg, X))[:, 0]
    dev_fgs = np.abs(gpr_predict(fitted_reg, gpfgs(fitted_reg, X, gamma)) - gpr_predict(fitted_reg, X))[:, 0]
    r = fitted_reg.prediction_range(X, gamma, epsilon=1e-4, random_state=0)
    centre = gpr_predict(fitted_reg, X)[:, 0]
    dev_max = np.maximum(centre - r.min_lower[:, 0], r.max_upper[:, 0] - centre)
    assert np.all(dev_pgd >= dev_fgs - 1e-9)
    assert np.all(dev_pgd <= dev_max + BOUND_TOL)  # soundness of the range
    assert np.all(dev_pgd >= dev_max - 1e-3)  # pgd finds the worst case


def test_attacks_agree_with_certify(case):
    """No attack breaks a row certify proves robust; pgd breaks every row it
    finds not robust."""
    model, X, gamma, kw = case
    status = model.certify(X, gamma, max_iter=500, random_state=0, **kw).status
    robust, broken = status == "robust", status == "not_robust"
    assert robust.any() and broken.any()
    for attack in ATTACKS:
        X_adv = run(attack, model, X, gamma)
        succeeded = attack_succeeded(model, X, X_adv, **kw)
        assert not succeeded[robust].any(), attack.__name__
        if attack is pgd:
            assert succeeded[broken].all()


def test_attack_succeeded_uses_predict(fitted_clf, clf_data, fitted_reg, reg_data):
    X = clf_data[0][:10]
    other = clf_data[0][10:20]
    np.testing.assert_array_equal(attack_succeeded(fitted_clf, X, other), fitted_clf.predict(X) != fitted_clf.predict(other))
    assert not attack_succeeded(fitted_clf, X, X).any()
    assert attack_succeeded(fitted_clf, X[0], other[0]) == (fitted_clf.predict(X[:1]) != fitted_clf.predict(other[:1]))[0]
    Xr, other = reg_data[0][:10], reg_data[0][10:20]
    dev = np.abs(fitted_reg.predict(Xr) - fitted_reg.predict(other))
    np.testing.assert_array_equal(attack_succeeded(fitted_reg, Xr, other, delta=0.2), dev > 0.2)
    with pytest.raises(ValueError, match="delta"):
        attack_succeeded(fitted_reg, Xr, other)
    with pytest.raises(ValueError, match="delta"):
        attack_succeeded(fitted_clf, X, other, delta=0.1)
    with pytest.raises(ValueError, match="shape"):
        attack_succeeded(fitted_clf, X, other[:5])


def test_pgd_is_deterministic(ovr):
    model, X, _ = ovr
    a = pgd(model, X[:4], 0.5, n_starts=4, n_steps=10, random_state=3)
    b = pgd(model, X[:4], 0.5, n_starts=4, n_steps=10, random_state=3)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("attack", ATTACKS)
def test_clear_errors(attack, fitted_clf, clf_data, ovr):
    X, y = clf_data
    with pytest.raises(NotFittedError):
        attack(RobustGaussianProcessClassifier(), X, 0.1)
    with pytest.raises(NotFittedError):
        attack(RobustGaussianProcessRegressor(), X, 0.1)
    with pytest.raises(UnsupportedModelError, match="skgprobust's Gaussian-process estimators"):  # a TypeError too
        attack(GaussianProcessClassifier(optimizer=None).fit(X, y), X, 0.1)
    with pytest.raises(UnsupportedModelError, match="not a Pipeline"):
        attack(make_pipeline(StandardScaler(), clone(fitted_clf)).fit(X, y), X, 0.1)
    with pytest.raises(ValueError, match="gamma"):
        attack(fitted_clf, X, -0.1)
    with pytest.raises(ValueError, match="NaN"):
        attack(fitted_clf, np.where(X == X[0, 0], np.nan, X), 0.1)
    with pytest.raises(ValueError, match="target"):
        attack(fitted_clf, X, 0.1, target=0)
    _, Xo, yo = ovr
    ovo = RobustGaussianProcessClassifier(1.0 * RBF(2.0), optimizer=None, multi_class="one_vs_one").fit(Xo, yo)
    with pytest.raises(NotImplementedError, match="one-vs-one"):
        attack(ovo, Xo, 0.1)


def test_regressor_targets(reg_data):
    """target=None keeps, per row, the largest change over targets."""
    X, y = reg_data
    Y = np.column_stack([y, np.cos(X.sum(1))])
    reg = RobustGaussianProcessRegressor(RBF(1.0), optimizer=None).fit(X, Y)
    X = X[:6]

    def change(X_adv):
        return np.abs(gpr_predict(reg, X_adv) - gpr_predict(reg, X))

    for attack in ATTACKS:
        best = change(run(attack, reg, X, 0.3)).max(axis=1)
        for p in (0, 1):
            assert np.all(best >= change(run(attack, reg, X, 0.3, target=p))[:, p] - 1e-12), attack.__name__
    with pytest.raises(ValueError, match="target"):
        gpfgs(reg, X, 0.2, target=2)
