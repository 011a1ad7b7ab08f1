"""``tutormetrics agree``: rater agreement per criterion, or LLM judges against humans (``docs/commands/agree.md``).

Reads the ratings the one way in (:func:`~tutormetrics.psychometrics.ratings_input.read_ratings`), calls
:func:`~tutormetrics.psychometrics.agreement_study.agreement_study` and writes its tables; the summary goes to stderr.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import typer

from tutormetrics.commands.flag_groups import Gate
from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import write_result
from tutormetrics.commands.terminal import log, renamed, strict_gate
from tutormetrics.flags import argument, caption_flag, flag, split_list, where_flag
from tutormetrics.ids import TableIds, read_keyed
from tutormetrics.io.paths import check_outputs
from tutormetrics.progress import ProgressOptions, step_progress
from tutormetrics.psychometrics.agree_options import AgreeOptions, AgreeRatingsInput, check_agree
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.ratings_input import read_ratings

__all__ = ["AgreeArgs", "agree", "register"]


def _judges(values: list[str] | None) -> list[str]:
    """``--judge`` (repeatable or comma-separated) as a list, ``[]`` without one."""
    return split_list(values) or []



@dataclass(kw_only=True)
class AgreeArgs(Gate):
    """Everything ``agree`` takes: the ratings and outputs, the judges, how the ratings are read (``--raters``
    also names the pair ``A,B``) and the agreement options."""

    ratings: Path = argument(help="Long ratings table (exchange_id, rater, criterion, score); any number of raters, missing ratings allowed.")
    output: Path = flag("--output", "-o", help="Agreement table (one row per criterion), or the judge table with --judge.")
    judge: list[str] = flag(
        "--judge", default=None, parse=_judges, cli_type=list[str] | None, show_default=False,
        help="Rater NAME is an LLM judge (repeat or comma-separate): agreement and leniency against each human rater and the human majority.",
    )
    confusion: Path | None = flag("--confusion", default=None, help="With --judge: also write the confusion counts (criterion x reference).")
    per_rater: Path | None = flag("--per-rater", default=None, help="Also write the endorsement rate per criterion x rater here.")
    caption: str | None = caption_flag()
    where: list[str] | None = where_flag()
    n_boot: int | None = flag("--n-boot", default=None, hidden=True, min=0, help="Old spelling of --n-resamples.")
    metrics_table: Path | None = flag(
        "--metrics-table", default=None, dir_okay=False, panel="Judges",
        help="Metrics table keyed like RATINGS (e.g. from score --keep conversation_id): reply lengths for --length-bias, or the --cluster-col.",
    )
    length_bias: Path | None = flag(
        "--length-bias", default=None, panel="Judges",
        help="With --judge and --metrics-table: write the length bias of each judge x criterion here (slope per SD of log length).",
    )
    differences: Path | None = flag(
        "--differences", default=None, panel="Judges",
        help="With --judge: write paired differences here (judge - judge, judge - human-human level) per criterion and measure.",
    )
    stability: str | None = flag(
        "--stability", default=None, panel="Judges", show_default=False,
        help="'A,B': two runs (or versions) of one judge; -o gets the flips per criterion instead of the agreement table.",
    )
    ids: TableIds = field(default_factory=TableIds)
    reading: AgreeRatingsInput = field(default_factory=AgreeRatingsInput)
    agreement: AgreeOptions = field(default_factory=AgreeOptions)
    shown: ProgressOptions = field(default_factory=ProgressOptions)


def agree(args: AgreeArgs) -> None:
    """Rater agreement per criterion: exact, Fleiss kappa, Krippendorff alpha (nominal/ordinal/interval), AC1 with CIs,
    plus the two-rater block (with PABAK, prevalence and bias indices, p_pos, p_neg); with --judge (repeatable), each
    LLM judge against each human and the human majority, with leniency columns (mean difference, % of maximum,
    over/under rates, sign, Bowker and Stuart-Maxwell tests). --cluster-col resamples dialogues; --length-bias,
    --differences and --stability A,B answer the judge questions of docs/guide/judges.md."""
    from tutormetrics.psychometrics.agreement_study import agreement_study
    from tutormetrics.psychometrics.judge_tables import check_agree_options

    check_agree(args.reading, judges=args.judge, confusion=args.confusion is not None,
                per_rater=args.per_rater is not None)  # fmt: skip
    pair = check_agree_options(judges=args.judge, raters=args.reading.raters, metrics=args.metrics_table is not None,
                               length_bias=args.length_bias is not None, differences=args.differences is not None,
                               stability=args.stability)  # fmt: skip
    check_outputs([args.ratings, args.metrics_table], [args.output, args.confusion, args.per_rater, args.length_bias, args.differences])
    options = replace(
        args.agreement, n_resamples=renamed(args.agreement.n_resamples, args.n_boot, "--n-boot", "--n-resamples"),
        levels=None if args.reading.levels is None else tuple(args.reading.levels),
        length_bias=args.length_bias is not None, differences=args.differences is not None,
    )  # fmt: skip
    ratings = read_ratings(args.ratings, args.reading, args.ids.key, log=log, require_long=True, where=args.where)
    metrics = read_keyed(args.metrics_table, args.ids.key, id_columns=[args.ids.key.column], drop_parts=True) if args.metrics_table else None
    with step_progress("agree", progress=args.shown.progress, every=args.shown.progress_every) as steps:
        steps.detail(_agreeing(ratings, options.n_resamples, args.judge))
        study = agreement_study(ratings, options, judges=args.judge, raters=args.reading.pair, per_rater=args.per_rater is not None,
                                metrics=metrics, stability=pair, log=log)  # fmt: skip
    if args.per_rater is not None and study.per_rater is not None:
        write_result(study.per_rater, args.per_rater, "per_rater")
        log(f"per-rater endorsement: {study.per_rater.height} rows -> {args.per_rater}")
    write_result(study.table, args.output, "judge" if args.judge else "agree", args.caption)
    if args.confusion is not None and study.confusion is not None:
        write_result(study.confusion, args.confusion, "confusion")
    for path, table in ((args.length_bias, study.length_bias), (args.differences, study.differences)):
        if path is not None and table is not None:
            write_result(table, path)
    for line in study.lines:
        log(line)
    log(f"{study.headline} -> {args.output}")
    strict_gate(args.strict, list(study.warnings))  # an inferred leniency scale or a warning: exit 1 after writing


def _agreeing(ratings: Ratings, n_resamples: int, judges: list[str] | None) -> str:
    """The agreement step as a progress detail.

    >>> import polars as pl
    >>> r = Ratings.clean(pl.DataFrame({"exchange_id": ["a", "a"], "rater": ["x", "y"], "criterion": ["c", "c"], "score": [1, 0]}))
    >>> _agreeing(r, 2000, None)
    'agreement of 1 criteria (2 ratings, 2,000 resamples)'
    """
    n = ratings.long.height if ratings.long is not None else ratings.frame.height
    what = f"judge tables of {len(judges)} judge(s)" if judges else "agreement"
    return f"{what} of {len(ratings.levels)} criteria ({n:,} ratings" + (f", {n_resamples:,} resamples)" if n_resamples else ")")


def register(app: typer.Typer) -> None:
    """Add ``agree`` to ``app``."""
    command(app, "agree", agree, outputs=("output", "confusion", "per_rater", "length_bias", "differences"))
