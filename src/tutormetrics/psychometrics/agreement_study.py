"""``agree`` as one call (``docs/commands/agree.md``): prepared :class:`~tutormetrics.psychometrics.ratings.Ratings`
in, the agreement table (or, with judges, the judge table and its confusion counts), the per-rater endorsement
table and the stderr summary out.

Three modes: named raters (the many-rater columns and the two-rater block of ``raters`` or the first two),
exchangeable raters (``--raters exchangeable``: the many-rater columns only) and judges (each judge against each
human and the human majority, ``docs/commands/agree.md#agree-judge-validate-an-llm-judge-against-humans``).

Example:
    >>> import polars as pl
    >>> from tutormetrics.psychometrics.ratings import Ratings
    >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["a", "b"] * 2,
    ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
    >>> study = agreement_study(Ratings.clean(df), AgreeOptions(n_resamples=0, n_min=2))
    >>> study.table["exact"].to_list(), study.lines[0]
    ([0.5], 'agreement: 1 criteria, up to 2 raters; two-rater columns: a vs b')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.agree_options import AgreeOptions
from tutormetrics.psychometrics.agreement import agreement_table, clean_ratings
from tutormetrics.psychometrics.exchangeable import slot_warning
from tutormetrics.psychometrics.judge import JudgeResult, judge_table
from tutormetrics.psychometrics.kappa_paradox import per_rater_table
from tutormetrics.psychometrics.na_codes import negative_category_warnings
from tutormetrics.psychometrics.ratings import Ratings

__all__ = ["AgreementStudy", "agreement_study"]

#: Reasons that make a criterion's row worth a look (named in the summary line).
_FLAGGED = "one_rater|too_few|constant"


@dataclass(frozen=True)
class AgreementStudy:
    """What ``agree`` writes: ``table`` (agreement, or judge table with judges), ``confusion`` (judges only),
    ``per_rater`` (when asked for) and ``lines``, the summary for stderr."""

    table: pl.DataFrame
    confusion: pl.DataFrame | None
    per_rater: pl.DataFrame | None
    lines: tuple[str, ...]


def agreement_study(
    ratings: Ratings,
    options: AgreeOptions | None = None,
    *,
    judges: Sequence[str] = (),
    raters: tuple[str, str] | None = None,
    per_rater: bool = False,
    log: Log = quiet,
) -> AgreementStudy:
    """Agreement per criterion (``docs/commands/agree.md``): with ``judges`` the judge table, with exchangeable
    ratings the many-rater columns only, else the many-rater columns plus the two-rater block of ``raters``.

    Before the tables, warnings go to ``log``: labels that look like anonymous slots (named raters), and negative
    scores that sit in a criterion's categories (without ``options.levels``; ``--na`` drops them).

    Args:
        ratings: Long ratings from :func:`~tutormetrics.psychometrics.ratings_input.read_ratings` (``--na`` there).
        options: Resamples, seed, ``n_min``, confidence level and ``levels`` (the ``--levels`` scale, or ``None``);
            default :class:`AgreeOptions`.
        judges: The raters that are LLM judges (``--judge``); every other rater is a human.
        raters: The two raters of the two-rater columns (``--raters A,B``; default: the first two).
        per_rater: Also compute the endorsement rate per criterion × rater.
        log: Where the warnings go.
    """
    options = options or AgreeOptions()
    exchangeable = ratings.exchangeable or options.exchangeable
    if options.cluster_col or options.length_bias or options.differences:
        raise ConfigError("agreement_study has no dialogue intervals, length bias or differences", hint="call judge_tables")
    if judges and raters:
        raise ConfigError("--raters A,B and --judge cannot be combined", hint="--judge compares the judge with every human")
    if exchangeable and per_rater:
        raise ConfigError("--per-rater needs named raters, but --raters exchangeable says the labels are anonymous slots")
    columns = ratings.columns()
    levels = list(options.levels) if options.levels is not None else None
    if not exchangeable and ratings.long is not None:
        slot = slot_warning(ratings.long, exclude=list(judges))
        if slot:
            log(slot)
    if levels is None:
        for line in negative_category_warnings(ratings.frame, criterion_col=ratings.criterion_col, score_col=ratings.score_col):
            log(line)
    per = per_rater_table(clean_ratings(ratings, **columns), levels=levels) if per_rater else None
    common = {"n_resamples": options.n_resamples, "seed": options.seed, "confidence_level": options.confidence_level,
              "n_min": options.n_min}  # fmt: skip
    if judges:
        result = judge_table(ratings, list(judges), **columns, **common, levels=levels, exchangeable=exchangeable)
        return AgreementStudy(result.table, result.confusion, per, tuple(judge_lines(result, judges)))
    table = agreement_table(ratings, **columns, **common, raters=raters, exchangeable=exchangeable)
    return AgreementStudy(table, None, per, (agreement_line(table, exchangeable),))


def agreement_line(table: pl.DataFrame, exchangeable: bool = False) -> str:
    """The one stderr line of an agreement table: criteria, raters (or ratings per unit), the two-rater pair and
    the criteria whose reason needs a look."""
    flagged = table.filter(pl.col("reason").str.contains(_FLAGGED))["criterion"].to_list()
    see = f"; see reason for {', '.join(flagged)}" if flagged else ""
    most = table["n_raters"].max()
    if exchangeable:
        return (
            f"agreement: {table.height} criteria, up to {most} rating{'' if most == 1 else 's'} per unit; raters exchangeable "
            "(anonymous slots): the two-rater columns are empty" + see
        )
    rater_a, rater_b = table["rater_a"][0], table["rater_b"][0]
    pair = f"{rater_a} vs {rater_b}" if rater_b is not None else "none (one rater)"
    return f"agreement: {table.height} criteria, up to {most} raters; two-rater columns: {pair}{see}"


def judge_lines(result: JudgeResult, judges: Sequence[str]) -> list[str]:
    """The stderr lines of a judge table: its notes, the criteria x references, then the leniency of each judge
    against the human majority per criterion (``docs/commands/agree.md#agree-judge-validate-an-llm-judge-against-humans``)."""
    table = result.table
    refs = table["reference"].unique(maintain_order=True).to_list()
    lines = [f"note: {note}" for note in result.notes]
    lines.append(f"judge {', '.join(judges)}: {table['criterion'].n_unique()} criteria x {len(refs)} references ({', '.join(refs)})")
    for r in table.filter(pl.col("reference") == "majority").iter_rows(named=True):
        if r["mean_judge"] is not None and r["pct_max_judge"] == r["pct_max_judge"]:
            lines.append(
                f"leniency: {r['judge']} on {r['criterion']}: {r['pct_max_judge']:.1f}% of max vs humans {r['pct_max_ref']:.1f}% "
                f"(mean difference {r['mean_diff']:+.3f}, sign test p {r['sign_p']:.3g})"
            )
    return lines
