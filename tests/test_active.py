"""Safe active learning (skgprobust.active): the loop and the certified safety.

The certificates are attacked the usual way: dense sampling of each box
proven safe plus L-BFGS-B on the safety margin from the worst samples, all
evaluated with the safety model's own ``predict(X, return_std=True)``;
counterexamples must be unsafe under that same ``predict``.
"""

import os
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessRegressor, UnsupportedModelError
from skgprobust.active import (
    ActiveLearningHistory,
    SafeActiveLearner,
    certified_safe_fraction,
    certify_safe,
    safety_probability,
)

SWEEP = int(os.environ.get("SKGPROBUST_SWEEP_EXAMPLES", "40"))


class IndependentGPs(RegressorMixin, BaseEstimator):
    """Test double of a multi-output model: one sklearn GPR per output, each
    fitted on the rows where that output is observed (NaN = unobserved)."""

    def __init__(self, kernel=None):
        self.kernel = kernel

    def fit(self, X, Y):
        Y = np.asarray(Y, dtype=float).reshape(len(X), -1)
        self.models_ = []
        for p in range(Y.shape[1]):
            o = ~np.isnan(Y[:, p])
            self.models_.append(GaussianProcessRegressor(self.kernel, normalize_y=True, random_state=0).fit(X[o], Y[o, p]))
        return self

    def predict(self, X, return_std=False, return_cov=False):
        out = [m.predict(X, return_std=True) for m in self.models_]
        mean = np.column_stack([o[0] for o in out])
        std = np.column_stack([o[1] for o in out])
        if return_cov:
            return mean, np.stack([np.diag(s**2) for s in std])
        return (mean, std) if return_std else mean


def f_true(x):
    s = 1.0 / (1.0 + np.exp(-2 * x))
    return np.c_[np.sin(10 * x) + s, np.sin(10 * x) - s]


def h_true(x):
    return np.exp(-((x - 0.1) ** 2) / 2)


def toy(seed=0):
    """The seed's sin & sigmoid toy (appendix I.3): safe when h > 0.7."""
    rng = np.random.RandomState(seed)
    pool = rng.uniform(-2, 2, (300, 1))
    X0 = pool[h_true(pool[:, 0]) > 0.8][:12]
    Y0 = f_true(X0[:, 0]) + 0.4 * rng.randn(12, 2)
    Y0[:6, 1] = np.nan
    Y0[6:, 0] = np.nan
    z0 = h_true(X0[:, 0]) + 0.05 * rng.randn(12)

    def oracle(x, p):
        y = f_true(x)[0] + 0.4 * rng.randn(2)
        z = h_true(x)[0] + 0.05 * rng.randn()
        return (y[p] if p is not None else y), z

    Xt = np.linspace(-0.7, 0.9, 50)[:, None]
    return pool, X0, Y0, z0, oracle, Xt, f_true(Xt[:, 0]), h_true(Xt[:, 0])


def learner(**kw):
    return SafeActiveLearner(
        IndependentGPs(ConstantKernel(1.0) * RBF(0.5, (0.05, 10)) + WhiteKernel(0.1, (1e-3, 1))),
        RobustGaussianProcessRegressor(
            ConstantKernel(1.0, (0.1, 10)) * RBF(1.0, (0.3, 10)) + WhiteKernel(0.0025, (1e-4, 0.1))
        ),
        threshold=0.7, safe_side="above", delta=0.05, random_state=0, **kw,
    )


class _quiet(warnings.catch_warnings):
    """Silence warnings (budget, convergence) inside the block."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore")
        return out


# ---------------------------------------------------------------------------
# The certificate
# ---------------------------------------------------------------------------


def _safety_model(seed, d=1, n=25, amp=1.0, noise=1e-3, matern=False, offset=0.0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (n, d))
    z = offset + amp * np.exp(-0.5 * np.sum((X - 0.3) ** 2, axis=1)) + np.sqrt(noise) * rng.randn(n)
    base = Matern(np.ones(d), nu=2.5) if matern else RBF(np.ones(d))
    k = ConstantKernel(amp**2) * base + WhiteKernel(noise)
    return RobustGaussianProcessRegressor(k, optimizer=None, normalize_y=bool(seed % 2)).fit(X, z), X, z


def _margin(model, P, t, side, delta):
    mu, sd = model.predict(P, return_std=True)
    mu, sd = np.reshape(mu, len(P)), np.reshape(sd, len(P))  # (n, 1) of a one-output multi-output model
    zq = norm.ppf(1 - delta)
    return (t - mu - zq * sd) if side == "below" else (mu - zq * sd - t)


def _attack(model, lo, hi, t, side, delta, rng, n=2000):
    """Smallest safety margin found in the box (sampling + L-BFGS-B)."""
    d = len(lo)
    P = lo + (hi - lo) * rng.random_sample((n, d))
    P = np.vstack([P, lo, hi, 0.5 * (lo + hi)])
    g = _margin(model, P, t, side, delta)
    best = float(g.min())
    for x0 in P[np.argsort(g)[:4]]:
        r = minimize(lambda x: float(_margin(model, x[None], t, side, delta)[0]), x0, method="L-BFGS-B",
                     bounds=list(zip(lo, hi)), options={"maxiter": 50})
        best = min(best, float(r.fun), float(_margin(model, np.clip(r.x, lo, hi)[None], t, side, delta)[0]))
    return best


def _check_certificate(model, X, gamma, t, side, delta, rng, **kw):
    with _quiet():
        res = certify_safe(model, X, gamma, threshold=t, safe_side=side, delta=delta, random_state=0, **kw)
    lo, hi = X - gamma, X + gamma
    for i, s in enumerate(res.status):
        if s == "robust":
            assert res.bound[i] > 0
            worst = _attack(model, lo[i], hi[i], t, side, delta, rng)
            assert worst > 0, f"row {i}: proven safe but the model's margin is {worst} at some point"
        elif s == "not_robust":
            c = res.counterexample[i]
            assert np.all(c >= lo[i]) and np.all(c <= hi[i])
            assert _margin(model, c[None], t, side, delta)[0] <= 0
    return res


@pytest.mark.parametrize("side", ["below", "above"])
def test_certify_safe_sound_and_decisive_1d(side):
    model, X, z = _safety_model(0)
    t = 0.5
    rng = np.random.RandomState(1)
    C = np.linspace(-2, 2, 21)[:, None]
    res = _check_certificate(model, C, 0.05, t, side, 0.05, rng, time_limit=2.0)
    assert np.sum(res.status == "robust") >= 3
    assert np.sum(res.status == "not_robust") >= 3
    # Decisions agree with the model at the centre.
    mu, sd = model.predict(C, return_std=True)
    zq = norm.ppf(0.95)
    safe_c = (mu + zq * sd < t) if side == "below" else (mu - zq * sd > t)
    assert not np.any(res.robust & ~safe_c)
    assert np.all(res.status[~safe_c] == "not_robust")


def test_certify_safe_2d_matern_and_feature_subset():
    model, X, z = _safety_model(3, d=2, matern=True, n=40)
    rng = np.random.RandomState(2)
    C = rng.uniform(-1.5, 1.5, (12, 2))
    res = _check_certificate(model, C, 0.1, 0.4, "above", 0.1, rng, time_limit=1.0)
    assert set(res.status) <= {"robust", "not_robust", "unknown"}
    # Only feature 0 moves: the certificate must still hold on the thinner box.
    with _quiet():
        r1 = certify_safe(model, C, 0.1, threshold=0.4, safe_side="above", delta=0.1, features=[0], time_limit=1.0)
    for i in np.flatnonzero(r1.robust):
        lo, hi = C[i].copy(), C[i].copy()
        lo[0] -= 0.1
        hi[0] += 0.1
        P = lo + (hi - lo) * rng.random_sample((500, 2))
        assert np.all(_margin(model, P, 0.4, "above", 0.1) > 0)
    # A wider box can only lose certificates that the thinner one had, never gain.
    assert not np.any(res.robust & ~r1.robust & (r1.status == "not_robust"))


def test_certify_safe_delta_above_half_uses_lower_variance():
    # delta > 1/2: z < 0, a larger std helps; the bound must still hold.
    model, X, z = _safety_model(4)
    rng = np.random.RandomState(3)
    C = np.linspace(-2, 2, 11)[:, None]
    _check_certificate(model, C, 0.1, 0.6, "above", 0.8, rng, time_limit=1.0)


def test_certify_safe_budget_exits_are_sound():
    model, X, z = _safety_model(5)
    rng = np.random.RandomState(4)
    C = np.linspace(-2, 2, 9)[:, None]
    for kw in (dict(max_iter=0), dict(max_iter=1), dict(time_limit=1e-3)):
        _check_certificate(model, C, 0.2, 0.5, "below", 0.05, rng, **kw)


@pytest.mark.slow
def test_certify_safe_sweep():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=SWEEP, deadline=None, suppress_health_check=list(HealthCheck))
    @given(seed=st.integers(0, 10**6), d=st.integers(1, 3), amp=st.sampled_from([0.1, 1.0, 30.0]),
           noise=st.sampled_from([1e-6, 1e-3, 0.05]), matern=st.booleans(), offset=st.sampled_from([0.0, 5.0, -1e3]),
           side=st.sampled_from(["below", "above"]), delta=st.sampled_from([0.01, 0.05, 0.3, 0.7]),
           gamma=st.sampled_from([0.01, 0.1, 0.5]), budget=st.sampled_from([dict(max_iter=3), dict(time_limit=0.3)]))
    def check(seed, d, amp, noise, matern, offset, side, delta, gamma, budget):
        model, X, z = _safety_model(seed, d, 20, amp, noise, matern, offset)
        rng = np.random.RandomState(seed)
        t = float(np.quantile(z, rng.uniform(0.2, 0.8)))
        C = X[rng.choice(len(X), 3, replace=False)] + 0.1 * rng.randn(3, d)
        _check_certificate(model, C, gamma, t, side, delta, rng, **budget)

    check()


@pytest.mark.parametrize("seed", range(3))
def test_certify_safe_with_a_one_output_multi_output_safety_model(seed):
    """A MultiOutputGaussianProcessRegressor fitted on one output has a
    single-output bound model, so certify_safe takes it: its certificates
    survive the same attack (on its own ``predict``), and two outputs are
    refused as for the other regressors."""
    from skgprobust import MultiOutputGaussianProcessRegressor

    rng = np.random.RandomState(seed)
    d = 1 + seed % 2
    X = rng.uniform(-2, 2, (25, d))
    z = np.exp(-0.5 * np.sum((X - 0.3) ** 2, axis=1)) + 0.03 * rng.randn(25)
    with _quiet():
        model = MultiOutputGaussianProcessRegressor(RBF(np.ones(d)), n_latent=1, random_state=seed).fit(X, z[:, None])
    t = float(np.quantile(z, 0.4))
    C = np.vstack([X[rng.choice(25, 6, replace=False)], rng.uniform(-2, 2, (4, d))])
    res = _check_certificate(model, C, 0.05, t, "below", 0.05, rng, time_limit=1.0)
    assert res.status.shape == (10,)
    assert np.sum(res.status != "unknown") >= 5 and np.any(res.status == "robust")
    with _quiet():
        two = MultiOutputGaussianProcessRegressor(RBF(np.ones(d)), n_latent=1, random_state=seed).fit(X, np.c_[z, z])
    with pytest.raises(UnsupportedModelError):
        certify_safe(two, C[:2], 0.05, threshold=t)


@pytest.mark.parametrize("seed", range(4))
def test_safety_margin_bound_below_the_model_on_random_boxes(seed):
    """The box bound itself (no branch and bound, no search) never exceeds
    the model's own margin anywhere in the box: small boxes make any
    optimism in the bound visible."""
    from skgprobust.active import SafetyMargin

    d = 1 + seed % 2
    model, X, z = _safety_model(seed, d=d, matern=bool(seed % 3 == 0))
    rng = np.random.RandomState(seed)
    for side, delta in (("below", 0.05), ("above", 0.05), ("above", 0.8)):
        t = float(np.median(z))
        obj = SafetyMargin(model._bound_model(), t, side, norm.ppf(1 - delta))
        for width in (1e-4, 1e-2, 0.3):
            C = rng.uniform(-2, 2, (30, d))
            lo, hi = C - width, C + width
            lower = obj.bound(lo, hi).lower
            for i in range(len(C)):
                P = np.vstack([lo[i] + (hi[i] - lo[i]) * rng.random_sample((200, d)), lo[i], hi[i], C[i]])
                assert lower[i] <= _margin(model, P, t, side, delta).min()
            # The bound is tight on tiny boxes (else it proves nothing).
            if width == 1e-4:
                gap = _margin(model, C, t, side, delta) - lower
                assert np.median(gap) < 1e-2 * (1 + np.abs(z).max())


def test_certified_safe_fraction_is_a_proven_subset():
    model, X, z = _safety_model(0)
    with _quiet():
        frac, centers, res = certified_safe_fraction(model, [-2.0], [2.0], cells=20, threshold=0.5,
                                                     safe_side="above", delta=0.05, time_limit=0.5)
    assert 0.0 < frac < 1.0
    assert frac == pytest.approx(np.mean(res.robust))
    rng = np.random.RandomState(0)
    for c in centers[res.robust]:
        P = c + 0.1 * (2 * rng.random_sample((300, 1)) - 1)
        assert np.all(_margin(model, P, 0.5, "above", 0.05) > 0)
    # The proven fraction never exceeds the fraction of a dense grid the model calls safe.
    G = np.linspace(-2, 2, 4001)[:, None]
    assert frac <= np.mean(_margin(model, G, 0.5, "above", 0.05) > 0) + 1e-9


def test_certify_safe_errors():
    model, X, z = _safety_model(0)
    with pytest.raises(ValueError, match="safe_side"):
        certify_safe(model, X[:2], 0.1, threshold=0.5, safe_side="left")
    with pytest.raises(ValueError, match="delta"):
        certify_safe(model, X[:2], 0.1, threshold=0.5, delta=0.0)
    with pytest.raises(ValueError, match="threshold"):
        certify_safe(model, X[:2], 0.1, threshold=np.nan)
    with pytest.raises(UnsupportedModelError):
        certify_safe(GaussianProcessRegressor().fit(X, z), X[:2], 0.1, threshold=0.5)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        certify_safe(RobustGaussianProcessRegressor(), X[:2], 0.1, threshold=0.5)
    two = RobustGaussianProcessRegressor().fit(X, np.c_[z, z])
    with pytest.raises(UnsupportedModelError):
        certify_safe(two, X[:2], 0.1, threshold=0.5)


def test_safety_probability_matches_quantile_rule():
    mu = np.array([0.0, 1.0, 2.0, 1.0])
    sd = np.array([1.0, 0.5, 0.0, 0.0])
    p = safety_probability(mu, sd, 1.0, "below")
    assert p[0] == pytest.approx(norm.cdf(1.0))
    assert p[1] == pytest.approx(0.5)
    assert p[2] == 0.0 and p[3] == 0.0  # std 0 on (or beyond) the threshold: not safe
    assert safety_probability(mu, sd, 1.0, "above")[2] == 1.0


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------


def _spy(learner_):
    """Record, at every query, whether the learner's safety model called it safe."""
    calls = []
    orig = learner_._query_index

    def spy(X_pool, available=None):
        i, p = orig(X_pool, available)
        calls.append(bool(learner_.is_safe(X_pool[i:i + 1])[0]))
        return i, p

    learner_._query_index = spy
    return calls


def test_loop_only_queries_points_called_safe_and_learns():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner().fit(X0, Y0, z0)
    calls = _spy(L)
    with _quiet():
        hist = L.run(oracle, pool, 20, X_test=Xt, Y_test=Yt, z_test=zt)
    assert isinstance(hist, ActiveLearningHistory) and len(hist) == 20
    assert all(calls)
    assert hist.rmse[-1] < hist.rmse[0]
    assert hist.safe_query_ratio[-1] >= 0.8
    assert np.all(np.isin(hist.output, [0, 1]))
    assert hist.n_observations[-1] == 12 + 20
    assert np.all(np.isfinite(hist.log_density))
    assert hist.to_frame().shape[0] == 20 if _has_pandas() else True


def _has_pandas():
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def test_no_safety_baseline_queries_unsafe_points():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    with _quiet():
        safe = learner().fit(X0, Y0, z0).run(oracle, pool, 15)
        nosafe = learner(safety=False).fit(X0, Y0, z0).run(oracle, pool, 15)
    assert nosafe.safe_query_ratio[-1] < safe.safe_query_ratio[-1]


def test_query_is_the_argmax_of_the_acquisition_over_eligible_pairs():
    """query scores only rows with a candidate; the choice is the argmax of the full acquisition
    over the available pairs the safety model allows."""
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner().fit(X0, Y0, z0)
    avail = np.ones((len(pool), 2), dtype=bool)
    avail[::3, 0] = False
    avail[1::3] = False
    x, p = L.query(pool, available=avail)
    score = np.where(avail & L.is_safe(pool)[:, None], L.acquisition(pool), -np.inf)
    i, q = np.unravel_index(np.argmax(score), score.shape)
    assert p == q and np.array_equal(x, pool[i])


def test_loop_is_deterministic_for_a_seed():
    outs = []
    for _ in range(2):
        pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(1)
        with _quiet():
            outs.append(learner(strategy="random").fit(X0, Y0, z0).run(oracle, pool, 6))
    np.testing.assert_array_equal(outs[0].X, outs[1].X)
    np.testing.assert_array_equal(outs[0].output, outs[1].output)


def test_certified_queries_are_proven_safe_boxes():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner(certify_gamma=0.03, certify_options=dict(time_limit=0.2)).fit(X0, Y0, z0)
    with _quiet():
        for _ in range(3):
            x, p = L.query(pool)
            res = L.certify_safe(x[None], 0.03, time_limit=1.0, random_state=0)
            assert res.status[0] in ("robust", "unknown")  # never a counterexample inside
            P = x + 0.03 * (2 * np.random.RandomState(0).random_sample((300, 1)) - 1)
            assert np.all(L.is_safe(P))
            y, z = oracle(x, p)
            L.update(x, y, z, output=p)


def test_full_observation_uses_log_det():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    Yf = f_true(X0[:, 0])
    L = learner(observe="full").fit(X0, Yf, z0)
    s = L.acquisition(pool[:5])
    _, cov = L.model_.predict(pool[:5], return_cov=True)
    np.testing.assert_allclose(s, np.linalg.slogdet(cov)[1])
    x, p = L.query(pool)
    assert p is None
    y, z = oracle(x, None)
    L.update(x, y, z)
    assert L.Y_.shape == (13, 2) and not np.isnan(L.Y_[-1]).any()


def test_repeated_input_fills_the_row_without_duplicating_safety():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner().fit(X0, Y0, z0)
    x = np.array([0.123])  # not among the initial inputs
    L.update(x, 0.1, 0.9, output=0)
    L.update(x, np.array(0.2), np.float32(0.9), output=1)  # NumPy scalars and 0-d arrays too
    assert L.X_.shape[0] == 13 and L.Xz_.shape[0] == 13
    np.testing.assert_array_equal(L.Y_[-1], [0.1, 0.2])


def test_learner_errors():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    with pytest.raises(ValueError, match="delta"):
        learner().set_params(delta=1.5).fit(X0, Y0, z0)
    with pytest.raises(ValueError, match="observe"):
        learner(observe="some").fit(X0, Y0, z0)
    with pytest.raises(ValueError, match="strategy"):
        learner(strategy="greedy").fit(X0, Y0, z0)
    Y_bad = Y0.copy()
    Y_bad[:, 1] = np.nan
    with pytest.raises(ValueError, match="no observed value"):
        learner().fit(X0, Y_bad, z0)
    with pytest.raises(ValueError, match="safety value"):
        learner().fit(X0, Y0, z0[:-1])
    with pytest.raises(ValueError, match="NaN"):
        learner().fit(np.r_[X0[:-1], [[np.nan]]], Y0, z0)
    L = learner().fit(X0, Y0, z0)
    with pytest.raises(ValueError, match="non-empty"):
        L.query(np.empty((0, 1)))
    with pytest.raises(ValueError, match="features"):
        L.query(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="output"):
        L.update(pool[0], 0.1, 0.9)
    for bad in ("0.1", True, np.array([0.1]), np.inf):
        with pytest.raises(ValueError, match="y must be a finite number"):
            L.update(pool[0], bad, 0.9, output=0)
        with pytest.raises(ValueError, match="z must be a finite number"):
            L.update(pool[0], 0.1, bad, output=0)
    with pytest.raises(ValueError, match="No eligible"):
        L.query(np.array([[-1.9], [1.95]]))  # far outside the safe region
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        learner().query(pool)


def test_budget_warning_is_raised_for_unknown_rows():
    model, X, z = _safety_model(0)
    with pytest.warns(BudgetExhaustedWarning):
        certify_safe(model, np.array([[0.3]]), 1.5, threshold=0.2, safe_side="above", max_iter=0)


def test_loop_with_the_multioutput_gp():
    """The learner with the suite's own LMC model (partial and full observation)."""
    from skgprobust._multioutput import MultiOutputGaussianProcessRegressor

    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(2)
    for observe, Y in (("partial", Y0), ("full", f_true(X0[:, 0]))):
        model = MultiOutputGaussianProcessRegressor(RBF(0.5, (0.05, 10)), n_latent=2, normalize_y=True,
                                                    noise_level_bounds=(1e-2, 1.0))
        L = SafeActiveLearner(model, learner().safety_model, threshold=0.7, safe_side="above", observe=observe,
                              random_state=0).fit(X0, Y, z0)
        calls = _spy(L)
        with _quiet():
            hist = L.run(oracle, pool, 8, X_test=Xt, Y_test=Yt, z_test=zt)
        assert all(calls) and len(hist) == 8
        assert np.all(np.isfinite(hist.rmse))
        assert L.model_.W_.shape == (2, 2)
        if observe == "full":
            assert np.all(hist.output == -1)


# ---------------------------------------------------------------------------
# Hyperparameter priors (the seed's appendix I.1) and the MAP optimizer
# ---------------------------------------------------------------------------


def _fd_grad(f, x, h=1e-6):
    g = np.empty_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_prior_log_densities_match_scipy_and_finite_differences():
    from scipy.stats import gamma

    from skgprobust.active._priors import GammaPrior, NormalPrior

    t = np.linspace(-3, 2, 7)
    h = 1e-6
    for a, b in ((2.5, 1.0), (1.5, 1.0), (1.5, 3.0)):
        for jac in (False, True):
            prior = GammaPrior(a, b, jacobian=jac)
            v, g = prior(t)
            # the density of v at e^t, plus log|dv/dt| = t with the Jacobian; up to a constant
            ref = gamma.logpdf(np.exp(t), a, scale=1 / b) + (t if jac else 0.0)
            np.testing.assert_allclose(v - v[0], ref - ref[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g, (prior(t + h)[0] - prior(t - h)[0]) / (2 * h), rtol=1e-6, atol=1e-8)
            # modes: the prior mean a / b in log coordinates, (a - 1) / b in the value's own
            assert abs(prior(np.log(a / b if jac else (a - 1) / b))[1]) < 1e-12
    v, g = NormalPrior(0.0, 2.0)(np.array([-1.0, 0.0, 3.0]))
    np.testing.assert_allclose(v, -0.5 * np.array([1.0, 0.0, 9.0]) / 4)
    np.testing.assert_allclose(g, -np.array([-1.0, 0.0, 3.0]) / 4)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError):
            GammaPrior(bad, 1.0)
        with pytest.raises(ValueError):
            NormalPrior(0.0, bad)


def test_kernel_prior_layout_follows_the_hyperparameter_names():
    from skgprobust.active._priors import SEED_PRIORS, kernel_prior_layout, lmc_prior_layout

    k = ConstantKernel(1.0) * Matern(np.ones(3), nu=2.5) + WhiteKernel(0.1)
    layout = kernel_prior_layout(k)
    assert len(layout) == len(k.theta) == 5
    assert layout[0] is SEED_PRIORS["variance"]
    assert all(p is SEED_PRIORS["length_scale"] for p in layout[1:4])
    assert layout[4] is SEED_PRIORS["noise"]
    # fixed hyperparameters are not in theta; unknown ones get no prior
    k2 = ConstantKernel(1.0, "fixed") * RBF(1.0) + WhiteKernel(0.1, "fixed")
    assert kernel_prior_layout(k2) == [SEED_PRIORS["length_scale"]]
    from sklearn.gaussian_process.kernels import RationalQuadratic

    assert kernel_prior_layout(RationalQuadratic()) == [None, SEED_PRIORS["length_scale"]]  # alpha: flat
    lay = lmc_prior_layout(Matern(1.0), n_outputs=3, n_latent=2)
    assert len(lay) == 2 + 6 + 3
    assert lay[2:8] == [SEED_PRIORS["weight"]] * 6 and lay[8:] == [SEED_PRIORS["noise"]] * 3
    assert len(lmc_prior_layout(Matern(1.0), 3, 3, W_fixed=True)) == 3 + 3
    with pytest.raises(ValueError):
        kernel_prior_layout("rbf")


def test_map_optimizer_maximises_the_log_posterior_in_sklearn_gpr():
    from skgprobust.active._priors import MAPOptimizer, map_optimizer

    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (12, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]  # noise-free: ML drives the noise to its lower bound
    k = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(np.ones(2), (1e-2, 1e2), nu=2.5) + WhiteKernel(0.1, (1e-8, 10))
    ml = GaussianProcessRegressor(k, random_state=0).fit(X, y)
    opt = map_optimizer(k)
    mp = GaussianProcessRegressor(k, optimizer=opt, random_state=0).fit(X, y)
    assert ml.kernel_.k2.noise_level < 1e-5
    assert mp.kernel_.k2.noise_level > 1e-3  # the Gamma(1.5, 3) noise prior keeps it away from 0

    def log_post(theta):
        return mp.log_marginal_likelihood(theta) + opt.log_prior(theta)[0]

    th = mp.kernel_.theta
    # a stationary point of the log posterior within the bounds: the gradient
    # vanishes on the coordinates not at a bound, and random nearby points are no better
    g = _fd_grad(log_post, th, 1e-5)
    inner = (th > k.bounds[:, 0] + 1e-3) & (th < k.bounds[:, 1] - 1e-3)
    assert np.all(np.abs(g[inner]) < 1e-2 * max(1.0, abs(log_post(th))))
    for _ in range(20):
        cand = np.clip(th + 0.05 * rng.randn(len(th)), k.bounds[:, 0], k.bounds[:, 1])
        assert log_post(cand) <= log_post(th) + 1e-6
    # with no prior anywhere, MAP is ML
    flat = GaussianProcessRegressor(k, optimizer=MAPOptimizer([None] * len(k.theta)), random_state=0).fit(X, y)
    np.testing.assert_allclose(flat.log_marginal_likelihood_value_, ml.log_marginal_likelihood_value_, rtol=1e-6)
    with pytest.raises(ValueError, match="prior layout"):
        opt.log_prior(np.zeros(3))


def test_map_optimizer_in_the_robust_and_multioutput_regressors():
    from skgprobust._multioutput import MultiOutputGaussianProcessRegressor
    from skgprobust.active._priors import lmc_map_optimizer, map_optimizer

    rng = np.random.RandomState(1)
    X = rng.uniform(-2, 2, (16, 1))
    Y = f_true(X[:, 0])
    Y[::2, 1] = np.nan
    Y[1::2, 0] = np.nan
    k = Matern(1.0, (1e-2, 1e2), nu=2.5)
    ml = MultiOutputGaussianProcessRegressor(k, n_latent=2, noise_level_bounds=(1e-8, 10)).fit(X, Y)
    opt = lmc_map_optimizer(k, 2, 2)
    mp = MultiOutputGaussianProcessRegressor(k, n_latent=2, noise_level_bounds=(1e-8, 10), optimizer=opt).fit(X, Y)
    assert len(opt.layout) == len(mp.theta_)
    lp = mp.log_marginal_likelihood(mp.theta_) + opt.log_prior(mp.theta_)[0]
    assert lp >= ml.log_marginal_likelihood(ml.theta_) + opt.log_prior(ml.theta_)[0] - 1e-6
    assert np.all(mp.noise_level_ > 1e-4)
    ind = MultiOutputGaussianProcessRegressor(ConstantKernel() * k, W="identity",
                                              optimizer=lmc_map_optimizer(ConstantKernel() * k, 2, 2, W="fixed")).fit(X, Y)
    assert np.all(np.isfinite(ind.predict(X)))
    sk = ConstantKernel() * k + WhiteKernel(0.1, (1e-8, 1))
    r = RobustGaussianProcessRegressor(sk, optimizer=map_optimizer(sk)).fit(X, f_true(X[:, 0])[:, 0])
    assert r.kernel_.k2.noise_level > 1e-4
    # the certified range still holds for the MAP-fitted model's own predict
    rr = r.prediction_range(X[:2], gamma=0.05)
    m = r.predict(np.linspace(X[0, 0] - 0.05, X[0, 0] + 0.05, 201)[:, None])
    assert rr.min_lower[0] <= m.min() and m.max() <= rr.max_upper[0]


# ---------------------------------------------------------------------------
# Bayesian treatment: posterior samples of the hyperparameters (emcee) and the
# moment-matched predictive (the seed's appendix I.2)
# ---------------------------------------------------------------------------


def test_mixture_moments_match_a_direct_computation():
    from skgprobust.active import mixture_moments

    rng = np.random.RandomState(0)
    m, s = rng.randn(5, 3), rng.uniform(0.1, 1.0, (5, 3))
    mean, std = mixture_moments(m, s, "std")
    # direct: quadrature of the mixture density of each point
    y = np.linspace(-12, 12, 200001)
    for j in range(3):
        dens = np.mean([norm.pdf(y, m[i, j], s[i, j]) for i in range(5)], axis=0)
        mu = np.trapezoid(y * dens, y)
        var = np.trapezoid((y - mu) ** 2 * dens, y)
        assert mean[j] == pytest.approx(mu, abs=1e-8)
        assert std[j] == pytest.approx(np.sqrt(var), rel=1e-7)
    # per-point covariances (S, n, P, P): the seed's form 1/S sum (C + m m^T) - mu mu^T
    M = rng.randn(4, 2, 3)
    A = rng.randn(4, 2, 3, 3)
    C = A @ np.swapaxes(A, -1, -2)
    mean, cov = mixture_moments(M, C, "cov")
    direct = np.mean(C + M[..., :, None] * M[..., None, :], axis=0) - mean[..., :, None] * mean[..., None, :]
    np.testing.assert_allclose(cov, direct, rtol=1e-12, atol=1e-12)
    # joint covariance across points (S, n, n) of (S, n) means, and its diagonal = the "std" variance
    M2, A2 = rng.randn(4, 3), rng.randn(4, 3, 3)
    C2 = A2 @ np.swapaxes(A2, -1, -2)
    mean2, cov2 = mixture_moments(M2, C2, "cov")
    direct2 = np.mean(C2 + M2[:, :, None] * M2[:, None, :], axis=0) - np.outer(mean2, mean2)
    np.testing.assert_allclose(cov2, direct2, rtol=1e-12, atol=1e-12)
    _, sd2 = mixture_moments(M2, np.sqrt(np.diagonal(C2, axis1=1, axis2=2)), "std")
    np.testing.assert_allclose(sd2**2, np.diag(cov2), rtol=1e-12)
    with pytest.raises(ValueError, match="kind"):
        mixture_moments(M2, C2, "var")


def _bayes_data(n=14, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.randn(n)


def test_posterior_regressor_predicts_the_moments_of_its_samples():
    pytest.importorskip("emcee")
    from skgprobust.active import HyperparameterPosteriorRegressor, map_optimizer
    from skgprobust.active._priors import GammaPrior

    X, y = _bayes_data()
    k = ConstantKernel(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-2, 1e2)) + WhiteKernel(0.1, (1e-4, 1.0))
    base = RobustGaussianProcessRegressor(k, optimizer=map_optimizer(k))
    h = HyperparameterPosteriorRegressor(base, n_samples=6, n_burn=30, random_state=0).fit(X, y)
    assert h.samples_.shape == (6, 3) and len(h.estimators_) == 6 and h.chain_state_.shape == (8, 3)
    assert 0 < h.acceptance_fraction_ <= 1
    # each sample: its own GP at that theta, built here from scratch; the mixture's moments by the seed's formula
    Xs = np.linspace(-3, 3, 7)[:, None]
    means, varis, covs = [], [], []
    for t in h.samples_:
        g = GaussianProcessRegressor(k.clone_with_theta(t), optimizer=None).fit(X, y)
        mu, C = g.predict(Xs, return_cov=True)
        means.append(mu), covs.append(C), varis.append(np.diag(C))
    means, varis, covs = map(np.array, (means, varis, covs))
    mu = means.mean(0)
    mean, std = h.predict(Xs, return_std=True)
    np.testing.assert_allclose(mean, mu, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(std**2, np.mean(varis + means**2, 0) - mu**2, rtol=1e-7, atol=1e-10)
    _, cov = h.predict(Xs, return_cov=True)
    np.testing.assert_allclose(cov, np.mean(covs + means[:, :, None] * means[:, None, :], 0) - np.outer(mu, mu),
                               rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(h.predict(Xs), mu, rtol=1e-9, atol=1e-10)
    # the log posterior of each sample: log marginal likelihood + the priors as densities of theta (Jacobian)
    lay = [GammaPrior(2.5, 1.0, True), GammaPrior(1.5, 1.0, True), GammaPrior(1.5, 3.0, True)]
    for t, lp in zip(h.samples_, h.log_posterior_):
        g = GaussianProcessRegressor(k, optimizer=None).fit(X, y)
        direct = g.log_marginal_likelihood(t) + sum(float(p(v)[0]) for p, v in zip(lay, t))
        assert lp == pytest.approx(direct, rel=1e-9, abs=1e-9)
    # the fitted point model is untouched by the sampler (its kernel_ is the MAP fit)
    ref = RobustGaussianProcessRegressor(k, optimizer=map_optimizer(k)).fit(X, y)
    np.testing.assert_allclose(h.estimator_.kernel_.theta, ref.kernel_.theta)
    np.testing.assert_allclose(h.estimator_.predict(Xs), ref.predict(Xs))


def _unpack_lmc(mo, t):
    """Latent kernels, W and noise variances at theta t (W and noise free), decoded here from
    theta_'s documented layout."""
    kernels, i = [], 0
    for k in mo.kernels_:
        kernels.append(k.clone_with_theta(t[i:i + len(k.theta)]))
        i += len(k.theta)
    P, L = mo.n_outputs_, mo.n_latent_
    W = t[i:i + P * L].reshape(P, L)
    noise = np.exp(t[i + P * L:])
    assert len(noise) == P
    return kernels, W, noise


def test_posterior_regressor_multioutput_and_warm_start():
    pytest.importorskip("emcee")
    from skgprobust._multioutput import MultiOutputGaussianProcessRegressor
    from skgprobust.active import HyperparameterPosteriorRegressor, lmc_map_optimizer

    rng = np.random.RandomState(3)
    X = rng.uniform(-2, 2, (14, 1))
    Y = f_true(X[:, 0]) + 0.1 * rng.randn(14, 2)
    Y[::2, 1] = np.nan
    k = RBF(0.5, (0.05, 10))
    base = MultiOutputGaussianProcessRegressor(k, n_latent=2, normalize_y=True, noise_level_bounds=(1e-3, 1.0),
                                               optimizer=lmc_map_optimizer(k, 2, 2))
    h = HyperparameterPosteriorRegressor(base, n_samples=5, n_burn=20, random_state=1).fit(X, Y)
    Xs = np.linspace(-2, 2, 5)[:, None]
    mean, cov = h.predict(Xs, return_cov=True)
    means, covs = [], []
    for t in h.samples_:  # the LMC at each sample from its public parameters
        kernels, W, noise = _unpack_lmc(h.estimator_, t)
        m = MultiOutputGaussianProcessRegressor(kernels=kernels, W=W, noise_level=noise, normalize_y=True,
                                                optimizer=None).fit(X, Y)
        mu, C = m.predict(Xs, return_cov=True)
        means.append(mu), covs.append(C)
    means, covs = np.array(means), np.array(covs)
    mu = means.mean(0)
    np.testing.assert_allclose(mean, mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov, np.mean(covs + means[..., :, None] * means[..., None, :], 0)
                               - mu[:, :, None] * mu[:, None, :], rtol=1e-7, atol=1e-10)
    _, std = h.predict(Xs, return_std=True)
    np.testing.assert_allclose(std**2, np.diagonal(cov, axis1=1, axis2=2), rtol=1e-8, atol=1e-12)
    # deterministic for a random_state; warm start continues the chain for n_steps only
    h2 = HyperparameterPosteriorRegressor(base, n_samples=5, n_burn=20, random_state=1).fit(X, Y)
    np.testing.assert_array_equal(h.samples_, h2.samples_)
    state = h.chain_state_.copy()
    h.set_params(warm_start=True, n_steps=3).fit(np.vstack([X, [[0.3]]]), np.vstack([Y, [[0.5, np.nan]]]))
    assert h.n_evaluations_ == len(state) * (3 + 1)  # the start's densities + 3 steps
    assert not np.array_equal(h.chain_state_, state)
    assert np.all(np.isfinite(h.predict(Xs)))


def test_learner_with_hyperparameter_posterior_and_errors(monkeypatch):
    pytest.importorskip("emcee")
    from skgprobust.active import HyperparameterPosteriorRegressor

    from skgprobust._multioutput import MultiOutputGaussianProcessRegressor

    opts = dict(n_samples=4, n_burn=10, n_steps=2)

    def run():
        pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(2)  # a fresh oracle (its noise stream) per run
        model = MultiOutputGaussianProcessRegressor(RBF(0.5, (0.05, 10)), n_latent=2, normalize_y=True,
                                                    noise_level_bounds=(1e-2, 1.0))
        L = learner(hyperparameter_posterior=opts).set_params(model=model).fit(X0, Y0, z0)
        calls = _spy(L)
        with _quiet():
            hist = L.run(oracle, pool[:40], 2, X_test=Xt, Y_test=Yt, z_test=zt)
        assert all(calls)
        return L, hist

    L, hist = run()
    assert isinstance(L.safety_model_, HyperparameterPosteriorRegressor) and L.safety_model_.warm_start
    assert isinstance(L.model_, HyperparameterPosteriorRegressor) and L.model_.warm_start
    assert len(L.safety_model_.estimators_) == 4 and len(L.model_.estimators_) == 4 and np.all(np.isfinite(hist.rmse))
    # P(safe) under the hyperparameter posterior is the mixture's (mean of the
    # samples' Gaussian probabilities, computed here from each sample GP), not
    # the moment-matched Gaussian's (review F1); is_safe thresholds it.
    Xq = np.linspace(-2, 2, 41)[:, None]
    per_sample = []
    for est in L.safety_model_.estimators_:
        m, s = est.predict(Xq, return_std=True)
        diff = (L.threshold - m) if L.safe_side == "below" else (m - L.threshold)
        per_sample.append(norm.cdf(diff / s))
    p_mix = np.mean(per_sample, axis=0)
    np.testing.assert_allclose(L.safety_probability(Xq), p_mix, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(L.is_safe(Xq), p_mix > 1 - L.delta)
    # The review's counterexample: samples N(0, 1) and N(0, 3^2), threshold 3.7 (safe
    # below), delta 0.05: the matched Gaussian says safe (0.951), the mixture unsafe (0.946).

    class _TwoSamples:
        def predict_components(self, X):
            return np.zeros((2, len(X))), np.array([[1.0] * len(X), [3.0] * len(X)])

    saved = (L.safety_model_, L.threshold, L.safe_side, L.delta)
    L.safety_model_, L.threshold, L.safe_side, L.delta = _TwoSamples(), 3.7, "below", 0.05
    try:
        assert L.safety_probability(Xq[:1])[0] == pytest.approx(0.5 * (norm.cdf(3.7) + norm.cdf(3.7 / 3)), abs=1e-15)
        assert L.safety_probability(Xq[:1])[0] < 0.95 < norm.cdf(3.7 / np.sqrt(5.0))
        assert not L.is_safe(Xq[:1])[0]
    finally:
        L.safety_model_, L.threshold, L.safe_side, L.delta = saved
    _, hist2 = run()
    np.testing.assert_array_equal(hist.X, hist2.X)
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(2)
    # clear errors
    with pytest.raises(ValueError, match="dict"):
        learner(hyperparameter_posterior=5).fit(X0, Y0, z0)
    with pytest.raises(ValueError, match="certify_gamma"):
        learner(hyperparameter_posterior={}, certify_gamma=0.01).fit(X0, Y0, z0)
    with pytest.raises(UnsupportedModelError):
        L.certify_safe(X0[:1], 0.01)
    X, y = _bayes_data()
    with pytest.raises(ValueError, match="n_samples"):
        HyperparameterPosteriorRegressor(GaussianProcessRegressor(), n_samples=0).fit(X, y)
    with pytest.raises(ValueError, match="GaussianProcessRegressor-like"):
        HyperparameterPosteriorRegressor(IndependentGPs(RBF())).fit(X, y[:, None])
    with pytest.raises(RuntimeError, match="At most one"):
        HyperparameterPosteriorRegressor(GaussianProcessRegressor(), n_samples=2, n_burn=2).fit(X, y).predict(
            X, return_std=True, return_cov=True)
    monkeypatch.setitem(__import__("sys").modules, "emcee", None)
    with pytest.raises(ImportError, match=r"skgprobust\[bayes\]"):
        HyperparameterPosteriorRegressor(GaussianProcessRegressor()).fit(X, y)


def test_normalize_entropy_compares_outputs_in_units_of_their_observed_variance():
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(1)
    Y0 = Y0 * np.array([1.0, 10.0])  # output 1 on a 10x larger scale
    raw = learner().fit(X0, Y0, z0)
    nrm = learner(normalize_entropy=True).fit(X0, Y0, z0)
    a, b = raw.acquisition(pool[:20]), nrm.acquisition(pool[:20])
    logvar = np.log([np.nanvar(Y0[:, 0]), np.nanvar(Y0[:, 1])])
    np.testing.assert_allclose(b, a - logvar, rtol=1e-12, atol=1e-12)
    assert np.all(np.argmax(a, axis=1) == 1)  # raw units: the large-scale output always wins
    full = SafeActiveLearner(IndependentGPs(RBF(0.5)), raw.safety_model, threshold=0.7, safe_side="above",
                             observe="full", normalize_entropy=True).fit(X0, f_true(X0[:, 0]) * [1.0, 10.0], z0)
    c = full.acquisition(pool[:5])
    ref = np.linalg.slogdet(full.model_.predict(pool[:5], return_cov=True)[1])[1]
    v = np.var(f_true(X0[:, 0]) * [1.0, 10.0], axis=0)
    np.testing.assert_allclose(c, ref - np.log(v).sum(), rtol=1e-10, atol=1e-10)


def test_learner_certify_settings_are_checked_at_fit():
    """certify_gamma=-0.1 / of the wrong length and certify_options with an
    unknown key, a bad run argument or one the learner sets itself were
    accepted by fit and failed at the first query (after refits), the last
    with "got multiple values for keyword argument 'threshold'" (eco-hunt D7)."""
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    for kw, match in [
        ({"certify_gamma": -0.1}, "certify_gamma must be non-negative"),
        ({"certify_gamma": [0.1, 0.1]}, "certify_gamma must be a scalar or an array of length n_features=1"),
        ({"certify_gamma": np.nan}, "certify_gamma must be finite"),
        ({"certify_gamma": 0.1, "certify_options": {"foo": 1}}, "unknown key"),
        ({"certify_gamma": 0.1, "certify_options": {"max_iter": -1}}, "max_iter"),
        ({"certify_gamma": 0.1, "certify_options": {"n_jobs": "x"}}, "n_jobs"),
        ({"certify_gamma": 0.1, "certify_options": {"threshold": 5.0}}, "cannot set"),
    ]:
        L = learner(**kw)
        L._refit = None  # fit must refuse before fitting any model
        with pytest.raises(ValueError, match=match):
            L.fit(X0, Y0, z0)


def test_learner_certify_safe_takes_a_dataframe_like_is_safe():
    """certify_safe passed a DataFrame unconverted to the safety model fitted
    on arrays: "X has feature names, but ... was fitted without" (eco-hunt D14)."""
    pd = pytest.importorskip("pandas")
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    with _quiet():
        L = learner().fit(pd.DataFrame(X0, columns=["x"]), Y0, z0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        res = L.certify_safe(pd.DataFrame(X0[:2], columns=["x"]), 0.01, max_iter=5, random_state=0)
    ref = L.certify_safe(X0[:2], 0.01, max_iter=5, random_state=0)
    np.testing.assert_array_equal(res.status, ref.status)


# ---------------------------------------------------------------------------
# The benchmark's MOGP-samples generator (benchmarks/bench_safe_al.py)
# ---------------------------------------------------------------------------


def test_mogp_samples_are_deterministic_and_share_one_design():
    """Appendix I.3 of the seed: X, the kernels and W drawn once for all
    repetitions ("D_e = (X, Y_e, Z_e)"), one 20% quantile of Z_1 u ... u Z_E
    as threshold, 40 initial points (10 per output), 100 iterations."""
    import importlib

    B = importlib.import_module("benchmarks.bench_safe_al")
    n_pool, n_test, P = 200, 50, 4
    a, b = B.mogp(3, n_pool, n_test), B.mogp(3, n_pool, n_test)
    for k in ("X0", "Y0", "z0", "pool", "Xt", "Yt", "zt"):
        np.testing.assert_array_equal(a[k], b[k])
    assert a["threshold"] == b["threshold"] and a["n_iter"] == 100
    design = B.mogp_design(n_pool, n_test)
    X = design["X"]
    assert X.shape == (n_pool + n_test, 2) and np.all((X >= -2) & (X < 2))
    assert len(np.unique(X, axis=0)) == len(X)
    np.testing.assert_allclose(np.linalg.norm(design["W"], axis=1), 1.0, rtol=1e-14)
    assert np.all((design["ls"] >= 0.01) & (design["ls"] < 1)) and 0.01 <= design["var_z"] < 1
    # Pool and initial points are the first n_pool inputs, the test points the rest.
    np.testing.assert_array_equal(np.sort(np.vstack([a["pool"], a["X0"]]), axis=0), np.sort(X[:n_pool], axis=0))
    np.testing.assert_array_equal(a["Xt"], X[n_pool:])
    # Partially observed start: 10 points per output, one output per point, all safe (--init safe).
    obs = np.isfinite(a["Y0"])
    assert a["X0"].shape == (40, 2) and np.all(obs.sum(axis=1) == 1)
    np.testing.assert_array_equal(obs.sum(axis=0), np.full(P, 10))
    assert np.all(a["z0"] > a["threshold"])
    # Another repetition: the same inputs, new samples, the same threshold.
    c = B.mogp(4, n_pool, n_test)
    np.testing.assert_array_equal(a["Xt"], c["Xt"])
    assert not np.allclose(a["Yt"], c["Yt"]) and c["threshold"] == a["threshold"]
    # The threshold is the 20% quantile of the union over the E = 30
    # repetitions: the test points (a random fifth of each repetition's
    # inputs) fall below it about 20% of the time.
    below = np.mean([np.mean(B.mogp(e, n_pool, n_test)["zt"] < a["threshold"]) for e in range(30)])
    assert abs(below - 0.2) < 0.04, below


# ---------------------------------------------------------------------------
# Parameter and input checks (feature names, refused options, bools, priors)
# ---------------------------------------------------------------------------


def _named_learner(**kw):
    """A learner fitted on a DataFrame with columns a, b; the safety value is
    the first feature (safe below 0), so (a, b) = (1.5, -1.5) is unsafe and
    its mirror (-1.5, 1.5) safe."""
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (30, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    L = SafeActiveLearner(
        IndependentGPs(RBF(1.0)),
        RobustGaussianProcessRegressor(ConstantKernel(1.0) * RBF([1.0, 1.0]) + WhiteKernel(1e-4), optimizer=None),
        threshold=0.0, safe_side="below", delta=0.05, random_state=0, **kw,
    )
    with _quiet():
        L.fit(pd.DataFrame(X, columns=["a", "b"]), Y, X[:, 0])
    return pd, L


def test_learner_checks_feature_names_like_sklearn():
    """The learner fitted on a DataFrame did not record feature_names_in_
    and read later DataFrames by position: with the columns reordered, the
    unsafe point (a, b) = (1.5, -1.5) was called safe (P(safe) 8.7e-23 ->
    1.0) and its box "proven" safe by certify_safe ("not_robust" ->
    "robust"). Now every method checks the names as sklearn's validate_data
    does: other names or another order raise, an array warns."""
    pd, L = _named_learner()
    assert list(L.feature_names_in_) == ["a", "b"]
    pt = pd.DataFrame([[1.5, -1.5]], columns=["a", "b"])
    rev = pt[["b", "a"]]
    assert not L.is_safe(pt)[0] and L.safety_probability(pt)[0] < 1e-6
    assert L.certify_safe(pt, 0.05, max_iter=50, random_state=0).status[0] == "not_robust"
    calls = {
        "is_safe": lambda X: L.is_safe(X),
        "safety_probability": lambda X: L.safety_probability(X),
        "acquisition": lambda X: L.acquisition(X),
        "certify_safe": lambda X: L.certify_safe(X, 0.05, max_iter=5, random_state=0),
        "query": lambda X: L.query(X),
        "update": lambda X: L.update(X[:1], 0.1, -1.5, output=0),
    }
    both = pd.DataFrame([[-1.5, 1.5], [1.5, -1.5]], columns=["a", "b"])  # safe, unsafe
    n_before = len(L.X_)
    for name, call in calls.items():
        with pytest.raises(ValueError, match="Feature names must be in the same order"):
            call(both[["b", "a"]])
        with pytest.raises(ValueError, match="Feature names unseen at fit time"):
            call(both.rename(columns={"b": "c"}))
        if name != "update":  # update reads an array by position (query's x), below
            with pytest.warns(UserWarning, match="does not have valid feature names"):
                call(both.to_numpy())
    assert len(L.X_) == n_before  # every refused update left the data alone
    # update: a Series is aligned by its labels, a 1-D array (query's x) read by position.
    L.update(pd.Series({"b": 0.25, "a": -0.75}), 0.2, -0.75, output=1)
    np.testing.assert_array_equal(L.X_[-1], [-0.75, 0.25])
    with pytest.raises(ValueError, match="fitted feature names"):
        L.update(pd.Series({"b": 0.25, "c": -0.75}), 0.2, -0.75, output=1)
    x, _ = L.query(pd.DataFrame([[-1.5, 1.5], [1.5, -1.5]], columns=["a", "b"]))
    np.testing.assert_array_equal(x, [-1.5, 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", message=".*feature names")
        L.update(x, 0.3, -1.5, output=0)
    # certified_safe_fraction: labelled corners and gamma are read by name.
    lo, hi = pd.Series({"b": -2.0, "a": -2.0}), pd.Series({"b": 2.0, "a": -1.0})
    with _quiet():
        f_named = L.certified_safe_fraction(lo, hi, cells=2, max_iter=20, random_state=0)
        f_arr = L.certified_safe_fraction([-2.0, -2.0], [-1.0, 2.0], cells=2, max_iter=20, random_state=0)
        r_named = L.certify_safe(pt, pd.Series({"b": 0.0, "a": 0.05}), features=["a"], max_iter=5, random_state=0)
    assert f_named[0] == f_arr[0] and np.array_equal(f_named[1], f_arr[1])
    assert r_named.status[0] == "not_robust"


def test_certified_safe_fraction_refuses_partial_boxes():
    """features= certified each cell along those features only while the
    fraction counted its whole volume: 0.406 -> 0.641 on a 2-D model with
    333 of 12,300 points sampled in the "proven" cells unsafe. domain=
    clipped cells the same way. Both are refused, and certify_options
    cannot restrict the learner's certified boxes either."""
    model, X, z = _safety_model(0, d=2)
    for kw in ({"features": [0]}, {"domain": ([-2.0, -2.0], [0.1, 2.0])}):
        with pytest.raises(ValueError, match=f"does not take {next(iter(kw))}="):
            certified_safe_fraction(model, [-2.0, -2.0], [2.0, 2.0], cells=2, threshold=0.5, **kw)
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner(certify_gamma=0.1, certify_options={"features": [0]})
    L._refit = None  # refused before any model is fitted
    with pytest.raises(ValueError, match="certify_options cannot set features"):
        L.fit(X0, Y0, z0)


def test_certified_safe_fraction_broadcasts_scalar_corners():
    """UX audit (session 26): scalar corners failed with the model's "X has
    1 features" error (no X was passed); they apply to every feature, as a
    domain's do, and a wrong length is named."""
    model, X, z = _safety_model(0, d=2)
    kw = dict(cells=2, threshold=0.5, max_iter=20, random_state=0)
    f_scalar, c_scalar, _ = certified_safe_fraction(model, -2.0, 2.0, **kw)
    f_arr, c_arr, _ = certified_safe_fraction(model, [-2.0, -2.0], [2.0, 2.0], **kw)
    assert f_scalar == f_arr
    np.testing.assert_array_equal(c_scalar, c_arr)
    with pytest.raises(ValueError, match="low must be a scalar or an array of length n_features=2"):
        certified_safe_fraction(model, [-2.0, -2.0, -2.0], [2.0, 2.0], **kw)


@pytest.mark.parametrize("name", ["safety", "warm_start", "normalize_entropy"])
def test_learner_bool_parameters_must_be_bools(name):
    """safety="False" is truthy: the safety constraint stayed on (and
    normalize_entropy="False" switched the normalisation on)."""
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    for bad in ("False", 0, None):
        L = learner(**{name: bad})
        L._refit = None
        with pytest.raises(ValueError, match=f"{name} must be a bool"):
            L.fit(X0, Y0, z0)
    with _quiet():
        assert learner(**{name: np.bool_(True)}).fit(X0, Y0, z0).model_ is not None


def test_prior_roles_are_checked_by_name():
    """A misspelt role ("lengthscale", "weights") was ignored: the seed's
    prior was used without a word."""
    from skgprobust.active import GammaPrior, lmc_map_optimizer, map_optimizer

    k = ConstantKernel(1.0) * RBF(1.0)
    with pytest.raises(ValueError, match="unknown role.*'lengthscale'"):
        map_optimizer(k, priors={"lengthscale": GammaPrior(5.0, 1.0)})
    with pytest.raises(ValueError, match="unknown role.*'weights'"):
        lmc_map_optimizer(RBF(1.0), 2, 2, priors={"weights": GammaPrior(5.0, 1.0)})
    with pytest.raises(ValueError, match="must be a prior"):
        map_optimizer(k, priors={"length_scale": 1.5})
    with pytest.raises(ValueError, match="W must be 'free' or 'fixed'"):
        lmc_map_optimizer(RBF(1.0), 2, 2, W="fixd")
    # The right roles still override (and None drops a prior).
    opt = map_optimizer(k, priors={"length_scale": GammaPrior(5.0, 1.0), "variance": None})
    assert opt.layout[0] is None and repr(opt.layout[1]) == "GammaPrior(5, 1)"


def test_delta_one_is_certified_where_the_std_is_positive():
    """Soundness hunt (session 26): at delta = 1 (z = -inf) every point with
    a positive std is safe (P(safe) > 0), yet certify_safe proved nothing (inf
    - inf in the margin's rounding term gave NaN, then -inf), and a learner
    with certify_gamma found no eligible candidate. Now: boxes whose certified
    variance is positive are robust (bound +inf); at std = 0 the decision is
    the mean's (P(safe) is 0 or 1), in is_safe and in the bound alike; every
    robust box is safe at sampled points by the model's own predict."""
    from skgprobust.active._safety import is_safe, safety_quantile

    model, X, z = _safety_model(0, d=2)
    r = certify_safe(model, X[:4], 0.05, threshold=0.5, delta=1.0)
    assert np.all(r.status == "robust") and np.all(r.bound == np.inf)
    zq = safety_quantile(1.0)
    assert zq == -np.inf
    np.testing.assert_array_equal(is_safe([0.3, 0.7, 0.3], [0.0, 0.0, 1e-3], 0.5, "below", zq), [True, False, True])
    np.testing.assert_array_equal(is_safe([0.3, 0.7], [0.0, 0.0], 0.5, "above", zq), [False, True])
    # one training point, no noise: the std is 0 there (sklearn clips it)
    one = RobustGaussianProcessRegressor(RBF(1.0), alpha=1e-300, optimizer=None).fit([[0.0]], [1.0])
    assert one.predict([[0.0]], return_std=True)[1][0] == 0.0
    rng = np.random.default_rng(0)
    for t, side in ((2.0, "below"), (0.0, "above"), (0.5, "below"), (1.5, "above")):
        for g in (0.0, 0.3):
            res = certify_safe(one, [[0.0]], g, threshold=t, safe_side=side, delta=1.0)
            P = np.vstack([[0.0], rng.uniform(-g, g, (500, 1))])
            mu, sd = one.predict(P, return_std=True)
            safe = is_safe(mu, sd, t, side, zq)
            if res.status[0] == "robust":
                assert safe.all()
            elif res.status[0] == "not_robust":
                assert not is_safe(*one.predict(res.counterexample[0][None], return_std=True), t, side, zq)[0]
            if g == 0.0:
                assert res.status[0] == ("robust" if safe[0] else "not_robust")
    # the learner finds certified candidates at delta = 1
    pool, X0, Y0, z0, oracle, Xt, Yt, zt = toy(0)
    L = learner(certify_gamma=0.01).set_params(delta=1.0)
    L.fit(X0, Y0, z0)
    x, out = L.query(pool)
    assert np.isfinite(x).all()


def test_safety_model_with_two_outputs_is_refused_by_name():
    model, X, z = _safety_model(0, d=1)
    two = RobustGaussianProcessRegressor(RBF(1.0), optimizer=None).fit(X, np.c_[z, z])
    with pytest.raises(UnsupportedModelError, match="with 2 outputs"):
        certify_safe(two, X[:1], 0.1, threshold=0.5)
