"""
Safe active learning with a multi-output GP, and safety proven over boxes
=========================================================================

The sin & sigmoid toy problem of Li, Rakitsch and Zimmer (AISTATS 2022):
two outputs that share a ``sin(10 x)`` component, observed one at a time with
noise 0.4, and a safety value h(x) = exp(-(x - 0.1)^2 / 2) observed with noise
0.05. A point may be queried only when the safety GP gives
P(h(x) > 0.7) > 0.95.

:class:`~skgprobust.active.SafeActiveLearner` queries the (x, output) pair of
largest predictive entropy among the safe pool points, refitting the
multi-output GP (a linear model of coregionalisation) and the safety GP
after each query. Beyond the pointwise rule of the paper,
:meth:`~skgprobust.active.SafeActiveLearner.certified_safe_fraction` proves
on which cells of the domain *every* point is safe under the safety model:
the green cells below are certificates, not samples.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgprobust import MultiOutputGaussianProcessRegressor, RobustGaussianProcessRegressor
from skgprobust.active import SafeActiveLearner

rng = np.random.RandomState(0)


def f(x):
    s = 1.0 / (1.0 + np.exp(-2 * x))
    return np.c_[np.sin(10 * x) + s, np.sin(10 * x) - s]


def h(x):
    return np.exp(-((x - 0.1) ** 2) / 2)


def oracle(x, output):
    y = f(x)[0] + 0.4 * rng.randn(2)
    return y[output], float(h(x[0]) + 0.05 * rng.randn())


pool = rng.uniform(-2, 2, (300, 1))
start = pool[h(pool[:, 0]) > 0.8][:12]
Y0 = f(start[:, 0]) + 0.4 * rng.randn(12, 2)
Y0[:6, 1] = np.nan  # outputs are observed one at a time
Y0[6:, 0] = np.nan
z0 = h(start[:, 0]) + 0.05 * rng.randn(12)

learner = SafeActiveLearner(
    MultiOutputGaussianProcessRegressor(RBF(0.5, (0.05, 10)), n_latent=2, normalize_y=True,
                                        noise_level_bounds=(1e-2, 1.0)),
    RobustGaussianProcessRegressor(ConstantKernel(1.0, (0.1, 10)) * RBF(1.0, (0.3, 10))
                                   + WhiteKernel(0.0025, (1e-4, 0.1))),
    threshold=0.7, safe_side="above", delta=0.05, random_state=0,
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # convergence warnings of the small fits
    learner.fit(start, Y0, z0)
    history = learner.run(oracle, pool, 15)
    fraction, centers, cells = learner.certified_safe_fraction([-2.0], [2.0], cells=40, time_limit=0.5,
                                                               random_state=0)

print(f"safe queries: {history.safe.sum()} of {len(history)}")
print(f"certified-safe fraction of [-2, 2]: {fraction:.3f} "
      f"(true safe interval: {2 * np.sqrt(-2 * np.log(0.7)) / 4:.3f} of the domain)")

# %%
# The fitted outputs, the queries, and the safety model with its certificates.
grid = np.linspace(-2, 2, 400)[:, None]
mean, std = learner.model_.predict(grid, return_std=True)
p_safe = learner.safety_probability(grid)
fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
for p, color in ((0, "C0"), (1, "C1")):
    ax1.plot(grid[:, 0], f(grid[:, 0])[:, p], color=color, lw=1, ls="--")
    ax1.plot(grid[:, 0], mean[:, p], color=color, label=f"output {p}")
    ax1.fill_between(grid[:, 0], mean[:, p] - 2 * std[:, p], mean[:, p] + 2 * std[:, p], color=color, alpha=0.15)
    q = history.output == p
    ax1.plot(history.X[q, 0], np.zeros(q.sum()) - 2.5, "|", color=color, ms=12)
ax1.set_ylabel("outputs (dashed: truth)")
ax1.legend(loc="upper left")
ax2.plot(grid[:, 0], p_safe, color="k", label="P(h > 0.7) under the safety GP")
ax2.axhline(0.95, color="k", lw=0.5, ls=":")
for c, status in zip(centers[:, 0], cells.status):
    if status == "robust":
        ax2.axvspan(c - 0.05, c + 0.05, color="C2", alpha=0.3, lw=0)
ax2.set_xlabel("x")
ax2.set_ylabel("safety")
ax2.set_title("green: cells where every point is proven safe")
ax2.legend(loc="upper left")
fig.tight_layout()
plt.show()
