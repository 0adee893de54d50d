"""Certification demo on built-in scikit-learn data sets (no download).

Run with ``python -m skgprobust.demo``. It fits a two-class GP classifier on
the breast-cancer data (standardised, 8 features) and certifies held-out rows
at several radii, then certifies delta-robustness of a GP regressor on the
diabetes data, and prints both tables.
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from ._gpc import RobustGaussianProcessClassifier
from ._gpr import RobustGaussianProcessRegressor
from .exceptions import BudgetExhaustedWarning


def _table(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    line = "| " + " | ".join(str(h).rjust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(c).rjust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def classification_demo(n_test=60, gammas=(0.02, 0.05, 0.1, 0.2), time_limit=0.5):
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :8]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=n_test, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    kernel = ConstantKernel(1.0) * RBF(np.ones(X.shape[1]))
    clf = RobustGaussianProcessClassifier(kernel=kernel, random_state=0).fit(X_tr, y_tr)
    acc = clf.score(X_te, y_te)
    rows = []
    correct = clf.predict(X_te) == y_te
    for g in gammas:
        t = time.perf_counter()
        cert = clf.certify(X_te, gamma=g, time_limit=time_limit, random_state=0)
        wall = time.perf_counter() - t
        rows.append(
            (
                g,
                f"{cert.robust.mean():.0%}",
                f"{np.mean(cert.status == 'not_robust'):.0%}",
                f"{np.mean(cert.status == 'unknown'):.0%}",
                f"{np.mean(cert.robust & correct):.0%}",
                f"{1000 * np.median(cert.time):.1f}",
                f"{wall:.2f}",
            )
        )
    print(f"Breast cancer, two-class GP classifier (8 standardised features), test accuracy {acc:.3f}")
    print(f"kernel: {clf.kernel_}")
    header = ("gamma", "robust", "not robust", "unknown", "certified acc.", "median ms/row", "wall s")
    print(_table(header, rows))


def regression_demo(n_test=30, gamma=0.1, delta=8.0, time_limit=0.5):
    X, y = load_diabetes(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=n_test, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    kernel = ConstantKernel(1.0) * RBF(np.full(X.shape[1], 3.0)) + WhiteKernel(0.5)
    reg = RobustGaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0).fit(X_tr, y_tr)
    rng = reg.prediction_range(X_te[:5], gamma=gamma, epsilon=0.5, time_limit=time_limit, random_state=0)
    cert = reg.certify(X_te, gamma=gamma, delta=delta, time_limit=time_limit, random_state=0)
    print(f"\nDiabetes, GP regressor (10 standardised features), R^2 {reg.score(X_te, y_te):.3f}")
    print(f"Certified range of the predicted mean over boxes of radius {gamma} (first 5 test rows):")
    mean = reg.predict(X_te[:5])
    rows = [
        (i, f"{mean[i]:.2f}", f"[{rng.min_lower[i, 0]:.2f}, {rng.min_upper[i, 0]:.2f}]",
         f"[{rng.max_lower[i, 0]:.2f}, {rng.max_upper[i, 0]:.2f}]", bool(rng.converged[i, 0]))
        for i in range(5)
    ]
    print(_table(("row", "mean(x*)", "min in", "max in", "converged"), rows))
    counts = {s: int(np.sum(cert.status == s)) for s in ("robust", "not_robust", "unknown")}
    print(f"delta-robustness (|mean(x) - mean(x*)| <= {delta}) over {len(X_te)} test rows: {counts}")


def main():
    warnings.filterwarnings("ignore", category=BudgetExhaustedWarning)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)  # hyper-parameter fit hitting bounds
    # These models are small (a few hundred points): BLAS threads only add
    # overhead, and on a loaded machine OpenBLAS oversubscription made this
    # demo 2.5-7x slower (12 s pinned, 31 s unpinned at load ~3, 133 s at ~6).
    with threadpool_limits(limits=1):
        classification_demo()
        regression_demo()


if __name__ == "__main__":
    main()
