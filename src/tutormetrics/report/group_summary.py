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

from collections.abc import Sequence
from typing import NamedTuple

import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.metrics.columns import (
    ColumnDescription,
    column_families,
    describe_frame,
    metric_names,
    not_metric_columns,
)
from tutormetrics.psychometrics.ratings import rating_variables
from tutormetrics.stats.descriptives import summarize_groups
from tutormetrics.stats.totals import TotalSpec, add_total, rank_desc

__all__ = ["SummaryResult", "summarize"]


class SummaryResult(NamedTuple):
    """The long summary table, notes for people (dropped rows, ignored ratings) and, with a total,
    the per-row totals table (``--totals-out``)."""

    table: pl.DataFrame
    notes: list[str]
    rows: pl.DataFrame | None = None


def _join_ratings(
    metrics: pl.DataFrame, ratings: pl.DataFrame, id_col: str, columns: dict[str, str]
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
    (filled on the total's rows only).

    ``columns`` describes the metric columns (``describe_frame(metrics, source=path)`` reads the manifest).
    """
    require_columns(metrics, [group_col], source="metrics", option="--group-col")
    described = list(columns) if columns is not None else describe_frame(metrics, exclude=not_metric_columns(id_col, group_col))
    described = [d for d in described if d.name not in (id_col, group_col) and d.name in metrics.columns]
    variables = metric_names(described)
    family = column_families(described)
    notes: list[str] = []
    if ratings is not None:
        names = {"rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
        metrics, rated, notes = _join_ratings(metrics, ratings, id_col, names)
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
        metrics, group_col=group_col, variables=variables, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level
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
        ranks = dict(zip(means["group"].to_list(), rank_desc(means["mean"].to_list())))
        pct = (100.0 * pl.col("mean") / max_total) if max_total else pl.lit(None, dtype=pl.Float64)
        table = table.with_columns(
            pl.when(is_total).then(pct).otherwise(None).cast(pl.Float64).alias("pct_of_max"),
            pl.when(is_total).then(pl.col("group").replace_strict(ranks, default=None, return_dtype=pl.Int64)).otherwise(None).alias("rank"),
        )
    return SummaryResult(table, notes, rows)
