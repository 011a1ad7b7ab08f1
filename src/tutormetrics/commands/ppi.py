"""Thin Typer command ``ppi``: prediction-powered means of human scores (``predictive.md`` §3).

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import log
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import infer_format, write_table

__all__ = ["register", "ppi"]


def ppi(
    judge_labels: Annotated[Path, typer.Option("--judge-labels", help="Long judge labels for every exchange (exchange_id, rater, criterion, score).", dir_okay=False)],
    human_labels: Annotated[Path, typer.Option("--human-labels", help="Long human labels for a random subset of the exchanges.", dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="PPI table (.csv, .parquet or .jsonl).")],
    group_col: Annotated[Optional[str], typer.Option("--group-col", help="Judge-labels column (e.g. tutor), constant per exchange: one row per group too.")] = None,
    lam: Annotated[str, typer.Option("--lambda", help="1 (PPI), auto (PPI++ power tuning) or a number in [0, 1] (0 = humans only).")] = "1",
    judge: Annotated[Optional[str], typer.Option("--judge", help="The judge's rater name when the judge labels hold several raters.")] = None,
    aggregate: Annotated[str, typer.Option("--aggregate", help="Human aggregation per exchange and criterion: mean, min or max.")] = "mean",
    **kwargs: Any,
) -> None:
    """Mean human score per criterion (and group) from judge labels on all exchanges and human labels on a few.

    The estimate is the judge's mean on the unlabelled exchanges corrected by its mean error on the
    labelled ones (prediction-powered inference; --lambda auto tunes the weight as PPI++ does), with an
    interval valid however wrong the judge is, provided the humans labelled a uniform random subset.
    Example:

        tutormetrics ppi --judge-labels judge.csv --human-labels humans.csv --group-col tutor -o ppi.csv
    """
    from tutormetrics.psychometrics.ppi_table import parse_lambda, ppi_table

    from tutormetrics.ids import read_keyed

    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    confidence_level, id_col = kwargs["confidence_level"], kwargs["id_col"]
    rater_col, criterion_col, score_col = kwargs["rater_col"], kwargs["criterion_col"], kwargs["score_col"]

    infer_format(output)
    check_outputs([judge_labels, human_labels], [output])
    lam_value = parse_lambda(lam)
    ids = ("exchange_id", "conversation_id", id_col)
    table = ppi_table(
        read_keyed(judge_labels, key, id_columns=ids), read_keyed(human_labels, key, id_columns=ids), judge=judge,
        group_col=group_col, lam=lam_value, confidence_level=confidence_level, aggregate=aggregate, id_col=id_col,
        rater_col=rater_col, criterion_col=criterion_col, score_col=score_col, log=log,
    )  # fmt: skip
    write_table(table, output)
    for row in table.filter(table["group"] == "").iter_rows(named=True):
        log(f"{row['criterion']}: PPI {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] (λ = {row['lambda']:.3f}), "
            f"classical {row['classical']:.3f}, judge {row['judge_mean']:.3f}; n = {row['n_labeled']}, N = {row['n_unlabeled']}, "
            f"n_effective = {row['n_effective']:.1f}")  # fmt: skip
    log(f"-> {output}")


def register(app: typer.Typer) -> None:
    """Add the ``ppi`` command to ``app``."""
    opt.command(app, "ppi", ppi, opt.COMMANDS["ppi"], outputs=("output",))
