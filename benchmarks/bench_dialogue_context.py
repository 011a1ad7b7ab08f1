"""One long conversation under ``--context full`` (issue 35): peak memory and time of ``score --dialogue``, before and after.

A seeded long table holds one conversation of ``--turns`` alternating student/tutor turns, short sentences of
5-12 words drawn Zipf-wise from 3,000 made-up words (so that the n-gram sets of a long context grow as in real text).
Each size is scored by ``tutormetrics score FILE --dialogue --context full --metrics lexical`` in a fresh process:
``before`` is ``src/`` of ``--before`` (a git revision, unpacked with ``git archive``), ``after`` this checkout's
``src/``, with the default ``--chunk-size`` and, after only, ``--chunk-size`` ``--small-chunk``. The sizes of
``--encoder-turns`` are scored with ``--context-encoding turns --metrics embedding_similarity`` (the bundled MiniLM),
before and after, default ``--chunk-size``. Peak RSS is the child's own (``os.wait4``); a child passing
``--max-rss-mb`` or ``--timeout`` seconds is stopped and reported as more than that. Where both sides finish, their
TURNS files are compared: byte for byte (lexical), every column to 1e-6 (encoder).

Usage:
    python benchmarks/bench_dialogue_context.py [--before 3b79ca8] [--turns 500 1000 2000 6000] [--before-max-turns 2000]
        [--encoder-turns 300 600 1200]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common as C

SYLLABLES = ["ka", "to", "mi", "ra", "ne", "so", "lu", "pe", "di", "vo", "ga", "fi"]
VOCAB = ["".join(p) for n in (1, 2, 3) for p in itertools.product(SYLLABLES, repeat=n)][:3000]
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(VOCAB))]


def write_conversation(path: Path, n_turns: int, seed: int = 0) -> None:
    """One conversation ``c0`` of ``n_turns`` turns, student first, as a long table."""
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["conversation_id", "turn", "role", "text"])
        for k in range(n_turns):
            text = " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(5, 12))).capitalize() + rng.choice([".", "?"])
            w.writerow(["c0", k, "student" if k % 2 == 0 else "tutor", text])


LEXICAL = ("--metrics", "lexical")
ENCODER = ("--metrics", "embedding_similarity", "--context-encoding", "turns")


def run_side(src: Path, table: Path, out: Path, chunk_size: int | None, max_rss_mb: float, timeout: float,
             options: tuple[str, ...] = LEXICAL) -> dict:  # fmt: skip
    """``score --dialogue`` in a child: its peak RSS (MB), wall seconds and TURNS digest, or how it was stopped."""
    cmd = [sys.executable, "-m", "tutormetrics", "score", str(table), "--dialogue", "--context", "full",
           *options, "-o", str(out), "--no-progress"]  # fmt: skip
    if chunk_size is not None:
        cmd += ["--chunk-size", str(chunk_size)]
    load = C.load_average()
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
        stopped = None
        while True:  # os.wait4 rather than poll(): the child's own rusage (ru_maxrss)
            pid, status, usage = os.wait4(proc.pid, 0 if stopped else os.WNOHANG)
            if pid:
                break
            rss = _rss_mb(proc.pid)
            if rss > max_rss_mb:
                stopped = f"> {max_rss_mb:,.0f} MB"
            elif time.perf_counter() - t0 > timeout:
                stopped = f"> {timeout:,.0f} s"
            if stopped:
                os.kill(proc.pid, signal.SIGKILL)
            else:
                time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t0
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
    result = {"peak_rss_mb": usage.ru_maxrss / 1024, "seconds": seconds, "load_before": load, "stopped": stopped}
    if stopped is None and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    if stopped is None:
        result["sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()
    label = stopped or f"{result['peak_rss_mb']:,.0f} MB, {seconds:.1f} s"
    print(f"  {table.name} {options[1]} chunk {chunk_size or 'default'}, {src}: {label} (load {load})", file=sys.stderr)
    return result


def same_columns(a: Path, b: Path, atol: float = 1e-6) -> bool:
    """Two TURNS tables with the same columns and rows, floats within ``atol`` (NaN equal to NaN)."""
    import numpy as np
    import polars as pl

    x, y = pl.read_csv(a), pl.read_csv(b)
    if x.columns != y.columns or x.height != y.height:
        return False
    for col in x.columns:
        if x[col].dtype.is_float() or y[col].dtype.is_float():
            u, v = x[col].cast(pl.Float64).to_numpy(), y[col].cast(pl.Float64).to_numpy()
            if not np.allclose(u, v, rtol=0, atol=atol, equal_nan=True):
                return False
        elif x[col].to_list() != y[col].to_list():
            return False
    return True


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cell(side: dict | None) -> tuple[str, str]:
    if side is None:
        return "not run", ""
    if side["stopped"]:
        return side["stopped"], ""
    return f"{side['peak_rss_mb']:,.0f}", f"{side['seconds']:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="3b79ca8", help="git revision of the 'before' code")
    ap.add_argument("--turns", type=int, nargs="+", default=[500, 1000, 2000, 6000])
    ap.add_argument("--before-max-turns", type=int, default=2000, help="larger sizes are not run on the before side")
    ap.add_argument("--encoder-turns", type=int, nargs="*", default=[300, 600, 1200])
    ap.add_argument("--small-chunk", type=int, default=256, help="the after side also runs with this --chunk-size")
    ap.add_argument("--max-rss-mb", type=float, default=6000.0)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--name", default="dialogue_context")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)
    result = C.header(args.name)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tm-bench-ctx-") as tmp:
        archive = subprocess.run(["git", "archive", args.before, "src"], cwd=C.REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        before_src, after_src = Path(tmp) / "src", C.REPO / "src"
        for n in args.turns:
            table = Path(tmp) / f"long_{n}.csv"
            write_conversation(table, n)
            out = Path(tmp) / "turns.csv"
            before = (run_side(before_src, table, out, None, args.max_rss_mb, args.timeout)
                      if n <= args.before_max_turns else None)  # fmt: skip
            after = run_side(after_src, table, out, None, args.max_rss_mb, args.timeout)
            small = run_side(after_src, table, out, args.small_chunk, args.max_rss_mb, args.timeout)
            same = None
            if before and not before["stopped"] and not after["stopped"]:
                same = before["sha256"] == after["sha256"] == small.get("sha256")
            rows.append({"turns": n, "file_kb": table.stat().st_size / 1024, "before": before, "after": after,
                         "after_small_chunk": small, "identical_turns": same})  # fmt: skip
        encoder_rows = []
        for n in args.encoder_turns:
            table = Path(tmp) / f"long_{n}.csv"
            write_conversation(table, n)
            outs = {k: Path(tmp) / f"turns_{k}.csv" for k in ("before", "after")}
            before = run_side(before_src, table, outs["before"], None, args.max_rss_mb, args.timeout, ENCODER)
            after = run_side(after_src, table, outs["after"], None, args.max_rss_mb, args.timeout, ENCODER)
            same = same_columns(outs["before"], outs["after"]) if not (before["stopped"] or after["stopped"]) else None
            encoder_rows.append({"turns": n, "file_kb": table.stat().st_size / 1024, "before": before, "after": after,
                                 "same_turns": same})  # fmt: skip
    result.update(rows=rows, encoder_rows=encoder_rows, before_revision=args.before, small_chunk=args.small_chunk)

    def ratio(r: dict) -> str:
        b, a = r["before"], r["after"]
        return f"{b['peak_rss_mb'] / a['peak_rss_mb']:.1f}×" if b and not b["stopped"] and not a["stopped"] else ""

    table_md = C.md_table(
        [(f"{r['turns']:,}", f"{r['file_kb']:.0f}", *_cell(r["before"]), *_cell(r["after"]), ratio(r),
          *_cell(r["after_small_chunk"]), {True: "yes", False: "NO", None: ""}[r["identical_turns"]],
          (r["before"] or r["after"])["load_before"][0]) for r in rows],
        ["turns", "file KB", f"before ({args.before}) MB", "before s", "after MB", "after s", "RSS ratio",
         f"after, --chunk-size {args.small_chunk}, MB", "s", "TURNS identical", "1-min load before"],
    )  # fmt: skip
    encoder_md = C.md_table(
        [(f"{r['turns']:,}", f"{r['file_kb']:.0f}", *_cell(r["before"]), *_cell(r["after"]), ratio(r),
          {True: "yes", False: "NO", None: ""}[r["same_turns"]], r["before"]["load_before"][0]) for r in encoder_rows],
        ["turns", "file KB", f"before ({args.before}) MB", "before s", "after MB", "after s", "RSS ratio",
         "TURNS equal (1e-6)", "1-min load before"],
    )  # fmt: skip
    body = (
        "## 26. One long conversation under `--context full`: peak memory (`bench_dialogue_context.py`, issue 35)\n\n"
        "`tutormetrics score long.csv --dialogue --context full --metrics lexical -o turns.csv`, each run in a fresh "
        "process, peak RSS of the child (`os.wait4`). One seeded conversation of alternating student/tutor turns of "
        "5–12 Zipf-drawn words (3,000-word vocabulary). Before: the default `--chunk-size` (2,048) only; after: the "
        f"default and `--chunk-size {args.small_chunk}`. TURNS identical: the three TURNS files byte for byte.\n\n"
        f"{table_md}\n\n"
        "With the encoder: `--context-encoding turns --metrics embedding_similarity` (bundled MiniLM, CPU), default "
        "`--chunk-size`; TURNS equal: every column within 1e-6.\n\n"
        f"{encoder_md}\n\n{C.env_lines(result)}"
    )
    return C.publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
