"""Safe active learning for multi-output GPs: the seed's three experiments (issue 14).

What it runs
------------
Li, Rakitsch and Zimmer (AISTATS 2022, ``shared/seeds/001_*``), Sec. 5 and
appendix I.3, with :class:`skgprobust.active.SafeActiveLearner`:

* ``toy``: sin & sigmoid, P = 2 outputs, noise 0.4, safety h(x) =
  exp(-(x - 0.1)^2 / 2) + N(0, 0.05^2), safe when h > 0.7, pool on [-2, 2],
  start with N_sum = 12 (6 per output), RMSE on the noise-free outputs of
  safe test points;
* ``mogp``: samples of an LMC (D = 2, P = 4, L = 3 RBF latents with
  lengthscales from U[0.01, 1), unit variances, W rows normalised), the
  safety values a GP sample with lengthscale 1, noise 0.4 / 0.05, 2000 pool
  + 500 test points, safe above the 20% quantile of z, start with 40, 100
  iterations; X, W and the kernels are drawn once (seed 123) for all
  repetitions and the threshold is one quantile over all of them, as the
  seed's appendix I.3 describes (see ``MOGP_DATA_VERSION`` for the quotes);
* ``enge``: the gengine1 engine data (``shared/data/gengine1``), HC and O2
  with the exhaust-manifold temperature as safety value, safe when z <= 1.0,
  start with 48. The NX inputs (14 dimensions) are built here: lagged copies
  of the 5 input channels at 10 Hz (see :func:`nx_inputs` for the lags).

Models (the seed's appendix I, defaults of this script)
-------------------------------------------------------
* Output model: :class:`~skgprobust.MultiOutputGaussianProcessRegressor`
  with L = P latent Matern 5/2 (ARD) GPs, W free (AL_MOGP, RS_MOGP) or
  W = I with one amplitude per output (AL_indGPs), per-output noise,
  ``normalize_y``.
* Safety model: :class:`~skgprobust.RobustGaussianProcessRegressor`,
  variance x Matern 5/2 (ARD) + white noise, *zero prior mean* on the
  (standardised) safety values, as the seed's GPflow models (no
  ``normalize_y``: with it, the prior mean far from the data is the mean of
  the observed, all-safe, initial values, which calls unexplored regions
  safe).
* Hyperparameters: ``--hyper map`` (default) is the maximum a posteriori
  estimate under the seed's priors (Gamma(2.5, 1) variances, Gamma(1.5, 1)
  length scales, Gamma(1.5, 3) noise variances, N(0, 2^2) entries of W; see
  :mod:`skgprobust.active._priors`), refitted (warm-started) every
  iteration. The seed averages over 100 HMC samples of the posterior
  instead: ``--samples S`` does that with S samples (the learner's
  ``hyperparameter_posterior``, :class:`skgprobust.active.HyperparameterPosteriorRegressor`:
  emcee ensemble started at the MAP estimate, ``--n-burn`` steps at the
  first fit, ``--n-steps`` per later refit, moment-matched predictions of
  both models). ``--hyper ml`` is type-II maximum
  likelihood with the output noise kept above 1% of each output's variance
  (the setting before the priors); ``--kernel rbf`` and
  ``--safety-normalize`` restore the other earlier choices.

Measured, MAP (default settings), session 8 (``--out``; nice 10-19 on 2
shared cores at load 1-13): 30 repetitions of every data set and pipeline
(CPU per repetition 5.5-10.8 s, i.e. 0.09-0.18 s CPU per iteration), mean
+- s.e. (the seed's in brackets):

* safe queries %: toy AL_MOGP 99.33 +- 0.24 (96.24), RS 99.25, indGPs 99.00,
  no safety 28.25 +- 0.76 (26.75); MOGP samples AL_MOGP 98.06 +- 0.37
  (98.80), RS 99.61, indGPs 97.78, no safety 71.72 +- 1.19 (78.26); EngE
  AL_MOGP 97.68 +- 0.32 (99.21), RS 98.76, indGPs 97.51, no safety 84.58
  +- 0.65 (85.59).
* final RMSE: toy 0.334 / 0.338 / 0.325 (AL / RS / indGPs; N_sum to 0.4:
  28 / 32 / 30, the seed's 24 / 42 / 38); MOGP samples 0.854 / 0.852 /
  0.887 (0.6 never reached on the mean curve; the seed's N_sum 83 / 101 /
  115); EngE 1.223 +- 0.028 / 1.222 +- 0.038 / 1.211 +- 0.030 (the seed's
  0.85 / 1.23 / 0.93; see the test-set diagnosis below).
* safety precision 0.991-1.000 (the seed's 0.983-0.998).

The MOGP-samples numbers above came from the earlier generator. With the
generator of the appendix I.3 text (f3e24a9; one design for all
repetitions, one threshold), ``--datasets mogp --reps 30 --n-jobs 1 --out``
on 2026-11-29 (nice 19, load 1-9 on 2 shared cores; 13-32 s CPU per
repetition of 100 iterations, 0.13-0.32 s CPU per iteration):

* safe queries %: AL_MOGP 97.97 +- 0.25 (98.80 +- 0.34), RS 99.77 +- 0.08
  (99.69), indGPs 98.47 +- 0.24 (99.19), no safety 75.30 +- 3.40 (78.26).
* final RMSE 0.556 +- 0.005 / 0.576 +- 0.010 / 0.547 +- 0.006 (AL / RS /
  indGPs), no safety 0.562; N_sum to RMSE 0.6: 98 / 117 / 98 (the seed's
  83 / 101 / 115); precision 0.996-0.998. AL beats RS as in the seed; the
  independent GPs are level with AL_MOGP, not behind it.

Earlier measurements (2 shared cores at load 10-18, 10 repetitions unless stated):

* EngE AL_MOGP safe queries: ML + RBF + normalised safety values 94.58 +-
  0.71% (earlier 10-repetition study); MAP + Matern + zero prior mean
  97.97 +- 0.71% (4-repetition screens: 98.3-99.2%); the seed 99.21 +-
  0.18%. Final RMSE: 1.081 (ML) vs 1.245 +- 0.044 (MAP); RS_MOGP 1.267 +-
  0.051 (the seed's 1.23). Output model by ML, safety model by MAP
  (``--hyper-output ml``): 97.80 +- 0.62% safe, final RMSE 1.201 +- 0.053.
  No safety constraint: 82.88 +- 1.39% safe (the seed's 85.59), RMSE 1.170.
* Toy (MAP): AL_MOGP 99.50 +- 0.33% safe, final RMSE 0.337, N_sum 32 to
  RMSE 0.4 (seed 24); with ``--prior-jacobian`` the output model often
  explained the data as noise (final RMSE 0.68).
* Initial data from the whole pool (``--init random``, EngE, 4
  repetitions): 99.15% safe queries but final RMSE 1.28: not the cause of
  the RMSE gap.
* Pool of 20000 instead of 3000 EngE points (4 repetitions): RMSE 1.19,
  95.8% safe: not the cause either.
* Bayesian treatment (``--samples 20``, n_burn 300, n_steps 20; 10
  repetitions, load 11-16): toy AL_MOGP final RMSE 0.238 +- 0.013, N_sum 28
  to RMSE 0.4, 98.25 +- 0.53% safe; RS_MOGP 0.284 +- 0.021 (N_sum 33);
  AL_indGPs 0.314 +- 0.017 (38): AL now beats RS on the toy (MAP: 0.337 vs
  0.316). EngE AL_MOGP 1.212 +- 0.052 (MAP 1.245), 98.64 +- 0.55% safe,
  precision 0.994, 12.1 s per iteration (MAP 1.5). ``--normalize-entropy``
  (MAP, EngE): 1.243 +- 0.042, no effect. MOGP samples (earlier generator)
  AL_MOGP: 0.761 +- 0.045 (MAP 0.810), 97.83 +- 0.56% safe, 2.69 s per iteration; RS_MOGP
  (samples) 0.785 +- 0.043 (paired AL - RS: -0.024 +- 0.018; toy -0.046 +-
  0.021).
* Bayesian treatment, session 13 (``--samples 20``, n_burn 300, n_steps 20;
  one process per run at nice 10 on 2 cores, load 2-4; current MOGP
  generator ``text-s9``):

  - MOGP samples, AL_MOGP, 30 repetitions: 98.43 +- 0.27% safe queries
    (the seed's 98.80 +- 0.34; MAP 97.97 +- 0.25), final RMSE 0.497 +-
    0.004 (MAP 0.556), N_sum to RMSE 0.6: 74 (the seed's 83; MAP 98),
    precision 0.998; 171 s CPU per repetition of 100 iterations, i.e.
    1.7 s CPU per iteration.
  - MOGP samples, repetitions 0-9 of each pipeline: N_sum to RMSE 0.6 AL_MOGP
    71, RS_MOGP 89, AL_indGPs 102 (the seed's 83 / 101 / 115; MAP 98 / 117 /
    98): the seed's order (multi-output active < random safe < independent
    GPs) now holds, about 12 observations earlier on each. Final RMSE 0.501
    +- 0.003 / 0.551 +- 0.010 / 0.536 +- 0.008; safe queries 98.40 +- 0.45 /
    99.60 +- 0.16 / 98.70 +- 0.40% (the seed's 98.80 / 99.69 / 99.19).
  - MOGP samples, RS_MOGP and AL_indGPs extended to 30 repetitions
    (session 22, the same settings, all 30 rerun: the per-repetition
    cache of session 13 was gone; load 2-9 from other jobs): safe queries
    RS_MOGP 99.67 +- 0.09% (the seed's 99.69 +- 0.13), AL_indGPs 98.63 +-
    0.25% (99.19 +- 0.24, 1.6 combined standard errors below); final RMSE
    0.559 +- 0.009 / 0.536 +- 0.005 (AL_MOGP 0.497 +- 0.004 over its 30);
    N_sum to RMSE 0.6: RS_MOGP 106, AL_indGPs 99 (the seed's 101 / 115;
    AL_MOGP 74, the seed's 83); precision 0.996 / 0.998; 94 / 100 s CPU
    per repetition of 100 iterations (0.9-1.0 s CPU per iteration). With
    30 repetitions multi-output active learning still reaches the target
    first, as in the seed, but the independent GPs now come before random
    safe selection (at 10 repetitions: RS 89, indGPs 102).
  - EngE, AL_MOGP, 30 repetitions: 98.64 +- 0.27% safe (the seed's 99.21 +-
    0.18; MAP 97.68 +- 0.32), final RMSE 1.169 +- 0.033 (MAP 1.223; the
    seed's 0.85, see below), precision 0.995; 69 s CPU per repetition of 59
    iterations (1.2 s per iteration).
  - Toy, every pipeline, 30 repetitions (session 14, load 1-6 from other
    jobs; 11-12 s CPU per repetition, 0.5-0.7 s wall per iteration): safe
    queries AL_MOGP 98.75 +- 0.33% (the seed's 96.24 +- 0.47), RS_MOGP
    99.58 +- 0.17 (99.06 +- 0.34), AL_indGPs 99.08 +- 0.25 (96.75 +- 0.39),
    no safety 25.08 +- 0.83 (26.75 +- 0.67); final RMSE 0.260 +- 0.012 /
    0.315 +- 0.014 / 0.310 +- 0.013 / 0.364 +- 0.014; N_sum to RMSE 0.4:
    25 / 34 / 37 / 48 (the seed's 24 / 42 / 38 / -): the seed's order and
    within one observation of its AL_MOGP and indGPs counts; our safety
    constraint is more conservative than the seed's (higher safe ratios,
    precision 1.000).
  - EngE, RS_MOGP and AL_indGPs, 10 repetitions each (session 14, load 2-6):
    safe queries 98.81 +- 0.36% / 98.14 +- 0.53% (the seed's 98.81 +- 0.28 /
    98.93 +- 0.22), final RMSE 1.236 +- 0.048 / 1.243 +- 0.040 (the seed's
    1.23 / 0.93), precision 0.995 / 0.991, 62 / 75 s CPU per repetition.
    With AL_MOGP's 1.169 +- 0.033 (30 repetitions above), multi-output
    active learning has the lowest final RMSE as in the seed; RS_MOGP
    matches the seed's 1.23, while AL_MOGP and AL_indGPs stay ~0.3 above
    the seed's 0.85 / 0.93 (the test-set difference below).
  - EngE, RS_MOGP and AL_indGPs extended to 30 repetitions (session 18,
    the same settings; repetitions 0-9 reused, a re-run of RS rep 0 was
    bitwise identical; load ~2): safe queries RS_MOGP 99.15 +- 0.18% (the
    seed's 98.81 +- 0.28), AL_indGPs 98.19 +- 0.33% (98.93 +- 0.22, about
    1.9 combined standard errors below); final RMSE 1.186 +- 0.033 / 1.209
    +- 0.026 (AL_MOGP 1.169 +- 0.033); precision 0.997 / 0.995; 67 / 81 s
    CPU per repetition. The three pipelines' final RMSEs are within their
    standard errors of each other (AL_MOGP lowest, as in the seed).
  - EngE, AL_MOGP with 100 posterior samples (the seed's count; session 20,
    ``--samples 100``, n_burn 300, n_steps 20, 100 walkers; repetitions
    0-9, load 1-4): 97.97 +- 0.66% safe queries (per repetition 94.9-100),
    final RMSE 1.206 +- 0.054, precision 0.995, 152 s CPU per repetition
    (2.6 s per iteration). Against 20 samples (98.64 +- 0.27%, 1.169 +-
    0.033 over 30) no gain: the sample count does not explain the gap to
    the seed's 99.21 +- 0.18%.
* EngE is nearly flat in N_sum here: AL_MOGP's RMSE after the first query
  is 1.256 +- 0.047 and after the 59th 1.212 (samples). The RMSE is taken
  on the truly safe rows (z <= 1.0) of 1000 random rows of the test
  measurements 53-64 (as the seed: "all safe data"); test rows get the same
  NX lags as training rows, and no further normalisation (the files are
  standardised on the training measurements: our training rows have mean 0,
  std 1 in HC, O2 and T_em). The test set is shifted: 92.9% safe (training
  79.5%), HC std 1.45 (training 1.00), input channels 0-2 mean -0.44.
  Independent GPs (the AL_indGPs model, MAP) on 200 / 500 random safe
  training points per output, 2 draws: RMSE 1.20 / 1.30 (200; all 126k safe
  test rows) and 1.12 / 1.16 (500; 6000 random test rows) on the safe test
  rows, 1.19 / 1.27 and 1.11 / 1.14 on all test rows, but 0.78 / 1.06 and
  0.78 / 0.88 on 3000 held-out safe rows of the training measurements. One test measurement dominates: 55
  (HC std 3.14 on its safe rows, RMSE 3.19; without it the 200-point RMSE is
  1.03 instead of 1.21); HC errors are heavy-tailed (median |error| 0.14,
  RMSE 1.42). The same model scores 1.08-1.40 on the five 1000-row test
  subsets of reps 0-4: the subset alone moves a repetition's RMSE by
  +-0.1. The seed's 0.85 at N_sum = 107 is not plausible on this test set
  (1000 random safe observations give 1.12-1.16); it is on held-out
  training rows. Its test set (measurement 65 is not in the published
  data) or preprocessing must differ from ours.
* The same test-set question with the active learning loop itself
  (session 30, ``--enge-test-from train``: the test rows are 1000 random
  rows of the training measurements outside the 3000-point pool, drawn by
  a second generator, so the pool, the initial data and every query are
  those of the default run; MAP, 30 repetitions per pipeline, both
  protocols run with this code one after the other, load ~2): final RMSE
  (N_sum = 107) on the test measurements 53-64 / on held-out training
  rows, the seed's in brackets: AL_MOGP 1.222 +- 0.028 / 0.941 +- 0.017
  (0.85), RS_MOGP 1.222 +- 0.038 / 0.955 +- 0.019 (1.23), AL_indGPs 1.211
  +- 0.030 / 0.923 +- 0.018 (0.93), AL_MOGP_nosafe 1.135 +- 0.022 / 0.873
  +- 0.014. On held-out training rows every pipeline is below the seed's
  RMSE threshold 1.0 from the initial data on (N_sum 49; the seed's 54 /
  several hundred / 63) and AL_indGPs matches the seed's 0.93, AL_MOGP is
  0.09 above its 0.85, and random safe selection is as good as active
  selection (0.955, the seed's 1.23): the seed's ordering is not
  reproduced on either test set. (Rows of the 10 Hz training trajectories
  next to pool rows are near-duplicates of them, so this RMSE is
  optimistic; it shows the size of the test-set effect, not the seed's
  protocol.) Safe queries, identical in both protocols: 97.74 +- 0.33 /
  98.76 +- 0.30 / 97.51 +- 0.34 / 84.41 +- 0.70% (the seed's 99.21 /
  98.81 / 98.93 / 85.59); 4-7 s CPU per repetition of 59 iterations.

Pipelines (the seed's): AL_MOGP (entropy, safety), RS_MOGP (random safe
candidate), AL_indGPs (independent outputs: W = I, L = P), AL_MOGP_nosafe
(no safety constraint). Outputs observed one at a time (partial
observation). Per data set and pipeline, over ``--reps`` repetitions with
the same initial data across pipelines: the safe-query ratio, the RMSE after
the first and the last query, the number of observations N_sum at which the
mean RMSE first reaches the seed's threshold, the safety-model precision and
the seconds per iteration (mean +- standard error). ``--certified`` adds
AL_MOGP with queries limited to candidates whose whole box (half-width
``--gamma`` of each feature's range) is proven safe, and reports the
certified-safe fraction of the toy domain over the iterations.

How to run
----------
::

    python benchmarks/bench_safe_al.py --quick            # a few minutes
    python benchmarks/bench_safe_al.py --reps 30 --out results/safe_al   # the full study
    python benchmarks/bench_safe_al.py --reps 30 --out results/safe_al --table-only

BLAS threads are pinned to 1; repetitions run in parallel with ``--n-jobs``.
With ``--out DIR`` every repetition is stored in DIR (keyed by data set,
pipeline, a digest of the settings and the repetition) and loaded instead of
rerun, repetitions run in the order rep 0 of every case, rep 1, ..., and
the table (with the seed's numbers side by side) is written to
``DIR/bench_safe_al.md``; ``--table-only`` tabulates what is stored.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import glob  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _bench import package_state, table  # noqa: E402

from skgprobust import RobustGaussianProcessRegressor  # noqa: E402
from skgprobust.active import SafeActiveLearner  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "gengine1")

#: The seed's RMSE thresholds per data set (N_sum to reach them is reported).
RMSE_TARGET = {"toy": 0.4, "mogp": 0.6, "enge": 1.0}


# ---------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------


def _initial_candidates(safe, n):
    """Where the initial data are drawn: the truly safe pool points
    (``--init safe``, default) or the whole pool (``--init random``)."""
    return safe if CONFIG.get("init", "safe") == "safe" else np.arange(n)


def toy(rep):
    rng = np.random.RandomState(1000 + rep)

    def f(x):
        s = 1.0 / (1.0 + np.exp(-2 * x))
        return np.c_[np.sin(10 * x) + s, np.sin(10 * x) - s]

    def h(x):
        return np.exp(-((x - 0.1) ** 2) / 2)

    pool = rng.uniform(-2, 2, (400, 1))
    safe = np.flatnonzero(h(pool[:, 0]) > 0.7)
    start = rng.choice(_initial_candidates(safe, len(pool)), 12, replace=False)
    X0 = pool[start]
    Y0 = f(X0[:, 0]) + 0.4 * rng.randn(12, 2)
    Y0[:6, 1] = np.nan
    Y0[6:, 0] = np.nan
    z0 = h(X0[:, 0]) + 0.05 * rng.randn(12)
    Xt = rng.uniform(-2, 2, (500, 1))
    zt = h(Xt[:, 0])  # truly safe test points: h > 0.7 (noise-free, as the seed evaluates)
    noise = np.random.RandomState(2000 + rep)

    def oracle(x, p):
        y = f(np.atleast_1d(x))[0] + 0.4 * noise.randn(2)
        return (y if p is None else y[p]), float(h(x[0]) + 0.05 * noise.randn())

    return dict(X0=X0, Y0=Y0, z0=z0, pool=np.delete(pool, start, axis=0), oracle=oracle, Xt=Xt,
                Yt=f(Xt[:, 0]), zt=zt, threshold=0.7, side="above", n_iter=40, domain=(np.array([-2.0]), np.array([2.0])))


def _rbf_gram(X, ls):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return np.exp(-0.5 * d2 / ls**2)


#: MOGP samples, built from the seed's appendix I.3 (its text; the steps
#: quoted). Session 9 changed three things to follow that text:
#:
#: * one design for all experiments: "We first fix a seed (=123), specify the
#:   number of experiments (E=30)", then steps 1, 2 and 4 draw X, the kernels
#:   and W once and step 3 draws "E L-dim trajectories G_1, ..., G_E" and "E
#:   sets of noise-free Z"; "Now we have datasets D_e = (X, Y_e, Z_e)". Here
#:   ``RandomState(123)`` draws X, the kernel parameters and W (in the text's
#:   order) and repetition e draws G_e, Z_e and the noise from its own stream.
#:   Before, every repetition drew its own X, length scales and W.
#: * one safety threshold: "For all of the 30 experiments, we compute the
#:   20%-quantile of Z_1 u ... u Z_E" (after step 6, which adds the noise);
#:   before, each repetition used its own 20% quantile.
#: * 100 iterations: the seed's AL_indGPs needs "115 points (76-th
#:   iteration)" and its supplementary table 2 runs to N_sum = 140; before, 60
#:   iterations (N_sum <= 99) could not show N_sum 101 or 115.
#:
#: Unchanged: "the RMSE and log likelihood are evaluated on noisy test data"
#: (the noisy outputs of the test points whose noisy safety value is above
#: the threshold) and the initial points ("we randomly select a number of
#: data as a initial dataset"; ``--init``, default: among the safe pool
#: points).
MOGP_DATA_VERSION = "text-s9"
_MOGP_CACHE = {}


def mogp_design(n_pool=2000, n_test=500, E=30):
    """The design shared by all repetitions: inputs X (step 1), latent length
    scales and safety variance (step 2), W (step 4), the Cholesky factors of
    the sample covariances and the safety threshold over the E repetitions."""
    key = (n_pool, n_test, E)
    if key in _MOGP_CACHE:
        return _MOGP_CACHE[key]
    rs = np.random.RandomState(123)
    N, D, P, L = n_pool + n_test, 2, 4, 3
    # Step 1: "draw ... uniformly from interval [-2, 2), remove duplicate
    # sample vectors, draw more samples ..., and then shuffle all vectors".
    X = np.unique(rs.uniform(-2, 2, (N, D)), axis=0)
    while len(X) < N:
        X = np.unique(np.vstack([X, rs.uniform(-2, 2, (N - len(X), D))]), axis=0)
    X = X[rs.permutation(N)]
    # Step 2: L + 1 squared exponential kernels, (variance, length scale) from
    # U[0.01, 1); latent variances fixed to 1, the safety length scale to 1.
    hyp = rs.uniform(0.01, 1.0, (L + 1, 2))
    ls, var_z = hyp[:L, 1].copy(), float(hyp[L, 0])
    # Step 4: "draw P L-dim vectors from standard normal distribution, reject
    # 0 vector, ... and normalize each vector".
    W = rs.randn(P, L)
    while np.any(np.linalg.norm(W, axis=1) == 0):
        W = np.vstack([W[np.linalg.norm(W, axis=1) > 0], rs.randn(1, L)])
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    # Sample covariances K + 1e-6 I (jitter: the Grams are numerically
    # singular; 1e-6 is far below the noise variances 0.16 / 0.0025).
    chol = [np.linalg.cholesky(_rbf_gram(X, l) + 1e-6 * np.eye(N)) for l in ls]
    chol_z = np.sqrt(var_z) * np.linalg.cholesky(_rbf_gram(X, 1.0) + 1e-6 * np.eye(N))
    design = dict(X=X, W=W, ls=ls, var_z=var_z, chol=chol, chol_z=chol_z)
    design["threshold"] = float(np.quantile(np.concatenate([_mogp_safety(e, design)[1] for e in range(E)]), 0.2))
    _MOGP_CACHE[key] = design
    return design


def _mogp_safety(rep, design):
    """Repetition ``rep``'s stream and its noisy safety values Z_e (drawn
    first, so that the threshold over all repetitions needs only these)."""
    rng = np.random.RandomState(1000 + rep)
    N = design["X"].shape[0]
    return rng, design["chol_z"] @ rng.randn(N) + 0.05 * rng.randn(N)


def mogp(rep, n_pool=2000, n_test=500):
    design = mogp_design(n_pool, n_test)
    X, W, thr = design["X"], design["W"], design["threshold"]
    n, P = X.shape[0], W.shape[0]
    rng, Z = _mogp_safety(rep, design)
    G = np.column_stack([c @ rng.randn(n) for c in design["chol"]])  # step 3
    Y = G @ W.T + 0.4 * rng.randn(n, P)  # steps 5 and 6
    tr, te = np.arange(n_pool), np.arange(n_pool, n)
    safe = tr[Z[tr] > thr]
    start = rng.choice(_initial_candidates(safe, n_pool), 40, replace=False)
    Y0 = np.full((40, P), np.nan)
    for p in range(P):
        Y0[10 * p:10 * (p + 1), p] = Y[start[10 * p:10 * (p + 1)], p]
    pool_idx = np.setdiff1d(tr, start)

    def oracle(x, p):
        i = pool_idx[np.flatnonzero(np.all(X[pool_idx] == x, axis=1))[0]]
        return (Y[i] if p is None else Y[i, p]), float(Z[i])

    return dict(X0=X[start], Y0=Y0, z0=Z[start], pool=X[pool_idx], oracle=oracle, Xt=X[te], Yt=Y[te], zt=Z[te],
                threshold=thr, side="above", n_iter=100, domain=(np.full(2, -2.0), np.full(2, 2.0)))


#: NX lags (samples at 10 Hz) per input channel: speed, load, lambda,
#: ignition angle, fuel cutoff -> 3 + 3 + 3 + 3 + 2 = 14 input dimensions.
#: The seed gives only the total (14) and that channels have different
#: histories. Its 80% quantile of the temperature on the processed training
#: set, 1.0075, is reproduced when 8 or 9 leading rows of each measurement
#: are dropped (1.00749 / 1.00747; ours, dropping 10: 1.00744; none dropped:
#: 1.0077), so its longest lag is probably 8 or 9 samples. The lag choice
#: barely matters for prediction here: 54 random safe points per output,
#: independent Matern GPs (MAP), 3 seeds, RMSE on safe test points: lags
#: (0, 5, 10) 1.18, (0, 1, 2) 1.24, (0, 3, 6) 1.24, (0, 10, 20) 1.19, no
#: history 1.23.
LAGS = {0: (0, 5, 10), 1: (0, 5, 10), 2: (0, 5, 10), 3: (0, 5, 10), 4: (0, 5)}
HC, O2, T_EM = 8, 10, 11  # columns: 5 inputs, then PN, CO, CO2, HC, NOx, O2, T_em, T_cat


def nx_inputs(raw):
    """Lagged inputs of one measurement (rows with a full history only)."""
    start = max(max(v) for v in LAGS.values())
    cols = [raw[start - lag:len(raw) - lag, c] for c, lags in LAGS.items() for lag in lags]
    return np.column_stack(cols), raw[start:]


_ENGE_CACHE = {}


def _enge_arrays():
    """NX inputs and raw rows of the training (10-39) and test (53-64) measurements."""
    if "data" not in _ENGE_CACHE:
        files = sorted(glob.glob(os.path.join(DATA, "raw_*_measurement_000000.csv.gz")))
        if not files:
            raise FileNotFoundError(f"gengine1 data not found in {DATA}")
        train, test = [], []
        for f in files:
            m = int(os.path.basename(f).split("_")[1])
            X, raw = nx_inputs(np.loadtxt(f, delimiter=","))
            (train if m < 50 else test).append((X, raw))
        _ENGE_CACHE["data"] = tuple(np.vstack([a[i] for a in part]) for part in (train, test) for i in (0, 1))
    return _ENGE_CACHE["data"]


def enge(rep, n_pool=None, n_test=None):
    n_pool = CONFIG.get("enge_pool", 3000) if n_pool is None else n_pool
    n_test = CONFIG.get("enge_test", 1000) if n_test is None else n_test
    Xtr, Rtr, Xte, Rte = _enge_arrays()
    rng = np.random.RandomState(123 + rep)
    ip = rng.choice(len(Xtr), n_pool, replace=False)
    it = rng.choice(len(Xte), n_test, replace=False)
    X, Y, Z = Xtr[ip], Rtr[ip][:, [HC, O2]], Rtr[ip, T_EM]
    if CONFIG.get("enge_test_from") == "train":
        # Diagnostic (--enge-test-from train): test rows from the training
        # measurements' rows outside the pool, drawn by a second generator so
        # that the pool and the initial data are those of the default run.
        # Rows at 10 Hz next to pool rows are near-duplicates of them, so this
        # RMSE is optimistic.
        it = np.random.RandomState(1000 + rep).choice(np.setdiff1d(np.arange(len(Xtr)), ip), n_test, replace=False)
        Xte, Rte = Xtr, Rtr
    safe = np.flatnonzero(Z <= 1.0)
    start = rng.choice(_initial_candidates(safe, n_pool), 48, replace=False)
    Y0 = np.full((48, 2), np.nan)
    Y0[:24, 0] = Y[start[:24], 0]
    Y0[24:, 1] = Y[start[24:], 1]
    pool_idx = np.setdiff1d(np.arange(n_pool), start)

    def oracle(x, p):
        i = pool_idx[np.flatnonzero(np.all(X[pool_idx] == x, axis=1))[0]]
        return (Y[i] if p is None else Y[i, p]), float(Z[i])

    return dict(X0=X[start], Y0=Y0, z0=Z[start], pool=X[pool_idx], oracle=oracle, Xt=Xte[it],
                Yt=Rte[it][:, [HC, O2]], zt=Rte[it, T_EM], threshold=1.0, side="below", n_iter=59,
                domain=(X.min(axis=0), X.max(axis=0)))


DATASETS = {"toy": toy, "mogp": mogp, "enge": enge}


# ---------------------------------------------------------------------------
# Models and pipelines
# ---------------------------------------------------------------------------


#: Model settings (``--hyper``, ``--kernel``, ``--safety-normalize``); set by main().
CONFIG = dict(hyper="map", hyper_output="map", kernel="matern", safety_normalize=False, output_normalize=True,
              restarts=0, prior_jacobian=False, init="safe", samples=None, warm_start=True, normalize_entropy=False)

#: Noise-variance bounds of the output model (normalised units). With
#: ``--hyper ml`` (type-II maximum likelihood) a per-output noise collapses to
#: 0 on a dozen points (that output's variance, hence its entropy, vanishes
#: and it is never queried again), so it is kept above 1% of each output's
#: variance; with ``--hyper map`` the seed's Gamma(1.5, 3) noise prior keeps
#: it away from 0 and the bounds are wide.
NOISE_BOUNDS = {"ml": (1e-2, 1.0), "map": (1e-6, 10.0)}


def _priors():
    """The seed's Gamma priors, as densities of the values (default) or of their logs."""
    from skgprobust.active._priors import GammaPrior

    j = CONFIG["prior_jacobian"]
    return dict(variance=GammaPrior(2.5, 1.0, j), length_scale=GammaPrior(1.5, 1.0, j), noise=GammaPrior(1.5, 3.0, j))


def _base_kernel(d, ls_bounds=(1e-2, 1e2)):
    ls = np.ones(d) if d > 1 else 1.0
    if CONFIG["kernel"] == "matern":
        return Matern(ls, ls_bounds, nu=2.5)
    return RBF(ls, ls_bounds)


def output_model(P, d, independent):
    """The seed's output model: L = P latent GPs (Matern 5/2 by default),
    W free (LMC) or W = I (AL_indGPs); with ``--hyper map`` its
    hyperparameters are the MAP estimate under the seed's priors."""
    from skgprobust._multioutput import MultiOutputGaussianProcessRegressor
    from skgprobust.active._priors import lmc_map_optimizer

    k = _base_kernel(d)
    if independent:
        # W = I fixed: each latent needs its own amplitude (the seed's kernel variance).
        k = ConstantKernel(1.0, (1e-2, 1e2)) * k
    hyper = CONFIG["hyper_output"]
    opts = dict(n_latent=P, normalize_y=CONFIG["output_normalize"], noise_level_bounds=NOISE_BOUNDS[hyper],
                n_restarts_optimizer=CONFIG["restarts"], random_state=0)
    if independent:
        opts["W"] = "identity"
    if hyper == "map":
        opts["optimizer"] = lmc_map_optimizer(k, P, P, W="fixed" if independent else "free", priors=_priors())
    return MultiOutputGaussianProcessRegressor(k, **opts)


def safety_model(d):
    """The safety GP: variance x Matern 5/2 (ARD) + noise; zero prior mean on
    the (standardised) safety values unless ``--safety-normalize``."""
    from skgprobust.active._priors import map_optimizer

    k = ConstantKernel(1.0, (1e-2, 1e2)) * _base_kernel(d, (1e-1, 1e2)) + WhiteKernel(1e-2, (1e-5, 1.0))
    opts = dict(normalize_y=CONFIG["safety_normalize"])
    if CONFIG["hyper"] == "map":
        opts["optimizer"] = map_optimizer(k, priors=_priors())
    return RobustGaussianProcessRegressor(k, **opts)


PIPELINES = {
    "AL_MOGP": dict(),
    "RS_MOGP": dict(strategy="random"),
    "AL_indGPs": dict(independent=True),
    "AL_MOGP_nosafe": dict(safety=False),
}


def run_one(name, rep, pipeline, gamma=None, config=None):
    if config is not None:  # joblib workers start with the module's defaults
        CONFIG.update(config)
    data = DATASETS[name](rep)
    opts = dict(PIPELINES.get(pipeline, {}))
    independent = opts.pop("independent", False)
    P, d = data["Y0"].shape[1], data["X0"].shape[1]
    if pipeline == "AL_MOGP_certified":
        span = data["domain"][1] - data["domain"][0]
        opts = dict(certify_gamma=gamma * span, certify_options=dict(time_limit=0.2, max_iter=200))
    if CONFIG.get("samples") and pipeline != "AL_MOGP_certified":
        opts["hyperparameter_posterior"] = dict(CONFIG["samples"])
    learner = SafeActiveLearner(output_model(P, d, independent), safety_model(d), threshold=data["threshold"],
                                safe_side=data["side"], delta=0.05, random_state=rep,
                                warm_start=CONFIG.get("warm_start", True),
                                normalize_entropy=CONFIG.get("normalize_entropy", False), **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.fit(data["X0"], data["Y0"], data["z0"])
        fracs = {}

        def track(i, lrn):
            # Proven-safe fraction of the domain as the data grow (1-D: 40 cells; 2-D: 15 x 15).
            if pipeline == "AL_MOGP_certified" and d <= 2 and (i + 1) % 10 == 0:
                lo, hi = data["domain"]
                fracs[i + 1] = lrn.certified_safe_fraction(lo, hi, cells=40 if d == 1 else 15, time_limit=0.3,
                                                           max_iter=300, random_state=0)[0]

        hist = learner.run(data["oracle"], data["pool"], data["n_iter"], X_test=data["Xt"], Y_test=data["Yt"],
                           z_test=data["zt"], callback=track)
    return hist, fracs


#: The seed's numbers (Li et al. 2022, Sec. 5 and supplementary tables 1-3),
#: shown next to ours: safe-query ratio (%), N_sum to its RMSE target, final
#: RMSE (EngE only, at N_sum = 107; read off its figure 2 as quoted in issue
#: 14) and the range of its safety-model precision over N_sum.
SEED = {
    ("toy", "AL_MOGP"): ("96.24 +- 0.47", "24", "-", "0.990-0.993"),
    ("toy", "RS_MOGP"): ("99.06 +- 0.34", "42", "-", "0.991-0.993"),
    ("toy", "AL_indGPs"): ("96.75 +- 0.39", "38", "-", "0.989-0.994"),
    ("toy", "AL_MOGP_nosafe"): ("26.75 +- 0.67", "-", "-", "-"),
    ("mogp", "AL_MOGP"): ("98.80 +- 0.34", "83", "-", "0.9975-0.9983"),
    ("mogp", "RS_MOGP"): ("99.69 +- 0.13", "101", "-", "0.9975-0.9981"),
    ("mogp", "AL_indGPs"): ("99.19 +- 0.24", "115", "-", "0.9976-0.9987"),
    ("mogp", "AL_MOGP_nosafe"): ("78.26 +- 2.87", "-", "-", "-"),
    ("enge", "AL_MOGP"): ("99.21 +- 0.18", "54", "0.85", "0.9828-0.9841"),
    ("enge", "RS_MOGP"): ("98.81 +- 0.28", "several hundred", "1.23", "0.9841-0.9890"),
    ("enge", "AL_indGPs"): ("98.93 +- 0.22", "63", "0.93", "0.9827-0.9843"),
    ("enge", "AL_MOGP_nosafe"): ("85.59 +- 0.35", "-", "-", "-"),
}

HEADERS = ["data", "pipeline", "reps", "safe queries %", "seed's safe %", "first RMSE", "final RMSE",
           "seed's final RMSE", "N_sum to RMSE target", "seed's N_sum", "safety precision", "seed's precision",
           "s / iteration", "certified safe fraction by iteration", "s / repetition", "CPU s / repetition"]


def _config_tag(gamma, name=None):
    """Short digest of the settings a cached repetition depends on (``--out``);
    for the MOGP samples also of their generator's version (repetitions
    stored with an earlier generator are not reused)."""
    import hashlib

    key = repr(sorted((k, repr(v)) for k, v in CONFIG.items())) + repr(gamma)
    if name == "mogp":
        key += MOGP_DATA_VERSION
    return hashlib.sha1(key.encode()).hexdigest()[:10]


def run_cached(out, name, rep, pipeline, gamma=None, config=None):
    """:func:`run_one` with its result stored in ``out`` (``--out``): a
    repetition already there for the same settings is loaded, not rerun, so
    that long studies can be run in pieces and the tables rebuilt."""
    import pickle

    if config is not None:
        CONFIG.update(config)
    if out is None:
        t, c = time.perf_counter(), time.process_time()
        hist, fracs = run_one(name, rep, pipeline, gamma)
        return hist, fracs, time.perf_counter() - t, time.process_time() - c
    path = os.path.join(out, f"{name}__{pipeline}__{_config_tag(gamma, name)}__{rep}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)
    t, c = time.perf_counter(), time.process_time()
    hist, fracs = run_one(name, rep, pipeline, gamma)
    res = (hist, fracs, time.perf_counter() - t, time.process_time() - c)
    with open(path + ".tmp", "wb") as fh:
        pickle.dump(res, fh)
    os.replace(path + ".tmp", path)
    print(f"# {name} {pipeline} rep {rep}: {res[2]:.0f} s ({res[3]:.0f} s CPU), {100 * hist.safe_query_ratio[-1]:.1f}% safe, "
          f"final RMSE {hist.rmse[-1]:.3f}; load {os.getloadavg()[0]:.1f}", flush=True)
    return res


def summarise(name, pipeline, results):
    hists = [r[0] for r in results]
    rep_time = np.array([r[2] for r in results])
    rep_cpu = np.array([r[3] if len(r) > 3 else np.nan for r in results])  # CPU time (stored runs from session 8 on)
    ratio = np.array([h.safe_query_ratio[-1] for h in hists])
    rmse_final = np.array([h.rmse[-1] for h in hists])
    rmse_first = np.array([h.rmse[0] for h in hists])
    prec = np.array([np.nanmean(h.safety_precision) for h in hists])
    it_time = np.array([np.mean(h.time) for h in hists])
    mean_curve = np.nanmean(np.array([h.rmse for h in hists]), axis=0)
    nsum = hists[0].n_observations
    hit = np.flatnonzero(mean_curve <= RMSE_TARGET[name])
    reach = str(int(nsum[hit[0]])) if hit.size else f"> {int(nsum[-1])}"
    frac_by_iter = {}
    for r in results:
        for k, v in r[1].items():
            frac_by_iter.setdefault(k, []).append(v)
    frac = ", ".join(f"{k}: {np.mean(v):.2f}" for k, v in sorted(frac_by_iter.items())) or "-"

    def pm(a, fmt="{:.3f}"):
        a = a[np.isfinite(a)]
        if not a.size:
            return "-"
        se = a.std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else 0.0
        return (fmt + " +- " + fmt).format(a.mean(), se)

    seed = SEED.get((name, pipeline), ("-",) * 4)
    return [name, pipeline, len(hists), pm(100 * ratio, "{:.2f}"), seed[0], pm(rmse_first), pm(rmse_final), seed[2],
            reach, seed[1], pm(prec), seed[3], pm(it_time, "{:.2f}"), frac, pm(rep_time, "{:.0f}"), pm(rep_cpu, "{:.1f}")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["toy", "mogp", "enge"], choices=list(DATASETS))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="2 repetitions, toy and mogp only")
    ap.add_argument("--certified", action="store_true", help="add the certified-box pipeline (toy, mogp)")
    ap.add_argument("--gamma", type=float, default=0.01, help="certified box half-width, fraction of each range")
    ap.add_argument("--pipelines", nargs="+", default=None, choices=list(PIPELINES) + ["AL_MOGP_certified"])
    ap.add_argument("--hyper", choices=["map", "ml"], default="map",
                    help="hyperparameters: MAP under the seed's priors (default) or type-II maximum likelihood")
    ap.add_argument("--kernel", choices=["matern", "rbf"], default="matern", help="Matern 5/2 (the seed's) or RBF")
    ap.add_argument("--safety-normalize", action="store_true",
                    help="normalise the safety values (prior mean = their mean) instead of a zero prior mean")
    ap.add_argument("--hyper-output", choices=["map", "ml"], default=None,
                    help="the output model's hyperparameters (default: as --hyper)")
    ap.add_argument("--no-output-normalize", action="store_true",
                    help="zero prior mean on the outputs instead of normalising each by its observed values")
    ap.add_argument("--prior-jacobian", action="store_true",
                    help="Gamma priors as densities of log(value) (GammaPrior(jacobian=True))")
    ap.add_argument("--init", choices=["safe", "random"], default="safe",
                    help="initial data from the truly safe pool points or from the whole pool")
    ap.add_argument("--samples", type=int, default=0,
                    help="Bayesian treatment: average over this many posterior samples of the hyperparameters "
                         "(emcee, warm-started; 0: point estimates)")
    ap.add_argument("--n-burn", type=int, default=300, help="ensemble steps of the first (cold) chain")
    ap.add_argument("--n-steps", type=int, default=20, help="ensemble steps per refit (warm-started chain)")
    ap.add_argument("--normalize-entropy", action="store_true",
                    help="compare outputs' entropies relative to each output's observed variance (not in the seed)")
    ap.add_argument("--cold-refit", action="store_true",
                    help="refit both models from their initial hyperparameters every iteration (no warm start)")
    ap.add_argument("--restarts", type=int, default=0, help="random restarts of the output model's fit")
    ap.add_argument("--enge-pool", type=int, default=3000, help="EngE pool size (random training points)")
    ap.add_argument("--enge-test", type=int, default=1000,
                    help="EngE test rows (random rows of the test measurements; the RMSE uses their safe ones). "
                         "HC errors are heavy-tailed: 1000 rows move a repetition's RMSE by +-0.1; "
                         "another size also draws other initial data")
    ap.add_argument("--enge-test-from", choices=["test", "train"], default="test",
                    help="EngE test rows from the test measurements 53-64 (default) or, as a diagnostic of the "
                         "RMSE gap to the seed, from the training measurements' rows outside the pool")
    ap.add_argument("--out", default=None,
                    help="folder for the results: each repetition is stored there (and loaded instead of rerun "
                         "when present with the same settings) and the table is written to bench_safe_al.md")
    ap.add_argument("--table-only", action="store_true",
                    help="with --out: only tabulate the repetitions already stored there (no new runs)")
    args = ap.parse_args()
    CONFIG.update(hyper=args.hyper, hyper_output=args.hyper_output or args.hyper,
                  output_normalize=not args.no_output_normalize, restarts=args.restarts,
                  prior_jacobian=args.prior_jacobian, init=args.init, kernel=args.kernel, safety_normalize=args.safety_normalize,
                  enge_pool=args.enge_pool, enge_test=args.enge_test, warm_start=not args.cold_refit, normalize_entropy=args.normalize_entropy,
                  samples=dict(n_samples=args.samples, n_burn=args.n_burn, n_steps=args.n_steps) if args.samples else None)
    if args.enge_test_from != "test":  # only when set: the stored repetitions' tags stay valid
        CONFIG["enge_test_from"] = args.enge_test_from
    if args.quick:
        args.reps, args.datasets = 2, [d for d in args.datasets if d != "enge"]
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    head = [f"# {package_state()}",
            f"# {'up to ' if args.table_only else ''}{args.reps} repetitions per pipeline (column reps), delta = 0.05, partially observed outputs; {CONFIG}"]
    print("\n".join(head), flush=True)
    pipelines = args.pipelines or (list(PIPELINES) + (["AL_MOGP_certified"] if args.certified else []))
    cases = [(name, pipeline) for name in args.datasets for pipeline in pipelines
             if not (pipeline == "AL_MOGP_certified" and name == "enge")]
    if args.table_only:
        if not args.out:
            ap.error("--table-only needs --out")
        done = {c: [r for r in range(args.reps)
                    if os.path.exists(os.path.join(args.out, f"{c[0]}__{c[1]}__{_config_tag(args.gamma, c[0])}__{r}.pkl"))]
                for c in cases}
    else:
        # Repetition by repetition across all cases, so that a study stopped
        # early (--out keeps what is done) has about as many repetitions of each.
        tasks = [(c, r) for r in range(args.reps) for c in cases]
        out = Parallel(n_jobs=args.n_jobs)(delayed(run_cached)(args.out, c[0], r, c[1], args.gamma, dict(CONFIG))
                                           for c, r in tasks)
        results = dict(zip(tasks, out))
        done = {c: list(range(args.reps)) for c in cases}
    rows = []
    for c in cases:
        if done[c]:
            res = [results[c, r] if not args.table_only else run_cached(args.out, c[0], r, c[1], args.gamma)
                   for r in done[c]]
            rows.append(summarise(c[0], c[1], res))
    text = "\n".join(head + ["", table(HEADERS, rows), "",
                              "Mean +- standard error over repetitions. RMSE targets (the seed's): "
                              + ", ".join(f"{k} <= {v}" for k, v in RMSE_TARGET.items())
                              + "; N_sum is where the mean RMSE curve first reaches it. s / iteration and s / repetition are "
                              "wall times on a shared machine (see the load above); CPU s / repetition is the "
                              "process's CPU time (runs stored before it was recorded: -)."])
    print()
    print(text)
    if args.out:
        with open(os.path.join(args.out, "bench_safe_al.md"), "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
