"""The Jacobian remainder of the variance bounds
(:meth:`skgprobust._bounds._variance.LatentVariance.jacobian_remainder`) and
the adapters' first-order models it rests on
(:meth:`skgprobust.kernels.KernelAdapter.first_order`).

The first-order model is checked against the kernel evaluated in long
double from its closed form (64-bit mantissa, far below the deltas checked),
never against the adapter's own numbers; the variance bounds end to end
against scikit-learn's ``predict(return_std=True)`` (every batch size) and
``predict_proba``, on dense samples plus L-BFGS-B optima, on every exit path.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, Matern, RationalQuadratic, WhiteKernel

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust.kernels import make_adapter

from ._helpers import attack

LD = np.longdouble


def _profile_ld(kernel, phi):
    """psi(phi) in long double for RBF / Matern / RationalQuadratic."""
    if isinstance(kernel, RBF) and not isinstance(kernel, Matern):
        return np.exp(-phi / 2)
    if isinstance(kernel, Matern):
        r = np.sqrt(phi)
        nu = kernel.nu
        if nu == 0.5:
            return np.exp(-r)
        if nu == 1.5:
            s = np.sqrt(LD(3)) * r
            return (1 + s) * np.exp(-s)
        if nu == 2.5:
            s = np.sqrt(LD(5)) * r
            return (1 + s + s * s / 3) * np.exp(-s)
        return np.exp(-phi / 2)
    a = LD(kernel.alpha)
    return (1 + phi / (2 * a)) ** (-a)


def _kernel_ld(kernel, X, Xs):
    """k(X, Xs) in long double for sums and products (with constants) of the
    profiles above."""
    from sklearn.gaussian_process.kernels import Product, Sum

    if isinstance(kernel, Sum):
        return _kernel_ld(kernel.k1, X, Xs) + _kernel_ld(kernel.k2, X, Xs)
    if isinstance(kernel, Product):
        return _kernel_ld(kernel.k1, X, Xs) * _kernel_ld(kernel.k2, X, Xs)
    if isinstance(kernel, WhiteKernel):
        return np.zeros((len(X), len(Xs)), dtype=LD)
    if isinstance(kernel, ConstantKernel):
        return np.full((len(X), len(Xs)), LD(kernel.constant_value))
    ls = np.abs(np.atleast_1d(np.asarray(kernel.length_scale, dtype=np.float64))).astype(LD)
    D = (np.asarray(X, dtype=LD)[:, None, :] - np.asarray(Xs, dtype=LD)[None, :, :]) / ls
    return _profile_ld(kernel, (D * D).sum(-1))


KERNELS = [
    RBF([0.7, 2.0, 0.3]),
    Matern([0.7, 2.0, 0.3], nu=0.5),
    Matern(0.9, nu=1.5),
    Matern([0.7, 2.0, 0.3], nu=2.5),
    Matern(1.1, nu=np.inf),
    RationalQuadratic(0.8, 0.5),
    RationalQuadratic(1.3, 40.0),
    ConstantKernel(7.5) * Matern([0.7, 2.0, 0.3], nu=0.5),
    ConstantKernel(3.0) * RBF(0.5) + ConstantKernel(0.2) * Matern(1.5, nu=0.5) + WhiteKernel(0.1),
    ConstantKernel(1e6) * Matern(0.05, nu=0.5) + ConstantKernel(-2.0),
]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: repr(k)[:60])
def test_first_order_model_bounds_the_exact_kernel(kernel):
    rng = np.random.default_rng(5)
    Xs = rng.uniform(-2, 2, (25, 3))
    ad = make_adapter(kernel, Xs)
    checked = 0
    for case in range(60):
        w = 10.0 ** rng.uniform(-7, 0.3)
        if case % 3 == 0:
            c = Xs[rng.integers(len(Xs))] + rng.normal(0, 3 * w, 3)  # next to a support point
        elif case % 3 == 1:
            c = rng.uniform(-2.5, 2.5, 3)
        else:
            c = rng.uniform(-2.5, 2.5, 3) * 1e3  # far away
        h = w * rng.uniform(0.0, 1.0, 3)
        lo, hi = c - h, c + h
        cc, h1 = 0.5 * (lo + hi), np.maximum(hi - 0.5 * (lo + hi), 0.5 * (lo + hi) - lo) * (1 + 4 * 2.0**-53)
        J, delta = ad.first_order(cc[None], h1[None])
        assert J.shape == (1, len(Xs), 3) and delta.shape == (1, len(Xs))
        assert np.all(delta >= 0)
        fin = np.isfinite(delta[0])
        if not fin.any():
            continue
        U = h1 * np.vstack([rng.uniform(-1, 1, (150, 3)), np.sign(rng.normal(size=(50, 3)))])
        U = np.clip(cc + U, lo, hi) - cc  # points of the box, exactly as floats
        r0 = _kernel_ld(kernel, cc[None], Xs)[0]
        R = _kernel_ld(kernel, cc + U, Xs)
        lin = (U.astype(LD)[:, None, :] * J[0].astype(LD)[None]).sum(-1)
        err = np.abs(R - r0[None] - lin)
        # the long double evaluation's own error, far below what is checked
        tol = 64 * np.finfo(LD).eps * (np.abs(R) + np.abs(r0[None]) + np.abs(lin))
        assert np.all(err[:, fin] <= LD(1) * delta[0, fin][None] + tol[:, fin]), float(
            np.max((err - delta[0][None])[:, fin])
        )
        checked += int(fin.sum())
    assert checked > 200


def test_first_order_none_where_unknown():
    Xs = np.zeros((3, 2))
    assert make_adapter(DotProduct(1.0) ** 2, Xs).first_order(np.zeros((1, 2)), np.ones((1, 2))) is None
    assert make_adapter(RBF(1.0) * Matern(1.0, nu=0.5), Xs).first_order(np.zeros((1, 2)), np.ones((1, 2))) is None
    assert make_adapter(RBF(1.0) ** 0.5, Xs).first_order(np.zeros((1, 2)), np.ones((1, 2))) is None
    # a support point inside the box: Matern 0.5 is not differentiable there
    J, delta = make_adapter(Matern(1.0, nu=0.5), Xs).first_order(np.zeros((1, 2)), np.full((1, 2), 0.1))
    assert np.all(np.isinf(delta))


def _m05_regressor(normalize_y=True, n=300, noise=1e-5, amp=10.0):
    X, y = make_friedman1(n_samples=n + 10, n_features=6, noise=0.5, random_state=0)
    k = ConstantKernel(amp) * Matern([0.8, 0.9, 1.5, 3.0, 5.0, 20.0], nu=0.5) + WhiteKernel(noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(k, optimizer=None, normalize_y=normalize_y).fit(X[:n], y[:n])
    return reg, X


def _sk_var(reg, P, batch):
    out = []
    for s in range(0, len(P), batch):
        out.append(reg.predict(P[s : s + batch], return_std=True)[1] ** 2)
    return np.concatenate(out)


@pytest.mark.parametrize("normalize_y,noise", [(True, 1e-5), (False, 1e-9), (True, 1e-2)])
def test_jacobian_remainder_variance_bounds_contain_sklearn(normalize_y, noise):
    reg, X = _m05_regressor(normalize_y, noise=noise)
    bm = reg._bound_model()
    var = bm.variances("default")[0]
    assert var.smooth is None  # the path under test
    s2 = float(bm.latents[0].scale[0]) ** 2
    rng = np.random.default_rng(1)
    gamma = 0.02 * X.std(axis=0)
    used = 0
    for c in (X[300], X[301], X[3], X[3] + 0.5 * gamma, 0.5 * (X[7] + X[8])):
        for f in (1.0, 0.1, 1e-3, 1e-6, 0.0):
            lo, hi = c - f * gamma, c + f * gamma
            e_j = var.jacobian_remainder(lo[None], hi[None])[0]
            e_r = var.rkhs_remainder(lo[None], hi[None])[0]
            used += int(e_j < e_r)
            vb = var.bounds(lo[None], hi[None])
            res = attack(lambda P: _sk_var(reg, P, len(P)), lo, hi, rng, n_samples=300)
            pts = np.vstack([res.points[:: max(1, len(res.points) // 60)], res.argmin[None], res.argmax[None]])
            vals = np.concatenate([_sk_var(reg, pts, b) for b in (1, 7, len(pts))])
            vmin, vmax = min(res.min, vals.min()), max(res.max, vals.max())
            assert max(vb.lower[0], 0.0) * s2 <= vmin, (f, vb.lower[0] * s2, vmin)
            assert max(vb.upper[0], 0.0) * s2 >= vmax, (f, vb.upper[0] * s2, vmax)
    assert used >= 10  # the new remainder is the one in use on these boxes


def test_jacobian_remainder_converges_fast_on_matern05():
    """The motivating case: a high signal-to-noise Matern 0.5 regressor's std
    range (it needed ~2000 splits with the first-order RKHS remainder)."""
    reg, X = _m05_regressor(True)
    gamma = 0.02 * X[:300].std(axis=0)
    s0 = reg.predict(X[300:302], return_std=True)[1]
    r = reg.prediction_range(X[300:302], gamma, statistic="std", epsilon=0.01 * s0.min(), time_limit=10,
                             random_state=0)
    assert r.converged.all()
    assert r.n_iter.max() < 300, r.n_iter
    rng = np.random.default_rng(4)
    for i in range(2):
        P = X[300 + i] - gamma + 2 * gamma * rng.random((400, X.shape[1]))
        sd = reg.predict(P, return_std=True)[1]
        assert np.all(sd >= r.min_lower[i, 0]) and np.all(sd <= r.max_upper[i, 0])


@pytest.mark.parametrize("kw", [dict(max_iter=1), dict(time_limit=1e-3), dict()])
def test_matern05_classifier_ranges_every_exit_path(kw):
    """Laplace GPC (column scale D = W^1/2), Matern 0.5 at a large amplitude:
    probability ranges contain predict_proba on every exit path."""
    rng = np.random.RandomState(0)
    X = rng.randn(120, 2)
    y = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0).astype(int)
    clf = RobustGaussianProcessClassifier(ConstantKernel(400.0) * Matern(0.7, nu=0.5), optimizer=None).fit(X, y)
    assert clf._bound_model().variances("default")[0].smooth is None
    T = np.vstack([X[:3] + 0.01, rng.randn(3, 2)])
    gamma = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = clf.prediction_range(T, gamma, epsilon=0.01, random_state=0, **kw)
    g = np.random.default_rng(3)
    for i, x in enumerate(T):
        P = np.vstack([x - gamma + 2 * gamma * g.random((500, 2)), x[None]])
        p = clf.predict_proba(P)
        assert np.all(p >= r.min_lower[i]) and np.all(p <= r.max_upper[i])


@pytest.mark.parametrize("kw", [dict(max_iter=1), dict(time_limit=1e-3), dict()])
@pytest.mark.parametrize("case", ["one_point", "float32", "underflow"])
def test_matern05_regressor_edge_cases_every_exit_path(case, kw):
    """One training point, float32 inputs, and a box far from the data (the
    kernel values underflow): std ranges contain sklearn's std on every exit
    path, the Jacobian remainder in use where it is finite."""
    rng = np.random.default_rng(9)
    k = ConstantKernel(50.0) * Matern([0.6, 1.7, 0.9], nu=0.5) + WhiteKernel(1e-7)
    if case == "one_point":
        X, y = rng.uniform(0, 1, (1, 3)), np.array([0.3])
        T = np.vstack([X[0] + 0.02, X[0] + 0.3])
    else:
        X = rng.uniform(0, 1, (80, 3))
        y = np.sin(4 * X[:, 0]) + X[:, 1]
        T = X[:3] + 0.013
        if case == "underflow":
            T = np.vstack([T, X[:2] + 800.0])
    if case == "float32":
        X, y, T = X.astype(np.float32), y.astype(np.float32), T.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(k, optimizer=None, normalize_y=True).fit(X, y)
        gamma = 0.01
        r = reg.prediction_range(T, gamma, statistic="std", epsilon=1e-4, random_state=0, **kw)
    g = np.random.default_rng(2)
    for i, x in enumerate(np.asarray(T, dtype=np.float64)):
        P = np.vstack([x - gamma + 2 * gamma * g.random((300, 3)), x[None]]).astype(np.asarray(T).dtype)
        for b in (1, len(P)):
            sd = np.concatenate([reg.predict(P[s : s + b], return_std=True)[1] for s in range(0, len(P), b)])
            assert np.all(sd >= r.min_lower[i, 0]) and np.all(sd <= r.max_upper[i, 0]), (case, i, b)


def test_jacobian_remainder_underflow_floor():
    """Kernel values far below the smallest float: the remainder stays a
    positive bound (it was exactly 0 where the squares underflowed)."""
    reg, X = _m05_regressor(True)
    var = reg._bound_model().variances("default")[0]
    lo = X[300][None] + 1e4
    e = var.jacobian_remainder(lo, lo + 1e-3)
    assert np.all(np.isfinite(e)) and np.all(e > 0)
