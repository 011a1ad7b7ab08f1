"""Thin Typer command ``summarize``: per-group tables of metrics (and ratings) for papers.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import options as opt
from tutormetrics.errors import TutorMetricsError
from tutormetrics.io import check_outputs, infer_format, read_table, write_table

__all__ = ["register"]


def summarize(
    metrics: Annotated[Path, typer.Argument(help="Metrics table with one row per exchange (e.g. from `tutormetrics score`).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Summary: .csv (one row per group x variable), .md or .tex (paper table).")
    ],
    group_col: Annotated[str, typer.Option("--group-col", help="Column with the groups, e.g. tutor.")] = "tutor",
    ratings: Annotated[
        Optional[Path], typer.Option("--ratings", help="Long ratings: adds <criterion>_score and <criterion>_endorsed per group.")
    ] = None,
    output_format: Annotated[
        Optional[str], typer.Option("--output-format", help="csv, md or tex (default: from the extension of -o).")
    ] = None,
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=0, help="Bootstrap resamples for the CI of the mean.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    id_col: opt.TableIdColumn = "exchange_id",
    rater_col: opt.RaterColumn = "rater",
    criterion_col: opt.CriterionColumn = "criterion",
    score_col: opt.ScoreColumn = "score",
) -> None:
    """Per-group n, mean, sd, median and bootstrap CI of the mean for every numeric metric (and rating)."""
    from tutormetrics.report.group_summary import summarize as run_summary
    from tutormetrics.metrics.columns import describe_frame
    from tutormetrics.report.tables import RENDERERS, table_format, write_text

    try:
        check_outputs([metrics, ratings], [output])
        fmt = table_format(output, output_format)
        # csv may also be .parquet/.jsonl by extension; an unknown extension stops here, before the work
        kind = infer_format(output) if fmt == "csv" and output_format is None else "csv"
        frame = read_table(metrics, id_columns=[id_col])
        result = run_summary(
            frame,
            read_table(ratings, id_columns=[id_col]) if ratings else None,
            group_col=group_col,
            id_col=id_col,
            rater_col=rater_col,
            criterion_col=criterion_col,
            score_col=score_col,
            n_resamples=n_resamples,
            seed=seed,
            columns=describe_frame(frame, source=metrics, exclude=[id_col, group_col]),
        )
        if fmt in RENDERERS:
            write_text(RENDERERS[fmt](result.table, group_col), output)
        else:
            write_table(result.table, output, kind)
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    table = result.table
    typer.echo(
        f"summarize: {table['group'].n_unique()} groups x {table['variable'].n_unique()} variables -> {output} ({fmt})",
        err=True,
    )


def register(app: typer.Typer) -> None:
    """Add the ``summarize`` command to ``app``."""
    app.command("summarize")(summarize)
