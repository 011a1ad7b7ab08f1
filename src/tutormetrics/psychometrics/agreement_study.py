"""``agree`` as one call (``docs/commands/agree.md``): prepared :class:`~tutormetrics.psychometrics.ratings.Ratings`
in, the agreement table (or, with judges, the judge table and its confusion counts), the per-rater endorsement
table and the stderr summary out.

Four modes: named raters (the many-rater columns and the two-rater block of ``raters`` or the first two),
exchangeable raters (``--raters exchangeable``: the many-rater columns only) and judges (each judge against each
human and the human majority, ``docs/commands/agree.md#agree-judge-validate-an-llm-judge-against-humans``) and
stability (two runs of one judge, ``docs/guide/judges.md#stability``).

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

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.agree_options import AgreeOptions
from tutormetrics.psychometrics.agreement import agreement_table, clean_ratings
from tutormetrics.psychometrics.exchange_labels import independence_note
from tutormetrics.psychometrics.exchangeable import slot_warning
from tutormetrics.psychometrics.judge_tables import cluster_labels, judge_tables
from tutormetrics.psychometrics.kappa_paradox import per_rater_table
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.stability import stability_table

__all__ = ["AgreementStudy", "agreement_study"]

#: Reasons that make a criterion's row worth a look (named in the summary line).
_FLAGGED = "one_rater|too_few|constant"


@dataclass(frozen=True)
class AgreementStudy:
    """What ``agree`` writes: ``table`` (agreement, judge table with judges, or FLIPS with a stability pair),
    ``confusion`` (judges only), ``per_rater`` (when asked for), ``length_bias`` and ``differences`` (when asked
    for), ``lines``, the summary for stderr, and ``headline``, the one-line result (the command adds the path)."""

    table: pl.DataFrame
    confusion: pl.DataFrame | None
    per_rater: pl.DataFrame | None
    lines: tuple[str, ...]
    length_bias: pl.DataFrame | None = None
    differences: pl.DataFrame | None = None
    headline: str = ""
    #: What ``--strict`` counts: the inferred leniency scale and the warnings printed (``docs/guide/paper.md#scale``).
    warnings: tuple[str, ...] = ()


@frame_inputs("metrics")
def agreement_study(
    ratings: Ratings,
    options: AgreeOptions | None = None,
    *,
    judges: Sequence[str] = (),
    raters: tuple[str, str] | None = None,
    per_rater: bool = False,
    metrics: pl.DataFrame | None = None,
    stability: tuple[str, str] | None = None,
    log: Log = quiet,
) -> AgreementStudy:
    """Agreement per criterion (``docs/commands/agree.md``): with ``judges`` the judge tables
    (:func:`~tutormetrics.psychometrics.judge_tables.judge_tables`: dialogue intervals, length bias and
    differences as ``options`` asks, ``docs/guide/judges.md#judge-intervals``), with ``stability`` the flips
    between two raters (``docs/guide/judges.md#stability``), with exchangeable ratings the many-rater columns
    only, else the many-rater columns plus the two-rater block of ``raters``; ``options.cluster_col`` makes every
    interval resample dialogues (``docs/guide/judges.md#many-raters``).

    Before the tables, warnings go to ``log``: labels that look like anonymous slots (named raters). The warnings of
    ``ratings`` (negative scores that sit in a criterion's categories, said by :meth:`Ratings.clean`; ``--na`` drops
    them) count among the study's (``--strict``).

    Args:
        ratings: Long ratings from :func:`~tutormetrics.psychometrics.ratings_input.read_ratings` (``--na`` there).
        options: Resamples, seed, ``n_min``, confidence level, ``levels`` (the ``--levels`` scale, or ``None``),
            the cluster column and the judge tables asked for; default :class:`AgreeOptions`.
        judges: The raters that are LLM judges (``--judge``); every other rater is a human.
        raters: The two raters of the two-rater columns (``--raters A,B``; default: the first two).
        per_rater: Also compute the endorsement rate per criterion × rater.
        metrics: The ``--metrics-table`` (keyed like the ratings): reply lengths, or the cluster column.
        stability: The pair ``(A, B)`` of ``--stability A,B``.
        log: Where the warnings go.
    """
    options = options or AgreeOptions()
    exchangeable = ratings.exchangeable or options.exchangeable
    if judges and raters:
        raise ConfigError("--raters A,B and --judge cannot be combined", hint="--judge compares the judge with every human")
    if exchangeable and per_rater:
        raise ConfigError("--per-rater needs named raters, but --raters exchangeable says the labels are anonymous slots")
    if (options.length_bias or options.differences) and not judges:
        raise ConfigError("--length-bias and --differences need --judge", hint="they compare a judge with the humans")
    columns = ratings.columns()
    levels = list(options.levels) if options.levels is not None else None
    warned = list(ratings.warnings)  # said when the ratings were cleaned: a negative score that is a category
    if not exchangeable and ratings.long is not None:
        slot = slot_warning(ratings.long, exclude=list(judges))
        if slot:
            log(slot)
            warned.append(slot)
    per = per_rater_table(clean_ratings(ratings, **columns), levels=levels) if per_rater else None
    if judges:
        tables = judge_tables(ratings, list(judges), replace(options, exchangeable=exchangeable), metrics=metrics, **columns)
        lines = tuple(judge_lines(tables.table, judges, tables.notes))
        if tables.scale_note:  # spec: one stderr note, and --strict exits 1 on it
            lines, warned = (*lines, tables.scale_note), [*warned, tables.scale_note]
        return AgreementStudy(tables.table, tables.confusion, per, lines, tables.length_bias, tables.differences,
                              judge_headline(tables.table, judges), tuple(warned))  # fmt: skip
    reserved = (columns["rater_col"], columns["criterion_col"], columns["score_col"])
    labels = cluster_labels(ratings, options.cluster_col, metrics=metrics, id_col=columns["id_col"], reserved=reserved)
    note = independence_note(ratings.frame.columns + (metrics.columns if metrics is not None else []), options.cluster_col, "agree")
    notes = (f"note: {note}",) if note else ()
    if stability is not None:
        flips = stability_table(ratings, stability, **columns, n_min=options.n_min, confidence_level=options.confidence_level,
                                cluster_labels=labels)  # fmt: skip
        return AgreementStudy(flips, None, per, notes, headline=stability_headline(flips))
    common = {"n_resamples": options.n_resamples, "seed": options.seed, "confidence_level": options.confidence_level,
              "n_min": options.n_min}  # fmt: skip
    clusters = {} if labels is None else {"cluster_labels": labels, "min_clusters": options.min_clusters}
    table = agreement_table(ratings, **columns, **common, raters=raters, exchangeable=exchangeable, **clusters)
    return AgreementStudy(table, None, per, (*notes, agreement_line(table, exchangeable)), headline=agreement_headline(table))


def _span(values: Sequence[float | None]) -> str:
    """``.42–.81`` (or one value, or ``n/a``) of the finite values, two decimals without the leading zero.

    >>> _span([0.42, None, 0.81]), _span([0.5]), _span([float("nan")])
    ('.42–.81', '.50', 'n/a')
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return "n/a"
    fmt = lambda v: f"{v:.2f}".replace("0.", ".", 1)  # noqa: E731
    lo, hi = min(finite), max(finite)
    return fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"


def agreement_headline(table: pl.DataFrame) -> str:
    """``agree: 5 criteria, α .42–.81`` (Krippendorff's α over the criteria)."""
    alpha = table["krippendorff_alpha"].to_list() if "krippendorff_alpha" in table.columns else []
    return f"agree: {table.height} criteria, α {_span(alpha)}"


def judge_headline(table: pl.DataFrame, judges: Sequence[str]) -> str:
    """``agree: judge J, 5 criteria, κ vs majority .54–.90`` (criterion rows, not the pooled ``(all)``)."""
    rows = table.filter((pl.col("reference") == "majority") & (pl.col("criterion") != "(all)"))
    n_crit = table.filter(pl.col("criterion") != "(all)")["criterion"].n_unique()
    return f"agree: judge {', '.join(judges)}, {n_crit} criteria, κ vs majority {_span(rows['cohen_kappa'].to_list())}"


def stability_headline(table: pl.DataFrame) -> str:
    """``agree: stability A vs B, 5 criteria, flip rate .00–.12``."""
    pair = f"{table['run_a'][0]} vs {table['run_b'][0]}" if table.height else "(no criteria)"
    return f"agree: stability {pair}, {table.height} criteria, flip rate {_span(table['flip_rate'].to_list())}"


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


def judge_lines(table: pl.DataFrame, judges: Sequence[str], notes: Sequence[str] = ()) -> list[str]:
    """The stderr lines of a judge table: its notes, the criteria x references, then the leniency of each judge
    against the human majority per criterion (``docs/commands/agree.md#agree-judge-validate-an-llm-judge-against-humans``).

    Args:
        table: The judge table (:func:`~tutormetrics.psychometrics.judge.judge_table`).
        judges: The raters that are LLM judges.
        notes: Notes printed first, each as ``note: ...``.
    """
    refs = table["reference"].unique(maintain_order=True).to_list()
    lines = [f"note: {note}" for note in notes]
    lines.append(f"judge {', '.join(judges)}: {table['criterion'].n_unique()} criteria x {len(refs)} references ({', '.join(refs)})")
    for r in table.filter(pl.col("reference") == "majority").iter_rows(named=True):
        if r["mean_judge"] is not None and r["pct_max_judge"] == r["pct_max_judge"]:
            lines.append(
                f"leniency: {r['judge']} on {r['criterion']}: {r['pct_max_judge']:.1f}% of max vs humans {r['pct_max_ref']:.1f}% "
                f"(mean difference {r['mean_diff']:+.3f}, sign test p {r['sign_p']:.3g})"
            )
    return lines
