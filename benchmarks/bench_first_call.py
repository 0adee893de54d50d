"""First-call time: the per-fit state a model builds on its first
``prediction_range`` / ``certify`` call (triangular factors' inverses and
norms, the variance bound's spectrum and certificates; cached for every later
call), on models the size users fit.

Each model is fitted (not timed), then one call with ``max_iter=1`` on one
row is timed (its bound-model build dominates), then a second identical call
(the cached state: what every later call pays). Columns: first call s,
second call s. Models:

* regressors: ``make_friedman1`` (d = 8, noise 0.5), hyperparameters fitted by
  sklearn on the first 300 rows and frozen, ``normalize_y=True``, N rows, the
  std range (``statistic="std"``, gamma = 2% of each feature's std);
* a binary Laplace classifier (``make_classification``, d = 8, N rows,
  ``1.0 * RBF(ones(8))`` fitted on the first 300 rows and frozen):
  probability range;
* the 10-class one-vs-rest digits classifier of ``bench_many_classes.py``
  (pixels / 16, 1000 training rows, ``C(20) * RBF(2.5)``): ten latent
  variances, probability range.

``--sizes`` sets N (default 1000 2000 4000). Run against any checkout:
``PYTHONPATH=<checkout> SKGPROBUST_BENCH_OTHER_PACKAGE=1 python
benchmarks/bench_first_call.py``.

Measured (session 26, AMD EPYC, 1 BLAS thread, load average 2-3 from one
other job; before = e12a102 from a worktree, after = the set-up change:
eigenvalues without eigenvectors where the spectral split is not used,
LAPACK trtri for L^-1, trmm for the triangular residual products, the
Collatz-Wielandt norm of |L| once per fit instead of three times, s_err
without the |A|^T |A| product; run one after the other):

| model | first call s before | after | second call s before | after |
|---|--:|--:|--:|--:|
| regressor std, N=1000 | 0.53 | 0.31 | 0.016 | 0.012 |
| regressor std, N=2000 | 2.80 | 1.64 | 0.030 | 0.056 |
| regressor std, N=4000 | 22.87 | 11.82 | 0.181 | 0.099 |
| binary GPC proba, N=1000 | 0.40 | 0.22 | 0.009 | 0.007 |
| binary GPC proba, N=2000 | 3.65 | 1.92 | 0.067 | 0.033 |
| binary GPC proba, N=4000 | 35.15 | 16.16 | 0.234 | 0.239 |
| 10-class digits OvR proba, N=1000 | 20.28 | 14.98 | 12.77 | 12.49 |

(The digits row's second call is the root bounds of 20 probability
objectives, one split: a per-row cost, not set-up; its set-up is the
difference, 7.5 -> 2.5 s.) The set-up of the regressor at N = 3000
(cProfile): 11.6 s before, of which eigh 3.8 s, three N^3 products 3.8 s,
Collatz-Wielandt norms 1.7 s (5 calls), the s_err product 0.6 s.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits, make_classification, make_friedman1  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, WhiteKernel  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C  # noqa: E402

from _bench import package_state, table  # noqa: E402
from skgprobust import RobustGaussianProcessClassifier, RobustGaussianProcessRegressor  # noqa: E402

warnings.simplefilter("ignore")


def regressor(n):
    X, y = make_friedman1(n_samples=n + 1, n_features=8, noise=0.5, random_state=0)
    g = RobustGaussianProcessRegressor(C(10.0) * RBF(np.ones(8)) + WhiteKernel(0.25), normalize_y=True,
                                       random_state=0).fit(X[:300], y[:300])
    m = RobustGaussianProcessRegressor(g.kernel_, normalize_y=True, optimizer=None).fit(X[:n], y[:n])
    return m, X[n:], 0.02 * X[:n].std(0), dict(statistic="std")


def binary(n):
    X, y = make_classification(n_samples=n + 1, n_features=8, n_informative=5, random_state=0)
    g = RobustGaussianProcessClassifier(1.0 * RBF(np.ones(8)), random_state=0).fit(X[:300], y[:300])
    m = RobustGaussianProcessClassifier(g.kernel_, optimizer=None).fit(X[:n], y[:n])
    return m, X[n:], 0.02 * X[:n].std(0), {}


def digits():
    D = load_digits()
    X, y = D.data / 16.0, D.target
    m = RobustGaussianProcessClassifier(C(20.0) * RBF(2.5), optimizer=None).fit(X[:1000], y[:1000])
    return m, X[1000:1001], 0.05, dict(domain=(0.0, 1.0))


def timed(model, x, gamma, kw):
    t = time.perf_counter()
    model.prediction_range(x, gamma, max_iter=1, **kw)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    args = ap.parse_args()
    print(package_state())
    rows = []
    cases = [(f"regressor std, N={n}", lambda n=n: regressor(n)) for n in args.sizes]
    cases += [(f"binary GPC proba, N={n}", lambda n=n: binary(n)) for n in args.sizes]
    cases += [("10-class digits OvR proba, N=1000", digits)]
    for name, make in cases:
        model, x, gamma, kw = make()
        first = timed(model, x, gamma, kw)
        second = timed(model, x, gamma, kw)
        rows.append([name, f"{first:.2f}", f"{second:.3f}"])
        print(rows[-1], flush=True)
    print(table(["model", "first call s", "second call s"], rows))


if __name__ == "__main__":
    main()
