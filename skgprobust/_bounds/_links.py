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


class Link:
    """P(class 1) = E[g(f)], f ~ N(mu, v), for a sigmoid-shaped g (see module doc)."""

    margin = PROBA_MARGIN

    def value(self, mu, v):
        raise NotImplementedError

    def grad(self, mu, v):
        """(dp/dmu, dp/dv)."""
        raise NotImplementedError

    def range(self, mu_lo, mu_hi, v_lo, v_hi):
        """Certified (p_lo, p_hi) of p over the rectangles, element-wise."""
        v_lo = np.maximum(v_lo, 0.0)
        v_hi = np.maximum(v_hi, v_lo)
        p_lo = self.value(mu_lo, np.where(mu_lo >= 0, v_hi, v_lo)) - self.margin
        p_hi = self.value(mu_hi, np.where(mu_hi >= 0, v_lo, v_hi)) + self.margin
        return p_lo, p_hi


class FiveErfLink(Link):
    """sklearn's ``predict_proba`` of the binary Laplace GPC."""

    def value(self, mu, v):
        mu, v = np.asarray(mu, dtype=np.float64), np.maximum(np.asarray(v, dtype=np.float64), 0.0)
        lam = FIVE_ERF_LAMBDAS
        z = np.sqrt(2.0) * lam * mu[..., None] / np.sqrt(1.0 + 2.0 * lam**2 * v[..., None])
        return ndtr(z) @ FIVE_ERF_COEFS

    def grad(self, mu, v):
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

    def value(self, mu, v):
        return ndtr(np.asarray(mu, dtype=np.float64) / np.sqrt(1.0 + np.maximum(v, 0.0)))

    def grad(self, mu, v):
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
        return self._moments(mu, v, 0)[0]

    def grad(self, mu, v):
        m = self._moments(mu, v, 2)
        return m[1], 0.5 * m[2]


def verify_five_erf_shape(x_max=15.0, n_grid=200_001):
    """Rigorously check h(x) = sum_i c_i lambda_i^3 exp(-lambda_i^2 x^2) > 0 on
    x >= 0, the condition behind the monotonicity of sklearn's p1 (module doc).

    With l0 the smallest lambda, H(x) = h(x) exp(l0^2 x^2) = c0 l0^3 +
    sum_{i != 0} c_i lambda_i^3 exp(-(lambda_i^2 - l0^2) x^2). On [0, x_max]
    the grid minimum of H must exceed its Lipschitz constant times half the
    spacing; beyond x_max, c0 l0^3 must exceed sum |c_i| lambda_i^3
    exp(-(lambda_i^2 - l0^2) x_max^2). Returns the two safety slacks (both > 0
    when the proof holds).
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
