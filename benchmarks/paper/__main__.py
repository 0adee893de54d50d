"""Driver: ``python -m benchmarks.paper [--quick | --tiny] [--out DIR] [--only fig2,fig5]``.

Without ``--quick`` / ``--tiny`` the full configuration runs (see
``_common.CONFIGS``). Writes every figure's PNG and CSV into ``--out``
(default ``/tmp/skgprobust-paper/<config>``), a ``timing.csv`` (wall time
per figure part and per certified range) and prints the tables. Exit status
1 if a figure module failed or a sanity check found a sampled prediction
outside its certified range.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

FIGURES = ("fig2", "fig5", "fig3", "fig4", "beyond", "fig6")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small configuration (a few minutes)")
    size.add_argument("--tiny", action="store_true", help="smallest configuration (the test suite's)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="comma-separated subset of " + ",".join(FIGURES))
    ap.add_argument("--rows", type=int, default=None, help="override the test points per study")
    ap.add_argument("--time-limit", type=float, default=None, help="override the seconds per certified range")
    args = ap.parse_args(argv)

    from ._common import CONFIGS, package_state, report

    cfg = CONFIGS["tiny" if args.tiny else "quick" if args.quick else "full"]
    if args.rows is not None or args.time_limit is not None:
        cfg = dataclasses.replace(cfg, rows=args.rows or cfg.rows, beyond_rows=args.rows or cfg.beyond_rows,
                                  time_limit=args.time_limit or cfg.time_limit,
                                  name=f"{cfg.name}-rows{args.rows or cfg.rows}")
    out = args.out or os.path.join("/tmp", "skgprobust-paper", cfg.name)
    os.makedirs(out, exist_ok=True)
    figures = FIGURES if args.only is None else tuple(f.strip() for f in args.only.split(","))
    unknown = set(figures) - set(FIGURES)
    if unknown:
        ap.error(f"unknown figures {sorted(unknown)}; choose from {FIGURES}")
    print(f"# configuration {cfg.name} -> {out}\n# {package_state()}", flush=True)
    timing, failed = [], []
    t_all = time.perf_counter()
    for name in figures:
        t0 = time.perf_counter()
        try:
            parts = importlib.import_module(f".{name}", __package__).run(cfg, out) or []
        except Exception:  # report and go on with the other figures
            traceback.print_exc()
            failed.append(name)
            parts = []
        wall = time.perf_counter() - t0
        timing.append([name, "(whole figure)", f"{wall:.1f}", "", ""])
        for label, secs, n in parts:
            timing.append([name, label, f"{secs:.2f}", n, f"{secs / n:.3f}" if n else ""])
        print(f"# {name}: {wall:.1f} s", flush=True)
    timing.append(["all", "(total)", f"{time.perf_counter() - t_all:.1f}", "", ""])
    report("timing", ["figure", "part", "seconds", "certified_ranges", "s_per_range"], timing, out)
    print(f"\n# {package_state()}")
    if failed:
        print(f"# FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
