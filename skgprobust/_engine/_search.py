"""Gradient-based local search inside a box: incumbents and counterexamples."""

import time

import numpy as np


def local_search(objective, lo, hi, starts, n_steps=30, deadline=None):
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
        X = np.clip(X - eta * width * step / np.where(norm > 0, norm, 1.0), lo, hi)
        n_done += 1
        if deadline is not None:
            last = time.perf_counter() - t0
    else:
        n_done = -1  # all steps: evaluate the last iterate too
    if n_done > 0:
        return best_x, best_f  # stopped by the deadline: the last iterate is not evaluated
    f = objective.value(X)
    i = int(np.argmin(f))
    if f[i] < best_f:
        best_f, best_x = float(f[i]), X[i].copy()
    return best_x, best_f


def random_starts(lo, hi, n, rng):
    """n uniform points in the box."""
    return lo + (hi - lo) * rng.random((n, len(lo)))
