"""The BEA 2025 yardstick (``predictive.md`` §4): ``predict`` on MRBench V2 next to the shared task's leaderboard.

Grouped K-fold CV on MRBench V2 (dev-like data), **not** BEA 2025 test-set scores. Per metric set
(``lexical``; ``all`` when ``--metric-sets lexical,all``), the exchanges are scored in process (timed), grouped by
``raw_conversation_id`` of ``exchanges_meta.csv`` (the ``#1``/``#2`` duplicates share a history), and
``predict`` (default logistic model, B = 2,000 cluster resamples) runs on the four tracks for K = 5 and 10.
The table puts ``all`` and ``best_single`` beside the leaderboard's best and median and the majority floor;
``benchmarks/results/bea.png`` draws the exact macro-F1.

Usage:
    python benchmarks/bench_bea.py                      # lexical, K = 5 and 10
    python benchmarks/bench_bea.py --metric-sets lexical,all --scores-all scored_all.parquet
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

TRACKS = {
    "mistake_identification": "MI",
    "mistake_location": "ML",
    "providing_guidance": "PG",
    "actionability": "AC",
}
#: BEA 2025 final leaderboards (sig-edu.org/sharedtask/2025) as ``predictive.md`` §4 gives them:
#: (exact F1 best, median), (exact acc best, median), (lenient F1 best, median), (lenient acc best, median), floor (exact, lenient F1).
LEADERBOARD: dict[str, dict[str, tuple[float, float]]] = {
    "MI": {"f1": (.7181, .6542), "acc": (.8798, .8484), "f1_len": (.9185, .8765), "acc_len": (.9541, .9302), "floor": (.292, .460)},
    "ML": {"f1": (.5983, .5201), "acc": (.7679, .6891), "f1_len": (.8404, .7407), "acc_len": (.8630, .7815), "floor": (.256, .416)},
    "PG": {"f1": (.5834, .5011), "acc": (.7052, .6102), "f1_len": (.7860, .7058), "acc_len": (.8222, .7741), "floor": (.242, .436)},
    "AC": {"f1": (.7085, .6439), "acc": (.7557, .6926), "f1_len": (.8659, .8166), "acc_len": (.8940, .8520), "floor": (.231, .404)},
}
HEADLINE = (
    "Grouped 5-fold CV on MRBench V2 (dev-like data), **not** BEA 2025 test-set scores. Leaderboard systems were "
    "trained on all 2,476 dev replies and scored on 1,547 hidden test replies; best secondary metrics may come from "
    "other runs. This places the cheap metrics; it does not rank them."
)


def scored(metric_set: str, exchanges: Path, scores: Path | None) -> tuple[pl.DataFrame, float]:
    """Scored MRBench table (in process) and the scoring seconds (NaN when read from ``scores``)."""
    if scores is not None:
        frame = pl.read_parquet(scores) if scores.suffix == ".parquet" else pl.read_csv(scores, schema_overrides={"exchange_id": pl.String})
        return frame, float("nan")
    from tutormetrics.encoders.hf import EncoderConfig
    from tutormetrics.engine import Scorer

    ids, prompts, responses = C.read_mrbench(exchanges)
    t0 = time.perf_counter()
    s = Scorer(metric_set, encoder=EncoderConfig(device="cpu"), progress=False)
    frame = s.score(ids, prompts, responses)
    return frame, time.perf_counter() - t0


def run_predict(frame: pl.DataFrame, ratings: Path, meta: Path, folds: int, n_resamples: int) -> tuple[pl.DataFrame, float]:
    from tutormetrics.validity.predict_study import RatingOptions, predict_study
    from tutormetrics.validity.predictive import PredictOptions

    groups = pl.read_csv(meta, infer_schema=False).select("exchange_id", "raw_conversation_id")
    frame = frame.join(groups, on="exchange_id", how="left", maintain_order="left")
    t0 = time.perf_counter()
    res = predict_study(
        frame, group_col="raw_conversation_id", ratings=pl.read_csv(ratings, infer_schema=False).drop("label", "endorsed"),
        rating_options=RatingOptions(targets_from=list(TRACKS)), options=PredictOptions(folds=folds, n_resamples=n_resamples),
    )  # fmt: skip
    return res.table, time.perf_counter() - t0


def _est(table: pl.DataFrame, target: str, model: str, measure: str) -> dict[str, Any]:
    row = table.filter((pl.col("target") == target) & (pl.col("model") == model) & (pl.col("measure") == measure))
    return row.row(0, named=True)


def _f(v: float) -> str:
    return f"{v:.3f}".replace("0.", ".", 1) if v == v else "–"


def track_rows(table: pl.DataFrame) -> list[dict[str, Any]]:
    out = []
    for target, short in TRACKS.items():
        rec: dict[str, Any] = {"track": short}
        for model in ("all", "best_single", "all-best_single"):
            for measure in ("macro_f1", "accuracy", "macro_f1_lenient", "accuracy_lenient"):
                r = _est(table, target, model, measure)
                rec[f"{model}:{measure}"] = (r["estimate"], r["ci_low"], r["ci_high"])
        out.append(rec)
    return out


def md_body(result: dict[str, Any]) -> str:
    parts = [f"## 14. The BEA 2025 yardstick (`bench_bea.py`)\n\n{HEADLINE}\n"]
    for ms in result["metric_sets"]:
        for run in ms["runs"]:
            rows = []
            for rec in run["tracks"]:
                lb = LEADERBOARD[rec["track"]]
                a = rec["all:macro_f1"]
                d = rec["all-best_single:macro_f1"]
                rows.append([
                    rec["track"], f"{_f(a[0])} [{_f(a[1])}, {_f(a[2])}]", _f(rec["best_single:macro_f1"][0]),
                    f"+{_f(d[0])} [{_f(d[1])}, {_f(d[2])}]" if d[0] >= 0 else f"{_f(d[0])} [{_f(d[1])}, {_f(d[2])}]",
                    f"{_f(rec['all:accuracy'][0])} / {_f(rec['best_single:accuracy'][0])}",
                    f"{_f(rec['all:macro_f1_lenient'][0])} / {_f(rec['best_single:macro_f1_lenient'][0])}",
                    f"{_f(rec['all:accuracy_lenient'][0])} / {_f(rec['best_single:accuracy_lenient'][0])}",
                    f"{_f(lb['f1'][0])} / {_f(lb['f1'][1])}", f"{_f(lb['acc'][0])} / {_f(lb['acc'][1])}",
                    f"{_f(lb['f1_len'][0])} / {_f(lb['f1_len'][1])}", f"{_f(lb['acc_len'][0])} / {_f(lb['acc_len'][1])}",
                    f"{_f(lb['floor'][0])} / {_f(lb['floor'][1])}",
                ])  # fmt: skip
            head = ["track", "all exact F1 [95% cluster CI]", "best_single exact F1", "all − best_single [CI]",
                    "exact acc all / best", "lenient F1 all / best", "lenient acc all / best",
                    "LB exact F1 best / median", "LB exact acc best / median", "LB lenient F1 best / median",
                    "LB lenient acc best / median", "majority floor exact / lenient F1"]  # fmt: skip
            parts.append(
                f"### `--metrics {ms['metric_set']}` ({ms['n_features']} features), K = {run['folds']}: "
                f"grouped-CV numbers on MRBench V2, not test-set numbers\n\n"
                f"Scoring {ms['score_s']:.1f} s (in process, CPU); predict {run['predict_s']:.1f} s "
                f"(4 tracks, all + best_single, B = {result['n_resamples']:,} cluster resamples over "
                f"{run['n_groups']} dialogues).\n\n" + C.md_table(rows, head) + "\n"
            )  # fmt: skip
    parts.append("![Exact macro-F1 per track: grouped-CV predict vs the BEA 2025 leaderboard](results/bea.png)\n")
    parts.append(C.env_lines(result))
    return "\n".join(parts)


def figure(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tracks = list(TRACKS.values())
    fig, ax = plt.subplots(figsize=(7, 4.0))
    xs = range(len(tracks))
    lb_best = [LEADERBOARD[t]["f1"][0] for t in tracks]
    lb_med = [LEADERBOARD[t]["f1"][1] for t in tracks]
    floor = [LEADERBOARD[t]["floor"][0] for t in tracks]
    ax.scatter(xs, lb_best, marker="^", color="black", label="leaderboard best (test set)", zorder=3)
    ax.scatter(xs, lb_med, marker="_", s=300, color="black", label="leaderboard median (test set)", zorder=3)
    ax.scatter(xs, floor, marker="x", color="grey", label="majority floor", zorder=3)
    offsets = [-0.18, 0.0, 0.18]
    colors = ["tab:blue", "tab:orange", "tab:green"]
    k = 0
    for ms in result["metric_sets"]:
        run = next(r for r in ms["runs"] if r["folds"] == 5)
        a = [rec["all:macro_f1"] for rec in run["tracks"]]
        b = [rec["best_single:macro_f1"][0] for rec in run["tracks"]]
        x = [i + offsets[k] for i in xs]
        ax.errorbar(x, [v[0] for v in a], yerr=[[v[0] - v[1] for v in a], [v[2] - v[0] for v in a]], fmt="o",
                    color=colors[k], capsize=3, label=f"predict all ({ms['metric_set']}), 95% cluster CI")  # fmt: skip
        ax.scatter(x, b, marker="s", facecolors="none", edgecolors=colors[k], label=f"best single ({ms['metric_set']})")
        k += 1
    ax.set_xticks(list(xs), tracks)
    ax.set_ylabel("exact macro-F1")
    ax.set_ylim(0.15, 0.8)
    ax.set_title("Grouped 5-fold CV on MRBench V2 (not BEA test-set scores)", fontsize=9)
    ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--ratings", type=Path, default=C.DEFAULT_RATINGS)
    ap.add_argument("--meta", type=Path, default=C.DEFAULT_MRBENCH.with_name("exchanges_meta.csv"))
    ap.add_argument("--metric-sets", default="lexical")
    ap.add_argument("--scores-all", type=Path, default=None, help="a scored table of --input with --metrics all")
    ap.add_argument("--folds", default="5,10")
    ap.add_argument("--n-resamples", type=int, default=2000)
    ap.add_argument("--name", default="bea")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="redraw results/bea.png from results/NAME.json")
    args = ap.parse_args(argv)
    if args.figure_only:
        import json

        figure(json.loads((args.output or C.RESULTS_DIR / f"{args.name}.json").read_text()), C.RESULTS_DIR / "bea.png")
        return 0
    result = C.header(args.name)
    result["n_resamples"] = args.n_resamples
    result["metric_sets"] = []
    for metric_set in args.metric_sets.split(","):
        frame, score_s = scored(metric_set, args.input, args.scores_all if metric_set == "all" else None)
        ms: dict[str, Any] = {"metric_set": metric_set, "score_s": score_s, "n_features": 0, "runs": []}
        for k in (int(v) for v in args.folds.split(",")):
            table, predict_s = run_predict(frame, args.ratings, args.meta, k, args.n_resamples)
            n_groups = int(table["n_groups"][0])
            ms["n_features"] = int(table.filter(pl.col("model") == "all")["n_features"][0])
            ms["runs"].append({"folds": k, "predict_s": predict_s, "n_groups": n_groups, "tracks": track_rows(table)})
            print(f"{metric_set} K={k}: predict {predict_s:.1f} s", file=sys.stderr)
        result["metric_sets"].append(ms)
    figure(result, C.RESULTS_DIR / "bea.png")
    return C.publish(args, result, md_body(result))


if __name__ == "__main__":
    raise SystemExit(main())
