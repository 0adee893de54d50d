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
    n = max(M.shape) if M.size else 0
    fro = float(np.sqrt(np.sum(M * M))) * (1.0 + (n + 2) * UNIT_ROUNDOFF)
    if M.size == 0:
        return 0.0
    x = np.ones(M.shape[1])
    best = np.inf
    for _ in range(iters):
        y = M.T @ (M @ x)
        if not np.all(x > 0) or not np.all(np.isfinite(y)):
            break
        best = min(best, float(np.max(y / x)))
        s = np.max(y)
        if s <= 0:
            return 0.0
        x = y / s
    ub = np.sqrt(best * (1.0 + (4 * n + 8) * UNIT_ROUNDOFF)) * (1.0 + 4 * UNIT_ROUNDOFF)
    return float(min(ub, fro)) if np.isfinite(ub) else fro
