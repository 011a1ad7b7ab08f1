"""The command ``ppi``: prediction-powered means of human scores (``docs/commands/ppi.md``).

It parses :class:`PPIArgs`, reads both label files once (:func:`~tutormetrics.psychometrics.ratings_input.read_ratings`)
and calls :func:`tutormetrics.psychometrics.ppi_table.ppi_study`.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from tutormetrics.commands.options import log
from tutormetrics.commands.registration import command
from tutormetrics.flags import flag
from tutormetrics.ids import TableIds
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import infer_format, write_table
from tutormetrics.psychometrics.ppi_options import PPIOptions
from tutormetrics.psychometrics.ratings_input import RatingsInput

__all__ = ["PPIArgs", "ppi", "register"]


@dataclass(kw_only=True)
class PPIArgs:
    """The options of ``ppi``: the two label files, the table written, their ids and columns, and the estimate."""

    judge_labels: Path = flag(
        "--judge-labels", dir_okay=False, help="Long judge labels for every exchange (exchange_id, rater, criterion, score)."
    )
    human_labels: Path = flag("--human-labels", dir_okay=False, help="Long human labels for a random subset of the exchanges.")
    output: Path = flag("--output", "-o", help="PPI table (.csv, .parquet or .jsonl).")
    ids: TableIds = field(default_factory=TableIds)
    reading: RatingsInput = field(default_factory=RatingsInput)
    estimate: PPIOptions = field(default_factory=PPIOptions)


def ppi(args: PPIArgs) -> None:
    """Mean human score per criterion (and group) from judge labels on all exchanges and human labels on a few.

    The estimate is the judge's mean on the unlabelled exchanges corrected by its mean error on the
    labelled ones (prediction-powered inference; --lambda auto tunes the weight as PPI++ does), with an
    interval valid however wrong the judge is, provided the humans labelled a uniform random subset.
    Example:

        tutormetrics ppi --judge-labels judge.csv --human-labels humans.csv --group-col tutor -o ppi.csv
    """
    from tutormetrics.psychometrics.ppi_table import ppi_study
    from tutormetrics.psychometrics.ratings_input import read_ratings

    infer_format(args.output)
    check_outputs([args.judge_labels, args.human_labels], [args.output])
    key = args.ids.key  # --id (repeatable: a composite exchange_id, docs/guide/datasets.md)
    judge, human = (read_ratings(path, args.reading, key, log=log) for path in (args.judge_labels, args.human_labels))
    table = ppi_study(judge, human, args.estimate, log=log)
    write_table(table, args.output)
    for row in table.filter(table["group"] == "").iter_rows(named=True):
        log(f"{row['criterion']}: PPI {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] (λ = {row['lambda']:.3f}), "
            f"classical {row['classical']:.3f}, judge {row['judge_mean']:.3f}; n = {row['n_labeled']}, N = {row['n_unlabeled']}, "
            f"n_effective = {row['n_effective']:.1f}")  # fmt: skip
    log(f"-> {args.output}")


def register(app: typer.Typer) -> None:
    """Add the ``ppi`` command to ``app``."""
    command(app, "ppi", ppi, outputs=("output",))
