"""Result objects of ``certify`` and ``prediction_range`` (one entry per row)."""

from dataclasses import dataclass, fields

import numpy as np

STATUSES = ("robust", "not_robust", "unknown")


def frame_index(index, n):
    """``index`` checked against the n rows of a result (None stays None)."""
    if index is None:
        return None
    index = list(index)
    if len(index) != n:
        raise ValueError(f"index must have one label per row ({n}), got {len(index)}.")
    return index


class _Result:
    def __len__(self):
        return len(getattr(self, fields(self)[0].name))

    def to_frame(self, index=None):
        """The per-row arrays as a pandas DataFrame (requires pandas).

        Parameters
        ----------
        index : array-like of shape (n,), default=None
            Row labels, e.g. the input DataFrame's ``X.index`` (None: 0..n-1).

        Returns
        -------
        frame : pandas.DataFrame
            One row per input row, one column per per-row field.
        """
        import pandas as pd

        cols = {}
        for f in fields(self):
            v = np.asarray(getattr(self, f.name))
            if v.ndim == 1:
                cols[f.name] = v
            else:
                for j in range(v.shape[1]):
                    cols[f"{f.name}_{j}"] = v[:, j]
        return pd.DataFrame(cols, index=frame_index(index, len(self)))


@dataclass
class CertificationResult(_Result):
    """Outcome of ``certify`` for each row of X.

    Attributes
    ----------
    robust : ndarray of bool, shape (n,)
        True only when robustness is proven.
    status : ndarray of str, shape (n,)
        "robust", "not_robust" (a counterexample verified by the model's own
        ``predict``) or "unknown" (neither; usually the budget ran out, see
        :class:`~skgprobust.exceptions.BudgetExhaustedWarning`).
    counterexample : ndarray of shape (n, d)
        A point in the box whose prediction violates the property; NaN rows
        where none was found.
    bound : ndarray of shape (n,)
        The proven bound behind the answer. Binary classifier: lower bound
        of the latent margin ``s * f(x)`` over the box, s the sign of the
        predicted class (robust iff > 0); one-vs-rest and softmax: lower
        bound of the probability margin ``p_c(x) - max_k p_k(x)`` (one-vs-rest:
        the binary models' probabilities before sklearn normalises them;
        robust iff > 0); one-vs-one: lower bound of the vote margin ``votes_c(x) -
        max_k votes_k(x)``, an integer (robust needs >= 1 and the pairs'
        probabilities, sklearn's confidences, finite on the box). Regressor: upper bound of
        ``||mean(x) - mean(x*)||`` over the box (robust iff <= delta).
    n_iter : ndarray of int, shape (n,)
        Boxes split by branch and bound.
    time : ndarray of float, shape (n,)
        Seconds spent per row.
    """

    robust: np.ndarray
    status: np.ndarray
    counterexample: np.ndarray
    bound: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray

    def __repr__(self):
        counts = ", ".join(f"{s}={int(np.sum(self.status == s))}" for s in STATUSES)
        return f"CertificationResult(n={len(self)}, {counts})"


@dataclass
class RangeResult(_Result):
    """Certified range of a statistic over the box, per row and output column.

    ``min_lower <= min_x stat(x) <= min_upper`` and
    ``max_lower <= max_x stat(x) <= max_upper``; the upper bound of the
    minimum and the lower bound of the maximum are values the model's own
    predict returns at ``argmin`` / ``argmax`` (evaluated in one batch: sklearn
    can return other last bits for the same point in another batch, which
    matters only where its output is dominated by its own rounding). The
    certified ``min_lower`` / ``max_upper`` hold for every such evaluation.

    Attributes
    ----------
    min_lower, min_upper, max_lower, max_upper : ndarray of shape (n, k)
    converged : ndarray of bool, shape (n, k)
        Both gaps are <= epsilon.
    argmin, argmax : ndarray of shape (n, k, d)
        Points of the box where min_upper / max_lower are attained.
    n_iter : ndarray of int, shape (n,)
    time : ndarray of float, shape (n,)
    """

    min_lower: np.ndarray
    min_upper: np.ndarray
    max_lower: np.ndarray
    max_upper: np.ndarray
    converged: np.ndarray
    argmin: np.ndarray
    argmax: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray

    def to_frame(self, index=None):
        """Bounds and convergence per row and column (points omitted).

        Parameters
        ----------
        index : array-like of shape (n,), default=None
            Row labels, e.g. the input DataFrame's ``X.index`` (None: 0..n-1).

        Returns
        -------
        frame : pandas.DataFrame
            One row per input row; columns ``min_lower``, ..., ``converged``
            (suffixed by the output column when there are several),
            ``n_iter`` and ``time``.
        """
        import pandas as pd

        n, k = self.min_lower.shape
        cols = {}
        for name in ("min_lower", "min_upper", "max_lower", "max_upper", "converged"):
            arr = getattr(self, name)
            for j in range(k):
                cols[name if k == 1 else f"{name}_{j}"] = arr[:, j]
        cols["n_iter"], cols["time"] = self.n_iter, self.time
        return pd.DataFrame(cols, index=frame_index(index, n))

    def __repr__(self):
        n, k = self.min_lower.shape
        return f"RangeResult(n={n}, outputs={k}, converged={int(self.converged.sum())}/{n * k})"
