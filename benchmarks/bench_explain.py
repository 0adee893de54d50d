"""explain on Spambase, side by side with LIME (issue 4 benchmark; paper Sec. 7.4).

Data: the UCI Spambase set from ``../shared/data/spambase/`` (4601 e-mails,
57 features, label spam). Split 75/25 (seed 0, stratified), standardised
on the training part; 11 features kept, chosen by an l1-penalised logistic
regression (liblinear) as in the paper: the smallest C on a log grid whose
fit has at least 11 non-zero weights, then the 11 largest ``|weight|``.

Model: a binary ``RobustGaussianProcessClassifier`` with
``ConstantKernel * RBF`` (anisotropic, hyper-parameters fitted by sklearn)
on ``--train`` training points (default 1000, stratified subsample).

Measured for ``--rows`` test rows (default 50) and gamma in {0.02, 1.0}
(standardised units): ``explain`` (certified Delta, epsilon 0.01) seconds
per row (median / max) and the fraction of entries converged; LIME
(``LimeTabularExplainer``, ``discretize_continuous=False``,
``--lime-samples`` samples) seconds per row; per feature, the mean Delta,
the mean LIME weight, the fraction of rows where their signs agree, and
the fraction of rows where our bounds prove the sign of Delta.

Usage: python benchmarks/bench_explain.py [--rows 50] [--train 1000] [--no-lime]
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skgprobust import RobustGaussianProcessClassifier  # noqa: E402
from _bench import table  # noqa: E402
from _data import load_spambase, select_l1  # noqa: E402

GAMMAS = (0.02, 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--lime-samples", type=int, default=5000)
    ap.add_argument("--no-lime", action="store_true")
    args = ap.parse_args()

    Xdf, y = load_spambase()
    X_tr, X_te, y_tr, y_te = train_test_split(Xdf, y, test_size=0.25, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    Z_tr = pd.DataFrame(scaler.transform(X_tr), columns=Xdf.columns)
    Z_te = pd.DataFrame(scaler.transform(X_te), columns=Xdf.columns)
    feats, C = select_l1(Z_tr, y_tr)
    cols = list(Xdf.columns[feats])
    sub, _, y_sub, _ = train_test_split(Z_tr[cols], y_tr, train_size=args.train, random_state=0, stratify=y_tr)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(
            ConstantKernel(1.0) * RBF(np.ones(len(cols))), random_state=0
        ).fit(sub, y_sub)
    t_fit = time.perf_counter() - t0
    rows = Z_te[cols].iloc[: args.rows]
    acc = clf.score(Z_te[cols], y_te)
    print(f"# Spambase: {len(Xdf)} rows; 11 features by l1 logistic regression (C = {C:.3g}): {', '.join(cols)}")
    print(f"# GPC on {args.train} training points: fit {t_fit:.1f} s, test accuracy {acc:.3f}; "
          f"kernel {clf.kernel_}")
    print(f"# {args.rows} test rows; explain epsilon 0.01; threads OMP={os.environ.get('OMP_NUM_THREADS')}")
    summary = []
    for gamma in GAMMAS:
        t0 = time.perf_counter()
        ex = clf.explain(rows, gamma, epsilon=0.01, random_state=0)
        wall = time.perf_counter() - t0
        line = [gamma, f"{np.median(ex.time):.3f}", f"{ex.time.max():.3f}", f"{wall:.1f}",
                f"{ex.converged.mean():.0%}", f"{np.mean(ex.upper - ex.lower):.4f}"]
        per_feature = None
        if not args.no_lime:
            from skgprobust.inspection import compare_with_lime

            t0 = time.perf_counter()
            comp = compare_with_lime(clf, sub, rows, gamma, explanation=ex, num_samples=args.lime_samples,
                                     random_state=0)
            t_lime = (time.perf_counter() - t0) / len(rows)
            line += [f"{t_lime:.3f}", f"{comp.sign_agreement.mean():.0%}", f"{np.nanmedian(comp.rank_correlation):.2f}"]
            per_feature = comp.to_frame()
        summary.append(line)
        if per_feature is not None:
            print(f"\n## gamma = {gamma}: per feature (Delta for the predicted class; LIME weight for the same class)\n")
            print(table(["feature"] + list(per_feature.columns),
                        [[name] + [f"{v:.3g}" for v in r] for name, r in zip(per_feature.index, per_feature.values)]))
    heads = ["gamma", "explain median s/row", "max s/row", "wall s", "converged", "mean bound width"]
    if not args.no_lime:
        heads += ["LIME s/row", "sign agreement (mean over features)", "median Spearman |Delta| vs |LIME|"]
    print("\n## summary\n")
    print(table(heads, summary))


if __name__ == "__main__":
    main()
