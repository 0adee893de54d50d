"""
Robustness curves on the Synthetic2D data set
=============================================

The two-dimensional benchmark of Patane et al. (JMLR 2022): class 0 is a
standard normal shifted by 1.5 along the first axis, class 1 one shifted by
1.5 along the second. A :class:`~skgprobust.RobustGaussianProcessClassifier`
with a ``C * RBF`` kernel is fitted on 200 points.

For a test point ``x*`` and a radius ``gamma``, ``prediction_range`` returns
certified intervals for

* ``pi_min`` -- the smallest value of the predicted class's probability over
  the box ``[x* - gamma, x* + gamma]``, and
* ``pi_max`` -- the largest one.

Drawn over a grid of radii, with the probability that an attack (multi-start
projected gradient descent, :func:`~skgprobust.inspection.pgd`) reaches, this is
the paper's Fig. 2. An attack only shows how low the probability *can* be
pushed; the lower edge of the ``pi_min`` band is a *proof* that no point of
the box goes lower.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import RobustGaussianProcessClassifier
from skgprobust.inspection import plot_decision_map, plot_robustness_curve, robustness_curve

SHIFT = 1.5  # as in benchmarks/bench_proba.py


def synthetic2d(n, rng):
    """Synthetic2D: class 0 ~ N((SHIFT, 0), I), class 1 ~ N((0, SHIFT), I)."""
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2))
    X[y == 0, 0] += SHIFT
    X[y == 1, 1] += SHIFT
    return X, y


rng = np.random.default_rng(0)
X_train, y_train = synthetic2d(200, rng)
X_test, y_test = synthetic2d(30, rng)

clf = RobustGaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), random_state=0)
clf.fit(X_train, y_train)
print("fitted kernel:", clf.kernel_)
print("test accuracy:", clf.score(X_test, y_test))

# %%
# Certified bounds over a grid of radii
# -------------------------------------
# Two test points: a close call (the model gives its class about 65%) and a
# more confident one (about 85%). ``robustness_curve`` returns the numbers that
# :func:`~skgprobust.inspection.plot_robustness_curve` draws: for each gamma,
# ``min_lower <= pi_min <= min_upper`` and ``max_lower <= pi_max <= max_upper``
# (proven; ``min_upper`` and ``max_lower`` are values the model attains in
# the box), refined until each interval is narrower than ``epsilon``.

p_pred = clf.predict_proba(X_test).max(axis=1)
points = {
    "close call": int(np.argmin(np.abs(p_pred - 0.65))),
    "confident": int(np.argmin(np.abs(p_pred - 0.85))),
}
gammas = np.array([0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
settings = dict(epsilon=0.01, attack="pgd", random_state=0, max_iter=500)

for name, i in points.items():
    c = robustness_curve(clf, X_test[i], gammas, **settings)
    print(f"\ntest point {i} ({name}), x* = {np.round(X_test[i], 3)}, class {c['label']}")
    print(f"{'gamma':>6} {'pi_min in':>17} {'pi_max in':>17} {'pgd':>7}")
    for j, g in enumerate(c["gamma"]):
        print(f"{g:6.2f}   [{c['min_lower'][j]:.3f}, {c['min_upper'][j]:.3f}]   "
              f"[{c['max_lower'][j]:.3f}, {c['max_upper'][j]:.3f}] {c['attack'][j]:7.3f}")

# %%
# Where the lower bound of ``pi_min`` stays above 0.5, the predicted class
# is proven not to change in the box; where ``min_upper`` (or the attack)
# drops below 0.5, a point of the box is classified differently.

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (name, i) in zip(axes, points.items()):
    plot_robustness_curve(clf, X_test[i], gammas, ax=ax, **settings)
    ax.axhline(0.5, color="k", lw=0.8, ls=":")
    ax.set_title(f"test point {i} ({name})")
plt.tight_layout()

# %%
# Certifying a whole test set at one radius
# -----------------------------------------
# ``certify`` answers the yes/no question for every test point: robust
# (proof), not robust (a counterexample re-checked with ``predict``) or
# unknown (budget). :func:`~skgprobust.inspection.plot_decision_map` draws the
# answers, with each point's box, over the model's probability map.

gamma = 0.3
cert = clf.certify(X_test, gamma, max_iter=500, random_state=0)
print(cert)
for status in ("robust", "not_robust", "unknown"):
    print(f"{status:>10}: {np.sum(cert.status == status)} of {len(X_test)}")

fig, ax = plt.subplots(figsize=(7, 5.5))
plot_decision_map(clf, X_test, cert, gamma=gamma, ax=ax)
ax.set(title=f"Synthetic2D: certification at gamma = {gamma}", xlabel="x0", ylabel="x1")
plt.tight_layout()
plt.show()
