"""Adapters for ConstantKernel, WhiteKernel, DotProduct and ExpSineSquared."""

import math

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import DotProduct

from ._base import (
    SUBNORMAL,
    WIDEN,
    KernelAdapter,
    Relaxation,
    TaylorModel,
    as_boxes,
    box_halfwidths,
    input_rounding,
    widen_enclosure,
)
from ._radial import RadialParts, radial_geometry, radial_taylor
from .polynomial import DotProductPowerAdapter


class ConstantAdapter(KernelAdapter):
    """k(x, y) = c."""

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        self.c = float(kernel.constant_value)
        self.nonnegative = self.c >= 0
        # c 1 1^T is PSD iff c >= 0 (and then so is c ** e).
        self.psd = self.infinitely_divisible = bool(self.c >= 0)

    def values(self, X):
        return np.full((len(X), len(self.Xs)), self.c)

    def diag_ulps(self, d):
        """1 (times 1 + 2^-20): sklearn fills the diagonal with the constant
        (``WhiteKernel``: the noise level), exact."""
        return 1.0 * (1.0 + 2.0**-20)

    def value_ulps(self, d):
        """0: sklearn's ``ConstantKernel.__call__`` is ``np.full(..., c)`` and
        ``WhiteKernel``'s cross-covariance ``np.zeros``, exact (``rounding``:
        0 too)."""
        return 0.0

    def value_and_grad(self, X):
        n, N, d = len(X), len(self.Xs), self.Xs.shape[1]
        return self.values(X), np.zeros((n, N, d))

    def interval(self, lo, hi):
        k = np.full((len(lo), len(self.Xs)), self.c)
        return k, k

    def relax(self, lo, hi, w):
        B, d = lo.shape
        s = self.c * w.sum(-1)
        zeros = np.zeros((B, d))
        return Relaxation(s, zeros, zeros.copy(), s, abs(self.c) * np.abs(w).sum(-1), zeros.copy())

    def first_order(self, c, h1):
        """J = 0 and delta = 0: the cross-covariance is the constant c (0 for
        ``WhiteKernel``), exactly (see :meth:`KernelAdapter.first_order`).

        Parameters
        ----------
        c : ndarray of shape (B, d)
            Expansion points.
        h1 : ndarray of shape (B, d)
            Half-widths.

        Returns
        -------
        model : tuple of (ndarray, ndarray)
            Zeros of shapes (B, N, d) and (B, N).
        """
        B, d = np.atleast_2d(c).shape
        N = len(self.Xs)
        return np.zeros((B, N, d)), np.zeros((B, N))

    def rkhs_increment(self, lo, hi):
        """0 for c >= 0 (a constant feature map); +inf otherwise (not a
        covariance). ``WhiteKernel``: 0, its cross-covariance sections are 0."""
        return np.full(len(np.atleast_2d(lo)), 0.0 if self.psd else np.inf)

    def taylor(self, lo, hi, w):
        B, d = lo.shape
        s = self.c * w.sum(-1)
        return TaylorModel(s, np.zeros((B, d)), np.zeros((B, d)), np.zeros((B, d, d)), np.zeros(B),
                           abs(self.c) * np.abs(w).sum(-1))


class WhiteAdapter(ConstantAdapter):
    """WhiteKernel: zero cross-covariance; k(x, x) = noise_level (see ``diag``)."""

    def __init__(self, kernel, Xs):
        KernelAdapter.__init__(self, kernel, Xs)
        self.c = 0.0
        # noise I on the diagonal of k(X): PSD iff noise >= 0 (a negative
        # noise level makes the lemma behind the variance bounds false).
        self.psd = self.infinitely_divisible = bool(float(kernel.noise_level) >= 0)

    def mean_rtol(self, n_support, n_features):
        """0: the cross-covariances are exactly 0 in float arithmetic.

        sklearn's ``WhiteKernel.__call__(X, Y)`` with Y given (every
        ``predict`` passes the training inputs as Y) returns
        ``np.zeros((len(X), len(Y)))``, with no arithmetic; so do ``values``
        and ``interval`` here. This adapter's relaxation and Taylor model are
        ``0 * sum_i w_i = 0`` exactly (finite w), with ``mag = 0``. A model
        whose mean is ``c + sum_i w_i k(x, x_i)`` with this kernel alone
        predicts exactly its offset, which is what ``affine_lower`` returns
        with a zero margin; inside a sum or product the other factors'
        constants cover the remaining operations
        (:meth:`~skgprobust.kernels.composite.SumAdapter.mean_rtol`,
        :meth:`~skgprobust.kernels.composite.ProductAdapter.mean_rtol`).
        """
        return 0.0


class DotProductAdapter(DotProductPowerAdapter):
    """k(x, y) = sigma_0^2 + x . y: :class:`~skgprobust.kernels.polynomial.DotProductPowerAdapter`
    with p = 1.

    The mean ``sum_i w_i (s + x . x_i)`` is an exact polynomial of degree 1
    in x, so everything proven in :mod:`skgprobust.kernels.polynomial`
    applies with p = 1: exact monomial coefficients (``s sum_i w_i`` and
    ``sum_i w_i x_i``, each computed exactly and rounded once, so the huge
    opposite-signed weights of a rank-deficient fit cancel exactly), an exact
    Taylor model (no remainder, no quadratic part), our own evaluation error
    folded into the bounds, and the rounding constant ``mean_rtol(N, d) =
    (N + 13) u``. sklearn's ``DotProduct.__call__(X, Y)`` computes
    ``np.inner(X, Y) + sigma_0 ** 2`` and nothing else, i.e. part (S) of the
    proof with no power (pi = 0 <= the u that ``mean_rtol`` allows for
    p <= 2); ``values`` and ``diag`` repeat exactly those operations. The
    adapter's s = fl(sigma_0 ** 2) is the same float as sklearn's.
    """

    def __init__(self, kernel, Xs):
        if type(kernel) is not DotProduct:
            raise ValueError(f"DotProductAdapter needs a DotProduct kernel, got {kernel!r}.")
        super().__init__(kernel, Xs)


class ExpSineSquaredAdapter(KernelAdapter):
    """k = exp(-2 sin^2(pi r / p) / l^2), r = ||x - x_i|| (Euclidean over all
    features): interval bounds from the range of r over the box, and a
    second-order Taylor model (``taylor``) with a rigorous third-order
    remainder, built by :func:`._radial.radial_taylor` from
    :meth:`radial_parts`.

    k as a function of s = r^2. With a = 1 / l^2, c = 2 pi / p, z = c sqrt(s):
    2 sin^2(pi r / p) = 1 - cos(z) =: g(s) and k = psi(s) = exp(-a g(s)).
    cos(c sqrt(s)) = sum_n (-1)^n c^(2n) s^n / (2n)! is an entire function of
    s, so psi is smooth in x everywhere (also at x = x_i). Its s-derivatives,
    by d/ds [z^-nu J_nu(z)] = -(c^2 / 2) z^-(nu+1) J_(nu+1)(z) and
    cos z = sqrt(pi z / 2) J_(-1/2)(z), are, with the spherical Bessel
    functions j_n,

        g'(s)   =  (c^2 / 2) j_0(z),          j_0(z) = sin z / z
        g''(s)  = -(c^4 / 4) j_1(z) / z,      j_1(z) / z = (sin z - z cos z) / z^3
        g'''(s) =  (c^6 / 8) j_2(z) / z^2,    j_2(z) / z^2 = 3 sin z / z^5 - sin z / z^3 - 3 cos z / z^4

    (checked against the series: g''(0) = -c^4 / 12, g'''(0) = c^6 / 120;
    ``tests/test_periodic.py`` checks them by finite differences) and

        psi'   = -a g' psi
        psi''  = (a^2 g'^2 - a g'') psi
        psi''' = (-a^3 g'^3 + 3 a^2 g' g'' - a g''') psi.

    Bounds of |j_n(z) / z^n| over z >= zL (for the ranges of psi', psi'' and
    psi''' over the s-range [sL, sU] of a box): (i) by Poisson's integral
    (DLMF 10.54.1) j_n(z) / z^n = (2^(n+1) n!)^-1 int_{-1}^{1} cos(z t)
    (1 - t^2)^n dt, so |j_n(z) / z^n| <= its value at 0, 1 / (2n + 1)!!
    (1, 1/3, 1/15); (ii) from the closed forms with |sin|, |cos| <= 1:
    |j_0| <= 1 / z, |j_1 / z| <= 1 / z^2 + 1 / z^3, |j_2 / z^2| <= 1 / z^3 +
    3 / z^4 + 3 / z^5. Both are non-increasing in z, so the smaller of the
    two at zL = c sqrt(sL) bounds |g^(k)| =: G_k on all of [sL, sU]. With psi
    in [klo, khi] (from ``_k_range``, 0 < klo): psi' in +-a G1 khi, psi'' in
    [-a G2 khi, (a^2 G1^2 + a G2) khi], |psi'''| <= (a^3 G1^3 + 3 a^2 G1 G2
    + a G3) khi; each widened by a relative 1e-12 against rounding (sL is
    itself widened downward, see ``radial_geometry``). Far from x_i these
    shrink like (c / 2r)^k while delta = s - sc grows like 2 r h, so the
    remainder of the Taylor model is O((c h)^3) per point, h the box
    half-width, whatever the distance.

    The centre values use j_1(z) / z from its series 1/3 - z^2/30 + z^4/840
    - ... (nine terms, truncation < 1e-19 relative) for z < 0.5, where the
    closed form cancels; the remaining rounding of the centre values is
    covered by the model's ``mag`` (see :mod:`._radial`).

    Not separable in the coordinates (r is a Euclidean norm), so ``relax``
    is the interval bound; the Taylor model gives the convergent bound.
    """

    def __init__(self, kernel, Xs):
        super().__init__(kernel, Xs)
        # sklearn's value exp(-2 (sin(pi r / p) / l)^2) is even in l and in
        # p (sin is odd, fl(-a) = -fl(a), the square removes the sign), so
        # the bounds, which assume l, p > 0, use |l| and |p|.
        self.ls = abs(float(kernel.length_scale))
        self.p = abs(float(kernel.periodicity))
        self.a = 1.0 / self.ls**2
        self.c = 2.0 * np.pi / self.p
        # PSD on one feature (the periodic kernel; its power is the same
        # kernel with l / sqrt(e)); on more features r is a Euclidean norm and
        # the Gram matrix can be indefinite (tests/test_validation.py).
        self.psd = self.infinitely_divisible = self.Xs.shape[1] == 1
        # On any number of features 0 < k <= 1 = k(x, x) (sklearn's diag is
        # np.ones): the term magnitude |k| is dominated by the diagonal
        # (KernelAdapter.dominated), PSD or not.
        self._dominated = True

    def rkhs_increment(self, lo, hi):
        """2 (1 - min k) over the box: k_x - k_c has squared norm 2 (1 -
        k(r)), r = ||x - c|| <= ||h1||, and sin^2(pi r / p) <= S = sin^2(pi
        ||h1|| / p) while pi ||h1|| / p < pi / 2, else 1 (both rounded up).
        Only where the kernel is proven PSD (one feature); +inf otherwise."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if not self.psd:
            return np.full(len(lo), np.inf)
        _, h1 = box_halfwidths(lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            arg = np.pi * np.sqrt((h1 * h1).sum(-1)) / self.p * (1.0 + 1e-12)
            S = np.where(arg < 0.5 * np.pi, np.minimum(np.sin(arg) ** 2 * (1.0 + 1e-12) + 1e-300, 1.0), 1.0)
            D = -2.0 * np.expm1(-2.0 * S * self.a * (1.0 + 1e-12)) * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    def values(self, X):
        d = cdist(np.asarray(X, dtype=np.float64), self.Xs, "euclidean")
        return np.exp(-2 * (np.sin(np.pi * d / self.p) / self.ls) ** 2)

    def diag_ulps(self, d):
        """1 (times 1 + 2^-20): sklearn's ``ExpSineSquared.diag`` is ``np.ones``."""
        return 1.0 * (1.0 + 2.0**-20)

    def value_and_grad(self, X):
        X = np.asarray(X, dtype=np.float64)
        d = cdist(X, self.Xs, "euclidean")
        arg = np.pi * d / self.p
        K = np.exp(-2 * (np.sin(arg) / self.ls) ** 2)
        dk_dd = K * (-2.0 / self.ls**2) * np.sin(2 * arg) * (np.pi / self.p)
        unit = (X[:, None, :] - self.Xs[None]) / np.where(d > 0, d, 1.0)[:, :, None]
        return K, (dk_dd * (d > 0))[:, :, None] * unit

    def value_ulps(self, d):
        """17: sklearn's last operation, fl(exp(-t~)), errs by 16 u of
        exp(-t~) (the platform assumption) <= 16 u (k + rounding); the rest
        (the argument, sin and the squaring, amplified by exp) is in
        :meth:`rounding`. One ulp of headroom."""
        return 17.0

    def rounding(self, lo, hi):
        """(a) The argument (comment below): ``(d + 12) a c u (||amax|| +
        ||x_i||)``. (b) sklearn's t~ = fl(2 fl(fl(fl(sin(arg~)) / l)^2))
        = t (1 + eta) (t = 2 sin(arg~)^2 / l^2 at its rounded argument; sin
        within 16 u, the division and the square one u each, the doubling
        exact): |eta| <= (1 + 16 u)^2 (1 + u)^3 - 1 <= 35.01 u =: n. exp(-t~)
        - exp(-t) = e^-t (e^(-t eta) - 1), of modulus <= e^-t expm1(t n) <=
        (khi + (a)) expm1(2 n / l^2) (t <= 2 / l^2, e^-t <= k at the rounded
        argument) and, by the mean value theorem, <= t n e^(-t (1 - n)) <=
        n / (e (1 - n)) (sup_t t e^(-a t) = 1 / (a e)): the smaller is taken.
        Without (b) this was the "few ulps relative" convention: t n relative
        is up to 70 u / l^2, unbounded for small length scales. (c) exp's own
        16 u relative: :meth:`value_ulps`; times (a) + (b): ``WIDEN``; and
        ``SUBNORMAL``. (b) is a constant (e^-t <= 1): <= 13 u, and <= 70 u /
        l^2 for l > 2.3."""
        arg = self._argument_rounding(lo, hi)
        return (arg + self._exp_argument_rounding()) * WIDEN + SUBNORMAL

    def _exp_argument_rounding(self):
        """Part (b) of :meth:`rounding`: min(expm1(2 n a), n / (e (1 - n))),
        n = 35.01 u (e^-t <= 1 at every argument)."""
        n = 35.01 * 2.0**-53
        return min(float(np.expm1(2.0 * n * self.a)), n / (np.e * (1.0 - n)))

    def rounding_parts(self, lo, hi):
        """:meth:`rounding` and a cheap enclosure of k: the distance range
        [r_c - ||h|| - s, r_c + ||h|| + s] from one ``cdist`` of the box
        centres (r_c's relative error (d / 2 + 3) u and ||h||'s are inside the
        1e-10 widening; s = 4 u ||amax|| covers the rounded centre and
        half-widths), through ``_k_range`` and
        :func:`~skgprobust.kernels._base.widen_enclosure`."""
        lo, hi = as_boxes(lo, hi)
        amax = np.maximum(np.abs(lo), np.abs(hi))
        centre, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        rc = cdist(centre, self.Xs, "euclidean")
        w = (np.linalg.norm(h, axis=-1) * (1.0 + 1e-10) + 4.0 * 2.0**-53 * np.linalg.norm(amax, axis=-1))[:, None]
        klo, khi = self._k_range(np.maximum(rc * (1.0 - 1e-10) - w, 0.0), rc * (1.0 + 1e-10) + w)
        R = (self._argument_rounding(lo, hi) + self._exp_argument_rounding()) * WIDEN + SUBNORMAL
        return (R,) + widen_enclosure(klo, khi)

    def _argument_rounding(self, lo, hi):
        # |dk/dr| = k a c |sin(c r)| <= a c. sklearn subtracts the raw inputs
        # (relative error u per difference), sums the squares ((d + 1) u
        # relative), takes the root and scales by pi / p: its argument errs by
        # <= (d / 2 + 4) u r. Our own evaluation of the same quantities from
        # x_i - c (c the rounded box centre, <= u |c| off; the modelled box
        # c +- h covers [lo, hi] only up to u (|c| + h) per coordinate) errs
        # by <= (d / 2 + 4) u r + 2 u ||amax||. With r <= ||amax|| + ||x_i||,
        # (d + 12) u (||amax|| + ||x_i||) bounds both together, with headroom.
        lo, hi = as_boxes(lo, hi)
        amax = np.maximum(np.abs(lo), np.abs(hi))
        d = self.Xs.shape[1]
        return (d + 12.0) * (self.a * self.c) * input_rounding(amax, self.Xs, 1.0)

    def _k_range(self, dmin, dmax):
        """(klo, khi) enclosing k over distances r in [dmin, dmax]."""
        # Arguments widened outward so that rounding never hides a turning point.
        a1 = np.pi * dmin / self.p * (1 - 1e-12) - 1e-300
        a2 = np.pi * dmax / self.p * (1 + 1e-12) + 1e-300
        s1, s2 = np.sin(a1) ** 2, np.sin(a2) ** 2
        has_zero = np.floor(a2 / np.pi) >= np.ceil(a1 / np.pi)
        has_one = np.floor((a2 - np.pi / 2) / np.pi) >= np.ceil((a1 - np.pi / 2) / np.pi)
        smin = np.where(has_zero, 0.0, np.minimum(s1, s2))
        smax = np.where(has_one, 1.0, np.maximum(s1, s2))
        return np.exp(-2 * smax / self.ls**2), np.exp(-2 * smin / self.ls**2)

    def interval(self, lo, hi):
        lo, hi = as_boxes(lo, hi)
        center, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        aE = np.abs(self.Xs[None] - center[:, None, :])
        dmin = np.sqrt((np.maximum(aE - h[:, None, :], 0.0) ** 2).sum(-1))
        dmax = np.sqrt(((aE + h[:, None, :]) ** 2).sum(-1))
        return self._k_range(dmin, dmax)

    @staticmethod
    def _j1_over_z(z):
        """j_1(z) / z = (sin z - z cos z) / z^3, by its series for z < 0.5."""
        small = z < 0.5
        zs = np.where(small, z, 0.0)
        z2 = zs * zs
        # sum_{n>=1} (-1)^(n+1) 2n z^(2n-2) / (2n+1)!, Horner from n = 9 down.
        ser = np.zeros_like(z2)
        for n in range(9, 0, -1):
            ser = ser * z2 + (-1.0) ** (n + 1) * 2.0 * n / math.factorial(2 * n + 1)
        zb = np.where(small, 1.0, z)
        closed = (np.sin(zb) - zb * np.cos(zb)) / zb**3
        return np.where(small, ser, closed)

    def radial_parts(self, geom):
        """:class:`._radial.RadialParts` of k as a function of s = ||x - x_i||^2
        (derivation and bounds in the class docstring)."""
        a, c = self.a, self.c
        rc = np.sqrt(geom.sc)
        c0 = np.exp(-2 * (np.sin(np.pi * rc / self.p) / self.ls) ** 2)
        zc = c * rc
        with np.errstate(divide="ignore", invalid="ignore"):
            j0 = np.where(zc > 0, np.sin(zc) / np.where(zc > 0, zc, 1.0), 1.0)
        g1 = 0.5 * c**2 * j0
        g2 = -0.25 * c**4 * self._j1_over_z(zc)
        c1 = -a * g1 * c0
        c2 = (a * a * g1 * g1 - a * g2) * c0
        klo, khi = self._k_range(np.sqrt(geom.sL), np.sqrt(geom.sU))
        zL = c * np.sqrt(geom.sL)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            v = 1.0 / zL
            G1 = 0.5 * c**2 * np.minimum(1.0, v)
            G2 = 0.25 * c**4 * np.minimum(1.0 / 3.0, v * v * (1.0 + v))
            G3 = 0.125 * c**6 * np.minimum(1.0 / 15.0, v**3 * (1.0 + 3.0 * v * (1.0 + v)))
        wid = 1.0 + 1e-12
        P1 = wid * a * G1 * khi
        lo2 = -wid * a * G2 * khi
        hi2 = wid * (a * a * G1 * G1 + a * G2) * khi
        P3 = wid * (a**3 * G1**3 + 3.0 * a * a * G1 * G2 + a * G3) * khi
        return RadialParts(c0, c1, c2, [klo, -P1, lo2, -P3], [khi, P1, hi2, P3])

    def taylor(self, lo, hi, w):
        geom = radial_geometry(lo, hi, self.Xs)
        return radial_taylor(geom, self.radial_parts(geom), w)
