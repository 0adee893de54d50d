"""
EP vs Laplace: certified robustness of two GP classifiers
=========================================================

Two approximations of the same GP classifier on the paper's Synthetic2D
data: sklearn's Laplace approximation (logistic likelihood,
:class:`~skgprobust.RobustGaussianProcessClassifier`) and Expectation
Propagation with the probit likelihood (``EPGaussianProcessClassifier``).
Both fit their kernel hyperparameters by maximising their own approximate
marginal likelihood, and both get certified probability ranges from the
same bounds (the probit link for EP, paper Prop. 8).

The robustness measure of the paper's Sec. 7.2 is, for the l_inf box T of
radius gamma around a test point, delta = pi_max^U(T) - pi_min^L(T): the
certified upper bound of the largest minus the certified lower bound of
the smallest probability of class 1 over T. Smaller is more robust.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import RobustGaussianProcessClassifier
from skgprobust import EPGaussianProcessClassifier


def synthetic2d(n, rng):
    """Class 0 ~ N((1.5, 0), I), class 1 ~ N((0, 1.5), I)."""
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2))
    X[y == 0, 0] += 1.5
    X[y == 1, 1] += 1.5
    return X, y


rng = np.random.default_rng(0)
X, y = synthetic2d(150, rng)
X_test, y_test = synthetic2d(200, rng)

models = {
    "Laplace (logistic)": RobustGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0),
    "EP (probit)": EPGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0),
}
for name, clf in models.items():
    clf.fit(X, y)
    acc = np.mean(clf.predict(X_test) == y_test)
    print(f"{name:>20}: kernel {clf.kernel_}, test accuracy {acc:.3f}")

# %%
# Certified probability ranges
# ----------------------------
# ``prediction_range`` bounds ``predict_proba`` over the box around each
# row; the two ends used for delta are proven bounds (valid even where the
# budget stops the refinement early).

gamma = 0.1
rows = X_test[:20]
deltas = {}
for name, clf in models.items():
    r = clf.prediction_range(rows, gamma, epsilon=0.01, time_limit=1.0, random_state=0)
    deltas[name] = r.max_upper[:, 1] - r.min_lower[:, 1]
    q1, med, q3 = np.percentile(deltas[name], [25, 50, 75])
    print(f"{name:>20}: delta median {med:.4f} (quartiles {q1:.4f}, {q3:.4f}), "
          f"{r.converged.all(1).mean():.0%} rows converged")

# %%
# Plot
# ----
# Left and middle: P(class 1) of each model (the probit predictive of EP is
# Phi(mu / sqrt(1 + var))). Right: the distribution of delta over the rows.

xx, yy = np.meshgrid(np.linspace(-3, 4.5, 120), np.linspace(-3, 4.5, 120))
grid = np.c_[xx.ravel(), yy.ravel()]
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, (name, clf) in zip(axes, models.items()):
    zz = clf.predict_proba(grid)[:, 1].reshape(xx.shape)
    cs = ax.contourf(xx, yy, zz, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.8)
    ax.contour(xx, yy, zz, levels=[0.5], colors="k", linewidths=1)
    ax.scatter(*X.T, c=y, cmap="RdBu_r", s=8, edgecolors="k", linewidths=0.3)
    ax.scatter(*rows.T, marker="s", s=14, facecolors="none", edgecolors="k")
    ax.set(title=name, xlabel="x0", ylabel="x1")
fig.colorbar(cs, ax=axes[:2], label="P(class 1)")
axes[2].boxplot(list(deltas.values()))
axes[2].set_xticks([1, 2], list(deltas.keys()))
axes[2].set(title=f"delta = pi_max^U - pi_min^L, gamma = {gamma}", ylabel="delta (smaller: more robust)")
plt.show()
