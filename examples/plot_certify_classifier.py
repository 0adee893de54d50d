"""
Certify a two-class GP classifier
=================================

Fit a :class:`~skgprobust.RobustGaussianProcessClassifier` on the two-moons
data and ask, for each test point, whether its predicted class can change
anywhere in the l_inf box of radius ``gamma`` around it.

Every row gets one of three answers:

* ``"robust"`` -- a proof: the lower bound of the latent margin towards the
  predicted class stays positive over the whole box;
* ``"not_robust"`` -- a counterexample inside the box, re-checked with the
  model's own ``predict``;
* ``"unknown"`` -- the budget (``max_iter`` / ``time_limit``) ran out first.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import RobustGaussianProcessClassifier

X, y = make_moons(n_samples=120, noise=0.25, random_state=0)
X_train, y_train, X_test = X[:80], y[:80], X[80:]

clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0)
clf.fit(X_train, y_train)
print("fitted kernel:", clf.kernel_)

# %%
# Certify the test points
# -----------------------
# ``gamma`` is the half-width of the box per feature, in the units of X.
# ``max_iter`` caps the boxes split per row, so the run time is bounded.

gamma = 0.1
cert = clf.certify(X_test, gamma=gamma, max_iter=500, random_state=0)
print(cert)
for status in ("robust", "not_robust", "unknown"):
    print(f"{status:>10}: {np.sum(cert.status == status)} rows")

# %%
# A counterexample is a point of the box where ``predict`` differs:

i = int(np.flatnonzero(cert.status == "not_robust")[0])
print("row", i, "predicted", clf.predict(X_test[i : i + 1])[0], "at", X_test[i])
print("counterexample", cert.counterexample[i], "predicted", clf.predict(cert.counterexample[i : i + 1])[0])
print("distance (l_inf):", np.abs(cert.counterexample[i] - X_test[i]).max(), "<= gamma =", gamma)

# %%
# ``bound`` is the proven lower bound of the latent margin over the box
# (robust iff > 0); ``n_iter`` and ``time`` say what each row cost.
print("bounds of the first rows:", np.round(cert.bound[:5], 3))
print("median boxes split:", np.median(cert.n_iter), " median ms/row:", 1000 * np.median(cert.time))

# %%
# Plot
# ----
# The background is the predicted class; each test point is drawn with its
# certified box. Points near the decision boundary cannot be certified, and
# there the counterexamples (crosses) lie across the boundary.

xx, yy = np.meshgrid(np.linspace(-1.8, 2.8, 200), np.linspace(-1.3, 1.8, 200))
zz = clf.predict_proba(np.c_[xx.ravel(), yy.ravel()])[:, 1].reshape(xx.shape)

fig, ax = plt.subplots(figsize=(7, 5))
ax.contourf(xx, yy, zz, levels=[0, 0.5, 1], colors=["#dbe9f6", "#fde0c5"], alpha=0.8)
ax.contour(xx, yy, zz, levels=[0.5], colors="k", linewidths=1)
colors = {"robust": "tab:green", "not_robust": "tab:red", "unknown": "tab:gray"}
for x, s in zip(X_test, cert.status):
    ax.add_patch(Rectangle(x - gamma, 2 * gamma, 2 * gamma, fill=False, ec=colors[s], lw=1))
for s, c in colors.items():
    m = cert.status == s
    ax.scatter(*X_test[m].T, s=14, color=c, label=f"{s} ({m.sum()})")
bad = cert.status == "not_robust"
ax.scatter(*cert.counterexample[bad].T, marker="x", color="tab:red", s=30, label="counterexamples")
ax.set(title=f"Certified l_inf robustness, gamma = {gamma}", xlabel="x0", ylabel="x1")
ax.legend(loc="lower left", fontsize=8)
plt.tight_layout()
plt.show()
