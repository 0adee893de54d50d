"""Affine enclosure of a latent variance over a box, linear in the kernel vector.

For one latent model with ``var(x) = k(x, x) - q(r(x))``, ``q(r) = r^T S r =
||A r||^2`` and ``r(x) = k(Xs, x)`` (:class:`~skgprobust._bounds._variance.LatentVariance`),
this module gives, per box [lo, hi], a weight vector g (N,) and two constants
C_lo <= C_hi with

    C_lo - g . r(x)  <=  v~(x)  <=  C_hi - g . r(x)      for every x in the box,

where v~(x) is the variance *as sklearn computes it* (its rounding included)
and r(x) the exact kernel vector. Both sides are linear in r(x), so they can
be added to latent means (also linear in r(x)) and the sum bounded by ONE
mean-type bound (:func:`~skgprobust._bounds._mean.affine_lower`): the
correlation between a class's mean and its variance, and between classes,
is kept (:meth:`~skgprobust._engine._objectives.ClassProbabilities.pair_lower`).

Proof (real arithmetic). Let rho = r(x0)~ be the kernel vector computed at the
box centre, or at the point ``x0`` of the box a caller chooses (any fixed
vector of R^N; only the remainder e below depends on where it is). q is convex with gradient 2 S r, so with
g = 2 S rho:

* q(r) >= q(rho) + g . (r - rho) (tangent plane), hence
  v(x) <= dhi - q(rho) + g . rho - g . r(x), dhi >= k(x, x) on the box;
* q(r) = q(rho) + g . (r - rho) + ||A (r - rho)||^2 exactly, and
  ||A (r - rho)||^2 <= e on the box, with e the smaller of lam_max(S) ||dr||^2
  (|r_i(x) - rho_i| <= dr_i from the kernel's interval over the box) and,
  for the kernels of :class:`~skgprobust._bounds._variance.SmoothCovariance`,
  the RKHS bound (1 + rho) sum_j H0_j h_j^2 (plus the increments of
  dot-product powers, ``SmoothCovariance.increment2``; the module doc of
  :mod:`~skgprobust._bounds._variance`, "The RKHS remainder", and rho of
  "The lemma for the float factor": P <= (1 + rho) I); hence
  v(x) >= dlo - q(rho) + g . rho - e - g . r(x).

These are exactly the two inequalities that
:meth:`LatentVariance.bounds` proves *pointwise* before it bounds g . r(x)
over the box (its "tangent" bound: ``q_lower = q0 - g.r0 + gmin`` and
``q_upper = q0 - g.r0 + gmax + e``); here the last step is left to the
caller. So the rounding is covered by the same margin, computed by the same
formula from the same quantities: ``LatentVariance.margin_direct(scale0 + e, d)``
(q0 and g computed by triangular solves as sklearn does, their errors
absorbed as the module doc of :mod:`~skgprobust._bounds._variance` shows in
"Without the lemma" (the error of g only multiplies A (r - rho)), sklearn's
own solve and sums at every x of the box) plus ``LatentVariance.input_rounding`` (sklearn's
kernel values at rounded inputs). The scale ``scale0`` is the one of
``bounds()``: |q0| + |g| . rmax + ||g|| ||rmax|| + |dhi|, rmax = |rho| +
max(|klo|, |khi|) >= |r(x)| and |r(x) - rho|. Nothing is clipped (``bounds()``
clips q_lower at 0, which only tightens there; the unclipped form is valid).

The caller multiplies by the model's ``scale**2`` (exact scaling of both
sides; a relative 1e-15 is added for the product) and must bound its combined
affine function with weights that are *computed* combinations of g and the
mean weights: the rounding of that combination and of sklearn's separate sums
is the caller's (``margin_rtol(N, d) * kmax * sum of |weights|``, as for the
combined means).

Returns None for variance objects of another kind (the paper's LP/QP
bounds): no enclosure, the caller falls back to interval bounds.
"""

import numpy as np

from .._fp import UNIT_ROUNDOFF as _U
from ._variance import LatentVariance

__all__ = ["affine_variance_enclosure", "has_affine_enclosure"]


def has_affine_enclosure(variance):
    """Whether :func:`affine_variance_enclosure` can enclose this variance
    object (a :class:`LatentVariance` with support points); callers skip
    the work that needs it otherwise."""
    return type(variance) is LatentVariance and variance.n_support > 0


def affine_variance_enclosure(variance, lo, hi, x0=None):
    """``(g, c_lo, c_hi)`` of the module doc for B boxes, or None.

    Parameters
    ----------
    variance : LatentVariance
    lo, hi : ndarray of shape (B, d)
    x0 : ndarray of shape (B, d), default=None
        The point of each box whose computed kernel vector is the tangent's
        rho (clipped into the box); None: the centre. The upper side is
        the tangent at x0: exact there up to rounding where k(x, x) is
        constant (stationary kernels; with a dot-product term, dhi is the
        box's largest k(x, x)); a caller that needs the variance's upper
        bound near a point of the box (where a probability's extreme is
        expected) puts the tangent there. Proof for x0 other than the
        centre c: the module doc's argument holds for any rho except the
        remainder e >= ||A (r(x) - rho)||^2 (the margins, ``_direct_qmax``
        and ``input_rounding`` are proven for any computed rho); with rho =
        r~(x0), ||A (r(x) - r~(x0))|| <= ||A (r(x) - r(c))|| + ||A (r(c) -
        r(x0))|| + ||A (r(x0) - r~(x0))|| <= 2 sqrt(e_H) + a, e_H =
        ``rkhs_remainder(lo, hi, n_centre=0)`` >= sup ||A (r(x) - r(c))||^2
        over the box (exact kernel vectors; x and x0 in the box) and a =
        sqrt(lam_max) ||E + c_val u A|| >= ||A (r~(x0) - r(x0))|| (the
        adapter's contract at every point of the box,
        ``centre_rounding_norm``); the interval form lam_max ||dr||^2 holds
        for any rho as it stands.

    Returns
    -------
    g : ndarray of shape (B, N)
    c_lo, c_hi : ndarray of shape (B,)
        ``c_lo - g . r(x) <= v~(x) <= c_hi - g . r(x)`` for every x in box b
        (unscaled variance; -inf / +inf where a bound is not finite).
    """
    if not has_affine_enclosure(variance):
        return None
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    B, d = lo.shape
    ad = variance.adapter
    centre = 0.5 * (lo + hi) if x0 is None else np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    r0 = ad.values(centre)  # (B, N): rho
    W0 = variance._apply_A(r0)  # (N, B), triangular solve as sklearn
    q0 = np.einsum("ib,ib->b", W0, W0)
    g = variance._grad_q(W0)  # (B, N) = 2 S rho
    g_r0 = np.einsum("bi,bi->b", g, r0)
    klo, khi = ad.interval(lo, hi)
    dlo, dhi = ad.diag_interval(lo, hi)
    dr = np.maximum(np.maximum(khi - r0, r0 - klo), 0.0)
    e = variance.lam_max * np.einsum("bi,bi->b", dr, dr)
    # The RKHS remainder ||A dr||^2 <= (1 + rho) sup ||k_x - k_x0||_H^2, as in
    # LatentVariance.bounds (module doc of _variance, "The RKHS remainder"
    # and "The lemma for the float factor").
    nE, nEA = variance.centre_rounding_norm(lo, hi)
    if x0 is None:
        e_c = variance.rkhs_remainder(lo, hi, n_centre=nEA)
    else:  # the tangent away from the centre (docstring): (2 sqrt(e_H) + a)^2
        e_H = variance.rkhs_remainder(lo, hi, n_centre=np.zeros(B))  # exact r(c): no rounding term
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.sqrt(variance.lam_max) * nEA * (1.0 + 1e-12)
            e_c = (2.0 * np.sqrt(e_H) + a) ** 2 * (1.0 + 1e-12)
    e = np.minimum(e, e_c)
    rmax = np.abs(r0) + np.maximum(np.abs(klo), np.abs(khi))
    scale0 = (
        np.abs(q0)
        + np.einsum("bi,bi->b", np.abs(g), rmax)
        + np.linalg.norm(g, axis=1) * np.linalg.norm(rmax, axis=1)
        + np.abs(dhi)
    )
    # The margin of LatentVariance.bounds (_bounds_margin, proof there): with
    # the lemma, margin(2.4 |q0| + e + |dhi|) plus the rounding of g . r0 and
    # of the sums (here dhi - q0 + g_r0 + mg and dlo - q0 + g_r0 - e - mg: no
    # gmax / gmin, their magnitude terms 0); without it, the direct margin of
    # scale0 + e, which bounds q and |k(x, x)| over the box by itself (module
    # doc of _variance, "Without the lemma").
    qmax = variance._direct_qmax(q0, e)
    zero = np.zeros(B)
    mg = variance._bounds_margin(q0, g, r0, rmax, g_r0, zero, zero, e, dhi, scale0, d) \
        + variance.input_rounding(lo, hi, dhi, qmax=qmax, nE=nE)
    with np.errstate(invalid="ignore", over="ignore"):
        c_hi = dhi - q0 + g_r0 + mg
        c_lo = dlo - q0 + g_r0 - e - mg
    c_hi = np.where(np.isfinite(c_hi), c_hi, np.inf)
    c_lo = np.where(np.isfinite(c_lo), c_lo, -np.inf)
    bad = ~np.isfinite(g).all(axis=1)
    g = np.where(np.isfinite(g), g, 0.0)
    c_lo[bad], c_hi[bad] = -np.inf, np.inf
    return g, c_lo, c_hi
