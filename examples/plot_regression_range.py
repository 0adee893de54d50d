"""
Certified prediction ranges and delta-robustness of a GP regressor
===================================================================

For a fitted :class:`~skgprobust.RobustGaussianProcessRegressor`,
``prediction_range(X, gamma, epsilon=...)`` returns, for every row, proven
bounds on the minimum and the maximum of the predictive mean over the box
``[x - gamma, x + gamma]``:

``min_lower <= min mean <= min_upper`` and ``max_lower <= max mean <= max_upper``,

refined until both gaps are at most ``epsilon`` (``converged``) or the budget
runs out (the bounds are still valid, only wider). ``certify(X, gamma,
delta=...)`` proves ``|mean(x) - mean(x*)| <= delta`` on the box, or returns a
counterexample.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgprobust import RobustGaussianProcessRegressor

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 10, 40)).reshape(-1, 1)
y = np.sin(X[:, 0]) + 0.3 * np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=40)

reg = RobustGaussianProcessRegressor(kernel=ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.01), random_state=0)
reg.fit(X, y)
print("fitted kernel:", reg.kernel_)

# %%
# Ranges over boxes of radius gamma
# ---------------------------------
# One box per grid point. The band between the certified minimum and
# maximum contains every value the mean takes within ``gamma`` of ``x``.

gamma = 0.25
grid = np.linspace(0, 10, 120).reshape(-1, 1)
r = reg.prediction_range(grid, gamma, epsilon=1e-3, max_iter=500, random_state=0)
print(r)
print("largest gaps:", (r.min_upper - r.min_lower).max(), (r.max_upper - r.max_lower).max())

# %%
# ``argmin`` / ``argmax`` are points of the box where ``min_upper`` /
# ``max_lower`` are attained (the model's own values there):
i = 60
print(f"x = {grid[i, 0]:.3f}: min in [{r.min_lower[i, 0]:.4f}, {r.min_upper[i, 0]:.4f}] at x = {r.argmin[i, 0, 0]:.3f}")
print("predict(argmin) =", reg.predict(r.argmin[i, 0][None])[0])

# %%
# delta-robustness
# ----------------
# Which inputs can move the mean by more than ``delta`` within the box?

delta = 0.3
cert = reg.certify(grid, gamma, delta=delta, max_iter=500, random_state=0)
print(cert)

# %%
# Plot
# ----
mean = reg.predict(grid)
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.fill_between(grid[:, 0], r.min_lower[:, 0], r.max_upper[:, 0], color="tab:blue", alpha=0.25,
                label=f"certified range over [x - {gamma}, x + {gamma}]")
ax.plot(grid[:, 0], mean, color="tab:blue", label="predictive mean")
ax.scatter(X[:, 0], y, s=12, color="k", label="training data")
colors = {"robust": "tab:green", "not_robust": "tab:red", "unknown": "tab:gray"}
base = r.min_lower.min() - 0.25
for s, c in colors.items():
    m = cert.status == s
    ax.scatter(grid[m, 0], np.full(m.sum(), base), marker="|", s=120, color=c,
               label=f"delta = {delta}: {s} ({m.sum()})")
ax.set(xlabel="x", ylabel="y", title="Certified prediction band and delta-robustness", ylim=(base - 0.2, 2.2))
ax.legend(fontsize=8, loc="upper right", ncol=2)
plt.tight_layout()
plt.show()
