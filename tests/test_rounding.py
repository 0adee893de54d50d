"""Input rounding: features with a large offset (timestamps, ids) make
sklearn's kernel values err by ~ u |x| / length_scale, far beyond a relative
margin. The adapters bound that error (KernelAdapter.rounding) and every
bound widens by it; these tests check both against sklearn's own numbers."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    ExpSineSquared,
    Exponentiation,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgprobust import RobustGaussianProcessRegressor
from skgprobust.kernels import make_adapter

KERNELS = {
    "rbf-aniso": RBF([0.3, 1.0]),
    "matern0.5": Matern([0.6, 0.9], nu=0.5),
    "matern1.5": Matern(0.7, nu=1.5),
    "matern2.5": Matern([0.65, 0.96], nu=2.5),
    "rq": RationalQuadratic(0.8, 2.0),
    "expsine": ExpSineSquared(1.0, 3.0),
    "dot": DotProduct(1.0),
    "c*rbf+c*dot": ConstantKernel(3.0) * RBF(0.5) + ConstantKernel(1e-20) * DotProduct(0.1),
    "rbf**2": RBF(0.5) ** 2,
    "rbf*matern": RBF(0.8) * Matern(1.2, nu=1.5),
}


def _exact_kernel(name, kernel, X, Y):
    """Kernel values from exact coordinate differences (long double), the
    rest in float64: the reference sklearn's values are compared with."""
    D = X.astype(np.longdouble)[:, None, :] - Y.astype(np.longdouble)[None, :, :]

    def dot(sigma_0):  # inner products in long double (11 more bits)
        return (X.astype(np.longdouble) @ Y.astype(np.longdouble).T + sigma_0**2).astype(np.float64)

    if name == "dot":
        return dot(1.0)
    if name == "expsine":
        d = np.sqrt((D**2).sum(-1)).astype(np.float64)
        return np.exp(-2 * (np.sin(np.pi * d / 3.0) / 1.0) ** 2)

    def stationary(k, D):
        ls = np.broadcast_to(np.asarray(k.length_scale, dtype=np.float64), (X.shape[1],))
        r = np.sqrt(((D / ls.astype(np.longdouble)) ** 2).sum(-1)).astype(np.float64)
        if isinstance(k, Matern):
            s = {0.5: r, 1.5: np.sqrt(3) * r, 2.5: np.sqrt(5) * r}[k.nu]
            return {0.5: np.exp(-s), 1.5: (1 + s) * np.exp(-s), 2.5: (1 + s + s**2 / 3) * np.exp(-s)}[k.nu]
        if isinstance(k, RationalQuadratic):
            return (1 + r**2 / (2 * k.alpha)) ** -k.alpha
        return np.exp(-0.5 * r**2)

    if name == "c*rbf+c*dot":
        return 3.0 * stationary(kernel.k1.k2, D) + 1e-20 * dot(0.1)
    if name == "rbf**2":
        return stationary(kernel.kernel, D) ** 2
    if name == "rbf*matern":
        return stationary(kernel.k1, D) * stationary(kernel.k2, D)
    return stationary(kernel, D)


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("offset", [0.0, 3.2e9, 1.4e11])
def test_rounding_bounds_cover_sklearn_kernel_values(name, offset):
    rng = np.random.default_rng(0)
    kernel = KERNELS[name]
    Xs = np.column_stack([offset + rng.uniform(0, 6, 25), rng.uniform(0, 6, 25)])
    X = np.column_stack([offset + rng.uniform(0, 6, 200), rng.uniform(0, 6, 200)])
    ad = make_adapter(kernel, Xs)
    E = ad.rounding(X, X)
    assert E.shape == (200, 25) and np.all(E >= 0)
    ref = _exact_kernel(name, kernel, X, Xs)
    K = kernel(X, Xs)
    err = np.abs(K - ref)
    # relative rounding of the value itself is covered by the relative margin
    assert np.all(err <= E + 1e-13 * np.abs(ref) + 1e-300), (name, float((err - E).max()))
    if offset >= 1e9 and name in ("rbf-aniso", "matern2.5", "rbf*matern"):
        # the error is real (x / length_scale rounds); RQ and ExpSineSquared
        # subtract raw inputs (exact here, Sterbenz), length scale 0.5 is exact
        assert err.max() > 1e-9


def _scan_faces(reg, lo, hi, n=20001):
    """sklearn's predictions on a dense grid of every edge of a 2-D box."""
    t0, t1 = np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)
    P = np.vstack([np.column_stack([np.full(n, a), t1]) for a in (lo[0], hi[0])]
                  + [np.column_stack([t0, np.full(n, b)]) for b in (lo[1], hi[1])])
    return P


def _offset_case(trial):
    """The random configurations of the adversarial sweep that found the bug
    (converged mean ranges excluded sklearn's predictions by 1.2e-7 and 2.6e-6)."""
    rng = np.random.default_rng(5)
    for t in range(trial + 1):
        off = 10 ** rng.uniform(9, 13)
        ls = rng.uniform(0.3, 1.5, 2)
        kernel = [RBF(ls), Matern(ls, nu=2.5), Matern(ls, nu=1.5), RationalQuadratic(ls[0], 2.0)][t % 4]
        X = np.column_stack([off + rng.uniform(0, 6, 30), rng.uniform(0, 6, 30)])
        y = np.sin(2 * (X[:, 0] - off)) + (X[:, 1] - 3) ** 2 / 3
        x0 = np.column_stack([off + rng.uniform(1, 5, 4), rng.uniform(1, 5, 4)])
        g = np.array([rng.uniform(0.05, 0.5), rng.uniform(0.2, 1.0)])
    return kernel, X, y, x0[:1], g


@pytest.mark.parametrize("trial", [8, 9])
def test_mean_and_std_ranges_hold_for_offset_features(trial):
    kernel, X, y, x0, g = _offset_case(trial)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(kernel=kernel, optimizer=None, alpha=1e-4).fit(X, y)
        rm = reg.prediction_range(x0, g, epsilon=1e-9, max_iter=2000)
        rs = reg.prediction_range(x0, g, statistic="std", epsilon=1e-6, max_iter=300)
    lo, hi = x0[0] - g, x0[0] + g
    P = np.vstack([_scan_faces(reg, lo, hi, 100001), lo + rng.uniform(size=(20000, 2)) * (hi - lo)])
    mu, sd = GaussianProcessRegressor.predict(reg, P, return_std=True)
    assert mu.min() >= rm.min_lower[0, 0] - 1e-9
    assert mu.max() <= rm.max_upper[0, 0] + 1e-9
    assert sd.min() >= rs.min_lower[0, 0] - 1e-9
    assert sd.max() <= rs.max_upper[0, 0] + 1e-9


@pytest.mark.parametrize("alpha", [1e3, 1e5, 1e6])
@pytest.mark.parametrize("model", ["dense", "sparse", "multioutput", "classifier"])
def test_rational_quadratic_large_alpha_rounding(alpha, model):
    """RationalQuadratic with large alpha: sklearn's ``(1 + d2 / (2 alpha
    l^2)) ** -alpha`` carries a relative rounding of about alpha * u (the
    rounding of its base, raised to the power alpha), far beyond the few
    ulps of the relative margin. Found by an adversarial hunt (certified
    mean bounds off by 2.8e-5 at alpha = 1e5 and wrong ``certify_safe``
    certificates); the adapter's ``rounding`` now covers it. The model's own
    values on a dense grid and in tiny neighbourhoods of its extremes must
    stay inside the certified ranges for every model family."""
    from sklearn.gaussian_process.kernels import RationalQuadratic

    import skgprobust as sg

    rng = np.random.RandomState(0)
    X = np.linspace(0, 1, 15)[:, None]
    y = rng.randn(15)
    kern = RationalQuadratic(length_scale=0.3, alpha=alpha, alpha_bounds="fixed")
    if model == "dense":
        m = sg.RobustGaussianProcessRegressor(kern, optimizer=None, alpha=1e-6).fit(X, y)
        f, stat = (lambda Q: m.predict(Q)), "mean"
    elif model == "sparse":
        m = sg.SparseGaussianProcessRegressor(kern, optimizer=None, inducing_points=X, alpha=1e-6).fit(X, y)
        f, stat = (lambda Q: m.predict(Q)), "mean"
    elif model == "multioutput":
        m = sg.MultiOutputGaussianProcessRegressor(kern, W="identity", optimizer=None, noise_level=1e-6,
                                                   noise_level_bounds="fixed").fit(X, y[:, None])
        f, stat = (lambda Q: np.asarray(m.predict(Q)).reshape(len(Q), -1)[:, 0]), "mean"
    else:
        m = sg.RobustGaussianProcessClassifier(10.0 * kern, optimizer=None).fit(X, (y > 0).astype(int))
        f, stat = (lambda Q: m.predict_proba(Q)[:, 1]), "proba"
    x0 = np.array([[0.537]])
    gamma = 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = m.prediction_range(x0, gamma, epsilon=1e-9, statistic=stat, max_iter=500, random_state=0)
    col = 1 if stat == "proba" else 0
    lo, hi = r.min_lower[0, col], r.max_upper[0, col]
    G = np.linspace(x0[0] - gamma, x0[0] + gamma, 20001)
    v = f(G)
    vals = [v]
    for c in (G[np.argmin(v)], G[np.argmax(v)]):
        J = np.clip(c + np.linspace(-1e-6, 1e-6, 4001)[:, None], x0[0] - gamma, x0[0] + gamma)
        vals.append(f(J))
    v = np.concatenate(vals)
    assert v.min() >= lo - 1e-12 and v.max() <= hi + 1e-12, (v.min() - lo, hi - v.max())


# --- float32 inputs -----------------------------------------------------------
# sklearn keeps float32 inputs (dtype="numeric"); DotProduct then evaluates
# np.inner and diag in float32, which a rank-deficient alpha_ amplifies far
# beyond the float64 margins. Found by the adversarial hunt: mean ranges of a
# float32-fitted C * DotProduct**2 regressor were exceeded by up to 1.5e-2 by
# predict at float32 points. The robust estimators now fit and predict in
# float64 (skgprobust._engine._common.float64_inputs).


def _float32_points(x0, gamma, n, rng):
    lo, hi = x0.astype(np.float64) - gamma, x0.astype(np.float64) + gamma
    P = rng.uniform(lo, hi, size=(n, x0.size))
    corners = np.array(np.meshgrid(*zip(lo, hi))).reshape(x0.size, -1).T
    P32 = np.vstack([P, corners, x0[None]]).astype(np.float32)
    return P32[np.all((P32 >= lo) & (P32 <= hi), axis=1)]


@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("gamma", [1e-6, 1e-3, 0.1])
def test_float32_dotproduct_regressor_ranges_hold_for_float32_queries(power, gamma):
    rng = np.random.default_rng(power)
    X = rng.normal(size=(20, 2)).astype(np.float32)
    y = (X.astype(np.float64) ** 2).sum(1) + 0.01 * rng.normal(size=20)
    reg = RobustGaussianProcessRegressor(ConstantKernel(1.0) * DotProduct(1.0) ** power, alpha=1e-3, optimizer=None)
    reg.fit(X, y)
    assert reg.X_train_.dtype == np.float64
    x0 = X[3]
    P32 = _float32_points(x0, gamma, 2000, rng)
    # float32 queries are evaluated in float64 on their exact values
    np.testing.assert_array_equal(reg.predict(P32), reg.predict(P32.astype(np.float64)))
    for statistic in ("mean", "std"):
        r = reg.prediction_range(x0[None], gamma, statistic=statistic, epsilon=1e-9, max_iter=200, random_state=0)
        if statistic == "mean":
            v = reg.predict(P32)
        else:
            v = reg.predict(P32, return_std=True)[1]
        assert r.min_lower[0, 0] <= v.min()
        assert v.max() <= r.max_upper[0, 0]


@pytest.mark.parametrize("cls_name", ["RobustGaussianProcessClassifier", "EPGaussianProcessClassifier"])
def test_float32_dotproduct_classifier_ranges_hold_for_float32_queries(cls_name):
    import skgprobust

    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 2)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    clf = getattr(skgprobust, cls_name)(ConstantKernel(1.0) * DotProduct(1.0) ** 2, optimizer=None).fit(X, y)
    x0 = X[4]
    for gamma in (1e-6, 1e-3):
        P32 = _float32_points(x0, gamma, 1000, rng)
        np.testing.assert_array_equal(clf.predict_proba(P32), clf.predict_proba(P32.astype(np.float64)))
        np.testing.assert_array_equal(clf.predict(P32), clf.predict(P32.astype(np.float64)))
        r = clf.prediction_range(x0[None], gamma, epsilon=1e-9, max_iter=200, random_state=0)
        p = clf.predict_proba(P32)
        assert np.all(r.min_lower[0] <= p.min(0))
        assert np.all(p.max(0) <= r.max_upper[0])


def test_float32_rows_in_a_list_are_evaluated_in_float64():
    # list(X32) is a list of float32 rows; sklearn's validation would build a
    # float32 array and DotProduct.diag would run in float32 (proof review:
    # std off by up to 0.34 against prediction_range's float64 evaluation).
    rng = np.random.default_rng(3)
    X = (30 * rng.normal(size=(6, 2))).astype(np.float32)
    reg = RobustGaussianProcessRegressor(DotProduct(1.0) ** 2 + WhiteKernel(1e-3), optimizer=None)
    reg.fit(list(X), rng.normal(size=6))
    assert reg.X_train_.dtype == np.float64
    rows = list(X[:5])
    m32, s32 = reg.predict(rows, return_std=True)
    m64, s64 = reg.predict(X[:5].astype(np.float64), return_std=True)
    np.testing.assert_array_equal(m32, m64)
    np.testing.assert_array_equal(s32, s64)
    r = reg.prediction_range(rows, 1e-9, statistic="std", epsilon=1e-9, max_iter=50)
    assert np.all(r.min_lower[:, 0] <= s32) and np.all(s32 <= r.max_upper[:, 0])


def test_node_rule_upper_bound_covers_values_above_one():
    # The softmax node rule's value can exceed 1 by rounding (two classes,
    # one dominant: 1 + 1.55e-15); its box bound must not be clipped at 1.
    from skgprobust._bounds._softmax import node_rule_bounds, node_rule_value

    mu = np.array([[40.0, 0.0]])
    var = np.array([[1e-6, 1e-6]])
    v = node_rule_value(mu, var)
    lo, hi = node_rule_bounds(mu, mu, var, var)
    assert np.all(lo <= v) and np.all(v <= hi)


def test_float32_dataframe_inputs_are_evaluated_in_float64():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    X = pd.DataFrame((30 * rng.normal(size=(6, 2))).astype(np.float32), columns=["a", "b"])
    reg = RobustGaussianProcessRegressor(DotProduct(1.0) ** 2 + WhiteKernel(1e-3), optimizer=None)
    reg.fit(X, rng.normal(size=6))
    assert reg.X_train_.dtype == np.float64
    assert list(reg.feature_names_in_) == ["a", "b"]
    s32 = reg.predict(X.iloc[:5], return_std=True)[1]
    s64 = reg.predict(X.iloc[:5].astype(np.float64), return_std=True)[1]
    np.testing.assert_array_equal(s32, s64)
    r = reg.prediction_range(X.iloc[:5], 1e-9, statistic="std", epsilon=1e-9, max_iter=50)
    assert np.all(r.min_lower[:, 0] <= s32) and np.all(s32 <= r.max_upper[:, 0])


# --- distance rounding at every distance (mean-rounding review) -----------------
# sklearn's squared distance errs by ~ (d + 2) u relative, so its RBF value
# exp(-phi / 2) errs by ~ (phi / 2) (d + 2) u *relative*, beyond any few-ulp
# relative allowance for far points and large d. StationaryAdapter.rounding
# bounds it absolutely (part (b) of its docstring); these tests check that
# bound against mpmath and the powered adapters that lost their base's own
# rounding term.


@pytest.mark.parametrize("d", [10, 1000])
@pytest.mark.parametrize("name", ["rbf", "matern0.5", "matern1.5", "matern2.5", "rq"])
def test_distance_rounding_bound_covers_sklearn_values_against_mpmath(name, d):
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 120
    u = 2.0**-53
    kernel = {"rbf": RBF(1.0), "matern0.5": Matern(1.0, nu=0.5), "matern1.5": Matern(1.0, nu=1.5),
              "matern2.5": Matern(1.0, nu=2.5), "rq": RationalQuadratic(1.0, 3.0)}[name]
    rng = np.random.default_rng(d)
    # x_i = 0 and length scale 1: x / l and x - x_i are exact, so every error
    # of sklearn's value is the distance's and the value's own (part (b)).
    Xs = np.zeros((1, d))
    ad = make_adapter(kernel, Xs)
    worst, rel_max = 0.0, 0.0
    for phi_t in np.concatenate([rng.uniform(0.01, 4, 6), rng.uniform(4, 60, 8), rng.uniform(60, 1300, 8)]):
        x = rng.normal(size=(1, d))
        x *= np.sqrt(phi_t) / np.linalg.norm(x)
        K = float(kernel(x, Xs)[0, 0])
        phi = mp.fsum([mp.mpf(float(a)) ** 2 for a in x[0]])
        r = mp.sqrt(phi)
        if name == "rbf":
            k = mp.exp(-phi / 2)
        elif name == "rq":
            k = (1 + phi / 6) ** -3
        else:
            s = {"matern0.5": r, "matern1.5": mp.sqrt(3) * r, "matern2.5": mp.sqrt(5) * r}[name]
            k = {"matern0.5": 1, "matern1.5": 1 + s, "matern2.5": 1 + s + s**2 / 3}[name] * mp.exp(-s)
        err = float(abs(mp.mpf(K) - k))
        kf = float(k)
        Ed = ad._distance_rounding(x, x, np.zeros((1, 1)))[0, 0]
        assert Ed >= 0 and ad.rounding(x, x)[0, 0] >= Ed
        # part (b) plus a few ulps relative (exp, polynomial factor, power)
        worst = max(worst, err / (Ed + 8 * u * kf + 1e-300))
        if kf > 1e-290:
            rel_max = max(rel_max, err / (u * kf))
    assert worst <= 1.0, worst
    if d == 1000 and name in ("rbf", "matern2.5"):
        # the phenomenon is real: far beyond a few ulps relative to the value
        assert rel_max > 64, rel_max


def _old_powered_rounding(self, lo, hi):
    """PoweredStationaryAdapter.rounding before the fix (the generic
    stationary input term only, the base's own rounding dropped)."""
    from skgprobust.kernels._base import input_rounding

    amax = np.maximum(np.abs(lo), np.abs(hi))
    return 5.0 * self.lipschitz_r() * input_rounding(amax, self.Xs, self.length_scale)


@pytest.mark.parametrize("old", [False, True])
def test_powered_rational_quadratic_point_bounds_contain_predict(old, monkeypatch):
    """``RationalQuadratic(alpha=1e5) ** e`` is a PoweredStationaryAdapter;
    it inherited the generic stationary ``rounding`` and lost the RQ's
    alpha u relative error: point-box mean bounds excluded sklearn's predict
    by up to 2e-5. At zero tolerance they must contain it (and the old
    rounding must be shown to fail, so the test detects the bug)."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    from skgprobust._bounds._mean import AffineMean
    from skgprobust.kernels.stationary import PoweredStationaryAdapter

    if old:
        monkeypatch.setattr(PoweredStationaryAdapter, "rounding", _old_powered_rounding)
    rng = np.random.RandomState(0)
    X = np.linspace(0, 1, 15)[:, None]
    y = rng.randn(15)
    viol = 0
    for alpha, e in [(1e5, 1.0), (1e5, 2.0)]:
        kern = RationalQuadratic(length_scale=0.3, alpha=alpha, alpha_bounds="fixed") ** e
        m = GaussianProcessRegressor(kern, optimizer=None, alpha=1e-6).fit(X, y)
        ad = make_adapter(m.kernel_, X)
        assert isinstance(ad, PoweredStationaryAdapter)
        f = AffineMean(ad, m.alpha_, 0.0)
        # [0.1, 0.2] of the grid on which the old rounding left 17 and 13 of
        # 200001 points out (by up to 2e-5), 5 and 3 of them in this part
        P = np.linspace(0, 1, 200001)[20000:40001, None]
        mu = m.predict(P)
        lo, hi = f.bound(P, P).lower, -f.negated().bound(P, P).lower
        viol += int(np.sum((mu < lo) | (mu > hi)))
    if old:
        assert viol > 0
    else:
        assert viol == 0


# --- kernel-value rounding: rounding() + value_ulps() u A, against mpmath -----------
# Contract (KernelAdapter.value_ulps): for x in box b, sklearn's k~(x, x_i) errs
# from the exact kernel at the float inputs by <= rounding[b, i] + value_ulps(d)
# u A(x, x_i), A the term magnitude (|k| per leaf, sums add, products multiply,
# powers raise), and A <= sqrt(k(x, x) k(x_i, x_i)) for PSD kernels (the form
# the variance bounds use). Checked at 200-bit precision on adversarial inputs:
# far points, d = 200, tiny length scales, large and tiny exponents, offsets.


def _mp_kernel(mp, k, x, y, same=False):
    """(value, term magnitude A) of the sklearn kernel tree k at float inputs
    x, y, exactly (mpmath); ``same``: the diagonal k(x, x) (white noise counted)."""
    import sklearn.gaussian_process.kernels as K

    t, f = type(k), lambda v: mp.mpf(float(v))
    if t in (K.Sum, K.Product):
        (a1, A1), (a2, A2) = _mp_kernel(mp, k.k1, x, y, same), _mp_kernel(mp, k.k2, x, y, same)
        return (a1 + a2, A1 + A2) if t is K.Sum else (a1 * a2, A1 * A2)
    if t is K.Exponentiation:
        a, A = _mp_kernel(mp, k.kernel, x, y, same)
        return a ** f(k.exponent), A ** f(k.exponent)
    if t is K.ConstantKernel:
        return f(k.constant_value), abs(f(k.constant_value))
    if t is K.WhiteKernel:
        v = f(k.noise_level) if same else mp.mpf(0)
        return v, v
    if t is K.DotProduct:
        v = f(float(k.sigma_0) ** 2) + mp.fsum([f(a) * f(b) for a, b in zip(x, y)])
        return v, abs(v)
    if t in (K.RBF, K.Matern):
        ls = np.broadcast_to(np.asarray(k.length_scale, dtype=np.float64), (len(x),))
        phi = mp.fsum([((f(a) - f(b)) / f(l)) ** 2 for a, b, l in zip(x, y, ls)])
        nu = np.inf if t is K.RBF else float(k.nu)
        s = mp.sqrt(phi) * mp.sqrt({0.5: 1, 1.5: 3, 2.5: 5}.get(nu, 1))
        v = {0.5: mp.exp(-s), 1.5: (1 + s) * mp.exp(-s), 2.5: (1 + s + s * s / 3) * mp.exp(-s)}.get(nu, mp.exp(-phi / 2))
        return v, abs(v)
    d2 = mp.fsum([(f(a) - f(b)) ** 2 for a, b in zip(x, y)])
    if t is K.RationalQuadratic:
        al = f(k.alpha)
        v = (1 + d2 / (2 * al * f(k.length_scale) ** 2)) ** (-al)
    else:  # ExpSineSquared
        v = mp.exp(-2 * (mp.sin(mp.pi * mp.sqrt(d2) / f(k.periodicity)) / f(k.length_scale)) ** 2)
    return v, abs(v)


def _value_rounding_worst(kernel, Xs, lo, hi, seed=0, npts=4):
    """max over points of the boxes (two corners, random interior points) and
    support points of |k~ - k| / (rounding + value_ulps u A); asserts A <=
    sqrt(k(x, x) k(x_i, x_i))."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    u = 2.0**-53
    rng = np.random.default_rng(seed)
    ad = make_adapter(kernel, Xs)
    d = Xs.shape[1]
    R, c = ad.rounding(lo, hi), ad.value_ulps(d)
    assert R.shape == (len(lo), len(Xs)) and np.all(R >= 0) and c >= 0
    # the one-pass parts: the same rounding (bitwise), an enclosure of k and a
    # bound of A over each box
    Rp, klo, khi, Ahat = ad.rounding_parts(lo, hi)
    np.testing.assert_array_equal(Rp, R)
    worst = 0.0
    for b in range(len(lo)):
        for j in range(npts):
            t = rng.uniform(size=d) if j > 1 else np.full(d, float(j))
            x = np.clip(lo[b] + t * (hi[b] - lo[b]), lo[b], hi[b])
            K = kernel(x[None], Xs)[0]
            dx = _mp_kernel(mp, kernel, x, x, True)[0]
            for i in range(len(Xs)):
                v, A = _mp_kernel(mp, kernel, x, Xs[i])
                M = mp.sqrt(dx * _mp_kernel(mp, kernel, Xs[i], Xs[i], True)[0])
                assert A <= M * (1 + mp.mpf(2) ** -150)
                assert A <= Ahat[b, i] and klo[b, i] <= v <= khi[b, i]
                err = abs(mp.mpf(float(K[i])) - v)
                bound = mp.mpf(float(R[b, i])) + c * u * A
                worst = max(worst, float(err / bound) if bound > 0 else (0.0 if err == 0 else np.inf))
    return worst


_VALUE_KERNELS = {
    "rbf": RBF([0.3, 1.0]),
    "matern0.5": Matern(0.7, nu=0.5),
    "matern1.5": Matern(0.7, nu=1.5),
    "matern2.5": Matern(2.0, nu=2.5),
    "matern-inf": Matern(2.0, nu=np.inf),
    "rq-1e5": RationalQuadratic(1.0, 1e5),
    "expsine-l0.05": ExpSineSquared(0.05, 1.7),
    "rbf**300": RBF(10.0) ** 300,
    "rbf**0.3": RBF(1.0) ** 0.3,
    # fractional powers in the log domain (session 27): far points underflow psi_b, not psi_b^e
    "matern2.5**0.3": Matern(1.3, nu=2.5) ** 0.3,
    "rq**0.6": RationalQuadratic(0.8, 2.0) ** 0.6,
    "(matern0.5**0.5)**0.5": (Matern(0.9, nu=0.5) ** 0.5) ** 0.5,
    # powers of a constant times a stationary kernel (ScaledPowerAdapter, session 27)
    "(c*rbf)**2": (ConstantKernel(2.0) * RBF(1.0)) ** 2,
    "(c*c*matern2.5)**0.5": (ConstantKernel(3.0) * ConstantKernel(0.7) * Matern(1.3, nu=2.5)) ** 0.5,
    "(rq*c)**1.5": (RationalQuadratic(0.8, 2.0) * ConstantKernel(1e3)) ** 1.5,
    "(rbf+c)**50": (RBF(2.0) + ConstantKernel(0.5)) ** 50,
    "(rbf+c)**0.01": (RBF(2.0) + ConstantKernel(0.5)) ** 0.01,
    "(rbf*expsine)**100": (RBF(5.0) * ExpSineSquared(3.0, 2.0)) ** 100,
    "(dot+c)**3": (DotProduct(0.5) + ConstantKernel(1.0)) ** 3,
    "(dot*rbf)**2": (DotProduct(0.5) * RBF(3.0)) ** 2,
    "dot**5": DotProduct(0.5) ** 5,
    "((dot+c)**2)**0.5": ((DotProduct(0.5) + ConstantKernel(0.3)) ** 2) ** 0.5,
    "((dot+c)**2)**1.5": ((DotProduct(0.5) + ConstantKernel(0.3)) ** 2) ** 1.5,
    "c*rbf+white": ConstantKernel(3.0) * RBF(1.0) + WhiteKernel(1e-3),
    "rbf*matern+c*dot": RBF(1.0) * Matern(2.0, nu=2.5) + ConstantKernel(0.1) * DotProduct(1.0),
}


def _value_case(name, d, far, offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    kernel = _VALUE_KERNELS[name]
    if name == "rbf" and d != 2:
        kernel = RBF(0.7)
    Xs = offset + rng.normal(size=(3, d))
    c = Xs[rng.integers(3, size=2)] + far * rng.normal(size=(2, d)) / np.sqrt(d)
    return kernel, Xs, c - 1e-3, c + 1e-3


@pytest.mark.parametrize("far", [0.0, 3.0])
@pytest.mark.parametrize("name", list(_VALUE_KERNELS))
def test_value_ulps_and_rounding_cover_sklearn_values_against_mpmath(name, far):
    kernel, Xs, lo, hi = _value_case(name, 2, far)
    assert _value_rounding_worst(kernel, Xs, lo, hi) <= 1.0


@pytest.mark.parametrize("name", ["rbf**0.3", "matern2.5**0.3", "rq**0.6", "(matern0.5**0.5)**0.5"])
def test_fractional_powers_far_away_against_mpmath(name):
    """Fractional powers 30 length scales away in 20 dimensions, where the
    base psi_b underflows (RBF: ~1e-340) but psi_b^e does not (1e-102): the
    log-domain evaluation (PoweredStationaryAdapter) keeps the exact value
    inside the enclosure and sklearn's within the rounding. Computing psi_b
    ** e from the float psi_b (session 26's first version) put the RBF
    case's exact value above the enclosure's 8.5e-314 (slow sweep, CI)."""
    from skgprobust.kernels.stationary import PoweredStationaryAdapter

    kernel, Xs, lo, hi = _value_case(name, 20, 30.0, 0.0, seed=20)
    ad = make_adapter(kernel, Xs)
    assert isinstance(ad, PoweredStationaryAdapter) and ad.log_domain
    assert _value_rounding_worst(kernel, Xs, lo, hi, seed=20, npts=3) <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0.0, 1e6])
@pytest.mark.parametrize("far", [0.0, 3.0, 30.0])
@pytest.mark.parametrize("d", [20, 200])
@pytest.mark.parametrize("name", list(_VALUE_KERNELS))
def test_value_ulps_and_rounding_cover_sklearn_values_slow(name, d, far, offset):
    kernel, Xs, lo, hi = _value_case(name, d, far, offset, seed=d)
    assert _value_rounding_worst(kernel, Xs, lo, hi, seed=d, npts=3) <= 1.0


@pytest.mark.parametrize("e", [300.0, 3000.0])
def test_exponentiation_rounding_carries_the_base_relative_rounding(e):
    """(RBF + C) ** e at x = x_i = 0: no input or distance rounding, so the
    error is fl(1 + C)'s relative rounding amplified e-fold and the power's
    own. The old ``ExponentiationAdapter.rounding`` (e m^(e-1) times the
    base's absolute rounding only) plus the old c_val 2 d + 64 misses it; the
    new rounding (power_rounding) plus value_ulps covers it."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    u = 2.0**-53
    d = 2
    kernel = (RBF(2.0) + ConstantKernel(0.05)) ** e
    Xs = np.zeros((1, d))
    ad = make_adapter(kernel, Xs)
    x = np.zeros((1, d))
    K = float(kernel(x, Xs)[0, 0])
    v, A = _mp_kernel(mp, kernel, x[0], Xs[0])
    err = abs(mp.mpf(K) - v)
    Rb = ad.base.rounding(x, x)[0, 0]
    m = ad.base.interval(x, x)[1][0, 0] + Rb
    old = e * m ** (e - 1) * Rb + (2 * d + 64) * u * A
    new = ad.rounding(x, x)[0, 0] + ad.value_ulps(d) * u * A
    assert err > old  # the gap was real: ~ e u / 2 relative
    assert err <= new


def test_platform_elementary_functions():
    """The platform assumption of KernelAdapter.value_ulps: numpy's exp,
    expm1, log1p, log (the log-domain powers), sin and pow
    (non-integer exponents; the integer case is in test_proof_gaps)
    within 8 ulps (16 u relative for normal results), over wide arguments."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 120
    u = 2.0**-53
    rng = np.random.default_rng(0)
    worst = {}
    xe = -rng.uniform(0, 740, 600)
    xs = np.concatenate([rng.uniform(-10, 10, 300), rng.uniform(-1e6, 1e6, 200), 10.0 ** rng.uniform(-300, 0, 100)])
    # pow as the kernels use it: any base of moderate size with |p log b| < 700,
    # and RationalQuadratic's base 1 + t near 1 with -alpha down to -1e5.
    b = np.concatenate([10.0 ** rng.uniform(-3, 3, 200), 1.0 + 10.0 ** rng.uniform(-12, -2, 100)])
    p = np.concatenate([rng.uniform(-100, 100, 200), -rng.uniform(1e3, 1e5, 100)])
    # log1p as the log-domain psi of fractional powers uses it (Matern, RationalQuadratic)
    xl = np.concatenate([10.0 ** rng.uniform(-300, 0, 100), 10.0 ** rng.uniform(0, 300, 200)])
    with np.errstate(over="ignore", under="ignore"):
        xm = np.concatenate([-(10.0 ** rng.uniform(-300, 2.8, 200)), 10.0 ** rng.uniform(-300, 2.8, 200)])
        xg = 10.0 ** rng.uniform(-300, 300, 300)  # log: the scaled powers' log a
        cases = {"log1p": (np.log1p(xl), [mp.log1p(mp.mpf(float(a))) for a in xl]),
                 "log": (np.log(xg), [mp.log(mp.mpf(float(a))) for a in xg]),
                 "expm1": (np.expm1(xm), [mp.expm1(mp.mpf(float(a))) for a in xm]),
                 "exp": (np.exp(xe), [mp.exp(mp.mpf(float(a))) for a in xe]),
                 "sin": (np.sin(xs), [mp.sin(mp.mpf(float(a))) for a in xs]),
                 "pow": (b**p, [mp.mpf(float(a)) ** mp.mpf(float(q)) for a, q in zip(b, p)])}
    for name, (y, ref) in cases.items():
        w = 0.0
        for yi, ri in zip(y, ref):
            if not np.isfinite(yi) or abs(ri) < mp.mpf(2) ** -1022 or abs(ri) > mp.mpf(2) ** 1023:
                continue
            w = max(w, float(abs(mp.mpf(float(yi)) - ri) / abs(ri)) / u)
        worst[name] = w
    # measured here (numpy 2.4, x86-64): exp 1.07 u, sin 0.94 u, pow 1.07 u at most
    assert all(w <= 16.0 for w in worst.values()), worst


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(3.0) * RBF([0.3, 1.0]) + WhiteKernel(1e-3),
        ConstantKernel(2.0) * Matern(0.7, nu=2.5) + ConstantKernel(0.5) * Matern(2.0, nu=1.5) + ConstantKernel(0.1),
        ConstantKernel(2.0) * (ConstantKernel(0.5) * (ConstantKernel(3.0) * RBF(0.5))) + WhiteKernel(0.3),
    ],
)
def test_local_bound_value_rounding_is_the_adapters(kernel):
    """The local RKHS bound's per-entry rounding cv (SmoothCovariance.value_rounding
    of LatentVariance._value_ulps, the one source of the constant) covers
    sklearn's k~(x, x_i) beyond the adapter's rounding, against mpmath, with
    A <= value_scale = kappa0 (every term >= 0); no hand-written (2d + 44 + 2T)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    from skgprobust._bounds._variance import LatentVariance

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(4, 2))
    L = np.linalg.cholesky(kernel(Xs) + 1e-2 * np.eye(4))
    for col_scale in (None, np.full(4, 0.4)):
        var = LatentVariance(make_adapter(kernel, Xs), L, col_scale=col_scale)
        sm = var.smooth
        cv = sm.value_rounding(var._value_ulps(2))
        c_val = var.adapter.value_ulps(2) + (col_scale is not None)  # + 1: the product with D
        assert np.isclose(cv, c_val * 2.0**-53 * sm.kappa0, rtol=1e-11) and c_val < 2 * 2 + 44
    c = Xs[:2] + rng.normal(size=(2, 2))
    lo, hi = c - 1e-3, c + 1e-3
    R = var.adapter.rounding(lo, hi)
    for b in range(2):
        for x in (lo[b], hi[b], 0.5 * (lo[b] + hi[b])):
            K = kernel(x[None], Xs)[0]
            for i in range(len(Xs)):
                v, A = _mp_kernel(mp, kernel, x, Xs[i])
                assert A <= mp.mpf(sm.value_scale) * (1 + mp.mpf(2) ** -50)
                assert abs(mp.mpf(float(K[i])) - v) <= mp.mpf(float(R[b, i])) + mp.mpf(cv)


@pytest.mark.parametrize(
    "kernel",
    [RBF(1.0), Matern(1.0, nu=0.5), Matern(1.0, nu=1.5), Matern(1.0, nu=2.5), Matern(1.0, nu=np.inf),
     RationalQuadratic(1.0, 1e-3), RationalQuadratic(1.0, 0.7), RationalQuadratic(1.0, 1e5), RBF(1.0) ** 0.3,
     Matern(1.0, nu=2.5) ** 0.45],
    ids=["rbf", "m0.5", "m1.5", "m2.5", "minf", "rq1e-3", "rq0.7", "rq1e5", "rbf**0.3", "m2.5**0.45"],
)
def test_log_psi_error_bounds_against_mpmath(kernel):
    """_log_psi's error bound and _dlog_psi's 8 u (the inputs of the log-domain
    fractional powers' rounding, PoweredStationaryAdapter._own_rounding) hold
    at 200-bit precision, from subnormal phi to 1e12."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    u = 2.0**-53
    ad = make_adapter(kernel, np.zeros((1, 1)))
    assert ad._has_log_psi
    rng = np.random.default_rng(0)
    phi = np.concatenate([[0.0, 5e-324, 1e-300], 10.0 ** rng.uniform(-20, 12, 400)])
    L, err = ad._log_psi(phi)
    dL = ad._dlog_psi(phi)

    def exact(p):
        p = mp.mpf(float(p))
        k = kernel.kernel if isinstance(kernel, Exponentiation) else kernel
        e = mp.mpf(float(kernel.exponent)) if isinstance(kernel, Exponentiation) else mp.mpf(1)
        if isinstance(k, RationalQuadratic):
            a = mp.mpf(float(k.alpha))
            return e * (-a * mp.log1p(p / (2 * a))), e * (-1 / (2 * (1 + p / (2 * a))))
        nu = float(k.nu) if isinstance(k, Matern) else np.inf
        if nu == np.inf:
            return e * (-p / 2), e * mp.mpf(-0.5)
        s = mp.sqrt(2 * mp.mpf(nu) * p)
        if nu == 0.5:
            return e * (-s), (e * (-1 / (2 * mp.sqrt(p))) if p > 0 else None)
        if nu == 1.5:
            return e * (mp.log1p(s) - s), e * (-mp.mpf(3) / (2 * (1 + s)))
        return e * (mp.log1p(s + s * s / 3) - s), e * (-mp.mpf(5) * (1 + s) / (6 * (1 + s + s * s / 3)))

    for i, p in enumerate(phi):
        v, dv = exact(p)
        assert abs(mp.mpf(float(L[i])) - v) <= mp.mpf(float(err[i])), (p, L[i], err[i])
        if dv is not None:
            assert abs(mp.mpf(float(dL[i])) - dv) <= 8 * u * abs(dv), (p, dL[i])
