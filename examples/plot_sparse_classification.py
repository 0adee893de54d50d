"""
Certified decisions of a sparse GP classifier (probit, EP)
==========================================================

:class:`~skgprobust.SparseGaussianProcessClassifier` fits a binary probit GP
on 5,000 points through 30 inducing inputs, with expectation propagation
(the paper's Sec. 7.3). Its latent mean and variance have the form of an
exact GP over the 30 inducing inputs, so ``certify`` and
``prediction_range`` run over 30 points, whatever the size of the training
set; ``predict_proba`` is the exact probit-Gaussian integral, bounded with
the paper's probit link bounds (Prop. 8).
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import SparseGaussianProcessClassifier

rng = np.random.default_rng(0)
N = 5_000
X = rng.uniform(-3, 3, (N, 2))
y = (np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] + 0.4 * rng.normal(size=N) > 0).astype(int)

kernel = ConstantKernel(4.0) * RBF(1.0)
t0 = time.perf_counter()
clf = SparseGaussianProcessClassifier(kernel, inducing_points=30, inference="laplace", random_state=0).fit(X, y)
# Hyperparameters from the (faster) Laplace fit, then EP with them frozen.
clf = SparseGaussianProcessClassifier(clf.kernel_, inducing_points=30, optimizer=None, random_state=0).fit(X, y)
print(f"fitted in {time.perf_counter() - t0:.1f} s: {clf.kernel_}, training accuracy {clf.score(X, y):.3f}")

# %%
# Certify the decision on boxes of radius gamma around test points
# -----------------------------------------------------------------
# The inputs live in [-3, 3]^2: ``domain`` clips the boxes to it (outside,
# the model extrapolates, and a box reaching out may change class there).
X_test = rng.uniform(-3, 3, (60, 2))
gamma = 0.15
domain = (np.full(2, -3.0), np.full(2, 3.0))
t0 = time.perf_counter()
cert = clf.certify(X_test, gamma, domain=domain, max_iter=300, random_state=0)
print(cert, f"({(time.perf_counter() - t0) / len(X_test) * 1e3:.1f} ms per row)")
r = clf.prediction_range(X_test[:3], gamma, epsilon=0.01, domain=domain, max_iter=300, random_state=0)
for i in range(3):
    print(f"x = {np.round(X_test[i], 2)}: P(class 1) in [{r.min_lower[i, 1]:.3f}, {r.max_upper[i, 1]:.3f}] "
          f"over the box (predict_proba at x: {clf.predict_proba(X_test[i:i + 1])[0, 1]:.3f})")

# %%
# Plot
# ----
g = np.linspace(-3, 3, 150)
G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
P = clf.predict_proba(G)[:, 1].reshape(150, 150)
fig, ax = plt.subplots(figsize=(6.5, 6))
cs = ax.contourf(g, g, P, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.6)
ax.contour(g, g, P, levels=[0.5], colors="k")
fig.colorbar(cs, ax=ax, label="predict_proba, class 1")
Z = clf.inducing_points_
ax.scatter(Z[:, 0], Z[:, 1], marker="x", color="k", label="inducing inputs")
colors = {"robust": "tab:green", "not_robust": "tab:red", "unknown": "tab:gray"}
for s, c in colors.items():
    m = cert.status == s
    for x in X_test[m]:
        lo, hi = np.maximum(x - gamma, -3.0), np.minimum(x + gamma, 3.0)
        ax.add_patch(plt.Rectangle(lo, *(hi - lo), fill=False, color=c, lw=1.2))
    ax.scatter(X_test[m, 0], X_test[m, 1], s=10, color=c, label=f"{s} ({m.sum()})")
ax.set(xlabel="x1", ylabel="x2", title=f"Sparse probit GP (EP, M = 30, N = {N:,}): certified boxes")
ax.legend(fontsize=8, loc="lower left")
plt.tight_layout()
plt.show()
