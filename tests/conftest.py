"""Shared pytest fixtures: small fixed models for the non-property tests.

Helpers (constants, hypothesis settings and strategies, the attack,
sklearn-side reference numbers) live in ``tests/_helpers.py``; import them
with ``from ._helpers import ...``.
"""

import os

# One BLAS / OpenMP thread per test process. The problems here are small, so
# threads buy little, and on a loaded 2-core machine OpenBLAS's spinning
# threads made single tests 10-30x slower (sklearn's check_classifiers_train
# on the EP classifier: 3 s pinned, 104 s unpinned at load ~4). The
# environment variables reach worker processes (Dask tests); threadpoolctl
# covers libraries already loaded.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor  # noqa: E402

_BLAS_THREADS = threadpool_limits(limits=1)


# --------------------------------------------------------------------------
# Small fixed models for the non-property tests
# --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def reg_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (25, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1]) + 0.05 * rng.normal(size=25)
    return X, y


@pytest.fixture(scope="session")
def fitted_reg(reg_data):
    X, y = reg_data
    return RobustGaussianProcessRegressor(
        kernel=ConstantKernel(1.0) * RBF([1.0, 0.7]) + WhiteKernel(0.01), optimizer=None
    ).fit(X, y)


@pytest.fixture(scope="session")
def clf_data():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 2))
    y = (np.sin(1.5 * X[:, 0]) + X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="session")
def fitted_clf(clf_data):
    X, y = clf_data
    return RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(0.8), optimizer=None).fit(X, y)
