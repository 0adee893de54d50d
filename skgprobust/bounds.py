"""Posterior-mean bounds over many boxes at once (paper Prop. 2).

An :class:`AffineMean` is one scalar objective ``f(x) = c + sum_i w_i k(x, x_i)``
(a latent mean, its negation, or a target's predictive mean). ``bound`` returns,
for B boxes in one vectorised call, a certified lower bound of f over each
box, the minimiser of the relaxation (a good point to evaluate) and the
per-coordinate split scores.

Soundness margin: the relaxation is exact in real arithmetic; floating-point
rounding is covered by subtracting ``MARGIN_RTOL * (mag + |c|)`` where ``mag``
is the sum of absolute values of the terms added up (so the margin scales
with the numbers actually summed, N * eps for N = 45,000 support points).
"""

from dataclasses import dataclass

import numpy as np

#: Relative floating-point margin subtracted from every lower bound.
MARGIN_RTOL = 1e-11


@dataclass
class BoxBound:
    """Lower bounds of an objective over B boxes."""

    lower: np.ndarray  # (B,)
    argmin: np.ndarray  # (B, d) minimiser of the relaxation (a candidate point)
    score: np.ndarray  # (B, d) split scores


def minimise_separable(alpha, beta, h):
    """Minimise sum_j alpha_j u_j^2 + beta_j u_j over |u_j| <= h_j, per box.

    Returns the minimum (B,) and a minimiser u (B, d): per coordinate the
    better endpoint, or the vertex of a convex parabola when it is inside.
    """
    q_lo = alpha * h * h - beta * h
    q_hi = alpha * h * h + beta * h
    u = np.where(q_lo <= q_hi, -h, h)
    q = np.minimum(q_lo, q_hi)
    convex = alpha > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.clip(np.where(convex, -beta / (2 * alpha), 0.0), -h, h)
    qv = alpha * v * v + beta * v
    better = convex & (qv < q)
    return np.where(better, qv, q).sum(-1), np.where(better, v, u)


class AffineMean:
    """f(x) = c + sum_i w_i k(x, x_i) for one weight vector w (N,).

    Parameters
    ----------
    adapter : KernelAdapter
    w : ndarray of shape (N,)
    c : float
    """

    def __init__(self, adapter, w, c):
        self.adapter = adapter
        self.w = np.asarray(w, dtype=np.float64)
        self.c = float(c)

    def negated(self):
        return AffineMean(self.adapter, -self.w, -self.c)

    def value(self, X):
        return self.adapter.values(X) @ self.w + self.c

    def value_and_grad(self, X):
        K, dK = self.adapter.value_and_grad(X)
        return K @ self.w + self.c, np.einsum("nid,i->nd", dK, self.w)

    def bound(self, lo, hi):
        B = len(lo)
        rel = self.adapter.relax(lo, hi, np.broadcast_to(self.w, (B, len(self.w))))
        h = 0.5 * (hi - lo)
        qmin, u = minimise_separable(rel.alpha, rel.beta, h)
        lower = np.maximum(rel.const + qmin, rel.ilb)
        margin = MARGIN_RTOL * (rel.mag + abs(self.c)) + 1e-300
        lower = self.c + lower - margin
        lower = np.where(np.isnan(lower), -np.inf, lower)
        argmin = np.clip(0.5 * (lo + hi) + u, lo, hi)
        return BoxBound(lower, argmin, rel.score)
