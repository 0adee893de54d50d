"""Kernel hyperparameters by maximising an (approximate) log marginal
likelihood, with the ``optimizer`` / ``n_restarts_optimizer`` /
``random_state`` semantics of sklearn's Gaussian-process estimators.

One copy of the loop every GP estimator of the package needs (sklearn
writes it once per estimator):

* ``optimizer="fmin_l_bfgs_b"``: scipy's L-BFGS-B with the objective's
  gradient; a callable ``optimizer(obj_func, initial_theta, bounds) ->
  (theta_opt, func_min)`` is called as sklearn calls it;
* the first run starts from the kernel's own theta; each of the
  ``n_restarts`` further runs from a point drawn uniformly in the
  (log-transformed) bounds, i.e. log-uniformly in the hyperparameters (as
  sklearn's GaussianProcessRegressor does; its classifier draws
  ``exp(uniform(log bounds))`` instead, which is not log-uniform), and
  restarts require finite bounds;
* the run with the smallest objective wins;
* optional ``extra`` variables (e.g. inducing inputs) follow theta,
  unbounded; every restart starts them from their initial value (only
  theta is drawn), and the finite-bounds requirement is on theta alone.
"""

import numpy as np
import scipy.optimize
from sklearn.utils.optimize import _check_optimize_result


def run_optimizer(optimizer, obj_func, initial_theta, bounds):
    """One optimiser run: ``(theta_opt, func_min)``."""
    if isinstance(optimizer, str) and optimizer == "fmin_l_bfgs_b":
        res = scipy.optimize.minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds)
        _check_optimize_result("lbfgs", res)
        return res.x, res.fun
    if callable(optimizer):
        return optimizer(obj_func, initial_theta, bounds=bounds)
    raise ValueError(f"Unknown optimizer {optimizer!r}.")


def optimise_hyperparameters(optimizer, obj_func, initial_theta, bounds, n_restarts, rng, extra=None):
    """Best of one run from ``initial_theta`` and ``n_restarts`` random starts.

    Parameters
    ----------
    optimizer : "fmin_l_bfgs_b" or callable
    obj_func : callable
        ``obj_func(theta, eval_gradient=True) -> (value, gradient)``: the
        negative log marginal likelihood, minimised.
    initial_theta : ndarray of shape (n_params,)
    bounds : ndarray of shape (n_params, 2)
        Log-transformed bounds (``kernel.bounds``).
    n_restarts : int
    rng : numpy RandomState
    extra : ndarray of shape (n_extra,), default=None
        Further variables, unbounded, optimised after theta
        (``obj_func`` then takes ``concatenate([theta, extra])``).

    Returns
    -------
    theta : ndarray of shape (n_params,) or (n_params + n_extra,)
        With ``extra``: the optimised theta followed by the optimised extra.
    value : float
        The objective at ``theta`` (the smallest found).
    """
    theta_bounds = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
    if extra is not None:
        extra = np.asarray(extra, dtype=np.float64).ravel()
        bounds = np.vstack([theta_bounds, np.tile([-np.inf, np.inf], (len(extra), 1))])
        initial_theta = np.concatenate([np.asarray(initial_theta, dtype=np.float64), extra])
    runs = [run_optimizer(optimizer, obj_func, initial_theta, bounds)]
    if n_restarts > 0:
        if not np.isfinite(theta_bounds).all():
            raise ValueError("Multiple optimizer restarts (n_restarts_optimizer>0) requires that all bounds are finite.")
        for _ in range(n_restarts):
            start = rng.uniform(theta_bounds[:, 0], theta_bounds[:, 1])
            if extra is not None:
                start = np.concatenate([start, extra])
            runs.append(run_optimizer(optimizer, obj_func, start, bounds))
    best = int(np.argmin([value for _, value in runs]))
    return runs[best][0], float(runs[best][1])
