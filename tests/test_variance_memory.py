"""What :class:`~skgprobust._bounds._variance.LatentVariance` keeps after its
set-up: L, the spectrum and only the leading eigenvectors the spectral split
can use; A = L^-1 D, S = A^T A and the full V are recomputed on first access.

Checked here: the kept state (and so the pickle a joblib worker receives) has
one N x N array; the recomputed A, S, V equal the set-up's bit for bit; bounds
are bit-identical to those of an instance that keeps the dense matrices, also
after pickling, with the spectral split on its truncated eigenvectors (m < N);
those bounds contain sklearn's own variance (dense samples plus L-BFGS-B);
shallow copies (the multi-output outputs) share what one recomputes.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgprobust import RobustGaussianProcessRegressor
from skgprobust._bounds._variance import _SPECTRAL_BUDGET, LatentVariance
from skgprobust.kernels import make_adapter

from ._helpers import attack


class _Dense(LatentVariance):
    _KEEP_DENSE = True


def _duplicated(n=120, seed=0, kernel=None, alpha=1e-4, n_dup=None):
    """``n_dup`` inputs (default all n) twice: S = K_y^-1 has n_dup
    eigenvalues ~1/alpha and the others much smaller (short length scale), so
    the spectral split applies with the leading m > n_dup eigenvectors."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    X = np.vstack([X, X[: n if n_dup is None else n_dup]])
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=len(X))
    kernel = ConstantKernel(1.0) * RBF(0.15) if kernel is None else kernel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianProcessRegressor(kernel, alpha=alpha, optimizer=None).fit(X, y), X


def _boxes(B, seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-2, 2, (B, 2))
    h = rng.uniform(1e-3, 0.5, (B, 2))
    return c - h, c + h


def _same(b1, b2):
    for f in ("lower", "upper", "arg_min", "arg_max", "score"):
        np.testing.assert_array_equal(getattr(b1, f), getattr(b2, f))


def _dense_arrays(var, N):
    """Arrays of the instance's state with at least N * N / 4 entries, but
    the kept eigenvectors."""
    state = var.__dict__
    arrays = [(k, v) for k, v in state.items() if isinstance(v, np.ndarray) and k != "_V_tail"]
    arrays += [(f"_dense[{k}]", v) for k, v in state["_dense"].items()]
    return sorted(k for k, v in arrays if v.size >= N * N / 4)


@pytest.mark.parametrize("smooth", [None, "parse"])
def test_kept_state_and_recomputed_matrices(smooth):
    reg, X = _duplicated(n=60)
    N = len(X)
    var = LatentVariance(make_adapter(reg.kernel_, X), reg.L_, None, smooth=smooth)
    dense = _Dense(make_adapter(reg.kernel_, X), reg.L_, None, smooth=smooth)
    assert _dense_arrays(var, N) == ["L"]
    # The eigenvectors kept: at most the budget's m at d = 1 (all N here, N small).
    assert var._V_tail.shape == (N, min(N, int(_SPECTRAL_BUDGET // N)))
    assert _dense_arrays(dense, N) == ["L", "_dense[A]", "_dense[S]", "_dense[V]"]
    assert len(pickle.dumps(var)) < 1.1 * reg.L_.nbytes + 8 * N * var._V_tail.shape[1] + 200_000
    # Recomputed on access: the same numbers as the set-up's.
    for name in ("A", "S", "V"):
        np.testing.assert_array_equal(getattr(var, name), getattr(dense, name))
    np.testing.assert_array_equal(var.V @ np.diag(var.lam) @ var.V.T, dense.V @ np.diag(dense.lam) @ dense.V.T)
    assert var.n_support == N


def test_copies_share_recomputed_matrices():
    reg, X = _duplicated(n=30)
    base = LatentVariance(make_adapter(reg.kernel_, X), reg.L_, None)
    copies = [copy.copy(base) for _ in range(3)]
    assert all(c.S is copies[0].S for c in copies)
    assert base.S is copies[0].S


@pytest.mark.parametrize(
    "kernel",
    [pytest.param(ConstantKernel(1.0) * RBF(0.05), marks=pytest.mark.slow), ConstantKernel(1.0) * Matern(0.05, nu=2.5)],
)
def test_truncated_spectral_split_bit_identical_and_sound(kernel, monkeypatch):
    # N = 500 > sqrt(budget): 400 eigenvectors kept (d = 1), m = 200 used (d = 2).
    reg, X = _duplicated(n=400, n_dup=100, kernel=kernel)
    N = len(X)
    var = LatentVariance(make_adapter(reg.kernel_, X), reg.L_, None, smooth=None)
    dense = _Dense(make_adapter(reg.kernel_, X), reg.L_, None, smooth=None)
    m = var._n_top(1, 2)
    assert 0 < m < var._V_tail.shape[1] < N
    np.testing.assert_array_equal(var._V_top[:, :m], dense.V[:, :m])
    calls = []
    orig = LatentVariance._spectral

    def spy(self, lo, hi, r0, dr2, m):
        calls.append(m)
        return orig(self, lo, hi, r0, dr2, m)

    monkeypatch.setattr(LatentVariance, "_spectral", spy)
    # The spectral split runs only without a finite RKHS remainder (which
    # every kernel here has since the adapters' rkhs_increment): switched off
    # to exercise the split.
    monkeypatch.setattr(LatentVariance, "rkhs_remainder", lambda self, lo, hi, n_centre=None: np.full(len(lo), np.inf))
    lo, hi = _boxes(8, seed=1)
    b = var.bounds(lo, hi)
    assert calls and all(c == m for c in calls)
    _same(b, dense.bounds(lo, hi))
    _same(b, pickle.loads(pickle.dumps(var)).bounds(lo, hi))
    # The bounds hold for sklearn's own variance (std^2, unit scale: no normalize_y).
    rng = np.random.default_rng(0)

    def sk_var(P):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return reg.predict(P, return_std=True)[1] ** 2

    for i in range(0, 8, 2):
        res = attack(sk_var, lo[i], hi[i], rng, n_samples=200)
        assert b.lower[i] <= res.min and res.max <= b.upper[i]


def test_no_eigenvectors_kept_where_the_split_never_applies():
    """Noisy, well-conditioned S: lam[m] > 0.05 lam_max at d = 1, so _n_top
    is 0 for every d and no eigenvector is kept."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (500, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(ConstantKernel(1.0) * RBF(0.05), alpha=0.5, optimizer=None).fit(
            X, np.sin(X[:, 0])
        )
    var = LatentVariance(make_adapter(reg.kernel_, X), reg.L_, None, smooth=None)
    assert var._V_tail.shape[1] == 0
    assert all(var._n_top(1, d) == 0 for d in (1, 2, 5))
    lo, hi = _boxes(5, seed=2)
    _same(var.bounds(lo, hi), _Dense(make_adapter(reg.kernel_, X), reg.L_, None, smooth=None).bounds(lo, hi))


def test_laplace_classifier_bit_identical():
    """col_scale = W_sr_ (A = L^-1 D): the same bounds as with the dense matrices kept."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, (80, 2))
    y = (np.sin(2 * X[:, 0]) > X[:, 1]).astype(int)
    c = GaussianProcessClassifier(ConstantKernel(4.0) * RBF(0.6), optimizer=None).fit(X, y).base_estimator_
    lo, hi = _boxes(20, seed=5)
    for smooth in (None, "parse"):
        var = LatentVariance(make_adapter(c.kernel_, X), c.L_, c.W_sr_, smooth=smooth)
        dense = _Dense(make_adapter(c.kernel_, X), c.L_, c.W_sr_, smooth=smooth)
        _same(var.bounds(lo, hi), dense.bounds(lo, hi))
        np.testing.assert_array_equal(var.A, dense.A)


def test_bound_model_pickle_is_about_one_factor():
    """A fitted regressor's bound model pickles to about L's size (A, S, V
    were three more N x N matrices)."""
    rng = np.random.default_rng(6)
    X = rng.uniform(-3, 3, (1000, 2))
    reg = RobustGaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0), alpha=1e-2, optimizer=None).fit(
        X, np.sin(X[:, 0])
    )
    bm = reg._bound_model()
    bm.variances("default")
    assert len(pickle.dumps(bm)) < 1.1 * reg.L_.nbytes


def test_eigenvalues_only_where_the_split_is_not_used(monkeypatch):
    """Where the spectral split's screen fails (high signal-to-noise: S =
    K_y^-1 has many eigenvalues near 1 / alpha), the set-up computes S's
    eigenvalues only (no eigenvectors): the same decision and spectrum (up to
    eigvalsh's rounding) as an instance that runs eigh, bounds equal to its
    to 1e-9 relative, and both contain sklearn's variance."""
    # N = 500 > sqrt(budget): lam[400] is checked, ~1 / alpha like lam[0]
    reg, X = _duplicated(n=500, n_dup=0, kernel=ConstantKernel(4.0) * RBF(1.5), alpha=1e-6)
    N = len(X)
    dense = _Dense(make_adapter(reg.kernel_, X), reg.L_, None)
    eigh = np.linalg.eigh
    with monkeypatch.context() as mp:
        mp.setattr(np.linalg, "eigh", lambda *a, **k: pytest.fail("eigh called"))
        var = LatentVariance(make_adapter(reg.kernel_, X), reg.L_, None)
    assert np.linalg.eigh is eigh
    assert var._V_tail.shape == dense._V_tail.shape == (N, 0)
    assert var._eig_err == dense._eig_err == (0.0, 0.0)
    np.testing.assert_allclose(var.lam, dense.lam, rtol=0, atol=1e-12 * dense.lam[0])
    lo, hi = _boxes(6, seed=2)
    b, bd = var.bounds(lo, hi), dense.bounds(lo, hi)
    scale = np.maximum(np.abs(bd.lower), np.abs(bd.upper)).max()
    np.testing.assert_allclose(b.lower, bd.lower, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(b.upper, bd.upper, rtol=0, atol=1e-9 * scale)
    rng = np.random.default_rng(3)
    for i in range(len(lo)):
        P = rng.uniform(lo[i], hi[i], (300, 2))
        v = reg.predict(P, return_std=True)[1] ** 2
        assert np.all(b.lower[i] <= v) and np.all(v <= b.upper[i])
    # the inverse factor (LAPACK trtri) is an inverse of L to rounding
    A = var.A
    assert np.allclose(np.tril(A), A) and np.abs(reg.L_ @ A - np.eye(N)).max() < 1e-6
