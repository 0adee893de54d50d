"""Split rule of the branch and bound: ours vs the paper's random coordinate.

Boxes split until a decision (proof or counterexample) on the hardest rows of
the certify benchmark model (two-class GPC, make_classification with 11
features, ConstantKernel(30) * RBF(2.0 per feature), 1000 training rows),
with three rules for choosing the coordinate to bisect:

* ``score`` (default): the coordinate whose width contributes most to the
  looseness of the box's relaxation (sum_i |w_i psi'_i| times its share of
  the range of phi_i), tie-broken by relative width;
* ``widest``: the widest coordinate (relative to the root box);
* ``random``: a uniformly random coordinate, as in the paper's Alg. 1.

Run: ``python benchmarks/bench_split_rule.py`` (``--quick`` for fewer rows).
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # before numpy: one BLAS thread (set them to measure others)

import argparse
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.preprocessing import StandardScaler

from skgprobust import RobustGaussianProcessClassifier
from skgprobust._engine._bnb import BranchAndBound
from skgprobust._bounds._mean import AffineMean
from skgprobust._engine._latent import from_binary_classifier
from skgprobust._engine._search import local_search


class _Widest(BranchAndBound):
    @staticmethod
    def _split_coordinate(lo, hi, score):
        return int(np.argmax(np.where(score < 0, -np.inf, hi - lo)))


class _Random(BranchAndBound):
    rng = np.random.default_rng(0)

    @staticmethod
    def _split_coordinate(lo, hi, score):
        return int(_Random.rng.choice(np.flatnonzero((score >= 0) & (hi > lo))))


RULES = {"score": BranchAndBound, "widest": _Widest, "random": _Random}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-splits", type=int, default=6000)
    args = ap.parse_args()
    X, y = make_classification(n_samples=1200, n_features=11, n_informative=8, random_state=1)
    X = StandardScaler().fit(X[:1000]).transform(X)
    clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(30.0) * RBF(np.full(11, 2.0)), optimizer=None)
    clf.fit(X[:1000], y[:1000])
    model = from_binary_classifier(clf.base_estimator_)
    f = AffineMean(model.adapter, model.weights[:, 0], 0.0)
    X_test = X[1000:]
    n_rows = 8 if args.quick else 20
    print("| gamma | rule | rows decided | median splits | mean splits | total s |")
    print("|------:|------|-------------:|--------------:|------------:|--------:|")
    for gamma in (0.1, 0.2):
        # The hardest rows: those whose root bound does not decide.
        hard = []
        for i, x in enumerate(X_test):
            g = f if f.value(x[None])[0] > 0 else f.negated()
            if g.bound((x - gamma)[None], (x + gamma)[None]).lower[0] <= 0:
                hard.append((x, g))
        hard = hard[:n_rows]
        for name, cls in RULES.items():
            splits, decided, t0 = [], 0, time.perf_counter()
            for x, g in hard:
                st = cls(g, x - gamma, x + gamma, candidates=x, target=0.0)
                xs, _ = local_search(g, st.lo, st.hi, np.vstack([x, st.best_x]))
                st.offer(xs[None])
                n = 0
                while st.lower <= 0 and st.best_f > 0 and not st.exhausted and n < args.max_splits:
                    n += st.step()
                decided += st.lower > 0 or st.best_f <= 0
                splits.append(n)
            print(
                f"| {gamma} | {name} | {decided}/{len(hard)} | {np.median(splits):.0f} | "
                f"{np.mean(splits):.0f} | {time.perf_counter() - t0:.1f} |"
            )


if __name__ == "__main__":
    main()
