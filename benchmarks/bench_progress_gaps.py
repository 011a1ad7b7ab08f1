"""Silent stretches of the long commands (issue 35): the longest gap between two stderr lines, off a terminal.

Each command runs in a fresh process with ``--progress-every 2`` (where the tree has it) and stderr to a pipe; every
line is stamped when it arrives. ``first`` is the time from the start to the first line (start-up: the interpreter
and the imports, before any command code), ``gap`` the longest time between two lines after it. The inputs are the
public samples (``shared/data/public/``, converted here) and MRBench V2 (``shared/data/mrbench/``):

* ``predict --model hgb`` on the uptake sample scored with every metric family but the encoder's (6 targets);
* ``run --dialogue`` on the MathDial sample repeated 25 times (1,000 conversations, ``--metrics lexical``);
* ``validate --estimate-theta`` and ``compare`` on MRBench scored with ``--metrics lexical``;
* with ``--nuts``, ``theta --method nuts`` on the uptake ratings (minutes).

``--before REV`` also runs each command on ``src/`` of that revision (``git archive``), without the flags it lacks.

Usage:
    python benchmarks/bench_progress_gaps.py [--before main] [--nuts]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common as C

SHARED = HERE.parent.parent / "shared" / "data"


def timed_lines(cmd: list[str], src: Path, cwd: Path) -> dict[str, float | int]:
    """Run ``cmd`` with ``src`` on ``PYTHONPATH``; the time to the first stderr line, the longest gap after it, the
    number of lines and of progress lines, and the wall time."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    stamps, progress = [], 0
    assert proc.stderr is not None
    for line in proc.stderr:
        stamps.append(time.monotonic())
        progress += line.startswith("progress: ")
    code = proc.wait()
    end = time.monotonic()
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {code}")
    marks = [*stamps, end]
    gaps = [b - a for a, b in itertools.pairwise(marks)]
    return {"first_s": round(marks[0] - start, 1), "gap_s": round(max(gaps, default=0.0), 1), "lines": len(stamps),
            "progress_lines": progress, "wall_s": round(end - start, 1)}  # fmt: skip


def prepare(work: Path, src: Path) -> None:
    """The converted samples and the scored tables every command reads (once, with this checkout's ``src``)."""
    import polars as pl

    py, pub = sys.executable, SHARED / "public"
    env = {**os.environ, "PYTHONPATH": str(src)}

    def tm(*args: str) -> None:
        subprocess.run([py, "-m", "tutormetrics", *args], cwd=work, env=env, check=True, capture_output=True)

    tm("convert", "uptake", str(pub / "uptake" / "uptake_data_first200.csv"), "-o", "uptake")
    tm("convert", "mathdial", str(pub / "mathdial" / "test_first40.csv"), "-o", "mathdial")
    tm("score", "uptake/exchanges.csv", "--keep", "conversation_id", "--metrics", "lexical", "--progress-every", "0", "-o", "m_uptake.csv")
    tm("score", str(SHARED / "mrbench" / "exchanges.csv"), "--keep", "conversation_id", "--keep", "tutor", "--metrics", "lexical",
       "--progress-every", "0", "-o", "m_mr.csv")  # fmt: skip
    dialogues = pl.read_csv(work / "mathdial" / "dialogues.csv", infer_schema=False)
    ratings = pl.read_csv(work / "mathdial" / "ratings.csv", infer_schema=False)
    (work / "mdbig").mkdir()
    suffix = [pl.col("conversation_id") + f"_{k}" for k in range(25)]
    pl.concat([dialogues.with_columns(s.alias("conversation_id")) for s in suffix]).write_csv(work / "mdbig" / "dialogues.csv")
    pl.concat([ratings.with_columns(s.alias("conversation_id")) for s in suffix]).write_csv(work / "mdbig" / "ratings.csv")


def commands(nuts: bool) -> dict[str, list[str]]:
    mr = str(SHARED / "mrbench" / "ratings.csv")
    out = {
        "predict --model hgb (uptake)": ["predict", "m_uptake.csv", "--ratings", "uptake/ratings_wide.csv", "--group-col",
                                         "conversation_id", "--model", "hgb", "-o", "pred.csv"],
        "run --dialogue (MathDial x25, lexical)": ["run", "mdbig/dialogues.csv", "--dialogue", "--ratings", "mdbig/ratings.csv",
                                                   "--metrics", "lexical", "-o", "study"],
        "validate --estimate-theta (MRBench)": ["validate", "m_mr.csv", "--ratings", mr, "--estimate-theta", "--n-resamples",
                                                "2000", "-o", "val.csv"],
        "compare (MRBench tutors)": ["compare", "m_mr.csv", "--group-col", "tutor", "--block-col", "conversation_id", "-o", "cmp.csv"],
    }  # fmt: skip
    if nuts:
        out["theta --method nuts (uptake)"] = ["theta", "uptake/ratings.csv", "--raters", "exchangeable", "--method", "nuts", "-o", "th.csv"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="A git revision to run too (its src/, without the flags it lacks).")
    ap.add_argument("--nuts", action="store_true", help="Also theta --method nuts (minutes per side).")
    ap.add_argument("--name", default="progress_gaps")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    ap.add_argument("--render", type=Path, default=None, help="Only rewrite the RESULTS.md section of this JSON result.")
    args = ap.parse_args(argv)
    if args.render is not None:
        import json

        C.update_results_md(args.name, render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0
    result = C.header(args.name)
    after_src = HERE.parent / "src"
    with tempfile.TemporaryDirectory(prefix="tm-bench-gaps-") as tmp:
        work = Path(tmp)
        prepare(work, after_src)
        sides = {"after": after_src}
        if args.before:
            tree = work / "before"
            tree.mkdir()
            archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", args.before, "src"], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            sides = {"before": tree / "src", **sides}
        runs: dict[str, dict[str, float | int]] = {}
        for label, cmd in commands(args.nuts).items():
            for side, src in sides.items():
                flags = ["--progress-every", "2"] if side == "after" or cmd[0] in ("run", "score") else []
                shutil.rmtree(work / "study", ignore_errors=True)  # run writes a fresh folder
                runs[f"{label} [{side}]"] = r = timed_lines([sys.executable, "-m", "tutormetrics", *cmd, *flags], src, work)
                r["load_1min"] = C.load_average()[:1]
                print(f"{label} [{side}]: {r}", file=sys.stderr)
    result["runs"] = runs
    return C.publish(args, result, render(result))


def render(result: dict[str, Any]) -> str:
    """The RESULTS.md section of a result: per command and side the longest silence (start-up included), the longest
    gap after the first line and the time to it; the after side's progress lines and wall time."""
    runs = result["runs"]
    sides = [s for s in ("before", "after") if any(k.endswith(f"[{s}]") for k in runs)]
    labels = list(dict.fromkeys(k.rsplit(" [", 1)[0] for k in runs))
    rows = []
    for label in labels:
        got = {s: runs[f"{label} [{s}]"] for s in sides}
        rows.append([label, *[max(got[s]["first_s"], got[s]["gap_s"]) for s in sides], *[got[s]["gap_s"] for s in sides],
                     *[got[s]["first_s"] for s in sides], got["after"]["progress_lines"], got["after"]["wall_s"]])  # fmt: skip
    head = ["command", *[f"longest silence {s} s" for s in sides], *[f"gap after first line {s} s" for s in sides],
            *[f"to first line {s} s" for s in sides], "progress lines after", "wall after s"]  # fmt: skip
    return (f"## 26. Silent stretches: the longest gap between stderr lines off a terminal (`bench_progress_gaps.py`, issue 35)\n\n"
            f"{C.md_table(rows, head)}\n\n{C.env_lines(result)}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
