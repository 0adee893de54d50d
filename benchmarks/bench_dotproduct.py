"""Dot-product models (issue 12, example 3): ranges and certify at gamma 0.05.

What it measures
----------------
Two models, 20 held-out rows each, l_inf boxes of half-width gamma = 0.05:

* ``reg``: the example-3 regressor, ``make_friedman1(n_samples=320,
  n_features=5, noise=0.5, random_state=0)`` with y / 30 (values 0.1-1); the
  first 300 rows train ``RobustGaussianProcessRegressor(kernel=
  ConstantKernel(1.0) * DotProduct(1.0) ** 2 + WhiteKernel(0.1),
  normalize_y=True, random_state=0)`` (hyperparameters fitted), the last 20
  are the rows. ``prediction_range(statistic="mean")``.
* ``lin``: the same data and rows, ``ConstantKernel(1.0) * DotProduct(1.0) +
  WhiteKernel(0.1)`` (a plain DotProduct: the p = 1 polynomial adapter
  since the change below), ``normalize_y=True``, fitted;
  ``prediction_range`` of the mean (``lin-mean``) and of the predictive
  standard deviation (``lin-std``).
* ``xor``: sklearn's gallery example plot_gpc_xor: ``rng =
  np.random.RandomState(0); X = rng.randn(200, 2); Y = np.logical_xor(X[:, 0]
  > 0, X[:, 1] > 0)``, ``GaussianProcessClassifier(kernel=1.0 *
  DotProduct(sigma_0=1.0) ** 2)`` fitted (here the Robust subclass); rows:
  ``np.random.RandomState(1).randn(20, 2)``. ``prediction_range`` of the
  latent mean (``xor-latent``) and of the class probabilities (``xor-proba``),
  and ``certify``.

epsilon per row: 1% of the row's true range (dense sampling: 20000 uniform
points, corners and faces of the box, evaluated with sklearn's own
predict / latent_mean_and_variance / predict_proba) for the mean and latent
ranges; for probabilities 1% of the row's predicted-class probability
(``0.01 * max predict_proba(x)``). ``time_limit`` per row (default 2 s, the
target).

Table per model: % of ranges converged, median / max seconds per row, the
mean and max of (certified width / sampled true range), where the certified
width is ``max_upper - min_lower`` (largest over the output columns), the
median certified width and median sampled true range, and for ``certify``
the unknown and robust rates and seconds per row.

``--before DIR`` runs the same measurement a second time in a subprocess with
``PYTHONPATH=DIR`` (e.g. a ``git worktree add /tmp/before_dp <commit>`` of
the package before the change) and prints both tables, before then after.

Sanity checks ("anomalies", exit status 1): sampled values inside the
certified ranges (slack 1e-9 relative), robust rows keep their label at the
sampled points.

Results (xor-proba, 2-core machine, time_limit 2 s)
---------------------------------------------------
Before the exact polynomial variance bound (``_bounds/_variance.py``,
"Polynomial kernels"): 0% of the 20 probability ranges converged, median
2.02 s per row (time limit), median certified width 0.083 (the latent
variance, about 4e4, was bounded from k(x, x) and q(x) separately; the
spectral split spent 95% of the time). After: 100% converged, median
0.059 s, max 0.17 s per row, median width 0.018 (the epsilon is 1% of the
predicted-class probability, about 0.005 per side, and the sampled range
is about 2e-4, hence width/true ~ 170). reg-mean, xor-latent and certify
unchanged (100%, 100%, 0% unknown).

After the exact monomial coefficients and the per-kernel rounding
constant (``DotProductPowerAdapter.mean_rtol``), measured before/after in one
run (``--before`` a worktree of 1c16e79, load average 11-12): reg-mean median
0.035 -> 0.017 s, max 0.63 -> 0.07 s per row; xor-latent median 0.171 ->
0.021 s, max 0.37 -> 0.04 s (the latent mean's Taylor model comes from 6
polynomial coefficients instead of 200 support terms); xor-proba 100% both,
median 0.21 s both (the variance bound dominates); certify unchanged within
noise (0.4-1.1 ms median per row both). Widths unchanged (1.015 / 1.007).

Plain DotProduct through the p = 1 polynomial adapter, WhiteAdapter /
SumAdapter rounding constants (``--before`` the three kernels files of
6724fde, everything else identical; load average 4.5-6 on 2 cores, so the
per-row medians of a few ms are noise-level): all rows converge before and
after, widths identical; medians before -> after reg-mean 0.015 -> 0.011
and 0.018 -> 0.034 s in two runs, lin-mean 0.002 -> 0.003 / 0.007 / 0.011 s,
lin-std 0.016 -> 0.040 / 0.037 -> 0.043 s, xor rows unchanged within
noise. Repeated (5 passes over the 20 rows, the smallest per-row
median): lin-mean 0.0019 -> 0.0014 s, lin-std 0.0069 -> 0.0047 s, so not
slower. The bound itself, timed as the min of 7 x 50 calls of
``affine_lower`` on one box / 64 boxes: lin 0.45 -> 0.47 ms / 5.9 -> 2.9 ms,
reg 0.88 -> 0.73 ms / 7.25 -> 7.65 ms. Where the constant matters
(random rank-deficient fits of tests/test_dotproduct.py, 12 fits x 3 rows
per family, gamma 1% of the feature range, epsilon 1% of std(predict),
1 s per call): converged plain DotProduct 15/36 -> 30/36, DotProduct [** 2]
+ WhiteKernel 11/36 -> 26/36, C * DotProduct + C * DotProduct ** 2 [+ White]
8/36 -> 19/36; median seconds per 3 rows 3.0 -> 0.03 (plain, white).

How to run
----------
::

    python benchmarks/bench_dotproduct.py                      # about 1 min after the change
    python benchmarks/bench_dotproduct.py --before /tmp/before_dp   # + the old code (about 3 min more)

BLAS threads are pinned to 1 before numpy is imported.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _bench import table  # noqa: E402

warnings.filterwarnings("ignore")

GAMMA = 0.05
N_ROWS = 20
N_SAMPLES = 20000


def box_points(lo, hi, rng, n):
    d = len(lo)
    pts = [lo + (hi - lo) * rng.random((n, d)), (0.5 * (lo + hi))[None]]
    bits = (np.arange(2**d)[:, None] >> np.arange(d)[None]) & 1
    pts.append(np.where(bits == 1, hi, lo))
    face = lo + (hi - lo) * rng.random((n // 10, d))
    j = rng.integers(d, size=len(face))
    face[np.arange(len(face)), j] = np.where(rng.random(len(face)) < 0.5, lo[j], hi[j])
    pts.append(face)
    return np.vstack(pts)


def models():
    from sklearn.datasets import make_friedman1
    from sklearn.gaussian_process.kernels import ConstantKernel, DotProduct, WhiteKernel

    from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor

    X, y = make_friedman1(n_samples=300 + N_ROWS, n_features=5, noise=0.5, random_state=0)
    y = y / 30
    reg = RobustGaussianProcessRegressor(
        kernel=ConstantKernel(1.0) * DotProduct(1.0) ** 2 + WhiteKernel(0.1), normalize_y=True, random_state=0
    ).fit(X[:300], y[:300])
    rng = np.random.RandomState(0)
    Xc = rng.randn(200, 2)
    Y = np.logical_xor(Xc[:, 0] > 0, Xc[:, 1] > 0)
    clf = RobustGaussianProcessClassifier(kernel=1.0 * DotProduct(sigma_0=1.0) ** 2).fit(Xc, Y)
    lin = RobustGaussianProcessRegressor(
        kernel=ConstantKernel(1.0) * DotProduct(1.0) + WhiteKernel(0.1), normalize_y=True, random_state=0
    ).fit(X[:300], y[:300])
    return reg, X[300:], clf, np.random.RandomState(1).randn(N_ROWS, 2), lin


def measure(time_limit):
    """Run every measurement in this interpreter; a dict of results."""
    import skgprobust

    reg, Xr, clf, Xc, lin = models()
    rng = np.random.default_rng(0)
    out = {"package": os.path.dirname(skgprobust.__file__),
           "kernels": [str(reg.kernel_), str(clf.kernel_), str(lin.kernel_)]}
    anomalies = []
    specs = [
        ("reg-mean", reg, Xr, lambda P: reg.predict(P)[:, None], dict(statistic="mean")),
        ("lin-mean", lin, Xr, lambda P: lin.predict(P)[:, None], dict(statistic="mean")),
        ("lin-std", lin, Xr, lambda P: lin.predict(P, return_std=True)[1][:, None], dict(statistic="std")),
        ("xor-latent", clf, Xc, lambda P: clf.base_estimator_.latent_mean_and_variance(P)[0][:, None],
         dict(statistic="latent_mean")),
        ("xor-proba", clf, Xc, lambda P: clf.predict_proba(P), dict(statistic="proba")),
    ]
    for name, est, X, fn, kw in specs:
        conv, times, ratios, widths, trues = [], [], [], [], []
        for i, x in enumerate(X):
            lo, hi = x - GAMMA, x + GAMMA
            P = box_points(lo, hi, rng, N_SAMPLES)
            V = fn(P)
            vmin, vmax = V.min(0), V.max(0)
            if name == "xor-proba":
                eps = 0.01 * float(fn(x[None]).max())
            else:
                eps = 0.01 * float((vmax - vmin).max())
            t = time.perf_counter()
            r = est.prediction_range(x[None], GAMMA, epsilon=eps, time_limit=time_limit, random_state=0, **kw)
            times.append(time.perf_counter() - t)
            conv.append(bool(r.converged.all()))
            width = r.max_upper[0] - r.min_lower[0]
            true = np.maximum(vmax - vmin, 1e-300)
            ratios.append(float((width / true).max()))
            widths.append(float(width.max()))
            trues.append(float(true.max()))
            slack = 1e-9 * np.maximum(1.0, np.abs(V).max(0))
            if np.any(r.min_lower[0] > vmin + slack) or np.any(r.max_upper[0] < vmax - slack):
                anomalies.append(f"{name} row {i}: sampled values outside the certified range")
        out[name] = dict(conv=float(np.mean(conv)), med=float(np.median(times)), max=float(np.max(times)),
                         ratio_mean=float(np.mean(ratios)), ratio_max=float(np.max(ratios)),
                         width=float(np.median(widths)), true=float(np.median(trues)))
    # certify on the XOR classifier
    t = time.perf_counter()
    c = clf.certify(Xc, GAMMA, time_limit=time_limit, random_state=0)
    total = time.perf_counter() - t
    labels = clf.predict(Xc)
    for i, x in enumerate(Xc):
        if c.robust[i]:
            P = box_points(x - GAMMA, x + GAMMA, rng, 2000)
            if np.any(clf.predict(P) != labels[i]):
                anomalies.append(f"certify row {i}: robust but a sampled point changes the label")
    out["xor-certify"] = dict(unknown=float(np.mean(c.status == "unknown")), robust=float(np.mean(c.robust)),
                              med=float(np.median(c.time)), max=float(np.max(c.time)), total=total)
    out["anomalies"] = anomalies
    return out


def report(label, res):
    print(f"\n## {label}: package {res['package']}")
    print(f"fitted kernels: reg {res['kernels'][0]}; xor {res['kernels'][1]}; lin {res['kernels'][2]}")
    rows = []
    for name in ("reg-mean", "lin-mean", "lin-std", "xor-latent", "xor-proba"):
        m = res[name]
        rows.append([name, f"{100 * m['conv']:.0f}%", f"{m['med']:.3f}", f"{m['max']:.3f}",
                     f"{m['ratio_mean']:.4g}", f"{m['ratio_max']:.4g}", f"{m['width']:.4g}", f"{m['true']:.4g}"])
    print(table(["ranges", "converged", "median s/row", "max s/row", "width/true mean", "width/true max",
                 "median width", "median true"], rows))
    c = res["xor-certify"]
    print(table(["certify xor", "unknown", "robust", "median ms/row", "max ms/row"],
                [["gamma 0.05", f"{100 * c['unknown']:.0f}%", f"{100 * c['robust']:.0f}%", f"{1e3 * c['med']:.2f}",
                  f"{1e3 * c['max']:.2f}"]]))
    if res["anomalies"]:
        print("anomalies:\n  " + "\n  ".join(res["anomalies"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=2.0, help="seconds per row (default 2)")
    ap.add_argument("--before", metavar="DIR", help="also run with PYTHONPATH=DIR (the package before the change)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:
        print(json.dumps(measure(args.time_limit)))
        return 0
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# bench_dotproduct: gamma {GAMMA}, {N_ROWS} rows, time_limit {args.time_limit} s/row; load {load}")
    bad = False
    if args.before:
        env = dict(os.environ, PYTHONPATH=args.before)
        proc = subprocess.run([sys.executable, __file__, "--json", "--time-limit", str(args.time_limit)],
                              env=env, capture_output=True, text=True, cwd=args.before)
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            return 1
        before = json.loads(proc.stdout.strip().splitlines()[-1])
        report("before", before)
        bad |= bool(before["anomalies"])
    after = measure(args.time_limit)
    report("after" if args.before else "this package", after)
    bad |= bool(after["anomalies"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
