"""Sparse GP regression at scale: fit, predict and certification cost vs N and M.

What it measures
----------------
Data: Friedman #1, ``make_friedman1(n_samples=100_000 + 1000, n_features=5,
noise=1.0, random_state=0)`` (inputs uniform on [0, 1]^5, target std about
5). The first N rows train; the last 1000 rows are the test points (all
1000 for predict, the first 20 for the per-row bounds; ``--quick``: N =
20,000 and 6 rows).

Kernel: ``ConstantKernel(1.0) * Matern(length_scale=np.ones(5), nu=2.5) +
WhiteKernel(0.1)``, normalize_y=True. Its hyperparameters are fitted ONCE by
:class:`SparseGaussianProcessRegressor` (VFE, M = 100, L-BFGS-B, all N rows;
the "fit (optimised)" row) and then frozen (``optimizer=None``) for every
other model, so that only N and M change between rows:

* sparse VFE with M in {100, 300, 500} on all N rows, and M = 300 on
  N / 10 rows (same M, ten times fewer points: per-row bound times should
  not change);
* the exact :class:`RobustGaussianProcessRegressor` with N = M (its first
  M rows) and N = 2000 (the largest it fits here in a few seconds; 1000
  with --quick).

Columns: fit time (optimizer=None for the frozen rows: inducing inputs by
k-means++ plus one pass; the cost of one objective + gradient evaluation,
which the optimiser repeats, is the "f+g" column), predict time of 1000
points (mean and std), the RMSE against the noise-free Friedman function,
and per row, median seconds of

* ``prediction_range(x, gamma=0.05, epsilon=0.05)`` (mean),
* ``prediction_range(..., statistic="std", epsilon=0.01)``,
* ``certify(x, gamma=0.05, delta=2.5)`` (the worst change of the mean over these boxes is 1-4),

each with ``time_limit=2`` s per row, plus the fraction of ranges converged
and of rows certified robust, and the median microseconds per box split
(time / n_iter over the rows that split any; includes the local search).
Target (issue 13): per-row times independent of N, within 2x of the exact
model with N = M. The rows above compare DIFFERENT functions (a sparse model
fitted on N >> M points is sharper than an exact GP on M points: larger
sum |beta|, more box splits); ``like_for_like`` (``--like-for-like-only``)
compares the same function: inducing inputs = training inputs, N = M.
Measured (``--like-for-like-only``, 20 rows, 2 cores at load average 9-11,
sparse / exact per-row medians):

=====================  =====  ==============  =============  ===========
model                  N = M  max |diff|      certify ratio  range ratio
=====================  =====  ==============  =============  ===========
regression (VFE)       100    1.0e-06         0.76           1.13
classification (EP)    100    2.2e-08         0.62           0.81
regression (VFE)       300    3.8e-07         0.72           0.89
classification (EP)    300    5.7e-08         0.89           0.82
regression (VFE)       500    5.1e-07         1.08           0.88
classification (EP)    500    5.4e-08         0.97           0.96
=====================  =====  ==============  =============  ===========

(exact certify 64 / 195 / 171 ms per row for regression, 0.8 / 0.9 / 41 ms
for classification at gamma 0.3; ranges 129-283 ms and 649-701 ms.) The
sparse code costs what the exact code costs on the same function.

Binary part (``classification``): Friedman #1 inputs labelled by the target
above its median, N = 20,000 (5,000 with --quick);
:class:`SparseGaussianProcessClassifier` (probit, FITC; EP and Laplace) with
an ARD RBF fitted once (Laplace, M = 100) and frozen, M in {100, 300, 500} and M = 300 on
N / 10 rows, vs the exact :class:`RobustGaussianProcessClassifier` (sklearn's
Laplace GPC: logistic, a different likelihood) with the same kernel at N = M
and N = 2000: fit, predict_proba of 1000 points, accuracy, probability
ranges (epsilon = 0.01) and certify per row.

Std ranges at high signal-to-noise (``--std``): Friedman #1 (noise 0.3), N =
2500, M = 200, C * RBF(ARD) + White fitted (noise ~0.004 of var(y)), std
ranges gamma 0.02, epsilon 0.01, 5 rows (see :func:`std_ranges`). Measured
(load 9.4 on 2 cores; ``--reference`` = the code path that assumed the
lemma for the QR-built factor, a timing reference only):

==========================  ======  =========  ============
model                       rho     converged  median s/row
==========================  ======  =========  ============
FITC, shift at 0 (before)   2.4e-3  80%        3.62
FITC, jitter certified      0       100%       0.05
FITC reference              --      100%       0.06
VFE, shift at 0 (before)    2.8e-4  100%       0.52
VFE, jitter certified       0       100%       0.05
VFE reference               --      100%       0.05
==========================  ======  =========  ============

(before = the certificate with its shift at 0, load 4.0; the widths of the
certified ranges equal the reference's.) Sparse classifier (moons, M = 100,
FITC): rho 7.7e-7 -> 0, certify 40 rows 0.07 -> 0.05 s, ranges 100%.

How to run
----------
::

    python benchmarks/bench_sparse.py            # about 10-15 min on 2 loaded cores
    python benchmarks/bench_sparse.py --quick    # about 2 min
    python benchmarks/bench_sparse.py --std --reference   # about 1 min

BLAS is pinned to one thread (set before numpy is imported); rows run
serially.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel  # noqa: E402

from _bench import package_state, table  # noqa: E402
from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessRegressor  # noqa: E402
from skgprobust import SparseGaussianProcessRegressor  # noqa: E402

warnings.filterwarnings("ignore", category=BudgetExhaustedWarning)

GAMMA = 0.05
EPS_MEAN = 0.05
EPS_STD = 0.01
DELTA = 2.5
TIME_LIMIT = 2.0


def friedman(X):
    return 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]


def base_kernel():
    return ConstantKernel(1.0) * Matern(length_scale=np.ones(5), nu=2.5) + WhiteKernel(0.1)


def _per_split(r):
    """Median microseconds per box split over the rows that split any."""
    it = np.asarray(r.n_iter, dtype=float)
    ok = it > 0
    return f"{np.median(r.time[ok] / it[ok]) * 1e6:.0f}" if ok.any() else "-"


def measure(name, reg, X, y, X_pred, X_rows, fit_note=""):
    t0 = time.perf_counter()
    reg.fit(X, y)
    t_fit = time.perf_counter() - t0
    fg = ""
    if isinstance(reg, SparseGaussianProcessRegressor):
        t0 = time.perf_counter()
        reg.log_marginal_likelihood(reg.kernel_.theta, eval_gradient=True)
        fg = f"{time.perf_counter() - t0:.2f}"
    t0 = time.perf_counter()
    mean, _ = reg.predict(X_pred, return_std=True)
    t_pred = time.perf_counter() - t0
    rmse = float(np.sqrt(np.mean((mean - friedman(X_pred)) ** 2)))
    kw = dict(time_limit=TIME_LIMIT, random_state=0)
    rm = reg.prediction_range(X_rows, GAMMA, epsilon=EPS_MEAN, **kw)
    rs = reg.prediction_range(X_rows, GAMMA, epsilon=EPS_STD, statistic="std", **kw)
    c = reg.certify(X_rows, GAMMA, delta=DELTA, **kw)
    return [
        name,
        len(X),
        f"{t_fit:.2f}{fit_note}",
        fg,
        f"{t_pred:.3f}",
        f"{rmse:.3f}",
        f"{np.median(rm.time) * 1e3:.1f}",
        _per_split(rm),
        f"{rm.converged.mean():.0%}",
        f"{np.median(rs.time) * 1e3:.1f}",
        f"{rs.converged.mean():.0%}",
        f"{np.median(c.time) * 1e3:.1f}",
        f"{np.mean(c.status == 'robust'):.0%} / {np.mean(c.status == 'unknown'):.0%}",
    ]


def measure_clf(name, clf, X, y, X_pred, y_pred, X_rows):
    t0 = time.perf_counter()
    clf.fit(X, y)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    proba = clf.predict_proba(X_pred)
    t_pred = time.perf_counter() - t0
    acc = float(np.mean(clf.classes_[np.argmax(proba, 1)] == y_pred))
    kw = dict(time_limit=TIME_LIMIT, random_state=0)
    rp = clf.prediction_range(X_rows, GAMMA, epsilon=EPS_STD, **kw)
    c = clf.certify(X_rows, GAMMA, **kw)
    return [
        name, len(X), f"{t_fit:.2f}", f"{t_pred:.3f}", f"{acc:.3f}",
        f"{np.median(rp.time) * 1e3:.1f}", _per_split(rp), f"{rp.converged.mean():.0%}",
        f"{np.median(c.time) * 1e3:.1f}", _per_split(c),
        f"{np.mean(c.status == 'robust'):.0%} / {np.mean(c.status == 'unknown'):.0%}",
    ]


def classification(quick):
    """Binary: Friedman #1 inputs, label = target above its median, N =
    20,000 (5,000 with --quick). SparseGaussianProcessClassifier (probit,
    FITC, EP and Laplace), hyperparameters fitted once (Laplace, M = 100)
    and frozen, vs
    the exact (Laplace, logistic: sklearn's model) RobustGaussianProcessClassifier
    at N = M and N = 2000 with the same kernel. Per row: probability ranges
    (epsilon = 0.01) and certify, gamma = 0.05, 2 s per row."""
    from sklearn.gaussian_process.kernels import RBF

    from skgprobust import RobustGaussianProcessClassifier
    from skgprobust import SparseGaussianProcessClassifier

    N = 5_000 if quick else 20_000
    n_rows = 6 if quick else 20
    Ms = (100, 300) if quick else (100, 300, 500)
    X_all, t_all = make_friedman1(n_samples=N + 1000, n_features=5, noise=1.0, random_state=1)
    y_all = (t_all > np.median(t_all)).astype(int)
    X, y, X_pred, y_pred = X_all[:N], y_all[:N], X_all[N:], y_all[N:]
    X_rows = X_pred[:n_rows]
    print(f"\n# binary: Friedman #1 > median, N = {N:,}, {n_rows} rows, gamma = {GAMMA}")
    pilot = SparseGaussianProcessClassifier(
        ConstantKernel(1.0) * RBF(np.ones(5)), inducing_points=100, inference="laplace", random_state=0
    )
    t0 = time.perf_counter()
    pilot.fit(X, y)
    print(f"# fitted kernel (FITC, Laplace, M = 100, {time.perf_counter() - t0:.1f} s): {pilot.kernel_}")
    kernel = pilot.kernel_
    rows = []
    for inference in ("ep", "laplace"):
        for M in Ms:
            clf = SparseGaussianProcessClassifier(
                kernel, inducing_points=M, inference=inference, optimizer=None, random_state=0
            )
            rows.append(measure_clf(f"sparse FITC {inference} M={M}", clf, X, y, X_pred, y_pred, X_rows))
        clf = SparseGaussianProcessClassifier(
            kernel, inducing_points=Ms[1], inference=inference, optimizer=None, random_state=0
        )
        rows.append(
            measure_clf(f"sparse FITC {inference} M={Ms[1]}", clf, X[: N // 10], y[: N // 10], X_pred, y_pred, X_rows)
        )
    for n in list(Ms) + [2000]:
        exact = RobustGaussianProcessClassifier(kernel, optimizer=None)
        rows.append(measure_clf("exact (Laplace, logistic)", exact, X[:n], y[:n], X_pred, y_pred, X_rows))
    print(
        table(
            [
                "model", "N", "fit s", "predict 1000 s", "accuracy", "proba range ms/row", "us/split", "conv",
                "certify ms/row", "us/split", "robust / unknown",
            ],
            rows,
        )
    )


def _row_ms(r):
    return np.median(r.time) * 1e3


def like_for_like(quick):
    """Sparse vs exact on the SAME model: inducing inputs = training inputs
    (N = M), same frozen kernel, so the sparse predictive equals the exact
    one (to the 1e-8 relative jitter). Regression: Friedman #1,
    RobustGaussianProcessRegressor vs SparseGaussianProcessRegressor (VFE);
    classification: Friedman #1 > median, EPGaussianProcessClassifier vs
    SparseGaussianProcessClassifier (EP; both the probit EP model). Per-row
    median ms of certify (regression: delta = 2.5, gamma = 0.05;
    classification: gamma = 0.3), mean range (epsilon = 0.05) and
    probability range (epsilon = 0.01), 2 s per row, and sparse / exact."""
    from sklearn.gaussian_process.kernels import RBF

    from skgprobust import EPGaussianProcessClassifier, SparseGaussianProcessClassifier

    n_rows = 6 if quick else 20
    Ms = (100, 300) if quick else (100, 300, 500)
    X_all, y_all = make_friedman1(n_samples=max(Ms) + n_rows, n_features=5, noise=1.0, random_state=0)
    rows_X = X_all[max(Ms):]
    kernel = ConstantKernel(1.3) * Matern(length_scale=[0.9, 0.9, 1.5, 2.0, 2.5], nu=2.5) + WhiteKernel(0.05)
    kc = ConstantKernel(4.0) * RBF([0.5, 0.5, 1.0, 1.0, 1.0])
    kw = dict(time_limit=TIME_LIMIT, random_state=0)
    print(f"\n# like-for-like: inducing inputs = training inputs (N = M), same kernel; {n_rows} rows")
    out = []
    for M in Ms:
        X, y = X_all[:M], y_all[:M]
        ex = RobustGaussianProcessRegressor(kernel, normalize_y=True, optimizer=None).fit(X, y)
        sp = SparseGaussianProcessRegressor(kernel, inducing_points=X, normalize_y=True, optimizer=None).fit(X, y)
        diff = np.abs(ex.predict(rows_X) - sp.predict(rows_X)).max()
        t = [_row_ms(m.certify(rows_X, GAMMA, delta=DELTA, **kw)) for m in (ex, sp)]
        r = [_row_ms(m.prediction_range(rows_X, GAMMA, epsilon=EPS_MEAN, **kw)) for m in (ex, sp)]
        out.append(["regression", M, f"{diff:.1e}", f"{t[0]:.1f}", f"{t[1]:.1f}", f"{t[1] / t[0]:.2f}",
                    f"{r[0]:.1f}", f"{r[1]:.1f}", f"{r[1] / r[0]:.2f}"])
        yc = (y > np.median(y_all)).astype(int)
        ec = EPGaussianProcessClassifier(kc, optimizer=None, ep_updates="parallel", tol=1e-10,
                                         max_iter_predict=1000).fit(X, yc)
        sc = SparseGaussianProcessClassifier(kc, inducing_points=X, optimizer=None, max_iter_predict=1000).fit(X, yc)
        diff = np.abs(ec.predict_proba(rows_X) - sc.predict_proba(rows_X)).max()
        t = [_row_ms(m.certify(rows_X, 0.3, **kw)) for m in (ec, sc)]
        r = [_row_ms(m.prediction_range(rows_X, GAMMA, epsilon=EPS_STD, **kw)) for m in (ec, sc)]
        out.append(["classification (EP)", M, f"{diff:.1e}", f"{t[0]:.1f}", f"{t[1]:.1f}", f"{t[1] / t[0]:.2f}",
                    f"{r[0]:.1f}", f"{r[1]:.1f}", f"{r[1] / r[0]:.2f}"])
    print(table(["model", "N = M", "max |diff| predict", "certify ms exact", "sparse", "ratio",
                 "range ms exact", "sparse", "ratio"], out))


def std_ranges(reference=False, rows=5, time_limit=5.0):
    """``--std``: std ranges of sparse FITC / VFE models at high signal-to-noise.

    Friedman #1 (``make_friedman1(3000, n_features=5, noise=0.3,
    random_state=0)``), N = 2500 training rows, M = 200 inducing inputs,
    ``ConstantKernel * RBF(ARD) + WhiteKernel`` fitted (normalize_y; the
    fitted noise is ~0.004 of var(y), so the latent variance is a small
    difference of large terms), ``prediction_range(statistic="std",
    gamma=0.02, epsilon=0.01)`` on the first ``rows`` of the last 500
    points, ``time_limit`` s per row. Reports the variance factor's lemma
    constants (rho, and e of L L^T >= Kc - e I), the set-up time, the
    fraction converged and seconds per row. ``--reference`` also runs the
    models with ``cholesky_factor=True`` (the pre-certificate code path,
    which assumed the lemma without proof for the QR-built factor: a speed
    reference only, not a sound configuration). Then the sparse classifier
    (moons, 2500 points, M = 100, FITC): certify 40 rows and probability
    ranges of 10 rows (gamma 0.05, epsilon 0.01).
    """
    from sklearn.datasets import make_moons
    from sklearn.gaussian_process.kernels import RBF

    from skgprobust import SparseGaussianProcessClassifier

    X, y = make_friedman1(n_samples=3000, n_features=5, noise=0.3, random_state=0)
    out = []
    for approx in ("fitc", "vfe"):
        sp = SparseGaussianProcessRegressor(
            ConstantKernel(1.0) * RBF(np.ones(5)) + WhiteKernel(0.1),
            inducing_points=200, approximation=approx, random_state=0, normalize_y=True,
        ).fit(X[:2500], y[:2500])
        for flag in ((False, True) if reference else (False,)):
            sp.__dict__.pop("_skgp_bound_model", None)
            lat = sp._bound_model().latents[0]
            lat.cholesky_factor = flag
            lat._variances.clear()
            t0 = time.perf_counter()
            v = lat.variance()
            t_set = time.perf_counter() - t0
            r = sp.prediction_range(X[2500:2500 + rows], 0.02, statistic="std", epsilon=0.01,
                                    time_limit=time_limit, random_state=0)
            name = f"{approx}" + (" (reference: lemma assumed)" if flag else "")
            out.append([name, f"{v.rho:.2g}", f"{getattr(v, 'lemma_e', float('nan')):.2g}", f"{t_set:.2f}",
                        f"{np.mean(r.converged):.0%}", f"{np.median(r.time):.2f}", f"{np.max(r.time):.2f}",
                        f"{np.max(r.max_upper[:, 0] - r.min_lower[:, 0]):.4f}"])
        sp.__dict__.pop("_skgp_bound_model", None)
    print(table(["model", "rho", "e", "set-up s", "converged", "median s/row", "max s/row", "max width"], out))
    Xc, yc = make_moons(3000, noise=0.2, random_state=0)
    sc = SparseGaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), inducing_points=100, approximation="fitc",
                                         random_state=0).fit(Xc[:2500], yc[:2500])
    v = sc._bound_model().latents[0].variance()
    t0 = time.perf_counter()
    c = sc.certify(Xc[2500:2540], 0.05, time_limit=2, random_state=0)
    t_c = time.perf_counter() - t0
    t0 = time.perf_counter()
    pr = sc.prediction_range(Xc[2500:2510], 0.05, epsilon=0.01, time_limit=2, random_state=0)
    t_r = time.perf_counter() - t0
    print(table(["classifier", "rho", "certify unknown", "certify s", "ranges converged", "ranges s"],
                [["moons FITC M=100", f"{v.rho:.2g}", f"{np.mean(c.status == 'unknown'):.0%}", f"{t_c:.2f}",
                  f"{np.mean(pr.converged):.0%}", f"{t_r:.2f}"]]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 20,000, 6 rows, M in {100, 300}")
    ap.add_argument("--classification-only", action="store_true", help="only the binary part")
    ap.add_argument("--like-for-like-only", action="store_true", help="only sparse vs exact at Z = X")
    ap.add_argument("--std", action="store_true", help="only the std ranges of FITC / VFE (and the sparse classifier)")
    ap.add_argument("--reference", action="store_true",
                    help="with --std: also the pre-certificate code path (timing only)")
    ap.add_argument("--rows", type=int, default=5, help="with --std: rows per model")
    args = ap.parse_args()
    if args.std:
        print(f"# {package_state()}")
        std_ranges(args.reference, args.rows)
        print(f"# done; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    if args.like_for_like_only:
        print(f"# {package_state()}")
        like_for_like(args.quick)
        print(f"# done; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    if args.classification_only:
        print(f"# {package_state()}")
        classification(args.quick)
        return
    N = 20_000 if args.quick else 100_000
    n_rows = 6 if args.quick else 20
    Ms = (100, 300) if args.quick else (100, 300, 500)
    n_exact = 1000 if args.quick else 2000

    X_all, y_all = make_friedman1(n_samples=N + 1000, n_features=5, noise=1.0, random_state=0)
    X, y = X_all[:N], y_all[:N]
    X_pred = X_all[N:]
    X_rows = X_pred[:n_rows]

    print(f"# bench_sparse: Friedman #1, N = {N:,}, d = 5, {n_rows} rows, gamma = {GAMMA}")
    print(f"# {package_state()}")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, sklearn {sklearn.__version__}")

    rows = []
    # Hyperparameters: fitted once (sparse VFE, M = 100, all N rows).
    pilot = SparseGaussianProcessRegressor(base_kernel(), inducing_points=100, normalize_y=True, random_state=0)
    t0 = time.perf_counter()
    pilot.fit(X, y)
    t_opt = time.perf_counter() - t0
    kernel = pilot.kernel_
    print(f"# fitted kernel (VFE, M = 100, {t_opt:.1f} s with L-BFGS-B): {kernel}")

    def sparse(M):
        return SparseGaussianProcessRegressor(
            kernel, inducing_points=M, normalize_y=True, optimizer=None, random_state=0
        )

    for M in Ms:
        rows.append(measure(f"sparse VFE M={M}", sparse(M), X, y, X_pred, X_rows))
    rows.append(measure(f"sparse VFE M={Ms[1]}", sparse(Ms[1]), X[: N // 10], y[: N // 10], X_pred, X_rows))
    for n in list(Ms) + [n_exact]:
        exact = RobustGaussianProcessRegressor(kernel, normalize_y=True, optimizer=None)
        rows.append(measure("exact", exact, X[:n], y[:n], X_pred, X_rows))
    rows.append(
        ["(pilot) sparse VFE M=100", N, f"{t_opt:.1f} (optimised)", "", "", "", "", "", "", "", "", "", ""]
    )
    print(
        table(
            [
                "model", "N", "fit s", "f+g s", "predict 1000 s", "RMSE", "mean range ms/row", "us/split", "conv",
                "std range ms/row", "conv", "certify ms/row", "robust / unknown",
            ],
            rows,
        )
    )
    classification(args.quick)
    like_for_like(args.quick)
    print(f"# done; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
