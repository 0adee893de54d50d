"""The float-factor lemma's certificate in x87 extended precision (module doc
of :mod:`skgprobust._bounds._variance`, "The lemma for the float factor";
:func:`skgprobust._fp.gram_minus_extended`).

The product L L^T and the subtraction of the kernel matrix are done in long
double; the certificate then charges 2 gamma_N(2^-64) nLabs^2 for the
product instead of ~8 gamma_N(2^-53) nLabs^2. The error model of the helper
is checked entrywise against exact rational arithmetic, and on the unscaled
trend model that needed it (noise 2e-4 below the float product's bound
1e-3) the lemma's rho drops from 4.2 to 0 while the bounds stay sound.
"""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, WhiteKernel

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessRegressor
from skgprobust._bounds._variance import LatentVariance
from skgprobust._fp import UNIT_ROUNDOFF, extended_unit_roundoff, gram_minus_extended

from ._helpers import attack

EXT = extended_unit_roundoff()
needs_ext = pytest.mark.skipif(EXT is None, reason="no x87 extended long double on this platform")


def test_extended_unit_roundoff_is_consistent():
    """Where it is reported, the format is the 64-bit-significand one and its
    arithmetic keeps 2^-62 next to 1 (double precision would not)."""
    if EXT is None:
        pytest.skip("no x87 extended long double on this platform: the path is off")
    assert EXT == 2.0**-64
    one = np.longdouble(1)
    assert (one + np.longdouble(2.0) ** -62) - one == np.longdouble(2.0) ** -62


@needs_ext
@pytest.mark.parametrize("seed,scale", [(0, 1.0), (1, 1e3), (2, 1e-3)])
def test_gram_minus_extended_error_model(seed, scale):
    """Entry by entry, |H - (L L^T - K)| <= gamma_N(u_x) (|L| |L^T|) + (u + 2
    u_x)(1 + 2 u) |H| + u_x |K|-free slack, with L L^T - K exact (Fractions):
    the bound the certificate uses (its Frobenius form) holds entrywise.
    Blocks smaller than N exercise the blocked loop; L has entries of mixed
    sign and magnitude; K = fl(L L^T) - noise so that H is small (the case
    that matters: cancellation)."""
    rng = np.random.default_rng(seed)
    N = 23
    L = np.tril(rng.normal(size=(N, N)) * scale * np.exp(rng.uniform(-3, 3, (N, N))))
    L[np.diag_indices(N)] = np.abs(L[np.diag_indices(N)]) + scale
    K = L @ L.T - 1e-6 * scale * scale * np.eye(N)
    K = 0.5 * (K + K.T)
    H = gram_minus_extended(L, K, block=5)
    assert np.array_equal(H, H.T)
    F = [[Fraction(float(v)) for v in row] for row in L]
    ux = Fraction(EXT)
    u = Fraction(UNIT_ROUNDOFF)
    gx = N * ux / (1 - N * ux)
    aL = np.abs(L)
    for i in range(N):
        for j in range(i + 1):
            exact = sum(F[i][k] * F[j][k] for k in range(j + 1)) - Fraction(float(K[i, j]))
            mag = sum(Fraction(float(aL[i, k])) * Fraction(float(aL[j, k])) for k in range(j + 1))
            bound = gx * mag + (u + 2 * ux) * (1 + 2 * u) * abs(Fraction(float(H[i, j])))
            assert abs(Fraction(float(H[i, j])) - exact) <= bound, (i, j)


def _f3_model(N):
    from sklearn.datasets import make_friedman3

    X, y = make_friedman3(n_samples=N + 20, noise=0.01, random_state=0)
    k = (ConstantKernel(0.57**2) * RBF([56.1, 441.0, 0.155, 188.0]) + DotProduct(0.00283)
         + WhiteKernel(0.0002))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = RobustGaussianProcessRegressor(k, normalize_y=False, optimizer=None).fit(X[:N], y[:N])
    return reg, X


@needs_ext
def test_unscaled_trend_model_lemma_certified():
    """Friedman #3 (features up to ~1700, no normalize_y), N = 1000, the
    hyperparameters of bench_std_snr's fit: the float product's bound
    gam_N nLabs^2 = 1e-3 exceeds the noise 2e-4, so the float64 certificate
    left rho = 4.2 (the std's bounds floored at ~100% of the std); the
    extended one certifies L L^T >= Kc (rho = 0). Sound on boxes of the
    benchmark's gamma and below (sampled points plus local optima of
    sklearn's own std)."""
    reg, X = _f3_model(1000)
    var = reg._bound_model().variances("default")[0]
    assert var.rho == 0.0 and var.lemma_e == 0.0
    # Without the extended path (as on platforms without it): rho > 1.
    class _Float64Only(LatentVariance):
        def _certified_shift(self, Hs, dlt, nF):
            return super()._certified_shift(Hs, dlt, nF) if nF is not None else np.inf

    assert _Float64Only(var.adapter, var.L).rho > 1.0
    g = 0.02 * X[:1000].std(0)
    rng = np.random.default_rng(0)

    def sk_std(P):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return reg.predict(np.atleast_2d(P), return_std=True)[1]

    for x in X[1000:1002]:
        for f in (1.0, 1e-3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BudgetExhaustedWarning)  # epsilon below the floor: on purpose
                r = reg.prediction_range(x[None], f * g, statistic="std", epsilon=1e-3 * sk_std(x[None])[0],
                                         max_iter=30, random_state=0)
            res = attack(sk_std, x - f * g, x + f * g, rng, n_samples=800)
            assert r.min_lower[0, 0] <= res.min and res.max <= r.max_upper[0, 0]
            # The floor is the solves' margins now, a few % of the std (was ~100%).
            assert r.max_upper[0, 0] - r.min_lower[0, 0] < 0.25 * res.max + (res.max - res.min)
