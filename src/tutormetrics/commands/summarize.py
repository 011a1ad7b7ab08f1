"""Thin Typer command ``summarize``: per-group tables of metrics (and ratings) for papers (``docs/commands/summarize.md``).

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import filter_rows, write_data
from tutormetrics.commands.terminal import log
from tutormetrics.flags import argument, caption_flag, flag, where_flag
from tutormetrics.ids import TableIds
from tutormetrics.io.paths import check_outputs
from tutormetrics.psychometrics.ratings_input import RatingsInput, read_ratings
from tutormetrics.report.group_summary import (
    SummarizeOptions,
    SummaryLayout,
    check_totals,
    read_summary_metrics,
    summarize_metrics,
    write_summary,
    written_variables,
)

__all__ = ["SummarizeArgs", "register", "summarize"]


@dataclass(kw_only=True)
class SummarizeArgs:
    """``summarize``'s inputs and outputs, the summary's options, its table layout, the ids and the ratings' reading."""

    metrics: Path = argument(help="Metrics table with one row per exchange (e.g. from `tutormetrics score`).")
    output: Path = flag("--output", "-o", help="Summary: .csv (one row per group x variable), .md or .tex (paper table).")
    ratings: Path | None = flag("--ratings", default=None, help="Long ratings: adds <criterion>_score and <criterion>_endorsed per group.")
    summary: SummarizeOptions = field(default_factory=SummarizeOptions)
    totals_out: Path | None = flag(
        "--totals-out", default=None, help="Also write the input rows with the total and pct_of_max (for compare/variability)."
    )
    layout: SummaryLayout = field(default_factory=SummaryLayout)
    caption: str | None = caption_flag()
    where: list[str] | None = where_flag()
    ids: TableIds = field(default_factory=TableIds)
    reading: RatingsInput = field(default_factory=RatingsInput)


def summarize(args: SummarizeArgs) -> None:
    """Per-group n, mean, sd, median and bootstrap CI of the mean for every numeric metric (and rating); with
    --total a rubric total per row (--slot for type-specific criteria), its percent of --max and the groups' rank."""
    key, options = args.ids.key, args.summary
    check_outputs([args.metrics, args.ratings], [args.output, args.totals_out])
    check_totals(options, args.totals_out)
    args.layout.formats(args.output)  # an unknown format or extension stops here, before the work
    frame = filter_rows(read_summary_metrics(args.metrics, key, options.group_col), args.where, args.metrics)
    ratings = read_ratings(args.ratings, args.reading, key, log=log) if args.ratings else None
    result = summarize_metrics(frame, options, ratings=ratings, id_col=key.column, source=args.metrics, log=log)
    total = options.total.name if options.total else None
    fmt = write_summary(result, args.output, args.layout, group_col=options.group_col, total=total, caption=args.caption)
    if args.totals_out is not None and result.rows is not None:
        write_data(result.rows, args.totals_out, "--totals-out")
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    table = result.table
    shown = written_variables(table, args.layout, fmt)  # what the file holds (--vars, the paper table's set)
    typer.echo(f"summarize: {table['group'].n_unique()} groups x {len(shown)} variables -> {args.output} ({fmt})", err=True)


def register(app: typer.Typer) -> None:
    """Add the ``summarize`` command to ``app``."""
    command(app, "summarize", summarize, outputs=("output", "totals_out"))
