"""epsilon-exactness against dense grids, and honest answers when the budget runs out."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

from ._helpers import BOUND_TOL, TOL, expected_box, gpc_latent, gpc_predict, gpr_predict, in_box

EPS = 1e-3


def _grid(lo, hi, n):
    axes = [np.linspace(a, b, n) if b > a else np.array([a]) for a, b in zip(lo, hi)]
    return np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=1)


def _regressor(kind, d):
    rng = np.random.default_rng(42 + d)
    X = rng.uniform(-3, 3, (30, d))
    y = np.sin(1.3 * X).sum(1) + 0.3 * np.cos(3 * X[:, 0]) + 0.05 * rng.normal(size=30)
    kernel = {
        "matern25": ConstantKernel(1.5) * Matern(length_scale=[0.9] * d if d > 1 else 0.9, nu=2.5),
        "rbf": RBF(length_scale=[0.7, 1.1][:d] if d > 1 else 0.7) + WhiteKernel(1e-3),
    }[kind]
    reg = RobustGaussianProcessRegressor(kernel=kernel, alpha=1e-4, normalize_y=True, optimizer=None)
    return reg.fit(X, y), X


def _classifier():
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, (50, 2))
    y = (np.sin(2 * X[:, 0]) + 0.8 * X[:, 1] > 0.1).astype(int)
    return RobustGaussianProcessClassifier(kernel=ConstantKernel(4.0) * RBF(0.6), optimizer=None).fit(X, y), X


GRID_N = {1: 2001, 2: 301}


def _check_brackets(r, fn, X_test, gamma, d, features=None):
    lo, hi = expected_box(X_test, gamma, features)
    for i in range(len(X_test)):
        G = _grid(lo[i], hi[i], GRID_N[d])
        v = fn(G)
        gmin, gmax = v.min(), v.max()
        # Certified bounds bracket the grid extremes.
        assert r.min_lower[i, 0] <= gmin + BOUND_TOL, (i, r.min_lower[i, 0], gmin)
        assert r.max_upper[i, 0] >= gmax - BOUND_TOL, (i, r.max_upper[i, 0], gmax)
        assert in_box(r.argmin[i, 0], lo[i], hi[i]) and in_box(r.argmax[i, 0], lo[i], hi[i])
        # These easy problems converge within the default budget ...
        assert r.converged[i, 0], (i, r.min_upper[i, 0] - r.min_lower[i, 0], r.max_upper[i, 0] - r.max_lower[i, 0])
        # ... to epsilon: the gaps, and the incumbents against the grid
        # (min_upper <= true min + eps <= grid min + eps).
        assert r.min_upper[i, 0] - r.min_lower[i, 0] <= EPS
        assert r.max_upper[i, 0] - r.max_lower[i, 0] <= EPS
        assert r.min_upper[i, 0] <= gmin + EPS + TOL
        assert r.max_lower[i, 0] >= gmax - EPS - TOL
        assert r.min_upper[i, 0] >= r.min_lower[i, 0] - BOUND_TOL


@pytest.mark.parametrize("kind", ["matern25", "rbf"])
@pytest.mark.parametrize("d", [1, 2])
def test_regressor_range_brackets_dense_grid(kind, d):
    reg, X = _regressor(kind, d)
    rng = np.random.default_rng(0)
    X_test = np.vstack([X[:2], rng.uniform(-2.5, 2.5, (2, d))])
    gamma = 0.6 if d == 1 else 0.4
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetExhaustedWarning)  # everything converges
        r = reg.prediction_range(X_test, gamma, epsilon=EPS, random_state=0)
    _check_brackets(r, lambda P: gpr_predict(reg, P)[:, 0], X_test, gamma, d)


def test_regressor_range_one_feature_moves():
    reg, X = _regressor("matern25", 2)
    X_test = X[3:6]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetExhaustedWarning)
        r = reg.prediction_range(X_test, [0.0, 0.8], features=[1], epsilon=EPS, random_state=0)
    lo, hi = expected_box(X_test, [0.0, 0.8], [1])
    assert np.all(lo[:, 0] == hi[:, 0])
    for i in range(len(X_test)):
        G = _grid(lo[i], hi[i], 2001)  # first coordinate fixed: 2001 points
        assert len(G) == 2001
        v = gpr_predict(reg, G)[:, 0]
        assert r.min_lower[i, 0] <= v.min() + BOUND_TOL and r.max_upper[i, 0] >= v.max() - BOUND_TOL
        assert r.converged[i, 0]
        assert r.min_upper[i, 0] <= v.min() + EPS + TOL and r.max_lower[i, 0] >= v.max() - EPS - TOL


def test_classifier_latent_range_brackets_dense_grid():
    clf, X = _classifier()
    X_test = np.vstack([X[:3], [[0.0, 0.0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetExhaustedWarning)
        r = clf.prediction_range(X_test, 0.3, epsilon=EPS, statistic="latent_mean", random_state=0)
    _check_brackets(r, lambda P: gpc_latent(clf, P), X_test, 0.3, 2)


def test_classifier_certify_agrees_with_dense_grid():
    """With the default budget every row is decided, and the decision
    matches a dense grid: robust rows have one class on the whole grid,
    not-robust rows have a verified counterexample."""
    clf, X = _classifier()
    X_test = np.vstack([X[:6], [[0.0, 0.0], [0.5, -0.5]]])
    gamma = 0.25
    c = clf.certify(X_test, gamma, random_state=0)
    lo, hi = expected_box(X_test, gamma)
    labels = gpc_predict(clf, X_test)
    assert not np.any(c.status == "unknown"), c.status
    for i in range(len(X_test)):
        G = _grid(lo[i], hi[i], 201)
        grid_changes = np.any(gpc_predict(clf, G) != labels[i])
        sign = 1.0 if labels[i] == clf.classes_[1] else -1.0
        assert c.bound[i] <= (sign * gpc_latent(clf, G)).min() + BOUND_TOL
        if c.status[i] == "robust":
            assert not grid_changes and c.bound[i] > 0
        else:
            assert in_box(c.counterexample[i], lo[i], hi[i])
            assert gpc_predict(clf, c.counterexample[i])[0] != labels[i]
    assert {"robust", "not_robust"} <= set(c.status.tolist())  # both answers exercised


def _max_deviation_1d(reg, x, gamma):
    G = np.linspace(x - gamma, x + gamma, 20001).reshape(-1, 1)
    return np.abs(gpr_predict(reg, G)[:, 0] - gpr_predict(reg, [[x]])[0, 0]).max()


def test_regressor_certify_decides_close_to_the_true_deviation():
    """delta 2% above the (grid) worst deviation: proven robust; 2% below:
    a verified counterexample."""
    reg, X = _regressor("matern25", 1)
    xs = [float(X[0, 0]), 0.3, -1.7]
    gamma = 0.5
    for x in xs:
        D = _max_deviation_1d(reg, x, gamma)
        assert D > 1e-2
        hi_c = reg.certify([[x]], gamma, delta=1.02 * D, random_state=0)
        assert hi_c.status[0] == "robust", (x, D, hi_c.bound)
        assert D - BOUND_TOL <= hi_c.bound[0] <= 1.02 * D
        lo_c = reg.certify([[x]], gamma, delta=0.98 * D, random_state=0)
        assert lo_c.status[0] == "not_robust", (x, D, lo_c.bound)
        cex = lo_c.counterexample[0]
        assert x - gamma <= cex[0] <= x + gamma
        assert abs(gpr_predict(reg, cex)[0, 0] - gpr_predict(reg, [[x]])[0, 0]) > 0.98 * D
        assert lo_c.bound[0] >= D - BOUND_TOL


# --------------------------------------------------------------------------
# Budget exhaustion: "unknown" / not converged, valid bounds, a warning
# --------------------------------------------------------------------------


def _hard_classifier_row():
    """A 1-D classifier and a row whose box ends 1e-3 before the decision
    boundary: robust, but not provable from the root box."""
    X = np.linspace(-3, 3, 25).reshape(-1, 1)
    y = (X[:, 0] > 0.37).astype(int)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(0.8), optimizer=None).fit(X, y)
    G = np.linspace(-1, 1.5, 250001).reshape(-1, 1)
    f = gpc_latent(clf, G)
    k = np.flatnonzero(np.diff(np.sign(f)) != 0)
    assert len(k) == 1
    boundary = G[k[0], 0]  # last grid point with the left class
    gamma = 0.8
    x = boundary - gamma - 2e-3
    return clf, np.array([[x]]), gamma


BUDGETS = [
    {"max_iter": 0},
    {"max_iter": 1},
    {"time_limit": 1e-4},
    {"time_limit": 1e-4, "max_iter": 3},
]


@pytest.mark.parametrize("budget", BUDGETS, ids=repr)
def test_classifier_budget_exhaustion_is_honest(budget):
    clf, X, gamma = _hard_classifier_row()
    with pytest.warns(BudgetExhaustedWarning):
        c = clf.certify(X, gamma, random_state=0, **budget)
    assert c.status[0] == "unknown" and not c.robust[0]
    assert np.all(np.isnan(c.counterexample[0]))
    if budget.get("max_iter") == 0:
        assert c.n_iter[0] == 0
    # The bound is still a valid lower bound of the margin (here <= 0: no proof).
    G = np.linspace(X[0, 0] - gamma, X[0, 0] + gamma, 20001).reshape(-1, 1)
    sign = 1.0 if gpc_predict(clf, X)[0] == clf.classes_[1] else -1.0
    margin = sign * gpc_latent(clf, G)
    assert margin.min() > 0  # really robust
    assert c.bound[0] <= margin.min() + BOUND_TOL
    # With the default budget the same row is proven robust.
    full = clf.certify(X, gamma, random_state=0)
    assert full.status[0] == "robust" and 0 < full.bound[0] <= margin.min() + BOUND_TOL


@pytest.mark.parametrize("budget", BUDGETS, ids=repr)
def test_range_budget_exhaustion_is_honest(budget):
    reg, X = _regressor("rbf", 2)
    X_test = X[:2]
    gamma = 1.5  # a big box: far from converged at the root
    with pytest.warns(BudgetExhaustedWarning):
        r = reg.prediction_range(X_test, gamma, epsilon=1e-6, random_state=0, **budget)
    assert not np.any(r.converged)
    lo, hi = expected_box(X_test, gamma)
    for i in range(len(X_test)):
        v = gpr_predict(reg, _grid(lo[i], hi[i], 201))[:, 0]
        assert r.min_lower[i, 0] <= v.min() + BOUND_TOL and r.max_upper[i, 0] >= v.max() - BOUND_TOL
        assert in_box(r.argmin[i, 0], lo[i], hi[i]) and in_box(r.argmax[i, 0], lo[i], hi[i])
        assert abs(r.min_upper[i, 0] - gpr_predict(reg, r.argmin[i, 0])[0, 0]) <= TOL
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = reg.certify(X_test, gamma, delta=1e-9, random_state=0, **budget)
    # delta tiny: either a counterexample (found by the local search) or unknown; never robust.
    assert not np.any(c.robust)
    warned = any(issubclass(w.category, BudgetExhaustedWarning) for w in caught)
    assert warned == bool(np.any(c.status == "unknown"))


def test_regressor_certify_budget_exhaustion_gives_unknown():
    """A row whose worst deviation is just below delta: robust, but unknown on
    a tiny budget (with a valid bound), proven with the default budget."""
    reg, X = _regressor("matern25", 1)
    x, gamma = 0.3, 0.5
    D = _max_deviation_1d(reg, x, gamma)
    for budget in ({"max_iter": 0}, {"time_limit": 1e-4}):
        with pytest.warns(BudgetExhaustedWarning):
            c = reg.certify([[x]], gamma, delta=1.001 * D, random_state=0, **budget)
        assert c.status[0] == "unknown" and np.all(np.isnan(c.counterexample[0]))
        assert c.bound[0] >= D - BOUND_TOL
    c = reg.certify([[x]], gamma, delta=1.001 * D, random_state=0)
    assert c.status[0] == "robust"


@pytest.mark.parametrize("max_iter", [3, 5, 20])
def test_max_iter_bounds_the_boxes_split(max_iter):
    reg, X = _regressor("rbf", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = reg.prediction_range(X[:3], 1.5, epsilon=1e-9, max_iter=max_iter, random_state=0)
    assert np.all(r.n_iter <= max_iter), r.n_iter


def test_time_limit_is_respected():
    """epsilon too small to ever converge: each row stops near its time limit
    (one batch of splits may overrun it) with valid bounds."""
    import time

    reg, X = _regressor("rbf", 2)
    X_test = X[:3]
    t0 = time.perf_counter()
    with pytest.warns(BudgetExhaustedWarning):
        r = reg.prediction_range(X_test, 1.0, epsilon=1e-14, time_limit=0.2, random_state=0)
    wall = time.perf_counter() - t0
    assert np.all(r.time >= 0.2) and np.all(r.time <= 0.2 + 0.5), r.time
    assert wall <= 3 * (0.2 + 0.5)
    assert np.all(r.n_iter > 0)
    lo, hi = expected_box(X_test, 1.0)
    for i in range(len(X_test)):
        v = gpr_predict(reg, _grid(lo[i], hi[i], 201))[:, 0]
        assert r.min_lower[i, 0] <= v.min() + BOUND_TOL and r.max_upper[i, 0] >= v.max() - BOUND_TOL
