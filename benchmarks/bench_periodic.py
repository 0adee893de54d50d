"""Periodic kernels on a long series: mean ranges of CO2-like GP regressors.

What it measures
----------------
Issue 12, example 2: scikit-learn's Mauna Loa CO2 example rebuilt on a
synthetic monthly series 1958-1998 (480 points, ``t = 1958 + (m + 0.5) / 12``)::

    y = 315 + 1.3 (t - 1958) + 0.012 (t - 1958)^2 + 3 sin(2 pi t)
        + 0.5 sin(4 pi t + 1) + N(0, 0.3^2)       (seed 0)

centred by its mean (as sklearn's example does, ``normalize_y=False``).
Two models, both ``RobustGaussianProcessRegressor(optimizer=None)``:

* ``ex2``: ``17.8**2 * RBF(513) * ExpSineSquared(5.16, 1.0) + WhiteKernel(0.0267)``
  (the kernel of the issue, fixed);
* ``co2``: the full kernel of sklearn's example, long-term trend
  ``50**2 * RBF(50)`` + seasonal ``2**2 * RBF(100) * ExpSineSquared(1, 1)`` +
  irregular ``0.5**2 * RationalQuadratic(1, 1)`` + noise
  ``0.1**2 * RBF(0.1) + WhiteKernel(0.1**2)``, hyperparameters fitted once by
  sklearn's optimizer on the series (seeded), then frozen (``optimizer=None``).

Rows: 10 dates spread over the series (1960.3 ... 1996.3, plus the issue's
1978.4). Call ``prediction_range(row, gamma=0.01, epsilon=0.1,
time_limit=5)`` (a box 7.3 days wide), statistic "mean" (and "std" for the
co2 model, reported, not targeted). Table: model, statistic, % converged,
median / max s per row, median / max final gap (largest of the two gaps).

Second table: the ExpSineSquared models of scikit-learn's GP gallery, fitted
as there, then frozen: ``krr`` (plot_compare_gpr_krr: 40 noisy samples of
sin on [0, 12], ``1.0 * ExpSineSquared(1.0, 5.0) + WhiteKernel(1e-1)``) and
``prior_posterior`` (plot_gpr_prior_posterior: 10 points of
sin((x - 2.5)^2) on [0, 5], ``1.0 * ExpSineSquared(1.0, 3.0)``, alpha 1e-10).
10 rows spread over the plotted range, gamma = 1% of it (0.3 and 0.05),
epsilon 1e-3, time_limit 2.

Sanity checks ("anomalies", exit status 1): sklearn's predict (mean / std) at
400 points of each box lies inside the certified range.

Measured (2-core shared machine, issue 12): before the ExpSineSquared Taylor
model (commit 8943041, interval bounds only) ex2 / co2 mean: 0% converged,
5.0 s per row (the limit), median gaps 3.2 / 0.27; after: 100% converged,
0.03 / 0.04 s per row (max 0.05), median gaps 0.016 / 0.080. co2 std: 100%
converged in both (about 1 s per row). Gallery rows converged before too
(0.03 / 0.15 s median, 0.73 s max) and take 0.01 s now.

To compare with an older commit: ``git worktree add /tmp/before <commit>``
and run this script with ``PYTHONPATH=/tmp/before``.

How to run
----------
::

    python benchmarks/bench_periodic.py            # about 5 min (1 min after issue 12)
    python benchmarks/bench_periodic.py --quick    # 4 rows, mean only

Single-threaded: BLAS threads are pinned to 1 before numpy is imported.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import (  # noqa: E402
    RBF,
    ConstantKernel,
    ExpSineSquared,
    RationalQuadratic,
    WhiteKernel,
)

import skgprobust  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _bench import report_anomalies  # noqa: E402
from skgprobust import RobustGaussianProcessRegressor  # noqa: E402

C = ConstantKernel


def co2_series(n=480, seed=0):
    """Synthetic monthly CO2-like series 1958-1998 (see the module docstring)."""
    rng = np.random.default_rng(seed)
    t = 1958.0 + (np.arange(n) + 0.5) / 12.0
    y = (315 + 1.3 * (t - 1958) + 0.012 * (t - 1958) ** 2 + 3 * np.sin(2 * np.pi * t)
         + 0.5 * np.sin(4 * np.pi * t + 1) + rng.normal(0, 0.3, n))
    return t[:, None], y - y.mean()


def ex2_kernel():
    return 17.8**2 * RBF(513.0) * ExpSineSquared(5.16, 1.0) + WhiteKernel(0.0267)


def co2_kernel():
    long_term = 50.0**2 * RBF(length_scale=50.0)
    seasonal = (2.0**2 * RBF(length_scale=100.0)
                * ExpSineSquared(length_scale=1.0, periodicity=1.0, periodicity_bounds="fixed"))
    irregular = 0.5**2 * RationalQuadratic(length_scale=1.0, alpha=1.0)
    noise = 0.1**2 * RBF(length_scale=0.1) + WhiteKernel(noise_level=0.1**2, noise_level_bounds=(1e-5, 1e5))
    return long_term + seasonal + irregular + noise


def fitted_co2_kernel(X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = GaussianProcessRegressor(kernel=co2_kernel(), normalize_y=False, random_state=0).fit(X, y)
    return gp.kernel_


def gallery_models():
    """The ExpSineSquared regressors of sklearn's GP gallery (fitted there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = np.random.RandomState(0)
        X = np.linspace(0, 30, num=1_000).reshape(-1, 1)
        y = np.sin(X).ravel()
        idx = rng.choice(np.arange(0, 400), size=40, replace=False)
        Xt, yt = X[idx], y[idx] + 0.5 * rng.randn(len(idx))
        k = 1.0 * ExpSineSquared(1.0, 5.0, periodicity_bounds=(1e-2, 1e1)) + WhiteKernel(1e-1)
        k = GaussianProcessRegressor(kernel=k).fit(Xt, yt).kernel_
        krr = RobustGaussianProcessRegressor(kernel=k, optimizer=None).fit(Xt, yt)
        rng = np.random.RandomState(4)
        Xp = rng.uniform(0, 5, 10).reshape(-1, 1)
        yp = np.sin((Xp[:, 0] - 2.5) ** 2)
        k = 1.0 * ExpSineSquared(length_scale=1.0, periodicity=3.0, length_scale_bounds=(0.1, 10.0),
                                 periodicity_bounds=(1.0, 10.0))
        k = GaussianProcessRegressor(kernel=k, random_state=0).fit(Xp, yp).kernel_
        pp = RobustGaussianProcessRegressor(kernel=k, optimizer=None).fit(Xp, yp)
    return {"krr": (krr, np.linspace(0.5, 29.5, 10), 0.3), "prior_posterior": (pp, np.linspace(0.25, 4.75, 10), 0.05)}


ROWS = np.array([1960.3, 1964.3, 1968.3, 1972.3, 1976.3, 1978.4, 1984.3, 1988.3, 1992.3, 1996.3])


def run(reg, rows, statistic, gamma, epsilon, time_limit, anomalies, label, rng):
    times, gaps, conv = [], [], []
    for x in rows:
        X0 = np.array([[x]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            r = reg.prediction_range(X0, gamma, statistic=statistic, epsilon=epsilon,
                                     time_limit=time_limit, random_state=0)
            times.append(time.perf_counter() - t0)
        gap = max(r.min_upper[0, 0] - r.min_lower[0, 0], r.max_upper[0, 0] - r.max_lower[0, 0])
        gaps.append(gap)
        conv.append(bool(r.converged[0, 0]))
        P = np.concatenate([[x - gamma, x, x + gamma], x + rng.uniform(-gamma, gamma, 397)])[:, None]
        mu, sd = GaussianProcessRegressor.predict(reg, P, return_std=True)
        v = mu if statistic == "mean" else sd
        tol = 1e-9 * max(1.0, np.abs(v).max())
        if v.min() < r.min_lower[0, 0] - tol or v.max() > r.max_upper[0, 0] + tol:
            anomalies.append(f"{label} {statistic} row {x}: predict outside the range "
                             f"[{r.min_lower[0, 0]}, {r.max_upper[0, 0]}] vs [{v.min()}, {v.max()}]")
    return times, gaps, conv


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 rows, mean only")
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--gamma", type=float, default=0.01)
    ap.add_argument("--epsilon", type=float, default=0.1)
    args = ap.parse_args(argv)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(skgprobust.__file__)).stdout.strip()
    except OSError:
        commit = "?"
    print(f"# bench_periodic: skgprobust at {os.path.dirname(skgprobust.__file__)} ({commit}), "
          f"load {os.getloadavg()[0]:.2f}, gamma={args.gamma}, epsilon={args.epsilon}, "
          f"time_limit={args.time_limit}")
    X, y = co2_series()
    t0 = time.perf_counter()
    k_co2 = fitted_co2_kernel(X, y)
    print(f"# co2 kernel fitted in {time.perf_counter() - t0:.1f} s: {k_co2}")
    rows = ROWS[[0, 3, 5, 9]] if args.quick else ROWS
    models = {
        "ex2": RobustGaussianProcessRegressor(kernel=ex2_kernel(), optimizer=None).fit(X, y),
        "co2": RobustGaussianProcessRegressor(kernel=k_co2, optimizer=None).fit(X, y),
    }
    for name, reg in models.items():
        print(f"# {name}: sum |alpha_| = {np.abs(reg.alpha_).sum():.4g}")
    cases = [("ex2", "mean"), ("co2", "mean")] + ([] if args.quick else [("co2", "std")])
    anomalies = []
    rng = np.random.default_rng(1)
    print()
    print("| model | statistic | rows | converged | median s/row | max s/row | median gap | max gap |")
    print("|---|---|---|---|---|---|---|---|")
    for name, stat in cases:
        times, gaps, conv = run(models[name], rows, stat, args.gamma, args.epsilon, args.time_limit,
                                anomalies, name, rng)
        print(f"| {name} | {stat} | {len(rows)} | {100 * np.mean(conv):.0f}% | {np.median(times):.2f} | "
              f"{np.max(times):.2f} | {np.median(gaps):.3g} | {np.max(gaps):.3g} |", flush=True)
    print()
    print("| gallery model | gamma | rows | converged | median s/row | max s/row | median gap | max gap |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (reg, grows, gamma) in gallery_models().items():
        print(f"# {name}: {reg.kernel_}, sum |alpha_| = {np.abs(reg.alpha_).sum():.4g}")
        grows = grows[[0, 3, 6, 9]] if args.quick else grows
        times, gaps, conv = run(reg, grows, "mean", gamma, 1e-3, 2.0, anomalies, name, rng)
        print(f"| {name} | {gamma} | {len(grows)} | {100 * np.mean(conv):.0f}% | {np.median(times):.2f} | "
              f"{np.max(times):.2f} | {np.median(gaps):.3g} | {np.max(gaps):.3g} |", flush=True)
    print()
    return report_anomalies(anomalies)


if __name__ == "__main__":
    sys.exit(main())
