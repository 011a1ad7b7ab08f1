"""The judge table with dialogue intervals at scale (``docs/guide/judges.md``, issue 33).

Data: seeded simulation of ``--replies`` tutor replies in dialogues of ``--per-dialogue`` (default 100,000
replies, 8 per dialogue: 12,500 dialogues) × ``--criteria`` criteria (0/1/2) rated by two humans and one judge
(agreement with the truth varies by dialogue, so replies of a dialogue are correlated), with a
``conversation_id`` column and a metrics table of reply lengths.

Timed (median of ``--runs``, the ratings already in memory as a cleaned ``Ratings``):
- ``judge_tables(..., JudgeOptions(cluster_col="conversation_id"))``: the judge table with every interval
  (κ, α, AC1, macro-F1, mean difference) from B dialogue resamples — the issue's target, ≤ 60 s at B = 2,000;
- the same without ``cluster_col`` (today's κ/mean-difference draws plus the new α, AC1, F1 intervals over
  replies: G = 100,000 resampled units per criterion);
- today's κ and mean-difference draws alone (what the judge table spent on intervals before the issue), the
  reference the new reply-level intervals add to;
- ``--differences`` and ``--length-bias`` with dialogue intervals, each on its own.

Usage:
    python benchmarks/bench_judges.py                   # 100k replies x 4 criteria, B = 2000
    python benchmarks/bench_judges.py --replies 10000   # quick
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def simulate(replies: int, per: int, criteria: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Long ratings (humans h1, h2 and judge llm) and the metrics table (id, conversation_id, resp_words)."""
    rng = np.random.default_rng(seed)
    dialogue = np.arange(replies) // per
    g = int(dialogue.max()) + 1
    ids = np.array([f"r{i:07d}" for i in range(replies)])
    conv = np.array([f"d{d:06d}" for d in dialogue])
    frames = []
    for c in range(criteria):
        truth = rng.integers(0, 3, replies)
        p_right = np.clip(0.7 + 0.15 * rng.normal(size=g), 0.05, 0.99)[dialogue]
        for name, right in (("h1", np.full(replies, 0.85)), ("h2", np.full(replies, 0.85)), ("llm", p_right)):
            score = np.where(rng.random(replies) < right, truth, rng.integers(0, 3, replies))
            frames.append(pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "rater": name, "criterion": f"c{c + 1}",
                                        "score": score.astype(float)}))  # fmt: skip
    words = np.maximum(1, np.round(np.exp(rng.normal(3.5, 0.6, replies))))
    return pl.concat(frames), pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "resp_words": words})


def _todays_draws(ratings: object, b: int) -> None:
    """The intervals the judge table computed before issue 33, alone: κ's multinomial tables and the mean
    difference's index draws, for every judge × reference row."""
    from tutormetrics.psychometrics.judge import criterion_references, judge_setup
    from tutormetrics.psychometrics.pairwise_agreement import bootstrap_tables, cohen_kappa, contingency_table
    from tutormetrics.stats.paired import mean_diff_ci

    setup = judge_setup(ratings, ["llm"], id_col="exchange_id", rater_col="rater", criterion_col="criterion", score_col="score")
    for crit in setup.criteria:
        jcodes = crit.rater_codes("llm")
        for _, y_codes, _ in criterion_references(crit, "llm", setup.humans, False)[0]:
            both = (y_codes >= 0) & (jcodes >= 0)
            table = contingency_table(y_codes[both], jcodes[both], crit.values.size)
            cohen_kappa(bootstrap_tables(table, b, np.random.default_rng(0)))
            mean_diff_ci(crit.values[jcodes[both]].astype(float), crit.values[y_codes[both]].astype(float), n_resamples=b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replies", type=int, default=100_000)
    ap.add_argument("--per-dialogue", type=int, default=8)
    ap.add_argument("--criteria", type=int, default=4)
    ap.add_argument("--n-resamples", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-md", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args()

    from tutormetrics.psychometrics.judge_tables import JudgeOptions, judge_tables
    from tutormetrics.psychometrics.ratings import Ratings
    from tutormetrics.stats.bootstrap import single_threaded_blas

    result = C.header("judges")
    long, metrics = simulate(args.replies, args.per_dialogue, args.criteria)
    ratings = Ratings.clean(long)
    b = args.n_resamples
    print(f"{long.height:,} rating rows, {metrics['conversation_id'].n_unique():,} dialogues", file=sys.stderr)
    cluster = JudgeOptions(n_resamples=b, cluster_col="conversation_id")
    plain = JudgeOptions(n_resamples=b)
    runs = args.runs
    with single_threaded_blas():
        t_cluster, out, loads = C.timed(lambda: judge_tables(ratings, ["llm"], cluster), runs, "judge table, dialogue intervals")
        cpu0 = time.process_time()
        judge_tables(ratings, ["llm"], cluster)
        cpu_cluster = time.process_time() - cpu0
        t_plain, _, _ = C.timed(lambda: judge_tables(ratings, ["llm"], plain), runs, "judge table, reply intervals")
        t_kappa_only, _, _ = C.timed(lambda: _todays_draws(ratings, b), runs, "today's κ and mean-difference draws alone")
        diff = JudgeOptions(n_resamples=b, cluster_col="conversation_id", differences=True)
        two = Ratings.clean(pl.concat([long, long.filter(pl.col("rater") == "llm").with_columns(pl.lit("llm2").alias("rater"))]))
        t_diff, _, _ = C.timed(lambda: judge_tables(two, ["llm", "llm2"], diff), runs, "judge table + differences (2 judges)")
        lb = JudgeOptions(n_resamples=b, cluster_col="conversation_id", length_bias=True)
        t_lb, lb_out, _ = C.timed(lambda: judge_tables(ratings, ["llm"], lb, metrics=metrics), runs, "judge table + length bias")
    first = out.table.row(0, named=True)
    result.update(
        rows=long.height, replies=args.replies, per_dialogue=args.per_dialogue, criteria=args.criteria, n_resamples=b,
        cluster_s=t_cluster, cluster_cpu_s=cpu_cluster, plain_s=t_plain, kappa_only_s=t_kappa_only, differences_s=t_diff,
        length_bias_s=t_lb, loads=loads, kappa_ci_first_row=[first["kappa_ci_low"], first["kappa_ci_high"]],
        slope_first=lb_out.length_bias["slope"][0] if lb_out.length_bias is not None else None,
    )  # fmt: skip
    C.write_json("judges", result)
    k, d = args.criteria, metrics["conversation_id"].n_unique()
    rows = [
        [f"judge table, every interval over {d:,} dialogues (`--cluster-col`)", f"{C.median(t_cluster):.1f}"],
        ["… its process CPU time", f"{cpu_cluster:.1f}"],
        [f"judge table, new α/AC1/F1 intervals over {args.replies:,} replies, κ and mean difference as before (no `--cluster-col`)", f"{C.median(t_plain):.1f}"],
        ["today's κ and mean-difference draws alone (what the table spent on intervals before issue 33; with `--cluster-col` the dialogue draws replace them)", f"{C.median(t_kappa_only):.1f}"],
        ["judge table + `--differences`, two judges, dialogues", f"{C.median(t_diff):.1f}"],
        ["judge table + `--length-bias`, dialogues", f"{C.median(t_lb):.1f}"],
    ]
    body = (
        "## 22. Judges: dialogue intervals at scale (`benchmarks/bench_judges.py`, issue 33)\n\n"
        f"{args.replies:,} replies in dialogues of {args.per_dialogue} × {k} criteria (0/1/2), two humans and one judge "
        f"({long.height:,} rating rows), B = {b:,} resamples, median of {runs}, BLAS on one thread, ratings already cleaned "
        f"(`Ratings.clean`). Target: the judge table with `--cluster-col`, B = 2,000, on 100k replies × 4 criteria ≤ 60 s.\n\n"
        + C.md_table(rows, ["step", "seconds"])
        + "\n\nEvery interval of a criterion comes from one (B, G) draw of cluster counts times the (G, Q²) cluster sums "
        "of each row's confusion cells (`stats/cluster_resample.py`), so the cost is the draw plus one small matrix product "
        "per criterion, whatever the number of rows; with single replies as clusters the draws are counted per distinct "
        "confusion pattern instead (2× faster than the count matrix at G = 100,000). Without `--cluster-col` the new "
        f"reply-level α/AC1/F1 intervals add {C.median(t_plain) - C.median(t_kappa_only):.0f} s to the "
        f"{C.median(t_kappa_only):.0f} s of today's draws ({C.median(t_plain) / C.median(t_kappa_only):.2f}× in the same run).\n\n"
        + C.env_lines(result)
    )
    if not args.no_md:
        C.update_results_md("judges", body)
    print(body)


if __name__ == "__main__":
    main()
