"""Does ``time_limit`` hold? Wall time per row against the limit.

What it measures
----------------
Two workloads that used to overshoot ``time_limit`` (issue 11, "budgets that
hold"):

* ``gpr-std``: std ranges of a GP regressor with N = 480 training points.
  Data ``make_friedman1(n_samples=500, n_features=8, noise=0.5,
  random_state=0)``; the first 480 rows train, 5 of the last 20 are the test
  rows. Model ``RobustGaussianProcessRegressor(kernel=ConstantKernel(10.0) *
  RBF(np.ones(8)) + WhiteKernel(0.25), normalize_y=True)``, hyperparameters
  fitted by sklearn's default optimizer. Call ``prediction_range(X_test,
  gamma=0.05, statistic="std", epsilon=1e-4, time_limit=T)``: epsilon is
  small enough that no row converges, so every row runs until its limit.
  One bound of the std over a box costs tens to hundreds of milliseconds
  One bound of the std over a box costs about a millisecond with the
  default variance bound, so this is the cheap-box case.
* ``gpr-std N=40 paper``: the same on the first 40 training rows with
  ``variance_bound="paper"`` (cvxpy QP/LPs): about 0.4 s per box, so a batch
  of 16 splits (32 boxes) used to overshoot the limit by seconds.
* ``digits-ovr``: ``certify`` of a 10-class one-vs-rest GPC on sklearn's
  ``load_digits`` (pixels / 16, the first 1000 rows train, the next 10 are the
  test rows), ``kernel=ConstantKernel(20.0) * RBF(2.5), optimizer=None``, at
  ``gamma`` in {0.05, 0.2}, ``time_limit=T``. At 0.05 the root bounds decide
  every row; at 0.2 the rows the root leaves open used to spend seconds in
  local search (up to 13 s per row reported), with no box split (n_iter == 0).

The newer model families, each fitted once and warmed up with a one-row
call of the measured method (so per-fit setup cached lazily is not counted),
then run on rows that cannot finish before the limit (epsilon far below
what the bounds reach in T):

* ``ep-ovr proba``: ``EPGaussianProcessClassifier(ConstantKernel(20.0) *
  RBF(2.5), optimizer=None)`` on digits 0-2 (pixels / 16, the first 50 rows
  of each class train; test rows: the next rows of those classes, in turn),
  ``prediction_range(gamma=0.05, epsilon=1e-6)``.
* ``softmax certify`` / ``softmax proba``: ``SoftmaxGaussianProcessClassifier``
  with the same kernel on all 10 digits (50 rows per class train),
  ``certify(gamma=0.05)`` (most rows stay open) and
  ``prediction_range(gamma=0.02, epsilon=1e-6)``. Known to overrun (issue
  13: the point-rule evaluations were not budgeted).
* ``sparse-reg std``: ``SparseGaussianProcessRegressor`` (VFE, 50 inducing
  points, ``normalize_y=True``, hyperparameters fitted) on the ``gpr-std``
  data, ``prediction_range(statistic="std", epsilon=1e-7)`` (1e-4 converges).
* ``sparse-clf proba``: ``SparseGaussianProcessClassifier`` (FITC, EP, 50
  inducing points, ``ConstantKernel(1.0) * RBF(np.ones(5))``,
  ``optimizer=None``) on Friedman #1 > median (``make_friedman1(n_samples=
  520, n_features=5, noise=1.0, random_state=1)``, 500 train),
  ``prediction_range(gamma=0.05, epsilon=1e-9)`` (1e-6 converges).
* ``multioutput std``: ``MultiOutputGaussianProcessRegressor(kernel=RBF(1.0),
  n_latent=2)`` (fitted) on 200 points of 2 inputs in [-2, 2) with 3
  outputs (sin x0 + x1, cos(x0 x1), x0 - sin x1, noise 0.1, seed 0),
  ``prediction_range(statistic="std", gamma=0.05, epsilon=1e-7)`` (1e-4
  converges).

T defaults to 2 s. The per-call setup of an estimator method (eigen-
decompositions, about 2.5 s per class for digits) is outside the rows, so the
table reports the per-row ``time`` field (the row's clock starts when its
budget is created) and, for the regressor, also (total wall time of the call)
/ rows. The classifier is fitted once and warmed up with a one-row
``certify`` first, so setup that it caches lazily (inside its first row) is
not counted against a measured row.

Table: workload, rows, median and max of (row time / T), the allowed maximum
1.1 + 0.05 / T, whether every row met it, median / min / max ``n_iter``
(boxes split per row), and the outcome (ranges: median final relative gap of
the std's max; certify: robust / not_robust / unknown counts).

Sanity checks ("anomalies", exit status 1): ranges contain the model's own
values (std or probabilities) at the box centre and at random points of the
box; robust rows keep their predicted label at random points;
counterexamples change the label.

Run it on the working tree (``PYTHONPATH=. python benchmarks/bench_budget.py``):
``python benchmarks/...`` alone imports whatever skgprobust is installed,
and the header line names the copy used.

Measured
--------
2026-11-24, commit 996d746 (``git archive`` copy), T = 2 s, 2 shared cores
at load average 8.7-12 (wall-clock limits: every ratio is inflated by the
load). max t/T: gpr-std 1.02 (held); gpr-std N=40 paper 6.30 (NOT held: one
cvxpy box costs seconds at this load); digits-ovr gamma=0.05 0.04, gamma=0.2
1.64 (NOT held); ep-ovr proba 1.03; softmax certify 6.80 (median 4.10, NOT
held) and softmax proba 1.85 (median 1.09, NOT held), the known issue-13
overrun; sparse-reg std 1.005; sparse-clf proba 1.02; multioutput std 1.01.
No anomalies. After the softmax budget fix (commit 2b88b00, load 9.6-11.3):
softmax certify max t/T 1.046 (median 0.946), softmax proba 1.048 (median
0.995), ep-ovr proba 1.033: all held.

How to run
----------
::

    python benchmarks/bench_budget.py              # all workloads, about 2-3 min
    python benchmarks/bench_budget.py --quick      # fewer rows
    python benchmarks/bench_budget.py --time-limit 1 --skip-digits
    python benchmarks/bench_budget.py --only-new   # the newer families only

To compare with an older commit without touching the working tree:
``git worktree add /tmp/before <commit>`` and run this script with
``PYTHONPATH=/tmp/before``.

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
from sklearn.datasets import load_digits, make_friedman1  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402

import skgprobust  # noqa: E402
from skgprobust import (  # noqa: E402
    BudgetExhaustedWarning,
    EPGaussianProcessClassifier,
    MultiOutputGaussianProcessRegressor,
    RobustGaussianProcessClassifier,
    RobustGaussianProcessRegressor,
    SoftmaxGaussianProcessClassifier,
    SparseGaussianProcessClassifier,
    SparseGaussianProcessRegressor,
)
from _bench import package_state, table  # noqa: E402

warnings.filterwarnings("ignore", category=BudgetExhaustedWarning)
warnings.filterwarnings("ignore", category=ConvergenceWarning)  # the fitted GPR at N=40

GAMMA = 0.05
EPSILON = 1e-4
DIGITS_GAMMAS = (0.05, 0.2)
TOL = 1e-9


def summary(name, times, n_iter, limit, outcome, extra=""):
    ratio = np.asarray(times) / limit
    allowed = 1.1 + 0.05 / limit
    return [
        name,
        len(ratio),
        f"{np.median(ratio):.3f}",
        f"{ratio.max():.3f}",
        f"{allowed:.3f}",
        "yes" if ratio.max() <= allowed else "NO",
        f"{int(np.median(n_iter))} ({int(np.min(n_iter))}-{int(np.max(n_iter))})",
        outcome + extra,
    ]


def run_gpr(n_rows, limit, rng, n_train=480, variance_bound="default"):
    X, y = make_friedman1(n_samples=500, n_features=8, noise=0.5, random_state=0)
    reg = RobustGaussianProcessRegressor(
        kernel=ConstantKernel(10.0) * RBF(np.ones(8)) + WhiteKernel(0.25), normalize_y=True, random_state=0
    ).fit(X[:n_train], y[:n_train])
    Xt = X[480:480 + n_rows]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the paper bound's solver notes
        r = reg.prediction_range(Xt, gamma=GAMMA, statistic="std", epsilon=EPSILON, time_limit=limit,
                                 random_state=0, variance_bound=variance_bound)
    wall = time.perf_counter() - t0
    problems = []
    lo, hi = Xt - GAMMA, Xt + GAMMA
    for i in range(len(Xt)):
        pts = np.vstack([Xt[i], rng.uniform(lo[i], hi[i], size=(64, Xt.shape[1]))])
        _, std = reg.predict(pts, return_std=True)
        if std.min() < r.min_lower[i, 0] - TOL or std.max() > r.max_upper[i, 0] + TOL:
            problems.append(f"gpr row {i}: std outside [{r.min_lower[i, 0]!r}, {r.max_upper[i, 0]!r}]")
    gap = (r.max_upper[:, 0] - r.max_lower[:, 0]) / np.maximum(r.max_upper[:, 0], 1e-300)
    outcome = f"median rel. gap of max std {np.median(gap):.2g}"
    extra = f"; wall / rows / T = {wall / len(Xt) / limit:.3f}"
    name = f"gpr-std N={n_train}" + ("" if variance_bound == "default" else f" {variance_bound}")
    return summary(name, r.time, r.n_iter, limit, outcome, extra), problems


def fit_digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    clf = RobustGaussianProcessClassifier(
        kernel=ConstantKernel(20.0) * RBF(2.5), optimizer=None, random_state=0
    ).fit(X[:1000], y[:1000])
    # Warm-up: one-off setup an estimator may cache lazily (inside its first
    # row) is not what this benchmark measures.
    clf.certify(X[-1:], gamma=0.05, time_limit=1.0, random_state=0)
    return clf, X


def run_digits(clf, X, n_rows, limit, rng, gamma):
    Xt = X[1000:1000 + n_rows]
    t0 = time.perf_counter()
    c = clf.certify(Xt, gamma=gamma, time_limit=limit, random_state=0)
    wall = time.perf_counter() - t0
    problems = []
    pred = clf.predict(Xt)
    lo, hi = Xt - gamma, Xt + gamma
    for i in range(len(Xt)):
        if c.status[i] == "robust":
            pts = rng.uniform(lo[i], hi[i], size=(32, Xt.shape[1]))
            if np.any(clf.predict(pts) != pred[i]):
                problems.append(f"digits row {i}: robust but a sampled point changes the label")
        elif c.status[i] == "not_robust":
            if clf.predict(c.counterexample[i][None])[0] == pred[i]:
                problems.append(f"digits row {i}: counterexample keeps the label")
    counts = ", ".join(f"{s} {int(np.sum(c.status == s))}" for s in ("robust", "not_robust", "unknown"))
    extra = f"; call wall {wall:.1f} s (incl. per-call setup)"
    return summary(f"digits-ovr certify gamma={gamma:g}", c.time, c.n_iter, limit, counts, extra), problems


# -- the newer families ----------------------------------------------------------


def check_range(name, values, r, Xt, gamma, rng, n_points=64):
    """The model's own ``values(P)`` (n, k) at the centre and at random points
    of each box lie in [min_lower, max_upper]."""
    problems = []
    for i in range(len(Xt)):
        pts = np.vstack([Xt[i], rng.uniform(Xt[i] - gamma, Xt[i] + gamma, size=(n_points, Xt.shape[1]))])
        v = np.asarray(values(pts)).reshape(len(pts), -1)
        if np.any(v < r.min_lower[i] - TOL) or np.any(v > r.max_upper[i] + TOL):
            problems.append(f"{name} row {i}: a sampled value lies outside the certified range")
    return problems


def check_certify(name, clf, c, Xt, gamma, rng, n_points=32):
    problems = []
    pred = clf.predict(Xt)
    for i in range(len(Xt)):
        if c.status[i] == "robust":
            pts = rng.uniform(Xt[i] - gamma, Xt[i] + gamma, size=(n_points, Xt.shape[1]))
            if np.any(clf.predict(pts) != pred[i]):
                problems.append(f"{name} row {i}: robust but a sampled point changes the label")
        elif c.status[i] == "not_robust" and clf.predict(c.counterexample[i][None])[0] == pred[i]:
            problems.append(f"{name} row {i}: counterexample keeps the label")
    return problems


def measure(method, Xt, limit, **kw):
    """Warm up with one row, then time the call on ``Xt``; (result, wall)."""
    method(Xt[:1], time_limit=limit, random_state=0, **kw)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = method(Xt, time_limit=limit, random_state=0, **kw)
    return res, time.perf_counter() - t0


def range_row(name, r, wall, n_rows, limit):
    conv = np.mean(np.all(r.converged, 1))
    gap = np.median(np.max(r.max_upper - r.max_lower, 1))
    outcome = f"median max-gap {gap:.2g}, {100 * conv:.0f}% converged"
    return summary(name, r.time, r.n_iter, limit, outcome, f"; wall / rows / T = {wall / n_rows / limit:.3f}")


def digits_classes(n_classes, n_rows, per_class=50):
    """Digits 0..n_classes-1, pixels / 16: the first ``per_class`` rows of
    each class train; ``n_rows`` test rows taken in turn from the next rows
    of each class."""
    D = load_digits()
    X, y = D.data / 16.0, D.target
    tr = np.concatenate([np.flatnonzero(y == k)[:per_class] for k in range(n_classes)])
    te = np.stack([np.flatnonzero(y == k)[per_class:per_class + n_rows] for k in range(n_classes)], 1).ravel()
    return X[tr], y[tr], X[te[:n_rows]]


def run_new(n_rows, limit, rng, only=None):
    rows, problems = [], []

    def want(key):
        return only is None or key in only

    kernel = ConstantKernel(20.0) * RBF(2.5)
    if want("ep"):
        Xtr, ytr, Xt = digits_classes(3, n_rows)
        ep = EPGaussianProcessClassifier(kernel, optimizer=None).fit(Xtr, ytr)
        r, wall = measure(ep.prediction_range, Xt, limit, gamma=0.05, epsilon=1e-6)
        rows.append(range_row("ep-ovr proba gamma=0.05", r, wall, len(Xt), limit))
        problems += check_range("ep-ovr", ep.predict_proba, r, Xt, 0.05, rng)
    if want("softmax"):
        Xtr, ytr, Xt = digits_classes(10, n_rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sm = SoftmaxGaussianProcessClassifier(kernel, optimizer=None).fit(Xtr, ytr)
        c, wall = measure(sm.certify, Xt, limit, gamma=0.05)
        counts = ", ".join(f"{s} {int(np.sum(c.status == s))}" for s in ("robust", "not_robust", "unknown"))
        rows.append(summary("softmax certify gamma=0.05", c.time, c.n_iter, limit, counts,
                            f"; wall / rows / T = {wall / len(Xt) / limit:.3f}"))
        problems += check_certify("softmax", sm, c, Xt, 0.05, rng)
        r, wall = measure(sm.prediction_range, Xt, limit, gamma=0.02, epsilon=1e-6)
        rows.append(range_row("softmax proba gamma=0.02", r, wall, len(Xt), limit))
        problems += check_range("softmax", sm.predict_proba, r, Xt, 0.02, rng)
    if want("sparse-reg"):
        X, y = make_friedman1(n_samples=500, n_features=8, noise=0.5, random_state=0)
        sr = SparseGaussianProcessRegressor(
            ConstantKernel(10.0) * RBF(np.ones(8)) + WhiteKernel(0.25), inducing_points=50, normalize_y=True,
            random_state=0,
        ).fit(X[:480], y[:480])
        Xs = X[480:480 + n_rows]
        r, wall = measure(sr.prediction_range, Xs, limit, gamma=GAMMA, statistic="std", epsilon=1e-7)
        rows.append(range_row("sparse-reg std N=480 M=50", r, wall, len(Xs), limit))
        problems += check_range("sparse-reg", lambda P: sr.predict(P, return_std=True)[1], r, Xs, GAMMA, rng)
    if want("sparse-clf"):
        X, t = make_friedman1(n_samples=520, n_features=5, noise=1.0, random_state=1)
        y = (t > np.median(t)).astype(int)
        sc = SparseGaussianProcessClassifier(
            ConstantKernel(1.0) * RBF(np.ones(5)), inducing_points=50, optimizer=None, random_state=0
        ).fit(X[:500], y[:500])
        Xs = X[500:500 + n_rows]
        r, wall = measure(sc.prediction_range, Xs, limit, gamma=0.05, epsilon=1e-9)
        rows.append(range_row("sparse-clf proba gamma=0.05", r, wall, len(Xs), limit))
        problems += check_range("sparse-clf", sc.predict_proba, r, Xs, 0.05, rng)
    if want("multioutput"):
        g = np.random.default_rng(0)
        X = g.uniform(-2, 2, (200 + n_rows, 2))
        Y = np.column_stack([np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 0] * X[:, 1]), X[:, 0] - np.sin(X[:, 1])])
        Y += 0.1 * g.normal(size=Y.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mo = MultiOutputGaussianProcessRegressor(kernel=RBF(1.0), n_latent=2, random_state=0).fit(X[:200], Y[:200])
        Xs = X[200:]
        r, wall = measure(mo.prediction_range, Xs, limit, gamma=GAMMA, statistic="std", epsilon=1e-7)
        rows.append(range_row("multioutput std P=3 L=2", r, wall, len(Xs), limit))
        problems += check_range("multioutput", lambda P: mo.predict(P, return_std=True)[1], r, Xs, GAMMA, rng)
    return rows, problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="3 + 2 GPR rows, 4 digits rows per gamma")
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--skip-digits", action="store_true")
    p.add_argument("--skip-gpr", action="store_true")
    p.add_argument("--skip-paper", action="store_true", help="skip the variance_bound='paper' workload (cvxpy)")
    p.add_argument("--skip-new", action="store_true", help="skip the newer families (EP, softmax, sparse, LMC)")
    p.add_argument("--only-new", nargs="*", default=None, metavar="FAMILY",
                   help="only the newer families (all, or some of: ep softmax sparse-reg sparse-clf multioutput)")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"# bench_budget: time_limit={args.time_limit:g} s; {package_state()}")
    rows, anomalies = [], []
    if args.only_new is not None:
        args.skip_gpr = args.skip_paper = args.skip_digits = True
    if not args.skip_gpr:
        row, probs = run_gpr(3 if args.quick else 5, args.time_limit, rng)
        rows.append(row)
        anomalies += probs
    if not args.skip_paper:
        row, probs = run_gpr(2 if args.quick else 3, args.time_limit, rng, n_train=40, variance_bound="paper")
        rows.append(row)
        anomalies += probs
    if not args.skip_digits:
        clf, X = fit_digits()
        for gamma in DIGITS_GAMMAS:
            row, probs = run_digits(clf, X, 4 if args.quick else 10, args.time_limit, rng, gamma)
            rows.append(row)
            anomalies += probs
    if not args.skip_new:
        new_rows, probs = run_new(3 if args.quick else 5, args.time_limit, rng, only=args.only_new or None)
        rows += new_rows
        anomalies += probs
    headers = ["workload", "rows", "median t/T", "max t/T", "allowed", "held", "n_iter med (min-max)", "outcome"]
    print(table(headers, rows))
    print(f"## anomalies: {len(anomalies) or 'none'}")
    for a in anomalies:
        print(f"- {a}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
