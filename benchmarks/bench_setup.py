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


_MARKS = {}


def _instrument():
    """Record when the rows start and end: wrap ``map_rows`` wherever the
    checkout calls it (the estimator modules before the driver existed, the
    driver after)."""
    import importlib

    for name in ("skgprobust._gpc", "skgprobust._gpr", "skgprobust._engine._driver"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        inner = getattr(mod, "map_rows", None)
        if inner is None or getattr(inner, "_wrapped", False):
            continue

        def wrapped(*args, _inner=inner, **kwargs):
            _MARKS["start"] = time.perf_counter()
            out = _inner(*args, **kwargs)
            _MARKS["end"] = time.perf_counter()
            return out

        wrapped._wrapped = True
        mod.map_rows = wrapped


def measure(call, n_rows):
    """(wall, setup, assembly) of one call: setup is everything before the
    rows start (validation, the bound model, objectives), assembly what
    follows them (re-evaluating the model at the incumbents, results)."""
    t = time.perf_counter()
    call(n_rows)
    end = time.perf_counter()
    return end - t, _MARKS["start"] - t, end - _MARKS["end"]


def main(repeats=3):
    print(f"{'model':<36} {'call':<38} {'1st call wall s':>15} {'1st setup s':>11} "
          f"{'repeat wall s':>13} {'setup s':>8} {'assembly s':>10} {'setup share':>11}")
    _instrument()
    for name, clf, Xt in models():
        calls = {
            "prediction_range(2 rows, 50 it)": (lambda n: clf.prediction_range(
                Xt[:n], 0.02, max_iter=50, random_state=0), 2),
            "certify(5 rows, gamma 0.05, 50 it)": (lambda n: clf.certify(
                Xt[:n], 0.05, max_iter=50, random_state=0), 5),
        }
        for label, (call, n_rows) in calls.items():
            first = measure(call, n_rows)
            rep = np.median([measure(call, n_rows) for _ in range(repeats)], axis=0)
            print(f"{name:<36} {label:<38} {first[0]:>15.3f} {first[1]:>11.3f} "
                  f"{rep[0]:>13.3f} {rep[1]:>8.4f} {rep[2]:>10.4f} {100 * rep[1] / rep[0]:>10.1f}%")


if __name__ == "__main__":
    main()
