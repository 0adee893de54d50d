"""Objectives of a softmax multi-class model (m latent outputs), for the
branch and bound: :class:`SoftmaxProbaObjective` (+-pi_c) and
:class:`SoftmaxMarginObjective` (the argmax margin) over the box bounds of
:class:`SoftmaxProbabilities` (from :mod:`skgprobust.softmax`).

Same interface as the objectives of :mod:`._objectives`; bounds flow one
way: latent mean / variance intervals per box (:func:`._objectives.latent_box`)
-> softmax-Gaussian integral bounds -> the statistic's interval.
"""

import time

import numpy as np

from .._bounds._mean import BoxBound
from ._objectives import latent_box


class SoftmaxProbabilities:
    """Class probabilities ``pi(x) = E[softmax(f(x))]`` of m independent
    latent outputs ``f_j ~ N(mu_j(x), var_j(x))``: the interface a softmax
    multi-class GP plugs into.

    Parameters
    ----------
    outputs : sequence of (LatentModel, int, variance) of length m >= 2
        Latent output j: a model, the index of its output (mean column,
        ``scale``), and that output's unscaled variance object (e.g.
        ``model.variance("default")``).
    proba : callable
        ``proba(X) -> (n, m)``: the probabilities the model itself reports
        (its ``predict_proba``), used for incumbents, local search and
        counterexamples. The engine never trusts it for bounds.
    tolerance : float, default=0.0
        Bound on ``|proba(x) - pi(x)|`` for the model's own numerical
        integration (quadrature or sampling error). Box bounds are widened
        by it, so certificates hold for what ``proba`` returns.
    step : float, default=1e-6
        Relative step of the central differences used for gradients.
    **softmax_options
        Passed to :func:`~skgprobust.softmax.softmax_gaussian_bounds`
        (``n_cells``, ``n_lse``, ``tail_sigmas``, ``max_elements``).
    """

    def __init__(self, outputs, proba, tolerance=0.0, step=1e-6, **softmax_options):
        if len(outputs) < 2:
            raise ValueError(f"a softmax model needs m >= 2 latent outputs, got {len(outputs)}.")
        if not (np.isfinite(tolerance) and tolerance >= 0):
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}.")
        self.outputs, self.proba, self.tolerance, self.step = list(outputs), proba, float(tolerance), float(step)
        self.softmax_options = softmax_options
        self._cache = None  # (key, result) of the last box batch: min/max objectives share it
        self.box_seconds = 0.0  # measured cost of bounding one box afresh (see note_cost)

    def note_cost(self, seconds, n_boxes):
        """Record what bounding ``n_boxes`` boxes afresh (not from the cache)
        took: ``box_seconds`` follows an increase at once and decays slowly
        (0.7 / 0.3), as the engine's own cost per split. It feeds the
        objectives' ``split_seconds`` (a time prediction only: the objectives
        of one model share the cache, so all but the first find a row's root
        bound there and would otherwise predict splits ~10x too cheap)."""
        if n_boxes <= 0:
            return
        per = float(seconds) / n_boxes
        old = self.box_seconds
        self.box_seconds = per if per > old else 0.7 * old + 0.3 * per

    @property
    def n_classes(self):
        return len(self.outputs)

    def p(self, X):
        P = np.asarray(self.proba(np.atleast_2d(X)), dtype=np.float64)
        if P.shape != (len(np.atleast_2d(X)), self.n_classes):
            raise ValueError(f"proba returned shape {P.shape}, expected ({len(X)}, {self.n_classes}).")
        return P

    def p_and_grad(self, X, lo=None, hi=None):
        """Probabilities and central-difference gradients, shapes (n, m), (n, m, d)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        n, d = X.shape
        h = self.step * np.maximum(1.0, np.abs(X))
        E = np.zeros((d, 1, d))
        E[np.arange(d), 0, np.arange(d)] = 1.0
        Xp = (X[None] + E * h[None]).reshape(-1, d)
        Xm = (X[None] - E * h[None]).reshape(-1, d)
        P = self.p(np.vstack([X, Xp, Xm]))
        P0, Pp, Pm = P[:n], P[n : n + n * d].reshape(d, n, -1), P[n + n * d :].reshape(d, n, -1)
        G = (Pp - Pm) / (2.0 * h.T[:, :, None])  # (d, n, m)
        return P0, np.transpose(G, (1, 2, 0))

    def p_box(self, lo, hi):
        """Certified (p_lo, p_hi), each (B, m), over each box; also the latent boxes."""
        from .._bounds._softmax import MAX_ABS_MEAN, MAX_VAR, softmax_gaussian_bounds

        key = (lo.shape, lo.tobytes(), hi.tobytes())
        cache = self._cache  # read once: threads may replace it meanwhile
        if cache is not None and cache[0] == key:
            return cache[1]
        t0 = time.perf_counter()
        boxes = [latent_box(m, v, lo, hi, output=j) for m, j, v in self.outputs]
        mu_lo = np.column_stack([b.mu_lo for b in boxes])
        mu_hi = np.column_stack([b.mu_hi for b in boxes])
        # Variance bounds can dip below zero by rounding: the true variance is >= 0.
        v_lo = np.maximum(np.column_stack([b.v_lo for b in boxes]), 0.0)
        v_hi = np.maximum(np.column_stack([b.v_hi for b in boxes]), v_lo)
        # Boxes whose latent bounds are unbounded or beyond the discretisation's
        # range get the trivial (still valid) [0, 1]; splitting tightens them.
        ok = (
            np.all(np.isfinite(mu_lo) & np.isfinite(mu_hi) & np.isfinite(v_hi), axis=1)
            & np.all((np.abs(mu_lo) <= MAX_ABS_MEAN) & (np.abs(mu_hi) <= MAX_ABS_MEAN) & (v_hi <= MAX_VAR), axis=1)
        )
        p_lo, p_hi = np.zeros(mu_lo.shape), np.ones(mu_lo.shape)
        if ok.any():
            p_lo[ok], p_hi[ok] = softmax_gaussian_bounds(
                mu_lo[ok], mu_hi[ok], v_lo[ok], v_hi[ok], **self.softmax_options
            )
        result = (p_lo - self.tolerance, p_hi + self.tolerance, boxes)
        self._cache = (key, result)
        self.note_cost(time.perf_counter() - t0, len(lo))
        return result


def _split_seconds(probs):
    """Predicted seconds of one split (two children bounded afresh) of an
    objective over ``probs``: read by the branch and bound, if it asks
    (``split_seconds``), so that a state whose root bound came from the
    shared cache does not start from a near-zero cost per split. Time only:
    no bound depends on it."""
    return 2.0 * float(getattr(probs, "box_seconds", 0.0))


class SoftmaxProbaObjective:
    """``sign * pi_c(x)`` of a :class:`SoftmaxProbabilities` model."""

    def __init__(self, probs, cls, sign):
        self.probs, self.cls, self.sign = probs, int(cls), float(sign)

    def value(self, X):
        return self.sign * self.probs.p(X)[:, self.cls]

    def value_and_grad(self, X):
        P, G = self.probs.p_and_grad(X)
        return self.sign * P[:, self.cls], self.sign * G[:, self.cls]

    def split_seconds(self):
        return _split_seconds(self.probs)

    def bound(self, lo, hi):
        p_lo, p_hi, boxes = self.probs.p_box(lo, hi)
        b = boxes[self.cls]
        score = sum(bx.score for bx in boxes)
        if self.sign > 0:
            return BoxBound(p_lo[:, self.cls], b.arg_mu_min, score)
        return BoxBound(-p_hi[:, self.cls], b.arg_mu_max, score)


class SoftmaxMarginObjective:
    """``pi_c(x) - max_{k != c} pi_k(x)`` of a :class:`SoftmaxProbabilities`
    model: class c stays the argmax wherever it is > 0 (a tie is never
    counted as proven)."""

    def __init__(self, probs, cls):
        self.probs, self.cls = probs, int(cls)
        self.others = np.array([k for k in range(probs.n_classes) if k != cls])

    def value(self, X):
        P = self.probs.p(X)
        return P[:, self.cls] - P[:, self.others].max(axis=1)

    def value_and_grad(self, X):
        P, G = self.probs.p_and_grad(X)
        k = self.others[np.argmax(P[:, self.others], axis=1)]
        n = np.arange(len(P))
        return P[:, self.cls] - P[n, k], G[:, self.cls] - G[n, k]

    def split_seconds(self):
        return _split_seconds(self.probs)

    def bound(self, lo, hi):
        p_lo, p_hi, boxes = self.probs.p_box(lo, hi)
        score = sum(bx.score for bx in boxes)
        return BoxBound(p_lo[:, self.cls] - p_hi[:, self.others].max(axis=1), boxes[self.cls].arg_mu_min, score)
