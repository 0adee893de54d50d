"""Floating-point constants shared by every bound (the lowest layer)."""

__all__ = ["UNIT_ROUNDOFF", "margin_rtol", "nonneg_norm2_upper"]

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
    fro = float(np.sqrt(np.sum(M * M))) * (1.0 + (n + 2) * UNIT_ROUNDOFF)
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
