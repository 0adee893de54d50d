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
"""

from dataclasses import dataclass

import numpy as np

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol


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

    def __init__(self, kernel, Xs):
        self.kernel = kernel
        self.Xs = np.asarray(Xs, dtype=np.float64)

    # -- required -------------------------------------------------------
    def values(self, X):
        """k(X, Xs), shape (n, N)."""
        raise NotImplementedError

    def value_and_grad(self, X):
        """k(X, Xs) of shape (n, N) and d/dx k(x, x_i) of shape (n, N, d)."""
        raise NotImplementedError

    def interval(self, lo, hi):
        """(klo, khi), each (B, N), enclosing k(x, x_i) over each box."""
        raise NotImplementedError

    def diag(self, X):
        """k(x, x) for each row of X, shape (n,)."""
        return np.asarray(self.kernel.diag(X), dtype=np.float64)

    def diag_interval(self, lo, hi):
        """(dlo, dhi), each (B,), enclosing k(x, x) over each box (variance
        bounds). Stationary kernels have a constant diagonal; other adapters
        override this."""
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
        value itself (a few ulps: exp, a power, a product) is covered
        elsewhere (``mag``). Every error that is *not* a bounded multiple of
        the value belongs here, e.g. the rounding of a distance: sklearn's
        squared distance errs by ~ (d + 2) u relative, which moves an RBF
        value by ~ (phi / 2) (d + 2) u of itself, unbounded as phi grows
        (:meth:`~skgprobust.kernels.stationary.StationaryAdapter.rounding`
        bounds it absolutely, by ``phi |psi'(phi)|``). The default, zero, is
        right for kernels computed without such errors.
        """
        return np.zeros((len(lo), len(self.Xs)))

    def value_ulps(self, d):
        """c_val: the relative rounding of sklearn's kernel values that
        :meth:`rounding` does not carry.

        Contract (used by the variance bounds, :mod:`skgprobust._bounds._variance`,
        "Soundness margin" (a)): for x in box b (float inputs, d features),
        sklearn's ``kernel(x[None], Xs)[0, i] = k~(x, x_i)`` satisfies

            |k~(x, x_i) - k(x, x_i)| <= rounding(lo, hi)[b, i]
                                          + value_ulps(d) u sqrt(k(x, x) k(x_i, x_i)),

        u = 2^-53, k the exact kernel of the adapter (PSD). The default is the
        earlier convention ``2 d + 64`` (an assumption for adapters that prove
        nothing); :class:`SmoothCovariance <skgprobust._bounds._variance.SmoothCovariance>`
        kernels: ``2 d + 44 + 2 T`` (proven there, T the number of RBF / Matern
        terms); polynomial kernels of degree P: ``max(2 d + 64, (P + 1)(d + 4)
        + 48)``. Adapters override it with a proven constant.
        """
        from .._bounds._variance import SmoothCovariance  # lazy: _variance imports this module
        from .polynomial import PolynomialCovariance

        sm = SmoothCovariance.parse(self.kernel, d)
        if sm is not None:
            return 2 * d + 44 + 2 * len(sm.terms) + sm.value_terms
        pc = PolynomialCovariance.parse(self.kernel, d)
        base = 2 * d + 64
        return max(base, (pc.P + 1) * (d + 4) + 48) if pc is not None else base

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
        term, 8x headroom on the sum). Adapters that prove a smaller constant
        for their terms override it (:class:`~skgprobust.kernels.polynomial.DotProductPowerAdapter`
        and plain ``DotProduct``; ``WhiteAdapter``: 0, exact zeros; ``SumAdapter`` /
        ``ProductAdapter`` with a constant factor: the children's constant + 2u).
        Callers that combine several models' weights add their own margin for
        the combination, as before.
        """
        return margin_rtol(n_support, n_features)

    # -- optional -------------------------------------------------------
    def relax(self, lo, hi, w):
        """Separable lower bound of ``sum_i w_bi k(x, x_i)``; w has shape (B, N).

        The default uses the interval bound only (a constant), which is sound
        and converges as boxes shrink whenever ``interval`` does.
        """
        klo, khi = self.interval(lo, hi)
        B, d = lo.shape
        ilb = interval_lower(w, klo, khi)
        mag = (np.abs(w) * np.maximum(np.abs(klo), np.abs(khi))).sum(axis=-1)
        zeros = np.zeros((B, d))
        return Relaxation(ilb, zeros, zeros.copy(), ilb, mag, hi - lo)

    def taylor(self, lo, hi, w):
        """Optional :class:`TaylorModel` of ``sum_i w_bi k(x, x_i)``; None if
        the adapter has none (the other bounds are then used alone)."""
        return None

    def linearise(self, lo, hi, w):
        """``(relax(lo, hi, w), taylor(lo, hi, w))``; adapters override it to
        share work between the two."""
        return self.relax(lo, hi, w), self.taylor(lo, hi, w)
