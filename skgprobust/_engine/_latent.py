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

from ..kernels import make_adapter


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
    L : ndarray of shape (N, N) or None
        Lower-triangular factor sklearn solves with for the variance.
    col_scale : ndarray of shape (N,) or None
        Column scaling D of A = L^-1 D (``W_sr_`` for the Laplace GPC), so
        that var(x) = k(x, x) - ||A k(Xs, x)||^2.
    """

    X_support: np.ndarray
    weights: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    kernel: object
    L: np.ndarray = field(default=None, repr=False)
    col_scale: np.ndarray = field(default=None, repr=False)
    adapter: object = field(default=None, repr=False)
    _variance: object = field(default=None, repr=False)

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

    def variance(self, method="default"):
        """The :class:`~skgprobust.variance.LatentVariance` of this model
        (unscaled: multiply by ``scale**2``), built once."""
        if self.L is None:
            raise ValueError("This latent model has no variance factor.")
        if self._variance is None or getattr(self._variance, "method", "default") != method:
            if method == "default":
                from .._bounds._variance import LatentVariance

                self._variance = LatentVariance(self.adapter, self.L, self.col_scale)
            elif method == "paper":
                from .._bounds._variance_paper import PaperLatentVariance

                self._variance = PaperLatentVariance(self.adapter, self.L, self.col_scale)
            else:
                raise ValueError(f"variance_bound must be 'default' or 'paper', got {method!r}.")
            self._variance.method = method
        return self._variance

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
    return LatentModel(gpr.X_train_, alpha * std, mean, std, gpr.kernel_, L=gpr.L_)


def from_binary_classifier(base):
    """LatentModel of sklearn's binary Laplace GPC (``gpc.base_estimator_``)."""
    t = np.asarray(base.y_train_, dtype=np.float64) - base.pi_
    return LatentModel(base.X_train_, t, [0.0], [1.0], base.kernel_, L=base.L_, col_scale=base.W_sr_)


def from_classifier(gpc):
    """The binary latent models of a fitted GaussianProcessClassifier: one for
    two classes, one per class (one_vs_rest) or per pair (one_vs_one)."""
    base = gpc.base_estimator_
    if hasattr(base, "estimators_"):
        return [from_binary_classifier(e) for e in base.estimators_]
    return [from_binary_classifier(base)]
