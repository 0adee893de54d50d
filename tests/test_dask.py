"""certify under joblib's Dask backend equals the serial run.

Starts a local ``dask.distributed`` cluster of two single-threaded worker
processes (no dashboard, loopback only); skipped when dask/distributed is not
installed. The cluster is closed even when the test fails.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port / resource chatter of a local cluster
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            silence_logs=40,
        )
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (60, 3))
    y = (np.sin(1.5 * X[:, 0]) + X[:, 1] - 0.5 * X[:, 2] > 0).astype(int)
    return X, y, rng.uniform(-2, 2, (24, 3))


def _same(a, b):
    for name in ("robust", "status", "bound", "n_iter"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.counterexample, b.counterexample)


def test_dask_backend_equals_serial(client):
    X, y, X_test = _data()
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(2.0) * RBF(0.8), optimizer=None).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        serial = clf.certify(X_test, 0.2, max_iter=200, n_jobs=1, random_state=0)
        with joblib.parallel_backend("dask"), distributed.get_task_stream(client=client) as tasks:
            parallel = clf.certify(X_test, 0.2, max_iter=200, n_jobs=-1, random_state=0)
    _same(serial, parallel)
    assert serial.robust.any() and (serial.status == "not_robust").any()
    # The rows really ran on the cluster's two workers.
    assert len(tasks.data) > 0
    assert {t["worker"] for t in tasks.data} <= set(client.scheduler_info()["workers"])


def test_dask_backend_regressor_range_equals_serial(client):
    X, _, X_test = _data()
    t = np.sin(X[:, 0]) + X[:, 1]
    reg = RobustGaussianProcessRegressor(kernel=ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.01), optimizer=None)
    reg.fit(X, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetExhaustedWarning)
        serial = reg.prediction_range(X_test[:8], 0.2, epsilon=1e-3, max_iter=100, n_jobs=1, random_state=0)
        with joblib.parallel_backend("dask"):
            parallel = reg.prediction_range(X_test[:8], 0.2, epsilon=1e-3, max_iter=100, n_jobs=-1, random_state=0)
    for name in ("min_lower", "min_upper", "max_lower", "max_upper", "argmin", "argmax", "n_iter"):
        np.testing.assert_array_equal(getattr(serial, name), getattr(parallel, name), err_msg=name)
