"""The per-fit bound model: built once, shared by every call, invalidated by a
refit, left out of pickles; clear refusals of unsupported kernels and models."""

import pickle
import threading
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_friedman1
from sklearn.gaussian_process.kernels import RBF, GenericKernelMixin, Hyperparameter, Kernel, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import (
    BudgetExhaustedWarning,
    RobustGaussianProcessClassifier,
    RobustGaussianProcessRegressor,
    UnsupportedKernelError,
)
from skgprobust._bounds import _variance

from ._helpers import BOUND_TOL


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        yield


@pytest.fixture(scope="module")
def ovr():
    X, y = make_blobs(90, n_features=2, centers=3, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(X, y)
    return clf, X


@pytest.fixture(scope="module")
def reg():
    X, y = make_friedman1(n_samples=80, n_features=5, noise=0.3, random_state=0)
    r = RobustGaussianProcessRegressor(C(1.0) * RBF(np.ones(5)) + WhiteKernel(0.1), optimizer=None).fit(X, y)
    return r, X


def _count_variance_builds(monkeypatch):
    calls = []
    init = _variance.LatentVariance.__init__

    def counting(self, *args, **kwargs):
        calls.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(_variance.LatentVariance, "__init__", counting)
    return calls


def test_variance_precomputation_once_per_fit(monkeypatch, ovr):
    clf, X = ovr
    clf = clone(clf).fit(X, clf.base_estimator_.estimators_[0].y_train_ * 0 + np.repeat([0, 1, 2], 30))
    calls = _count_variance_builds(monkeypatch)
    r1 = clf.prediction_range(X[:2], 0.05, max_iter=20, random_state=0)
    assert len(calls) == 3  # one per class, first call
    r2 = clf.prediction_range(X[:2], 0.05, max_iter=20, random_state=0)
    clf.certify(X[:3], 0.05, max_iter=20, random_state=0)
    clf.explain(X[:1], 0.05, max_iter=5, random_state=0)
    assert len(calls) == 3  # reused by every later call
    np.testing.assert_array_equal(r1.min_lower, r2.min_lower)
    np.testing.assert_array_equal(r1.max_upper, r2.max_upper)


def test_refit_invalidates(reg):
    r, X = reg
    r = clone(r).fit(X, np.sin(X[:, 0]))
    a = r.prediction_range(X[:2], 0.05, max_iter=50, random_state=0)
    y2 = np.cos(3 * X[:, 1])
    r.fit(X, y2)
    b = r.prediction_range(X[:2], 0.05, max_iter=50, random_state=0)
    fresh = clone(r).fit(X, y2).prediction_range(X[:2], 0.05, max_iter=50, random_state=0)
    np.testing.assert_array_equal(b.min_lower, fresh.min_lower)
    np.testing.assert_array_equal(b.max_upper, fresh.max_upper)
    assert not np.array_equal(a.min_lower, b.min_lower)
    # The refitted model's bounds contain its own predictions.
    pred = r.predict(X[:2])
    assert np.all(b.min_lower[:, 0] <= pred) and np.all(pred <= b.max_upper[:, 0])


def test_pickle_small_and_identical(reg):
    r, X = reg
    r = clone(r).fit(X, np.sin(X[:, 0]))
    size_before = len(pickle.dumps(r))
    res = r.prediction_range(X[:2], 0.05, statistic="std", max_iter=30, random_state=0)
    assert "_skgp_bound_model" in r.__dict__
    blob = pickle.dumps(r)
    assert len(blob) <= size_before + 64  # the cache is not pickled
    r2 = pickle.loads(blob)
    assert "_skgp_bound_model" not in r2.__dict__
    res2 = r2.prediction_range(X[:2], 0.05, statistic="std", max_iter=30, random_state=0)
    for name in ("min_lower", "min_upper", "max_lower", "max_upper"):
        np.testing.assert_array_equal(getattr(res, name), getattr(res2, name))


def test_threads_share_one_model(monkeypatch, ovr):
    clf, X = ovr
    clf = clone(clf).fit(X, np.repeat([0, 1, 2], 30))
    calls = _count_variance_builds(monkeypatch)
    out = [None] * 4

    def work(i):
        out[i] = clf.certify(X[:3], 0.05, max_iter=30, random_state=0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 3
    for o in out[1:]:
        np.testing.assert_array_equal(o.status, out[0].status)
        np.testing.assert_array_equal(o.bound, out[0].bound)


def test_parallel_rows_equal_serial_with_cached_model(reg):
    r, X = reg
    r = clone(r).fit(X, np.sin(X[:, 0]))
    a = r.certify(X[:6], 0.05, delta=0.05, max_iter=30, random_state=1, n_jobs=1)
    b = r.certify(X[:6], 0.05, delta=0.05, max_iter=30, random_state=1, n_jobs=2)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.bound, b.bound)


# -- clear refusals ----------------------------------------------------------


class SequenceKernel(GenericKernelMixin, Kernel):
    """scikit-learn's gallery string kernel (plot_gpr_on_structured_data)."""

    def __init__(self, baseline_similarity=0.5, baseline_similarity_bounds=(1e-5, 1)):
        self.baseline_similarity = baseline_similarity
        self.baseline_similarity_bounds = baseline_similarity_bounds

    @property
    def hyperparameter_baseline_similarity(self):
        return Hyperparameter("baseline_similarity", "numeric", self.baseline_similarity_bounds)

    def _f(self, s1, s2):
        return sum(1.0 if c1 == c2 else self.baseline_similarity for c1 in s1 for c2 in s2)

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        K = np.array([[self._f(x, y) for y in Y] for x in X])
        if eval_gradient:
            return K, np.zeros(K.shape + (1,))
        return K

    def diag(self, X):
        return np.array([self._f(x, x) for x in X])

    def is_stationary(self):
        return False

    def clone_with_theta(self, theta):
        cloned = clone(self)
        cloned.theta = theta
        return cloned


SEQ = np.array(["AGCT", "AGC", "AACT", "TAA", "AAA", "GAACA"])


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.certify(SEQ[:2], 0.1, delta=0.1),
        lambda m: m.prediction_range(SEQ[:2], 0.1),
        lambda m: m.explain(SEQ[:2], 0.1),
    ],
)
def test_string_kernel_regressor_refused_by_name(call):
    gp = RobustGaussianProcessRegressor(kernel=SequenceKernel(), optimizer=None).fit(SEQ, np.arange(6.0))
    with pytest.raises(UnsupportedKernelError, match="SequenceKernel"):
        call(gp)


def test_string_kernel_classifier_refused_by_name():
    gp = RobustGaussianProcessClassifier(kernel=SequenceKernel(), optimizer=None).fit(SEQ, [0, 0, 1, 1, 0, 1])
    with pytest.raises(UnsupportedKernelError, match="SequenceKernel"):
        gp.certify(SEQ[:2], 0.1)
    with pytest.raises(UnsupportedKernelError, match="SequenceKernel"):
        gp.prediction_range(SEQ[:2], 0.1)


def test_unsupported_kernel_part_named_in_sum():
    X = np.linspace(0, 1, 8)[:, None]
    from sklearn.gaussian_process.kernels import PairwiseKernel

    gp = RobustGaussianProcessRegressor(kernel=PairwiseKernel() + WhiteKernel(), optimizer=None).fit(X, X[:, 0])
    with pytest.raises(UnsupportedKernelError, match="PairwiseKernel"):
        gp.certify(X[:1], 0.1, delta=0.1)


def test_one_vs_one_probabilities_refused_with_reason():
    X, y = make_blobs(45, n_features=2, centers=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(multi_class="one_vs_one", optimizer=None).fit(X, y)
    for name in ("prediction_range", "predict_proba", "explain"):
        assert not hasattr(clf, name)
        with pytest.raises(AttributeError, match="one-vs-one.*certify"):
            getattr(clf, name)
    # Certification itself works.
    assert clf.certify(X[:2], 0.01, max_iter=20).status.shape == (2,)


def test_multi_output_norm_certificates_are_not_starved():
    # Two outputs under norm 1 / 2: provable just above the per-output bounds;
    # the controller used to refine a converged output forever ("unknown").
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 2))
    Y = np.column_stack([np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 1])])
    r = RobustGaussianProcessRegressor(RBF(1.0), optimizer=None, alpha=1e-2).fit(X, Y)
    rng_ = r.prediction_range(X[:1], 0.3, epsilon=1e-6)
    c = r.predict(X[:1])[0]
    per = np.maximum(rng_.max_upper[0] - c, c - rng_.min_lower[0])
    for norm in (1, 2):
        delta = 1.01 * np.linalg.norm(per, ord=norm)
        out = r.certify(X[:1], 0.3, delta=delta, norm=norm, max_iter=2000, random_state=0)
        assert out.status[0] == "robust" and out.bound[0] <= delta


def test_restricted_margin_drops_losers_and_stays_sound():
    from skgprobust._engine._common import bound_model_of

    X, y = make_blobs(150, n_features=2, centers=5, cluster_std=0.8, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(X, y)
    bm = bound_model_of(clf)
    rng = np.random.default_rng(0)
    dropped_any = False
    for x in X[::20]:
        label = clf.predict(x[None])[0]
        c = bm.class_index(label)
        lo, hi = x - 0.4, x + 0.4
        full = bm.margin(label)
        g = full.restricted(lo, hi)
        dropped_any |= len(g.others) < len(full.others)
        P = lo + (hi - lo) * rng.random((3000, 2))
        unnorm = np.column_stack([e.predict_proba(P)[:, 1] for e in clf.base_estimator_.estimators_])
        true_margin = unnorm[:, c] - np.delete(unnorm, c, axis=1).max(axis=1)
        # sklearn's one-vs-rest decision (normalised unnorm) on the first 500
        # points: it only normalises, so more points check nothing new.
        proba = clf.base_estimator_.predict_proba(P[:500])
        gv = g.value(P)
        # g <= margin, with the same sign (proofs and counterexamples carry over).
        # g.value is the objective's own evaluation of the margin (the bound
        # model's latent means, not the estimators' predict_proba): two
        # computations of one number, up to 2e-12 apart (measured), so 1e-9
        # here; g's certified box bounds are checked at zero tolerance below.
        assert np.all(gv <= true_margin + 1e-9)
        assert np.array_equal(gv > 0, true_margin > 0)
        assert np.array_equal(true_margin[:500] > 0, proba.argmax(axis=1) == c)
        # Box bounds of g over random sub-boxes are lower bounds of the margin.
        for _ in range(5):
            a, b = np.sort(lo + (hi - lo) * rng.random((2, 2)), axis=0)
            sub = a + (b - a) * rng.random((500, 2))
            m_sub = (lambda U: U[:, c] - np.delete(U, c, axis=1).max(axis=1))(
                np.column_stack([e.predict_proba(sub)[:, 1] for e in clf.base_estimator_.estimators_])
            )
            assert g.bound(a[None], b[None]).lower[0] <= m_sub.min() + BOUND_TOL
    assert dropped_any


@pytest.mark.parametrize("est", ["laplace", "ep"])
def test_decision_rule_from_fitted_wrapper_not_parameter(est):
    # Hunt (this stop): fit one-vs-one, set_params(multi_class="one_vs_rest")
    # without a refit: predict still uses the fitted one-vs-one wrapper, but
    # certify read the parameter and proved the one-vs-rest rule ("robust"
    # rows whose label flips in the box).
    from skgprobust import EPGaussianProcessClassifier

    Est = RobustGaussianProcessClassifier if est == "laplace" else EPGaussianProcessClassifier
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.7, 0.7])
    Xq = rng.uniform(-2, 2, (30, 2))
    g = 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = Est(C(1.0) * RBF(1.0), multi_class="one_vs_one", random_state=0).fit(X, y)
    clf.set_params(multi_class="one_vs_rest")
    assert clf._bound_model().kind == "one_vs_one"
    r = clf.certify(Xq, g, max_iter=100, random_state=0)
    y0 = clf.predict(Xq)
    robust = np.flatnonzero(r.status == "robust")
    assert robust.size >= 5
    for i in robust:
        P = Xq[i] + rng.uniform(-g, g, (4000, 2))
        assert np.all(clf.predict(P) == y0[i]), i
    # probabilities: the fitted one-vs-one model has none, whatever the parameter says
    assert not hasattr(clf, "prediction_range")


def test_reassigned_fitted_attribute_invalidates(reg):
    # Hunt (this stop): a hand-set kernel_ after a first call reused the stale
    # bound model (certified min 0.049 above predict's 0.0004 in the box).
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (25, 3))
    y = np.sin(X).sum(1)
    xq = np.array([[1.0, 1.0, 1.0]])
    g = 0.3
    r = RobustGaussianProcessRegressor(C(1.0) * RBF([1.0] * 3), optimizer=None).fit(X, y)
    r.prediction_range(xq, g, max_iter=200, random_state=0)
    first = r._bound_model()
    assert r._bound_model() is first  # reused while nothing changes
    r.kernel_ = C(1.0) * RBF([0.3] * 3)
    res = r.prediction_range(xq, g, max_iter=200, random_state=0)
    assert r._bound_model() is not first
    m = r.predict(xq + rng.uniform(-g, g, (20000, 3)))
    assert res.min_lower[0, 0] <= m.min() and m.max() <= res.max_upper[0, 0]


@pytest.mark.parametrize("name", ["gpr", "gpc", "ep", "softmax", "sparse", "multioutput"])
def test_cache_reused_across_calls(name):
    # The invalidation by fitted-attribute identity must not rebuild the model
    # on every call (no call may store new attributes on the estimator).
    import skgprobust as S

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (30, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = {
            "gpr": lambda: S.RobustGaussianProcessRegressor(RBF(1.0), optimizer=None).fit(X, X[:, 0]),
            "gpc": lambda: RobustGaussianProcessClassifier(RBF(1.0), optimizer=None).fit(X, y),
            "ep": lambda: S.EPGaussianProcessClassifier(RBF(1.0), optimizer=None).fit(X, y),
            "softmax": lambda: S.SoftmaxGaussianProcessClassifier(RBF(1.0), optimizer=None).fit(X, y),
            "sparse": lambda: S.SparseGaussianProcessRegressor(
                RBF(1.0) + WhiteKernel(0.1), inducing_points=10, optimizer=None, random_state=0
            ).fit(X, X[:, 0]),
            "multioutput": lambda: S.MultiOutputGaussianProcessRegressor(RBF(1.0), optimizer=None).fit(
                X, np.c_[X[:, 0], X[:, 1]]
            ),
        }[name]()
    kw = {"delta": 0.5} if name in ("gpr", "sparse", "multioutput") else {}
    est.certify(X[:2], 0.05, max_iter=5, random_state=0, **kw)
    first = est._bound_model()
    est.certify(X[:2], 0.05, max_iter=5, random_state=0, **kw)
    if hasattr(est, "prediction_range"):
        est.prediction_range(X[:1], 0.05, max_iter=5, random_state=0)
    assert est._bound_model() is first


def test_sparse_classifier_rule_from_fitted_wrapper():
    from skgprobust import SparseGaussianProcessClassifier

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.7, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SparseGaussianProcessClassifier(
            C(1.0) * RBF(1.0), inducing_points=15, multi_class="one_vs_one", optimizer=None, random_state=0
        ).fit(X, y)
    clf.set_params(multi_class="one_vs_rest")
    assert clf._bound_model().kind == "one_vs_one"
    assert not hasattr(clf, "prediction_range")


@pytest.mark.slow
def test_softmax_layout_from_the_fit_not_the_parameter():
    # Hunt (this stop): set_params(shared_kernel=True) after a per-class fit
    # changed predict_proba (by up to 0.28) and the bounds were built for a
    # mixed state (a range crossed predict_proba by 4e-9).
    from skgprobust import SoftmaxGaussianProcessClassifier

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.7, 0.7])
    Xq = rng.uniform(-2, 2, (4, 2))
    g = 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sm = SoftmaxGaussianProcessClassifier(C(1.0) * RBF(1.0), shared_kernel=False, random_state=0).fit(X, y)
    p_fit = sm.predict_proba(Xq)
    lml = sm.log_marginal_likelihood()
    sm.set_params(shared_kernel=True)
    np.testing.assert_array_equal(sm.predict_proba(Xq), p_fit)
    assert sm.log_marginal_likelihood() == lml
    r = sm.prediction_range(Xq[:2], g, max_iter=30, random_state=0)
    for i in range(2):
        P = np.vstack([Xq[i] + rng.uniform(-g, g, (3000, 2)), Xq[i] + g * np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]])])
        p = sm.predict_proba(P)
        assert np.all(p.min(0) >= r.min_lower[i]) and np.all(p.max(0) <= r.max_upper[i])
