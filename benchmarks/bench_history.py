"""``score --history-col`` vs ``--transcript-col`` on CIMA-shaped rows (``datasets.md`` §3.4, issue 25).

Both read each row's history with the same transcript rules; ``--history-col`` scores only the row's response (one
exchange per row), ``--transcript-col`` every tutor turn of the history plus the response (the rows that the
invariant test compares it with are the last of each conversation). The shared CIMA sample
(``../shared/data/public/cima/dataset_first80.json``, 245 responses with 2-10 history turns) is converted and its
rows repeated ``--copies`` times under new ids; lexical metrics, full context, in one process, alternating runs.

Usage:
    python benchmarks/bench_history.py --copies 8 --runs 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _common as C

CIMA = C.REPO.parent / "shared" / "data" / "public" / "cima" / "dataset_first80.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--metrics", default="lexical")
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)

    import polars as pl

    from tutormetrics.cli import main as cli
    from tutormetrics.dialogue.file_scoring import DialogueOptions, score_dialogue_file
    from tutormetrics.dialogue.history import score_history_file
    from tutormetrics.engine.file_scoring import ScoreOptions

    res = C.header("history")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        assert cli(["convert", "cima", str(CIMA), "-o", str(folder / "cima")]) == 0
        base = pl.read_csv(folder / "cima" / "exchanges.csv", infer_schema_length=0)
        rows = pl.concat([base.with_columns((pl.col("exchange_id") + f"#{k}").alias("exchange_id")) for k in range(args.copies)])
        path = folder / "rows.csv"
        rows.write_csv(path)
        options = ScoreOptions(metrics=args.metrics, progress=False)
        history = DialogueOptions(history_col="prompt")
        transcript = DialogueOptions(transcript_col="prompt")
        score_history_file(path, None, options, history)  # warm-up
        t_hist, out_hist, l_hist = C.timed(lambda: score_history_file(path, None, options, history), args.runs, "history-col")
        t_tr, out_tr, l_tr = C.timed(lambda: score_dialogue_file(path, None, options, transcript), args.runs, "transcript-col")
    n_rows, n_turns = out_hist.n_rows, out_tr.n_turn_rows
    res.update(rows=n_rows, tutor_turns_scored_by_transcript=n_turns, copies=args.copies, metrics=args.metrics,
               seconds={"history": t_hist, "transcript": t_tr}, load_before_runs={"history": l_hist, "transcript": l_tr},
               median_s={"history": C.median(t_hist), "transcript": C.median(t_tr)})  # fmt: skip
    C.write_json("history", res)
    body = (
        "## 19. `score --history-col` vs `--transcript-col` (`bench_history.py`, issue 25)\n\n"
        f"`{res['command']}` — {res['date_utc']}, {res['machine']['cpu_cores']}-core shared CPU; "
        f"{n_rows:,} rows (the CIMA sample × {args.copies}), `--metrics {args.metrics}`, full context.\n\n"
        + C.md_table(
            [["exchanges scored", f"{n_rows:,}", f"{n_turns:,}"],
             [f"wall time (median of {args.runs})", f"{C.median(t_hist):.2f} s", f"{C.median(t_tr):.2f} s"]],
            ["", "--history-col prompt", "--transcript-col prompt"],
        )
        + "\n\n`--history-col` scores one exchange per row (the response after its history); `--transcript-col` "
        "scores every tutor turn of every history as well, and its final rows equal `--history-col`'s "
        "(tests/integration/test_ids_history_cli.py).\n\n" + C.env_lines(res)
    )
    if not args.no_md:
        C.update_results_md("history", body)
    print(body)
    print(f"history {C.median(t_hist):.2f} s vs transcript {C.median(t_tr):.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
