"""Thin Typer command ``summarize``: per-group tables of metrics (and ratings) for papers.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import polars as pl
import typer

from tutormetrics.commands import options as opt
from tutormetrics.errors import TutorMetricsError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import infer_format, write_table

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
    seed: Annotated[int, typer.Option("--seed", **opt.SEED_RANGE, help="Bootstrap seed.")] = 0,
    # studies.md §5 (issue 24): rubric totals; the paper table's variables
    total: Annotated[
        Optional[str], typer.Option("--total", help="NAME=t1+t2+...: per-row total of columns, slots or criteria (summarised last, with pct_of_max and rank).")
    ] = None,
    slot: Annotated[
        Optional[list[str]], typer.Option("--slot", help="S=c1,c2,...: S is whichever one of c1, c2, ... the row has (repeatable).")
    ] = None,
    max_total: Annotated[Optional[float], typer.Option("--max", help="Largest possible total: fills pct_of_max = 100*mean/M.")] = None,
    totals_out: Annotated[
        Optional[Path], typer.Option("--totals-out", help="Also write the input rows with the total and pct_of_max (for compare/variability).")
    ] = None,
    variables: Annotated[
        Optional[list[str]], typer.Option("--vars", help="Variables of the table, in this order (repeat or comma-separate); default: every metric and rating variable (diagnostic flags are never metrics).")
    ] = None,
    transpose: Annotated[bool, typer.Option("--transpose", help=".md/.tex: variables as rows, groups as columns.")] = False,
    **kwargs: Any,
) -> None:
    """Per-group n, mean, sd, median and bootstrap CI of the mean for every numeric metric (and rating); with
    --total a rubric total per row (--slot for type-specific criteria), its percent of --max and the groups' rank."""
    from tutormetrics.ids import read_keyed

    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    id_col, rater_col, criterion_col, score_col = (kwargs[k] for k in ("id_col", "rater_col", "criterion_col", "score_col"))
    from tutormetrics.errors import ConfigError
    from tutormetrics.metrics.columns import describe_frame
    from tutormetrics.report.group_summary import summarize as run_summary
    from tutormetrics.report.paper import paper_table, paper_variables
    from tutormetrics.report.tables import table_format, write_text
    from tutormetrics.stats.totals import parse_slots, parse_total

    try:
        check_outputs([metrics, ratings], [output, totals_out])
        if total is None and (slot or max_total is not None or totals_out):
            raise ConfigError("--slot, --max and --totals-out need --total", hint="e.g. --total total=a+b+specific")
        if max_total is not None and not max_total > 0:
            raise ConfigError(f"--max {max_total:g}: must be positive")
        spec = parse_total(total) if total else None
        slots = parse_slots(slot)
        fmt = table_format(output, output_format)
        # csv may also be .parquet/.jsonl by extension; an unknown extension stops here, before the work
        kind = infer_format(output) if fmt == "csv" and output_format is None else "csv"
        frame = read_keyed(metrics, key, id_columns=[id_col])
        frame = frame.drop([p for p in key.id_parts if p != group_col and p in frame.columns])  # parts are ids, not metrics
        result = run_summary(
            frame,
            read_keyed(ratings, key, id_columns=[id_col], drop_parts=True) if ratings else None,
            group_col=group_col,
            id_col=id_col,
            rater_col=rater_col,
            criterion_col=criterion_col,
            score_col=score_col,
            n_resamples=n_resamples,
            seed=seed,
            columns=describe_frame(frame, source=metrics, exclude=[id_col, group_col], log=opt.log, command="summarize"),
            total=spec,
            slots=slots,
            max_total=max_total,
        )
        chosen = opt.split_list(variables)
        if fmt in ("md", "tex"):
            text = paper_table(result.table, fmt, group_col, variables=chosen, diagnostics=False, transpose=transpose,
                               total=spec.name if spec else None)  # fmt: skip
            write_text(text, output)
        else:
            table = result.table
            if chosen:
                keep = paper_variables(table, chosen, diagnostics=True)
                table = table.filter(pl.col("variable").is_in(keep)).sort(
                    pl.col("variable").replace_strict({v: i for i, v in enumerate(keep)}, return_dtype=pl.Int64), "group", maintain_order=True
                )
            write_table(table, output, kind)
        if totals_out is not None and result.rows is not None:
            write_table(result.rows, totals_out)
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
    opt.command(app, "summarize", summarize, opt.COMMANDS["summarize"], outputs=("output", "totals_out"))
