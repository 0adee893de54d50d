"""The componentwise rounding margins of the local RKHS variance bound
(:mod:`skgprobust._bounds._variance`, "Rounding of the local bound:
componentwise solve margins") and the RKHS remainder that replaced the
spectral split in the smooth case.

Adversarial regimes: fitted models with tiny noise, large amplitudes and
offsets (normalize_y on and off), near-duplicate training points and
ill-conditioned factors. Every bound is compared with scikit-learn's own
``predict(return_std=True)`` (regressor) or ``latent_mean_and_variance``
(binary GPC), evaluated in several batch sizes (sklearn's last bits depend on
the batch), on dense samples plus L-BFGS-B optima (``_helpers.attack``), and
at zero-width boxes, where the bound is the value itself plus the margin.
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.linalg import solve_triangular
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor
from skgprobust._fp import margin_rtol, nonneg_norm2_upper

from ._helpers import FAST, SLOW, attack

BATCHES = (1, 3, 64, None)  # None: all points in one call


def sk_var_batched(reg, P, batches=BATCHES, col=0):
    """sklearn's variance (std^2, target ``col``) at P, once per batch size:
    (n_batches, n) array."""
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in batches:
            b = len(P) if b is None else b
            if b == 1 and len(P) > 50:
                idx = np.linspace(0, len(P) - 1, 50).astype(int)
            else:
                idx = np.arange(len(P))
            v = np.full(len(P), np.nan)
            for s in range(0, len(idx), b):
                j = idx[s : s + b]
                _, sd = reg.predict(P[j], return_std=True)
                sd = np.asarray(sd, dtype=np.float64).reshape(len(j), -1)[:, col]
                v[j] = sd * sd
            out.append(v)
    return np.array(out)


def parts(model):
    bm = model._bound_model()
    var = bm.variances("default")[0]
    return var, float(bm.latents[0].scale[0]) ** 2


def check_box(reg, lo, hi, rng, n=800):
    """Combined and local bounds contain sklearn's variance, all batch sizes."""
    var, s2 = parts(reg)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    vb = var.bounds(lo[None], hi[None])
    dlo, dhi = var.adapter.diag_interval(lo[None], hi[None])
    l2, u2, *_ = var._local_bounds(lo[None], hi[None], dlo, dhi)
    res = attack(lambda P: sk_var_batched(reg, P, (None,))[0], lo, hi, rng, n_samples=n)
    pts = np.vstack([res.points[:: max(1, len(res.points) // 200)], res.argmin[None], res.argmax[None]])
    vals = sk_var_batched(reg, pts)
    vmin = min(res.min, np.nanmin(vals))
    vmax = max(res.max, np.nanmax(vals))
    for name, lower, upper in (("combined", vb.lower[0], vb.upper[0]), ("local", l2[0], u2[0])):
        # Bounds of the computed variance v~; sklearn returns max(v~, 0) (it clips).
        assert max(lower, 0.0) * s2 <= vmin, (name, lower * s2, vmin)
        assert max(upper, 0.0) * s2 >= vmax, (name, upper * s2, vmax)
    return vb, (l2[0], u2[0]), (vmin, vmax), s2


def _fit(kernel, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianProcessRegressor(kernel, optimizer=None, **kw).fit(X, y)


# --------------------------------------------------------------------------
# The pieces
# --------------------------------------------------------------------------


def test_nonneg_norm2_upper():
    rng = np.random.default_rng(0)
    for shape in [(1, 1), (5, 5), (40, 40), (30, 7)]:
        for p in (1, 3):
            M = rng.random(shape) ** p
            M = np.tril(M) if shape[0] == shape[1] else M
            ub = nonneg_norm2_upper(M)
            true = np.linalg.norm(M, 2)
            assert true <= ub <= true * (1 + 1e-6) + 1e-300
    # The Cholesky factor of an ill-conditioned kernel matrix (the use case).
    X = np.sort(rng.uniform(0, 1, 80))[:, None]
    K = np.exp(-0.5 * (X - X.T) ** 2 / 0.5**2) + 1e-10 * np.eye(80)
    L = np.linalg.cholesky(K)
    assert np.linalg.norm(np.abs(L), 2) <= nonneg_norm2_upper(L)
    assert nonneg_norm2_upper(np.zeros((3, 3))) == 0.0


@pytest.mark.parametrize("kind", ["rbf", "matern2.5", "matern1.5"])
def test_rkhs_increment_lemma(kind):
    """2 (kappa(0) - kappa(s)) <= c2 s^2 (unit amplitude, c2 = -kappa''(0)):
    the bound ||k_x - k_x0||_H^2 <= u^T H0 u, in 50-digit arithmetic."""
    mp = pytest.importorskip("mpmath")
    from skgprobust._bounds._variance import SmoothCovariance

    mp.mp.dps = 50
    r3, r5 = mp.sqrt(3), mp.sqrt(5)
    prof = {
        "rbf": lambda s: mp.e ** (-(s**2) / 2),
        "matern1.5": lambda s: (1 + r3 * s) * mp.e ** (-r3 * s),
        "matern2.5": lambda s: (1 + r5 * s + 5 * s**2 / 3) * mp.e ** (-r5 * s),
    }[kind]
    c2 = mp.mpf(SmoothCovariance.profile(kind)[0])
    for e in np.linspace(-6, 3, 200):
        s = mp.mpf(10) ** mp.mpf(float(e))
        assert 2 * (prof(0) - prof(s)) <= c2 * s**2
        # and the kernel-value rounding constant: s |kappa'(s)| <= 0.74
        assert s * abs(mp.diff(prof, s)) <= mp.mpf("0.74")
        # and the slope bound of the mixed-section Jacobian rounding
        assert abs(mp.diff(prof, s)) <= mp.mpf(SmoothCovariance.SUP_SLOPE)


def _ref_q(L, r):
    """||L^-1 r||^2 with a refined solve (residual in long double)."""
    z = solve_triangular(L, r, lower=True)
    for _ in range(3):
        res = (r.astype(np.longdouble) - L.astype(np.longdouble) @ z.astype(np.longdouble)).astype(np.float64)
        z = z + solve_triangular(L, res, lower=True)
    return float(z @ z), z


def test_solve_model_holds():
    """The lemma's first-order bound 2 gam ||a|| nLabs ||z~|| + ... covers the
    actual error of sklearn's solve-and-sum on an ill-conditioned factor,
    while being far below the old kappa-scaled margin."""
    rng = np.random.default_rng(1)
    N, d = 120, 2
    X = rng.uniform(0, 1, (N, d))
    k = ConstantKernel(1e3) * RBF([0.4, 0.7])
    K = k(X) + 1e-6 * np.eye(N)
    L = np.linalg.cholesky(K)
    gam = margin_rtol(N, d)
    nLabs = nonneg_norm2_upper(L)
    lam = np.linalg.eigvalsh(np.linalg.inv(K))[-1]
    nLinv = np.sqrt(lam) * 1.01
    kappa = np.linalg.cond(L)
    for x in rng.uniform(0, 1, (30, d)):
        r = k(x[None], X)[0]
        zt = solve_triangular(L, r[:, None], lower=True)[:, 0]
        qt = float(np.einsum("i,i->", zt, zt))
        q, z = _ref_q(L, r)
        a = solve_triangular(L, z, lower=True, trans="T")
        nz = np.linalg.norm(zt)
        bound = gam * nz**2 + 2 * gam * np.linalg.norm(a) * nLabs * nz + (nLinv * gam * nLabs * nz) ** 2
        assert abs(qt - q) <= bound
        assert bound < 1e-2 * gam * kappa * q  # the old margin was >= 100x larger here


# --------------------------------------------------------------------------
# Adversarial fitted models
# --------------------------------------------------------------------------


def _friedman_matern(N=250, d=8):
    """The bench_std_snr model that stalled (noise / amplitude ~ 4e-7): the
    hyper-parameters sklearn fits on it (rounded), frozen."""
    X, y = make_friedman1(n_samples=N + 5, n_features=d, noise=0.5, random_state=0)
    ls = [8.21, 6.97, 14.9, 186.0, 286.0, 1e5, 1e5, 1e5]
    k = ConstantKernel(154.0**2) * Matern(ls, nu=2.5) + WhiteKernel(0.00877)
    return _fit(k, X[:N], y[:N], normalize_y=True), X


def test_friedman_matern_boxes_and_gap():
    reg, X = _friedman_matern()
    rng = np.random.default_rng(0)
    gamma = 0.02 * X[:250].std(axis=0)
    for c in (X[250], X[251], X[3]):
        for f in (1.0, 0.1, 1e-3, 0.0):
            vb, loc, (vmin, vmax), s2 = check_box(reg, c - f * gamma, c + f * gamma, rng)
        # At a zero-width box the bound is the value plus the margins: it
        # must now be a tiny fraction of v (it was ~10% with the kappa margin).
        assert (loc[1] - loc[0]) * s2 < 1e-4 * vmin
    # and the std range converges (it stalled at a 9% gap before)
    s0 = np.sqrt(sk_var_batched(reg, X[250:252], (None,))[0])
    r = reg.prediction_range(X[250:252], gamma, statistic="std", epsilon=0.01 * s0.min(), time_limit=5, random_state=0)
    assert r.converged.all()


def _near_duplicates(normalize_y, amp, offset, yoff, noise):
    rng = np.random.default_rng(7)
    X0 = rng.uniform(0, 3, (40, 2))
    X = np.vstack([X0, X0[:10] + 1e-9 * rng.normal(size=(10, 2))]) + offset
    y = np.sin(2 * (X[:, 0] - offset)) * np.cos(X[:, 1] - offset) * np.sqrt(amp) + yoff
    k = ConstantKernel(amp) * RBF([0.8, 1.3]) + WhiteKernel(noise)
    return _fit(k, X, y, normalize_y=normalize_y, alpha=1e-10), X


@pytest.mark.parametrize(
    "normalize_y,amp,offset,yoff,noise",
    [
        (False, 1.0, 0.0, 0.0, 1e-8),  # tiny noise, unit amplitude
        (False, 1e4, 0.0, 0.0, 1e-6),  # large amplitude, tiny relative noise
        (True, 1.0, 0.0, 1e6, 1e-8),  # large target offset, normalize_y
        (True, 1e3, 1e4, 1e6, 1e-7),  # feature offset too
        (False, 1e2, 1e5, 0.0, 1e-5),  # large feature offset, no normalize_y
    ],
)
def test_adversarial_regressors(normalize_y, amp, offset, yoff, noise):
    reg, X = _near_duplicates(normalize_y, amp, offset, yoff, noise)
    rng = np.random.default_rng(3)
    for c in (X[0], X[40], 0.5 * (X[1] + X[2]), X[5] + 0.37):
        for w in (0.2, 1e-3, 1e-7, 0.0):
            hw = w * rng.uniform(0.3, 1.0, 2)
            check_box(reg, c - hw, c + hw, rng)


def test_ill_conditioned_matern():
    """Dense 1-D data, Matern 1.5 / 2.5, noise 1e-10: kappa of the factor ~1e5+."""
    rng = np.random.default_rng(11)
    X = np.sort(rng.uniform(0, 1, 60))[:, None]
    y = np.sin(6 * X[:, 0])
    for nu in (1.5, 2.5):
        reg = _fit(ConstantKernel(3.0) * Matern(0.5, nu=nu) + WhiteKernel(1e-10), X, y, alpha=1e-10)
        var, _ = parts(reg)
        assert var.kappa > 1e4
        for c in (X[10, 0], 0.5 * (X[20, 0] + X[21, 0]), 0.999):
            for w in (0.01, 1e-4, 1e-8, 0.0):
                check_box(reg, np.array([c - w]), np.array([c + w]), rng)


def test_gpc_large_amplitude():
    """Laplace GPC (D = W^1/2): the XOR RBF classifier with amplitude 159^2."""
    rng = np.random.RandomState(0)
    X = rng.randn(200, 2)
    y = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0).astype(int)
    clf = RobustGaussianProcessClassifier(ConstantKernel(159.0**2) * RBF(1.21), optimizer=None).fit(X, y)
    var, _ = parts(clf)
    assert var.smooth is not None

    def latent_var(P):
        return np.asarray(clf.base_estimator_.latent_mean_and_variance(np.atleast_2d(P))[1], dtype=np.float64)

    g = np.random.default_rng(2)
    for c in (X[0], X[7], g.normal(size=2)):
        for w in (0.07, 1e-3, 0.0):
            lo, hi = c - w, c + w
            vb = var.bounds(lo[None], hi[None])
            res = attack(latent_var, lo, hi, g, n_samples=600)
            single = np.array([latent_var(p[None])[0] for p in res.points[:40]])
            vmin, vmax = min(res.min, single.min()), max(res.max, single.max())
            assert vb.lower[0] <= vmin and vb.upper[0] >= vmax


def test_xor_probability_ranges_converge():
    """The gallery's XOR RBF classifier: probability ranges at gamma = 1% of
    the range converge quickly now that the spectral split is skipped."""
    rng = np.random.RandomState(0)
    X = rng.randn(200, 2)
    y = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0).astype(int)
    clf = RobustGaussianProcessClassifier(ConstantKernel(159.0**2) * RBF(1.21), optimizer=None).fit(X, y)
    gamma = 0.01 * np.ptp(X, axis=0)
    rows = X[[3, 17, 42]]
    r = clf.prediction_range(rows, gamma, statistic="proba", epsilon=0.01, time_limit=5, random_state=0)
    assert r.converged.all()
    g = np.random.default_rng(0)
    for i, x in enumerate(rows):
        P = x + gamma * (2 * g.random((500, 2)) - 1)
        p = clf.predict_proba(P)
        assert np.all(p >= r.min_lower[i] - 1e-12) and np.all(p <= r.max_upper[i] + 1e-12)


# --------------------------------------------------------------------------
# Sweep
# --------------------------------------------------------------------------


@st.composite
def margin_cases(draw):
    kind = draw(st.sampled_from(["rbf", "matern1.5", "matern2.5"]))
    d = draw(st.integers(1, 5))
    N = draw(st.integers(5, 60))
    normalize_y = draw(st.booleans())
    log_amp = draw(st.sampled_from([0.0, 2.0, 4.0]))
    log_noise = draw(st.sampled_from([-10.0, -8.0, -6.0, -3.0]))
    offset = draw(st.sampled_from([0.0, 1e3, 1e5]))
    yoff = draw(st.sampled_from([0.0, 1e4]))
    dup = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    width = draw(st.sampled_from([0.0, 1e-9, 1e-5, 1e-2, 0.3]))
    where = draw(st.sampled_from(["train", "between", "random"]))
    return kind, d, N, normalize_y, log_amp, log_noise, offset, yoff, dup, seed, width, where


def _sweep(case, n):
    kind, d, N, normalize_y, log_amp, log_noise, offset, yoff, dup, seed, width, where = case
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (N, d))
    if dup:
        X = np.vstack([X, X[: max(1, N // 4)] + 1e-9 * rng.normal(size=(max(1, N // 4), d))])
    w = rng.normal(size=d)
    y = np.sin(X @ w) * 10 ** (log_amp / 2) + yoff
    X = X + offset
    ls = rng.uniform(0.3, 2.0, d)
    base = RBF(ls) if kind == "rbf" else Matern(ls, nu=float(kind[-3:]))
    k = ConstantKernel(10**log_amp) * base + WhiteKernel(10**log_noise * 10**log_amp)
    try:
        reg = _fit(k, X, y, normalize_y=normalize_y, alpha=1e-10)
    except np.linalg.LinAlgError:  # sklearn's own Cholesky failed
        assume(False)
    c = {"train": X[0], "between": 0.5 * (X[0] + X[-1]), "random": offset + rng.uniform(-2.5, 2.5, d)}[where]
    hw = width * rng.uniform(0.1, 1.0, d)
    check_box(reg, c - hw, c + hw, rng, n=n)


@settings(FAST, max_examples=6)
@given(margin_cases())
def test_sweep_fast(case):
    _sweep(case, 300)


@pytest.mark.slow
@SLOW
@given(margin_cases())
def test_sweep_slow(case):
    _sweep(case, 2000)


@pytest.mark.parametrize(
    "M",
    [np.full((3, 3), 1e-200), np.diag([1e-160, 1e-170]), np.full((4, 4), 1e300), np.diag([1.0, 1e-320]),
     np.tril(np.random.RandomState(0).rand(30, 30)) * 1e-250, np.eye(3), np.zeros((2, 2))],
    ids=["underflow", "subnormal-products", "overflow", "subnormal-entry", "tiny-triangular", "identity", "zero"],
)
def test_nonneg_norm2_upper_extreme_scales(M):
    """Found in review: entries whose products underflow made the bound 0 (or
    below the norm); the matrix is now scaled by a power of two first."""
    from skgprobust._fp import nonneg_norm2_upper

    true = np.linalg.norm(np.ldexp(M, -int(np.frexp(M.max())[1])) if M.max() > 0 else M, 2)
    true = np.ldexp(true, int(np.frexp(M.max())[1])) if M.max() > 0 else 0.0
    ub = nonneg_norm2_upper(M)
    assert ub >= true
    assert ub <= true * (1 + 1e-12) + 1e-300


def test_rkhs_remainder_covers_the_computed_centre_vector():
    """rkhs_remainder bounds ||A (r(x) - r0~)||^2 with r0~ the *computed*
    kernel vector at the box centre (what LatentVariance.bounds and the affine
    enclosure expand around), not only ||A (r(x) - r(c))||^2. Where sklearn's
    value underflows (a tiny fractional power: (RBF ** 0.001) ** 0.001 at 38.7
    length scales, base exp(-749) -> 0, so r0~ = 0 while the exact value is
    0.99925) the RKHS increment alone (~1e-7) is far below the needed ~lam."""
    from sklearn.gaussian_process.kernels import RBF as _RBF

    from skgprobust._bounds._variance import LatentVariance
    from skgprobust.kernels import make_adapter

    kernel = (_RBF(1.0) ** 0.001) ** 0.001
    Xs = np.array([[0.0], [-0.4], [-1.1]])
    L = np.linalg.cholesky(kernel(Xs) + 1e-2 * np.eye(3))
    var = LatentVariance(make_adapter(kernel, Xs), L)
    lo, hi = np.array([[38.70]]), np.array([[38.71]])
    c = 0.5 * (lo + hi)
    r0 = var.adapter.values(c)[0]
    assert np.all(r0 == 0.0)  # sklearn's base underflowed
    S = np.linalg.inv(L @ L.T)
    x = np.linspace(lo[0, 0], hi[0, 0], 101)[:, None]
    r = np.exp(1e-6 * (-0.5 * (x - Xs.T) ** 2))  # exact values (log domain)
    need = np.einsum("ni,ij,nj->n", r - r0, S, r - r0)
    bound = var.rkhs_remainder(lo, hi)[0]
    assert need.max() <= bound
    # the RKHS increment alone: what the bound was before session 27
    D = var.adapter.rkhs_increment(lo, hi)[0] * (1.0 + var.rho)
    assert need.max() > 1e3 * D
