"""Floating-point constants shared by every bound (the lowest layer)."""

__all__ = ["UNIT_ROUNDOFF", "extended_unit_roundoff", "gram_minus_extended", "margin_rtol",
           "nonneg_norm2_upper", "psd_lower_certificate", "sym_lambda_max_upper", "tril_inv_norm2_upper"]

import numpy as np

#: Unit roundoff of float64.
UNIT_ROUNDOFF = 2.0**-53


def margin_rtol(n_support, n_features):
    """Relative floating-point margin subtracted from every lower bound.

    ``(8 (N + d) + 256) * 2**-53``: a sum of N float64 terms errs by at most
    (N - 1) u sum|terms| (u = 2**-53, any summation order, BLAS included);
    each term carries a few ulps from exp and d products; sklearn's own
    predict has an error of the same kind, hence the factor 8 (2x headroom)
    and the constant. For N = 1000, d = 11 the margin is 9.3e-13 relative.

    Parameters
    ----------
    n_support : int
        Number of summed terms N (training or inducing points).
    n_features : int
        Number of features d.

    Returns
    -------
    rtol : float
        The relative margin.
    """
    return (8.0 * (n_support + n_features) + 256.0) * UNIT_ROUNDOFF


def nonneg_norm2_upper(M, iters=20):
    """Rigorous upper bound of the spectral norm of a non-negative matrix M.

    ``||M||_2^2`` is the Perron root of the symmetric non-negative matrix
    ``G = M^T M``, and for any vector x > 0 the Collatz-Wielandt bound
    ``rho(G) <= max_i (G x)_i / x_i`` holds; x comes from a few power
    iterations started at the all-ones vector. ``G x`` is computed as
    ``M^T (M x)`` in float64 with non-negative terms only, so each entry errs
    by at most ``(2 n + 2) u`` relative; the bound is raised by
    ``(4 n + 8) u`` to cover it. The Frobenius norm (also an upper bound) is
    taken when smaller or when an iterate has a zero entry.
    """
    M = np.abs(np.asarray(M, dtype=np.float64))
    if M.size == 0:
        return 0.0
    n = max(M.shape)
    top = float(M.max())
    if not np.isfinite(top):
        return np.inf
    if top == 0.0:
        return 0.0
    # Scale by a power of two so the largest entry is in [1/2, 1): products
    # and sums then neither underflow nor overflow. Scaling is exact except
    # for entries that become subnormal (each then moves by at most 2**-1075,
    # a matrix of spectral norm <= n 2**-1075, added back below).
    e = int(np.frexp(top)[1])
    M = np.ldexp(M, -e)
    lost = n * 2.0**-1074
    return float(np.ldexp(_scaled_norm2_upper(M, n, iters) + lost, e))


def _scaled_norm2_upper(M, n, iters):
    """:func:`nonneg_norm2_upper` of a matrix whose largest entry is in [1/2, 1)."""
    # A sum of M.size non-negative terms errs by <= gamma_(size) relative in
    # any order (numpy's pairwise sum is far better; not relied on).
    fro = float(np.sqrt(np.sum(M * M))) * (1.0 + (M.size + 4) * UNIT_ROUNDOFF)
    x = np.ones(M.shape[1])
    best = np.inf
    for _ in range(iters):
        y = M.T @ (M @ x)
        if not np.all(x > 0) or not np.all(np.isfinite(y)):
            break
        best = min(best, float(np.max(y / x)))
        s = np.max(y)
        if s <= 0:
            break
        # Any x > 0 gives a valid bound; keeping x >= 2**-500 bounds the
        # effect of subnormal products (each errs by <= 2**-1075 absolute,
        # at most n^2 of them per entry of y) on y_i / x_i by n^2 2**-574.
        x = np.maximum(y / s, 2.0**-500)
    best = best + n * n * 2.0**-560
    ub = np.sqrt(best * (1.0 + (4 * n + 8) * UNIT_ROUNDOFF)) * (1.0 + 4 * UNIT_ROUNDOFF)
    return float(min(ub, fro)) if np.isfinite(ub) else fro


def psd_lower_certificate(H, c):
    """Rigorous lower bound of ``lambda_min(H)`` for a symmetric float matrix H
    (its lower triangle is read), or ``-inf`` when the certificate fails.

    Rounding model: IEEE double, u = 2**-53, gamma_n = n u / (1 - n u);
    LAPACK's Cholesky (``dpotrf``, blocked or not, any thread count, FMA or
    not) is assumed to satisfy Higham's componentwise backward error bound
    (Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm 10.3; the
    blocked form with conventional level-3 BLAS obeys it with gamma_(c n),
    Sec. 10.1 / 13.3): if it runs to completion on M it returns R with
    ``R R^T = M + E3``, ``|E3| <= gamma_(n+1) |R| |R^T|``. gamma_(n+1) is
    replaced by ``margin_rtol(n + 1, 0) = (8 (n + 1) + 256) u`` (8x headroom
    on the constant).

    Proof. M = fl(H - c I) changes only the diagonal, each entry by at most
    u |M_ii| (1 + 2u): ``M = H - c I + E2``, ``||E2||_2 <= u max|M_ii| (1 + 2u)``.
    If the Cholesky of M succeeds, ``H = R R^T - E3 - E2 + c I >= (c -
    ||E2|| - ||E3||) I`` (R R^T is PSD), with ``||E3||_2 <= || |E3| ||_2 <=
    gamma || |R| ||_2^2`` and || |R| ||_2 bounded by
    :func:`nonneg_norm2_upper` (rigorous). Underflow (not in Higham's model):
    each of the n^2 entries of R R^T loses at most n 2**-1074 to subnormal
    products, ``n^2 2**-1074`` in 2-norm, added. The final subtraction is
    rounded down by a relative 1e-12 (>> its own rounding).
    """
    H = np.asarray(H, dtype=np.float64)
    n = H.shape[0]
    c = float(c)
    if n == 0:
        return np.inf
    if not (np.isfinite(c) and np.all(np.isfinite(np.diag(H)))):
        return -np.inf
    M = np.tril(H)
    with np.errstate(over="ignore", invalid="ignore"):
        M[np.diag_indices(n)] = np.diag(H) - c
    if not np.all(np.isfinite(np.diag(M))):
        return -np.inf
    try:
        R = np.linalg.cholesky(M + np.tril(M, -1).T)
    except np.linalg.LinAlgError:
        return -np.inf
    if not np.all(np.isfinite(R)):
        return -np.inf
    e2 = UNIT_ROUNDOFF * float(np.max(np.abs(np.diag(M)))) * (1.0 + 2.0 * UNIT_ROUNDOFF)
    nR = np.float64(nonneg_norm2_upper(R))  # numpy float: overflow gives inf, not OverflowError
    with np.errstate(over="ignore", invalid="ignore"):
        e3 = margin_rtol(n + 1, 0) * nR * nR
    if not np.isfinite(e3):
        return -np.inf
    err = (e2 + e3 + n * n * 2.0**-1074) * (1.0 + 1e-12)
    lb = c - err
    return lb - 1e-12 * abs(lb)


def tril_inv_norm2_upper(L, estimate, X=None, G=None, rho=None, lam_G=None, nLabs=None):
    """Rigorous upper bound of ``||L^-1||_2`` for a lower-triangular float L.

    Two proven routes; route 2 is tried first when its inputs are given
    (tighter at high signal-to-noise: route 1 loses gam ||L||^2 against a
    lambda_min that can be of that size), route 1 when route 2 does not
    apply; ``inf`` when neither does. ``estimate`` is any guess of ||L^-1||_2 (e.g. a few
    power iterations; it only picks the shifts tried, soundness does not
    depend on it).

    1. *Smallest eigenvalue of L L^T.* ``H = fl(L L^T)`` errs from the exact
       product by ``|E1| <= gamma_N |L| |L^T|`` (N-term dot products, any
       summation order, BLAS included: Higham Sec. 3.1), so
       ``lambda_min(L L^T) >= lambda_min(H) - gam || |L| ||_2^2``
       (gam = ``margin_rtol(N, 0)`` >= 8 gamma_N), and ``lambda_min(H)`` is
       bounded below by :func:`psd_lower_certificate` at shifts
       ``c = f / estimate^2``, f = 0.999, 0.99, 0.9, 0.5, 0.1, 0.01, until one
       succeeds. Then ``||L^-1||_2 = lambda_min(L L^T)^-1/2``.
    2. *Residual of a computed inverse* (when ``X`` = fl(solve(L, I)) and
       ``G = fl(X^T X)`` are given). ``L^-1 = X (L X)^-1`` and
       ``||(L X)^-1|| <= 1 / (1 - rho)`` for ``rho >= ||I - L X||_2`` < 1;
       rho = (||fl(L X - I)||_F + (N + 4) u || |L| |X| ||_F) (1 + (N^2 + 4) u)
       (the residual's own rounding: gamma_N of the products plus the
       subtraction of I, and the Frobenius norms' N^2-term sums; ``rho`` may be passed in by a caller that computed
       that bound already). ``||X||_2^2 = lambda_max(X^T X) <= lambda_max(G) +
       gam || |X| ||_2^2``, and ``lambda_max(G) = -lambda_min(-G)`` is
       bounded by :func:`sym_lambda_max_upper` (or passed in as ``lam_G``
       by a caller that certified it already).

    ``nLabs``, if given, is a proven upper bound of ``|| |L| ||_2`` that the
    caller computed already (:func:`nonneg_norm2_upper`); route 1 computes it
    otherwise (route 2 does not use it).

    Every float result is rounded up by a relative 1e-12 (>> its own few
    roundings). Squares are taken in numpy floats: a norm above ~1.3e154
    gives ``inf`` (never an OverflowError), and a non-finite intermediate
    ends the route with ``inf`` (no bound), never a finite wrong one.
    """
    L = np.asarray(L, dtype=np.float64)
    N = L.shape[0]
    if N == 0:
        return 0.0
    if not np.all(np.isfinite(L)):
        return np.inf
    gam = margin_rtol(N, 0)
    # numpy floats throughout: a norm above ~1.3e154 squares to inf (a valid,
    # useless bound) instead of raising OverflowError as Python floats do.
    best = np.inf
    est = float(estimate) if np.isfinite(estimate) and estimate > 0 else np.inf
    # Route 2.
    if X is not None and G is not None:
        X = np.asarray(X, dtype=np.float64)
        if rho is None:
            res = L @ X
            res[np.diag_indices(N)] -= 1.0
            rho = float(np.linalg.norm(res)) + (N + 4) * UNIT_ROUNDOFF * float(np.linalg.norm(np.abs(L) @ np.abs(X)))
            rho *= 1.0 + (N * N + 4) * UNIT_ROUNDOFF  # the Frobenius norms' own sums (N^2 terms)
        rho = float(rho) * (1.0 + 1e-12)
        if rho < 1.0:
            lmG = sym_lambda_max_upper(G, est * est if np.isfinite(est) else 0.0) if lam_G is None else float(lam_G)
            if np.isfinite(lmG):
                nXa = np.float64(nonneg_norm2_upper(X))
                with np.errstate(over="ignore", invalid="ignore"):
                    nX2 = (np.float64(lmG) + gam * nXa * nXa) * (1.0 + 1e-12)
                    ub = float(np.sqrt(nX2) / (1.0 - rho)) * (1.0 + 1e-12)
                if np.isfinite(ub):
                    best = min(best, ub)
    # Route 1 (when route 2 was not available or failed).
    if np.isfinite(best):
        return best
    nLabs = np.float64(nonneg_norm2_upper(L) if nLabs is None else nLabs)
    with np.errstate(over="ignore", invalid="ignore"):
        H = L @ L.T
        e1 = gam * nLabs * nLabs
        est2 = np.float64(est) * np.float64(est)
    if not (np.isfinite(e1) and np.all(np.isfinite(H))):
        return np.inf
    guesses = [f / est2 for f in (0.999, 0.99, 0.9, 0.5, 0.1, 0.01)] if np.isfinite(est2) and est2 > 0 else []
    for c in guesses:
        if c <= e1:
            break
        lb = psd_lower_certificate(H, c)
        if lb > -np.inf:
            lam = lb - e1 * (1.0 + 1e-12)
            if lam > 0:
                with np.errstate(over="ignore", divide="ignore"):
                    best = min(best, float(1.0 / np.sqrt(np.float64(lam))) * (1.0 + 1e-12))
            break
    return best


def sym_lambda_max_upper(G, guess):
    """Rigorous upper bound of ``lambda_max(G)`` for a symmetric float matrix
    G (lower triangle read), or ``inf``.

    ``lambda_max(G) = -lambda_min(-G) <= -psd_lower_certificate(-G, -mu)``
    (:func:`psd_lower_certificate`: a Cholesky of fl(mu I - G)), tried at
    ``mu = f * mu0`` for f = 1 + 1e-6, 1 + 1e-4, 1.001, 1.01, 1.1, 1.5, 10 until one
    succeeds; mu0 = max(guess, largest column 2-norm of G) (guess, e.g. an
    eigenvalue from ``eigh``, only picks the shifts).
    """
    G = np.asarray(G, dtype=np.float64)
    if G.size == 0:
        return 0.0
    if not np.all(np.isfinite(G)):
        return np.inf
    col = float(np.sqrt(np.max(np.sum(G * G, axis=0))))
    mu0 = max(float(guess) if np.isfinite(guess) else 0.0, col, 2.0**-1000)
    for f in (1.0 + 1e-6, 1.0 + 1e-4, 1.001, 1.01, 1.1, 1.5, 10.0):
        lb = psd_lower_certificate(-G, -f * mu0)
        if lb > -np.inf:
            return float(-lb)
    return np.inf



def extended_unit_roundoff():
    """Unit roundoff of the platform's ``np.longdouble`` when it is the x87
    80-bit extended format (64-bit significand: u = 2**-64) *and* its
    arithmetic, through ``matmul``, really rounds to that significand (it
    does not where the FPU's precision control is set to double, e.g. some
    Windows runtimes); else None. Checked once: (1 + 2**-31)^2 = 1 + 2**-30 +
    2**-62 must come out of a 1 x 1 matmul exactly, and 1 + 2**-62 out of a
    two-term matmul sum (both are rounded away in double precision). Other
    long double formats (IEEE quad in software, or double) give None: quad
    would be sound but is ~50x slower, double gains nothing. Checked on
    every call (microseconds), not cached: code loaded later could change
    the x87 precision control (session 19 referee: with it set to 53 bits
    after a cached check, ||Delta|| came out 8x above the charged bound)."""
    if np.finfo(np.longdouble).nmant != 63:
        return None
    try:
        one, t31, t62 = np.longdouble(1), np.longdouble(2.0) ** -31, np.longdouble(2.0) ** -62
        a = np.array([[one + t31]], dtype=np.longdouble)
        sq = (a @ a)[0, 0]
        b = np.array([[one, one]], dtype=np.longdouble) @ np.array([[one], [t62]], dtype=np.longdouble)
        ok = bool(sq - (one + 2 * t31) == t62 and b[0, 0] - one == t62)
    except (TypeError, ValueError, AttributeError):  # pragma: no cover - exotic platforms
        ok = False
    return 2.0**-64 if ok else None


def gram_minus_extended(L, K, block=128):
    """``H = fl64(fl_x(L L^T) - K)`` on and below the diagonal (mirrored
    above), the product and the subtraction in x87 extended precision, or
    None where :func:`extended_unit_roundoff` is None.

    L is lower triangular (N, N), K symmetric float64 (its lower triangle is
    read). Error (for a caller's bound): entry (i, j), i >= j, of fl_x(L
    L^T) is a sum of at most N products L_ik L_jk (k <= j; the terms beyond
    are exact zeros), so |fl_x(L L^T) - L L^T| <= gamma_N(u_x) |L| |L^T|
    in any order of summation (Higham Thm 3.5 / the matmul model); the
    subtraction adds u_x and the rounding to float64 u relative to the
    entry: |H - (fl_x(L L^T) - K)| <= (u + u_x + u u_x) |fl_x(L L^T) - K|
    <= (u + 2 u_x) (1 + 2 u) |H| entrywise, plus 2^-1075 where H is
    subnormal in float64 (the caller adds N 2^-1074 to the norm bound). Cost ~N^3 / 6 extended
    multiply-adds (~0.6 s at N = 1000 on one core here)."""
    if extended_unit_roundoff() is None:
        return None
    N = L.shape[0]
    Lx = np.asarray(L, dtype=np.longdouble)
    H = np.empty((N, N), dtype=np.float64)
    for j0 in range(0, N, block):
        j1 = min(j0 + block, N)
        # Rows i >= j0 against rows j0:j1 of L; columns k < j1 only (L_jk = 0 for k > j).
        P = Lx[j0:, :j1] @ Lx[j0:j1, :j1].T  # (N - j0, j1 - j0)
        H[j0:, j0:j1] = (P - np.asarray(K[j0:, j0:j1], dtype=np.longdouble)).astype(np.float64)
    il = np.tril_indices(N, -1)
    H[il[1], il[0]] = H[il]
    return H
