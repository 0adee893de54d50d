"""Gradient-based local search inside a box: incumbents and counterexamples."""

import time

import numpy as np


#: Steps over which :func:`local_search` measures a stall (``stall_tol``).
STALL_STEPS = 5


def local_search(objective, lo, hi, starts, n_steps=30, deadline=None, corner=False, stall_tol=None):
    """Minimise ``objective`` over the box from several starts at once.

    Projected gradient steps, scaled per coordinate by the box width and
    normalised so the most influential coordinate moves a fraction eta of
    its width; eta decays geometrically from 0.5 to 0.005. Works in one
    batched call per step for all starts.

    ``deadline`` (a ``time.perf_counter()`` value, optional): no step starts
    after it, nor one that the previous step's duration predicts to end
    after it (the first step runs whenever the deadline is still ahead).
    When no step runs, the starts are evaluated (values only), so the result
    is always a point of the box with its value.

    ``corner=True`` adds one start after the first step: the box corner
    that the sign of the gradient at the first start points to
    (:func:`sign_corner`, a first-order step of the full width). It costs no
    evaluation of its own (the first step computed that gradient) and finds
    the minima at a vertex that the scaled steps of a start inside the box
    reach slowly in many dimensions.

    ``stall_tol`` (optional): stop once the best value found has improved by
    less than ``stall_tol`` over the last ``STALL_STEPS`` steps (the steps
    shrink geometrically, so later ones rarely matter more than that; a
    range objective passes a fraction of its epsilon). The result is the
    best point evaluated so far, as at a deadline.

    Returns
    -------
    x_best : ndarray of shape (d,)
    f_best : float
    """
    width = hi - lo
    X = np.clip(np.atleast_2d(np.asarray(starts, dtype=np.float64)), lo, hi)
    best_f, best_x = np.inf, X[0].copy()
    if not np.any(width > 0):
        f = objective.value(X)
        i = int(np.argmin(f))
        return X[i].copy(), float(f[i])
    etas = np.geomspace(0.5, 0.005, n_steps)
    last = 0.0  # duration of the previous step
    n_done = 0
    history = []  # best value after each step (stall_tol)
    for eta in etas:
        if deadline is not None:
            t0 = time.perf_counter()
            if t0 + last > deadline:
                break
        f, g = objective.value_and_grad(X)
        i = int(np.argmin(f))
        if f[i] < best_f:
            best_f, best_x = float(f[i]), X[i].copy()
        step = np.nan_to_num(g) * width
        norm = np.abs(step).max(axis=1, keepdims=True)
        X_next = np.clip(X - eta * width * step / np.where(norm > 0, norm, 1.0), lo, hi)
        if corner and n_done == 0:
            X_next = np.vstack([X_next, sign_corner(X[0], lo, hi, np.nan_to_num(g[0]))[None]])
        X = X_next
        n_done += 1
        if deadline is not None:
            last = time.perf_counter() - t0
        if stall_tol is not None:
            history.append(best_f)
            if len(history) > STALL_STEPS and not history[-1 - STALL_STEPS] - best_f >= stall_tol:
                break
    else:
        n_done = -1  # all steps: evaluate the last iterate too
    if n_done > 0:
        return best_x, best_f  # stopped by the deadline: the last iterate is not evaluated
    f = objective.value(X)
    i = int(np.argmin(f))
    if f[i] < best_f:
        best_f, best_x = float(f[i]), X[i].copy()
    return best_x, best_f


def sign_corner(x, lo, hi, g):
    """The box corner that descends along -sign(g) from x: lo where g > 0, hi
    where g < 0; coordinates with zero gradient stay at x."""
    return np.where(g > 0, lo, np.where(g < 0, hi, x))


class _Stop(Exception):
    """Raised inside :func:`polish`'s objective to end the optimiser at its deadline."""


#: Objective evaluations (one point each) a :func:`polish` may spend.
POLISH_MAX_EVAL = 40


def polish(objective, lo, hi, x, f, max_eval=POLISH_MAX_EVAL, deadline=None):
    """Refine a point of the box by a quasi-Newton method (L-BFGS-B).

    The projected-gradient steps of :func:`local_search` end with steps of
    0.5% of the width; near a curved minimum or along a face of the box
    L-BFGS-B gains more per evaluation (digits one-vs-rest probabilities,
    64 features: 0.002-0.005 lower minima in 4-10 evaluations). Every point
    it evaluates lies in the box (L-BFGS-B projects onto the bounds); the
    best evaluated point and its value are returned, never worse than
    ``(x, f)``. At most ``max_eval`` evaluations; none starts after
    ``deadline``, nor one that the previous evaluation's duration predicts
    to end after it. Non-finite values or gradients end the refinement.

    Parameters
    ----------
    objective : object
        With ``value_and_grad(X)`` for X of shape (n, d).
    lo, hi : ndarray of shape (d,)
        The box.
    x : ndarray of shape (d,)
        Start (a point of the box) and its value ``f``.
    f : float
        ``objective`` at x.
    max_eval : int, default=POLISH_MAX_EVAL
        Largest number of evaluations.
    deadline : float, default=None
        A ``time.perf_counter()`` value (None: no time limit).

    Returns
    -------
    x_best : ndarray of shape (d,)
    f_best : float
    """
    from scipy.optimize import minimize

    x = np.clip(np.asarray(x, dtype=np.float64), lo, hi)
    best = [float(f), x.copy()]
    free = hi > lo
    if max_eval < 1 or not free.any() or not np.isfinite(best[0]):
        return best[1], best[0]
    last, n_eval = [0.0], [0]

    def fun(z):
        t0 = time.perf_counter()
        if n_eval[0] >= max_eval or (deadline is not None and t0 + last[0] > deadline):
            raise _Stop  # L-BFGS-B's own maxfun is checked between iterations only
        n_eval[0] += 1
        z = np.clip(z, lo, hi)
        v, g = objective.value_and_grad(z[None])
        v, g = float(v[0]), np.asarray(g[0], dtype=np.float64)
        last[0] = time.perf_counter() - t0
        if not (np.isfinite(v) and np.all(np.isfinite(g))):
            raise _Stop
        if v < best[0]:
            best[0], best[1] = v, z.copy()
        return v, np.where(free, g, 0.0)

    try:
        minimize(fun, x, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                 options={"maxfun": int(max_eval), "maxiter": int(max_eval)})
    except _Stop:
        pass
    return best[1], best[0]


def random_starts(lo, hi, n, rng):
    """n uniform points in the box."""
    return lo + (hi - lo) * rng.random((n, len(lo)))
