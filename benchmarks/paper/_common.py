"""Configurations, model fitting and output helpers shared by the figure modules."""

import csv
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _data  # noqa: F401  (puts benchmarks/ on sys.path)
from _bench import package_state, table  # noqa: E402,F401
from bench_ep import capped_lbfgsb  # noqa: E402,F401

from ._plot import NOT_OFFLINE, pyplot  # noqa: F401  (re-exported for the figure modules)


@dataclass
class Config:
    """One size of the study. ``full`` follows the paper where the data allow."""

    name: str
    n_synth: int  # Synthetic2D training points (paper: 1000)
    n_spam: int  # Spambase training points (paper: all, ~3450)
    n_mnist: int  # MNIST 3-vs-8 training images (paper: 1000; 800 available here)
    rows: int  # test points per distribution (paper: 50)
    iterations: tuple  # optimiser iterations of Fig. 3 (paper: 10, 40, 100 "epochs")
    n_gammas: int  # points of each Fig. 2 curve
    time_limit: float  # seconds per certified range (per row, per gamma)
    sparse_n: tuple  # Fig. 4 training sizes
    sparse_m: tuple  # Fig. 4 inducing points
    sparse_large: tuple = ()  # Fig. 4 extra: Synthetic2D training sizes for the large study
    beyond_rows: int = 20  # test images certified with all 196 pixels free
    beyond_time: float = 2.0  # seconds per image
    fig6_images: int = 6
    fig6_train: int = 600  # MNIST 3/5/8 training images for the softmax model
    fig6_time: float = 0.05  # seconds per one-sided box of the Delta heat maps
    lime_samples: int = 5000
    fig6_lime: int = 1000  # LIME samples per image of Fig. 6 (the softmax predict_proba is slow)
    paper_variance: bool = True  # Fig. 2 Synthetic2D curve with variance_bound="paper" too
    extra: dict = field(default_factory=dict)


CONFIGS = {
    "tiny": Config("tiny", n_synth=60, n_spam=80, n_mnist=80, rows=3, iterations=(10, 40), n_gammas=3,
                   time_limit=0.1, sparse_n=(80,), sparse_m=(20,), beyond_rows=3, beyond_time=0.3,
                   fig6_images=1, fig6_train=60, fig6_time=0.005, lime_samples=300, fig6_lime=200),
    "quick": Config("quick", n_synth=200, n_spam=200, n_mnist=200, rows=10, iterations=(10, 40, 100), n_gammas=6,
                    time_limit=0.3, sparse_n=(200, 400), sparse_m=(50, 100), sparse_large=(2000,), beyond_rows=10, beyond_time=1.0,
                    fig6_images=2, fig6_train=150, fig6_time=0.01, lime_samples=1000, fig6_lime=300),
    "full": Config("full", n_synth=1000, n_spam=1000, n_mnist=800, rows=50, iterations=(10, 40, 100), n_gammas=12,
                   time_limit=2.0, sparse_n=(250, 500, 800), sparse_m=(100, 300, 500), sparse_large=(5000, 20000),
                   beyond_rows=50, beyond_time=5.0, fig6_images=6, fig6_train=600, fig6_time=0.05,
                   lime_samples=5000, fig6_lime=1000),
}


def fit(model, X, y):
    """Fit with warnings silenced (convergence warnings of capped optimisers); returns (model, seconds)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, time.perf_counter() - t0


def quiet(func, *args, **kwargs):
    """Call with BudgetExhaustedWarning (and other warnings) silenced; returns (value, seconds)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = func(*args, **kwargs)
    return out, time.perf_counter() - t0


def write_csv(path, headers, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(headers)
        w.writerows(rows)


def report(name, headers, rows, out):
    """Write ``name``.csv and print the table."""
    write_csv(os.path.join(out, f"{name}.csv"), headers, rows)
    print(f"\n## {name}\n")
    print(table(headers, [[_fmt(c) for c in r] for r in rows]), flush=True)


def _fmt(c):
    if isinstance(c, (float, np.floating)):
        return f"{c:.4g}"
    return str(c)


def sampled_outside(clf, x, r_min, r_max, col, gamma, features=None, domain=None, rng=None, n=200):
    """Sanity check: predict_proba of column ``col`` at ``n`` sampled points of
    the box lies within [r_min, r_max] (certified outer ends). Returns the
    number of samples outside (should be 0)."""
    rng = np.random.default_rng(0) if rng is None else rng
    P = np.repeat(np.asarray(x, dtype=np.float64)[None], n, axis=0)
    cols = np.arange(len(x)) if features is None else np.asarray(features)
    P[:, cols] += gamma * rng.uniform(-1.0, 1.0, (n, len(cols)))
    if domain is not None:
        P = np.clip(P, *domain)
    p = clf.predict_proba(P)[:, col]
    return int(np.sum((p < r_min) | (p > r_max)))
