"""
Certified bounds for a sparse GP regressor (FITC / DTC / VFE)
=============================================================

:class:`~skgprobust.SparseGaussianProcessRegressor` summarises the latent
function by its values at M inducing inputs, so it fits N = 10,000 points
in seconds and predicts in O(M) per point. Its predictive mean and variance
have the same form as the exact GP's with the M inducing inputs in place of
the N training inputs, so ``prediction_range``, ``certify`` and ``explain``
work exactly as for :class:`~skgprobust.RobustGaussianProcessRegressor`, and
their cost per row depends on M, not on N.

The noise is a ``WhiteKernel`` summand, fitted with the other
hyperparameters; as in scikit-learn, the predictive std includes it.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgprobust import SparseGaussianProcessRegressor

rng = np.random.default_rng(0)
N = 10_000
X = rng.uniform(0, 10, (N, 1))
y = np.sin(X[:, 0]) + 0.3 * np.sin(3 * X[:, 0]) + 0.2 * rng.normal(size=N)

kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
models = {}
for approximation in ("vfe", "fitc"):
    t0 = time.perf_counter()
    reg = SparseGaussianProcessRegressor(kernel, inducing_points=15, approximation=approximation, random_state=0)
    reg.fit(X, y)
    models[approximation] = reg
    print(f"{approximation}: fitted in {time.perf_counter() - t0:.1f} s, kernel {reg.kernel_}, "
          f"objective {reg.log_marginal_likelihood_value_:.1f}")

# %%
# Certified ranges of the mean and of the std over boxes of radius gamma
# -----------------------------------------------------------------------
# One box per grid point; the bounds run over the 15 inducing inputs.

reg = models["vfe"]
gamma = 0.25
grid = np.linspace(0, 10, 80).reshape(-1, 1)
t0 = time.perf_counter()
r_mean = reg.prediction_range(grid, gamma, epsilon=1e-3, max_iter=500, random_state=0)
r_std = reg.prediction_range(grid, gamma, epsilon=1e-3, statistic="std", max_iter=500, random_state=0)
print(f"ranges: {(time.perf_counter() - t0) / len(grid) * 1e3:.1f} ms per row, "
      f"converged {r_mean.converged.mean():.0%} (mean), {r_std.converged.mean():.0%} (std)")

# %%
# delta-robustness of the mean
# ----------------------------
delta = 0.3
cert = reg.certify(grid, gamma, delta=delta, max_iter=500, random_state=0)
print(cert)

# %%
# Plot
# ----
mean, std = reg.predict(grid, return_std=True)
fig, ax = plt.subplots(figsize=(8, 5.5))
sub = rng.choice(N, 400, replace=False)
ax.scatter(X[sub, 0], y[sub], s=4, color="0.6", label="training data (400 of 10,000)")
ax.fill_between(grid[:, 0], r_mean.min_lower[:, 0], r_mean.max_upper[:, 0], color="tab:blue", alpha=0.3,
                label=f"certified range of the mean over [x - {gamma}, x + {gamma}]")
ax.plot(grid[:, 0], mean, color="tab:blue", label="predictive mean (VFE)")
ax.plot(grid[:, 0], models["fitc"].predict(grid), color="tab:orange", ls="--", label="predictive mean (FITC)")
ax.plot(grid[:, 0], mean + 2 * r_std.max_upper[:, 0], color="tab:purple", lw=0.8,
        label="mean + 2 x certified max std over the box")
Z = reg.inducing_points_[:, 0]
ax.scatter(Z, reg.predict(reg.inducing_points_), marker="x", color="k", zorder=3, label="inducing inputs")
colors = {"robust": "tab:green", "not_robust": "tab:red", "unknown": "tab:gray"}
base = r_mean.min_lower.min() - 0.4
for s, c in colors.items():
    m = cert.status == s
    ax.scatter(grid[m, 0], np.full(m.sum(), base), marker="|", s=120, color=c, label=f"delta = {delta}: {s} ({m.sum()})")
ax.set(xlabel="x", ylabel="y", title="Sparse GP (M = 15, N = 10,000): certified bands")
ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
plt.tight_layout()
plt.show()
