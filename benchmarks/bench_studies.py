"""Study designs (issue 24): ``compare`` over many blocks/levels/metrics, and ``aggregate`` on many turns.

* compare: ``--blocks`` blocks × ``--levels`` levels × ``--metrics`` metrics (one subset, so k = levels:
  one Friedman row and k(k − 1)/2 Wilcoxon rows per metric), ``--n-resamples`` resamples for the r_rb
  BCa interval and the mean-difference percentile interval, through :func:`compare_groups`; also the
  same call with ``n_resamples=0`` (tests and means only), which isolates the bootstrap cost.
* aggregate: ``--turns`` turn rows, 5 binary labels with ~20% −1, keyed by (question_id, model, level),
  through :func:`aggregate_labels` (what ``tutormetrics aggregate`` runs after reading).

Goals (issue 24): compare at 100k blocks × 9 levels × 5 metrics with 2,000 resamples ≤ 60 s; aggregate on
1M turns ≤ 10 s (2 cores).

Usage:
    python benchmarks/bench_studies.py [--blocks 2000] [--levels 9] [--metrics 5] [--n-resamples 2000] [--turns 1000000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tutormetrics.stats.aggregate import aggregate_labels
from tutormetrics.stats.paired import compare_groups


def _compare_frame(blocks: int, levels: int, metrics: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 1, (blocks, 1, metrics))
    shift = rng.normal(0, 0.1, (1, levels, metrics))
    values = np.round(base + shift + rng.normal(0, 1, (blocks, levels, metrics)), 3)
    cols = {"question_id": np.repeat(np.arange(blocks), levels), "level": np.tile([f"L{i}" for i in range(levels)], blocks)}
    cols.update({f"m{j}": values[:, :, j].ravel() for j in range(metrics)})
    return pl.DataFrame(cols)


def _turns_frame(turns: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_dialogues = max(1, turns // 8)
    dialogue = np.repeat(np.arange(n_dialogues), 8)[:turns]
    labels = {f"label{j}": np.where(rng.random(turns) < 0.2, -1, (rng.random(turns) < 0.5).astype(int)) for j in range(5)}
    return pl.DataFrame({"question_id": (dialogue // 6).astype(str), "model": (dialogue % 3).astype(str),
                         "level": (dialogue % 2).astype(str), "turn": np.tile(np.arange(8), n_dialogues)[:turns], **labels})  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=2000)
    ap.add_argument("--levels", type=int, default=9)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--n-resamples", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=1_000_000)
    ap.add_argument("--skip-bootstrap", action="store_true", help="only the n_resamples=0 compare run")
    args = ap.parse_args(argv)
    out: dict[str, object] = {"blocks": args.blocks, "levels": args.levels, "metrics": args.metrics, "n_resamples": args.n_resamples}
    frame = _compare_frame(args.blocks, args.levels, args.metrics)
    kw = {"group_col": "level", "block_col": "question_id", "n_min": 15}
    t0 = time.perf_counter()
    table = compare_groups(frame, n_resamples=0, **kw)
    out["compare_no_bootstrap_s"] = round(time.perf_counter() - t0, 2)
    out["rows"] = table.height
    if not args.skip_bootstrap:
        t0 = time.perf_counter()
        compare_groups(frame, n_resamples=args.n_resamples, **kw)
        out["compare_bootstrap_s"] = round(time.perf_counter() - t0, 2)
    turns = _turns_frame(args.turns)
    t0 = time.perf_counter()
    res = aggregate_labels(turns, by=["question_id", "model", "level"], na=[-1])
    out["aggregate_turns"] = args.turns
    out["aggregate_groups"] = res.result.height
    out["aggregate_s"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
