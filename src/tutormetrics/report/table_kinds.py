"""The tables the report recognises, one declaration each (``docs/development.md#add-a-report-section``).

A table is recognised by its columns, never by its file name: the first kind of :data:`KINDS` whose ``columns`` are
all in its header names it (so the more specific kinds come first: a length-bias table also has the judge table's
``criterion, judge, reference``). A kind with a ``title`` gets a section drawn by the page's one generic renderer
(``assets/report.js``, ``declaredSection``): the title, ``lead`` (what the numbers mean), the documentation page to
read, and each table with its ``highlight`` columns emphasised, each ``intervals`` triple shown as
"estimate [low, high]", and the rows its ``flag`` selects marked and counted. Kinds without a title are drawn by
their own code (the heatmap, agreement, θ, summaries, the drill-downs).

Example:
    >>> kind_of(["judge", "criterion", "reference", "length_col", "slope", "slope_ci_low", "slope_ci_high"]).name
    'length_bias'
    >>> kind_of(["criterion", "judge", "reference", "kappa"]).name, kind_of(["metric", "theta"])
    ('judge', None)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True)
class TableKind:
    """One kind of table: how it is recognised and, with a ``title``, how its section reads.

    Attributes:
        name: The key in the page's data and the section's id.
        columns: Columns that must all be present.
        title: The section heading; empty: the kind is drawn by its own code.
        lead: What the numbers mean, in two or three sentences.
        doc: The documentation page (and anchor) that explains the table, printed as text (the page links nowhere).
        place: The built-in section it follows: ``"agreement"`` or ``"theta"``.
        highlight: Columns shown emphasised (the ones to read first).
        intervals: ``(estimate, low, high)`` columns shown as one cell.
        flag: A polars expression, true on the rows to mark (evaluated on the table as read).
        flag_label: What a marked row means, for the count above the table.
    """

    name: str
    columns: frozenset[str]
    title: str = ""
    lead: str = ""
    doc: str = ""
    place: str = "agreement"
    highlight: tuple[str, ...] = ()
    intervals: tuple[tuple[str, str, str], ...] = ()
    flag: pl.Expr | None = None
    flag_label: str = ""

    def flagged(self, table: pl.DataFrame) -> list[int]:
        """Indexes of the rows ``flag`` marks (none without a flag).

        >>> lb = next(k for k in KINDS if k.name == "length_bias")
        >>> lb.flagged(pl.DataFrame({"slope_ci_low": [0.1, -0.2, None], "slope_ci_high": [0.5, 0.3, None]}))
        [0]
        """
        if self.flag is None or table.height == 0:
            return []
        marks = table.select(self.flag.fill_null(False).alias("_flag")).to_series()
        return [i for i, hit in enumerate(marks.to_list()) if hit]

    def section(self) -> dict[str, Any]:
        """The declaration as the page reads it (everything but the recognising columns and the expression)."""
        return {"kind": self.name, "title": self.title, "lead": self.lead, "doc": self.doc, "place": self.place,
                "highlight": list(self.highlight), "intervals": [list(t) for t in self.intervals],
                "flag_label": self.flag_label}  # fmt: skip


def _num(column: str) -> pl.Expr:
    """A column as numbers (an all-empty CSV column is read as text)."""
    return pl.col(column).cast(pl.Float64, strict=False)


def _excludes_zero(low: str, high: str) -> pl.Expr:
    """The interval [low, high] lies above or below 0 (an undefined end, NaN or empty, marks nothing: polars orders
    NaN above every number)."""
    defined = _num(low).is_finite() & _num(high).is_finite()
    return defined & ((_num(low) > 0) | (_num(high) < 0))


def _first_finite(first: str, then: str) -> pl.Expr:
    """``first`` where it is a finite number, else ``then``."""
    return pl.when(_num(first).is_finite()).then(_num(first)).otherwise(_num(then))


def _text(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.String).str.strip_chars()


LENGTH_BIAS = TableKind(
    "length_bias", frozenset({"judge", "criterion", "length_col", "slope", "slope_ci_low", "slope_ci_high"}),
    title="Length bias: does the judge reward long replies more than humans do?",
    lead=("Per judge and criterion, d = judge score − mean human score on the replies both rated. slope is the change "
          "in d per standard deviation of log length, in score points (the primary number): 0 means the judge and the "
          "humans treat long and short replies alike, > 0 that the judge gives long replies more than humans do, < 0 "
          "fewer. rho is Spearman's ρ(d, length); logit the ordinal model's log-odds of a higher judge score per SD of "
          "log length at equal human score (a second opinion only). Intervals resample dialogues when the table has "
          "n_clusters (agree --cluster-col)."),
    doc="docs/guide/judges.md#length-bias",
    highlight=("slope", "rho"),
    intervals=(("slope", "slope_ci_low", "slope_ci_high"), ("rho", "rho_ci_low", "rho_ci_high"),
               ("logit", "logit_ci_low", "logit_ci_high")),
    flag=_excludes_zero("slope_ci_low", "slope_ci_high"),
    flag_label="the 95% interval of the slope excludes 0 (the judge's score moves with length more than the humans')",
)  # fmt: skip

STABILITY = TableKind(
    "stability", frozenset({"criterion", "run_a", "run_b", "flips", "flip_rate"}),
    title="Judge stability: the same verdicts twice?",
    lead=("Two runs (or versions) of one judge on the replies both rated, per criterion: flips is how many verdicts "
          "changed and flip_rate their share, with Wilson's 95% interval (widened by the design effect when verdicts "
          "change dialogue by dialogue); up_rate and down_rate say which way, mean_shift by how much, cohen_kappa is the "
          "test–retest agreement, and mcnemar_p tests whether up and down flips are equally likely (a systematic shift). "
          "A judge can rewrite many verdicts while its accuracy stays flat: the flip rate sees it."),
    doc="docs/guide/judges.md#stability",
    highlight=("flips", "flip_rate", "mean_shift", "cohen_kappa"),
    intervals=(("flip_rate", "flip_ci_low", "flip_ci_high"),),
    flag=_first_finite("mcnemar_cluster_p", "mcnemar_p").is_finite() & (_first_finite("mcnemar_cluster_p", "mcnemar_p") < 0.05),
    flag_label="McNemar's test (the clustered one when the table has it) rejects equal up and down flips at .05: a systematic shift",
)  # fmt: skip

JUDGE_DIFFERENCES = TableKind(
    "judge_differences", frozenset({"criterion", "contrast", "a", "b", "measure", "estimate", "ci_low", "ci_high"}),
    title="Judge differences: which judge, and as good as a human?",
    lead=("Per criterion and agreement measure: judges rows are agreement(a, reference) − agreement(b, reference) for two "
          "judges on the replies a, b and the reference all rated; judge_vs_humans rows are the judge's mean agreement "
          "with each human minus the humans' mean agreement with each other. The 95% interval is paired (every row of a "
          "criterion uses the same resamples); an interval that excludes 0 says one side agrees better."),
    doc="docs/guide/judges.md#differences",
    highlight=("estimate",),
    intervals=(("estimate", "ci_low", "ci_high"),),
    flag=_excludes_zero("ci_low", "ci_high"),
    flag_label="the 95% interval excludes 0 (one side agrees better)",
)  # fmt: skip

FIT = TableKind(
    "fit", frozenset({"facet", "level", "infit", "infit_zstd", "outfit", "outfit_zstd", "flag"}),
    title="Fit: do the ratings behave as the model expects?",
    lead=("Per criterion, rater, group and exchange: infit and outfit mean squares (expected 1; outfit is sensitive to "
          "surprising single ratings, infit to patterns) with their standardised ZSTD. flag underfit: more noise than "
          "the model expects (MnSq above the range and ZSTD ≥ z: a rater rating at random, a criterion read differently), "
          "overfit: less (too predictable, e.g. a halo). Exchanges whose every rating is the lowest or the top category "
          "are extreme and not fitted (reason extreme)."),
    doc="docs/measurement.md#fit", place="theta",
    highlight=("infit", "outfit", "flag"),
    flag=_text("flag").is_in(["underfit", "overfit"]),
    flag_label="misfit (flag underfit or overfit)",
)  # fmt: skip

SEPARATION = TableKind(
    "separation", frozenset({"facet", "rmse", "true_sd", "separation", "strata", "reliability"}),
    title="Separation and reliability per facet",
    lead=("How well each facet's elements are told apart: separation G = true SD / RMSE (the spread of the estimates "
          "beyond their error), strata H = (4G + 1)/3 distinct levels, reliability R = G²/(1 + G²). For exchanges R is "
          "the EAP reliability of θ; for raters a high R means the raters differ in severity (reliably), the fixed χ² "
          "tests that all are equal."),
    doc="docs/measurement.md#separation", place="theta",
    highlight=("separation", "reliability"),
)  # fmt: skip

BIAS = TableKind(
    "bias", frozenset({"pair", "level_a", "level_b", "bias", "obs_minus_exp", "flag"}),
    title="Bias and interaction",
    lead=("Per cell (a rater × criterion, or a criterion × group): bias β in logits with every main estimate held "
          "fixed; β > 0 means lower scores than the main effects predict (the rater more severe on that criterion, the "
          "criterion harder for that group). flag bias: p_adj < .05 and |β| ≥ the substantive threshold (0.5 logit by "
          "default)."),
    doc="docs/measurement.md#bias-interaction", place="theta",
    highlight=("bias", "p_adj", "flag"),
    flag=_text("flag") == "bias",
    flag_label="significant and substantive interaction (flag bias)",
)  # fmt: skip

DIF = TableKind(
    "dif", frozenset({"criterion", "focal", "reference", "ets_class", "rasch_class"}),
    title="DIF: does a criterion work differently for two groups?",
    lead=("Each focal group against the reference, matched on the observed total score (Mantel–Haenszel Δ for binary "
          "criteria, Mantel's χ² and SMD for ordinal ones) and on θ (the Rasch contrast, in logits, > 0: harder for "
          "the focal group). ETS classes: A/AA negligible, B/BB moderate, C/CC large (significantly beyond the "
          "moderate bound); favours names the group that gets more credit than its overall quality predicts."),
    doc="docs/measurement.md#dif", place="theta",
    highlight=("ets_class", "favours", "contrast", "rasch_class"),
    intervals=(),
    flag=_text("ets_class").is_in(["C", "CC"]) | (_text("rasch_class") == "C"),
    flag_label="C-class DIF (ETS C or CC, or Rasch C)",
)  # fmt: skip

#: Every kind, in the order a header is tried (more specific first).
KINDS: tuple[TableKind, ...] = (
    TableKind("correlations", frozenset({"metric", "target", "rho"})),
    TableKind("predictive", frozenset({"target", "model", "measure", "estimate", "n_groups"})),
    TableKind("comparisons", frozenset({"metric", "group_a", "group_b"})),
    TableKind("summary", frozenset({"group", "variable", "mean"})),
    LENGTH_BIAS,
    STABILITY,
    JUDGE_DIFFERENCES,
    TableKind("judge", frozenset({"criterion", "judge", "reference"})),
    FIT,
    SEPARATION,
    BIAS,
    DIF,
    TableKind("facets", frozenset({"facet", "level", "estimate"})),
    TableKind("conversations", frozenset({"conversation_id", "n_turns", "n_tutor_turns"})),
    TableKind("theta", frozenset({"theta", "theta_sd"})),
)

#: The kinds drawn by the generic section renderer, in page order within their place.
DECLARED: tuple[TableKind, ...] = tuple(k for k in KINDS if k.title)


def kind_of(columns: Iterable[str]) -> TableKind | None:
    """The first kind of :data:`KINDS` whose columns are all in ``columns``."""
    cols = set(columns)
    return next((k for k in KINDS if k.columns <= cols), None)
