"""The tables and figures a validated ``run`` writes besides the scores (``docs/commands/run.md``): θ and the facets
(when estimated), rater agreement, the rating targets, and per level the correlation table, the ρ matrices and the
heatmaps; ``predictive.csv`` with ``--group-col``; θ's fit and separation tables, and its DIF by ``--group-col``
(``docs/measurement.md#commands``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from tutormetrics.progress import Log, Progress
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.runs.record import RunRecord
from tutormetrics.validity.correlate import ValidityResult
from tutormetrics.validity.study import StudyResult, ValidateOptions

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.metrics.columns import ColumnDescription


def write_theta(record: RunRecord, study: StudyResult, rated: Ratings, given: Sequence[pl.DataFrame]) -> list[pl.DataFrame]:
    """``theta.csv`` and ``facets.csv`` when θ was estimated here, and ``run.json``'s ``theta``; returns the θ target
    tables of the later levels (the given ones, or the estimated θ).

    Args:
        record: The run.
        study: The first level's study (its θ fit, when estimated).
        rated: The cleaned ratings (their id column and rater mode).
        given: The θ target tables read from ``--theta``.
    """
    if record.thetas:
        record.head["theta"] = {"source": ", ".join(map(str, record.thetas))}
        return list(given)
    fit = study.theta_fit
    if fit is None:
        return list(given)
    from tutormetrics.psychometrics.ratings import theta_to_targets

    record.write("theta", fit.theta_table())
    record.write("facets", fit.facets_table())
    record.head["theta"] = {"source": "mfrm", "reliability": fit.reliability, "converged": fit.converged,
                            "raters": "exchangeable" if rated.exchangeable else len(fit.raters), "warnings": study.warnings}  # fmt: skip
    return [theta_to_targets(fit.theta_table(), id_col=rated.id_col)]


def agreement(ratings: Ratings) -> pl.DataFrame | None:
    """Rater agreement per criterion when the ratings (a cleaned ``Ratings``) are long with two or more raters."""
    if not ratings.is_long or (ratings.n_raters < 2 and not ratings.exchangeable):
        return None
    from tutormetrics.psychometrics.agreement import agreement_table

    return agreement_table(ratings, **ratings.columns(), exchangeable=ratings.exchangeable)


def write_agreement(record: RunRecord, rated: Ratings, study: StudyResult, log: Log) -> None:
    """``agreement.csv``; slot-like rater labels are warned about here when θ's step did not already.

    Args:
        record: The run (its files and warnings).
        rated: The cleaned ratings.
        study: The first level's study (whether θ was estimated, which warns itself).
        log: Where the warning goes.
    """
    table = agreement(rated)
    if table is None:
        return
    if not rated.exchangeable and study.theta_fit is None:
        from tutormetrics.psychometrics.exchangeable import slot_warning

        slot = slot_warning(rated.long) if rated.long is not None else None
        if slot:
            log(slot)
            record.warnings.append(slot)
    record.write("agreement", table)


def _heatmaps(
    record: RunRecord, result: ValidityResult, kinds: Sequence[tuple[str, pl.DataFrame]],
    columns: Sequence[ColumnDescription], prefix: str,
) -> None:  # fmt: skip
    """The heatmap of each kind (raw; partial with controls) in each format, rows grouped by the column descriptions."""
    from tutormetrics.validity.heatmap import ceiling_note, plot_heatmap

    note = ceiling_note(result.joined, [c for c in result.target_cols if c != "theta"])
    width = min(7.0, max(3.5, 1.6 + 0.55 * len(result.target_cols)))  # docs/guide/paper.md#figures: at most 7 in
    for suffix, part in kinds:
        for fmt in record.validate_options.figure_formats:
            path = record.path(f"{prefix}heatmap{suffix}.{fmt}")
            plot_heatmap(part, path, columns=columns, note=note or None, width_in=width)
            record.files[f"{prefix}heatmap{suffix}_{fmt}"] = str(path)


def write_level(
    record: RunRecord, result: ValidityResult, prefix: str, vo: ValidateOptions, columns: Sequence[ColumnDescription],
    log: Log,
) -> None:  # fmt: skip
    """``{prefix}correlations.csv``, ``{prefix}rho_matrix[_partial].csv`` and ``{prefix}heatmap[_partial].*``.

    With controls the correlation table holds the raw rows then the partial rows; the wide matrices and the heatmaps
    come one per kind: raw, and ``*_partial``.

    Args:
        record: The run.
        result: The level's correlations.
        prefix: The level's file prefix (``""`` or ``turns_``).
        vo: The options the level was validated with (its ``control``).
        columns: The level's column descriptions (the heatmap's row groups).
        log: Where the join summary goes.
    """
    from tutormetrics.validity.correlate import rho_matrix, split_by_control

    log("      " + result.report.summary().replace("\n", "\n      "))
    record.write(f"{prefix}correlations", result.table)
    parts = split_by_control(result.table)
    kinds = [("", parts[""])] + ([("_partial", parts[",".join(vo.control)])] if vo.control else [])
    for suffix, part in kinds:
        record.write(f"{prefix}rho_matrix{suffix}", rho_matrix(part))
    _heatmaps(record, result, kinds, columns, prefix)


def write_predictive(
    record: RunRecord, frame: pl.DataFrame, ratings: Ratings, theta: Sequence[pl.DataFrame], group_col: str,
    id_col: str, vo: ValidateOptions, columns: Sequence[Any], log: Log, progress: Progress | None = None,
) -> None:  # fmt: skip
    """``predictive.csv``: ``predict`` with the study's ratings, θ, controls and seed (defaults otherwise).

    Args:
        record: The run.
        frame: The first level's scored frame.
        ratings: The study's ratings, cleaned once (``predict`` takes them as they are).
        theta: The θ target tables.
        group_col: The column whose groups the folds keep whole.
        id_col: The id the ratings are keyed by.
        vo: The first level's options (ratings columns and scale, ``control``, ``seed``, ``n_min``).
        columns: The Scorer's column descriptions (their families).
        log: Where notes go.
        progress: Where the folds fitted are counted (the run's steps).
    """
    from tutormetrics.metrics.columns import column_families
    from tutormetrics.stats.group_columns import group_columns, with_group_label
    from tutormetrics.validity.predict_study import predict_study
    from tutormetrics.validity.predictive import PredictOptions

    group_cols = group_columns(group_col)
    if len(group_cols) > 1:  # folds keep each combination whole (docs/guide/paper.md#group-col)
        frame, group_col = with_group_label(frame, group_cols, source="metrics")
    families = column_families(columns)
    metric_cols = [c for c in families if c in frame.columns and c not in group_cols] or None
    result = predict_study(
        frame, group_col=group_col, ratings=ratings, theta=theta, id_col=id_col, metrics_cols=metric_cols,
        controls=vo.control, rating_options=vo, options=PredictOptions(seed=vo.seed, n_min=vo.n_min),
        families=dict(families), ratings_source="ratings", log=log, progress=progress,
    )  # fmt: skip
    record.write("predictive", result.table)


def write_measurement(
    record: RunRecord, study: StudyResult, rated: Ratings, frame: pl.DataFrame | None, group_col: str | None, log: Log,
) -> None:  # fmt: skip
    """``fit.csv`` and ``separation.csv`` of the θ estimated here, and ``dif.csv`` of the criteria across
    ``group_col`` (a column of the scored ``frame``, one value per exchange); their stderr lines and the scale
    warnings (``docs/measurement.md#commands``, ``docs/measurement.md#scale-warnings``). Nothing when θ was given.

    Args:
        record: The run (its files and warnings).
        study: The first level's study (its θ fit).
        rated: The cleaned ratings θ was fitted on.
        frame: The first level's scored frame (the groups' source), or ``None``.
        group_col: ``--group-col``: DIF of the criteria across its levels.
        log: Where the lines go.
    """
    fit = study.theta_fit
    if fit is None:
        return
    from tutormetrics.psychometrics.exchangeable import theta_ratings
    from tutormetrics.psychometrics.measurement import MeasurementOptions, measurement_report, prepare_like_fit

    fitted = theta_ratings(rated)[0]
    groups = None
    if group_col is not None and frame is not None and group_col in frame.columns:
        groups = frame.select(rated.id_col, group_col).unique(maintain_order=True)
    options = MeasurementOptions(fit=True, separation=True, dif=groups is not None, dif_groups=groups,
                                 dif_col=group_col if groups is not None else None, exchangeable=rated.exchangeable)  # fmt: skip
    report = measurement_report(fit, prepare_like_fit(fitted, fit, **fitted.columns()), options)
    for name in ("fit", "separation", "dif"):
        if name in report.tables:
            record.write(name, report.tables[name])
    for line in [*report.warnings, *report.lines, *report.notes]:
        log(f"      {line}")
    record.warnings.extend(report.warnings)
