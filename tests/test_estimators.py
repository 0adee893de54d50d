"""scikit-learn conventions, determinism, parallelism and pickling."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor


@parametrize_with_checks([RobustGaussianProcessRegressor(), RobustGaussianProcessClassifier()])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _assert_same(a, b):
    for name in a.__dataclass_fields__:
        if name == "time":
            continue
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=name)  # NaN == NaN here
        else:
            assert np.array_equal(x, y), name


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.column_stack([np.sin(2 * X[:, 0]) + X[:, 1], np.cos(X.sum(1))])
    reg = RobustGaussianProcessRegressor(kernel=Matern([0.8, 1.2], nu=1.5) + WhiteKernel(0.01), optimizer=None)
    reg.fit(X, y)
    yc = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(3.0) * RBF(0.7), optimizer=None).fit(X, yc)
    X_test = np.vstack([X[:4], rng.uniform(-2, 2, (4, 2))])
    return reg, clf, X_test


def _calls(reg, clf, X_test):
    """Every entry point with budgets that stop some rows early (max_iter:
    deterministic), big boxes so the random starts matter."""
    return {
        "reg.range": lambda **kw: reg.prediction_range(X_test, 0.5, epsilon=1e-4, max_iter=40, **kw),
        "reg.certify": lambda **kw: reg.certify(X_test, 0.5, delta=0.4, norm=2, max_iter=40, **kw),
        "clf.range": lambda **kw: clf.prediction_range(X_test, 0.5, epsilon=1e-4, max_iter=40, **kw),
        "clf.certify": lambda **kw: clf.certify(X_test, 0.4, max_iter=40, **kw),
    }


@pytest.mark.parametrize("call", ["reg.range", "reg.certify", "clf.range", "clf.certify"])
def test_n_jobs_gives_identical_results(models, call):
    fn = _calls(*models)[call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        serial = fn(n_jobs=1, random_state=7)
        parallel = fn(n_jobs=2, random_state=7)
    _assert_same(serial, parallel)


@pytest.mark.parametrize("call", ["reg.range", "reg.certify", "clf.range", "clf.certify"])
def test_same_random_state_same_results(models, call):
    fn = _calls(*models)[call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        a = fn(random_state=123)
        b = fn(random_state=123)
        c = fn(random_state=np.random.RandomState(123))
    _assert_same(a, b)
    _assert_same(a, c)


@pytest.mark.parametrize("which", ["reg", "clf"])
def test_pickle_roundtrip(models, which):
    reg, clf, X_test = models
    est = reg if which == "reg" else clf
    loaded = pickle.loads(pickle.dumps(est))
    assert type(loaded) is type(est)
    np.testing.assert_array_equal(loaded.predict(X_test), est.predict(X_test))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        if which == "reg":
            a = est.certify(X_test, 0.3, delta=0.4, max_iter=50, random_state=0)
            b = loaded.certify(X_test, 0.3, delta=0.4, max_iter=50, random_state=0)
            _assert_same(a, b)
            a = est.prediction_range(X_test, 0.3, max_iter=50, random_state=0)
            b = loaded.prediction_range(X_test, 0.3, max_iter=50, random_state=0)
        else:
            a = est.certify(X_test, 0.3, max_iter=50, random_state=0)
            b = loaded.certify(X_test, 0.3, max_iter=50, random_state=0)
    _assert_same(a, b)


def test_drop_in_subclasses():
    """Same parameters, same fit and same predictions as the sklearn estimators."""
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, (25, 2))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2
    yc = (y > np.median(y)).astype(int)
    X_test = rng.uniform(-2, 2, (10, 2))
    assert set(RobustGaussianProcessRegressor().get_params()) == set(GaussianProcessRegressor().get_params())
    assert set(RobustGaussianProcessClassifier().get_params()) == set(GaussianProcessClassifier().get_params())
    params = dict(kernel=ConstantKernel(1.0) * RBF([1.0, 1.0]) + WhiteKernel(0.1), random_state=0)
    reg = RobustGaussianProcessRegressor(**params).fit(X, y)  # with sklearn's optimizer
    base = GaussianProcessRegressor(**params).fit(X, y)
    assert isinstance(reg, GaussianProcessRegressor)
    np.testing.assert_array_equal(reg.predict(X_test), base.predict(X_test))
    params = dict(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0)
    clf = RobustGaussianProcessClassifier(**params).fit(X, yc)
    basec = GaussianProcessClassifier(**params).fit(X, yc)
    assert isinstance(clf, GaussianProcessClassifier)
    np.testing.assert_array_equal(clf.predict_proba(X_test), basec.predict_proba(X_test))
    assert clone(clf).get_params()["kernel"] == params["kernel"]


def test_classifier_certify_never_calls_cvxpy(models, monkeypatch):
    cvxpy = pytest.importorskip("cvxpy")

    def forbidden(*args, **kwargs):
        raise AssertionError("cvxpy.Problem.solve called by a two-class certify")

    monkeypatch.setattr(cvxpy.Problem, "solve", forbidden)
    reg, clf, X_test = models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        c = clf.certify(X_test, 0.3, max_iter=200, random_state=0)
        r = clf.prediction_range(X_test, 0.3, max_iter=200, random_state=0)
    # The default variance bounds behind probability ranges need no solver either.
    assert c.status.shape == (len(X_test),) and r.min_lower.shape == (len(X_test), 2)


def test_results_to_frame(models):
    pytest.importorskip("pandas")
    reg, clf, X_test = models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        r = reg.prediction_range(X_test, 0.2, max_iter=50, random_state=0)
        c = clf.certify(X_test, 0.2, max_iter=50, random_state=0)
    fr = r.to_frame()
    assert len(fr) == len(X_test) and "min_lower_1" in fr.columns
    np.testing.assert_array_equal(fr["max_upper_0"], r.max_upper[:, 0])
    fc = c.to_frame()
    np.testing.assert_array_equal(fc["status"], c.status)
    assert len(c) == len(X_test) and len(r) == len(X_test)
    # The input DataFrame's index, when given (audit: it was always 0..n-1).
    labels = [f"r{i}" for i in range(len(X_test))]
    assert c.to_frame(index=labels).index.tolist() == labels == r.to_frame(index=labels).index.tolist()
    with pytest.raises(ValueError, match="one label per row"):
        c.to_frame(index=labels[:-1])


def _allocator_tuned(_):
    from skgprobust._engine import _common

    _common._keep_freed_memory()
    return _common._MALLOC_TUNED


def test_allocator_tuning_only_in_worker_processes():
    # Worker processes tune glibc's allocator for speed; the user's own
    # process (n_jobs=1 or the threading backend) must be left alone.
    import sys

    from joblib import Parallel, delayed, parallel_backend

    from skgprobust._engine import _common

    with parallel_backend("threading"):
        assert Parallel(n_jobs=2)(delayed(_allocator_tuned)(i) for i in range(2)) == [False, False]
    assert _common._MALLOC_TUNED is False
    if sys.platform.startswith("linux"):
        assert Parallel(n_jobs=2)(delayed(_allocator_tuned)(i) for i in range(2)) == [True, True]


# -- the shared method docstrings (skgprobust/_engine/_api.py) -----------------

#: Estimators whose certify / prediction_range / explain docstrings come from
#: the shared fragments (their own, inherited or generated methods).
_DOC_FILLED = (
    "RobustGaussianProcessClassifier",
    "RobustGaussianProcessRegressor",
    "EPGaussianProcessClassifier",
    "SoftmaxGaussianProcessClassifier",
    "SparseGaussianProcessRegressor",
    "SparseGaussianProcessClassifier",
    "MultiOutputGaussianProcessRegressor",
)


@pytest.mark.parametrize("name", _DOC_FILLED)
@pytest.mark.parametrize("method", ["certify", "prediction_range", "explain"])
def test_method_docstrings_document_the_signature(name, method):
    """numpydoc parses each filled docstring; its Parameters are exactly the
    signature's, in order, each with a type and a description; one Returns
    entry; no placeholder left."""
    import inspect

    from numpydoc.docscrape import FunctionDoc

    import skgprobust

    func = getattr(getattr(skgprobust, name), method)
    assert "%(" not in func.__doc__
    doc = FunctionDoc(func)
    params = [p for p in inspect.signature(func).parameters if p != "self"]
    assert [p.name for p in doc["Parameters"]] == params
    for p in doc["Parameters"]:
        assert p.type and p.desc, p.name
    (ret,) = doc["Returns"]
    assert ret.type in ("CertificationResult", "RangeResult", "Explanation") and ret.desc


def test_fill_doc_indents_and_refuses_unknown_keys():
    from skgprobust._engine._api import DOCS, fill_doc

    def f():
        """Summary 100% literal.

        Parameters
        ----------
        %(gamma)s
        """

    fill_doc(f)
    body = DOCS["gamma"].split("\n")
    assert f.__doc__.split("\n")[4:6] == ["        " + line for line in body]
    assert "100% literal" in f.__doc__

    def g():
        """%(no_such_entry)s"""

    with pytest.raises(KeyError):
        fill_doc(g)


# -- the public methods' signatures (skgprobust/_engine/_api.py writes them) ----

_RUN_SIG = "features=None, domain=None, max_iter=None, time_limit=None, n_jobs=None, random_state=None, verbose=0"
_VB = ", variance_bound='default'"


def _signatures(statistic, target, vb):
    return {
        "certify": f"(self, X, gamma, *, delta=None, norm=inf, {_RUN_SIG}{vb[0]})",
        "prediction_range": f"(self, X, gamma, *, epsilon=0.01, statistic={statistic!r}, {_RUN_SIG}{vb[1]})",
        "explain": (
            f"(self, X, gamma, *, features=None, target={target!r}, epsilon=0.01, method='bounds', "
            f"{_RUN_SIG.removeprefix('features=None, ')}{vb[2]})"
        ),
    }


#: The documented signatures, written out: a change of the public API must
#: show up here.
_SIGNATURES = {
    "RobustGaussianProcessRegressor": _signatures("mean", 0, ("", _VB, "")),
    "SparseGaussianProcessRegressor": _signatures("mean", 0, ("", _VB, "")),
    "MultiOutputGaussianProcessRegressor": _signatures("mean", 0, ("", "", "")),
    "RobustGaussianProcessClassifier": _signatures("proba", None, (_VB, _VB, _VB)),
    "EPGaussianProcessClassifier": _signatures("proba", None, (_VB, _VB, _VB)),
    "SparseGaussianProcessClassifier": _signatures("proba", None, (_VB, _VB, _VB)),
    "SoftmaxGaussianProcessClassifier": _signatures("proba", None, ("", "", "")),
}


@pytest.mark.parametrize("name", sorted(_SIGNATURES))
@pytest.mark.parametrize("method", ["certify", "prediction_range", "explain"])
def test_public_method_signatures(name, method):
    """Each estimator's certify / prediction_range / explain has exactly the
    documented signature, and a wrong call fails as a hand-written method's
    does (a TypeError naming the method)."""
    import inspect

    import skgprobust

    cls = getattr(skgprobust, name)
    func = getattr(cls, method)
    assert str(inspect.signature(func)) == _SIGNATURES[name][method]
    assert func.__module__.startswith("skgprobust.") and func.__qualname__.endswith("." + method)
    with pytest.raises(TypeError, match=rf"{method}\(\) got an unexpected keyword argument 'no_such_argument'"):
        getattr(cls(), method)([[0.0]], 0.1, no_such_argument=1)
    with pytest.raises(TypeError, match=rf"{method}\(\) missing 1 required positional argument: 'gamma'"):
        getattr(cls(), method)([[0.0]])


def test_generated_methods_are_the_declaring_class_own():
    """The mixin writes the methods on the class that declares their
    docstrings (qualname and module are that class's, as before); subclasses
    that declare nothing inherit them."""
    import skgprobust

    for name in ("RobustGaussianProcessRegressor", "RobustGaussianProcessClassifier"):
        cls = getattr(skgprobust, name)
        for method in ("certify", "prediction_range", "explain"):
            func = getattr(cls, method)
            assert func.__qualname__ == f"{name}.{method}" and func.__module__ == cls.__module__
    assert skgprobust.EPGaussianProcessClassifier.certify is skgprobust.RobustGaussianProcessClassifier.certify
    assert skgprobust.SparseGaussianProcessRegressor.explain is skgprobust.RobustGaussianProcessRegressor.explain


def _optimizer_estimators():
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    import skgprobust as sk

    k = ConstantKernel(1.0) * RBF(1.0)
    return [
        (sk.RobustGaussianProcessRegressor(k), "reg"),
        (sk.RobustGaussianProcessClassifier(k), "clf"),
        (sk.EPGaussianProcessClassifier(k), "clf"),
        (sk.SoftmaxGaussianProcessClassifier(k), "clf3"),
        (sk.SoftmaxGaussianProcessClassifier(k, shared_kernel=False), "clf3"),
        (sk.SparseGaussianProcessRegressor(k, inducing_points=5), "reg"),
        (sk.SparseGaussianProcessClassifier(k, inducing_points=5), "clf"),
        (sk.MultiOutputGaussianProcessRegressor(k, n_latent=1), "reg"),
    ]


@pytest.mark.parametrize("i", range(8))
def test_callable_optimizer_gets_sklearns_obj_func(i):
    """sklearn's contract for a callable ``optimizer``: it is called as
    optimizer(obj_func, initial_theta, bounds), and obj_func(theta,
    eval_gradient=True) returns (value, gradient) while obj_func(theta,
    eval_gradient=False) returns the value alone. (The softmax classifier's
    obj_func took no eval_gradient before.)"""
    est, kind = _optimizer_estimators()[i]
    rng = np.random.default_rng(i)
    X = rng.normal(size=(18, 2))
    y = {"reg": np.sin(X[:, 0]), "clf": (X[:, 0] > 0).astype(int), "clf3": np.arange(18) % 3}[kind]
    seen = []

    def optimizer(obj_func, initial_theta, bounds):
        v, g = obj_func(initial_theta, eval_gradient=True)
        v0 = obj_func(initial_theta, eval_gradient=False)
        v1 = obj_func(initial_theta)
        seen.append((v, v0, v1[0] if isinstance(v1, tuple) else v1, np.shape(g), np.shape(initial_theta)))
        return initial_theta, v

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_params(optimizer=optimizer).fit(X, y)
    assert seen
    for v, v0, v1, gshape, tshape in seen:
        assert np.ndim(v0) == 0 and np.isfinite(v0)
        assert np.isclose(v, v0, rtol=1e-8, atol=1e-10) and np.isclose(v, v1, rtol=1e-8, atol=1e-10)
        assert gshape == tshape
