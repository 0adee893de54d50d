"""sklearn's one-vs-rest normalisation p~_c / fl(sum_k p~_k) (left as is where
the sum is 0) against the certified probability ranges, where the per-class
values are tiny or of either sign (hunt V1: a box certified [-1.2e-9, 1 +
1.2e-9] where predict_proba reached -1.0 and 2.0)."""

import warnings

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import RobustGaussianProcessClassifier
from skgprobust._engine._objectives import _normalised_interval, _proba


def _sklearn_normalise(Y):
    Y = Y.copy()
    row_sums = np.sum(Y, axis=1)[:, np.newaxis]
    np.divide(Y, row_sums, out=Y, where=row_sums != 0)
    return Y


def test_proba_matches_sklearn_normalisation_with_zero_sums():
    P = np.array([[0.0, 0.0, 0.0], [1e-13, -1e-13, 0.0], [0.2, 0.3, 0.5], [-0.0, 1e-300, 0.0]])
    ref = _sklearn_normalise(P)
    for c in range(3):
        np.testing.assert_array_equal(_proba(P, c, False), ref[:, c])


def test_normalised_interval_contains_sklearn_values():
    """Random per-class intervals (tiny, negative, mixed magnitudes): every
    sklearn-normalised value of points inside them lies in the interval;
    boxes whose sum is not certified positive are unbounded."""
    rng = np.random.default_rng(0)
    checked = unbounded = 0
    for _ in range(300):
        K = int(rng.integers(2, 11))
        scale = 10.0 ** rng.uniform(-14, 0)
        a = rng.uniform(-0.2, 1.0, (1, K)) * scale
        w = rng.uniform(0, 1, (1, K)) * scale * rng.choice([1e-6, 0.1, 1.0])
        plo, phi = a, a + w
        Y = plo + (phi - plo) * rng.random((2000, K))
        Y[:K] = np.where(np.eye(K, dtype=bool), plo, phi)  # corners
        vals = _sklearn_normalise(Y)
        for c in range(K):
            low, high, rel, pos = _normalised_interval(plo, phi, c)
            assert np.all(vals[:, c] >= low[0]) and np.all(vals[:, c] <= high[0]), (K, c, low, high)
            checked += 1
            unbounded += int(not pos[0])
    assert checked > 1000 and 0 < unbounded < checked


def test_ovr_range_covers_normalisation_of_vanishing_probabilities():
    """The hunt's model: every class's probability ~1e-13 of either sign in
    the box, so predict_proba jumps between -1 and 2; the range must say so."""
    rng = np.random.default_rng(3)
    d, K, n = 4, 3, 25
    cent = rng.normal(0, 1.0, (K, d))
    y = np.concatenate([np.arange(K), rng.integers(K, size=n - K)])
    X = cent[y] + rng.normal(0, 0.6, (n, d))
    clf = RobustGaussianProcessClassifier(C(76.9, "fixed") * RBF(2.23), optimizer=None, max_iter_predict=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    x0 = np.array([[-0.4372437, 0.89510729, -0.48773571, 0.09233056]])
    gamma = 0.013156586539950407
    r = clf.prediction_range(x0, gamma, epsilon=1e-4, max_iter=1, random_state=0)
    P = x0 - gamma + 2 * gamma * np.random.default_rng(0).random((3000, d))
    P = np.vstack([P, [[-0.4298681539529203, 0.8839841785173345, -0.47547537842276755, 0.08874884701012327]]])
    pp = clf.predict_proba(P)
    assert np.all(pp >= r.min_lower[0]) and np.all(pp <= r.max_upper[0])


def test_ovr_ranges_sound_when_every_optional_step_is_skipped(monkeypatch):
    """The deadline exits of the one-vs-rest objectives (optional tightening
    skipped past half the row's time, the joint ratio bound past all of it)
    leave sound bounds: forced on (and checked to be reached), sampled
    predict_proba stays inside."""
    from sklearn.datasets import load_iris

    import skgprobust._engine._objectives as obj

    X, y = load_iris(return_X_y=True)
    Xt = X[1::9][:4]
    kw = dict(epsilon=0.01, max_iter=20, random_state=0)
    calls = {"optional": 0, "row": 0}

    def expired(kind):
        def f():
            calls[kind] += 1
            return True

        return f

    monkeypatch.setattr(obj, "optional_work_expired", expired("optional"))
    monkeypatch.setattr(obj, "row_time_expired", expired("row"))
    clf2 = RobustGaussianProcessClassifier(C(1.0) * RBF(1.0), optimizer=None).fit(X[::3], y[::3])
    cut = clf2.prediction_range(Xt, 0.3, **kw)
    P = np.repeat(Xt, 2000, 0) + 0.3 * np.random.default_rng(1).uniform(-1, 1, (4 * 2000, 4))
    pp = clf2.predict_proba(P).reshape(4, 2000, 3)
    assert calls["row"] > 0
    assert np.all(pp >= cut.min_lower[:, None, :]) and np.all(pp <= cut.max_upper[:, None, :])


def test_unit_interval_links_normalise_into_unit_interval():
    """With values in [0, 1] (the probit's ndtr), sklearn's normalised
    p~_c / fl(sum_k p~_k) lies in [0, 1] exactly, zero sums included, so the
    interval is intersected with [0, 1] (boxes without a positive certified
    sum get [0, 1] instead of (-inf, inf)); checked on random values,
    including tiny, zero and subnormal ones."""
    from scipy.special import ndtr

    rng = np.random.default_rng(5)
    for _ in range(400):
        K = int(rng.integers(2, 11))
        z = rng.normal(size=(50, K)) * rng.choice([1.0, 10.0, 40.0])
        P = ndtr(z)
        P[rng.uniform(size=P.shape) < 0.1] = 0.0
        assert np.all((P >= 0) & (P <= 1))
        Y = _sklearn_normalise(P)
        assert np.all((Y >= 0) & (Y <= 1)), Y[(Y < 0) | (Y > 1)]
        plo, phi = P.min(axis=0, keepdims=True), P.max(axis=0, keepdims=True)
        for c in range(K):
            low, high, _, pos = _normalised_interval(plo, phi, c, unit=True)
            assert 0.0 <= low[0] <= high[0] <= 1.0
            assert np.all((Y[:, c] >= low[0]) & (Y[:, c] <= high[0]))
            if not pos[0]:
                assert low[0] == 0.0 and high[0] == 1.0


def test_ep_and_sparse_ovr_ranges_finite_at_large_amplitude():
    """Hunt (session 28): probit one-vs-rest models with amplitude 1e4 got
    probability bounds (-inf, inf) at max_iter=1 / time_limit 1e-3 (no
    certified positive sum at the root box); now within [0, 1] up to the
    margin, and containing predict_proba at points of the box."""
    from skgprobust import EPGaussianProcessClassifier, SparseGaussianProcessClassifier
    from sklearn.gaussian_process.kernels import DotProduct

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (6, 1)) * 1e-3
    y = np.array([0, 1, 2, 0, 1, 2])
    k = C(1e4) * (RBF(1e-3) + DotProduct(0.1))
    gamma = 1e-3
    for est in (EPGaussianProcessClassifier(k, optimizer=None),
                SparseGaussianProcessClassifier(k, inducing_points=6, optimizer=None, random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
            for kw in (dict(max_iter=1), dict(time_limit=1e-3), dict(max_iter=30)):
                r = est.prediction_range(X[:2], gamma, epsilon=1e-4, random_state=0, **kw)
                assert np.all(np.isfinite(r.min_lower)) and np.all(np.isfinite(r.max_upper))
                assert np.all(r.min_lower >= -1e-12) and np.all(r.max_upper <= 1 + 1e-12)
                for i in range(2):
                    pts = X[i] + np.linspace(-gamma, gamma, 201)[:, None]
                    P = est.predict_proba(pts)
                    assert np.all(P >= r.min_lower[i]) and np.all(P <= r.max_upper[i])
