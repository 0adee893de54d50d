"""The solve model of the variance proofs on this platform: sklearn's
Laplace GPC computes its latent variance with ``scipy.linalg.solve(L_, ...)``
(a *general* solve). The proofs' componentwise triangular-solve model holds
for it because scipy (>= 1.15) detects the triangular factor and calls the
triangular solver (LAPACK ``trtrs``); a pivoted LU (scipy < 1.15's default)
would not be described by it. Checked here bitwise against
``solve_triangular`` on factors where LU would interchange rows."""

import numpy as np
import pytest
import scipy
import scipy.linalg as sl
from sklearn.gaussian_process.kernels import RBF


def _factors():
    # the referee's example: a Laplace-type B = I + W^1/2 K W^1/2 whose
    # factor has |L21| > L11 (getrf would pivot)
    K = np.array([[1.0, 19.9], [19.9, 400.0]])
    w = np.sqrt(np.array([0.25, 0.25]))
    yield np.linalg.cholesky(np.eye(2) + w[:, None] * K * w)
    rng = np.random.default_rng(0)
    for n in (5, 40, 200):
        X = rng.uniform(-2, 2, (n, 3))
        w = np.sqrt(rng.uniform(0.01, 0.25, n))
        B = np.eye(n) + w[:, None] * (25.0 * RBF(1.5)(X)) * w
        yield sl.cholesky(B, lower=True)


def test_scipy_version_detects_structure():
    major, minor = (int(v) for v in scipy.__version__.split(".")[:2])
    assert (major, minor) >= (1, 15)


@pytest.mark.parametrize("i", range(4))
def test_general_solve_of_a_triangular_factor_is_the_triangular_solve(i):
    L = list(_factors())[i]
    lu, piv = sl.lu_factor(L)
    rng = np.random.default_rng(i)
    B = rng.standard_normal((L.shape[0], 9))
    np.testing.assert_array_equal(sl.solve(L, B), sl.solve_triangular(L, B, lower=True))
    if i == 0:
        assert piv[0] != 0  # a pivoted LU would have swapped rows here
