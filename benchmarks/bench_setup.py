"""Per-call setup time: what a repeated certify / prediction_range call pays
before its rows start (bound-model construction, objectives, validation).

Setup of one call = wall time of the call - the sum of its rows' ``time``
(rows time themselves from their own start). Run against any checkout:
``PYTHONPATH=<checkout> python benchmarks/bench_setup.py``.

Models: a 3-class one-vs-rest GPC (make_blobs, N = 600, d = 4, fitted
kernel) and the 10-class one-vs-rest GPC of the issue (load_digits, pixels /
16, 1000 training rows, C(20) * RBF(2.5), optimizer=None).
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits, make_blobs  # noqa: E402
from sklearn.gaussian_process.kernels import RBF  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C  # noqa: E402

from skgprobust import RobustGaussianProcessClassifier  # noqa: E402

warnings.simplefilter("ignore")


def models():
    X, y = make_blobs(700, n_features=4, centers=3, cluster_std=2.5, random_state=0)
    clf3 = RobustGaussianProcessClassifier(1.0 * RBF(np.ones(4)), random_state=0).fit(X[:600], y[:600])
    yield "3-class OvR, N=600, d=4", clf3, X[600:]
    D = load_digits()
    Xd, yd = D.data / 16.0, D.target
    clf10 = RobustGaussianProcessClassifier(C(20.0) * RBF(2.5), optimizer=None).fit(Xd[:1000], yd[:1000])
    yield "10-class OvR digits, N=1000, d=64", clf10, Xd[1000:]


def setup_time(call):
    t = time.perf_counter()
    res = call()
    wall = time.perf_counter() - t
    return wall, wall - float(np.sum(res.time))


def main(repeats=3):
    print(f"{'model':<36} {'call':<44} {'first: wall/setup s':>20} {'repeat: wall/setup s':>21} {'setup share':>11}")
    for name, clf, Xt in models():
        calls = {
            "prediction_range(1 row, eps 1e-2, 20 it)": lambda: clf.prediction_range(
                Xt[:1], 0.02, max_iter=20, random_state=0),
            "certify(5 rows, gamma 0.05, 50 it)": lambda: clf.certify(Xt[:5], 0.05, max_iter=50, random_state=0),
        }
        for label, call in calls.items():
            first = setup_time(call)
            rep = [setup_time(call) for _ in range(repeats)]
            wall = np.median([r[0] for r in rep])
            setup = np.median([r[1] for r in rep])
            print(f"{name:<36} {label:<44} {first[0]:>9.3f}/{first[1]:<9.3f} {wall:>10.3f}/{setup:<10.3f}"
                  f" {100 * setup / wall:>10.1f}%")


if __name__ == "__main__":
    main()
