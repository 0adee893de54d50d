"""Batching shortcuts that must not change a single bit: the batched
positive-definiteness test of the dual bound, its diagonal shift, and the
shared ranges of repeated boxes in the stationary adapters."""

import numpy as np
from sklearn.gaussian_process import kernels as K

from skgprobust._bounds._mean import _positive_definite, _shift_diagonal, affine_lower
from skgprobust.kernels import make_adapter


def _loop_decision(P):
    ok = np.ones(len(P), dtype=bool)
    for b in range(len(P)):
        try:
            np.linalg.cholesky(P[b])
        except np.linalg.LinAlgError:
            ok[b] = False
    return ok


def test_positive_definite_matches_per_matrix_cholesky():
    rng = np.random.default_rng(0)
    for _ in range(60):
        d, B = int(rng.integers(2, 9)), int(rng.integers(1, 12))
        A = rng.normal(size=(B, d, d))
        P = A @ A.transpose(0, 2, 1) - rng.uniform(0.0, 3.0) * np.eye(d)
        for b in range(B):  # NaN / inf entries: potrf may "succeed" with NaN inside
            r = rng.random()
            if r < 0.15:
                P[b, rng.integers(d), rng.integers(d)] = [np.nan, np.inf, -np.inf][int(rng.integers(3))]
        assert np.array_equal(_positive_definite(P), _loop_decision(P))


def test_shift_diagonal_bitwise():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 6, 6))
    A[0, 1, 2] = -0.0
    eye = np.eye(6)
    for lam in (rng.uniform(1e-3, 2.0, (5, 6)), np.where(rng.random((5, 6)) < 0.2, np.inf, 1.0)):
        with np.errstate(invalid="ignore"):  # inf * 0 in the formula itself
            ref = A + 2.0 * lam[:, :, None] * eye
            got = _shift_diagonal(A, A + 0.0, lam, eye)
        assert np.array_equal(ref.view(np.uint64), got.view(np.uint64))


def test_repeated_boxes_share_ranges_bitwise():
    rng = np.random.default_rng(2)
    Xs = rng.random((40, 9))
    for kernel in (K.RBF(0.7), K.Matern(0.7, nu=1.5), K.RBF(0.7) ** 2):
        ad = make_adapter(kernel, Xs)
        c = rng.random((3, 9))
        idx = np.r_[np.tile(np.arange(3), 4), [0, 0]]
        lo, hi = (c - 0.05)[idx], (c + 0.05)[idx]
        for a, b in zip(ad._ranges(lo, hi), ad._ranges_rows(lo, hi)):
            assert np.array_equal(a.view(np.uint64), b.view(np.uint64))
        W = rng.normal(size=(len(lo), 40))
        bb = affine_lower(ad, W, 0.1, lo, hi)
        rows = [affine_lower(ad, W[i : i + 1], 0.1, lo[i : i + 1], hi[i : i + 1]).lower for i in range(len(lo))]
        assert np.array_equal(bb.lower.view(np.uint64), np.concatenate(rows).view(np.uint64))
