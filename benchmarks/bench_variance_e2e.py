"""End to end: ``prediction_range`` with ``variance_bound="default"`` vs ``"paper"``.

What it measures
----------------
The models of ``bench_variance.py`` (2-D two-Gaussian problem, N training
points, seed fixed): a binary ``RobustGaussianProcessClassifier``
(``ConstantKernel(4.0) * RBF(1.0)``, ``optimizer=None``; statistic
``"proba"``) and a ``RobustGaussianProcessRegressor`` (``ConstantKernel(1.0) *
RBF(1.0)``, ``alpha=1e-2``, ``optimizer=None``; statistic ``"std"``).

For each N and model, ``--rows`` test points of the same distribution,
``prediction_range(X, gamma, epsilon=...)`` with both variance bounds, same
``random_state``, one row at a time; the paper's method gets a
``--paper-time-limit`` per row. Reported per model: seconds per row (median
over rows) of each method, their ratio, the fraction of (row, column)
ranges converged, and the final ranges compared: the largest difference of
the certified outer bounds (paper minus default: ``min_lower`` and
``max_upper``; positive means the paper's range is tighter on that side) and
the mean final gap (``min_upper - min_lower`` plus ``max_upper -
max_lower``) of each method. The default method is also run to epsilon / 4
(last three columns): the time it needs for final ranges at least as tight
as the paper's at epsilon.

The variance bound only matters where the variance is bounded: the
classifier's probability (latent mean and variance through the link) and
the regressor's std. Both methods are sound, so at convergence both
brackets contain the true extremes to epsilon.

How to run
----------
::

    python benchmarks/bench_variance_e2e.py                      # N = 100, 250; 3 rows (long: the paper method)
    python benchmarks/bench_variance_e2e.py --sizes 100 --rows 2 --quick

BLAS threads are set to 1 unless the environment says otherwise.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_variance import package_state, table, two_gaussians  # noqa: E402

import skgprobust  # noqa: E402
from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor  # noqa: E402


def models(N, seed):
    rng = np.random.default_rng(seed)
    X, y = two_gaussians(N, rng)
    clf = RobustGaussianProcessClassifier(ConstantKernel(4.0) * RBF(1.0), optimizer=None).fit(X, y)
    reg = RobustGaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0), alpha=1e-2, optimizer=None).fit(X, 2.0 * y - 1.0)
    return {"gpc proba": (clf, {}), "gpr std": (reg, {"statistic": "std"})}


def run(model, kw, X, gamma, eps, method, time_limit):
    out = []
    for x in X:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = model.prediction_range(
                x[None], gamma, epsilon=eps, variance_bound=method, time_limit=time_limit, random_state=0, **kw
            )
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 250])
    ap.add_argument("--rows", type=int, default=3)
    ap.add_argument("--gamma", type=float, default=0.1)
    ap.add_argument("--epsilon", type=float, default=0.01)
    ap.add_argument("--paper-time-limit", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        f"# bench_variance_e2e  skgprobust {skgprobust.__version__} ({package_state()}), sklearn {sklearn.__version__}, "
        f"numpy {np.__version__}, python {platform.python_version()}"
    )
    print(f"# gamma {args.gamma}, epsilon {args.epsilon}, {args.rows} rows, paper time limit "
          f"{args.paper_time_limit:g} s/row, threads OMP={os.environ.get('OMP_NUM_THREADS')}")
    rows = []
    for N in args.sizes:
        rng = np.random.default_rng(2000 + N)
        Xt, _ = two_gaussians(args.rows, rng)
        for name, (model, kw) in models(N, args.seed).items():
            res = {}
            runs = (("default", args.epsilon, None), ("default/4", args.epsilon / 4, None),
                    ("paper", args.epsilon, args.paper_time_limit))
            for key, eps, tl in runs:
                res[key] = run(model, kw, Xt, args.gamma, eps, key.split("/")[0], tl)
                t = np.median([r.time[0] for r in res[key]])
                print(f"  done N={N} {name} {key}: median {t:.3f} s/row", file=sys.stderr, flush=True)
            d, d4, p = res["default"], res["default/4"], res["paper"]
            td, td4, tp = (np.array([r.time[0] for r in x]) for x in (d, d4, p))
            cat = lambda rs, a: np.concatenate([getattr(r, a).ravel() for r in rs])  # noqa: E731
            gap = lambda rs: np.mean(cat(rs, "min_upper") - cat(rs, "min_lower") + cat(rs, "max_upper") - cat(rs, "max_lower"))  # noqa: E731
            tighter_lo = np.max(cat(p, "min_lower") - cat(d, "min_lower"))
            tighter_hi = np.max(cat(d, "max_upper") - cat(p, "max_upper"))
            rows.append([
                N, name, f"{np.median(td):.3f}", f"{np.median(tp):.2f}", f"{np.median(tp / td):.0f}x",
                f"{cat(d, 'converged').mean():.0%}", f"{cat(p, 'converged').mean():.0%}",
                f"{gap(d):.4f}", f"{gap(p):.4f}", f"{tighter_lo:+.2e}", f"{tighter_hi:+.2e}",
                f"{np.median(td4):.3f}", f"{np.median(tp / td4):.0f}x", f"{gap(d4):.4f}",
            ])
    print()
    print(table(
        ["N", "model / statistic", "default s/row", "paper s/row", "paper/default (median)", "default converged",
         "paper converged", "default mean gap", "paper mean gap", "max (paper - default) min_lower",
         "max (default - paper) max_upper", "default eps/4 s/row", "paper/default eps/4", "default eps/4 mean gap"],
        rows,
    ))


if __name__ == "__main__":
    main()
