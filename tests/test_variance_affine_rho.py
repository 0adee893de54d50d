"""The affine variance enclosure scales its RKHS remainder by (1 + rho)."""

import warnings

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import RobustGaussianProcessClassifier
from skgprobust._bounds._variance_affine import affine_variance_enclosure


def test_affine_enclosure_rkhs_remainder_carries_the_lemma_factor():
    """The lemma for the float factor only gives P <= (1 + rho) I, so the
    RKHS remainder is ||A dr||^2 <= (1 + rho) sum_j H0_j h_j^2
    (LatentVariance.bounds scales it so); affine_variance_enclosure used
    the unscaled sum_j H0_j h_j^2. rho = 0 on every classifier measured
    (Laplace and EP, amplitudes up to 1e15), so this is a proof gap, not a
    measured crossing: with rho forced to 1e3 the lower constant must drop
    by min(lam_max ||dr||^2, (1 + rho) H0 h^2) - H0 h^2 (0.16-0.41 here);
    it moved by 4e-12 before (the margin alone). Zero tolerance."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (60, 3))
    y = (np.sin(3 * X[:, 0]) + X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(C(4.0, "fixed") * RBF(0.6, "fixed"), optimizer=None).fit(X, y)
    var = clf._bound_model().latents[0].variance()
    assert var.smooth is not None and var.rho == 0.0
    Xq = rng.uniform(-1, 1, (5, 3))
    lo, hi = Xq - 0.05, Xq + 0.05
    _, clo0, _ = affine_variance_enclosure(var, lo, hi)
    ad = var.adapter
    klo, khi = ad.interval(lo, hi)
    r0 = ad.values(0.5 * (lo + hi))
    dr = np.maximum(np.maximum(khi - r0, r0 - klo), 0.0)
    lam_dr2 = var.lam_max * (dr * dr).sum(1)
    h0h2 = float((var.smooth.H0 * 0.05 * 0.05).sum())
    assert np.all(lam_dr2 > h0h2)  # the RKHS term is the one used at rho = 0
    var.rho = 1e3
    _, clo, _ = affine_variance_enclosure(var, lo, hi)
    assert np.all(clo <= clo0 - (np.minimum(lam_dr2, (1.0 + var.rho) * h0h2) - h0h2))
