"""skgprobust.make_robustness_scorer in model selection."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.pipeline import certify
from skgprobust import make_robustness_scorer
from skgprobust.scoring import RobustnessScorer


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(70, noise=0.25, random_state=0)
    return X * [3.0, 0.5] + [10.0, -2.0], y  # raw units differ per feature


@pytest.fixture(scope="module")
def curve():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (50, 2))
    return X, np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=50)


def _clf_pipe(length_scale=1.0):
    gp = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(length_scale), optimizer=None)
    return Pipeline([("sc", StandardScaler()), ("gp", gp)])


def _reg():
    return RobustGaussianProcessRegressor(kernel=ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.01), optimizer=None)


def _direct(estimator, X, gamma, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        return certify(estimator, X, gamma, **kwargs)


def test_scores_equal_direct_computation(moons):
    X, y = moons
    pipe = _clf_pipe().fit(X[:50], y[:50])
    Xt, yt = X[50:], y[50:]
    gamma = [0.3, 0.05]
    res = _direct(pipe, Xt, gamma, max_iter=100, random_state=0)
    acc = make_robustness_scorer(gamma, max_iter=100)(pipe, Xt, yt)
    rate = make_robustness_scorer(gamma, metric="robustness_rate", max_iter=100)(pipe, Xt, yt)
    assert acc == pytest.approx(np.mean(res.robust & (pipe.predict(Xt) == yt)))
    assert rate == pytest.approx(np.mean(res.robust))
    assert 0.0 <= acc <= rate <= 1.0
    assert 0 < rate < 1  # not vacuous at this radius


def test_certified_accuracy_takes_a_one_column_y(moons):
    """y of shape (n, 1), as sklearn's metrics accept it, scores as the 1-D y
    (it broadcast against the (n,) predictions to an (n, n) table: 0.48
    instead of 0.80 here); a y of another length is refused."""
    X, y = moons
    pipe = _clf_pipe().fit(X[:50], y[:50])
    Xt, yt = X[50:], y[50:]
    scorer = make_robustness_scorer([0.3, 0.05], max_iter=100)
    flat = scorer(pipe, Xt, yt)
    assert 0 < flat < 1  # not vacuous
    assert scorer(pipe, Xt, yt[:, None]) == flat
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        scorer(pipe, Xt, yt[:-1])


def test_regressor_metrics(curve):
    X, t = curve
    reg = _reg().fit(X[:40], t[:40])
    res = _direct(reg, X[40:], 0.1, delta=0.2, max_iter=200, random_state=0)
    for metric in ("delta_robust_rate", "robustness_rate"):
        s = make_robustness_scorer(0.1, metric=metric, delta=0.2, max_iter=200)
        assert s(reg, X[40:], t[40:]) == pytest.approx(np.mean(res.robust))
    with pytest.raises(ValueError, match="delta"):
        make_robustness_scorer(0.1, metric="robustness_rate")(reg, X[40:], t[40:])
    with pytest.raises(ValueError, match="classifier"):
        make_robustness_scorer(0.1)(reg, X[40:], t[40:])


def test_grid_search_multimetric_refits_by_robustness(moons):
    X, y = moons
    scoring = {
        "accuracy": "accuracy",
        "certified": make_robustness_scorer([0.3, 0.05], max_iter=60),
        "robust": make_robustness_scorer([0.3, 0.05], metric="robustness_rate", max_iter=60),
    }
    grid = {"gp__kernel": [ConstantKernel(2.0) * RBF(0.3), ConstantKernel(2.0) * RBF(1.5)]}
    search = GridSearchCV(_clf_pipe(), grid, scoring=scoring, refit="certified", cv=KFold(2)).fit(X, y)
    cv = search.cv_results_
    for key in ("mean_test_accuracy", "mean_test_certified", "mean_test_robust"):
        assert np.all((cv[key] >= 0) & (cv[key] <= 1)), key
    assert np.all(cv["mean_test_certified"] <= cv["mean_test_robust"] + 1e-12)
    assert search.best_index_ == int(np.argmax(cv["mean_test_certified"]))
    assert search.best_score_ == pytest.approx(cv["mean_test_certified"].max())
    assert hasattr(search.best_estimator_, "predict")


def test_cross_validate_regressor_pipeline(curve):
    X, t = curve
    pipe = Pipeline([("sc", StandardScaler()), ("gp", _reg())])
    scorer = make_robustness_scorer(0.2, metric="delta_robust_rate", delta=0.3, max_iter=100)
    out = cross_validate(pipe, X, t, cv=KFold(2), scoring={"r2": "r2", "delta": scorer})
    assert out["test_delta"].shape == (2,)
    assert np.all((out["test_delta"] >= 0) & (out["test_delta"] <= 1))


def test_validation_and_repr():
    with pytest.raises(ValueError, match="metric"):
        make_robustness_scorer(0.1, metric="accuracy")
    with pytest.raises(ValueError, match="delta"):
        make_robustness_scorer(0.1, metric="delta_robust_rate")
    with pytest.raises(ValueError, match="delta"):
        make_robustness_scorer(0.1, delta=0.5)  # certified_accuracy is for classifiers
    with pytest.raises(ValueError, match="gamma"):
        make_robustness_scorer(-0.1)
    with pytest.raises(ValueError, match="norm"):
        make_robustness_scorer(0.1, metric="delta_robust_rate", delta=1.0, norm=3)
    s = make_robustness_scorer(0.1, metric="delta_robust_rate", delta=0.5, features=[0])
    assert isinstance(s, RobustnessScorer)
    assert repr(s) == "make_robustness_scorer(gamma=0.1, metric='delta_robust_rate', delta=0.5, max_iter=500, features=[0])"
    assert repr(make_robustness_scorer(0.2)) == "make_robustness_scorer(gamma=0.2, metric='certified_accuracy', max_iter=500)"
    assert repr(pickle.loads(pickle.dumps(s))) == repr(s)


def test_delta_robust_rate_refuses_classifier(moons):
    X, y = moons
    pipe = _clf_pipe().fit(X, y)
    with pytest.raises(ValueError, match="regressor"):
        make_robustness_scorer(0.1, metric="delta_robust_rate", delta=0.1)(pipe, X[:5], y[:5])


def test_run_arguments_are_checked_when_the_scorer_is_made():
    """max_iter=-3, n_jobs="x" or an unknown keyword were accepted and failed
    only at scoring time (in GridSearchCV: a NaN score and a warning per fold)
    (eco-hunt D6, D7)."""
    for kw, match in [
        ({"max_iter": -3}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"time_limit": 0}, "time_limit"),
        ({"n_jobs": "x"}, "n_jobs"),
        ({"n_jobs": 1.5}, "n_jobs"),
        ({"n_jobs": True}, "n_jobs"),
        ({"verbose": -1}, "verbose"),
    ]:
        with pytest.raises(ValueError, match=match):
            make_robustness_scorer(0.1, **kw)
    with pytest.raises(TypeError, match="foo"):
        make_robustness_scorer(0.1, foo=1)
    with pytest.raises(ValueError, match="variance_bound"):
        make_robustness_scorer(0.1, variance_bound="bogus")
    with pytest.raises(TypeError, match="variance_bound"):
        make_robustness_scorer(0.1, metric="delta_robust_rate", delta=0.5, variance_bound="paper")
    for kw in ({"n_jobs": -1}, {"n_jobs": 2, "max_iter": None, "time_limit": 1.5}, {"verbose": 0},
               {"variance_bound": "paper", "domain": (None, None)}):
        assert isinstance(make_robustness_scorer(0.1, **kw), RobustnessScorer)

