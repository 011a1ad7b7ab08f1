"""``compare`` as one call (``docs/commands/compare.md``): a metrics table in, the comparison table (with each
metric's family), the optional bias summary and the stderr summary out.

Example:
    >>> import polars as pl
    >>> df = pl.DataFrame({"tutor": ["a", "b"] * 20, "conversation_id": [i // 2 for i in range(40)],
    ...                    "ttr": [0.1 * (i % 7) + (i % 2) for i in range(40)]})
    >>> study = compare_study(df, CompareOptions(n_resamples=0))
    >>> study.table.select("metric", "metric_family", "group_a", "group_b", "n").rows()
    [('ttr', 'lexical_diversity', 'a', 'b', 20)]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

import polars as pl

from tutormetrics.frames import frame_inputs
from tutormetrics.metrics.columns import NOT_METRICS, ColumnDescription, describe_frame, metric_names
from tutormetrics.progress import Log, quiet
from tutormetrics.stats.compare_options import CompareOptions
from tutormetrics.stats.group_columns import group_columns, with_group_label
from tutormetrics.stats.paired import compare_groups, k_of_m_lines
from tutormetrics.stats.studies import bias_summary

__all__ = ["CompareStudy", "compare_study", "metric_columns"]


@dataclass(frozen=True)
class CompareStudy:
    """What ``compare`` writes: ``table`` (Friedman and pairwise rows), ``summary`` (the bias summary, when asked
    for), ``k_of_m`` (stderr lines after the table) and ``closing`` (the last stderr line)."""

    table: pl.DataFrame
    summary: pl.DataFrame | None
    k_of_m: tuple[str, ...]
    closing: str


def metric_columns(frame: pl.DataFrame, options: CompareOptions, described: list[ColumnDescription]) -> list[str] | None:
    """``options.metrics_cols``, else the described metric columns (manifest, else the one fallback) but the
    pairing, subset and count columns; ``None`` lets :func:`~tutormetrics.stats.paired.compare_groups` choose.

    Args:
        frame: the table being compared.
        options: the compare options (``metrics_cols`` and the pairing, subset and count columns).
        described: column descriptions of the metrics file (from its manifest, else the fallback).
    """
    if options.metrics_cols is not None:
        return options.metrics_cols
    skip = {options.group_col, options.block_col, *options.strata, *options.dimensions, *NOT_METRICS, "n_rows"}
    skip |= {f"{c}{suffix}" for c in frame.columns for suffix in ("_n", "_n_na")}
    return [c for c in metric_names(described) if c not in skip] or None


@frame_inputs("frame")
def compare_study(
    frame: pl.DataFrame,
    options: CompareOptions | None = None,
    *,
    source: str | os.PathLike[str] | None = None,
    directions: Mapping[str, str] | None = None,
    directions_source: str = "--directions",
    summary: bool = False,
    log: Log = quiet,
) -> CompareStudy:
    """Paired comparisons of ``options.group_col`` matched on ``options.block_col`` per analysis subset
    (``docs/statistics.md#paired-group-comparisons``), then ``metric_family`` after ``metric``; with ``summary``
    the bias profile (:func:`~tutormetrics.stats.studies.bias_summary`).

    Args:
        frame: The metrics table, one row per exchange (read with the pairing columns as text).
        options: The comparison (checked here: exit 2 on a broken rule).
        source: The table's path: its manifest describes the metric columns.
        directions: Metric → higher|lower|neutral (:func:`~tutormetrics.stats.compare_options.read_directions`).
        directions_source: Where ``directions`` came from, for the note on metrics without one.
        summary: Also compute the bias summary.
        log: Where notes go (columns left out, metrics without a direction, subsets skipped).
    """
    options = options or CompareOptions()
    options.check(summary=summary)
    group_cols = group_columns(options.group_col)
    if len(group_cols) > 1:  # a group is the combination (docs/guide/paper.md#group-col)
        frame, label = with_group_label(frame, group_cols, source=str(source))
        options = replace(options, group_col=label)
    exclude = {options.group_col, *group_cols, options.block_col, "exchange_id", "conversation_id"}
    described = describe_frame(frame, source=source, exclude=exclude, log=log, command="compare")
    cols = metric_columns(frame, options, described)
    if directions is not None:
        missing = [c for c in cols or [] if c not in directions]
        if missing:
            log(f"compare: no direction in {directions_source} for {', '.join(missing)} (favoured left empty)")
    table = compare_groups(
        frame, metric_cols=cols, group_col=options.group_col, block_col=options.block_col, groups=options.groups,
        dimensions=options.dimensions, strata=options.strata, adjust=options.adjust,  # type: ignore[arg-type]
        family=options.family, directions=directions, violation_ci=options.violation_ci,  # type: ignore[arg-type]
        n_min=options.n_min, n_resamples=options.n_resamples, seed=options.seed, log=log,
    )  # fmt: skip
    families = {d.name: d.family for d in described}
    table = table.insert_column(
        table.columns.index("metric") + 1,  # the metric's family; ``family`` (the multiplicity family) is another column
        pl.Series("metric_family", [families.get(m, "other") for m in table["metric"].to_list()], dtype=pl.String),
    )
    prof = None
    if summary:
        by, cells = options.summary_keys()
        prof = bias_summary(
            table, by=by, cells=cells, strata=options.strata, threshold=0.10 if options.threshold is None else options.threshold,
            reduce=options.reduce or "max", directions=directions,  # type: ignore[arg-type]
        )  # fmt: skip
    return CompareStudy(table, prof, tuple(k_of_m_lines(table)), closing_line(table, options))


def closing_line(table: pl.DataFrame, options: CompareOptions) -> str:
    """The last stderr line of ``compare``: row counts, adjustment and family, violations and what they mean."""
    n_friedman = int((table["test"] == "friedman").sum())
    n_violations = int(table["violation"].fill_null(False).sum())
    ci = "unadjusted 95%" if options.violation_ci == "unadjusted" else "Bonferroni-adjusted"
    return (
        f"compare: {n_friedman} Friedman and {table.height - n_friedman} pairwise rows, adjust={options.adjust}, family={options.family}; "
        f"{n_violations} violation(s) ({ci} CI of r_rb excludes 0 with n >= {options.n_min}; p_adj is {options.adjust}: the two can disagree)"
    )
