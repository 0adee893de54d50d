"""Floating-point constants shared by every bound (the lowest layer)."""

__all__ = ["UNIT_ROUNDOFF", "margin_rtol"]

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
