"""A regressor whose noise diagonal is negative outside the kernel.

sklearn's ``GaussianProcessRegressor`` accepts an ndarray ``alpha`` with
negative entries (only a scalar must be >= 0). With a PSD kernel (so
``KernelAdapter.psd`` is True) the factored matrix ``K + diag(alpha)`` can
still be positive definite, and ``check_gram`` (which reads the kernel alone)
passes, but the variance bounds' lemma needs the noise diagonal >= 0.
"""

import warnings

import numpy as np
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import RobustGaussianProcessRegressor

from ._helpers import box_points


def _std_crossings(reg, Xq, gamma, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = reg.prediction_range(Xq, gamma, statistic="std", max_iter=60)
        bad = 0
        for i, x in enumerate(Xq):
            s = reg.predict(box_points(x - gamma, x + gamma, rng, n), return_std=True)[1]
            bad += int(((s < np.ravel(r.min_lower[i])[0]) | (s > np.ravel(r.max_upper[i])[0])).sum())
    return bad


def test_negative_alpha_array_gets_no_lemma():
    """C * RBF + WhiteKernel(0.3) with alpha = -0.4 per sample on separated
    points: the Gram matrix plus alpha is positive definite, sklearn fits it,
    and the lemma's lower bound v >= 0.3 (the white part) was certified
    while predict's std went down to 0.433 (certified lower end 0.436): std
    ranges crossed at 207 of 8 x 1500 samples (gamma 0.1) before, zero
    tolerance. Now the
    lemma is not used for such a model, and a non-negative alpha array
    keeps it. Since session 25 the bounds without the lemma are finite (the
    direct margin, module doc of ``_variance``, "Without the lemma"): still
    no crossing, and the std ranges are finite."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (12, 2))
    y = np.sin(X[:, 0]) + X[:, 1]
    Xq = np.vstack([X[:4] + 0.05, rng.uniform(-3, 3, (4, 2))])
    k = C(1.0, "fixed") * RBF(0.4, "fixed") + WhiteKernel(0.3, "fixed")
    reg = RobustGaussianProcessRegressor(k, alpha=np.full(12, -0.4), optimizer=None).fit(X, y)
    for g in (0.1, 0.4):
        assert _std_crossings(reg, Xq, g) == 0
    assert reg._bound_model().latents[0].variance().psd is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = reg.prediction_range(Xq, 0.1, statistic="std", max_iter=60)
    assert np.all(np.isfinite(r.max_upper)) and np.all(np.isfinite(r.min_lower))
    ok = RobustGaussianProcessRegressor(k, alpha=np.full(12, 1e-3), optimizer=None).fit(X, y)
    assert ok._bound_model().latents[0].variance().psd is True
    assert _std_crossings(ok, Xq, 0.1) == 0
