"""Adapters for kernels of the form k(x, y) = psi(phi(x, y)).

phi is the squared, length-scaled Euclidean distance, separable over the
coordinates, and every psi here is *convex and decreasing* on [0, inf)
(RBF, Matern nu in {0.5, 1.5, 2.5, inf}, RationalQuadratic; the derivative
of each psi below is increasing in phi, see ``tests/test_kernels.py``). For a
convex psi the tangent at any phi_0 is a lower bounding line on all of
[0, inf) and the chord over [phi_L, phi_U] is an upper bounding line there
(paper Lemma 1, Cases 1-2; note the intercept of the tangent is
psi(phi_0) - b * phi_0, the paper's App. A.1 has a typo there).
"""

import numpy as np
from scipy.spatial.distance import cdist

from ._base import (
    SUBNORMAL,
    WIDEN,
    KernelAdapter,
    Relaxation,
    TaylorModel,
    as_boxes,
    box_halfwidths,
    input_rounding,
    interval_lower,
    power_rounding,
    widen_enclosure,
    widen_for_coefficient_ulps,
)

# psi(phi) below this range is treated as a point: constant bounding lines.
_TINY = 1e-200
#: :meth:`StationaryAdapter.rkhs_remainder` of the RBF: sqrt(15) / 6, rounded up.
_RBF_REMAINDER = (float(np.sqrt(15.0)) / 6.0 * (1.0 + 1e-12), 3.0)


class StationaryAdapter(KernelAdapter):
    """Shared bounding code of kernels ``k(x, y) = psi(phi(x, y))``.

    ``phi`` is the squared Euclidean distance scaled by the kernel's
    ``length_scale`` (a scalar or one value per feature). A subclass gives
    ``psi`` and its derivative ``dpsi`` as functions of ``phi``; ``psi`` must
    be convex and decreasing on ``[0, inf)`` (the tangent and chord bounds
    rely on it). With ``d2psi`` and ``d3psi`` as well, the tighter
    second-order :meth:`taylor` model is used; without them, override
    :meth:`taylor` to return None.

    Parameters
    ----------
    kernel : sklearn Kernel
        The fitted kernel; it must have a ``length_scale``.
    Xs : ndarray of shape (N, d)
        Support inputs, float64.
    """

    #: Not implied by psi convex and decreasing (e.g. psi = (1 - phi)_+^2
    #: is neither PSD nor completely monotone), so a third-party subclass
    #: gets no variance lemma unless it sets ``psd = True`` itself (a proof
    #: that its kernel is PSD for every length scale); RBF, Matern and
    #: RationalQuadratic (alpha > 0) do (Bochner: non-negative spectral
    #: densities).
    psd = False

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        d = self.Xs.shape[1]
        self.length_scale = self._length_scales(d)
        self.inv_ls2 = 1.0 / self.length_scale**2
        self.Zs = self.Xs / self.length_scale

    def _length_scales(self, d):
        """The per-feature length scales, as their absolute values.

        As sklearn's ``_check_length_scale``, a one-element list is
        isotropic. sklearn uses a length scale only through ``x / l`` and
        then squared (or Euclidean) distances, which are even in each l:
        fl(x / -l) = -fl(x / l) exactly, so sklearn's kernel values with a
        negative (fixed) length scale are bitwise those with |l|. Every bound
        here assumes l > 0 (``hs = h / l`` is a half-width, ``1 / l`` a
        scale); with the signed value they were crossed by sklearn's
        ``predict`` (RBF([-1, 0.7]): min/max of the mean crossed by up to
        0.45). So the adapters use |l|.
        """
        ls = np.abs(np.squeeze(np.asarray(self.kernel.length_scale, dtype=np.float64)))
        if ls.ndim == 0:
            return np.full(d, float(ls))
        if ls.shape != (d,):
            raise ValueError(
                f"{type(self.kernel).__name__} has {ls.size} length scales but the data has {d} features."
            )
        return ls

    # psi and its derivative as functions of phi (squared scaled distance)
    def psi(self, phi):
        """psi(phi), elementwise: the kernel value at squared scaled distance
        phi (convex and decreasing on [0, inf)).

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        psi : ndarray
            The kernel values at unit amplitude, shaped as ``phi``.
        """
        raise NotImplementedError

    def dpsi(self, phi):
        """d psi / d phi, elementwise (negative and increasing in phi).

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        dpsi : ndarray
            The first derivative, shaped as ``phi``.
        """
        raise NotImplementedError

    #: True (private: only this package's kernels qualify) when psi is
    #: *log-convex* in phi (psi psi'' >= psi'^2: what makes psi^e convex for 0
    #: < e < 1, :class:`PoweredStationaryAdapter`) and :meth:`_log_psi` /
    #: :meth:`_dlog_psi` are implemented with an error bound err and a |L|
    #: that do not decrease with phi (``PoweredStationaryAdapter._own_rounding``
    #: evaluates them at the range's largest phi). A subclass that is convex
    #: but not log-convex (psi = (1 - phi / 4)^2) must leave it False: its
    #: fractional powers' relaxation would not be a lower bound (referee,
    #: session 27: 0.072 above the kernel for e = 0.25).
    _has_log_psi = False

    def _log_psi(self, phi):
        """log psi(phi) in floating point and a bound of its absolute error.

        Only for kernels with ``_has_log_psi``; fractional powers psi^e =
        exp(e log psi) are computed from it, so that a psi below the smallest
        float (far points: psi ~ 1e-340) does not flush psi^e (1e-102 for e
        = 0.3) to 0.

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        L, err : ndarray
            The computed log psi(phi) (<= 0 up to rounding) and a bound of
            ``|L - log psi(phi)|`` (real phi, as given), shaped as ``phi``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no log-domain psi.")

    def _dlog_psi(self, phi):
        """d log psi / d phi (<= 0), within 8 u relative (``_has_log_psi`` only).

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        dL : ndarray
            The derivative, shaped as ``phi``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no log-domain psi.")

    def coefficient_ulps(self):
        """Relative error, in units of u = 2**-53, of the computed psi and its
        first three derivatives beyond the ~40 u the Taylor models budget
        for (:meth:`taylor`, :func:`._radial.radial_taylor`): 0 here (exp
        and a few products: RBF, Matern). A kernel whose formula amplifies
        rounding (RationalQuadratic: a power alpha of a base near 1) returns
        more, and the models raise their magnitude ``mag`` by ``1 + ulps /
        256`` so that the caller's relative margin (``margin_rtol >= 256 u``)
        covers the extra ``ulps u`` of every term.

        Returns
        -------
        ulps : float
            The extra relative error of the coefficients, in units of u.
        """
        return 0.0

    def lipschitz_r(self):
        """sup over r >= 0 of |d psi(r^2) / dr| (unit amplitude), from a dense
        logarithmic grid with 25% headroom (every psi here is smooth and
        its r-derivative unimodal).

        Returns
        -------
        lip : float
            The Lipschitz constant in r (cached on the adapter).
        """
        if getattr(self, "_lip", None) is None:
            r = np.concatenate([np.geomspace(1e-8, 1e3, 20001), np.linspace(0.0, 20.0, 20001)[1:]])
            with np.errstate(all="ignore"):
                g = np.abs(2.0 * r * self.dpsi(r * r))
            self._lip = 1.25 * float(np.nanmax(g))
        return self._lip

    def phi_slope_sup(self):
        """S = sup over phi >= 0 of ``phi |psi'(phi)|`` (unit amplitude), from
        the same dense grid as :meth:`lipschitz_r`, with 25% headroom. Finite
        for every psi here (RBF: 1/e; Matern 0.5: 1/(2e); RationalQuadratic:
        attained at phi = 2; powers: e psi^(e-1) phi |psi'|).

        Returns
        -------
        S : float
            The bound (cached on the adapter).
        """
        if getattr(self, "_phi_slope", None) is None:
            r = np.concatenate([np.geomspace(1e-8, 1e3, 20001), np.linspace(0.0, 20.0, 20001)[1:]])
            phi = r * r
            with np.errstate(all="ignore"):
                g = np.abs(phi * self.dpsi(phi))
            self._phi_slope = 1.25 * float(np.nanmax(g))
        return self._phi_slope

    def rounding(self, lo, hi):
        """Input rounding plus the rounding of the distance (absolute, per term).

        (a) Inputs: |delta r| <= ||delta z||: 2u (|a| + |b|) per scaled
        coordinate from sklearn's rounding of x / l, as much again from ours
        (the box centre and offsets); 5u for headroom; times
        ``lipschitz_r`` >= sup |d psi(r^2) / dr|.

        (b) The distance itself. sklearn computes phi~ = fl(sum_j
        fl(fl(z_j - z_ij)^2)) (RBF, RationalQuadratic:
        ``cdist(..., "sqeuclidean")``), relative error <= gamma_(d+2); Matern
        with finite nu takes r~ = fl(sqrt(phi~)) and s~ = fl(fl(sqrt(3 or 5))
        r~), relative <= (d / 2 + 4) u (1 + O(u)), i.e. its value is psi at
        phi (1 + eta)^2 with |2 eta + eta^2| <= (d + 8) u (1 + 1e-6); Matern
        nu = inf squares r~ = fl(sqrt(phi~)) again (``dists ** 2``: (d + 2) +
        1 + 2 + 1 = d + 6 roundings of phi, inside the same g). In all
        cases the value is psi(phi (1 + theta)) up to a few ulps *relative*
        (exp, the polynomial factor, the power: the relative margin
        ``margin_rtol`` covers those), with |theta| <= g = (d + 8) u (1 +
        1e-6), and by the mean value theorem |psi(phi (1 + theta)) -
        psi(phi)| = |psi'(xi)| phi |theta| for some xi between the two. This
        error is *not* a bounded multiple of psi(phi): relative to the value
        it is about (phi / 2) (d + 2) u for the RBF, beyond the relative
        margin once phi is large (far points, large d). It is bounded
        absolutely instead: |psi'| is decreasing (psi convex), so
        |psi'(xi)| phi <= pU |psi'(pL)| over any phi-range [pL, pU] that
        contains phi and xi, and <= S (1 + 2 g) with S = sup xi |psi'(xi)|
        (:meth:`phi_slope_sup`) always. Our own relaxations evaluate psi at
        our own computed distances, which err in the same way, hence the
        factor 2: ``2 g min(pU |psi'(pL)|, S)``. [pL, pU] here is built from
        the centre distance r_c = cdist(c / l, x_i / l) (relative error
        <= (d / 2 + 3) u < 1e-10 for d < 10^6, as ||h / l||'s) +- (||h / l||
        (1 + 1e-10) + 8 I), I =
        ``input_rounding`` (sklearn's and our rounded inputs move r by
        <= 2 I each, the rounded centre and half-widths cover the box up to
        2 I more), then widened by a relative 1e-10 against g and the
        squaring. For a box far from x_i this decays with psi' (RBF:
        pU e^(-pL / 2) / 2), for a near one it is about phi |psi'(phi)|.

        (c) What remains of sklearn's evaluation is relative to the value at
        the rounded distance, psi(phi~) <= k + (a) + (b): the subclass's
        :meth:`value_ulps` u k, and the same relative error times (a) + (b),
        which the factor ``WIDEN`` (1 + 2^-40 >= 1 + 21 u) covers; plus
        ``SUBNORMAL`` for underflowing results (exp within 8 ulps of a
        subnormal number, times Matern's polynomial factor <= 2^18).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        E : ndarray of shape (B, N)
            The absolute rounding bounds per box and support point.
        """
        return self._rounding_ranges(lo, hi)[0]

    def _rounding_ranges(self, lo, hi):
        """``(rounding, pL, pU)``: :meth:`rounding` and the widened phi-range of
        its part (b), which encloses the exact phi(x, x_i) over each box (and
        sklearn's rounded one); one ``cdist`` for both."""
        lo, hi = as_boxes(lo, hi)
        amax = np.maximum(np.abs(lo), np.abs(hi))
        inp = input_rounding(amax, self.Xs, self.length_scale)
        dist, pL, pU = self._distance_rounding(lo, hi, inp, with_range=True)
        return (5.0 * self.lipschitz_r() * inp + dist) * WIDEN + SUBNORMAL, pL, pU

    def rounding_parts(self, lo, hi):
        """:meth:`~skgprobust.kernels.KernelAdapter.rounding_parts` from one
        ``cdist``: the enclosure is [psi(pU), psi(pL)] over the widened
        phi-range of :meth:`rounding` (psi decreasing), through
        :func:`~skgprobust.kernels._base.widen_enclosure`.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        R, klo, khi, A : ndarray of shape (B, N)
            Rounding bounds, value enclosure and magnitude bound.
        """
        R, pL, pU = self._rounding_ranges(lo, hi)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            klo, khi = self.psi(pU), self.psi(pL)
        return (R,) + widen_enclosure(klo, khi)

    def _distance_rounding(self, lo, hi, inp, with_range=False):
        """Part (b) of :meth:`rounding`, shape (B, N) (with ``with_range``: and
        its phi-range pL, pU)."""
        d = lo.shape[1]
        g = (d + 8.0) * 2.0**-53 * (1.0 + 1e-6)
        centre = 0.5 * (lo + hi) / self.length_scale
        hn = np.linalg.norm(0.5 * (hi - lo) / self.length_scale, axis=-1)
        rc = cdist(centre, self.Zs, "euclidean")
        wid = hn[:, None] * (1.0 + 1e-10) + 8.0 * inp
        rL = np.maximum(rc * (1.0 - 1e-10) - wid, 0.0)
        rU = rc * (1.0 + 1e-10) + wid
        pL, pU = rL * rL * (1.0 - 1e-10), rU * rU * (1.0 + 1e-10)
        with np.errstate(all="ignore"):
            local = pU * np.abs(self.dpsi(pL))
        local = np.where(np.isfinite(local), local, np.inf)
        out = 2.0 * g * np.minimum(local, self.phi_slope_sup() * (1.0 + 2.0 * g))
        return (out, pL, pU) if with_range else out

    def diag_ulps(self, d):
        """1 (times 1 + 2^-20): sklearn's ``diag`` of RBF, Matern and
        RationalQuadratic is ``np.ones`` (exact).

        Parameters
        ----------
        d : int
            Number of features (unused: the diagonal is exact).

        Returns
        -------
        c_diag : float
            The constant.
        """
        return 1.0 * (1.0 + 2.0**-20)

    def _phi(self, X):
        return cdist(np.asarray(X, dtype=np.float64) / self.length_scale, self.Zs, "sqeuclidean")

    def values(self, X):
        """k(X, Xs) = psi(phi(X, Xs)).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Query points.

        Returns
        -------
        k : ndarray of shape (n, N)
            The kernel values against the support inputs.
        """
        return self.psi(self._phi(X))

    def value_and_grad(self, X):
        """k(X, Xs) and its gradient ``2 psi'(phi) (x - x_i) / l^2`` (n, N, d),
        evaluated as ``((2 psi') * (x - x_i)) * l^-2`` in one (n, N, d) buffer
        (same operations and order as the expression, in place: the fresh
        arrays of each step cost more than the arithmetic; local search on
        N = 1000, d = 64, 4 points: 3.9 -> 0.4 ms).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The points.

        Returns
        -------
        K : ndarray of shape (n, N)
            The kernel values.
        dK : ndarray of shape (n, N, d)
            Their gradients in x.
        """
        X = np.asarray(X, dtype=np.float64)
        phi = self._phi(X)
        slope = np.where(phi > _TINY, self.dpsi(np.maximum(phi, _TINY)), 0.0)
        grad = np.subtract(X[:, None, :], self.Xs[None, :, :])
        np.multiply((2.0 * slope)[:, :, None], grad, out=grad)
        np.multiply(grad, self.inv_ls2, out=grad)
        return self.psi(phi), grad

    def rkhs_increment(self, lo, hi):
        """2 (1 - psi(phi_max)): ||k_x - k_c||^2 = 2 (psi(0) - psi(phi(x, c)))
        (psi(0) = 1) and psi decreases in phi <= phi_max = sum_j (h1_j /
        l_j)^2 (rounded up). 1 - psi is bounded above by
        :meth:`_one_minus_psi_upper` (the computed psi within 1e-13 relative,
        or, where psi's evaluation is ill-conditioned near 1, an accurate
        form). Only for a PSD kernel; +inf otherwise.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        bound : ndarray of shape (B,)
            Upper bound of sup ||k_x - k_c||_H^2 over each box.
        """
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if not self.psd:
            return np.full(len(lo), np.inf)
        _, h1 = box_halfwidths(lo, hi)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            pmax = ((h1 * h1) * self.inv_ls2).sum(-1) * (1.0 + 1e-12)
            D = 2.0 * self._one_minus_psi_upper(pmax) * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, np.minimum(D, 2.0 * (1.0 + 1e-12)))

    def _one_minus_psi_upper(self, phi):
        """Upper bound of 1 - psi(phi) (real), from the computed psi: its
        evaluation errs by a few ulps relative (exp, the Matern products)
        for RBF and Matern, inside the 1e-13; subclasses whose psi is
        ill-conditioned near 1 override it (RationalQuadratic: the base
        1 + phi / (2 alpha) raised to -alpha carries alpha u)."""
        return np.maximum(1.0 - self.psi(phi) * (1.0 - 1e-13), 0.0)

    def _ranges(self, lo, hi):
        """Scaled signed offsets Es (B, d, N) of the support points from each box
        centre, the scaled half-widths hs (B, d), and phi over each box: its
        minimum, maximum and value at the centre, each (B, N).

        Layout (B, d, N) keeps the reductions over d vectorised along N.

        Callers often pass the same box on many rows (one box, many weight
        vectors: the softmax certificate's 38 rows per box). Rows whose
        ``(lo, hi)`` are bitwise equal get the same arrays, so they are
        computed once per distinct box and copied to the rows: each row's
        values depend on that row's box only (elementwise operations, and
        per-row reductions whose order does not depend on the number of rows,
        checked bitwise by ``tests/test_bitwise_batching.py``), so the result is the
        same array as the row-by-row computation.
        """
        lo, hi = as_boxes(lo, hi)
        B = len(lo)
        if B > 2:
            key = np.ascontiguousarray(np.concatenate([lo, hi], axis=1)).view(np.uint64)
            _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
            if 2 * len(first) <= B:
                inv = inv.reshape(-1)
                return tuple(a[inv] for a in self._ranges_rows(lo[first], hi[first]))
        return self._ranges_rows(lo, hi)

    def _ranges_rows(self, lo, hi):
        """:meth:`_ranges`, row by row (no sharing of repeated boxes)."""
        sw = 1.0 / self.length_scale
        Es = self.Zs.T[None, :, :] - (0.5 * (lo + hi) * sw)[:, :, None]
        aE = np.abs(Es)
        hs = 0.5 * (hi - lo) * sw
        near = np.subtract(aE, hs[:, :, None])
        np.maximum(near, 0.0, out=near)
        pL = np.einsum("bdn,bdn->bn", near, near)
        pc = np.einsum("bdn,bdn->bn", aE, aE)
        # max phi = sum (|e| + h)^2 = pc + 2 h.|e| + |h|^2
        pU = pc + 2.0 * np.matmul(hs[:, None, :], aE)[:, 0, :] + (hs * hs).sum(-1)[:, None]
        return Es, aE, hs, pL, pU, pc

    def interval(self, lo, hi):
        """(klo, khi) enclosing k(x, x_i) over each box: psi is decreasing,
        so the ends are psi at the largest and the smallest scaled distance.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.

        Returns
        -------
        klo, khi : ndarray of shape (B, N)
            Lower and upper bounds per box and support input.
        """
        _, _, _, pL, pU, _ = self._ranges(lo, hi)
        return self.psi(pU), self.psi(pL)

    def linearise(self, lo, hi, w):
        """``(relax(lo, hi, w), taylor(lo, hi, w))`` sharing one distance range
        computation.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.
        w : ndarray of shape (B, N)
            Weights of the support inputs.

        Returns
        -------
        relaxation : Relaxation
            As :meth:`relax` returns it.
        taylor : TaylorModel or None
            As :meth:`taylor` returns it.
        """
        ranges = self._ranges(lo, hi)
        return self.relax(lo, hi, w, ranges), self.taylor(lo, hi, w, ranges)

    def relax(self, lo, hi, w, ranges=None):
        """Separable lower bound of ``sum_i w_bi k(x, x_i)`` over each box
        (:meth:`KernelAdapter.relax`): per support input, a line in phi below
        (w > 0: the tangent of the convex psi at the range's midpoint) or above
        (w < 0: the chord) psi over its scaled-distance range; phi is a
        separable quadratic in x, so their weighted sum is too.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.
        w : ndarray of shape (B, N)
            Weights of the support inputs.
        ranges : tuple, optional
            The distance ranges of ``_ranges(lo, hi)``, when already computed.

        Returns
        -------
        relaxation : Relaxation
            The lower bound's constant, quadratic and linear parts, its
            interval fallback, magnitude and split scores per box.
        """
        Es, aE, hs, pL, pU, pc = self._ranges(lo, hi) if ranges is None else ranges
        klo, khi = self.psi(pU), self.psi(pL)
        width = pU - pL
        point = (width <= 0.0) | (pU <= _TINY)
        # Lower line (tangent at the midpoint), for w > 0.
        pm = np.maximum(0.5 * (pL + pU), _TINY)
        bt = np.where(point, 0.0, self.dpsi(pm))
        at = np.where(point, klo, self.psi(pm) - bt * pm)
        # Upper line (chord), for w < 0.
        bc = np.where(point, 0.0, (klo - khi) / np.where(point, 1.0, width))
        ac = np.where(point, khi, khi - bc * pL)
        pos = w > 0
        a = np.where(pos, at, ac)
        b = np.where(pos, bt, bc)
        cc = w * b
        sw = 1.0 / self.length_scale
        const = (w * a).sum(-1) + (cc * pc).sum(-1)
        alpha = cc.sum(-1)[:, None] * self.inv_ls2
        # sum_i cc_i phi_i(x) in u = x - centre: phi_i = sum_j sw_j^2 (u_j - e_ij)^2
        beta = -2.0 * sw * np.matmul(Es, cc[:, :, None])[:, :, 0]
        ilb = interval_lower(w, klo, khi)
        mag = (np.abs(w) * (np.abs(a) + np.abs(b) * pU + khi)).sum(-1)
        # Each coordinate's share of the phi-ranges, ~ 4 h_j |e_ij|, weighted by
        # the point's influence |w_i psi'_i|: where bisection tightens most.
        score = hs * (4.0 * np.matmul(aE, np.abs(cc)[:, :, None])[:, :, 0] + hs * np.abs(cc).sum(-1)[:, None])
        return Relaxation(const, alpha, beta, ilb, mag, score)

    def d2psi(self, phi):
        """Second derivative of psi: positive and decreasing in phi for every
        kernel here (checked in the tests), so over [phi_L, phi_U] it lies in
        [d2psi(phi_U), d2psi(phi_L)].

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        d2psi : ndarray
            The second derivative, shaped as ``phi``.
        """
        raise NotImplementedError

    def d3psi(self, phi):
        """Third derivative of psi: negative, with ``|psi'''|`` decreasing in phi.

        Parameters
        ----------
        phi : ndarray
            Squared scaled distances (>= 0).

        Returns
        -------
        d3psi : ndarray
            The third derivative, shaped as ``phi``.
        """
        raise NotImplementedError

    def taylor(self, lo, hi, w, ranges=None):
        """Second-order model in u = x - centre (see :class:`TaylorModel`).

        With phi_i(u) = pc_i + l_i(u) + q(u), l_i = sum_j 2 s_j d_ij u_j,
        q = sum_j s_j u_j^2 (s = 1/l^2, d_i = centre - x_i), Taylor's theorem
        in phi gives psi(phi_i) = psi(pc) + psi'(pc) (l_i + q)
        + psi''(pc) (l_i + q)^2 / 2 + (psi''(eta) - psi''(pc)) (l_i + q)^2 / 2.
        The psi'(pc) part and psi''(pc) l_i^2 / 2 are kept exactly (summed
        over i with their signs); the rest is bounded per box.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.
        w : ndarray of shape (B, N)
            One weight vector per box.
        ranges : tuple, default=None
            The boxes' scaled distance ranges (``_ranges(lo, hi)``) when the caller
            has them.

        Returns
        -------
        model : TaylorModel
            The model about the box centres, remainder and rounding included.
        """
        Es, aE, hs, pL, pU, pc = self._ranges(lo, hi) if ranges is None else ranges
        sw = 1.0 / self.length_scale
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            k_c = self.psi(pc)
            d1 = self.dpsi(pc)
            d2c, m2lo, m2hi = self.d2psi(pc), self.d2psi(pU), self.d2psi(pL)
        # psi' or psi'' unbounded at phi = 0 (Matern 0.5, 1.5): no model for that box.
        bad = ~(np.isfinite(d1) & np.isfinite(d2c) & np.isfinite(m2hi)).all(-1)
        d1, d2c, m2lo, m2hi = (np.where(np.isfinite(a), a, 0.0) for a in (d1, d2c, m2lo, m2hi))
        wd1, wd2 = w * d1, w * d2c
        h = 0.5 * (hi - lo)
        value = (w * k_c).sum(-1)
        grad = -2.0 * sw * np.matmul(Es, wd1[:, :, None])[:, :, 0]
        diag = self.inv_ls2 * wd1.sum(-1)[:, None]
        # M = 4 sum_i w_i psi''_i (s d_i)(s d_i)^T, with s d_ij = -sw_j Es_ij.
        M = np.matmul(Es * wd2[:, None, :], Es.transpose(0, 2, 1)) * (4.0 * np.outer(sw, sw))
        L = -2.0 * sw * np.matmul(Es, wd2[:, :, None])[:, :, 0]
        qmax = (hs * hs).sum(-1)
        # psi''(pc) (2 l_i q + q^2) / 2, summed: |q L.u| <= qmax sum_j |L_j| h_j.
        rem = -qmax * (np.abs(L) * h).sum(-1) + 0.5 * np.minimum(wd2.sum(-1), 0.0) * qmax**2
        # The remainder r_i = (psi''(eta) - psi''(pc)) delta_i^2 / 2
        # = psi'''(eta') delta_i^3 / 6, delta_i = phi_i - pc_i in [pL - pc, pU - pc]:
        # two valid lower bounds of w_i r_i, the better one taken per point.
        dmax = np.maximum(pU - pc, pc - pL)
        coef = np.where(w > 0, w * (m2lo - d2c), w * (m2hi - d2c))
        r2 = 0.5 * coef * dmax**2
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            m3 = np.abs(self.d3psi(pL))  # psi''' <= 0 with |psi'''| decreasing
            # w > 0: worst at delta > 0; w < 0: worst at delta < 0.
            r3 = -np.abs(w) * m3 * np.where(w > 0, pU - pc, pc - pL) ** 3 / 6.0
        r3 = np.where(np.isfinite(r3), r3, -np.inf)
        rem0 = rem
        rem = rem + np.maximum(r2, r3).sum(-1)
        rem = np.where(bad, -np.inf, rem)
        mag = (np.abs(w) * (k_c + np.abs(d1) * (pc + pU) + m2hi * (pU + qmax[:, None]) ** 2)).sum(-1)
        rem, rkhs = self._rkhs_remainder(lo, hi, w, rem, bad)
        tm = TaylorModel(value, grad, diag, M, rem, mag)
        tm.rkhs = rkhs
        if lo.shape[1] >= 8:
            tm.alt = self._quadratic_remainder(Es, aE, hs, sw, w, coef, m3, pU - pc, pc - pL, qmax, M, rem0,
                                               bad, mag)
            # One margin for both models: the larger magnitude.
            tm.mag = np.maximum(tm.mag, tm.alt[2])
        # Coefficients less accurate than the budgeted ~40 u (RationalQuadratic):
        # the margin grows with them (coefficient_ulps).
        tm.mag = widen_for_coefficient_ulps(tm.mag, self.coefficient_ulps())
        return tm

    def _own_profile(self):
        """True where psi, dpsi and d2psi are those of this package's RBF,
        Matern or RationalQuadratic adapter (a subclass with a profile of
        its own, e.g. a power, makes no claim)."""
        for cls in (RBFAdapter, MaternAdapter, RationalQuadraticAdapter):
            if isinstance(self, cls):
                t = type(self)
                return t.psi is cls.psi and t.dpsi is cls.dpsi and t.d2psi is cls.d2psi
        return False

    def first_order(self, c, h1):
        """First-order model of the kernel vectors around c (see
        :meth:`KernelAdapter.first_order`): RBF, Matern (every nu) and
        RationalQuadratic; None for other profiles.

        Proof. With phi_i(x) = sum_j ((x_j - x_ij) / l_j)^2 and r_i = psi(phi_i),
        x = c + u: phi_i(c + u) = pc_i + l_i(u) + q(u), l_i(u) = grad phi_i(c)
        . u and q(u) = sum_j (u_j / l_j)^2 >= 0, and grad r_i(c) . u = psi'(pc_i)
        l_i(u). So with delta_phi = l_i + q,

            r_i(c + u) - r_i(c) - grad r_i(c) . u
              = [psi(pc + delta_phi) - psi(pc) - psi'(pc) delta_phi] + psi'(pc) q,

        the bracket equal to psi''(eta) delta_phi^2 / 2 for an eta between pc_i
        and phi_i(c + u) (Taylor, Lagrange form). psi'' is positive and
        decreasing for every profile here (:meth:`d2psi`), so psi''(eta) <=
        psi''(phimin_i), phimin_i <= the minimum of phi_i over the box, and
        |delta_phi| <= 2 sum_j |E_ij| hs_j + sum_j hs_j^2 (E_ij = (x_ij - c_j) /
        l_j, hs_j >= h1_j / l_j), q <= qmax = sum_j hs_j^2. Hence the bound
        rho_i = psi''(phimin_i) dmax_i^2 / 2 + |psi'(pc_i)| qmax.

        J~ = fl(fl(-2 psi'~) fl(E~ sw~)) (psi'~ = dpsi(pc~), E~ and pc~ = sum
        E~^2 as computed, sw~ = fl(1 / l)), against the exact gradient J_ij =
        -2 psi'(pc_i) E_ij / l_j: with e1 >= |E~ - E| (x / l, c sw~ and the
        difference rounded: 4.02 u (|x_ij| / l_j + |c_j| sw~_j) + 1.01 u |E~|),
        |pc~ - pc| <= sum (2 |E~| + e1) e1 + (d + 2) u pc~ = dpc (the sum of
        squares' rounding), |psi'~ - psi'(pc)| <= rel |psi'~| + psi''(pcl)
        dpc (evaluation within rel = (64 + coefficient_ulps) u relative, the
        ~40 u the Taylor models budget with headroom; the mean value theorem
        between pc and pc~, both >= pcl = pc~ - dpc), |E~ sw~ - E / l| <=
        sw~ (e1 + 1.01 u |E|) and the two products 2.01 u |J~|, so
        |J~_ij - J_ij| <= 2.02 u |J~_ij| + 2 d1err_i |E~ sw~|_ij (1 + u) + 2
        D1_i sw~_j (e1 + 1.01 u (|E~| + e1)) (1 + 4 u), D1 >= |psi'(pc)|; the
        model's delta adds sum_j h1_j of that to rho. phimin from (|E~| - e1
        - hs)_+ squared and summed, times 1 - (d + 4) u (a sum of d
        non-negative terms), and at most pcl; dmax and qmax rounded up
        likewise; psi''(phimin) and |psi'~| raised by rel (and by 2^-1000
        absolute, for evaluations that underflow: where a true value lies
        below ~2^-1000 the relative bound fails but the absolute one holds;
        the products forming J~ by 2^-1070 each, their subnormal rounding).
        The final sums
        of non-negative terms: factor 1 + (2 d + 8) u, plus 2^-1060 absolute
        (subnormal products and squares). A point whose
        derivatives are not finite there (Matern 0.5 / 1.5 at phimin = 0: a
        support point in or next to the box) gets delta = +inf.

        Parameters
        ----------
        c : ndarray of shape (B, d)
            Expansion points (float box centres).
        h1 : ndarray of shape (B, d)
            Half-widths.

        Returns
        -------
        model : tuple of (ndarray, ndarray) or None
            ``(J, delta)`` of shapes (B, N, d) and (B, N).
        """
        if not self._own_profile():
            return None
        c, h1 = np.atleast_2d(np.asarray(c, dtype=np.float64)), np.atleast_2d(np.asarray(h1, dtype=np.float64))
        B, d = c.shape
        u = 2.0**-53
        sw = 1.0 / self.length_scale
        with np.errstate(all="ignore"):
            Es = self.Zs.T[None, :, :] - (c * sw)[:, :, None]  # (B, d, N), as _ranges_rows
            aE = np.abs(Es)
            e1 = 4.02 * u * (np.abs(self.Zs.T)[None] + (np.abs(c) * sw)[:, :, None]) + 1.01 * u * aE
            aEu = aE + e1  # >= |E| (exact)
            hs = h1 * sw * (1.0 + 3.0 * u)  # >= h1 / l
            pc = np.einsum("bdn,bdn->bn", aE, aE)
            dpc = (np.einsum("bdn,bdn->bn", 2.0 * aE + e1, e1) + (d + 2) * u * pc) * (1.0 + (2 * d + 8) * u)
            pcl = np.maximum(pc - dpc, 0.0)
            near = np.maximum(aE - e1 - hs[:, :, None], 0.0)
            phimin = np.minimum(np.einsum("bdn,bdn->bn", near, near) * (1.0 - (d + 4) * u), pcl)
            dmax = (2.0 * np.matmul(hs[:, None, :], aEu)[:, 0, :] + (hs * hs).sum(-1)[:, None]) * (1.0 + (2 * d + 8) * u)
            qmax = (hs * hs).sum(-1) * (1.0 + (d + 4) * u)
            rel = (64.0 + float(self.coefficient_ulps())) * u
            d1 = self.dpsi(pc)
            # tiny: the evaluations' absolute error where they underflow (far
            # points: the exact values lie below ~1e-300 while the float
            # ones are 0; hunt of the test, 1e-577 against 0).
            tiny = 2.0**-1000
            D2 = self.d2psi(phimin) * (1.0 + rel) + tiny
            D2c = self.d2psi(pcl) * (1.0 + rel) + tiny
            d1err = np.abs(d1) * rel * 1.01 + D2c * dpc + tiny
            D1 = np.abs(d1) + d1err
            rho = 0.5 * D2 * dmax * dmax + D1 * qmax[:, None]
            ESW = Es * sw[None, :, None]
            J = (-2.0 * d1)[:, None, :] * ESW  # (B, d, N)
            Jerr = (2.02 * u * np.abs(J) + 2.0 * d1err[:, None, :] * np.abs(ESW) * (1.0 + u)
                    + 2.0 * D1[:, None, :] * sw[None, :, None] * (e1 + 1.01 * u * aEu) * (1.0 + 4.0 * u)
                    + 2.0**-1070)  # the products' absolute error in the subnormal range
            jerr = np.einsum("bdn,bd->bn", Jerr, h1)
            # + 2^-1060: the products and squares above lose at most 2^-1074
            # each where they are subnormal (fewer than 2^14 of them per entry)
            delta = (rho + jerr) * (1.0 + (2 * d + 8) * u) * (1.0 + 1e-12) + 2.0**-1060
            ok = np.isfinite(delta) & np.isfinite(J).all(axis=1)
        return np.where(ok[:, :, None], np.transpose(J, (0, 2, 1)), 0.0), np.where(ok, delta, np.inf)

    def rkhs_remainder(self):
        """``(C, p)`` with ``||E_2(u)||_H <= C t^p`` for every centre c and
        displacement u, ``t = sqrt(sum_j u_j^2 / l_j^2)`` (unit amplitude),
        ``E_2(u) = k_{c+u} - k_c - D k_c[u] - D^2 k_c[u, u] / 2`` the
        second-order Taylor remainder of the feature map ``x -> k(., x)``
        into the RKHS H; or None where none is known (Matern nu < 2: the
        feature map is not twice differentiable into H). Enables the RKHS
        remainder of :meth:`taylor` (:meth:`_rkhs_remainder`).

        Along u, with ``kappa_u(z) = kappa(z t)`` (kappa the profile in the
        scaled distance), ``<D^a k_y[u^a], D^b k_c[u^b]> = (-1)^b
        kappa_u^(a + b)(s)`` for ``y = c + s u`` (derivatives of ``k(x, y) =
        kappa_u(s - r)``). Taylor's theorem in integral form (valid in any
        Banach space) gives ``E_2(u) = int_0^1 (1 - s)^2 / 2 D^3 k_{c + s
        u}[u^3] ds``, so ``||E_2|| <= ||D^3 k[u^3]|| / 6 = sqrt(-kappa_u^(6)(0))
        / 6`` where the feature map is three times differentiable (RBF,
        RationalQuadratic), and ``E_2(u) = int_0^1 (1 - s) (D^2 k_{c + s u} -
        D^2 k_c)[u^2] ds`` with ``||(D^2 k_y - D^2 k_c)[u^2]||^2 = 2
        (kappa_u^(4)(0) - kappa_u^(4)(s))`` where it is only twice (Matern
        nu = 2.5).

        Returns
        -------
        remainder : tuple of (float, float) or None
            (C, p), C an upper bound, or None where there is none.
        """
        return None

    def _rkhs_lipschitz(self):
        """L with 1 - kappa(r) <= L^2 r^2 / 2 for r >= 0 (kappa the unit
        profile in the scaled distance): 1 for the RBF and RationalQuadratic
        (1 - exp(-r^2 / 2) <= r^2 / 2; (1 + s)^-a >= 1 - a s), sqrt(5/3) for
        Matern 2.5 (its series 1 - 5 r^2 / 6 + ..., and 1 - kappa(r) <= 5 r^2
        / 6 on r >= 0: kappa''(r) >= -5/3), so that ||k(., y) - k(., x)||_H <=
        L |x - y|_l."""
        nu = getattr(self, "nu", np.inf)
        return float(np.sqrt(5.0 / 3.0)) * (1.0 + 1e-12) if nu == 2.5 else 1.0

    def register_rkhs_weights(self, W):
        """Registers the columns of W when :meth:`rkhs_remainder` is
        known (see :meth:`KernelAdapter.register_rkhs_weights`).

        Parameters
        ----------
        W : ndarray of shape (N,) or (N, P)
            One weight vector per column, over this adapter's support.
        """
        if self.rkhs_remainder() is not None:
            self._register_rows(W)

    def _rkhs_remainder(self, lo, hi, w, rem, bad=None):
        """The remainder of :meth:`taylor`, improved by the RKHS form where
        it is larger; also the rows where it is (bool (B,)).

        *RKHS remainder.* For f(x) = sum_i w_i k(x, x_i) = <g, k_x>_H with g
        = sum_i w_i k(., x_i) (k PSD, H its RKHS) and x = c + u, k_x = T_2
        k(u) + E_2(u) (:meth:`rkhs_remainder`: ||E_2(u)|| <= C |u|_l^p) and
        <g, D^j k_c[u^j]> = D^j f(c)[u^j] (derivative reproducing property),
        so f(c + u) = T_2 f(u) + <g, E_2(u)> with T_2 f the exact
        second-order Taylor polynomial of f at c, which is the model's value
        + grad.u + sum_j diag_j u_j^2 + 1/2 u^T M u (psi'(pc) q + psi''(pc)
        l_i^2 / 2 are the second-order terms of psi(pc + l_i + q)), and
        |<g, E_2(u)>| <= ||g||_H C |u|_l^p. Over the box |u|_l <= t = |h1|_l
        with h1 the half-widths about the float centre, rounded up
        (:func:`box_halfwidths`). Unlike the per-point remainder it needs no
        sum over the support points of |w_i| times a per-point error (which
        loses the cancellation between weights of both signs when the box is
        wide against the length scales); ||g||_H = sqrt(w^T K w) is computed
        once per registered weight vector
        (:meth:`KernelAdapter.rkhs_weight_norms`, with its rounding). Both
        remainders bound the same difference f - T_2 f from below, so the
        larger is valid. Rounding of the product below: a few operations on
        non-negative numbers (and a power), inside the factor 1 + 1e-12.
        Rows the model marks ``bad`` (a derivative not finite: its
        coefficients were zeroed) keep their remainder of -inf. The model's
        float offsets make it the exact T_2 of the mean at support points y_i
        within the offsets' rounding of the x_i (hunt, session 29): ||g|| is
        raised by L delta sum_i |w_i| for that (:meth:`_rkhs_lipschitz`,
        delta in the code).
        """
        B = len(lo)
        used = np.zeros(B, dtype=bool)
        cp = self.rkhs_remainder()
        if cp is None:
            return rem, used
        coef, power = cp
        nrm = self.rkhs_weight_norms(w)
        ok = np.isfinite(nrm)
        if not ok.any():
            return rem, used
        c, h1 = box_halfwidths(lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            # The model's offsets are Es = fl(Zs - fl(c sw)), not (x_i - c) /
            # l: it is the exact T_2 of the mean at support points y_i with
            # |y_i - x_i|_l <= delta, each coordinate's error within 3.03 u
            # (|x_ij| + |c_j|) / l_j (three roundings of x / l, 1 / l, their
            # product and the difference). ||k(., y) - k(., x)||_H^2 = 2 (1 -
            # kappa(|x - y|_l)) <= L^2 |x - y|_l^2 (L = 1 for the RBF and
            # RationalQuadratic, sqrt(5/3) for Matern 2.5: 1 - kappa(r) <= L^2
            # r^2 / 2), so the norm of sum_i w_i k(., y_i) is at most ||g|| +
            # L delta sum_i |w_i|.
            zmax = self.__dict__.get("_zs_absmax")
            if zmax is None:
                zmax = self.__dict__.setdefault("_zs_absmax", np.max(np.abs(self.Zs), axis=0, initial=0.0))
            delta = 3.03 * 2.0**-53 * np.sqrt(((zmax[None] + np.abs(c) / self.length_scale) ** 2).sum(-1))
            l1 = np.abs(w).sum(-1) * (1.0 + w.shape[-1] * 2.0**-52)
            nrm = (nrm + self._rkhs_lipschitz() * delta * l1) * (1.0 + 1e-12)
            t2 = ((h1 / self.length_scale) ** 2).sum(-1)
            tp = t2 * np.sqrt(t2) if power == 3.0 else np.sqrt(t2) ** power
            rk = -(nrm * coef) * tp * (1.0 + 1e-12)
        used = ok & np.isfinite(rk) & (rk > rem)
        if bad is not None:
            used &= ~np.asarray(bad, dtype=bool)
        return np.where(used, rk, rem), used

    @staticmethod
    def _quadratic_remainder(Es, aE, hs, sw, w, coef, m3, dpos, dneg, qmax, M, rem0, bad, mag):
        """The remainders as one concave quadratic form (d >= 8): the
        alternative ``(M_alt, rem_alt, mag_alt)`` of a Taylor model whose
        other parts are unchanged (attribute ``alt`` of the model, used by
        :func:`~skgprobust._bounds._mean.taylor_lower`).

        Proof. Each point's remainder w_i r_i is bounded below, as in
        :meth:`taylor`, by (a) 1/2 coef_i delta_i^2 (coef_i <= 0: the r2
        bound before delta_i^2 <= dmax_i^2 is used) and by (b)
        -|w_i| m3_i |delta_i|^3 / 6 >= -(|w_i| m3_i D_i / 6) delta_i^2, with
        D_i = phi_U - phi_c for w_i > 0 (the third derivative is <= 0, so
        only delta_i > 0 lowers w_i r_i, and then 0 < delta_i <= D_i) and
        D_i = phi_c - phi_L for w_i < 0 (only delta_i < 0 lowers it). So
        w_i r_i >= -kappa_i delta_i^2, kappa_i the smaller of the two
        coefficients. With delta_i = l_i + q, 0 <= q <= qmax and any
        theta_i > 0, delta_i^2 <= (1 + theta_i) l_i^2 + (1 + 1/theta_i)
        qmax^2 (Young's inequality); theta_i = qmax / lmax_i (lmax_i = 2
        sum_j |Es_ij| hs_j >= |l_i|). And l_i(u) = -2 sum_j sw_j Es_ij u_j,
        so sum_i kappa_i (1 + theta_i) l_i^2 = u^T R u with R = 4 sum_i
        kappa_i (1 + theta_i) (sw Es_i)(sw Es_i)^T. Hence value + grad.u +
        diag.u^2 + 1/2 u^T (M - 2 R) u + rem0 - sum_i kappa_i (1 + 1/theta_i)
        qmax^2 is a lower bound over the box (rem0: the q-terms of
        :meth:`taylor`). It keeps the correlation of the points' remainders
        through u (at a vertex u, l_i(u)^2 is typically far below lmax_i^2),
        which the per-point bound of :meth:`taylor` loses.

        Rounding: R's entries are sums of non-negative terms of size at most
        kappa_i (1 + theta_i) lmax_i^2; ``mag_alt`` = ``mag`` + the sum of
        those + the constant, and :meth:`taylor` raises the model's ``mag``
        to ``mag_alt``, so the caller's relative margin (``margin_rtol *
        mag``) covers their rounding as it covers M's, whichever model wins.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            k2 = -0.5 * coef
            k3 = np.abs(w) * m3 * np.where(w > 0, dpos, dneg) / 6.0
            kappa = np.minimum(np.where(np.isfinite(k2), k2, np.inf), np.where(np.isfinite(k3), k3, np.inf))
            kappa = np.maximum(kappa, 0.0)
            lmax = 2.0 * np.matmul(hs[:, None, :], aE)[:, 0, :]
            theta = np.where((lmax > 0) & (qmax[:, None] > 0), qmax[:, None] / np.where(lmax > 0, lmax, 1.0), 1.0)
            a = kappa * (1.0 + theta)
            cq = kappa * (1.0 + 1.0 / theta) * qmax[:, None] ** 2
            Esw = Es * sw[None, :, None]
            R = 4.0 * np.matmul(Esw * a[:, None, :], Esw.transpose(0, 2, 1))
            rem_alt = rem0 - cq.sum(-1)
            mag_alt = mag + (a * lmax**2).sum(-1) + cq.sum(-1)
        ok = ~bad & np.isfinite(rem_alt) & np.isfinite(R).all(axis=(1, 2)) & np.isfinite(kappa).all(-1)
        rem_alt = np.where(ok, np.minimum(rem_alt, 0.0), -np.inf)
        R = np.where(ok[:, None, None], R, 0.0)
        return M - 2.0 * R, rem_alt, np.where(ok, mag_alt, mag)


class RBFAdapter(StationaryAdapter):
    """RBF: psi(phi) = exp(-phi / 2)."""

    #: PSD for every length scale (Gaussian spectral density).
    psd = True
    #: RBF ** e is the RBF of length scale l / sqrt(e).
    infinitely_divisible = True

    def value_ulps(self, d):
        """17. sklearn returns fl(exp(fl(-0.5 phi~))); :meth:`rounding` covers
        exp(-phi~ / 2) - k (inputs and distance). -0.5 phi~ is exact (for
        phi~ < 2^-1021 it errs by <= 2^-1075, moving exp by no more:
        ``SUBNORMAL``), and numpy's exp errs by <= 16 u of its value (the
        platform assumption, :meth:`KernelAdapter.value_ulps`), i.e. <= 16 u
        (k + rounding): 16 u k here, the rest in ``WIDEN``. One ulp of
        headroom."""
        return 17.0

    _has_log_psi = True

    def values(self, X):
        return np.exp(-0.5 * self._phi(X))

    def _log_psi(self, phi):
        """-phi / 2: exact (halving), but for a subnormal phi (2^-1075)."""
        phi = np.asarray(phi, dtype=np.float64)
        return -0.5 * phi, np.full(phi.shape, 2.0**-1074)

    def _dlog_psi(self, phi):
        return np.full(np.shape(phi), -0.5)

    def psi(self, phi):
        return np.exp(-0.5 * phi)

    def dpsi(self, phi):
        return -0.5 * np.exp(-0.5 * phi)

    def d2psi(self, phi):
        return 0.25 * np.exp(-0.5 * phi)

    def d3psi(self, phi):
        return -0.125 * np.exp(-0.5 * phi)

    def rkhs_remainder(self):
        """(sqrt(15) / 6, 3): kappa_u(z) = exp(-z^2 t^2 / 2), t = |u|_l, has
        kappa_u^(6)(0) = 720 (-t^2 / 2)^3 / 3! = -15 t^6
        (:meth:`StationaryAdapter.rkhs_remainder`). None for a subclass that
        changes the profile (``psi``): the constant is the RBF's.

        Returns
        -------
        remainder : tuple of (float, float) or None
            (C, p).
        """
        return _RBF_REMAINDER if type(self).psi is RBFAdapter.psi else None


class MaternAdapter(StationaryAdapter):
    """Matern for nu in {0.5, 1.5, 2.5, inf}; r = sqrt(phi).

    dpsi/dphi: nu=0.5: -exp(-r) / (2 r); nu=1.5: -1.5 exp(-sqrt3 r);
    nu=2.5: -(5/6) (1 + sqrt5 r) exp(-sqrt5 r); all increasing in r.
    """

    SUPPORTED_NU = (0.5, 1.5, 2.5, np.inf)
    #: PSD for every nu > 0 and length scale (Student-t spectral density).
    psd = True

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.nu = float(kernel.nu)
        # exp(-r) ** e = exp(-e r) and exp(-phi / 2) ** e: the same kernel
        # with l / e, l / sqrt(e); not known for nu = 1.5, 2.5.
        self.infinitely_divisible = self.nu in (0.5, np.inf)
        self._has_log_psi = self.nu in self.SUPPORTED_NU

    def _log_psi(self, phi):
        """log psi with s = sqrt(2 nu phi) (nu finite): -s (0.5), log1p(s) - s
        (1.5), log1p(s + s^2 / 3) - s (2.5), -phi / 2 (inf).

        Error. The computed s~ = fl(fl(sqrt(2 nu)) fl(sqrt(phi))) is s (1 +
        theta), |theta| <= 3.01 u. log1p(a~) with a~ = a (1 + eta) errs from
        log1p(a) by <= |eta| a / (1 + min(a, a~)) <= 1.01 |eta| (mean value
        theorem), and numpy's log1p by 8 ulps (16 u relative, the platform
        assumption for elementary functions, :meth:`KernelAdapter.value_ulps`)
        of log1p(a) <= a. For 2.5, a = s + s^2 / 3 is a sum of non-negative
        terms: s carries 3.01 u, s^2 / 3 carries 6.02 u (twice s's) + 2 u
        (the square and the division), and the sum u more: <= 9.1 u (1.5: a = s, 3.01 u). log1p(a)
        <= s (e^s >= 1 + s + s^2 / 2). The final subtraction errs by u of
        |L~|, and -s~ by 3.01 u s. So |L~ - L| <= 9.2 u + 16 u s + 3.01 u s +
        u |L~|, bounded here by 32 u (1 + s + |L~|) (1 + 2^-40). nu = 0.5:
        s~ = fl(sqrt(phi)) (sqrt(1) = 1), u s, and the negation is exact; nu =
        inf: as the RBF.
        """
        phi = np.asarray(phi, dtype=np.float64)
        u = 2.0**-53
        if self.nu == np.inf:
            return -0.5 * phi, np.full(phi.shape, 2.0**-1074)
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.sqrt(2.0 * self.nu) * np.sqrt(phi)
            if self.nu == 0.5:
                return -s, 3.02 * u * s + 2.0**-1074
            if self.nu == 1.5:
                L = np.log1p(s) - s
            else:
                L = np.log1p(s + s**2 / 3.0) - s
            return L, 32.0 * u * (1.0 + s + np.abs(L)) * (1.0 + 2.0**-40)

    def _dlog_psi(self, phi):
        """-1 / (2 r) (0.5), -3 / (2 (1 + s)) (1.5), -5 (1 + s) / (6 (1 + s +
        s^2 / 3)) (2.5), -1 / 2 (inf); each a few roundings of non-negative
        terms (< 8 u relative)."""
        phi = np.asarray(phi, dtype=np.float64)
        if self.nu == np.inf:
            return np.full(phi.shape, -0.5)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            r = np.sqrt(phi)
            if self.nu == 0.5:
                return -0.5 / r
            s = np.sqrt(2.0 * self.nu) * r
            if self.nu == 1.5:
                return -1.5 / (1.0 + s)
            return -(5.0 / 6.0) * (1.0 + s) / (1.0 + s + s**2 / 3.0)

    def value_ulps(self, d):
        """sklearn's value at the rounded argument s~ (or r~, phi~: in
        :meth:`rounding`), then relative to it (all factors >= 0): nu = 0.5,
        fl(exp(-r~)), and nu = inf, fl(exp(fl(-(r~^2)) / 2)) (the square is in
        rounding part (b), the halving exact): exp's 16 u -> 17; nu = 1.5,
        fl(fl(1 + s~) fl(exp(-s~))): (1 + u)^2 (1 + 16 u) - 1 <= 18.001 u ->
        19; nu = 2.5, fl(fl(fl(1 + s~) + fl(fl(s~^2) / 3)) fl(exp(-s~))): the
        polynomial of non-negative terms errs by <= (1 + u)^3 - 1, the product
        u, exp 16 u: <= 20.001 u -> 21. Each is relative to psi(s~) <= k +
        rounding; the part times the rounding is in ``WIDEN`` (see
        :meth:`StationaryAdapter.rounding`, (c))."""
        return {0.5: 17.0, 1.5: 19.0, 2.5: 21.0}.get(self.nu, 17.0 if self.nu == np.inf else 2 * d + 64)

    def values(self, X):
        # Same operations as sklearn (euclidean cdist, formula in r).
        if self.nu == np.inf:
            return np.exp(-0.5 * self._phi(X))
        r = cdist(np.asarray(X, dtype=np.float64) / self.length_scale, self.Zs, "euclidean")
        return self._psi_r(r)

    def _psi_r(self, r):
        if self.nu == 0.5:
            return np.exp(-r)
        if self.nu == 1.5:
            s = r * np.sqrt(3.0)
            return (1.0 + s) * np.exp(-s)
        if self.nu == 2.5:
            s = r * np.sqrt(5.0)
            return (1.0 + s + s**2 / 3.0) * np.exp(-s)
        return np.exp(-0.5 * r**2)

    def psi(self, phi):
        if self.nu == np.inf:
            return np.exp(-0.5 * phi)
        return self._psi_r(np.sqrt(phi))

    def dpsi(self, phi):
        if self.nu == np.inf:
            return -0.5 * np.exp(-0.5 * phi)
        r = np.sqrt(phi)
        if self.nu == 0.5:
            return -np.exp(-r) / (2.0 * r)
        if self.nu == 1.5:
            return -1.5 * np.exp(-np.sqrt(3.0) * r)
        s = np.sqrt(5.0) * r
        return -(5.0 / 6.0) * (1.0 + s) * np.exp(-s)

    def d2psi(self, phi):
        if self.nu == np.inf:
            return 0.25 * np.exp(-0.5 * phi)
        r = np.sqrt(phi)
        if self.nu == 0.5:
            return np.exp(-r) * (r + 1.0) / (4.0 * r**3)
        if self.nu == 1.5:
            return (3.0 * np.sqrt(3.0) / 4.0) * np.exp(-np.sqrt(3.0) * r) / r
        return (25.0 / 12.0) * np.exp(-np.sqrt(5.0) * r)

    def d3psi(self, phi):
        if self.nu == np.inf:
            return -0.125 * np.exp(-0.5 * phi)
        r = np.sqrt(phi)
        if self.nu == 0.5:
            return -np.exp(-r) * (r * r + 3.0 * r + 3.0) / (8.0 * r**5)
        if self.nu == 1.5:
            s3 = np.sqrt(3.0)
            return -(3.0 * s3 / 8.0) * np.exp(-s3 * r) * (s3 * r + 1.0) / r**3
        s5 = np.sqrt(5.0)
        return -(25.0 / 12.0) * (s5 / (2.0 * r)) * np.exp(-s5 * r)

    def rkhs_remainder(self):
        """nu = inf: the RBF's (sqrt(15) / 6, 3). nu = 2.5: (4.61, 2.5).
        nu = 0.5, 1.5: None (the feature map is twice differentiable into
        the RKHS only for nu > 2).

        Proof for nu = 2.5 (:meth:`StationaryAdapter.rkhs_remainder`): the
        profile kappa(r) = (1 + a r + a^2 r^2 / 3) exp(-a r), a = sqrt(5),
        is C^4 as an even function (its series 1 - 5 r^2 / 6 + 25 r^4 / 24
        - 5 sqrt(5) r^5 / 9 + ... has no r^3 term), with kappa^(4)(r) = (25
        / 3)(5 r^2 - 5 a r + 3) exp(-a r) for r >= 0, kappa^(4)(0) = 25, and
        kappa^(5)(r) = -(25 / 3)(5 a r^2 - 35 r + 8 a) exp(-a r), whose
        largest magnitude on r >= 0 is at r = 0+, 200 a / 3 = 149.0712
        (the polynomial factor is 8 a = 17.9 at 0 and above -9.4 between its
        roots 0.643 and 2.487, where exp(-a r) <= 0.24). So kappa^(4)(0) -
        kappa^(4)(r) <= 149.072 r, ||(D^2 k_y - D^2 k_c)[u^2]|| <= t^2
        sqrt(2 * 149.072 s t) for y = c + s u, and ||E_2(u)|| <= t^2.5
        sqrt(298.144) int_0^1 (1 - s) sqrt(s) ds = (4 / 15) sqrt(298.144)
        t^2.5 = 4.6045 t^2.5 (checked against the exact norm, 2 +
        kappa_u^(4)(0) / 4 - 2 kappa_u(1) + 2 kappa_u^(1)(1) -
        kappa_u^(2)(1), in 50-digit arithmetic: ratio 0.84 at t = 1e-3,
        0.17 at t = 10; tests/test_mean_rkhs.py).

        Returns
        -------
        remainder : tuple of (float, float) or None
            (C, p), or None.
        """
        if type(self).psi is not MaternAdapter.psi:  # a subclass's own profile: no claim
            return None
        if self.nu == np.inf:
            return _RBF_REMAINDER
        if self.nu == 2.5:
            return (4.61, 2.5)
        return None


class RationalQuadraticAdapter(StationaryAdapter):
    """RationalQuadratic: psi(phi) = (1 + phi / (2 alpha)) ** -alpha, phi = d^2 / l^2.

    Rounding. sklearn (and :meth:`values`) compute ``b = 1 + d2 / (2 alpha
    l^2)`` and then ``b ** -alpha``. The computed base is ``b (1 + e)`` with
    ``|e| <= u + t (d + 6) u / (1 + t)`` (t = phi / (2 alpha): the rounded
    sum 1 + t, and the (d + 6)-ulp error of the squared distance and the
    divisions carried by t), and ``(b (1 + e)) ** -alpha = b ** -alpha (1 +
    e) ** -alpha``, a relative error of at most ``expm1(alpha |e| (1 + 2u))``
    plus the power's own few ulps. For large alpha (fitted models often stop
    at sklearn's bound alpha = 1e5) that is ``alpha u`` relative, far beyond
    the few ulps per term of the relative margin ``margin_rtol``; since
    ``alpha t = phi / 2``, the exponent is at most ``alpha u + (phi / 2)
    (d + 6) u``. :meth:`rounding` adds twice this (sklearn's evaluation and
    ours) times the largest kernel value over the box to the input-rounding
    bound of :class:`StationaryAdapter`.
    """

    #: Smallest alpha with bounds here: below it the derivatives' constants
    #: (e.g. ``1 / (8 alpha^2)`` of :meth:`d3psi`) overflow or divide by 0.
    MIN_ALPHA = 1e-100

    def __init__(self, kernel, Xs):
        a = float(kernel.alpha)
        if not (np.isfinite(a) and a >= self.MIN_ALPHA):
            # alpha <= 0: (1 + phi / (2 alpha)) ** -alpha is not convex and
            # decreasing (alpha = -2: the polynomial (1 - phi / 4)^2), which
            # every bound here assumes (certified mean ranges were crossed);
            # alpha = inf: sklearn's value is 1 ** -inf = 1, not the RBF limit
            # that psi's derivatives give; tiny alpha: alpha^2 underflows.
            from ..exceptions import UnsupportedKernelError

            raise UnsupportedKernelError(
                f"RationalQuadratic with alpha={kernel.alpha!r} has no sound bounds here: alpha must be "
                f"finite and >= {self.MIN_ALPHA:g} (a fixed alpha <= 0 makes the kernel neither convex and "
                "decreasing in the distance nor a covariance)."
            )
        super().__init__(kernel, Xs)
        self.a = a

    #: PSD for alpha > 0 (a scale mixture of RBFs).
    psd = True
    #: RQ(l, alpha) ** e = RQ(l / sqrt(e), alpha e).
    infinitely_divisible = True

    def value_ulps(self, d):
        """1 (headroom; 0 is proven): :meth:`rounding` carries sklearn's whole
        evaluation, the base's alpha-fold relative error and the power's own
        16 u (``2 (expm1(...) + 8 u) khi``, class docstring), absolutely."""
        return 1.0

    def _rounding_ranges(self, lo, hi):
        """The stationary rounding plus the alpha-fold term (class docstring),
        over the widened phi-range [pL, pU] of the stationary part (which
        encloses phi over the box; before: the narrower ``_ranges``, a
        second pass over the distances)."""
        base, pL, pU = super()._rounding_ranges(lo, hi)
        d = lo.shape[1]
        u = 2.0**-53
        expo = (self.a * u + 0.5 * pU * (d + 6) * u) * (1.0 + 4.0 * u)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            khi = self.psi(pL)
            rel = np.expm1(np.minimum(expo, 700.0)) + 8.0 * u
            value = np.where(khi > 0, 2.0 * rel * khi, 0.0)
            # Past the cap (expo >= 700, or not a number) expm1 no longer
            # bounds the relative error, and the product may overflow: then
            # the trivial bound |k~ - k| <= max(k~, k) (both >= 0) <= T.
            # sklearn's base is b~ = fl(1 + t~) with t~ = t (1 + eta), |eta|
            # <= (d + 6) u (class docstring), and t >= pL / (2 alpha) (pL
            # encloses phi), so t~ >= tlo = fl(pL / (2 alpha)) (1 - 2 (d + 9)
            # u) (computed: our division and product err by u each, inside
            # the factor). Round-to-nearest is monotone: b~ >= blo = fl(1 +
            # tlo), the same operation sklearn's last addition is, so k~ =
            # fl(b~ ** -alpha) <= blo ** -alpha (1 + 16 u). And k = (1 + t) **
            # -alpha <= exp(-alpha log1p(tlo)) (real). Our power, log1p, exp
            # and product err by <= 16 u each (relative; exp also 2^-1071
            # absolute for subnormal results), inside the factors (1 +-
            # 2^-40) and the 2^-1070. Taken everywhere as min(value, T):
            # both are valid bounds, and T <= 1 + 2^-40.
            tlo = pL / (2.0 * self.a) * (1.0 - 2.0 * (d + 9) * u)
            Tsk = (1.0 + tlo) ** -self.a * (1.0 + 2.0**-40)
            Tk = np.exp(-self.a * np.log1p(tlo) * (1.0 - 2.0**-40)) * (1.0 + 2.0**-40) + 2.0**-1070
            trivial = 1.0 + 2.0**-40
            T = np.maximum(Tsk, Tk)
            T = np.where(np.isfinite(T) & (T <= trivial), T, trivial)
            value = np.where((expo < 700.0) & np.isfinite(value), np.minimum(value, T), T)
        return base + value, pL, pU

    def coefficient_ulps(self):
        """2 expm1((alpha + 3) u (1 + 2 u)) / u (about 2 (alpha + 3) while
        alpha u is small): the computed base b = fl(1 + t) carries a rounding
        of u (relative), which the power -alpha and the k <= 3 divisions by
        b of the derivatives (:meth:`dpsi`: psi / b, ...; the exponent -alpha
        is exact, -alpha - k would not be) turn into a relative error of at
        most (1 + u)^(alpha + 3) - 1 <= expm1((alpha + 3) u (1 + 2 u)); 2x
        headroom. The errors carried by t itself act as a relative error of
        phi and are covered by the models' terms in |phi| (module docstring
        of ``_radial``; a few u more than the (d + 2) u counted there, inside
        margin_rtol's 8 d u). The power's own 8 ulps and the divisions' u
        are in the 40 u budget. Infinite (no model) past overflow.

        Returns
        -------
        ulps : float
            The extra relative error of psi and its derivatives, in u.
        """
        u = 2.0**-53
        with np.errstate(over="ignore"):
            return float(2.0 * np.expm1((self.a + 3.0) * u * (1.0 + 2.0 * u)) / u)

    def _one_minus_psi_upper(self, phi):
        """1 - (1 + t)^-alpha = -expm1(-alpha log1p(t)), t = phi / (2 alpha):
        log1p, the product and expm1 are each accurate to a few ulps
        relative, and -expm1(-y) increases with y, so t and y enlarged by
        1e-12 relative and the result by 1e-12 bound it above (the computed
        pow of a base near 1 errs by ~alpha u: 107x too small a bound at
        alpha = 1e5, phi ~ 1e-11, soundness hunt)."""
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            t = phi * (1.0 + 1e-12) / (2.0 * self.a) * (1.0 + 1e-12)
            y = self.a * np.log1p(t) * (1.0 + 1e-12)
            return np.minimum(-np.expm1(-y) * (1.0 + 1e-12), 1.0)

    def values(self, X):
        d2 = cdist(np.asarray(X, dtype=np.float64), self.Xs, "sqeuclidean")
        return (1 + d2 / (2 * self.a * float(self.kernel.length_scale) ** 2)) ** -self.a

    # The derivatives divide psi by the base (the exponent -alpha is exact;
    # -alpha - k is not for most alpha < 1, and its rounding would err by
    # ~(alpha + k) u log(b) relative: 400 u at alpha 0.7, log b = 200).
    _has_log_psi = True

    def _log_psi(self, phi):
        """-alpha log1p(t), t = (phi / 2) / alpha.

        Error. phi / 2 is exact but for a subnormal result (2^-1075), and the
        division rounds once: t~ = t (1 + eta) + tau, |eta| <= u, |tau| <=
        2^-1074 (no overflow of 2 alpha: alpha up to the largest float). Then
        |log1p(t~) - log1p(t)| <= |eta| t / (1 + t) (1 + 2 u) + |tau| <= 1.01 u
        log1p(t) + 2^-1074 (t / (1 + t) <= log1p(t); log1p' <= 1); numpy's
        log1p errs by 16 u relative and the product by alpha by u of |L~|.
        Total <= 19 u |L| (1 + O(u)) + alpha 2^-1074, bounded here by 20 u |L~|
        (1 + 2^-40) + (alpha + 1) 2^-1073 (referee, session 27: the subnormal t
        and the overflow of 2 alpha were missing).
        """
        phi = np.asarray(phi, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            L = -self.a * np.log1p((0.5 * phi) / self.a)
            err = 20.0 * 2.0**-53 * np.abs(L) * (1.0 + 2.0**-40) + (self.a + 1.0) * 2.0**-1073
        return L, err

    def _dlog_psi(self, phi):
        """-1 / (2 (1 + t)): three roundings of non-negative terms."""
        return -0.5 / (1.0 + (0.5 * np.asarray(phi, dtype=np.float64)) / self.a)

    def psi(self, phi):
        return (1.0 + phi / (2.0 * self.a)) ** -self.a

    def dpsi(self, phi):
        b = 1.0 + phi / (2.0 * self.a)
        return -0.5 * (b**-self.a / b)

    def d2psi(self, phi):
        b = 1.0 + phi / (2.0 * self.a)
        return (self.a + 1.0) / (4.0 * self.a) * (b**-self.a / b / b)

    def d3psi(self, phi):
        a = self.a
        b = 1.0 + phi / (2.0 * a)
        return -(a + 1.0) * (a + 2.0) / (8.0 * a * a) * (b**-a / b / b / b)

    def rkhs_remainder(self):
        """(sqrt(15 (1 + 1/alpha)(1 + 2/alpha)) / 6, 3): kappa_u(z) = (1 + z^2
        t^2 / (2 alpha))^-alpha has the z^6 coefficient binom(-alpha, 3)
        (t^2 / (2 alpha))^3 = -alpha (alpha + 1)(alpha + 2) t^6 / (48
        alpha^3), so kappa_u^(6)(0) = -15 (1 + 1/alpha)(1 + 2/alpha) t^6 (the
        RBF's 15 as alpha -> inf; :meth:`StationaryAdapter.rkhs_remainder`).
        Rounded up by 1 + 1e-12.

        Returns
        -------
        remainder : tuple of (float, float)
            (C, p).
        """
        if type(self).psi is not RationalQuadraticAdapter.psi:  # a subclass's own profile: no claim
            return None
        a = self.a
        return (float(np.sqrt(15.0 * (1.0 + 1.0 / a) * (1.0 + 2.0 / a))) / 6.0 * (1.0 + 1e-12), 3.0)


class PoweredStationaryAdapter(StationaryAdapter):
    """Exponentiation psi(phi) ** e of a stationary kernel, e > 0.

    Convexity. psi^e is convex and decreasing in phi, so the relaxation of
    :class:`StationaryAdapter` applies: (psi^e)'' = e psi^(e-2) ((e-1)
    psi'^2 + psi psi''). For e >= 1 both terms are >= 0 (psi convex). For 0
    < e < 1 it needs psi psi'' >= (1 - e) psi'^2, which holds because every
    base with a log-domain form is log-convex in phi (psi psi'' >= psi'^2):
    RBF (log psi = -phi / 2), RationalQuadratic (-alpha log(1 + phi / (2
    alpha)), convex), Matern (a covariance in every dimension, so
    completely monotone in phi = r^2 by Schoenberg's theorem, hence a
    mixture of exponentials and log-convex), and powers of those (log psi^e
    = e log psi). ``tests/test_kernels.py`` checks second differences.

    Evaluation. For e >= 1, psi^e = psi_b^e from the base's float psi (an
    underflowing psi_b only makes psi^e smaller). For 0 < e < 1
    (``log_domain``) psi^e = exp(e L) and (psi^e)' = e L' exp(e L) with (L,
    err) the base's :meth:`_log_psi`: computing psi_b first and raising it
    flushed psi_b ~ 1e-340 (RBF ** 0.3, 20 features, 30 length scales away)
    to 0 while the exact psi_b^0.3 is 1e-102, and the intervals excluded
    the kernel (session 26, reverted; ``test_value_ulps_and_rounding_cover_
    sklearn_values_slow[rbf**0.3]``). Our own evaluation then errs by at
    most ``rel`` relative (see :meth:`_rounding_ranges`), which
    :meth:`rounding` carries absolutely, as RationalQuadratic's alpha-fold
    error is. Only bases with ``_has_log_psi`` take fractional exponents;
    others keep the generic interval-type adapter.
    """

    def __init__(self, kernel, base):
        KernelAdapter.__init__(self, kernel, base.Xs)
        self.base, self.e = base, float(kernel.exponent)
        self.length_scale, self.inv_ls2, self.Zs = base.length_scale, base.inv_ls2, base.Zs
        #: psi^e = exp(e log psi_b) (0 < e < 1; class docstring).
        self.log_domain = self.e < 1.0
        #: log of a constant factor a > 0 evaluated inside the exponent, a
        #: psi^e = exp(log a + e log psi_b) (log domain only; 0: none). Set by
        #: :class:`~.composite.ScaledPowerAdapter` on its own copy, so that a
        #: huge a times an underflowed psi^e is never formed.
        self.log_scale = 0.0
        if self.log_domain and not base._has_log_psi:
            raise ValueError(f"{type(base).__name__} has no log-domain psi: exponent {self.e} needs it.")
        self._has_log_psi = base._has_log_psi
        integer = self.e == int(self.e)
        self.psd = bool(base.psd and (integer or base.infinitely_divisible))
        self._dominated = bool(base.dominated)
        self.infinitely_divisible = base.infinitely_divisible

    def _one_minus_psi_upper(self, phi):
        """1 - psi_b^e = -expm1(e log1p(-m)), m = 1 - psi_b in [0, 1]: increasing
        in m, so the base's upper bound of m (its own accurate form) and
        enlargements by 1e-12 relative bound it above."""
        with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
            m = np.minimum(self.base._one_minus_psi_upper(phi), 1.0)
            y = -self.e * np.log1p(-m) * (1.0 + 1e-12)
            return np.where(m >= 1.0, 1.0, np.minimum(-np.expm1(-y) * (1.0 + 1e-12), 1.0))

    def values(self, X):
        return self.base.values(X) ** self.e

    def _log_psi(self, phi):
        """e L_b and (e err_b + u |e L_b|) (1 + 2^-40) + 2^-1074 (the
        product's rounding, and e err_b's, u relative or half the smallest
        subnormal absolute): nested powers ((RBF ** 0.5) ** 0.5) stay in the
        log domain."""
        L, err = self.base._log_psi(phi)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            eL = self.e * L
            return eL, (self.e * err + 2.0**-53 * np.abs(eL)) * (1.0 + 2.0**-40) + 2.0**-1074

    def _dlog_psi(self, phi):
        """e L_b': one more rounding (within the 8 u of :meth:`_log_psi`'s
        contract only for bases at <= 7 u; the callers' ``rel`` budgets 10 u
        per product level, see :meth:`_rounding_ranges`)."""
        return self.e * self.base._dlog_psi(phi)

    def psi(self, phi):
        if self.log_domain:
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                return np.exp(self.log_scale + self.e * self.base._log_psi(phi)[0])
        return self.base.psi(phi) ** self.e

    def dpsi(self, phi):
        if self.log_domain:
            with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
                return self.e * self.base._dlog_psi(phi) * np.exp(self.log_scale + self.e * self.base._log_psi(phi)[0])
        return self.e * self.base.psi(phi) ** (self.e - 1.0) * self.base.dpsi(phi)

    def rounding(self, lo, hi):
        """Rounding of fl(b~ ** e), b~ the base kernel's computed value:
        :func:`~skgprobust.kernels._base.power_rounding` (proof there) with the
        base's own :meth:`rounding` E_b (which includes everything specific
        to the base, e.g. the alpha-fold rounding of a RationalQuadratic's
        base) and its relative constant c_b = ``base.value_ulps(d)``, b in
        [psi_b(pU), psi_b(pL)] (phi-range widened by 1e-10 relative): e
        (b (1 + c_b u) + E_b)^(e - 1) E_b + b^e expm1(e c_b u (1 + 2 c_b u)),
        the base's relative rounding amplified e-fold for every e (before:
        4 u b to first order, short of the exp's 16 u and of large e), and
        numpy's power in :meth:`value_ulps`. Without the base's own rounding
        certified point bounds of ``RationalQuadratic(alpha=1e5) ** e`` (e =
        1, 2) excluded sklearn's predict by up to 2e-5
        (``tests/test_rounding.py``).
        """
        return self._rounding_ranges(lo, hi)[0]

    def _rounding_ranges(self, lo, hi):
        """:meth:`rounding` from the base's rounding and widened phi-range
        (same length scales: one ``cdist`` for the whole tower of powers)."""
        lo, hi = as_boxes(lo, hi)
        d = lo.shape[1]
        eb, pL, pU = self.base._rounding_ranges(lo, hi)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            b = self.base.psi(np.maximum(pL * (1.0 - 1e-10), 0.0))
            blo = self.base.psi(pU * (1.0 + 1e-10))
        R = power_rounding(self.e, b, blo, eb, self.base.value_ulps(d), None, True)
        if self.log_domain:
            R = R + self._own_rounding(pL, pU)
        return R, pL, pU

    def _own_rounding(self, pL, pU):
        """Bound of our own evaluation's error, absolute per term, over the
        phi-range [pL, pU] (log domain, 0 < e < 1).

        psi~ = fl(exp(fl(e L~))) with |L~ - L| <= err (:meth:`_log_psi`): the
        exponent errs by <= x = e err + u |e L~| (1 + 2^-40), so psi~ = psi^e
        exp(delta) (1 + pi), |delta| <= x, |pi| <= 16 u (numpy's exp, the
        platform assumption; 2^-1071 absolute for a subnormal result, inside
        ``SUBNORMAL``): relative error <= rel0 = expm1(x) (1 + 16 u) + 16 u.
        dpsi~ = fl(fl(e L'~) psi~) adds L'~'s 8 u and two products: rel1 =
        rel0 + 10 u (first order; the doubling below covers the rest). err
        and |L~| increase with phi (every _log_psi here is decreasing and its
        error bound increasing), so their values at pU (the range's largest
        phi) bound them on the range. The relaxation's lines are built from
        psi~ and dpsi~ at phi in the range (the tangent at pm: its value at
        any phi of the range moves by <= rel0 psi(pm) + rel1 |psi'(pm)| |phi
        - pm| <= (rel0 + rel1) psi(pL), as |psi'(pm)| (pm - pL) <= psi(pL) -
        psi(pm) by convexity; the chord: by the larger end's error <= rel0
        psi(pL)), so 2 (rel0 + rel1) khi bounds the error of every line, of
        the interval ends and of the enclosure, khi = exp(e (L~(pL) +
        err(pL))) (1 + 2^-40) >= psi^e on the range. Past expm1's reach (x
        >= 700: phi astronomically large) the bound is infinite (never
        wrong). With a constant inside the exponent (``log_scale`` = fl(log
        a), numpy's log within 8 ulps: 16 u |log a|), the exponent fl(ls +
        fl(e L~)) also errs by u |ls + e L~| <= u (|ls| + |e L~|) and by the
        log's 16 u |ls|: x gains 17 u |ls| + u |e L~|, and khi = exp(ls + e
        (L~(pL) + err(pL)) + 16 u |ls|) bounds a psi^e on the range."""
        u = 2.0**-53
        ls = float(self.log_scale)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            LU, eU = self.base._log_psi(pU)
            x = (self.e * eU + 2.0 * u * np.abs(self.e * LU) + 17.0 * u * abs(ls)) * (1.0 + 2.0**-40)
            rel0 = np.expm1(np.minimum(x, 700.0)) * (1.0 + 16.0 * u) + 16.0 * u
            rel = 2.0 * rel0 + 10.0 * u
            LL, eL = self.base._log_psi(pL)
            khi = np.exp(ls + self.e * (LL + eL) + 16.0 * u * abs(ls)) * (1.0 + 2.0**-40) + SUBNORMAL
            out = 2.0 * rel * khi * WIDEN + SUBNORMAL
        return np.where((x < 700.0) & np.isfinite(out), out, np.inf)

    def value_ulps(self, d):
        """17: numpy's power within 8 ulps and one of headroom (the base's
        relative rounding is in :meth:`rounding`)."""
        return 17.0

    def diag_ulps(self, d):
        """``(e c + 16)(1 + 2^-20)``, c the base's: sklearn's diag is
        fl(fl(b) ** e), (b (1 + delta)) ** e = b ** e (1 + delta) ** e (e c u
        relative, first order) and numpy's power within 8 ulps (16 u, the
        documented assumption of :mod:`skgprobust.kernels.polynomial`)."""
        return (abs(self.e) * self.base.diag_ulps(d) + 16.0) * (1.0 + 2.0**-20)

    # (psi^e)'' need not be monotone: no Taylor model, the relaxation is used.
    def taylor(self, lo, hi, w, ranges=None):
        return None
