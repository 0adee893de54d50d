"""How the cost of ``prediction_range`` on a GP regressor grows with the training size N.

What it measures
----------------
Data: Friedman #1, ``make_friedman1(n_samples=2000 + 20, n_features=5,
noise=1.0, random_state=0)`` (inputs uniform on [0, 1]^5, a smooth target
with Gaussian noise). The first N rows train, for N in {250, 500, 1000,
2000}; the last 20 rows (10 with ``--quick``) are the test points.

Model: ``RobustGaussianProcessRegressor(kernel=ConstantKernel(1.0) *
Matern(length_scale=np.ones(5), nu=2.5) + WhiteKernel(0.01),
normalize_y=True)``. By default (``--kernel fitted``) the hyperparameters are
fitted ONCE, with sklearn's default optimizer, on the first 500 training rows;
that fitted kernel is then frozen (``optimizer=None``) for every N, so only N
changes between the rows of the table. ``--kernel fixed`` uses the kernel above
as written, with ``optimizer=None`` and no fitting at all.

Call: ``reg.prediction_range(X_test, gamma=0.1, epsilon=1e-3, random_state=0)``
with the package's default budget (``max_iter=None, time_limit=None``, i.e.
5000 boxes split per row) unless ``--max-iter`` / ``--time-limit`` say
otherwise. epsilon is absolute, in the units of y (the target's std is about 5).

Table: N, median / max seconds per row (``r.time``), microseconds per box
split (time / n_iter), fraction of (row, target) ranges converged to epsilon,
median / max boxes split, the median final gaps (``min_upper - min_lower`` and
``max_upper - max_lower``), and the growth factor of the median time per row
(and of the time per box) from the previous N.

Sanity checks (printed as "anomalies"): per row, ``min_lower <= min_upper``,
``max_lower <= max_upper``, ``min_lower <= predict(x) <= max_upper`` at the box
centre and at random points of the box, ``min_upper`` / ``max_lower`` equal to
``predict`` at ``argmin`` / ``argmax``, and both points inside the box.

How to run
----------
::

    python benchmarks/bench_range.py              # full run, about 5 min (both kernels)
    python benchmarks/bench_range.py --quick      # 10 test rows
    python benchmarks/bench_range.py --kernel fixed --max-iter 20000

Single-threaded (``n_jobs=None``); compare timings on the same machine only.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # before numpy: one BLAS thread (set them to measure others)

import argparse
import platform
import sys
import time
import warnings

import numpy as np
import sklearn
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

import skgprobust
from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessRegressor
from _bench import package_state, table  # noqa: E402

warnings.filterwarnings("ignore", category=BudgetExhaustedWarning)

SIZES = (250, 500, 1000, 2000)
N_TEST = 20
GAMMA = 0.1
EPSILON = 1e-3
N_FIT_KERNEL = 500
TOL = 1e-9  # absolute slack for the containment checks


def base_kernel():
    return ConstantKernel(1.0) * Matern(length_scale=np.ones(5), nu=2.5) + WhiteKernel(0.01)


def rounding_margin(reg, X):
    """Per row, ``margin_rtol(N, d) * sum_i |w_i k(x, x_i)|`` at the box centre,
    with w = alpha_ * y_std the weights of the predictive mean (public sklearn
    attributes). The floating-point margin bounds.py subtracts from each lower
    bound is margin_rtol times a magnitude that includes at least these terms,
    so a row whose value here exceeds epsilon is not expected to converge."""
    from skgprobust._bounds._mean import margin_rtol

    N, d = reg.X_train_.shape
    w = np.asarray(reg.alpha_, dtype=float).reshape(-1) * float(np.ravel(reg._y_train_std)[0])
    K = reg.kernel_(X, reg.X_train_)
    return margin_rtol(N, d) * np.abs(K * w).sum(axis=1)


def check_range(reg, X, r, rng, n_samples=64):
    """Anomalies of one RangeResult (single target)."""
    problems = []
    lo, hi = X - GAMMA, X + GAMMA
    centre = reg.predict(X)
    # The package evaluates all argmin/argmax points in one batched predict call; do the same
    # (sklearn's predict differs by ~1e-17 * sum|alpha_i k| between batch shapes).
    at_min, at_max = reg.predict(r.argmin[:, 0]), reg.predict(r.argmax[:, 0])
    for i in range(len(X)):
        mnl, mnu, mxl, mxu = r.min_lower[i, 0], r.min_upper[i, 0], r.max_lower[i, 0], r.max_upper[i, 0]
        if not mnl <= mnu + TOL:
            problems.append(f"row {i}: min_lower {mnl!r} > min_upper {mnu!r}")
        if not mxl <= mxu + TOL:
            problems.append(f"row {i}: max_lower {mxl!r} > max_upper {mxu!r}")
        pts = np.vstack([X[i], rng.uniform(lo[i], hi[i], size=(n_samples, X.shape[1])), lo[i], hi[i]])
        vals = reg.predict(pts)
        if vals.min() < mnl - TOL or vals.max() > mxu + TOL:
            k = int(np.argmax(np.maximum(mnl - vals, vals - mxu)))
            problems.append(
                f"row {i}: predict {vals[k]!r} at a point of the box outside [{mnl!r}, {mxu!r}]"
                f"{' (the centre)' if k == 0 else ''}"
            )
        for name, pt, v, pv in (("argmin", r.argmin[i, 0], mnu, at_min[i]), ("argmax", r.argmax[i, 0], mxl, at_max[i])):
            if not (np.all(pt >= lo[i]) and np.all(pt <= hi[i])):
                problems.append(f"row {i}: {name} outside the box")
            if abs(pv - v) > TOL * max(1.0, abs(pv)):
                problems.append(f"row {i}: predict at {name} is {pv!r}, result says {v!r}")
        if not (mnl <= centre[i] + TOL and centre[i] <= mxu + TOL):
            problems.append(f"row {i}: predict at the centre {centre[i]!r} outside [{mnl!r}, {mxu!r}]")
    return problems


def make_kernel(which, X_all, y_all):
    if which == "fitted":
        t0 = time.perf_counter()
        pilot = RobustGaussianProcessRegressor(kernel=base_kernel(), normalize_y=True, random_state=0)
        pilot.fit(X_all[:N_FIT_KERNEL], y_all[:N_FIT_KERNEL])
        how = (
            f"hyperparameters fitted ONCE on the first {N_FIT_KERNEL} rows ({time.perf_counter() - t0:.1f} s), "
            "then frozen (optimizer=None) for every N"
        )
        return pilot.kernel_, how
    return base_kernel(), "the initial kernel as written, optimizer=None (never fitted)"


def run_sizes(kernel, X_all, y_all, X_test, sizes, max_iter, time_limit, rng):
    rows, anomalies, margins = [], [], []
    prev_med = prev_per_box = None
    for N in sizes:
        reg = RobustGaussianProcessRegressor(kernel=kernel, normalize_y=True, optimizer=None)
        t0 = time.perf_counter()
        reg.fit(X_all[:N], y_all[:N])
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = reg.prediction_range(
            X_test, gamma=GAMMA, epsilon=EPSILON, random_state=0, max_iter=max_iter, time_limit=time_limit
        )
        wall = time.perf_counter() - t0
        med = float(np.median(r.time))
        per_box = float(np.median(r.time / np.maximum(r.n_iter, 1)))
        gap_min = r.min_upper[:, 0] - r.min_lower[:, 0]
        gap_max = r.max_upper[:, 0] - r.max_lower[:, 0]
        margin = rounding_margin(reg, X_test)
        margins.append((N, margin))
        margin = float(np.median(margin))
        rows.append(
            [
                N,
                f"{t_fit:.2f}",
                f"{med:.3f}",
                f"{np.max(r.time):.3f}",
                f"{wall:.1f}",
                f"{1e6 * per_box:.0f}",
                f"{100 * np.mean(r.converged):.0f}%",
                f"{int(np.median(r.n_iter))}",
                f"{int(np.max(r.n_iter))}",
                f"{np.median(gap_min):.2g}",
                f"{np.median(gap_max):.2g}",
                f"{margin:.2g}",
                "-" if prev_med is None else f"x{med / prev_med:.2f}",
                "-" if prev_per_box is None else f"x{per_box / prev_per_box:.2f}",
            ]
        )
        prev_med, prev_per_box = med, per_box
        anomalies += [f"N={N}: {a}" for a in check_range(reg, X_test, r, rng)]
    headers = [
        "N",
        "fit s",
        "median s/row",
        "max s/row",
        "total wall s",
        "us/box split",
        "converged",
        "median iters",
        "max iters",
        "median min-gap",
        "median max-gap",
        "fp margin est.",
        "median time growth",
        "us/box growth",
    ]
    notes = [
        f"N={N}: {int(np.sum(m > EPSILON))} of {len(m)} rows have an fp margin estimate > epsilon={EPSILON:g} "
        f"(max {np.max(m):.2g}): not expected to converge at any budget"
        for N, m in margins
        if np.any(m > EPSILON)
    ]
    return table(headers, rows), anomalies, notes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help=f"{N_TEST // 2} test rows instead of {N_TEST}")
    p.add_argument(
        "--kernel",
        choices=("both", "fitted", "fixed"),
        default="both",
        help=f"fitted: hyperparameters fitted once on {N_FIT_KERNEL} rows, then frozen; "
        "fixed: the initial kernel, optimizer=None; both (default): one table each",
    )
    p.add_argument("--max-iter", type=int, default=None, help="boxes split per row (default: package default, 5000)")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per row (default: none)")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="training sizes N")
    args = p.parse_args(argv)

    n_test = N_TEST // 2 if args.quick else N_TEST
    # Same data whatever --sizes says (as long as N <= 2000): the test rows are the last N_TEST.
    n_total = max(max(SIZES), *args.sizes) + N_TEST
    X_all, y_all = make_friedman1(n_samples=n_total, n_features=5, noise=1.0, random_state=0)
    X_test = X_all[-N_TEST:][:n_test]
    rng = np.random.default_rng(0)

    budget = (
        "default budget (max_iter=None, time_limit=None: 5000 boxes split per row)"
        if args.max_iter is None and args.time_limit is None
        else f"max_iter={args.max_iter}, time_limit={args.time_limit}"
    )
    print(f"# bench_range{' (--quick)' if args.quick else ''}")
    print(
        f"skgprobust {skgprobust.__version__}, sklearn {sklearn.__version__}, numpy {np.__version__}, "
        f"python {platform.python_version()}"
    )
    print(
        f"GPR on Friedman #1 (5 features, noise=1.0, y std {np.std(y_all):.2f}), normalize_y=True; "
        f"prediction_range on {n_test} test rows, gamma={GAMMA:g}, epsilon={EPSILON:g}, {budget}, "
        "n_jobs=None, random_state=0"
    )
    print(package_state())
    print(
        "fp margin est. = median over rows of margin_rtol(N, d) * sum_i |w_i k(x, x_i)| at the box centre: about the "
        "smallest gap the package's floating-point margin allows."
    )

    anomalies, notes = [], []
    for which in ("fitted", "fixed") if args.kernel == "both" else (args.kernel,):
        kernel, how = make_kernel(which, X_all, y_all)
        print()
        print(f"## kernel '{which}': {how}")
        print(f"   {kernel}")
        print()
        t, a, n = run_sizes(kernel, X_all, y_all, X_test, args.sizes, args.max_iter, args.time_limit, rng)
        print(t)
        anomalies += [f"[{which}] {x}" for x in a]
        notes += [f"[{which}] {x}" for x in n]

    print()
    print(f"## notes: {len(notes) or 'none'}")
    for x in notes:
        print(f"- {x}")
    print()
    print(f"## anomalies: {len(anomalies) or 'none'}")
    for x in anomalies:
        print(f"- {x}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
