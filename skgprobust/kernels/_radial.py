"""Second-order Taylor models of radial kernels and of their products.

A kernel is *radial* here when k(x, x_i) = psi(s_i(x)) with s_i(x) =
||x - x_i||^2, the plain (unscaled) squared Euclidean distance: every
isotropic stationary kernel (psi(s) = psi_0(s / l^2)), ExpSineSquared
(``ExpSineSquaredAdapter.radial_parts``), constants, and products of those
(Leibniz rule, :func:`product_parts`). In one dimension every stationary
kernel is radial, so e.g. ``C * RBF(l) * ExpSineSquared(l', p)`` is.

:class:`RadialParts` carries, per box b and support point i,

* the exact values psi(sc), psi'(sc), psi''(sc) at the squared distance sc
  of the box centre (derivatives in s), and
* intervals [lo_k, hi_k] that contain psi^(k)(s) for every s in [sL, sU],
  k = 0, 1, 2, 3, where [sL, sU] contains s_i(x) for every x in the box.

:func:`radial_taylor` turns them into a :class:`~._base.TaylorModel` of
sum_i w_i psi(s_i(x)).

Derivation (exact in real arithmetic). Write u = x - c (c the box centre),
e_i = x_i - c, so s_i(u) = sc_i + l_i(u) + q(u) with l_i(u) = -2 e_i . u and
q(u) = ||u||^2 (an identity). Taylor's theorem in s with the Lagrange
remainder gives, for delta_i = l_i + q,

    psi(sc + delta) = psi(sc) + psi'(sc) delta + psi''(sc) delta^2 / 2 + R,
    R = psi'''(eta) delta^3 / 6 = (psi''(eta') - psi''(sc)) delta^2 / 2

for some eta, eta' between sc and sc + delta (both in [sL, sU]). Summed with
the weights and expanded in u:

    sum_i w_i psi(s_i) = V + G . u + (sum_i w_i psi'_i) ||u||^2
                         + 1/2 u^T M u + q (L . u) + 1/2 (sum_i w_i psi''_i) q^2
                         + sum_i w_i R_i,
    V = sum_i w_i psi_i,  G = -2 sum_i w_i psi'_i e_i,
    M = 4 sum_i w_i psi''_i e_i e_i^T,  L = -2 sum_i w_i psi''_i e_i

(psi_i = psi(sc_i) etc.). V, G, M and the diagonal term are kept exactly (so
the large, opposite-signed weights of a GP mean cancel); over the box
|u_j| <= h_j, with qmax = ||h||^2,

* q (L . u) >= -qmax sum_j |L_j| h_j and 1/2 (sum w psi'') q^2 >=
  1/2 min(sum w psi'', 0) qmax^2;
* delta_i lies in [dlo_i, dhi_i] = [sL_i - sc_i, sU_i - sc_i], so with
  psi''' in [lo_3, hi_3]: w_i R_i = (w_i psi'''(eta)) (delta_i^3) / 6 is a
  product of a number in [w lo_3, w hi_3] (sorted) and one in
  [dlo^3, dhi^3]: its lower bound is the smallest of the four corner
  products, / 6 (``r3``); and with psi'' in [lo_2, hi_2]: w_i R_i >=
  min(w (lo_2 - psi''_i), w (hi_2 - psi''_i), 0) dmax^2 / 2, dmax =
  max(-dlo, dhi) (``r2``). The larger of the two is used per point.

``r3`` is O(h^3) as the box shrinks (delta = O(h)), so the bound converges.

Rounding. The identity s_i = sc_i + l_i + q holds exactly for the computed
offsets e_i and centre c; that they differ from the exact x_i - c (and the
modelled box c +- h from [lo, hi]) by ~u (|x| + |x_i|) is input rounding,
which each factor's ``rounding`` covers. [sL, sU] is computed from e_i as
sums of non-negative terms (relative error <= (d + 2) u) and then widened by
a relative 1e-12. The interval arithmetic of :func:`product_parts` widens
its results by 1e-13 of the magnitudes it added. The centre coefficients
are computed at the rounded sc~ = sc (1 + theta), |theta| <= (d + 2) u, and
carry rounding errors of their own of at most ~40 u of m_k (ExpSineSquared's
closed form of j_1(z) / z cancels for z >= 0.5 by at most that; a product's
Leibniz sum by a few u of its terms' magnitudes), so they err by
|eps_0| <= m_1 |theta| sc + 4 u |psi|, |eps_1| <= m_2 |theta| sc + 40 u m_1,
|eps_2| <= m_3 |theta| sc + 40 u m_2, where m_k bounds |psi^(k)| over the
s-range and the terms it is computed from (``RadialParts.magnitudes``).
Kernels whose coefficients err by more (RationalQuadratic: ~alpha u, a power
of a base near 1) declare the excess ``RadialParts.extra_ulps`` (e u, say; a
product's is the sum of its factors'), which makes every term's error at most
(40 + e) u of its magnitude; ``mag`` is then multiplied by 1 + e / 256, so
the margin (at least 256 u of it) grows by at least e u of the old ``mag``.
They multiply 1, delta and delta^2 / 2, |delta| <= dmax (dmax >= |l_i(u)|,
since sU - sc = 2 sum_j |e_ij| h_j + qmax). With ``mag`` = sum_i |w_i|
(|psi_i| + m_1 (sc + dmax + qmax) + m_2 (sc dmax + (dmax + qmax)^2) +
m_3 sc dmax^2) + |remainder terms|, which also bounds the absolute values of
every term the model sums (|G . u| <= sum |w psi'| dmax, |u^T M u| / 2 <=
sum |w psi''| dmax^2 ...), all of these errors and the summation errors
((N - 1) u of the magnitudes) are below ``margin_rtol(N, d) * mag``
(margin_rtol >= (8 (N + d) + 256) u), the margin ``affine_lower``
subtracts.
"""

from dataclasses import dataclass

import numpy as np

from ._base import TaylorModel, widen_for_coefficient_ulps

#: Relative widening of the s-range against the rounding of its sums.
_S_WIDEN = 1e-12
#: Relative widening of interval products and sums (of their magnitudes).
_I_WIDEN = 1e-13


@dataclass
class RadialGeometry:
    """Offsets and squared distances of B boxes to N support points.

    Es : (B, d, N) signed offsets x_i - c; h : (B, d) half-widths;
    sc, sL, sU : (B, N) the squared distance at the centre and an enclosure
    [sL, sU] of it over the box (widened against rounding).
    """

    Es: np.ndarray
    h: np.ndarray
    sc: np.ndarray
    sL: np.ndarray
    sU: np.ndarray


def radial_geometry(lo, hi, Xs):
    """:class:`RadialGeometry` of the boxes [lo, hi] (B, d) and points Xs (N, d)."""
    from ._base import as_boxes

    lo, hi = as_boxes(lo, hi)
    c = 0.5 * (lo + hi)
    h = 0.5 * (hi - lo)
    Es = Xs.T[None, :, :] - c[:, :, None]
    aE = np.abs(Es)
    near = np.maximum(aE - h[:, :, None], 0.0)
    sL = np.einsum("bdn,bdn->bn", near, near)
    sc = np.einsum("bdn,bdn->bn", aE, aE)
    far = aE + h[:, :, None]
    sU = np.einsum("bdn,bdn->bn", far, far)
    return RadialGeometry(Es, h, sc, sL * (1.0 - _S_WIDEN), sU * (1.0 + _S_WIDEN))


@dataclass
class RadialParts:
    """psi of a radial kernel per box and support point (see the module doc).

    c0, c1, c2 : (B, N) psi, psi', psi'' at sc (derivatives in s).
    lo, hi : lists of four (B, N) arrays, enclosures of psi^(k) over
    [sL, sU], k = 0..3. Non-finite entries mean "no bound" (the model of that
    box is dropped).
    """

    c0: np.ndarray
    c1: np.ndarray
    c2: np.ndarray
    lo: list
    hi: list
    #: optional (four (B, N) arrays): bounds of the absolute values of the
    #: terms psi^(k) is computed from (products: sum of the factors' terms);
    #: None: max(|lo_k|, |hi_k|).
    absmax: list = None
    #: Relative error, in u, of c0..c2 and of the enclosures' ends beyond the
    #: ~40 u of the module docstring (``StationaryAdapter.coefficient_ulps``;
    #: a product's is the sum of its factors', first order).
    extra_ulps: float = 0.0

    def magnitudes(self):
        """Bounds of |psi^(k)| and of the terms it is computed from, k = 0..3."""
        if self.absmax is not None:
            return self.absmax
        return [np.maximum(np.abs(lo), np.abs(hi)) for lo, hi in zip(self.lo, self.hi)]

    def scaled(self, a):
        """Parts of a * psi (a a real constant)."""
        a = float(a)
        if a >= 0:
            lo, hi = [a * v for v in self.lo], [a * v for v in self.hi]
        else:
            lo, hi = [a * v for v in self.hi], [a * v for v in self.lo]
        absmax = None if self.absmax is None else [abs(a) * m for m in self.absmax]
        return RadialParts(a * self.c0, a * self.c1, a * self.c2, lo, hi, absmax, self.extra_ulps)


def constant_parts(value, shape):
    """Parts of the constant psi = value."""
    v = np.full(shape, float(value))
    z = np.zeros(shape)
    return RadialParts(v, z, z.copy(), [v, z, z, z], [v, z, z, z])


def _imul(a_lo, a_hi, b_lo, b_hi):
    p = np.stack([a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi])
    with np.errstate(invalid="ignore"):
        lo, hi = p.min(0), p.max(0)
    # 0 * inf gives nan: no bound
    bad = np.isnan(lo) | np.isnan(hi)
    return np.where(bad, -np.inf, lo), np.where(bad, np.inf, hi)


def product_parts(f, g):
    """Parts of psi = f g (Leibniz rule): centre values by the rule, ranges by
    interval arithmetic, widened outward by 1e-13 of the magnitudes summed."""
    c0 = f.c0 * g.c0
    c1 = f.c1 * g.c0 + f.c0 * g.c1
    c2 = f.c2 * g.c0 + 2.0 * f.c1 * g.c1 + f.c0 * g.c2
    binom = [[1.0], [1.0, 1.0], [1.0, 2.0, 1.0], [1.0, 3.0, 3.0, 1.0]]
    los, his, mags = [], [], []
    fm, gm = f.magnitudes(), g.magnitudes()
    for k in range(4):
        lo = np.zeros_like(c0)
        hi = np.zeros_like(c0)
        mag = np.zeros_like(c0)
        for j in range(k + 1):
            pl, ph = _imul(f.lo[j], f.hi[j], g.lo[k - j], g.hi[k - j])
            lo = lo + binom[k][j] * pl
            hi = hi + binom[k][j] * ph
            mag = mag + binom[k][j] * fm[j] * gm[k - j]
        with np.errstate(invalid="ignore"):
            los.append(lo - _I_WIDEN * mag - 1e-300)
            his.append(hi + _I_WIDEN * mag + 1e-300)
            mags.append(mag)
    return RadialParts(c0, c1, c2, los, his, mags, f.extra_ulps + g.extra_ulps)


def stationary_parts(adapter, geom):
    """Parts of an isotropic :class:`~.stationary.StationaryAdapter` (RBF,
    Matern, RationalQuadratic) as a function of the unscaled s = l^2 phi, or
    None when it has no third derivative or is anisotropic (d > 1 with unequal
    length scales).

    Its psi_0(phi) is decreasing with dpsi increasing, d2psi decreasing and
    d3psi increasing (negative, |d3psi| decreasing), the properties the
    stationary bounds rely on and ``tests/test_kernels.py`` checks, so over
    [pL, pU] each derivative lies between its values at the two ends; and
    d^k/ds^k psi_0(s / l^2) = l^(-2k) psi_0^(k)(s / l^2).
    """
    from .stationary import PoweredStationaryAdapter, StationaryAdapter

    if isinstance(adapter, PoweredStationaryAdapter) or type(adapter).d3psi is StationaryAdapter.d3psi:
        return None
    ls = np.asarray(adapter.length_scale, dtype=np.float64)
    if ls.size > 1 and not np.all(ls == ls[0]):
        return None
    with np.errstate(over="ignore"):
        l2 = float(np.float64(ls.flat[0]) ** 2)
    if not (np.isfinite(l2) and l2 > 0):  # length scale above ~1.3e154: no model (Python's ** raised OverflowError)
        return None
    pc, pL, pU = geom.sc / l2, geom.sL / l2, geom.sU / l2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c0 = adapter.psi(pc)
        c1 = adapter.dpsi(pc) / l2
        c2 = adapter.d2psi(pc) / l2**2
        lo = [adapter.psi(pU), adapter.dpsi(pL) / l2, adapter.d2psi(pU) / l2**2, adapter.d3psi(pL) / l2**3]
        hi = [adapter.psi(pL), adapter.dpsi(pU) / l2, adapter.d2psi(pL) / l2**2, adapter.d3psi(pU) / l2**3]
    # Matern 0.5 / 1.5 at phi = 0: unbounded derivatives, no model.
    lo = [np.where(np.isfinite(v), v * np.where(v > 0, 1 - 1e-13, 1 + 1e-13) - 1e-300, -np.inf) for v in lo]
    hi = [np.where(np.isfinite(v), v * np.where(v > 0, 1 + 1e-13, 1 - 1e-13) + 1e-300, np.inf) for v in hi]
    return RadialParts(c0, c1, c2, lo, hi, extra_ulps=adapter.coefficient_ulps())


def parts_of(adapter, geom):
    """RadialParts of any adapter that has them (``radial_parts`` method,
    isotropic stationary adapters, constants), else None."""
    from .basic import ConstantAdapter
    from .stationary import StationaryAdapter

    if hasattr(adapter, "radial_parts"):
        return adapter.radial_parts(geom)
    if isinstance(adapter, ConstantAdapter):
        return constant_parts(adapter.c, geom.sc.shape)
    if isinstance(adapter, StationaryAdapter):
        return stationary_parts(adapter, geom)
    return None


def radial_taylor(geom, parts, w):
    """:class:`~._base.TaylorModel` of sum_i w[b, i] psi(s_i(x)) over each box
    (the derivation is in the module docstring)."""
    Es, h, sc, sL, sU = geom.Es, geom.h, geom.sc, geom.sL, geom.sU
    c0, c1, c2 = parts.c0, parts.c1, parts.c2
    finite = np.isfinite(c0) & np.isfinite(c1) & np.isfinite(c2)
    bad = ~finite.all(-1)
    c0, c1, c2 = (np.where(finite, a, 0.0) for a in (c0, c1, c2))
    wd1, wd2 = w * c1, w * c2
    B, d = h.shape
    value = (w * c0).sum(-1)
    grad = -2.0 * np.matmul(Es, wd1[:, :, None])[:, :, 0]
    diag = np.broadcast_to(wd1.sum(-1)[:, None], (B, d)).copy()
    M = 4.0 * np.matmul(Es * wd2[:, None, :], Es.transpose(0, 2, 1))
    L = -2.0 * np.matmul(Es, wd2[:, :, None])[:, :, 0]
    qmax = (h * h).sum(-1)
    rem0 = -qmax * (np.abs(L) * h).sum(-1) + 0.5 * np.minimum(wd2.sum(-1), 0.0) * qmax**2
    dlo = np.minimum(sL - sc, 0.0)
    dhi = np.maximum(sU - sc, 0.0)
    dmax = np.maximum(-dlo, dhi)
    with np.errstate(invalid="ignore", over="ignore"):
        lo2, hi2 = parts.lo[2], parts.hi[2]
        r2 = 0.5 * np.minimum(np.minimum(w * (lo2 - c2), w * (hi2 - c2)), 0.0) * dmax**2
        t_lo = np.minimum(w * parts.lo[3], w * parts.hi[3])
        t_hi = np.maximum(w * parts.lo[3], w * parts.hi[3])
        r3 = np.minimum(_imul(t_lo, t_hi, dlo**3, dhi**3)[0], 0.0) / 6.0
        r2 = np.where(np.isnan(r2), -np.inf, r2)
        r3 = np.where(np.isnan(r3), -np.inf, r3)
        r = np.maximum(r2, r3)
        rem = rem0 + r.sum(-1)
        mags = parts.magnitudes()
        m1, m2, m3 = (np.maximum(mags[k], np.abs(ck)) for k, ck in ((1, c1), (2, c2), (3, 0.0)))
        m1, m2, m3 = (np.where(np.isfinite(m), m, 0.0) for m in (m1, m2, m3))
        r_abs = np.where(np.isfinite(r), -r, 0.0)
        dq = dmax + qmax[:, None]
        mag = (np.abs(w) * (np.abs(c0) + m1 * (sc + dq) + m2 * (sc * dmax + dq**2) + m3 * sc * dmax**2)).sum(-1) \
            + r_abs.sum(-1) + np.abs(rem0)
        # Coefficients beyond the 40 u budget (RationalQuadratic): a wider margin.
        mag = widen_for_coefficient_ulps(mag, parts.extra_ulps)
    rem = np.where(bad | np.isnan(rem), -np.inf, np.minimum(rem, 0.0))
    return TaylorModel(value, grad, diag, M, rem, mag)


# ----------------------------------------------------------------------------
# A radial factor times a dot-product power
# ----------------------------------------------------------------------------

_FALLING = lambda p, k: float(np.prod(np.arange(p - k + 1, p + 1))) if k <= p else 0.0  # noqa: E731


def radial_polynomial_taylor(geo, der, Xs, s2, p, lo, hi, w):
    """:class:`~._base.TaylorModel` of sum_i w_i psi(phi_i(x)) (s2 + x . x_i)^p.

    The first factor is radial in *scaled* coordinates, phi_i(x) = sum_j
    sw_j^2 (x_j - x_ij)^2 (sw = 1 / length scales: an anisotropic stationary
    kernel; sw = 1: any factor with :class:`RadialParts`); the second is
    ``DotProduct(sigma_0) ** p`` (p a positive integer, s2 = sigma_0^2).
    Neither the product nor the weighted sum is radial, so :func:`radial_taylor`
    does not apply; this is the multivariate second-order Taylor model with a
    Lagrange remainder, per support point, summed with the weights.

    Parameters
    ----------
    geo : tuple
        ``(Es, hs, sw, pc, pL, pU)``: scaled offsets Es (B, d, N) of the
        support points from the box centres (sw (x_i - c)), scaled half-widths
        hs (B, d), sw (d,), and phi at the centre and an enclosure [pL, pU]
        of phi over each box (B, N), widened against rounding.
    der : tuple
        ``(c0, c1, c2, m0, m1, m2, m3)``: psi, psi', psi'' at pc, and bounds
        m_k >= |psi^(k)| over [pL, pU] (and >= |c_k|), each (B, N).
    Xs : ndarray of shape (N, d)
        Support points.
    s2 : float
        sigma_0^2 of the dot product.
    p : int
        Its power (1 for a plain ``DotProduct``).
    lo, hi : ndarray of shape (B, d)
        The boxes.
    w : ndarray of shape (B, N)
        Weights (constant factors already folded in).

    Returns
    -------
    model : TaylorModel

    Notes
    -----
    Proof (real arithmetic). Write c the box centre, u = x - c, g_i =
    -2 sw * Es_i (the gradient of phi_i at c), a_i = s2 + c . x_i, beta_i(u)
    = x_i . u, so phi_i(c + u) = pc_i + l_i(u) + q(u) with l_i = g_i . u and
    q = sum_j sw_j^2 u_j^2, and t_i = a_i + beta_i. For f_i = psi(phi_i)
    P(t_i), P(t) = t^p, the Hessian at c is

        H_i = psi'' P g g^T + 2 psi' P diag(sw^2) + psi' P' (g x_i^T + x_i g^T)
              + psi P'' x_i x_i^T

    (coefficients at the centre), so value + grad . u + diag . u^2 +
    1/2 u^T M u with value = sum w psi P, grad = sum w (psi' P g + psi P' x_i),
    diag_j = sw_j^2 sum w psi' P and M = sum w (H_i - 2 psi' P diag(sw^2)) is
    exactly sum_i w_i (f_i(c) + grad f_i . u + 1/2 u^T H_i u). Along the
    segment G(tau) = f_i(c + tau u), Taylor's theorem leaves G(1) - [G(0) +
    G'(0) + G''(0) / 2] = G'''(tau*) / 6 = (G''(tau') - G''(0)) / 2 for some
    tau*, tau' in (0, 1). With Phi(tau) = pc + tau l + tau^2 q (Phi' = l +
    2 tau q, Phi'' = 2 q) and T(tau) = a + tau beta, the Leibniz rule gives
    G^(n) = sum_k C(n, k) A_k B_(n-k), A_k = (psi o Phi)^(k), B_k = P^(k)(T)
    beta^k, and

        A_0 = psi, A_1 = psi' Phi', A_2 = psi'' Phi'^2 + 2 q psi',
        A_3 = psi''' Phi'^3 + 6 q psi'' Phi'.

    Over the box |l| <= lmax = 2 sum_j |Es_ij| hs_j, 0 <= q <= qmax = sum_j
    hs_j^2, so |Phi'| <= lam = lmax + 2 qmax; Phi in [pL, pU] so |psi^(k)|
    <= m_k; |beta| <= r = sum_j |x_ij| h_j and |T| <= Tm = |a| + r, so |B_k|
    <= p!/(p-k)! Tm^(p-k) r^k (0 for k > p). Hence |A_k| <= alpha_k =
    (m0, m1 lam, m2 lam^2 + 2 qmax m1, m3 lam^3 + 6 qmax m2 lam), |G'''| <=
    Gam3 = sum_k C(3, k) alpha_k beta_(3-k) and |G''| <= Gam2 = sum_k C(2, k)
    alpha_k beta_(2-k) on the whole segment, so w_i times the remainder is >=
    -|w_i| min(Gam3 / 6, Gam2) (the second form is finite where psi''' is not,
    e.g. Matern 2.5 at phi = 0). Gam3 = O(h^3): the bound converges.

    Rounding. The model is that of the function built from the computed
    offsets and centre; its difference from the exact kernel is input
    rounding, which the factors' ``rounding`` covers (as in
    :func:`radial_taylor`). The centre coefficients are computed at the
    rounded pc (relative error <= (d + 2) u) and a_i (absolute error <=
    (d + 1) u Aa_i, Aa_i = s2 + |c| . |x_i|), so they err by at most
    (d + 2) u (m_(k+1) pc) + 40 u m_k (psi side) and (d + 1) u Aa Pm_(k+1)
    + 4 u Pm_k (P side), Pm_k = p!/(p-k)! Tm^(p-k); the products and sums by
    a few u of their terms. With Psi = (m0 + m1 pc) + (m1 + m2 pc) lam +
    (m2 + m3' pc) lam^2 + m1 qmax and Pi = (Pm0 + Pm1 Aa) + (Pm1 + Pm2 Aa) r
    + (Pm2 + Pm3 Aa) r^2 (m3' = m3 where finite, else 0, as in
    :func:`radial_taylor`), every term the model sums is at most 2 Psi Pi
    |w_i| in absolute value and every coefficient error at most a
    (margin_rtol / 4) fraction of that, so ``mag`` = sum_i 4 |w_i| Psi Pi +
    |remainders| lets the caller's ``margin_rtol(N, d) * mag`` (>= (8 (N + d)
    + 256) u) cover them and the summation errors. The remainders and the
    enclosures are computed from non-negative terms and widened by 1e-12.
    """
    Es, hs, sw, pc, pL, pU = geo
    c0, c1, c2, m0, m1, m2, m3 = der
    B, d, N = Es.shape
    u = 2.0**-53
    wid = 1.0 + 1e-12
    centre = 0.5 * (lo + hi)
    h = 0.5 * (hi - lo)
    aX = np.abs(Xs)
    a = s2 + centre @ Xs.T
    Aa = s2 + np.abs(centre) @ aX.T
    r = (h @ aX.T) * wid
    Tm = (np.abs(a) + r) * wid + 2.0 * (d + 2) * u * Aa
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        P = [a**p, p * a ** (p - 1), p * (p - 1) * a ** (p - 2) if p >= 2 else np.zeros_like(a)]
        Pm = [_FALLING(p, k) * Tm ** max(p - k, 0) if k <= p else np.zeros_like(a) for k in range(4)]
        finite = np.isfinite(c0) & np.isfinite(c1) & np.isfinite(c2)
        bad = ~finite.all(-1)
        c0, c1, c2 = (np.where(finite, v, 0.0) for v in (c0, c1, c2))
        swv = np.broadcast_to(np.asarray(sw, dtype=np.float64), (d,))
        G = -2.0 * swv[None, :, None] * Es  # (B, d, N)
        XT = Xs.T  # (d, N)
        w00, w10, w01 = w * c0 * P[0], w * c1 * P[0], w * c0 * P[1]
        w20, w11, w02 = w * c2 * P[0], w * c1 * P[1], w * c0 * P[2]
        value = w00.sum(-1)
        grad = np.matmul(G, w10[:, :, None])[:, :, 0] + w01 @ Xs
        diag = (swv * swv)[None, :] * w10.sum(-1)[:, None]
        cross = np.matmul(G * w11[:, None, :], Xs[None, :, :])
        M = (np.matmul(G * w20[:, None, :], G.transpose(0, 2, 1)) + cross + cross.transpose(0, 2, 1)
             + np.matmul(XT[None, :, :] * w02[:, None, :], Xs[None, :, :]))
        lmax = 2.0 * np.matmul(hs[:, None, :], np.abs(Es))[:, 0, :] * wid
        qmax = (hs * hs).sum(-1)[:, None] * wid
        lam = (lmax + 2.0 * qmax) * wid
        al = [m0, m1 * lam, m2 * lam**2 + 2.0 * qmax * m1, m3 * lam**3 + 6.0 * qmax * m2 * lam]
        be = [Pm[k] * r**k for k in range(4)]
        gam3 = al[0] * be[3] + 3.0 * al[1] * be[2] + 3.0 * al[2] * be[1] + al[3] * be[0]
        gam2 = al[0] * be[2] + 2.0 * al[1] * be[1] + al[2] * be[0]
        gam = np.fmin(gam3 / 6.0, gam2) * wid  # fmin: a NaN (inf * 0) form loses to the other
        rem_i = -np.abs(w) * gam
        rem_i = np.where(np.isnan(rem_i), -np.inf, rem_i)
        rem = rem_i.sum(-1) * wid
        m3f = np.where(np.isfinite(m3), m3, 0.0)
        Psi = (m0 + m1 * pc) + (m1 + m2 * pc) * lam + (m2 + m3f * pc) * lam**2 + m1 * qmax
        Pi = (Pm[0] + Pm[1] * Aa) + (Pm[1] + Pm[2] * Aa) * r + (Pm[2] + Pm[3] * Aa) * r**2
        r_abs = np.where(np.isfinite(rem_i), -rem_i, 0.0)
        mag = (4.0 * np.abs(w) * Psi * Pi + r_abs).sum(-1)
    ok = ~bad & np.isfinite(rem) & np.isfinite(mag) & np.isfinite(value) & np.isfinite(grad).all(-1) \
        & np.isfinite(M).all(axis=(1, 2))
    value, mag = np.where(ok, value, 0.0), np.where(ok, mag, 0.0)
    grad, diag = np.where(ok[:, None], grad, 0.0), np.where(ok[:, None], diag, 0.0)
    M = np.where(ok[:, None, None], M, 0.0)
    rem = np.where(ok, np.minimum(rem, 0.0), -np.inf)
    return TaylorModel(value, grad, diag, M, rem, mag)
