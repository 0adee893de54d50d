"""Helpers shared by the benchmark scripts (run as ``python benchmarks/bench_*.py``,
so this folder is on ``sys.path``)."""

import os
import subprocess
import sys

import skgprobust

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(skgprobust.__file__)))
if os.path.realpath(_HERE) != os.path.realpath(_ROOT) and not os.environ.get("SKGPROBUST_BENCH_OTHER_PACKAGE"):
    # A stale non-editable install in site-packages once made benchmark runs
    # measure old code silently; say so loudly (set the variable to silence it
    # when measuring another checkout on purpose, as the ``--before`` runs do).
    print(
        f"WARNING: benchmarks of the checkout {_HERE} are importing skgprobust from {_ROOT}; "
        f"run with PYTHONPATH={_HERE} or `pip install -e {_HERE}` to measure this checkout",
        file=sys.stderr,
    )


def table(headers, rows):
    """Markdown-style table as a string."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.rjust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in cells])


def report_anomalies(anomalies):
    """Print the sanity-check failures (or "anomalies: none") and return the
    exit status: 1 when there are any, else 0."""
    if anomalies:
        print("anomalies:")
        for a in anomalies:
            print("  -", a)
        return 1
    print("anomalies: none")
    return 0


def package_state():
    """skgprobust location and commit (read-only git query) and the machine's load, for the record."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(skgprobust.__file__)))
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--", "skgprobust"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        commit = f"{head or '?'}{' + uncommitted changes in skgprobust/' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"package at {root} ({commit}); load average {load} on {os.cpu_count()} cpus"
