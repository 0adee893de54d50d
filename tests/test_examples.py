"""Every gallery example (examples/plot_*.py) runs to completion.

Run with the non-interactive Agg backend, each in a fresh module namespace
(runpy); skipped when matplotlib is not installed. The examples use small data
and budgets (seconds each), and no network; they run with one BLAS thread.
"""

import pathlib
import runpy
import warnings

import pytest
from threadpoolctl import threadpool_limits

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))


def test_examples_exist():
    assert len(EXAMPLES) >= 3


#: Examples of the default run (about 1 s each or less); the others run with
#: ``-m slow`` and in CI's documentation build (sphinx-gallery executes every
#: example).
_FAST_EXAMPLES = (
    "plot_certify_classifier",
    "plot_ep_vs_laplace",
    "plot_safe_active_learning",
    "plot_softmax_gpc",
    "plot_sparse_classification",
)


@pytest.mark.parametrize(
    "path",
    [p if p.stem in _FAST_EXAMPLES else pytest.param(p, marks=pytest.mark.slow) for p in EXAMPLES],
    ids=[p.stem for p in EXAMPLES],
)
def test_example_runs(path, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)  # anything an example writes stays out of the repository
    try:
        # One BLAS thread: small GP fits are much slower with multithreaded
        # BLAS on a loaded machine (threads wait for busy cores).
        with warnings.catch_warnings(), threadpool_limits(limits=1):
            warnings.simplefilter("ignore", UserWarning)  # e.g. Agg cannot show figures
            runpy.run_path(str(path), run_name="__main__")
        assert plt.get_fignums(), f"{path.name} made no figure"
    finally:
        plt.close("all")
