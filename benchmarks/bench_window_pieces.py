"""The encode-ahead window in pieces (issue 28) against one pass: CPU seconds of ``score -m all`` on MRBench rows.

With the text cache on and ``--chunk-size`` below 2,048, the texts of 2,048 rows are encoded ahead. Since issue 28
they are encoded in pieces of about one chunk's texts (``Scorer.prefetch_piece``), each checkpointed as it finishes,
so a kill loses at most one piece; before, the window was one pass checkpointed only with its first chunk. This
compares chunk 16 in pieces, chunk 16 in one pass (``prefetch_piece`` forced huge) and chunk 2048, alternately,
``--runs`` times, through ``score_file`` with checkpoints and the real bundled MiniLM on CPU. CPU seconds (process
time) are reported because wall time on a shared machine swings by tens of per cent.

Usage:
    python benchmarks/bench_window_pieces.py [--rows 160] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def main() -> int:
    import polars as pl

    from tutormetrics.engine.file_scoring import ScoreOptions, score_file
    from tutormetrics.engine.scorer import Scorer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--rows", type=int, default=160)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--name", default="window_pieces")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args()
    pieces = Scorer.prefetch_piece
    result = C.header(args.name) | {"runs": []}
    configs = [("pieces", 16), ("one pass", 16), ("-", 2048)]
    with tempfile.TemporaryDirectory(prefix="tm-window-") as tmp:
        src = Path(tmp) / "in.csv"
        pl.read_csv(args.input).head(args.rows).write_csv(src)
        outputs: dict[str, bytes] = {}
        for run in range(args.runs):
            for mode, chunk in configs:
                Scorer.prefetch_piece = pieces if mode != "one pass" else property(lambda self: 10**9)  # type: ignore[assignment]
                out = Path(tmp) / f"m_{run}.csv"
                c0, t0 = time.process_time(), time.perf_counter()
                score_file(src, out, ScoreOptions(metrics="all", chunk_size=chunk, progress=False))
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                encoded = json.loads(out.with_name(out.name + ".manifest.json").read_text())["text_cache"]["texts_encoded"]
                outputs[f"{mode}/{chunk}"] = out.read_bytes()
                result["runs"].append({"mode": mode, "chunk": chunk, "cpu_s": cpu, "wall_s": wall, "encoded": encoded,
                                       "load": C.load_average()})  # fmt: skip
                print(f"  {mode} chunk {chunk} run {run + 1}: CPU {cpu:.2f} s, wall {wall:.1f} s", file=sys.stderr)
    Scorer.prefetch_piece = pieces  # type: ignore[assignment]
    base = C.median([r["cpu_s"] for r in result["runs"] if r["chunk"] == 2048])
    rows = []
    for mode, chunk in configs:
        runs = [r for r in result["runs"] if (r["mode"], r["chunk"]) == (mode, chunk)]
        cpu = C.median([r["cpu_s"] for r in runs])
        rows.append([mode, chunk, f"{cpu:.2f}", f"{cpu / base:.2f}", f"{C.median([r['wall_s'] for r in runs]):.1f}",
                     runs[-1]["encoded"]])  # fmt: skip
    body = "\n".join([
        "## 20. The encode-ahead window in pieces (`bench_window_pieces.py`, issue 28)", "",
        (f"{args.rows} MRBench rows, `score -m all` with checkpoints, real MiniLM on CPU, {args.runs} alternating runs. "
         "Pieces: the window's texts encoded and checkpointed about one chunk at a time (a kill loses at most one "
         "piece); one pass: the behaviour before (a kill before the window's first chunk loses the whole window)."), "",
        C.md_table(rows, ["window", "chunk size", "median CPU s", "CPU / chunk 2048", "median wall s", "texts encoded"]), "",
        C.env_lines(result),
    ])  # fmt: skip
    return C.publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
