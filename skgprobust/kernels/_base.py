"""Base class of kernel adapters and the relaxation they produce.

An adapter wraps one fitted sklearn kernel together with the support inputs
``Xs`` (training points) and answers three questions about k(x, Xs):

* ``values(X)`` / ``value_and_grad(X)``: the cross-covariances (and their
  input gradients, used only by local search);
* ``interval(lo, hi)``: for each box b and support point i, an interval that
  contains k(x, x_i) for every x in box b;
* ``relax(lo, hi, w)``: a *separable quadratic lower bound* of
  ``sum_i w[b, i] * k(x, x_i)`` over box b, i.e. coefficients with

      sum_i w_bi k(x, x_i) >= const_b + sum_j alpha_bj u_j**2 + beta_bj u_j

  for all x in box b, where u = x - center_b. Its exact minimum over the box
  is found per coordinate (a parabola on an interval), which gives the
  paper's Prop. 2 bound; sums of kernels add their coefficients so the
  minimum is taken jointly.

Every bound is exact in real arithmetic; rounding is covered by a relative
margin applied once, by the posterior-mean bounds (``margin_rtol``),
proportional to ``mag`` (the sum of absolute values of the terms the
relaxation added up).

Rounding of sklearn's kernel values (what the certified numbers are made
of). Each adapter proves, for x in a box and its support point x_i,

    |k~(x, x_i) - k(x, x_i)| <= rounding(lo, hi)[b, i] + value_ulps(d) u A(x, x_i)

(:meth:`KernelAdapter.value_ulps`: A the term magnitude, A <=
sqrt(k(x, x) k(x_i, x_i)) for PSD kernels), and ``diag_ulps(d)`` for
sklearn's ``diag``. The relative constants are small and d-independent
(17 for exp-based leaves, c1 + c2 + 1 for a product, 17 for any power);
every error that is not a bounded multiple of the value (rounded inputs,
the distance, a power's e-fold amplification of its base's rounding, sin
and the square amplified by ExpSineSquared's exp) is in ``rounding``.
Platform assumption: numpy's exp, expm1, log, log1p, sin and pow within 8 ulps (measured about
1 ulp, ``tests/test_rounding.py``). Composite adapters compute their
rounding from their children's :meth:`KernelAdapter.rounding_parts` in one
pass (one ``cdist`` per stationary leaf).
"""

from dataclasses import dataclass

import numpy as np

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol

#: Absolute allowance for subnormal results (underflow): every leaf's and
#: composite's :meth:`KernelAdapter.rounding` adds it once (8 ulps of a
#: subnormal result are 2^-1071, times at most 2^18 for Matern 2.5's
#: polynomial factor; a few operations per node).
SUBNORMAL = 2.0**-1040
#: Relative widening of an absolute rounding bound that covers the products
#: of its terms with relative errors of at most 2^-40 (a node's own
#: rounding, numpy's power within 16 u, the bound's own evaluation).
WIDEN = 1.0 + 2.0**-40


def as_boxes(lo, hi):
    """``(lo, hi)`` as float64 arrays (exact for float32 and narrower).

    Every bound here is proven for float64 arithmetic on the box corners: a
    box given in float32 (a public adapter method called directly; the
    estimators already validate to float64) computed its centre 0.5 (lo +
    hi) and half-widths in float32, whose rounding (~6e-8 relative, 6e-5 at
    an offset of 1000) moved the modelled box off the given one: sampled
    kernel values crossed the intervals of RBF / Matern /
    RationalQuadratic / ExpSineSquared adapters at 36703 of 140000 points.
    Converting first makes the bounds those of the same (exactly
    representable) box, bitwise equal to the float64 call; the per-call box
    sharing of :meth:`~skgprobust.kernels.StationaryAdapter._ranges`
    (keyed on the bits of the rows) sees float64 rows only.
    """
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def input_rounding(amax, Xs, scale):
    """(B, N): ``u (||amax_b / scale|| + ||x_i / scale||)``, the bound on the
    error of the (scaled) Euclidean distance between a point of box b and
    x_i caused by rounding the inputs and their differences; ``amax`` (B, d)
    is the largest |coordinate| over each box."""
    a = np.linalg.norm(amax / scale, axis=-1)
    b = np.linalg.norm(np.asarray(Xs) / scale, axis=-1)
    return _U * (a[:, None] + b[None, :])


@dataclass
class Relaxation:
    """Separable lower bound of ``sum_i w_bi k(x, x_i)`` over B boxes.

    Attributes
    ----------
    const : ndarray of shape (B,)
    alpha, beta : ndarray of shape (B, d)
        Coefficients of the per-coordinate parabolas in u = x - center.
    ilb : ndarray of shape (B,)
        The plain interval lower bound ``sum_i min(w klo, w khi)``; also valid.
    mag : ndarray of shape (B,)
        Magnitude of the summed terms, for the rounding margin.
    score : ndarray of shape (B, d)
        How much each coordinate's width contributes to the looseness of the
        bound; the branch-and-bound splits the coordinate with the largest.
    """

    const: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    ilb: np.ndarray
    mag: np.ndarray
    score: np.ndarray

    def __add__(self, other):
        return Relaxation(
            self.const + other.const,
            self.alpha + other.alpha,
            self.beta + other.beta,
            self.ilb + other.ilb,
            self.mag + other.mag,
            self.score + other.score,
        )

    def scaled(self, s, h):
        """The relaxation of ``s_b`` times the modelled sum, ``s`` (B,) >= 0.

        If ``f >= const + sum_j (alpha_j u_j^2 + beta_j u_j)`` and ``f >=
        ilb`` on a box, then ``s f`` satisfies both inequalities with every
        coefficient times s (s >= 0), whatever relaxation produced them. The
        products add one rounding each, at most ``u (|s const| + sum_j (|s
        alpha_j| h_j^2 + |s beta_j| h_j))`` over |u| <= h; twice that
        (the subtraction's rounding and that of the error term's own sum are
        of the next order, inside the factor 2 and ``WIDEN``), plus an
        absolute ``SUBNORMAL (1 + sum_j h_j)^2`` per coefficient for
        products that underflow, is taken off ``const``; ``ilb`` loses ``2 u
        |s ilb|`` and ``SUBNORMAL``; ``mag`` (the callers' relative margin) is
        scaled and widened by 4 u. ``s = 0``: the zero relaxation (exact: the
        sum is 0). A negative or NaN factor gives the relaxation ``-inf``
        (no claim).

        Parameters
        ----------
        s : ndarray of shape (B,)
            Non-negative factors.
        h : ndarray of shape (B, d)
            Half-widths of the boxes.

        Returns
        -------
        relaxation : Relaxation
            The relaxation of the scaled sum.
        """
        s = np.asarray(s, dtype=np.float64)
        z = s > 0
        sv, sm = s[:, None], s
        with np.errstate(invalid="ignore", over="ignore"):
            const, alpha, beta, ilb = sm * self.const, sv * self.alpha, sv * self.beta, sm * self.ilb
            err = 2.0 * _U * (np.abs(const) + (np.abs(alpha) * h * h + np.abs(beta) * h).sum(-1)) * WIDEN
            err = err + _underflow_allowance(h, 1 + 2 * h.shape[1])
            out = Relaxation(const - err, alpha, beta, ilb - 2.0 * _U * np.abs(ilb) - SUBNORMAL,
                             sm * self.mag * (1.0 + 4.0 * _U), sv * self.score)
        out = Relaxation(*(np.where(z if a.ndim == 1 else z[:, None], a, 0.0) for a in (
            out.const, out.alpha, out.beta, out.ilb, out.mag, out.score)))
        bad = ~(s >= 0)
        if bad.any():
            out.const = np.where(bad, -np.inf, out.const)
            out.ilb = np.where(bad, -np.inf, out.ilb)
        return out


@dataclass
class TaylorModel:
    """Second-order model of ``sum_i w_bi k(x, x_i)`` around each box centre.

    For all u = x - center in the box::

        sum_i w_bi k(c + u, x_i) >= value + grad.u + sum_j diag_j u_j^2
                                    + 1/2 u^T M u + rem

    value, grad and M are exact at the centre (so large weights of opposite
    signs cancel, unlike per-point bounds); ``rem`` (<= 0) bounds the
    third-order remainder, which shrinks like h^3 with the box.

    Attributes
    ----------
    value : ndarray (B,)
    grad, diag : ndarray (B, d)
    M : ndarray (B, d, d)
    rem : ndarray (B,)
    mag : ndarray (B,)
        Magnitude of the summed terms, for the rounding margin.
    """

    value: np.ndarray
    grad: np.ndarray
    diag: np.ndarray
    M: np.ndarray
    rem: np.ndarray
    mag: np.ndarray

    def __add__(self, other):
        if other is None:
            return None
        return TaylorModel(
            self.value + other.value,
            self.grad + other.grad,
            self.diag + other.diag,
            self.M + other.M,
            self.rem + other.rem,
            self.mag + other.mag,
        )

    def scaled(self, s, h):
        """The model of ``s_b`` times the modelled sum, ``s`` (B,) >= 0.

        The model's inequality (and that of its alternative ``alt = (M_alt,
        rem_alt, mag_alt)``, when it has one) multiplied by s >= 0 holds for
        the scaled sum with every coefficient times s, whatever produced it.
        The products add one rounding each, at most ``u (|s value| + sum_j
        |s grad_j| h_j + sum_j |s diag_j| h_j^2 + 1/2 sum_jk |s M_jk| h_j
        h_k + |s rem|)`` over |u| <= h; twice that (the subtraction's
        rounding and that of the error term's own sum are of the next order,
        inside the factor 2 and ``WIDEN``), plus an absolute ``SUBNORMAL (1 +
        sum_j h_j)^2`` per coefficient for products that underflow, is taken
        off ``rem`` (``rem_alt`` likewise with M_alt); ``mag`` is scaled and
        widened by 4 u. ``s = 0``: the zero model (exact). A negative or NaN
        factor gives ``rem = -inf`` (no claim).

        Parameters
        ----------
        s : ndarray of shape (B,)
            Non-negative factors.
        h : ndarray of shape (B, d)
            Half-widths of the boxes.

        Returns
        -------
        model : TaylorModel
            The model of the scaled sum.
        """
        s = np.asarray(s, dtype=np.float64)
        z = s > 0
        sv = s[:, None]

        def keep(a):
            return np.where(z.reshape((-1,) + (1,) * (a.ndim - 1)), a, 0.0)

        with np.errstate(invalid="ignore", over="ignore"):
            value, grad, diag = s * self.value, sv * self.grad, sv * self.diag
            M, rem = s[:, None, None] * self.M, s * self.rem
            hh = h[:, :, None] * h[:, None, :]
            base = np.abs(value) + (np.abs(grad) * h).sum(-1) + (np.abs(diag) * h * h).sum(-1)
            tiny = _underflow_allowance(h, 2 + 2 * h.shape[1] + h.shape[1] ** 2)
            err = 2.0 * _U * (base + 0.5 * (np.abs(M) * hh).sum(axis=(1, 2)) + np.abs(rem)) * WIDEN + tiny
            out = TaylorModel(keep(value), keep(grad), keep(diag), keep(M), keep(rem - err),
                              keep(s * self.mag * (1.0 + 4.0 * _U)))
            alt = getattr(self, "alt", None)
            if alt is not None:
                M_alt, rem_alt, mag_alt = alt
                M_alt, rem_alt = s[:, None, None] * M_alt, s * rem_alt
                err_a = 2.0 * _U * (base + 0.5 * (np.abs(M_alt) * hh).sum(axis=(1, 2)) + np.abs(rem_alt)) * WIDEN + tiny
                out.alt = (keep(M_alt), keep(rem_alt - err_a), keep(s * mag_alt * (1.0 + 4.0 * _U)))
        bad = ~(s >= 0)
        if bad.any():
            out.rem = np.where(bad, -np.inf, out.rem)
            if getattr(out, "alt", None) is not None:
                out.alt = (out.alt[0], np.where(bad, -np.inf, out.alt[1]), out.alt[2])
        return out


def _underflow_allowance(h, n_coef):
    """``n_coef SUBNORMAL (1 + sum_j h_j)^2`` (B,): a product s c that
    underflows errs by at most half the smallest subnormal (<< SUBNORMAL),
    and its monomial in u over |u| <= h (1, u_j, u_j^2 or u_j u_k) is at most
    (1 + sum_j h_j)^2 (``Relaxation.scaled``, ``TaylorModel.scaled``)."""
    with np.errstate(over="ignore"):
        return n_coef * SUBNORMAL * (1.0 + h.sum(-1)) ** 2


def box_halfwidths(lo, hi):
    """``(c, h1)``: the float centre c = (lo + hi) / 2 of each box and
    half-widths h1 >= 0 with [lo, hi] inside [c - h1, c + h1] (the centre's
    rounding: max(hi - c, c - lo), each rounded, times 1 + 4u)."""
    lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
    c = 0.5 * (lo + hi)
    return c, np.maximum(hi - c, c - lo) * (1.0 + 4.0 * 2.0**-53)


def widen_for_coefficient_ulps(mag, ulps):
    """A Taylor model's magnitude ``mag`` widened for coefficients that err by
    ``ulps`` u beyond the ~40 u the models' rounding arguments budget
    (:meth:`~skgprobust.kernels.stationary.StationaryAdapter.coefficient_ulps`):
    ``mag (1 + ulps / 256)``. The caller's relative margin is at least 256 u
    of the magnitude (``margin_rtol``), so it grows by at least ``ulps u
    mag``, which bounds the extra error of every term the model sums (each
    at most its share of ``mag``).

    Parameters
    ----------
    mag : ndarray
        The model's magnitude per box.
    ulps : float
        The extra relative error of its coefficients, in units of u.

    Returns
    -------
    mag : ndarray
        The widened magnitude.
    """
    return mag * (1.0 + ulps / 256.0)


def widen_enclosure(klo, khi):
    """``(klo', khi', A)``: the float enclosure [klo, khi] of k over a box
    widened by 1e-6 relative and ``SUBNORMAL`` absolute (its own rounding,
    including results that underflowed to 0 or were flushed), and A =
    max(|klo'|, |khi'|), the term magnitude of a leaf (A = |k|). Overflow:
    a lower end of +inf becomes the largest float (the true value exceeds
    it), an upper end of -inf the most negative, NaN the infinite end."""
    big = np.finfo(np.float64).max
    with np.errstate(over="ignore", invalid="ignore"):
        lo_w = klo - 1e-6 * np.abs(klo) - SUBNORMAL
        hi_w = khi + 1e-6 * np.abs(khi) + SUBNORMAL
        lo_w = np.where(np.isnan(lo_w), np.where(np.asarray(klo) == np.inf, big, -np.inf), lo_w)
        hi_w = np.where(np.isnan(hi_w), np.where(np.asarray(khi) == -np.inf, -big, np.inf), hi_w)
        lo_w = np.where(lo_w == np.inf, big, lo_w)
        hi_w = np.where(hi_w == -np.inf, -big, hi_w)
    return lo_w, hi_w, np.maximum(np.abs(lo_w), np.abs(hi_w))


def power_rounding(e, m, mlo, R, c, Ahat, nonneg):
    """(B, N) bound of ``|fl(k~ ** e) - k ** e|`` beyond ``16 u A`` (A =
    A_b ** e, :meth:`KernelAdapter.value_ulps`), for sklearn's
    ``Exponentiation`` of a base kernel whose computed value k~ satisfies
    ``|k~ - k| <= R + c u A_b`` (the base adapter's :meth:`~KernelAdapter.rounding`
    and :meth:`~KernelAdapter.value_ulps`), k in [mlo, m] over the box, A_b <= Ahat.

    Proof. (i) Non-negative base (``nonneg``: A_b = k >= 0 and k~ >= 0; every
    e > 0). Write k~ = a + rho with a = k (1 + theta), |theta| <= c u, |rho|
    <= R (theta takes as much of the error as c u k allows). Then

    * |a^e - k^e| = k^e |(1 + theta)^e - 1| <= m^e expm1(e |log1p(theta)|)
      <= m^e expm1(e c u (1 + 2 c u)) (|log1p(t)| <= |t| / (1 - |t|)); for
      large e this is the honest e-fold amplification of the base's
      relative rounding, for any e (no first-order truncation);
    * |k~^e - a^e| <= e max(a, k~)^(e - 1) R <= e (m (1 + c u) + R)^(e - 1) R
      for e >= 1 (mean value theorem); for e < 1, t^e is concave and
      subadditive: <= min(R^e, e min(a, k~)^(e - 1) R), min(a, k~) >= mlo (1
      - c u) - R (the second form only where that is > 0).

    (ii) Otherwise (a signed base with integer e >= 1, or a non-negative base
    whose A_b may exceed k, e.g. an even power of a signed sum): |k~ - k| <=
    E = R + c u Ahat and |k~^e - k^e| <= e max(|k|, |k~|)^(e - 1) E <= e (m
    + E)^(e - 1) E for e >= 1 (mean value theorem, integer e or k, k~ >= 0);
    for e < 1 (k, k~ >= 0) <= min(E^e, e (mlo - E)^(e - 1) E) as in (i).

    Then numpy's power (8 ulps, the platform assumption): fl(k~^e) = k~^e (1
    + pi) + sigma, |pi| <= 16 u, |sigma| <= 2^-1071, and |k~^e| <= A + D (D
    the bound above; |k|^e <= A), so the total is <= D (1 + 16 u) + 16 u A +
    2^-1071: this function returns D * WIDEN + SUBNORMAL and the power's
    adapter has ``value_ulps`` 17 (16 and one of headroom). ``m`` and ``mlo``
    are from the base's float interval, widened by 1e-6 relative (its own
    rounding). Overflow gives inf (the bounds become infinite, never wrong).
    """
    u = _U
    cu = float(c) * u
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m = np.asarray(m, dtype=np.float64) * (1.0 + 1e-6)
        R = np.asarray(R, dtype=np.float64)
        if nonneg:
            D1 = m**e * np.expm1(e * cu * (1.0 + 2.0 * cu))
            if e >= 1:
                D2 = e * (m * (1.0 + cu) + R) ** (e - 1.0) * R
            else:
                low = np.asarray(mlo, dtype=np.float64) * (1.0 - 1e-6) * (1.0 - cu) - R
                alt = np.where(low > 0, e * np.where(low > 0, low, 1.0) ** (e - 1.0) * R, np.inf)
                D2 = np.minimum(R**e, alt)
            D = D1 + D2
        else:
            E = R + cu * np.asarray(Ahat, dtype=np.float64)
            if e >= 1:
                D = e * (m + E) ** (e - 1.0) * E
            else:
                low = np.asarray(mlo, dtype=np.float64) * (1.0 - 1e-6) - E
                alt = np.where(low > 0, e * np.where(low > 0, low, 1.0) ** (e - 1.0) * E, np.inf)
                D = np.minimum(E**e, alt)
        D = np.where(np.isnan(D), np.inf, D)
    return D * WIDEN + SUBNORMAL


def interval_lower(w, klo, khi):
    """sum_i min(w klo, w khi): the lower bound of sum_i w_i k_i from intervals."""
    return np.minimum(w * klo, w * khi).sum(axis=-1)


class KernelAdapter:
    """Bounds for one sklearn kernel type; subclass and register to extend.

    Parameters
    ----------
    kernel : sklearn Kernel
        The fitted kernel (``estimator.kernel_``).
    Xs : ndarray of shape (N, d)
        Support inputs, float64.
    """

    #: True when k(x, x') >= 0 for all inputs (needed by Exponentiation).
    nonnegative = True
    #: True when the kernel is known to be positive semi-definite, its
    #: WhiteKernel parts included (noise on the diagonal): k(X, X) is PSD for
    #: every X, and k(., x) spans an RKHS. The variance bounds' lemma (0 <=
    #: r^T S r <= k(x, x) and the RKHS remainder ||k(x, .) - k(x0, .)||^2,
    #: :mod:`skgprobust._bounds._variance`) holds only then; for other
    #: kernels the variance bounds fall back to infinite (sound) ones. Leaves
    #: set it from their parameters (a negative constant or white noise, an
    #: ExpSineSquared on more than one feature are not PSD), composites from
    #: their children (sums and products of PSD kernels are PSD: Schur).
    #: False for adapters that do not say (not proven).
    psd = False
    #: True (class or instance attribute) for a kernel that is not known to
    #: be PSD but whose term magnitude is still dominated by its diagonal:
    #: see :attr:`dominated`. Leaves set it with a proof (ExpSineSquared on
    #: any number of features), composites from their children.
    _dominated = False
    #: True when k ** e is PSD for every e > 0 (infinitely divisible kernels:
    #: RBF, Matern 0.5 / inf, RationalQuadratic, 1-D ExpSineSquared, constants
    #: and white noise >= 0, products of such): a non-integer power keeps
    #: ``psd`` only then.
    infinitely_divisible = False
    #: True when the term magnitude A (:meth:`value_ulps`) equals |k|: every
    #: leaf; sums of non-negative such children, products and powers of such
    #: children. A power of a non-negative base with this property carries
    #: the base's relative rounding relatively (:func:`power_rounding`).
    magnitude_is_value = True

    def __init__(self, kernel, Xs):
        self.kernel = kernel
        self.Xs = np.asarray(Xs, dtype=np.float64)

    @property
    def dominated(self):
        """True when the term magnitude A of :meth:`value_ulps` satisfies
        ``A(x, y) <= sqrt(k(x, x) k(y, y))`` for all inputs (so k(x, x) >=
        A(x, x) >= 0), with k(x, x) what sklearn's ``diag`` computes in real
        arithmetic.

        Every PSD kernel of this package is (:meth:`value_ulps`'
        contract: Cauchy-Schwarz per PSD leaf). It is what the variance
        bounds' soundness margin needs when the RKHS lemma is not available
        (:mod:`skgprobust._bounds._variance`, "Without the lemma"), which is
        why it is tracked apart from :attr:`psd`: an ExpSineSquared on more
        than one feature is not PSD, but |k| <= 1 = k(x, x). Closed under
        the composites: a sum, A1 + A2 <= sqrt(a1 b1) + sqrt(a2 b2) <=
        sqrt((a1 + a2) (b1 + b2)) (Cauchy-Schwarz in R^2, a_i = k_i(x, x) >=
        0, b_i = k_i(y, y) >= 0); a product, A1 A2 <= sqrt(a1 a2 b1 b2); a
        power, A^e <= sqrt(a b)^e = sqrt(a^e b^e) (sklearn's diagonal of
        ``Exponentiation`` is the base's diagonal to the power e). A
        negative constant or white noise is not (its diagonal is negative).
        """
        return bool(self.psd or self._dominated)

    # -- required -------------------------------------------------------
    def values(self, X):
        """k(X, Xs), shape (n, N).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The points.

        Returns
        -------
        K : ndarray of shape (n, N)
            The kernel values.
        """
        raise NotImplementedError

    def value_and_grad(self, X):
        """k(X, Xs) of shape (n, N) and d/dx k(x, x_i) of shape (n, N, d).

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
        raise NotImplementedError

    def interval(self, lo, hi):
        """(klo, khi), each (B, N), enclosing k(x, x_i) over each box.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        klo, khi : ndarray of shape (B, N)
            The enclosure.
        """
        raise NotImplementedError

    def diag(self, X):
        """k(x, x) for each row of X, shape (n,).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The points.

        Returns
        -------
        diag : ndarray of shape (n,)
            The kernel's diagonal, as sklearn computes it.
        """
        return np.asarray(self.kernel.diag(X), dtype=np.float64)

    def diag_interval(self, lo, hi):
        """(dlo, dhi), each (B,), enclosing k(x, x) over each box (variance
        bounds). Stationary kernels have a constant diagonal; other adapters
        override this.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        dlo, dhi : ndarray of shape (B,)
            The enclosure.
        """
        if not self.kernel.is_stationary():
            from ..exceptions import UnsupportedKernelError

            raise UnsupportedKernelError(
                f"No bound on k(x, x) over boxes for {self.kernel!r}: variance bounds need "
                "diag_interval() on its adapter."
            )
        v = float(np.asarray(self.kernel.diag(lo[:1]), dtype=np.float64)[0]) if len(lo) else 0.0
        full = np.full(len(lo), v)
        return full, full.copy()

    def rounding(self, lo, hi):
        """(B, N) bounds E with ``|k~(x, x_i) - k(x, x_i)| <= E[b, i]`` for x in box b.

        ``k~`` is the kernel value as float64 code computes it from *rounded
        inputs*: sklearn rounds ``x / length_scale`` (and the coordinate
        differences) before the distance, which errs by about
        ``u (|x| + |x_i|) / length_scale``, far beyond any relative margin when
        features carry a large offset (e.g. timestamps). The bounds add
        ``sum_i |w_i| E[b, i]`` to their margin. The relative rounding of the
        value itself (exp, a power, a product: :meth:`value_ulps` u A, A the
        term magnitude) is covered elsewhere (``mag``, :meth:`mean_rtol`;
        the variance bounds' c_val). Every error that is *not* a bounded
        multiple of the value belongs here (and what exceeds
        :meth:`value_ulps`), e.g. the rounding of a distance: sklearn's
        squared distance errs by ~ (d + 2) u relative, which moves an RBF
        value by ~ (phi / 2) (d + 2) u of itself, unbounded as phi grows
        (:meth:`~skgprobust.kernels.stationary.StationaryAdapter.rounding`
        bounds it absolutely, by ``phi |psi'(phi)|``). The default, zero, is
        right for kernels computed without such errors.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        E : ndarray of shape (B, N)
            The bounds.
        """
        return np.zeros((len(lo), len(self.Xs)))

    def value_ulps(self, d):
        """c_val: the relative rounding of sklearn's kernel values that
        :meth:`rounding` does not carry.

        Contract (used by the variance bounds, :mod:`skgprobust._bounds._variance`,
        "Soundness margin" (a), and covered by the mean bounds' relative
        margin :meth:`mean_rtol`): for x in box b (float inputs, d features),
        sklearn's ``kernel(x[None], Xs)[0, i] = k~(x, x_i)`` satisfies

            |k~(x, x_i) - k(x, x_i)| <= rounding(lo, hi)[b, i] + value_ulps(d) u A(x, x_i),

        u = 2^-53, k the exact kernel at the float inputs, and A the *term
        magnitude*: A = |k| for a leaf kernel, A1 + A2 for a sum, A1 A2 for a
        product, A_b ** e for a power. Always |k| <= A; A = k for a
        ``nonnegative`` adapter (every term >= 0); and for PSD leaves (every
        registered leaf, constants >= 0) A <= sqrt(k(x, x) k(x_i, x_i))
        (Cauchy-Schwarz per leaf; sqrt(a1 b1) + sqrt(a2 b2) <= sqrt((a1 + a2)
        (b1 + b2)) for sums; products and powers multiply), which is the form
        the variance bounds use. ``magnitude(lo, hi)`` bounds A over a box.

        Platform assumption (as numpy's ``pow`` in
        :mod:`skgprobust.kernels.polynomial`): numpy's ``exp``, ``expm1``,
        ``log``, ``log1p``, ``sin`` and ``pow`` err by at most 8 ulps, i.e. 16 u relative plus 2^-1071 for
        subnormal results (measured: ``tests/test_rounding.py::test_platform_elementary_functions``).
        Every adapter here overrides this with a proven constant (its
        docstring); the default, ``2 d + 64``, is the earlier convention, an
        *assumption* for third-party adapters that prove nothing.

        Parameters
        ----------
        d : int
            Number of features.

        Returns
        -------
        c_val : float
            The constant.
        """
        return 2 * d + 64

    # -- RKHS norms of weight vectors (mean Taylor models) ----------------
    #: Largest support size for which :meth:`register_rkhs_weights` computes
    #: norms (one pass over the Gram matrix in row chunks, never stored).
    RKHS_NORM_MAX_N = 20000
    #: Rows of the Gram matrix evaluated at once by that pass (fewer for a
    #: large support: at most ``_RKHS_CHUNK_ELEMENTS`` entries, 32 MiB).
    _RKHS_CHUNK = 512
    _RKHS_CHUNK_ELEMENTS = 2**22

    def register_rkhs_weights(self, W):
        """Remember weight vectors whose RKHS norms the Taylor models may use.

        A fixed-weight mean ``sum_i w_i k(x, x_i)`` (a latent mean, a
        regressor's predictive mean) is bounded over many boxes with the
        same w; a leaf whose Taylor model has an RKHS remainder
        (:meth:`~skgprobust.kernels.stationary.StationaryAdapter.rkhs_remainder`)
        computes ``||sum_i w_i k(., x_i)||_H`` here, once for each
        registered w (all columns of W in one pass over the Gram matrix, so
        the cost, O(N^2 d), is paid when the bound model is built, before
        any row and its time limit, and travels with the adapter to
        parallel workers), and finds it again by the weight row's bytes (w
        and -w: the same norm). Composites pass the weights on as their own
        :meth:`taylor` passes them to their children (a constant factor c:
        the rows c w, computed by the same float product). The default
        registers nothing: no adapter needs to.

        Parameters
        ----------
        W : ndarray of shape (N,) or (N, P)
            One weight vector per column, over this adapter's support.
        """

    def _rkhs_store(self):
        store = self.__dict__.get("_rkhs_norms")
        if store is None:
            store = self.__dict__.setdefault("_rkhs_norms", {})
        return store

    def _register_rows(self, W):
        """Compute and store the norms of the columns of W (each also under
        the bytes of its negation)."""
        W = np.asarray(W, dtype=np.float64)
        W = W.reshape(len(self.Xs), -1)
        if not self.psd or len(self.Xs) == 0 or len(self.Xs) > self.RKHS_NORM_MAX_N:
            return
        store = self._rkhs_store()
        new = []
        for j in range(W.shape[1]):
            w = np.ascontiguousarray(W[:, j])
            if np.all(np.isfinite(w)) and w.tobytes() not in store:
                new.append(w)
        if not new:
            return
        norms = self._rkhs_norms_of(np.stack(new, axis=1))
        for w, v in zip(new, norms):
            store[w.tobytes()] = v
            store[(-w).tobytes()] = v

    def rkhs_weight_norms(self, W):
        """Upper bounds of ``||sum_i W[b, i] k(., x_i)||_H`` per row of W.

        H is the RKHS of this (PSD) kernel. Only rows registered with
        :meth:`register_rkhs_weights` (or their negations) get a finite
        value; the others get +inf (no claim).

        Proof of the bound. sklearn's kernel values satisfy
        ``abs(K~_ij - K_ij) <= R_ij + c u abs(K_ij)`` (the adapter's
        contract: :meth:`rounding` over the support's hull box, which holds
        at every x_i, and
        :meth:`value_ulps` c; A = abs(k) for a leaf), so ``abs(w^T (K - K~)
        w) <= r s1^2 + c u / (1 - c u) (m + r s1^2)`` with ``r = max R_ij``,
        ``s1 = sum_i abs(w_i)`` and ``m = sum_ij abs(w_i) abs(K~_ij)
        abs(w_j)``. The computed ``q~ = fl(w . fl(K~ w))`` errs from ``w^T
        K~ w`` by at most ``2 gamma_N (1 + gamma_N) m`` (two sums of N
        terms), and m, a sum of non-negative terms, is at most its computed
        value times ``1 + 4 gamma_N``. Hence ``||g||^2 = w^T K w <= q~ +
        1.01 ((2 gamma_N + 2 c u) m~ (1 + 4 gamma_N) + 2 r s1^2)`` (m~ the
        computed m, s1 rounded up), clipped at 0; the square root is rounded
        up by ``1 + 4 u``. Each vector is first scaled by a power of two
        (below), so that nothing underflows.

        Parameters
        ----------
        W : ndarray of shape (B, N)
            Weight rows.

        Returns
        -------
        norms : ndarray of shape (B,)
            Upper bounds, +inf where not known.
        """
        W = np.asarray(W, dtype=np.float64)
        B = W.shape[0]
        out = np.full(B, np.inf)
        store = self.__dict__.get("_rkhs_norms")
        if not store or W.ndim != 2 or W.shape[1] != len(self.Xs):
            return out
        for b in range(B):
            out[b] = store.get(np.ascontiguousarray(W[b]).tobytes(), np.inf)
        return out

    def _rkhs_norms_of(self, Ws):
        """Upper bounds (r,) of the RKHS norms of the columns of Ws (N, r)
        (proof: :meth:`rkhs_weight_norms`); +inf where the kernel cannot be
        evaluated here."""
        # Each vector scaled by a power of two to a largest entry in [1/2, 1)
        # (the norm is homogeneous): the quadratic form then neither
        # underflows nor overflows, and its relative allowances hold (with
        # the vector's largest entry, |w|^T |K| |w| >= K_ii / 4 > 0). An entry
        # that the scaling sends below the smallest subnormal (a vector
        # spanning more than ~2000 binades) changes by <= 2^-1074, i.e. g by
        # <= 2^-1074 sqrt(K_ii) in H: N 2^-1073 is added (triangle
        # inequality). The scaled norm goes back by ldexp, rounded up by one
        # ulp where that result is subnormal or zero.
        _, expo = np.frexp(np.max(np.abs(Ws), axis=0, initial=0.0))
        Ws = np.ldexp(Ws, -expo[None, :])
        N, d = self.Xs.shape
        # Vectors as contiguous rows (r, N): every product below sees the
        # same memory layout whatever r is (BLAS sums strided and contiguous
        # vectors in different orders).
        Ws = np.ascontiguousarray(Ws.T)
        aW = np.abs(Ws)
        Y = np.zeros_like(Ws)
        Ya = np.zeros_like(Ws)
        try:
            # R over the support's hull box (every x_i lies in it, so its
            # bounds hold at each point box x_i): one row, not N.
            hull_lo, hull_hi = self.Xs.min(axis=0)[None], self.Xs.max(axis=0)[None]
            r_max = float(np.max(np.asarray(self.rounding(hull_lo, hull_hi), dtype=np.float64), initial=0.0))
            chunk = max(16, min(self._RKHS_CHUNK, self._RKHS_CHUNK_ELEMENTS // max(N, 1)))
            for s in range(0, N, chunk):
                Xc = self.Xs[s : s + chunk]
                Kc = np.asarray(self.kernel(Xc, self.Xs), dtype=np.float64)
                aK = np.abs(Kc)
                # One product per vector (not one matrix product): each
                # norm is then the same bits whichever vectors are registered
                # together (a result that does not depend on the history).
                for j in range(len(Ws)):
                    Y[j, s : s + len(Xc)] = Kc @ Ws[j]
                    Ya[j, s : s + len(Xc)] = aK @ aW[j]
        except Exception:  # no claim where the kernel cannot be evaluated here
            return np.full(len(Ws), np.inf)
        c = float(self.value_ulps(d))
        gam = N * _U / (1.0 - N * _U)
        with np.errstate(over="ignore", invalid="ignore"):
            # Column by column: each norm's bits do not depend on the other
            # vectors registered with it.
            q = np.array([Ws[j] @ Y[j] for j in range(len(Ws))])
            m = np.array([aW[j] @ Ya[j] for j in range(len(Ws))]) * (1.0 + 4.0 * gam)
            s1 = np.array([aW[j].sum() for j in range(len(Ws))]) * (1.0 + gam)
            q2 = q + 1.01 * ((2.0 * gam + 2.0 * c * _U) * m + 2.0 * r_max * s1 * s1)
            nrm = np.sqrt(np.maximum(q2, 0.0)) * (1.0 + 4.0 * _U) + N * 2.0**-1073
            nrm = np.ldexp(nrm, expo)
            nrm = np.where(nrm < 2.0**-1022, np.nextafter(nrm, np.inf), nrm)
        return np.where(np.isfinite(nrm), nrm, np.inf)

    def rounding_parts(self, lo, hi):
        """``(R, klo, khi, A)``, each (B, N): :meth:`rounding`, an enclosure
        [klo, khi] of k over each box (possibly wider than :meth:`interval`:
        it serves only as a bound in rounding terms), and an upper bound A of
        the term magnitude (:meth:`value_ulps`) over each box.

        Composite adapters build their rounding from their children's parts
        in one pass, so each leaf computes its distances once (stationary
        leaves: one ``cdist`` for all four). Default (leaves, A = |k|):
        :meth:`rounding`, and :meth:`interval` through :func:`widen_enclosure`
        (its own rounding, underflow included).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        R, klo, khi, A : ndarray of shape (B, N)
            Rounding bounds, value enclosure and magnitude bound.
        """
        return (self.rounding(lo, hi),) + widen_enclosure(*self.interval(lo, hi))

    def magnitude(self, lo, hi):
        """(B, N) upper bound of the term magnitude A(x, x_i) (:meth:`value_ulps`)
        over each box: ``rounding_parts(lo, hi)[3]``.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        A : ndarray of shape (B, N)
            The bound.
        """
        return self.rounding_parts(lo, hi)[3]

    def diag_ulps(self, d):
        """c_diag with ``|fl(k(x, x)) - k(x, x)| <= c_diag u k(x, x)`` for
        sklearn's own ``kernel.diag`` (:mod:`skgprobust._bounds._variance`,
        "Soundness margin", (d)).

        Proof, by the adapter tree (every diagonal is >= 0, so relative errors
        of sums of non-negative terms are bounded by the terms' relative
        errors; first order, the factor (1 + 2^-20) applied at every node
        covers the second order for the sizes used): stationary leaves,
        ``ConstantKernel``, ``WhiteKernel`` and ``ExpSineSquared`` fill the
        diagonal with one float (exact; 1 is used, the default here for a
        stationary kernel); ``DotProduct``: d + 2; ``Sum``: max(c1, c2) + 1;
        ``Product``: c1 + c2 + 1; ``Exponentiation``: |p| c + 16 (each in its
        adapter). Without an override: 8 for a stationary kernel (the earlier
        constant), else ``2 d + 64`` (an assumption, like the default
        :meth:`value_ulps`).

        Parameters
        ----------
        d : int
            Number of features.

        Returns
        -------
        c_diag : float
            The constant.
        """
        c = 8.0 if self.kernel.is_stationary() else 2.0 * d + 64.0
        return float(c) * (1.0 + 2.0**-20)

    def mean_rtol(self, n_support, n_features):
        """Relative rounding margin of mean-type bounds built on this adapter.

        :func:`~skgprobust._bounds._mean.affine_lower` subtracts
        ``mean_rtol(N, d) * (mag + |c|)`` plus ``sum_i |w_i| rounding_i``
        from its bounds of ``c + sum_i w_i k(x, x_i)``. That margin must cover

        (i) the rounding of the adapter's own evaluation of the relaxation
            and Taylor model that it has not already subtracted from them
            (an adapter may fold its own error into ``const`` / ``rem`` /
            ``ilb`` as an absolute amount and then leave only (ii)-(iii) here),
        (ii) the few operations of ``affine_lower`` itself (adding ``c``,
             subtracting the absolute margin), and
        (iii) the rounding of a model's own ``predict`` of the latent-protocol
              form (:mod:`skgprobust._engine._latent`): ``fl(s fl(K~ @ v) + m)``
              or ``fl(K~ @ fl(s v)) + m``, K~ sklearn's kernel values, beyond
              the input rounding that :meth:`rounding` covers: the N-term sum
              (at most gamma_N of the magnitudes, any order), the scaling and
              offset, and the relative rounding of each kernel value (a
              few ulps; a distance's rounding, not a bounded multiple of
              the value far from x_i, is in :meth:`rounding` instead).

        The default, ``margin_rtol(N, d) = (8 (N + d) + 256) u``, is the
        generous constant every adapter was written for (several ulps per
        term, 8x headroom on the sum): of its constant 256 u, 200 u are the
        budget for (iii)'s relative rounding of each kernel value,
        :meth:`value_ulps` (<= 21 for every leaf here, c1 + c2 + 1 for a
        product, 17 for a power); a tree whose :meth:`value_ulps` exceeds 200
        (deep products) gets the excess added. Adapters that prove a smaller constant
        for their terms override it (:class:`~skgprobust.kernels.polynomial.DotProductPowerAdapter`
        and plain ``DotProduct``; ``WhiteAdapter``: 0, exact zeros; ``SumAdapter`` /
        ``ProductAdapter`` with a constant factor: the children's constant + 2u).
        Callers that combine several models' weights add their own margin for
        the combination, as before.

        Parameters
        ----------
        n_support : int
            Number of support points N.
        n_features : int
            Number of features d.

        Returns
        -------
        rtol : float
            The relative margin.
        """
        return margin_rtol(n_support, n_features) + max(float(self.value_ulps(n_features)) - 200.0, 0.0) * _U

    # -- optional -------------------------------------------------------
    def relax(self, lo, hi, w):
        """Separable lower bound of ``sum_i w_bi k(x, x_i)``; w has shape (B, N).

        The default uses the interval bound only (a constant), which is sound
        and converges as boxes shrink whenever ``interval`` does.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.
        w : ndarray of shape (B, N)
            One weight vector per box.

        Returns
        -------
        relaxation : Relaxation
            The separable lower bound, its interval bound and term magnitude.
        """
        klo, khi = self.interval(lo, hi)
        B, d = lo.shape
        ilb = interval_lower(w, klo, khi)
        # The term magnitude A (value_ulps) is |k| <= max(|klo|, |khi|) only
        # when magnitude_is_value; otherwise (e.g. a power of a signed sum,
        # A = A_b ** e >= |k|) the adapter's own magnitude() bounds it.
        amax = np.maximum(np.abs(klo), np.abs(khi))
        if not self.magnitude_is_value:
            amax = np.maximum(amax, self.magnitude(lo, hi))
        mag = (np.abs(w) * amax).sum(axis=-1)
        zeros = np.zeros((B, d))
        return Relaxation(ilb, zeros, zeros.copy(), ilb, mag, hi - lo)

    def diag_taylor(self, lo, hi, sign=1.0):
        """Optional :class:`TaylorModel` of ``sign * k(x, x)`` (sign +-1) about
        the box centres: ``sign k(c + u, c + u) >= value + grad . u + diag .
        u^2 + 1/2 u^T M u + rem`` on the box (k's exact diagonal; sklearn's
        rounding of it is the caller's, as for ``diag_interval``), or None.

        The variance bounds use it with the Taylor model of the weighted
        kernel sum, so that k(x, x) and q(x), which move together to first
        order on a non-stationary kernel, are bounded jointly (module doc of
        :mod:`skgprobust._bounds._variance`, "Non-constant diagonals"). The
        default: a constant model where ``diag_interval`` is a single value on
        every box (stationary kernels, constants), else None.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.
        sign : float, default=1.0
            +1 or -1.

        Returns
        -------
        model : TaylorModel or None
            The lower model of ``sign * k(x, x)``, or None without one.
        """
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        try:
            dlo, dhi = self.diag_interval(lo, hi)
        except Exception:  # no bound on k(x, x): no model
            return None
        dlo, dhi = np.broadcast_to(dlo, (len(lo),)), np.broadcast_to(dhi, (len(lo),))
        if not np.all(dlo == dhi) or not np.all(np.isfinite(dlo)):
            return None
        B, d = lo.shape
        z = np.zeros((B, d))
        return TaylorModel(sign * dlo, z, z.copy(), np.zeros((B, d, d)), np.zeros(B), np.abs(dlo))

    def first_order(self, c, h1):
        """A first-order model of the kernel vectors around c, or None (the
        default: none known).

        Returns ``(J, delta)``: a float Jacobian J of shape (B, N, d) and
        delta (B, N) with, for every b, i and every u with ``|u_j| <=
        h1[b, j]``, ``|r_i(c_b + u) - r_i(c_b) - J[b, i] . u| <= delta[b,
        i]``, r_i(x) the exact ``k(x, x_i)`` of this adapter's kernel at the
        float points (rounding included: J may be any float matrix, its
        distance to the exact gradient is in delta). Used by the variance
        bounds' Jacobian remainder
        (:meth:`~skgprobust._bounds._variance.LatentVariance.jacobian_remainder`).

        Parameters
        ----------
        c : ndarray of shape (B, d)
            Expansion points (the float box centres).
        h1 : ndarray of shape (B, d)
            Half-widths: the boxes lie in c +- h1.

        Returns
        -------
        model : tuple of (ndarray, ndarray) or None
            ``(J, delta)``, or None where this adapter has no such model.
        """
        return None

    def rkhs_increment(self, lo, hi):
        """Upper bound of sup_x ||k_x - k_c||_H^2 over each box, c = (lo + hi)
        / 2 its float centre, k_x = k(., x) the kernel's cross-covariance
        section (``WhiteKernel`` parts, which sklearn's k(X, Y) returns as 0,
        contribute nothing), H its RKHS; +inf where unknown (the default).

        Used by the variance bounds (:mod:`skgprobust._bounds._variance`, "The
        RKHS remainder"): ||A (r(x) - r(c))||^2 <= (1 + rho) of this, for
        any positive semi-definite kernel, independent of N and of the noise.
        Implementations (real arithmetic, rounded up) use that the box lies in
        c +- h1, h1 = max(hi - c, c - lo) (1 + 4u) (:func:`box_halfwidths`),
        and feature maps: ||k_x - k_c||^2 = k(x, x) - 2 k(x, c) + k(c, c) =
        ||f(x) - f(c)||^2.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.

        Returns
        -------
        bound : ndarray of shape (B,)
            The upper bound per box (+inf where unknown).
        """
        return np.full(len(np.atleast_2d(lo)), np.inf)

    def taylor(self, lo, hi, w):
        """Optional :class:`TaylorModel` of ``sum_i w_bi k(x, x_i)``; None if
        the adapter has none (the other bounds are then used alone).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.
        w : ndarray of shape (B, N)
            One weight vector per box.

        Returns
        -------
        model : TaylorModel or None
            The model about the box centres.
        """
        return None

    def linearise(self, lo, hi, w):
        """``(relax(lo, hi, w), taylor(lo, hi, w))``; adapters override it to
        share work between the two.

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Corners of the boxes.
        w : ndarray of shape (B, N)
            One weight vector per box.

        Returns
        -------
        relaxation : Relaxation
            As :meth:`relax`.
        model : TaylorModel or None
            As :meth:`taylor`.
        """
        return self.relax(lo, hi, w), self.taylor(lo, hi, w)
