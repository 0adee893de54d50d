"""Posterior-variance bounds over boxes: the default method against the paper's.

What it measures
----------------
Two models per training size N in {100, 250, 500} on a 2-D two-Gaussian
problem (N/2 points from N((-1, -1), I) labelled 0 and N/2 from N((1, 1), I)
labelled 1, seed fixed):

* ``gpc``: a binary ``GaussianProcessClassifier`` (Laplace),
  ``ConstantKernel(4.0) * RBF(1.0)``, ``optimizer=None``;
* ``gpr``: a ``GaussianProcessRegressor`` on the labels as +-1,
  ``ConstantKernel(1.0) * RBF(1.0)``, ``alpha=1e-2``, ``optimizer=None``.

20 boxes (``--boxes``) centred at fresh points of the same distribution, of
half-width 0.05 and 0.2 in every coordinate. For each model and width:

* ``LatentVariance.bounds`` (the default: closed form, one batched call for
  all boxes): seconds per box (best of 5 calls, divided by the box count);
* ``PaperLatentVariance.bounds`` (``variance_bound="paper"``: Prop. 5 QP,
  Prop. 6 range LPs + LP (20), cvxpy + ECOS, one box at a time): seconds per
  box over the first ``--paper-boxes`` boxes (default: all), after the
  one-time set-up (eigen-residual, cvxpy DPP compilation; timed apart, with
  the first box, in the ``setup s`` column). ``--range-lps K`` solves the
  range LPs for the K directions of largest ``lam_i w_i^2`` only (default:
  all N, i.e. 2N LPs per box as in the paper);
* mean bound width (upper - lower) of each method over the same boxes, the
  mean sampled range (max - min of sklearn's variance at 2000 uniform points
  per box: a lower estimate of the true range), and per box how often the
  paper's lower bound is higher / upper bound lower / width smaller than the
  default's.

Sanity checks ("anomalies", exit status 1): both methods' bounds must
contain sklearn's own variance at the sampled points (absolute slack 1e-9):
``kernel_.diag(P) - ||solve_triangular(L_, kernel_(P, X_train_).T)||^2`` for
the regressor, ``base_estimator_.latent_mean_and_variance(P)[1]`` for the
classifier; every bound finite. Fallbacks of the paper method (solver
failures, RuntimeWarning) are counted in the ``fallbacks`` column and
listed under the table.

How to run
----------
::

    python benchmarks/bench_variance.py                 # N = 100, 250, 500 (long: the paper method)
    python benchmarks/bench_variance.py --quick         # N = 100 only, 5 boxes
    python benchmarks/bench_variance.py --sizes 100 250 --paper-boxes 5 --range-lps 20

BLAS and OpenMP threads are set to 1 unless the environment says otherwise
(ECOS is single-threaded anyway); timings depend on the machine and its load,
recorded in the header line.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from scipy.linalg import solve_triangular  # noqa: E402
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

import skgprobust  # noqa: E402
from skgprobust.kernels import make_adapter  # noqa: E402
from skgprobust._bounds._variance import LatentVariance  # noqa: E402
from skgprobust._bounds._variance_paper import PaperLatentVariance  # noqa: E402
from _bench import package_state, report_anomalies, table  # noqa: E402

WIDTHS = (0.05, 0.2)
TOL = 1e-9
N_SAMPLES = 2000


def two_gaussians(n, rng):
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 2)) + np.where(y[:, None] == 1, 1.0, -1.0)
    return X, y


def make_models(N, seed):
    rng = np.random.default_rng(seed)
    X, y = two_gaussians(N, rng)
    gpc = GaussianProcessClassifier(ConstantKernel(4.0) * RBF(1.0), optimizer=None).fit(X, y)
    base = gpc.base_estimator_
    gpr = GaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0), alpha=1e-2, optimizer=None).fit(X, 2.0 * y - 1.0)

    def var_gpr(P):
        v = solve_triangular(gpr.L_, gpr.kernel_(P, gpr.X_train_).T, lower=True)
        return gpr.kernel_.diag(P) - np.einsum("ij,ij->j", v, v)

    return {
        "gpc": ((make_adapter(base.kernel_, base.X_train_), base.L_, base.W_sr_), lambda P: base.latent_mean_and_variance(P)[1]),
        "gpr": ((make_adapter(gpr.kernel_, gpr.X_train_), gpr.L_, None), var_gpr),
    }


def check(name, vb, var, lo, hi, rng, anomalies, sampled):
    for b in range(len(lo)):
        if not (np.isfinite(vb.lower[b]) and np.isfinite(vb.upper[b])):
            anomalies.append(f"{name} box {b}: non-finite bound ({vb.lower[b]}, {vb.upper[b]})")
            continue
        if b not in sampled:
            P = lo[b] + (hi[b] - lo[b]) * rng.random((N_SAMPLES, lo.shape[1]))
            sampled[b] = var(np.vstack([P, lo[b], hi[b]]))
        v = sampled[b]
        if v.min() < vb.lower[b] - TOL or v.max() > vb.upper[b] + TOL:
            anomalies.append(
                f"{name} box {b}: sampled variance [{v.min():.6g}, {v.max():.6g}] "
                f"outside [{vb.lower[b]:.6g}, {vb.upper[b]:.6g}]"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 100 only, 5 boxes")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500])
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--paper-boxes", type=int, default=None, help="boxes the paper method runs on (default: all)")
    ap.add_argument("--range-lps", default="all", help="range LPs per box: 'all' (paper) or a number of directions")
    ap.add_argument("--models", nargs="+", default=["gpc", "gpr"], choices=["gpc", "gpr"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.boxes = [100], 5
    range_lps = None if args.range_lps == "all" else int(args.range_lps)
    n_paper = args.boxes if args.paper_boxes is None else min(args.boxes, args.paper_boxes)

    print(
        f"# bench_variance  skgprobust {skgprobust.__version__} ({package_state()}), sklearn {sklearn.__version__}, "
        f"numpy {np.__version__}, python {platform.python_version()}"
    )
    print(
        f"# boxes per width: {args.boxes} (paper method on the first {n_paper}); range LPs: "
        f"{'all N directions (2N LPs per box)' if range_lps is None else f'{range_lps} directions'}; "
        f"threads OMP={os.environ.get('OMP_NUM_THREADS')}"
    )
    anomalies = []
    notes = []
    rows = []
    for N in args.sizes:
        models = make_models(N, args.seed)
        rng = np.random.default_rng(1000 + N)
        centres, _ = two_gaussians(args.boxes, rng)
        for name in args.models:
            (adapter, L, col), var = models[name]
            t0 = time.perf_counter()
            default = LatentVariance(adapter, L, col)
            t_default_setup = time.perf_counter() - t0
            t0 = time.perf_counter()
            paper = PaperLatentVariance(adapter, L, col, range_lps=range_lps)
            t_setup = time.perf_counter() - t0
            for w in WIDTHS:
                lo, hi = centres - w, centres + w
                best = np.inf
                for _ in range(5):
                    t0 = time.perf_counter()
                    vd = default.bounds(lo, hi)
                    best = min(best, time.perf_counter() - t0)
                t_def = best / args.boxes
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", RuntimeWarning)
                    if paper._problems is None:  # one-time DPP compilation + first box
                        t0 = time.perf_counter()
                        paper.bounds(lo[:1], hi[:1])
                        t_setup += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    vp = paper.bounds(lo[:n_paper], hi[:n_paper])
                    t_pap = (time.perf_counter() - t0) / n_paper
                msgs = [str(c.message) for c in caught if issubclass(c.category, RuntimeWarning)]
                fallbacks = len(msgs)
                notes.extend(f"N={N} {name} w={w}: {m}" for m in msgs)
                sampled = {}
                check(f"N={N} {name} w={w} default", vd, var, lo, hi, rng, anomalies, sampled)
                check(f"N={N} {name} w={w} paper", vp, var, lo[:n_paper], hi[:n_paper], rng, anomalies, sampled)
                k = n_paper
                wd, wp = vd.upper[:k] - vd.lower[:k], vp.upper - vp.lower
                true = np.array([sampled[b].max() - sampled[b].min() for b in range(k)])
                rows.append([
                    N, name, w, f"{1e3 * t_def:.3f}", f"{1e3 * t_pap:.0f}", f"{t_pap / t_def:.0f}x",
                    f"{t_default_setup:.2f} / {t_setup:.1f}",
                    f"{true.mean():.4g}", f"{wd.mean():.4g}", f"{wp.mean():.4g}",
                    f"{(vp.lower > vd.lower[:k]).sum()}/{k}", f"{(vp.upper < vd.upper[:k]).sum()}/{k}",
                    f"{(wp < wd).sum()}/{k}", fallbacks,
                ])
                print(f"  done N={N} {name} w={w}: default {1e3 * t_def:.3f} ms/box, paper {t_pap:.2f} s/box",
                      file=sys.stderr, flush=True)
    print()
    print(table(
        ["N", "model", "half-width", "default ms/box", "paper ms/box", "paper/default", "setup s (def / paper)",
         "sampled range", "default width", "paper width", "paper lower higher", "paper upper lower",
         "paper narrower", "fallbacks"],
        rows,
    ))
    print()
    if notes:
        print("fallbacks (RuntimeWarning of the paper method; the bound stays valid):")
        for m in notes:
            print("  -", m)
        print()
    if report_anomalies(anomalies):
        sys.exit(1)


if __name__ == "__main__":
    main()
