"""Gradient-based local search inside a box: incumbents and counterexamples."""

import numpy as np


def local_search(objective, lo, hi, starts, n_steps=30):
    """Minimise ``objective`` over the box from several starts at once.

    Projected gradient steps, scaled per coordinate by the box width and
    normalised so the most influential coordinate moves a fraction eta of
    its width; eta decays geometrically from 0.5 to 0.005. Works in one
    batched call per step for all starts.

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
    for eta in etas:
        f, g = objective.value_and_grad(X)
        i = int(np.argmin(f))
        if f[i] < best_f:
            best_f, best_x = float(f[i]), X[i].copy()
        step = np.nan_to_num(g) * width
        norm = np.abs(step).max(axis=1, keepdims=True)
        X = np.clip(X - eta * width * step / np.where(norm > 0, norm, 1.0), lo, hi)
    f = objective.value(X)
    i = int(np.argmin(f))
    if f[i] < best_f:
        best_f, best_x = float(f[i]), X[i].copy()
    return best_x, best_f


def random_starts(lo, hi, n, rng):
    """n uniform points in the box."""
    return lo + (hi - lo) * rng.random((n, len(lo)))
