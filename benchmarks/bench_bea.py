"""The BEA 2025 yardstick (``predictive.md`` §4): ``predict`` on MRBench V2 next to the shared task's leaderboard.

Grouped K-fold CV on MRBench V2 (dev-like data), **not** BEA 2025 test-set scores. Per metric set
(``lexical``; ``all`` when ``--metric-sets lexical,all``), the exchanges are scored in process (timed), grouped by
``raw_conversation_id`` of ``exchanges_meta.csv`` (the ``#1``/``#2`` duplicates share a history), and
``predict`` (default logistic model, B = 2,000 cluster resamples) runs on the four tracks for K = 5 and 10.
The table puts ``all`` and ``best_single`` beside the leaderboard's best and median and the majority floor;
``benchmarks/results/bea.png`` draws the exact macro-F1.

``--representation`` (issue 37) is its own section: on MRBench V2 and, when ``MRBENCH_V3_DEV`` names the raw BEA 2025
dev set (``mrbench_v3_devset.json``; skipped when unset), on V3 dev (converted with ``tutormetrics convert mrbench``),
each scored once with ``score --history-col prompt --metrics all --embeddings`` (timed; ``--work DIR`` keeps and
reuses the scored files), then ``predict`` with ``--features metrics|embedding|both`` × decision ``default``
(argmax), ``balanced`` (``--class-weight balanced``) and ``ordinal`` (``--decision ordinal``), K = 5, and the
incremental validity ``all-metrics`` of the representation with its cluster interval.

Usage:
    python benchmarks/bench_bea.py                      # lexical, K = 5 and 10
    python benchmarks/bench_bea.py --metric-sets lexical,all --scores-all scored_all.parquet
    MRBENCH_V3_DEV=/work/data/mrbench_v3_devset.json python benchmarks/bench_bea.py --representation --work /tmp/bea
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

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
    return f"{v:.3f}".replace("0.", ".", 1) if not math.isnan(v) else "–"


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


# --------------------------------------------------------------------------------------------------
# Issue 37: representation features and decision rules
# --------------------------------------------------------------------------------------------------

FEATURE_SETS = ("metrics", "embedding", "both")
#: decision label → (--class-weight, --decision)
DECISIONS = {"default": ("none", "argmax"), "balanced": ("balanced", "argmax"), "ordinal": ("none", "ordinal")}
REP_HEADLINE = (
    "Grouped 5-fold CV (dialogues kept whole) on MRBench V2 and on the BEA 2025 **dev** set (MRBench V3 dev), **not** "
    "BEA 2025 test-set scores: leaderboard systems were trained on all 2,476 dev replies and scored on 1,547 hidden "
    "test replies, while here each fold's model is fitted on 4/5 of the dev dialogues. CPU only, no LLM, no "
    "fine-tuning: the metrics of `score --history-col prompt --metrics all` and the encoder's own pooled vectors from "
    "the same pass (`--embeddings`), reduced to principal components inside each training fold."
)


def prepared(name: str, exchanges: Path, work: Path) -> tuple[Path, Path, float]:
    """``score --history-col prompt --metrics all --embeddings`` of ``exchanges`` into ``work/name`` (timed), or the
    files a previous run left there (time NaN)."""
    from tutormetrics.cli import main as cli

    folder = work / name
    metrics, emb = folder / "metrics.csv", folder / "embeddings.parquet"
    if metrics.exists() and emb.exists():
        return metrics, emb, float("nan")
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    code = cli(["score", str(exchanges), "--history-col", "prompt", "--metrics", "all", "--keep", "conversation_id",
                "--device", "cpu", "--no-progress", "-o", str(metrics), "--embeddings", str(emb), "--embedding-layers", "all"])  # fmt: skip
    if code != 0:
        raise SystemExit(f"scoring {exchanges} failed ({code})")
    return metrics, emb, time.perf_counter() - t0


def v3_exchanges(work: Path) -> Path | None:
    """The V3 dev exchanges converted from ``$MRBENCH_V3_DEV`` (``None`` when unset)."""
    raw = os.environ.get("MRBENCH_V3_DEV")
    if not raw:
        print("MRBENCH_V3_DEV is not set: V3 dev skipped", file=sys.stderr)
        return None
    from tutormetrics.cli import main as cli

    out = work / "v3dev_converted"
    if not (out / "exchanges.csv").exists() and cli(["convert", "mrbench", raw, "-o", str(out)]) != 0:
        raise SystemExit(f"converting {raw} failed")
    return out / "exchanges.csv"


def run_representation(metrics: Path, emb: Path, data: Path, features: str, decision: str, spec: str, components: int,
                       n_resamples: int) -> tuple[pl.DataFrame, float, float]:  # fmt: skip
    """``predict`` (in process) on the four tracks with one feature set, decision rule and representation; the table,
    the wall seconds and the process CPU seconds."""
    from tutormetrics.metrics.columns import read_manifest_columns
    from tutormetrics.validity.predict_study import RatingOptions, predict_study
    from tutormetrics.validity.predictive import PredictOptions
    from tutormetrics.validity.representation import load_representation

    t0, c0 = time.perf_counter(), os.times()
    frame = pl.read_csv(metrics, schema_overrides={"exchange_id": pl.String, "conversation_id": pl.String})
    groups = pl.read_csv(data / "exchanges_meta.csv", infer_schema=False).select("exchange_id", "raw_conversation_id")
    frame = frame.drop("conversation_id").join(groups, on="exchange_id", how="left", maintain_order="left")
    cols = [d.name for d in read_manifest_columns(metrics) or []]
    weight, rule = DECISIONS[decision]
    opts = PredictOptions(folds=5, n_resamples=n_resamples, features=features, class_weight=weight, decision=rule,
                          representation=spec, components=components)  # fmt: skip
    source = load_representation(emb, metrics, spec) if features != "metrics" else None
    res = predict_study(
        frame, group_col="raw_conversation_id", metrics_cols=cols,
        ratings=pl.read_csv(data / "ratings.csv", infer_schema=False).drop("label", "endorsed"),
        rating_options=RatingOptions(targets_from=list(TRACKS)), options=opts, representation=source,
    )  # fmt: skip
    c1 = os.times()
    return res.table, time.perf_counter() - t0, (c1.user - c0.user) + (c1.system - c0.system)


def cli_speed(metrics: Path, emb: Path, data: Path, work: Path, rounds: int) -> dict[str, list[list[float]]]:
    """``tutormetrics predict`` end to end (fresh processes, 4 tracks, defaults), ``--features metrics`` and ``both``
    alternating: ``[wall s, CPU s]`` of each run (grouping by ``conversation_id``, which is the dialogue in V3 dev)."""
    import resource
    import subprocess

    ratings = work / "v3_track_ratings.csv"
    pl.read_csv(data / "ratings.csv", infer_schema=False).filter(pl.col("criterion").is_in(list(TRACKS))).select(
        "exchange_id", "rater", "criterion", "score").write_csv(ratings)  # fmt: skip
    base = [sys.executable, "-m", "tutormetrics", "predict", str(metrics), "--ratings", str(ratings), "--group-col",
            "conversation_id"]  # fmt: skip
    runs: dict[str, list[list[float]]] = {"metrics": [], "both": []}
    for _ in range(rounds):
        for features in runs:
            extra = ["--features", "both", "--embeddings", str(emb)] if features == "both" else []
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([*base, "-o", str(work / f"speed_{features}.csv"), *extra], check=True, capture_output=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            runs[features].append([wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)])
    return runs


def representation_rows(table: pl.DataFrame, features: str) -> list[dict[str, Any]]:
    out = []
    for target, short in TRACKS.items():
        rec: dict[str, Any] = {"track": short}
        for measure in ("macro_f1", "accuracy", "macro_f1_lenient", "accuracy_lenient", "auc_lenient", "rho"):
            r = _est(table, target, "all", measure)
            rec[f"all:{measure}"] = (r["estimate"], r["ci_low"], r["ci_high"])
            if features != "metrics":
                d = _est(table, target, "all-metrics", measure)
                rec[f"all-metrics:{measure}"] = (d["estimate"], d["ci_low"], d["ci_high"])
        rec["n_features"] = int(_est(table, target, "all", "macro_f1")["n_features"])
        out.append(rec)
    return out


def _ci(v: tuple[float, float, float], signed: bool = False) -> str:
    sign = "+" if signed and v[0] >= 0 else ""
    return f"{sign}{_f(v[0])} [{_f(v[1])}, {_f(v[2])}]"


def _order(track: str) -> int:
    return list(TRACKS.values()).index(track)


def _main_table(ds: dict[str, Any]) -> str:
    rows = []
    for run in ds["runs"]:
        for rec in run["tracks"]:
            lb = LEADERBOARD[rec["track"]]
            a = rec["all:macro_f1"]
            rows.append([rec["track"], run["features"], run["decision"], _ci(a) + (" ✓" if a[0] >= lb["f1"][1] else ""),
                         _f(rec["all:accuracy"][0]), _f(rec["all:macro_f1_lenient"][0]), _f(rec["all:accuracy_lenient"][0]),
                         f"{_f(lb['f1'][0])} / {_f(lb['f1'][1])}", _f(lb["floor"][0])])  # fmt: skip
    rows.sort(key=lambda r: (_order(r[0]), FEATURE_SETS.index(r[1]), list(DECISIONS).index(r[2])))
    return C.md_table(rows, ["track", "features", "decision", "exact F1 [95% cluster CI]", "exact acc", "lenient F1",
                             "lenient acc", "LB exact F1 best / median", "majority floor"])  # fmt: skip


def _difference_table(runs: list[dict[str, Any]], label: str) -> str:
    rows = []
    for run in runs:
        if run["features"] != "both":
            continue
        for rec in run["tracks"]:
            rows.append([rec["track"], run.get(label, run["decision"]), _ci(rec["all-metrics:macro_f1"], True),
                         _ci(rec["all-metrics:macro_f1_lenient"], True), _ci(rec["all-metrics:auc_lenient"], True),
                         _ci(rec["all-metrics:rho"], True)])  # fmt: skip
    rows.sort(key=lambda r: _order(r[0]))
    return C.md_table(rows, ["track", label, "Δ exact F1 [CI]", "Δ lenient F1 [CI]", "Δ lenient AUC [CI]", "Δ ρ [CI]"])


def _variant_table(ds: dict[str, Any]) -> str:
    rows = []
    for run in ds["variants"]:
        for rec in run["tracks"]:
            lb = LEADERBOARD[rec["track"]]
            a, d = rec["all:macro_f1"], rec["all-metrics:macro_f1"]
            rows.append([rec["track"], f"`{run['variant']}`", run["decision"], _ci(a) + (" ✓" if a[0] >= lb["f1"][1] else ""),
                         _ci(d, True), _f(rec["all:macro_f1_lenient"][0]), _f(lb["f1"][1])])  # fmt: skip
    rows.sort(key=lambda r: _order(r[0]))
    return C.md_table(rows, ["track", "representation @ components", "decision", "exact F1 [CI]", "Δ exact F1 vs metrics [CI]",
                             "lenient F1", "LB median"])  # fmt: skip


def representation_md(result: dict[str, Any]) -> str:
    defaults = (f"Defaults: `--representation {result['representation']}` (the last layer's pooled response vector), "
                f"`--components {result['components']}`, logistic model (C = 1), B = {result['n_resamples']:,} cluster "
                "resamples over dialogues. ✓: exact macro-F1 at or above the BEA 2025 median. Decisions: `default` = most "
                "probable level; `balanced` = `--class-weight balanced`; `ordinal` = `--decision ordinal` (thresholds "
                "tuned by inner grouped CV on the training folds).\n")  # fmt: skip
    title = "## 17b. Representation features and decision rules in `predict` (`bench_bea.py --representation`, issue 37)"
    parts = [f"{title}\n\n{REP_HEADLINE}\n", defaults]
    for ds in result["datasets"]:
        timing = {(r["features"], r["decision"]): r for r in ds["runs"]}
        ratio_cpu = timing[("both", "default")]["predict_cpu_s"] / timing[("metrics", "default")]["predict_cpu_s"]
        time_rows = [[r["features"], r["decision"], f"{r['predict_s']:.1f}", f"{r['predict_cpu_s']:.1f}",
                      str(r["tracks"][0]["n_features"])] for r in ds["runs"]]  # fmt: skip
        score = "reused from an earlier run" if math.isnan(ds["score_s"]) else f"{ds['score_s']:.0f} s"
        parts.append(
            f"### {ds['name']}: grouped-CV numbers ({ds['n_rows']:,} replies, {ds['n_groups']} dialogues), not test-set numbers\n\n"
            f"Scoring (`--metrics all --history-col prompt --embeddings`, CPU, one encoder pass): {score}.\n\n"
            + _main_table(ds)
            + "\n\n**Incremental validity of the representation** (`all-metrics` under `--features both`: the same "
            "rows, the same cluster resamples):\n\n" + _difference_table(ds["runs"], "decision")
            + "\n\n**Other representations** (`--features both`; chosen after looking at these data, so read the best "
            "row as optimistic):\n\n" + _variant_table(ds)
            + "\n\n**predict time in process** (4 tracks, every model and interval; the machine is shared, so CPU "
            "seconds are the steadier figure):\n\n"
            + C.md_table(time_rows, ["features", "decision", "wall s", "CPU s", "columns of all"])
            + f"\n\n`--features both` / `--features metrics` (default decision), in process: **{ratio_cpu:.2f}×** CPU.\n"
        )  # fmt: skip
        if ds.get("cli"):
            med = {k: [C.median([r[i] for r in v]) for i in (0, 1)] for k, v in ds["cli"].items()}
            parts.append(
                f"End to end, `tutormetrics predict` in fresh processes (alternating, {len(ds['cli']['metrics'])} rounds, medians): "
                f"metrics {med['metrics'][0]:.1f} s wall / {med['metrics'][1]:.1f} s CPU, both {med['both'][0]:.1f} s / "
                f"{med['both'][1]:.1f} s: **{med['both'][1] / med['metrics'][1]:.2f}×** CPU, "
                f"{med['both'][0] / med['metrics'][0]:.2f}× wall (goal ≤ 2×).\n"
            )  # fmt: skip
    parts.append(C.env_lines(result))
    return "\n".join(parts)


def representation_main(args: Any) -> int:
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / "tutormetrics_bea"
    work.mkdir(parents=True, exist_ok=True)
    result = C.header(args.name)
    result.update(n_resamples=args.n_resamples, representation=args.representation_views, components=args.components, datasets=[])
    wanted = args.datasets.split(",")
    sets = [("MRBench V2", args.input, args.input.parent)] if "v2" in wanted else []
    v3 = v3_exchanges(work) if "v3" in wanted else None
    if v3 is not None:
        sets.append(("MRBench V3 dev (BEA 2025 dev set)", v3, v3.parent))
    for name, exchanges, data in sets:
        key = name.split()[1].lower()
        metrics, emb, score_s = prepared(key, exchanges, work)
        ds: dict[str, Any] = {"name": name, "score_s": score_s, "runs": [], "variants": []}
        for features in FEATURE_SETS:
            for decision in DECISIONS:
                table, wall, cpu = run_representation(metrics, emb, data, features, decision, args.representation_views,
                                                      args.components, args.n_resamples)  # fmt: skip
                ds["n_rows"], ds["n_groups"] = int(table["n"][0]), int(table["n_groups"][0])
                ds["runs"].append({"features": features, "decision": decision, "predict_s": wall, "predict_cpu_s": cpu,
                                   "tracks": representation_rows(table, features)})  # fmt: skip
                print(f"{name} {features} {decision}: predict {wall:.1f} s ({cpu:.1f} CPU s)", file=sys.stderr)
        for variant in filter(None, args.variants.split(";")):
            spec, _, k = variant.partition("@")
            for decision in ("default", "ordinal"):
                table, wall, cpu = run_representation(metrics, emb, data, "both", decision, spec, int(k or args.components),
                                                      args.n_resamples)  # fmt: skip
                ds["variants"].append({"variant": f"{spec} @ {k or args.components}", "decision": decision, "predict_s": wall,
                                       "predict_cpu_s": cpu, "tracks": representation_rows(table, "both")})  # fmt: skip
                print(f"{name} {variant} {decision}: predict {wall:.1f} s", file=sys.stderr)
        if key == "v3" and args.cli_rounds:
            ds["cli"] = cli_speed(metrics, emb, data, work, args.cli_rounds)
        result["datasets"].append(ds)
    return C.publish(args, result, representation_md(result))


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
    ap.add_argument("--representation", action="store_true", help="the issue-37 section: --features x decision rules on V2 and V3 dev")
    ap.add_argument("--work", type=Path, default=None, help="--representation: folder for the converted and scored files (reused)")
    ap.add_argument("--representation-views", default="response", help="predict --representation")
    ap.add_argument("--components", type=int, default=128, help="predict --components")
    ap.add_argument("--datasets", default="v2,v3", help="--representation: v2, v3 or both")
    ap.add_argument("--variants", default="response_l03;response_l04;response,response-prompt,response*prompt;"
                    "response,response-prev_student,response*prev_student;response@64",
                    help="--representation: further representations (SPEC[@COMPONENTS], ';'-separated), --features both")
    ap.add_argument("--cli-rounds", type=int, default=2, help="--representation: end-to-end predict rounds on V3 dev")
    args = ap.parse_args(argv)
    if args.representation:
        if args.name == "bea":
            args.name = "bea_representation"
        return representation_main(args)
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
