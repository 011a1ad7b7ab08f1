"""Build a study folder for the report tests and benchmark: real rows, hostile strings salted in.

``build_study`` runs ``tutormetrics run`` (lexical metrics, Fisher CIs: seconds, no encoder) on the given
exchanges and ratings, then adds the tables other commands write (per-tutor summary, paired comparisons,
a length-controlled correlation table) so every section of the report has data, and rebuilds the report.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

#: Replies that must show as text: markup, handlers, element breakouts, line separators, a template marker.
HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    '</textarea><b id="inj">injected</b>',
    "</script><script>window.__pwned = 3</script>",
    "<!-- <script>window.__pwned = 4</script>",
    "<svg onload=\"window.__pwned = 5\"></svg> & \u2028 \u2029 {{DATA}} {{SCRIPT}}",
    '<a href="https://evil.example/x">click</a> <iframe src="https://evil.example/"></iframe>',
    '=HYPERLINK("https://evil.example","x")',
]
HOSTILE_ID = '<img src=x onerror="window.__pwned = 6">::id'
HOSTILE_TUTOR = '<b id="inj">Tutor</b>'
MARKER = "zqxjmarker"


def salt(exchanges: pl.DataFrame, ratings: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, str]]:
    """Put each hostile string into one reply (and one into a prompt, an id and a tutor name).

    Returns the salted tables and ``{exchange_id: hostile reply}``.
    """
    ids = exchanges["exchange_id"].to_list()
    responses = exchanges["response"].to_list()
    prompts = exchanges["prompt"].to_list()
    salted: dict[str, str] = {}
    step = max(1, len(ids) // (len(HOSTILE) + 2))
    for k, text in enumerate(HOSTILE):
        i = 1 + k * step
        responses[i] = f"{text} {MARKER}{k} {responses[i]}"
        salted[ids[i]] = responses[i]
    prompts[0] = HOSTILE[0] + " " + prompts[0]
    old_id = ids[-1]
    ids[-1] = HOSTILE_ID
    out = exchanges.with_columns(
        pl.Series("exchange_id", ids), pl.Series("prompt", prompts), pl.Series("response", responses)
    )
    if "tutor" in out.columns:
        tutors = out["tutor"].to_list()
        tutors[2] = HOSTILE_TUTOR
        out = out.with_columns(pl.Series("tutor", tutors))
    ratings = ratings.with_columns(
        pl.when(pl.col("exchange_id") == old_id).then(pl.lit(HOSTILE_ID)).otherwise(pl.col("exchange_id")).alias("exchange_id")
    )
    return out, ratings, salted


def build_study(exchanges: pl.DataFrame, ratings: pl.DataFrame, root: Path, *, extras: bool = True) -> Path:
    """Write inputs under ``root/inputs``, run the pipeline into ``root/study`` and return that folder."""
    from tutormetrics.cli import main
    from tutormetrics.io.tables import read_table, write_table
    from tutormetrics.report import write_report
    from tutormetrics.stats.paired import compare_groups

    inputs = root / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    exchanges.write_csv(inputs / "exchanges.csv")
    ratings.write_csv(inputs / "ratings.csv")
    out = root / "study"
    code = main(["run", str(inputs / "exchanges.csv"), "--ratings", str(inputs / "ratings.csv"), "-m", "lexical",
                 "--ci", "fisher", "-o", str(out), "--no-progress"])
    assert code == 0
    if extras and "tutor" in exchanges.columns:
        metrics = read_table(out / "metrics.csv").join(
            exchanges.select("exchange_id", "tutor", "conversation_id"), on="exchange_id", how="left")
        cols = ["resp_words", "ttr", "jaccard_1", "flesch_reading_ease"]
        summary = (
            metrics.unpivot(index="tutor", on=cols, variable_name="variable")
            .group_by("tutor", "variable", maintain_order=True)
            .agg(n=pl.len(), mean=pl.col("value").mean(), sd=pl.col("value").std(), median=pl.col("value").median())
            .with_columns(ci_low=pl.col("mean") - 1.96 * pl.col("sd") / pl.col("n").sqrt(),
                          ci_high=pl.col("mean") + 1.96 * pl.col("sd") / pl.col("n").sqrt())
            .rename({"tutor": "group"})
        )
        write_table(summary, out / "summary.csv")
        top = metrics["tutor"].value_counts(sort=True)["tutor"].head(3).to_list()
        cmp = compare_groups(metrics.filter(pl.col("tutor").is_in(top)).unique(["conversation_id", "tutor"], keep="first", maintain_order=True), metric_cols=cols, group_col="tutor",
                             block_col="conversation_id", n_resamples=200)
        write_table(cmp, out / "compare.csv")
        corr = read_table(out / "correlations.csv")
        partial = corr.filter(pl.col("metric") != "resp_words").with_columns(
            (pl.col("rho") * 0.5).alias("rho"), pl.lit("resp_words").alias("control"))
        write_table(partial, out / "correlations_partial.csv")
        write_report(out)
    return out


#: A judge whose name is markup (shown as text in the judge sections).
HOSTILE_JUDGE = '<img src=x onerror="window.__pwned = 7">judge'


def judge_study(folder: Path, *, n_dialogues: int = 40, per_dialogue: int = 4, seed: int = 7) -> dict[str, pl.DataFrame]:
    """The judge tables a user writes with ``agree`` (``docs/guide/judges.md#commands``), built with the library into
    ``folder``: JUDGE.csv, LB.csv (length bias), DIFF.csv (two judges) and FLIPS.csv (two runs of one judge).

    Simulated replies in dialogues: quality q ~ N(0, 1) per reply plus a dialogue effect, lengths log-normal; two humans
    score round(1 + q + noise) on 0..2; judge ``gpt`` adds +0.8 per SD of log length (a planted length bias), the
    hostile-named judge has none; ``gpt@v2`` is ``gpt`` with a quarter of its verdicts one point higher.
    """
    import numpy as np

    from tutormetrics.io.tables import write_table
    from tutormetrics.psychometrics.judge_tables import (
        JudgeOptions,
        cluster_labels,
        judge_tables,
    )
    from tutormetrics.psychometrics.stability import stability_table

    rng = np.random.default_rng(seed)
    n = n_dialogues * per_dialogue
    conv = np.repeat([f"d{k:02d}" for k in range(n_dialogues)], per_dialogue)
    ids = [f"{c}:{i % per_dialogue}" for i, c in enumerate(conv)]
    words = np.round(np.exp(rng.normal(3.2, 0.7, n))).astype(int)
    z = (np.log1p(words) - np.log1p(words).mean()) / np.log1p(words).std(ddof=1)
    rows = []
    for criterion in ("accuracy", "</script>guidance"):
        q = rng.normal(0, 1, n) + np.repeat(rng.normal(0, 0.5, n_dialogues), per_dialogue)
        scores = {name: 1 + q + rng.normal(0, 0.5, n) for name in ("h1", "h2", HOSTILE_JUDGE)}
        scores["gpt"] = 1 + q + 0.8 * z + rng.normal(0, 0.5, n)
        bumped = rng.random(n) < 0.25
        scores["gpt@v2"] = scores["gpt"] + bumped
        for rater, values in scores.items():
            for i in range(n):
                rows.append({"exchange_id": ids[i], "conversation_id": conv[i], "rater": rater, "criterion": criterion,
                             "score": int(np.clip(np.round(values[i]), 0, 2))})
    ratings = pl.DataFrame(rows)
    metrics = pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "resp_words": words})
    judged = ratings.filter(pl.col("rater") != "gpt@v2")
    options = JudgeOptions(n_resamples=400, cluster_col="conversation_id", length_bias=True, differences=True)
    result = judge_tables(judged, ["gpt", HOSTILE_JUDGE], options, metrics=metrics)
    runs = ratings.filter(pl.col("rater").is_in(["gpt", "gpt@v2"]))
    flips = stability_table(runs, ("gpt", "gpt@v2"), cluster_labels=cluster_labels(runs, "conversation_id"))
    tables = {"JUDGE.csv": result.table, "LB.csv": result.length_bias, "DIFF.csv": result.differences, "FLIPS.csv": flips}
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        assert table is not None
        write_table(table, folder / name)
    return tables


def measurement_study(folder: Path, *, n: int = 300, seed: int = 1) -> dict[str, pl.DataFrame]:
    """The measurement tables ``theta --fit --separation --bias --dif`` writes (``docs/measurement.md#planted``), built
    with the library into ``folder`` (FIT.csv, SEP.csv, BIAS.csv, DIF.csv) from the measurement tests' planted
    simulation: rater r4 rates at random (underfit), r2 is severe on c5 (bias), c3 is 2 logits harder for ``human``
    (C-class DIF). Also THETA.csv and FACETS.csv, so the θ section and its Wright map are drawn."""
    import importlib.util
    import sys

    from tutormetrics.io.tables import write_table
    from tutormetrics.psychometrics.measurement import MeasurementOptions, measurement_report, prepare_like_fit
    from tutormetrics.psychometrics.mfrm import fit_mfrm

    fixtures = sys.modules.get("measurement_fixtures")
    if fixtures is None:  # the measurement tests' helper, outside this folder
        helper = Path(__file__).resolve().parents[1] / "unittests" / "psychometrics" / "measurement" / "measurement_fixtures.py"
        spec = importlib.util.spec_from_file_location("measurement_fixtures", helper)
        assert spec is not None and spec.loader is not None
        fixtures = sys.modules["measurement_fixtures"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fixtures)
    ratings, groups = fixtures.planted(seed, n=n)
    result = fit_mfrm(ratings)
    options = MeasurementOptions(fit=True, separation=True, bias=True, dif=True, dif_groups=groups, dif_col="tutor")
    report = measurement_report(result, prepare_like_fit(ratings, result), options)
    tables = {"FIT.csv": report.tables["fit"], "SEP.csv": report.tables["separation"], "BIAS.csv": report.tables["bias"],
              "DIF.csv": report.tables["dif"], "THETA.csv": result.theta_table(), "FACETS.csv": result.facets_table()}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_table(table, folder / name)
    return tables
