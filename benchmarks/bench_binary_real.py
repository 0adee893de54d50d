"""Probability ranges of binary GP classifiers fitted on a real data set.

What it measures
----------------
``prediction_range(x, gamma, epsilon=0.01, time_limit=5)`` of binary
classifiers fitted the way users fit them: scikit-learn's breast-cancer data
(569 rows, d = 30, packaged with scikit-learn), standardised on the training
split (75%, stratified, ``random_state=0``), hyperparameters by sklearn's
optimiser (``random_state=0``); kernels ``C * RBF`` (isotropic),
``C * Matern(nu=2.5)`` and, with ``--ard``, ``C * RBF(ARD)`` (a 30-length-scale
fit, ~10 s); ``--ep`` adds the :class:`~skgprobust.EPGaussianProcessClassifier`
(probit, EP) with ``C * RBF``. Rows: the first ``--rows`` test rows, gamma in
{0.05, 0.1, 0.2} (standardised units). Per configuration: % of rows whose
range converged (both ends within epsilon), median and max seconds per row,
median worst gap.

Sanity check ("anomalies", exit status 1): ``predict_proba`` at the centre
and at 200 random points of each box lies inside [min_lower, max_upper].

Measured (session 31, ``--ard --ep``, 10 rows, 1 BLAS thread, load 1-3;
before = ae3aef3, after = the coupled plane bounds (whole mean range, then
three slices of it; six and four references) as the branch and bound's second bound,
``ProbaObjective.tighten``). Fitted kernels: ``23.1**2 * RBF(10.2)``,
``27.2**2 * Matern(15.5, 2.5)``, ``95.3**2 * RBF(ARD)`` (length scales 3.2
to 1e5), EP ``21.1**2 * RBF(10.9)``. % of rows converged, median s/row
(max), median worst gap:

| model | gamma | before | after |
|---|--:|--|--|
| rbf | 0.05 | 80%, 0.009 (5.06), 0.0076 | 100%, 0.010 (0.11), 0.0047 |
| rbf | 0.1 | 30%, 5.01, 0.0161 | 80%, 0.14 (5.01), 0.0094 |
| rbf | 0.2 | 20%, 5.01, 0.0417 | 30%, 5.01, 0.0264 |
| matern2.5 | 0.05 | 80%, 0.014 (5.07), 0.0087 | 100%, 0.014 (0.10), 0.0063 |
| matern2.5 | 0.1 | 30%, 5.01, 0.0169 | 80%, 0.090 (5.02), 0.0088 |
| matern2.5 | 0.2 | 20%, 5.01, 0.0436 | 30%, 5.01, 0.0262 |
| rbf-ard | 0.05 | 60%, 1.82 (5.06), 0.0100 | 100%, 0.049 (0.25), 0.0048 |
| rbf-ard | 0.1 | 30%, 5.01, 0.0186 | 90%, 0.33 (5.02), 0.0097 |
| rbf-ard | 0.2 | 20%, 5.01, 0.0312 | 40%, 5.00, 0.0111 |
| ep-rbf | 0.05 | 90%, 0.012 (5.02), 0.0006 | 100%, 0.007 (0.05), 0.0006 |
| ep-rbf | 0.1 | 80%, 0.007 (5.01), 0.0043 | 90%, 0.012 (5.01), 0.0043 |
| ep-rbf | 0.2 | 40%, 5.01, 0.0135 | 40%, 5.00, 0.0133 |

(after: 992c3df, load ~3 with a helper's hunt running.)

Session 32 (``--ep --ard``, 10 rows, load ~2 with a helper running):
the sliced planes take the variance's tangent at the mean bound's extreme
point, five slices finer toward that end of the mean range
(``SLICE_EDGES``), bounded where the whole-range planes come within
``SLICE_GATE`` = 0.03 of the interval bound. % rows converged, median s/row
(max), median worst gap; "before" is the table above:

| model | gamma | before | after |
|---|--:|--|--|
| rbf | 0.1 | 80%, 0.14 (5.01), 0.0094 | 100%, 0.054 (1.66), 0.0066 |
| rbf | 0.2 | 30%, 5.01, 0.0264 | 40%, 5.01, 0.0145 |
| matern2.5 | 0.1 | 80%, 0.090 (5.02), 0.0088 | 100%, 0.050 (0.37), 0.0072 |
| matern2.5 | 0.2 | 30%, 5.01, 0.0262 | 40%, 5.01, 0.0153 |
| rbf-ard | 0.1 | 90%, 0.33 (5.02), 0.0097 | 90%, 0.77 (5.01), 0.0096 |
| rbf-ard | 0.2 | 40%, 5.00, 0.0111 | 30%, 5.02, 0.0120 |
| ep-rbf | 0.1 | 90%, 0.012 (5.01), 0.0043 | 100%, 0.011 (3.43), 0.0028 |
| ep-rbf | 0.2 | 40%, 5.00, 0.0133 | 40%, 5.01, 0.0117 |

(gamma 0.05: 100% everywhere, gaps within 0.002.) The ARD model (its
length scales 3.2 to 1e5 leave ~10 effective dimensions) gains nothing:
rerun side by side with the session-31 code, gamma 0.2 3-4 of 10 rows
and mean worst gaps 0.0150-0.0154 either way (0.0167 with the slices on
every box, hence the gate).

At gamma 0.2 most rows still do not converge in 5 s (root gaps 0.03-0.04:
mean ranges ~10 wide in 30 dimensions; about 100 splits per second).

How to run
----------
::

    python benchmarks/bench_binary_real.py             # 10 rows
    python benchmarks/bench_binary_real.py --ard --ep  # all models

Single-threaded: BLAS threads are pinned to 1 before numpy is imported.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, Matern  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from _bench import package_state, report_anomalies, table  # noqa: E402
from skgprobust import EPGaussianProcessClassifier, RobustGaussianProcessClassifier  # noqa: E402


def data():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def models(ard, ep, d):
    out = [("rbf", RobustGaussianProcessClassifier, C(1.0) * RBF(1.0)),
           ("matern2.5", RobustGaussianProcessClassifier, C(1.0) * Matern(1.0, nu=2.5))]
    if ard:
        out.append(("rbf-ard", RobustGaussianProcessClassifier, C(1.0) * RBF(np.ones(d))))
    if ep:
        out.append(("ep-rbf", EPGaussianProcessClassifier, C(1.0) * RBF(1.0)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--gammas", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--ard", action="store_true", help="also C * RBF(ARD) (a ~10 s fit)")
    ap.add_argument("--ep", action="store_true", help="also the EP (probit) classifier")
    args = ap.parse_args()
    print(package_state())
    Xtr, Xte, ytr, yte = data()
    X = Xte[: args.rows]
    rng = np.random.default_rng(0)
    rows, anomalies = [], []
    for name, cls, kernel in models(args.ard, args.ep, Xtr.shape[1]):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = cls(kernel, random_state=0).fit(Xtr, ytr)
        fit_s = time.perf_counter() - t
        acc = clf.score(Xte, yte)
        print(f"# {name}: fitted {clf.kernel_} in {fit_s:.1f} s, test accuracy {acc:.3f}")
        for gamma in args.gammas:
            times, conv, gaps = [], [], []
            for x in X:
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = clf.prediction_range(x[None], gamma, epsilon=0.01, time_limit=args.time_limit,
                                             random_state=0)
                times.append(time.perf_counter() - t)
                conv.append(bool(r.converged.all()))
                gaps.append(float(np.max(np.maximum(r.min_upper - r.min_lower, r.max_upper - r.max_lower))))
                P = np.vstack([x, x + gamma * (2 * rng.random((200, len(x))) - 1)])
                p = clf.predict_proba(P)
                if not (np.all(p >= r.min_lower[0] - 0.0) and np.all(p <= r.max_upper[0] + 0.0)):
                    anomalies.append(f"{name} gamma {gamma}: predict_proba outside the certified range")
            rows.append([name, f"{gamma:g}", f"{np.mean(conv):.0%}", f"{np.median(times):.3f}",
                         f"{np.max(times):.2f}", f"{np.median(gaps):.4f}"])
    print(table(["model", "gamma", "converged", "median s/row", "max s/row", "median gap"], rows))
    report_anomalies(anomalies)


if __name__ == "__main__":
    main()
