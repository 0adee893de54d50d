"""Latent models: what the bounds need from a fitted sklearn GP.

Every model here has the inference form of the paper (Eq. 1-2)::

    mean_p(x) = offset_p + k(x, Xs) @ weights[:, p]
    var_p(x)  = scale_p**2 * (k(x, x) - k(x, Xs) @ S @ k(Xs, x))

read off the fitted estimator exactly as ``shared/notes/sklearn-gp-internals.md``
gives it. Later model types (EP, sparse, multi-output) plug in by building
the same object.
"""

from dataclasses import dataclass, field

import numpy as np

from .kernels import make_adapter


@dataclass
class LatentModel:
    """Support inputs, kernel and output maps of a GP's latent outputs.

    Attributes
    ----------
    X_support : ndarray of shape (N, d)
    weights : ndarray of shape (N, P)
        ``t`` of the paper per output p (output scaling already applied).
    offset : ndarray of shape (P,)
    scale : ndarray of shape (P,)
        Output standard-deviation scaling (normalize_y), for variances.
    kernel : sklearn Kernel
        The fitted kernel.
    S : ndarray of shape (N, N) or None
        Posterior precision-like matrix of the variance (filled lazily).
    """

    X_support: np.ndarray
    weights: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    kernel: object
    S: np.ndarray = None
    adapter: object = field(default=None, repr=False)

    def __post_init__(self):
        self.X_support = np.asarray(self.X_support, dtype=np.float64)
        self.weights = np.asarray(self.weights, dtype=np.float64).reshape(len(self.X_support), -1)
        self.offset = np.asarray(self.offset, dtype=np.float64).reshape(-1)
        self.scale = np.asarray(self.scale, dtype=np.float64).reshape(-1)
        if self.adapter is None:
            self.adapter = make_adapter(self.kernel, self.X_support)

    @property
    def n_outputs(self):
        return self.weights.shape[1]

    def mean(self, X):
        """Latent means, shape (n, P), computed from the adapter (float64)."""
        return self.adapter.values(X) @ self.weights + self.offset


def from_regressor(gpr):
    """LatentModel of a fitted GaussianProcessRegressor (predictive mean per target)."""
    alpha = np.asarray(gpr.alpha_, dtype=np.float64)
    alpha = alpha.reshape(len(alpha), -1)
    P = alpha.shape[1]
    std = np.broadcast_to(np.asarray(gpr._y_train_std, dtype=np.float64), (P,))
    mean = np.broadcast_to(np.asarray(gpr._y_train_mean, dtype=np.float64), (P,))
    return LatentModel(gpr.X_train_, alpha * std, mean, std, gpr.kernel_)


def from_binary_classifier(base):
    """LatentModel of sklearn's binary Laplace GPC (``gpc.base_estimator_``)."""
    t = np.asarray(base.y_train_, dtype=np.float64) - base.pi_
    return LatentModel(base.X_train_, t, [0.0], [1.0], base.kernel_)
