"""Probability ranges and multi-class certification (issue 3 targets).

1. Synthetic2D (the paper's set): 1000 training points, class 0 drawn from
   N((SHIFT, 0), I) and class 1 from N((0, SHIFT), I) with SHIFT = 1.5
   (a standard normal shifted along the first / second axis); binary GPC with
   C * RBF (hyper-parameters fitted by sklearn). prediction_range to
   epsilon = 0.01 for gamma in {0.1, 0.25, 0.5, 1.0} on 50 test points:
   median and max seconds per row, fraction converged.
2. One-vs-rest GPC on the digits 3 / 5 / 8 of load_digits restricted to the
   10 pixels of highest variance (scaled to [0, 1]): certify at gamma in
   {0.05, 0.1} with domain (0, 1): time per row and fraction decided.

Usage: python benchmarks/bench_proba.py [--rows 50] [--time-limit 20]
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # before numpy: one BLAS thread (set them to measure others)

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from _data import synthetic2d  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier



def bench_synthetic(rows, time_limit):
    rng = np.random.default_rng(0)
    X, y = synthetic2d(1000, rng)
    X_test, _ = synthetic2d(rows, rng)
    t = time.perf_counter()
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0).fit(X, y)
    print(f"Synthetic2D: fitted {clf.kernel_} in {time.perf_counter() - t:.1f} s")
    print(f"{'gamma':>6} {'median s/row':>13} {'max s/row':>10} {'converged':>10} {'median gap':>11}")
    for gamma in (0.1, 0.25, 0.5, 1.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetExhaustedWarning)
            r = clf.prediction_range(X_test, gamma, epsilon=0.01, time_limit=time_limit, random_state=0)
        gap = np.maximum(r.min_upper - r.min_lower, r.max_upper - r.max_lower).max(1)
        conv = r.converged.all(1).mean()
        print(f"{gamma:6.2f} {np.median(r.time):13.3f} {r.time.max():10.3f} {conv:10.0%} {np.median(gap):11.4f}")


def bench_digits(rows, time_limit):
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [3, 5, 8])
    X, y = X[keep] / 16.0, y[keep]
    pixels = np.argsort(X.var(0))[::-1][:10]
    X = X[:, pixels]
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    tr, te = idx[:300], idx[300 : 300 + rows]
    t = time.perf_counter()
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0).fit(X[tr], y[tr])
    acc = (clf.predict(X[te]) == y[te]).mean()
    print(f"\nDigits 3/5/8, 10 pixels, one-vs-rest, N=300: fitted in {time.perf_counter() - t:.1f} s, "
          f"test accuracy {acc:.2f}")
    print(f"{'gamma':>6} {'median s/row':>13} {'mean s/row':>11} {'robust':>7} {'not_rob':>8} {'unknown':>8}")
    for gamma in (0.05, 0.1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetExhaustedWarning)
            c = clf.certify(X[te], gamma, domain=(0.0, 1.0), time_limit=time_limit, random_state=0)
        frac = {s: np.mean(c.status == s) for s in ("robust", "not_robust", "unknown")}
        print(f"{gamma:6.2f} {np.median(c.time):13.3f} {c.time.mean():11.3f} {frac['robust']:7.0%} "
              f"{frac['not_robust']:8.0%} {frac['unknown']:8.0%}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--skip-digits", action="store_true")
    args = ap.parse_args()
    bench_synthetic(args.rows, args.time_limit)
    if not args.skip_digits:
        bench_digits(args.rows, args.time_limit)
