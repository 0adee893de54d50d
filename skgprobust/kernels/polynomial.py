"""Integer powers of DotProduct: k(x, y) = (sigma_0^2 + x . y)^p, p = 1, 2, ...

A plain ``DotProduct`` is the case p = 1 (its adapter,
:class:`~skgprobust.kernels.basic.DotProductAdapter`, is this class with
p = 1; sklearn then applies no power at all, so every statement below holds
with pi = 0).

The posterior mean of such a model is *exactly* a polynomial of degree p in
x: ``sum_i w_i (s + x . x_i)^p`` (s = sigma_0^2). Bounding each term
separately (interval of (s + x . x_i)^p times w_i) loses the cancellation
between the large, opposite-signed weights that ``normalize_y`` and the
Laplace approximation produce, which gave bounds wider than the model's range
by five orders of magnitude. Here the terms are summed *before* they are
bounded: with u = x - c (c the box centre), a_i = s + c . x_i and
b_i(u) = u . x_i, the binomial theorem gives, exactly,

    (a_i + b_i)^p = a_i^p + p a_i^(p-1) b_i + p (p-1)/2 a_i^(p-2) b_i^2
                    + sum_{k=3}^p C(p, k) a_i^(p-k) b_i^k                  (1)

so that, summed with the weights w_i,

    sum_i w_i k(c + u, x_i) = V + G . u + 1/2 u^T M u + R(u),
    V = sum_i w_i a_i^p,  G = p sum_i w_i a_i^(p-1) x_i,
    M = p (p-1) sum_i w_i a_i^(p-2) x_i x_i^T   (a (d x d) matrix, exact),
    R(u) = sum_i w_i sum_{k>=3} C(p, k) a_i^(p-k) b_i^k.

For p <= 2, R = 0: the :class:`TaylorModel` is exact and its only looseness is
the separable bound of the indefinite quadratic (taylor_lower: eigenvalue or
Gershgorin), which shrinks like h^2 ||M||. For p >= 3, over the box |b_i| <=
r_i := sum_j h_j |x_ij| (h the half-widths), so

    R(u) >= -sum_i |w_i| sum_{k=3}^p C(p, k) |a_i|^(p-k) r_i^k =: rem        (2)

(each term of (1) with k >= 3 is bounded by its absolute value), which
shrinks like h^3.

Exact coefficients. For a mean objective (the same weights w for every box)
the expansion is not done per support point: by the binomial and multinomial
theorems, F(x) = sum_i w_i (s + x . x_i)^p = sum_alpha beta_alpha x^alpha
over the n = C(d + p, p) multi-indices |alpha| <= p, with

    beta_alpha = C(p, |alpha|) s^(p - |alpha|) (|alpha|! / alpha!) sum_i w_i x_i^alpha.

Every float is M 2^E with an integer M, so each beta_alpha is computed
*exactly* in Python integers (:class:`_ExactPolynomial`, once per weight
vector, cached on the adapter) and rounded once: beta~ = beta (1 + e),
|e| <= u. The huge opposite-signed weights of a rank-deficient fit (sum |w|
= 2.4e10 on the gallery's ``C * DotProduct**2`` regressor) cancel *inside*
the exact sum; the coefficients of the fitted polynomial are of the size of
its values. Around each box centre c, F(c + u) = sum_g gamma_g u^g with
gamma = T(c)^T beta~, T(c)[alpha, g] = prod_j C(alpha_j, g_j)
c_j^(alpha_j - g_j) (g <= alpha), so V = gamma_0, G_j = gamma_(e_j), M_jj =
2 gamma_(2 e_j), M_jl = gamma_(e_j + e_l), and the remainder (p >= 3) is
R(u) >= -sum_(|g| >= 3) |gamma_g| h^g (tighter than (2): the cancellation
between support points is kept in every order). Used when n <= 100 and
N n <= 4e5; otherwise (and for per-box weights, as the variance bounds pass)
the per-term model above.

Rounding. The bounds must hold for the numbers the model's ``predict``
returns. Notation: u = 2^-53; T_i = s + amax . |x_i| (amax_j = max(|lo_j|,
|hi_j|)), so |s + x . x_i| <= T_i on the box; ``mag`` = sum_i |w_i| T_i^p
(>= sum_i |w_i k(x, x_i)|; no factor). The margin has three parts.

(S) sklearn's own rounding (what :meth:`mean_rtol` and :meth:`rounding`
cover). ``DotProduct`` computes t~ = fl(fl(inner(x, x_i)) + s): |t~ - t| <=
e_i = (d + 1)(1 + 2^-30) u T_i (:meth:`rounding`, which also bounds the
effect on t~^p by the mean value theorem; added as the absolute
``sum_i |w_i| rounding_i``). ``Exponentiation`` computes t~ ** p: numpy
evaluates ``a ** 2`` as ``square(a)`` and ``a ** 1`` as a copy (exactly
rounded; checked in tests/test_dotproduct.py), so the relative error is
pi <= u for p <= 2 (pi = 0 for a plain ``DotProduct``, no power); for p >= 3 it calls numpy's array
power (its own SIMD loops or the C library's ``pow``, platform dependent: numpy 2.4 with AVX512 differs
from glibc's pow on ~2.7% of bases, review finding 4).
IEEE 754 does not fix pow's accuracy (it only recommends correct
rounding), and the number certified is sklearn's own ``t~ ** p``, so no
formula of ours can remove this dependence: it is a stated *platform
assumption* that pow errs by at most 8 ulps, i.e. pi = 16 u relative
(glibc's documented < 1 ulp does not apply where numpy uses its own
loops, so the assumption rests on the platform test; measured here, numpy's
array power: at most 1.1 u over 18000 random bases of magnitude 1e-30 .. 1e30, both signs, p = 3..7;
tests/test_proof_gaps.py::test_platform_pow_accuracy_for_integer_exponents
checks the 16 u allowance on the platform the tests run on). A
``ConstantKernel`` factor adds one rounding fl(C k~) and our scaled weights
fl(C w) another: :meth:`ProductAdapter.mean_rtol
<skgprobust.kernels.composite.ProductAdapter.mean_rtol>` adds 2 u per
constant factor. A ``Sum`` adds one rounding per level
(:meth:`SumAdapter.mean_rtol
<skgprobust.kernels.composite.SumAdapter.mean_rtol>`: the larger child's
constant plus 2 u), and a ``WhiteKernel``'s cross-covariances are exact
zeros (:meth:`WhiteAdapter.mean_rtol
<skgprobust.kernels.basic.WhiteAdapter.mean_rtol>` = 0). ``predict`` then computes fl(K~ @ v) (N products and sums
in any order, BLAS included: <= gamma_N sum_i |v_i k~_i|, gamma_N = N u / (1
- N u) <= (N + 2^-12) u for N <= 2^20), then fl(fl(s D) + m) (normalize_y;
2 u of |s D| <= mag (1 + O(N u)) and u |m|), while our weights are
fl(s v_i) = s v_i (1 + e_i) (u of mag). The regressor's and classifiers'
other forms (fl(K~ @ fl(s v)) + m; K~^T-ordered products) are covered by the
same count. First order: (N + 3) u mag + u |m| + pi mag.

(A) ``affine_lower``'s own last steps (max, c + lower, minus the absolute
margin): at most 4 u (mag + |c|). Second-order terms (products of the
above, e.g. (1 + (d + 1) u)^p, N u . u): below 1 u mag when N + p (d + 2)
<= 2^20. So ``mean_rtol(N, d) = (N + 12 + pi/u) u`` (4 u spare) covers (S)
and (A) with the offset c's u |c|; larger N or p (d + 2) fall back to the
generous ``margin_rtol(N, d)``.

(F) Our own evaluation, subtracted from ``rem`` (hence from the relaxation's
constant and the Taylor model) as an absolute amount, so that mean_rtol need
not cover it; the same relaxations under the default margin_rtol (products
with other kernels, sums) are then even more conservative.
  * Exact-coefficient path, relative to mag_poly = sum_alpha |beta~_alpha|
    amax^alpha (<= mag, since every c_alpha >= 0: the sum over alpha of the
    term magnitudes |w_i| c_alpha |x_i^alpha| amax^alpha is |w_i| T_i^p):
    the rounding of beta (u), the entries of T (c^k by k - 1 products, a
    binomial, d factors: (d p + 1) u), gamma = T^T beta~ (n + 1 terms), the
    Taylor model's use in taylor_lower / the separable minimum (three sums
    of <= d + 8 terms whose magnitudes are each <= mag_poly), h^g (d + p),
    and the modelled box: fl((lo + hi)/2) +- fl((hi - lo)/2) misses [lo, hi]
    by <= 2 u amax per coordinate, which moves F by <= |grad F| . 2 u amax
    <= 2 p u mag_poly. Together <= (n + d p + 7 d + 3 p + 51) u mag_poly.
    For p <= 2 the shift is skipped: V = beta_0 + b . c + c^T Q c, G = b +
    2 Q c, M = 2 Q (Q_jj = beta_(2 e_j), Q_jl = beta_(e_j + e_l) / 2), sums
    of at most d^2 + d + 1 terms whose magnitudes add up to <= mag_poly (for
    V; <= 2 mag_poly / h for G . u), i.e. (d^2 + d + 3) u <= 2 n u of it
    (n = (d + 1)(d + 2) / 2). Either way the total is below
    2 (n + d p + 7 d + 3 p + 51) u mag_poly; we subtract
    2 (n + d p + 7 d + 3 p + 64) u mag_poly, plus n 2^-1070 for
    coefficients that underflowed.
  * Per-term path, relative to mag (the absolute values of every term of
    expansion (1) over k and i sum to at most mag, since |a_i| + r_i <=
    T_i): a_i (d + 1 roundings), its powers (p (d + 1) + 16 u), the products
    with w (u), the sums over i (N u) and over j (d u), the tail terms, the
    separable minimum and the modelled box (2 p u); we subtract twice
    (N + 3 d + p (d + 19) + 40) u mag.
  * The interval bound ``ilb``: its endpoints (d + 1 roundings, the power:
    p (d + 1) u + pi), the products with w and the N-term sum: lowered by
    twice (N + p (d + 2) + 24) u mag.
The eigenvalue bound of the quadratic part carries its own margin
(:func:`_separable_quadratic`).

On the gallery's 1-D ``C * DotProduct**2`` regressor (N = 10, sum |alpha_|
= 2.4e10, mag up to 6.7e11) the total is (N + 15) u mag + 4 u mag (input
rounding) = 29 u mag <= 2.2e-3 against epsilon 4.1e-3; the old constant
(8 (N + d) + 256) u gave 0.025 and the ranges stalled. Is a smaller sound
margin available? Not in general: sklearn's own N-term sum can err by
gamma_N sum |alpha_i k_i| (the adversarial rounding of each partial sum is
not excluded by any property of the data), and its per-term errors are of
order u |alpha_i k_i| each, so a bound that holds for every float x in the
box must allow (N + O(1)) u mag; the exact coefficients remove only *our*
share. Measured on that model (3001 grid points, F in exact rational
arithmetic): |predict - F| reaches 2.4 u mag, a twelfth of the bound
(2.1 u mag at most over 1480 points of 37 random rank-deficient fits in
tests/test_dotproduct.py). Where u mag itself exceeds epsilon no sound range
of predict's outputs can converge: on a random ``DotProduct(3) ** 3`` fit
(sum |alpha_| = 3.5e10) predict deviates from F by -0.86 .. +1.29 at 60
points of one box, against epsilon 0.009.
"""

from math import factorial, fsum

import numpy as np
from scipy.special import comb

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol
from ._base import (
    SUBNORMAL,
    WIDEN,
    KernelAdapter,
    Relaxation,
    TaylorModel,
    box_halfwidths,
    interval_lower,
    widen_enclosure,
)


def is_dot_product_power(kernel):
    """True for ``Exponentiation(DotProduct, p)`` with p a positive integer
    (a plain ``DotProduct``, the case p = 1, is not an Exponentiation: it is
    adapted by :class:`~skgprobust.kernels.basic.DotProductAdapter`, the same
    adapter with p = 1)."""
    from sklearn.gaussian_process.kernels import DotProduct, Exponentiation

    if type(kernel) is not Exponentiation or type(kernel.kernel) is not DotProduct:
        return False
    e = float(kernel.exponent)
    return bool(np.isfinite(e) and e >= 1 and e == int(e))


def _separable_quadratic(M, h):
    """Two separable lower bounds of 1/2 u^T M u over |u_j| <= h_j, per box.

    Returns coefficient arrays (B, d) ``(coef_eig, coef_ger)``, each with
    1/2 u^T M u >= sum_j coef_j u_j^2 on the box:

    * eigenvalue: with u = diag(h) v, |v_j| <= 1, 1/2 u^T M u = 1/2 v^T A v
      >= 1/2 lambda_min(A) |v|^2 = sum_j 1/2 lambda_min (u_j / h_j)^2,
      A = diag(h) M diag(h); lambda_min is lowered by 1e-12 sum|A_jl|, more
      than the error of eigvalsh (backward stable: a few u ||A||_2 <= u
      sum|A_jl|). Coordinates with h_j = 0 have u_j = 0 and get 0.
    * Gershgorin-type: |u_j u_l| <= (u_j^2 h_l / h_j + u_l^2 h_j / h_l) / 2
      for |u| <= h, hence sum_{l != j} M_jl u_j u_l >= -sum_j u_j^2
      sum_{l != j} |M_jl| h_l / h_j.
    """
    A = M * h[:, :, None] * h[:, None, :]
    lam = np.linalg.eigvalsh(A)[:, 0] - 1e-12 * np.abs(A).sum(axis=(1, 2))
    moving = h > 0
    hh = np.where(moving, h, 1.0)
    coef_eig = np.where(moving, 0.5 * lam[:, None] / (hh * hh), 0.0)
    Md = np.diagonal(M, axis1=1, axis2=2)
    off = np.matmul(np.abs(M), h[:, :, None])[:, :, 0] - np.abs(Md) * h
    coef_ger = np.where(moving, 0.5 * (Md - off / hh), 0.0)
    return coef_eig, coef_ger


def _separable_min(alpha, beta, h):
    """min over |u_j| <= h_j of sum_j alpha_j u_j^2 + beta_j u_j (B,): used
    only to choose between two valid relaxations, so its rounding is harmless."""
    q = np.minimum(alpha * h * h - beta * h, alpha * h * h + beta * h)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.clip(np.where(alpha > 0, -beta / (2 * alpha), 0.0), -h, h)
    return np.minimum(q, np.where(alpha > 0, alpha * v * v + beta * v, q)).sum(-1)


def _pascal(P):
    """(P + 1, P + 1) float table of C(a, b) (0 for b > a); exact integers."""
    t = np.zeros((P + 1, P + 1))
    for a in range(P + 1):
        for b in range(a + 1):
            t[a, b] = float(comb(a, b, exact=True))
    return t


def _powers(x, P):
    """(..., P + 1): x**0 .. x**P by repeated multiplication (the k-th power
    carries k - 1 roundings, no ``pow``)."""
    out = np.empty(x.shape + (P + 1,))
    out[..., 0] = 1.0
    for k in range(1, P + 1):
        out[..., k] = out[..., k - 1] * x
    return out


def _monomials(pw, alphas):
    """prod_j pw[..., j, alphas[a, j]] for each multi-index a: (..., n)."""
    out = np.ones(pw.shape[:-2] + (len(alphas),))
    for j in range(alphas.shape[1]):
        out = out * pw[..., j, :][..., alphas[:, j]]
    return out


def _int_parts(x):
    """Exact integer mantissas and exponents: x == M * 2**E elementwise."""
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return (np.ldexp(m, 53)).astype(np.int64), e.astype(np.int64) - 53


_SPLIT = 134217729.0  # 2^27 + 1


def _two_product(a, b):
    """(p, e) with p + e = a b exactly (Dekker), when no factor exceeds
    2^996 in magnitude and no partial product underflows."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _in_safe_range(v):
    """Every value 0 or of magnitude in [2^-450, 2^450] (finite)."""
    a = np.abs(v)
    return bool(np.all((a == 0) | ((a >= 2.0**-450) & (a <= 2.0**450))))


def _linear_coefficients(adapter, w):
    """beta (d + 1,) of the p = 1 polynomial, correctly rounded, by
    TwoProduct and fsum (see :class:`_ExactPolynomial`); None when the
    inputs leave the range where TwoProduct is exact or fsum overflows."""
    Xs, s = adapter.Xs, adapter.s2
    if not (_in_safe_range(w) and _in_safe_range(Xs) and _in_safe_range(np.array([s]))):
        return None
    beta = np.zeros(len(adapter._alphas))
    try:
        hi, lo = _two_product(np.full_like(w, s), w)
        beta[0] = fsum(np.concatenate([hi, lo]).tolist())
        for j, a in enumerate(adapter._i1):
            hi, lo = _two_product(w, Xs[:, j])
            beta[a] = fsum(np.concatenate([hi, lo]).tolist())
    except OverflowError:
        return None
    return beta


class _ExactPolynomial:
    """Coefficients of F(x) = sum_i w_i (s + x . x_i)^p in the monomial basis,
    ``F(x) = sum_alpha beta_alpha x^alpha``,
    ``beta_alpha = C(p, |alpha|) s^(p - |alpha|) (|alpha|! / alpha!) sum_i w_i x_i^alpha``
    (binomial and multinomial theorems), each computed *exactly* in integer
    arithmetic (every float is M 2^E with an integer M) and rounded once to
    float64: |beta~ - beta| <= u |beta| (plus 2^-1074 if it underflows).
    ``ok`` is False when a coefficient overflows.

    For p = 1 (``DotProduct``) the same correctly rounded numbers come
    faster from error-free transformations: beta_0 = s sum_i w_i and
    beta_(e_j) = sum_i w_i x_ij are sums of products a b, each split exactly
    as a b = fl(a b) + e by Dekker's TwoProduct (exact when no factor exceeds
    2^996 and no partial product underflows: every nonzero |a|, |b| in
    [2^-450, 2^450] suffices), and ``math.fsum`` returns the correctly
    rounded sum of the 2N floats (Shewchuk's exact partials, as CPython
    documents and implements it). Values outside that range, or an fsum
    overflow, take the integer path (tests/test_dotproduct.py checks the two
    paths give identical coefficients)."""

    def __init__(self, adapter, w):
        alphas, P = adapter._alphas, adapter.p
        if P == 1:
            beta = _linear_coefficients(adapter, w)
            if beta is not None:
                self.beta = beta
                self.ok = bool(np.all(np.isfinite(beta)))
                return
        Mw, Ew = _int_parts(w)
        Ex, Ms, Es, pw = adapter._int_support()
        N, d = adapter.Xs.shape
        # exponent of every term (N, n): E_w + sum_j alpha_j E_x[i, j]
        E = Ew[:, None] + Ex @ alphas.T
        Mw = [int(v) for v in Mw]
        beta = np.zeros(len(alphas))
        self.ok = True
        for a, alpha in enumerate(alphas):
            nz = [(j, int(alpha[j])) for j in range(d) if alpha[j]]
            live = [i for i in range(N) if Mw[i]]
            if not live:
                continue
            e0 = int(E[live, a].min())
            total = 0
            for i in live:
                t = Mw[i]
                for j, k in nz:
                    t *= pw[i][j][k]
                total += t << int(E[i, a] - e0)
            k = int(alpha.sum())
            total *= adapter._cint[a] * Ms ** (P - k)
            e = e0 + Es * (P - k)
            try:
                beta[a] = float(total << e) if e >= 0 else total / (1 << -e)
            except OverflowError:
                self.ok = False
                return
        self.beta = beta
        self.ok = bool(np.all(np.isfinite(beta)))


class DotProductPowerAdapter(KernelAdapter):
    """``Exponentiation(DotProduct(sigma_0), p)``, p a positive integer.

    Bounds of ``sum_i w_i (s + x . x_i)^p`` by the exact polynomial
    expansion around each box centre (see the module docstring for the
    proof and the rounding argument). ``ConstantKernel * this`` is handled
    by :class:`~skgprobust.kernels.composite.ProductAdapter` (it scales the
    weights), sums by :class:`~skgprobust.kernels.composite.SumAdapter`
    (Taylor models and relaxations add up).
    """

    #: largest number of monomials of degree <= p for the exact-coefficient path
    MAX_MONO_EXACT = 100
    #: largest N * (number of monomials) for the exact-coefficient path
    MAX_EXACT_WORK = 400_000
    #: coefficient vectors kept per adapter (one per mean objective)
    CACHE_SIZE = 16

    def __init__(self, kernel, Xs):
        from sklearn.gaussian_process.kernels import DotProduct

        # A plain DotProduct is the case p = 1 (sklearn computes inner + s,
        # with no power at all: ``_plain``).
        self._plain = type(kernel) is DotProduct
        if not (self._plain or is_dot_product_power(kernel)):
            raise ValueError(f"DotProductPowerAdapter needs DotProduct ** (positive integer), got {kernel!r}.")
        super().__init__(kernel, Xs)
        dot = kernel if self._plain else kernel.kernel
        self.s2 = float(dot.sigma_0) ** 2
        self.e = 1.0 if self._plain else float(kernel.exponent)
        self.p = int(self.e)
        self.nonnegative = self.p % 2 == 0
        # sigma_0^2 + x . y is PSD; so are its positive integer powers (Schur).
        self.psd = True
        self.absXs = np.abs(self.Xs)
        # C(p, k) for k = 0..p
        self._binom = np.array([comb(self.p, k, exact=True) for k in range(self.p + 1)], dtype=np.float64)
        N, d = self.Xs.shape
        n = comb(d + self.p, self.p, exact=True)
        self._exact = (
            n <= self.MAX_MONO_EXACT and n * max(N, 1) <= self.MAX_EXACT_WORK and np.isfinite(self.s2)
            and bool(np.all(np.isfinite(self.Xs)))
        )
        self._cache = {}
        if self._exact:
            self._setup_exact(d)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        state["_ints"] = None
        return state

    def _int_support(self):
        """(E_x, M_s, E_s, pw): the support points' exponents, s = M_s 2^E_s,
        and pw[i][j][k] = M_x[i, j] ** k as Python integers (x_ij = M_x[i, j]
        2^E_x[i, j]); they depend on the support only, so they are computed
        once per adapter for every weight vector."""
        ints = getattr(self, "_ints", None)
        if ints is None:
            Mx, Ex = _int_parts(self.Xs)
            Ms, Es = _int_parts(np.array([self.s2]))
            rows = Mx.tolist()
            pw = [[[m**k for k in range(self.p + 1)] for m in row] for row in rows]
            ints = self._ints = (Ex, int(Ms[0]), int(Es[0]), pw)
        return ints

    def _setup_exact(self, d):
        p = self.p
        self._alphas = _multi_indices(d, p)  # by degree: 0, e_j, degree 2, ...
        deg = self._alphas.sum(-1)
        fact = [factorial(k) for k in range(p + 1)]
        self._cint = [
            comb(p, int(k), exact=True) * fact[int(k)] // int(np.prod([fact[int(a)] for a in al]))
            for al, k in zip(self._alphas, deg)
        ]
        index = {tuple(a): i for i, a in enumerate(self._alphas)}
        eye = np.eye(d, dtype=np.int64)
        self._i1 = np.array([index[tuple(eye[j])] for j in range(d)], dtype=np.int64)
        self._i2 = np.array(
            [[index[tuple(eye[j] + eye[k])] if p >= 2 else 0 for k in range(d)] for j in range(d)], dtype=np.int64
        )
        self._high = deg >= 3
        self._deg = deg
        # Shift: (c + u)^alpha = sum_{b <= alpha} binom(alpha, b) c^(alpha - b) u^b.
        diff = self._alphas[:, None, :] - self._alphas[None, :, :]  # (n, n, d)
        mask = np.all(diff >= 0, axis=-1)
        pas = _pascal(p)
        self._shift_binom = np.where(
            mask, np.prod(pas[self._alphas[:, None, :], np.minimum(self._alphas[None, :, :], p)], axis=-1), 0.0
        )
        self._shift_exp = np.where(mask[:, :, None], diff, 0)

    def diag_taylor(self, lo, hi, sign=1.0):
        """Model of sign (s + ||x||^2)^p: with a = s + ||c||^2 and t(u) = 2 c .
        u + ||u||^2 (exact: ||c + u||^2 = ||c||^2 + t), the binomial theorem
        gives (a + t)^p = a^p + p a^(p-1) t + C(p, 2) a^(p-2) t^2 + R3, so
        value a^p, grad 2 p a^(p-1) c, diag p a^(p-1) (all j), M = 4 p (p-1)
        a^(p-2) c c^T (the (c . u)^2 part of t^2), and the rest, C(p, 2)
        a^(p-2) (t^2 - 4 (c . u)^2) + R3 = C(p, 2) a^(p-2) (4 (c . u) ||u||^2
        + ||u||^4) + sum_(k >= 3) C(p, k) a^(p-k) t^k, bounded in absolute
        value with |c . u| <= |c| . h1, ||u||^2 <= ||h1||^2, |t| <= 2 |c| .
        h1 + ||h1||^2 (the box lies in c +- h1) and taken as ``rem`` (<= 0)
        for either sign. p = 1: exact (rem = 0). ``mag`` = 4 (p + 1) (|a| +
        tmax)^p + |rem| bounds every term (binomial expansion of (|a| +
        |t|)^p) and a's rounding ((d + 1) u of a, carried p-fold)."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        c, h1 = box_halfwidths(lo, hi)
        p, B, d = self.p, lo.shape[0], lo.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            a = self.s2 + (c * c).sum(-1)
            cu = (np.abs(c) * h1).sum(-1) * (1.0 + 1e-12)
            uu = (h1 * h1).sum(-1) * (1.0 + 1e-12)
            tmax = (2.0 * cu + uu) * (1.0 + 1e-12)
            aa = np.abs(a)
            rem = np.zeros(B)
            if p >= 2:
                rem = rem + comb(p, 2) * aa ** (p - 2) * (4.0 * cu * uu + uu * uu)
            for k in range(3, p + 1):
                rem = rem + comb(p, k) * aa ** (p - k) * tmax**k
            rem = -rem * (1.0 + 1e-12)
            value = sign * a**p
            grad = sign * 2.0 * p * a[:, None] ** (p - 1) * c
            diag = np.broadcast_to((sign * p * a ** (p - 1))[:, None], (B, d)).copy()
            M = (sign * 4.0 * p * (p - 1) * a ** (p - 2))[:, None, None] * c[:, :, None] * c[:, None, :] if p >= 2 \
                else np.zeros((B, d, d))
            mag = 4.0 * (p + 1) * (aa + tmax) ** p - rem
        ok = np.isfinite(rem) & np.isfinite(mag) & np.isfinite(value)
        return TaylorModel(np.where(ok, value, 0.0), np.where(ok[:, None], grad, 0.0), np.where(ok[:, None], diag, 0.0),
                           np.where(ok[:, None, None], M, 0.0), np.where(ok, rem, -np.inf), np.where(ok, mag, 0.0))

    def rkhs_increment(self, lo, hi):
        """(p R^(p-1) ||h1||)^2: the feature map of s + x . y is f(x) = (sigma_0,
        x), so ||f(x) - f(c)|| = ||x - c|| <= ||h1||, and that of its p-th
        power is f^(x)p (tensor power); telescoping f(x)^(x)p - f(c)^(x)p
        over the p factors gives ||.|| <= p R^(p-1) ||f(x) - f(c)|| with R^2
        = s + sum_j max(|lo_j|, |hi_j|)^2 >= ||f(x)||^2, ||f(c)||^2 (rounded
        up)."""
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        _, h1 = box_halfwidths(lo, hi)
        p = self.p
        with np.errstate(over="ignore", invalid="ignore"):
            R2 = (self.s2 + (np.maximum(np.abs(lo), np.abs(hi)) ** 2).sum(-1)) * (1.0 + 1e-12)
            D = p * p * R2 ** (p - 1) * (h1 * h1).sum(-1) * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    # -- values ---------------------------------------------------------
    def _base(self, X):
        return np.inner(np.asarray(X, dtype=np.float64), self.Xs) + self.s2

    def values(self, X):
        # The same operations as sklearn: (inner + sigma_0^2) ** exponent
        # (no power for a plain DotProduct).
        t = self._base(X)
        return t if self._plain else t**self.e

    def value_and_grad(self, X):
        t = self._base(X)
        p = self.p
        dk = p * t ** (p - 1) if p > 1 else np.ones_like(t)
        return (t if self._plain else t**self.e), dk[:, :, None] * self.Xs[None, :, :]

    def diag(self, X):
        X = np.asarray(X, dtype=np.float64)
        t = np.einsum("ij,ij->i", X, X) + self.s2
        return t if self._plain else t**self.e

    def diag_ulps(self, d):
        """sklearn's ``diag``: t = einsum(x, x) + sigma_0^2 (d non-negative
        products summed in any order and one addition: gamma_(d+1) <= (d + 2)
        u relative, with the float s = fl(sigma_0^2) that this adapter uses),
        then t ** p (|p| (d + 2) u, first order, and numpy's power within 8
        ulps, 16 u, the documented assumption; no power for a plain
        ``DotProduct``). Returns ``(d + 2)(1 + 2^-20)`` for a plain
        ``DotProduct``, else ``(|p| (d + 2)(1 + 2^-20) + 16)(1 + 2^-20)`` (the
        factors cover the second order, as in every ``diag_ulps``)."""
        c = (d + 2.0) * (1.0 + 2.0**-20)
        if self._plain:
            return c
        return (abs(float(self.e)) * c + 16.0) * (1.0 + 2.0**-20)

    # -- intervals ------------------------------------------------------
    def _base_interval(self, lo, hi):
        """t_i = s + x . x_i over the box: linear in x, so exact per coordinate."""
        p1 = lo[:, None, :] * self.Xs[None]
        p2 = hi[:, None, :] * self.Xs[None]
        return np.minimum(p1, p2).sum(-1) + self.s2, np.maximum(p1, p2).sum(-1) + self.s2

    def _power_interval(self, l, h):
        """Range of t^p for t in [l, h]: monotone for odd p; for even p the
        range of |t| (0 if the interval contains 0) raised to p."""
        if self.p % 2 == 1:
            return l**self.p, h**self.p
        amax = np.maximum(np.abs(l), np.abs(h))
        amin = np.where((l <= 0) & (h >= 0), 0.0, np.minimum(np.abs(l), np.abs(h)))
        return amin**self.p, amax**self.p

    def interval(self, lo, hi):
        return self._power_interval(*self._base_interval(lo, hi))

    def diag_interval(self, lo, hi):
        """k(x, x) = (s + ||x||^2)^p, increasing in ||x||^2 >= 0; ||x||^2 is
        separable, its range is the sum of the per-coordinate ranges of x_j^2.

        Outward rounded (review finding 3). t = s + sum_j sq_j has d + 1
        non-negative terms, each square rounded once: the computed sum errs
        by <= gamma_(d+1) t <= (d + 2) u t, plus d 2^-1074 for squares that
        underflow (added to the upper end; the lower end can only lose them,
        which is in the right direction). Then t^p: |p| (d + 2) u relative
        from t (first order; (1 + 2^-20) covers the second order for
        p (d + 2) u < 2^-20) and numpy's power within 8 ulps (16 u, the
        documented assumption, module doc; none for a plain ``DotProduct``):
        the same count as sklearn's own ``diag``, :meth:`diag_ulps` (one
        place for the constant). So dlo (1 - c u) and dhi (1 + c u) with c =
        ``diag_ulps(d)`` + 2 (the two scalings' own roundings) enclose the
        exact range.
        """
        d = lo.shape[-1]
        sq_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo * lo, hi * hi))
        sq_hi = np.maximum(lo * lo, hi * hi)
        p = self.p
        c = self.diag_ulps(d) + 2.0
        with np.errstate(over="ignore"):
            dlo = (self.s2 + sq_lo.sum(-1)) ** p * (1.0 - c * _U)
            dhi = (self.s2 + sq_hi.sum(-1) + d * 2.0**-1074) ** p * (1.0 + c * _U)
        return np.maximum(dlo, 0.0), dhi

    def rounding(self, lo, hi):
        """sklearn computes t~ = fl(inner(x, x_i) + s): the inner product errs
        by at most gamma_d |x| . |x_i| (d products summed in any order, BLAS
        included, fused multiply-adds too) and the addition by u |fl(inner) +
        s|, so |t~ - t| <= e_i := (d + 1)(1 + 2^-30) u (amax . |x_i| + s) +
        d 2^-1074 (gamma_d (1 + u) + u (1 + gamma_d) <= (d + 1)(1 + 2 d u) u;
        d u <= 2^-31 for d <= 2^22; the last term covers products that
        underflow). Then t~^p: by the mean value theorem
        |t~^p - t^p| <= p max(|t|, |t~|)^(p-1) |t~ - t| <= p (m_i + e_i)^(p-1) e_i,
        m_i = max |t| over the box. The relative rounding of the power is in
        :meth:`mean_rtol` and :meth:`value_ulps`: fl(t~^p) = t~^p (1 + pi),
        |pi t~^p| <= pi (|t|^p + this bound), the second part covered by
        ``WIDEN`` (pi <= 16 u), plus ``SUBNORMAL`` for an underflowing power."""
        return self._rounding_from(lo, hi, None if self.p == 1 else self._base_interval(lo, hi))

    def _rounding_from(self, lo, hi, base_interval):
        amax = np.maximum(np.abs(lo), np.abs(hi))
        d = self.Xs.shape[1]
        e = (d + 1) * (1.0 + 2.0**-30) * _U * (amax @ self.absXs.T + self.s2) + d * 2.0**-1074
        if d > 2**22:
            e = (d + 2) * 2 * _U * (amax @ self.absXs.T + self.s2) + d * 2.0**-1074
        if self.p == 1:
            return e
        l, h = base_interval
        m = np.maximum(np.abs(l), np.abs(h)) * (1.0 + 1e-12) + e
        with np.errstate(over="ignore", invalid="ignore"):
            return self.p * m ** (self.p - 1) * e * WIDEN + SUBNORMAL

    def rounding_parts(self, lo, hi):
        """:meth:`rounding` and :meth:`interval` (through
        :func:`~skgprobust.kernels._base.widen_enclosure`, A = max |t|^p) from
        one evaluation of the base's range."""
        bi = self._base_interval(lo, hi)
        with np.errstate(over="ignore"):
            enc = widen_enclosure(*self._power_interval(*bi))
        return (self._rounding_from(lo, hi, bi),) + enc

    def value_ulps(self, d):
        """pi / u: 0 for a plain ``DotProduct`` and for ``DotProduct ** 1``
        (no power; numpy's ``a ** 1`` is a copy), 1 for p = 2 (``square``,
        correctly rounded), 16 for p >= 3 (numpy's power within 8 ulps, the
        platform assumption), times (1 + 2^-20); relative to A = |t|^p <=
        sqrt(k(x, x) k(x_i, x_i)) (Cauchy-Schwarz, s >= 0). Everything else
        (the inner product, its underflow, and its effect through the power)
        is in :meth:`rounding`."""
        pi = 0.0 if self.p == 1 else (1.0 if self.p == 2 else 16.0)
        return pi * (1.0 + 2.0**-20)

    def mean_rtol(self, n_support, n_features):
        """``(N + 12 + pi) u``, pi = 1 for p <= 2 and 16 for p >= 3 (the
        relative rounding of sklearn's power), when N + p (d + 2) <= 2^20;
        otherwise the default ``margin_rtol(N, d)``. Proof in the module
        docstring ("Rounding"): our own evaluation error is subtracted from
        the relaxation and Taylor model themselves, so this constant covers
        only sklearn's sum, scaling and power, and affine_lower's last steps."""
        if n_support + self.p * (n_features + 2) > 2**20:
            return margin_rtol(n_support, n_features)
        pi = 1.0 if self.p <= 2 else 16.0
        return (n_support + 12.0 + pi) * _U

    # -- the polynomial model -------------------------------------------
    def _mag(self, w, amax):
        """sum_i |w_i| (s + amax . |x_i|)^p (B,): bounds |w_i k(x, x_i)| summed."""
        return (np.abs(w) * (amax @ self.absXs.T + self.s2) ** self.p).sum(-1)

    def _model(self, lo, hi, w):
        """V, G, M, rem (see the module docstring), mag and split scores,
        from the per-term expansion (any per-box weights); ``rem`` includes
        our own evaluation error (module docstring, "Rounding", (F))."""
        p = self.p
        B, d = lo.shape
        N = self.Xs.shape[0]
        c = 0.5 * (lo + hi)
        h = 0.5 * (hi - lo)
        amax = np.maximum(np.abs(lo), np.abs(hi))
        a = c @ self.Xs.T + self.s2  # (B, N)
        V = (w * a**p).sum(-1)
        G = p * ((w * a ** (p - 1)) @ self.Xs)
        if p >= 2:
            wa = w * a ** (p - 2)  # (B, N)
            M = (p * (p - 1)) * np.matmul(self.Xs.T[None, :, :] * wa[:, None, :], self.Xs)
        else:
            M = np.zeros((B, d, d))
        r = h @ self.absXs.T  # (B, N): bound of |u . x_i| over the box
        if p >= 3:
            aa = np.abs(a)
            # sum_{k>=3} C(p, k) |a|^(p-k) r^k, every term >= 0 (no cancellation)
            tail = np.zeros_like(a)
            for k in range(3, p + 1):
                tail += self._binom[k] * aa ** (p - k) * r**k
            wt = np.abs(w) * tail
            rem = -wt.sum(-1)
            # Each coordinate's share of r_i: h_j |x_ij| / r_i.
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(r > 0, wt / np.where(r > 0, r, 1.0), 0.0)
            score_rem = h * (share @ self.absXs)
        else:
            rem = np.zeros(B)
            score_rem = np.zeros((B, d))
        mag = self._mag(w, amax)
        rem = rem - 2.0 * (N + 3 * d + p * (d + 19) + 40) * _U * mag
        # Looseness of the separable bound of 1/2 u^T M u: the off-diagonal
        # couplings |M_jl| h_j h_l, plus the remainder's share.
        absM = np.abs(M)
        off = np.matmul(absM, h[:, :, None])[:, :, 0] - np.diagonal(absM, axis1=1, axis2=2) * h
        score = h * off + score_rem
        return V, G, M, rem, mag, score

    def _exact_for(self, w):
        """The :class:`_ExactPolynomial` of one weight vector (cached), or None."""
        key = w.tobytes()
        ex = self._cache.get(key)
        if ex is None:
            ex = _ExactPolynomial(self, w)
            if len(self._cache) >= self.CACHE_SIZE:
                try:  # threads may share the adapter: dropping any entry is fine
                    self._cache.pop(next(iter(self._cache)), None)
                except (RuntimeError, StopIteration):
                    pass
            self._cache[key] = ex
        return ex if ex.ok else None

    def _model_exact(self, lo, hi, beta, w):
        """V, G, M, rem, mag, score from exact monomial coefficients beta
        (module docstring, "Exact coefficients")."""
        p = self.p
        B, d = lo.shape
        n = len(self._alphas)
        c = 0.5 * (lo + hi)
        h = 0.5 * (hi - lo)
        amax = np.maximum(np.abs(lo), np.abs(hi))
        absb = np.abs(beta)
        if p <= 2:
            # F(x) = beta_0 + b . x + x^T Q x, Q_jj = beta_(2 e_j), Q_jl =
            # beta_(e_j + e_l) / 2 (exact halving): V, G and M directly.
            b = beta[self._i1]
            if p == 2:
                Q = beta[self._i2] * (0.5 + 0.5 * np.eye(d))
                Qc = c @ Q
                V = beta[0] + c @ b + np.einsum("bj,bj->b", c, Qc)
                G = b[None, :] + 2.0 * Qc
                M = np.broadcast_to(2.0 * Q, (B, d, d)).copy()
            else:
                V = beta[0] + c @ b
                G = np.broadcast_to(b, (B, d)).copy()
                M = np.zeros((B, d, d))
            rem = np.zeros(B)
            score_rem = np.zeros((B, d))
        else:
            cp = _powers(c, p)  # (B, d, p + 1)
            # T[b, alpha, g] = binom(alpha, g) c^(alpha - g); gamma = T^T beta.
            T = np.broadcast_to(self._shift_binom, (B, n, n)).copy()
            for j in range(d):
                T *= cp[:, j, :][:, self._shift_exp[:, :, j]]
            gam = np.einsum("bag,a->bg", T, beta)
            V = gam[:, 0]
            G = gam[:, self._i1]
            M = gam[:, self._i2.ravel()].reshape(B, d, d)
            M = M + M * np.eye(d)[None]  # d^2/du_j^2 u_j^2 = 2
            hb = _monomials(_powers(h, p), self._alphas)  # (B, n): h^g
            hi_terms = np.abs(gam[:, self._high]) * hb[:, self._high]
            rem = -hi_terms.sum(-1)
            degs = self._deg[self._high].astype(np.float64)
            score_rem = hi_terms @ (self._alphas[self._high] / degs[:, None])
        mag_poly = _monomials(_powers(amax, p), self._alphas) @ absb
        own = 2.0 * (n + d * p + 7 * d + 3 * p + 64) * _U * mag_poly + n * 2.0**-1070
        rem = rem - own
        mag = self._mag(w, amax)
        absM = np.abs(M)
        off = np.matmul(absM, h[:, :, None])[:, :, 0] - np.diagonal(absM, axis1=1, axis2=2) * h
        score = h * off + score_rem
        return V, G, M, rem, mag, score

    #: most distinct weight vectors per call handled by the exact path
    MAX_GROUPS = 4

    def _polynomial(self, lo, hi, w):
        """The exact-coefficient model when the boxes' weights are a few
        distinct finite vectors (mean objectives: w, or w and -w stacked), with
        finite coefficients; otherwise the per-term model. Both are valid
        lower models; the choice does not affect soundness."""
        groups = self._weight_groups(w)
        if groups is None:
            return self._model(lo, hi, w)
        out = None
        for w0, rows in groups:
            ex = self._exact_for(w0)
            if ex is None:
                return self._model(lo, hi, w)
            part = self._model_exact(lo[rows], hi[rows], ex.beta, w[rows])
            if out is None:
                out = [np.empty((len(lo),) + a.shape[1:]) for a in part]
            for o, a in zip(out, part):
                o[rows] = a
        return tuple(out)

    def _weight_groups(self, w):
        """[(w0, rows)] partitioning the rows of w (B, N) into at most
        MAX_GROUPS identical finite vectors, or None."""
        if not self._exact or not len(w) or w.shape[-1] != len(self.Xs):
            return None
        left = np.ones(len(w), dtype=bool)
        groups = []
        while left.any():
            if len(groups) == self.MAX_GROUPS:
                return None
            w0 = np.ascontiguousarray(w[np.argmax(left)], dtype=np.float64)
            if not np.all(np.isfinite(w0)):
                return None
            rows = left & np.all(w == w0, axis=-1)
            groups.append((w0, rows))
            left &= ~rows
        return groups

    def taylor(self, lo, hi, w):
        V, G, M, rem, mag, _ = self._polynomial(lo, hi, w)
        B, d = lo.shape
        return TaylorModel(V, G, np.zeros((B, d)), M, rem, mag)

    def relax(self, lo, hi, w):
        return self.linearise(lo, hi, w)[0]

    def linearise(self, lo, hi, w):
        """The Taylor model, and a separable relaxation from it: the quadratic
        part bounded by the better (per box) of the eigenvalue and
        Gershgorin bounds of :func:`_separable_quadratic`; both are valid
        lower bounds on the box, so either choice is. The interval bound
        ``ilb`` is lowered by its own evaluation error (module docstring)."""
        V, G, M, rem, mag, score = self._polynomial(lo, hi, w)
        B, d = lo.shape
        N = self.Xs.shape[0]
        h = 0.5 * (hi - lo)
        klo, khi = self.interval(lo, hi)
        ilb = interval_lower(w, klo, khi) - 2.0 * (N + self.p * (d + 2) + 24) * _U * mag
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(M).all(axis=(1, 2))
            if self.p == 1:  # M = 0 exactly: linear, no quadratic part to bound
                alpha = np.zeros((B, d))
            else:
                Mf = np.where(finite[:, None, None], M, 0.0)
                coef_eig, coef_ger = _separable_quadratic(Mf, h)
                q1 = _separable_min(coef_eig, G, h)
                q2 = _separable_min(coef_ger, G, h)
                alpha = np.where((q2 > q1)[:, None], coef_ger, coef_eig)
        const = V + rem
        bad = ~(finite & np.isfinite(const) & np.isfinite(G).all(-1))
        # A box whose model overflowed keeps only the interval bound.
        const = np.where(bad, -np.inf, const)
        alpha = np.where(bad[:, None], 0.0, alpha)
        beta = np.where(bad[:, None], 0.0, G)
        rel = Relaxation(const, alpha, beta, ilb, mag, score)
        tm = TaylorModel(V, G, np.zeros((B, d)), M, rem, mag)
        return rel, tm


# ---------------------------------------------------------------------------
# Exact polynomial form of the cross-covariance (used by the variance bound)
# ---------------------------------------------------------------------------


def _multi_indices(d, P):
    """All exponent tuples alpha in N^d with |alpha| <= P, by degree, (n, d);
    within a degree in decreasing lexicographic order."""
    eye = np.eye(d, dtype=np.int64)
    level = np.zeros((1, d), dtype=np.int64)
    out = [level]
    for _ in range(P):
        grown = (level[:, None, :] + eye[None]).reshape(-1, d)
        level = np.array(sorted(set(map(tuple, grown.tolist())), reverse=True), dtype=np.int64).reshape(-1, d)
        out.append(level)
    return np.concatenate(out).reshape(-1, d)


def _index_of(rows, table):
    """Positions in ``table`` (m, d) of each row of ``rows`` (k, d), all of
    which occur in table (rows of integers)."""
    lookup = dict(zip(map(tuple, table.tolist()), range(len(table))))
    return np.fromiter((lookup[t] for t in map(tuple, rows.tolist())), dtype=np.int64, count=len(rows))


class PolynomialCovariance:
    """A fitted kernel whose cross-covariance is a polynomial kernel,

        k_c(x, y) = const + sum_t a_t (s_t + x . y)^(p_t)   (a_t, s_t, const >= 0,
                                                             p_t positive integers)

    plus WhiteKernel summands (noise on the diagonal only: ``white``). By the
    binomial and multinomial theorems, exactly,

        k_c(x, y) = sum_alpha c_alpha x^alpha y^alpha,
        c_alpha = [alpha = 0] const + sum_{t: |alpha| <= p_t} a_t C(p_t, |alpha|)
                  s_t^(p_t - |alpha|) |alpha|! / prod_j alpha_j!  (>= 0),

    over the n = C(d + P, P) monomials of degree <= P = max p_t. So
    ``k(x, Xs) = F phi(x)``, F[i, alpha] = c_alpha x_i^alpha, and
    ``k_c(x, x) = phi(x)^T diag(c) phi(x)``: the latent variance
    ``white + phi^T (diag(c) - F^T S F) phi`` is an exact polynomial of degree
    2P in x (see :meth:`skgprobust._bounds._variance.LatentVariance._poly_bounds`).
    ``DotProduct`` alone is p = 1; constants scale (``ConstantKernel * k``) or
    add.
    """

    #: largest number of monomials for which the exact form is used
    MAX_MONO = 100
    #: largest number of monomials of degree <= 2P (the variance's coefficients)
    MAX_MONO2 = 2000

    def __init__(self, terms, const, white, d):
        self.terms = terms  # [(a, s, p)]
        self.const = float(const)
        self.white = float(white)
        self.d = d
        self.P = max(p for _, _, p in terms)
        self.alphas = _multi_indices(d, self.P)  # (n, d)
        deg = self.alphas.sum(-1)
        multinom = np.array(
            [factorial(int(k)) / np.prod([factorial(int(e)) for e in a]) for a, k in zip(self.alphas, deg)]
        )
        c = np.zeros(len(self.alphas))
        c[deg == 0] += self.const
        for a, s, p in terms:
            m = deg <= p
            binom = np.array([comb(p, int(k), exact=True) for k in deg[m]], dtype=np.float64)
            c[m] += a * binom * s ** (p - deg[m]) * multinom[m]
        self.coef = c
        # Pairs (beta, beta') -> index of beta + beta' among the monomials of degree <= 2P.
        self.alphas2 = _multi_indices(d, 2 * self.P)
        n = len(self.alphas)
        sums = (self.alphas[:, None, :] + self.alphas[None, :, :]).reshape(-1, d)
        self.pair_index = _index_of(sums, self.alphas2)
        # Shift matrix T(c)[alpha, beta] = prod_j C(alpha_j, beta_j) c_j^(alpha_j - beta_j) (beta <= alpha).
        diff = self.alphas[:, None, :] - self.alphas[None, :, :]  # (n, n, d)
        self.shift_mask = np.all(diff >= 0, axis=-1)
        self.shift_exp = np.where(self.shift_mask[:, :, None], diff, 0)
        pas = _pascal(self.P)  # exact small integers; products of them too (< 2^53)
        binom = np.prod(pas[self.alphas[:, None, :], self.alphas[None, :, :]], axis=-1)
        self.shift_binom = np.where(self.shift_mask, binom, 0.0)

    @property
    def n_mono(self):
        return len(self.alphas)

    @classmethod
    def parse(cls, kernel, d):
        """A :class:`PolynomialCovariance` of the kernel, or None when it is not
        of that form or has too many monomials."""
        from sklearn.gaussian_process import kernels as K

        terms, acc = [], {"const": 0.0, "white": 0.0}

        def nonneg(c):
            return np.isfinite(c) and c >= 0

        def walk(k, amp):
            t = type(k)
            if t is K.Sum:
                return walk(k.k1, amp) and walk(k.k2, amp)
            if t is K.Product:
                for a, b in ((k.k1, k.k2), (k.k2, k.k1)):
                    if type(a) is K.ConstantKernel:
                        c = float(a.constant_value)
                        return nonneg(c) and walk(b, amp * c)
                return False
            if t is K.ConstantKernel:
                c = float(k.constant_value)
                acc["const"] += amp * c
                return nonneg(c)
            if t is K.WhiteKernel:
                c = float(k.noise_level)
                acc["white"] += amp * c
                return nonneg(c)
            if t is K.DotProduct:
                s = float(k.sigma_0) ** 2
                if amp > 0:
                    terms.append((float(amp), s, 1))
                return bool(np.isfinite(s))
            if is_dot_product_power(k):
                s = float(k.kernel.sigma_0) ** 2
                if amp > 0:
                    terms.append((float(amp), s, int(float(k.exponent))))
                return bool(np.isfinite(s))
            return False

        if not walk(kernel, 1.0) or not terms:
            return None
        if not (np.isfinite(acc["const"]) and np.isfinite(acc["white"])):
            return None
        P = max(p for _, _, p in terms)
        if comb(d + P, P, exact=True) > cls.MAX_MONO or comb(d + 2 * P, 2 * P, exact=True) > cls.MAX_MONO2:
            return None
        return cls(terms, acc["const"], acc["white"], d)

    def features(self, X):
        """phi(X): (m, n) monomials x^alpha (floating point)."""
        X = np.asarray(X, dtype=np.float64)
        return np.prod(X[:, None, :] ** self.alphas[None, :, :], axis=-1)

    def design(self, Xs):
        """F (N, n): F[i, alpha] = c_alpha x_i^alpha, so k_c(x, Xs) = F phi(x)."""
        return self.features(Xs) * self.coef[None, :]

    def shift(self, c):
        """T(c) (B, n, n) with phi(c + u) = T(c) psi(u), psi(u) = u^beta."""
        c = np.asarray(c, dtype=np.float64)
        out = np.broadcast_to(self.shift_binom, (len(c),) + self.shift_binom.shape).copy()
        for j in range(self.d):
            powers = c[:, j, None] ** np.arange(self.P + 1)[None, :]  # (B, P + 1)
            out *= powers[:, self.shift_exp[:, :, j]]
        return out
