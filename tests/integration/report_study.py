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
