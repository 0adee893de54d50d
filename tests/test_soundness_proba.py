"""Soundness of the variance-based results: predictive-std ranges, probability
ranges (binary and one-vs-rest), multi-class certificates, and the link and
variance bounds on their own. Same attack and margin as test_soundness.py."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.linalg import solve_triangular
from scipy.special import expit
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.kernels import make_adapter
from skgprobust._bounds._links import FiveErfLink, LogisticLink, ProbitLink, verify_five_erf_shape
from skgprobust._bounds._variance import LatentVariance

from ._helpers import (
    FAST,
    SLOW,
    SWEEP_EXAMPLES,
    BOUND_TOL,
    TOL,
    attack,
    box_points,
    budgets,
    contains_periodic,
    datasets,
    expected_box,
    fit_or_reject,
    gpc_predict,
    gpr_predict,
    in_box,
    kernels,
    perturbations,
)
from .test_soundness import Case, _call, check_certificate_common, check_range


def gpr_std(reg, P):
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, s = reg.predict(P, return_std=True)
    return np.asarray(s, dtype=np.float64).reshape(len(P), -1)


def gpc_proba(clf, P):
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    return clf.predict_proba(P)


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------


@st.composite
def std_cases(draw, max_iter_cap=None):
    n_targets = draw(st.sampled_from([1, 2]))
    data = draw(datasets(n_targets=n_targets))
    d = data.X.shape[1]
    kernel = draw(kernels(d))
    noise = draw(st.sampled_from([1e-4, 1e-2, 1e-1]))
    if contains_periodic(kernel) and d > 1:
        noise = max(noise, 1e-2)
    normalize_y = draw(st.booleans())
    reg = fit_or_reject(
        lambda a: RobustGaussianProcessRegressor(kernel=kernel, alpha=a, normalize_y=normalize_y, optimizer=None),
        data.X,
        data.y,
        noise,
    )
    gamma, features, domain = draw(perturbations(data.X_test))
    max_iter, time_limit = draw(budgets())
    if max_iter_cap is not None and time_limit is None:
        # Keeps the default run short; the slow sweep uses the full budget.
        max_iter = min(max_iter if max_iter is not None else max_iter_cap, max_iter_cap)
    return Case(reg, data.X_test, gamma, features, domain, max_iter, time_limit,
                draw(st.sampled_from([1e-1, 1e-2])), draw(st.integers(0, 2**31 - 1)))


@st.composite
def classifier_cases(draw, n_classes=2, multi_class="one_vs_rest", max_iter_cap=None):
    data = draw(datasets(classification=True))
    y = data.y
    if n_classes > 2:
        # Classes from the first feature's quantiles (all present).
        q = np.quantile(data.X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1])
        y = np.digitize(data.X[:, 0], q)
        if len(np.unique(y)) < n_classes:
            y[:n_classes] = np.arange(n_classes)
    d = data.X.shape[1]
    kernel = draw(kernels(d))
    clf = fit_or_reject(
        lambda a: RobustGaussianProcessClassifier(kernel=kernel, optimizer=None, multi_class=multi_class),
        data.X, y, None,
    )
    gamma, features, domain = draw(perturbations(data.X_test))
    max_iter, time_limit = draw(budgets())
    if max_iter_cap is not None and time_limit is None:
        # Keeps the default run short; the slow sweep uses the full budget.
        max_iter = min(max_iter if max_iter is not None else max_iter_cap, max_iter_cap)
    return Case(clf, data.X_test, gamma, features, domain, max_iter, time_limit,
                draw(st.sampled_from([1e-1, 1e-2])), draw(st.integers(0, 2**31 - 1)))


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def _std_range(case):
    r, warned = _call(case.model.prediction_range, case.X_test, case.gamma, epsilon=case.epsilon,
                      statistic="std", **case.kwargs())
    check_range(case, r, lambda P: gpr_std(case.model, P), warned)


def _proba_range(case):
    r, warned = _call(case.model.prediction_range, case.X_test, case.gamma, epsilon=case.epsilon, **case.kwargs())
    assert r.min_lower.shape[1] == len(case.model.classes_)
    check_range(case, r, lambda P: gpc_proba(case.model, P), warned, proba=True)


def _certify_multiclass(case, check_row=None):
    """certify's statuses against the model; ``check_row(clf, i, lo_i, hi_i,
    result, labels, rng)`` adds checks per row."""
    clf = case.model
    c, warned = _call(clf.certify, case.X_test, case.gamma, **case.kwargs())
    lo, hi = check_certificate_common(case, c, warned)
    labels = gpc_predict(clf, case.X_test)
    rng = np.random.default_rng(case.seed)
    for i in range(len(case.X_test)):
        if check_row is not None:
            check_row(clf, i, lo[i], hi[i], c, labels, rng)
        if c.status[i] == "not_robust":
            assert gpc_predict(clf, c.counterexample[i])[0] != labels[i]
        if c.status[i] == "robust":
            P = box_points(lo[i], hi[i], rng)
            changed = gpc_predict(clf, P) != labels[i]
            assert not changed.any(), f"row {i} certified robust, but predict({P[changed][0].tolist()}) changes"
            if hasattr(clf, "predict_proba"):
                # Local search on the margin between the label and the best other class.
                k = list(clf.classes_).index(labels[i])

                def margin(Q, k=k):
                    p = clf.base_estimator_.predict_proba(Q) if len(clf.classes_) > 2 else gpc_proba(clf, Q)
                    return p[:, k] - np.delete(p, k, axis=1).max(axis=1)

                atk = attack(margin, lo[i], hi[i], rng, n_samples=2000)
                assert atk.min > 0 or gpc_predict(clf, atk.argmin)[0] == labels[i]


# --------------------------------------------------------------------------
# Sweeps (fast in the default run, long under -m slow)
# --------------------------------------------------------------------------


@FAST
@given(std_cases(max_iter_cap=60))
def test_gpr_std_range_sound(case):
    _std_range(case)


@FAST
@given(classifier_cases(max_iter_cap=300))
def test_binary_proba_range_sound(case):
    _proba_range(case)


@settings(parent=FAST, max_examples=4)
@given(classifier_cases(n_classes=3, max_iter_cap=100))
def test_ovr_proba_range_sound(case):
    # Four examples: the attack itself (3 columns x 8 local searches of a
    # three-model predict_proba) dominates; the slow sweep runs more.
    _proba_range(case)


@FAST
@given(classifier_cases(n_classes=3, max_iter_cap=300))
def test_ovr_certify_sound(case):
    _certify_multiclass(case)


@FAST
@given(classifier_cases(n_classes=3, multi_class="one_vs_one"))
def test_ovo_certify_sound(case):
    _certify_multiclass(case)


@pytest.mark.slow
@SLOW
@given(std_cases())
def test_gpr_std_range_sound_sweep(case):
    _std_range(case)


@pytest.mark.slow
@SLOW
@given(classifier_cases())
def test_binary_proba_range_sound_sweep(case):
    _proba_range(case)


@pytest.mark.slow
@settings(parent=SLOW, max_examples=max(10, SWEEP_EXAMPLES // 4))
@given(classifier_cases(n_classes=3))
def test_ovr_proba_range_sound_sweep(case):
    _proba_range(case)


@pytest.mark.slow
@SLOW
@given(classifier_cases(n_classes=3))
def test_ovr_certify_sound_sweep(case):
    _certify_multiclass(case)


# --------------------------------------------------------------------------
# Variance bounds on their own
# --------------------------------------------------------------------------


@FAST
@given(data=datasets(), kernel_seed=st.integers(0, 10**6), classification=st.booleans(),
       half=st.sampled_from([0.0, 0.01, 0.1, 0.5]))
def test_variance_bounds_contain_sklearn_variance(data, kernel_seed, classification, half):
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor

    rng = np.random.default_rng(kernel_seed)
    d = data.X.shape[1]
    kernel = ConstantKernel(rng.uniform(0.3, 3)) * (RBF(rng.uniform(0.3, 2, d)) if rng.random() < 0.5
                                                    else Matern(rng.uniform(0.3, 2), nu=2.5))
    if classification:
        y = (data.y > np.median(data.y)).astype(int)
        y[:2] = [0, 1]
        base = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(data.X, y).base_estimator_
        lv = LatentVariance(make_adapter(base.kernel_, base.X_train_), base.L_, base.W_sr_)

        def var(P):
            return base.latent_mean_and_variance(P)[1]
    else:
        m = GaussianProcessRegressor(kernel=kernel, alpha=10 ** rng.uniform(-6, -1), optimizer=None).fit(data.X, data.y)
        lv = LatentVariance(make_adapter(m.kernel_, m.X_train_), m.L_)

        def var(P):
            V = solve_triangular(m.L_, m.kernel_(P, m.X_train_).T, lower=True)
            return m.kernel_.diag(P) - np.einsum("ji,ji->i", V, V)

    c = np.vstack([data.X_test, data.X[:2]])
    lo, hi = c - half, c + half
    vb = lv.bounds(lo, hi)
    for b in range(len(c)):
        P = box_points(lo[b], hi[b], rng, 3000)
        v = var(P)
        assert v.min() >= vb.lower[b] - BOUND_TOL and v.max() <= vb.upper[b] + BOUND_TOL
        assert in_box(vb.arg_min[b], lo[b], hi[b]) and in_box(vb.arg_max[b], lo[b], hi[b])


def test_variance_bounds_converge_as_boxes_shrink():
    from sklearn.gaussian_process import GaussianProcessRegressor

    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (40, 2))
    m = GaussianProcessRegressor(kernel=RBF([1.0, 0.7]), alpha=1e-6, optimizer=None).fit(X, np.sin(X).sum(1))
    lv = LatentVariance(make_adapter(m.kernel_, m.X_train_), m.L_)
    c = rng.uniform(-2, 2, (10, 2))
    gaps, excess = [], []
    for h in (0.1, 0.01, 0.001):
        vb = lv.bounds(c - h, c + h)
        # The true range over each box (dense sampling) is first order in h;
        # what the bounds add to it must vanish faster (second order).
        true = np.array([np.ptp(lv.value(ci - h + 2 * h * rng.random((2000, 2)))) for ci in c])
        gaps.append(np.median(vb.upper - vb.lower))
        excess.append(np.median(vb.upper - vb.lower - true))
    assert gaps[1] < gaps[0] / 5 and gaps[2] < gaps[1] / 5 and gaps[2] < 1e-4, gaps
    assert excess[1] < excess[0] / 20 and excess[2] < excess[1] / 20, (gaps, excess)


@pytest.mark.parametrize("case", ["noise_free_gpr", "gpc_large_amplitude"])
def test_spectral_split_used_only_where_it_pays_and_sound(case, monkeypatch):
    """The spectral split of the variance bound runs for nearly noise-free
    regressors (a decaying spectrum of S) and is skipped for a Laplace GPC
    with a large amplitude (a flat spectrum: 2m extra bounds per box for
    almost no gain); both paths contain sklearn's variance."""
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor

    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    if case == "noise_free_gpr":
        m = GaussianProcessRegressor(RBF([1.0, 1.5, 2.0]), alpha=1e-8, optimizer=None).fit(X, np.sin(X).sum(1))
        lv = LatentVariance(make_adapter(m.kernel_, m.X_train_), m.L_)

        def var(P):
            V = solve_triangular(m.L_, m.kernel_(P, m.X_train_).T, lower=True)
            return m.kernel_.diag(P) - np.einsum("ji,ji->i", V, V)

    else:
        y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(int)
        base = GaussianProcessClassifier(ConstantKernel(3000.0) * RBF(3.0), optimizer=None).fit(X, y).base_estimator_
        lv = LatentVariance(make_adapter(base.kernel_, base.X_train_), base.L_, base.W_sr_)
        # A budget of m = 10 < N directions: the remainder lam_10 is still near lam_max.
        monkeypatch.setattr("skgprobust._bounds._variance._SPECTRAL_BUDGET", 10 * 80 * 3)
        assert lv.lam[10] > 0.05 * lv.lam_max

        def var(P):
            return base.latent_mean_and_variance(P)[1]

    assert (lv._n_top(1, 3) > 0) == (case == "noise_free_gpr")
    c = rng.normal(size=(6, 3))
    for half in (0.05, 0.3):
        vb = lv.bounds(c - half, c + half)
        for b in range(len(c)):
            v = var(box_points(c[b] - half, c[b] + half, rng, 3000))
            assert v.min() >= vb.lower[b] - BOUND_TOL and v.max() <= vb.upper[b] + BOUND_TOL


# --------------------------------------------------------------------------
# Links
# --------------------------------------------------------------------------


def test_five_erf_shape_is_proved():
    grid_slack, tail_slack = verify_five_erf_shape()
    assert grid_slack > 0 and tail_slack > 0


def test_five_erf_matches_sklearn_predict_proba(fitted_clf):
    rng = np.random.default_rng(0)
    P = rng.uniform(-3, 3, (2000, 2))
    mu, v = fitted_clf.base_estimator_.latent_mean_and_variance(P)
    np.testing.assert_allclose(FiveErfLink().value(mu, v), fitted_clf.predict_proba(P)[:, 1], rtol=0, atol=1e-11)


@pytest.mark.parametrize("link", [FiveErfLink(), ProbitLink(), LogisticLink()], ids=["five_erf", "probit", "logistic"])
def test_link_ranges_contain_dense_grid(link):
    rng = np.random.default_rng(1)
    for _ in range(200):
        mu_lo = rng.uniform(-6, 6)
        mu_hi = mu_lo + rng.choice([0.0, 0.01, 1.0, 5.0])
        v_lo = rng.choice([0.0, 1e-3, 0.5, 20.0])
        v_hi = v_lo + rng.choice([0.0, 0.1, 10.0, 500.0])
        lo, hi = link.range(np.array([mu_lo]), np.array([mu_hi]), np.array([v_lo]), np.array([v_hi]))
        M, V = np.meshgrid(np.linspace(mu_lo, mu_hi, 41), np.linspace(v_lo, v_hi, 41))
        p = link.value(M.ravel(), V.ravel())
        assert p.min() >= lo[0] - 1e-12 and p.max() <= hi[0] + 1e-12


def test_logistic_link_matches_adaptive_quadrature():
    link = LogisticLink()
    for mu, v in [(0.3, 0.5), (3.0, 100.0), (-2.0, 1e-4), (1.0, 1e4), (-5.0, 3.9), (20.0, 50.0)]:
        exact = quad(lambda f: expit(f) * np.exp(-(f - mu) ** 2 / (2 * v)) / np.sqrt(2 * np.pi * v),
                     mu - 40 * np.sqrt(v), mu + 40 * np.sqrt(v), points=[0.0], limit=2000, epsabs=1e-15)[0]
        assert abs(link.value(np.array(mu), np.array(v)) - exact) < 1e-11


# --------------------------------------------------------------------------
# Convergence on 2-D problems
# --------------------------------------------------------------------------


def test_binary_proba_range_brackets_dense_grid():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3).astype(int)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF([1.0, 0.8]), optimizer=None).fit(X, y)
    X_test = rng.normal(size=(3, 2))
    eps, gamma = 0.01, 0.25
    r = clf.prediction_range(X_test, gamma, epsilon=eps, random_state=0)
    assert r.converged.all()
    lo, hi = expected_box(X_test, gamma)
    for i in range(len(X_test)):
        axes = [np.linspace(a, b, 201) for a, b in zip(lo[i], hi[i])]
        G = np.stack([m.ravel() for m in np.meshgrid(*axes)], axis=1)
        p = clf.predict_proba(G)
        assert np.all(r.min_lower[i] <= p.min(0) + BOUND_TOL) and np.all(r.max_upper[i] >= p.max(0) - BOUND_TOL)
        assert np.all(r.min_upper[i] - r.min_lower[i] <= eps) and np.all(r.max_upper[i] - r.max_lower[i] <= eps)


def test_std_range_brackets_dense_grid():
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, (30, 2))
    reg = RobustGaussianProcessRegressor(kernel=ConstantKernel(1.5) * RBF([1.0, 0.6]), alpha=1e-3,
                                         optimizer=None).fit(X, np.sin(X).sum(1))
    X_test = np.vstack([X[:1], rng.uniform(-2, 2, (2, 2))])
    eps, gamma = 0.01, 0.2
    r = reg.prediction_range(X_test, gamma, epsilon=eps, statistic="std", random_state=0)
    assert r.converged.all()
    lo, hi = expected_box(X_test, gamma)
    for i in range(len(X_test)):
        axes = [np.linspace(a, b, 201) for a, b in zip(lo[i], hi[i])]
        G = np.stack([m.ravel() for m in np.meshgrid(*axes)], axis=1)
        s = gpr_std(reg, G)[:, 0]
        assert r.min_lower[i, 0] <= s.min() + BOUND_TOL and r.max_upper[i, 0] >= s.max() - BOUND_TOL


@pytest.mark.parametrize("kernel", [RBF(1.0), ConstantKernel(1e4) * RBF(0.3)], ids=["rbf", "amp1e4"])
def test_variance_bounds_near_noise_free_regressor(kernel):
    # sklearn's default alpha=1e-10 makes lambda_max(S) ~ 1e10: forming
    # r^T S r with the explicit S once lost ~1e-6 absolute (20x the margin)
    # and gave variance bounds that excluded sklearn's own values.
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 0] ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel=kernel, optimizer=None, alpha=1e-10).fit(X, y)
        from skgprobust._engine._latent import from_regressor

        V = from_regressor(reg).variance()
        centres = np.vstack([X[:3], rng.uniform(-2, 2, (3, 1))])
        for h in (1e-1, 1e-3, 1e-5, 1e-7):
            vb = V.bounds(centres - h, centres + h)
            for b, c in enumerate(centres):
                P = c + np.linspace(-h, h, 2001)[:, None]
                _, s = GaussianProcessRegressor.predict(reg, P, return_std=True)
                var = s**2
                assert var.min() >= vb.lower[b], (h, b, var.min(), vb.lower[b])
                assert var.max() <= vb.upper[b], (h, b, var.max(), vb.upper[b])
                # point values are computed as sklearn computes them (the
                # same batch: with a different number of right-hand sides
                # the BLAS may block the solve differently, and at
                # amplitude 1e4 the cancellation turns that into 1e-4
                # relative, as measured on an AMD EPYC in session 25)
                _, s5 = GaussianProcessRegressor.predict(reg, P[:5], return_std=True)
                np.testing.assert_allclose(V.value(P[:5]), s5**2, rtol=1e-9, atol=1e-15)
        r = reg.prediction_range(centres, 1e-3, statistic="std", epsilon=1e-4, max_iter=200)
    for b, c in enumerate(centres):
        P = c + np.linspace(-1e-3, 1e-3, 4001)[:, None]
        _, s = GaussianProcessRegressor.predict(reg, P, return_std=True)
        assert s.min() >= r.min_lower[b, 0] - BOUND_TOL
        assert s.max() <= r.max_upper[b, 0] + BOUND_TOL


def _ovo_votes(clf, P):
    """sklearn's one-vs-one votes, from each pair's own predict (0 / 1)."""
    n = len(clf.classes_)
    votes, k = np.zeros((len(P), n), dtype=int), 0
    for i in range(n):
        for j in range(i + 1, n):
            won = clf.base_estimator_.estimators_[k].predict(P) == 1
            votes[:, j] += won
            votes[:, i] += ~won
            k += 1
    return votes


@pytest.mark.parametrize("est", ["laplace", "ep"])
def test_ovo_certify_proves_rows_whose_other_pairs_flip(est):
    """Audit (session 14): a pair of two losing classes that flips inside the
    box left the row 'unknown' (n_iter 0, the budget unused). The vote
    margin bound proves it; the proof holds at dense samples (the votes,
    sklearn's predict), and the bound is a lower bound of the sampled vote
    margin."""
    from skgprobust import EPGaussianProcessClassifier

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (60, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.7, 0.7])]
    Est = RobustGaussianProcessClassifier if est == "laplace" else EPGaussianProcessClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = Est(1.0 * RBF(1.0), multi_class="one_vs_one").fit(X, y)
    x, g = X[:1], 0.3
    c = clf.certify(x, g, time_limit=2, random_state=0)
    P = box_points(x[0] - g, x[0] + g, np.random.default_rng(0), 20000)
    votes = _ovo_votes(clf, P)
    # The audit's situation: the pair (a, c) flips inside the box.
    assert len(np.unique(clf.base_estimator_.estimators_[1].predict(P))) == 2
    assert c.status[0] == "robust" and c.bound[0] >= 1
    k = list(clf.classes_).index(clf.predict(x)[0])
    margin = votes[:, k] - np.delete(votes, k, axis=1).max(axis=1)
    assert margin.min() >= c.bound[0]
    assert np.all(clf.predict(P) == clf.predict(x)[0])


@FAST
@given(classifier_cases(n_classes=4, multi_class="one_vs_one", max_iter_cap=60))
def test_ovo_vote_bound_is_a_lower_bound_of_the_vote_margin(case):
    """Four classes (six pairs): on every exit the returned bound is below the
    vote margin at sampled points of the box, and robust rows have bound >= 1
    (plus _certify_multiclass's checks of statuses and counterexamples)."""

    def check_vote_bound(clf, i, lo, hi, c, labels, rng):
        votes = _ovo_votes(clf, box_points(lo, hi, rng, 500))
        k = list(clf.classes_).index(labels[i])
        margin = votes[:, k] - np.delete(votes, k, axis=1).max(axis=1)
        assert margin.min() >= c.bound[i], (i, c.status[i], c.bound[i], margin.min())
        assert c.status[i] != "robust" or c.bound[i] >= 1

    _certify_multiclass(case, check_vote_bound)


def test_ovo_robust_needs_finite_confidences():
    """Hunt (session 14): amplitude 1.1e16 with 25 inputs at x = 0. sklearn's
    five-erf predict_proba is NaN there (computed variance exactly 0), the
    one-vs-one confidences are NaN and argmax returns class 0 although the
    votes (proven on the box) give class 2 a lead of one vote. The row is no
    longer 'robust'; the vote bound itself still holds."""
    X = np.array([0.0] * 25 + [-0.9961462052156516, -0.7257822277274328, 0.5279206179115843,
                               -1.2592838181780253, -0.9445168083494382, -3.026722074500183])[:, None]
    y = np.array([0] * 6 + [1] * 8 + [2] * 11 + [2, 2, 1, 0, 0, 1])
    clf = RobustGaussianProcessClassifier(
        ConstantKernel(1.1171067227298678e16) * RBF(1.0), optimizer=None, multi_class="one_vs_one"
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(clf.base_estimator_.estimators_[0].predict_proba(np.zeros((1, 1)))).any()
        res = clf.certify(np.array([[0.001]]), 0.002, max_iter=300, random_state=0)
    # Whether the decision at x = 0 (NaN confidences: argmax 0) differs from
    # the votes' winner nearby depends on the BLAS's rounding at amplitude
    # 1e16 (it did on the machine of session 14, not on the AMD EPYC of
    # session 25); the row must not be 'robust' either way, as the
    # confidences can be NaN in the box.
    assert res.status[0] != "robust" and res.bound[0] == 1.0


@pytest.mark.parametrize("kind", ["classifier", "regressor", "large_amplitude"])
def test_variance_floor_is_below_the_model_variance(kind):
    """LatentVariance.floor (the cheap check behind probabilities_finite) is
    below the variance the model computes at sampled points of every box,
    zero-width boxes and a training input included, also where rounding
    dominates (amplitude 1e15, duplicated inputs); for an ordinary
    classifier it is positive (so the check costs no full bound)."""
    from skgprobust._engine._common import bound_model_of

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 2))
    if kind == "regressor":
        model = RobustGaussianProcessRegressor(ConstantKernel(3.0) * RBF(0.7), alpha=1e-6, optimizer=None)
        model.fit(X, np.sin(X[:, 0]))

        def computed_var(P):
            return gpr_std(model, P)[:, 0] ** 2
    else:
        amp = 1e15 if kind == "large_amplitude" else 2.0
        Xc = np.vstack([X, np.zeros((10, 2))]) if kind == "large_amplitude" else X
        yc = (Xc[:, 0] + 0.3 * Xc[:, 1] > 0).astype(int)
        if kind == "large_amplitude":
            yc[-10:] = np.arange(10) % 2
        model = RobustGaussianProcessClassifier(ConstantKernel(amp) * RBF(1.0), optimizer=None).fit(Xc, yc)

        def computed_var(P):
            return model.base_estimator_.latent_mean_and_variance(P)[1]

    bm = bound_model_of(model)
    var = bm.variances()[0]
    s2 = float(np.asarray(bm.latents[0].scale)[0] ** 2)
    for h in (0.0, 1e-3, 0.3, 1.5):
        centres = np.vstack([X[:4], np.zeros((1, 2)), rng.uniform(-2, 2, (3, 2))])
        lo, hi = centres - h, centres + h
        fl = var.floor(lo, hi) * s2
        for b in range(len(centres)):
            P = box_points(lo[b], hi[b], rng, 400)
            assert np.all(computed_var(P) >= fl[b]), (kind, h, b, fl[b], computed_var(P).min())
        if kind == "classifier":
            assert np.all(fl > 0)


def _rq_1e12_ovr():
    """Three-class one-vs-rest GPC, amplitude 1e12 RationalQuadratic (fixed),
    50 points in 1-D: whole-box variance lower bounds far below 0 while the
    latent variance is >= 1e5 (the finiteness check must split)."""
    from sklearn.gaussian_process.kernels import RationalQuadratic

    X = np.random.default_rng(0).uniform(-2, 2, (50, 1))
    y = np.digitize(X[:, 0], np.linspace(-2, 2, 4)[1:-1])
    return RobustGaussianProcessClassifier(
        ConstantKernel(1e12, "fixed") * RationalQuadratic(1.0, 1.0, "fixed", "fixed"), optimizer=None
    ).fit(X, y)


def test_finiteness_check_refines_the_variance_bound():
    """Completeness hunt (session 14): amplitude 1e12 (RQ, fixed), one-vs-rest,
    1-D: the whole-box variance lower bound is far below 0 while the latent
    variance is >= 1e5 on the box; the finiteness check splits the box (up
    to 64 pieces) instead of giving up, so rows with a constant label are
    proven again. Soundness: robust rows keep predict at dense samples."""
    rng = np.random.default_rng(0)
    clf = _rq_1e12_ovr()
    bm = clf._bound_model()
    rows = np.random.default_rng(1).uniform(-1.5, 1.5, (3, 1))
    proven = 0
    for x0 in rows:
        for g in (0.05, 0.3):
            res = clf.certify(x0[None], g, time_limit=5, random_state=0)
            P = box_points(x0 - g, x0 + g, rng, 2000)
            if res.status[0] == "robust":
                proven += 1
                assert np.all(clf.predict(P) == clf.predict(x0[None])[0])
                assert bm.probabilities_finite(x0 - g, x0 + g)
    assert proven >= 5


def test_finiteness_check_of_a_batch_is_that_of_each_box():
    """``BoundModel.probabilities_finite_boxes`` (batches of up to
    ``_FINITE_CHUNK`` boxes per round, used for the NaN flags of
    prediction_range and explain): on this model (no borderline box) each
    box gets the answer it gets alone: boxes decided by the cheap floor,
    boxes proven only after splits (amplitude 1e12 RQ: the whole-box bound
    is far below 0), zero-width boxes and wide boxes that are not proven, in
    one batch and across chunks; a passed deadline gives up only where a
    split is needed; every True is finite at sampled points."""
    rng = np.random.default_rng(0)
    clf = _rq_1e12_ovr()
    bm = clf._bound_model()
    c = np.random.default_rng(1).uniform(-1.5, 1.5, (6, 1))
    h = np.array([0.0, 0.05, 0.3, 1e-3, 3.0, 0.05])[:, None]
    lo, hi = c - h, c + h
    single = np.array([bm.probabilities_finite(lo[i], hi[i]) for i in range(len(c))])
    batch = bm.probabilities_finite_boxes(lo, hi)
    # (equal here: no box of this model is borderline; the variance bound's
    # few per-batch choices could otherwise give another sound answer)
    assert batch.dtype == bool and batch.shape == (6,)
    np.testing.assert_array_equal(batch, single)
    assert single.any() and not single.all()
    # the splits were needed somewhere: the whole-box floor alone fails there
    var, s2 = bm.variances()[0], float(np.max(np.asarray(bm.latents[0].scale) ** 2))
    assert np.any(single & ~(var.bounds(lo, hi).lower * s2 > bm.link.finite_variance_floor))
    # a passed deadline: every box that needs a split is False, the others keep their answer
    done = bm.probabilities_finite_boxes(lo, hi, deadline=0.0)
    alone = np.array([bm.probabilities_finite(lo[i], hi[i], deadline=0.0) for i in range(len(c))])
    np.testing.assert_array_equal(done, alone)
    assert np.all(done <= single)
    # more boxes than one chunk: the same answers, in order
    from skgprobust._engine._latent import _FINITE_CHUNK

    many_lo, many_hi = np.tile(lo, (3, 1)), np.tile(hi, (3, 1))
    assert len(many_lo) > _FINITE_CHUNK
    np.testing.assert_array_equal(bm.probabilities_finite_boxes(many_lo, many_hi), np.tile(batch, 3))
    # every box proven finite is finite at sampled points
    for i in np.flatnonzero(batch):
        P = box_points(lo[i], hi[i], rng, 500)
        assert np.isfinite(clf.predict_proba(P)).all()
