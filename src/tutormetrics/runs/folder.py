"""``run``: score → (θ) → agreement → Spearman table → heatmap → report, into one folder (``docs/commands/run.md``).

The levels come from :mod:`~tutormetrics.runs.levels`, the study from
:func:`~tutormetrics.validity.study.validate_metrics` (the ratings cleaned once: θ, agreement and the targets share
them), the tables from :mod:`~tutormetrics.runs.outputs`, and every run — validated or, without ratings, scored and
reported only — ends in :func:`~tutormetrics.runs.record.close_run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.paths import check_outputs
from tutormetrics.progress import Log, NoProgress, Progress, RunProgress, quiet, step_progress
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.runs.layout import run_files
from tutormetrics.runs.levels import Level, dialogue_levels, dialogue_ratings_key, level_metric_cols, score_levels
from tutormetrics.runs.outputs import write_agreement, write_level, write_measurement, write_predictive, write_theta
from tutormetrics.runs.record import RunRecord, close_run
from tutormetrics.stats.group_columns import group_columns
from tutormetrics.validity.study import StudyResult, ValidateOptions, validate_metrics


def check_ratings_path(ratings: Path | None, example: bool) -> None:
    """``run`` needs ratings unless it runs the bundled example."""
    if ratings is None and not example:
        raise InputSchemaError("run needs ratings", hint="pass --ratings RATINGS, or --example for the bundled data")


def _start(
    exchanges: Path, ratings: Path, outdir: Path, score_options: ScoreOptions, vo: ValidateOptions,
    theta: Path | Sequence[Path] | None, dialogue: Any,
) -> RunRecord:  # fmt: skip
    """Check the inputs, the engine and the outputs (nothing a user has is overwritten) before any work."""
    thetas = [Path(theta)] if isinstance(theta, (str, Path)) else [Path(t) for t in theta or []]
    check_outputs([exchanges, ratings, *thetas], [outdir / name for name in run_files(vo.figure_formats)])
    if vo.theta_pv and thetas:  # docs/measurement.md#theta-pv: the PVs are drawn from the fit estimated here
        raise ConfigError("run --theta-pv needs θ estimated here", hint="drop --theta, or use validate --theta T --facets F --theta-pv M")
    if vo.theta_pv and (vo.theta_pv < 2 or vo.pv_condition not in ("metric", "none")):
        from tutormetrics.validity.theta_pv import check_theta_pv

        check_theta_pv(None, False, False, vo)  # the draws' and the condition's errors
    if score_options.engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {score_options.engine!r}", hint="use --engine local or --engine ray")
    if dialogue is not None and score_options.engine != "local":
        raise ConfigError("--dialogue runs on the local engine only", hint="drop --engine ray")
    outdir.mkdir(parents=True, exist_ok=True)
    return RunRecord(outdir, exchanges, ratings, thetas, score_options, vo)


def _scores_only(record: RunRecord, dialogue: Any, log: Log, history: Any) -> dict[str, Any]:
    """``run`` with a ratings table that has a header and no rows (Bridge ships none): score, then ``run.json`` and the
    report of the scores; nothing is validated (``"validated": false``), and stderr says so."""
    log(f"note: {record.ratings} holds no ratings: scoring and the report only, nothing to validate "
        "(compare groups with `tutormetrics compare --group-col ... --block-col ...`)")  # fmt: skip
    log("[1/2] scoring")
    score_levels(record, dialogue, record.score_options.id_column, log, history)
    log("[2/2] writing the report")
    record.head["validated"] = False
    with _steps(record.score_options) as steps:
        steps.detail("report")
        return close_run(record, log)


def _steps(options: ScoreOptions) -> RunProgress | NoProgress:
    """The progress of the steps after scoring (θ, correlations, agreement, tables, report), shown as the scoring
    run's is (``--progress``, ``--progress-every``; ``docs/design/scoring.md#progress``)."""
    return step_progress("run", progress=options.progress, every=options.progress_every)


def _validate_levels(
    record: RunRecord, levels: list[Level], rated: Ratings, id_col: str, first_vo: ValidateOptions,
    metric_cols: Sequence[str] | None, log: Log, steps: Progress,
) -> tuple[StudyResult, list[pl.DataFrame]]:  # fmt: skip
    """θ, agreement, the targets and every level's tables (each step named in ``steps`` while it runs); returns the
    first level's study and its θ targets."""
    from tutormetrics.ids import read_keyed
    from tutormetrics.psychometrics.ratings import theta_to_targets

    vo, key = record.validate_options, record.score_options.id_key
    given = [theta_to_targets(read_keyed(path, key, drop_parts=True), id_col=id_col) for path in record.thetas]
    log("[2/4] θ and agreement")
    first = levels[0]
    study = validate_metrics(
        first.frame, ratings=rated, theta=given, options=first_vo, id_col=id_col,
        metric_cols=level_metric_cols(metric_cols, first.frame, record.head) or first.metric_cols,
        ratings_source=str(record.ratings), log=log, progress=steps,
    )  # fmt: skip
    theta_tables = write_theta(record, study, rated, given)
    record.warnings.extend(study.warnings)
    steps.detail("agreement")
    write_agreement(record, rated, study, log)
    if study.targets is not None:  # what the report shows per exchange: the targets as correlated
        record.write("targets", study.targets)
    result = study.validity
    log("[3/4] correlating metrics with ratings" + (" and θ" if "theta" in result.target_cols else ""))
    log("[4/4] writing the tables and drawing the heatmap" + ("s (raw and controlled)" if vo.control else ""))
    steps.detail("tables and heatmaps")
    write_level(record, result, "", first_vo, first.columns, log)
    for level in levels[1:]:  # the turn level of conversation ratings
        log(f"      {level.prefix.rstrip('_')} level (each turn inherits its conversation's rating; intervals over {vo.cluster_col})")
        turns = validate_metrics(
            level.frame, ratings=rated, theta=theta_tables, options=_no_theta(vo), id_col=id_col,
            metric_cols=[c for c in metric_cols or () if c in level.frame.columns] or level.metric_cols,
            ratings_source=str(record.ratings), log=log, progress=steps,
        )  # fmt: skip
        steps.detail(f"tables and heatmaps ({level.prefix.rstrip('_')} level)")
        write_level(record, turns.validity, level.prefix, vo, level.columns, log)
    return study, theta_tables


def _no_theta(vo: ValidateOptions) -> ValidateOptions:
    from dataclasses import replace

    return replace(vo, estimate_theta=False, theta_pv=0)


def run_pipeline(
    exchanges: Path,
    ratings: Path,
    outdir: Path,
    *,
    score_options: ScoreOptions,
    validate_options: ValidateOptions,
    theta: Path | Sequence[Path] | None = None,
    dialogue: Any = None,
    metric_cols: Sequence[str] | None = None,
    top: int = 5,
    group_col: str | None = None,
    log: Log = quiet,
    history: Any = None,
) -> dict[str, Any]:
    """Score → (θ) → agreement → Spearman table → heatmap → report into ``outdir``; returns ``run.json``'s dict.

    Resumable: the scoring step's verified checkpoint (``metrics.csv.partial/``, ``turns.csv.partial/``) is kept until
    the whole run has finished, so rerunning the same command after a failure in a later step reuses every scored
    chunk and redoes only the later steps, byte-identical to an uninterrupted run. With a dialogue, the ratings are
    keyed by ``exchange_id`` (``"{conversation_id}:{turn}"``: the turns are validated) or by ``conversation_id``
    (the conversations, and the turns with ``--cluster-col``: :mod:`~tutormetrics.runs.levels`).

    Args:
        exchanges: The input: exchanges, or conversations with ``dialogue``.
        ratings: The ratings table (a header without rows: score and report only).
        outdir: The run folder.
        score_options: How the input is scored.
        validate_options: How it is validated.
        theta: θ table(s) (the first is ``theta``, then ``theta2``, ...); none: θ estimated from long ratings.
        dialogue: A :class:`~tutormetrics.dialogue.file_scoring.DialogueOptions`: the input holds conversations.
        metric_cols: Restricts the metric columns of the first level (``--metrics-cols``).
        top: How many of the strongest correlations are logged.
        group_col: Also ``predictive.csv``: grouped cross-validated prediction (``docs/commands/predict.md``).
        log: Where progress and notes go.
        history: A ``DialogueOptions`` with ``history_col``: each row's response scored after its history, one row
            per exchange in ``metrics.csv``.

    Returns:
        ``run.json``'s dict; its ``warnings`` are the ratings', the scoring run's and θ's (``run --strict`` exits 1 on
        them).
    """
    from tutormetrics.ids import IdKey, read_keyed

    vo = validate_options
    record = _start(exchanges, ratings, outdir, score_options, vo, theta, dialogue)
    id_col = score_options.id_column
    # a dialogue's ratings are keyed by its TURNS or CONV ids ("<conversation>:<turn>", conversation_id)
    ratings_key = score_options.id_key if dialogue is None else IdKey()
    raw_ratings = read_keyed(ratings, ratings_key, id_columns=("exchange_id", "conversation_id", id_col), drop_parts=True)
    if raw_ratings.height == 0 and not record.thetas:  # a release without ratings (Bridge): the scores and the report
        return _scores_only(record, dialogue, log, history)
    if dialogue is not None:
        id_col = dialogue_ratings_key(raw_ratings, id_col, str(ratings))
    rated = vo.clean_ratings(raw_ratings, id_col=id_col, source=str(ratings), log=log, command="run")  # once: θ, agreement, targets
    record.head["recode"] = [dict(r) for r in rated.recoded]  # docs/guide/paper.md#recode
    record.warnings.extend(rated.warnings)  # a negative score that is a category (docs/design/studies.md#na-codes)
    log("[1/4] scoring")
    levels = score_levels(record, dialogue, id_col, log, history)
    first_vo = vo
    if dialogue is not None:  # the level of validation
        levels, first_vo, level_summary = dialogue_levels(levels, id_col, vo, log, group_columns(group_col))
        record.head.update(level_summary)
    with _steps(score_options) as steps:  # after scoring: its own progress lines are done
        study, theta_tables = _validate_levels(record, levels, rated, id_col, first_vo, metric_cols, log, steps)
        steps.detail("measurement tables")
        write_measurement(record, study, rated, levels[0].frame, group_col, log)
        if study.theta_pv is not None:  # docs/measurement.md#theta-pv
            record.head["theta_pv"] = {"draws": vo.theta_pv, "seed": vo.seed, "condition": vo.pv_condition,
                                       "n_metrics": study.theta_pv.height}  # fmt: skip
        if group_col is not None:  # grouped cross-validated predictive validity
            log(f"      predictive validity, grouped by {group_col}")
            write_predictive(record, levels[0].frame, rated, theta_tables, group_col, id_col, first_vo, levels[0].columns, log,
                             steps.child(None, "predict", "fits"))  # fmt: skip
        result = study.validity
        if top:
            from tutormetrics.validity.correlate import summarize_correlations

            log(summarize_correlations(result.table, top=top))
        validity = {"join": result.report.summary(), "n_metrics": len(result.metric_cols), "targets": result.target_cols}
        steps.detail("report")
        return close_run(record, log, validity)
