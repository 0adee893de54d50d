"""Two-class probability bounds from latent mean and variance bounds
(paper Sec. 5.1, Props. 8 and 9).

Each link maps a Gaussian latent f ~ N(mu, v) to P(class 1) = E[g(f)] for an
increasing sigmoid-shaped g with g' even (g(x) - g(0) odd) and g'' <= 0 on
x > 0. For every such g:

* ``dp/dmu = E[g'(f)] >= 0``: p is increasing in mu;
* ``dp/dv = E[g''(f)] / 2``; g'' is odd and <= 0 on x > 0, and for mu >= 0
  the density of N(mu, v) at x exceeds that at -x for x > 0, so dp/dv <= 0
  when mu >= 0 and >= 0 when mu <= 0.

Hence over a rectangle [mu_lo, mu_hi] x [v_lo, v_hi] the minimum is at
(mu_lo, v_hi) if mu_lo >= 0 else (mu_lo, v_lo), and the maximum at
(mu_hi, v_lo) if mu_hi >= 0 else (mu_hi, v_hi) (Props. 8 and 9).

sklearn's ``predict_proba`` uses g(x) = sum_i c_i Phi(sqrt(2) lambda_i x), a
signed mixture of five probits (Williams and Barber), so that
p1(mu, v) = sum_i c_i Phi(sqrt(2) lambda_i mu / sqrt(1 + 2 lambda_i^2 v)).
Its shape conditions reduce to h(x) = sum_i c_i lambda_i^3 exp(-lambda_i^2 x^2)
>= 0 for x >= 0 (then g'' = -(2x / sqrt(pi)) h <= 0 on x > 0, and g' decreases
to 0, so g' >= 0). :func:`verify_five_erf_shape` proves it rigorously: a grid
check with a Lipschitz bound on [0, X] and a dominance argument beyond X.

Rounding: sklearn sums five terms of size up to |c_i| ~ 3.5e3, so its p1 errs
by about 1e-12; every bound here is widened by ``PROBA_MARGIN = 1e-10``.
"""

import math

import numpy as np
from scipy.special import ndtr

try:  # the exact constants sklearn uses
    from sklearn.gaussian_process._gpc import COEFS as _COEFS
    from sklearn.gaussian_process._gpc import LAMBDAS as _LAMBDAS

    FIVE_ERF_LAMBDAS = np.asarray(_LAMBDAS, dtype=np.float64).ravel()
    FIVE_ERF_COEFS = np.asarray(_COEFS, dtype=np.float64).ravel()
except ImportError:  # pragma: no cover
    FIVE_ERF_LAMBDAS = np.array([0.41, 0.4, 0.37, 0.44, 0.39])
    FIVE_ERF_COEFS = np.array([-1854.8214151, 3516.89893646, 221.29346712, 128.12323805, -2010.49422654])

PROBA_MARGIN = 1e-10

# sklearn's constants (1.0 - 1.9) and the bounds (G3, G4) that
# probit_mixture_sups proves for them, rounded up (checked in the tests).
_KNOWN_LAMBDAS = np.array([0.41, 0.4, 0.37, 0.44, 0.39])
_KNOWN_COEFS = np.array([-1854.8214151, 3516.89893646, 221.29346712, 128.12323805, -2010.49422654])
_KNOWN_SUPS = (0.1219853, 0.1279844)


class Link:
    """P(class 1) = E[g(f)], f ~ N(mu, v), for a sigmoid-shaped g (see module doc)."""

    margin = PROBA_MARGIN
    #: The model's own probability is finite wherever its computed latent
    #: variance is above this value and the kernel's k(x, x) below the
    #: ceiling (see the subclasses).
    finite_variance_floor = 0.0
    finite_variance_ceiling = np.inf
    #: True when every value :meth:`value` returns (NaN aside) lies in [0, 1]
    #: exactly, in floating point: then a one-vs-rest model's normalised
    #: probabilities do too (see ``ProbaObjective``), whatever the boxes.
    unit_interval = False

    def value(self, mu, v):
        """The probability p(mu, v) = E[g(f)], f ~ N(mu, v), element-wise.

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        p : ndarray
            The probabilities, as the model computes them.
        """
        raise NotImplementedError

    def grad(self, mu, v):
        """The partial derivatives of p, element-wise.

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        dp_dmu, dp_dv : ndarray
            dp/dmu and dp/dv at (mu, v).
        """
        raise NotImplementedError

    def range(self, mu_lo, mu_hi, v_lo, v_hi):
        """Certified (p_lo, p_hi) of p over the rectangles, element-wise.

        Parameters
        ----------
        mu_lo, mu_hi : array-like
            Mean ranges.
        v_lo, v_hi : array-like
            Variance ranges (negative ends are read as 0).

        Returns
        -------
        p_lo, p_hi : ndarray
            p_lo <= p(mu, v) <= p_hi on each rectangle, the link's rounding
            margin included.
        """
        v_lo = np.maximum(v_lo, 0.0)
        v_hi = np.maximum(v_hi, v_lo)
        p_lo = self.value(mu_lo, np.where(mu_lo >= 0, v_hi, v_lo)) - self.margin
        p_hi = self.value(mu_hi, np.where(mu_hi >= 0, v_lo, v_hi)) + self.margin
        return p_lo, p_hi

    #: Proven bounds (G3, G4) on sup |g'''(x)| and sup |g''''(x)| over all x,
    #: cached per class by :meth:`derivative_sups` (None: not computed).
    _derivative_sups = None

    def derivative_sups(self):
        """Proven bounds (G3, G4) of sup |g^(3)| and sup |g^(4)| over the line.

        Returns
        -------
        sups : tuple of float (G3, G4) or None
            None for a link without them (then :meth:`v_slope_lower` is 0:
            no coupling).
        """
        return None

    #: Absolute error bound of the derivatives :meth:`mu_derivatives` computes.
    MU_DERIVATIVE_ERROR = 1e-9

    def mu_derivatives(self, mu, v):
        """``(dp/dmu, d2p/dmu2, d3p/dmu3)`` at (mu, v), each within
        ``MU_DERIVATIVE_ERROR`` of the exact value, or None where the link
        has no closed form (then the quadratic relaxation of the one-vs-rest
        probability bounds is not used).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        derivatives : tuple of 3 ndarray or None
            The first three derivatives of p in mu.
        """
        return None

    def total_variation(self):
        """An upper bound of ``integral g'(x) dx = g(inf) - g(-inf)`` for a
        link whose g' >= 0 is proven, or None (then :meth:`v_slope_lower`
        uses the global sups of :meth:`derivative_sups` only).

        Returns
        -------
        total : float or None
            The bound.
        """
        return None

    def local_sups(self, v_lo):
        """Bounds of |E[g^(3)(f)]| and |E[g^(4)(f)]| for f ~ N(mu, v), any mu
        and every v >= v_lo, element-wise: the global (G3, G4) of
        :meth:`derivative_sups`, or where smaller the Gaussian-smoothing
        bounds ``M2 S / v_lo^(3/2)`` and ``M3 S / v_lo^2``.

        Proof. For f = mu + s Z (s = sqrt(v) > 0, Z ~ N(0, 1)) Gaussian
        integration by parts (Stein's identity, applied n times) gives
        E[h^(n)(mu + s Z)] = s^-n E[h(mu + s Z) He_n(Z)], He_2 = z^2 - 1,
        He_3 = z^3 - 3 z, for the smooth, bounded h = g' whose derivatives
        are bounded. With h = g' >= 0 (module doc) and n = 2, 3:
        |E[g^(3)(f)]| <= s^-2 integral g'(mu + s z) |He_2(z)| phi(z) dz <=
        s^-2 M2 integral g'(mu + s z) dz = M2 S / s^3, with M2 = sup |He_2|
        phi = phi(0) (the maximum at z = 0; the other critical points, z^2 =
        3, give 2 phi(sqrt 3) < phi(0)) and S = integral g'
        (:meth:`total_variation`); likewise |E[g^(4)(f)]| <= M3 S / s^4
        with M3 = sup |He_3| phi, the constant the probit's G4 stores
        (:meth:`ProbitLink.derivative_sups`, checked against
        :func:`probit_mixture_sups` in the tests). Both decrease in v, so v
        = v_lo bounds the whole rectangle; the computed powers are raised by
        1e-12 relative (a few roundings).

        Parameters
        ----------
        v_lo : array-like
            Lower ends of the variance ranges.

        Returns
        -------
        g3, g4 : ndarray
            The bounds, shaped as ``v_lo``.
        """
        G3, G4 = self.derivative_sups()
        S = self.total_variation()
        v_lo = np.asarray(v_lo, dtype=np.float64)
        if S is None:
            return np.full(v_lo.shape, G3), np.full(v_lo.shape, G4)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            pos = v_lo > 0
            vv = np.where(pos, v_lo, 1.0)
            g3 = np.where(pos, _M2 * S / (vv * np.sqrt(vv)) * (1 + 1e-12), np.inf)
            g4 = np.where(pos, _M3 * S / (vv * vv) * (1 + 1e-12), np.inf)
        return np.minimum(G3, g3), np.minimum(G4, g4)

    def v_slope_lower(self, mu_lo, mu_hi, v_lo, v_hi, n_mu=None, n_v=None):
        """A proven lower bound kappa >= 0 of |dp/dv| over each rectangle
        [mu_lo, mu_hi] x [v_lo, v_hi], element-wise; 0 where the mean range
        contains 0 in its interior, v_lo < 0, an end is not finite or the link
        has no derivative bounds.

        With it (module doc: dp/dv <= 0 for mu >= 0, >= 0 for mu <= 0), for
        (mu, v) in the rectangle

        * mu_lo >= 0: p(mu, v) >= p(mu, v_hi) + kappa (v_hi - v) and
          p(mu, v) <= p(mu, v_lo) - kappa (v - v_lo);
        * mu_hi <= 0: p(mu, v) >= p(mu, v_lo) + kappa (v - v_lo) and
          p(mu, v) <= p(mu, v_hi) - kappa (v_hi - v)

        (integrate |dp/dv| >= kappa along v at fixed mu), which is how the
        joint bounds couple each class's variance to its mean.

        Proof. dp/dv = E[g''(f)] / 2 (f ~ N(mu, v): the heat equation), so
        d/dmu (dp/dv) = E[g'''(f)] / 2 and d/dv (dp/dv) = E[g''''(f)] / 4, at
        most G3 / 2 and G4 / 4 in absolute value (:meth:`derivative_sups`;
        on a rectangle with v >= v_lo > 0 the smaller :meth:`local_sups`,
        which decay like v^-3/2 and v^-2: without them a rectangle at large
        variance, where dp/dv is small, got kappa = 0 from G4 dv / 8 alone).
        On a grid of n_mu x n_v points spanning the rectangle (ends
        included), every point of the rectangle is within dm / 2 in mu and
        dv / 2 in v of a grid point (spacing widened by 1e-9 relative plus
        1e-15 |ends| for the rounding of the grid), so |dp/dv| >= min over
        the grid of |dp/dv| - G3 dm / 4 - G4 dv / 8; the computed dp/dv errs
        by at most SLOPE_ERROR (subtracted).

        Parameters
        ----------
        mu_lo, mu_hi, v_lo, v_hi : array-like
            The rectangles, broadcast together.
        n_mu, n_v : int, default=None
            Grid size per rectangle (None: ``N_SLOPE_MU`` x ``N_SLOPE_V``).

        Returns
        -------
        kappa : ndarray
            The slope bounds, >= 0.
        """
        n_mu = N_SLOPE_MU if n_mu is None else int(n_mu)
        n_v = N_SLOPE_V if n_v is None else int(n_v)
        mu_lo, mu_hi, v_lo, v_hi = np.broadcast_arrays(
            *(np.asarray(t, dtype=np.float64) for t in (mu_lo, mu_hi, v_lo, v_hi))
        )
        sups = self.derivative_sups()
        out = np.zeros(mu_lo.shape)
        with np.errstate(invalid="ignore"):
            ok = (
                np.isfinite(mu_lo) & np.isfinite(mu_hi) & np.isfinite(v_lo) & np.isfinite(v_hi)
                & (v_lo >= 0) & (v_hi >= v_lo) & (mu_hi >= mu_lo) & ((mu_lo >= 0) | (mu_hi <= 0))
            )
        if sups is None or not ok.any():
            return out
        a, b, c, e = mu_lo[ok], mu_hi[ok], v_lo[ok], v_hi[ok]
        G3, G4 = self.local_sups(c)
        M, slope, dm, dv = self._slope_grid(a, b, c, e, n_mu, n_v)
        with np.errstate(all="ignore"):
            k = slope.min(axis=(1, 2)) - G3 * dm / 4.0 - G4 * dv / 8.0 - SLOPE_ERROR
        out[ok] = np.where(np.isfinite(k), np.maximum(k, 0.0), 0.0)
        return out

    def _slope_grid(self, a, b, c, e, n_mu, n_v):
        """The grid of :meth:`v_slope_lower` / :meth:`v_slope_affine` over the
        rectangles [a, b] x [c, e]: node means M (n, n_mu, n_v), the signed
        slope s dp/dv at the nodes (s = -1 where a >= 0, else +1) and the
        spacings dm, dv widened for the grid's own rounding (1e-9 relative
        plus 1e-15 |ends|)."""
        fm = np.linspace(0.0, 1.0, n_mu)
        fv = np.linspace(0.0, 1.0, n_v)
        M = a[:, None, None] + (b - a)[:, None, None] * fm[None, :, None]
        V = c[:, None, None] + (e - c)[:, None, None] * fv[None, None, :]
        M, V = np.broadcast_arrays(M, V)
        with np.errstate(all="ignore"):
            slope = np.where(a >= 0, -1.0, 1.0)[:, None, None] * self.grad(M, V)[1]
            dm = (b - a) / (n_mu - 1) * (1 + 1e-9) + 1e-15 * (np.abs(a) + np.abs(b))
            dv = (e - c) / (n_v - 1) * (1 + 1e-9) + 1e-15 * (np.abs(c) + np.abs(e))
        return M, slope, dm, dv

    def v_slope_affine(self, mu_lo, mu_hi, v_lo, v_hi, m, n_mu=None, n_v=None):
        """A proven lower bound of |dp/dv| over each rectangle that is affine
        in the mean: ``(k0, k1)`` with

            k0 + k1 (mu - m) <= |dp/dv (mu, v)|

        for every (mu, v) in [mu_lo, mu_hi] x [v_lo, v_hi], element-wise (the
        signs of :meth:`v_slope_lower`: p is decreasing in v where mu >= 0,
        increasing where mu <= 0). :meth:`v_slope_lower` is the case k1 = 0;
        where |dp/dv| varies along a wide mean range (it decays like the
        link's density in mu), the smallest value over the whole rectangle
        charges every mean the slope of the worst one, and a line in mu keeps
        most of the rest. k0 = 0, k1 = 0 where :meth:`v_slope_lower` gives 0
        by its preconditions (mean range across 0, no derivative bounds, ...).

        Proof. The slope of the line, k1, is any number (here a least-squares
        fit of the grid's smallest |dp/dv| per mean node, which decides only
        the tightness). Let f(mu, v) = s dp/dv - k1 (mu - m) (s = -1 where
        mu_lo >= 0, +1 where mu_hi <= 0). As in :meth:`v_slope_lower`,
        |d/dmu (dp/dv)| <= G3 / 2 and |d/dv (dp/dv)| <= G4 / 4
        (:meth:`local_sups`), so |df/dmu| <= G3 / 2 + |k1| and |df/dv| <=
        G4 / 4, and every point of the rectangle is within dm / 2 in mu and
        dv / 2 in v of a node of the n_mu x n_v grid (spacing widened as
        there): min over the rectangle of f >= min over the nodes of f -
        (G3 / 2 + |k1|) dm / 2 - G4 dv / 8 - SLOPE_ERROR (the computed dp/dv
        errs by at most SLOPE_ERROR). The computed node values of k1 (mu -
        m) err by at most 4 u (|k1| (|mu| + |m|)) and the subtraction by u
        of the result (covered by subtracting 1e-12 (1 + |k1| (|mu_lo| +
        |mu_hi| + 2 |m|))). So k0 = that minimum is a lower bound of f, i.e.
        k0 + k1 (mu - m) <= s dp/dv = |dp/dv|; the rounding of the caller's
        own evaluation of the line is the caller's.

        Parameters
        ----------
        mu_lo, mu_hi, v_lo, v_hi : array-like
            The rectangles, broadcast together.
        m : array-like
            Reference mean of each line.
        n_mu, n_v : int, default=None
            Grid size per rectangle (None: ``N_AFFINE_MU`` x ``N_AFFINE_V``).

        Returns
        -------
        k0, k1 : ndarray
            Intercept and slope of the line (both 0 where no bound is
            proven).
        """
        n_mu = N_AFFINE_MU if n_mu is None else int(n_mu)
        n_v = N_AFFINE_V if n_v is None else int(n_v)
        mu_lo, mu_hi, v_lo, v_hi, m = np.broadcast_arrays(
            *(np.asarray(t, dtype=np.float64) for t in (mu_lo, mu_hi, v_lo, v_hi, m))
        )
        sups = self.derivative_sups()
        k0, k1 = np.zeros(mu_lo.shape), np.zeros(mu_lo.shape)
        with np.errstate(invalid="ignore"):
            ok = (
                np.isfinite(mu_lo) & np.isfinite(mu_hi) & np.isfinite(v_lo) & np.isfinite(v_hi) & np.isfinite(m)
                & (v_lo >= 0) & (v_hi >= v_lo) & (mu_hi >= mu_lo) & ((mu_lo >= 0) | (mu_hi <= 0))
            )
        if sups is None or not ok.any():
            return k0, k1
        a, b, c, e, mc = mu_lo[ok], mu_hi[ok], v_lo[ok], v_hi[ok], m[ok]
        G3, G4 = self.local_sups(c)
        M, slope, dm, dv = self._slope_grid(a, b, c, e, n_mu, n_v)
        with np.errstate(all="ignore"):
            smin = slope.min(axis=2)  # (n, n_mu): the smallest slope per mean node
            x = M[:, :, 0] - mc[:, None]
            xm = x.mean(axis=1)
            var = ((x - xm[:, None]) ** 2).sum(axis=1)
            cov = ((x - xm[:, None]) * (smin - smin.mean(axis=1)[:, None])).sum(axis=1)
            s1 = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)
            s1 = np.where(np.isfinite(s1), s1, 0.0)
            f = slope - (s1[:, None] * x)[:, :, None]
            pad = 1e-12 * (1.0 + np.abs(s1) * (np.abs(a) + np.abs(b) + 2.0 * np.abs(mc)))
            s0 = f.min(axis=(1, 2)) - (G3 / 2.0 + np.abs(s1)) * dm / 2.0 - G4 * dv / 8.0 - SLOPE_ERROR - pad
        good = np.isfinite(s0) & np.isfinite(s1)
        k0[ok] = np.where(good, s0, 0.0)
        k1[ok] = np.where(good, s1, 0.0)
        return k0, k1

    def lines(self, mu_lo, mu_hi, v_lo, v_hi, upper=False):
        """Linear bounds of p in mu over rectangles (see :func:`_lower_lines`).

        Returns ``(alpha, slope)``, element-wise, with ``slope >= 0`` and
        ``p(mu, v) >= alpha + slope * mu`` (``upper=False``) or ``<=``
        (``upper=True``) for every mu in [mu_lo, mu_hi], v in [v_lo, v_hi],
        for the values sklearn returns (rounding margin included).

        Proof. For fixed v, ``d^2 p / d mu^2 = E[g''(f)] = 2 dp/dv``, which
        is <= 0 for mu >= 0 and >= 0 for mu <= 0 (module doc): p(., v) is
        convex on mu <= 0 and concave on mu >= 0, and increasing. The lower
        envelope over v, ``G(mu) = p(mu, v_hi)`` for mu >= 0 and
        ``p(mu, v_lo)`` for mu < 0 (monotonicity in v), is continuous
        (p(0, v) = g(0) for every v, g(x) - g(0) being odd), increasing,
        convex on mu <= 0 and concave on mu >= 0; a line below G is below
        p. The upper envelope ``p(mu, v_lo)`` (mu >= 0) / ``p(mu, v_hi)``
        (mu < 0) becomes such a G after ``mu -> -mu`` and a change of sign.

        Parameters
        ----------
        mu_lo, mu_hi, v_lo, v_hi : array-like
            The rectangles.
        upper : bool, default=False
            Upper instead of lower lines.

        Returns
        -------
        alpha, slope : ndarray
            The lines ``alpha + slope * mu``.
        """
        mu_lo, mu_hi = np.asarray(mu_lo, dtype=np.float64), np.asarray(mu_hi, dtype=np.float64)
        v_lo = np.maximum(np.asarray(v_lo, dtype=np.float64), 0.0)
        v_hi = np.maximum(np.asarray(v_hi, dtype=np.float64), v_lo)
        if not upper:

            def f(m):
                vv = np.where(m >= 0, v_hi[..., None], v_lo[..., None])
                return self.value(m, vv), self.grad(m, vv)[0]

            alpha, slope = _lower_lines(f, mu_lo, mu_hi, self.margin, 0.0)
            return alpha, slope

        def f(m):  # -P(-m), P the upper envelope
            vv = np.where(m <= 0, v_lo[..., None], v_hi[..., None])
            return -self.value(-m, vv), self.grad(-m, vv)[0]

        alpha, slope = _lower_lines(f, -mu_hi, -mu_lo, self.margin, -1.0)
        return -alpha, slope


class FiveErfLink(Link):
    """sklearn's ``predict_proba`` of the binary Laplace GPC."""

    #: sklearn's five-erf integral uses alpha = 1 / (2 var) and divides by
    #: sqrt(2 pi var): NaN for var <= 0 (hunt, session 14: a fit with
    #: amplitude 1.1e16 and 25 duplicated inputs computes var = 0 exactly
    #: there), overflow or underflow below ~1e-308. Above 1e-300 every step
    #: is finite and the result is in [0, 1]. Above ~2.9e307, 1 / (2 var)
    #: is subnormal and pi / alpha, 2 pi var overflow (referee, session 14):
    #: k(x, x) <= 1e306 keeps the computed variance (<= k(x, x) plus its
    #: rounding) below that.
    finite_variance_floor = 1e-300
    finite_variance_ceiling = 1e306

    def derivative_sups(self):
        """(G3, G4) of :func:`probit_mixture_sups` for sklearn's constants:
        the stored values (rounded up; recomputed and compared in the tests)
        when the constants are the known ones, else computed once (~0.5 s).

        Returns
        -------
        sups : tuple of float
            (G3, G4).
        """
        if FiveErfLink._derivative_sups is None:
            if np.array_equal(FIVE_ERF_COEFS, _KNOWN_COEFS) and np.array_equal(FIVE_ERF_LAMBDAS, _KNOWN_LAMBDAS):
                FiveErfLink._derivative_sups = _KNOWN_SUPS
            else:  # pragma: no cover - another sklearn release
                FiveErfLink._derivative_sups = probit_mixture_sups(FIVE_ERF_COEFS, np.sqrt(2.0) * FIVE_ERF_LAMBDAS)
        return FiveErfLink._derivative_sups

    def total_variation(self):
        """sum_i c_i (g' >= 0 by :func:`verify_five_erf_shape`), summed
        exactly rounded by ``math.fsum`` and raised by 1e-12 relative.

        Returns
        -------
        total : float
            The bound.
        """
        return abs(math.fsum(FIVE_ERF_COEFS.tolist())) * (1 + 1e-12)

    def value(self, mu, v):
        """sklearn's five-erf p(mu, v), element-wise (see :meth:`Link.value`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        p : ndarray
            The probabilities.
        """
        mu, v = np.asarray(mu, dtype=np.float64), np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        lam = FIVE_ERF_LAMBDAS
        z = np.sqrt(2.0) * lam * mu[..., None] / np.sqrt(1.0 + 2.0 * lam**2 * v[..., None])
        return ndtr(z) @ FIVE_ERF_COEFS

    def mu_derivatives(self, mu, v):
        """p = sum_i c_i Phi(b_i mu), b_i = sqrt(2) lambda_i / sqrt(1 + 2
        lambda_i^2 v): the n-th derivative in mu is sum_i c_i b_i^n
        Phi^(n)(b_i mu), with Phi' = phi, Phi'' = -z phi, Phi''' = (z^2 - 1) phi.

        Error: with sum_i |c_i| < 1e4 and b_i <= sqrt(2) max lambda_i < 1
        (checked here; sklearn's constants: 7731 and 0.63), every term is
        below 1e4 * max_z |z^a phi(z)| < 4e3 in size and is formed by fewer
        than 30 correctly rounded operations (sqrt, exp, ndtr-free products),
        so the five-term sum errs by less than 5 * 30 * u * 4e3 < 7e-11 <
        ``MU_DERIVATIVE_ERROR`` = 1e-9 (exp within 1 ulp).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        derivatives : tuple of 3 ndarray
            The first three derivatives of p in mu.
        """
        if not (np.sum(np.abs(FIVE_ERF_COEFS)) < 1e4 and np.sqrt(2.0) * np.max(FIVE_ERF_LAMBDAS) < 1.0):
            return None  # pragma: no cover - other constants: no proven error bound here
        mu, v = np.asarray(mu, dtype=np.float64), np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        return _mixture_mu_derivatives(FIVE_ERF_COEFS, np.sqrt(2.0) * FIVE_ERF_LAMBDAS, 2.0 * FIVE_ERF_LAMBDAS**2,
                                       mu, v)

    def grad(self, mu, v):
        """(dp/dmu, dp/dv), element-wise (see :meth:`Link.grad`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        dp_dmu, dp_dv : ndarray
            The partial derivatives.
        """
        mu, v = np.asarray(mu, dtype=np.float64), np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        lam = FIVE_ERF_LAMBDAS
        s = 1.0 / np.sqrt(1.0 + 2.0 * lam**2 * v[..., None])
        z = np.sqrt(2.0) * lam * mu[..., None] * s
        pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
        dmu = (pdf * np.sqrt(2.0) * lam * s) @ FIVE_ERF_COEFS
        dv = (pdf * z * (-(lam**2)) * s * s) @ FIVE_ERF_COEFS
        return dmu, dv


class ProbitLink(Link):
    """Probit likelihood: p = Phi(mu / sqrt(1 + v)) (paper Prop. 8)."""

    margin = 1e-15
    #: Phi(mu / sqrt(1 + max(v, 0))) (:meth:`value`, what the EP and sparse
    #: classifiers' predict_proba compute) is finite for every v: no floor
    #: (-1 before session 25, which called EP models with a non-PSD kernel
    #: "may be NaN" where their variance fell below -1; hunt).
    finite_variance_floor = -np.inf
    #: scipy's ndtr is 1 - erfc(-x / sqrt 2) / 2 or erfc(x / sqrt 2) / 2 with
    #: erfc in [0, 2]: its float values lie in [0, 1].
    unit_interval = True

    def derivative_sups(self):
        """sup |phi''| = phi(0) and sup |phi'''| = (3 y - y^3) phi(y) at
        y^2 = 3 - sqrt(6), rounded up (checked against
        :func:`probit_mixture_sups` in the tests).

        Returns
        -------
        sups : tuple of float
            (G3, G4).
        """
        return (0.3989423, 0.5505879)

    def total_variation(self):
        """Phi rises from 0 to 1.

        Returns
        -------
        total : float
            1.0.
        """
        return 1.0

    def value(self, mu, v):
        """Phi(mu / sqrt(1 + v)), element-wise (see :meth:`Link.value`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        p : ndarray
            The probabilities.
        """
        return ndtr(np.asarray(mu, dtype=np.float64) / np.sqrt(1.0 + np.maximum(v, 0.0)))

    def mu_derivatives(self, mu, v):
        """Phi(b mu), b = 1 / sqrt(1 + v) <= 1: one term below 0.4 in size,
        a few roundings (far inside ``MU_DERIVATIVE_ERROR``).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        derivatives : tuple of 3 ndarray
            The first three derivatives of p in mu.
        """
        mu, v = np.asarray(mu, dtype=np.float64), np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        return _mixture_mu_derivatives(np.ones(1), np.ones(1), np.ones(1), mu, v)

    def grad(self, mu, v):
        """(dp/dmu, dp/dv), element-wise (see :meth:`Link.grad`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        dp_dmu, dp_dv : ndarray
            The partial derivatives.
        """
        s = 1.0 / np.sqrt(1.0 + np.maximum(v, 0.0))
        z = mu * s
        pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
        return pdf * s, -0.5 * pdf * z * s * s


class LogisticLink(Link):
    """Logistic likelihood: p = E[sigmoid(f)] (paper Prop. 9).

    Quadrature: Gauss-Hermite of order 96 when sd <= 2 (sigmoid is smooth on
    the scale of the Gaussian); otherwise composite Gauss-Legendre on
    f in [-40, 40] (panels of width 1/2, where sigmoid varies) plus the
    closed-form Gaussian mass above 40 (sigmoid differs from 0 / 1 outside by
    < 5e-18). Checked against adaptive quadrature to 1e-13; widened by 1e-10.
    """

    def __init__(self):
        x, w = np.polynomial.hermite_e.hermegauss(96)
        self._hx, self._hw = x, w / w.sum()
        gx, gw = np.polynomial.legendre.leggauss(8)
        edges = np.arange(-40.0, 40.0, 0.5)
        self._fx = (edges[:, None] + 0.25 * (gx[None] + 1.0)).ravel()
        self._fw = np.tile(0.25 * gw, len(edges))

    @staticmethod
    def _sigmoid(f):
        return 0.5 * (1.0 + np.tanh(0.5 * f))

    def _moments(self, mu, v, order):
        mu = np.asarray(mu, dtype=np.float64)
        v = np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        mu, v = np.broadcast_arrays(mu, v)
        shape = mu.shape
        mu, v = mu.ravel(), v.ravel()
        sd = np.sqrt(v)
        out = np.empty((order + 1, mu.size))
        small = sd <= 2.0
        f = mu[small][:, None] + sd[small][:, None] * self._hx
        s = self._sigmoid(f)
        ds = [s, s * (1 - s), s * (1 - s) * (1 - 2 * s)]
        for k in range(order + 1):
            out[k][small] = ds[k] @ self._hw
        big = ~small
        if big.any():
            m, sdb = mu[big][:, None], sd[big][:, None]
            dens = np.exp(-0.5 * ((self._fx - m) / sdb) ** 2) / (np.sqrt(2 * np.pi) * sdb)
            s = self._sigmoid(self._fx)
            ds = [s, s * (1 - s), s * (1 - s) * (1 - 2 * s)]
            for k in range(order + 1):
                out[k][big] = (ds[k] * dens) @ self._fw
            out[0][big] += ndtr((mu[big] - 40.0) / sd[big])
        return out.reshape((order + 1,) + shape)

    def value(self, mu, v):
        """E[sigmoid(f)] by quadrature, element-wise (see :meth:`Link.value`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        p : ndarray
            The probabilities.
        """
        return self._moments(mu, v, 0)[0]

    def grad(self, mu, v):
        """(dp/dmu, dp/dv), element-wise (see :meth:`Link.grad`).

        Parameters
        ----------
        mu : array-like
            Latent means.
        v : array-like
            Latent variances (negative values are read as 0), broadcast with ``mu``.

        Returns
        -------
        dp_dmu, dp_dv : ndarray
            The partial derivatives.
        """
        m = self._moments(mu, v, 2)
        return m[1], 0.5 * m[2]


#: sup_z |He_2(z)| phi(z) = phi(0) and sup_z |He_3(z)| phi(z) (= the probit's
#: G4), rounded up (:meth:`Link.local_sups`; checked in the tests).
_M2, _M3 = 0.3989423, 0.5505879

#: Grid of :meth:`Link.v_slope_lower` per rectangle (mean x variance).
N_SLOPE_MU = 33
N_SLOPE_V = 9
#: Grid of :meth:`Link.v_slope_affine` (finer: its margin (G3 / 2 + |k1|) dm / 2 + G4 dv / 8
#: is most of what it loses against the grid's own values at gamma 0.02-0.05 on digits).
N_AFFINE_MU = 129
N_AFFINE_V = 33


def probit_mixture_sups(c, b, x_max=15.0, n_grid=1_500_001):
    """Proven upper bounds (G3, G4) of sup_x |g'''(x)| and sup_x |g''''(x)| for
    g(x) = sum_i c_i Phi(b_i x) (b_i > 0): sklearn's five-erf link (b_i =
    sqrt(2) lambda_i) and the probit (one term).

    g^(n)(x) = sum_i c_i b_i^n phi^(n-1)(b_i x) with phi'' = (y^2 - 1) phi,
    phi''' = (3 y - y^3) phi, phi'''' = (y^4 - 6 y^2 + 3) phi; |g'''| and
    |g''''| are even, so x >= 0 suffices. On [0, x_max] a grid of spacing
    dx: sup |g''''| <= grid max + L5 dx / 2 with the crude Lipschitz
    constant L5 = sum |c_i| b_i^5 sup|phi''''| (sup|phi''''| = 3 phi(0) <
    1.2); then sup |g'''| <= grid max + G4 dx / 2. Beyond x_max, with y_i =
    b_i x >= b_i x_max >= 4: |phi''(y)| <= y^2 phi(y) and |phi'''(y)| <=
    y^3 phi(y) (y >= 4), and y^2 phi(y), y^3 phi(y) decrease for y >= 4,
    so the tails are at most their sums at b_i x_max. Each computed value
    errs by far less than 1e-9 (five terms of size <= 1e4, relative
    1e-15): 1e-9 is added.
    """
    c, b = np.asarray(c, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.min(b) * x_max < 4.0:  # pragma: no cover - the tail argument needs it
        raise ValueError("x_max too small for the tail bound.")
    x = np.linspace(0.0, x_max, n_grid)
    dx = x[1] - x[0]
    g3 = np.zeros(n_grid)
    g4 = np.zeros(n_grid)
    for ci, bi in zip(c, b):
        y = bi * x
        ph = np.exp(-0.5 * y * y) / np.sqrt(2.0 * np.pi)
        g3 += ci * bi**3 * (y * y - 1.0) * ph
        g4 += ci * bi**4 * (3.0 * y - y**3) * ph
    L5 = np.sum(np.abs(c) * b**5) * 1.2
    G4 = float(np.abs(g4).max() + L5 * dx / 2 + 1e-9)
    G3 = float(np.abs(g3).max() + G4 * dx / 2 + 1e-9)
    yt = b * x_max
    pt = np.exp(-0.5 * yt * yt) / np.sqrt(2.0 * np.pi)
    G3 = max(G3, float(np.sum(np.abs(c) * b**3 * yt**2 * pt)) + 1e-9)
    G4 = max(G4, float(np.sum(np.abs(c) * b**4 * yt**3 * pt)) + 1e-9)
    return G3, G4


#: Tangent points tried per rectangle by :func:`_lower_lines`.
N_TANGENTS = 9
#: Bound on the rounding error of a computed slope dp/dmu (the five-erf sum
#: has terms of size ~ 1e3: errors ~ 1e-12; ample headroom).
SLOPE_ERROR = 1e-9


def _mixture_mu_derivatives(coefs, a, b2, mu, v):
    """First three mu-derivatives of sum_i coefs_i Phi(beta_i mu), beta_i =
    a_i / sqrt(1 + b2_i v), element-wise in (mu, v)."""
    beta = a / np.sqrt(1.0 + b2 * v[..., None])
    z = beta * mu[..., None]
    pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    d1 = (beta * pdf) @ coefs
    d2 = (-(beta * beta) * z * pdf) @ coefs
    d3 = (beta**3 * (z * z - 1.0) * pdf) @ coefs
    return d1, d2, d3


def _lower_lines(f, a, b, margin, inf_value):
    """Lines ``alpha + slope * m`` below G over [a, b], element-wise, for G
    increasing, convex on m <= 0 and concave on m >= 0; ``f(m)`` returns
    (G(m), G'(m)) for m of shape a.shape + (k,), each within ``margin`` of
    the true G (the slope within SLOPE_ERROR).

    * a >= 0 (concave): the chord, the best lower line.
    * otherwise, tangents at N_TANGENTS points t of [a, min(b, 0)]: a
      tangent at t is below G on [a, min(b, 0)] (convexity) and, when b > 0,
      on [0, b] iff it is below G at 0 (true: tangent to the convex part, G
      continuous) and at b (G concave there lies above the chord from
      (0, G(0)) to (b, G(b))); they must pass the check at b (with
      margins). And the line through (a, G(a)) with slope s = min(G'(a),
      chord slope): on [a, min(b, 0)], G(m) >= G(a) + G'(a) (m - a) >=
      G(a) + s (m - a), and at b it is <= the chord's G(b), so the same
      argument covers [0, b]. The valid candidates compete by their value
      at the midpoint.

    Every line is lowered by 4 margin + SLOPE_ERROR (b - a) + 1e-12 (1 +
    slope (|a| + |b|)) for the rounding of the values, the slope and the
    line's own evaluation. Why 1e-12 (1 + slope (|a| + |b|)) suffices: the
    values G are within margin of a probability (|G| <= 1 + margin) and the
    points t, a, b, mid lie in [a, b], so every quantity formed here
    (alpha = G(t) - slope t, the check alpha + slope b against G(b), the
    line at any m of [a, b]) is a sum of at most three terms, each of size
    <= 1 + margin + slope (|a| + |b|); each operation errs by at most u
    times that size and there are fewer than ten of them per line, while
    1e-12 > 4500 u. (The caller's own evaluation of the line at sklearn's
    mean, inside its affine bound, is covered by the caller's margins.)
    Non-finite ends give the constant line G(a) (``inf_value``, the infimum
    of G, when a = -inf).
    """
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    finite = np.isfinite(a) & np.isfinite(b)
    a0 = np.where(finite, a, 0.0)
    b0 = np.where(finite, np.maximum(b, a0), 0.0)
    top = np.minimum(b0, 0.0)
    frac = np.linspace(0.0, 1.0, N_TANGENTS)
    t = a0[..., None] + (top - a0)[..., None] * frac
    ends = np.stack([a0, b0], axis=-1)
    with np.errstate(all="ignore"):
        gt, dt = f(t)
        ge, _ = f(ends)
        ga, gb = ge[..., 0], ge[..., 1]
        mid = 0.5 * (a0 + b0)
        width = b0 - a0
        chord = np.where(width > 0, (gb - ga) / np.where(width > 0, width, 1.0), 0.0)
        chord = np.maximum(chord, 0.0)
        # Tangents, and the line through (a, G(a)) with slope min(G'(a),
        # chord), with their value at b and mid.
        s_a = np.minimum(np.maximum(dt[..., 0], 0.0), chord)
        slope_t = np.concatenate([np.maximum(dt, 0.0), s_a[..., None]], axis=-1)
        alpha_t = np.concatenate([gt - slope_t[..., :-1] * t, (ga - s_a * a0)[..., None]], axis=-1)
        at_b = alpha_t + slope_t * b0[..., None]
        pad = 4.0 * margin + SLOPE_ERROR * (b0 - a0)[..., None]
        ok = (b0[..., None] <= 0) | (at_b + pad <= gb[..., None] - margin)
        ok[..., -1] = True
        val = np.where(ok, alpha_t + slope_t * mid[..., None], -np.inf)
        j = np.argmax(val, axis=-1)[..., None]
        alpha = np.take_along_axis(alpha_t, j, -1)[..., 0]
        slope = np.take_along_axis(slope_t, j, -1)[..., 0]
        # Concave case: the chord.
        concave = a0 >= 0
        slope = np.where(concave, chord, slope)
        alpha = np.where(concave, ga - chord * a0, alpha)
        alpha = alpha - (4.0 * margin + SLOPE_ERROR * width + 1e-12 * (1.0 + slope * (np.abs(a0) + np.abs(b0))))
    bad = ~finite | ~np.isfinite(alpha) | ~np.isfinite(slope)
    if bad.any():
        # The constant G(a) (G increasing), or G's infimum when a = -inf.
        fa = np.isfinite(a)
        with np.errstate(all="ignore"):
            g_a = f(np.where(fa, a, 0.0)[..., None])[0][..., 0]
        const = np.where(fa & np.isfinite(g_a), g_a, inf_value) - 4.0 * margin
        alpha = np.where(bad, const, alpha)
        slope = np.where(bad, 0.0, slope)
    return alpha, slope


def verify_five_erf_shape(x_max=15.0, n_grid=200_001):
    """Rigorously check h(x) = sum_i c_i lambda_i^3 exp(-lambda_i^2 x^2) > 0 on
    x >= 0, the condition behind the monotonicity of sklearn's p1 (module doc).

    With l0 the smallest lambda, H(x) = h(x) exp(l0^2 x^2) = c0 l0^3 +
    sum_{i != 0} c_i lambda_i^3 exp(-(lambda_i^2 - l0^2) x^2). On [0, x_max]
    the grid minimum of H must exceed its Lipschitz constant times half the
    spacing; beyond x_max, c0 l0^3 must exceed sum |c_i| lambda_i^3
    exp(-(lambda_i^2 - l0^2) x_max^2).

    Parameters
    ----------
    x_max : float, default=15.0
        End of the gridded interval.
    n_grid : int, default=200_001
        Grid points on [0, x_max].

    Returns
    -------
    slacks : tuple of float
        The two safety slacks (both > 0 when the proof holds).
    """
    lam, c = FIVE_ERF_LAMBDAS, FIVE_ERF_COEFS
    i0 = int(np.argmin(lam))
    l0, c0 = lam[i0], c[i0]
    others = np.arange(len(lam)) != i0
    dl = lam[others] ** 2 - l0**2
    a = c[others] * lam[others] ** 3
    x = np.linspace(0.0, x_max, n_grid)
    H = c0 * l0**3 + np.exp(-np.outer(x * x, dl)) @ a
    # |d/dx a exp(-dl x^2)| <= |a| sqrt(2 dl / e).
    lip = np.sum(np.abs(a) * np.sqrt(2.0 * dl / np.e))
    grid_slack = H.min() - lip * (x[1] - x[0]) / 2 - 1e-9 * np.abs(a).sum()
    tail_slack = c0 * l0**3 - np.sum(np.abs(a) * np.exp(-dl * x_max**2))
    return float(grid_slack), float(tail_slack)
