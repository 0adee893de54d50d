"""Planes below (or above) a link's probability over (mean, variance) rectangles.

:meth:`~skgprobust._bounds._links.Link.lines` bounds p(mu, v) by lines in mu
with the variance at its worst end, and :meth:`~skgprobust._bounds._links.Link.v_slope_lower`
adds a variance slope only where the mean range excludes 0 (dp/dv changes
sign with mu). A one-vs-rest class whose mean range crosses 0 (the predicted
class of a wide box) thus had no coupling of its variance to its mean, and
the many-class argmax margin paid for the variance twice: once at v_lo of the
predicted class, once at v_hi of its competitor (measured on the 10-class
digits model, row 37 at gamma 0.05: 0.04 of the 0.055 gap of the root bound).
:func:`link_plane` gives a plane ``A + s mu + t v`` below (above) p on the
whole rectangle for any slopes (s, t); with the slopes of p at a reference
point it is a tangent plane, lowered by exactly as much as the rectangle
needs.
"""

import numpy as np

#: >= phi(1) = sup_z |z| phi(z) (phi the standard normal density; 0.24197072451914337).
PHI1 = 0.2419708
#: Grid of the plane's offset over each rectangle (mean x variance nodes, ends included).
N_PLANE_MU = 33
N_PLANE_V = 9


def link_plane(link, mu_lo, mu_hi, v_lo, v_hi, s, t, upper=False, n_mu=N_PLANE_MU, n_v=N_PLANE_V,
               return_arg=False):
    """Offset A of a plane with slopes (s, t) below (above) a link's p.

    Returns ``A`` (B,) such that, for every (mu, v) in the rectangle
    [mu_lo, mu_hi] x [v_lo, v_hi] of row b,

        p~(mu, v) >= A + s mu + t v      (``upper=False``),
        p~(mu, v) <= A + s mu + t v      (``upper=True``),

    p~ the probability as sklearn computes it (within ``link.margin`` of
    the true p); -inf (+inf) where no plane is proven (v_lo <= 0, an end not
    finite, a link without :meth:`~skgprobust._bounds._links.Link.total_variation`
    or derivative bounds).

    Proof. Let f(mu, v) = p(mu, v) - s mu - t v (true p). The grid of n_mu
    x n_v nodes spans the rectangle (first and last nodes equal the ends;
    the computed nodes are monotone, so the cells cover it); each cell Q
    has widths at most dm, dv (nominal spacing widened by 1e-9 relative and
    1e-14 of the ends' magnitudes for the rounding of the nodes). Let I be
    the bilinear interpolant of f at Q's four corners. I is affine in each
    variable separately, so its minimum (maximum) over Q is at a corner.
    Interpolating first in mu, then in v: f - I = (f - I_mu f) + I_mu(f -
    I_v f); linear interpolation on a segment of length h errs by at most
    h^2 / 8 sup |second derivative|, and I_mu is a convex combination of
    its node values, so |f - I| <= dm^2 / 8 sup_Q |f_mumu| + dv^2 / 8 sup_Q
    |f_vv| =: err. Here f_mumu = p_mumu = E[g''(F)], F = mu + sigma Z ~ N(mu,
    v), and by Stein's identity sigma E[g''(F)] = E[g'(F) Z], so |p_mumu| <=
    sigma^-1 integral g'(mu + sigma z) |z| phi(z) dz <= sigma^-1 sup_z(|z|
    phi(z)) integral g'(mu + sigma z) dz = phi(1) S / v, with g' >= 0 and
    S = integral g' (:meth:`~skgprobust._bounds._links.Link.total_variation`);
    it decreases in v, so v = v_lo bounds the rectangle. f_vv = p_vv =
    E[g''''(F)] / 4 (the heat equation dp/dv = E[g''] / 2, twice), at most
    G4(v_lo) / 4 with G4 of :meth:`~skgprobust._bounds._links.Link.local_sups`
    (valid for every v >= v_lo). Hence min_Q f >= min over Q's corners of f
    - err, and min over the rectangle >= min over the grid of f - err
    (upper side: max <= max + err).

    Rounding: the computed p at a node is within ``link.margin`` of the
    true p, and sklearn's p~ within ``link.margin`` of it: 2 margins; the
    computed s M + t V and the subtraction (three operations on terms of
    size <= |s| (|mu_lo| + |mu_hi|) + |t| (|v_lo| + |v_hi|) + 1, the node
    values' magnitude included) err by far less than 1e-12 of that size; the
    subtracted 4 margins + 1e-12 (1 + that size) cover both with room for
    the few operations forming A, err and the margin itself (err is raised
    by 1e-12 relative). The caller's evaluation of the plane at sklearn's
    (mu~, v~) (which the rectangle must contain) is the caller's to cover.

    The slopes only decide how tight the plane is; the grid spacing adds
    err, which for the 10-class digits model at gamma 0.05 (mean ranges of
    width 3.5, variance ranges of width 2.6, v >= 2.3) is below 2e-4.

    Parameters
    ----------
    link : Link
    mu_lo, mu_hi, v_lo, v_hi, s, t : ndarray of shape (B,)
    upper : bool, default=False
    n_mu, n_v : int
        Grid nodes per axis (>= 2).
    return_arg : bool, default=False
        Also return the grid node (mu, v) where the offset is attained
        (where p~ - s mu - t v is smallest; largest for ``upper``): a
        supergradient of the offset in the slopes is -(mu, v) there, for an
        ascent over the slopes (:class:`~skgprobust._engine._objectives._QuadRatio`
        with slices; any slopes are valid, so the node needs no proof).

    Returns
    -------
    A : ndarray of shape (B,)
    mu_arg, v_arg : ndarray of shape (B,)
        Only with ``return_arg``.
    """
    mu_lo, mu_hi, v_lo, v_hi, s, t = (np.asarray(a, dtype=np.float64) for a in (mu_lo, mu_hi, v_lo, v_hi, s, t))
    bad_value = np.inf if upper else -np.inf
    S = link.total_variation()
    if S is None or link.derivative_sups() is None:
        A = np.full(mu_lo.shape, bad_value)
        return (A, 0.5 * (mu_lo + mu_hi), 0.5 * (v_lo + v_hi)) if return_arg else A
    ok = (np.isfinite(mu_lo) & np.isfinite(mu_hi) & np.isfinite(v_lo) & np.isfinite(v_hi) & np.isfinite(s)
          & np.isfinite(t) & (v_lo > 0) & (v_hi >= v_lo) & (mu_hi >= mu_lo))
    a, b = np.where(ok, mu_lo, 0.0), np.where(ok, mu_hi, 0.0)
    c, e = np.where(ok, v_lo, 1.0), np.where(ok, v_hi, 1.0)
    s0, t0 = np.where(ok, s, 0.0), np.where(ok, t, 0.0)
    fm = np.linspace(0.0, 1.0, n_mu)
    fv = np.linspace(0.0, 1.0, n_v)
    M = a[:, None] + (b - a)[:, None] * fm[None, :]
    V = c[:, None] + (e - c)[:, None] * fv[None, :]
    M[:, -1], V[:, -1] = b, e
    with np.errstate(all="ignore"):
        P = link.value(M[:, :, None], V[:, None, :])  # (B, n_mu, n_v)
        F = P - (s0[:, None] * M)[:, :, None] - (t0[:, None] * V)[:, None, :]
        flat = F.reshape(len(F), -1)
        idx = np.argmax(flat, axis=1) if upper else np.argmin(flat, axis=1)
        ext = flat[np.arange(len(F)), idx]
        if np.isnan(flat).any():  # nan-propagating like min / max
            ext = np.where(np.isnan(flat).any(axis=1), np.nan, ext)
        dm = (b - a) / (n_mu - 1) * (1 + 1e-9) + 1e-14 * (np.abs(a) + np.abs(b))
        dv = (e - c) / (n_v - 1) * (1 + 1e-9) + 1e-14 * (np.abs(c) + np.abs(e))
        g2 = PHI1 * S / c
        g4 = link.local_sups(c)[1]
        err = (dm * dm / 8.0 * g2 + dv * dv / 8.0 * g4 / 4.0) * (1 + 1e-12)
        size = 1.0 + np.abs(s0) * (np.abs(a) + np.abs(b)) + np.abs(t0) * (np.abs(c) + np.abs(e))
        pad = err + 4.0 * link.margin + 1e-12 * size
        A = ext + pad if upper else ext - pad
    A = np.where(ok & np.isfinite(A), A, bad_value)
    if return_arg:
        i_mu, i_v = np.unravel_index(idx, (n_mu, n_v))
        rows = np.arange(len(A))
        return A, M[rows, i_mu], V[rows, i_v]
    return A
