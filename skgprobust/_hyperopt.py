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
* the run with the smallest objective wins.
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


def optimise_hyperparameters(optimizer, obj_func, initial_theta, bounds, n_restarts, rng):
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

    Returns
    -------
    theta : ndarray of shape (n_params,)
    value : float
        The objective at ``theta`` (the smallest found).
    """
    runs = [run_optimizer(optimizer, obj_func, initial_theta, bounds)]
    if n_restarts > 0:
        bounds = np.asarray(bounds, dtype=np.float64)
        if not np.isfinite(bounds).all():
            raise ValueError("Multiple optimizer restarts (n_restarts_optimizer>0) requires that all bounds are finite.")
        for _ in range(n_restarts):
            runs.append(run_optimizer(optimizer, obj_func, rng.uniform(bounds[:, 0], bounds[:, 1]), bounds))
    best = int(np.argmin([value for _, value in runs]))
    return runs[best][0], float(runs[best][1])
