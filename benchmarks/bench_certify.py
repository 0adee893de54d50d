"""Certification speed of a two-class GP classifier, and the cost of one mean bound.

What it measures
----------------
A ``RobustGaussianProcessClassifier`` (binary Laplace GPC) is fitted on
``make_classification(n_samples=1200, n_features=11, n_informative=8,
random_state=1)``, standardised with a ``StandardScaler`` fitted on the
training part (first 1000 rows); the last 200 rows are held out. Kernel:
``ConstantKernel(30.0) * RBF(np.full(11, 2.0))`` with ``optimizer=None``
(hyperparameters fixed, no fitting of the kernel).

Table 1 -- ``clf.certify(X_held_out, gamma, time_limit=1.0, random_state=0)``
for gamma in {0.05, 0.1, 0.2}: median / mean / p90 / max milliseconds per row
(from ``cert.time``), the total wall time of the call, the fraction of rows
robust / not_robust / unknown, the median number of boxes split, and the
targets (gamma=0.05: median <= 10 ms and <= 2% unknown; gamma=0.1: <= 5%
unknown).

Table 2 -- cost of one latent-mean bound per box when batched:
``AffineMean.bound(lo, hi)`` over B in {1, 16, 64, 256} boxes of half-width
0.1 around held-out rows (time / B, best of several repeats), against one
single-row ``clf.predict(x[None])`` call and one
``clf.base_estimator_.predict(x[None])`` call (best of several repeats). The
target is bound-per-box / predict <= 3.

Sanity checks (printed as "anomalies"): every batched lower bound must be
<= the latent mean at the box centre, at the relaxation's argmin and at
random points of the box (sklearn's own ``latent_mean_and_variance``); the
adapter's latent mean must agree with sklearn's; every "robust" row must
keep its predicted label at random points of its box; every "not_robust"
counterexample must lie in the box and change the label.

How to run
----------
::

    python benchmarks/bench_certify.py            # full run (200 rows, under a minute)
    python benchmarks/bench_certify.py --quick    # 50 rows, fewer repeats

Single-threaded (``n_jobs=None``, one BLAS thread unless OMP_NUM_THREADS /
OPENBLAS_NUM_THREADS / MKL_NUM_THREADS are set); compare runs on the same
machine.
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
from sklearn.datasets import make_classification
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.preprocessing import StandardScaler

import skgprobust
from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier
from skgprobust._bounds._mean import AffineMean
from skgprobust._engine._latent import from_binary_classifier
from _bench import package_state, table  # noqa: E402

warnings.filterwarnings("ignore", category=BudgetExhaustedWarning)

GAMMAS = (0.05, 0.1, 0.2)
TARGETS = {0.05: (10.0, 0.02), 0.1: (None, 0.05)}  # gamma -> (median ms, max unknown fraction)
BATCH_SIZES = (1, 16, 64, 256)
BOX_HALF_WIDTH = 0.1
RATIO_TARGET = 3.0
TOL = 1e-9  # absolute slack for the containment checks (bounds.py margin is 1e-11 relative)


def best_per_call(fn, n_calls, repeats):
    """Best (over ``repeats``) mean seconds per call of ``fn`` over ``n_calls`` calls."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n_calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / n_calls)
    return best


def make_model():
    X, y = make_classification(n_samples=1200, n_features=11, n_informative=8, random_state=1)
    scaler = StandardScaler().fit(X[:1000])
    X = scaler.transform(X)
    X_train, y_train, X_test = X[:1000], y[:1000], X[1000:]
    kernel = ConstantKernel(30.0) * RBF(np.full(11, 2.0))
    t0 = time.perf_counter()
    clf = RobustGaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X_train, y_train)
    return clf, X_test, time.perf_counter() - t0


def latent(base, X):
    return base.latent_mean_and_variance(X)[0]


def check_certificates(clf, X, lo, hi, cert, rng, n_samples=64):
    """Anomalies: robust rows whose label changes at sampled points; bad counterexamples."""
    problems = []
    base = clf.base_estimator_
    labels = base.predict(X)
    for i, s in enumerate(cert.status):
        if s == "robust":
            pts = rng.uniform(lo[i], hi[i], size=(n_samples, X.shape[1]))
            pts = np.vstack([pts, lo[i], hi[i]])
            bad = base.predict(pts) != labels[i]
            if bad.any():
                problems.append(f"row {i}: 'robust' but predict changes at a sampled point {pts[np.argmax(bad)]!r}")
        elif s == "not_robust":
            c = cert.counterexample[i]
            if not (np.all(c >= lo[i]) and np.all(c <= hi[i])):
                problems.append(f"row {i}: counterexample outside the box")
            elif base.predict(c[None])[0] == labels[i]:
                problems.append(f"row {i}: counterexample does not change predict")
        if s == "robust" and not cert.bound[i] > 0:
            problems.append(f"row {i}: 'robust' with bound {cert.bound[i]!r} <= 0")
    return problems


def run_certify(clf, X, gammas, time_limit, rng):
    rows, anomalies = [], []
    for gamma in gammas:
        t0 = time.perf_counter()
        cert = clf.certify(X, gamma=gamma, time_limit=time_limit, random_state=0)
        wall = time.perf_counter() - t0
        ms = 1e3 * cert.time
        frac = {s: float(np.mean(cert.status == s)) for s in ("robust", "not_robust", "unknown")}
        med_target, unk_target = TARGETS.get(gamma, (None, None))
        goals = []
        if med_target is not None:
            goals.append(f"median<={med_target:g}ms:{'ok' if np.median(ms) <= med_target else 'MISSED'}")
        if unk_target is not None:
            goals.append(f"unknown<={100 * unk_target:g}%:{'ok' if frac['unknown'] <= unk_target else 'MISSED'}")
        rows.append(
            [
                f"{gamma:g}",
                f"{np.median(ms):.1f}",
                f"{np.mean(ms):.1f}",
                f"{np.percentile(ms, 90):.1f}",
                f"{np.max(ms):.1f}",
                f"{wall:.2f}",
                f"{100 * frac['robust']:.1f}%",
                f"{100 * frac['not_robust']:.1f}%",
                f"{100 * frac['unknown']:.1f}%",
                f"{int(np.median(cert.n_iter))}",
                f"{int(np.max(cert.n_iter))}",
                " ".join(goals) or "-",
            ]
        )
        lo, hi = X - gamma, X + gamma
        anomalies += [f"gamma={gamma:g}: {p}" for p in check_certificates(clf, X, lo, hi, cert, rng)]
    headers = [
        "gamma",
        "median ms",
        "mean ms",
        "p90 ms",
        "max ms",
        "total wall s",
        "robust",
        "not_robust",
        "unknown",
        "median iters",
        "max iters",
        "targets",
    ]
    return table(headers, rows), anomalies


def run_bound_cost(clf, X, batch_sizes, repeats, rng):
    base = clf.base_estimator_
    model = from_binary_classifier(base)
    f = AffineMean(model.adapter, model.weights[:, 0], 0.0)
    anomalies = []

    # The adapter's latent mean must be sklearn's.
    diff = np.max(np.abs(f.value(X) - latent(base, X)))
    if diff > TOL:
        anomalies.append(f"adapter latent mean differs from sklearn's by {diff:.3g}")

    x1 = X[:1]
    t_predict = best_per_call(lambda: clf.predict(x1), 50, repeats)
    t_base = best_per_call(lambda: base.predict(x1), 50, repeats)

    rows = []
    for B in batch_sizes:
        centres = np.resize(X, (B, X.shape[1]))  # cycles over held-out rows when B > n
        lo, hi = centres - BOX_HALF_WIDTH, centres + BOX_HALF_WIDTH
        n_calls = max(1, 256 // B)
        t_call = best_per_call(lambda: f.bound(lo, hi), n_calls, repeats)
        per_box = t_call / B
        ratio = per_box / t_predict
        rows.append(
            [
                B,
                f"{1e3 * t_call:.3f}",
                f"{1e3 * per_box:.3f}",
                f"{1e3 * t_predict:.3f}",
                f"{per_box / t_base:.2f}",
                f"{ratio:.2f}",
                "ok" if ratio <= RATIO_TARGET else "MISSED",
            ]
        )
        # Containment: the lower bound is below the true latent mean in each box.
        bb = f.bound(lo, hi)
        pts = [centres, bb.argmin] + [rng.uniform(lo, hi) for _ in range(8)]
        for P in pts:
            excess = bb.lower - latent(base, P)
            if np.any(excess > TOL):
                k = int(np.argmax(excess))
                anomalies.append(
                    f"B={B}: bound {bb.lower[k]!r} exceeds the latent mean {latent(base, P[k:k + 1])[0]!r} "
                    f"at a point of box {k} (centre = held-out row {k % len(X)}) by {excess[k]:.3g}"
                )
                break
        if not (np.all(bb.argmin >= lo) and np.all(bb.argmin <= hi)):
            anomalies.append(f"B={B}: argmin outside its box")
    headers = [
        "B boxes",
        "bound call ms",
        "bound ms/box",
        "clf.predict 1 row ms",
        "per box / base.predict",
        "per box / clf.predict",
        f"target <= {RATIO_TARGET:g}",
    ]
    preds = table(
        ["single-row call", "ms (best of repeats)"],
        [["clf.predict(x[None])", f"{1e3 * t_predict:.3f}"], ["clf.base_estimator_.predict(x[None])", f"{1e3 * t_base:.3f}"]],
    )
    return table(headers, rows) + "\n\n" + preds, anomalies


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="50 held-out rows and fewer timing repeats")
    p.add_argument("--time-limit", type=float, default=1.0, help="seconds per row for certify (default 1.0)")
    args = p.parse_args(argv)

    clf, X_test, t_fit = make_model()
    n_rows = 50 if args.quick else len(X_test)
    repeats = 3 if args.quick else 7
    X = X_test[:n_rows]
    rng = np.random.default_rng(0)

    print(f"# bench_certify{' (--quick)' if args.quick else ''}")
    print(
        f"skgprobust {skgprobust.__version__}, sklearn {sklearn.__version__}, numpy {np.__version__}, "
        f"python {platform.python_version()}"
    )
    print(package_state())
    print(
        f"GPC: 1000 train rows x 11 features, kernel {clf.kernel_}, optimizer=None, fit {t_fit:.2f} s; "
        f"certify on {n_rows} held-out rows, time_limit={args.time_limit:g} s/row, n_jobs=None, random_state=0"
    )
    print()
    print("## certify: time per row and outcome")
    print()
    t1, a1 = run_certify(clf, X, GAMMAS, args.time_limit, rng)
    print(t1)
    print()
    print(f"## one latent-mean bound per box (batched, half-width {BOX_HALF_WIDTH:g}) vs one single-row predict")
    print()
    t2, a2 = run_bound_cost(clf, X, BATCH_SIZES, repeats, rng)
    print(t2)
    print()
    anomalies = a1 + a2
    print(f"## anomalies: {len(anomalies) or 'none'}")
    for a in anomalies:
        print(f"- {a}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
