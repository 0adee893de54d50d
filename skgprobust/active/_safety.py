"""Certified safety of a GP safety model over whole boxes.

The safe active learner of Li et al. (AISTATS 2022, the seed's Eq. 8) calls
an input x safe when the safety GP h gives P(h(x) <= t) > 1 - delta (or
P(h(x) >= t) > 1 - delta when safety means "above the threshold"). With
mu(x), s(x) the safety model's own ``predict(X, return_std=True)`` and
z = Phi^-1(1 - delta) this is, exactly (Phi is strictly increasing),

    below:  mu(x) + z s(x) < t,        above:  mu(x) - z s(x) > t.

The seed checks it at finitely many pool points. :func:`certify_safe`
proves it at *every* point of a box around each candidate, so that a learner
querying anywhere in a certified box stays in the region its own safety
model calls safe.

Why the proof is sound
----------------------
:class:`SafetyMargin` is g(x) = t - mu(x) - z s(x) (below; above:
mu(x) - z s(x) - t), signed so that g > 0 exactly where x is safe. Over a box,
:func:`~skgprobust._engine._objectives.latent_box` gives intervals
[mu_lo, mu_hi] and [v_lo, v_hi] that contain the safety model's own mean and
variance at every point of the box (the regressor's mean and variance
bounds, rounding of sklearn's ``predict`` included, see
:mod:`skgprobust._bounds._mean` and :mod:`skgprobust._bounds._variance`). For
delta <= 1/2, z >= 0 and g is decreasing in mu (below) and in s, so

    g(x) >= t - mu_hi - z sqrt(max(v_hi, 0))   for every x in the box

(above: mu_lo - z sqrt(v_hi) - t); for delta > 1/2, z < 0 and the variance
enters through its lower end. The bound is computed in float64, so it is
lowered by ``8 u (|t| + |mu| + |z| sqrt(v))`` (u = 2**-53), more than the
rounding of its three operations and of sklearn's sqrt of the variance.
:func:`~skgprobust._engine._solve.solve_sign` then splits boxes until the
lower bound is positive on all of them ("robust": the box is proven safe),
or finds a point where the safety model's own ``predict`` says unsafe
("not_robust", re-checked by the model), or runs out of budget ("unknown").
"""

import numbers

import numpy as np
from scipy.stats import norm as _norm
from sklearn.utils.validation import check_is_fitted

from .._bounds._mean import BoxBound
from .._engine._common import prepare, row_seeds
from .._engine._perturbation import check_finite_array
from .._engine._driver import certify_rows
from .._engine._objectives import latent_box
from .._engine._solve import Budget, solve_sign
from ..exceptions import UnsupportedModelError

SAFE_SIDES = ("below", "above")
_U = 2.0**-53


def check_safety_setup(threshold, safe_side, delta):
    """Validated (threshold, safe_side, delta)."""
    if not isinstance(threshold, numbers.Real) or isinstance(threshold, bool) or not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}.")
    if safe_side not in SAFE_SIDES:
        raise ValueError(f"safe_side must be 'below' or 'above', got {safe_side!r}.")
    if not isinstance(delta, numbers.Real) or isinstance(delta, bool) or not (0.0 < delta <= 1.0):
        raise ValueError(f"delta must be in (0, 1], got {delta!r}.")
    return float(threshold), safe_side, float(delta)


def safety_quantile(delta):
    """z = Phi^-1(1 - delta) (computed as ``isf(delta)``, exact for tiny
    delta): x is safe when the model's mean is at least z standard
    deviations on the safe side of the threshold. delta = 1 gives z = -inf:
    every point with a positive std is safe."""
    return float(_norm.isf(delta))


def safety_probability(mean, std, threshold, safe_side):
    """P(safe) of a Gaussian predictive N(mean, std^2); std = 0 gives 0 or 1.

    Parameters
    ----------
    mean, std : array-like of shape (n,)
        Predictive mean and standard deviation of the safety value.
    threshold : float
        The safety threshold t.
    safe_side : {"below", "above"}
        Safe when the value is below / above t.

    Returns
    -------
    p : ndarray of shape (n,)
        The probability of the safe side.
    """
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    diff = threshold - mean if safe_side == "below" else mean - threshold
    with np.errstate(divide="ignore", invalid="ignore"):
        p = _norm.cdf(diff / std)
    return np.where(std > 0, p, (diff > 0).astype(np.float64))


def _z_times(z, std):
    """z std, with 0 where std = 0 (also for z = +-inf, delta = 1 or tiny:
    a zero std makes P(safe) 0 or 1 by the mean alone, as
    :func:`safety_probability` has it)."""
    std = np.asarray(std, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(std > 0, z * std, 0.0)


def is_safe(mean, std, threshold, safe_side, z):
    """The safety decision of the seed's Eq. 8 in the quantile form above
    (P(safe) > 1 - delta; at std = 0 by the mean alone, also for delta = 1)."""
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if safe_side == "below":
        return mean + _z_times(z, std) < threshold
    return mean - _z_times(z, std) > threshold


def align_by_names(value, name, feature_names):
    """A pandas Series given per feature, as a float array in the order of
    ``feature_names`` (the fitted names; :func:`check_finite_array` aligns it
    and refuses unknown or missing labels); anything else unchanged. Without
    fitted names a Series is returned unchanged (read as an array; a
    labelled one is refused where the boxes are built)."""
    if feature_names is None or not (getattr(value, "ndim", None) == 1 and hasattr(value, "index")):
        return value
    return check_finite_array(value, name, len(feature_names), feature_names=feature_names)


def _safety_bound_model(model):
    bm_of = getattr(model, "_bound_model", None)
    bm = bm_of() if bm_of is not None else None
    if bm is None or bm.kind != "regression" or len(bm.latents) != 1 or bm.latents[0].n_outputs != 1:
        what = type(model).__name__
        if bm is not None and bm.kind == "regression" and len(bm.latents) == 1:
            what += f" with {bm.latents[0].n_outputs} outputs"
        raise UnsupportedModelError(
            "certified safety needs a single-output regressor of this package as the safety model "
            "(RobustGaussianProcessRegressor, SparseGaussianProcessRegressor, or a "
            f"MultiOutputGaussianProcessRegressor fitted on one output), got a {what}."
        )
    return bm


class SafetyMargin:
    """g(x) = t - mu(x) - z s(x) (below) or mu(x) - z s(x) - t (above) of a
    single-output regressor's bound model: positive exactly where x is safe.
    An objective of the branch and bound (``value``, ``value_and_grad``,
    ``bound``); see the module docstring for the proof of ``bound``.

    Parameters
    ----------
    bound_model : BoundModel
        The safety regressor's cached bound model (one latent output).
    threshold : float
        The safety threshold t.
    safe_side : {"below", "above"}
        Safe where the safety value is below (or above) t.
    z : float
        The Gaussian quantile of 1 - delta.
    variance_bound : str, default="default"
        Which variance bound of the bound model to use.
    """

    def __init__(self, bound_model, threshold, safe_side, z, variance_bound="default"):
        self.model = bound_model.latents[0]
        self.variance = bound_model.variances(variance_bound)[0]
        self.t, self.z = float(threshold), float(z)
        self.sign = -1.0 if safe_side == "below" else 1.0  # g = sign * (mu - t) - z s

    def _moments(self, X):
        m = self.model
        mu = m.adapter.values(X) @ m.weights[:, 0] + m.offset[0]
        v = float(m.scale[0]) ** 2 * self.variance.value(X)
        return mu, v

    def value(self, X):
        """g at the rows of X (the bound model's float evaluation).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Points.

        Returns
        -------
        g : ndarray of shape (n,)
            The safety margin; > 0 where safe.
        """
        mu, v = self._moments(X)
        return self.sign * (mu - self.t) - _z_times(self.z, np.sqrt(np.maximum(v, 0.0)))

    def value_and_grad(self, X):
        """g and its gradient at the rows of X (for the local search).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Points.

        Returns
        -------
        g : ndarray of shape (n,)
            The safety margin.
        grad : ndarray of shape (n, d)
            Its gradient in x.
        """
        m = self.model
        K, dK = m.adapter.value_and_grad(X)
        mu = K @ m.weights[:, 0] + m.offset[0]
        dmu = np.einsum("nid,i->nd", dK, m.weights[:, 0])
        v, dv = self.variance.value_and_grad(X)
        s2 = float(m.scale[0]) ** 2
        sd = np.sqrt(np.maximum(s2 * v, 0.0))
        dsd = s2 * dv / (2.0 * np.maximum(sd, 1e-150))[:, None]
        zs = _z_times(self.z, sd)
        with np.errstate(invalid="ignore"):
            grad = self.sign * dmu - np.where((sd > 0)[:, None], self.z * dsd, 0.0)
        return self.sign * (mu - self.t) - zs, grad

    def bound(self, lo, hi):
        """Sound lower bound of g over each box (module docstring's proof).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.

        Returns
        -------
        bound : BoxBound
            The lower bound per box (-inf where undefined), a candidate
            point and the split scores.
        """
        b = latent_box(self.model, self.variance, lo, hi)
        # Worst mean: the largest (below) or smallest (above) one.
        mu_w = b.mu_hi if self.sign < 0 else b.mu_lo
        # Worst std: the largest when z >= 0, else the smallest.
        v_w = b.v_hi if self.z >= 0 else b.v_lo
        sd = np.sqrt(np.maximum(v_w, 0.0))
        if self.z == -np.inf:
            # delta = 1 (z = -inf; inf - inf in the general formula gave NaN
            # -> -inf, so nothing was ever proven; soundness hunt, session
            # 26): -z s (z s = 0 at s = 0, :func:`_z_times`) is +inf where
            # the computed std is > 0, which a positive certified lower bound
            # of the computed variance proves, and >= 0 everywhere, so g >=
            # sign (mu_w - t) (the worst mean) with its rounding.
            plain = self.sign * (mu_w - self.t)
            plain = plain - 8.0 * _U * (abs(self.t) + np.abs(mu_w))
            lower = np.where(v_w > 0, np.inf, plain)
        else:
            lower = self.sign * (mu_w - self.t) - self.z * sd
            lower = lower - 8.0 * _U * (abs(self.t) + np.abs(mu_w) + abs(self.z) * sd)
        arg = np.where((b.v_hi - b.v_lo > np.abs(b.mu_hi - b.mu_lo))[:, None],
                       b.arg_v_max if self.z >= 0 else b.arg_v_min,
                       b.arg_mu_max if self.sign < 0 else b.arg_mu_min)
        lower = np.where(np.isnan(lower), -np.inf, lower)
        return BoxBound(lower, arg, b.score)


def _certify_safe_row(shared, x0, lo, hi, _, rng):
    objective, unsafe_at, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)
    return solve_sign(objective, lo, hi, x0, budget, rng, lambda x: bool(unsafe_at(x[None])[0]))


def certify_safe(model, X, gamma, *, threshold, safe_side="below", delta=0.05, features=None, domain=None,
                 max_iter=None, time_limit=None, n_jobs=None, random_state=None, verbose=0,
                 variance_bound="default"):
    """Prove that the safety model calls every point of each box safe.

    Parameters
    ----------
    model : RobustGaussianProcessRegressor
        The fitted single-output safety GP: a
        :class:`~skgprobust.RobustGaussianProcessRegressor`, a
        :class:`~skgprobust.SparseGaussianProcessRegressor` or a
        :class:`~skgprobust.MultiOutputGaussianProcessRegressor` fitted on one
        output (any regressor of this package whose bound model has one
        output; others raise ``UnsupportedModelError``).
    X : array-like of shape (n_samples, n_features)
        Centres of the boxes.
    gamma : float or array-like of shape (n_features,)
        Half-width of the l_inf box per feature.
    threshold : float
        The safety threshold t.
    safe_side : {"below", "above"}, default="below"
        Safe means h(x) <= t ("below") or h(x) >= t ("above").
    delta : float in (0, 1], default=0.05
        Allowed risk: x is safe when P(safe at x) > 1 - delta.
    features, domain, max_iter, time_limit, n_jobs, random_state, verbose, variance_bound
        As in :meth:`RobustGaussianProcessRegressor.prediction_range`.

    Returns
    -------
    result : CertificationResult
        "robust": every point of the box is safe under the model (proven);
        "not_robust": ``counterexample`` is a point of the box the model's
        own ``predict`` calls unsafe; "unknown": budget spent. ``bound`` is
        a proven lower bound of ``t - mu - z s`` (below) over the box.
    """
    threshold, safe_side, delta = check_safety_setup(threshold, safe_side, delta)
    if hasattr(model, "_fitted_attributes"):
        check_is_fitted(model, model._fitted_attributes)
    bm = _safety_bound_model(model)
    X, lo, hi = prepare(model, X, gamma, features, domain, max_iter, time_limit)
    z = safety_quantile(delta)
    objective = SafetyMargin(bm, threshold, safe_side, z, variance_bound)

    def unsafe_at(P):
        mean = model._predict_values(P)[:, 0]
        std = model._predict_std_values(P)[:, 0]
        return ~is_safe(mean, std, threshold, safe_side, z)

    n, d = X.shape
    shared = (objective, unsafe_at, max_iter, time_limit)
    rows = list(zip(X, lo, hi, [None] * n, row_seeds(random_state, n)))

    def violates(idx, P):
        return unsafe_at(np.asarray(P, dtype=np.float64).reshape(len(idx), d))

    return certify_rows(_certify_safe_row, shared, rows, d=d, n_jobs=n_jobs, verbose=verbose, violates=violates)


def certified_safe_fraction(model, low, high, cells=10, *, threshold, safe_side="below", delta=0.05, **kwargs):
    """Volume of the region [low, high] that is *proven* safe, on a grid.

    The box is cut into ``cells`` equal intervals per feature (an int, or
    one per feature); each cell is certified with :func:`certify_safe`. The
    union of the "robust" cells is a subset of the safe region of the safety
    model (every point of it is proven safe), so the returned fraction is a
    certified lower bound of the safe fraction of the domain.

    Parameters
    ----------
    model : RobustGaussianProcessRegressor
        The fitted safety model.
    low, high : float or array-like of shape (n_features,)
        The domain (a scalar applies to every feature; a pandas Series is
        aligned by the model's feature names).
    cells : int or array-like of int, default=10
        Cells per feature (the grid has prod(cells) cells: keep it small).
    threshold, safe_side, delta, **kwargs
        As in :func:`certify_safe`, except ``features`` and ``domain``,
        which are refused: the fraction counts each proven cell with its
        whole volume, so every cell must be certified whole (a cell proven
        along some features only, or clipped to a domain, would be counted
        with volume it was not proven on). Pass the region as low, high.

    Returns
    -------
    fraction : float
        Proven-safe volume / volume of the domain.
    centers : ndarray of shape (n_cells, n_features)
        The cell centres.
    result : CertificationResult
        Per cell.
    """
    for key in ("features", "domain"):
        if kwargs.get(key) is not None:
            raise ValueError(
                f"certified_safe_fraction does not take {key}=: each proven cell is counted with its whole "
                "volume, so every cell is certified whole (give the region as low, high)."
            )
    names = getattr(model, "feature_names_in_", None)
    low, high = align_by_names(low, "low", names), align_by_names(high, "high", names)
    low = np.asarray(low, dtype=np.float64).reshape(-1)
    high = np.asarray(high, dtype=np.float64).reshape(-1)
    d = getattr(model, "n_features_in_", None)
    if d is not None:
        # scalars broadcast to every feature, as a domain's; a wrong length is
        # named here rather than by the model's input check on the cells
        for name, v in (("low", low), ("high", high)):
            if v.shape not in ((1,), (d,)):
                raise ValueError(f"{name} must be a scalar or an array of length n_features={d}, got {v.size} values.")
        low, high = np.broadcast_to(low, (d,)).copy(), np.broadcast_to(high, (d,)).copy()
    if low.shape != high.shape or not np.all(np.isfinite(low)) or not np.all(np.isfinite(high)) or np.any(high <= low):
        raise ValueError("low and high must be finite arrays of the same length with low < high.")
    counts = np.broadcast_to(np.asarray(cells), low.shape)
    if counts.dtype.kind not in "iu" or np.any(counts < 1):
        raise ValueError(f"cells must be a positive integer or one per feature, got {cells!r}.")
    if int(np.prod(counts.astype(float))) > 10**6:
        raise ValueError("cells gives more than 10**6 cells.")
    axes = [low[j] + (np.arange(c) + 0.5) * (high[j] - low[j]) / c for j, c in enumerate(counts)]
    centers = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    gamma = 0.5 * (high - low) / counts
    result = certify_safe(model, centers, gamma, threshold=threshold, safe_side=safe_side, delta=delta, **kwargs)
    return float(np.mean(result.robust)), centers, result
