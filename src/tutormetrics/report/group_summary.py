"""``summarize``: per-group tables of metrics and, optionally, rubric ratings (``docs/design/raters.md#summarize``).

Variables are the metric columns of the metrics table (its column descriptions,
:func:`tutormetrics.metrics.columns.describe_frame`: from the manifest, else every numeric column but the
id, the group column and the Scorer's flags), in file order; a ``family`` column names each
variable's family (``rating`` for the ratings). With ratings, ``<criterion>_score`` and ``<criterion>_endorsed`` per criterion follow (the
exchange is the unit). Statistics per group × variable come from :mod:`tutormetrics.stats.descriptives`.

Example:
    >>> m = pl.DataFrame({"exchange_id": ["a", "b", "c"], "tutor": ["T", "T", "U"], "words": [3, 5, 4]})
    >>> r = pl.DataFrame({"exchange_id": ["a", "b", "z"], "rater": ["h"] * 3, "criterion": ["tone"] * 3,
    ...                   "score": [1, 0, 1]})
    >>> res = summarize(m, r, group_col="tutor", n_resamples=0)
    >>> res.table.filter(pl.col("group") == "T")["mean"].to_list(), res.notes
    ([4.0, 0.5, 0.5], ['ratings: 1 id(s) not in the metrics were ignored'])
    >>> res.table["family"].unique(maintain_order=True).to_list()
    ['other', 'rating']
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.flags import flag, n_resamples_flag, seed_flag, split_list
from tutormetrics.ids import IdKey, read_keyed
from tutormetrics.io.tables import infer_format, require_columns, write_table
from tutormetrics.metrics.columns import (
    ColumnDescription,
    column_families,
    describe_frame,
    metric_names,
    not_metric_columns,
)
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.ratings import RatingsLike, rating_variables
from tutormetrics.report.paper import paper_table, paper_variables
from tutormetrics.report.tables import table_format, write_text
from tutormetrics.stats.descriptives import summarize_groups
from tutormetrics.stats.group_columns import group_columns, group_values, join_group_cols, with_group_label
from tutormetrics.stats.totals import TotalSpec, add_total, parse_slots, parse_total, rank_desc

__all__ = [
    "SummarizeOptions", "SummaryLayout", "SummaryResult", "check_totals", "read_summary_metrics", "summarize",
    "summarize_metrics", "write_summary", "written_variables",
]


class SummaryResult(NamedTuple):
    """The long summary table, notes for people (dropped rows, ignored ratings) and, with a total,
    the per-row totals table (``--totals-out``)."""

    table: pl.DataFrame
    notes: list[str]
    rows: pl.DataFrame | None = None


def _total_or_none(text: str | None) -> TotalSpec | None:
    """``--total NAME=t1+t2+…`` parsed (:func:`~tutormetrics.stats.totals.parse_total`); ``None`` stays ``None``."""
    return parse_total(text) if text else None


@dataclass(kw_only=True)
class SummarizeOptions:
    """What ``summarize`` computes (``docs/commands/summarize.md``): the groups, the bootstrap CI of the mean and
    the optional rubric total (``docs/commands/summarize.md#formats-and-columns``); the flags are the command's.

    >>> o = SummarizeOptions(total=parse_total("total=a+b"), max_total=16)
    >>> o.group_col, o.n_resamples, o.seed, o.total.terms
    ('tutor', 2000, 0, ('a', 'b'))
    """

    group_col: str = flag(
        "--group-col", default=["tutor"], parse=join_group_cols, cli_type=list[str] | None,
        help="Column(s) with the groups, e.g. tutor; repeat or comma-separate: a group is the combination, labelled a/b.",
    )
    n_resamples: int = n_resamples_flag(2000)
    seed: int = seed_flag()
    #: Level of the bootstrap CI of the mean (Python only; the command keeps 95%).
    confidence_level: float = 0.95
    total: TotalSpec | None = flag(
        "--total", default=None, parse=_total_or_none, cli_type=str | None,
        help="NAME=t1+t2+...: per-row total of columns, slots or criteria (summarised last, with pct_of_max and rank).",
    )
    slots: dict[str, tuple[str, ...]] = flag(
        "--slot", default=None, parse=parse_slots, cli_type=list[str] | None,
        help="S=c1,c2,...: S is whichever one of c1, c2, ... the row has (repeatable).",
    )
    max_total: float | None = flag("--max", default=None, help="Largest possible total: fills pct_of_max = 100*mean/M.")


def check_totals(options: SummarizeOptions, totals_out: str | os.PathLike[str] | None = None) -> None:
    """``--slot``, ``--max`` and ``--totals-out`` need ``--total``; ``--max`` is positive (exit 2 otherwise).

    >>> check_totals(SummarizeOptions(max_total=16))
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --slot, --max and --totals-out need --total
      hint: e.g. --total total=a+b+specific
    """
    if options.total is None and (options.slots or options.max_total is not None or totals_out):
        raise ConfigError("--slot, --max and --totals-out need --total", hint="e.g. --total total=a+b+specific")
    if options.max_total is not None and not options.max_total > 0:
        raise ConfigError(f"--max {options.max_total:g}: must be positive")


@dataclass(kw_only=True)
class SummaryLayout:
    """How the summary is written: the format (csv/parquet/jsonl long table, ``.md`` or ``.tex`` paper table),
    its variables and orientation (``docs/commands/summarize.md#formats-and-columns``).

    >>> SummaryLayout().formats("t.md"), SummaryLayout(output_format="tex").formats("t.csv")
    (('md', 'csv'), ('tex', 'csv'))
    """

    output_format: str | None = flag("--output-format", default=None, help="csv, md or tex (default: from the extension of -o).")
    variables: list[str] | None = flag(
        "--vars", default=None, parse=split_list, cli_type=list[str] | None,
        help="Variables of the table, in this order (repeat or comma-separate); default: every metric and rating "
        "variable (diagnostic flags are never metrics).",
    )
    transpose: bool = flag("--transpose", default=False, help=".md/.tex: variables as rows, groups as columns.")

    def formats(self, output: str | os.PathLike[str]) -> tuple[str, str]:
        """``(csv|md|tex, the table kind of a csv output)``: an unknown extension stops here, before the work."""
        fmt = table_format(output, self.output_format)
        return fmt, infer_format(output) if fmt == "csv" and self.output_format is None else "csv"


def _join_ratings(
    metrics: pl.DataFrame, ratings: RatingsLike, id_col: str, columns: dict[str, str]
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Metrics with the rating variables joined on the id (as text); the new variable names; notes."""
    require_columns(metrics, [id_col], source="metrics", option="--id")
    wide = rating_variables(ratings, id_col=id_col, **columns).rename({id_col: "__rid"})
    new = [c for c in wide.columns if c != "__rid"]
    clash = [c for c in new if c in metrics.columns]
    if clash:
        raise InputSchemaError(
            f"metrics already have column(s) {', '.join(clash)}, which the ratings would add",
            hint="rename those metric columns or the criteria",
        )
    ids = metrics.get_column(id_col).cast(pl.String)
    unknown = wide.filter(~pl.col("__rid").is_in(ids.drop_nulls().implode())).height
    notes = [f"ratings: {unknown} id(s) not in the metrics were ignored"] if unknown else []
    joined = metrics.with_columns(ids.alias("__rid")).join(wide, on="__rid", how="left", maintain_order="left")
    return joined.drop("__rid"), new, notes


def read_summary_metrics(path: str | os.PathLike[str], key: IdKey, group_col: str) -> pl.DataFrame:
    """The metrics table of ``summarize`` keyed by ``key`` (``--id``, ``--id-sep``): the parts of a composite id are
    ids, not metrics, so they are dropped (but the group column, when it is one of them).

    Args:
        path: The metrics file.
        key: The id key (``--id``, ``--id-sep``).
        group_col: The group column (kept when it is an id part).
    """
    frame = read_keyed(path, key, id_columns=[key.column])
    keep = group_columns(group_col)
    return frame.drop([p for p in key.id_parts if p not in keep and p in frame.columns])


def summarize_metrics(
    metrics: pl.DataFrame,
    options: SummarizeOptions | None = None,
    *,
    ratings: RatingsLike | None = None,
    id_col: str = "exchange_id",
    source: str | os.PathLike[str] | None = None,
    log: Log = quiet,
) -> SummaryResult:
    """``summarize`` from Python: per group × variable ``n, mean, sd, median, ci_low, ci_high`` of every metric of
    ``metrics`` (described from the manifest beside ``source``, else every numeric column but the id, the group and
    the Scorer's flags), then ``<criterion>_score`` and ``<criterion>_endorsed`` of ``ratings`` (the prepared
    :class:`~tutormetrics.psychometrics.ratings.Ratings` of ``read_ratings``), then the total of ``options.total``
    (``docs/commands/summarize.md``).

    Args:
        metrics: One row per exchange (e.g. from ``tutormetrics score``).
        options: Groups, bootstrap and total (default :class:`SummarizeOptions`: ``--group-col tutor``, 2000
            resamples, seed 0).
        ratings: Long ratings, or ``None``.
        id_col: The id column of ``metrics`` the ratings join on.
        source: The metrics file, whose manifest describes the columns.
        log: Where the note on numeric columns that are not metrics goes.

    Example:
        >>> m = pl.DataFrame({"exchange_id": ["a", "b", "c"], "tutor": ["T", "T", "U"], "words": [3, 5, 4]})
        >>> summarize_metrics(m, SummarizeOptions(n_resamples=0)).table.select("group", "mean").rows()
        [('T', 4.0), ('U', 4.0)]
    """
    options = options or SummarizeOptions()
    check_totals(options)
    columns = describe_frame(metrics, source=source, exclude=[id_col, options.group_col], log=log, command="summarize")
    return _summarize(metrics, ratings, options, id_col=id_col, columns=columns)


def summarize(
    metrics: pl.DataFrame,
    ratings: pl.DataFrame | None = None,
    *,
    group_col: str,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    columns: Sequence[ColumnDescription] | None = None,
    total: TotalSpec | None = None,
    slots: dict[str, tuple[str, ...]] | None = None,
    max_total: float | None = None,
) -> SummaryResult:
    """One row per group × variable: ``group, variable, family, n, mean, sd, median, ci_low, ci_high``; with
    ``total`` (``docs/design/studies.md#totals``) the total comes last and every row gains ``pct_of_max`` and ``rank``
    (filled on the total's rows only). The keyword form of :func:`summarize_metrics` for a raw ratings frame with
    the named columns.

    ``columns`` describes the metric columns (``describe_frame(metrics, source=path)`` reads the manifest).

    Args:
        metrics: The metrics table, one row per exchange.
        ratings: Long ratings joined as ``<criterion>_score``/``_endorsed`` variables; ``None``: none.
        group_col: The group column.
        id_col: The exchange id column.
        rater_col: The ratings' rater column.
        criterion_col: The ratings' criterion column.
        score_col: The ratings' score column.
        n_resamples: Bootstrap resamples per interval.
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        columns: Descriptions of the metric columns; ``None``: inferred.
        total: The rubric total (``--total NAME=t1+t2``); ``None``: none.
        slots: Slot → the columns it may be (``--slot``).
        max_total: Largest possible total (``--max``): fills ``pct_of_max``; ``None``: left empty.
    """
    options = SummarizeOptions(group_col=group_col, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level,
                               total=total, slots=dict(slots or {}), max_total=max_total)  # fmt: skip
    names = {"rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    return _summarize(metrics, ratings, options, id_col=id_col, columns=columns, rating_columns=names)


def _summarize(
    metrics: pl.DataFrame,
    ratings: RatingsLike | None,
    options: SummarizeOptions,
    *,
    id_col: str,
    columns: Sequence[ColumnDescription] | None,
    rating_columns: Mapping[str, str] | None = None,
) -> SummaryResult:
    """The table of :func:`summarize_metrics` (``rating_columns``: the column names of a raw ratings frame)."""
    total, slots, max_total = options.total, options.slots, options.max_total
    cols = group_columns(options.group_col)
    metrics, group_col = with_group_label(metrics, cols, source="metrics")
    described = list(columns) if columns is not None else describe_frame(metrics, exclude=not_metric_columns(id_col, group_col, *cols))
    described = [d for d in described if d.name not in (id_col, group_col, *cols) and d.name in metrics.columns]
    variables = metric_names(described)
    family = column_families(described)
    notes: list[str] = []
    if ratings is not None:
        metrics, rated, notes = _join_ratings(metrics, ratings, id_col, dict(rating_columns or {}))
        variables += rated
    else:
        rated = []
    rows = None
    if total is not None:
        criteria = {v[: -len("_score")]: v for v in rated if v.endswith("_score")}
        res = add_total(metrics, total, slots, criteria=criteria, max_total=max_total)
        metrics = res.frame
        notes += res.notes
        variables.append(total.name)
        keep = [c for c in metrics.columns if not c.endswith("_endorsed") or c not in rated]
        pct = (100.0 * pl.col(total.name) / max_total) if max_total else pl.lit(None, dtype=pl.Float64)
        rows = metrics.select(keep).with_columns(pct.cast(pl.Float64).alias("pct_of_max"))
    if not variables:
        raise InputSchemaError(
            f"metrics: no numeric column to summarise besides {id_col!r} and {group_col!r}",
            hint="pass a metrics table from `tutormetrics score`, or add --ratings",
        )
    table, dropped = summarize_groups(
        metrics, group_col=group_col, variables=variables, n_resamples=options.n_resamples, seed=options.seed,
        confidence_level=options.confidence_level,
    )
    if dropped:
        notes.insert(0, f"metrics: {dropped} row(s) with a missing {group_col!r} were dropped")
    if total is not None:
        family[total.name] = "total"
    families = pl.Series("family", [family.get(v, "rating") for v in table["variable"].to_list()], dtype=pl.String)
    table = table.insert_column(table.columns.index("variable") + 1, families)
    if total is not None:
        is_total = pl.col("variable") == total.name
        means = table.filter(is_total)
        ranks = dict(zip(means["group"].to_list(), rank_desc(means["mean"].to_list()), strict=True))
        pct = (100.0 * pl.col("mean") / max_total) if max_total else pl.lit(None, dtype=pl.Float64)
        table = table.with_columns(
            pl.when(is_total).then(pct).otherwise(None).cast(pl.Float64).alias("pct_of_max"),
            pl.when(is_total).then(pl.col("group").replace_strict(ranks, default=None, return_dtype=pl.Int64)).otherwise(None).alias("rank"),
        )
    return SummaryResult(_with_group_columns(table, metrics, cols), notes, rows)


def _with_group_columns(table: pl.DataFrame, metrics: pl.DataFrame, cols: Sequence[str]) -> pl.DataFrame:
    """Two or more ``--group-col``: the groups in value-tuple order and one column per group column after
    ``group`` (``docs/guide/paper.md#group-col``); a clash with an output column is exit 2."""
    if len(cols) < 2:
        return table
    clash = [c for c in cols if c in table.columns]
    if clash:
        raise ConfigError(f"--group-col {clash[0]!r} clashes with the output column of that name",
                          hint="rename the input column")  # fmt: skip
    values = group_values(metrics, cols).with_row_index("_order")
    out = table.join(values, on="group", how="left", maintain_order="left").sort("_order", maintain_order=True).drop("_order")
    at = out.columns.index("group") + 1
    names = [c for c in out.columns if c not in cols]
    return out.select([*names[:at], *cols, *names[at:]])


def written_variables(table: pl.DataFrame, layout: SummaryLayout, fmt: str) -> list[str]:
    """The variables :func:`write_summary` writes of the summary ``table`` in format ``fmt`` (``csv``, ``md``,
    ``tex``): ``--vars`` when given, else every variable (csv) or the paper table's default set (md/tex).

    Args:
        table: The summary table (``SummaryResult.table``).
        layout: The ``--vars``, format and orientation.
        fmt: The format :meth:`SummaryLayout.formats` chose.
    """
    if fmt in ("md", "tex") or layout.variables:
        return paper_variables(table, layout.variables, diagnostics=fmt not in ("md", "tex"))
    return table["variable"].unique(maintain_order=True).to_list()


def write_summary(
    result: SummaryResult, output: str | os.PathLike[str], layout: SummaryLayout | None = None, *, group_col: str = "group",
    total: str | None = None, caption: str | None = None,
) -> str:
    """Write the summary table to ``output`` as ``layout`` says and return its format (``csv``, ``md`` or ``tex``):
    a paper table (``.md``/``.tex``: groups × "mean [CI]", the chosen variables, no diagnostics) or the long table
    (csv/parquet/jsonl; ``--vars`` keeps those variables in that order, diagnostics allowed).

    Args:
        result: The summary of :func:`summarize_metrics`.
        output: The file written.
        layout: Format, variables and orientation (default: from the extension, every variable).
        group_col: The group column's name, the paper table's first header.
        total: The name of the total, if any (the paper table's last column).
        caption: ``--caption`` of the paper table (None: its default caption).
    """
    layout = layout or SummaryLayout()
    fmt, kind = layout.formats(output)
    if fmt in ("md", "tex"):
        text = paper_table(result.table, fmt, " / ".join(group_columns(group_col)) or group_col, variables=layout.variables, diagnostics=False,
                           transpose=layout.transpose, total=total, caption=caption,
                           label="tab:" + re.sub(r"[^A-Za-z0-9]", "-", Path(output).stem))  # fmt: skip
        write_text(text, output)
        return fmt
    table = result.table
    if layout.variables:
        keep = written_variables(table, layout, fmt)
        order = pl.col("variable").replace_strict({v: i for i, v in enumerate(keep)}, return_dtype=pl.Int64)
        table = table.filter(pl.col("variable").is_in(keep)).sort(order, "group", maintain_order=True)
    write_table(table, output, kind)
    return fmt
