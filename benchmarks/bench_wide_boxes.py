"""Wide boxes on models fitted the way users fit them (issue 12).

What it measures
----------------
Mean-type bounds lose the cancellation between weights of both signs when a
box is wide against the fitted length scales (the per-point Taylor
remainder adds up |w_i| times each point's error); the RKHS remainder of the
mean Taylor models (``StationaryAdapter._rkhs_remainder``, session 29)
keeps it. This script measures ``certify`` and ``prediction_range`` at
growing gammas (in units of each feature's standard deviation on the
training rows) on:

* ``cancer``: breast cancer (30 features, standardised), binary
  ``RobustGaussianProcessClassifier(1.0 * RBF(1.0))`` fitted, 450 training
  rows; ``certify`` of the first ``--rows`` held-out rows;
* ``3class-m25``: ``make_classification`` (6 features, 3 classes,
  standardised, 600 training rows), one-vs-rest with per-class fitted
  ``1.0 * Matern(ones(6), nu=2.5)``; ``certify``;
* ``friedman1``: Friedman #1 (8 features, noise 0.5, 500 training rows),
  ``RobustGaussianProcessRegressor(C(10) * RBF(ones(8)) + WhiteKernel(0.25),
  normalize_y=True)`` fitted; mean ranges to epsilon = 1% of the predictions'
  standard deviation;
* ``diabetes``: sklearn's diabetes data (10 features, standardised, 400
  training rows), ``C(1) * Matern(ones(10), nu=2.5) + WhiteKernel(1)``,
  normalize_y; mean ranges as above.

``time_limit=2`` s per row, one BLAS thread. Checks (column "bad", must be
0): every counterexample changes ``predict``; ``predict`` is constant on 400
sampled points and the corners' sample of every robust box; ``predict`` at
400 sampled points of each box lies in the certified mean range.

Measured (session 29; before = a9164e3 from a worktree, after = c574bb0;
one after the other, 2 cores, load ~1-2, 20 rows each): every row decided
or converged in both (same statuses, bad = 0 everywhere); median seconds
per row, before -> after, at gamma = 0.05 / 0.1 / 0.25 / 0.5 std:

* friedman1 (mean): 0.015 / 0.025 / 0.050 / 0.134 -> 0.002 / 0.002 / 0.014
  / 0.024 (max 0.23 -> 0.03 s at 0.5);
* diabetes (mean): 0.002 / 0.002 / 0.039 / 0.115 -> 0.002 / 0.004 / 0.024 /
  0.065;
* 3class-m25 (certify): 0.006 / 0.007 / 0.115 / 0.024 -> 0.004 / 0.004 /
  0.058 / 0.019 (robust 100 / 95 / 65 / 10% both);
* cancer (certify): 0.001-0.002 s both (robust 90 / 75 / 40 / 25%, no
  unknown rows either way: this model was easy already).

The harder case, a fitted four-class model with amplitudes up to 316^2, is
in ``bench_many_classes.py --only fitted`` (certify at gamma 0.2: 30% ->
0% unknown rows).

How to run
----------
::

    python benchmarks/bench_wide_boxes.py              # about 3-5 min
    PYTHONPATH=/tmp/before python benchmarks/bench_wide_boxes.py   # an older checkout
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification, make_friedman1  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, Matern, WhiteKernel  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _bench import package_state, table  # noqa: E402

from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier, RobustGaussianProcessRegressor  # noqa: E402


def models():
    out = {}
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xc = StandardScaler().fit_transform(Xc)
    clf = RobustGaussianProcessClassifier(1.0 * RBF(1.0), random_state=0).fit(Xc[:450], yc[:450])
    out["cancer"] = ("certify", clf, Xc[:450], Xc[450:])
    X3, y3 = make_classification(n_samples=660, n_features=6, n_informative=5, n_redundant=0, n_classes=3,
                                 n_clusters_per_class=1, random_state=1)
    X3 = StandardScaler().fit_transform(X3)
    clf3 = RobustGaussianProcessClassifier(1.0 * Matern(np.ones(6), nu=2.5), random_state=0).fit(X3[:600], y3[:600])
    out["3class-m25"] = ("certify", clf3, X3[:600], X3[600:])
    Xf, yf = make_friedman1(n_samples=540, n_features=8, noise=0.5, random_state=0)
    reg = RobustGaussianProcessRegressor(C(10.0) * RBF(np.ones(8)) + WhiteKernel(0.25), normalize_y=True,
                                         random_state=0).fit(Xf[:500], yf[:500])
    out["friedman1"] = ("mean", reg, Xf[:500], Xf[500:])
    Xd, yd = load_diabetes(return_X_y=True)
    Xd = StandardScaler().fit_transform(Xd)
    regd = RobustGaussianProcessRegressor(C(1.0) * Matern(np.ones(10), nu=2.5) + WhiteKernel(1.0), normalize_y=True,
                                          random_state=0).fit(Xd[:400], yd[:400])
    out["diabetes"] = ("mean", regd, Xd[:400], Xd[400:])
    return out


def run(name, kind, est, Xtr, Xte, fracs, rows, time_limit, rng):
    sd = Xtr.std(axis=0)
    lines = []
    for frac in fracs:
        gamma = frac * sd
        X = Xte[:rows]
        t = time.perf_counter()
        bad = 0
        if kind == "certify":
            c = est.certify(X, gamma, time_limit=time_limit, random_state=0)
            wall = time.perf_counter() - t
            for i in range(len(X)):
                lo, hi = X[i] - gamma, X[i] + gamma
                label = est.predict(X[i][None])[0]
                if c.status[i] == "not_robust":
                    bad += int(est.predict(c.counterexample[i][None])[0] == label)
                elif c.status[i] == "robust":
                    P = np.vstack([lo + (hi - lo) * rng.random((400, len(lo))),
                                   np.where(rng.random((64, len(lo))) < 0.5, lo, hi)])
                    bad += int(np.any(est.predict(P) != label))
            lines.append([name, f"{frac:g}", len(X), f"{np.mean(c.status == 'robust'):.0%}",
                          f"{np.mean(c.status == 'unknown'):.0%}", f"{np.median(c.time):.3f}",
                          f"{c.time.max():.2f}", f"{wall:.1f}", bad])
        else:
            eps = 0.01 * float(np.std(est.predict(Xtr)))
            r = est.prediction_range(X, gamma, epsilon=eps, time_limit=time_limit, random_state=0)
            wall = time.perf_counter() - t
            for i in range(len(X)):
                lo, hi = X[i] - gamma, X[i] + gamma
                m = est.predict(lo + (hi - lo) * rng.random((400, len(lo))))
                bad += int(np.any(m < r.min_lower[i] - 1e-9) or np.any(m > r.max_upper[i] + 1e-9))
            lines.append([name, f"{frac:g}", len(X), f"{r.converged.all(axis=1).mean():.0%}", "-",
                          f"{np.median(r.time):.3f}", f"{r.time.max():.2f}", f"{wall:.1f}", bad])
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--fracs", type=float, nargs="+", default=[0.05, 0.1, 0.25, 0.5])
    args = ap.parse_args()
    print(package_state())
    warnings.simplefilter("ignore", BudgetExhaustedWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ms = models()
    rng = np.random.default_rng(0)
    lines = []
    for name, (kind, est, Xtr, Xte) in ms.items():
        lines += run(name, kind, est, Xtr, Xte, args.fracs, args.rows, args.time_limit, rng)
    print(table(["model", "gamma / std", "rows", "robust or converged", "unknown", "median s/row",
                 "max s/row", "wall s", "bad"], lines))
    print(package_state())
    if any(line[-1] for line in lines):
        sys.exit(1)


if __name__ == "__main__":
    main()
