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


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
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
