"""Property-based soundness sweeps.

Random supported kernels, data sets, boxes, feature subsets, domains and
budgets; every certified number is attacked with >= 10^4 samples in the box
plus a bounded local optimiser, and compared with scikit-learn's own numbers
at zero tolerance (BOUND_TOL; every rounding margin is inside the bounds),
reported values against re-evaluations of the model to TOL = 1e-9:

* ranges: no sampled value lies outside [min_lower, max_upper];
  min_upper / max_lower are predict() at argmin / argmax, inside the box;
* certificates: "robust" survives the attack; ``bound`` is a valid bound
  whatever the status; counterexamples lie in the box and change the decision.

Each sweep runs twice: a fast derandomized one (~20 examples) in the default
run and a long one under ``-m slow`` whose size is read from
SKGPROBUST_SWEEP_EXAMPLES.
"""

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import event as _event
from hypothesis import given
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

from ._helpers import (
    FAST,
    SLOW,
    BOUND_TOL,
    TOL,
    attack,
    budgets,
    contains_periodic,
    datasets,
    expected_box,
    fit_or_reject,
    gpc_latent,
    gpc_predict,
    gpr_predict,
    in_box,
    is_nan_row,
    kernels,
    perturbations,
)


@dataclass
class Case:
    model: object
    X_test: np.ndarray
    gamma: object
    features: object
    domain: object
    max_iter: object
    time_limit: object
    epsilon: float
    seed: int
    delta: float = None
    norm: float = np.inf

    def kwargs(self):
        return dict(
            features=self.features,
            domain=self.domain,
            max_iter=self.max_iter,
            time_limit=self.time_limit,
            random_state=self.seed,
        )

    def boxes(self):
        return expected_box(self.X_test, self.gamma, self.features, self.domain)


@st.composite
def gpr_cases(draw):
    n_targets = draw(st.sampled_from([1, 2]))
    data = draw(datasets(n_targets=n_targets))
    d = data.X.shape[1]
    kernel = draw(kernels(d))
    noise = draw(st.sampled_from([1e-6, 1e-4, 1e-2, 1e-1]))
    if contains_periodic(kernel) and d > 1:
        noise = max(noise, 1e-2)
    normalize_y = draw(st.booleans())
    y = data.y
    if n_targets == 1 and draw(st.booleans()):
        y = y[:, None]  # (n, 1): predict() squeezes it back to 1-D
    reg = fit_or_reject(
        lambda a: RobustGaussianProcessRegressor(kernel=kernel, alpha=a, normalize_y=normalize_y, optimizer=None),
        data.X,
        y,
        noise,
    )
    gamma, features, domain = draw(perturbations(data.X_test))
    max_iter, time_limit = draw(budgets())
    y_scale = float(np.std(data.y)) + 1e-3
    return Case(
        model=reg,
        X_test=data.X_test,
        gamma=gamma,
        features=features,
        domain=domain,
        max_iter=max_iter,
        time_limit=time_limit,
        epsilon=draw(st.sampled_from([1e-1, 1e-2, 1e-3])) * y_scale,
        seed=draw(st.integers(0, 2**31 - 1)),
        delta=draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 2.0])) * y_scale,
        norm=draw(st.sampled_from([np.inf, 1, 2])),
    )


@st.composite
def gpc_cases(draw):
    data = draw(datasets(classification=True))
    d = data.X.shape[1]
    kernel = draw(kernels(d))
    clf = fit_or_reject(
        lambda a: RobustGaussianProcessClassifier(kernel=kernel, optimizer=None), data.X, data.y, None
    )
    gamma, features, domain = draw(perturbations(data.X_test))
    max_iter, time_limit = draw(budgets())
    return Case(
        model=clf,
        X_test=data.X_test,
        gamma=gamma,
        features=features,
        domain=domain,
        max_iter=max_iter,
        time_limit=time_limit,
        epsilon=draw(st.sampled_from([1e-1, 1e-2, 1e-3])),
        seed=draw(st.integers(0, 2**31 - 1)),
    )


def event(label):
    """hypothesis.event, also usable from the plain (non-hypothesis) tests below."""
    if currently_in_test_context():
        _event(label)


def _call(method, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = method(*args, **kwargs)
    budget_warnings = [w for w in caught if issubclass(w.category, BudgetExhaustedWarning)]
    return out, budget_warnings


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def _recheck_tol(model, x, j):
    """TOL plus what the summation order of the model's own mean may change:
    ``prediction_range`` re-evaluates the incumbents with one batched
    ``predict`` call (BLAS GEMM), the test one row at a time (GEMV); each
    sum_i w_i k(x, x_i) errs by <= gamma_N sum_i |w_i k(x, x_i)|, which an
    ill-conditioned fit (e.g. DotProduct ** 2 with as many support points as
    features of the power) makes far larger than the value (a sparse
    regressor, hypothesis 6.170: 4.8e-9 on a mean of -48.7). Regressors
    only; other models: TOL."""
    S = getattr(model, "inducing_points_", None)
    if S is None:
        S = getattr(model, "X_train_", None)
    w = getattr(model, "alpha_", None)
    if S is None or w is None or not hasattr(model, "kernel_") or hasattr(model, "base_estimator_"):
        return TOL
    w = np.asarray(w, dtype=np.float64).reshape(len(S), -1)
    scale = np.broadcast_to(np.asarray(getattr(model, "_y_train_std", 1.0), dtype=np.float64), (w.shape[1],))
    col = min(j, w.shape[1] - 1)
    mag = float((np.abs(model.kernel_(np.atleast_2d(x), S)) @ np.abs(w[:, col]))[0]) * float(scale[col])
    N = len(S)
    return TOL + 2.0 * (N + 2) * 2.0**-53 * mag * 1.01


def check_range(case, r, fn, warned, proba=False):
    """``fn(P)`` -> (m, k) sklearn values; r a RangeResult for case.

    ``proba``: r is a range of ``predict_proba``, whose rows are also not
    converged where the probabilities are not proven finite on the box
    (``_probabilities_finite``: a variance that may fall to the link's
    floor, e.g. an ExpSineSquared on several features; session 25)."""
    X = case.X_test
    n, d = X.shape
    k = r.min_lower.shape[1]
    for name in ("min_lower", "min_upper", "max_lower", "max_upper", "converged"):
        assert getattr(r, name).shape == (n, k), name
    assert r.argmin.shape == (n, k, d) and r.argmax.shape == (n, k, d)
    assert r.n_iter.shape == (n,) and r.time.shape == (n,)
    assert np.all(r.n_iter >= 0) and np.all(r.time >= 0)
    if case.max_iter == 0:
        assert np.all(r.n_iter == 0)
    gap_ok = (r.min_upper - r.min_lower <= case.epsilon) & (r.max_upper - r.max_lower <= case.epsilon)
    finite = np.ones(n, dtype=bool)
    if proba:
        from skgprobust._engine._api import _probabilities_finite

        finite = _probabilities_finite(case.model, *case.boxes(), "default")
    np.testing.assert_array_equal(r.converged, gap_ok & finite[:, None])
    assert bool(warned) == bool(np.any(~gap_ok))

    event(f"converged: {int(r.converged.sum())}/{r.converged.size}")
    lo, hi = case.boxes()
    rng = np.random.default_rng(case.seed)
    for i in range(n):
        for j in range(k):
            # The incumbents: inside the box, and exactly predict() there.
            assert in_box(r.argmin[i, j], lo[i], hi[i]), (i, j, r.argmin[i, j], lo[i], hi[i])
            assert in_box(r.argmax[i, j], lo[i], hi[i]), (i, j, r.argmax[i, j], lo[i], hi[i])
            assert abs(r.min_upper[i, j] - fn(r.argmin[i, j])[0, j]) <= _recheck_tol(case.model, r.argmin[i, j], j)
            assert abs(r.max_lower[i, j] - fn(r.argmax[i, j])[0, j]) <= _recheck_tol(case.model, r.argmax[i, j], j)
            assert r.min_lower[i, j] <= r.min_upper[i, j] + BOUND_TOL
            assert r.max_lower[i, j] <= r.max_upper[i, j] + BOUND_TOL
            assert not np.isnan(r.min_lower[i, j]) and not np.isnan(r.max_upper[i, j])
            # The attack: nothing below min_lower, nothing above max_upper.
            atk = attack(lambda P, j=j: fn(P)[:, j], lo[i], hi[i], rng)
            assert atk.min >= r.min_lower[i, j] - BOUND_TOL, (
                f"row {i} target {j}: predict({atk.argmin.tolist()}) = {atk.min!r} < min_lower = {r.min_lower[i, j]!r}"
            )
            assert atk.max <= r.max_upper[i, j] + BOUND_TOL, (
                f"row {i} target {j}: predict({atk.argmax.tolist()}) = {atk.max!r} > max_upper = {r.max_upper[i, j]!r}"
            )


def check_certificate_common(case, c, warned):
    n, d = case.X_test.shape
    assert c.robust.shape == (n,) and c.status.shape == (n,) and c.bound.shape == (n,)
    assert c.counterexample.shape == (n, d)
    assert c.n_iter.shape == (n,) and c.time.shape == (n,)
    assert set(c.status.tolist()) <= {"robust", "not_robust", "unknown"}
    np.testing.assert_array_equal(c.robust, c.status == "robust")
    assert bool(warned) == bool(np.any(c.status == "unknown"))
    if case.max_iter == 0:
        assert np.all(c.n_iter == 0)
    for s in c.status:
        event(f"status: {s}")
    lo, hi = case.boxes()
    for i in range(n):
        if c.status[i] == "not_robust":
            assert in_box(c.counterexample[i], lo[i], hi[i]), (i, c.counterexample[i], lo[i], hi[i])
        else:
            assert is_nan_row(c.counterexample[i]), (i, c.status[i], c.counterexample[i])
    return lo, hi


def check_gpr_certificate(case, c, warned):
    reg = case.model
    lo, hi = check_certificate_common(case, c, warned)
    center = gpr_predict(reg, case.X_test)
    rng = np.random.default_rng(case.seed)
    for i in range(len(case.X_test)):

        def deviation(P, i=i):
            return np.linalg.norm(gpr_predict(reg, P) - center[i], ord=case.norm, axis=1)

        assert not np.isnan(c.bound[i])
        if c.status[i] == "robust":
            assert c.bound[i] <= case.delta
        if c.status[i] == "not_robust":
            assert deviation(c.counterexample[i])[0] > case.delta
        atk = attack(deviation, lo[i], hi[i], rng)
        assert atk.max <= c.bound[i] + BOUND_TOL, (
            f"row {i}: deviation {atk.max!r} at {atk.argmax.tolist()} exceeds the proven bound {c.bound[i]!r}"
        )
        if c.status[i] == "robust":
            assert atk.max <= case.delta + BOUND_TOL, (
                f"row {i} certified robust, but deviation {atk.max!r} > delta={case.delta!r} at {atk.argmax.tolist()}"
            )


def check_gpc_certificate(case, c, warned):
    clf = case.model
    lo, hi = check_certificate_common(case, c, warned)
    labels = gpc_predict(clf, case.X_test)
    sign = np.where(labels == clf.classes_[1], 1.0, -1.0)
    rng = np.random.default_rng(case.seed)
    for i in range(len(case.X_test)):
        assert not np.isnan(c.bound[i])
        if c.status[i] == "robust":
            assert c.bound[i] > 0
        if c.status[i] == "not_robust":
            assert gpc_predict(clf, c.counterexample[i])[0] != labels[i]
        atk = attack(lambda P, i=i: sign[i] * gpc_latent(clf, P), lo[i], hi[i], rng)
        assert atk.min >= c.bound[i] - BOUND_TOL, (
            f"row {i}: latent margin {atk.min!r} at {atk.argmin.tolist()} below the proven bound {c.bound[i]!r}"
        )
        if c.status[i] == "robust":
            preds = gpc_predict(clf, atk.points)
            changed = preds != labels[i]
            assert not changed.any(), (
                f"row {i} certified robust, but predict({atk.points[changed][0].tolist()}) != {labels[i]!r}"
            )


# --------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------


def _gpr_range(case):
    r, warned = _call(case.model.prediction_range, case.X_test, case.gamma, epsilon=case.epsilon, **case.kwargs())
    check_range(case, r, lambda P: gpr_predict(case.model, P), warned)


def _gpr_certify(case):
    c, warned = _call(case.model.certify, case.X_test, case.gamma, delta=case.delta, norm=case.norm, **case.kwargs())
    check_gpr_certificate(case, c, warned)


def _gpc_range(case):
    r, warned = _call(
        case.model.prediction_range, case.X_test, case.gamma, epsilon=case.epsilon, statistic="latent_mean",
        **case.kwargs(),
    )
    check_range(case, r, lambda P: gpc_latent(case.model, P)[:, None], warned)


def _gpc_certify(case):
    c, warned = _call(case.model.certify, case.X_test, case.gamma, **case.kwargs())
    check_gpc_certificate(case, c, warned)


@FAST
@given(gpr_cases())
def test_gpr_prediction_range_sound(case):
    _gpr_range(case)


@FAST
@given(gpr_cases())
def test_gpr_certify_sound(case):
    _gpr_certify(case)


@FAST
@given(gpc_cases())
def test_gpc_latent_range_sound(case):
    _gpc_range(case)


@FAST
@given(gpc_cases())
def test_gpc_certify_sound(case):
    _gpc_certify(case)


@pytest.mark.slow
@SLOW
@given(gpr_cases())
def test_gpr_prediction_range_sound_sweep(case):
    _gpr_range(case)


@pytest.mark.slow
@SLOW
@given(gpr_cases())
def test_gpr_certify_sound_sweep(case):
    _gpr_certify(case)


@pytest.mark.slow
@SLOW
@given(gpc_cases())
def test_gpc_latent_range_sound_sweep(case):
    _gpc_range(case)


@pytest.mark.slow
@SLOW
@given(gpc_cases())
def test_gpc_certify_sound_sweep(case):
    _gpc_certify(case)


# --------------------------------------------------------------------------
# The harness itself: the attack is strong and the checks can fail
# --------------------------------------------------------------------------


def _harness_models():
    rng = np.random.default_rng(9)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.3 * X[:, 1]
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

    reg = RobustGaussianProcessRegressor(kernel=Matern([0.6, 0.9], nu=2.5), alpha=1e-3, optimizer=None).fit(X, y)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(3.0) * RBF(0.6), optimizer=None).fit(X, y > 0)
    return reg, clf, X


def test_attack_matches_dense_grid():
    reg, _, X = _harness_models()
    for i, x in enumerate(X[:3]):
        lo, hi = x - 0.7, x + 0.7
        axes = [np.linspace(a, b, 301) for a, b in zip(lo, hi)]
        G = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=1)
        v = gpr_predict(reg, G)[:, 0]
        atk = attack(lambda P: gpr_predict(reg, P)[:, 0], lo, hi, np.random.default_rng(i))
        assert in_box(atk.argmin, lo, hi) and in_box(atk.argmax, lo, hi)
        assert atk.min <= v.min() + 1e-7 and atk.max >= v.max() - 1e-7
        assert atk.min == pytest.approx(gpr_predict(reg, atk.argmin)[0, 0], abs=TOL)


def test_checks_detect_unsound_results():
    """Results computed for a smaller box, checked as if they were for a
    larger one, are wrong (but internally consistent): the attack must catch
    them."""
    reg, clf, X = _harness_models()
    small, big = 0.05, 0.6

    # prediction_range
    r_small, w = _call(reg.prediction_range, X[:3], small, epsilon=1e-3, random_state=0)
    check_range(Case(reg, X[:3], small, None, None, None, None, 1e-3, 0), r_small, lambda P: gpr_predict(reg, P), w)
    with pytest.raises(AssertionError, match="min_lower|max_upper"):
        check_range(Case(reg, X[:3], big, None, None, None, None, 1e-3, 0), r_small, lambda P: gpr_predict(reg, P), w)

    # regressor certify: robust on the small box, not on the big one
    delta = 0.2
    c_small, w = _call(reg.certify, X[:3], small, delta=delta, random_state=0)
    c_big, _ = _call(reg.certify, X[:3], big, delta=delta, random_state=0)
    assert np.all(c_small.status == "robust") and np.all(c_big.status == "not_robust")
    check_gpr_certificate(Case(reg, X[:3], small, None, None, None, None, 1e-3, 0, delta=delta), c_small, w)
    with pytest.raises(AssertionError, match="exceeds the proven bound"):
        check_gpr_certificate(Case(reg, X[:3], big, None, None, None, None, 1e-3, 0, delta=delta), c_small, w)

    # classifier certify
    c_small, w = _call(clf.certify, X, small, random_state=0)
    c_big, _ = _call(clf.certify, X, big, random_state=0)
    rows = np.flatnonzero((c_small.status == "robust") & (c_big.status == "not_robust"))[:3]
    assert len(rows)
    sub = dataclasses.replace(
        c_small, **{f.name: getattr(c_small, f.name)[rows] for f in dataclasses.fields(c_small)}
    )
    check_gpc_certificate(Case(clf, X[rows], small, None, None, None, None, 1e-3, 0), sub, [])
    with pytest.raises(AssertionError, match="below the proven bound|certified robust"):
        check_gpc_certificate(Case(clf, X[rows], big, None, None, None, None, 1e-3, 0), sub, [])


# --------------------------------------------------------------------------
# Targeted cases
# --------------------------------------------------------------------------

def test_regressor_certify_never_reports_the_input_itself():
    from sklearn.gaussian_process.kernels import Matern

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 3))
    y = 10 * np.sin(X).sum(1)
    reg = RobustGaussianProcessRegressor(kernel=Matern(0.7, nu=1.5), alpha=1e-4, optimizer=None).fit(X, y)
    X_test = rng.uniform(-2, 2, (60, 3))
    c, _ = _call(reg.certify, X_test, 0.0, delta=0.0, random_state=0)
    # The box is the single point x*: its deviation is 0 <= delta. "unknown"
    # is acceptable (the rounding margin may prevent a proof), a counterexample is not.
    bad = np.flatnonzero(c.status == "not_robust")
    assert len(bad) == 0, (bad, c.counterexample[bad[:3]] - X_test[bad[:3]])
