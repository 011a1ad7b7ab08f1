"""``tutormetrics agree``: rater agreement per criterion, or LLM judges against humans (``docs/commands/agree.md``).

Reads the ratings the one way in (:func:`~tutormetrics.psychometrics.ratings_input.read_ratings`), calls
:func:`~tutormetrics.psychometrics.agreement_study.agreement_study` and writes its tables; the summary goes to stderr.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import typer

from tutormetrics.commands.options import log, renamed
from tutormetrics.commands.registration import command
from tutormetrics.errors import TutorMetricsError
from tutormetrics.flags import argument, flag, split_list
from tutormetrics.ids import TableIds
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import write_table
from tutormetrics.psychometrics.agree_options import AgreeOptions, AgreeRatingsInput, check_agree
from tutormetrics.psychometrics.ratings_input import read_ratings

__all__ = ["AgreeArgs", "agree", "register"]


def _judges(values: list[str] | None) -> list[str]:
    """``--judge`` (repeatable or comma-separated) as a list, ``[]`` without one."""
    return split_list(values) or []


@contextlib.contextmanager
def _expected_errors() -> Iterator[None]:
    """An expected error (:class:`~tutormetrics.errors.TutorMetricsError`) is one ``error:`` line on stderr and its
    exit code (2), also when the command runs in a bare Typer app."""
    try:
        yield
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None


@dataclass(kw_only=True)
class AgreeArgs:
    """Everything ``agree`` takes: the ratings and outputs, the judges, how the ratings are read (``--raters``
    also names the pair ``A,B``) and the agreement options."""

    ratings: Path = argument(help="Long ratings table (exchange_id, rater, criterion, score); any number of raters, missing ratings allowed.")
    output: Path = flag("--output", "-o", help="Agreement table (one row per criterion), or the judge table with --judge.")
    judge: list[str] = flag(
        "--judge", default=None, parse=_judges, cli_type=Optional[list[str]], show_default=False,
        help="Rater NAME is an LLM judge (repeatable): agreement and leniency against each human rater and the human majority.",
    )
    confusion: Optional[Path] = flag("--confusion", default=None, help="With --judge: also write the confusion counts (criterion x reference).")
    per_rater: Optional[Path] = flag("--per-rater", default=None, help="Also write the endorsement rate per criterion x rater here.")
    n_boot: Optional[int] = flag("--n-boot", default=None, hidden=True, min=0, help="Old spelling of --n-resamples.")
    ids: TableIds = field(default_factory=TableIds)
    reading: AgreeRatingsInput = field(default_factory=AgreeRatingsInput)
    agreement: AgreeOptions = field(default_factory=AgreeOptions)


def agree(args: AgreeArgs) -> None:
    """Rater agreement per criterion: exact, Fleiss kappa, Krippendorff alpha (nominal/ordinal/interval), AC1 with CIs,
    plus the two-rater block (with PABAK, prevalence and bias indices, p_pos, p_neg); with --judge (repeatable), each
    LLM judge against each human and the human majority, with leniency columns (mean difference, % of maximum,
    over/under rates, sign, Bowker and Stuart-Maxwell tests)."""
    from tutormetrics.psychometrics.agreement_study import agreement_study

    with _expected_errors():
        check_agree(args.reading, args.agreement, judges=args.judge, confusion=args.confusion is not None,
                    per_rater=args.per_rater is not None)  # fmt: skip
        check_outputs([args.ratings], [args.output, args.confusion, args.per_rater])
        options = replace(
            args.agreement, n_resamples=renamed(args.agreement.n_resamples, args.n_boot, "--n-boot", "--n-resamples"),
            levels=None if args.reading.levels is None else tuple(args.reading.levels),
        )  # fmt: skip
        ratings = read_ratings(args.ratings, args.reading, args.ids.key, log=log, require_long=True, na=options.na)
        study = agreement_study(ratings, options, judges=args.judge, raters=args.reading.pair, per_rater=args.per_rater is not None, log=log)
        if args.per_rater is not None and study.per_rater is not None:
            write_table(study.per_rater, args.per_rater)
            log(f"per-rater endorsement: {study.per_rater.height} rows -> {args.per_rater}")
        write_table(study.table, args.output)
        if args.confusion is not None and study.confusion is not None:
            write_table(study.confusion, args.confusion)
        for line in study.lines:
            log(line)


def register(app: typer.Typer) -> None:
    """Add ``agree`` to ``app``."""
    command(app, "agree", agree, outputs=("output", "confusion", "per_rater"))
