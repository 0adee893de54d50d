"""Adapters for Sum, Product and Exponentiation of supported kernels."""

import numpy as np
from sklearn.gaussian_process.kernels import ConstantKernel

from ..exceptions import UnsupportedKernelError
from ._base import (
    SUBNORMAL,
    WIDEN,
    KernelAdapter,
    Relaxation,
    interval_lower,
    power_rounding,
    widen_enclosure,
    widen_for_coefficient_ulps,
)
from ._radial import parts_of, product_parts, radial_geometry, radial_polynomial_taylor, radial_taylor


def _interval_product(a1, b1, a2, b2):
    c = np.stack([a1 * a2, a1 * b2, b1 * a2, b1 * b2])
    return c.min(0), c.max(0)


_U = 2.0**-53  # unit roundoff


class SumAdapter(KernelAdapter):
    """k1 + k2: every bound adds up (the joint relaxation is minimised jointly).

    Rounding constant (:meth:`mean_rtol`). When both children prove their own
    constant r1, r2 (below the default ``margin_rtol``: dot-product powers,
    ``WhiteKernel``, ``C * k`` and sums of these), the sum's is
    ``max(r1, r2) + 2 u``. Proof. Let mag_c = the children's magnitudes (the
    sum's ``mag`` is mag1 + mag2) and v the weights of the model's
    ``predict``. sklearn's ``Sum.__call__(X, Y)`` returns ``k1(X, Y) +
    k2(X, Y)`` elementwise: k~ = fl(k~1 + k~2) = (k~1 + k~2)(1 + d), |d| <=
    u, one rounding more than the children's values, which changes
    ``sum_i v_i k~_i`` by at most u sum_i |v_i| (|k~1_i| + |k~2_i|) <=
    u (mag1 + mag2) (1 + O(N u)). Everything else that a child's constant
    covers is *subadditive* in the terms: the N-term sum fl(K~ @ v) errs by
    <= gamma_N sum_i |v_i| |k~_i| <= gamma_N (sum_i |v_i k~1_i| + sum_i
    |v_i k~2_i|), the children's own relative roundings (powers, constant
    factors) are per term, and the scaling, the offset and affine_lower's
    last steps occur once for the sum (each child's constant has room for
    them relative to mag_c + |c|). So r1 mag1 + r2 mag2 + u (mag1 + mag2) +
    (the once-only steps, <= max(r1, r2) |c|) <= (max(r1, r2) + u)(mag +
    |c|); the second u covers second-order terms (products of u with the
    children's relative errors, the rounding of mag1 + mag2 itself). Nested
    sums add 2 u per level, as sklearn adds one rounding per level.

    Our side: the children fold their own evaluation error into their
    bounds (:mod:`skgprobust.kernels.polynomial`, part (F)), including the
    downstream use of their coefficients (the separable minimum, the Taylor
    model's bound); those error bounds are sums of u times magnitudes of the
    coefficients, hence subadditive, so they cover the same computation on
    the summed coefficients. What they do not cover is the rounding of the
    additions r1 + r2 and t1 + t2 themselves: one rounding per coefficient,
    relative to |coef1| + |coef2|. :meth:`linearise` subtracts twice that
    effect as an absolute amount (for the relaxation: u (|const1| + |const2|
    + sum_j (|alpha1_j| + |alpha2_j|) h_j^2 + (|beta1_j| + |beta2_j|) h_j)
    bounds the change of the separable minimum; for the interval bound
    u (|ilb1| + |ilb2|); for the Taylor model u (|V1| + |V2| + sum_j
    (|G1_j| + |G2_j|) h_j + (|D1_j| + |D2_j|) h_j^2 + (d + 1)/2 sum_jl
    (|M1_jl| + |M2_jl|) h_j h_l + |rem1| + |rem2|). These bound, over the
    whole box, the difference between the model with the rounded sums and
    the exact sum of the two models, so the minimum of the one is at most
    that far below the minimum of the other, whichever sound method bounds
    it (the (d + 1) / 2 on M, rather than 1/2, also covers the eigenvalue
    bound's dependence on the matrix: Weyl, lambda_min moves by <= u sum_jl
    |A1_jl| + |A2_jl|, times |v|^2 / 2 <= d / 2); the factor 2 covers the
    rounding of those amounts. Without a constant of its own the sum uses the default,
    which has room for all of this, and the bounds are unchanged.
    """

    def __init__(self, kernel, Xs, make):
        super().__init__(kernel, Xs)
        self.k1, self.k2 = make(kernel.k1, Xs), make(kernel.k2, Xs)
        self.nonnegative = self.k1.nonnegative and self.k2.nonnegative
        self.psd = bool(self.k1.psd and self.k2.psd)
        self._dominated = bool(self.k1.dominated and self.k2.dominated)
        # A1 + A2 = |k1| + |k2| = k1 + k2 only for non-negative children.
        self.magnitude_is_value = self.nonnegative and self.k1.magnitude_is_value and self.k2.magnitude_is_value

    def _own_constant(self, n_support, n_features):
        """max(r1, r2) + 2 u when both children have a constant of their own
        (below the default), else None."""
        default = KernelAdapter.mean_rtol(self, n_support, n_features)
        r1 = self.k1.mean_rtol(n_support, n_features)
        r2 = self.k2.mean_rtol(n_support, n_features)
        if r1 >= default or r2 >= default:
            return None
        r = max(r1, r2) + 2.0 * _U
        return r if r < default else None

    def mean_rtol(self, n_support, n_features):
        """``max(r1, r2) + 2 u`` when both children prove their own constant;
        otherwise the default (proof in the class docstring)."""
        r = self._own_constant(n_support, n_features)
        return KernelAdapter.mean_rtol(self, n_support, n_features) if r is None else r

    def values(self, X):
        return self.k1.values(X) + self.k2.values(X)

    def register_rkhs_weights(self, W):
        """Both children see the sum's weights (:meth:`taylor` passes them on)."""
        self.k1.register_rkhs_weights(W)
        self.k2.register_rkhs_weights(W)

    def value_and_grad(self, X):
        K1, G1 = self.k1.value_and_grad(X)
        K2, G2 = self.k2.value_and_grad(X)
        return K1 + K2, G1 + G2

    def first_order(self, c, h1):
        """Both children's models added (see
        :meth:`KernelAdapter.first_order`): r = r1 + r2 exactly, and J~ =
        fl(J1 + J2) differs from J1 + J2 by at most u |J~| / (1 - u) per
        entry, which moves J . u by at most 1.01 u sum_j |J~_ij| h1_j; the
        few additions of non-negative numbers forming delta are covered by
        the factor 1 + (2 d + 8) u. None if a child has none (or for a
        subclass, which may compute something else).

        Parameters
        ----------
        c : ndarray of shape (B, d)
            Expansion points.
        h1 : ndarray of shape (B, d)
            Half-widths.

        Returns
        -------
        model : tuple of (ndarray, ndarray) or None
            ``(J, delta)``.
        """
        if type(self) is not SumAdapter:
            return None
        m1 = self.k1.first_order(c, h1)
        m2 = None if m1 is None else self.k2.first_order(c, h1)
        if m2 is None:
            return None
        d = np.atleast_2d(c).shape[1]
        J = m1[0] + m2[0]
        with np.errstate(over="ignore", invalid="ignore"):
            rnd = np.einsum("bnd,bd->bn", 1.01 * _U * np.abs(J) + 2.0**-1070, np.atleast_2d(h1))
            delta = (m1[1] + m2[1] + rnd) * (1.0 + (2 * d + 8) * _U) + 2.0**-1060
        return J, np.where(np.isnan(delta), np.inf, delta)

    def interval(self, lo, hi):
        l1, h1 = self.k1.interval(lo, hi)
        l2, h2 = self.k2.interval(lo, hi)
        return l1 + l2, h1 + h2

    def rounding(self, lo, hi):
        """``(R1 + R2) WIDEN``. sklearn's ``Sum`` returns fl(k~1 + k~2): with
        |k~j - kj| <= Rj + cj u Aj (the children's contracts,
        :meth:`~skgprobust.kernels.KernelAdapter.value_ulps`), |fl(k~1 + k~2) -
        k| <= (R1 + R2)(1 + u) + (max(c1, c2) + 1 + max(c1, c2) u) u (A1 +
        A2), and A = A1 + A2: the absolute part here, the relative one in
        :meth:`value_ulps` (an addition never underflows inexactly)."""
        return (self.k1.rounding(lo, hi) + self.k2.rounding(lo, hi)) * WIDEN

    def rounding_parts(self, lo, hi):
        """Children's parts added (A1 + A2 widened by 1e-12 for its own rounding)."""
        R1, l1, h1, A1 = self.k1.rounding_parts(lo, hi)
        R2, l2, h2, A2 = self.k2.rounding_parts(lo, hi)
        l, h, _ = widen_enclosure(l1 + l2, h1 + h2)
        return (R1 + R2) * WIDEN, l, h, (A1 + A2) * (1.0 + 1e-12)

    def value_ulps(self, d):
        """``(max(c1, c2) + 1)(1 + 2^-20)`` (proof in :meth:`rounding`; the
        factor covers max(c) u <= 2^-21)."""
        return (max(self.k1.value_ulps(d), self.k2.value_ulps(d)) + 1.0) * (1.0 + 2.0**-20)

    def diag(self, X):
        return self.k1.diag(X) + self.k2.diag(X)

    def diag_ulps(self, d):
        """``(max(c1, c2) + 1)(1 + 2^-20)``: fl(d1~ + d2~) of two
        non-negative diagonals."""
        return (max(self.k1.diag_ulps(d), self.k2.diag_ulps(d)) + 1.0) * (1.0 + 2.0**-20)

    def diag_interval(self, lo, hi):
        l1, h1 = self.k1.diag_interval(lo, hi)
        l2, h2 = self.k2.diag_interval(lo, hi)
        return l1 + l2, h1 + h2

    def relax(self, lo, hi, w):
        if self._own_constant(w.shape[-1], lo.shape[1]) is None:
            return self.k1.relax(lo, hi, w) + self.k2.relax(lo, hi, w)
        return self.linearise(lo, hi, w)[0]

    def diag_taylor(self, lo, hi, sign=1.0):
        """The children's models added (k(x, x) = k1(x, x) + k2(x, x)); None
        if either has none."""
        m1 = self.k1.diag_taylor(lo, hi, sign)
        m2 = None if m1 is None else self.k2.diag_taylor(lo, hi, sign)
        return None if m2 is None else m1 + m2

    def rkhs_increment(self, lo, hi):
        """D1 + D2: the feature map of k1 + k2 is (f1, f2)."""
        with np.errstate(over="ignore", invalid="ignore"):
            D = (self.k1.rkhs_increment(lo, hi) + self.k2.rkhs_increment(lo, hi)) * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    def taylor(self, lo, hi, w):
        if self._own_constant(w.shape[-1], lo.shape[1]) is None:
            t1 = self.k1.taylor(lo, hi, w)
            return None if t1 is None else t1 + self.k2.taylor(lo, hi, w)
        return self.linearise(lo, hi, w)[1]

    def linearise(self, lo, hi, w):
        r1, t1 = self.k1.linearise(lo, hi, w)
        r2, t2 = self.k2.linearise(lo, hi, w)
        rel, tm = r1 + r2, (None if t1 is None or t2 is None else t1 + t2)
        if self._own_constant(w.shape[-1], lo.shape[1]) is None:
            return rel, tm
        # The additions' own rounding (class docstring), subtracted as an
        # absolute amount so that mean_rtol need not cover it.
        h = 0.5 * (hi - lo)
        h2 = h * h
        with np.errstate(invalid="ignore", over="ignore"):
            e = (np.abs(r1.const) + np.abs(r2.const) + ((np.abs(r1.alpha) + np.abs(r2.alpha)) * h2).sum(-1)
                 + ((np.abs(r1.beta) + np.abs(r2.beta)) * h).sum(-1))
            rel.const = rel.const - 2.0 * _U * e
            rel.ilb = rel.ilb - 2.0 * _U * (np.abs(r1.ilb) + np.abs(r2.ilb))
            if tm is not None:
                d = lo.shape[1]
                absM = np.abs(t1.M) + np.abs(t2.M)
                et = (np.abs(t1.value) + np.abs(t2.value) + ((np.abs(t1.grad) + np.abs(t2.grad)) * h).sum(-1)
                      + ((np.abs(t1.diag) + np.abs(t2.diag)) * h2).sum(-1)
                      + 0.5 * (d + 1) * np.einsum("bj,bjl,bl->b", h, absM, h)
                      + np.abs(t1.rem) + np.abs(t2.rem))
                tm.rem = tm.rem - 2.0 * _U * et
        return rel, tm


class ProductAdapter(KernelAdapter):
    """k1 * k2. A constant factor scales the other's weights (exact); otherwise
    McCormick envelopes of k1 k2 (paper Prop. 18), each linear in k1 and k2,
    whose two relaxations are then added. Per box and support point the
    envelope with the smaller gap at the box centre is used.

    Taylor model: when both factors are *radial* (functions of the plain
    squared distance s = ||x - x_i||^2: isotropic stationary kernels,
    ExpSineSquared, constants and their products; every stationary kernel in
    one dimension), so is the product, psi = psi_1 psi_2, and
    :func:`._radial.radial_taylor` builds its second-order model with a
    third-order remainder from the Leibniz rule (:func:`._radial.product_parts`:
    exact centre derivatives, derivative ranges by interval arithmetic).
    A radial factor, or an anisotropic stationary one (RBF, Matern,
    RationalQuadratic), times a dot-product power (constants allowed on either
    side): the multivariate second-order model of
    :func:`._radial.radial_polynomial_taylor` (Leibniz rule along segments,
    third-order remainder). Otherwise there is no Taylor model (None).
    """

    #: Largest RationalQuadratic alpha for which a product with a dot
    #: product gets a Taylor model (``_radial_polynomial_taylor``): its
    #: coefficients then err by <= (alpha + 3) 2u <= 70 u, inside the 256 u
    #: constant of the relative margin.
    RQ_TAYLOR_ALPHA = 32.0

    def __init__(self, kernel, Xs, make):
        super().__init__(kernel, Xs)
        self.k1, self.k2 = make(kernel.k1, Xs), make(kernel.k2, Xs)
        self.nonnegative = self.k1.nonnegative and self.k2.nonnegative
        # Schur product theorem; (k1 k2) ** e = k1 ** e k2 ** e.
        self.psd = bool(self.k1.psd and self.k2.psd)
        self._dominated = bool(self.k1.dominated and self.k2.dominated)
        self.infinitely_divisible = bool(self.k1.infinitely_divisible and self.k2.infinitely_divisible)
        self.magnitude_is_value = self.k1.magnitude_is_value and self.k2.magnitude_is_value
        self.const = None
        if type(kernel.k1) is ConstantKernel:
            self.const, self.other = float(kernel.k1.constant_value), self.k2
        elif type(kernel.k2) is ConstantKernel:
            self.const, self.other = float(kernel.k2.constant_value), self.k1

    def values(self, X):
        return self.k1.values(X) * self.k2.values(X)

    def register_rkhs_weights(self, W):
        """A constant factor c: the other factor's Taylor model sees the
        weights c w (:meth:`taylor`), registered as that same float product.
        Other products have no RKHS remainder."""
        if self.const is not None:
            self.other.register_rkhs_weights(self.const * np.asarray(W, dtype=np.float64))

    def value_and_grad(self, X):
        K1, G1 = self.k1.value_and_grad(X)
        K2, G2 = self.k2.value_and_grad(X)
        return K1 * K2, K1[:, :, None] * G2 + K2[:, :, None] * G1

    def first_order(self, c, h1):
        """A constant factor times the other factor's model (see
        :meth:`KernelAdapter.first_order`): r = const r_o exactly (the
        float constant), J~ = fl(const J_o) within u |J~| / (1 - u) of const
        J_o, and |const| delta_o bounds the rest. None for other products
        (and for subclasses, which compute something else).

        Parameters
        ----------
        c : ndarray of shape (B, d)
            Expansion points.
        h1 : ndarray of shape (B, d)
            Half-widths.

        Returns
        -------
        model : tuple of (ndarray, ndarray) or None
            ``(J, delta)``.
        """
        if type(self) is not ProductAdapter or self.const is None:
            return None
        m = self.other.first_order(c, h1)
        if m is None:
            return None
        d = np.atleast_2d(c).shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            J = self.const * m[0]
            # the product's rounding: u relative, or 2^-1074 absolute per
            # entry where it is subnormal (2^-1070 with headroom)
            rnd = np.einsum("bnd,bd->bn", 1.01 * _U * np.abs(J) + 2.0**-1070, np.atleast_2d(h1))
            delta = (abs(self.const) * m[1] + rnd) * (1.0 + (2 * d + 8) * _U) + 2.0**-1060
        return J, np.where(np.isnan(delta), np.inf, delta)

    def interval(self, lo, hi):
        if self.const is not None:
            l, h = self.other.interval(lo, hi)
            return (self.const * l, self.const * h) if self.const >= 0 else (self.const * h, self.const * l)
        l1, h1 = self.k1.interval(lo, hi)
        l2, h2 = self.k2.interval(lo, hi)
        return _interval_product(l1, h1, l2, h2)

    def rounding(self, lo, hi):
        """Absolute part of the rounding of sklearn's fl(k~1 k~2).

        With |k~j - kj| = |ej| <= Rj + cj u Aj (children's contracts, Aj their
        term magnitudes, |kj| <= min(mj, Aj), mj the interval maximum, Aj <=
        Ahat_j = ``magnitude``) and A = A1 A2:

            |fl(k~1 k~2) - k1 k2| <= |k~1| |e2| + |k2| |e1| + u |k~1 k~2| + 2^-1075

        and expanding |k~1| <= |k1| + R1 + c1 u A1, |k~2| likewise:
        |k~1| |e2| <= (m1 + R1 + c1 u Ahat1) R2 + c2 u A + c2 u Ahat2 R1 +
        c1 c2 u^2 A; |k2| |e1| <= m2 R1 + c1 u A; u |k~1 k~2| <= u (1 + c1 u)(1
        + c2 u) A + u (1 + c1 u) Ahat1 R2 + u (1 + c2 u) Ahat2 R1 + u R1 R2.
        Relative part: (c1 + c2 + 1)(1 + 2^-20) u A (:meth:`value_ulps`, for
        cj u <= 2^-21); absolute part:
        ``[(m1 + R1 + (c1 + 2) u Ahat1) R2 + (m2 + (c2 + 2) u Ahat2) R1] WIDEN
        + SUBNORMAL``. (The cross terms c u Ahat R were missing before; the
        relative parts of the children were assumed to fit the few-ulps
        convention.)

        Constant factor C: fl(C k~) = C k~ (1 + delta): |.| <= |C| R (1 + u) +
        (c + 1 + c u) u |C| A_o, A = |C| A_o: ``|C| R WIDEN + SUBNORMAL``.
        """
        if self.const is not None:
            return abs(self.const) * self.other.rounding(lo, hi) * WIDEN + SUBNORMAL
        return self.rounding_parts(lo, hi)[0]

    def rounding_parts(self, lo, hi):
        """:meth:`rounding` with the product's enclosure (interval product of
        the children's) and A1 A2 (|C| A), from one pass over the children."""
        if self.const is not None:
            R, l, h, A = self.other.rounding_parts(lo, hi)
            C = self.const
            l, h, _ = widen_enclosure(*((C * l, C * h) if C >= 0 else (C * h, C * l)))
            return abs(C) * R * WIDEN + SUBNORMAL, l, h, abs(C) * A * (1.0 + 1e-12) + SUBNORMAL
        d = lo.shape[1]
        e1, l1, h1, a1 = self.k1.rounding_parts(lo, hi)
        e2, l2, h2, a2 = self.k2.rounding_parts(lo, hi)
        m1 = np.maximum(np.abs(l1), np.abs(h1)) * (1.0 + 1e-6)
        m2 = np.maximum(np.abs(l2), np.abs(h2)) * (1.0 + 1e-6)
        c1, c2 = self.k1.value_ulps(d), self.k2.value_ulps(d)
        with np.errstate(over="ignore", invalid="ignore"):
            out = ((m1 + e1 + (c1 + 2.0) * _U * a1) * e2 + (m2 + (c2 + 2.0) * _U * a2) * e1) * WIDEN
            A = a1 * a2 * (1.0 + 1e-12) + SUBNORMAL  # underflow: still >= A
        with np.errstate(over="ignore", invalid="ignore"):
            lo_k, hi_k, _ = widen_enclosure(*_interval_product(l1, h1, l2, h2))
        return np.where(np.isnan(out), np.inf, out) + SUBNORMAL, lo_k, hi_k, A

    def value_ulps(self, d):
        """``(c1 + c2 + 1)(1 + 2^-20)``; with a constant factor ``(c + 1)(1 +
        2^-20)`` (``ConstantKernel`` values are exact). Proof in :meth:`rounding`."""
        if self.const is not None:
            return (self.other.value_ulps(d) + 1.0) * (1.0 + 2.0**-20)
        return (self.k1.value_ulps(d) + self.k2.value_ulps(d) + 1.0) * (1.0 + 2.0**-20)


    def _term_magnitude(self, lo, hi, a1, b1, a2, b2):
        """(B, N) upper bound of A1 A2 over each box (the term magnitude of
        :meth:`value_ulps`): a child whose A is |k| (``magnitude_is_value``)
        from its interval [a, b] (widened by 1e-6 against its rounding),
        another from its :meth:`~skgprobust.kernels.KernelAdapter.magnitude`."""
        out = []
        for k, a, b in ((self.k1, a1, b1), (self.k2, a2, b2)):
            if k.magnitude_is_value:
                out.append(np.maximum(np.abs(a), np.abs(b)) * (1.0 + 1e-6))
            else:
                out.append(k.magnitude(lo, hi))
        with np.errstate(over="ignore", invalid="ignore"):
            A = out[0] * out[1]
        return np.where(np.isnan(A), np.inf, A)

    def mean_rtol(self, n_support, n_features):
        """``C * k``: the other factor's constant plus 2 u (sklearn's product
        fl(C k~) and the scaled weights fl(C w) that the relaxations of k are
        built with, one rounding each per term, relative to |C w k|, which is
        the ``mag`` of those relaxations). The default constant already
        has room for them (several ulps per term), so it is passed through
        unchanged. Not a constant factor: the default."""
        default = super().mean_rtol(n_support, n_features)
        if self.const is not None:
            r = self.other.mean_rtol(n_support, n_features)
            return default if r >= default else r + 2.0 * 2.0**-53
        return default

    def diag(self, X):
        return self.k1.diag(X) * self.k2.diag(X)

    def diag_ulps(self, d):
        """``(c1 + c2 + 1)(1 + 2^-20)``: fl(d1~ d2~)."""
        return (self.k1.diag_ulps(d) + self.k2.diag_ulps(d) + 1.0) * (1.0 + 2.0**-20)

    def diag_interval(self, lo, hi):
        l1, h1 = self.k1.diag_interval(lo, hi)
        l2, h2 = self.k2.diag_interval(lo, hi)
        return _interval_product(l1, h1, l2, h2)

    def radial_parts(self, geom):
        """:class:`._radial.RadialParts` of the product, or None when a factor
        is not radial."""
        if self.const is not None:
            p = parts_of(self.other, geom)
            return None if p is None else p.scaled(self.const)
        p1 = parts_of(self.k1, geom)
        p2 = None if p1 is None else parts_of(self.k2, geom)
        return None if p2 is None else product_parts(p1, p2)

    def diag_taylor(self, lo, hi, sign=1.0):
        """C k: the model of (sign sgn C) k scaled by |C|. k1 k2 where one
        factor has a constant diagonal v on every box (a stationary kernel):
        the other's model of (sign sgn v) k scaled by |v| (exact: v is the
        value at every point). None otherwise."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if self.const is not None:
            m = self.other.diag_taylor(lo, hi, sign * (1.0 if self.const >= 0 else -1.0))
            return None if m is None else _scale_model(m, abs(self.const))
        for a, b in ((self.k1, self.k2), (self.k2, self.k1)):
            try:
                dlo, dhi = a.diag_interval(lo, hi)
            except UnsupportedKernelError:
                continue
            dlo = np.broadcast_to(dlo, (len(lo),))
            if np.all(dlo == np.broadcast_to(dhi, (len(lo),))) and np.all(np.isfinite(dlo)):
                v = dlo[0] if np.all(dlo == dlo[0]) else None
                if v is None:
                    continue
                m = b.diag_taylor(lo, hi, sign * (1.0 if v >= 0 else -1.0))
                return None if m is None else _scale_model(m, abs(float(v)))
        return None

    def rkhs_increment(self, lo, hi):
        """C k: |C| D for C >= 0 (+inf for C < 0, not a covariance). k1 k2:
        its feature map is f1 (x) f2, and f(x) - f(c) = (f1(x) - f1(c)) (x)
        f2(x) + f1(c) (x) (f2(x) - f2(c)), so sqrt(D) <= sqrt(D1 A2) +
        sqrt(A1 D2), A_j >= k_j(x, x) on the box (``diag_interval``; it holds
        k_j(c, c) too), rounded up."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if self.const is not None:
            if self.const < 0:
                return np.full(len(lo), np.inf)
            return self.const * self.other.rkhs_increment(lo, hi) * (1.0 + 1e-12)
        D1, D2 = self.k1.rkhs_increment(lo, hi), self.k2.rkhs_increment(lo, hi)
        if not (np.isfinite(D1).any() and np.isfinite(D2).any()):
            return np.full(len(lo), np.inf)
        try:
            A1 = np.maximum(self.k1.diag_interval(lo, hi)[1], 0.0)
            A2 = np.maximum(self.k2.diag_interval(lo, hi)[1], 0.0)
        except UnsupportedKernelError:
            return np.full(len(lo), np.inf)
        with np.errstate(over="ignore", invalid="ignore"):
            r = (np.sqrt(D1 * A2) + np.sqrt(A1 * D2)) * (1.0 + 1e-12)
            D = r * r * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    def taylor(self, lo, hi, w):
        if self.const is not None:
            return self.other.taylor(lo, hi, self.const * w)
        geom = radial_geometry(lo, hi, self.Xs)
        parts = self.radial_parts(geom)
        if parts is not None:
            return radial_taylor(geom, parts, w)
        return self._radial_polynomial_taylor(lo, hi, w, geom)

    def _radial_polynomial_taylor(self, lo, hi, w, geom):
        """Taylor model of a radial or stationary factor times a dot-product
        power (:func:`._radial.radial_polynomial_taylor`, proof there), e.g.
        ``C * RBF(l) * DotProduct(s) ** 2``, anisotropic ``RBF`` and Matern
        included; None for other products. Constant factors on either side
        scale the weights (exact up to one rounding per weight, which the
        relative margin's constant covers as for ``C * k``)."""
        from .polynomial import DotProductPowerAdapter
        from .stationary import PoweredStationaryAdapter, RationalQuadraticAdapter, StationaryAdapter

        (sa, a), (sb, b) = _scaled_core(self.k1), _scaled_core(self.k2)
        if isinstance(a, DotProductPowerAdapter):
            (sa, a), (sb, b) = (sb, b), (sa, a)
        if not isinstance(b, DotProductPowerAdapter) or isinstance(a, DotProductPowerAdapter):
            return None
        if isinstance(a, RationalQuadraticAdapter) and a.a > self.RQ_TAYLOR_ALPHA:
            # The proof's rounding argument needs the centre coefficients
            # within ~40 u of their magnitude; RationalQuadratic's powers of a
            # base near 1 err by ~alpha u (its class docstring). Above this
            # alpha: no model (the McCormick relaxation, sound, remains).
            return None
        wf = w * (sa * sb)
        parts = parts_of(a, geom)
        extra = 0.0
        if parts is not None:
            extra = parts.extra_ulps
            ms = parts.magnitudes()
            der = (parts.c0, parts.c1, parts.c2) + tuple(
                np.maximum(ms[k], np.abs(ck)) for k, ck in enumerate((parts.c0, parts.c1, parts.c2, 0.0)))
            geo = (geom.Es, geom.h, np.ones(lo.shape[1]), geom.sc, geom.sL, geom.sU)
        elif isinstance(a, StationaryAdapter) and not isinstance(a, PoweredStationaryAdapter) \
                and type(a).d3psi is not StationaryAdapter.d3psi:
            Es, _, hs, pL, pU, pc = a._ranges(lo, hi)
            pL, pU = pL * (1.0 - 1e-12), pU * (1.0 + 1e-12)
            with np.errstate(all="ignore"):
                # |psi^(k)| is decreasing in phi for k = 0..3 (signs and
                # monotonicity of psi's derivatives, class docstrings of the
                # stationary adapters, checked in tests/test_kernels.py).
                m = [np.abs(f(pL)) * (1.0 + 1e-13) + 1e-300 for f in (a.psi, a.dpsi, a.d2psi, a.d3psi)]
                c = [f(pc) for f in (a.psi, a.dpsi, a.d2psi)]
            der = tuple(c) + tuple(np.maximum(m[k], np.abs(c[k])) if k < 3 else m[k] for k in range(4))
            geo = (Es, hs, 1.0 / np.asarray(a.length_scale, dtype=np.float64), pc, pL, pU)
            extra = a.coefficient_ulps()
        else:
            return None
        tm = radial_polynomial_taylor(geo, der, self.Xs, b.s2, b.p, lo, hi, wf)
        # A radial factor containing a RationalQuadratic (e.g. RQ * ExpSineSquared,
        # whose alpha the cap above does not see): coefficients err by extra u
        # more, so the margin grows as in radial_taylor (module docstring of _radial).
        tm.mag = widen_for_coefficient_ulps(tm.mag, extra)
        return tm

    def linearise(self, lo, hi, w):
        if self.const is not None:
            return self.other.linearise(lo, hi, self.const * w)
        return self.relax(lo, hi, w), self.taylor(lo, hi, w)

    def relax(self, lo, hi, w):
        if self.const is not None:
            return self.other.relax(lo, hi, self.const * w)
        a1, b1 = self.k1.interval(lo, hi)
        a2, b2 = self.k2.interval(lo, hi)
        center = 0.5 * (lo + hi)
        v1, v2 = self.k1.values(center), self.k2.values(center)
        v1, v2 = np.clip(v1, a1, b1), np.clip(v2, a2, b2)
        pos = w > 0
        # Lower envelopes (w > 0) and upper envelopes (w < 0): coefficients on
        # k1, k2 and the constant; "first" marks the envelope with smaller gap.
        low_first = (v1 - a1) * (v2 - a2) <= (b1 - v1) * (b2 - v2)
        up_first = (v1 - a1) * (b2 - v2) <= (b1 - v1) * (v2 - a2)
        c1 = np.where(pos, np.where(low_first, a2, b2), np.where(up_first, b2, a2))
        c2 = np.where(pos, np.where(low_first, a1, b1), np.where(up_first, a1, b1))
        c0 = -c1 * c2  # every envelope's constant is minus the product of its coefficients
        rel = self.k1.relax(lo, hi, w * c1) + self.k2.relax(lo, hi, w * c2)
        plo, phi = _interval_product(a1, b1, a2, b2)
        const = (w * c0).sum(-1)
        rel.const = rel.const + const
        # mag must bound the magnitudes of what the caller's relative margin
        # covers: the envelope's own terms (our evaluation of the children's
        # relaxations with weights w c1, w c2 and of w c0: their mags), and
        # the terms of the model's predict, sum_i |w_i| A1_i A2_i (A the term
        # magnitude of KernelAdapter.value_ulps, A1 A2 >= |k1 k2|). The
        # envelope's coefficients are interval ends of the *other* factor,
        # which can be far below it at the points of the box (a lower end
        # near 0 on a wide box), so the first part alone was up to 7e10
        # times too small (RBF(0.3) * Matern(0.5), dense sampling); the
        # second part is added.
        rel.mag = rel.mag + np.abs(w * c0).sum(-1) + (np.abs(w) * self._term_magnitude(lo, hi, a1, b1, a2, b2)).sum(-1)
        # The envelope relaxation and the product's own interval bound are
        # both valid; keep the envelope's ilb only if it is the larger one.
        rel.ilb = np.maximum(rel.ilb + const, interval_lower(w, plo, phi))
        return rel


def _scale_model(m, a):
    """A :class:`TaylorModel` times a >= 0 (each part scaled; ``mag`` gains
    2u of the scaled values for the products' rounding, inside the
    callers' relative margin constants as for ``C * k``)."""
    from ._base import TaylorModel

    return TaylorModel(a * m.value, a * m.grad, a * m.diag, a * m.M, a * m.rem, a * m.mag)


def _scaled_core(adapter):
    """``(scale, core)``: an adapter with its constant factors taken off
    (``C1 * (C2 * k)`` -> ``(C1 C2, k)``)."""
    scale = 1.0
    while isinstance(adapter, ProductAdapter) and adapter.const is not None:
        scale, adapter = scale * adapter.const, adapter.other
    return scale, adapter


class ExponentiationAdapter(KernelAdapter):
    """k ** e, for e > 0 when k >= 0, or a positive integer e for any k."""

    def __init__(self, kernel, Xs, make):
        super().__init__(kernel, Xs)
        self.base = make(kernel.kernel, Xs)
        self.e = float(kernel.exponent)
        self.integer = self.e == int(self.e) and self.e >= 1
        if not (self.e > 0 and (self.base.nonnegative or self.integer)):
            raise UnsupportedKernelError(
                f"Exponentiation with exponent {self.e} of {kernel.kernel!r}: only "
                "exponents > 0 of non-negative kernels, or positive integer exponents, "
                "have sound bounds."
            )
        self.nonnegative = self.base.nonnegative or (self.integer and int(self.e) % 2 == 0)
        # Integer powers of a PSD kernel are PSD (Schur); other powers only
        # of infinitely divisible ones.
        self.psd = bool(self.base.psd and (self.integer or self.base.infinitely_divisible))
        self._dominated = bool(self.base.dominated)
        self.infinitely_divisible = self.base.infinitely_divisible
        self.magnitude_is_value = self.base.magnitude_is_value

    def rkhs_increment(self, lo, hi):
        """Integer e of a PSD base: its feature map is f^(x)e, and telescoping
        gives sqrt(D) <= e A^((e-1)/2) sqrt(D_base), A >= k_base(x, x) on the
        box (as for ``DotProduct ** p``); +inf for other exponents."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if not (self.integer and self.psd):
            return np.full(len(lo), np.inf)
        Db = self.base.rkhs_increment(lo, hi)
        try:
            A = np.maximum(self.base.diag_interval(lo, hi)[1], 0.0)
        except UnsupportedKernelError:
            return np.full(len(lo), np.inf)
        e = int(self.e)
        with np.errstate(over="ignore", invalid="ignore"):
            D = e * e * A ** (e - 1) * Db * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    def values(self, X):
        return self.base.values(X) ** self.e

    def value_and_grad(self, X):
        K, G = self.base.value_and_grad(X)
        with np.errstate(divide="ignore", invalid="ignore"):
            dK = np.where(K != 0, self.e * K ** (self.e - 1), 0.0 if self.e > 1 else np.inf)
        return K**self.e, np.nan_to_num(dK)[:, :, None] * G

    def rounding(self, lo, hi):
        """:func:`~skgprobust.kernels._base.power_rounding` of the base (proof
        there): the base's absolute rounding *and* its relative rounding
        (``value_ulps``, c_b u A_b) carried through the power for every e > 0
        (m^e expm1(e c_b u (1 + 2 c_b u)) for a non-negative base, any e; the
        mean value theorem for the rest), plus numpy's power (16 u relative:
        :meth:`value_ulps`; its product with the absolute part: WIDEN).
        Before, the base's relative rounding amplified e-fold and the power's
        own were assumed to fit the relative margin (they did up to e ~ 20-30)."""
        return self.rounding_parts(lo, hi)[0]

    def rounding_parts(self, lo, hi):
        """:meth:`rounding`, the power of the base's enclosure, and A_b ** e
        (widened by 1e-12), from one pass over the base."""
        d = lo.shape[1]
        R, l, h, Ab = self.base.rounding_parts(lo, hi)
        m = np.maximum(np.abs(l), np.abs(h))
        relative = self.base.nonnegative and self.base.magnitude_is_value
        out = power_rounding(self.e, m, np.maximum(l, 0.0), R, self.base.value_ulps(d), Ab, relative)
        with np.errstate(over="ignore", invalid="ignore"):
            klo, khi, _ = widen_enclosure(*self._power_interval(l, h))
            A = Ab**self.e * (1.0 + 1e-12) + SUBNORMAL
        return out, klo, khi, A

    def value_ulps(self, d):
        """17: numpy's power within 8 ulps (16 u of |k~^e| <= A + rounding) and
        one of headroom; everything of the base is in :meth:`rounding`."""
        return 17.0


    def diag(self, X):
        return self.base.diag(X) ** self.e

    def diag_ulps(self, d):
        """``(|e| c + 16)(1 + 2^-20)``, c the base's: (b (1 + delta)) ** e =
        b ** e (1 + delta) ** e, |e| c u relative (first order), and numpy's
        power within 8 ulps (16 u, the documented assumption of
        :mod:`skgprobust.kernels.polynomial`)."""
        return (abs(self.e) * self.base.diag_ulps(d) + 16.0) * (1.0 + 2.0**-20)

    def diag_interval(self, lo, hi):
        return self._power_interval(*self.base.diag_interval(lo, hi))

    def interval(self, lo, hi):
        return self._power_interval(*self.base.interval(lo, hi))

    def _power_interval(self, l, h):
        if self.base.nonnegative:
            l = np.maximum(l, 0.0)
            return l**self.e, h**self.e
        if int(self.e) % 2 == 1:
            return l**self.e, h**self.e
        amax = np.maximum(np.abs(l), np.abs(h))
        amin = np.where((l <= 0) & (h >= 0), 0.0, np.minimum(np.abs(l), np.abs(h)))
        return amin**self.e, amax**self.e


def constant_times_one_kernel(kernel):
    """Split a product of constants and one kernel.

    Parameters
    ----------
    kernel : sklearn Kernel
        Any kernel.

    Returns
    -------
    split : tuple or None
        ``(constants, core)`` when ``kernel`` is a tree of ``Product`` nodes
        whose leaves are ``ConstantKernel``s (their values, a list) and
        exactly one other kernel ``core`` (sklearn builds ``2.0 * C(1.5) *
        RBF()`` as ``Product(Product(C, C), RBF)``); None otherwise.
    """
    from sklearn.gaussian_process.kernels import Product

    consts, others, stack = [], [], [kernel]
    while stack:
        k = stack.pop()
        if type(k) is Product:
            stack += [k.k1, k.k2]
        elif type(k) is ConstantKernel:
            consts.append(float(k.constant_value))
        else:
            others.append(k)
    if type(kernel) is not Product or len(others) != 1:
        return None
    return consts, others[0]


class ScaledPowerAdapter(ProductAdapter):
    """``(c * k) ** e``: sklearn's ``Exponentiation`` of a product of
    ``ConstantKernel``s (overall c > 0) and one stationary kernel k whose
    power has the stationary relaxation (:class:`~.stationary.PoweredStationaryAdapter`)
    and a log-domain psi.

    The function is c^e k^e = a psi^e, convex and decreasing in phi, so it is
    bounded with the stationary relaxation of a log-domain copy of ``k ** e``
    that evaluates a psi^e = exp(log a + e log psi) (``log_scale = log a``;
    ProductAdapter's constant-factor path with the constant 1), while
    everything about sklearn's own numbers (values, gradients, diagonal,
    rounding, term magnitudes) is that of the kernel as written:
    :class:`ExponentiationAdapter` of the real tree (before, the only
    adapter: interval-type bounds; ``(C(2) * RBF(1)) ** 2`` kept a mean
    range [-0.20, 1.26] after 2000 splits where the same function as ``C(4) *
    RBF(0.5 ** 0.5)`` converged at the root).

    Soundness. The real adapter's contract (its proof) bounds sklearn's k~
    against the exact k = (c psi)^e = c^e psi^e: |k~ - k| <= R + c_p u A, A =
    k (non-negative). The bounds here are of a psi^e with a = sklearn's own
    diagonal fl(fl(c_1 ... c_n) ** e) (the constants' float product in the
    tree's order, then numpy's pow): a = c^e (1 + eta) with |eta| <= (e (n
    - 1) + 16) u (1 + 2^-20) (n - 1 products of relative error u each,
    raised to e; pow's 8 ulps), so |a psi^e - k| <= |eta| k = |eta| A. Hence
    :meth:`value_ulps` is the real adapter's c_p plus e (n - 1) + 17, and
    every margin built from it (the mean bounds' :meth:`mean_rtol`, the
    variance bounds' c_val) covers the difference between the relaxed
    function and the exact one. :meth:`rounding` adds the copy's own
    evaluation error (:meth:`~.stationary.PoweredStationaryAdapter._own_rounding`,
    with log a's rounding), which its relaxation, intervals and enclosure
    carry; :meth:`rkhs_increment` is a times the unit power's, raised by 4
    |eta| relative. The bound on eta is first order: (1 + 2^-20) covers the
    rest while e (n - 1) u < 2^-30 (the dispatch keeps e (n - 1) <= 1e6); a
    subnormal c^e errs absolutely, inside the real rounding's SUBNORMAL.

    Why in the exponent (soundness hunt, session 27): the first version
    computed psi^e and multiplied by a, and psi^e flushed to 0 where
    sklearn's (c psi)^e does not (a = 1.9e93, psi^e ~ 1e-352: a mean range
    91% short of predict; ``((C(1e4) * RBF) ** 30) ** 0.001``: an interval
    [0, 0] where the kernel is 0.567).

    Parameters
    ----------
    kernel : sklearn Exponentiation
        The kernel as written, ``(c_1 * ... * c_n * k) ** e``.
    Xs : ndarray of shape (N, d)
        Support inputs.
    make : callable
        :func:`~skgprobust.kernels.make_adapter`.
    powered : PoweredStationaryAdapter
        The adapter of ``k ** e``.
    """

    def __init__(self, kernel, Xs, make, powered):
        from sklearn.gaussian_process.kernels import Exponentiation

        from .basic import ConstantAdapter
        from .stationary import PoweredStationaryAdapter

        real = ExponentiationAdapter(kernel, Xs, make)
        consts, core = constant_times_one_kernel(kernel.kernel)
        e = float(kernel.exponent)
        with np.errstate(all="ignore"):
            a = float(np.asarray(kernel.diag(np.zeros((1, Xs.shape[1]))))[0])  # sklearn's fl(c ** e)
        # a psi^e = exp(log a + e log psi), evaluated by a log-domain copy of the power
        scaled = PoweredStationaryAdapter(Exponentiation(core, e), powered.base)
        scaled.log_domain, scaled.log_scale = True, float(np.log(a))
        self.k1, self.k2 = ConstantAdapter(ConstantKernel(a, "fixed"), Xs), powered
        KernelAdapter.__init__(self, kernel, Xs)
        # ProductAdapter's constant-factor path with the constant inside `other`
        self.const, self.other, self.a, self.unit = 1.0, scaled, a, powered
        self.real, self.e, self.n_const = real, e, len(consts)
        self.nonnegative = True
        self.psd = bool(powered.psd and a > 0)
        self._dominated = bool(powered.dominated)
        self.infinitely_divisible = bool(powered.infinitely_divisible)
        self.magnitude_is_value = True
        self._eta = (e * (len(consts) - 1) + 16.0) * _U * (1.0 + 2.0**-20)

    # sklearn's numbers: the real tree's
    def values(self, X):
        return self.real.values(X)

    def value_and_grad(self, X):
        return self.real.value_and_grad(X)

    def diag(self, X):
        return self.real.diag(X)

    def diag_ulps(self, d):
        return self.real.diag_ulps(d)

    def diag_interval(self, lo, hi):
        return self.real.diag_interval(lo, hi)

    def diag_taylor(self, lo, hi, sign=1.0):
        return KernelAdapter.diag_taylor(self, lo, hi, sign)

    def rounding(self, lo, hi):
        return self.rounding_parts(lo, hi)[0]

    def rounding_parts(self, lo, hi):
        R, klo, khi, A = self.real.rounding_parts(lo, hi)
        p = self.other
        _, pL, pU = p.base._rounding_ranges(lo, hi)
        return R + p._own_rounding(pL, pU) * WIDEN + SUBNORMAL, klo, khi, A

    def value_ulps(self, d):
        """The real adapter's plus e (n - 1) + 17 (class docstring)."""
        return (float(self.real.value_ulps(d)) + self.e * (self.n_const - 1) + 17.0) * (1.0 + 2.0**-20)

    def mean_rtol(self, n_support, n_features):
        return KernelAdapter.mean_rtol(self, n_support, n_features)

    def rkhs_increment(self, lo, hi):
        """a times the unit power's (its ``_one_minus_psi_upper`` needs psi(0)
        = 1), raised by 4 |eta| relative (class docstring)."""
        return self.a * self.unit.rkhs_increment(lo, hi) * (1.0 + 1e-12) * (1.0 + 4.0 * self._eta)
