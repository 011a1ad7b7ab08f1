"""``tutormetrics compare``: paired comparisons of groups matched on a block column (``docs/commands/compare.md``).

Reads the metrics table, calls :func:`~tutormetrics.stats.compare_study.compare_study` and writes the comparison
table, the optional bias summary and figure; the summary goes to stderr.

Example:
    >>> from typing import TYPE_CHECKING

import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import filter_rows, write_result
from tutormetrics.commands.terminal import log, renamed
from tutormetrics.flags import argument, caption_flag, dpi_flag, flag, where_flag
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import read_table
from tutormetrics.progress import ProgressOptions, step_progress
from tutormetrics.stats.compare_options import CompareOptions, read_directions

if TYPE_CHECKING:
    import polars as pl

__all__ = ["CompareArgs", "compare", "register"]



@dataclass(kw_only=True)
class CompareArgs:
    """Everything ``compare`` takes: the metrics table, its outputs, the directions table and the comparison."""

    metrics: Path = argument(help="Metrics table with one row per exchange.")
    output: Path = flag("--output", "-o", help="Comparison table.")
    figure: Path | None = flag(
        "--figure", default=None,
        help="Also draw the small multiples of r_rb (one panel per dimension value, strata as columns): .png, .svg or .pdf.",
    )
    summary: Path | None = flag(
        "--summary", default=None, help="Also write the bias summary (|r_rb| per cell vs --threshold, violations, k of m improved)."
    )
    directions: Path | None = flag(
        "--directions", default=None, help="CSV metric,desirable (higher|lower|neutral): fills the favoured column."
    )
    caption: str | None = caption_flag()
    where: list[str] | None = where_flag()
    dpi: int = dpi_flag()
    min_pairs: int | None = flag("--min-pairs", default=None, hidden=True, min=1, help="Old spelling of --n-min.")
    comparison: CompareOptions = field(default_factory=CompareOptions)
    shown: ProgressOptions = field(default_factory=ProgressOptions)


def compare(args: CompareArgs) -> None:
    """Paired comparisons of groups matched on a block column, per analysis subset (--strata x --dimension): with
    3+ groups a Friedman row per metric (chi2, p, Kendall W), then corrected pairwise Wilcoxon rows (T+, p, r_rb, CI,
    violation, paired mean difference with its bootstrap CI); --summary writes the bias profile."""
    from tutormetrics.stats.compare_study import compare_study

    check_outputs([args.metrics, args.directions], [args.output, args.figure, args.summary])
    args.comparison.check(summary=args.summary is not None, figure=args.figure)
    directions = read_directions(args.directions) if args.directions else None
    options = replace(args.comparison, n_min=renamed(args.comparison.n_min, args.min_pairs, "--min-pairs", "--n-min"))
    frame = read_table(args.metrics, id_columns=("exchange_id", "conversation_id", options.group_col, options.block_col))
    frame = filter_rows(frame, args.where, args.metrics)
    with step_progress("compare", progress=args.shown.progress, every=args.shown.progress_every) as steps:
        steps.detail(f"paired comparisons of {options.group_col} within {options.block_col} on {frame.height:,} rows "
                     f"({options.n_resamples:,} resamples)")  # fmt: skip
        study = compare_study(frame, options, source=args.metrics, directions=directions, directions_source=str(args.directions),
                              summary=args.summary is not None, log=log)  # fmt: skip
    write_result(study.table, args.output, "compare", args.caption)
    for line in study.k_of_m:
        log(line)
    if args.summary is not None and study.summary is not None:
        write_result(study.summary, args.summary, "compare_summary")
    if args.figure is not None:
        from tutormetrics.report.effects import BOLD_AT, save_compare_figure

        saved = save_compare_figure(study.table, args.figure, threshold=options.threshold or BOLD_AT, dpi=args.dpi)
        log(f"figure: {', '.join(str(p) for p in saved)}")
    log(study.closing)
    log(_headline(study.table, args.output))


def _headline(table: pl.DataFrame, output: Path) -> str:
    """The one-line result (issue 35): ``compare: 12 metrics, 36 rows, 2 violation(s) -> out.csv``."""
    n_metrics = table["metric"].n_unique() if "metric" in table.columns else 0
    n_violations = int(table["violation"].fill_null(False).sum()) if "violation" in table.columns else 0
    return f"compare: {n_metrics} metrics, {table.height} rows, {n_violations} violation(s) -> {output}"


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""
    command(app, "compare", compare, outputs=("output", "figure", "summary"))
