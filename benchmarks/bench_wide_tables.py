"""Wide tables (issue 35): ``aggregate`` and ``variability`` time against the number of label columns, before and after.

* aggregate: ``--agg-rows`` turns (dialogues of 8 turns, keyed by ``q``), 0/1 labels with 20% −1, ``na=[-1]``,
  through :func:`aggregate_labels` (what ``tutormetrics aggregate`` runs after reading), at ``--agg-cols`` columns.
* variability: ``--var-units`` items × 2 trials, normal columns, through :func:`variability_table`, at
  ``--var-cols`` columns.

Both sides run in fresh processes on the same seeded frames: ``before`` is ``src/`` of ``--before`` (a git revision,
unpacked with ``git archive``), ``after`` this checkout's ``src/``. Each size is timed ``--runs`` times (median);
the before side once per size by default (``--before-runs``), its quadratic sizes take tens of seconds.

Usage:
    python benchmarks/bench_wide_tables.py [--before main] [--agg-cols 1000 2000 4000] [--var-cols 750 1500 3000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common as C


def _worker(kind: str, rows: int, n_cols: int, runs: int) -> None:
    """One side, one size: the median of ``runs`` timings on stdout (JSON)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    if kind == "aggregate":
        from tutormetrics.stats.aggregate import aggregate_labels

        labels = {f"l{j}": np.where(rng.random(rows) < 0.2, -1, rng.integers(0, 2, rows)) for j in range(n_cols)}
        frame = pl.DataFrame({"q": [f"q{i // 8}" for i in range(rows)], **labels})

        def call() -> object:
            return aggregate_labels(frame, by=["q"], na=[-1]).result.shape
    else:
        from tutormetrics.stats.variability import variability_table

        cols = {f"c{j}": rng.normal(size=2 * rows) for j in range(n_cols)}
        frame = pl.DataFrame({"item": np.repeat(np.arange(rows), 2), "trial": np.tile([1, 2], rows), **cols})
        variability_table(frame.select("item", "trial", "c0"), unit_col="item", trial_col="trial")  # scipy imported

        def call() -> object:
            return variability_table(frame, unit_col="item", trial_col="trial")[0].shape

    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        shape = call()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": statistics.median(times), "runs": times, "shape": list(shape)}))  # type: ignore[arg-type]


def _side(src: Path, kind: str, rows: int, n_cols: int, runs: int) -> dict:
    load = C.load_average()
    proc = subprocess.run([sys.executable, __file__, "--worker", kind, str(rows), str(n_cols), str(runs)],
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True)  # fmt: skip
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"  {kind} {n_cols} columns, {src}: {out['seconds']:.2f} s (load {load})", file=sys.stderr)
    return {**out, "load_before": load}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="main", help="git revision of the 'before' code")
    ap.add_argument("--agg-rows", type=int, default=200)
    ap.add_argument("--agg-cols", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--var-units", type=int, default=200)
    ap.add_argument("--var-cols", type=int, nargs="+", default=[750, 1500, 3000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before-runs", type=int, default=1)
    ap.add_argument("--name", default="wide_tables")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kind, rows, n_cols, runs = args.worker
        _worker(kind, int(rows), int(n_cols), int(runs))
        return 0
    result = C.header(args.name)
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", args.before, "src"], cwd=C.REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        sides = {"before": Path(tmp) / "src", "after": C.REPO / "src"}
        rows = []
        for kind, size, counts in (("aggregate", args.agg_rows, args.agg_cols), ("variability", args.var_units, args.var_cols)):
            for n in counts:
                b = _side(sides["before"], kind, size, n, args.before_runs)
                a = _side(sides["after"], kind, size, n, args.runs)
                rows.append({"command": kind, "rows": size * (2 if kind == "variability" else 1), "columns": n, "before": b, "after": a})
    result["rows"] = rows
    result["before_revision"] = args.before
    table = C.md_table(
        [(r["command"], f"{r['rows']:,}", f"{r['columns']:,}", f"{r['before']['seconds']:.2f}", f"{r['after']['seconds']:.3f}",
          f"{r['before']['seconds'] / r['after']['seconds']:.0f}×", r["before"]["load_before"][0]) for r in rows],
        ["command", "rows", "label columns", f"before ({args.before}) s", "after s", "speed-up", "1-min load before"],
    )  # fmt: skip
    body = (
        "## 25. Wide tables: `aggregate` and `variability` against the number of columns (`bench_wide_tables.py`, issue 35)\n\n"
        "In-process through `aggregate_labels` and `variability_table`, each size in a fresh process; seeded frames (aggregate: "
        f"dialogues of 8 turns, 0/1 labels with 20% −1, `na=[-1]`; variability: {args.var_units} items × 2 trials, normal columns). "
        f"Before: {args.before_runs} run per size; after: median of {args.runs}.\n\n"
        f"{table}\n\n{C.env_lines(result)}"
    )
    return C.publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
