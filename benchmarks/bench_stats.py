"""Spearman matrix with bootstrap BCa CIs: vectorised default vs per-cell ``scipy.stats.bootstrap``.

Data: the 40 metric columns of ``Scorer("all")`` on all 1,655 MRBench rows (computed once and cached
in the temp dir; ``--scores`` reuses a scored table) × 12 targets from MRBench's ratings: the 8
criterion scores (0 / 0.5 / 1) and the binary ``endorsed`` flag of 4 of them (mistake_identification,
mistake_location, providing_guidance, actionability).

Timed: ``spearman_matrix(data, metrics, targets, ci="bca", n_resamples=2000)`` with
``ci_backend="vectorized"`` (median of ``--runs``) and ``ci_backend="scipy"``. When the scipy path
would take longer than ``--scipy-max-s`` for all 480 cells it is timed on the first
``--scipy-metrics`` metrics × all 12 targets and extrapolated linearly in the number of cells (the
per-cell cost does not depend on the cell). The CIs of both backends are compared on the subset.

Usage:
    python benchmarks/bench_stats.py
    python benchmarks/bench_stats.py --scipy-metrics 40          # full scipy run (slow)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

ENDORSED = ["mistake_identification", "mistake_location", "providing_guidance", "actionability"]


def scored_table(exchanges: Path, scores: Path | None) -> tuple[pl.DataFrame, list[str]]:
    from tutormetrics.encoders.hf import EncoderConfig
    from tutormetrics.engine import Scorer

    if scores is None:
        key = hashlib.sha1(f"{exchanges.resolve()}:{exchanges.stat().st_mtime_ns}".encode()).hexdigest()[:12]
        scores = Path(tempfile.gettempdir()) / f"tutormetrics_bench_scores_{key}.parquet"
        if not scores.exists():
            print(f"scoring {exchanges} once (cached in {scores})", file=sys.stderr)
            ids, prompts, responses = C.read_mrbench(exchanges)
            s = Scorer("all", encoder=EncoderConfig(device="cpu"), progress=False)
            s.score(ids, prompts, responses).write_parquet(scores)
    frame = pl.read_parquet(scores) if scores.suffix == ".parquet" else pl.read_csv(scores)
    s = Scorer("all", progress=False)
    return frame, s.metric_columns()


def targets_table(ratings: Path) -> tuple[pl.DataFrame, list[str]]:
    r = pl.read_csv(ratings)
    score = r.group_by("exchange_id", "criterion").agg(pl.col("score").mean()).pivot(
        on="criterion", index="exchange_id", values="score"
    )
    endorsed = (
        r.filter(pl.col("criterion").is_in(ENDORSED))
        .group_by("exchange_id", "criterion")
        .agg(pl.col("endorsed").mean().cast(pl.Float64))
        .with_columns(pl.col("criterion") + "_endorsed")
        .pivot(on="criterion", index="exchange_id", values="endorsed")
    )
    crit = sorted(c for c in score.columns if c != "exchange_id")
    targets = crit + [f"{c}_endorsed" for c in ENDORSED]
    return score.join(endorsed, on="exchange_id"), targets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--ratings", type=Path, default=C.DEFAULT_RATINGS)
    ap.add_argument("--scores", type=Path, default=None, help="a scored table (csv/parquet) of --input")
    ap.add_argument("--n-resamples", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scipy-metrics", type=int, default=4, help="metrics in the scipy subset (all 12 targets)")
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)

    from tutormetrics.validity.correlate import spearman_matrix

    res = C.header("stats")
    scores, metrics = scored_table(args.input, args.scores)
    tgt, targets = targets_table(args.ratings)
    data = scores.join(tgt, on="exchange_id", how="inner")
    assert len(metrics) == 40 and len(targets) == 12, (len(metrics), len(targets))
    print(f"{data.height} rows, {len(metrics)} metrics x {len(targets)} targets", file=sys.stderr)

    kw = {"ci": "bca", "n_resamples": args.n_resamples, "seed": 0}
    spearman_matrix(data, metrics[:2], targets[:2], **kw)  # warm-up (imports, BLAS)
    vec_times, vec_table, vec_loads = C.timed(lambda: spearman_matrix(data, metrics, targets, **kw), args.runs, "vectorized")

    sub = metrics[: args.scipy_metrics]
    n_cells, n_sub = len(metrics) * len(targets), len(sub) * len(targets)
    load = C.load_average()
    t0 = time.perf_counter()
    sci_table = spearman_matrix(data, sub, targets, ci_backend="scipy", **kw)
    sci_s = time.perf_counter() - t0
    print(f"  scipy {n_sub} cells: {sci_s:.1f} s (load {load})", file=sys.stderr)
    vec_sub = spearman_matrix(data, sub, targets, **kw)
    diff = {c: float(np.nanmax(np.abs(vec_sub[c].to_numpy() - sci_table[c].to_numpy()))) for c in ("rho", "ci_low", "ci_high")}
    sci_full = sci_s * n_cells / n_sub
    vm = C.median(vec_times)
    extrapolated = n_sub < n_cells
    res.update(
        {
            "input": str(args.input),
            "ratings": str(args.ratings),
            "n_rows": data.height,
            "metrics": metrics,
            "targets": targets,
            "n_cells": n_cells,
            "n_resamples": args.n_resamples,
            "ci": "bca",
            "vectorized": {"runs_s": vec_times, "median_s": vm, "loads": vec_loads,
                           "cells_defined": int((vec_table["reason"] == "").sum())},
            "scipy": {"cells_timed": n_sub, "metrics_timed": sub, "seconds": sci_s, "load": load,
                      "seconds_all_cells": sci_full, "extrapolated": extrapolated,
                      "per_cell_s": sci_s / n_sub},
            "subset_max_abs_diff_vectorized_vs_scipy": diff,
            "speedup": sci_full / vm,
            "target": ">= 20x",
        }
    )  # fmt: skip
    res["target_met"] = res["speedup"] >= 20
    C.write_json("stats", res)
    how = (f"timed on {n_sub} cells (first {len(sub)} metrics × 12 targets) and extrapolated linearly to {n_cells}"
           if extrapolated else f"all {n_cells} cells")  # fmt: skip
    rows = [
        ["`ci_backend=\"vectorized\"` (default)", len(vec_times), f"{vm:.2f}", "1.0"],
        [f"`ci_backend=\"scipy\"` (per-cell `scipy.stats.bootstrap`), {how}", 1, f"{sci_full:.1f}",
         f"**{sci_full / vm:.0f}×**"],
    ]  # fmt: skip
    body = f"""## 4. Statistics: Spearman matrix with BCa bootstrap CIs (`bench_stats.py`)

{len(metrics)} metrics × {len(targets)} targets = {n_cells} cells on {data.height:,} MRBench rows, BCa with {args.n_resamples:,} resamples (seed 0). Targets: the 8 rubric criteria (mean score) and the binary `endorsed` flag of {", ".join(ENDORSED)}.
Target: vectorised ≥ 20× faster — **{'met' if res['target_met'] else 'missed'}** ({res['speedup']:.0f}×).

{C.md_table(rows, ["backend", "runs", "seconds (all cells)", "speed-up"])}

scipy measured: {sci_s:.1f} s for {n_sub} cells ({1000 * sci_s / n_sub:.0f} ms per cell). Same seed, same resamples: max |vectorised − scipy| on the subset: ρ {diff['rho']:.1e}, CI low {diff['ci_low']:.1e}, CI high {diff['ci_high']:.1e}.

{C.env_lines(res)}
"""
    if not args.no_md:
        C.update_results_md("stats", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
