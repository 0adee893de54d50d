"""Laplace vs Expectation Propagation: accuracy and certified robustness
(issue 13 benchmark; paper Sec. 7.2, Fig. 3).

Models: sklearn's Laplace GPC (logistic likelihood, five-erf predictive) as
``RobustGaussianProcessClassifier`` and the probit EP model
``EPGaussianProcessClassifier``, both with ``ConstantKernel * RBF`` (the
paper's squared-exponential kernel; isotropic on Synthetic2D, anisotropic on
Spambase), hyperparameters by L-BFGS-B on each model's own approximate
marginal likelihood, limited to 10, 40 and 100 iterations (a custom
``optimizer`` passing ``maxiter`` to scipy; the paper's "epochs").

Data:

* Synthetic2D (``_data.load_synthetic``, as ``bench_proba.py`` / the paper): class 0 ~ N((1.5, 0), I),
  class 1 ~ N((0, 1.5), I); ``--train`` training points (default 200; the
  paper uses 1000), 200 test points.
* Spambase (``_data.load_spam``: ``../shared/data/spambase``): standardised, the 11 features
  ``bench_explain.py`` selects (l1 logistic regression), stratified
  subsample of ``--train`` training points, the 25% test split.

Measured per model: fit time, test accuracy, and the robustness measure of
the paper's Sec. 7.2, delta = pi_max^U(T) - pi_min^L(T) for T the l_inf ball
of radius gamma = 0.1 (data units; standardised for Spambase) around each of
``--rows`` (50) test points: the certified upper bound of the largest and
lower bound of the smallest P(class 1) over T (``prediction_range``,
epsilon 0.01, ``--time-limit`` seconds per row; an unconverged row still
gives valid, looser bounds). Median and quartiles of delta; the median of
the attained spread (the model's own largest minus smallest probability
found in T, a lower bound of the true spread: the true value lies between
the two); fraction of rows converged; median seconds per row. BLAS threads
pinned to 1. Sanity checks ("anomalies", exit status 1): predict_proba at
500 sampled points of each box and at the incumbents lies within the
certified range.

Usage: python benchmarks/bench_ep.py [--quick] [--train 200] [--rows 50] [--time-limit 0.5] [--cap maxfun]
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402

from _bench import package_state, table  # noqa: E402
from _data import load_spam, load_synthetic  # noqa: E402
from skgprobust import BudgetExhaustedWarning, RobustGaussianProcessClassifier  # noqa: E402
from skgprobust import EPGaussianProcessClassifier  # noqa: E402

GAMMA = 0.1
ITERATIONS = (10, 40, 100)


def capped_lbfgsb(limit, cap="maxiter"):
    """An sklearn ``optimizer`` callable: L-BFGS-B with at most ``limit``
    iterations (``cap="maxiter"``) or marginal-likelihood evaluations
    (``cap="maxfun"``, the paper's "epochs")."""

    def optimizer(obj_func, initial_theta, bounds):
        res = minimize(obj_func, initial_theta, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={cap: limit})
        return res.x, res.fun

    return optimizer


def check_ranges(clf, rows, r, rng, label, n_samples=500):
    """Sanity checks: the model's own predict_proba at sampled points of each
    box, and at the reported incumbents, lies within the certified range."""
    problems = []
    for i, x in enumerate(rows):
        P = x + GAMMA * rng.uniform(-1.0, 1.0, (n_samples, len(x)))
        p = clf.predict_proba(np.vstack([P, r.argmin[i], r.argmax[i]]))
        if np.any(p < r.min_lower[i] - 1e-9) or np.any(p > r.max_upper[i] + 1e-9):
            problems.append(f"{label}: row {i}: predict_proba outside the certified range")
        if np.any(r.min_lower[i] > r.min_upper[i] + 1e-12) or np.any(r.max_lower[i] > r.max_upper[i] + 1e-12):
            problems.append(f"{label}: row {i}: certified end beyond the attained value")
    return problems


def run(name, data, kernel, rows, time_limit, iterations, rng, cap="maxiter"):
    X, y, X_test, y_test = data
    pick = rng.choice(len(X_test), size=min(rows, len(X_test)), replace=False)
    out, anomalies = [], []
    for it in iterations:
        for label, cls in (("Laplace", RobustGaussianProcessClassifier), ("EP", EPGaussianProcessClassifier)):
            clf = cls(kernel=kernel, optimizer=capped_lbfgsb(it, cap), random_state=0)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf.fit(X, y)
            fit_s = time.perf_counter() - t0
            acc = float(np.mean(clf.predict(X_test) == y_test))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BudgetExhaustedWarning)
                r = clf.prediction_range(X_test[pick], GAMMA, epsilon=0.01, time_limit=time_limit, random_state=0)
            anomalies += check_ranges(clf, X_test[pick], r, rng, f"{name} {label} {cap}={it}")
            delta = r.max_upper[:, 1] - r.min_lower[:, 1]
            attained = r.max_lower[:, 1] - r.min_upper[:, 1]  # the model's own values in the box
            q1, med, q3 = np.percentile(delta, [25, 50, 75])
            out.append([
                name, str(it), label, f"{fit_s:.1f}", f"{acc:.3f}", f"{med:.4f}", f"[{q1:.4f}, {q3:.4f}]",
                f"{np.median(attained):.4f}",
                f"{r.converged.all(1).mean():.0%}", f"{np.median(r.time):.3f}", str(clf.kernel_),
            ])
            print(" | ".join(out[-1]), flush=True)
    return out, anomalies


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="150 training points, 15 rows, 10 and 40 iterations")
    ap.add_argument("--train", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=0.5)
    ap.add_argument("--skip-spam", action="store_true")
    ap.add_argument("--cap", choices=["maxiter", "maxfun"], default="maxiter",
                    help="limit L-BFGS-B iterations (default) or marginal-likelihood evaluations")
    args = ap.parse_args()
    n_train = args.train or (150 if args.quick else 200)
    rows = args.rows or (15 if args.quick else 50)
    iterations = ITERATIONS[:2] if args.quick else ITERATIONS
    print(package_state())
    print(f"gamma={GAMMA}, N_train={n_train}, rows={rows}, time limit {args.time_limit} s/row, "
          f"optimiser limit: {args.cap}\n")
    t0 = time.perf_counter()
    results, anomalies = run("Synthetic2D", load_synthetic(n_train, np.random.default_rng(0)),
                             ConstantKernel(1.0) * RBF(1.0), rows, args.time_limit, iterations,
                             np.random.default_rng(1), args.cap)
    if not args.skip_spam:
        res, anom = run("Spambase-11", load_spam(n_train, np.random.default_rng(0)),
                        ConstantKernel(1.0) * RBF(np.ones(11)), rows, args.time_limit, iterations,
                        np.random.default_rng(1), args.cap)
        results, anomalies = results + res, anomalies + anom
    print()
    headers = ["data", args.cap, "model", "fit s", "accuracy", "median delta", "quartiles", "attained (median)",
               "converged", "s/row", "kernel"]
    print(table(headers, results))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; {package_state()}")
    print(f"\n## anomalies: {len(anomalies) or 'none'}")
    for a in anomalies:
        print(f"- {a}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
