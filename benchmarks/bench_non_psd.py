"""Variance bounds without the RKHS lemma: kernels that are not proven PSD.

What it measures
----------------
The variance bounds' lemma P <= (1 + rho) I (module doc of
:mod:`skgprobust._bounds._variance`) needs a positive semi-definite kernel.
An ``ExpSineSquared`` applied to more than one feature (sklearn applies it
to the Euclidean distance over all features) is not PSD in general, and a
regressor's ``alpha`` array may hold negative entries; before session 25
their variance bounds were infinite: std ranges [0, inf], probability
ranges that never converge. "Without the lemma" in that module doc gives
the margin that needs no lemma. Cases (``optimizer=None`` unless said):

* ``gpr-3d``: 200 points uniform in [0, 4]^3, y = sin(2 pi x1 / 1.5) + 0.5 x2
  + N(0, 0.3^2), ``1.0 * RBF([1, 1, 1]) + 0.3 * ExpSineSquared(1, 6) +
  WhiteKernel(0.1)``, ``normalize_y``; statistics mean and std.
* ``gpr-friedman1``: ``make_friedman1(260, 8, noise 0.5)``, first 250 rows,
  ``C * RBF(ARD) + C * ExpSineSquared + White`` fitted with ``normalize_y``
  (high signal-to-noise: amplitude 16.4^2 against noise 0.0105); std.
* ``gpr-neg-alpha``: 12 points in [-3, 3]^2, ``C(1) * RBF(0.4) +
  WhiteKernel(0.3)`` with ``alpha = -0.4`` per sample (PSD kernel, negative
  noise array: no lemma); std.
* ``gpc-sum`` / ``gpc-product``: ``make_moons(230, noise 0.25)``, first 200
  rows, ``RobustGaussianProcessClassifier`` with ``10 * RBF(0.7) + 0.3 *
  ExpSineSquared(0.5, 4)`` / ``10 * RBF(0.7) * ExpSineSquared(0.5, 2)``
  (PD at these training inputs, which our classifier checks); probability
  ranges.

Regressors: gamma = 2% of each feature's std (``gpr-neg-alpha``: 0.1),
epsilon = 1% of the std at the row, ``time_limit=5``. Classifiers: gamma =
0.05, epsilon = 0.01, ``time_limit=2``. 10 rows each (the points after
the training rows). Table: case, statistic, % converged, median / max
seconds per row, median / max final gap (largest gap of the row).

Sanity checks ("anomalies", exit status 1): predict / predict_proba at 300
points of each box (corners of a random sub-box included) lie inside the
certified ranges (1e-9 relative slack for the float comparisons).

Measured (session 25, 2 cores, 1 BLAS thread, load ~0.6-0.9; before =
9a86156 from a git worktree, run one after the other; 10 rows per case):

| case | statistic | converged before -> after | median s/row before -> after | median / max gap after |
|---|---|---|---|---|
| gpr-3d | mean | 100% -> 100% | 0.015 -> 0.015 | 0.0032 / 0.0038 |
| gpr-3d | std | 0% -> 100% | 5.01 -> 0.33 (max 0.99) | 0.0037 / 0.0039 |
| gpr-friedman1 | std | 0% -> 0% | 5.01 -> 5.01 | 0.53 / 0.72 (before: inf) |
| gpr-neg-alpha | std | 0% -> 100% | 5.06 -> 0.006 | 0.0082 / 0.011 |
| gpc-sum | proba | 0% -> 100% | 2.00 -> 0.031 | 0.0089 / 0.0099 (before 0.42 / 0.46) |
| gpc-product | proba | 0% -> 100% | 2.01 -> 0.068 | 0.0089 / 0.0098 (before 0.30 / 0.40) |

Anomalies: none in either run. The Friedman #1 model (fitted: 16.4^2 *
RBF-ARD + 0.0564^2 * ExpSineSquared + White(0.0105)) is high
signal-to-noise; the local RKHS bound that makes such PSD models converge
needs the lemma, so its std ranges are finite now but not converged.

How to run
----------
::

    python benchmarks/bench_non_psd.py             # about 3 min
    python benchmarks/bench_non_psd.py --quick     # 4 rows per case
    PYTHONPATH=/tmp/before python benchmarks/bench_non_psd.py   # an older tree

Single-threaded: BLAS threads are pinned to 1 before numpy is imported.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import make_friedman1, make_moons  # noqa: E402
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ExpSineSquared, WhiteKernel  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C  # noqa: E402

import skgprobust  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _bench import package_state, report_anomalies  # noqa: E402
from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor  # noqa: E402


def box_points(lo, hi, rng, n):
    """Corners of a random sub-box, the centre and uniform points of [lo, hi]."""
    d = len(lo)
    c = 0.5 * (lo + hi)
    corners = np.where(rng.random((min(n // 3, 2**d), d)) < 0.5, lo, hi)
    return np.vstack([c[None], corners, rng.uniform(lo, hi, (n - 1 - len(corners), d))])


def regressors():
    out = {}
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 4, (210, 3))
    y = np.sin(2 * np.pi * X[:, 0] / 1.5) + 0.5 * X[:, 1] + 0.3 * rng.normal(size=210)
    k = C(1.0) * RBF(np.ones(3)) + C(0.3) * ExpSineSquared(1.0, 6.0) + WhiteKernel(0.1)
    reg = RobustGaussianProcessRegressor(k, normalize_y=True, optimizer=None).fit(X[:200], y[:200])
    out["gpr-3d"] = (reg, X[200:], 0.02 * X[:200].std(0), ("mean", "std"))
    X, y = make_friedman1(n_samples=260, n_features=8, noise=0.5, random_state=0)
    k = C(1.0) * RBF(np.ones(8)) + C(0.1) * ExpSineSquared(1.0, 3.0) + WhiteKernel(0.1)
    reg = RobustGaussianProcessRegressor(k, normalize_y=True, random_state=0).fit(X[:250], y[:250])
    out["gpr-friedman1"] = (reg, X[250:], 0.02 * X[:250].std(0), ("std",))
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (22, 2))
    y = np.sin(X[:, 0]) + X[:, 1]
    k = C(1.0, "fixed") * RBF(0.4, "fixed") + WhiteKernel(0.3, "fixed")
    reg = RobustGaussianProcessRegressor(k, alpha=np.full(12, -0.4), optimizer=None).fit(X[:12], y[:12])
    out["gpr-neg-alpha"] = (reg, X[12:], np.full(2, 0.1), ("std",))
    return out


def classifiers():
    X, y = make_moons(n_samples=230, noise=0.25, random_state=0)
    kernels = {
        "gpc-sum": C(10.0) * RBF(0.7) + C(0.3) * ExpSineSquared(0.5, 4.0),
        "gpc-product": C(10.0) * RBF(0.7) * ExpSineSquared(0.5, 2.0),
    }
    return {name: (RobustGaussianProcessClassifier(k, optimizer=None).fit(X[:200], y[:200]), X[200:])
            for name, k in kernels.items()}


def check(values, lo, hi, label, anomalies):
    tol = 1e-9 * max(1.0, float(np.abs(values).max()))
    if values.min() < lo - tol or values.max() > hi + tol:
        anomalies.append(f"{label}: sampled [{values.min()}, {values.max()}] outside the range [{lo}, {hi}]")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 rows per case")
    args = ap.parse_args(argv)
    n_rows = 4 if args.quick else 10
    print(f"# bench_non_psd: {package_state()}")
    rng = np.random.default_rng(1)
    anomalies = []
    print()
    print("| case | statistic | rows | converged | median s/row | max s/row | median gap | max gap |")
    print("|---|---|---|---|---|---|---|---|")

    def row(name, stat, times, gaps, conv):
        print(f"| {name} | {stat} | {len(times)} | {100 * np.mean(conv):.0f}% | {np.median(times):.3f} | "
              f"{np.max(times):.3f} | {np.median(gaps):.3g} | {np.max(gaps):.3g} |", flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (reg, Xte, gamma, stats) in regressors().items():
            print(f"# {name}: {reg.kernel_}")
            for stat in stats:
                times, gaps, conv = [], [], []
                for x in Xte[:n_rows]:
                    x = x[None]
                    sd = GaussianProcessRegressor.predict(reg, x, return_std=True)[1][0]
                    t0 = time.perf_counter()
                    r = reg.prediction_range(x, gamma, statistic=stat, epsilon=0.01 * sd, time_limit=5.0,
                                             random_state=0)
                    times.append(time.perf_counter() - t0)
                    gaps.append(max(r.min_upper[0, 0] - r.min_lower[0, 0], r.max_upper[0, 0] - r.max_lower[0, 0]))
                    conv.append(bool(r.converged[0, 0]))
                    P = box_points(x[0] - gamma, x[0] + gamma, rng, 300)
                    mu, s = GaussianProcessRegressor.predict(reg, P, return_std=True)
                    check(mu if stat == "mean" else s, r.min_lower[0, 0], r.max_upper[0, 0], f"{name} {stat}",
                          anomalies)
                row(name, stat, times, gaps, conv)
        for name, (clf, Xte) in classifiers().items():
            print(f"# {name}: {clf.kernel_}")
            times, gaps, conv = [], [], []
            for x in Xte[:n_rows]:
                x = x[None]
                t0 = time.perf_counter()
                r = clf.prediction_range(x, 0.05, epsilon=0.01, time_limit=2.0, random_state=0)
                times.append(time.perf_counter() - t0)
                gaps.append(float(max(np.max(r.min_upper - r.min_lower), np.max(r.max_upper - r.max_lower))))
                conv.append(bool(np.all(r.converged)))
                P = box_points(x[0] - 0.05, x[0] + 0.05, rng, 300)
                p = GaussianProcessClassifier.predict_proba(clf, P)
                for j in range(p.shape[1]):
                    check(p[:, j], r.min_lower[0, j], r.max_upper[0, j], f"{name} proba[{j}]", anomalies)
            row(name, "proba", times, gaps, conv)
    print()
    return report_anomalies(anomalies)


if __name__ == "__main__":
    sys.exit(main())
