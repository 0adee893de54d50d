"""Many-class one-vs-rest probability bounds (issue 12): the quadratic
relaxation of the normalised probability (``_QuadRatio`` in
skgprobust/_engine/_objectives.py), its latent slices (``_QuadRatio.sliced``:
planes of two classes on slices of their mean ranges) and the link
derivatives it uses, attacked with dense sampling plus local optimisation on
random models with up to ten classes and 64 features."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgprobust import RobustGaussianProcessClassifier
from skgprobust._bounds._links import FiveErfLink, ProbitLink
from skgprobust._engine import _objectives as O
from skgprobust._engine._deadline import row_deadline, row_scratch
from skgprobust._engine._solve import Budget

from ._helpers import SWEEP_EXAMPLES, attack


def _ovr_model(seed, K, d, N):
    """A fitted one-vs-rest GPC (fixed kernel) on K nearest-centre classes in [0, 1]^d."""
    rng = np.random.default_rng(seed)
    X = rng.random((N, d))
    centres = rng.random((K, d))
    y = np.argmin(((X[:, None] - centres[None]) ** 2).sum(-1), axis=1)
    y[:K] = np.arange(K)  # every class present
    amp = float(rng.choice([2.0, 20.0, 100.0]))
    ls = float(rng.uniform(0.3, 1.2) * np.sqrt(d) / 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RobustGaussianProcessClassifier(C(amp) * RBF(ls), optimizer=None).fit(X, y)
    return clf, rng


def _p_sklearn(clf, X):
    """sklearn's unnormalised one-vs-rest p_k (n, K): each binary model's predict_proba."""
    return np.column_stack([e.predict_proba(X)[:, 1] for e in clf.base_estimator_.estimators_])


def _check_quad_sound(seed, K, d, N, half_widths, n_t=3, n_samples=2000):
    """_QuadRatio's bound of F_t = sum_k coef_k p_k is below every attacked value of F_t."""
    clf, rng = _ovr_model(seed, K, d, N)
    probs = clf._bound_model().probabilities("default")
    used, n_aff = 0, [0]
    for hw in half_widths:
        x = rng.random(d)
        lo, hi = np.clip(x - hw, 0.0, 1.0)[None], np.clip(x + hw, 0.0, 1.0)[None]
        _, _, boxes = probs.p_box(lo, hi)
        P0 = _p_sklearn(clf, x[None])[0]
        for c in {int(np.argmax(P0)), int(rng.integers(K))}:
            for upper in (False, True):
                lines = [O.coupled_line(probs.link, probs.models[k], probs.variances[k], b, lo, hi,
                                        upper=(k == c) == upper) for k, b in enumerate(boxes)]
                q = O._QuadRatio(probs, lo, hi, c, boxes, lines, upper)
                if not q.ok:
                    continue
                used += 1
                for t in rng.random(n_t):
                    sc, sr = (-(1 - t), t) if upper else ((1 - t), -t)
                    coef = np.full(K, sr)
                    coef[c] = sc
                    val = q(np.array([sc]), np.array([sr]))[0][0]
                    # The variant with affine variance slopes and the helpful curvature (one attack serves both).
                    val_a = q(np.array([sc]), np.array([sr]), affine=True)[0][0]
                    n_aff[0] += int(np.isfinite(val_a))

                    def F(X, coef=coef):
                        return _p_sklearn(clf, X) @ coef

                    res = attack(F, lo[0], hi[0], rng, n_samples=n_samples, n_starts=2)
                    assert val <= res.min, (seed, K, d, hw, c, upper, t, val, res.min)
                    assert val_a <= res.min, (seed, K, d, hw, c, upper, t, val_a, res.min)
    return used, n_aff[0]


@pytest.mark.parametrize("seed,K,d,N,hw", [(0, 10, 64, 60, (0.05,)), (1, 4, 8, 40, (0.02, 0.2))])
def test_quadratic_ratio_relaxation_is_sound(seed, K, d, N, hw):
    used, n_aff = _check_quad_sound(seed, K, d, N, half_widths=hw, n_t=1, n_samples=500)
    assert used > 0  # the relaxation applied (every class's mean range on one side of 0)
    assert n_aff > 0  # and its affine-slope variant was finite (checked) somewhere


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(max(2, SWEEP_EXAMPLES // 50)))
def test_quadratic_ratio_relaxation_is_sound_sweep(seed):
    rng = np.random.default_rng(1000 + seed)
    K = int(rng.integers(3, 11))
    d = int(rng.choice([2, 8, 20, 64]))
    _check_quad_sound(1000 + seed, K, d, int(rng.integers(20, 70)), half_widths=(0.01, 0.05, 0.2, 0.5))


def _check_ranges(seed, K, d, gamma, columns=None, max_iter=2):
    """prediction_range brackets the attacked extremes of predict_proba columns."""
    clf, rng = _ovr_model(seed, K, d, 60)
    x = rng.random((1, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = clf.prediction_range(x, gamma, epsilon=0.01, domain=(0, 1), max_iter=max_iter, random_state=0)
    lo, hi = np.clip(x[0] - gamma, 0, 1), np.clip(x[0] + gamma, 0, 1)
    if columns is None:
        columns = range(K)
    else:  # the predicted class and random others
        columns = {int(np.argmax(clf.predict_proba(x)[0]))} | set(rng.integers(K, size=columns - 1).tolist())
    for c in columns:
        res = attack(lambda X, c=c: clf.predict_proba(X)[:, c], lo, hi, rng, n_samples=500, n_starts=2)
        assert r.min_lower[0, c] <= res.min and r.max_upper[0, c] >= res.max
        assert r.min_lower[0, c] <= r.min_upper[0, c] and r.max_lower[0, c] <= r.max_upper[0, c]


@pytest.mark.slow
def test_ovr_ten_class_ranges_bracket_attack():
    """A 10-class, 64-feature model (the quadratic relaxation on): the
    predicted class's column and two others (16 s: the engine's local search
    and the attack in 64 dimensions)."""
    _check_ranges(3, 10, 64, 0.05, columns=3, max_iter=0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(max(2, SWEEP_EXAMPLES // 100)))
def test_ovr_ranges_bracket_attack_sweep(seed):
    rng = np.random.default_rng(2000 + seed)
    _check_ranges(2000 + seed, int(rng.integers(3, 11)), int(rng.choice([4, 16, 64])),
                  float(rng.choice([0.01, 0.05, 0.2])), max_iter=4)


def test_quadratic_ratio_tightens_the_root_bound(monkeypatch):
    """Where the chords of the link lines lose most (the top class of a
    10-class model, 64 features), the quadratic relaxation gives a tighter
    certified lower bound of its probability than the lines alone."""
    clf, rng = _ovr_model(0, 10, 64, 60)
    probs = clf._bound_model().probabilities("default")
    x = rng.random(64)
    c = int(np.argmax(clf.predict_proba(x[None])[0]))
    lo, hi = np.clip(x - 0.1, 0, 1)[None], np.clip(x + 0.1, 0, 1)[None]
    monkeypatch.setattr(O, "QUAD_RATIO", False)
    lin = O.ProbaObjective(probs, c, 1.0).bound(lo, hi).lower[0]
    monkeypatch.setattr(O, "QUAD_RATIO", True)
    quad = O.ProbaObjective(probs, c, 1.0).bound(lo, hi).lower[0]
    assert quad > lin + 1e-3, (lin, quad)
    assert quad <= clf.predict_proba(x[None])[0, c]


@pytest.mark.parametrize("link", [FiveErfLink(), ProbitLink()])
def test_mu_derivatives_match_finite_differences(link):
    rng = np.random.default_rng(0)
    mu = rng.uniform(-8, 8, 200)
    v = rng.uniform(0, 20, 200)
    e = 1e-4
    d1, d2, d3 = link.mu_derivatives(mu, v)
    np.testing.assert_allclose(d1, link.grad(mu, v)[0], atol=1e-12)
    np.testing.assert_allclose(d1, (link.value(mu + e, v) - link.value(mu - e, v)) / (2 * e), atol=1e-7)
    up, dn = link.mu_derivatives(mu + e, v), link.mu_derivatives(mu - e, v)
    np.testing.assert_allclose(d2, (up[0] - dn[0]) / (2 * e), atol=1e-7)
    np.testing.assert_allclose(d3, (up[1] - dn[1]) / (2 * e), atol=1e-7)
    # The fourth derivative's bound (local_sups) covers the finite differences of d3.
    d4 = (up[2] - dn[2]) / (2 * e)
    assert np.all(np.abs(d4) <= link.local_sups(v)[1] + 1e-6)


def _check_sliced_sound(seed, K, d, N, half_widths, n_t=2, n_samples=500, n_slices=2, steps=3, depth=1,
                        top_only=False):
    """Latent slices (_QuadRatio.sliced, every leaf bounded: fail_fast=False;
    failing nodes halved ``depth`` times; the other classes with the
    relaxation's terms and with its affine-slope variant's) stay below every attacked value of F_t = sum_k coef_k p_k, for both
    pairs of sliced classes and both sides (one attack of G = (1 - t) p_c -
    t sum_(k != c) p_k serves both: F_t = G on the lower side, -G on the
    upper one)."""
    clf, rng = _ovr_model(seed, K, d, N)
    probs = clf._bound_model().probabilities("default")
    used = 0
    for hw in half_widths:
        x = rng.random(d)
        lo, hi = np.clip(x - hw, 0.0, 1.0)[None], np.clip(x + hw, 0.0, 1.0)[None]
        _, _, boxes = probs.p_box(lo, hi)
        P0 = _p_sklearn(clf, x[None])[0]
        top = int(np.argmax(P0))
        for c in {top} if top_only else {top, int(rng.integers(K))}:
            for t in rng.random(n_t):
                coef = np.full(K, -t)
                coef[c] = 1 - t
                vals = {}
                for upper in (False, True):
                    lines = [O.coupled_line(probs.link, probs.models[k], probs.variances[k], b, lo, hi,
                                            upper=(k == c) == upper) for k, b in enumerate(boxes)]
                    q = O._QuadRatio(probs, lo, hi, c, boxes, lines, upper)
                    if not q.ok:
                        continue
                    sc, sr = (np.array([-(1 - t)]), np.array([t])) if upper else (np.array([1 - t]), np.array([-t]))
                    v = [q.sliced(sc, sr, x[None], pair, n_slices=n_slices, steps=steps, fail_fast=False,
                                  depth=depth, affine=aff)[0]
                         for pair in q.slice_pairs(sc, sr) for aff in (False, True)]
                    v = [a for a in v if np.isfinite(a)]
                    if v:
                        vals[upper] = max(v)
                if not vals:
                    continue
                used += len(vals)

                def G(X, coef=coef):
                    return _p_sklearn(clf, X) @ coef

                res = attack(G, lo[0], hi[0], rng, n_samples=n_samples, n_starts=2)
                if False in vals:
                    assert vals[False] <= res.min, (seed, K, d, hw, c, t, vals, res.min)
                if True in vals:
                    assert vals[True] <= -res.max, (seed, K, d, hw, c, t, vals, res.max)
    return used


def test_latent_slices_are_sound():
    """Each pair's node bounds (planes of two classes on slices of their mean
    ranges, with the others' quadratic relaxation) against the attack: 10
    classes, 64 features."""
    assert _check_sliced_sound(0, 10, 64, 60, half_widths=(0.05,), n_t=1, n_samples=200, top_only=True) > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(max(2, SWEEP_EXAMPLES // 100)))
def test_latent_slices_are_sound_sweep(seed):
    rng = np.random.default_rng(3000 + seed)
    K = int(rng.integers(3, 11))
    d = int(rng.choice([2, 8, 20, 64]))
    hws = tuple(rng.choice([0.01, 0.05, 0.2, 0.5], size=2, replace=False))
    n = _check_sliced_sound(3000 + seed, K, d, int(rng.integers(20, 70)), half_widths=hws, n_samples=300,
                            n_slices=int(rng.integers(1, 4)), steps=int(rng.integers(1, 5)),
                            depth=int(rng.integers(0, 3)))
    assert n > 0  # some node bound was attacked (the helper skips cases with nothing to check)


def test_latent_slices_tighten_the_root_bound(monkeypatch):
    """Where two classes are close (the point of 200 random ones with the
    closest two leading probabilities), slicing their mean ranges tightens
    the root bound of the top class's probability, and it stays below the
    attacked minimum of predict_proba (10 classes, 64 features)."""
    clf, rng = _ovr_model(1, 10, 64, 60)
    probs = clf._bound_model().probabilities("default")
    Xc = rng.random((200, 64))
    Ps = np.sort(clf.predict_proba(Xc), axis=1)
    x = Xc[int(np.argmin(Ps[:, -1] - Ps[:, -2]))]
    c = int(np.argmax(clf.predict_proba(x[None])[0]))
    lo, hi = np.clip(x - 0.05, 0, 1)[None], np.clip(x + 0.05, 0, 1)[None]
    out = {}
    monkeypatch.setattr(O, "N_SLICE_BISECT", 2)  # (time) two bisection steps suffice here
    for m in (0, 1):
        monkeypatch.setattr(O, "SLICE_MAX_BOXES", m)
        probs._boxes = {}
        out[m] = O.ProbaObjective(probs, c, 1.0).bound(lo, hi).lower[0]
    assert out[1] > out[0] + 1e-3, out
    res = attack(lambda X: clf.predict_proba(X)[:, c], lo[0], hi[0], rng, n_samples=200, n_starts=2)
    assert out[1] <= res.min, (out, res.min)


@pytest.mark.parametrize("link", [FiveErfLink(), ProbitLink()], ids=lambda L: type(L).__name__)
def test_v_slope_affine_bounds_dp_dv_and_the_integrated_inequality(link):
    """k0 + k1 (mu - m) <= |dp/dv| at 400 points per random rectangle
    (corners included; one-signed mean ranges from 1e-6 to 6 wide, variances
    0 to 3000, m inside or outside the range), and the integrated inequality
    p(mu, v) >= p(mu, v_ref) + tau(mu) (v - v_ref) (<= on the upper side)
    that _QuadRatio._affine_terms uses; at least as large as v_slope_lower's
    constant at the rectangle's middle mean on most rectangles, and (0, 0)
    across 0."""
    rng = np.random.default_rng(7)
    n = 120
    a = rng.normal(0, 3, n)
    w = rng.exponential(1.0, n) * rng.choice([1e-6, 0.05, 0.5, 3.0], n)
    lo_, hi_ = np.where(a >= 0, a, a - w), np.where(a >= 0, a + w, a)
    v_lo = np.where(rng.random(n) < 0.2, 10.0 ** rng.uniform(1.3, 3.5, n), rng.exponential(3.0, n))
    v_lo = v_lo * rng.choice([0.0, 1.0, 1.0, 1.0], n)
    v_hi = v_lo + (1.0 + v_lo) * rng.exponential(1.0, n) * rng.choice([1e-6, 0.1, 1.0], n)
    m = lo_ + (hi_ - lo_) * rng.uniform(-0.3, 1.3, n)
    k0, k1 = link.v_slope_affine(lo_, hi_, v_lo, v_hi, m)
    M = lo_[:, None] + (hi_ - lo_)[:, None] * rng.random((n, 400))
    V = v_lo[:, None] + (v_hi - v_lo)[:, None] * rng.random((n, 400))
    M[:, :2], V[:, 0], V[:, 1], M[:, 2], V[:, 2] = lo_[:, None], v_lo, v_hi, hi_, v_hi
    kap = k0[:, None] + k1[:, None] * (M - m[:, None])
    assert np.all(np.abs(link.grad(M, V)[1]) >= kap)
    pos = (lo_ >= 0)[:, None]
    P = link.value(M, V)
    low_ref = np.where(pos, v_hi[:, None], v_lo[:, None])
    up_ref = np.where(pos, v_lo[:, None], v_hi[:, None])
    tau = np.where(pos, -kap, kap)
    assert np.all(P >= link.value(M, low_ref) + tau * (V - low_ref) - 2 * link.margin)
    assert np.all(P <= link.value(M, up_ref) + tau * (V - up_ref) + 2 * link.margin)
    mid = k0 + k1 * (0.5 * (lo_ + hi_) - m)
    assert np.mean(mid >= link.v_slope_lower(lo_, hi_, v_lo, v_hi)) > 0.5
    k0c, k1c = link.v_slope_affine(np.array([-0.1]), np.array([0.2]), np.array([1.0]), np.array([1.1]),
                                   np.array([0.0]))
    assert k0c[0] == 0.0 and k1c[0] == 0.0


def test_affine_slopes_tighten_the_relaxation():
    """At a small box (half-width 0.02) of the 10-class, 64-feature model, the
    relaxation's variant with affine variance slopes and the helpful
    curvature bounds F_t of the top class above the plain relaxation at the
    value the top class's probability takes at the centre (where the
    variance coupling is most of the relaxation's loss), and below the
    attacked minimum of F_t."""
    clf, rng = _ovr_model(0, 10, 64, 60)
    probs = clf._bound_model().probabilities("default")
    x = rng.random(64)
    c = int(np.argmax(clf.predict_proba(x[None])[0]))
    lo, hi = np.clip(x - 0.02, 0, 1)[None], np.clip(x + 0.02, 0, 1)[None]
    _, _, boxes = probs.p_box(lo, hi)
    lines = [O.coupled_line(probs.link, probs.models[k], probs.variances[k], b, lo, hi, upper=False)
             for k, b in enumerate(boxes)]
    q = O._QuadRatio(probs, lo, hi, c, boxes, lines, False)
    t = float(clf.predict_proba(x[None])[0, c]) - 0.01
    sc, sr = np.array([1 - t]), np.array([-t])
    plain, aff = q(sc, sr)[0][0], q(sc, sr, affine=True)[0][0]
    assert aff > plain, (plain, aff)
    coef = np.full(10, -t)
    coef[c] = 1 - t
    res = attack(lambda X: _p_sklearn(clf, X) @ coef, lo[0], hi[0], rng, n_samples=100, n_starts=2)
    assert aff <= res.min, (aff, res.min)


def test_latent_slice_budget_is_per_row(monkeypatch):
    """The latent slices' call budget of a root box lives in the row's
    scratch (``_deadline.row_scratch``), not per model: the same row's root
    bounds solved twice, and twice at once in two threads (joblib's
    threading backend), are bitwise those of the first solve. Kept per
    model, a second solve found the box's budget spent (4-class model:
    prediction_range of the same row twice 0.015 apart, n_jobs=2 vs 1 up to
    0.022)."""
    clf, rng = _ovr_model(1, 4, 4, 30)
    Xc = rng.random((200, 4))
    Ps = np.sort(clf.predict_proba(Xc), axis=1)
    x = Xc[int(np.argmin(Ps[:, -1] - Ps[:, -2]))]  # the closest two leading classes: slices apply
    lo, hi = np.clip(x - 0.05, 0, 1)[None], np.clip(x + 0.05, 0, 1)[None]
    probs = clf._bound_model().probabilities("default")
    monkeypatch.setattr(O, "SLICE_BOX_CALLS", 100)  # (time) what class 0's two bounds spend here

    def row():
        # What solve_range opens for each row: the row's deadline and scratch.
        with row_deadline(Budget(max_iter=0)):
            bounds = [O.ProbaObjective(probs, 0, s).bound(lo, hi).lower[0] for s in (1.0, -1.0)]
            spent = sum(O.SLICE_BOX_CALLS - left[0] for left in row_scratch().values())
        return bounds, spent

    first, spent = row()
    assert spent == O.SLICE_BOX_CALLS  # the box's whole budget is spent within the row
    monkeypatch.setattr(O, "SLICE_BOX_CALLS", 0)
    assert row()[0] != first  # without it the bounds differ: the test can tell
    monkeypatch.setattr(O, "SLICE_BOX_CALLS", 100)
    assert row() == (first, spent)
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda _: row(), range(2))) == [(first, spent)] * 2


@pytest.mark.parametrize("link", [FiveErfLink(), ProbitLink()])
def test_envelope_curvature_bounds_the_envelope(link):
    """envelope_curvature's quadratic (the cubic term charged by side of the
    expansion point) lies below the envelope G(mu) = p(mu, v) on [lo2, hi2]
    (above it for the upper side) at dense points, and is never looser than
    the one-sided charge sup |G3| W / 6 it replaced (by more than rounding);
    where G3 keeps its sign on one side it is strictly tighter."""
    rng = np.random.default_rng(3)
    n = 400
    lo2 = rng.normal(0.0, 3.0, n)
    hi2 = lo2 + rng.exponential(1.5, n)
    mm = lo2 + (hi2 - lo2) * rng.random(n)
    vr = rng.exponential(3.0, n)
    err_d = link.MU_DERIVATIVE_ERROR
    tighter = 0
    for up in (False, True):
        G, G1, kap = O.envelope_curvature(link, mm, vr, lo2, hi2, np.full(n, up))
        mu = lo2[:, None] + (hi2 - lo2)[:, None] * np.linspace(0.0, 1.0, 301)[None]
        mu = np.concatenate([mu, mm[:, None] + np.linspace(-1e-3, 1e-3, 21)[None]], axis=1)
        mu = np.clip(mu, lo2[:, None], hi2[:, None])
        dlt = mu - mm[:, None]
        quad = G[:, None] + G1[:, None] * dlt + (1.0 if up else -1.0) * kap[:, None] * dlt**2
        p = link.value(mu, np.broadcast_to(vr[:, None], mu.shape))
        slack = 2 * err_d * (1 + np.abs(dlt)) + 1e-12
        if up:
            assert np.all(p <= quad + slack)
        else:
            assert np.all(p >= quad - slack)
        # The replaced charge (as computed before): the largest |G3| on a grid of the
        # same size over the whole hull, widened by G4 times half its spacing, times W.
        grid = lo2[:, None] + (hi2 - lo2)[:, None] * np.linspace(0.0, 1.0, O.N_QUAD_GRID)[None]
        G3 = link.mu_derivatives(grid, np.broadcast_to(vr[:, None], grid.shape))[2]
        G2 = link.mu_derivatives(mm, vr)[1]
        W = np.maximum(hi2 - mm, mm - lo2)
        dist = 0.5 * (hi2 - lo2) / (O.N_QUAD_GRID - 1)
        M3 = np.abs(G3).max(-1) + link.local_sups(vr)[1] * dist + err_d
        old = (0.5 if up else -0.5) * G2 + M3 * W / 6.0 + err_d
        assert np.all(kap <= old + 1e-9)
        tighter += int(np.sum(kap < old - 1e-4))
    assert tighter > n // 4


def test_classes_sharing_a_kernel_compute_its_values_once():
    """One-vs-rest classes with one fixed kernel share k(X, Xs) (and its
    gradient) in ClassProbabilities.p / p_and_grad, and each class's mean and
    variance share it too (the local search's cost: 13.2 -> 5.6 s for one
    10-class digits probability range at max_iter=0). The numbers are those
    of separate computations, bit for bit; a variance class that overrides
    value_and_grad alone keeps its own."""
    from sklearn.datasets import load_digits
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from skgprobust import RobustGaussianProcessClassifier
    from skgprobust._engine._objectives import _from_kernel_is_the_method

    D = load_digits()
    X, y = D.data[:200] / 16.0, D.target[:200]
    keep = y < 4
    clf = RobustGaussianProcessClassifier(ConstantKernel(20.0) * RBF(2.5), optimizer=None).fit(X[keep], y[keep])
    probs = clf._bound_model().probabilities()
    assert probs.group == [0, 0, 0, 0]
    assert all(pt.shares_kernel and pt._vg_fk and pt._value_fk for pt in probs.points)
    calls = []
    ad = probs.points[0].model.adapter
    orig = type(ad).value_and_grad

    P = np.random.default_rng(0).uniform(0, 1, (5, 64))
    p, g = probs.p_and_grad(P)
    for k, pt in enumerate(probs.points):
        K, dK = pt.model.adapter.value_and_grad(P)
        mu = K @ pt.w + pt.c
        dmu = np.einsum("nid,i->nd", dK, pt.w)
        v, dv = pt.variance.value_and_grad(P)
        gm, gv = probs.link.grad(mu, pt.s2 * v)
        np.testing.assert_array_equal(p[:, k], probs.link.value(mu, pt.s2 * v))
        np.testing.assert_array_equal(g[:, k], gm[:, None] * dmu + gv[:, None] * (pt.s2 * dv))
        np.testing.assert_array_equal(probs.p(P)[:, k], probs.link.value(mu, pt.s2 * pt.variance.value(P)))
    # the kernel is evaluated once per call for the four classes
    import unittest.mock as mock

    with mock.patch.object(type(ad), "value_and_grad", autospec=True, side_effect=lambda s, Z: calls.append(1) or orig(s, Z)):
        probs.p_and_grad(P)
    assert len(calls) == 1

    class Own(type(probs.points[0].variance)):
        def value_and_grad(self, X):  # pragma: no cover - not called here
            return super().value_and_grad(X)

    var = probs.points[0].variance
    own = Own.__new__(Own)
    own.__dict__.update(var.__dict__)
    assert _from_kernel_is_the_method(var, "value_and_grad")
    assert not _from_kernel_is_the_method(own, "value_and_grad")
    assert _from_kernel_is_the_method(own, "value")
