"""MultiOutputGaussianProcessRegressor: the linear model of coregionalisation
(LMC) with partially observed outputs, and certified bounds for it.

The model (Li, Rakitsch, Zimmer, AISTATS 2022, Sec. 3.1; Journel & Huijbregts)
------------------------------------------------------------------------------
``f(x) = W g(x)``: P outputs mixed from L independent latent GPs
``g_l ~ GP(0, k_l)`` (sklearn kernels) by ``W`` (P, L), observed with
per-output Gaussian noise ``y_p = f_p(x) + eps_p``, ``eps_p ~ N(0, sigma_p^2)``.
The outputs are jointly Gaussian with

    cov(f_p(x), f_q(x')) = k_pq(x, x') = sum_l W_pl W_ql k_l(x, x').

Training data are Y (n, P) with NaN where an output was not observed. Only
the observed pairs i = (row n_i, output o_i), i = 1..N (ordered output by
output, rows ascending), enter the likelihood (the seed's Eqs. 5-6 and 28):

    K = [k_{o_i o_j}(x_{n_i}, x_{n_j})]_ij + diag(sigma_{o_i}^2 + alpha) = L L^T,
    beta = K^-1 y,   y_i = (Y[n_i, o_i] - m_{o_i}) / s_{o_i}

(m, s: the per-output mean and standard deviation of the observed values
with ``normalize_y``; 0 and 1 otherwise). The predictive distribution of
output p at x is, with ``r_p(x) = [k_{p o_i}(x, x_{n_i})]_i`` (N,):

    mean_p(x) = m_p + s_p * beta . r_p(x)
    var_p(x)  = s_p^2 * (k_pp(x, x) - ||L^-1 r_p(x)||^2)
    cov_pq(x) = s_p s_q * (k_pq(x, x) - (L^-1 r_p(x)) . (L^-1 r_q(x)))

(Eqs. 3-6 of the seed; ``cov`` is the P x P covariance of the outputs at one
input). ``W = I`` (L = P, fixed) makes K block diagonal and gives P
independent GPs (the seed's AL_indGPs). A WhiteKernel inside a latent kernel
is one latent noise value per training *row*, shared by the outputs
observed at that row (sklearn's convention: per row, not per distinct x);
cross-covariances ``k_l(x, X)`` never contain it, ``k_pp(x, x)`` does.

Hyperparameters (every latent kernel's ``theta``, the entries of W, the log
noise variances) are fitted by type-II maximum likelihood with the analytic
gradient ``d lml / d theta = 1/2 tr((beta beta^T - K^-1) dK / d theta)``:

* kernel hyperparameter t of latent l: ``dK = (w w^T)[o, o] * dK_l``,
  accumulated onto the training rows;
* ``W_pl``: ``sum_{i: o_i = p} ((M * K_l) @ W[o, l])_i``, M = beta beta^T - K^-1;
* ``log sigma_p^2``: ``1/2 sigma_p^2 sum_{i: o_i = p} M_ii``.

Certified bounds: the protocol form, exactly
-------------------------------------------
The posterior of output p is a GP of the inference form of the latent-model
protocol (:mod:`skgprobust._engine._latent`) with one *composite kernel*:
on the augmented input space (x, output index) the LMC covariance
``K_aug((x, p), (x', q)) = k_pq(x, x')`` is a positive semi-definite kernel
(a sum over l of the product of k_l and the rank-one PSD kernel
``(p, q) -> W_pl W_ql``). The training pairs (x_{n_i}, o_i) are its support
points, and for a query at (x, p):

* ``k(x, Xs) = r_p(x)``, computed by :class:`_OutputAdapter` as
  ``sum_l c_pl * k_l(x, Xs)`` with ``c_pl[i] = W_pl W_{o_i l}``: the sum over
  latents of ordinary kernel terms. Every adapter question is answered by the
  per-latent adapters of ``skgprobust.kernels`` with the weights multiplied
  by ``c_pl`` (relaxations, Taylor models, intervals and input-rounding
  bounds add up, as in the Sum adapter);
* ``k(x, x) = k_pp(x, x) = sum_l W_pl^2 k_l(x, x)`` (``W_pl^2 >= 0``, so
  diagonal intervals scale and add);
* weights ``s_p beta``, offset ``m_p``, scale ``s_p``, factor ``L`` and no
  column scaling: ``var_p = s_p^2 (k(x, x) - ||L^-1 k(Xs, x)||^2)``.

So one :class:`~skgprobust._engine._latent.LatentModel` per output, all
sharing the factor L (its inverse, spectrum and condition estimate are
computed once per fit and shared), and the existing mean bounds (Prop. 2 /
Taylor models), variance bounds (:class:`~skgprobust._bounds._variance.LatentVariance`),
branch and bound and driver apply unchanged: :meth:`predict` computes
exactly these formulas (the same weights, the same triangular solve with
``L_``, the same per-latent coefficients).

*The variance bounds' lemma (P <= (1 + rho) I) holds.* For the float
factor, L L^T = Kc + E + Er with E PSD (the noise and white parts below) and
Er the rounding (Cholesky's backward error and the Gram matrix's rounding),
so P <= (1 + rho) I with the rho of
:meth:`~skgprobust._bounds._variance.LatentVariance._lemma_rho` (module doc
of :mod:`skgprobust._bounds._variance`, "The lemma for the float factor");
every use below is scaled by (1 + rho), which the shared base does (rho is
computed once per factor and shared by the outputs' copies). Here the
output's adapter is not the support Gram's kernel, so rho is computed with
no noise credit and kmax from the factor's rows
(``_LEMMA_ADAPTER_IS_SUPPORT_KERNEL = False``); the LMC Gram's own
rounding (entry (i, j): sum_l |W_{o_i l} W_{o_j l}| times latent l's
rounding, L + 2 more roundings per value) is bounded with the coefficients
max_p |W_pl| |W_{o_j l}| (``_SharedFactor``), valid for every output.
In exact arithmetic the proof in
:mod:`skgprobust._bounds._variance` needs only that ``L L^T = Kc + E`` with
Kc the Gram matrix of the support points' kernel sections in the RKHS H of
the cross-covariance kernel and E PSD: f_X^T S f_X = max_c (2 c^T f_X -
c^T (Kc + E) c) <= max_c (2 <f, g_c> - ||g_c||^2) <= ||f||^2. Here H is the
RKHS of K_aug without WhiteKernels, Kc its Gram matrix at the pairs
(x_{n_i}, o_i), and E = diag(sigma_{o_i}^2 + alpha) plus the latent white
parts ``(W[o, l] W[o, l]^T) * white_l * [n_i = n_j]`` (block-diagonal over
rows, each block rank one and PSD). The default bounds use the lemma
only through ``q(x) = ||L^-1 r_p(x)||^2 <= k_pp(x, x)`` (input rounding:
``||L^-1 r|| <= sqrt(k(x, x))``), which therefore holds here.

*The local RKHS bound (high signal-to-noise) applies; the polynomial form
does not.* The local bound of :mod:`skgprobust._bounds._variance` ("High
signal-to-noise") is an argument about one RKHS H, one point's section
k_x in it and the operator P = sum_ij S_ij k_{z_i} (x) k_{z_j} built from S
= (L L^T)^-1 on the support points' sections. For output p take H = the
RKHS of K_aug^c (K_aug with every latent's WhiteKernel parts removed: the
cross-covariance, what ``k_l(x, X)`` returns), the support points z_i =
(x_{n_i}, o_i) and k_x = K_aug^c(., (x, p)). Then, step by step:

* r_p(x)_i = k_{p o_i}(x, x_{n_i}) = <k_{z_i}, k_x> (reproducing property)
  and q(x) = ||L^-1 r_p(x)||^2 = <k_x, P k_x>.
* *0 <= P <= I.* L L^T = Kc + E with Kc = [K_aug^c(z_i, z_j)] (the Gram
  matrix of the sections) and E PSD: the per-output noise diag(sigma_{o_i}^2
  + alpha) (a per-output diagonal is still a non-negative diagonal: the
  lemma never needed it to be a multiple of I) plus the latent white parts
  (block diagonal over rows, rank-one PSD blocks). So for f in H,
  f_X^T S f_X = max_c (2 c^T f_X - c^T (Kc + E) c) <= max_c (2 <f, g_c> -
  ||g_c||^2) <= ||f||^2, g_c = sum_i c_i k_{z_i}: the single-kernel proof
  word for word (f_X = (f(z_i))_i; nothing in it uses that the z_i share an
  output).
* *kappa0, H0 and the remainder are those of k_pp.* Every quantity of the
  expansion that is not an inner product with a support section is an
  inner product of sections of the *same* output p: ||k_x||^2 = k_pp(x, x),
  <k_x, k_x'> = k_pp(x, x') = sum_l W_pl^2 k_l^c(x, x'), ||k_x - k_x0 -
  Dk_x0[u]||^2 and <d_j k_x0, d_k k_x0> are the single-kernel formulas for
  the kernel k_pp, a sum of non-negative multiples (W_pl^2 a_t) of RBF /
  Matern terms and constants when every latent reaching p is (stationary,
  C^2 away from Matern 1.5's documented h^1.5 case, <k_x0, Dk_x0[u]> = 0
  by symmetry). So the :class:`SmoothCovariance` of output p has the terms
  (W_pl^2 a_t, kind, l_t) and constant sum_l W_pl^2 c_l.
* *The support sections are mixtures.* Only the Jacobian J of r_p(x) at x0
  and the values r_p(x0) enter through the support points: column j of J is
  (<k_{z_i}, d_j k_x0>)_i, computed as sum_l c_pl[i] d_j k_l(x0, x_{n_i}).
  These are bounded only by Cauchy-Schwarz, |k_{p o}(x, x')| <=
  sqrt(k_pp(x, x) k_oo(x', x')), not by k_pp(x, x): that matters for the
  rounding margins only, through the two constants the SmoothCovariance
  carries (``_variance`` module doc, "Mixed sections"): each computed entry
  r_p(x)_i errs by <= (2d + 44 + 2T + value_terms) u value_scale with
  value_scale = max_i sum_l |W_pl W_{o_i l}| kappa0_l (kappa0_l = k_l^c(x,
  x) of latent l) and value_terms = L + 2 (the latent kernel value of
  latent l errs by <= (2d + 44 + 2 T_l) u kappa0_l, the single-kernel
  claim; then c_pl = fl(W_pl W_{o_i l}), the product fl(c k) and the sum of
  at most L products add (L + 2) u of sum_l |c_pl[i]| kappa0_l, first
  order), and the Jacobian's input rounding is weighted per support point
  by |W_{o_i l} / W_pl| (entry i of term t carries amplitude |W_pl
  W_{o_i l}| a_t), plus its own and the mixture's rounding (16 + value_terms)
  u relative to sum_t a_t w_ti sup|kappa_t'| / l_tj (cancellation between
  latents of different signs is not assumed away). Every other bound of the
  margins uses only ||L^-1 r_p(x)||^2 = q(x) <= (1 + rho) k_pp(x, x) = (1 + rho) kappa0 and
  ||L^-1 (r_p(x) - r_p(x0))|| <= ||k_x - k_x0||_H (the lemma) and the
  factor's constants (||L||abs, ||L^-1||, shared by the outputs).

A latent kernel outside that family (e.g. RationalQuadratic, Matern 0.5)
switches the local bound off for the outputs it reaches (W_pl != 0); the
other outputs keep it. The exact polynomial form is not used: its design
matrix would be that of k_pp, not of the cross-covariances (and the
composite kernel object :class:`_OutputCovariance` stays unknown to both
parsers: the SmoothCovariance is built here and passed to
:class:`~skgprobust._bounds._variance.LatentVariance` explicitly).

*Rounding.* The composite value ``r_p = sum_l fl(c_pl * k_l)`` adds L
products and L - 1 additions per support point to what a single-kernel
model evaluates: relative (L + 1) u of the summed magnitudes, which
``mag`` (the sum over latents and points of |w c k|) already bounds. The
mean bounds' margin ``margin_rtol(N, d) * mag`` is therefore computed with
N + L + 2 terms (the relaxations' ``mag`` is scaled by
``margin_rtol(N + L + 2, d) / margin_rtol(N, d)``), and so is the variance
margin (:meth:`_OutputVariance.margin`). Those relative constants do not
cover underflow: with tiny amplitudes (W_pl W_{o_i l} subnormal) each product
fl(c_pl k_l) and fl(W_pl^2) k_l(x, x) errs by up to 2^-1075 absolute (sums
of subnormals are exact), so :meth:`_OutputAdapter.rounding` adds
``SUBNORMAL`` per entry (the latents' own allowance is scaled by |c_pl|
there and vanishes) and the variance margin adds ``SUBNORMAL`` once (the
diagonal's L products and the N squares). Everything else (kernel values,
the triangular solve, sklearn-style sums) is the single-kernel situation the
margins were written for. ``predict`` evaluates the latent kernels with
sklearn's own ``kernel(X, X_train_)`` (what the adapters' bounds cover),
selects the support columns and combines them in the same order.

Not available: ``variance_bound="paper"`` (the QP/LP reference needs a
single stationary kernel), the exact polynomial variance form, and the
Bayesian (HMC) hyperparameter treatment of the seed.
"""

import copy
import numbers
import warnings

import numpy as np
from scipy.linalg import cho_solve, cholesky, lapack, solve_triangular
from scipy.linalg.lapack import dpotrs
from scipy.sparse import csr_matrix
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, clone
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Kernel, Matern, Product, Sum, WhiteKernel
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted, validate_data

from ._bounds._variance import LatentVariance, SmoothCovariance
from ._engine._api import RegressorBoundsMixin
from ._engine._common import check_bool, check_not_compound, quiet_feature_names
from ._engine._driver import RangeProblem
from ._engine._latent import BoundModel, LatentModel
from ._engine._objectives import StdObjective
from ._fp import margin_rtol
from ._hyperopt import run_optimizer
from .kernels import make_adapter
from .kernels._base import SUBNORMAL, WIDEN, KernelAdapter, Relaxation, TaylorModel

__all__ = ["MultiOutputGaussianProcessRegressor"]

_LOG_2PI = np.log(2.0 * np.pi)


# ---------------------------------------------------------------------------
# The composite kernel of one output (bounds side)
# ---------------------------------------------------------------------------


class _OutputCovariance:
    """``k_pp(x, x') = sum_l W_pl^2 k_l(x, x')``: the prior covariance of output
    p, as the variance bounds see ``adapter.kernel`` (``diag`` and
    ``is_stationary``). Deliberately not a sklearn Kernel: the parsers of the
    special variance forms must not mistake it for the cross-covariance
    (module doc)."""

    def __init__(self, kernels, wp):
        wp = np.asarray(wp, dtype=np.float64)
        self.kernels = [k for k, w in zip(kernels, wp) if w != 0]
        self.w2 = np.array([w * w for w in wp if w != 0])

    def diag(self, X):
        out = np.zeros(len(X))
        for k, w in zip(self.kernels, self.w2):
            out = out + w * np.asarray(k.diag(X), dtype=np.float64)
        return out

    def is_stationary(self):
        return all(k.is_stationary() for k in self.kernels)

    def __repr__(self):
        terms = " + ".join(f"{w:.3g} * {k!r}" for k, w in zip(self.kernels, self.w2))
        return f"LMCOutputCovariance({terms})"


def _scale_relaxation(rel, c):
    return Relaxation(rel.const, rel.alpha, rel.beta, rel.ilb, rel.mag * c, rel.score)


def _scale_taylor(tm, c):
    return None if tm is None else TaylorModel(tm.value, tm.grad, tm.diag, tm.M, tm.rem, tm.mag * c)


class _OutputAdapter(KernelAdapter):
    """Adapter of ``r_p(x) = sum_l coef[l] * k_l(x, Xs)`` (module doc).

    Parameters
    ----------
    kernel : _OutputCovariance
    Xs : ndarray of shape (N, d)
        The training input of each observed pair.
    adapters : list of KernelAdapter
        One per latent kernel, on Xs.
    coef : ndarray of shape (L, N)
        ``W_pl W_{o_i l}``.
    wp : ndarray of shape (L,)
        ``W_p.``; latents with ``W_pl = 0`` do not reach output p and are dropped.
    """

    nonnegative = False
    # The term magnitude A (KernelAdapter.value_ulps) is sum_l |c_l| A_l, not |r_p|.
    magnitude_is_value = False

    def __init__(self, kernel, Xs, adapters, coef, wp):
        super().__init__(kernel, Xs)
        keep = [l for l in range(len(adapters)) if wp[l] != 0]
        self.adapters = [adapters[l] for l in keep]
        self.coef = np.asarray(coef, dtype=np.float64)[keep]
        self.w2 = np.array([wp[l] * wp[l] for l in keep])
        # The LMC covariance sum_l W_pl W_ql k_l is PSD when every latent
        # kernel is (KernelAdapter.psd: the variance bounds' lemma needs it).
        self.psd = all(a.psd for a in adapters)
        N, d = self.Xs.shape
        # L more roundings per value than one kernel (module doc, "Rounding").
        self.mag_factor = margin_rtol(N + len(adapters) + 2, d) / margin_rtol(N, d)

    def values(self, X):
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros((len(X), len(self.Xs)))
        for a, c in zip(self.adapters, self.coef):
            out = out + a.values(X) * c
        return out

    def rkhs_increment(self, lo, hi):
        """sum_l W_pl^2 D_l: the query sections are those of k_pp = sum_l
        W_pl^2 k_l (module doc, "Mixed sections" of
        :mod:`skgprobust._bounds._variance`), whose feature map is (W_pl f_l)_l."""
        lo = np.atleast_2d(lo)
        D = np.zeros(len(lo))
        with np.errstate(over="ignore", invalid="ignore"):
            for a, w2 in zip(self.adapters, self.w2):
                D = D + w2 * a.rkhs_increment(lo, hi)
            D = D * (1.0 + 1e-12)
        return np.where(np.isnan(D), np.inf, D)

    def value_and_grad(self, X):
        X = np.asarray(X, dtype=np.float64)
        K = np.zeros((len(X), len(self.Xs)))
        G = np.zeros((len(X), len(self.Xs), X.shape[1]))
        for a, c in zip(self.adapters, self.coef):
            k, g = a.value_and_grad(X)
            K = K + k * c
            G = G + g * c[None, :, None]
        return K, G

    def interval(self, lo, hi):
        shape = (len(lo), len(self.Xs))
        klo, khi = np.zeros(shape), np.zeros(shape)
        for a, c in zip(self.adapters, self.coef):
            l, h = a.interval(lo, hi)
            klo = klo + np.minimum(c * l, c * h)
            khi = khi + np.maximum(c * l, c * h)
        return klo, khi

    def rounding(self, lo, hi):
        """``sum_l |c_l| rounding_l``, widened for its own float evaluation
        (``WIDEN``: L + 1 roundings of non-negative terms), plus ``SUBNORMAL``
        for the underflow of predict's products fl(c_l k~_l) (each errs by
        <= u |c_l k~_l| + 2^-1075: the relative part is in :meth:`value_ulps`
        and ``n_extra``, the absolute part in no relative constant; the sum
        of subnormal terms is exact). The latents' own ``SUBNORMAL`` is
        scaled by |c_l| here and vanishes when c_l is tiny (W_pl W_{o_i l}
        subnormal: sections of an output with amplitudes ~1e-160)."""
        out = np.zeros((len(lo), len(self.Xs)))
        for a, c in zip(self.adapters, self.coef):
            out = out + np.abs(c) * a.rounding(lo, hi)
        return out * WIDEN + SUBNORMAL

    def rounding_parts(self, lo, hi):
        """``(R, klo, khi, A)`` from the latents' parts: R = sum_l |c_l| R_l
        (bitwise :meth:`rounding`), the enclosure sum_l [min, max](c_l klo_l,
        c_l khi_l) and the term magnitude A = sum_l |c_l| A_l (the form
        :meth:`value_ulps` is relative to), each end rounded outward by the
        L-term sum's own rounding ((L + 1) u relative of the magnitudes)."""
        shape = (len(lo), len(self.Xs))
        R, klo, khi, A = np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape)
        for a, c in zip(self.adapters, self.coef):
            r, l, h, m = a.rounding_parts(lo, hi)
            R = R + np.abs(c) * r
            klo = klo + np.minimum(c * l, c * h)
            khi = khi + np.maximum(c * l, c * h)
            A = A + np.abs(c) * m
        R = R * WIDEN + SUBNORMAL  # as rounding(), bitwise
        slack = (len(self.adapters) + 2) * np.finfo(float).eps * np.maximum(A, np.maximum(np.abs(klo), np.abs(khi)))
        tiny = np.finfo(float).smallest_subnormal * (len(self.adapters) + 1)
        A = A * (1.0 + 4 * len(self.adapters) * np.finfo(float).eps) + tiny
        return R, klo - slack - tiny, khi + slack + tiny, A

    def diag(self, X):
        return self.kernel.diag(X)

    def value_ulps(self, d):
        """c_val of the composite value (:meth:`KernelAdapter.value_ulps`), the
        L + 2 extra roundings of the combination not included (the variance
        bounds add them: ``_OutputVariance.n_extra``; the mean bounds:
        ``mag_factor``): ``max_l c_l + 1`` over the kept latents.

        Proof. Entry i is ``sum_l c_l k_l(x, x_i)`` with ``c_l = W_pl
        W_{o_i l}`` (exact; its rounding, the products and the sum are the
        extra roundings). Latent l's value errs by at most ``rounding_l +
        c_l u A_l`` with ``A_l <= sqrt(k_l(x, x) k_l(x_i, x_i))`` (PSD leaves,
        :meth:`KernelAdapter.value_ulps`), and :meth:`rounding` carries
        ``sum_l |c_l| rounding_l``. The rest is ``<= max_l c_l u sum_l |W_pl|
        |W_{o_i l}| sqrt(k_l(x, x)) sqrt(k_l(x_i, x_i)) <= max_l c_l u
        sqrt(k_pp(x, x) k_{o_i o_i}(x_i, x_i))`` by Cauchy-Schwarz, the form
        the variance bounds use (``k_pp`` the output's diagonal, the support
        side bounded by the factor's rows). The + 1 covers the second-order
        terms. With no latent: 0 (every value is an exact zero)."""
        if not self.adapters:
            return 0.0
        return max(float(a.value_ulps(d)) for a in self.adapters) + 1.0

    def diag_ulps(self, d):
        """c_diag of ``k_pp(x, x) = sum_l fl(fl(W_pl^2) fl(k_l(x, x)))`` as
        :meth:`_OutputCovariance.diag` and ``predict`` compute it (same order):
        every term is >= 0 and errs by <= (c_l + 2) u relative (its latent's
        diagonal, the square, the product), the L' - 1 additions of
        non-negative terms by <= (L' - 1) u of the sum: ``max_l c_l + L' + 1``
        (L' kept latents), times (1 + 2^-20) for the second order."""
        if not self.adapters:
            return 0.0
        c = max(float(a.diag_ulps(d)) for a in self.adapters)
        return (c + len(self.adapters) + 1.0) * (1.0 + 2.0**-20)

    def diag_interval(self, lo, hi):
        dlo, dhi = np.zeros(len(lo)), np.zeros(len(lo))
        for a, w in zip(self.adapters, self.w2):
            l, h = a.diag_interval(lo, hi)
            dlo, dhi = dlo + w * l, dhi + w * h
        return dlo, dhi

    def relax(self, lo, hi, w):
        return self.linearise(lo, hi, w)[0]

    def taylor(self, lo, hi, w):
        return self.linearise(lo, hi, w)[1]

    def linearise(self, lo, hi, w):
        rel, tm = None, None
        for i, (a, c) in enumerate(zip(self.adapters, self.coef)):
            r, t = a.linearise(lo, hi, w * c)
            rel = r if rel is None else rel + r
            tm = t if i == 0 else (None if tm is None or t is None else tm + t)
        if rel is None:  # no latent reaches this output: r_p = 0
            B, d = lo.shape
            z = np.zeros(B)
            rel, tm = Relaxation(z, np.zeros((B, d)), np.zeros((B, d)), z, z, np.zeros((B, d))), None
        return _scale_relaxation(rel, self.mag_factor), _scale_taylor(tm, self.mag_factor)


class _OutputVariance(LatentVariance):
    """``var_p`` of one output: the shared factor's precomputations (inverse,
    spectrum, condition estimate) with this output's composite adapter; the
    rounding margin counts the L extra terms per value (module doc)."""

    # The adapter is output p's sections, not the support Gram's kernel:
    # _lemma_rho uses no noise credit (delta = 0) and kmax = max_i (L L^T)_ii.
    # The shared base is built with the Gram rounding adapter (_SharedFactor),
    # so its factor constants (rho, kappa) cover the Gram's rounding.
    _LEMMA_ADAPTER_IS_SUPPORT_KERNEL = False

    def __init__(self, adapter, L, col_scale=None, smooth="parse", n_extra=0):
        self.n_extra = n_extra
        super().__init__(adapter, L, col_scale, smooth=smooth)

    def _value_ulps(self, d):
        # The composite adapter's own constant (_OutputAdapter.value_ulps: the
        # latents' proven constants) plus the combination's roundings: each
        # Gram / section value is a sum over the latents of products with
        # fl(W W) coefficients, n_extra = L + 2 more roundings (module doc).
        return self.adapter.value_ulps(d) + self.n_extra

    def margin(self, scale, d):
        """The kappa-scaled margin with L + 2 more roundings per value, plus
        ``SUBNORMAL`` absolute: predict's k_pp(x, x) = sum_l fl(fl(W_pl^2)
        k_l(x, x)) has L products that may underflow (each <= 2^-1075
        beyond the relative ``diag_ulps``; sums of subnormals are exact), as
        may its N squares of the solve (<= 2^-1075 each), which no relative
        margin covers when k_pp(x, x) is tiny (amplitudes ~1e-160:
        margin(k_pp) is 0 in float). SUBNORMAL = 2^-1040 covers N + L + 2 <=
        2^34 such terms; the kernel values' own underflow is in the
        adapter's rounding (:meth:`_OutputAdapter.rounding`)."""
        return margin_rtol(self.n_support + self.n_extra, d) * self.kappa * scale + SUBNORMAL

    def _local_margins(self, *args, **kwargs):
        # The local bound's margin on sklearn's evaluation (skl) gets the same
        # absolute underflow allowance as margin() (its alternative).
        own, skl, a_box, own_n = super()._local_margins(*args, **kwargs)
        return own, skl + SUBNORMAL, a_box, own_n


def _output_smooth(kernels, W, p, outs, d):
    """The :class:`SmoothCovariance` of output p's sections (module doc, "The
    local RKHS bound"), or None when a latent reaching p is not of that form.

    Terms: every smooth term (a, kind, l) of latent l with ``W_pl != 0``, with
    amplitude ``W_pl^2 a`` (the kernel k_pp: kappa0, H0 and the remainder)
    and per-support-point weight ``|W_{o_i l} / W_pl|`` (entry i of r_p holds
    the term with amplitude ``|W_pl W_{o_i l}| a``: the Jacobian's input
    rounding); the value rounding is relative to ``value_scale = max_i sum_l
    |W_pl W_{o_i l}| kappa0_l`` with ``value_terms = L + 2`` more roundings
    (c_pl = fl(W_pl W_{o_i l}), the products with c_pl and the sum over
    latents)."""
    terms, weights, const = [], [], 0.0
    scale = np.zeros(len(outs))
    for l, k in enumerate(kernels):
        w = float(W[p, l])
        if w == 0:
            continue
        sc = SmoothCovariance.parse(k, d)
        if sc is None:
            return None
        wi = np.abs(W[outs, l] / w)
        for a, kind, ls in sc.terms:
            terms.append((w * w * a, kind, ls))
            weights.append(wi)
        const += w * w * sc.const
        scale += np.abs(w * W[outs, l]) * sc.kappa0
    if not terms:
        return None
    value_scale = float(np.max(scale, initial=0.0)) * (1.0 + 4.0 * len(kernels) * np.finfo(float).eps)
    return SmoothCovariance(terms, const, d, value_scale=value_scale, value_terms=len(kernels) + 2,
                            weights=weights)


class _SharedFactor:
    """Builds the factor-dependent part of the variance bounds once per fit
    and hands out one :class:`_OutputVariance` per output."""

    def __init__(self, L, gram_adapter=None, n_extra=0):
        self.L = L
        self.gram_adapter = gram_adapter
        self.n_extra = n_extra
        self._base = None

    def variance(self, adapter, n_extra, smooth=None):
        if self._base is None:
            # The composite kernel is unknown to the parsers of the special
            # forms: the base gets only the factor's precomputations; the
            # local RKHS bound is switched on per output with its own
            # SmoothCovariance (module doc), the polynomial form never.
            # The factor's constants (the lemma's rho, kappa) bound the
            # rounding of the support Gram itself, entry (i, j) a sum of
            # |W_{o_i l} W_{o_j l}| times latent l's rounding: the Gram
            # adapter's coefficients max_p |W_pl| |W_{o_j l}| are >= those
            # for every i, and >= every output's own, so the shared
            # constants hold for every output (not only the first asked).
            base_adapter = adapter if self.gram_adapter is None else self.gram_adapter
            self._base = _OutputVariance(base_adapter, self.L, None, smooth=None,
                                         n_extra=max(n_extra, self.n_extra))
            if self._base.smooth is not None or self._base.poly is not None:  # pragma: no cover
                raise RuntimeError("The composite LMC kernel must not parse as a special covariance form.")
        if smooth is not None:
            # Per-factor constants of the componentwise margins (gam, ||L||abs, ||L^-1||).
            self._base.ensure_solve_setup()
        var = copy.copy(self._base)
        var.adapter = adapter
        var.n_extra = n_extra
        var.smooth = smooth
        return var


class _OutputLatent(LatentModel):
    """One output of the LMC as a latent model (see module doc); its variance
    object comes from the fit's shared factor."""

    def variance(self, method="default"):
        if method != "default":
            raise ValueError(
                "The multi-output model supports only the default variance bounds "
                f"(variance_bound='paper' needs a single stationary kernel), got {method!r}."
            )
        var = self._variances.get(method)
        if var is None:
            shared, n_extra, smooth = self._lmc
            var = shared.variance(self.adapter, n_extra, smooth)
            self._variances[method] = var
        return var


class _MultiOutputBoundModel(BoundModel):
    """Regression bound model with one latent model per output."""

    def mean_pairs(self):
        def build():
            fs = [m.mean_objective(0) for m in self.latents]
            return [(f, f.negated()) for f in fs]

        return self._cached("mean_pairs", build)


# ---------------------------------------------------------------------------
# The likelihood
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Batched Gram matrices and Gaussian log likelihoods (the likelihood at many
# hyperparameter vectors in one call: log_marginal_likelihood with a 2-D
# theta, and the hyperparameter sampler of skgprobust.active, which also uses
# them for sklearn's single-output GaussianProcessRegressor). An ensemble
# sampler evaluates dozens of vectors per step; one sklearn kernel call per
# vector costs more in Python overhead than the linear algebra at the sizes
# of active learning. The fitted factor L_ (which predict and the certified
# bounds use) is built from sklearn's own kernel formulas (_Problem.gram_sklearn),
# as before; the batched Grams only score hyperparameters.
# ---------------------------------------------------------------------------


def sq_diffs(X):
    """Squared coordinate differences ``(X_i - X_j)^2`` of the rows of X, shape (n, n, d)."""
    X = np.asarray(X, dtype=np.float64)
    return (X[:, None, :] - X[None, :, :]) ** 2


def _formula_gram(kernel, D2, T):
    """Batched K(X) by the kernels' formulas, or None when a part is not covered."""
    S, n = T.shape[0], D2.shape[0]
    if type(kernel) in (Sum, Product):
        k1 = len(kernel.k1.theta)
        a = _formula_gram(kernel.k1, D2, T[:, :k1])
        b = None if a is None else _formula_gram(kernel.k2, D2, T[:, k1:])
        if b is None:
            return None
        return a + b if type(kernel) is Sum else a * b
    if type(kernel) is ConstantKernel:
        v = np.exp(T[:, 0]) if T.shape[1] else np.full(S, float(kernel.constant_value))
        return np.broadcast_to(v[:, None, None], (S, n, n))
    if type(kernel) is WhiteKernel:
        v = np.exp(T[:, 0]) if T.shape[1] else np.full(S, float(kernel.noise_level))
        return v[:, None, None] * np.eye(n)[None]
    if type(kernel) in (RBF, Matern):
        nu = float(kernel.nu) if type(kernel) is Matern else np.inf
        if nu not in (0.5, 1.5, 2.5, np.inf):
            return None
        d = D2.shape[2]
        if T.shape[1]:
            ls = np.exp(T)
        else:
            ls = np.broadcast_to(np.asarray(kernel.length_scale, dtype=np.float64), (S, np.size(kernel.length_scale)))
        ls = np.broadcast_to(ls, (S, d)) if ls.shape[1] == 1 else ls
        r = np.dot(1.0 / (ls * ls), D2.reshape(n * n, d).T).reshape(S, n, n)  # squared scaled distances
        if nu == np.inf:
            r *= -0.5
            return np.exp(r, out=r)
        np.sqrt(r, out=r)
        if nu != 0.5:
            r *= np.sqrt(3.0) if nu == 1.5 else np.sqrt(5.0)
        e = np.negative(r)
        np.exp(e, out=e)
        if nu == 0.5:
            return e
        if nu == 1.5:
            r += 1.0
        else:  # 1 + r + r^2 / 3 = 1 + r (1 + r / 3)
            t = r * (1.0 / 3.0)
            t += 1.0
            r *= t
            r += 1.0
        r *= e
        return r
    return None


def batched_gram(kernel, X, T, D2=None):
    """``kernel.clone_with_theta(t)(X)`` for every row t of T, shape (S, n, n).

    Sums and products of ConstantKernel, WhiteKernel, RBF and Matern (nu in
    0.5, 1.5, 2.5, inf; isotropic or ARD) are evaluated by their formulas
    (sklearn's ``__call__`` with ``Y=None``), vectorised over the batch; any
    other kernel theta by theta through sklearn.
    Both agree to rounding (~1e-15 relative). Only these exact classes
    take the formula route; a subclass may change the formula.

    Parameters
    ----------
    kernel : sklearn kernel
    X : ndarray of shape (n, d)
        The inputs.
    T : ndarray of shape (S, len(kernel.theta))
        Hyperparameter vectors in sklearn's coordinates (``kernel.theta``).
    D2 : ndarray of shape (n, n, d), optional
        :func:`sq_diffs` of X, when the caller caches it.

    Returns
    -------
    K : ndarray of shape (S, n, n)
    """
    T = np.asarray(T, dtype=np.float64).reshape(len(T), -1)
    K = _formula_gram(kernel, sq_diffs(X) if D2 is None else D2, T)
    if K is None:
        return np.array([np.asarray(kernel.clone_with_theta(t)(X), dtype=np.float64) for t in T]).reshape(
            len(T), len(X), len(X))
    return np.array(K)


def cholesky_batch(K):
    """Lower Cholesky factors of a batch of matrices.

    Parameters
    ----------
    K : ndarray of shape (S, N, N)

    Returns
    -------
    Lc : ndarray of shape (S, N, N)
        Lower factors (zeros where ``ok`` is False).
    ok : ndarray of bool, shape (S,)
        Whether ``K[s]`` was numerically positive definite (a finite factor).
    """
    S, N = K.shape[0], K.shape[1]
    try:
        if S == 1:  # scipy's LAPACK, as sklearn's GaussianProcessRegressor (the fitted factor L_)
            Lc = cholesky(K[0], lower=True, check_finite=False)[None]
        else:
            Lc = np.linalg.cholesky(K)
        ok = np.ones(S, dtype=bool)
    except (np.linalg.LinAlgError, ValueError):
        Lc, ok = np.zeros((S, N, N)), np.zeros(S, dtype=bool)
        for s in range(S):
            try:
                Lc[s] = np.linalg.cholesky(K[s])
                ok[s] = True
            except (np.linalg.LinAlgError, ValueError):
                pass
    bad = ~np.isfinite(Lc).reshape(S, -1).all(axis=1)
    if bad.any():
        ok &= ~bad
        Lc[bad] = 0.0
    return Lc, ok


def gaussian_lml_from_cholesky(Lc, ok, y, return_beta=False):
    """``log N(y | 0, K_s)`` from the factors of :func:`cholesky_batch`.

    ``-1/2 y^T beta - sum log diag L - N/2 log(2 pi)`` with ``beta = K^-1 y =
    L^-T L^-1 y`` per matrix (sklearn's formula); ``-inf`` where ``ok`` is
    False or the value is not finite.

    Parameters
    ----------
    Lc : ndarray of shape (S, N, N)
    ok : ndarray of bool, shape (S,)
    y : ndarray of shape (N,)
        Target values.
    return_beta : bool, default=False
        Also return the (S, N) solutions beta (NaN where not ok).

    Returns
    -------
    lml : ndarray of shape (S,)
    beta : ndarray of shape (S, N), only with ``return_beta``
    """
    S, N = len(Lc), len(y)
    out = np.full(S, -np.inf)
    betas = np.full((S, N), np.nan) if return_beta else None
    for s in np.flatnonzero(ok):
        if S == 1:  # scipy's cho_solve, as sklearn's GaussianProcessRegressor
            beta = cho_solve((Lc[0], True), y, check_finite=False)
        else:  # the same LAPACK solve (potrs) without scipy's per-call overhead; Lc[s].T is L^T in Fortran order
            beta = dpotrs(Lc[s].T, y, lower=0)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            v = -0.5 * y @ beta - np.log(np.diagonal(Lc[s])).sum() - 0.5 * N * _LOG_2PI
        if np.isfinite(v):
            out[s] = v
        if return_beta:
            betas[s] = beta
    return (out, betas) if return_beta else out


def gaussian_lml_batch(K, y):
    """``log N(y | 0, K_s)`` for each matrix of the batch K (S, N, N); ``-inf``
    where ``K_s`` is not numerically positive definite."""
    Lc, ok = cholesky_batch(K)
    return gaussian_lml_from_cholesky(Lc, ok, y)


def _selection(rows, n):
    """Sparse (N, n) matrix E with E[i, rows[i]] = 1."""
    N = len(rows)
    return csr_matrix((np.ones(N), (np.arange(N), rows)), shape=(N, n))


class _Problem:
    """Training data and parameter layout of one fit.

    The parameter vector is ``[theta of latent kernel 0, ..., theta of latent
    kernel L-1, W.ravel() (unless fixed), log noise variances (unless
    fixed)]``; kernel thetas are sklearn's (log-transformed, free
    hyperparameters only).
    """

    def __init__(self, X, rows, outs, y, P, kernels, W, W_fixed, W_bounds, noise, noise_fixed, noise_bounds, jitter):
        self.X, self.rows, self.outs, self.y = X, rows, outs, y
        self.n, self.N, self.P = len(X), len(rows), P
        self.kernels, self.W, self.noise = list(kernels), np.asarray(W, float), np.asarray(noise, float)
        self.L = len(self.kernels)
        self.W_fixed, self.noise_fixed = W_fixed, noise_fixed
        self.W_bounds, self.noise_bounds = W_bounds, noise_bounds
        self.jitter = jitter
        self.sizes = [len(k.theta) for k in self.kernels]
        self.E = None if (self.N == self.n and np.array_equal(rows, np.arange(self.n))) else _selection(rows, self.n)

    # -- packing -----------------------------------------------------------
    def pack(self, kernels, W, noise):
        parts = [k.theta for k in kernels]
        if not self.W_fixed:
            parts.append(np.asarray(W, float).ravel())
        if not self.noise_fixed:
            parts.append(np.log(noise))
        return np.concatenate(parts) if parts else np.empty(0)

    def unpack(self, theta):
        """(kernels, W, noise) at one parameter vector."""
        blocks, W, noise = self.split(np.asarray(theta, dtype=np.float64)[None])
        kernels = [k.clone_with_theta(b[0]) if s else k for k, b, s in zip(self.kernels, blocks, self.sizes)]
        return kernels, np.array(W[0]), np.array(noise[0])

    def bounds(self):
        parts = [k.bounds for k in self.kernels if len(k.theta)]
        if not self.W_fixed:
            parts.append(np.tile(np.asarray(self.W_bounds, float), (self.P * self.L, 1)))
        if not self.noise_fixed:
            parts.append(np.tile(np.log(np.asarray(self.noise_bounds, float)), (self.P, 1)))
        return np.vstack(parts) if parts else np.empty((0, 2))

    def split(self, T):
        """Per-latent kernel thetas (S, size_l), W (S, P, L) and noise (S, P)
        of a batch of parameter vectors T (S, dim)."""
        S, i = T.shape[0], 0
        blocks = []
        for s in self.sizes:
            blocks.append(T[:, i:i + s])
            i += s
        if self.W_fixed:
            W = np.broadcast_to(self.W, (S,) + self.W.shape)
        else:
            W = T[:, i:i + self.P * self.L].reshape(S, self.P, self.L)
            i += self.P * self.L
        noise = np.broadcast_to(self.noise, (S, self.P)) if self.noise_fixed else np.exp(T[:, i:i + self.P])
        return blocks, W, noise

    # -- the model: ONE implementation of the LMC likelihood ------------------
    def _assemble(self, grams, W, noise):
        """K (S, N, N) of the observed pairs from the latent Grams on the
        pairs (S, N, N) each, W (S, P, L) and noise (S, P)."""
        S = W.shape[0]
        K = np.zeros((S, self.N, self.N))
        tmp = np.empty_like(K)
        for l, Kr in enumerate(grams):
            w = W[:, self.outs, l]
            np.multiply(w[:, :, None], w[:, None, :], out=tmp)  # (w w^T) * K_l, as the unbatched form
            tmp *= Kr
            K += tmp
        idx = np.arange(self.N)
        K[:, idx, idx] += noise[:, self.outs] + self.jitter
        return K

    def _pair_grams(self, kernel, T):
        """The latent Gram ``kernel(X)`` on the observed pairs, (S, N, N), at
        the kernel thetas T (S, size). When every training row is observed
        once (N = n) the pairs are a permutation of the rows and the Gram is
        evaluated on them directly; otherwise on the rows, then gathered."""
        if self.N == self.n:
            if not hasattr(self, "_D2"):
                self._Xp = self.X[self.rows]
                self._D2 = sq_diffs(self._Xp)
            return batched_gram(kernel, self._Xp, T, self._D2)
        if not hasattr(self, "_D2"):
            self._D2 = sq_diffs(self.X)
            self._flat = (self.rows[:, None] * self.n + self.rows[None, :]).ravel()
        G = batched_gram(kernel, self.X, T, self._D2)
        return G.reshape(len(G), -1)[:, self._flat].reshape(len(G), self.N, self.N)

    def gram_batch(self, T):
        """K (S, N, N) at a batch of parameter vectors T (S, dim)."""
        blocks, W, noise = self.split(T)
        return self._assemble([self._pair_grams(k, b) for k, b in zip(self.kernels, blocks)], W, noise)

    def gram_sklearn(self, kernels, W, noise, eval_gradient=False):
        """K (1, N, N) at one parameter set with the latent Grams from the
        kernels' own ``__call__`` (sklearn's formulas; with
        ``eval_gradient`` also their derivatives): the gradient path and the
        fitted factor ``L_``. Returns (K, latent Grams on the pairs, their
        derivatives or None)."""
        grams, dgrams = [], []
        for k in kernels:
            if eval_gradient:
                Kl, dKl = k(self.X, eval_gradient=True)
            else:
                Kl, dKl = k(self.X), None
            Kl = np.asarray(Kl, dtype=np.float64)
            grams.append((Kl if self.E is None else Kl[np.ix_(self.rows, self.rows)])[None])
            dgrams.append(dKl)
        K = self._assemble(grams, np.asarray(W, dtype=np.float64)[None], np.asarray(noise, dtype=np.float64)[None])
        return K, grams, dgrams

    #: Matrix entries per chunk of :meth:`lml_batch` (cache-sized pieces of the batch).
    _CHUNK = 1 << 17

    def lml_batch(self, T):
        """Log marginal likelihoods (S,) at the parameter vectors T (S, dim);
        -inf where K is not positive definite. Evaluated in chunks of
        parameter vectors (one chunk's matrices fit in cache)."""
        T = np.asarray(T, dtype=np.float64)
        c = max(1, self._CHUNK // max(self.N * self.N, 1))
        return np.concatenate([gaussian_lml_batch(self.gram_batch(T[i:i + c]), self.y)
                               for i in range(0, len(T), c)]) if len(T) else np.empty(0)

    def lml(self, theta, eval_gradient=False):
        """Log marginal likelihood at one theta (the batched computation with
        S = 1) and, with ``eval_gradient``, its analytic gradient (the Gram
        and its derivatives from sklearn's kernels, assembled and factorised
        by the same code as :meth:`lml_batch`)."""
        theta = np.asarray(theta, dtype=np.float64)
        if not eval_gradient:
            return float(self.lml_batch(theta[None])[0])
        kernels, W, noise = self.unpack(theta)
        K, grams, dgrams = self.gram_sklearn(kernels, W, noise, eval_gradient=True)
        Lc, ok = cholesky_batch(K)
        value, beta = gaussian_lml_from_cholesky(Lc, ok, self.y, return_beta=True)
        value, beta, Lc = value[0], beta[0], Lc[0]
        if not np.isfinite(value):
            return -np.inf, np.zeros_like(theta)
        Kinv, info = lapack.dpotri(Lc, lower=1)
        if info != 0:
            return -np.inf, np.zeros_like(theta)
        Kinv = np.tril(Kinv)
        M = np.outer(beta, beta) - (Kinv + np.tril(Kinv, -1).T)
        grads = []
        for l, dKl in enumerate(dgrams):
            if dKl.shape[2] == 0:
                continue
            w = W[self.outs, l]
            MC = M * np.outer(w, w)
            G = MC if self.E is None else np.asarray((self.E.T @ np.asarray(self.E.T @ MC).T).T)
            grads.append(0.5 * np.einsum("ij,ijk->k", G, dKl))
        if not self.W_fixed:
            gW = np.empty((self.P, self.L))
            for l, Kr in enumerate(grams):
                T = (M * Kr[0]) @ W[self.outs, l]
                gW[:, l] = np.bincount(self.outs, T, minlength=self.P)
            grads.append(gW.ravel())
        if not self.noise_fixed:
            grads.append(0.5 * noise * np.bincount(self.outs, np.diag(M), minlength=self.P))
        return float(value), (np.concatenate(grads) if grads else np.empty(0))


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------


def _check_bounds_param(value, name, positive):
    if isinstance(value, str):
        if value != "fixed":
            raise ValueError(f"{name} must be 'fixed' or a pair (low, high), got {value!r}.")
        return "fixed"
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be 'fixed' or a pair (low, high), got {value!r}.") from None
    if not low < high or (positive and not (0 < low and np.isfinite(high))):
        raise ValueError(f"{name} must satisfy {'0 < ' if positive else ''}low < high, got {value!r}.")
    return (low, high)


def _check_noise_level(value, n_outputs):
    """The initial noise variances: a positive finite scalar or one per
    output, as an array of shape (n_outputs,). Another length was refused
    only by numpy's broadcasting (an unclear message), and a length-1 array
    was broadcast to every output of a multi-output fit."""
    try:
        arr = None if isinstance(value, str) else np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or not (arr.ndim == 0 or arr.shape == (n_outputs,)):
        shape = "?" if arr is None else arr.shape
        raise ValueError(
            f"noise_level must be a scalar or an array with one entry per output (n_outputs={n_outputs}), "
            f"got {value!r} (shape {shape})."
        )
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"noise_level must be positive and finite, got {value!r}.")
    return np.broadcast_to(arr, (n_outputs,)).copy()


class MultiOutputGaussianProcessRegressor(RegressorBoundsMixin, MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Multi-output GP regression (linear model of coregionalisation) with
    partially observed outputs and certified robustness bounds.

    ``f(x) = W g(x)``: P outputs mixed by ``W`` (P, L) from L independent
    latent GPs with sklearn kernels, per-output Gaussian noise. Y entries that
    are NaN are not observed: only the observed (input, output) pairs enter
    the likelihood. Latent kernel hyperparameters, W and the noise variances
    are fitted by maximising the log marginal likelihood (analytic
    gradients). ``W="identity"`` gives P independent GPs.

    :meth:`prediction_range` and :meth:`certify` give certified bounds of
    each output's predictive mean / standard deviation over boxes and prove
    delta-robustness of the mean across outputs; they hold for the numbers
    :meth:`predict` returns (see the module documentation of
    ``skgprobust._multioutput`` for the proof).

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Kernel of every latent GP (cloned per latent; each latent gets its own
        hyperparameters). None: ``RBF(1.0)`` (amplitudes live in W).
    n_latent : int, default=None
        Number L of latent GPs. None: ``len(kernels)`` if given, else the
        number of outputs P (as in the seed paper).
    kernels : list of sklearn kernels, default=None
        One kernel per latent GP (instead of ``kernel``).
    W : array-like of shape (n_outputs, n_latent), "identity" or None, default=None
        Initial mixing matrix. None: from the principal components of the
        (pairwise-complete) output covariance, deterministic. "identity":
        ``W = I`` held fixed (independent GPs; needs L = P).
    W_bounds : "fixed" or pair of float, default=(-1e5, 1e5)
        Bounds of each W entry during optimisation; "fixed" keeps W.
    noise_level : float or array-like of shape (n_outputs,), default=None
        Initial per-output noise variance sigma_p^2 (in the units of the
        normalised targets when ``normalize_y``). None: 10% of each output's
        observed variance (clipped into ``noise_level_bounds``).
    noise_level_bounds : "fixed" or pair of float, default=(1e-5, 1e5)
        Bounds of the noise variances; "fixed" keeps ``noise_level``.
    alpha : float, default=1e-10
        Added to the diagonal of the training covariance (jitter), as in
        sklearn's GaussianProcessRegressor.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        As in sklearn: a callable ``optimizer(obj_func, initial_theta,
        bounds) -> (theta_opt, func_min)`` minimising ``obj_func(theta,
        eval_gradient=True)``; None keeps the initial parameters.
    n_restarts_optimizer : int, default=0
        Extra optimiser runs from random starts (kernel and noise
        hyperparameters log-uniform within their bounds, W Gaussian at the
        scale of the targets); the best log marginal likelihood wins.
    normalize_y : bool, default=False
        Standardise each output by the mean and std of its observed values.
    copy_X_train : bool, default=True
        Store a copy of the training inputs (otherwise a reference).
    warm_start : bool, default=False
        Refit from the previously fitted kernels, W and noise (same number of
        outputs and latents) instead of the initial values.
    random_state : int, RandomState instance or None, default=None
        Seeds the restarts.

    Attributes
    ----------
    kernels_ : list of sklearn kernels
        The fitted latent kernels.
    W_ : ndarray of shape (n_outputs, n_latent)
    noise_level_ : ndarray of shape (n_outputs,)
        Fitted noise variances (normalised units when ``normalize_y``).
    X_train_ : ndarray of shape (n_rows, n_features)
        Training inputs with at least one observed output.
    Y_train_ : ndarray of shape (n_rows, n_outputs)
        Their targets (NaN = not observed).
    observed_ : tuple (rows, outputs) of int arrays of length N
        The observed pairs, output by output: the order of ``alpha_`` and
        ``L_``.
    L_ : ndarray of shape (N, N)
        Lower Cholesky factor of the covariance of the observed pairs.
    alpha_ : ndarray of shape (N,)
        ``K^-1 y`` (normalised targets).
    log_marginal_likelihood_value_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has feature names.
    n_outputs_ : int
    n_latent_ : int

    Notes
    -----
    Shapes: ``predict(X)`` is (n, P) ((n,) when fitted on a 1-D y);
    ``return_std=True`` adds the per-output std of the same shape;
    ``return_cov=True`` adds the (n, P, P) covariance of the outputs at each
    input (not the covariance across inputs, unlike sklearn's GPR).

    Examples
    --------
    >>> import numpy as np
    >>> from skgprobust._multioutput import MultiOutputGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, (30, 1))
    >>> Y = np.column_stack([np.sin(2 * X[:, 0]), np.sin(2 * X[:, 0]) + 0.5 * X[:, 0]])
    >>> Y[::2, 1] = np.nan                      # output 1 observed at half the inputs
    >>> mo = MultiOutputGaussianProcessRegressor(n_latent=2, random_state=0).fit(X, Y)
    >>> mean, std = mo.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3, 2), (3, 2))
    >>> r = mo.prediction_range(X[:1], gamma=0.05)
    >>> bool(np.all(r.min_lower <= mo.predict(X[:1])))
    True
    """

    _fitted_attributes = ("X_train_", "alpha_")

    # certify / prediction_range / explain: RegressorBoundsMixin's
    # (skgprobust/_engine/_api.py), with these docstring parts; its hooks are
    # _predict_values and _range_problem below.
    _method_docs = {
        "certify": """\
Prove ``||mean(x) - mean(x*)||_norm <= delta`` over the box around each row.

delta-robustness of the predictive mean vector across the outputs
(paper Prop. 13). Each output's worst deviation is bounded
separately, so with norm 1 or 2 the proof is sufficient, not
necessary (such rows may stay "unknown").""",
        "certify_result": "``bound`` is a proven upper bound of the worst deviation.",
        "prediction_range": """\
Certified range of each output's predictive mean or std over the
box around each row.""",
        "statistic": """\
statistic : {"mean", "std"}, default="mean"
    The predictive mean per output, as :meth:`predict` returns it, or
    the predictive std, as ``predict(return_std=True)`` returns it.""",
        "range_result": "Arrays of shape (n_samples, n_outputs).",
        "explain": """\
Per-feature sensitivity of one output's predictive mean, with certified bounds.

The paper's Delta metric (Sec. 7.4) on the mean of output ``target``
(about ``2 gamma d mean_target / d x_i`` for small gamma): exactly
:meth:`RobustGaussianProcessRegressor.explain <skgprobust.RobustGaussianProcessRegressor.explain>`.""",
    }

    def __init__(
        self,
        kernel=None,
        *,
        n_latent=None,
        kernels=None,
        W=None,
        W_bounds=(-1e5, 1e5),
        noise_level=None,
        noise_level_bounds=(1e-5, 1e5),
        alpha=1e-10,
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        normalize_y=False,
        copy_X_train=True,
        warm_start=False,
        random_state=None,
    ):
        self.kernel = kernel
        self.n_latent = n_latent
        self.kernels = kernels
        self.W = W
        self.W_bounds = W_bounds
        self.noise_level = noise_level
        self.noise_level_bounds = noise_level_bounds
        self.alpha = alpha
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.normalize_y = normalize_y
        self.copy_X_train = copy_X_train
        self.warm_start = warm_start
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    # -- fitting -------------------------------------------------------------
    def _latent_kernels(self, L):
        if self.kernels is not None:
            if self.kernel is not None:
                raise ValueError("Give either kernel (shared by every latent) or kernels (one per latent), not both.")
            ks = list(self.kernels)
            if len(ks) != L:
                raise ValueError(f"kernels has {len(ks)} entries but n_latent is {L}.")
        else:
            base = RBF(1.0) if self.kernel is None else self.kernel
            ks = [base] * L
        for k in ks:
            if not isinstance(k, Kernel):
                raise ValueError(f"Latent kernels must be sklearn kernels, got {k!r}.")
            check_not_compound(k)
        return [clone(k) for k in ks]

    def _n_latent(self, P):
        if self.n_latent is not None:
            L = self.n_latent
            if not isinstance(L, numbers.Integral) or isinstance(L, bool) or L < 1:
                raise ValueError(f"n_latent must be a positive integer or None, got {L!r}.")
            if self.kernels is not None and len(self.kernels) != L:
                raise ValueError(f"kernels has {len(self.kernels)} entries but n_latent is {L}.")
            return int(L)
        if self.kernels is not None:
            return len(self.kernels)
        if isinstance(self.W, np.ndarray) or (self.W is not None and not isinstance(self.W, str)):
            return np.asarray(self.W).shape[1] if np.ndim(self.W) == 2 else P
        return P

    @staticmethod
    def _pca_init(Y, L):
        """Deterministic W from the pairwise-complete covariance of Y."""
        P = Y.shape[1]
        obs = ~np.isnan(Y)
        Yc = np.where(obs, Y - np.nanmean(Y, axis=0), 0.0)
        counts = obs.T.astype(float) @ obs.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            C = np.where(counts > 1, (Yc.T @ Yc) / np.maximum(counts - 1, 1), 0.0)
        var = np.diag(C).copy()
        var = np.where(np.isfinite(var) & (var > 0), var, 1.0)
        C[np.diag_indices(P)] = var
        lam, V = np.linalg.eigh(0.5 * (C + C.T))
        lam, V = lam[::-1], V[:, ::-1]
        floor = 0.05 * var.mean()
        W = np.zeros((P, L))
        k = min(L, P)
        W[:, :k] = V[:, :k] * np.sqrt(0.9 * np.maximum(lam[:k], floor))
        if L > P:  # extra latents: small, fixed, not all zero (a zero column is a saddle)
            W[:, P:] = 0.1 * np.sqrt(var.mean()) * np.random.RandomState(0).normal(size=(P, L - P))
        return W

    def fit(self, X, y):
        """Fit the LMC to X and the (partially observed) targets y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples, n_outputs) or (n_samples,)
            Targets; NaN marks an output that was not observed at that row.
            Every output needs at least one observed value; rows with no
            observed output are dropped.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        for name in ("normalize_y", "copy_X_train", "warm_start"):
            check_bool(getattr(self, name), name)
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=1)
        Y = check_array(
            y, ensure_2d=False, dtype=np.float64, ensure_all_finite="allow-nan", input_name="y", ensure_min_samples=1
        )
        if Y.ndim > 2:
            raise ValueError(f"y must be 1-D or 2-D, got shape {Y.shape}.")
        check_consistent_length(X, Y)
        self._y_1d = Y.ndim == 1
        Y = Y.reshape(len(Y), -1)
        if np.isinf(Y).any():
            raise ValueError("Input y contains infinity or a value too large for dtype('float64').")
        obs = ~np.isnan(Y)
        empty = np.flatnonzero(~obs.any(axis=0))
        if empty.size:
            raise ValueError(
                f"Input y contains NaN: output column(s) {empty.tolist()} have no observed value; "
                "every output needs at least one observation."
            )
        keep = obs.any(axis=1)
        X, Y, obs = X[keep], Y[keep], obs[keep]
        n, P = Y.shape
        L = self._n_latent(P)

        if not isinstance(self.alpha, numbers.Real) or not np.isfinite(self.alpha) or self.alpha < 0:
            raise ValueError(f"alpha must be a non-negative finite number, got {self.alpha!r}.")
        if not isinstance(self.n_restarts_optimizer, numbers.Integral) or self.n_restarts_optimizer < 0:
            raise ValueError(f"n_restarts_optimizer must be a non-negative integer, got {self.n_restarts_optimizer!r}.")

        # Normalisation per output over the observed values.
        if self.normalize_y:
            mean = np.array([Y[obs[:, p], p].mean() for p in range(P)])
            std = np.array([Y[obs[:, p], p].std() for p in range(P)])
            std = np.where(std > 10 * np.finfo(float).eps * np.maximum(np.abs(mean), 1.0), std, 1.0)
        else:
            mean, std = np.zeros(P), np.ones(P)
        Yn = (Y - mean) / std

        # Observed pairs, output by output (the seed's ordering).
        outs, rows = np.nonzero(obs.T)
        yv = Yn[rows, outs]

        # Initial parameters.
        warm = self.warm_start and hasattr(self, "W_") and self.W_.shape == (P, L)
        kernels = [clone(k) for k in self.kernels_] if warm else self._latent_kernels(L)
        if isinstance(self.W, str):
            if self.W != "identity":
                raise ValueError(f"W must be an array, 'identity' or None, got {self.W!r}.")
            if L != P:
                raise ValueError(f"W='identity' needs n_latent == n_outputs ({P}), got {L}.")
            W0, W_fixed, W_bounds = np.eye(P), True, None
        else:
            W_bounds = _check_bounds_param(self.W_bounds, "W_bounds", positive=False)
            W_fixed = W_bounds == "fixed"
            if warm:
                W0 = self.W_.copy()
            elif self.W is None:
                W0 = self._pca_init(Yn, L)
            else:
                W0 = np.asarray(self.W, dtype=np.float64)
                if W0.shape != (P, L):
                    raise ValueError(f"W must have shape (n_outputs, n_latent) = ({P}, {L}), got {W0.shape}.")
                if not np.all(np.isfinite(W0)):
                    raise ValueError("W must be finite.")
        noise_bounds = _check_bounds_param(self.noise_level_bounds, "noise_level_bounds", positive=True)
        noise_fixed = noise_bounds == "fixed"
        noise_given = None if self.noise_level is None else _check_noise_level(self.noise_level, P)
        if warm:
            noise0 = self.noise_level_.copy()
        elif self.noise_level is None:
            var = np.array([Yn[obs[:, p], p].var() if obs[:, p].sum() > 1 else 1.0 for p in range(P)])
            noise0 = 0.1 * np.where(var > 0, var, 1.0)
            if not noise_fixed:
                noise0 = np.clip(noise0, *noise_bounds)
        else:
            noise0 = noise_given

        prob = _Problem(X, rows, outs, yv, P, kernels, W0, W_fixed, W_bounds, noise0, noise_fixed, noise_bounds,
                        float(self.alpha))
        theta0 = prob.pack(kernels, W0, noise0)
        if self.optimizer is not None and len(theta0):
            def obj_func(theta, eval_gradient=True):
                if eval_gradient:
                    v, g = prob.lml(theta, True)
                    return -v, -g
                return -prob.lml(theta, False)

            bounds = prob.bounds()
            runs = [run_optimizer(self.optimizer, obj_func, theta0, bounds)]
            if self.n_restarts_optimizer > 0:
                kb = [k.bounds for k in kernels if len(k.theta)]
                if kb and not np.isfinite(np.vstack(kb)).all():
                    raise ValueError(
                        "Multiple optimizer restarts (n_restarts_optimizer>0) requires that all bounds are finite."
                    )
                rng = check_random_state(self.random_state)
                for _ in range(self.n_restarts_optimizer):
                    start = self._random_start(prob, rng, bounds, Yn, obs)
                    runs.append(run_optimizer(self.optimizer, obj_func, start, bounds))
            values = [r[1] for r in runs]
            theta = runs[int(np.argmin(values))][0]
        else:
            theta = theta0
        kernels, W, noise = prob.unpack(theta)
        # The fitted factor from sklearn's kernel formulas (as the gradient path), factorised and
        # scored by the same code as the batched likelihood.
        Lc, ok = cholesky_batch(prob.gram_sklearn(kernels, W, noise)[0])
        if not ok[0]:
            raise np.linalg.LinAlgError(
                "The covariance of the observed pairs is not positive definite. "
                "Try a larger alpha or noise_level_bounds with a larger lower bound."
            )
        self.log_marginal_likelihood_value_ = float(gaussian_lml_from_cholesky(Lc, ok, yv)[0])
        Lc = Lc[0]
        self.kernels_ = [copy.deepcopy(k) for k in kernels]
        self.W_ = np.array(W, dtype=np.float64)
        self.noise_level_ = np.array(noise, dtype=np.float64)
        self.X_train_ = np.copy(X) if self.copy_X_train else X
        self.Y_train_ = np.copy(Y)
        self.observed_ = (rows, outs)
        self.L_ = Lc
        self.alpha_ = cho_solve((Lc, True), yv, check_finite=False)
        self._y_train_mean, self._y_train_std = mean, std
        self.n_outputs_, self.n_latent_ = P, L
        # Per output p and latent l: c_pl[i] = W_pl W_{o_i l} (the composite
        # kernel's coefficients, module doc); the protocol's weights s_p beta.
        self._coef = self.W_[:, :, None] * self.W_[outs].T[None, :, :]
        self._weights = std[:, None] * self.alpha_[None, :]
        self.__dict__.pop("_problem_cache", None)
        # The parameter layout of this fit (W / noise fixed or not, their
        # bounds, the jitter), recorded so that set_params without a refit
        # cannot change theta_, bounds_ or log_marginal_likelihood (nor make
        # them differ between the model and its pickled / deep copies).
        W_fixed = isinstance(self.W, str) or isinstance(self.W_bounds, str)
        noise_fixed = isinstance(self.noise_level_bounds, str)
        self._layout_ = (
            W_fixed,
            None if W_fixed else self.W_bounds,
            noise_fixed,
            None if noise_fixed else self.noise_level_bounds,
            float(self.alpha),
        )
        self._problem()  # cached per fit
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

    def _random_start(self, prob, rng, bounds, Yn, obs):
        kernels = []
        for k in prob.kernels:
            if len(k.theta):
                b = k.bounds
                kernels.append(k.clone_with_theta(rng.uniform(b[:, 0], b[:, 1])))
            else:
                kernels.append(k)
        W = prob.W
        if not prob.W_fixed:
            scale = np.array([np.nanstd(Yn[obs[:, p], p]) if obs[:, p].sum() > 1 else 1.0 for p in range(prob.P)])
            scale = np.where(scale > 0, scale, 1.0)
            W = np.clip(rng.normal(size=(prob.P, prob.L)) * scale[:, None] / np.sqrt(prob.L), *prob.W_bounds)
        noise = prob.noise
        if not prob.noise_fixed:
            lb = np.log(prob.noise_bounds)
            noise = np.exp(rng.uniform(lb[0], lb[1], prob.P))
        return np.clip(prob.pack(kernels, W, noise), bounds[:, 0], bounds[:, 1])

    def _problem(self):
        """The likelihood problem of the fitted state (cached per fit; not pickled)."""
        cache = self.__dict__.get("_problem_cache")
        if cache is not None and cache[0] is self.alpha_:
            return cache[1]
        rows, outs = self.observed_
        P = self.n_outputs_
        yv = ((self.Y_train_ - self._y_train_mean) / self._y_train_std)[rows, outs]
        W_fixed, W_bounds, noise_fixed, noise_bounds, jitter = self._layout_
        prob = _Problem(self.X_train_, rows, outs, yv, P, self.kernels_, self.W_, W_fixed, W_bounds,
                        self.noise_level_, noise_fixed, noise_bounds, jitter)
        prob.theta = prob.pack(self.kernels_, self.W_, self.noise_level_)
        self._problem_cache = (self.alpha_, prob)
        return prob

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_problem_cache", None)
        return state

    @property
    def theta_(self):
        """The fitted parameter vector, ndarray of shape (n_params,).

        ``[theta of latent kernel 0, ..., theta of latent kernel L-1,
        W.ravel() (unless W is fixed: W="identity" or W_bounds="fixed"), log
        noise variances (unless noise_level_bounds="fixed")]``; kernel thetas
        are sklearn's (``kernels_[l].theta``: logarithms of the free
        hyperparameters). The layout of :meth:`log_marginal_likelihood`,
        :attr:`bounds_` and :meth:`clone_with_theta`.
        """
        check_is_fitted(self, self._fitted_attributes)
        return self._problem().theta.copy()

    @property
    def theta_layout_(self):
        """Which parameter groups the fit optimised, dict ``{"W_fixed": bool,
        "noise_fixed": bool}`` (recorded at fit: ``set_params`` without a
        refit does not change it); :attr:`theta_` holds W only when not
        ``W_fixed`` and the log noise variances only when not
        ``noise_fixed``."""
        check_is_fitted(self, self._fitted_attributes)
        return {"W_fixed": bool(self._layout_[0]), "noise_fixed": bool(self._layout_[2])}

    @property
    def bounds_(self):
        """Bounds of :attr:`theta_`, ndarray of shape (n_params, 2).

        The latent kernels' ``bounds`` (log scale, as sklearn's
        ``kernel.bounds``), ``W_bounds`` for each free entry of W and the
        logarithms of ``noise_level_bounds`` for each free noise variance:
        the box the optimiser searches.
        """
        check_is_fitted(self, self._fitted_attributes)
        return self._problem().bounds()

    def _check_theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        dim = len(self._problem().theta)
        if theta.ndim not in (1, 2) or theta.shape[-1] != dim:
            raise ValueError(f"theta must have shape ({dim},) or (n_thetas, {dim}), got {theta.shape}.")
        return theta

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """Log marginal likelihood of the observed pairs (normalised targets).

        sklearn's ``GaussianProcessRegressor.log_marginal_likelihood``,
        extended to a batch: a 2-D ``theta`` evaluates every row in one
        computation (each latent kernel's Gram for the whole batch at once,
        then one batched Cholesky factorisation), e.g. for the walkers of an
        ensemble sampler. A single theta is the same computation with one
        row.

        Parameters
        ----------
        theta : array-like of shape (n_params,) or (n_thetas, n_params), default=None
            Parameter vector(s) in the layout of :attr:`theta_`; None:
            :attr:`theta_` (returns ``log_marginal_likelihood_value_``). The
            values are not restricted to :attr:`bounds_`.
        eval_gradient : bool, default=False
            Also return the gradient with respect to theta (analytic; for a
            2-D theta evaluated row by row).

        Returns
        -------
        lml : float, or ndarray of shape (n_thetas,) for a 2-D theta
            ``-inf`` where the covariance of the observed pairs is not
            numerically positive definite.
        grad : ndarray of shape (n_params,) or (n_thetas, n_params)
            Only with ``eval_gradient=True``.
        """
        check_is_fitted(self, self._fitted_attributes)
        if theta is None:
            if eval_gradient:
                return self._problem().lml(self.theta_, True)
            return self.log_marginal_likelihood_value_
        theta = self._check_theta(theta)
        prob = self._problem()
        if theta.ndim == 1:
            return prob.lml(theta, eval_gradient)
        if eval_gradient:
            out = [prob.lml(t, True) for t in theta]
            return np.array([o[0] for o in out]), np.array([o[1] for o in out]).reshape(theta.shape)
        return prob.lml_batch(theta)

    def clone_with_theta(self, theta):
        """An unfitted copy whose initial parameters are ``theta``.

        The analogue of sklearn's ``Kernel.clone_with_theta`` for the whole
        model: the same constructor parameters, except ``kernels`` (the
        fitted latent kernels at theta's kernel part; ``kernel=None``),
        ``W`` (theta's W, or ``W_`` when W is fixed; ``"identity"`` stays)
        and ``noise_level`` (theta's noise variances, or ``noise_level_``
        when fixed). The parameter layout (:attr:`theta_`, :attr:`bounds_`)
        is unchanged. ``clone_with_theta(t).set_params(optimizer=None)
        .fit(X, y)`` is the model with the hyperparameters t on (X, y)
        (with ``normalize_y``, W and the noise variances are in the units
        of the normalised targets of the data it is fitted on).

        Parameters
        ----------
        theta : array-like of shape (n_params,)
            In the layout of :attr:`theta_`.

        Returns
        -------
        estimator : MultiOutputGaussianProcessRegressor
            Not fitted.
        """
        check_is_fitted(self, self._fitted_attributes)
        theta = self._check_theta(theta)
        if theta.ndim != 1:
            raise ValueError(f"theta must be one parameter vector, got shape {theta.shape}.")
        kernels, W, noise = self._problem().unpack(theta)
        W_fixed, W_bounds, noise_fixed, noise_bounds, jitter = self._layout_
        # The fit's layout, not the current parameters (set_params after the
        # fit must not change which entries theta holds).
        params = dict(kernel=None, kernels=[copy.deepcopy(k) for k in kernels], noise_level=np.array(noise),
                      noise_level_bounds="fixed" if noise_fixed else noise_bounds, alpha=jitter)
        if not isinstance(self.W, str):
            params["W"] = np.array(W)
            params["W_bounds"] = "fixed" if W_fixed else W_bounds
        return clone(self).set_params(**params)

    # -- prediction ------------------------------------------------------------
    def _cross(self, X):
        """r_p(x) for every output: (P, n, N), and the latent kernel diagonals (L, n)."""
        rows, _ = self.observed_
        n, N = len(X), len(rows)
        R = np.zeros((self.n_outputs_, n, N))
        for l, k in enumerate(self.kernels_):
            Kl = np.asarray(k(X, self.X_train_), dtype=np.float64)[:, rows]
            for p in range(self.n_outputs_):
                if self.W_[p, l] != 0:
                    R[p] = R[p] + Kl * self._coef[p, l]
        diags = np.array([np.asarray(k.diag(X), dtype=np.float64) for k in self.kernels_])
        return R, diags

    def _moments(self, X, what):
        """mean (n, P) and, per ``what``, std (n, P) or cov (n, P, P) or None
        (in chunks of rows: r_p(x) takes P * N floats per row)."""
        step = max(1, (1 << 22) // max(1, self.n_outputs_ * len(self.observed_[0])))
        if len(X) <= step:
            return self._moments_chunk(X, what)
        parts = [self._moments_chunk(X[i : i + step], what) for i in range(0, len(X), step)]
        mean = np.concatenate([m for m, _ in parts])
        return mean, (None if what is None else np.concatenate([e for _, e in parts]))

    def _moments_chunk(self, X, what):
        R, diags = self._cross(X)
        P = self.n_outputs_
        mean = np.column_stack([R[p] @ self._weights[p] + self._y_train_mean[p] for p in range(P)])
        if what is None:
            return mean, None
        Z = [solve_triangular(self.L_, R[p].T, lower=True, check_finite=False) for p in range(P)]
        s = self._y_train_std
        if what == "std":
            var = np.column_stack([
                self._kdiag(diags, p, p) - np.einsum("ij,ij->j", Z[p], Z[p]) for p in range(P)
            ])
            if np.any(var < 0):
                warnings.warn("Predicted variances smaller than 0. Setting those variances to 0.")
            return mean, s * np.sqrt(np.maximum(var, 0.0))
        cov = np.empty((len(X), P, P))
        for p in range(P):
            for q in range(p, P):
                c = s[p] * s[q] * (self._kdiag(diags, p, q) - np.einsum("ij,ij->j", Z[p], Z[q]))
                cov[:, p, q] = cov[:, q, p] = c
        return mean, cov

    def _kdiag(self, diags, p, q):
        """k_pq(x, x) = sum_l W_pl W_ql k_l(x, x), in the adapter's order."""
        out = np.zeros(diags.shape[1])
        for l in range(self.n_latent_):
            if self.W_[p, l] != 0 and self.W_[q, l] != 0:
                out = out + (self.W_[p, l] * self.W_[q, l]) * diags[l]
        return out

    def predict(self, X, return_std=False, return_cov=False):
        """Predictive mean (and std or covariance) of every output.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.
        return_std : bool, default=False
            Also return the predictive standard deviation of each output.
        return_cov : bool, default=False
            Also return the predictive covariance of the outputs at each input.

        Returns
        -------
        mean : ndarray of shape (n_samples, n_outputs) ((n_samples,) when
            fitted on a 1-D y)
        std : ndarray of the same shape, only with ``return_std=True``
            Latent-function std: the observation noise is not included (as
            sklearn's GPR without a WhiteKernel).
        cov : ndarray of shape (n_samples, n_outputs, n_outputs), only with
            ``return_cov=True``
        """
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self, self._fitted_attributes)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        what = "std" if return_std else ("cov" if return_cov else None)
        mean, extra = self._moments(X, what)
        if self._y_1d:
            mean = mean[:, 0]
            if what == "std":
                extra = extra[:, 0]
        return mean if what is None else (mean, extra)

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 per output over its *observed*
        entries (NaN in y = not observed), averaged over the outputs.

        Without NaN this is sklearn's ``r2_score(y, predict(X))``
        (``multioutput="uniform_average"``). Outputs with fewer than two
        observed entries are left out.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.
        y : array-like of shape (n_samples, n_outputs) or (n_samples,)
            True targets; NaN entries are left out.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        score : float
            R^2 of the observed entries, averaged over the outputs.
        """
        from sklearn.metrics import r2_score

        pred = self.predict(X)
        Y = check_array(y, ensure_2d=False, dtype=np.float64, ensure_all_finite="allow-nan", input_name="y")
        check_consistent_length(pred, Y)
        Y, pred = Y.reshape(len(Y), -1), pred.reshape(len(pred), -1)
        if Y.shape[1] != pred.shape[1]:
            raise ValueError(f"y has {Y.shape[1]} outputs, the model {pred.shape[1]}.")
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        scores = []
        for p in range(Y.shape[1]):
            ok = ~np.isnan(Y[:, p])
            if ok.sum() >= 2:
                scores.append(r2_score(Y[ok, p], pred[ok, p], sample_weight=None if w is None else w[ok]))
        return float(np.mean(scores)) if scores else float("nan")

    def _predict_values(self, X):
        """predict's mean as (n, P) for arrays of points (what the mean bounds are checked against)."""
        with quiet_feature_names():
            return self._moments(np.atleast_2d(np.asarray(X, dtype=np.float64)), None)[0]

    def _predict_std_values(self, X):
        """predict's std as (n, P) for arrays of points."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Predicted variances smaller than 0")
            return self._moments(np.atleast_2d(np.asarray(X, dtype=np.float64)), "std")[1]

    # -- certified bounds --------------------------------------------------------
    def _fit_token(self):
        return self.alpha_

    def _build_bound_model(self):
        rows, outs = self.observed_
        Xs = self.X_train_[rows]
        d = Xs.shape[1]
        adapters = [make_adapter(k, Xs) for k in self.kernels_]
        n_extra = self.n_latent_ + 2
        # Rounding of the support Gram (see _SharedFactor.variance). Every
        # latent that reaches some output is kept (wmax_l = max_p |W_pl| > 0):
        # with wp = W_[0], latents with W_0l = 0 were dropped from the Gram's
        # rounding (W = [[1e-6, 0], [0, 1]], inputs offset 1e7: shared rho
        # 1.8e-4 where output 1 needs 35).
        wmax = np.max(np.abs(self.W_), axis=0)
        gram_coef = wmax[:, None] * np.abs(self.W_[outs]).T
        gram_adapter = _OutputAdapter(_OutputCovariance(self.kernels_, wmax), Xs, adapters, gram_coef, wmax)
        shared = _SharedFactor(self.L_, gram_adapter, n_extra)
        latents = []
        for p in range(self.n_outputs_):
            wp = self.W_[p]
            cov = _OutputCovariance(self.kernels_, wp)
            adapter = _OutputAdapter(cov, Xs, adapters, self._coef[p], wp)
            m = _OutputLatent(Xs, self._weights[p][:, None], [self._y_train_mean[p]], [self._y_train_std[p]], cov,
                              L=self.L_, adapter=adapter)
            m._lmc = (shared, n_extra, _output_smooth(self.kernels_, self.W_, p, outs, d))
            latents.append(m)
        return _MultiOutputBoundModel("regression", latents)

    def _range_problem(self, statistic="mean", variance_bound="default"):
        """The :class:`RangeProblem` of a statistic: one column per output
        (a hook of RegressorBoundsMixin)."""
        bm = self._bound_model()
        if statistic == "mean":
            return RangeProblem(bm.mean_pairs(), self._predict_values)
        pairs = [(StdObjective(v, 1.0), StdObjective(v, -1.0)) for v in bm.variances(variance_bound)]
        return RangeProblem(pairs, self._predict_std_values, scale=self._y_train_std)
