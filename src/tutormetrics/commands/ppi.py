"""The command ``ppi``: prediction-powered means of human scores (``docs/commands/ppi.md``).

It parses :class:`PPIArgs`, reads both label files once (:func:`~tutormetrics.psychometrics.ratings_input.read_ratings`)
and calls :func:`tutormetrics.psychometrics.ppi_table.ppi_study` (or, with ``--plan``,
:func:`~tutormetrics.psychometrics.ppi_table.ppi_plan_study`).

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
from tutormetrics.commands.terminal import log
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
    strata_weights: Path | None = flag(
        "--strata-weights", default=None, dir_okay=False, panel="PPI",
        help="With --strata-col: a table stratum,weight (e.g. population shares) replacing the strata's shares of the judged items.",
    )
    plan: bool = flag("--plan", default=False, panel="Label budget",
                      help="Write the label budget instead of the estimates: human labels for a ±h interval, classical and PPI++.")
    half_width: float | None = flag("--half-width", default=None, panel="Label budget", show_default=False,
                                    help="With --plan: the target half-width h of the interval (score units).")


def ppi(args: PPIArgs) -> None:
    """Mean human score per criterion (and group) from judge labels on all exchanges and human labels on a few.

    The estimate is the judge's mean on the unlabelled exchanges corrected by its mean error on the
    labelled ones (prediction-powered inference; --lambda auto tunes the weight as PPI++ does), with an
    interval valid however wrong the judge is, provided the humans labelled a uniform random subset.
    Example:

        tutormetrics ppi --judge-labels judge.csv --human-labels humans.csv --group-col tutor -o ppi.csv

    --cluster-col makes the interval dialogue-robust, --strata-col combines per-stratum estimates, and
    --plan --half-width h writes the label budget instead (docs/guide/judges.md).
    """
    from tutormetrics.io.tables import read_table
    from tutormetrics.psychometrics.ppi_table import check_ppi_options, ppi_plan_study, ppi_study, read_strata_weights
    from tutormetrics.psychometrics.ratings_input import read_ratings

    o = args.estimate
    check_ppi_options(plan=args.plan, half_width=args.half_width, strata_col=o.strata_col, strata_weights=args.strata_weights)
    infer_format(args.output)
    check_outputs([args.judge_labels, args.human_labels, args.strata_weights], [args.output])
    weights = read_strata_weights(read_table(args.strata_weights)) if args.strata_weights is not None else None
    key = args.ids.key  # --id (repeatable: a composite exchange_id, docs/guide/datasets.md)
    judge, human = (read_ratings(path, args.reading, key, log=log) for path in (args.judge_labels, args.human_labels))
    if args.plan and args.half_width is not None:
        table = ppi_plan_study(judge, human, o, args.half_width, log=log)
        write_table(table, args.output)
        pooled = table.filter(table["group"] == "")
        log(f"ppi: plan for ±{args.half_width:g}, {pooled.height} criteria, human labels {_span(pooled['n_classical'])} classical, "
            f"{_span(pooled['n_ppi'])} PPI++ -> {args.output}")  # fmt: skip
        return
    table = ppi_study(judge, human, o, strata_weights=weights, log=log)
    write_table(table, args.output)
    pooled = table.filter(table["group"] == "")
    if "stratum" in table.columns:
        pooled = pooled.filter(pooled["stratum"].is_null())
    for row in pooled.iter_rows(named=True):
        lam = "auto" if row["lambda"] is None else f"{row['lambda']:.3f}"
        log(f"{row['criterion']}: PPI {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] (λ = {lam}), "
            f"classical {row['classical']:.3f}, judge {row['judge_mean']:.3f}; n = {row['n_labeled']}, N = {row['n_unlabeled']}, "
            f"n_effective = {row['n_effective']:.1f}")  # fmt: skip
    log(f"-> {args.output}")


def _span(column: object) -> str:
    """``21–34`` (or one number, or ``n/a``) of a column of label counts."""
    values = [int(v) for v in column if v is not None]  # type: ignore[attr-defined]
    if not values:
        return "n/a"
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


def register(app: typer.Typer) -> None:
    """Add the ``ppi`` command to ``app``."""
    command(app, "ppi", ppi, outputs=("output",))
