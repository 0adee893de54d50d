"""One anytime, epsilon-exact branch and bound (paper Alg. 1) for minimisation.

:class:`BranchAndBound` is a resumable state: the controllers in
:mod:`skgprobust.solve` decide which problem to refine and when to stop, so
ranges, decisions and multi-output questions share the same engine.

Soundness on every exit path: a box leaves the open queue only with its
lower bound recorded (settled because it cannot beat the incumbent, because
it is above the decision target, or because it cannot be split further), so
``lower`` = min over all leaves is always a valid lower bound of the true
minimum, whenever the caller stops.

Split rule: bisect the coordinate with the largest split score, i.e. the
coordinate whose width contributes most to the looseness of the box's
relaxation (for stationary kernels: sum_i |w_i psi'_i| times the coordinate's
share of the range of phi_i), with a small tie-break by relative width so that
every coordinate with positive width is eventually split (convergence,
paper Thm. 14). Boxes are processed in batches of the best ``batch_size`` to
amortise numpy overhead.

Two bounds: an objective may have a second, costlier bound
(``tighten(lo, hi)``, e.g. the binary probability's coupled planes): it is
computed for a box only when the box is popped to be split, i.e. only for
the boxes the search cannot settle with the first bound; the tighter bound
is inherited by the children (or settles the box). Boxes that the incumbent
settles, and rows that converge at the root, never pay for it.

Time: the state measures what one split costs (bounding its two children and
evaluating their candidate points; an exponential moving average that follows
increases at once, started from the root's cost) and ``step(deadline=...)``
pops only as many boxes as are predicted to finish by the deadline, bounding
them in chunks (of at most a quarter of the time left, or the grace) and
checking the clock between chunks. Boxes popped but not
bounded go back to the queue unchanged, so stopping there keeps ``lower``
valid.
"""

import heapq
import itertools
import time

import numpy as np

#: With a deadline, a batch is bounded in chunks of about max(grace, this,
#: CHUNK_SHARE * the time left) seconds (as predicted by the cost per split).
MIN_CHUNK_SECONDS = 0.01
#: Chunks may take this share of the time left: the cost per box falls with
#: the batch size (numpy overhead), so chunks of one or two boxes, sized by
#: the grace alone, never measured the cheaper cost of larger batches.
CHUNK_SHARE = 0.25


class BranchAndBound:
    """Branch and bound state for ``min objective(x)`` over ``[lo, hi]``.

    Parameters
    ----------
    objective : object
        Has ``bound(lo, hi) -> BoxBound`` and ``value(X)`` (vectorised).
    lo, hi : ndarray of shape (d,)
    candidates : array-like of shape (m, d), optional
        Points to evaluate first (e.g. the unperturbed input).
    target : float, optional
        Decision mode: boxes whose lower bound exceeds ``target`` are settled
        (the question "is min > target?" is answered for them).
    batch_size : int, default=16

    Attributes
    ----------
    split_time : float
        Estimated seconds per split (see the module docstring).
    """

    def __init__(self, objective, lo, hi, *, candidates=None, target=None, batch_size=16):
        t0 = time.perf_counter()
        self.objective = objective
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.target = target
        self.batch_size = batch_size
        self.best_f, self.best_x = np.inf, 0.5 * (self.lo + self.hi)
        self.n_iter = 0
        self._heap = []
        self._tie = itertools.count()
        self._settled = np.inf
        root = objective.bound(self.lo[None], self.hi[None])
        pts = [self.best_x[None], root.argmin]
        if candidates is not None:
            pts.append(np.atleast_2d(candidates))
        self.offer(np.vstack(pts))
        self._add(root.lower[0], self.lo, self.hi, root.score[0])
        # A split bounds two boxes: start from twice the root's cost.
        self.split_time = 2.0 * (time.perf_counter() - t0)
        # Objectives whose bounds share a cache (the 2 m softmax range
        # objectives of a row: all but the first find the root bound cached)
        # report what a split (two boxes bounded afresh) costs; never start
        # below that (time prediction only, no bound depends on it).
        hint = getattr(objective, "split_seconds", None)
        if hint is not None:
            self.split_time = max(self.split_time, float(hint()))

    # -- state -------------------------------------------------------------
    @property
    def lower(self):
        """Certified lower bound of the minimum (valid at any time)."""
        top = self._heap[0][0] if self._heap else np.inf
        return min(top, self._settled, self.best_f)

    @property
    def upper(self):
        """Best value found (attained at ``best_x``)."""
        return self.best_f

    @property
    def gap(self):
        return self.best_f - self.lower

    @property
    def exhausted(self):
        """No open box left: the bound cannot be refined further."""
        return not self._heap

    def offer(self, X):
        """Evaluate candidate points and keep the best as incumbent."""
        X = np.clip(np.atleast_2d(X), self.lo, self.hi)
        f = np.asarray(self.objective.value(X), dtype=np.float64)
        f = np.where(np.isnan(f), np.inf, f)  # a NaN must not hide the other candidates
        i = int(np.argmin(f))
        if f[i] < self.best_f:
            self.best_f, self.best_x = float(f[i]), X[i].copy()

    def _add(self, lb, lo, hi, score):
        width = hi - lo
        splittable = width > 8 * np.finfo(float).eps * (np.abs(lo) + np.abs(hi)) + 1e-300
        settle = (
            lb >= self.best_f
            or (self.target is not None and lb > self.target)
            or not splittable.any()
        )
        if settle:
            self._settled = min(self._settled, lb)
        else:
            heapq.heappush(self._heap, (lb, next(self._tie), lo, hi, np.where(splittable, score, -1.0)))

    @staticmethod
    def _split_coordinate(lo, hi, score):
        width = hi - lo
        smax = score.max()
        s = score / smax if smax > 0 else np.zeros_like(score)
        s = s + 1e-3 * width / width.max()
        return int(np.argmax(np.where(score < 0, -np.inf, s)))

    # -- work --------------------------------------------------------------
    def _record(self, seconds, k):
        """Update the cost per split after ``k`` splits took ``seconds``."""
        per = seconds / k
        self.split_time = per if per > self.split_time else 0.7 * self.split_time + 0.3 * per

    def _n_fit(self, deadline, grace):
        """Splits predicted to finish by ``deadline`` (None: no deadline);
        1 when none fits but one finishes by ``deadline + grace``."""
        if deadline is None:
            return None
        left = deadline - time.perf_counter()
        if left <= 0:
            return 0
        n = int(left / self.split_time) if self.split_time > 0 else self.batch_size
        if n == 0 and self.split_time <= left + grace:
            n = 1
        return n

    def step(self, max_boxes=None, *, deadline=None, grace=0.0):
        """Split up to ``batch_size`` (and ``max_boxes``) best open boxes;
        returns the number of boxes split.

        With ``deadline`` (a ``time.perf_counter()`` value) only as many boxes
        as are predicted to be split by then are popped (one more box may
        finish up to ``grace`` seconds late); returns 0 without splitting
        anything when none fits, so 0 with open boxes left means "out of time".
        """
        limit = self.batch_size if max_boxes is None else max(1, min(self.batch_size, int(max_boxes)))
        fit = self._n_fit(deadline, grace)
        if fit is not None:
            if fit == 0:
                return 0
            limit = min(limit, fit)
        popped = []
        while self._heap and len(popped) < limit:
            item = heapq.heappop(self._heap)
            if item[0] >= self.best_f or (self.target is not None and item[0] > self.target):
                self._settled = min(self._settled, item[0])
                continue
            popped.append(item)
        if not popped:
            return 0
        # With a deadline, bound the batch in chunks of about ``grace`` seconds (at least MIN_CHUNK_SECONDS)
        # and check the clock between chunks (a misprediction then costs at
        # most one chunk); without one, the whole batch in one call.
        chunk = len(popped)
        if deadline is not None and self.split_time > 0:
            span = max(grace, MIN_CHUNK_SECONDS, CHUNK_SHARE * (deadline - time.perf_counter()))
            chunk = max(1, min(chunk, int(span / self.split_time)))
        done = 0
        while done < len(popped):
            n = min(chunk, len(popped) - done)
            if done:
                n = min(n, self._n_fit(deadline, 0.0))
                if n == 0:
                    break
            done += self._split(popped[done:done + n])
        for item in popped[done:]:  # not bounded: back to the queue unchanged
            heapq.heappush(self._heap, item)
        return done

    def _split(self, popped):
        """Tighten the popped boxes' bounds (where the objective has a second
        bound), bisect those still open, bound the children, push them back."""
        t0 = time.perf_counter()
        k0 = len(popped)
        popped = self._tighten(popped)
        k = len(popped)
        if not k:
            self.n_iter += k0
            self._record(time.perf_counter() - t0, k0)
            return k0
        clo = np.empty((2 * k, len(self.lo)))
        chi = np.empty_like(clo)
        for m, (_, _, lo, hi, score) in enumerate(popped):
            j = self._split_coordinate(lo, hi, score)
            mid = 0.5 * (lo[j] + hi[j])
            clo[2 * m], chi[2 * m] = lo, hi
            clo[2 * m + 1], chi[2 * m + 1] = lo, hi
            chi[2 * m, j] = mid
            clo[2 * m + 1, j] = mid
        bb = self.objective.bound(clo, chi)
        self.offer(np.vstack([bb.argmin, 0.5 * (clo + chi)]))
        for m in range(2 * k):
            # A child lies inside its parent, so the parent's bound holds for
            # it too: keep the better of the two (``lower`` never decreases).
            self._add(max(bb.lower[m], popped[m // 2][0]), clo[m], chi[m], bb.score[m])
        self.n_iter += k0
        self._record(time.perf_counter() - t0, k0)
        return k0

    def _tighten(self, popped):
        """The objective's second, costlier bound (``objective.tighten(lo, hi)
        -> BoxBound or None``) of boxes about to be split: computed only for
        the boxes the search needs to refine, never for boxes settled
        before they are popped. The better of the box's two valid bounds is
        kept (children inherit it, ``_split``); a box whose tightened bound
        settles it (``_add``'s rule) is not split. Returns the boxes to
        split."""
        tighten = getattr(self.objective, "tighten", None)
        if tighten is None:
            return popped
        plo = np.array([item[2] for item in popped])
        phi = np.array([item[3] for item in popped])
        tb = tighten(plo, phi)
        if tb is None:
            return popped
        better = np.array([tb.lower[m] > item[0] for m, item in enumerate(popped)])
        if better.any():  # (elsewhere the candidate is the first bound's, offered already)
            self.offer(tb.argmin[better])
        keep = []
        for m, (lb, tie, lo, hi, score) in enumerate(popped):
            lb = max(lb, float(tb.lower[m]))
            if lb >= self.best_f or (self.target is not None and lb > self.target):
                self._settled = min(self._settled, lb)
            else:
                keep.append((lb, tie, lo, hi, score))
        return keep
