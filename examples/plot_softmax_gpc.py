"""
Softmax multi-class GP classification with certified decisions
==============================================================

A :class:`SoftmaxGaussianProcessClassifier` has one latent GP per class and
a softmax likelihood (Laplace approximation, GPML Alg. 3.3). Its predictive
latent covariance between the classes is *not* diagonal; the model reduces
it to an equivalent diagonal one (exactly for three classes, by the shift
invariance of the softmax) and computes ``predict_proba`` with a fixed,
deterministic node rule whose error is proven per row
(``predict_proba_error``). The rule can be bounded exactly over a box, so
``certify`` proves that the argmax of those very numbers does not change
over a box around each test point.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle
from sklearn.datasets import make_blobs
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import SoftmaxGaussianProcessClassifier

X, y = make_blobs(n_samples=90, centers=3, cluster_std=1.6, random_state=3)
X_train, y_train, X_test = X[:60], y[:60], X[60:72]

# Fixed hyperparameters keep the example fast (fit them with the default
# optimizer="fmin_l_bfgs_b" to maximise the Laplace marginal likelihood).
clf = SoftmaxGaussianProcessClassifier(ConstantKernel(4.0) * RBF(2.0), optimizer=None, proba_tol=0.05)
clf.fit(X_train, y_train)
print("fitted kernel:", clf.kernel_)
print("training accuracy:", clf.score(X_train, y_train))

# %%
# The predictive latent covariance couples the classes
# ----------------------------------------------------
# With a shared kernel, the common shift of the latents keeps its prior
# variance (``Sigma 1 = k(x, x) 1``), and near the training data the classes'
# latents are correlated (here 0.1-0.2; 0.07-0.39 over the twelve test
# points); far from the data they return to the prior's independent classes.

mean, cov = clf.latent_mean_and_covariance(X_test[:1])
sd = np.sqrt(np.diag(cov[0]))
print("latent correlations at a test point:\n", np.round(cov[0] / np.outer(sd, sd), 2))
print("proven |predict_proba - E[softmax(f)]| (full covariance):", clf.predict_proba_error(X_test[:3]))

# %%
# Certify the test points
# -----------------------

gamma = 0.15
cert = clf.certify(X_test, gamma=gamma, max_iter=30, random_state=0)
print(cert)

xx, yy = np.meshgrid(np.linspace(X[:, 0].min() - 1, X[:, 0].max() + 1, 25),
                     np.linspace(X[:, 1].min() - 1, X[:, 1].max() + 1, 25))
P = clf.predict_proba(np.c_[xx.ravel(), yy.ravel()])

fig, ax = plt.subplots(figsize=(6, 5))
ax.contourf(xx, yy, P.max(axis=1).reshape(xx.shape), levels=10, cmap="Greys", alpha=0.6)
ax.contour(xx, yy, P.argmax(axis=1).reshape(xx.shape), levels=[0.5, 1.5], colors="k", linewidths=1)
ax.scatter(X_train[:, 0], X_train[:, 1], c=y_train, cmap="viridis", s=15, edgecolors="none")
colours = {"robust": "tab:green", "not_robust": "tab:red", "unknown": "tab:orange"}
for x, status in zip(X_test, cert.status):
    ax.add_patch(Rectangle(x - gamma, 2 * gamma, 2 * gamma, fill=False, edgecolor=colours[status], linewidth=1.5))
ax.set_title(f"certify at gamma={gamma}: green robust, red not robust, orange unknown")
plt.tight_layout()
plt.show()
