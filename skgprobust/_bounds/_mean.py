"""Posterior-mean bounds over many boxes at once (paper Prop. 2).

An :class:`AffineMean` is one scalar objective ``f(x) = c + sum_i w_i k(x, x_i)``
(a latent mean, its negation, or a target's predictive mean). ``bound`` returns,
for B boxes in one vectorised call, a certified lower bound of f over each
box, the minimiser of the relaxation (a good point to evaluate) and the
per-coordinate split scores.

Soundness margin: every bound is exact in real arithmetic; floating-point
rounding is covered by subtracting ``margin_rtol(N, d) * (mag + |c|)``, where
``mag`` is the sum of absolute values of the terms added up and
``margin_rtol(N, d) = (8 (N + d) + 256) * 2**-53``. A sum of N float64 terms
errs by at most (N - 1) u sum|terms| (u = 2**-53, any summation order, BLAS
included); each term carries the adapter's proven relative rounding
(:meth:`~skgprobust.kernels.KernelAdapter.value_ulps` u of its magnitude,
<= 21 u for every leaf, c1 + c2 + 1 for products, 17 for powers; the
default budgets 200 of the constant's 256 and adds any excess); sklearn's
own predict has an error of the same kind, hence the factor 8 (2x headroom) and the
constant. For N = 1000, d = 11 the margin is 9.3e-13 relative. Errors of a
term that are not a bounded multiple of it (rounded inputs with large
offsets; a rounded distance, which moves an RBF value by ~ (phi / 2) (d + 2) u
of itself, unbounded for far points; a power k ** e, which amplifies its
base's relative rounding e-fold) are the adapter's absolute
:meth:`~skgprobust.kernels.KernelAdapter.rounding`, added as ``sum_i |w_i|
rounding_i``. An adapter
that proves a smaller constant for its own terms supplies it through
:meth:`~skgprobust.kernels.KernelAdapter.mean_rtol` (whose default is
``margin_rtol``; see that method for what the constant must cover).
"""

from dataclasses import dataclass

import numpy as np

from .._fp import UNIT_ROUNDOFF, margin_rtol



@dataclass
class BoxBound:
    """Lower bounds of an objective over B boxes.

    Parameters
    ----------
    lower : ndarray of shape (B,)
        Proven lower bound of the objective over each box.
    argmin : ndarray of shape (B, d)
        Minimiser of the relaxation that gave the bound (a candidate point).
    score : ndarray of shape (B, d)
        Split scores per coordinate (larger: splitting there helps more).
    """

    lower: np.ndarray  # (B,)
    argmin: np.ndarray  # (B, d) minimiser of the relaxation (a candidate point)
    score: np.ndarray  # (B, d) split scores


def minimise_separable(alpha, beta, h):
    """Minimise sum_j alpha_j u_j^2 + beta_j u_j over |u_j| <= h_j, per box.

    Parameters
    ----------
    alpha, beta : ndarray of shape (B, d)
        Quadratic and linear coefficients.
    h : ndarray of shape (B, d)
        Half-widths of the boxes.

    Returns
    -------
    minimum : ndarray of shape (B,)
        The minimum per box.
    u : ndarray of shape (B, d)
        A minimiser: per coordinate the better endpoint, or the vertex of a
        convex parabola when it is inside.
    """
    q_lo = alpha * h * h - beta * h
    q_hi = alpha * h * h + beta * h
    u = np.where(q_lo <= q_hi, -h, h)
    q = np.minimum(q_lo, q_hi)
    convex = alpha > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.clip(np.where(convex, -beta / (2 * alpha), 0.0), -h, h)
    qv = alpha * v * v + beta * v
    better = convex & (qv < q)
    return np.where(better, qv, q).sum(-1), np.where(better, v, u)


#: Iterations of the dual ascent of :func:`dual_quadratic_lower`.
_DUAL_ITERS = 12


def dual_quadratic_lower(A, g):
    """Lower bound of ``g . v + 1/2 v^T A v`` over the cube |v_j| <= 1, per box
    (A symmetric (B, d, d), g (B, d)), by Lagrangian (Shor) duality.

    Proof. For any lambda >= 0 (per coordinate) and every v in the cube,
    sum_j lambda_j (v_j^2 - 1) <= 0, so with P = A + 2 diag(lambda)::

        g.v + 1/2 v^T A v >= 1/2 v^T P v + g.v - sum_j lambda_j.

    For any vector y (an approximate minimiser, y ~ -P^-1 g), the identity
    1/2 v^T P v + g.v = 1/2 (v - y)^T P (v - y) + (g + P y).v - 1/2 y^T P y
    holds exactly, and 1/2 (v - y)^T P (v - y) >= 1/2 min(lam, 0)
    ||v - y||^2 >= 1/2 min(lam, 0) sum_j (1 + |y_j|)^2 for lam <= the
    smallest eigenvalue of P; (g + P y).v >= -sum_j |g + P y|_j. So::

        bound = -1/2 y^T P y - sum_j |(g + P y)_j| - sum_j lambda_j
                + 1/2 min(lam, 0) sum_j (1 + |y_j|)^2

    is a valid lower bound for *any* lambda >= 0 and y; lambda and y only
    decide how tight it is (no convergence needed). lam is the computed
    smallest eigenvalue lowered by 1e-12 sum |P_jl| (eigvalsh's backward
    error is a few d u ||P||). The evaluation of the bound itself (fewer than
    2 d + 8 operations per entry) is covered by subtracting 1e-12 of the
    magnitude of its terms (|y|^T |P| |y| / 2 + |g|.(1 + |y|) + |P||y|.1 +
    sum lambda): 1e-12 > (4 d + 32) u for d < 2000.

    lambda: the dual (concave in lambda) is ascended by a multiplicative
    update lambda_j <- lambda_j |y_j|^eta (its gradient in lambda_j is
    y_j^2 - 1, zero where |y_j| = 1), from lambda_j = |g_j| / 2 + the shift
    -lam_min(A) that makes P positive definite; a step that does not improve
    the dual value (or leaves P not positive definite) is undone and eta
    halved. The bound is valid whatever lambda and y the ascent ends with.

    Returns the bound (B,) and the clipped minimiser y (B, d) of the best step.
    """
    B, d = g.shape
    eye = np.eye(d)
    A0 = A + 0.0  # A + (+0.0): the off-diagonal entries of A + 2 lam I (see _shift_diagonal)
    absA = np.abs(A)
    lam_a = np.linalg.eigvalsh(A)[:, 0] - 1e-12 * absA.sum(axis=(1, 2))
    tiny = 1e-12 * (1.0 + absA.max(axis=(1, 2)))
    lam = np.maximum(np.maximum(-lam_a, 0.0)[:, None] + 0.5 * np.abs(g), tiny[:, None])
    best = np.full(B, -np.inf)
    best_lam, best_y = lam.copy(), np.zeros((B, d))
    eta = np.ones(B)
    for _ in range(_DUAL_ITERS):
        # The ascent only chooses lambda (Cholesky as the positive-definiteness
        # test, the dual value as the score); the bound is evaluated rigorously
        # once at the end, for the chosen lambda.
        P = _shift_diagonal(A, A0, lam, eye)
        ok = _positive_definite(P)
        if not ok.all():
            P[~ok] = eye  # (P is not used again in this step)
        y = -np.linalg.solve(P, g[:, :, None])[:, :, 0]
        with np.errstate(invalid="ignore", over="ignore"):
            val = 0.5 * (g * y).sum(-1) - lam.sum(-1)
        improved = ok & np.isfinite(val) & (val > best)
        best = np.where(improved, val, best)
        best_lam = np.where(improved[:, None], lam, best_lam)
        best_y = np.where(improved[:, None], y, best_y)
        # Worse (or not positive definite): back to the best lambda, shorter steps.
        eta = np.where(improved, np.minimum(eta * 1.5, 2.0), eta * 0.5)
        y_step = np.where(improved[:, None], np.abs(y), np.abs(best_y))
        base = np.where(improved[:, None], lam, best_lam)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step = np.exp(np.clip(eta[:, None] * np.log(np.maximum(y_step, 1e-300)), -3.0, 3.0))
        lam = np.maximum(base * step, tiny[:, None])
        lam = np.where(np.isfinite(lam), lam, best_lam)
    # Rigorous evaluation at the best lambda and its y (valid for any of them).
    lam, y = best_lam, np.where(np.isfinite(best_y), best_y, 0.0)
    P = _shift_diagonal(A, A0, lam, eye)
    Py = np.matmul(P, y[:, :, None])[:, :, 0]
    absP = np.abs(P)
    lp = np.linalg.eigvalsh(P)[:, 0] - 1e-12 * absP.sum(axis=(1, 2))
    ay = np.abs(y)
    with np.errstate(invalid="ignore", over="ignore"):
        val = -0.5 * (y * Py).sum(-1) - np.abs(g + Py).sum(-1) - lam.sum(-1) \
            + 0.5 * np.minimum(lp, 0.0) * ((1.0 + ay) ** 2).sum(-1)
        mag = 0.5 * (ay * np.matmul(absP, ay[:, :, None])[:, :, 0]).sum(-1) \
            + (np.abs(g) * (1.0 + ay)).sum(-1) + np.abs(Py).sum(-1) + lam.sum(-1)
        val = val - 1e-12 * mag
    return np.where(np.isfinite(val), val, -np.inf), np.clip(y, -1.0, 1.0)


try:  # the gufunc behind np.linalg.cholesky, without its raising errstate
    from numpy.linalg import _umath_linalg as _np_umath_linalg

    _CHOLESKY_LO = _np_umath_linalg.cholesky_lo
except (ImportError, AttributeError):  # pragma: no cover - other numpy layouts
    _CHOLESKY_LO = None


def _shift_diagonal(A, A0, lam, eye):
    """``A + 2.0 * lam[:, :, None] * eye`` (a new array), bit for bit, with
    fewer passes over the (B, d, d) arrays: for finite lam every off-diagonal
    entry is ``A_jl + (2 lam_j) * 0.0 = A_jl + (+0.0)``, i.e. ``A0 = A + 0.0``
    (computed once by the caller), and every diagonal entry is ``A_jj + (2
    lam_j) * 1.0 = A_jj + 2 lam_j``; otherwise (inf * 0 is NaN) the formula
    itself."""
    if not np.isfinite(lam).all():
        return A + 2.0 * lam[:, :, None] * eye
    P = A0.copy()
    idx = np.arange(A.shape[-1])
    P[:, idx, idx] = A[:, idx, idx] + 2.0 * lam
    return P


def _positive_definite(P):
    """Per box: does the Cholesky factorisation of P succeed (batched).

    The decision per matrix is exactly ``np.linalg.cholesky(P[b])``'s: that
    function is the gufunc ``cholesky_lo`` (LAPACK ``potrf`` per matrix, on
    its own copy of the matrix, so batching does not change any matrix's
    factorisation) under an errstate that raises when any matrix failed.
    Called directly with the invalid flag ignored, the gufunc fills a failed
    matrix's output with NaN, upper triangle included, and zeroes the upper
    triangle of a successful one (whatever its entries: ``potrf`` may
    "succeed" with NaN inside), so ``L[b, 0, -1]`` is NaN exactly for the
    failures. One batched call instead of one call per matrix once any box
    fails (10-class digits: 8480 -> 120 calls), and no second batched
    call to learn whether any failed. Without that gufunc (other
    numpy layouts), or for 1 x 1 matrices, the per-matrix loop decides.
    """
    if _CHOLESKY_LO is not None and P.ndim == 3 and P.shape[-1] >= 2 and P.dtype == np.float64:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore", under="ignore"):
            L = _CHOLESKY_LO(P, signature="d->d")
        return ~np.isnan(L[:, 0, -1])
    try:
        np.linalg.cholesky(P)
        return np.ones(len(P), dtype=bool)
    except np.linalg.LinAlgError:
        pass
    ok = np.ones(len(P), dtype=bool)
    for b in range(len(P)):
        try:
            np.linalg.cholesky(P[b])
        except np.linalg.LinAlgError:
            ok[b] = False
    return ok


def taylor_lower(tm, h, dual=False):
    """Lower bound of a :class:`~skgprobust.kernels.TaylorModel` over |u| <= h.

    The indefinite part 1/2 u^T M u gets two separable lower bounds, and the
    better one per box is used:

    * 1/2 lambda_min sum_j (u_j / h_j)^2, lambda_min the smallest eigenvalue
      of diag(h) M diag(h) (u = diag(h) v, |v_j| <= 1), lowered by a margin
      for its own rounding error;
    * 1/2 sum_j (M_jj - sum_{l != j} |M_jl| h_l / h_j) u_j^2, from
      |u_j u_l| <= (u_j^2 h_l / h_j + u_l^2 h_j / h_l) / 2;

    and, with ``dual=True`` (what :func:`affine_lower_parts` passes; the
    variance bounds keep the two cheaper ones), in d >= 8 dimensions (where
    both lose a term per coordinate), the
    whole quadratic (gradient, diagonal and M together) in v = u / h gets
    the Lagrangian dual bound :func:`dual_quadratic_lower`, which keeps the
    interplay of the gradient with M (the box minimiser of a gradient-
    dominated model is near a vertex, where the eigenvalue bound charges
    lambda_min on every coordinate). The largest of the three is used.

    A model with an attribute ``alt = (M_alt, rem_alt, mag_alt)`` (an
    equally valid model with the same value, gradient and diagonal:
    :meth:`~skgprobust.kernels.stationary.StationaryAdapter.taylor` in
    d >= 8, whose ``mag`` already covers ``mag_alt``) gets the dual bound
    of that model instead (the alternative's remainder is the tighter one
    where the dual matters; one dual ascent per box, for speed), except on
    rows flagged ``rkhs`` (the RKHS remainder,
    :meth:`~skgprobust.kernels.stationary.StationaryAdapter._rkhs_remainder`)
    whose remainder is at least rem_alt: there the model dominates its
    alternative (M >= M_alt) and gets the dual bound itself. The larger of
    that and the eigenvalue / Gershgorin bounds of the model is used.

    Parameters
    ----------
    tm : TaylorModel
        Value, gradient, matrix M and remainder per box, about the centres.
    h : ndarray of shape (B, d)
        Half-widths of the boxes.
    dual : bool, default=False
        Also try the Lagrangian dual bound (d >= 8).

    Returns
    -------
    lower : ndarray of shape (B,)
        The lower bound per box.
    u : ndarray of shape (B, d)
        The offset from the centre that minimises the bound's relaxation.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        A = tm.M * h[:, :, None] * h[:, None, :]
        finite = np.isfinite(A).all(axis=(1, 2))
        A = np.where(finite[:, None, None], A, 0.0)
        M = np.where(finite[:, None, None], tm.M, 0.0)
        lam = np.linalg.eigvalsh(A)[:, 0] - 1e-12 * np.abs(A).sum(axis=(1, 2))
        moving = h > 0
        hh = np.where(moving, h, 1.0)
        coef_eig = tm.diag + np.where(moving, 0.5 * lam[:, None] / (hh * hh), 0.0)
        Md = np.diagonal(M, axis1=1, axis2=2)
        off = np.matmul(np.abs(M), h[:, :, None])[:, :, 0] - np.abs(Md) * h
        coef_ger = tm.diag + np.where(moving, 0.5 * (Md - off / hh), 0.0)
        q1, u1 = minimise_separable(coef_eig, tm.grad, h)
        q2, u2 = minimise_separable(coef_ger, tm.grad, h)
        q = np.maximum(q1, q2)
        u = np.where((q2 > q1)[:, None], u2, u1)
        alt = getattr(tm, "alt", None)
        if dual and h.shape[1] >= 8 and alt is None:
            Ad = A + 2.0 * (tm.diag * h * h)[:, :, None] * np.eye(h.shape[1])
            qd, vd = dual_quadratic_lower(Ad, tm.grad * h)
            better = qd > q
            q = np.where(better, qd, q)
            u = np.where(better[:, None], vd * h, u)
        lower = tm.value + q + tm.rem
        if dual and alt is not None and h.shape[1] >= 8:
            # The same model with its remainder as a concave quadratic form
            # (M_alt, rem_alt), see StationaryAdapter._quadratic_remainder;
            # or, on rows whose remainder is the RKHS one
            # (StationaryAdapter._rkhs_remainder) and at least rem_alt, the
            # model itself: there it dominates the alternative (M >= M_alt,
            # rem >= rem_alt), so its dual bound is the one to compute.
            M_alt, rem_alt, _ = alt
            rk = getattr(tm, "rkhs", None)
            main = np.zeros(len(h), dtype=bool) if rk is None else np.asarray(rk, dtype=bool) & (tm.rem >= rem_alt)
            M2 = np.where(main[:, None, None], tm.M, M_alt)
            rem2 = np.where(main, tm.rem, rem_alt)
            A2 = M2 * h[:, :, None] * h[:, None, :] + 2.0 * (tm.diag * h * h)[:, :, None] * np.eye(h.shape[1])
            ok2 = np.isfinite(A2).all(axis=(1, 2)) & np.isfinite(rem2)
            qa, va = dual_quadratic_lower(np.where(ok2[:, None, None], A2, 0.0), tm.grad * h)
            lower_a = np.where(ok2, tm.value + qa + rem2, -np.inf)
            better = lower_a > lower
            u = np.where(better[:, None], va * h, u)
            lower = np.where(better, lower_a, lower)
    return np.where(finite & np.isfinite(lower), lower, -np.inf), u


def affine_lower(adapter, W, c, lo, hi, linearised=None):
    """Lower bounds of ``c + sum_i W[b, i] k(x, x_i)`` over each box b.

    The best of three valid bounds per box: interval, separable relaxation
    (Prop. 2) and second-order Taylor model (when the adapter has one), each
    lowered by the rounding margin.

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel over its N support points.
    W : ndarray of shape (B, N)
        One weight vector per box.
    c : float or ndarray of shape (B,)
        The constant.
    lo, hi : ndarray of shape (B, d)
        The boxes.
    linearised : tuple, default=None
        ``adapter.linearise(lo, hi, W)`` when the caller has computed it
        (the same boxes and weights; it is used instead of a second call).

    Returns
    -------
    BoxBound
        ``argmin`` minimises the relaxation that gave the bound: a good point
        at which to evaluate the function.
    """
    return affine_lower_parts([(adapter, W)], c, lo, hi, linearised=None if linearised is None else [linearised])


def affine_lower_parts(parts, c, lo, hi, separate=True, linearised=None, roundings=None):
    """Lower bounds of ``c + sum_p sum_i W_p[b, i] k_p(x, x_pi)`` over each box
    b: a sum of affine means in *different* kernels (or supports), bounded
    jointly; :func:`affine_lower` is the one-part case.

    Parameters
    ----------
    parts : list of (adapter, W)
        ``W`` of shape (B, N_p) for the adapter's N_p support points.
    c : float or ndarray of shape (B,)
    lo, hi : ndarray of shape (B, d)
    separate : bool, default=True
        Also take the sum of the parts' separate bounds (below); False saves
        their Taylor models' minimisation where the caller has another
        fallback.
    linearised : list of tuple, default=None
        Per part, ``adapter.linearise(lo, hi, W_p)`` already computed by the
        caller for these boxes and weights (else computed here), or another
        valid model of the same part (a :class:`Relaxation` and a
        :class:`TaylorModel` or None whose ``mag`` covers their rounding).
    roundings : list of ndarray, default=None
        Per part, ``adapter.rounding(lo, hi)`` already computed by the caller
        for these boxes (else computed here); it does not depend on the
        weights.

    Proof. Every adapter's relaxation (separable parabolas, interval bound,
    Taylor model) is a valid lower bound of its own part at every x of the
    box; the parts' lower bounds add up to a lower bound of the sum, and the
    summed separable parabolas (``Relaxation.__add__``) and Taylor models
    (``TaylorModel.__add__``: sums of the values, gradients, matrices and
    remainders) are minimised jointly, which keeps the correlation between
    the parts; the sum of the parts' separate best bounds (what
    :func:`affine_lower` gives each part alone) is also valid and is taken
    where larger, so the joint bound is never looser than the separate
    ones. This is what
    :class:`~skgprobust.kernels.composite.SumAdapter` does for ``k1 + k2``
    with one weight vector; here each part has its own weights.

    Rounding: part p's terms carry the relative error ``rtol_p`` of
    :func:`affine_lower` (``mean_rtol`` of its adapter, or
    ``margin_rtol(N_p, d)``) of its magnitude ``mag_p``; adding the P partial
    sums costs at most (P - 1) u of the total magnitude. So the margin is
    ``(max_p rtol_p + P u) * (sum_p mag_p + |c|)``, and the input rounding
    ``sum_p |W_p| . rounding_p`` is absolute, as in the one-part case (one
    part: exactly ``affine_lower``'s margin). The sum of the separate bounds
    gets the same relative margin of ``sum_p (mag of the relaxation and of
    the Taylor model of part p)``, which covers whichever each part used.
    """
    # float64 boxes (exact conversion; float32 centres and half-widths
    # would move the modelled box: kernels._base.as_boxes).
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    B, d = lo.shape
    c = np.broadcast_to(np.asarray(c, dtype=np.float64), (B,))
    h = 0.5 * (hi - lo)
    centre = 0.5 * (lo + hi)
    rtol, absolute, rel, tm, has_tm, own_sum = 0.0, 0.0, None, None, True, 0.0
    for k, (adapter, W) in enumerate(parts):
        # Relative rounding margin: margin_rtol(N, d) unless the adapter proves
        # a smaller constant for its terms (KernelAdapter.mean_rtol).
        mean_rtol = getattr(adapter, "mean_rtol", None)
        rtol = max(rtol, margin_rtol(W.shape[-1], d) if mean_rtol is None else mean_rtol(W.shape[-1], d))
        # Input rounding (large feature offsets): absolute, see KernelAdapter.rounding.
        E = adapter.rounding(lo, hi) if roundings is None else roundings[k]
        absolute = absolute + np.einsum("bi,bi->b", np.abs(W), E)
        r, t = adapter.linearise(lo, hi, W) if linearised is None else linearised[k]
        if separate and len(parts) > 1:  # this part's own best bound (before the margin)
            own = np.maximum(_valid(r.const + minimise_separable(r.alpha, r.beta, h)[0]), _valid(r.ilb))
            if t is not None:
                own = np.maximum(own, _valid(taylor_lower(t, h, dual=True)[0]))
            own_sum = own_sum + own
        rel = r if rel is None else rel + r
        has_tm = has_tm and t is not None
        tm = (t if tm is None else tm + t) if has_tm else None
    if len(parts) > 1:
        rtol = rtol + len(parts) * UNIT_ROUNDOFF
    qmin, u = minimise_separable(rel.alpha, rel.beta, h)
    with np.errstate(invalid="ignore", over="ignore"):
        lower = np.maximum(_valid(rel.const + qmin), _valid(rel.ilb)) - rtol * (rel.mag + np.abs(c))
    argmin = np.clip(centre + u, lo, hi)
    if tm is not None:
        lower_t, u_t = taylor_lower(tm, h, dual=True)
        with np.errstate(invalid="ignore", over="ignore"):
            lower_t = _valid(lower_t) - rtol * (tm.mag + np.abs(c))
        use_t = lower_t > lower
        argmin = np.where(use_t[:, None], np.clip(centre + u_t, lo, hi), argmin)
        lower = np.maximum(lower, lower_t)
    if separate and len(parts) > 1:
        # The sum of the parts' separate bounds: also valid, and better where
        # the parts' best relaxations differ (one part's Taylor model, another's interval).
        mag = rel.mag if tm is None else rel.mag + tm.mag  # >= sum_p of the magnitude each part used
        lower = np.maximum(lower, own_sum - rtol * (mag + np.abs(c)))
    with np.errstate(invalid="ignore", over="ignore"):
        lower = c + lower - absolute - 1e-300
    return BoxBound(_valid(lower), argmin, rel.score)


def _valid(v):
    """A candidate lower bound with every non-finite entry replaced by -inf.
    Overflow (kernel values or relaxation coefficients near 1e308) can make
    a candidate +inf or NaN, which must never win the maximum over
    candidates nor be returned: soundness hunt, session 27
    (``(RBF(0.0678) * C * C * C) ** 2.58``, c^e = 1e307: a lower bound of
    +inf where the function lies in [-1.75e306, -6.98e305]; ``C(1e307) *
    RBF`` the same)."""
    v = np.asarray(v, dtype=np.float64)
    return np.where(np.isfinite(v), v, -np.inf)


class AffineMean:
    """f(x) = c + sum_i w_i k(x, x_i) for one weight vector w (N,).

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel over its N support points.
    w : ndarray of shape (N,)
        The weights.
    c : float
        The constant.
    """

    def __init__(self, adapter, w, c):
        self.adapter = adapter
        self.w = np.asarray(w, dtype=np.float64)
        self.c = float(c)

    def negated(self):
        """The mean -f.

        Returns
        -------
        neg : AffineMean
            Weights and constant negated.
        """
        return AffineMean(self.adapter, -self.w, -self.c)

    def value(self, X):
        """f at the rows of X.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The points.

        Returns
        -------
        f : ndarray of shape (n,)
            The values.
        """
        return self.adapter.values(X) @ self.w + self.c

    def value_and_grad(self, X):
        """f and its gradient at the rows of X.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The points.

        Returns
        -------
        f : ndarray of shape (n,)
            The values.
        grad : ndarray of shape (n, d)
            The gradients.
        """
        K, dK = self.adapter.value_and_grad(X)
        return K @ self.w + self.c, np.einsum("nid,i->nd", dK, self.w)

    def bound(self, lo, hi):
        """Lower bound of f over each of the B boxes (see :func:`affine_lower`).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            The boxes.

        Returns
        -------
        BoxBound
            The bounds, candidate points and split scores.
        """
        W = np.broadcast_to(self.w, (len(lo), len(self.w)))
        return affine_lower(self.adapter, W, self.c, lo, hi)
