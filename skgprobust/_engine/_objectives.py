"""Objectives built on latent mean and variance bounds, for the branch and bound.

Each objective has ``value(X)``, ``value_and_grad(X)`` (local search) and
``bound(lo, hi) -> BoxBound`` (a certified lower bound over each box), like
:class:`~skgprobust.bounds.AffineMean`:

* :class:`StdObjective`: +-sqrt(var) of one latent model (regressor std);
* :class:`ProbaObjective`: +-P(class c) of a binary or one-vs-rest classifier,
  through a :class:`~skgprobust.links.Link` (sklearn's five-erf by default);
* :class:`MarginObjective`: p_c*(x) - max_{k != c*} p_k(x) of a one-vs-rest
  classifier (its ``predict`` is the argmax of the unnormalised p_k);
* the softmax model's objectives are in :mod:`._softmax_objectives`.

Bounds flow one way: kernel adapters -> mean / variance intervals per box
-> link ranges -> the statistic's interval.

Many classes (one-vs-rest): separate intervals of the p_k lose the
correlation between classes (the extremes of p_c and p_k are reached at
different points of the box), and in many dimensions branch and bound cannot
win it back by splitting. When classes share one kernel and support
(``ClassProbabilities.group``), their latent means combine into one affine
mean: :meth:`ClassProbabilities.pair_lower` bounds p_c - p_k jointly (the
argmax margin) and :func:`_ratio_bound` the normalised p_c / sum_k p_k
(``predict_proba``), both from the link's linear bounds
(:meth:`~skgprobust._bounds._links.Link.lines`) and one mean bound per
direction or ratio; each is combined with the interval bound (the better
of two valid bounds). ``MarginObjective.restricted`` drops the classes that
cannot win with the prior variance first (no variance bound needed).

The lines' chords lose each p_k's curvature over the whole of its mean
range; with ten classes moving almost independently in 64 dimensions those
losses add up, and the normalised bound also gets a quadratic relaxation
(:class:`_QuadRatio`: each p_k quadratic in its mean around the box centre,
the squares bounded by a quadratic form in x, one Taylor-model bound). Where
two classes are close, the root box also gets latent slices
(:meth:`_QuadRatio.sliced`): the mean ranges of the two classes that cost
the relaxation most are cut into slices, each pair of slices bounded with
planes of those two classes (slopes by a few supergradient steps: they act as
Lagrange multipliers of the slice constraint) and the others' quadratics; in
the latent space two dimensions matter, in x sixty-four.

At the root box the relaxation also has a variant (:meth:`_QuadRatio._affine_terms`,
tried where the plain one fails a t; a t passes if either bound proves
it): each class's variance slope affine
in its mean instead of the smallest |dp/dv| over the whole rectangle
(:meth:`~skgprobust._bounds._links.Link.v_slope_affine`; the product of
the mean's and the variance's deviations becomes a quadratic form in x
through their Taylor models), and the curvature of a class whose bounded
side is convex (lower) / concave (upper), which the plain relaxation
clips to 0.

A binary classifier's probability gets, besides the interval bound, the
coupled plane bound (:func:`coupled_plane_bound`: tangent planes of the link
in (mean, variance), the variance through its affine enclosure, one
mean-type bound per plane) as a second bound (:meth:`ProbaObjective.tighten`)
that the branch and bound computes only for the boxes it splits.

Each class's variance is coupled to its mean in both joint bounds
(:func:`coupled_line`): the link's sensitivity to the variance
(:meth:`~skgprobust._bounds._links.Link.v_slope_lower`) times the affine
enclosure of the variance in the kernel vector
(:mod:`~skgprobust._bounds._variance_affine`) adds a term linear in
k(x, X) to each link line, so that the whole bound stays one mean-type bound.
"""

import weakref
from dataclasses import dataclass

import numpy as np

from .._bounds._mean import BoxBound, affine_lower, affine_lower_parts, taylor_lower
from .._bounds._variance_affine import affine_variance_enclosure, has_affine_enclosure
from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol
from ..exceptions import UnsupportedKernelError
from ..kernels._base import TaylorModel
from ._deadline import optional_work_expired, row_epsilon, row_scratch, row_time_expired
from .._bounds._links import FiveErfLink
from .._bounds._link_planes import link_plane


@dataclass
class LatentBox:
    """Intervals of one latent model's mean and variance over B boxes."""

    mu_lo: np.ndarray
    mu_hi: np.ndarray
    v_lo: np.ndarray
    v_hi: np.ndarray
    arg_mu_min: np.ndarray
    arg_mu_max: np.ndarray
    arg_v_min: np.ndarray
    arg_v_max: np.ndarray
    score: np.ndarray


def latent_box(model, variance, lo, hi, output=0):
    """Mean and variance intervals of one output of a latent model; the
    variance is ``scale[output]**2`` times the (unscaled) ``variance``."""
    B = len(lo)
    w, c = model.weights[:, output], float(model.offset[output])
    W = np.broadcast_to(w, (B, len(w)))
    bb = affine_lower(
        model.adapter, np.vstack([W, -W]), np.r_[np.full(B, c), np.full(B, -c)], np.vstack([lo, lo]), np.vstack([hi, hi])
    )
    vb = variance.bounds(lo, hi)
    s2 = float(model.scale[output]) ** 2
    return LatentBox(
        bb.lower[:B], -bb.lower[B:], s2 * vb.lower, s2 * vb.upper,
        bb.argmin[:B], bb.argmin[B:], vb.arg_min, vb.arg_max,
        bb.score[:B] + vb.score,
    )


_FIELDS = tuple(LatentBox.__dataclass_fields__)


def _box_cache_size(n_classes, d):
    """Boxes :meth:`ClassProbabilities.p_box` remembers: 4096, fewer when an
    entry is large (about 16 MiB in all; an entry holds 3 (d,) arrays and 6
    numbers per class)."""
    return int(max(256, min(4096, 2**24 // (8 * n_classes * (3 * d + 8)))))


class _LatentPoint:
    """Mean, variance and their gradients of one binary latent model at points.

    ``kernel``: the kernel values k(X, Xs) (and their gradients) computed
    already for another latent with the same kernel and support (one-vs-rest
    classes with a fixed kernel; :func:`_same_support`), reused instead of
    recomputed: the same function of the same inputs by the same code, so the
    same numbers. Also shared between the mean and the variance where the
    variance's adapter is the mean's kernel on the same points
    (``shares_kernel``)."""

    def __init__(self, model, variance, output=0):
        self.model, self.variance = model, variance
        self.w, self.c = model.weights[:, output], float(model.offset[output])
        self.s2 = float(model.scale[output]) ** 2
        va = getattr(variance, "adapter", None)
        self.shares_kernel = va is model.adapter or (
            va is not None and type(va) is type(model.adapter) and _same_kernel(va, model.adapter)
        )
        self._value_fk = self.shares_kernel and _from_kernel_is_the_method(variance, "value")
        self._vg_fk = self.shares_kernel and _from_kernel_is_the_method(variance, "value_and_grad")

    def kernel_values(self, X):
        return self.model.adapter.values(X)

    def kernel_values_and_grads(self, X):
        return self.model.adapter.value_and_grad(X)

    def values(self, X, kernel=None):
        K = self.model.adapter.values(X) if kernel is None else kernel
        mu = K @ self.w + self.c
        if self._value_fk:
            return mu, self.s2 * self.variance.value_from_kernel(X, K)
        return mu, self.s2 * self.variance.value(X)

    def values_and_grads(self, X, kernel=None):
        K, dK = self.model.adapter.value_and_grad(X) if kernel is None else kernel
        mu, dmu = K @ self.w + self.c, np.einsum("nid,i->nd", dK, self.w)
        if self._vg_fk:
            v, dv = self.variance.value_and_grad_from_kernel(X, K, dK)
        else:
            v, dv = self.variance.value_and_grad(X)
        return mu, dmu, self.s2 * v, self.s2 * dv


def _from_kernel_is_the_method(obj, name):
    """True when ``obj.<name>_from_kernel`` exists and is defined by the same
    class as the ``obj.<name>`` it stands for (a subclass that overrides
    ``<name>`` alone keeps its own)."""
    mro = type(obj).__mro__
    fk = next((c for c in mro if name + "_from_kernel" in c.__dict__), None)
    own = next((c for c in mro if name in c.__dict__), None)
    return fk is not None and fk is own


def _same_kernel(a, b):
    """Two kernel adapters computing the same function k(x, Xs): equal
    support points and equal sklearn kernels."""
    try:
        return a.Xs.shape == b.Xs.shape and bool(np.array_equal(a.Xs, b.Xs)) and bool(a.kernel == b.kernel)
    except Exception:
        return False


class StdObjective:
    """``sign * sqrt(max(var(x), 0))`` of one latent model (unit output scale)."""

    def __init__(self, variance, sign):
        self.variance, self.sign = variance, float(sign)

    def value(self, X):
        return self.sign * np.sqrt(np.maximum(self.variance.value(X), 0.0))

    def value_and_grad(self, X):
        v, dv = self.variance.value_and_grad(X)
        sd = np.sqrt(np.maximum(v, 0.0))
        g = dv / (2.0 * np.maximum(sd, 1e-150))[:, None]
        return self.sign * sd, self.sign * g

    def bound(self, lo, hi):
        vb = self.variance.bounds(lo, hi)
        if self.sign > 0:
            return BoxBound(np.sqrt(np.maximum(vb.lower, 0.0)), vb.arg_min, vb.score)
        return BoxBound(-np.sqrt(np.maximum(vb.upper, 0.0)), vb.arg_max, vb.score)


_ENCLOSURES = weakref.WeakKeyDictionary()  # variance -> (box key, enclosure) of its last box batch


def _enclosure(variance, lo, hi, x0=None):
    """:func:`affine_variance_enclosure` (tangent at ``x0``, default the
    centre), remembered for the last two requests per variance object (the
    objectives of one row all bound the same root box, and
    :meth:`ProbaObjective.tighten` asks for the centre's and an extreme
    point's tangents of the same boxes in turn; threads may replace an entry
    meanwhile: read once)."""
    key = (lo.shape, lo.tobytes(), hi.tobytes(), None if x0 is None else np.asarray(x0, dtype=np.float64).tobytes())
    try:
        hit = _ENCLOSURES.get(variance)
    except TypeError:  # not weak-referenceable: no cache
        return affine_variance_enclosure(variance, lo, hi, x0=x0)
    if hit is not None and hit[0] == key:
        return hit[1]
    if hit is not None and hit[2] is not None and hit[2][0] == key:  # the entry before (centre / x0 alternate)
        _ENCLOSURES[variance] = (key, hit[2][1], (hit[0], hit[1]))
        return hit[2][1]
    enc = affine_variance_enclosure(variance, lo, hi, x0=x0)
    _ENCLOSURES[variance] = (key, enc, None if hit is None else (hit[0], hit[1]))
    return enc


def coupled_line(link, model, variance, box, lo, hi, upper=False):
    """A line of p_k in the kernel vector, coupling the class's variance to
    its mean: ``(A, s, Wv, nv)`` with, for every x in box b,

        p~(x) >= A + s mu~(x) + Wv . r(x)      (``upper=False``),
        p~(x) <= A + s mu~(x) + Wv . r(x)      (``upper=True``),

    p~ and mu~ sklearn's values, r(x) = k(Xs, x) exact; ``nv = ||Wv||_1``
    (for the caller's rounding margin of the combined weights).

    Proof. :meth:`Link.lines` gives (alpha, s) with G(mu) >= alpha + s mu on
    the box's mean range (the lower envelope G(mu) = p(mu, v_ref), v_ref =
    v_hi for mu_lo >= 0 and v_lo for mu_hi <= 0; margins for sklearn's
    rounding of p included). :meth:`Link.v_slope_lower` gives kappa >= 0 with
    p(mu, v) >= p(mu, v_ref) + t (v - v_ref), t = -kappa (mu_lo >= 0) or
    +kappa (mu_hi <= 0), on the rectangle (kappa = 0 when the mean range
    crosses 0). :func:`~skgprobust._bounds._variance_affine.affine_variance_enclosure`
    gives C_lo - g . r(x) <= v~(x) <= C_hi - g . r(x) (times scale^2), so
    t v~ >= t C - t g . r(x) with C = C_hi when t < 0 and C_lo when t > 0.
    Together: p~ >= alpha + s mu~ + t (C - v_ref) - t g . r(x), i.e. A =
    alpha + t (C - v_ref) (lowered by 4 u |t| (|C| + |v_ref|) for the
    product's rounding and by 4 u (|alpha| + |shift| + that) for the two
    additions forming A), Wv = -t g. The upper side is the mirror image
    (p(mu, v) <= p(mu, v_ref) + t (v - v_ref) with v_ref = v_lo for mu_lo >=
    0, v_hi for mu_hi <= 0; C = C_lo when t < 0, C_hi when t > 0). Where
    the enclosure is not finite, t = 0: the plain link line.
    """
    B, N = len(lo), len(model.X_support)
    alpha, s = link.lines(box.mu_lo, box.mu_hi, box.v_lo, box.v_hi, upper=upper)
    cp = _coupling(link, model, variance, box, lo, hi, upper)
    if cp is None:
        return alpha, s, np.zeros((B, N)), np.zeros(B)
    shift, err, Wv, nv = cp
    with np.errstate(invalid="ignore"):
        err = err + 4 * _U * (np.abs(alpha) + np.abs(shift) + err)  # the two additions forming A
    A = alpha + shift + (err if upper else -err)
    return A, s, Wv, nv


def mean_kernel_error(adapter, lo, hi, with_rounding=False):
    """(B, N) bound of the error of sklearn's kernel values in its means
    against the exact kernel vector r(x) over each box: ``R + mean_rtol(N,
    d) A`` with R the input rounding and A the term magnitude of
    :meth:`KernelAdapter.rounding_parts` (``|k~(x, x_i) - k(x, x_i)| <= R_i +
    value_ulps(d) u A_i``, inside mean_rtol's budget (iii),
    :meth:`KernelAdapter.mean_rtol`; ``margin_rtol(N, d)`` for an adapter
    without its own).

    A bound that adds a class's coupled variance term Wv . r(x) (exact r) to
    s mu~(x) (sklearn's mean, through its k~) and bounds the sum through the
    combined weights s w + Wv gets input rounding only for |s w + Wv|, which
    can cancel where the mean's own error is s w . (k~ - r): the caller adds
    s |w| . mean_kernel_error per class (session 31 found the gap at
    feature offsets of 1e5). ``with_rounding``: ``(R, bound)``, R the
    adapter's ``rounding(lo, hi)`` (computed on the way)."""
    R, _, _, A = adapter.rounding_parts(lo, hi)
    N, d = R.shape[-1], lo.shape[-1]
    rt = adapter.mean_rtol(N, d) if hasattr(adapter, "mean_rtol") else margin_rtol(N, d)
    return (R, R + rt * A) if with_rounding else R + rt * A


def _coupling(link, model, variance, box, lo, hi, upper):
    """The variance term of :func:`coupled_line`: ``(shift, err, Wv, nv)``
    with, for every x in box b and mu in the box's mean range,

        p~(mu, v~(x)) >= G(mu) + shift - err + Wv . r(x)   (``upper=False``),
        p~(mu, v~(x)) <= H(mu) + shift + err + Wv . r(x)   (``upper=True``),

    G(mu) = p(mu, v_ref) the lower envelope over the box's variance range
    (H the upper one), up to the link's margin for sklearn's rounding of p;
    or None where no coupling applies (the plain envelope). Proof: that of
    :func:`coupled_line` (``err`` is the product's rounding 4 u |t| (|C| +
    |v_ref|)). Where the mean range crosses 0, t = 0 (shift = err = 0).
    """
    kap = link.v_slope_lower(box.mu_lo, box.mu_hi, box.v_lo, box.v_hi)
    enc = _enclosure(variance, lo, hi) if np.any(kap > 0) else None
    if enc is None:
        return None
    pos = box.mu_lo >= 0  # p decreasing in v there; increasing where mu_hi <= 0
    return _coupling_slope(model, box, enc, upper, np.where(pos, -kap, kap))


def _coupling_slope(model, box, enc, upper, t):
    """:func:`_coupling` for a given slope t (B,) of the envelope's
    variance term: ``(shift, err, Wv, nv)`` with t (v~ - v_ref) >= shift -
    err + Wv . r(x) (``upper=False``; <= shift + err + Wv . r(x) for
    ``upper=True``) for every x in box b, v_ref the end of the box's
    variance range of :func:`_coupling` (v_hi where mu_lo >= 0 and v_lo
    where mu_hi <= 0 on the lower side; the other end on the upper side);
    ``enc`` the variance's enclosure (:func:`_enclosure`). Proof: the
    enclosure step of :func:`coupled_line` (its choice of C by the sign of
    t and the side; ``err`` the product's rounding); t is any number here
    (0 where C or v_ref is not finite)."""
    g, c_lo, c_hi = enc
    s2 = float(model.scale[0]) ** 2
    pos = box.mu_lo >= 0
    if upper:
        v_ref = np.where(pos, box.v_lo, box.v_hi)
        C = np.where(t < 0, c_lo, c_hi)
    else:
        v_ref = np.where(pos, box.v_hi, box.v_lo)
        C = np.where(t < 0, c_hi, c_lo)
    C = s2 * C * (1.0 + np.where((C >= 0) == ((t < 0) != upper), 1.0, -1.0) * 4 * _U)
    t = np.where(np.isfinite(C) & np.isfinite(v_ref), t, 0.0)
    with np.errstate(invalid="ignore"):
        shift = np.where(t != 0, t * (C - v_ref), 0.0)
        err = np.where(t != 0, 4 * _U * np.abs(t) * (np.abs(C) + np.abs(v_ref)), 0.0)
    Wv = -(t * s2)[:, None] * g
    return shift, err, Wv, np.abs(Wv).sum(axis=1)


#: Slices of the competitor's mean range in the coupled planes of
#: :meth:`ClassProbabilities.pair_lower` (one plane and one mean bound each).
N_PLANE_PIECES = 3


def coupled_planes(link, model, variance, box, lo, hi, upper=False, n_pieces=1):
    """Planes of p_k in (mu, v) over ``n_pieces`` slices of the box's mean
    range, with the variance through its affine enclosure: ``(A, s, Wv,
    nv)`` of shapes (B, n), (B, n), (B, n, N), (B, n) such that, for every
    x in box b whose sklearn mean mu~(x) lies in slice j,

        p~(x) >= A[b, j] + s[b, j] mu~(x) + Wv[b, j] . r(x)   (``upper=False``),
        p~(x) <= A[b, j] + s[b, j] mu~(x) + Wv[b, j] . r(x)   (``upper=True``),

    r(x) = k(Xs, x); the slices [e_j, e_(j+1)] cover [mu_lo, mu_hi]
    (shared computed edges, exact ends). A is -inf (+inf) where no plane is
    proven; None without a finite variance enclosure.

    Proof. :func:`~skgprobust._bounds._link_planes.link_plane` gives, for
    any slopes (s, t), p~(mu, v) >= A0 + s mu + t v on the slice's rectangle
    [e_j, e_(j+1)] x [v_lo, v_hi], which contains (mu~(x), v~(x)) for such
    x. The enclosure gives s2 (C_lo - g . r(x)) <= v~(x) <= s2 (C_hi - g .
    r(x)), so t v~ >= t s2 C - t s2 g . r(x) with C = C_lo for t >= 0 and
    C_hi for t < 0 (upper side: C_hi for t >= 0, C_lo for t < 0): A = A0 +
    t s2 C, Wv = -t s2 g, with the rounding of s2 C (directed 4 u, as in
    :func:`coupled_line`) and of the product and sum forming A (4 u of
    their terms each) taken off (added on the upper side). The slopes are
    those of p at a reference point of the slice (a tangent plane; any
    slopes are valid): the middle of the slice for the upper side, a tenth
    of its width above its lower end for the lower side (the predicted
    class's probability is smallest at low means), the middle of the
    variance range.
    """
    enc = _enclosure(variance, lo, hi)
    if enc is None:
        return None
    g, c_lo, c_hi = enc
    B, n = len(lo), int(n_pieces)
    s2 = float(model.scale[0]) ** 2
    frac = np.linspace(0.0, 1.0, n + 1)
    edges = box.mu_lo[:, None] + (box.mu_hi - box.mu_lo)[:, None] * frac
    edges[:, 0], edges[:, -1] = box.mu_lo, box.mu_hi
    a, b = edges[:, :-1], edges[:, 1:]
    vlo = np.broadcast_to(box.v_lo[:, None], (B, n))
    vhi = np.broadcast_to(box.v_hi[:, None], (B, n))
    with np.errstate(all="ignore"):
        s, t = link.grad(a + (0.5 if upper else 0.1) * (b - a), 0.5 * (vlo + vhi))
        s, t = np.where(np.isfinite(s), s, 0.0), np.where(np.isfinite(t), t, 0.0)
        A0 = link_plane(link, a.ravel(), b.ravel(), vlo.ravel(), vhi.ravel(), s.ravel(), t.ravel(),
                        upper=upper).reshape(B, n)
        if upper:
            C = np.where(t >= 0, c_hi[:, None], c_lo[:, None])
        else:
            C = np.where(t >= 0, c_lo[:, None], c_hi[:, None])
        C = s2 * C * (1.0 + np.where((C >= 0) == ((t < 0) != upper), 1.0, -1.0) * 4 * _U)
        shift = t * C
        err = 4 * _U * np.abs(shift)
        err = err + 4 * _U * (np.abs(A0) + np.abs(shift) + err)
        A = A0 + shift + (err if upper else -err)
    bad = np.inf if upper else -np.inf
    A = np.where(np.isfinite(A), A, bad)
    Wv = -(t * s2)[:, :, None] * g[:, None, :]
    return A, s, Wv, np.abs(Wv).sum(axis=2)


def slice_plane(link, model, variance, box, lo, hi, e0, e1, s, t, upper=False, enc=None):
    """One plane of p_k over the slice [e0, e1] of the box's mean range, with
    the variance through its affine enclosure and the slopes given: ``(A,
    Wv, mu_arg, v_arg)`` of shapes (B,), (B, N), (B,), (B,) such that, for
    every x in box b whose sklearn mean mu~(x) lies in [e0[b], e1[b]],

        p~(x) >= A[b] + s[b] mu~(x) + Wv[b] . r(x)   (``upper=False``),
        p~(x) <= A[b] + s[b] mu~(x) + Wv[b] . r(x)   (``upper=True``),

    r(x) = k(Xs, x); A is -inf (+inf) where no plane is proven (also
    without a finite variance enclosure). ``(mu_arg, v_arg)``: the grid node
    where the plane touches (:func:`link_plane` with ``return_arg``), for
    the caller's ascent over the slopes.

    Proof: that of :func:`coupled_planes` for one slice with the slopes
    (s, t) given instead of a tangent's (any slopes are valid): the slice's
    rectangle [e0, e1] x [v_lo, v_hi] contains (mu~(x), v~(x)) for such x
    (the box's variance range holds sklearn's v~), :func:`link_plane` gives
    the offset A0, the enclosure the term t v~ >= t s2 C - t s2 g . r(x), and
    A = A0 + t s2 C with the rounding of s2 C (directed 4 u) and of the
    product and the sum forming A (4 u of their terms each) taken off
    (added on the upper side). ``enc``: the variance's enclosure
    (:func:`_enclosure`) of these boxes, if the caller has it (computed here
    otherwise); only ``box.v_lo`` and ``box.v_hi`` are read from ``box``.
    """
    B = len(lo)
    bad = np.inf if upper else -np.inf
    enc = _enclosure(variance, lo, hi) if enc is None else enc
    if enc is None:
        return np.full(B, bad), np.zeros((B, len(model.X_support))), 0.5 * (e0 + e1), box.v_lo
    g, c_lo, c_hi = enc
    s2 = float(model.scale[0]) ** 2
    with np.errstate(all="ignore"):
        A0, mu_arg, v_arg = link_plane(link, e0, e1, box.v_lo, box.v_hi, s, t, upper=upper, return_arg=True)
        if upper:
            C = np.where(t >= 0, c_hi, c_lo)
        else:
            C = np.where(t >= 0, c_lo, c_hi)
        C = s2 * C * (1.0 + np.where((C >= 0) == ((t < 0) != upper), 1.0, -1.0) * 4 * _U)
        shift = t * C
        err = 4 * _U * np.abs(shift)
        err = err + 4 * _U * (np.abs(A0) + np.abs(shift) + err)
        A = A0 + shift + (err if upper else -err)
    A = np.where(np.isfinite(A), A, bad)
    Wv = -(t * s2)[:, None] * g
    return A, Wv, mu_arg, v_arg


#: Reference points of the tangent planes of :func:`coupled_plane_bound`, as
#: fractions (of the mean range, of the variance range) of each box's latent
#: rectangle; the best plane per box is kept. Chosen on a fitted breast-cancer
#: GPC (d = 30): ten references were within 0.001 of the best over an 11 x 5
#: grid of references on 21 of 24 root boxes (gamma 0.05 and 0.2, both sides),
#: but the planes' mean-type bounds (a 30 x 30 Taylor model each) took 70% of
#: a row's time at gamma 0.2; these six (and four per slice) reach the same
#: or smaller gaps in 5 s on 5 rows at gamma 0.1 / 0.2 with 1.5-2x the
#: splits (one row converged in 2.4 s instead of 4.4 s).
PLANE_REFS = ((0.1, 0.0), (0.3, 0.0), (0.5, 0.5), (0.8, 0.0), (0.8, 0.25), (0.3, 1.0))


#: The references within each slice of the mean range of the second coupled
#: plane bound of :meth:`ProbaObjective.tighten` (wide boxes: the planes
#: lose the link's curvature over a wide mean range; breast cancer, d = 30,
#: gamma 0.1, root lower end of row 0: 0.862 -> 0.873 with three equal
#: slices, attained 0.891).
SLICE_REFS = ((0.1, 0.0), (0.5, 0.0), (0.5, 0.5), (0.9, 0.0))
#: Edges (fractions of the mean range from the end where the probability's
#: extreme is expected: the mean bound's minimum for the lower side) of the
#: slices of :meth:`ProbaObjective.tighten`: finer toward that end, where a
#: narrow slice keeps the plane close to the link's tangent.
SLICE_EDGES = (0.0, 0.0625, 0.125, 0.25, 0.5, 1.0)
#: The slices are bounded only on the boxes where the planes over the whole
#: mean range come within this of the interval bound (a choice of work:
#: elsewhere the coupling rarely wins; bench_binary_real, 10 rows, gamma
#: 0.2, mean worst gap: RBF 0.0154 / 0.0159 / 0.0190, RBF-ARD 0.0167 /
#: 0.0150 / 0.0154 with no gate / 0.03 / 0).
SLICE_GATE = 0.03


def coupled_plane_bound(link, model, variance, box, lo, hi, upper=False, refs=PLANE_REFS, at=None, beat=None,
                        n_slices=1, x0=None, slice_edges=None):
    """Bound of one latent model's probability over each box from tangent
    planes in (mean, variance), the variance coupled to the mean: ``(bound,
    arg)`` of shapes (B,) and (B, d) with, for every x in box b,

        p~(x) >= bound[b]      (``upper=False``),
        p~(x) <= bound[b]      (``upper=True``),

    p~ the probability as sklearn computes it from its own mean and variance
    (``link``); -inf (+inf) where no plane is proven, or None without a
    finite variance enclosure. ``arg`` is the point of the box where the
    best plane's mean-type part is smallest (largest): a candidate for the
    local search. ``n_slices``: the planes hold on that many slices of the
    box's mean range (equal widths), ``refs`` within each slice; the bound
    is the minimum (maximum) over the slices of each slice's best plane.
    ``slice_edges``: the slices' edges as fractions of the mean range
    (finite, nondecreasing from 0 to 1; repeated edges allowed) instead of
    ``n_slices`` equal ones (``n_slices`` is then ignored).
    ``x0`` (B, d): the point of each box where the variance's affine
    enclosure is tangent (:func:`affine_variance_enclosure`; None: the
    centre). ``at = (mu, v)`` (each (B,) or (B, K)) and ``beat`` (B,): the latent
    mean and variance at K points of each box, and a value to beat; the
    boxes where, at some point, no plane of the slice holding its mean beats
    it there are skipped (a choice of work: the bound is at most the best
    plane of that slice at any point of the box whose mean is in it, and
    every plane is below (above) the link). Returns None where no box is
    left or without a variance enclosure.

    The interval bound (the link's range over the box's latent rectangle)
    takes the mean at one end and the variance at one end at once; the
    attained extreme has them at different points (a fitted breast-cancer
    GPC, d = 30, gamma 0.05: the lowest p~ has the smallest mean but a
    variance of 7.9 where the rectangle's is 10.1; interval 0.850, this
    bound 0.866, attained 0.871).

    Proof. For each reference (f_mu, f_v) of ``refs``, with the slopes (s,
    t) of the link at mu_lo + f_mu (mu_hi - mu_lo), v_lo + f_v (v_hi - v_lo)
    (any slopes are valid), :func:`slice_plane` over the whole mean range
    gives p~(x) >= A + s mu~(x) + Wv . r(x) on the box (the rectangle holds
    sklearn's (mu~(x), v~(x)); upper side: <=). Sklearn's mean is mu~(x) =
    w . r(x) + o up to its sum's rounding, at most margin_rtol(N, d) sum_i
    |w_i| kabs_i with kabs_i >= |k(x, x_i)| on the box (the kernel's
    interval), plus sum_i |w_i| (R_i + mean_rtol A_i) for its kernel values
    k~ against the exact ones (input rounding R and value rounding within
    ``value_ulps`` of the term magnitude A, :meth:`KernelAdapter.value_ulps`;
    affine_lower's own margin covers these only for the combined weights,
    which can cancel), and s >= 0 (the link increases in the mean); the
    weights s w + Wv are computed, within 2 u (|s w_i| + |Wv_i|) of the real
    ones (one product, one sum), also inside margin_rtol(N, d) (>= 256 u)
    times the same kabs. So p~(x) >= A + s o + min over the box of fl(s w +
    Wv) . r(x) - E, with E = margin_rtol(N, d) (|s| |w| + |Wv|) . kabs + s
    |w| . (R + mean_rtol A) + 16 u (|A| + |s o|) (the constant's product
    and sum, second order included),
    and :func:`~skgprobust._bounds._mean.affine_lower` bounds the minimum;
    the two additions forming the bound lose at most 4 u of their terms,
    taken off too. The upper side is the mirror image (the maximum as minus
    the minimum of the negated weights; E added). The best reference per box
    is kept: a maximum (minimum) of valid bounds. Slices: the slices [e_j,
    e_(j+1)] cover [mu_lo, mu_hi] (shared computed edges, exact ends), so
    every x of the box has mu~(x) in some slice j, where p~(x) >= (plane j
    at x) >= (its minimum over the whole box, the constraint dropped) >=
    slice j's bound; hence p~(x) >= the minimum over the slices. The
    computed edges mu_lo + f (mu_hi - mu_lo) are nondecreasing in f
    (rounding is monotone) with the ends set exactly, so consecutive slices
    cover [mu_lo, mu_hi] whatever the fractions; a zero-width slice (a
    repeated edge) is a valid degenerate rectangle for :func:`link_plane`,
    and a slice without a finite plane gives -inf (+inf), the trivial
    bound.
    """
    B, d = lo.shape
    if B == 0 or not has_affine_enclosure(variance):
        return None
    if slice_edges is not None:
        slice_edges = np.asarray(slice_edges, dtype=np.float64)
        if (slice_edges.ndim != 1 or len(slice_edges) < 2 or not np.all(np.isfinite(slice_edges))
                or slice_edges[0] != 0.0 or slice_edges[-1] != 1.0 or not np.all(np.diff(slice_edges) >= 0)):
            raise ValueError(f"slice_edges must be finite and increase from 0 to 1, got {slice_edges}")
        n_slices = len(slice_edges) - 1
    ns, nr = int(n_slices), len(refs)
    n = ns * nr
    f_mu, f_v = (np.asarray(f, dtype=np.float64) for f in zip(*refs))  # (nr,) each
    # Slice edges (ns + 1, B), shared between neighbours, exact ends.
    frac = (np.linspace(0.0, 1.0, ns + 1) if slice_edges is None else slice_edges)[:, None]
    edges = box.mu_lo + frac * (box.mu_hi - box.mu_lo)
    edges[0], edges[-1] = box.mu_lo, box.mu_hi
    # Planes indexed (slice, reference, box), flattened.
    e0 = np.repeat(edges[:-1, None, :], nr, axis=1).ravel()
    e1 = np.repeat(edges[1:, None, :], nr, axis=1).ravel()
    jb = np.tile(np.arange(B), n)  # the box of each plane
    vlo, vhi = box.v_lo[jb], box.v_hi[jb]
    fm = np.repeat(np.tile(f_mu, ns), B)
    fv = np.repeat(np.tile(f_v, ns), B)
    with np.errstate(all="ignore"):
        s, t = link.grad(e0 + fm * (e1 - e0), vlo + fv * (vhi - vlo))
        s = np.where(np.isfinite(s), np.maximum(s, 0.0), 0.0)
        t = np.where(np.isfinite(t), t, 0.0)
        keep = np.ones(B, dtype=bool)
        if at is not None:
            # A slice's bound is at most its best plane at any point of the
            # box whose mean lies in it (the enclosure only moves t v~
            # towards the bound's side); the bound is at most that slice's.
            # Every plane lies below (above) p on its rectangle, so first
            # the link itself at the point (one evaluation per box).
            mu_at, v_at = (np.asarray(a, dtype=np.float64).reshape(B, -1) for a in at)  # (B, K) points
            p_at = link.value(mu_at, np.clip(v_at, box.v_lo[:, None], box.v_hi[:, None]))
            keep = np.all(~(p_at >= beat[:, None]) if upper else ~(p_at <= beat[:, None]), axis=1)
            if not keep.any():
                return None
            A0 = link_plane(link, e0, e1, vlo, vhi, s, t, upper=upper)
            for k in range(mu_at.shape[1]):
                plane = (A0 + s * mu_at[jb, k] + t * v_at[jb, k]).reshape(ns, nr, B)
                with np.errstate(all="ignore"):
                    pos = (mu_at[:, k] - box.mu_lo) / (box.mu_hi - box.mu_lo)
                js = np.clip(np.searchsorted(frac[:, 0], np.where(np.isfinite(pos), pos, 0.0), side="right") - 1,
                             0, ns - 1)
                own = plane[js, :, np.arange(B)]  # (B, nr)
                keep &= own.min(axis=1) < beat if upper else own.max(axis=1) > beat
    if not keep.any():
        return None
    enc = _enclosure(variance, lo, hi, x0=x0)
    if enc is None:
        return None
    idx = np.flatnonzero(keep[jb])
    jb = jb[idx]
    N = len(model.X_support)
    w, o = model.weights[:, 0], float(model.offset[0])
    ad = model.adapter
    klo, khi = ad.interval(lo, hi)
    kabs = np.maximum(np.abs(klo), np.abs(khi))[jb]  # (m, N)
    # sklearn's own kernel values against the exact ones (KernelAdapter.value_ulps):
    # |k~ - k| <= R + value_ulps u A, inside R + mean_rtol A (mean_rtol's budget (iii))
    kerr = mean_kernel_error(ad, lo, hi)[jb]  # (m, N)
    rect = LatentBox(*(getattr(box, f)[jb] for f in _FIELDS))
    LO, HI, s, t = lo[jb], hi[jb], s[idx], t[idx]
    with np.errstate(all="ignore"):
        A, Wv, _, _ = slice_plane(link, model, variance, rect, LO, HI, e0[idx], e1[idx], s, t, upper=upper,
                                  enc=tuple(a[jb] for a in enc))
        W = s[:, None] * w[None] + Wv  # (m, N)
        C = A + s * o
        E = margin_rtol(N, d) * np.einsum("bi,bi->b", s[:, None] * np.abs(w)[None] + np.abs(Wv), kabs) \
            + s * (np.abs(w)[None] * kerr).sum(-1) + 16 * _U * (np.abs(A) + np.abs(s * o))
    bb = affine_lower(model.adapter, -W if upper else W, 0.0, LO, HI)
    low = bb.lower
    bad = np.inf if upper else -np.inf
    val = np.full(n * B, bad)
    args = np.tile(0.5 * (lo + hi), (n, 1))
    args[idx] = bb.argmin
    with np.errstate(all="ignore"):
        if upper:
            v = C - low + E
            v = v + 4 * _U * (np.abs(C) + np.abs(low) + E)
        else:
            v = C + low - E
            v = v - 4 * _U * (np.abs(C) + np.abs(low) + E)
        val[idx] = np.where(np.isnan(v), bad, v)
    val = val.reshape(ns, nr, B)
    args = args.reshape(ns, nr, B, d)
    # best reference per slice, then the worst slice
    r = np.argmin(val, axis=1) if upper else np.argmax(val, axis=1)  # (ns, B)
    per = np.take_along_axis(val, r[:, None, :], axis=1)[:, 0]  # (ns, B)
    j = np.argmax(per, axis=0) if upper else np.argmin(per, axis=0)  # (B,)
    cols = np.arange(B)
    return per[j, cols], args[j, r[j, cols], cols]


#: Directions (besides the link lines') of the joint pairwise bound, and the
#: cells of its grid over the predicted class's mean (:meth:`ClassProbabilities.pair_lower`).
N_DIRECTIONS = 4
N_CELLS = 128
#: Regula falsi steps of the joint bound of a normalised probability (after its two ends).
N_RATIO = 5
#: Fraction of the bracket kept at least between a regula falsi step's t and
#: the failing end (:func:`_ratio_bound`).
RATIO_AIM = 1e-3

#: Per-class kernels in :func:`_ratio_bound`: each kernel group's
#: linearisation computed once per box and scaled for every t tried (False:
#: recomputed per t; the same bound up to rounding, ~25% more time per
#: split on a fitted 4-class model, benchmarks/bench_many_classes.py).
RATIO_SCALED_PARTS = True


class ClassProbabilities:
    """Per-class probabilities of a binary (one latent model) or one-vs-rest
    (one per class) GPC, their gradients and their intervals over boxes.

    Every method takes an optional ``classes`` (indices): the columns
    returned, in that order (default: all classes).
    """

    def __init__(self, models, variances, link=None):
        self.points = [_LatentPoint(m, v) for m, v in zip(models, variances)]
        self.models, self.variances = models, variances
        self.link = link if link is not None else FiveErfLink()
        self.binary = len(models) == 1
        self._boxes = {}  # box key -> {class: (p_lo, p_hi, LatentBox fields)} (p_box)
        # Classes whose latent means share one kernel and support (sklearn's
        # one-vs-rest with a fixed kernel): their means combine into one
        # affine mean, bounded jointly (:meth:`pair_lower`).
        self.group = list(range(len(models)))
        for k, m in enumerate(models):
            for j in range(k):
                if self.group[j] == j and _same_support(models[j], m):
                    self.group[k] = j
                    break
        self._kd_support = {}

    def _idx(self, classes):
        return range(len(self.points)) if classes is None else classes

    def p(self, X, classes=None):
        """Unnormalised p_k (n, K): K = 1 for binary (p1), else per class.
        The kernel values are computed once per group of classes that share
        their kernel and support (:class:`_LatentPoint`)."""
        shared = {}
        cols = []
        for k in self._idx(classes):
            g = self.group[k]
            if g not in shared:
                shared[g] = self.points[k].kernel_values(X)
            cols.append(self.link.value(*self.points[k].values(X, kernel=shared[g])))
        return np.column_stack(cols)

    def p_and_grad(self, X, classes=None):
        ps, gs = [], []
        shared = {}
        for k in self._idx(classes):
            g = self.group[k]
            if g not in shared:
                shared[g] = self.points[k].kernel_values_and_grads(X)
            mu, dmu, v, dv = self.points[k].values_and_grads(X, kernel=shared[g])
            gm, gv = self.link.grad(mu, v)
            ps.append(self.link.value(mu, v))
            gs.append(gm[:, None] * dmu + gv[:, None] * dv)
        return np.column_stack(ps), np.stack(gs, axis=1)  # (n, K), (n, K, d)

    def p_box(self, lo, hi, classes=None):
        """Certified (p_lo, p_hi), each (B, K), and the latent boxes.

        Remembered per box (up to :func:`_box_cache_size` boxes, then
        forgotten all at once): the objectives of one row (min and max of
        every column, the argmax margin and its restriction to the classes
        that can win) split the same root box by the same rule (their split
        scores are the sum over all classes' latent scores), so their
        branch-and-bound trees share most nodes, and every class's latent
        bounds enter each of them; each box is bounded independently of the
        others in its batch (a valid bound of that box whatever the batch),
        so reusing them changes nothing but the time. Not always bitwise the
        same number as the box alone: the batched triangular solves (with
        several right-hand sides) can round differently, by ~1e-14 relative
        (session 31 hunt: EP variance bounds, the variance enclosure's
        weights); every such bound is valid.
        """
        idx = list(self._idx(classes))
        B = len(lo)
        store = self._boxes  # read once: threads may replace it meanwhile
        keys = [lo[b].tobytes() + hi[b].tobytes() for b in range(B)]
        entries = [store.get(key) for key in keys]
        entries = [dict(e) if e is not None else {} for e in entries]
        for k in idx:
            miss = [b for b in range(B) if k not in entries[b]]
            if not miss:
                continue
            m = np.asarray(miss)
            bx = latent_box(self.models[k], self.variances[k], lo[m], hi[m])
            pl, ph = self.link.range(bx.mu_lo, bx.mu_hi, bx.v_lo, bx.v_hi)
            fields = [getattr(bx, f) for f in _FIELDS]
            for j, b in enumerate(miss):
                entries[b][k] = (pl[j], ph[j]) + tuple(f[j] for f in fields)
        if len(store) + B > _box_cache_size(len(self.models), lo.shape[1]):
            store = self._boxes = {}
        for key, e in zip(keys, entries):
            store[key] = e
        p_lo = np.array([[entries[b][k][0] for k in idx] for b in range(B)]).reshape(B, len(idx))
        p_hi = np.array([[entries[b][k][1] for k in idx] for b in range(B)]).reshape(B, len(idx))
        boxes = [
            LatentBox(*(np.array([entries[b][k][2 + i] for b in range(B)]) for i in range(len(_FIELDS))))
            for k in idx
        ]
        return p_lo, p_hi, boxes

    def p_centre(self, lo, hi):
        """:meth:`p` (B, K) at each box's centre, remembered with the box's
        latent bounds in :meth:`p_box`'s cache (each of a row's objectives
        asks for it on the same boxes); boxes not in the cache are computed
        and not stored."""
        lo, hi = np.asarray(lo), np.asarray(hi)
        store = self._boxes
        keys = [lo[b].tobytes() + hi[b].tobytes() for b in range(len(lo))]
        found = [store.get(key) for key in keys]
        miss = [b for b, e in enumerate(found) if e is None or "centre" not in e]
        out = np.empty((len(lo), len(self.points)))
        if miss:
            m = np.asarray(miss)
            out[m] = self.p(0.5 * (lo[m] + hi[m]))
            for b in miss:
                if found[b] is not None:
                    found[b]["centre"] = out[b].copy()
        computed = set(miss)
        for b, e in enumerate(found):
            if b not in computed:
                out[b] = e["centre"]
        return out

    def __getstate__(self):  # the box cache stays behind (workers start empty)
        state = dict(self.__dict__)
        state["_boxes"] = {}
        return state


    def prior_upper(self, lo, hi, classes):
        """Upper bounds (B, K) of p_k over each box from the mean bound and
        the prior variance only: var_k(x) in [0, scale^2 k(x, x)] (sklearn's
        variance is k(x, x) minus a sum of squares), so p_k <= p(mu_hi, v)
        at v = 0 (mu_hi >= 0) or v = scale^2 max k(x, x) (mu_hi < 0). About a
        third of the cost of :meth:`p_box`: no variance bound."""
        B = len(lo)
        out = np.empty((B, len(classes)))
        classes = list(classes)
        for g in dict.fromkeys(self.group[k] for k in classes):  # one mean-bound call per kernel group
            js = [j for j, k in enumerate(classes) if self.group[k] == g]
            ms = [self.models[classes[j]] for j in js]
            W = np.concatenate([np.broadcast_to(-m.weights[:, 0], (B, len(m.weights))) for m in ms])
            c = np.concatenate([np.full(B, -float(m.offset[0])) for m in ms])
            n = len(js)
            mu_hi = -affine_lower(ms[0].adapter, W, c, np.tile(lo, (n, 1)), np.tile(hi, (n, 1))).lower.reshape(n, B)
            dhi = ms[0].adapter.diag_interval(lo, hi)[1]
            for i, (j, m) in enumerate(zip(js, ms)):
                v_hi = np.abs(float(m.scale[0]) ** 2 * dhi) * (1.0 + 1e-12) + 1e-300
                out[:, j] = self.link.range(mu_hi[i], mu_hi[i], np.zeros(B), v_hi)[1]
        return out

    def _kmax(self, g, lo, hi):
        """kmax >= max_i |k_g(x, x_i)| over each box for kernel group g:
        sqrt(k(x, x) max_i k(x_i, x_i)) (positive semi-definite kernel)."""
        m = self.models[g]
        kd = self._kd_support.get(g)
        if kd is None:
            kd = self._kd_support[g] = float(np.max(m.adapter.diag(m.X_support), initial=0.0))
        return np.sqrt(np.maximum(m.adapter.diag_interval(lo, hi)[1], 0.0) * max(kd, 0.0))

    def _pair_lower_across(self, lo, hi, c, ks, boxes_k, bc):
        """Coupled-line lower bounds (B, len(ks)) of p_c - p_k for classes k
        in another kernel group than c, and the relaxations' minimisers.

        Proof: as the coupled-lines bound of :meth:`pair_lower`, p_c - p_k >=
        A_c + s_c o_c - A_k - s_k o_k + (s_c w_c + Wv_c) . r_c(x) - (s_k w_k +
        Wv_k) . r_k(x), now with two kernel vectors r_c, r_k: a sum of two
        affine means in different kernels, bounded jointly by
        :func:`~skgprobust._bounds._mean.affine_lower_parts`. Rounding as in
        :meth:`pair_lower`, with each part's margin_rtol(N, d) kmax of its
        own kernel, and each class's s |w| . :func:`mean_kernel_error` of its
        own kernel (sklearn's kernel values in its mean against the exact
        r(x) of the variance term).
        """
        B, d = lo.shape
        link, mc = self.link, self.models[c]
        A_c, s_c, Wv_c, nv_c = coupled_line(link, mc, self.variances[c], bc, lo, hi)
        wc, oc = mc.weights[:, 0], float(mc.offset[0])
        km_c = margin_rtol(len(wc), d) * self._kmax(self.group[c], lo, hi)
        kerrs = {self.group[c]: mean_kernel_error(mc.adapter, lo, hi)}  # per kernel group (B, N)
        ec = np.abs(s_c) * (kerrs[self.group[c]] @ np.abs(wc))  # (B,)
        out, args = np.full((B, len(ks)), np.nan), np.repeat(0.5 * (lo + hi)[:, None, :], len(ks), axis=1)
        for j, (k, bk) in enumerate(zip(ks, boxes_k)):
            mk = self.models[k]
            wk, ok = mk.weights[:, 0], float(mk.offset[0])
            A_k, s_k, Wv_k, nv_k = coupled_line(link, mk, self.variances[k], bk, lo, hi, upper=True)
            if self.group[k] not in kerrs:
                kerrs[self.group[k]] = mean_kernel_error(mk.adapter, lo, hi)
            parts = [(mc.adapter, s_c[:, None] * wc[None] + Wv_c), (mk.adapter, -(s_k[:, None] * wk[None] + Wv_k))]
            bb = affine_lower_parts(parts, 0.0, lo, hi, separate=False)
            cc = A_c + s_c * oc - A_k - s_k * ok
            cmag = np.abs(A_c) + np.abs(s_c * oc) + np.abs(A_k) + np.abs(s_k * ok)
            err = (km_c * (s_c * np.abs(wc).sum() + nv_c)
                   + margin_rtol(len(wk), d) * self._kmax(self.group[k], lo, hi) * (s_k * np.abs(wk).sum() + nv_k)
                   + ec + np.abs(s_k) * (kerrs[self.group[k]] @ np.abs(wk)) + 16 * _U * cmag)
            with np.errstate(invalid="ignore"):
                low = bb.lower + cc - err - 4 * _U * (np.abs(bb.lower) + np.abs(cc) + err)
            out[:, j] = np.where(np.isfinite(low), low, np.nan)
            args[:, j] = bb.argmin
        return out, args

    def pair_lower(self, lo, hi, c, others, boxes, todo=None):
        """Joint lower bounds of ``p_c(x) - p_k(x)`` over each box, for each
        k in ``others`` (NaN where ``todo`` (B, K) is False or no joint
        bound applies). The proof below is for k sharing c's kernel and
        support; other k get the coupled lines only (end of this docstring).

        Proof. Let G_c(a) = min over v in [v_lo_c, v_hi_c] of p(a, v) and
        H_k(b) = max over v in [v_lo_k, v_hi_k] of p(b, v) (closed forms by
        the link's monotonicity in v, :mod:`~skgprobust._bounds._links`);
        both are increasing, and p_c(x) - p_k(x) >= G_c(mu_c(x)) -
        H_k(mu_k(x)) on the box (``boxes``: the :class:`LatentBox` of c then
        those of ``others``, which contain (mu(x), v(x))). For directions
        (S, T) with S >= 0, T > 0, the combined mean S mu_c - T mu_k =
        S o_c - T o_k + sum_i (S w_ci - T w_ki) k(x, x_i) is one affine mean
        in the shared kernel, and :func:`~skgprobust._bounds._mean.affine_lower`
        gives S mu_c(x) - T mu_k(x) >= L_(S,T) on the box: so mu_k(x) <=
        b_max(mu_c(x)) with b_max(a) = min(mu_hi_k, min_(S,T) (S a - L) / T),
        increasing in a. Over a grid a_0 = mu_lo_c < ... < a_n = mu_hi_c, any
        x has mu_c(x) in some [a_i, a_(i+1)], where p_c(x) - p_k(x) >=
        G_c(a_i) - H_k(b_max(a_(i+1))); the minimum over the cells is the
        bound. Directions: the slopes of the link lines of
        :meth:`Link.lines` (with it, the bound is at least the linearised
        one, a_c - a_k + L, up to the grid) and ``N_DIRECTIONS`` angles
        scaled by the widths of the two mean intervals; the correlation of
        the two means, which separate intervals lose, is kept.

        Rounding: the combined weights and sklearn's two separate sums err
        by at most margin_rtol(N, d) (S ||w_c||_1 + T ||w_k||_1) max|k(x,
        x_i)|, subtracted from L, with |k(x, x_i)| <= sqrt(k(x, x) max_i
        k(x_i, x_i)) (positive semi-definite kernel); b_max is raised by
        1e-12 of its terms; G and H carry the link's margin.

        Variance coupled to the mean: besides the grid, each pair gets the
        bound of the coupled lines (:func:`coupled_line`): p_c(x) >= A_c +
        s_c mu_c(x) + Wv_c . r(x) and p_k(x) <= A_k + s_k mu_k(x) + Wv_k .
        r(x), so p_c - p_k >= A_c + s_c o_c - A_k - s_k o_k + min over the
        box of (s_c w_c + Wv_c - s_k w_k - Wv_k) . r(x): one mean-type bound
        (in the same :func:`affine_lower` call as the grid's directions),
        less margin_rtol(N, d) kmax (s_c ||w_c||_1 + ||Wv_c||_1 + s_k
        ||w_k||_1 + ||Wv_k||_1) for the rounding of the combined weights and
        of sklearn's sums, plus s_c |w_c| . (R + mean_rtol A) + s_k |w_k| .
        (R + mean_rtol A) for sklearn's kernel values in its two means
        against the exact r(x) of the variance terms (input rounding R,
        value rounding within ``value_ulps`` of the magnitude A), and 16 u
        (|A_c| + |s_c o_c| + |A_k| + |s_k o_k|) for the constant's (two products and three sums, each within u of a
        partial sum bounded by that magnitude; 16 > 5 covers the second
        order). The directions' constants S o_c - T o_k likewise get 8 u
        (|S o_c| + |T o_k|) (sklearn's GPC latent means have o = 0: exact). The larger of the two
        valid bounds is returned. It keeps the correlation between each
        class's variance and its mean (and the other class's): measured on
        the 10-class digits model it wins on 80-100% of the pairs of boxes of
        half-width <= 0.02 (by up to 0.006), never at 0.05 (there the mean
        ranges are wide or cross 0, the link lines lose more than the
        coupling gains, and kappa is 0).

        Coupled planes (:func:`coupled_planes`): where a mean range crosses
        0 (the predicted class on a wide box) the coupled line has no
        variance term, and the competitor's line is a chord of a convex
        function over a wide mean range. So each pair also gets p_c(x) >=
        A_c + s_c mu_c(x) + Wv_c . r(x) (a tangent plane of the link in
        (mu, v) over c's whole rectangle, variance through its enclosure)
        and, for each of ``N_PLANE_PIECES`` slices j of k's mean range,
        p_k(x) <= A_kj + s_kj mu_k(x) + Wv_kj . r(x) wherever mu_k(x) is in
        slice j. Every x has mu_k(x) in some slice, so p_c - p_k >= min_j
        [A_c + s_c o_c - A_kj - s_kj o_k + min over the box of (s_c w_c +
        Wv_c - s_kj w_k - Wv_kj) . r(x)] (the constraint "mu_k(x) in slice
        j" dropped: each term is still a lower bound on its slice); one
        mean-type bound per slice, in the same :func:`affine_lower` call,
        with the rounding margins of the coupled lines. The larger of this
        and the coupled lines' bound is the coupled bound. Measured on the
        10-class digits model at gamma 0.05 (root boxes): row 37's margin
        bound -0.031 -> +0.010 (true minimum 0.024; 2 slices: +0.003, 1
        slice: -0.020).

        Classes k in another kernel group than c (fitted per-class kernels)
        get the coupled-lines bound only (:meth:`_pair_lower_across`: the
        two lines' kernel vectors differ, the sum is bounded jointly).

        Returns the bounds (B, K) and the minimisers of the relaxations of
        the direction that is binding in the worst cell (B, K, d).
        """
        B, d = lo.shape
        K = len(others)
        out = np.full((B, K), np.nan)
        args = np.repeat(0.5 * (lo + hi)[:, None, :], K, axis=1)
        todo = np.ones((B, K), dtype=bool) if todo is None else np.asarray(todo, dtype=bool)
        pair = [j for j, k in enumerate(others) if self.group[k] == self.group[c] and todo[:, j].any()]
        cross = [j for j, k in enumerate(others) if self.group[k] != self.group[c] and todo[:, j].any()]
        if cross and B:
            try:
                low, am = self._pair_lower_across(lo, hi, c, [others[j] for j in cross],
                                                  [boxes[1 + j] for j in cross], boxes[0])
            except (UnsupportedKernelError, NotImplementedError):  # no diagonal bound for a kernel: no joint bound
                low = None
            if low is not None:
                out[:, cross] = np.where(todo[:, cross], low, np.nan)
                args[:, cross] = am
        if not pair or B == 0:
            return out, args
        link = self.link
        mc = self.models[c]
        adapter = mc.adapter
        N = len(mc.X_support)
        kd = self._kd_support.get(self.group[c])
        if kd is None:
            kd = self._kd_support[self.group[c]] = float(np.max(adapter.diag(mc.X_support), initial=0.0))
        try:
            dhi = adapter.diag_interval(lo, hi)[1]
        except Exception:  # no diagonal bound for this kernel: no joint bound
            return out, args
        kmax = np.sqrt(np.maximum(dhi, 0.0) * max(kd, 0.0))
        # The coupled rows mix sklearn's means (its kernel values k~) with the
        # exact r(x) of the variance terms, so the means' own rounding (input
        # rounding R and value rounding within mean_rtol of the magnitude A,
        # KernelAdapter.value_ulps) is charged per class, not only on the
        # combined weights (which can cancel) as affine_lower does.
        kerr = mean_kernel_error(adapter, lo, hi)  # (B, N)
        bc = boxes[0]
        _, s_line_c = link.lines(bc.mu_lo, bc.mu_hi, bc.v_lo, bc.v_hi)
        wc, oc = mc.weights[:, 0], float(mc.offset[0])
        n1c = np.abs(wc).sum()
        ang = (np.arange(N_DIRECTIONS) + 1.0) * (0.5 * np.pi / (N_DIRECTIONS + 1))
        width_c = np.where(bc.mu_hi > bc.mu_lo, bc.mu_hi - bc.mu_lo, 1.0)
        D = N_DIRECTIONS + 1
        rows, S_all, T_all, C_all, E_all = [], [], [], [], []
        # The coupled line of c (variance coupled to the mean, coupled_line).
        cl = coupled_line(link, mc, self.variances[c], bc, lo, hi)
        crow, cconst, cerr = [], [], []
        # The coupled planes (coupled_planes): c's plane, and each k's in N_PLANE_PIECES slices.
        cp = coupled_planes(link, mc, self.variances[c], bc, lo, hi)
        n_pc = N_PLANE_PIECES if cp is not None else 0
        prow, pconst, perr = [], [], []
        for j in pair:
            k = others[j]
            bk = boxes[1 + j]
            _, s_line_k = link.lines(bk.mu_lo, bk.mu_hi, bk.v_lo, bk.v_hi, upper=True)
            width_k = np.where(bk.mu_hi > bk.mu_lo, bk.mu_hi - bk.mu_lo, 1.0)
            # (B, D): the link lines' direction (T > 0 required), then the angles.
            S = np.column_stack([np.where(s_line_k > 0, s_line_c, 1.0 / width_c)]
                                + [np.cos(a) / width_c for a in ang])
            T = np.column_stack([np.where(s_line_k > 0, s_line_k, 1.0 / width_k)]
                                + [np.sin(a) / width_k for a in ang])
            mk = self.models[k]
            wk, ok = mk.weights[:, 0], float(mk.offset[0])
            rows.append(S[:, :, None] * wc[None, None] - T[:, :, None] * wk[None, None])  # (B, D, N)
            S_all.append(S)
            T_all.append(T)
            C_all.append(S * oc - T * ok)
            # Weights' and sklearn's sums (margin_rtol), and S o_c - T o_k's own three roundings.
            E_all.append(margin_rtol(N, d) * kmax[:, None] * (S * n1c + T * np.abs(wk).sum())
                         + 8 * _U * (np.abs(S * oc) + np.abs(T * ok)))
            # Coupled lines: p_c - p_k >= (A_c + s_c mu_c + Wv_c . r) - (A_k + s_k mu_k + Wv_k . r).
            A_k, s_k, Wv_k, nv_k = coupled_line(link, mk, self.variances[k], bk, lo, hi, upper=True)
            A_c, s_c, Wv_c, nv_c = cl
            crow.append(s_c[:, None] * wc[None] + Wv_c - s_k[:, None] * wk[None] - Wv_k)
            cc = A_c + s_c * oc - A_k - s_k * ok
            cconst.append(cc)
            # The constant: 2 products and 3 sums, each within u of a partial
            # sum of magnitude <= cmag; 16 u cmag covers them (and 2nd order).
            cmag = np.abs(A_c) + np.abs(s_c * oc) + np.abs(A_k) + np.abs(s_k * ok)
            ec, ek = np.abs(wc) @ kerr.T, np.abs(wk) @ kerr.T  # (B,) each
            cerr.append(margin_rtol(N, d) * kmax * (s_c * n1c + nv_c + s_k * np.abs(wk).sum() + nv_k)
                        + np.abs(s_c) * ec + np.abs(s_k) * ek + 16 * _U * cmag)
            if n_pc:
                # Planes: p_c - p_k >= (A_c + s_c mu_c + Wv_c . r) - (A_kj + s_kj mu_k + Wv_kj . r)
                # wherever mu_k(x) is in slice j; the minimum over the slices holds everywhere.
                kp = coupled_planes(link, mk, self.variances[k], bk, lo, hi, upper=True, n_pieces=n_pc)
                if kp is None:
                    kp = (np.full((B, n_pc), np.inf), np.zeros((B, n_pc)), np.zeros((B, n_pc, N)),
                          np.zeros((B, n_pc)))
                Ap_c, sp_c, Wvp_c, nvp_c = (cp[0][:, 0], cp[1][:, 0], cp[2][:, 0], cp[3][:, 0])
                Ap_k, sp_k, Wvp_k, nvp_k = kp
                prow.append((sp_c[:, None] * wc[None] + Wvp_c)[:, None, :] - sp_k[:, :, None] * wk[None, None]
                            - Wvp_k)  # (B, n, N)
                pc = (Ap_c + sp_c * oc)[:, None] - Ap_k - sp_k * ok
                pconst.append(pc)
                pmag = (np.abs(Ap_c) + np.abs(sp_c * oc))[:, None] + np.abs(Ap_k) + np.abs(sp_k * ok)
                perr.append(margin_rtol(N, d) * kmax[:, None] * ((np.abs(sp_c) * n1c + nvp_c)[:, None]
                                                                 + np.abs(sp_k) * np.abs(wk).sum() + nvp_k)
                            + (np.abs(sp_c) * ec)[:, None] + np.abs(sp_k) * ek[:, None] + 16 * _U * pmag)
        P = len(pair)
        W = np.concatenate([np.stack(rows).reshape(P * B * D, N), np.stack(crow).reshape(P * B, N)]
                           + ([np.stack(prow).reshape(P * B * n_pc, N)] if n_pc else []))
        LO = np.concatenate([np.broadcast_to(lo[None, :, None], (P, B, D, d)).reshape(-1, d), np.tile(lo, (P, 1))]
                            + ([np.broadcast_to(lo[None, :, None], (P, B, n_pc, d)).reshape(-1, d)] if n_pc else []))
        HI = np.concatenate([np.broadcast_to(hi[None, :, None], (P, B, D, d)).reshape(-1, d), np.tile(hi, (P, 1))]
                            + ([np.broadcast_to(hi[None, :, None], (P, B, n_pc, d)).reshape(-1, d)] if n_pc else []))
        bb_all = affine_lower(adapter, W, 0.0, LO, HI)
        nD = P * B * D
        bb = BoxBound(bb_all.lower[:nD], bb_all.argmin[:nD], None)
        cl_low, cc_all, ce_all = bb_all.lower[nD:nD + P * B].reshape(P, B), np.stack(cconst), np.stack(cerr)
        # ... and the two additions here: 4 u of their terms.
        coupled = cl_low + cc_all - ce_all - 4 * _U * (np.abs(cl_low) + np.abs(cc_all) + ce_all)
        if n_pc:
            pl_low, pc_all, pe_all = bb_all.lower[nD + P * B:].reshape(P, B, n_pc), np.stack(pconst), np.stack(perr)
            with np.errstate(invalid="ignore"):
                planes = pl_low + pc_all - pe_all - 4 * _U * (np.abs(pl_low) + np.abs(pc_all) + pe_all)
                planes = np.where(np.isnan(planes), -np.inf, planes).min(axis=-1)
            coupled = np.fmax(coupled, planes)
        coupled_arg = bb_all.argmin[nD:nD + P * B].reshape(P, B, d)
        S, T = np.stack(S_all), np.stack(T_all)  # (P, B, D)
        b_low, c_dir, e_dir = bb.lower.reshape(P, B, D), np.stack(C_all), np.stack(E_all)
        Lb = b_low + c_dir - e_dir - 4 * _U * (np.abs(b_low) + np.abs(c_dir) + e_dir)  # (and its additions)
        # Grid over mu_c: a (B, n + 1), exact ends.
        frac = np.linspace(0.0, 1.0, N_CELLS + 1)
        a = bc.mu_lo[:, None] + (bc.mu_hi - bc.mu_lo)[:, None] * frac
        a[:, 0], a[:, -1] = bc.mu_lo, bc.mu_hi
        with np.errstate(all="ignore"):
            G = link.value(a, np.where(a >= 0, bc.v_hi[:, None], bc.v_lo[:, None])) - link.margin  # (B, n + 1)
            Sa = S[..., None] * a[None, :, None, :]  # (P, B, D, n + 1)
            bnd = (Sa - Lb[..., None]) / T[..., None]
            bnd = bnd + 1e-12 * (np.abs(Sa) + np.abs(Lb[..., None])) / T[..., None] + 1e-12 * np.abs(bnd)
            bnd = np.where(np.isnan(bnd), np.inf, bnd)
            which = np.argmin(bnd, axis=2)  # (P, B, n + 1)
            bmax = np.min(bnd, axis=2)
            mu_lo_k = np.stack([boxes[1 + j].mu_lo for j in pair])[..., None]
            mu_hi_k = np.stack([boxes[1 + j].mu_hi for j in pair])[..., None]
            v_lo_k = np.stack([boxes[1 + j].v_lo for j in pair])[..., None]
            v_hi_k = np.stack([boxes[1 + j].v_hi for j in pair])[..., None]
            b = np.clip(bmax, mu_lo_k, mu_hi_k)
            H = link.value(b, np.where(b >= 0, v_lo_k, v_hi_k)) + link.margin  # (P, B, n + 1)
            cells = G[None, :, :-1] - H[:, :, 1:]  # (P, B, n)
            low = cells.min(axis=-1)
            coupled = np.where(np.isnan(coupled), -np.inf, coupled)
            use_c = coupled > low
            low = np.where(use_c, coupled, low)
        ok = (np.isfinite(bc.mu_lo) & np.isfinite(bc.mu_hi))[None] & np.isfinite(mu_lo_k[..., 0]) \
            & np.isfinite(mu_hi_k[..., 0]) & ~np.isnan(low)
        low = np.where(ok, low, np.nan)
        todo_p = todo[:, pair].T
        out[:, pair] = np.where(todo_p, low, np.nan).T
        # Candidate point: the relaxation minimiser of the direction binding at the worst cell.
        worst = np.argmin(np.where(np.isnan(cells), np.inf, cells), axis=-1)  # (P, B)
        dsel = np.take_along_axis(which, (worst + 1)[..., None], -1)[..., 0]  # (P, B)
        am = bb.argmin.reshape(P, B, D, d)
        pick = np.take_along_axis(am, dsel[..., None, None], 2)[:, :, 0]  # (P, B, d)
        pick = np.where(use_c[..., None], coupled_arg, pick)
        args[:, pair] = pick.transpose(1, 0, 2)
        return out, args


def _ratio_bound(probs, lo, hi, c, boxes, t_lo, t_hi, upper):
    """Joint bound of the normalised ``P_c = p_c / sum_k p_k`` over each box
    (one-vs-rest): the largest t with P_c >= t (``upper=False``; None of the
    t tried: ``t_lo``) or the smallest t with P_c <= t (``upper=True``; else
    ``t_hi``), and a candidate point per box.

    Proof (lower side). :func:`coupled_line` gives p_c(x) >= l_c(x) = a_c +
    s_c mu_c(x) + Wv_c . r_c(x) and p_k(x) <= u_k(x) = a_k + s_k mu_k(x) +
    Wv_k . r_k(x) on the box (the link lines of :meth:`Link.lines` with each
    class's variance coupled to its mean; Wv = 0 without coupling; r_k(x) =
    k_k(x, X_k) the kernel vector of class k's own kernel). If F_t(x) =
    (1 - t) l_c(x) - t sum_(k != c) u_k(x) >= 0 on the box, then (1 - t)
    p_c >= t sum_(k != c) p_k, i.e. P_c >= t (p_c + R > 0). F_t is a sum of
    affine means, one per kernel group (classes whose kernel and support
    coincide, ``ClassProbabilities.group``, share one weight vector:
    (1 - t) (s_c w_c + Wv_c) - t sum (s_k w_k + Wv_k) over the group's
    classes), bounded jointly by
    :func:`~skgprobust._bounds._mean.affine_lower_parts` (one part when all
    classes share a kernel, as sklearn's one-vs-rest with a fixed kernel;
    one part per class when each class fitted its own kernel). The upper
    side is the same with t sum l_k - (1 - t) u_c. The t tried: the two
    ends of the search range, then ``N_RATIO`` regula falsi (Illinois)
    steps on the certified bound of F_t between the best proven t and the
    nearest failing one; only a t that passed is returned. A group that holds
    only class c or only other classes (per-class kernels) has weights s V
    for one fixed V and a scalar s >= 0 per t: its relaxation and Taylor
    model of V are computed once per box and scaled (s times a valid model
    of V is a valid model of s V; ``TaylorModel.scaled`` takes the products'
    rounding off), so the t tried cost no new kernel evaluations.

    Rounding. (i) The combined weights and sklearn's separate sums: each
    group contributes margin_rtol(N_g, d) kmax_g (|1 - t| A_g^c + |t|
    A_g^r), A the summed |weights| (||Wv||_1 included) of the group's lines
    and kmax_g >= max_i |k_g(x, x_i)| over the box (sqrt(k(x, x) max_i
    k(x_i, x_i)), positive semi-definite kernel), as in
    :meth:`ClassProbabilities.pair_lower`; and per class |coef_k| s_k |w_k|
    . :func:`mean_kernel_error` (sklearn's kernel values in its means
    against the exact r(x) of the coupled variance terms: the combined
    weights' input rounding does not cover them where they cancel). (ii) The constant C = (1 - t)
    (a_c + s_c o_c) - t sum (a_k + s_k o_k) is computed with at most 3 K + 2
    roundings (3 per k != c: a product and two sums; 2 for the c term; 3
    for the final combination), each of relative size u of a partial sum
    whose magnitude is at most Cmag = |1 - t| (|a_c| + |s_c o_c|) + |t| sum
    (|a_k| + |s_k o_k|) (every product and sum of nonnegative magnitudes),
    so it errs by at most (3 K + 2) u Cmag (first order). The margin
    subtracted is 2 (2 K + 4) u Cmag = (4 K + 8) u Cmag >= (3 K + 2) u Cmag
    plus room for the higher-order terms and t's own rounding (t is a
    computed number in [0, 1], and the bound holds for the t actually used),
    plus margin (i), and the two additions
    of the bound, the constant and the margin cost 4 u of their sizes.

    Where every class shares one kernel (``QUAD_RATIO``), each t's test
    also gets the quadratic relaxation of :class:`_QuadRatio` (another valid
    lower bound of min F_t over the box; the larger of the two is used): it
    keeps the curvature of each p_k in its mean that the lines' chords lose.
    A single box (the branch and bound's root; ``SLICE_MAX_BOXES``) whose
    proven t is still far from the value attained at the relaxation's
    minimiser then gets :func:`_slice_refine`: latent slices of two classes'
    mean ranges (:meth:`_QuadRatio.sliced`), whose every node must pass. At
    a single box (``AFFINE_MAX_BOXES``) a t the relaxation fails also gets
    its variant with affine variance slopes (:meth:`_QuadRatio._affine_terms`,
    the larger of the two bounds is used; optional work, skipped past the
    row's deadline of :mod:`skgprobust._engine._deadline`).
    """
    B, d = lo.shape
    K = len(boxes)
    link = probs.link
    # Coupled lines (coupled_line): each class's variance enters linearly in r_k(x).
    lines = [coupled_line(link, probs.models[k], probs.variances[k], b, lo, hi, upper=(k == c) == upper)
             for k, b in enumerate(boxes)]
    # Per kernel group: the class's line weights (Wc) and the others' (Wr), their |.| sums, kmax.
    parts = {}
    Cc, Cr, Mc, Mr = np.zeros(B), np.zeros(B), np.zeros(B), np.zeros(B)
    Kc, Kr, kerrs = np.zeros(B), np.zeros(B), {}  # per class s_k |w_k| . mean_kernel_error; per group (R, it)
    for k in range(K):
        g = probs.group[k]
        if g not in parts:
            m = probs.models[g]
            N = len(m.X_support)
            kd = probs._kd_support.get(g)
            if kd is None:
                kd = probs._kd_support[g] = float(np.max(m.adapter.diag(m.X_support), initial=0.0))
            kmax = np.sqrt(np.maximum(m.adapter.diag_interval(lo, hi)[1], 0.0) * max(kd, 0.0))
            parts[g] = [m.adapter, np.zeros((B, N)), np.zeros((B, N)), np.zeros(B), np.zeros(B),
                        margin_rtol(N, d) * kmax, [False, False], {}]
        a_k, s_k, Wv_k, nv_k = lines[k]
        m = probs.models[k]
        o_k = float(m.offset[0])
        part = parts[g]
        j = 1 if k == c else 2  # weights of the class / of the rest
        part[6][j - 1] = True
        part[j] = part[j] + s_k[:, None] * m.weights[None, :, 0] + Wv_k
        part[j + 2] = part[j + 2] + s_k * np.abs(m.weights[:, 0]).sum() + nv_k
        if g not in kerrs:
            kerrs[g] = mean_kernel_error(m.adapter, lo, hi, with_rounding=True)
        ek = np.abs(s_k) * (kerrs[g][1] @ np.abs(m.weights[:, 0]))
        if k == c:
            Cc, Mc, Kc = a_k + s_k * o_k, np.abs(a_k) + np.abs(s_k * o_k), ek
        else:
            Cr, Mr, Kr = Cr + a_k + s_k * o_k, Mr + np.abs(a_k) + np.abs(s_k * o_k), Kr + ek
    parts = [part + [kerrs[g][0]] for g, part in parts.items()]  # + the group's adapter.rounding(lo, hi)
    lo_d, hi_d = lo, hi
    h_d = 0.5 * (hi - lo)

    def linearised(part, sc, sr):
        """The part's (relaxation, model) for the weights sc Wc + sr Wr, and
        its rounding (``adapter.rounding``). A part that holds only the
        class c or only other classes (each class its own kernel: sklearn's
        one-vs-rest with fitted kernels) has weights s V with V = +-Wc or
        +-Wr fixed and s = |sc| or |sr| >= 0: its linearisation of V is
        computed once per sign and scaled for every t
        (:meth:`~skgprobust.kernels._base.TaylorModel.scaled`: s times a
        valid model is a valid model of s V, its products' rounding taken
        off). None: computed afresh by the caller."""
        adapter, Wc, Wr, _, _, _, (has_c, has_r), cache, R = part
        if has_c == has_r or not RATIO_SCALED_PARTS:
            return None
        s, W = (sc, Wc) if has_c else (sr, Wr)
        sign = 1.0 if np.all(s >= 0) else (-1.0 if np.all(s <= 0) else 0.0)
        if sign == 0.0:
            return None
        if sign not in cache:
            V = sign * W
            cache[sign] = (adapter.linearise(lo_d, hi_d, V), R)
        (r, tm), E = cache[sign]
        a = np.abs(s)
        return (r.scaled(a, h_d), None if tm is None else tm.scaled(a, h_d)), E

    def psi(t):
        """Certified lower bound of min over the box of F_t (B,), and the
        relaxation's minimiser; F_t >= 0 on the box iff psi(t) >= 0 proves t."""
        sc, sr = (-(1 - t), t) if upper else ((1 - t), -t)  # signs of the class's and the rest's lines
        # upper: t R_low - (1 - t) u_c >= 0  =>  P_c <= t;  lower: (1 - t) l_c - t R_up >= 0  =>  P_c >= t
        C = sc * Cc + sr * Cr
        E = 2 * (2 * K + 4) * _U * (np.abs(sc) * Mc + np.abs(sr) * Mr) + np.abs(sc) * Kc + np.abs(sr) * Kr
        ws, lins, rounds = [], [], []
        for part in parts:
            adapter, Wc, Wr, Ac, Ar, rk = part[:6]
            ws.append((adapter, sc[:, None] * Wc + sr[:, None] * Wr))
            E = E + rk * (np.abs(sc) * Ac + np.abs(sr) * Ar)
            cached = linearised(part, sc, sr)
            if cached is None:
                cached = adapter.linearise(lo_d, hi_d, ws[-1][1]), part[8]
            lins.append(cached[0])
            rounds.append(cached[1])
        bb = affine_lower_parts(ws, 0.0, lo_d, hi_d, separate=False, linearised=lins, roundings=rounds)
        with np.errstate(invalid="ignore"):
            val = bb.lower + C - E - 4 * _U * (np.abs(bb.lower) + np.abs(C) + E)  # the two additions
        val, arg = np.where(np.isnan(val), -np.inf, val), bb.argmin
        if quad is not None:  # the quadratic relaxation (_QuadRatio): the larger of two valid bounds
            qv, qarg = quad(sc, sr)
            if quad.affine_ok and (qv < 0).any() and not optional_work_expired() and quad.aff is not None:
                # Its variant with affine variance slopes (root box; only where the plain one fails;
                # optional work: not past the row's deadline, :mod:`._deadline`).
                qv2, qarg2 = quad(sc, sr, affine=True)
                b2 = qv2 > qv
                qv, qarg = np.where(b2, qv2, qv), np.where(b2[:, None], qarg2, qarg)
            better = qv > val
            val, arg = np.where(better, qv, val), np.where(better[:, None], qarg, arg)
        return val, arg

    quad = None
    if QUAD_RATIO:
        quad = _QuadRatio(probs, lo, hi, c, boxes, lines, upper)
        quad = quad if quad.ok else None

    # Regula falsi (Illinois) between a proven end (psi >= 0) and a failing
    # one, on the t where F_t's certified bound crosses 0: every t returned
    # passed the test, the search only decides which t are tried.
    t_pass, t_fail = (t_hi, t_lo) if upper else (t_lo, t_hi)
    t_pass, t_fail = t_pass.astype(float), t_fail.astype(float)
    f_pass, _ = psi(t_pass)
    f_fail, arg = psi(t_fail)
    best = t_pass.copy()
    done = f_fail >= 0  # the far end passes: the interval bound's opposite end
    best = np.where(done, t_fail, best)
    live = ~done & (f_pass >= 0)  # else nothing better than the interval bound is proven
    side = np.zeros(B, dtype=int)
    for _ in range(N_RATIO):
        if not live.any():
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = f_pass / (f_pass - f_fail)
        # Keep the step at least RATIO_AIM of the bracket short of the failing
        # end: after a failure at the secant's root itself (where the test's
        # value is 0 up to rounding) f_fail ~ 0 and the next secant root is
        # that failing t again (soundness hunt, session 23: five identical
        # failing steps, the bound fell back to the interval bound, 0.034
        # looser).
        with np.errstate(invalid="ignore"):
            t = t_pass + np.minimum(frac, 1.0 - RATIO_AIM) * (t_fail - t_pass)
        t = np.where(live & np.isfinite(t), t, t_pass)
        f, am = psi(t)
        ok = live & (f >= 0)
        bad = live & (f < 0)
        best = np.where(ok, t, best)
        # Illinois: halve the value kept at an end retained twice in a row.
        f_fail = np.where(ok & (side == 1), 0.5 * f_fail, f_fail)
        f_pass = np.where(bad & (side == -1), 0.5 * f_pass, f_pass)
        t_pass, f_pass = np.where(ok, t, t_pass), np.where(ok, f, f_pass)
        t_fail, f_fail = np.where(bad, t, t_fail), np.where(bad, f, f_fail)
        side = np.where(ok, 1, np.where(bad, -1, side))
        arg = np.where(bad[:, None], am, arg)
        live = live & (np.abs(t_fail - t_pass) > 1e-6)
    if quad is not None and B <= SLICE_MAX_BOXES:
        best = _slice_refine(probs, quad, psi, c, best, done, arg, t_lo, t_hi, upper)
    return best, arg


def _slice_refine(probs, quad, psi, c, best, done, arg, t_lo, t_hi, upper):
    """Bisection of :func:`_ratio_bound`'s t with the latent slices of
    :meth:`_QuadRatio.sliced` (a t passes when psi(t) >= 0 or every node's
    bound is >= 0: both prove F_t >= 0 on the box; the slices keep the
    plain relaxation's terms for the other classes: with the affine-slope
    variant's terms they lost on digits, row 0 max P_1 at gamma 0.05 root
    gap 0.026 -> 0.035): between the best proven
    t and the value of P_c attained at the relaxation's minimiser (or the
    search range's far end), where no t beyond can pass. Boxes whose gap is
    below ``SLICE_MIN_GAP`` (nothing to win) or above ``SLICE_MAX_GAP``
    (more than two classes' slices can close)
    are left alone; at most ``SLICE_MAX_CALLS`` relaxation bounds are spent,
    and ``SLICE_BOX_CALLS`` over all the refinements of one box within one
    row (kept in the row's scratch, :func:`._deadline.row_scratch`, not per
    model: the outcome does not depend on the rows solved before or in other
    threads; the objectives of a row are bound in a fixed order, so without
    a time limit it does not depend on timing either).
    With a ``time_limit`` it stops at the row's optional-work deadline
    (:mod:`skgprobust._engine._deadline`, half the row's time): a bisection
    step stopped early keeps the t proven so far. Only proven t are
    returned."""
    with np.errstate(invalid="ignore", divide="ignore"):
        at = _proba(probs.p(arg), c, False)
    at = np.where(np.isfinite(at), at, np.nan)
    if upper:
        far = np.fmax(t_lo, at)
        gap = best - far
    else:
        far = np.fmin(t_hi, at)
        gap = far - best
    todo = ~done & np.isfinite(best) & (gap > SLICE_MIN_GAP) & (gap < SLICE_MAX_GAP)
    if not todo.any() or optional_work_expired():
        return best
    # The box's budget lives in the row's scratch (one per row and thread):
    # the same row gets the same bounds whatever was solved before or beside it.
    key = ("slice budget", id(probs), quad.lo.tobytes(), quad.hi.tobytes())
    box_left = row_scratch().setdefault(key, [SLICE_BOX_CALLS])
    if box_left[0] <= 0:
        return best
    best, far = best.copy(), far.copy()
    budget = [min(SLICE_MAX_CALLS, box_left[0])]
    start = budget[0]
    for _ in range(N_SLICE_BISECT):
        t = np.where(todo, 0.5 * (best + far), best)
        sc, sr = (-(1 - t), t) if upper else ((1 - t), -t)
        f, am = psi(t)
        ok = f >= 0
        for pair in quad.slice_pairs(sc, sr):
            need = todo & ~ok
            if not need.any():
                break
            ok = ok | (need & (quad.sliced(sc, sr, am, pair, budget=budget) >= 0))
            if optional_work_expired():
                break
        best = np.where(todo & ok, t, best)
        far = np.where(todo & ~ok, t, far)
        todo = todo & (np.abs(far - best) > 0.1 * SLICE_MIN_GAP)
        if not todo.any() or budget[0] <= 0 or optional_work_expired():
            break
    box_left[0] -= start - budget[0]
    return best


#: Use the quadratic relaxation of :class:`_QuadRatio` in :func:`_ratio_bound`.
QUAD_RATIO = True
#: Latent slices (:meth:`_QuadRatio.sliced`): slices per sliced class, slope
#: steps per node, the most boxes per call it is tried on (the branch and
#: bound's root is bound alone; in 64 dimensions its children barely improve
#: on it), the least gap (in probability) worth it, and the bisection steps.
N_SLICES = 3
N_SLICE_STEPS = 6
SLICE_MAX_BOXES = 1
SLICE_MIN_GAP = 5e-3
SLICE_MAX_GAP = 0.1
N_SLICE_BISECT = 4
#: Halvings of a failing node of :meth:`_QuadRatio.sliced`.
N_SLICE_DEPTH = 4
#: The most relaxation bounds (one Taylor-model bound each, ~10 ms in 64-D
#: with N = 1000) one refinement may spend, and all refinements of one box
#: together (the objectives of a row bound the same root box: at most
#: about SLICE_BOX_CALLS x 10 ms per row); a t whose nodes are not all
#: bounded within it does not pass.
SLICE_MAX_CALLS = 60
SLICE_BOX_CALLS = 240

#: Grid points per class for the bound of |d^3 p / d mu^3| (:class:`_QuadRatio`).
N_QUAD_GRID = 33


_MEAN_MODELS = weakref.WeakKeyDictionary()  # probs -> (box key, result) of its last box batch


def _signed_models(ad, W, lo, hi, K):
    """Taylor models of the weighted sums ``W[k B + b] . r(c + u)`` over box
    b (K groups of the B boxes, class-major) from the adapter's models of +W
    and -W: ``(value, grad, E, rtol)`` of shapes (K, B), (K, B, d), (K, B)
    with W.r >= value + grad . u - E and -W.r >= -value - grad . u - E on the
    box (E: the larger quadratic part over the box less the remainder, the
    rounding margins rtol mag and |W| . rounding, and for the -W side the two
    models' difference of centre values and gradients), or None without
    Taylor models. Shared by :func:`_mean_models` and :func:`_var_models`
    (the proofs of E in :class:`_QuadRatio`)."""
    (B, d), N = lo.shape, W.shape[1]
    Wall = np.concatenate([W, -W])  # class-major, then boxes; then the negated
    LO, HI = np.tile(lo, (2 * K, 1)), np.tile(hi, (2 * K, 1))
    _, tm = ad.linearise(LO, HI, Wall)
    if tm is None:
        return None
    mean_rtol = getattr(ad, "mean_rtol", None)
    rtol = margin_rtol(N, d) if mean_rtol is None else mean_rtol(N, d)
    h = 0.5 * (hi - lo)
    Hh = np.tile(h, (2 * K, 1))
    with np.errstate(all="ignore"):
        quad = (np.abs(tm.diag) * Hh * Hh).sum(-1) + 0.5 * np.einsum("bij,bi,bj->b", np.abs(tm.M), Hh, Hh)
        dev = quad * (1 + 1e-10) - tm.rem + rtol * tm.mag
        dev = dev + np.einsum("bi,bi->b", np.abs(Wall), ad.rounding(LO, HI))
        dev = np.where(np.isnan(dev), np.inf, dev).reshape(2, K, B)
        value, grad = tm.value.reshape(2, K, B), tm.grad.reshape(2, K, B, d)
        # W.r >= v + g.u - dev0 and -W.r >= -v - g.u - dev1 - skew (the -W model's own centre value and gradient).
        skew = np.abs(-value[1] - value[0]) + np.einsum("kbi,bi->kb", np.abs(-grad[1] - grad[0]), h)
        E = np.maximum(dev[0], dev[1] + skew)
    return value[0], grad[0], E, rtol


def _mean_models(probs, ad, Wk, offs, lo, hi):
    """``(m, a, E, rtol)`` of :class:`_QuadRatio` for every class (K, B):
    mu~_k(c + u) = m_k + a_k . u + e_k(u), |e_k(u)| <= E_k over box b (proof
    in :class:`_QuadRatio`), or None without Taylor models. Remembered for
    the last batch of boxes (the objectives of one row bound the same boxes;
    a function of the boxes alone)."""
    key = (lo.shape, lo.tobytes(), hi.tobytes())
    hit = _MEAN_MODELS.get(probs)
    if hit is not None and hit[0] == key:
        return hit[1]
    B, K = lo.shape[0], len(Wk)
    W = np.repeat(Wk, B, axis=0)  # class-major, then boxes
    res = _signed_models(ad, W, lo, hi, K)
    if res is None:
        out = None
    else:
        value, grad, Ed, rtol = res
        m = value + offs[:, None]
        with np.errstate(all="ignore"):
            E = Ed + 4 * _U * (np.abs(m) + np.abs(offs)[:, None])
        out = (m, grad, E, rtol)
    try:
        _MEAN_MODELS[probs] = (key, out)
    except TypeError:  # pragma: no cover - not weak-referenceable: no cache
        pass
    return out


_VAR_MODELS = weakref.WeakKeyDictionary()  # probs -> (box key, result) of its last box batch


def _var_models(probs, ad, G, lo, hi):
    """``(gv, b, Eg)`` of shapes (K, B), (K, B, d), (K, B) for the weight
    vectors ``G`` (K, B, N) of the classes' variance enclosures
    (:func:`_enclosure`): g_kb . r(c + u) = gv + b . u + e(u) with |e(u)|
    <= Eg for every u of box b (r the exact kernel vector), or None
    without Taylor models. Remembered for the last batch of boxes.

    Proof: that of E in :class:`_QuadRatio` (the adapter's Taylor models of
    +-g, their largest quadratic part over the box less the remainder, the
    rounding margins rtol mag and |g| . rounding, and the two models'
    difference of centre values and gradients), with the per-box weights
    g_kb instead of a class's mean weights and no offset; the margins, made
    for sklearn's computed sums, cover the exact sum as well.
    """
    key = (lo.shape, lo.tobytes(), hi.tobytes())
    hit = _VAR_MODELS.get(probs)
    if hit is not None and hit[0] == key:
        return hit[1]
    K, B, N = G.shape
    res = _signed_models(ad, G.reshape(K * B, N), lo, hi, K)
    if res is None:
        out = None
    else:
        value, grad, Ed, _ = res
        with np.errstate(all="ignore"):
            Eg = Ed * (1 + 8 * _U)
        out = (value, grad, Eg)
    try:
        _VAR_MODELS[probs] = (key, out)
    except TypeError:  # pragma: no cover - not weak-referenceable: no cache
        pass
    return out


#: The relaxation of :class:`_QuadRatio` also with a variance slope affine in
#: each class's mean (:meth:`Link.v_slope_affine`), the larger of the two bounds
#: used; on batches of at most ``AFFINE_MAX_BOXES`` boxes (the branch and bound's
#: root: on the children it cost 60% more CPU per box, measured on digits at gamma 0.02).
VSLOPE_AFFINE = True
AFFINE_MAX_BOXES = 1


def envelope_curvature(link, mm, vr, lo2, hi2, up):
    """``(G, G1, kap_raw)``: G(mm), G1(mm) and a kap_raw with

        G(mu) >= G(mm) + G1(mm) (mu - mm) - kap_raw (mu - mm)^2   (``up`` False),
        G(mu) <= G(mm) + G1(mm) (mu - mm) + kap_raw (mu - mm)^2   (``up`` True),

    for every mu in [lo2, hi2] (which contains mm), G(mu) = p(mu, vr) the
    link at the fixed variance vr, element-wise (``up`` broadcast); up to
    the errors of the computed G (the link's ``margin``) and G1
    (``MU_DERIVATIVE_ERROR`` times |mu - mm|), which the callers add;
    G2's error and the rounding of kap_raw's own sum are covered by the
    ``MU_DERIVATIVE_ERROR`` it includes. kap_raw may be negative
    (the envelope's curvature helps on that side). Proof: the cubic term by
    side of mm in :class:`_QuadRatio`'s docstring."""
    G = link.value(mm, vr)
    G1, G2, _ = link.mu_derivatives(mm, vr)
    err_d = link.MU_DERIVATIVE_ERROR
    g4 = link.local_sups(vr)[1]
    # The certified range of G3 on [lo2, mm] and on [mm, hi2] (grids of N_QUAD_GRID points each).
    frac = np.linspace(0.0, 1.0, N_QUAD_GRID)
    ext = []
    for a_, b_ in ((lo2, mm), (mm, hi2)):
        grid = a_[..., None] + (b_ - a_)[..., None] * frac
        grid[..., 0], grid[..., -1] = a_, b_
        G3 = link.mu_derivatives(grid, vr[..., None])[2]
        dist = 0.5 * (b_ - a_) / (N_QUAD_GRID - 1) + 1e-12 * (1.0 + np.abs(a_) + np.abs(b_))
        slack = (g4 * dist + err_d) * (1 + 1e-12)
        ext.append((G3.min(-1) - slack, G3.max(-1) + slack))
    (g3l_lo, g3l_hi), (g3r_lo, g3r_hi) = ext
    Wl = (mm - lo2) * (1 + 4 * _U)
    Wr = (hi2 - mm) * (1 + 4 * _U)
    # Lower side: G3 (mu - mm)^3 >= -max(0, -min_right G3) Wr (mu - mm)^2 for mu >= mm and
    # >= -max(0, max_left G3) Wl (mu - mm)^2 for mu <= mm; the upper side mirrors it.
    t3_lower = np.maximum(np.maximum(0.0, -g3r_lo) * Wr, np.maximum(0.0, g3l_hi) * Wl)
    t3_upper = np.maximum(np.maximum(0.0, g3r_hi) * Wr, np.maximum(0.0, -g3l_lo) * Wl)
    t3 = np.where(up, t3_upper, t3_lower) * (1 + 1e-12)
    kap_raw = np.where(up, 0.5 * G2, -0.5 * G2) + t3 / 6.0 + err_d
    return G, G1, kap_raw


class _QuadRatio:
    """Second-order relaxation of F_t = sum_k coef_k p_k of
    :func:`_ratio_bound` (coef_c = +-(1 - t), coef_k = -+t for the others),
    for one-vs-rest classes that share one kernel and support.

    The link lines lose the curvature of p in the mean over the whole mean
    range of each class (a chord), and in 64 dimensions the ten classes'
    means move almost independently, so the chords' losses add up. Here each
    class's p_k is replaced by a quadratic in its mean around m_k (the mean
    at the box centre) and (mu_k - m_k)^2 by a quadratic form in u = x -
    centre, so the sum is one quadratic model in u, bounded by the Taylor
    model machinery (:func:`~skgprobust._bounds._mean.taylor_lower`, with
    its Lagrangian dual in many dimensions).

    Proof (lower bound of p_k; the upper one is the mirror). Let [a, b] =
    [mu_lo_k, mu_hi_k] not contain 0 in its interior, and G(mu) = p(mu,
    v_ref) the envelope of :meth:`Link.lines` (v_ref = v_hi where a >= 0,
    v_lo where b <= 0; for the upper bound v_lo / v_hi). :func:`_coupling`
    gives p~(x) >= G(mu~(x)) + shift - err + Wv . r(x) - margin (margin: the
    link's, for sklearn's p~ against p at sklearn's mu~, v~; shift = err =
    Wv = 0 without coupling). Taylor's theorem at m (any number; here the
    computed mean at the centre) with Lagrange remainder: for mu in [a, b],
    G(mu) = G(m) + G1(m) (mu - m) + G2(m) (mu - m)^2 / 2 + G3(xi) (mu -
    m)^3 / 6 (Gn the n-th derivative) with xi between m and mu, so in [lo2,
    hi2] = the hull of [a, b] and m, and |mu - m| <= W = max(hi2 - m, m -
    lo2). The cubic term by side: for mu >= m, xi in [m, hi2] and G3(xi)
    (mu - m)^3 >= -max(0, -min G3 over [m, hi2]) Wr (mu - m)^2 (Wr = hi2 -
    m >= mu - m); for mu <= m, xi in [lo2, m] and G3(xi) (mu - m)^3 = -G3(xi)
    |mu - m|^3 >= -max(0, max G3 over [lo2, m]) Wl (mu - m)^2 (Wl = m -
    lo2). Hence G(mu) >= G(m) + G1(m) (mu - m) - kappa (mu - m)^2 with
    kappa >= max(0, -G2(m) / 2 + T3 / 6), T3 the larger of the two
    products (upper bound: H(mu) <= H(m) + H1(m) (mu - m) + kappa (mu -
    m)^2, kappa >= max(0, H2(m) / 2 + T3 / 6), T3 = max(max(0, max G3 over
    [m, hi2]) Wr, max(0, -min G3 over [lo2, m]) Wl)). A side costs nothing
    where G3 has the favourable sign there (lower bound: G3 >= 0 above m,
    G3 <= 0 below m; upper bound: the reverse): e.g. the lower bound of a
    class whose mean range lies where every term Phi(b mu) has z = b mu in
    (0, 1) (G3 < 0 there, G3 = 0 at the extremum of p'', z = 1) pays only
    for the side above m. The bound before (session 18) charged sup |G3| W
    on both sides. The extremes
    of G3 on each side: a grid of ``N_QUAD_GRID`` points (every point of
    the side within spacing / 2 of one, plus rounding), widened by G4
    times that distance, G4 >= sup |d^4 p / d mu^4| = sup |E[g''''(f)]| at
    variance v_ref (:meth:`Link.local_sups`), plus the derivatives' error
    (:meth:`Link.mu_derivatives`). With coef_k
    >= 0 where p_k is bounded below and <= 0 where it is bounded above, F_t
    >= sum_k coef_k (G_k(m_k) + G1_k(m_k) (mu~_k - m_k) + shift_k + Wv_k .
    r) - sum_k |coef_k| (kappa_k (mu~_k - m_k)^2 + errors_k).

    The square: the adapter's Taylor models of +-w_k . r (those
    :func:`~skgprobust._bounds._mean.affine_lower` uses) give mu~_k(c + u) =
    m_k + a_k . u + e_k(u) with |e_k| <= E_k on the box: a_k the model's
    gradient, E_k the largest |quadratic part| over the box (sum |diag| h^2
    + 1/2 sum |M| h h) less the remainder, plus the models' rounding margins
    (rtol mag + input rounding, as in
    :func:`~skgprobust._bounds._mean.affine_lower_parts`) and the difference
    of the two models' centre values and gradients. For theta > 0, (a.u +
    e)^2 <= (1 + theta) (a.u)^2 + (1 + 1/theta) e^2 (Young); theta = E / A,
    A = sum_j |a_kj| h_j: (mu~ - m)^2 <= rho (a.u)^2 + E (E + A), rho = (A +
    E) / A (A = 0: a.u = 0 on the box, and the bound is E^2). So F_t >=
    const + Wc . r(x) - sum_k |coef_k| kappa_k rho_k (a_k . u)^2 with Wc =
    sum_k coef_k (G1_k w_k + Wv_k): the Taylor model of Wc . r with M
    lowered by 2 sum_k |coef_k| kappa_k rho_k a_k a_k^T is a lower model of
    the whole (lower models add), bounded by ``taylor_lower``.

    Classes whose mean range crosses 0 (or whose model is not finite) keep
    their coupled line (:func:`coupled_line`) in the same sum (kappa = 0).

    Rounding. The Taylor model's bound gets affine_lower's margin rtol (mag
    + the added form's magnitude sum_k |coef_k| kappa_k rho_k A_k^2: each
    entry of the added M is a K-term sum of products, far within rtol) plus
    the input rounding sum |Wc| rounding; the combined weights against
    sklearn's separate sums: margin_rtol(N, d) kmax sum_k |coef_k| (|G1_k|
    ||w_k||_1 + ||Wv_k||_1), as in :func:`_ratio_bound`, and sklearn's
    kernel values in each class's mean against the exact r(x) of the
    combined weights: sum_k |coef_k sigma_k| |w_k| . :func:`mean_kernel_error`
    (the input rounding of Wc covers them only where nothing cancels); each class's
    constant: 2 margin (sklearn's p~ and our G(m)) + MU_DERIVATIVE_ERROR W
    (for G1) + the coupling's err + 4 u (|G| + |G1 m| + |shift|) for its own
    three roundings; kappa, rho and E (E + A) are rounded up (1 + 8 u); the
    sum of the constants errs by at most (2 K + 4) u of their magnitudes
    (doubled, as in :func:`_ratio_bound`), and the final additions 4 u.
    """

    def __init__(self, probs, lo, hi, c, boxes, lines, upper):
        self.ok = False
        link = probs.link
        B, d = lo.shape
        K = len(boxes)
        if B == 0 or K < 2 or len(set(probs.group)) != 1 or link.derivative_sups() is None:
            return
        m0 = probs.models[0]
        ad, N = m0.adapter, len(m0.X_support)
        Wk = np.stack([m.weights[:, 0] for m in probs.models])  # (K, N)
        offs = np.array([float(m.offset[0]) for m in probs.models])
        try:
            if link.mu_derivatives(np.zeros(1), np.zeros(1)) is None:
                return
            mm_ = _mean_models(probs, ad, Wk, offs, lo, hi)
        except (UnsupportedKernelError, NotImplementedError):
            return
        if mm_ is None:
            return
        m, a, E, rtol = mm_
        h = 0.5 * (hi - lo)
        up = np.array([(k == c) == upper for k in range(K)])[:, None]  # class k's p_k is bounded from above
        mu_lo, mu_hi = np.stack([b.mu_lo for b in boxes]), np.stack([b.mu_hi for b in boxes])
        v_lo = np.maximum(np.stack([b.v_lo for b in boxes]), 0.0)
        v_hi = np.maximum(np.stack([b.v_hi for b in boxes]), v_lo)
        pos = mu_lo >= 0
        v_ref = np.where(up, np.where(pos, v_lo, v_hi), np.where(pos, v_hi, v_lo))
        with np.errstate(all="ignore"):
            app = ((pos | (mu_hi <= 0)) & np.isfinite(mu_lo) & np.isfinite(mu_hi) & np.isfinite(v_ref)
                   & np.isfinite(E) & np.isfinite(m) & np.isfinite(a).all(-1))
            mm, vr = np.where(app, m, 0.0), np.where(app, v_ref, 0.0)
            lo2, hi2 = np.where(app, np.minimum(mu_lo, mm), 0.0), np.where(app, np.maximum(mu_hi, mm), 0.0)
            W = np.maximum(hi2 - mm, mm - lo2) * (1 + 4 * _U)
            G, G1, kap_raw = envelope_curvature(link, mm, vr, lo2, hi2, up)
            err_d = link.MU_DERIVATIVE_ERROR
            kap = np.maximum(kap_raw, 0.0) * (1 + 8 * _U)
            A = np.einsum("kbi,bi->kb", np.abs(a), h)
            rho = np.where(A > 0, (A + E) / np.where(A > 0, A, 1.0), 0.0) * (1 + 8 * _U)
            cq = np.where(A > 0, E * (E + A), E * E) * (1 + 8 * _U)
            alpha = G - G1 * mm
            err = 2 * link.margin + err_d * W + 4 * _U * (np.abs(G) + np.abs(G1 * mm))
            Wv = np.zeros((K, B, N))
            for k in range(K):
                cp = _coupling(link, probs.models[k], probs.variances[k], boxes[k], lo, hi, bool(up[k, 0]))
                if cp is not None:
                    shift, cerr, Wv[k], _ = cp
                    alpha[k] = alpha[k] + shift
                    err[k] = err[k] + cerr + 4 * _U * np.abs(shift)
            ok_k = app & np.isfinite(alpha) & np.isfinite(err) & np.isfinite(kap) & np.isfinite(rho) & np.isfinite(cq)
            # Classes without the quadratic form keep their coupled line (lines[k] = (A, s, Wv, nv)).
            A_line = np.stack([ln[0] for ln in lines])
            s_line = np.stack([ln[1] for ln in lines])
            Wv_line = np.stack([ln[2] for ln in lines])
        self.sigma = np.where(ok_k, G1, s_line)
        self.alpha = np.where(ok_k, alpha, A_line)
        self.err = np.where(ok_k, err, 0.0)
        self.kap, self.rho, self.cq = (np.where(ok_k, x, 0.0) for x in (kap, rho, cq))
        self.Wv = np.where(ok_k[..., None], Wv, Wv_line)
        self.nv = np.abs(self.Wv).sum(-1)
        self.a, self.A, self.Wk, self.offs, self.c, self.K, self.up = a, A, Wk, offs, c, K, up
        self.probs, self.boxes, self.ok_k = probs, boxes, ok_k
        self.n1 = np.abs(Wk).sum(-1)
        self.adapter, self.lo, self.hi, self.h, self.rtol = ad, lo, hi, h, rtol
        self.wrtol = margin_rtol(N, d) * probs._kmax(probs.group[0], lo, hi)
        self.kerr = np.abs(Wk) @ mean_kernel_error(ad, lo, hi).T  # (K, B): |w_k| . mean_kernel_error
        self.ok = bool(ok_k.any())
        self._aff = None
        self._aff_args = None  # built on first use (:attr:`aff`)
        self.affine_ok = bool(VSLOPE_AFFINE and self.ok and B <= AFFINE_MAX_BOXES)
        if self.affine_ok:
            with np.errstate(all="ignore"):
                self._aff_args = (G - G1 * mm, 2 * link.margin + err_d * W + 4 * _U * (np.abs(G) + np.abs(G1 * mm)),
                                  mm, E, app, kap_raw)

    @property
    def aff(self):
        """``(terms, extra)`` of :meth:`_affine_terms`, built on first use
        (where the plain relaxation fails a t at the root box), or None."""
        if self._aff_args is not None:
            args, self._aff_args = self._aff_args, None
            with np.errstate(all="ignore"):
                self._aff = self._affine_terms(*args)
        return self._aff

    def _affine_terms(self, alpha0, err0, mm, E, app, kap_raw):
        """The terms of the relaxation with each class's variance slope
        affine in its mean (``affine=True`` of :meth:`__call__`): ``(terms,
        extra)``, or None without variance enclosures or Taylor models.

        Proof (lower bound of p_k; the upper one is the mirror, with the
        same signs). :meth:`Link.v_slope_affine` gives k0 + k1 (mu - m) <=
        |dp/dv| on the class's rectangle, so integrating along v at fixed mu
        between v and v_ref (an end of the variance range, as in
        :func:`_coupling`), p(mu, v) >= G(mu) + tau(mu) (v - v_ref) with
        tau(mu) = sg (k0 + k1 (mu - m)), sg = -1 where mu_lo >= 0, +1 where
        mu_hi <= 0 (:meth:`Link.v_slope_lower`'s argument with a slope
        that depends on mu; the sign of v - v_ref is fixed by the end). So
        p~ >= G(mu~) + t0 (v~ - v_ref) + beta (mu~ - m) (v~ - v_ref) - margin,
        t0 = sg k0, beta = sg k1. The first two terms are those of
        :class:`_QuadRatio` with the constant slope t0 (:func:`_coupling_slope`).
        The product: mu~ - m = a . u + e (|e| <= E, the class's mean model),
        and by the enclosure v~ = s2 (Cm - g . r(x)) + eta, |eta| <= s2 (C_hi
        - C_lo) / 2, Cm = (C_lo + C_hi) / 2, with g . r(c + u) = gv + b . u +
        e_g (:func:`_var_models`, |e_g| <= Eg); so v~ - v_ref = w0 - s2 b . u
        + e_w, w0 = s2 (Cm - gv) - v_ref, |e_w| <= Ew = s2 ((C_hi - C_lo) / 2
        + Eg) (raised by 1e-12 relative and 1e-12 (|s2 Cm| + |s2 gv| +
        |v_ref|) for the roundings forming w0 and Ew). Then (a . u + e)
        (v~ - v_ref) = w0 a . u - s2 (a . u) (b . u) + e_w a . u + e (v~ -
        v_ref), and |e_w a . u| <= Ew A, |e (v~ - v_ref)| <= E (v_hi - v_lo)
        (A = sum_j |a_j| h_j): beta times the product is >= beta w0 a . u -
        beta s2 (a . u) (b . u) - |beta| (Ew A + E (v_hi - v_lo)) (the upper
        side: <= ... + the same). With coef_k of the side bounded, coef_k
        times it adds coef_k beta w0 a to the model's gradient, -coef_k
        beta s2 (a b^T + b a^T) to its M (1/2 u^T M u) and -|coef_k| |beta|
        (Ew A + E (v_hi - v_lo)) to the constant (``extra``). Where any of
        these is not finite the class keeps the constant slope of
        :func:`_coupling` (beta = 0: the terms of :class:`_QuadRatio`).

        The curvature on the side where it helps: where the bounded
        envelope is convex (lower side) or concave (upper side) beyond the
        third-order term, kap_raw = -+G2(m) / 2 + T3 / 6 + err_d < 0
        (:class:`_QuadRatio`'s kappa before its clipping at 0), Taylor's
        theorem gives G(mu) >= G(m) + G1(m) (mu - m) + kn (mu - m)^2 with kn
        = -kap_raw > 0 (upper side: H(mu) <= ... - kn (mu - m)^2), rounded
        down by 8 u (the cancellation in kap_raw's own sum is within the
        MU_DERIVATIVE_ERROR it includes, :func:`envelope_curvature`). For theta in (0, 1), (a . u + e)^2 = (1 - theta) (a .
        u)^2 + (1 - 1/theta) e^2 + (sqrt(theta) a . u + e / sqrt(theta))^2
        >= (1 - theta) (a . u)^2 - (1/theta - 1) E^2; with theta = E / A
        (E < A): (mu - m)^2 >= rn (a . u)^2 - cn, rn = (A - E) / A (rounded
        down), cn = E (A - E) (rounded up). So coef_k times the class's
        terms gains |coef_k| kn (rn (a . u)^2 - cn): +2 |coef_k| kn rn a
        a^T in M and -|coef_k| kn cn in the constant (``extra``); kn = 0
        where E >= A or kap_raw >= 0.
        """
        probs, boxes, K, B = self.probs, self.boxes, self.K, len(self.lo)
        link = probs.link
        encs = [_enclosure(probs.variances[k], self.lo, self.hi) for k in range(K)]
        if any(e is None for e in encs):
            return None
        try:
            vm = _var_models(probs, self.adapter, np.stack([e[0] for e in encs]), self.lo, self.hi)
        except (UnsupportedKernelError, NotImplementedError):
            return None
        if vm is None:
            return None
        gv, bvec, Eg = vm
        mu_lo, mu_hi = np.stack([b.mu_lo for b in boxes]), np.stack([b.mu_hi for b in boxes])
        bv_lo, bv_hi = np.stack([b.v_lo for b in boxes]), np.stack([b.v_hi for b in boxes])
        pos = mu_lo >= 0
        k0, k1 = link.v_slope_affine(mu_lo, mu_hi, bv_lo, bv_hi, mm)
        sg = np.where(pos, -1.0, 1.0)
        t0, beta = sg * k0, sg * k1
        sigma, alpha, err, Wv = self.sigma.copy(), self.alpha.copy(), self.err.copy(), self.Wv.copy()
        lin, bil, pen = np.zeros((K, B)), np.zeros((K, B)), np.zeros((K, B))
        h = self.h
        with np.errstate(all="ignore"):
            for k in range(K):
                ok = self.ok_k[k] & app[k]
                if not ok.any():
                    continue
                up = bool(self.up[k, 0])
                s2 = float(probs.models[k].scale[0]) ** 2
                shift, cerr, Wv_k, _ = _coupling_slope(probs.models[k], boxes[k], encs[k], up, t0[k])
                g, c_lo, c_hi = encs[k]
                v_ref = np.where(up, np.where(pos[k], bv_lo[k], bv_hi[k]), np.where(pos[k], bv_hi[k], bv_lo[k]))
                Cm, half = 0.5 * (c_lo + c_hi), 0.5 * (c_hi - c_lo)
                w0 = s2 * (Cm - gv[k]) - v_ref
                Ew = s2 * (half + Eg[k]) * (1 + 1e-12) + 1e-12 * (np.abs(s2 * Cm) + np.abs(s2 * gv[k]) + np.abs(v_ref))
                Ak = np.einsum("bi,bi->b", np.abs(self.a[k]), h)
                pk = np.abs(beta[k]) * (Ew * Ak + E[k] * (bv_hi[k] - bv_lo[k]) * (1 + 4 * _U)) * (1 + 8 * _U)
                a_k = alpha0[k] + shift
                e_k = err0[k] + cerr + 4 * _U * np.abs(shift)
                fin = (ok & np.isfinite(a_k) & np.isfinite(e_k) & np.isfinite(pk) & np.isfinite(w0)
                       & np.isfinite(Wv_k).all(-1) & np.isfinite(bvec[k]).all(-1))
                alpha[k] = np.where(fin, a_k, alpha[k])
                err[k] = np.where(fin, e_k, err[k])
                Wv[k] = np.where(fin[:, None], Wv_k, Wv[k])
                lin[k] = np.where(fin, beta[k] * w0, 0.0)
                bil[k] = np.where(fin, -beta[k] * s2, 0.0)
                pen[k] = np.where(fin, pk, 0.0)
        with np.errstate(all="ignore"):
            A = self.A
            kn = np.where(self.ok_k & app & np.isfinite(kap_raw) & (kap_raw < 0) & (E < A), -kap_raw, 0.0)
            kn = kn * (1 - 8 * _U)
            rn = np.where(kn > 0, (A - E) / np.where(A > 0, A, 1.0), 0.0) * (1 - 8 * _U)
            cn = np.where(kn > 0, E * (A - E), 0.0) * (1 + 8 * _U)
            good = np.isfinite(rn) & np.isfinite(cn) & (rn >= 0)
            kn, rn, cn = np.where(good, kn, 0.0), np.where(good, rn, 0.0), np.where(good, cn, 0.0)
        terms = (sigma, alpha, err, self.kap, self.rho, self.cq, Wv)
        Bb = np.einsum("kbi,bi->kb", np.abs(bvec), h)
        return terms, (lin, bil, np.where(np.isfinite(bvec), bvec, 0.0), pen, Bb, kn * rn, kn * cn)

    def __call__(self, sc, sr, terms=None, affine=False, extra=None):
        """Certified lower bound (B,) of min over each box of F_t, with the
        class's coefficient ``sc`` and the others' ``sr`` (B,), and the
        minimiser of the relaxation.

        ``terms``: optional ``(sigma, alpha, err, kap, rho, cq, Wv)`` arrays
        replacing the relaxation's own (a class with kap = rho = cq = 0 is a
        line / plane class p_k >=(<=) alpha + sigma mu~ + Wv . r - err over
        the x considered, as :meth:`sliced` passes).

        ``affine``: the relaxation with variance slopes affine in the means
        and the helpful curvature (:meth:`_affine_terms`; its ``terms`` and
        ``extra`` replace the relaxation's own where None); another valid
        lower bound. ``extra``: that of :meth:`_affine_terms`, with zeros
        for line / plane classes (:meth:`sliced`)."""
        K, lo, hi, h = self.K, self.lo, self.hi, self.h
        if affine:
            if self.aff is None:
                return np.full(len(lo), -np.inf), 0.5 * (lo + hi)
            if terms is None:
                terms = self.aff[0]
            if extra is None:
                extra = self.aff[1]
        else:
            extra = None
        if terms is None:
            terms = (self.sigma, self.alpha, self.err, self.kap, self.rho, self.cq, self.Wv)
        sigma, alpha, err_k, kap, rho, cq, Wv = terms
        nv = np.abs(Wv).sum(-1)
        coef = np.where((np.arange(K) == self.c)[:, None], sc[None], sr[None])  # (K, B)
        ac = np.abs(coef)
        # Each class's relaxation bounds p_k from the side its coefficient needs (t in [0, 1]); else no bound.
        wrong = (((coef < 0) & ~self.up) | ((coef > 0) & self.up)).any(0)
        with np.errstate(all="ignore"):
            Wc = (coef * sigma).T @ self.Wk + np.einsum("kb,kbn->bn", coef, Wv)
            const = (coef * (alpha + sigma * self.offs[:, None])).sum(0)
            cmag = (ac * (np.abs(alpha) + np.abs(sigma * self.offs[:, None]))).sum(0)
            pen = (ac * (kap * cq + err_k)).sum(0) * (1 + 8 * _U)
            wmargin = self.wrtol * (ac * (np.abs(sigma) * self.n1[:, None] + nv)).sum(0) \
                + (ac * np.abs(sigma) * self.kerr).sum(0)
            r = ac * kap * rho  # (K, B)
            Madd = -2.0 * np.einsum("kb,kbi,kbj->bij", r, self.a, self.a)
            magq = (r * self.A * self.A).sum(0)
            gadd = 0.0
            if extra is not None:  # the variance slopes' mean-dependent part (_affine_terms)
                lin, bil, bvec, pen2, Bb, krn, kcn = extra
                cb = coef * bil
                ab = np.einsum("kbi,kbj->kbij", self.a, bvec)
                Madd = Madd + np.einsum("kb,kbij->bij", cb, ab + ab.transpose(0, 1, 3, 2))
                Madd = Madd + 2.0 * np.einsum("kb,kbi,kbj->bij", ac * krn, self.a, self.a)
                gadd = np.einsum("kb,kbi->bi", coef * lin, self.a)
                magq = magq + (np.abs(cb) * 2.0 * self.A * Bb + np.abs(coef * lin) * self.A
                               + ac * krn * self.A * self.A).sum(0)
                pen = pen + (ac * (pen2 + kcn)).sum(0) * (1 + 8 * _U)
            _, tm = self.adapter.linearise(lo, hi, Wc)
            if tm is None:
                return np.full(len(lo), -np.inf), 0.5 * (lo + hi)
            tm2 = TaylorModel(tm.value, tm.grad + gadd, tm.diag, tm.M + Madd, tm.rem, tm.mag + magq)
            alt = getattr(tm, "alt", None)
            if alt is not None:
                tm2.alt = (alt[0] + Madd, alt[1], alt[2] + magq)
            q, u = taylor_lower(tm2, h, dual=True)
            low = q - self.rtol * tm2.mag - np.einsum("bi,bi->b", np.abs(Wc), self.adapter.rounding(lo, hi))
            E = pen + wmargin + 2 * (2 * K + 4) * _U * cmag
            val = low + const - E - 4 * _U * (np.abs(low) + np.abs(const) + E)
        val = np.where(np.isnan(val) | wrong, -np.inf, val)
        return val, np.clip(0.5 * (lo + hi) + u, lo, hi)

    def slice_pairs(self, sc, sr):
        """The pairs of classes :meth:`sliced` tries (one or two): the bounded
        class with its strongest competitor (largest upper end of the mean
        range), and the two classes that cost the relaxation most (|coef|
        times the worst value of the quadratic term, or of the line's
        distance from p_k over the mean range at the middle variance)."""
        K, boxes, link = self.K, self.boxes, self.probs.link
        coef = np.where((np.arange(K) == self.c)[:, None], sc[None], sr[None])
        ac = np.abs(coef)
        top = np.array([np.sum(np.where(np.isfinite(b.mu_hi), b.mu_hi, -np.inf)) for b in boxes])
        top[self.c] = -np.inf
        pairs = [(self.c, int(np.argmax(top)))]
        # Each class's loss in the relaxation: its quadratic term's worst value, or the line's distance.
        fr = np.linspace(0.0, 1.0, 17)
        with np.errstate(all="ignore"):
            loss = np.zeros(K)
            for k in range(K):
                b = boxes[k]
                if self.ok_k[k].all():
                    lk = ac[k] * self.kap[k] * (self.rho[k] * self.A[k] ** 2 + self.cq[k])
                else:
                    M = b.mu_lo[:, None] + (b.mu_hi - b.mu_lo)[:, None] * fr
                    P = link.value(M, 0.5 * (b.v_lo + b.v_hi)[:, None])
                    line = self.alpha[k][:, None] + self.sigma[k][:, None] * M
                    lk = ac[k] * np.abs(P - line).max(1)
                loss[k] = np.nansum(np.where(np.isfinite(lk), lk, 0.0))
        pair = tuple(int(k) for k in np.argsort(-loss)[:2])
        if set(pair) != set(pairs[0]):
            pairs.append(pair)
        return pairs

    def _slice_slack(self, sl, coef, S):
        """A heuristic size of what halving can win on a node: sum over the
        sliced classes of |coef| times the largest distance of p_k (middle
        variance) from its chord over the slice (17 points). A node whose
        deficit exceeds it is not split (a choice of work, not of proof)."""
        link, boxes = self.probs.link, self.boxes
        fr = np.linspace(0.0, 1.0, 17)
        tot = 0.0
        with np.errstate(all="ignore"):
            for k in S:
                e0, e1 = float(sl[k][0][0]), float(sl[k][1][0])
                M = e0 + (e1 - e0) * fr
                P = link.value(M, np.full(17, 0.5 * float(boxes[k].v_lo[0] + boxes[k].v_hi[0])))
                dev = np.abs(P - (P[0] + (P[-1] - P[0]) * fr)).max()
                tot += float(np.abs(coef[k, 0])) * (dev if np.isfinite(dev) else np.inf)
        return tot

    def sliced(self, sc, sr, x_ref, pair, n_slices=None, steps=None, fail_fast=True, budget=None, depth=None,
               affine=False):
        """Lower bound (B,) of min over each box of F_t by latent slices of
        the two classes that cost the relaxation most (|coef| times the
        worst value of the quadratic term, or of the line's distance from
        p_k over the mean range at the middle variance): ``-inf`` where a slice's bound is negative
        (the caller only needs F_t >= 0).

        The terms of the top class and its closest competitor dominate the
        relaxation's loss on rows with two close classes (their means move
        over ~1-2.5 in the box; kappa (mu - m)^2 charges the link's worst
        curvature over all of it, and a mean range that crosses 0 keeps only
        the line's chord). Here their mean ranges are
        cut into ``n_slices`` slices each (``N_SLICES``); on each pair of
        slices (a node) both classes get a plane of :func:`slice_plane`
        instead of their quadratic (every other class keeps its relaxation),
        bounded by :meth:`__call__` with those terms. A plane's slopes act as
        Lagrange multipliers of the slice constraint (the node's bound is a
        minimum over the whole box, not only over the x whose means lie in
        the slices): ``steps`` (``N_SLICE_STEPS``) sign-supergradient
        steps of the slopes, from the link's gradient at the slice's middle,
        keep the best bound (any slopes give a valid one; the ascent needs no
        proof).

        Proof. For x in the box, the two classes' sklearn means mu~_k(x) lie
        in their certified mean ranges, which the slices cover (shared
        computed edges, exact ends), so x belongs to some node (i, j). On
        that node, :func:`slice_plane` gives p~_k(x) >=(<=) A_k + s_k
        mu~_k(x) + Wv_k . r(x) for both sliced classes (the side their
        coefficient needs; its rounding in A_k), which is the form of a line
        class of the relaxation (kap = rho = cq = 0, err = 0 as for
        :func:`coupled_line`, whose rounding is in A too), so
        :meth:`__call__`'s proof gives F_t(x) >= the node's bound. Hence
        F_t >= min over nodes on the box. A node whose bound stays below 0
        is halved (the slice widest relative to its class's mean range; the
        halves share the computed middle, so they cover it) up to ``depth``
        (``N_SLICE_DEPTH``) times, its slopes passed on: a latent branch and
        bound over the two classes' means, whose leaves cover the box. With
        ``fail_fast`` a leaf below 0 ends it with -inf (a valid lower bound;
        the other nodes are skipped); so does running out of ``budget`` (a
        one-element list: relaxation bounds left, counted down) or passing
        the row's optional-work deadline (:mod:`._deadline`). One box
        only (B = 1; else -inf).

        ``affine``: the other classes keep the terms of the relaxation's
        affine variant (:meth:`_affine_terms`) instead, the two sliced
        classes' extra terms set to 0 (line classes there); the same proof,
        with :meth:`__call__`'s for that variant (attacked in the tests;
        :func:`_slice_refine` does not use it: it lost there on digits).
        """
        n = N_SLICES if n_slices is None else int(n_slices)
        steps = N_SLICE_STEPS if steps is None else int(steps)
        K, B = self.K, len(self.lo)
        affine = bool(affine) and self.aff is not None
        if affine:
            base = self.aff[0]
            extra = [x.copy() for x in self.aff[1]]
            for f in (0, 1, 3, 5, 6):  # lin, bil, pen, kn rn, kn cn of the sliced classes: none
                for k in pair:
                    extra[f][k] = 0.0
            extra = tuple(extra)
        else:
            base, extra = (self.sigma, self.alpha, self.err, self.kap, self.rho, self.cq, self.Wv), None
        probs, link, boxes = self.probs, self.probs.link, self.boxes
        coef = np.where((np.arange(K) == self.c)[:, None], sc[None], sr[None])
        ac = np.abs(coef)
        S = list(pair)
        out = np.full(B, -np.inf)
        if not all(np.isfinite(boxes[k].mu_lo).all() and np.isfinite(boxes[k].mu_hi).all() for k in S):
            return out
        if B != 1:  # one box (the root): the latent tree is the box's own
            return out
        depth = N_SLICE_DEPTH if depth is None else int(depth)
        full = {k: float(boxes[k].mu_hi[0] - boxes[k].mu_lo[0]) for k in S}
        frac = np.linspace(0.0, 1.0, n + 1)
        edges = {}
        for k in S:
            e = boxes[k].mu_lo + (boxes[k].mu_hi - boxes[k].mu_lo) * frac
            e[0], e[-1] = boxes[k].mu_lo[0], boxes[k].mu_hi[0]
            edges[k] = e
        # Nodes nearest the relaxation's minimiser first (where F_t is smallest): fail fast.
        ref = {}
        for k in S:
            mu_r = probs.points[k].values(x_ref)[0][0]
            ref[k] = int(np.clip(np.searchsorted(edges[k][1:-1], mu_r), 0, n - 1))
        order = sorted(((i, j) for i in range(n) for j in range(n if len(S) > 1 else 1)),
                       key=lambda ij: sum(abs(ij[m] - ref[k]) for m, k in enumerate(S)))
        stack = [({k: (edges[k][ij[m]:ij[m] + 1], edges[k][ij[m] + 1:ij[m] + 2]) for m, k in enumerate(S)}, 0, None)
                 for ij in order[::-1]]
        node_min = np.inf
        while stack:
            sl, level, slope = stack.pop()
            if slope is None:
                slope = {}
                for k in S:
                    vm = 0.5 * (boxes[k].v_lo + boxes[k].v_hi)
                    gm, gv = link.grad(0.5 * (sl[k][0] + sl[k][1]), vm)
                    slope[k] = (np.where(np.isfinite(gm), gm, 0.0), np.where(np.isfinite(gv), gv, 0.0))
            best = -np.inf
            for it in range(steps):
                if optional_work_expired():
                    return out  # past the row's optional-work deadline: -inf, t not proven (sound)
                if budget is not None:
                    if budget[0] <= 0:
                        return out
                    budget[0] -= 1
                terms = [x.copy() for x in base]
                args = {}
                for k in S:
                    up = bool(self.up[k, 0])
                    A, Wv, mu_a, v_a = slice_plane(link, probs.models[k], probs.variances[k], boxes[k],
                                                   self.lo, self.hi, sl[k][0], sl[k][1], *slope[k], upper=up)
                    terms[0][k], terms[1][k], terms[6][k] = slope[k][0], A, Wv
                    for f in (2, 3, 4, 5):
                        terms[f][k] = 0.0
                    args[k] = (mu_a, v_a)
                val, xs = self(sc, sr, tuple(terms), affine=affine, extra=extra)
                v0 = float(val[0]) if np.isfinite(val[0]) else -np.inf
                best = max(best, v0)
                if it == steps - 1 or best >= 0:
                    break
                eta = 0.5 / np.sqrt(1.0 + it)
                for k in S:
                    mu_x, v_x = probs.points[k].values(xs)
                    gs, gt = coef[k] * (mu_x - args[k][0]), coef[k] * (v_x - args[k][1])
                    s_k, t_k = slope[k]
                    s_k = s_k + eta * 0.03 * np.sign(gs) * np.minimum(1.0, np.abs(gs))
                    t_k = t_k + eta * 0.005 * np.sign(gt) * np.minimum(1.0, np.abs(gt))
                    slope[k] = (np.where(np.isfinite(s_k), s_k, 0.0), np.where(np.isfinite(t_k), t_k, 0.0))
            if best >= 0:
                node_min = min(node_min, best)
                continue
            if level < depth and -best <= self._slice_slack(sl, coef, S):
                # Halve the slice that is widest relative to its class's whole mean range
                # (only where the planes' own slack could explain the deficit).
                k = max(S, key=lambda k: float(sl[k][1][0] - sl[k][0][0]) / max(full[k], 1e-300))
                e0, e1 = sl[k]
                mid = e0 + 0.5 * (e1 - e0)
                if e0[0] < mid[0] < e1[0]:
                    for a, b in ((mid, e1), (e0, mid)):
                        child = dict(sl)
                        child[k] = (a, b)
                        stack.append((child, level + 1, dict(slope)))
                    continue
            if fail_fast:
                return out
            node_min = min(node_min, best)
        return np.array([node_min])


def _take(boxes, mask):
    """The :class:`LatentBox` es restricted to the boxes where ``mask``."""
    return [LatentBox(*(getattr(b, f)[mask] for f in LatentBox.__dataclass_fields__)) for b in boxes]


def _same_support(a, b):
    """Two latent models whose kernel values k(x, Xs) are the same function."""
    if a.X_support.shape != b.X_support.shape or not np.array_equal(a.X_support, b.X_support):
        return False
    try:
        return bool(a.kernel == b.kernel)
    except Exception:
        return False


def _proba(P, cls, binary):
    """predict_proba column ``cls`` from unnormalised p (n, K), as sklearn's
    one-vs-rest normalises (rows whose sum is 0 are left as they are)."""
    if binary:
        return P[:, 0] if cls == 1 else 1.0 - P[:, 0]
    tot = P.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot != 0, P[:, cls] / np.where(tot != 0, tot, 1.0), P[:, cls])


def _normalised_interval(plo, phi, c, unit=False):
    """Bounds of sklearn's one-vs-rest ``predict_proba`` column c from bounds
    of the per-class values over each box: ``(low, high, rel, pos)``.

    sklearn divides the per-class values p~_k (each in [plo_k, phi_k], the
    link margin included; p~_k may be slightly negative: the five-erf sum's
    own noise) by their float sum S~ where S~ != 0. Let g = (K + 2) u sum_k
    max(|plo_k|, |phi_k|) >= |S~ - sum_k p~_k| (K - 1 additions, first order
    with room). Write S~ = p~_c + R' with R' in [Ra, Rb] = [sum_(k != c)
    plo_k - g, sum_(k != c) phi_k + g]. If S_L = plo_c + Ra > 0 the
    denominator p + R is positive on the whole rectangle [plo_c, phi_c] x
    [Ra, Rb]; there p / (p + R) is monotone in p for fixed R (derivative R /
    S^2, one sign) and in R for fixed p (-p / S^2), so its extremes over the
    rectangle are at the four corners. Each corner is computed with two
    roundings and sklearn's division adds one: the ends are moved outward by
    4 u of their size. Where S_L <= 0 (or not finite) nothing is proven:
    sklearn's value can be anything (its sum may vanish or change sign), so
    the box gets (-inf, inf); ``pos`` marks the proven boxes. ``rel`` = 4 u
    + 2 g / S_L is the relative correction for a bound t of p~_c / sum_k p~_k
    (the joint bound of :func:`_ratio_bound`): S~ differs from the sum by
    at most g <= (g / S_L) sum (doubled for room), and the division adds u.

    ``unit`` (the link's values lie in [0, 1] exactly, e.g. the probit's
    ndtr: :attr:`~skgprobust._bounds._links.Link.unit_interval`): every
    p~_k is then in [0, 1], so sklearn's quotient p~_c / S~ lies in [0, 1]
    too (S~ is a float sum of non-negative terms that include p~_c, so
    S~ >= p~_c by the monotonicity of rounding, and fl(p~_c / S~) <= 1; a
    zero sum leaves the zeros), and the ends are intersected with [0, 1]
    (boxes without a positive S_L get [0, 1] instead of (-inf, inf)).
    """
    K = plo.shape[1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        g = (K + 2) * _U * np.maximum(np.abs(plo), np.abs(phi)).sum(axis=1) * (1.0 + 1e-12)
        # g for sklearn's float sum, g again for our own float sums of the rest.
        Ra = (plo.sum(axis=1) - plo[:, c]) - 2.0 * g
        Rb = (phi.sum(axis=1) - phi[:, c]) + 2.0 * g
        S_L = plo[:, c] + Ra
        pos = np.isfinite(S_L) & (S_L > 0) & np.isfinite(Rb) & np.isfinite(phi[:, c])
        corners = np.stack([pc / (pc + R) for pc in (plo[:, c], phi[:, c]) for R in (Ra, Rb)])
        low = corners.min(axis=0)
        high = corners.max(axis=0)
        low = low - 4.0 * _U * np.abs(low) - 1e-300
        high = high + 4.0 * _U * np.abs(high) + 1e-300
        rel = 4.0 * _U + 2.0 * g / np.where(pos, S_L, 1.0)
    low = np.where(pos, low, -np.inf)
    high = np.where(pos, high, np.inf)
    if unit:
        low, high = np.fmax(low, 0.0), np.fmin(high, 1.0)
    return low, high, rel, pos


class ProbaObjective:
    """``sign * predict_proba(x)[:, cls]`` as sklearn computes it."""

    def __init__(self, probs, cls, sign, joint=True):
        self.probs, self.cls, self.sign, self.joint = probs, int(cls), float(sign), bool(joint)

    def value(self, X):
        return self.sign * _proba(self.probs.p(X), self.cls, self.probs.binary)

    def value_and_grad(self, X):
        P, G = self.probs.p_and_grad(X)
        if self.probs.binary:
            s = 1.0 if self.cls == 1 else -1.0
            return self.sign * _proba(P, self.cls, True), self.sign * s * G[:, 0]
        tot = P.sum(axis=1)
        pc = P[:, self.cls]
        gc = G[:, self.cls] / tot[:, None] - (pc / tot**2)[:, None] * G.sum(axis=1)
        return self.sign * pc / tot, self.sign * gc

    def tighten(self, lo, hi):
        """A second, costlier lower bound over each box, for the boxes the
        branch and bound is about to split (:meth:`BranchAndBound.step`);
        None where there is none (one-vs-rest: the joint bounds are in
        :meth:`bound` already).

        Binary: the better of :meth:`bound` and the coupled plane bound
        (:func:`coupled_plane_bound`, the variance coupled to the mean) of
        p1 on the side wanted. Measured on a fitted breast-cancer GPC (d =
        30, gamma 0.05): the root bound of the smallest p1 of a row 0.850 ->
        0.866 (attained 0.871), and every one of 10 rows converges to 0.01
        after one split (two did not in 5 s). Two sets of planes: over the
        whole mean range (the variance's tangent at the box centre), and over
        the slices of ``SLICE_EDGES`` (finer toward the mean's end where
        the probability's extreme is expected) with the variance's tangent
        at the mean bound's extreme point (``coupled_plane_bound``'s ``x0``:
        the centre's tangent over-estimates the variance there by up to the
        RKHS remainder); the better of the two bounds. Breast cancer row 0
        at gamma 0.2, root: 0.556 (three equal slices, centre tangent) ->
        0.576 (tangent at the extreme) -> 0.590 (these edges); attained
        0.6236. The slices are bounded on the boxes where the whole-range
        planes come within ``SLICE_GATE`` of the interval bound (before
        session 32: three equal slices with the centre's tangent, where
        those planes beat it). Session 32, bench_binary_real C * RBF, 10
        rows, gamma 0.2: mean worst gap 0.029 -> 0.016, rows converged 3 ->
        4 (``SLICE_GATE`` has the variants). Only the planes that can beat
        the interval bound by a quarter of the row's epsilon at the mean
        bound's extreme point (the minimiser, or maximiser, of its
        relaxation; ``coupled_plane_bound``'s ``at``) are bounded: where the
        extremes of the mean and of the variance are reached together the
        coupling cannot win (on the paper's Synthetic2D model it never did,
        and tried on every box it cost 37% more time per row at gamma 1). A
        choice of work only.
        """
        if not (self.probs.binary and self.joint) or row_time_expired():
            return None
        bb = self.bound(lo, hi)
        plo, phi, boxes = self.probs.p_box(lo, hi)  # cached by bound()
        b, c, m = boxes[0], self.cls, self.probs.link.margin
        want_low = (self.sign > 0) == (c == 1)  # minimise p1?
        eps = row_epsilon()
        slack = 0.0 if eps is None else 0.25 * eps
        # The point the planes must beat the interval bound at: the mean
        # bound's extreme point.
        mu_at, v_at = self.probs.points[0].values(b.arg_mu_min if want_low else b.arg_mu_max)
        at = (mu_at[:, None], v_at[:, None])
        beat = plo[:, 0] + slack if want_low else phi[:, 0] - slack
        model, var = self.probs.models[0], self.probs.variances[0]
        found = coupled_plane_bound(self.probs.link, model, var, b, lo, hi, upper=not want_low, at=at, beat=beat)
        if found is None:
            return bb
        p1, carg = found
        # The slices (SLICE_GATE), with the variance's tangent at the mean
        # bound's extreme point (where the probability's extreme is expected;
        # the centre's tangent over-estimates the variance there by up to the
        # RKHS remainder).
        won = (p1 > plo[:, 0] - SLICE_GATE) if want_low else (p1 < phi[:, 0] + SLICE_GATE)
        if won.any():
            edges = np.array(SLICE_EDGES) if want_low else 1.0 - np.array(SLICE_EDGES)[::-1]
            sl = coupled_plane_bound(self.probs.link, model, var, _take([b], won)[0], lo[won], hi[won],
                                     upper=not want_low, at=(at[0][won], at[1][won]), beat=beat[won], refs=SLICE_REFS,
                                     x0=(b.arg_mu_min if want_low else b.arg_mu_max)[won], slice_edges=edges)
            if sl is not None:
                q, qarg = sl
                idx = np.flatnonzero(won)
                better = q > p1[idx] if want_low else q < p1[idx]
                p1, carg = p1.copy(), carg.copy()
                p1[idx[better]], carg[idx[better]] = q[better], qarg[better]
        # p1 >= p1_low gives p_c >= p1_low (c = 1) or p_c <= 1 - p1_low (c = 0);
        # p1 <= p1_up gives p_c <= p1_up (c = 1) or p_c >= 1 - p1_up (c = 0).
        pc = p1 if c == 1 else 1.0 - p1
        low = (pc if self.sign > 0 else -pc) - m
        better = low > bb.lower
        return BoxBound(np.where(better, low, bb.lower), np.where(better[:, None], carg, bb.argmin), bb.score)

    def bound(self, lo, hi):
        plo, phi, boxes = self.probs.p_box(lo, hi)
        c, m = self.cls, self.probs.link.margin
        if self.probs.binary:
            b = boxes[0]
            want_low = (self.sign > 0) == (c == 1)  # minimise p1?
            if c == 1:
                lo_c, hi_c = plo[:, 0], phi[:, 0]
            else:
                lo_c, hi_c = 1.0 - phi[:, 0], 1.0 - plo[:, 0]
            arg = b.arg_mu_min if want_low else b.arg_mu_max
            lower = lo_c if self.sign > 0 else -hi_c
            return BoxBound(lower - m, arg, b.score)
        # Normalised (sklearn: p~_c / fl(sum_k p~_k) where the sum is not 0):
        # proven only where the sum is certified positive (_normalised_interval).
        low, high, rel, pos = _normalised_interval(plo, phi, c, unit=self.probs.link.unit_interval)
        margin = 4 * len(boxes) * m
        b = boxes[c]
        score = sum(bx.score for bx in boxes)
        arg = b.arg_mu_min if self.sign > 0 else b.arg_mu_max
        probs = self.probs
        if self.joint and not row_time_expired():
            # Joint bound (_ratio_bound) where the interval bound leaves room
            # (skipped once the row's time_limit has passed: the interval
            # bound is sound on its own; hunt B1: 20 non-interruptible roots
            # of ~0.5 s each made rows at time_limit 1e-3 take 8-10 s).
            ok = pos & np.isfinite(low) & np.isfinite(high) & (high - low > 1e-9)
            if ok.any():
                # Search t only up to (lower side) / down from (upper side) the
                # value at the box centre: no t beyond it can pass.
                lo_ok, hi_ok = lo[ok], hi[ok]
                with np.errstate(invalid="ignore", divide="ignore"):
                    at = _proba(probs.p_centre(lo_ok, hi_ok), c, False)
                at = np.where(np.isfinite(at), at, np.nan)
                t_lo, t_hi = low[ok], high[ok]
                if self.sign > 0:
                    t_hi = np.maximum(t_lo, np.fmin(t_hi, at))
                else:
                    t_lo = np.minimum(t_hi, np.fmax(t_lo, at))
                try:
                    t, targ = _ratio_bound(probs, lo_ok, hi_ok, c, _take(boxes, ok), t_lo, t_hi,
                                           upper=self.sign < 0)
                except UnsupportedKernelError:  # no diagonal bound for this kernel
                    t = None
                if t is not None:
                    # t bounds p~_c / (sum of the p~_k); sklearn's float sum and
                    # division move it by at most rel |t| (_normalised_interval).
                    if self.sign > 0:
                        t = t - rel[ok] * np.abs(t)
                        better = t > low[ok]
                        low = low.copy()
                        low[ok] = np.maximum(low[ok], t)
                    else:
                        t = t + rel[ok] * np.abs(t)
                        better = t < high[ok]
                        high = high.copy()
                        high[ok] = np.minimum(high[ok], t)
                    arg = arg.copy()
                    idx = np.flatnonzero(ok)[better]
                    arg[idx] = targ[better]
        if self.sign > 0:
            return BoxBound(low - margin, arg, score)
        return BoxBound(-high - margin, arg, score)


class MarginObjective:
    """``p_c*(x) - max_{k != c*} p_k(x)`` of a one-vs-rest model: the predicted
    class c* stays the argmax wherever it is > 0 (ties go to the lower index
    in sklearn; a tie is never counted as proven).

    :meth:`restricted` drops the classes that cannot win anywhere in a box
    (their upper bound over the box is below c*'s lower bound): on sub-boxes
    of that box only c* and the contenders are bounded, which is where a
    many-class model spends its time.
    """

    def __init__(self, probs, cls, others=None, floor=-np.inf, joint=True):
        self.probs, self.cls, self.joint = probs, int(cls), bool(joint)
        if others is None:
            others = [k for k in range(len(probs.models)) if k != cls]
        self.others = np.asarray(others, dtype=int)
        self.columns = [self.cls] + self.others.tolist()
        # max over the dropped classes of their upper bound (a constant).
        self.floor = float(floor)

    def _rest(self, P):
        """max(max_k p_k over the kept others, floor) per row."""
        rest = P[:, 1:].max(axis=1) if P.shape[1] > 1 else np.full(len(P), -np.inf)
        return np.maximum(rest, self.floor)

    def value(self, X):
        P = self.probs.p(X, self.columns)
        return P[:, 0] - self._rest(P)

    def value_and_grad(self, X):
        P, G = self.probs.p_and_grad(X, self.columns)
        n = np.arange(len(X))
        if P.shape[1] == 1:
            return P[:, 0] - self.floor, G[:, 0]
        k = 1 + np.argmax(P[:, 1:], axis=1)
        above = P[n, k] >= self.floor
        grad = G[:, 0] - np.where(above[:, None], G[n, k], 0.0)
        return P[:, 0] - self._rest(P), grad

    def bound(self, lo, hi):
        """Per kept competitor k the better of the interval bound p_lo_c -
        p_hi_k and the joint bound of :meth:`ClassProbabilities.pair_lower`
        (both lower bounds of p_c - p_k over the box; the joint one is
        computed only where the interval bound is <= 0, where it can change
        the decision); the margin's bound is the smallest of these and
        p_lo_c - floor."""
        plo, phi, boxes = self.probs.p_box(lo, hi, self.columns)
        m = 2 * self.probs.link.margin
        lower = plo[:, 0] - self.floor  # +inf without dropped classes
        arg = boxes[0].arg_mu_min
        score = sum(bx.score for bx in boxes)
        if len(self.others):
            pair = plo[:, :1] - phi[:, 1:]
            if self.joint:
                # Joint bounds where the interval bound cannot decide the sign.
                joint, jargs = self.probs.pair_lower(lo, hi, self.cls, self.others, boxes, todo=pair <= 0)
                pair = np.fmax(pair, joint)
                worst = np.argmin(pair, axis=1)
                use = np.isfinite(joint[np.arange(len(lo)), worst])
                arg = np.where(use[:, None], jargs[np.arange(len(lo)), worst], arg)
            lower = np.minimum(lower, pair.min(axis=1))
        return BoxBound(lower - m, arg, score)

    def restricted(self, lo, hi):
        """The same decision on sub-boxes of ``[lo, hi]`` (shape (d,)) with the
        classes that cannot win there dropped.

        Proof. Let D be the dropped classes: p_hi_k < p_lo_c - 2 m over the
        box (certified bounds, m the link margin; p_hi_k from
        :meth:`ClassProbabilities.prior_upper` first, the full bound only
        for the classes that this does not drop), F = max_D p_hi_k. For x in
        any sub-box, p_k(x) <= F < p_c(x) for k in D, so with g(x) = p_c(x) -
        max(max_{kept} p_k(x), F): g(x) <= margin(x) (F bounds the dropped
        p_k), and g(x) <= 0 implies a kept k with p_k(x) >= p_c(x), i.e.
        margin(x) <= 0. So g has the sign of the margin everywhere (proofs
        and counterexamples carry over) and its box bounds, computed here,
        are lower bounds of the margin as well.
        """
        lo, hi = np.asarray(lo, dtype=np.float64)[None], np.asarray(hi, dtype=np.float64)[None]
        m = 2 * self.probs.link.margin
        plo_c = self.probs.p_box(lo, hi, [self.cls])[0][0, 0]
        # First with the prior variance (no variance bound: cheap), then the
        # classes left with their full bounds; either upper bound is valid.
        phi = self.probs.prior_upper(lo, hi, self.others)[0]
        left = phi >= plo_c - m
        if left.any():
            phi[left] = np.minimum(phi[left], self.probs.p_box(lo, hi, self.others[left].tolist())[1][0])
        dead = phi < plo_c - m
        if not dead.any():
            return self
        floor = max(self.floor, float(phi[dead].max()))
        return MarginObjective(self.probs, self.cls, self.others[~dead], floor, self.joint)
