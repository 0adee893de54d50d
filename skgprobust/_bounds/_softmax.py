"""Certified bounds of softmax class probabilities of Gaussian latents (paper Sec. 5.2).

A multi-class GP gives, at an input x, m latent outputs f = (f_1, ..., f_m),
here independent: f ~ N(mu(x), diag(var(x))). The class probability is
``pi_c(x) = E[softmax(f)_c]``. Over an input box T the engine only knows
per-output intervals ``mu_j(x) in [mu_lo_j, mu_hi_j]`` and
``var_j(x) in [var_lo_j, var_hi_j]``. :func:`softmax_gaussian_bounds` returns,
from those intervals alone, numbers ``p_lo <= pi_c <= p_hi`` that hold for every
(mu, var) in the intervals.

Method (paper Props. 10-11 and Lemma 12, tightened)
---------------------------------------------------
1. **Latent grid.** Each latent output j gets its own partition of the real
   line into ``n_cells`` cells ``(-inf, e_0], (e_0, e_1], ..., (e_{n-2}, inf)``
   (two unbounded tails). The edges depend on the box's intervals (equal-mass
   and sqrt-density quantiles of a Gaussian around ``[mu_lo, mu_hi]``, plus
   two outer edges ``tail_sigmas`` standard deviations out); soundness does
   not depend on where they are.
2. **Cell and CDF bounds (Lemma 12).** For every cell, the exact infimum and
   supremum of ``P(a < f_j <= b)`` over the (mu, var) rectangle: the minimum
   sits at a corner, the maximum at ``mu* = clip((a + b) / 2)`` and
   ``var* = clip(Sigma_c(mu*))`` (paper's formula), with ``var = 0`` (a point
   mass) handled exactly. The same function with ``a = -inf`` bounds the CDF
   at each edge.
3. **Extreme distributions.** softmax_c is increasing in f_c and decreasing
   in every f_j, j != c (Prop. 10's proof), so on the product grid the cell
   infimum ``s_l`` (a corner) is monotone along every axis. By Abel summation
   a sum ``sum_l s_l P(cell l)`` only decreases when the CDF of f_c at the
   edges is raised and the CDFs of the other outputs are lowered. So the
   lower bound uses, for f_c, the pointwise *largest* CDF compatible with
   every cell and CDF bound (a difference-constraint system on a chain,
   solved exactly by a forward and a backward pass) and, for f_j, the
   pointwise *smallest* one; the upper bound the reverse. With independent
   outputs the joint cell mass is the product of these per-output masses
   (Prop. 11 with a diagonal covariance). This is the exact minimum of the
   discretised sum over all per-output mass vectors that satisfy the cell
   and CDF bounds, hence at least as tight as the paper's sum of separate
   per-cell minima and as a fractional-knapsack combination of the joint
   cell bounds.
4. **Combination.** The corner value is ``softmax_c(xi) = 1 / (1 + Y /
   exp(xi_c))`` with ``Y = sum_{j != c} exp(xi_j)``, so only the
   distribution of Y over the product grid is needed: it is built one output
   at a time (a "convolution" of atom lists). While it has at most
   ``n_lse + 1`` atoms it is exact (the full product grid of the paper);
   beyond that its atoms are rounded onto at most ``n_lse`` values (a
   geometric grid, merged into groups of equal sqrt-mass), *up* for the
   lower bound and *down* for the upper bound: softmax_c decreases in Y and
   a sum increases in each term, so rounding partial sums is sound. The
   direction of every rounding is checked by exact comparisons.

Cost. With ``n = n_cells``, per box and per class (twice: lower and upper
bound) the exact product costs ``n ** m`` corner evaluations and memory; with
rounding it costs about ``(m - 2) * n * n_lse + n * n_lse`` (linear in the
number of classes). Boxes are processed in chunks of bounded memory; a
request whose per-box working set exceeds ``max_elements`` raises ValueError.

Convergence. As the intervals shrink to a point and ``n_cells``,
``n_lse`` and ``tail_sigmas`` grow, the bounds converge to ``pi_c`` (paper
Thm. 14 remark): the cell bounds tend to the true cell masses, and the
first-order discretisation error is at most ``sum_l P(cell l) (sup - inf of
softmax_c on cell l)``.

Floating point. Everything above is exact in real arithmetic; the results
are widened outward by ``margin = 1e-12 + 2**-50 * (m * n_cells + n_lse +
scale)`` (``scale`` the largest magnitude of a finite grid edge of the box)
and clipped into [0, 1]. The rounding of the atoms onto the Lambda grid is
checked exactly (no reliance on the margin). Sum-to-one constraints
``p_hi_c <= 1 - sum_{j != c} p_lo_j`` (and symmetrically) tighten the result.

Only independent latent outputs (diagonal covariance) are supported: a full
covariance needs Prop. 11's conditional means and variances and is not
implemented.

A fixed node rule and its exact box bounds
------------------------------------------
:func:`node_rule_value` is a deterministic rule R(mu, var) = sum_s w_s
softmax(mu + sqrt(var) z_s) (fixed nodes and positive weights per m,
:func:`node_rule`); :func:`node_rule_bounds` and
:func:`node_rule_margin_lower` bound R itself over (mu, var) boxes with no
discretisation gap (exact at a point, first order in the width): per node
the latent vector lies in an exact interval box and softmax is monotone in
each coordinate. A model whose ``predict_proba`` *is* R (the softmax GP
classifier) certifies its own numbers with these; the enclosure above
(:func:`softmax_gaussian_bounds`) then only serves the a posteriori proof
of R's distance to the exact integral.
"""

import numbers

import numpy as np
from scipy.special import expit, ndtr, ndtri

from .._fp import UNIT_ROUNDOFF as _U

__all__ = [
    "softmax_gaussian_bounds",
    "softmax_gaussian_mc",
    "node_rule",
    "node_rule_value",
    "node_rule_bounds",
    "node_rule_margin_lower",
    "MAX_ABS_MEAN",
    "MAX_VAR",
]

_SQRT2PI = float(np.sqrt(2.0 * np.pi))

#: Absolute part of the outward floating-point margin.
MARGIN_ABS = 1e-12

#: Elements per temporary array when chunking boxes (bounds peak memory to a
#: few times 16 MiB).
_CHUNK_ELEMENTS = 2**21

#: Latent magnitudes accepted (beyond these, grid edges could overflow);
#: callers check them to answer [0, 1] instead of raising.
MAX_ABS_MEAN = 1e100
MAX_VAR = 1e200


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------


def _check_intervals(mu_lo, mu_hi, var_lo, var_hi):
    names = ("mu_lo", "mu_hi", "var_lo", "var_hi")
    arrs = []
    for name, a in zip(names, (mu_lo, mu_hi, var_lo, var_hi)):
        try:
            arr = np.asarray(a, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be an array of real numbers: {exc}") from None
        arrs.append(arr)
    for name, a in zip(names, arrs):
        if a.ndim not in (1, 2):
            raise ValueError(f"{name} must have shape (B, m) (or (m,) for one box), got {a.shape}.")
    shape = arrs[0].shape
    for name, a in zip(names[1:], arrs[1:]):
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape}, but mu_lo has shape {shape}: all four must match.")
    if shape[-1] < 2:
        raise ValueError(f"need m >= 2 latent outputs (classes), got m = {shape[-1]}.")
    for name, a in zip(names, arrs):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or infinite values.")
    lo, hi, vlo, vhi = arrs
    if np.any(lo > hi):
        raise ValueError("mu_lo > mu_hi for some entries: each mean interval must be [lo, hi] with lo <= hi.")
    if np.any(vlo < 0):
        raise ValueError("var_lo has negative entries: variances must be >= 0.")
    if np.any(vlo > vhi):
        raise ValueError("var_lo > var_hi for some entries: each variance interval must have lo <= hi.")
    if np.any(np.abs(lo) > MAX_ABS_MEAN) or np.any(np.abs(hi) > MAX_ABS_MEAN) or np.any(vhi > MAX_VAR):
        raise ValueError(f"latent means beyond +-{MAX_ABS_MEAN:g} or variances beyond {MAX_VAR:g} are not supported.")
    return arrs


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


# --------------------------------------------------------------------------
# One latent output: Gaussian interval probabilities and their extrema
# --------------------------------------------------------------------------


def _gauss_interval_prob(a, b, mu, sd):
    """P(a < f <= b) for f ~ N(mu, sd^2), element-wise (broadcasting).

    ``sd = 0`` gives the limit sd -> 0+ (1 inside (a, b), 1/2 on a non-empty
    cell's edge, 0 outside), *not* the point mass: the caller treats the
    point mass separately. Accurate in both tails: when both standardised
    edges are positive the difference is taken between upper-tail values.
    """
    pos = sd > 0
    sd_safe = np.where(pos, sd, 1.0)
    with np.errstate(invalid="ignore"):
        # inf - inf cannot occur: a, b may be infinite but mu is finite.
        za = np.where(pos, (a - mu) / sd_safe, np.sign(a - mu) * np.inf)
        zb = np.where(pos, (b - mu) / sd_safe, np.sign(b - mu) * np.inf)
    # sign(0) * inf is NaN: an edge exactly at the mean stands at z = 0.
    za = np.where(np.isnan(za), 0.0, za)
    zb = np.where(np.isnan(zb), 0.0, zb)
    p = np.where(za > 0, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
    return np.clip(p, 0.0, 1.0)


def _critical_var(a, b, mu):
    """The paper's Sigma_c(mu): the variance maximising P(a < f <= b) for a
    mean mu outside [a, b] (P is unimodal in the variance there).

    ``Sigma_c = (d2^2 - d1^2) / (2 log(d2 / d1))`` with d1 < d2 the distances
    from mu to the near and far edge. Infinite for half-infinite cells (P
    then increases with the variance). Arbitrary (0) where mu is inside.
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        right = mu > b
        d1 = np.where(right, mu - b, a - mu)
        d2 = np.where(right, mu - a, b - mu)
        outside = (d1 > 0) & (b > a)
        d1s = np.where(outside, d1, 1.0)
        d2s = np.where(outside, d2, 2.0)
        width = np.where(outside, d2s - d1s, 1.0)
        ratio = width / d1s
        # log(d2 / d1) without cancellation; log difference if the ratio overflows.
        log_ratio = np.where(np.isfinite(ratio), np.log1p(ratio), np.log(d2s) - np.log(d1s))
        sc = width * (d1s + d2s) / (2.0 * log_ratio)
        sc = np.where(np.isfinite(a) & np.isfinite(b), sc, np.inf)
    return np.where(outside, sc, 0.0)


def _cell_prob_bounds(a, b, mu_lo, mu_hi, var_lo, var_hi, left_closed=False):
    """Exact inf and sup of P(f in cell) over mu in [mu_lo, mu_hi] and
    var in [var_lo, var_hi], f ~ N(mu, var) (paper Lemma 12), broadcasting.

    The cell is (a, b], or [a, b) with ``left_closed``; ``a <= b`` may be
    infinite (a = -inf gives the CDF at b); ``a == b`` (an empty cell) gives
    0. The two conventions differ only for ``var = 0``, the point mass at mu.

    Why this is exact. For var > 0, P is unimodal and symmetric in mu about
    (a + b) / 2, and for fixed mu it is decreasing in var when mu is in
    [a, b] and unimodal in var (peak Sigma_c(mu)) when mu is outside; both
    are quasi-concave, so the infimum over the rectangle is at a corner
    (using the limit var -> 0+ at a var = 0 corner) and the supremum is at
    mu* = clip((a + b) / 2), var* = clip(Sigma_c(mu*)) (or var_lo when mu* is
    in [a, b]). On the var = 0 side the point-mass indicator of the convex
    cell is quasi-concave in mu as well, so its extremes are at the mean
    interval's ends (inf) or decided by an overlap test (sup).
    """
    sd_lo, sd_hi = np.sqrt(var_lo), np.sqrt(var_hi)
    corners = [_gauss_interval_prob(a, b, m_, s_) for m_ in (mu_lo, mu_hi) for s_ in (sd_lo, sd_hi)]
    cont_inf = np.minimum(np.minimum(corners[0], corners[1]), np.minimum(corners[2], corners[3]))
    cont_corner_max = np.maximum(np.maximum(corners[0], corners[1]), np.maximum(corners[2], corners[3]))

    with np.errstate(invalid="ignore"):
        mid = 0.5 * a + 0.5 * b  # +-inf for the tails; (a + b) / 2 could overflow
    mu_star = np.clip(mid, mu_lo, mu_hi)
    inside = (a <= mu_star) & (mu_star <= b)
    var_star = np.where(inside, var_lo, np.clip(_critical_var(a, b, mu_star), var_lo, var_hi))
    # The corners are feasible too: taking the max with them only guards
    # against rounding in Sigma_c.
    cont_sup = np.maximum(_gauss_interval_prob(a, b, mu_star, np.sqrt(var_star)), cont_corner_max)

    if left_closed:
        point_inf = (a <= mu_lo) & (mu_hi < b)  # every point mass in [a, b)
        point_sup = (a < b) & (mu_hi >= a) & (mu_lo < b)  # some point mass in [a, b)
    else:
        point_inf = (a < mu_lo) & (mu_hi <= b)  # every point mass in (a, b]
        point_sup = (a < b) & (mu_hi > a) & (mu_lo <= b)  # some point mass in (a, b]

    has_cont = var_hi > 0  # some var > 0 in the interval
    has_point = var_lo == 0  # var = 0 in the interval
    p_inf = np.where(has_cont, np.where(has_point, np.minimum(cont_inf, point_inf), cont_inf), point_inf)
    p_sup = np.where(has_cont, np.where(has_point, np.maximum(cont_sup, point_sup), cont_sup), point_sup)
    return p_inf.astype(np.float64), p_sup.astype(np.float64)


# --------------------------------------------------------------------------
# The latent grid and the extreme (stochastically smallest / largest) CDFs
# --------------------------------------------------------------------------


def _profile_quantiles(mu_lo, mu_hi, tau, levels):
    """Quantiles at ``levels`` (in (0, 1)) of the density equal to 1 on
    [mu_lo, mu_hi] and to exp(-d^2 / (2 tau^2)) at distance d outside it."""
    w = mu_hi - mu_lo
    side = tau * np.sqrt(np.pi / 2.0)  # mass of each Gaussian side
    total = w + 2.0 * side
    t = levels * total
    pos = tau > 0
    tau_safe = np.where(pos, tau, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_left = -tau_safe * ndtri(np.clip(t / (tau_safe * _SQRT2PI), 0.0, 0.5))
        d_right = -tau_safe * ndtri(np.clip((total - t) / (tau_safe * _SQRT2PI), 0.0, 0.5))
    return np.where(
        pos & (t < side),
        mu_lo - d_left,
        np.where(pos & (t > side + w), mu_hi + d_right, mu_lo + np.clip(t - side, 0.0, w)),
    )


def _latent_edges(mu_lo, mu_hi, sd_hi, n_cells, tail_sigmas):
    """Finite cell edges (B, m, n_cells - 1), sorted, per box and output.

    The two outer edges are ``mu_lo - k sd_hi`` and ``mu_hi + k sd_hi`` (k =
    tail_sigmas); the others are quantiles of a density flat on the mean
    interval with Gaussian sides of standard deviation ``sqrt(2) sd_hi``.
    For a point mean that density is sqrt(N(mu, sd_hi^2)): cell widths
    proportional to 1 / sqrt(density) minimise the first-order error
    sum_l P(cell l) * width_l (it beat equal-mass and uniform grids in our
    trials). With var_hi = 0 every edge is in [mu_lo, mu_hi] and the tails
    are empty; with a point mean and var_hi = 0 all edges are the mean.
    Soundness does not depend on the edges.
    """
    n_inner = n_cells - 3
    parts = [(mu_lo - tail_sigmas * sd_hi)[..., None], (mu_hi + tail_sigmas * sd_hi)[..., None]]
    if n_inner > 0:
        levels = np.arange(1, n_inner + 1) / (n_inner + 1.0)
        tau = np.sqrt(2.0) * sd_hi
        q = _profile_quantiles(mu_lo[..., None], mu_hi[..., None], tau[..., None], levels)
        parts.append(np.clip(q, parts[0], parts[1]))  # finite, inside the outer edges
    return np.sort(np.concatenate(parts, axis=-1), axis=-1)


def _extreme_cdf(edges, params, largest, left_closed):
    """Per-cell masses of the stochastically smallest (``largest`` CDF) or
    largest (smallest CDF) discrete distribution compatible with the
    Lemma 12 bounds, for every box and output.

    With cells ``C_0 = (-inf, e_0], C_k = (e_{k-1}, e_k], C_{n-1} = (e_{n-2},
    inf)`` (or all left-closed), Q_k = P(f in C_0 u ... u C_k) satisfies
    F_lo_k <= Q_k <= F_hi_k (CDF bounds) and p_lo_k <= Q_k - Q_{k-1} <=
    p_hi_k (cell bounds; Q_{-1} = 0, Q_{n-1} = 1). These are difference
    constraints on a chain: their solutions are closed under pointwise max
    and min, and the largest one is the shortest-path solution, found by a
    forward then a backward pass (symmetrically the smallest). The soundness
    argument only needs U >= the true Q (resp. L <= Q) with U a CDF; the
    monotone clean-up below only raises U (lowers L), so that holds even if
    rounding made the system slightly inconsistent.

    Returns the masses (B, m, n_cells) of the cells under U (or L).
    """
    B, m, E = edges.shape
    f_lo, f_hi = _cell_prob_bounds(-np.inf, edges, *params, left_closed=left_closed)
    a = np.concatenate([np.full((B, m, 1), -np.inf), edges], axis=-1)
    b = np.concatenate([edges, np.full((B, m, 1), np.inf)], axis=-1)
    c_lo, c_hi = _cell_prob_bounds(a, b, *params, left_closed=left_closed)
    if not largest:
        # Smallest CDF of f = 1 - largest CDF of the reflected variable; the
        # chain passes below are written for the largest CDF, so mirror the
        # bounds: Q >= F_lo  <=>  -Q <= -F_lo, and swap the cell bounds.
        f_hi, c_lo, c_hi = -f_lo, -c_hi, -c_lo
    Q = np.empty((B, m, E))
    prev = np.zeros((B, m))
    for k in range(E):  # forward: Q_k <= Q_{k-1} + p_hi_k
        prev = np.minimum(f_hi[..., k], prev + c_hi[..., k])
        Q[..., k] = prev
    nxt = np.ones((B, m)) if largest else -np.ones((B, m))
    for k in range(E - 1, -1, -1):  # backward: Q_k <= Q_{k+1} - p_lo_{k+1}
        nxt = np.minimum(Q[..., k], nxt - c_lo[..., k + 1])
        Q[..., k] = nxt
    if largest:
        Q = np.maximum.accumulate(np.clip(Q, 0.0, 1.0), axis=-1)
    else:
        Q = np.minimum.accumulate(np.clip(-Q, 0.0, 1.0)[..., ::-1], axis=-1)[..., ::-1]
    return np.diff(np.concatenate([np.zeros((B, m, 1)), Q, np.ones((B, m, 1))], axis=-1), axis=-1)


# --------------------------------------------------------------------------
# Combination: distribution of sum_{j != c} exp(xi_j) over the other outputs
# --------------------------------------------------------------------------

#: Floor of the exponentiated atoms that must not be underestimated (any
#: positive normal number works; it only matters for grids spanning more
#: than ~690 nats, where it loosens, never breaks, the bound).
_TINY = 1e-300


def _round_sums(y, w, n_grid, up, fine=4):
    """Round non-negative atoms y (B, A) with masses w onto at most
    ``n_grid`` values per box: up (every atom moves to a value >= it) or
    down (<= it).

    Two levels, both O(A): the finite positive atoms are first rounded onto
    a geometric grid of ``fine * n_grid`` points spanning them (checked by
    exact comparisons, so the direction holds in floating point), then
    consecutive fine bins are merged into ``n_grid`` groups of equal
    sqrt(mass), each group taking its largest (up) or smallest (down) fine
    value: cells ~ 1 / sqrt(density), as for the latent grid. +inf (when
    rounding up) and zero (down) keep a slot of their own; zeros rounding up
    join the grid, and +inf never occurs when rounding down (the upper bound
    sums cell infima, all <= 1).

    Returns (atoms, masses), each (B, n_grid + 1); groups without mass get
    the value +inf (up) or 0 (down).
    """
    B, A = y.shape
    K = n_grid
    F = fine * K
    rows = np.arange(B)[:, None]
    # Atoms of zero mass are irrelevant: they neither set the grid's span
    # nor a group's value (they go, with their zero mass, to the extra slot).
    ok = (y > 0) & np.isfinite(y) & (w > 0)
    any_ok = ok.any(axis=1, keepdims=True)
    lo = np.where(any_ok, np.min(np.where(ok, y, np.inf), axis=1, keepdims=True), 1.0)
    hi = np.where(any_ok, np.max(np.where(ok, y, 0.0), axis=1, keepdims=True), 1.0)
    log_lo = np.log(lo)
    span = np.log(hi) - log_lo
    collapsed = span <= 1e-9  # (nearly) one value: every atom to hi (up) or lo (down)
    step = np.where(collapsed, 1.0, span / (F - 1))
    grid = np.exp(log_lo + np.arange(F) * np.where(collapsed, 0.0, step))
    grid[:, :1] = lo
    grid[:, -1:] = hi
    grid = np.maximum.accumulate(grid, axis=1)
    grid = np.where(collapsed, hi if up else lo, grid)
    with np.errstate(divide="ignore"):
        r = np.where(ok, (np.log(np.where(ok, y, 1.0)) - log_lo) / step, 0.0)
    if up:
        idx = np.clip(np.ceil(r), 0, F - 1).astype(np.intp)
        idx = np.where(ok & (grid[rows, idx] < y), np.minimum(idx + 1, F - 1), idx)
        idx = np.where(ok & (grid[rows, idx] < y), F - 1, idx)  # grid[F - 1] = hi >= y
        slot = np.where(ok, idx, np.where((y == 0) & (w > 0), 0, F))  # zeros up to grid[0]; +inf last
    else:
        idx = np.clip(np.floor(r), 0, F - 1).astype(np.intp)
        idx = np.where(ok & (grid[rows, idx] > y), np.maximum(idx - 1, 0), idx)
        idx = np.where(ok & (grid[rows, idx] > y), 0, idx)  # grid[0] = lo <= y
        slot = np.where(ok, idx, F)  # zeros last
    flat = (slot + rows * (F + 1)).ravel()
    fm = np.bincount(flat, weights=w.ravel(), minlength=B * (F + 1)).reshape(B, F + 1)

    # Merge fine bins: group = floor(K * exclusive cumulative sqrt(mass) / total),
    # non-decreasing along the grid.
    dens = np.sqrt(fm[:, :F])
    cs = np.cumsum(dens, axis=1)
    total = np.where(cs[:, -1:] > 0, cs[:, -1:], 1.0)
    group = np.minimum(np.floor(K * (cs - dens) / total), K - 1).astype(np.intp)
    masses = np.zeros((B, K + 1))
    masses[:, :K] = np.bincount((group + rows * K).ravel(), weights=fm[:, :F].ravel(), minlength=B * K).reshape(B, K)
    masses[:, K] = fm[:, F]
    # A group's value: the largest (up) or smallest (down) fine value among
    # its bins that carry mass (a group without mass keeps +inf or 0).
    heavy = fm[:, :F] > 0
    bb, ff = np.nonzero(heavy)
    gg = group[bb, ff]
    if up:
        values = np.full((B, K), -1.0)  # below every fine value (all > 0)
        np.maximum.at(values, (bb, gg), grid[bb, ff])
        values[values < 0] = np.inf
    else:
        values = np.full((B, K), np.inf)
        np.minimum.at(values, (bb, gg), grid[bb, ff])
        values[values == np.inf] = 0.0
    extra = np.full((B, 1), np.inf if up else 0.0)
    return np.concatenate([values, extra], axis=1), masses


def _sum_distribution(atoms, masses, n_lse, up):
    """Distribution of the sum of independent discrete non-negative
    variables (atoms, masses: lists of (B, C) arrays). Exact while the
    product has at most ``n_lse + 1`` atoms, rounded (up or down) beyond.
    Sums of non-negative numbers are monotone in every term, so rounding a
    partial sum up (down) rounds every later sum up (down)."""
    y, w = atoms[0], masses[0]
    B = y.shape[0]
    for x, q in zip(atoms[1:], masses[1:]):
        y = (y[:, :, None] + x[:, None, :]).reshape(B, -1)
        w = (w[:, :, None] * q[:, None, :]).reshape(B, -1)
        if y.shape[1] > n_lse + 1:
            y, w = _round_sums(y, w, n_lse, up)
    return y, w


def _peak_elements(m, n_cells, n_lse):
    """Largest temporary (elements per box) of :func:`_sum_distribution`
    plus the final corner matrix."""
    size, peak = n_cells, 0
    for _ in range(m - 2):
        size *= n_cells
        peak = max(peak, size)
        if size > n_lse + 1:
            size = n_lse + 1
    return max(peak, size * n_cells)


def _bounds_chunk(mu_lo, mu_hi, var_lo, var_hi, n_cells, n_lse, tail_sigmas):
    B, m = mu_lo.shape
    sd_hi = np.sqrt(var_hi)
    edges = _latent_edges(mu_lo, mu_hi, sd_hi, n_cells, tail_sigmas)
    params = [x[..., None] for x in (mu_lo, mu_hi, var_lo, var_hi)]
    # u: stochastically smallest, used with cell infima (left edges), so its
    # cells are left-closed [e_{k-1}, e_k): a point mass at an edge then sits
    # in the cell whose infimum it is. l: stochastically largest, used with
    # cell suprema, on right-closed cells (e_{k-1}, e_k].
    u = _extreme_cdf(edges, params, largest=True, left_closed=True)
    l = _extreme_cdf(edges, params, largest=False, left_closed=False)

    # Corner values softmax_c(xi) = 1 / (1 + sum_{j != c} z_j / z_c) with
    # z = exp(xi - shift); shift (the largest edge of the box) keeps every
    # finite z <= 1, so nothing overflows. Underflow is steered: the z that
    # must not be underestimated are floored at _TINY.
    shift = edges.max(axis=(1, 2))[:, None, None]
    z = np.exp(edges - shift)
    z_hi = np.maximum(z, _TINY)
    zeros, infs = np.zeros((B, m, 1)), np.full((B, m, 1), np.inf)
    left_lo = np.concatenate([zeros, z], axis=-1)  # cell infima of z_j (may underflow: lower side)
    right_hi = np.concatenate([z_hi, infs], axis=-1)  # cell suprema of z_j, never underestimated

    lower = np.empty((B, m))
    upper = np.empty((B, m))
    with np.errstate(divide="ignore", over="ignore"):
        inv_left = 1.0 / left_lo  # in (0, inf]: inf where z underflowed or at -inf (corner value 0)
    inv_right = 1.0 / right_hi  # in [0, 1 / _TINY]: 0 for the +inf cell (corner value 1)
    for c in range(m):
        others = [j for j in range(m) if j != c]
        # Lower: f_c stochastically smallest at cell infima; the others
        # stochastically largest at cell suprema, their sum Y rounded up.
        # Y in [_TINY, inf] and inv_left in (0, inf]: no 0 * inf.
        Y, P = _sum_distribution([right_hi[:, j] for j in others], [l[:, j] for j in others], n_lse, up=True)
        s = 1.0 / (1.0 + inv_left[:, c, :, None] * Y[:, None, :])
        lower[:, c] = np.einsum("bk,bk->b", u[:, c], np.matmul(s, P[:, :, None])[..., 0])
        # Upper: the reverse; Y in [0, m] rounded down, inv_right finite.
        Y, P = _sum_distribution([left_lo[:, j] for j in others], [u[:, j] for j in others], n_lse, up=False)
        s = 1.0 / (1.0 + inv_right[:, c, :, None] * Y[:, None, :])
        upper[:, c] = np.einsum("bk,bk->b", l[:, c], np.matmul(s, P[:, :, None])[..., 0])

    scale = np.abs(edges).max(axis=(1, 2))
    margin = MARGIN_ABS + 2.0**-50 * m * (scale + n_cells * (n_lse + 1))
    return lower, upper, margin



# --------------------------------------------------------------------------
# A fixed-node rule and its exact bounds over (mu, var) boxes
# --------------------------------------------------------------------------
#
# The quantity a model reports as its class probabilities is a *fixed* node
# rule R(mu, var) = sum_s w_s softmax(mu + sqrt(var) * z_s), with nodes z_s
# and weights w_s >= 0 (sum 1) that depend only on m. Its box bounds need no
# discretisation: for each node the latent vector f_s = mu + sqrt(var) z_s
# lies, over the (mu, var) box, in the exact per-coordinate interval
# [mu_lo_j + z_sj sqrt(var_lo_j or var_hi_j), ...] (the choice by the sign of
# z_sj), and softmax_c is increasing in f_c and decreasing in every f_j,
# j != c; averaging the per-node extremes with the same weights bounds R.
# The bounds are exact at a point (mu, var) and first order in the box.

#: Nodes per rule (for m = 2 and 3 a tensor Gauss-Hermite rule of about this
#: size; beyond, this many shifted Sobol' points, antithetic).
RULE_NODES = 4096

#: Absolute floating-point allowance of the node-rule bounds (see
#: :func:`node_rule_bounds`).
RULE_MARGIN = 1e-10

_RULES = {}


def node_rule(m):
    """Nodes (S, m) and weights (S,) of the fixed softmax-Gaussian rule for
    m classes (cached; deterministic, independent of the machine).

    m <= 3: the tensor product of the ``n``-point probabilists' Gauss-Hermite
    rule, ``n = 64`` (m = 2) or ``16`` (m = 3). m >= 4: the first 2048
    points of the (unscrambled, Joe-Kuo) Sobol' sequence in m dimensions,
    shifted modulo 1 by a fixed vector (PCG64, seed 20240601) so that no
    point sits at 0, mapped through the normal quantile, and symmetrised
    (z and -z; the rule is then exact for odd parts), equal weights.
    Against high-accuracy Monte Carlo the rule is within ~1e-3 of the
    integral (m = 10, latent variances up to 8); the proven error of a
    given row comes from the certified enclosure
    (:func:`softmax_gaussian_bounds`), see the estimator's
    ``predict_proba_error``.
    """
    m = int(m)
    if m in _RULES:
        return _RULES[m]
    if m <= 3:
        from scipy.special import roots_hermitenorm

        n = {2: 64, 3: 16}.get(m, 64)
        x, w = roots_hermitenorm(n)
        w = w / w.sum()
        grids = np.meshgrid(*([x] * m), indexing="ij")
        wgrids = np.meshgrid(*([w] * m), indexing="ij")
        Z = np.stack([g.ravel() for g in grids], axis=1)
        W = np.prod(np.stack([g.ravel() for g in wgrids], axis=1), axis=1)
        keep = W > 1e-300  # nodes of negligible weight only cost time
        Z, W = Z[keep], W[keep] / W[keep].sum()
    else:
        from scipy.stats import qmc

        half = RULE_NODES // 2
        with np.errstate(all="ignore"):
            U = qmc.Sobol(d=m, scramble=False).random(half)
        shift = np.random.Generator(np.random.PCG64(20240601)).random(m)
        U = np.mod(U + shift, 1.0)
        U = np.clip(U, 2.0**-60, 1.0 - 2.0**-53)
        Zh = ndtri(U)
        Z = np.vstack([Zh, -Zh])
        W = np.full(len(Z), 1.0 / len(Z))
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    Z.setflags(write=False)
    W.setflags(write=False)
    _RULES[m] = (Z, W)
    return Z, W


def _rule_chunk(m, S):
    return max(1, 2**21 // (S * m))


def node_rule_value(mu, var):
    """The rule R(mu, var) (n, m), row by row (no BLAS: each row's numbers do
    not depend on the other rows).

    ``F = mu + sqrt(var) * z_s`` per node, ``softmax`` with the row maximum
    subtracted, then the weighted sum over the nodes (a sequential reduction
    over axis 1)."""
    mu = np.atleast_2d(np.asarray(mu, dtype=np.float64))
    var = np.atleast_2d(np.asarray(var, dtype=np.float64))
    n, m = mu.shape
    Z, W = node_rule(m)
    out = np.empty((n, m))
    step = _rule_chunk(m, len(Z))
    sd = np.sqrt(np.maximum(var, 0.0))
    for s in range(0, n, step):
        sl = slice(s, s + step)
        F = mu[sl, None, :] + sd[sl, None, :] * Z[None]
        F -= F.max(axis=2, keepdims=True)
        E = np.exp(F)
        E /= E.sum(axis=2, keepdims=True)
        out[sl] = (E * W[None, :, None]).sum(axis=1)
    return out


def _node_intervals(mu_lo, mu_hi, var_lo, var_hi, Z):
    """Exact per-node latent intervals (B, S, m) over the (mu, var) box.

    Floating point: sqrt, products and sums are correctly rounded, hence
    monotone, so the computed ends bracket the computed f = mu + sqrt(var) z
    of every (mu, var) in the box *exactly* (no margin needed here)."""
    s_lo = np.sqrt(np.maximum(var_lo, 0.0))
    s_hi = np.sqrt(np.maximum(var_hi, 0.0))
    # The same numbers as mu + where(z >= 0, s_a, s_b) * z, without the
    # (B, S, m) selection: z+ = max(z, 0) and z- = min(z, 0) are exact and
    # one of s_a z+, s_b z- is an exact zero, so their sum is the one
    # product, rounded once (signed zeros aside, which give the same exp).
    # An antithetic rule (Z = [Zh; -Zh], the rules beyond three classes)
    # needs the products of its first half only: with Q_a = s_a zh+ + s_b
    # zh- (one product), the second half's s_a (-zh)+ + s_b (-zh)- is
    # -(s_b zh- + s_a zh+) = -Q_b exactly (negation is exact and rounding
    # symmetric), and mu + (-Q) = mu - Q in IEEE arithmetic.
    zp, zn, half = _split_nodes(Z)
    if half:
        B, m = mu_lo.shape
        S = Z.shape[0]
        q_lo = s_lo[:, None, :] * zp[None]
        q_lo += s_hi[:, None, :] * zn[None]
        q_hi = s_hi[:, None, :] * zp[None]
        q_hi += s_lo[:, None, :] * zn[None]
        f_lo = np.empty((B, S, m))
        f_hi = np.empty((B, S, m))
        np.add(mu_lo[:, None, :], q_lo, out=f_lo[:, :half])
        np.subtract(mu_lo[:, None, :], q_hi, out=f_lo[:, half:])
        np.add(mu_hi[:, None, :], q_hi, out=f_hi[:, :half])
        np.subtract(mu_hi[:, None, :], q_lo, out=f_hi[:, half:])
        return f_lo, f_hi
    f_lo = s_lo[:, None, :] * zp[None]
    f_lo += s_hi[:, None, :] * zn[None]
    f_lo += mu_lo[:, None, :]
    f_hi = s_hi[:, None, :] * zp[None]
    f_hi += s_lo[:, None, :] * zn[None]
    f_hi += mu_hi[:, None, :]
    return f_lo, f_hi


_SPLIT_NODES = {}


def _split_nodes(Z):
    """(max(Zh, 0), min(Zh, 0), h) of a node rule, kept per rule: Zh = Z[:h]
    and h = S / 2 where Z = [Zh; -Zh] exactly (antithetic), else Zh = Z and
    h = 0."""
    key = id(Z)
    hit = _SPLIT_NODES.get(key)
    if hit is None or hit[0] is not Z:
        h = len(Z) // 2
        anti = len(Z) % 2 == 0 and h > 0 and np.array_equal(Z[h:], -Z[:h])
        Zh = Z[:h] if anti else Z
        hit = (Z, np.maximum(Zh, 0.0), np.minimum(Zh, 0.0), h if anti else 0)
        _SPLIT_NODES[key] = hit
    return hit[1], hit[2], hit[3]


def _exp_shifted(f_lo, f_hi):
    """exp of the interval ends shifted by the largest upper end per node:
    ``e_lo`` (may underflow to 0: only ever an underestimate, used where
    underestimating is safe) and ``e_hi`` floored at _TINY (never an
    underestimate)."""
    shift = f_hi.max(axis=2, keepdims=True)
    e_lo = np.subtract(f_lo, shift)
    np.exp(e_lo, out=e_lo)
    e_hi = np.subtract(f_hi, shift)
    np.exp(e_hi, out=e_hi)
    np.maximum(e_hi, _TINY, out=e_hi)
    return e_lo, e_hi


def _others_sum(e):
    """``sum_{j != c} e_j`` for every c (last axis), from prefix and suffix
    sums of the non-negative terms: no cancellation, relative error <= m u.
    The running sums are formed one class at a time (the same sequential
    additions as ``cumsum``, ~5x faster than cumsum along a short last axis)."""
    m = e.shape[-1]
    pre = np.zeros(e.shape)
    suf = np.zeros(e.shape)
    for j in range(1, m):
        np.add(pre[..., j - 1], e[..., j - 1], out=pre[..., j])
    for j in range(m - 2, -1, -1):
        np.add(suf[..., j + 1], e[..., j + 1], out=suf[..., j])
    return pre + suf


def node_rule_bounds(mu_lo, mu_hi, var_lo, var_hi):
    """Bounds (p_lo, p_hi), each (B, m), of the rule R(mu, var) over all mu
    in [mu_lo, mu_hi], var in [var_lo, var_hi] (``var_lo >= 0``).

    Proof. For every node s and every (mu, var) in the box, f_s lies in the
    per-node interval box (:func:`_node_intervals`); softmax_c(f) = e_c /
    (e_c + sum_{j != c} e_j) is increasing in e_c and decreasing in each
    e_j, so ``e_lo_c / (e_lo_c + sum_{j != c} e_hi_j) <= softmax_c(f_s) <=
    e_hi_c / (e_hi_c + sum_{j != c} e_lo_j)``, and with w_s >= 0 the
    weighted sums bound R. The common shift of the exponent cancels.
    Floating point: the sums of the others are of non-negative terms
    (:func:`_others_sum`, no cancellation), so every quotient is within a
    few ulps (relative, m + 8 roundings) of its real value, the weighted sums of S terms in [0, 1]
    within S u, and the model's rule is within as much of its real value:
    the results are widened by RULE_MARGIN = 1e-10, far above (m + S + 16)
    * 4 u ~ 2e-12 for S = 4096, and clipped into [0, 1].
    """
    mu_lo, mu_hi, var_lo, var_hi = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (mu_lo, mu_hi, var_lo, var_hi))
    B, m = mu_lo.shape
    Z, W = node_rule(m)
    p_lo = np.empty((B, m))
    p_hi = np.empty((B, m))
    step = _rule_chunk(m, len(Z))
    for s in range(0, B, step):
        sl = slice(s, s + step)
        f_lo, f_hi = _node_intervals(mu_lo[sl], mu_hi[sl], var_lo[sl], var_hi[sl], Z)
        e_lo, e_hi = _exp_shifted(f_lo, f_hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = e_lo / (e_lo + _others_sum(e_hi))
            hi = e_hi / (e_hi + _others_sum(e_lo))
        # 0 / 0 cannot occur in hi (e_hi >= _TINY); in lo only when e_lo_c
        # underflowed and every other e_hi as well, impossible as the
        # largest e_hi is exp(0) = 1 (it is then class c's: lo = 0 is safe).
        lo = np.nan_to_num(lo, nan=0.0)
        p_lo[sl] = (lo * W[None, :, None]).sum(axis=1)
        p_hi[sl] = (hi * W[None, :, None]).sum(axis=1)
    # The rule's value can exceed 1 by rounding (the weighted sum of node
    # softmaxes rounds up; measured 1 + 1.55e-15 for two classes): clip the
    # upper bound at 1 + RULE_MARGIN, not at 1 (proof review of this stop).
    p_lo = np.clip(p_lo - RULE_MARGIN, 0.0, 1.0)
    p_hi = np.clip(p_hi + RULE_MARGIN, 0.0, 1.0 + RULE_MARGIN)
    return p_lo, p_hi


def node_rule_margin_lower(mu_lo, mu_hi, var_lo, var_hi, cls, return_pairs=False, competitors=None):
    """Lower bound (B,) of ``min_{k != c} (R_c - R_k)`` over the box, c = cls:
    where it is > 0, class c is the unique argmax of R everywhere in the box.

    Proof. ``R_c - R_k = sum_s w_s g(f_s)`` with ``g = (e_c - e_k) / (e_c +
    e_k + T)``, T = sum over the other classes. g increases with e_c
    (derivative (e_k + T + ... ) > 0 after clearing: d/de_c = (2 e_k + T) /
    den^2) and decreases with e_k; in T it decreases when e_c > e_k and
    increases otherwise. So over the per-node interval box its minimum is at
    e_c = e_lo_c, e_k = e_hi_k and T at T_hi (if e_lo_c >= e_hi_k) or T_lo
    (otherwise): the smaller of the two candidates below is the exact
    per-node minimum. Weighted sums with w_s >= 0 bound each pair; the
    minimum over k bounds the margin. Pairwise, the nodes keep the
    correlation of R_c and R_k (the same f_s drives both), which the
    difference of separate bounds p_lo_c - p_hi_k loses. Floating point as
    in :func:`node_rule_bounds` (values in [-1, 1]; 2 RULE_MARGIN).

    With ``return_pairs``, also the per-competitor bounds (B, m - 1) of
    ``R_c - R_k`` (k over the other classes in increasing order), lowered
    by the same margin.

    ``competitors`` (a sequence of classes other than c; default all): only
    those pairs are bounded, and the result is their minimum (a lower bound
    of ``min_k (R_c - R_k)`` only together with valid bounds of the other
    pairs, which the caller must supply); ``pairs`` is then (B,
    len(competitors)). The per-node terms of each pair are those above; only
    the order of the weighted sum over the nodes may differ (numpy's
    summation depends on the array's layout), within the S u of that sum
    that RULE_MARGIN covers either way.
    """
    mu_lo, mu_hi, var_lo, var_hi = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (mu_lo, mu_hi, var_lo, var_hi))
    B, m = mu_lo.shape
    Z, W = node_rule(m)
    others = [k for k in range(m) if k != cls]
    if competitors is not None:
        competitors = [int(k) for k in competitors]
        if not competitors or any(k == cls or not 0 <= k < m for k in competitors):
            raise ValueError(f"competitors must be a non-empty list of classes other than {cls}, got {competitors}.")
    ks = others if competitors is None else competitors
    out = np.empty(B)
    pairs = np.empty((B, len(ks)))
    step = _rule_chunk(m, len(Z))
    for s in range(0, B, step):
        sl = slice(s, s + step)
        f_lo, f_hi = _node_intervals(mu_lo[sl], mu_hi[sl], var_lo[sl], var_hi[sl], Z)
        e_lo, e_hi = _exp_shifted(f_lo, f_hi)
        A = e_lo[:, :, cls : cls + 1]  # (b, S, 1)
        Bk = e_hi[:, :, ks]  # (b, S, len(ks))
        # A + e_hi_k + T_hi = A + sum_{j != c} e_hi_j; T_lo = sum_{j != c, k} e_lo_j.
        tot_hi = A + e_hi[:, :, others].sum(axis=2, keepdims=True)  # m - 1 non-negative terms
        t_lo = _others_sum(e_lo[:, :, others])
        if competitors is not None:
            t_lo = t_lo[:, :, [others.index(k) for k in ks]]
        num = A - Bk
        g = np.minimum(num / tot_hi, num / (A + Bk + t_lo))
        pair = (g * W[None, :, None]).sum(axis=1)  # (b, m - 1)
        pairs[sl] = pair
        out[sl] = pair.min(axis=1)
    out = np.clip(out - 2.0 * RULE_MARGIN, -1.0, 1.0)  # the margin is in [-1, 1]
    if return_pairs:
        return out, np.clip(pairs - 2.0 * RULE_MARGIN, -1.0, 1.0)
    return out

# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def softmax_gaussian_bounds(
    mu_lo,
    mu_hi,
    var_lo,
    var_hi,
    *,
    n_cells=None,
    n_lse=None,
    tail_sigmas=8.0,
    max_elements=2**22,
):
    """Certified bounds of ``E_{f ~ N(mu, diag(var))}[softmax(f)_c]`` over all
    mu in [mu_lo, mu_hi] and var in [var_lo, var_hi] (element-wise).

    The latent outputs are independent (diagonal covariance), the common
    multi-class GP. See the module docstring for the method (paper Props.
    10-11, Lemma 12, with a tighter combination step) and its soundness.

    Parameters
    ----------
    mu_lo, mu_hi : array_like of shape (B, m)
        Bounds of the latent means of B boxes, m >= 2 classes. A 1-D array
        of shape (m,) is one box (the results are then 1-D too).
    var_lo, var_hi : array_like of shape (B, m)
        Bounds of the latent variances, ``0 <= var_lo <= var_hi``. A zero
        variance is a point mass.
    n_cells : int or None, default=None
        Cells per latent output, the two unbounded tail cells included
        (>= 3); None means 256 for m = 2 and 64 otherwise. The first-order
        discretisation gap shrinks like 1 / n_cells (point intervals, three
        classes, latent variances ~0.5: gap 0.026 at 64 cells, 0.013 at 128,
        0.0064 at 256).
    n_lse : int or None, default=None
        Atoms kept for the distribution of the sum of the other outputs'
        exponentials before it is rounded; None means ``4 * n_cells``.
        ``m = 2`` is always exact; with ``n_lse >= n_cells ** (m - 1)`` the
        full product grid is used (cost and memory ``n_cells ** m`` per box
        and class).
    tail_sigmas : float, default=8.0
        The outermost finite edges sit at ``mu_lo - tail_sigmas * sd_hi`` and
        ``mu_hi + tail_sigmas * sd_hi``: the unbounded tail cells carry at
        most ``Phi(-tail_sigmas)`` mass each.
    max_elements : int, default=2**22
        Largest temporary array allowed per box (float64 elements); a grid
        needing more raises ValueError instead of exhausting memory.

    Returns
    -------
    p_lo, p_hi : ndarray of shape (B, m)
        ``p_lo[b, c] <= E[softmax(f)_c] <= p_hi[b, c]`` for every (mu, var)
        in box b's intervals; within [0, 1], and
        ``sum_c p_lo <= 1 <= sum_c p_hi``.

    Raises
    ------
    ValueError
        On mismatched shapes, m < 2, NaN or infinite entries, ``mu_lo >
        mu_hi``, negative variances, ``var_lo > var_hi``, bad grid
        parameters, or a grid larger than ``max_elements`` per box.

    Notes
    -----
    Cost per box: ``2 m`` combinations, each about ``(m - 2) n_cells n_lse
    + n_cells n_lse`` logaddexp / expit evaluations once the logsumexp
    distribution is rounded (``n_cells ** m`` while it is exact), plus
    ``O(m n_cells)`` Gaussian CDF evaluations. Boxes are processed in
    chunks so that temporaries stay near 2**21 elements.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = softmax_gaussian_bounds(
    ...     np.array([[0.0, 1.0, -1.0]]), np.array([[0.1, 1.1, -0.9]]),
    ...     np.array([[0.5, 0.5, 0.5]]), np.array([[0.6, 0.6, 0.6]]))
    >>> bool(np.all(lo <= hi)) and lo.shape == (1, 3)
    True
    """
    mu_lo, mu_hi, var_lo, var_hi = _check_intervals(mu_lo, mu_hi, var_lo, var_hi)
    m = mu_lo.shape[-1]
    n_cells = (256 if m == 2 else 64) if n_cells is None else _check_int("n_cells", n_cells, 3)
    n_lse = 4 * n_cells if n_lse is None else _check_int("n_lse", n_lse, 2)
    if not isinstance(tail_sigmas, numbers.Real) or not np.isfinite(tail_sigmas) or tail_sigmas < 0:
        raise ValueError(f"tail_sigmas must be a finite number >= 0, got {tail_sigmas!r}.")
    max_elements = _check_int("max_elements", max_elements, 1)

    single = mu_lo.ndim == 1
    if single:
        mu_lo, mu_hi, var_lo, var_hi = (a[None] for a in (mu_lo, mu_hi, var_lo, var_hi))
    B, m = mu_lo.shape
    peak = _peak_elements(m, n_cells, n_lse)
    if peak > max_elements:
        raise ValueError(
            f"the latent grid needs {peak} elements per box (m = {m}, n_cells = {n_cells}, "
            f"n_lse = {n_lse}), above max_elements = {max_elements}: lower n_cells or n_lse."
        )

    lower = np.empty((B, m))
    upper = np.empty((B, m))
    margin = np.empty(B)
    chunk = max(1, _CHUNK_ELEMENTS // peak)
    for s in range(0, B, chunk):
        sl = slice(s, s + chunk)
        lower[sl], upper[sl], margin[sl] = _bounds_chunk(
            mu_lo[sl], mu_hi[sl], var_lo[sl], var_hi[sl], n_cells, n_lse, float(tail_sigmas)
        )

    margin = margin[:, None]
    p_lo = np.clip(lower - margin, 0.0, 1.0)
    p_hi = np.clip(upper + margin, 0.0, 1.0)
    # The probabilities sum to one: pi_c = 1 - sum_{j != c} pi_j. The sums
    # are of m terms in [0, 1], so a rounding allowance of 2 m u suffices
    # (added to the margin).
    slack = margin + 2.0 * m * _U
    p_hi = np.minimum(p_hi, np.clip(1.0 - (p_lo.sum(1, keepdims=True) - p_lo) + slack, 0.0, 1.0))
    p_lo = np.maximum(p_lo, np.clip(1.0 - (p_hi.sum(1, keepdims=True) - p_hi) - slack, 0.0, 1.0))
    if single:
        return p_lo[0], p_hi[0]
    return p_lo, p_hi


def softmax_gaussian_mc(mu, var, n_samples, rng, *, chunk=2**16):
    """Monte-Carlo estimate of ``E_{f ~ N(mu, diag(var))}[softmax(f)]``.

    For tests and benchmarks (not a bound).

    Parameters
    ----------
    mu, var : array_like of shape (B, m)
        Latent means and variances (var >= 0).
    n_samples : int
        Samples per box.
    rng : numpy.random.Generator
        Source of randomness.
    chunk : int, default=2**16
        Samples drawn at once per box (bounds memory to B * chunk * m).

    Returns
    -------
    mean, stderr : ndarray of shape (B, m)
        The sample mean of softmax(f) and its standard error.
    """
    mu = np.asarray(mu, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    if mu.shape != var.shape or mu.ndim != 2:
        raise ValueError(f"mu and var must both have shape (B, m), got {mu.shape} and {var.shape}.")
    if np.any(var < 0) or not (np.all(np.isfinite(mu)) and np.all(np.isfinite(var))):
        raise ValueError("mu and var must be finite, with var >= 0.")
    n_samples = _check_int("n_samples", n_samples, 2)
    sd = np.sqrt(var)
    total = np.zeros(mu.shape)
    total_sq = np.zeros(mu.shape)
    done = 0
    while done < n_samples:
        k = min(chunk, n_samples - done)
        f = mu[:, None, :] + sd[:, None, :] * rng.standard_normal((mu.shape[0], k, mu.shape[1]))
        f -= f.max(axis=2, keepdims=True)
        e = np.exp(f)
        p = e / e.sum(axis=2, keepdims=True)
        total += p.sum(axis=1)
        total_sq += (p * p).sum(axis=1)
        done += k
    mean = total / n_samples
    var_hat = np.maximum(total_sq / n_samples - mean * mean, 0.0) * n_samples / (n_samples - 1)
    return mean, np.sqrt(var_hat / n_samples)
