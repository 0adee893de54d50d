"""MultiOutputGaussianProcessRegressor (LMC, issue 14): the posterior against
a dense computation of the seed's Eqs. 3-6, independent GPs for W = I, the
likelihood gradient, sklearn conventions, bad input, and the soundness of
its certified bounds (attacks, counterexamples, a slow hypothesis sweep).

Reference numbers are built here from the fitted hyperparameters
(``kernels_``, ``W_``, ``noise_level_``) with plain numpy, never from the
estimator's internals.
"""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.linalg import inv
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, RationalQuadratic, WhiteKernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from skgprobust import BudgetExhaustedWarning
from skgprobust._multioutput import MultiOutputGaussianProcessRegressor as MO

from ._helpers import FAST, SLOW, TOL, attack, in_box, stationary_kernels


def _data(seed=0, n=24, d=2, P=3, frac=0.35):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    G = np.column_stack([np.sin(2 * X[:, 0]), np.cos(X.sum(1)), X[:, -1] ** 2 / 4])
    A = rng.normal(size=(P, 3))
    Y = G @ A.T + 0.05 * rng.normal(size=(n, P))
    Y[rng.random((n, P)) < frac] = np.nan
    for p in range(P):  # every output observed somewhere
        Y[p, p] = (G[p] @ A[p]).item()
    return X, Y


@pytest.fixture(scope="module")
def fitted():
    X, Y = _data()
    mo = MO(kernels=[Matern([1.0, 1.5], nu=2.5), RBF(1.0) + WhiteKernel(0.01)], normalize_y=True).fit(X, Y)
    return mo, X, Y


def _dense(mo, Xq):
    """The seed's Eqs. 5-6 (and 4 for the P x P covariance): Omega over the
    observed pairs built from the fitted hyperparameters, dense inverse."""
    X, Y = mo.X_train_, mo.Y_train_
    P = Y.shape[1]
    s, m = np.ones(P), np.zeros(P)
    if mo.normalize_y:
        m = np.array([np.nanmean(Y[:, p]) for p in range(P)])
        s = np.array([np.nanstd(Y[:, p]) for p in range(P)])
    pairs = [(n, p) for p in range(P) for n in range(len(X)) if not np.isnan(Y[n, p])]
    rows = np.array([n for n, _ in pairs])
    outs = np.array([p for _, p in pairs])
    W, ks = mo.W_, mo.kernels_
    Om = sum(np.outer(W[outs, l], W[outs, l]) * k(X)[np.ix_(rows, rows)] for l, k in enumerate(ks))
    Om_hat = Om + np.diag(mo.noise_level_[outs] + mo.alpha)
    y = (Y[rows, outs] - m[outs]) / s[outs]
    Ki = inv(Om_hat)
    mean, cov = [], []
    for x in Xq:
        # Omega_{N*}: (N, P), column p = k_{p o_i}(x, x_{n_i})
        ON = np.column_stack([
            sum(W[p, l] * W[outs, l] * k(x[None], X)[0, rows] for l, k in enumerate(ks)) for p in range(P)
        ])
        Oss = sum(np.outer(W[:, l], W[:, l]) * k.diag(x[None])[0] for l, k in enumerate(ks))
        mean.append(m + s * (ON.T @ Ki @ y))
        cov.append(np.outer(s, s) * (Oss - ON.T @ Ki @ ON))
    return np.array(mean), np.array(cov)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


def test_posterior_matches_dense_partially_observed(fitted):
    mo, X, _ = fitted
    assert np.isnan(mo.Y_train_).any()
    Xq = np.vstack([X[:3], np.random.default_rng(3).uniform(-2.5, 2.5, (4, 2))])
    mean, cov = _dense(mo, Xq)
    m1, std = mo.predict(Xq, return_std=True)
    m2, c = mo.predict(Xq, return_cov=True)
    np.testing.assert_allclose(m1, mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_allclose(c, cov, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(std, np.sqrt(np.einsum("npp->np", cov)), rtol=1e-6, atol=1e-8)
    assert c.shape == (len(Xq), 3, 3) and np.allclose(c, np.transpose(c, (0, 2, 1)))
    assert np.all(np.linalg.eigvalsh(c) > -1e-10)


def test_posterior_matches_dense_fully_observed():
    X, Y = _data(seed=2, frac=0.0)
    assert not np.isnan(Y).any()
    mo = MO(kernel=ConstantKernel(1.0) * RBF(1.0), n_latent=2, optimizer=None, noise_level=0.05).fit(X, Y)
    Xq = np.random.default_rng(1).uniform(-2, 2, (5, 2))
    mean, cov = _dense(mo, Xq)
    m, c = mo.predict(Xq, return_cov=True)
    np.testing.assert_allclose(m, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(c, cov, rtol=1e-7, atol=1e-10)
    # Fully observed: Omega_NN + diag(sigma^2) (x) I_N in the seed's (output-major) order.
    assert np.array_equal(mo.observed_[1], np.repeat(np.arange(3), len(X)))


def test_identity_equals_independent_sklearn_gprs():
    X, Y = _data(seed=4)
    mo = MO(kernel=ConstantKernel(1.0) * RBF(1.0), W="identity", normalize_y=True).fit(X, Y)
    assert np.array_equal(mo.W_, np.eye(3))
    Xq = np.random.default_rng(0).uniform(-2, 2, (6, 2))
    mean, std = mo.predict(Xq, return_std=True)
    total = 0.0
    for p in range(3):
        ok = ~np.isnan(Y[:, p])
        gpr = GaussianProcessRegressor(
            kernel=mo.kernels_[p], alpha=mo.noise_level_[p] + mo.alpha, optimizer=None, normalize_y=True
        ).fit(X[ok], Y[ok, p])
        mu, sd = gpr.predict(Xq, return_std=True)
        np.testing.assert_allclose(mean[:, p], mu, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(std[:, p], sd, rtol=1e-8, atol=1e-10)
        total += gpr.log_marginal_likelihood_value_
    # The LMC likelihood with W = I is the sum of the independent ones.
    assert mo.log_marginal_likelihood_value_ == pytest.approx(total, rel=1e-9)
    # ... so the joint optimum is each output's own: sklearn cannot improve any.
    for p in range(3):
        ok = ~np.isnan(Y[:, p])
        gpr = GaussianProcessRegressor(kernel=mo.kernels_[p] + WhiteKernel(mo.noise_level_[p]), normalize_y=True)
        gpr.fit(X[ok], Y[ok, p])
        fixed = GaussianProcessRegressor(
            kernel=mo.kernels_[p] + WhiteKernel(mo.noise_level_[p]), normalize_y=True, optimizer=None
        ).fit(X[ok], Y[ok, p])
        assert gpr.log_marginal_likelihood_value_ <= fixed.log_marginal_likelihood_value_ + 1e-3


def test_one_dimensional_y_is_a_single_gp():
    X, Y = _data(seed=5)
    y = Y[:, 0]
    mo = MO(kernel=RBF(0.8), optimizer=None, noise_level=0.1, W=[[1.0]]).fit(X, y)
    ok = ~np.isnan(y)
    gpr = GaussianProcessRegressor(kernel=RBF(0.8), alpha=0.1 + 1e-10, optimizer=None).fit(X[ok], y[ok])
    m, s = mo.predict(X[:5], return_std=True)
    assert m.shape == (5,) and s.shape == (5,)
    mu, sd = gpr.predict(X[:5], return_std=True)
    np.testing.assert_allclose(m, mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s, sd, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize(
    "params",
    [
        dict(kernels=[Matern([0.7, 1.3], nu=1.5), ConstantKernel(0.5) * RBF(2.0) + WhiteKernel(0.05)], normalize_y=True),
        dict(kernel=RationalQuadratic(1.0, 1.0), n_latent=4),
        dict(kernel=RBF([1.0, 1.0]), n_latent=1, W_bounds="fixed"),
        dict(kernel=RBF(1.0), n_latent=2, noise_level_bounds="fixed"),
        dict(kernel=ConstantKernel(1.0) * Matern(1.0, nu=1.5) + WhiteKernel(0.1), single=True),
    ],
)
def test_gradient_matches_finite_differences(params):
    X, Y = _data(seed=6, n=15)
    params = dict(params)
    if params.pop("single", False):  # one output, every row observed: no row selection
        Y = np.where(np.isnan(Y[:, 0]), 0.3, Y[:, 0])
    mo = MO(optimizer=None, **params).fit(X, Y)
    rng = np.random.default_rng(0)
    theta0 = mo.theta_
    for _ in range(2):
        theta = theta0 + 0.3 * rng.normal(size=theta0.shape)
        value, grad = mo.log_marginal_likelihood(theta, eval_gradient=True)
        assert value == pytest.approx(mo.log_marginal_likelihood(theta), rel=1e-12)
        eps = 1e-6
        fd = np.array([
            (mo.log_marginal_likelihood(theta + eps * e) - mo.log_marginal_likelihood(theta - eps * e)) / (2 * eps)
            for e in np.eye(len(theta))
        ])
        np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(fd).max()))


def test_optimizer_improves_likelihood_and_restarts_are_deterministic():
    X, Y = _data(seed=7)
    base = MO(kernel=RBF(1.0), n_latent=2, optimizer=None).fit(X, Y)
    opt = MO(kernel=RBF(1.0), n_latent=2).fit(X, Y)
    assert opt.log_marginal_likelihood_value_ > base.log_marginal_likelihood_value_
    a = MO(kernel=RBF(1.0, (1e-2, 1e2)), n_latent=2, n_restarts_optimizer=2, random_state=3).fit(X, Y)
    b = MO(kernel=RBF(1.0, (1e-2, 1e2)), n_latent=2, n_restarts_optimizer=2, random_state=3).fit(X, Y)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert a.log_marginal_likelihood_value_ >= opt.log_marginal_likelihood_value_ - 1e-6
    # warm_start: a refit starts from the fitted parameters (and does not get worse).
    w = MO(kernel=RBF(1.0), n_latent=2, warm_start=True).fit(X, Y)
    lml = w.log_marginal_likelihood_value_
    w.fit(X, Y)
    assert w.log_marginal_likelihood_value_ >= lml - 1e-8


def test_score_ignores_unobserved_entries(fitted):
    from sklearn.metrics import r2_score

    mo, X, Y = fitted
    pred = mo.predict(X)
    expected = np.mean([r2_score(Y[~np.isnan(Y[:, p]), p], pred[~np.isnan(Y[:, p]), p]) for p in range(3)])
    assert mo.score(X, Y) == pytest.approx(expected, rel=1e-12)
    full = np.where(np.isnan(Y), pred, Y)
    assert mo.score(X, full) == pytest.approx(r2_score(full, pred), rel=1e-12)


def test_custom_optimizer_callable():
    X, Y = _data(seed=8)
    calls = []

    def optimizer(obj_func, initial_theta, bounds):
        calls.append(len(initial_theta))
        value, grad = obj_func(initial_theta)
        assert grad.shape == initial_theta.shape and bounds.shape == (len(initial_theta), 2)
        return initial_theta, value

    mo = MO(kernel=RBF(1.0), n_latent=2, optimizer=optimizer).fit(X, Y)
    assert calls == [1 + 1 + 3 * 2 + 3]
    np.testing.assert_array_equal(mo.W_, MO(kernel=RBF(1.0), n_latent=2, optimizer=None).fit(X, Y).W_)


# ---------------------------------------------------------------------------
# sklearn conventions and bad input
# ---------------------------------------------------------------------------


@parametrize_with_checks([MO()])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_pickle_and_pandas(fitted):
    pd = pytest.importorskip("pandas")
    mo, X, Y = fitted
    clone = pickle.loads(pickle.dumps(mo))
    np.testing.assert_array_equal(clone.predict(X[:4], return_std=True)[1], mo.predict(X[:4], return_std=True)[1])
    mo.prediction_range(X[:1], 0.05, max_iter=5)  # builds the bound model...
    again = pickle.loads(pickle.dumps(mo))  # ...which is not pickled
    assert "_skgp_bound_model" not in again.__dict__
    Xd = pd.DataFrame(X, columns=["a", "b"])
    Yd = pd.DataFrame(Y, columns=["u", "v", "w"])
    mp = MO(kernel=RBF(1.0), n_latent=2).fit(Xd, Yd)
    assert list(mp.feature_names_in_) == ["a", "b"]
    np.testing.assert_allclose(mp.predict(Xd.iloc[:3]), MO(kernel=RBF(1.0), n_latent=2).fit(X, Y).predict(X[:3]))
    r = mp.prediction_range(Xd.iloc[:2], 0.1, features=["a"], epsilon=0.05)
    assert np.all(r.argmin[:, :, 1] == X[:2, 1, None])  # "b" stays fixed


def test_n_jobs_and_random_state_do_not_change_results(fitted):
    from joblib import parallel_backend

    mo, X, _ = fitted
    # What process workers receive: the objectives, pickled.
    objectives = mo._range_problem("std").objectives() + mo._range_problem("mean").objectives()
    lo, hi = X[:2] - 0.2, X[:2] + 0.2
    for f, g in zip(objectives, pickle.loads(pickle.dumps(objectives))):
        np.testing.assert_array_equal(f.bound(lo, hi).lower, g.bound(lo, hi).lower)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        a = mo.prediction_range(X[:3], 0.2, statistic="std", max_iter=10, random_state=1)
        c = mo.certify(X[:3], 0.2, delta=0.2, norm=2, max_iter=10, random_state=1)
        # Threads: the same chunking and per-row seeds as processes, without the start-up cost.
        with parallel_backend("threading"):
            b = mo.prediction_range(X[:3], 0.2, statistic="std", max_iter=10, random_state=1, n_jobs=2)
            e = mo.certify(X[:3], 0.2, delta=0.2, norm=2, max_iter=10, random_state=1, n_jobs=2)
    for name in ("min_lower", "min_upper", "max_lower", "max_upper", "argmin", "argmax"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(c.status, e.status)
    np.testing.assert_array_equal(c.bound, e.bound)


def test_bad_input():
    X, Y = _data(seed=9)
    bad = Y.copy()
    bad[:, 1] = np.nan
    with pytest.raises(ValueError, match=r"output column\(s\) \[1\]"):
        MO().fit(X, bad)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        MO().fit(X[:-1], Y)
    with pytest.raises(ValueError, match="infinity"):
        MO().fit(X, np.where(np.isnan(Y), np.inf, Y))
    with pytest.raises(ValueError, match="dim 3"):
        MO().fit(X, Y[:, :, None])
    with pytest.raises(ValueError, match="shape"):
        MO(W=np.ones((2, 2)), n_latent=2).fit(X, Y)
    with pytest.raises(ValueError, match="n_latent"):
        MO(kernels=[RBF()] * 2, n_latent=3).fit(X, Y)
    with pytest.raises(ValueError, match="either kernel"):
        MO(kernel=RBF(), kernels=[RBF()]).fit(X, Y)
    with pytest.raises(ValueError, match="identity"):
        MO(W="identity", n_latent=2).fit(X, Y)
    with pytest.raises(ValueError, match="noise_level_bounds"):
        MO(noise_level_bounds=(0.0, 1.0)).fit(X, Y)
    with pytest.raises(ValueError, match="requires y"):
        MO().fit(X, None)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MO().fit(Xn, Y)
    mo = MO(kernel=RBF(1.0), optimizer=None).fit(X, Y)
    with pytest.raises(ValueError, match="NaN"):
        mo.predict(Xn)
    with pytest.raises(ValueError, match="features"):
        mo.predict(X[:, :1])
    with pytest.raises(RuntimeError, match="At most one"):
        mo.predict(X, return_std=True, return_cov=True)
    with pytest.raises(ValueError, match="statistic"):
        mo.prediction_range(X[:1], 0.1, statistic="var")
    with pytest.raises(ValueError, match="delta"):
        mo.certify(X[:1], 0.1)
    with pytest.raises(ValueError, match="delta"):
        mo.certify(X[:1], 0.1, delta=-1.0)
    with pytest.raises(ValueError, match="norm"):
        mo.certify(X[:1], 0.1, delta=1.0, norm=3)
    for call in (lambda m: m.predict(X), lambda m: m.prediction_range(X[:1], 0.1), lambda m: m.certify(X[:1], 0.1, delta=1)):
        with pytest.raises(NotFittedError):
            call(MO())


# ---------------------------------------------------------------------------
# Certified bounds
# ---------------------------------------------------------------------------


def test_bound_model_reproduces_predict(fitted):
    """The protocol's formulas (one latent model per output) give predict's numbers."""
    mo, X, _ = fitted
    bm = mo._bound_model()
    Xq = np.random.default_rng(2).uniform(-2, 2, (6, 2))
    mean, std = mo.predict(Xq, return_std=True)
    for p, (lat, var) in enumerate(zip(bm.latents, bm.variances())):
        np.testing.assert_allclose(lat.mean(Xq)[:, 0], mean[:, p], rtol=1e-12, atol=1e-12)
        v = lat.scale[0] ** 2 * var.value(Xq)
        np.testing.assert_allclose(np.sqrt(np.maximum(v, 0)), std[:, p], rtol=1e-10, atol=1e-12)
    # The factor's precomputations are shared between the outputs.
    vs = bm.variances()
    assert all(v.S is vs[0].S for v in vs)


def _fn(mo, p, statistic):
    if statistic == "mean":
        return lambda P: mo.predict(P)[:, p]
    return lambda P: mo.predict(P, return_std=True)[1][:, p]


@pytest.mark.parametrize("statistic", ["mean", "std"])
def test_ranges_bracket_the_attack(fitted, statistic):
    mo, X, _ = fitted
    rng = np.random.default_rng(11)
    Xt = np.vstack([X[:1], rng.uniform(-2, 2, (1, 2))])
    gamma = 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = mo.prediction_range(Xt, gamma, statistic=statistic, epsilon=0.02, max_iter=150, random_state=0)
    assert r.min_lower.shape == (2, 3)
    for i in range(2):
        for p in range(3):
            a = attack(_fn(mo, p, statistic), Xt[i] - gamma, Xt[i] + gamma, rng, n_samples=2000, n_starts=2)
            assert r.min_lower[i, p] <= a.min + TOL, (i, p)
            assert r.max_upper[i, p] >= a.max - TOL, (i, p)
            assert r.min_lower[i, p] <= r.min_upper[i, p] and r.max_lower[i, p] <= r.max_upper[i, p]
            # The inner ends are the model's own values at points of the box.
            assert in_box(r.argmin[i, p], Xt[i] - gamma, Xt[i] + gamma)
            assert r.min_upper[i, p] == pytest.approx(_fn(mo, p, statistic)(r.argmin[i, p][None])[0], abs=TOL)


def test_certify_survives_attack_and_counterexamples_are_real(fitted):
    mo, X, _ = fitted
    rng = np.random.default_rng(12)
    Xt = np.vstack([X[:2], rng.uniform(-2, 2, (2, 2))])
    gamma = 0.1
    centers = mo.predict(Xt)
    for norm, delta in [(np.inf, 0.25), (2, 0.3), (1, 0.05)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetExhaustedWarning)
            res = mo.certify(Xt, gamma, delta=delta, norm=norm, max_iter=200, random_state=0)
        assert set(res.status) <= {"robust", "not_robust", "unknown"}
        for i, status in enumerate(res.status):
            dev = lambda P, i=i: np.linalg.norm(mo.predict(P) - centers[i], ord=norm, axis=1)  # noqa: E731
            if status == "robust":
                a = attack(dev, Xt[i] - gamma, Xt[i] + gamma, rng, n_samples=2000, n_starts=2)
                assert a.max <= delta + TOL and a.max <= res.bound[i] + TOL
            elif status == "not_robust":
                cex = res.counterexample[i]
                assert in_box(cex, Xt[i] - gamma, Xt[i] + gamma)
                assert dev(cex[None])[0] > delta
    assert (res.status == "not_robust").any()  # delta = 0.05 under norm 1 is violated somewhere


def test_explain_brackets_the_slope(fitted):
    mo, X, _ = fitted
    g, h = 0.05, 1e-5
    e = mo.explain(X[:2], g, target=2, epsilon=1e-3)
    assert e.values.shape == (2, 2) and np.all(e.target == 2)
    for i in range(2):
        for j in range(2):
            step = np.zeros(2)
            step[j] = h
            slope = (mo.predict((X[i] + step)[None])[0, 2] - mo.predict((X[i] - step)[None])[0, 2]) / (2 * h)
            assert e.lower[i, j] - 1e-9 <= e.values[i, j] <= e.upper[i, j] + 1e-9
            assert e.values[i, j] == pytest.approx(2 * g * slope, abs=0.05 * abs(2 * g * slope) + 1e-3)


def test_unsupported_latent_kernel_is_refused_by_name():
    from skgprobust.exceptions import UnsupportedKernelError

    X, Y = _data(seed=14)
    mo = MO(kernels=[RBF(1.0), Matern(1.0, nu=0.7)], optimizer=None).fit(X, Y)
    mo.predict(X[:2], return_std=True)  # predicting is fine
    with pytest.raises(UnsupportedKernelError, match="nu=0.7"):
        mo.prediction_range(X[:1], 0.1)


def test_zero_budget_still_sound(fitted):
    mo, X, _ = fitted
    rng = np.random.default_rng(13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = mo.prediction_range(X[:1], 0.3, statistic="std", max_iter=0)
        c = mo.certify(X[:1], 0.3, delta=10.0, time_limit=1e-4)
    for p in range(3):
        a = attack(_fn(mo, p, "std"), X[0] - 0.3, X[0] + 0.3, rng, n_samples=1000, n_starts=1)
        assert r.min_lower[0, p] <= a.min + TOL and r.max_upper[0, p] >= a.max - TOL
    assert c.status[0] in ("robust", "unknown")


# ---------------------------------------------------------------------------
# Hypothesis sweeps: random LMCs, partial observations, boxes
# ---------------------------------------------------------------------------


@st.composite
def _lmc_cases(draw):
    d = draw(st.integers(1, 2))
    P = draw(st.integers(1, 3))
    L = draw(st.integers(1, 3))
    kernels = [draw(stationary_kernels(d)) for _ in range(L)]
    if draw(st.booleans()):
        kernels[0] = kernels[0] + WhiteKernel(draw(st.sampled_from([1e-3, 0.1])))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(3, 30))
    X = rng.uniform(-2, 2, (n, d))
    W = rng.normal(size=(P, L)) * draw(st.sampled_from([0.3, 1.0, 3.0]))
    Y = np.sin(X @ rng.normal(size=(d, P)) + rng.uniform(0, 6, P)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    Y = Y + draw(st.sampled_from([0.0, 5.0]))
    Y[rng.random((n, P)) < draw(st.sampled_from([0.0, 0.3, 0.6]))] = np.nan
    for p in range(P):
        Y[p % n, p] = 1.0 if np.isnan(Y[p % n, p]) else Y[p % n, p]
    noise = draw(st.sampled_from([1e-4, 1e-2, 0.3]))
    x0 = rng.uniform(-2.3, 2.3, (1, d))
    offset = draw(st.sampled_from([0.0, 0.0, 1e4]))  # large feature offsets: input rounding
    X, x0 = X + offset, x0 + offset
    gamma = draw(st.sampled_from([0.01, 0.1, 0.4]))
    normalize = draw(st.booleans())
    return kernels, W, noise, normalize, X, Y, x0, gamma, seed


def _check_case(case, statistic, max_iter, n_samples=500):
    kernels, W, noise, normalize, X, Y, x0, gamma, seed = case
    mo = MO(kernels=kernels, W=W, noise_level=noise, optimizer=None, normalize_y=normalize).fit(X, Y)
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mo.prediction_range(x0, gamma, statistic=statistic, epsilon=1e-3, max_iter=max_iter, random_state=0)
    for p in range(Y.shape[1]):
        a = attack(_fn(mo, p, statistic), x0[0] - gamma, x0[0] + gamma, rng, n_samples=n_samples, n_starts=2)
        mag = 1.0 + np.abs(a.min) + np.abs(a.max)
        assert r.min_lower[0, p] <= a.min + TOL * mag
        assert r.max_upper[0, p] >= a.max - TOL * mag
    if statistic == "mean":
        center = mo.predict(x0)[0]
        delta = float(np.abs(r.max_upper[0] - r.min_lower[0]).max()) * 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = mo.certify(x0, gamma, delta=delta, max_iter=max_iter, random_state=0)
        dev = lambda P: np.abs(mo.predict(P) - center).max(axis=1)  # noqa: E731
        if c.status[0] == "robust":
            a = attack(dev, x0[0] - gamma, x0[0] + gamma, rng, n_samples=n_samples, n_starts=2)
            assert a.max <= delta + TOL * (1.0 + np.abs(center).max())
        elif c.status[0] == "not_robust":
            assert dev(c.counterexample)[0] > delta


@FAST
@given(case=_lmc_cases(), statistic=st.sampled_from(["mean", "std"]))
def test_sweep_fast(case, statistic):
    _check_case(case, statistic, max_iter=20)


@pytest.mark.slow
@SLOW
@given(case=_lmc_cases(), statistic=st.sampled_from(["mean", "std"]), max_iter=st.sampled_from([0, 5, 100, 1000]))
def test_sweep_slow(case, statistic, max_iter):
    _check_case(case, statistic, max_iter, n_samples=3000)
