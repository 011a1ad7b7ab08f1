"""Turn rubric ratings into correlation targets (``docs/statistics.md#targets``).

Ratings come long (``exchange_id, rater, criterion, score``) or wide (one column per criterion, or per
``criterion@rater``). The result is always wide: the id column, then one Float64 column per target,
with null where an exchange has no rating for that target.

Aggregation over raters, per exchange and criterion:

- ``"mean"`` (primary): the mean over raters, so two binary raters give 0 / 0.5 / 1;
- ``"per_rater"``: one target per rater, named ``criterion@rater``;
- ``"min"``: all raters endorse; ``"max"``: any rater endorses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import read_table, require_columns
from tutormetrics.na_codes import negative_category_warnings
from tutormetrics.progress import Log, quiet

Aggregate = Literal["mean", "per_rater", "min", "max"]
AGGREGATES: tuple[str, ...] = ("mean", "per_rater", "min", "max")
#: Separator between criterion and rater in per-rater target names (``coherence@r1``).
RATER_SEP = "@"
_MISSING_TEXT = ("", "NA", "NaN", "nan", "null", "None")


def _check_aggregate(aggregate: str) -> None:
    if aggregate not in AGGREGATES:
        raise ConfigError(f"unknown aggregate {aggregate!r}", hint=f"use one of {', '.join(AGGREGATES)}")


def _as_float(df: pl.DataFrame, col: str, *, id_col: str, source: str) -> pl.Series:
    """Column ``col`` as Float64 (NaN and blanks become null); text that is not a number raises.

    The error names the column, the first bad row (1-based data row), its id and its value.
    """
    s = df.get_column(col)
    if s.dtype.is_numeric() or s.dtype in (pl.Boolean, pl.Null):
        return s.cast(pl.Float64).fill_nan(None)
    if s.dtype not in (pl.String, pl.Categorical, pl.Enum):
        raise InputSchemaError(f"{source}: column {col!r} has type {s.dtype}, expected numbers")
    frame = pl.DataFrame({"t": s.cast(pl.String).str.strip_chars()})
    txt = frame.select(
        pl.when(pl.col("t").is_in(list(_MISSING_TEXT))).then(None).otherwise(pl.col("t")).alias(col)
    ).to_series()
    num = txt.cast(pl.Float64, strict=False)
    bad = (txt.is_not_null() & num.is_null()).arg_true()
    if bad.len() > 0:
        i = int(bad[0])
        where = f"row {i + 1}"
        if id_col in df.columns:
            where += f" ({id_col}={df.get_column(id_col)[i]!r})"
        raise InputSchemaError(
            f"{source}: column {col!r} has a non-numeric value {txt[i]!r} at {where}",
            hint=f"scores must be numbers (e.g. 0/1, 0/0.5/1 or 0-2); {bad.len()} row(s) affected",
        )
    return num.fill_nan(None).alias(col)


def _check_ids(df: pl.DataFrame, id_col: str, source: str) -> None:
    nulls = df.get_column(id_col).null_count()
    if nulls:
        raise InputSchemaError(f"{source}: {nulls} row(s) have an empty {id_col!r}", hint="every row needs an id")


def _first_duplicate(df: pl.DataFrame, keys: list[str]) -> dict[str, object] | None:
    dup = df.select(keys).filter(pl.struct(keys).is_duplicated())
    return dup.row(0, named=True) if dup.height else None


def clean_long_ratings(
    ratings: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    rater_col: str | None = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    source: str = "ratings",
    repeats: bool = False,
) -> pl.DataFrame:
    """The one cleaner of long ratings: columns ``_id, _rater, _crit, _score`` (``_rater`` only when
    ``rater_col`` is in the table), scores as Float64 with NaN/blank → null.

    Raises :class:`InputSchemaError` on a missing column, an empty id, rater or criterion, a non-numeric
    score (naming the row), or a repeated (id, rater, criterion) row (allowed with ``repeats``: anonymous
    rater slots, ``--raters exchangeable``, where each row is one rating). Missing scores (null, NaN, blank,
    ``NA``) stay as null: targets keep an id whose scores are all missing; the MFRM and agreement drop them.

    Args:
        ratings: Long ratings.
        id_col: The exchange id column.
        rater_col: The rater column; ``None`` or absent: no ``_rater``.
        criterion_col: The criterion column.
        score_col: The score column.
        source: The table's name in the errors.
        repeats: Allow a repeated (id, rater, criterion) row (anonymous rater slots).

    Example:
        >>> long = pl.DataFrame({"exchange_id": ["a", "a"], "rater": ["r1", "r2"],
        ...                      "criterion": ["tone", "tone"], "score": ["1", "NaN"]})
        >>> clean_long_ratings(long)["_score"].to_list()
        [1.0, None]
    """
    require_columns(ratings, [id_col, criterion_col, score_col], source=source)
    has_rater = rater_col is not None and rater_col in ratings.columns
    _check_ids(ratings, id_col, source)
    score = _as_float(ratings, score_col, id_col=id_col, source=source)
    crit = ratings.get_column(criterion_col).cast(pl.String)
    if crit.null_count():
        raise InputSchemaError(f"{source}: {crit.null_count()} row(s) have an empty {criterion_col!r}")
    cols: dict[str, pl.Series] = {"_id": ratings.get_column(id_col), "_crit": crit, "_score": score}
    if has_rater:
        assert rater_col is not None
        rater = ratings.get_column(rater_col).cast(pl.String)
        if rater.null_count():
            raise InputSchemaError(
                f"{source}: {rater.null_count()} row(s) have an empty {rater_col!r}", hint=f"every rating needs its {rater_col}"
            )
        cols["_rater"] = rater
    long = pl.DataFrame(cols)
    if repeats:
        return long
    keys = ["_id", "_rater", "_crit"] if has_rater else ["_id", "_crit"]
    dup = _first_duplicate(long, keys)
    if dup is not None:
        names = {"_id": id_col, "_rater": rater_col, "_crit": criterion_col}
        shown = ", ".join(f"{names[k]}={v!r}" for k, v in dup.items())
        raise InputSchemaError(
            f"{source}: more than one score for {shown}",
            hint="each rater scores each criterion of an exchange once"
            + ("" if has_rater else f"; add a rater column ({rater_col!r}) if several raters scored it"),
        )
    return long


@frame_inputs("ratings")
def ratings_to_targets(
    ratings: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    rater_col: str | None = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    aggregate: Aggregate = "mean",
) -> pl.DataFrame:
    """Long ratings → wide targets: the id column plus one Float64 column per target.

    With ``aggregate="mean"`` a target is ``mean_r score[id, criterion, r]`` over the raters who
    rated it; ``"min"``/``"max"`` take the minimum/maximum; ``"per_rater"`` keeps one column per
    rater named ``criterion@rater``. ``rater_col`` may be absent (one rating per id and criterion).
    Missing scores (null, NaN, blank) are skipped; an id whose ratings are all missing keeps a row of
    nulls. Ids and targets keep their first-appearance order. A repeated (id, rater, criterion) row,
    an empty id, rater or criterion, or a non-numeric score raises :class:`InputSchemaError`
    (cleaning by :func:`clean_long_ratings`).

    Args:
        ratings: Long ratings.
        id_col: The exchange id column.
        rater_col: The rater column; ``None`` or absent: one rating per id and criterion.
        criterion_col: The criterion column.
        score_col: The score column.
        aggregate: ``mean``, ``min``, ``max`` or ``per_rater``.

    Example:
        >>> long = pl.DataFrame({"exchange_id": ["a", "a", "b", "b"], "rater": ["r1", "r2", "r1", "r2"],
        ...                      "criterion": ["tone"] * 4, "score": [1, 0, 1, 1]})
        >>> ratings_to_targets(long).rows()
        [('a', 0.5), ('b', 1.0)]
    """
    _check_aggregate(aggregate)
    source = "ratings"
    has_rater = rater_col is not None and rater_col in ratings.columns
    if aggregate == "per_rater" and not has_rater:
        require_columns(ratings, [id_col, criterion_col, score_col], source=source)
        raise ConfigError(
            f"aggregate='per_rater' needs a rater column, but {rater_col!r} is not in the ratings",
            hint="name the rater column, or use aggregate='mean'",
        )
    long = cleaned_long(
        ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col, source=source
    )
    return long_to_targets(long, id_col=id_col, aggregate=aggregate, source=source)


def long_to_targets(long: pl.DataFrame, *, id_col: str, aggregate: Aggregate = "mean", source: str = "ratings") -> pl.DataFrame:
    """Cleaned long ratings (``_id, [_rater], _crit, _score``, see :func:`clean_long_ratings`) → wide targets
    named ``id_col`` and one Float64 column per target (:func:`ratings_to_targets`).

    Args:
        long: Cleaned long ratings (``_id, [_rater], _crit, _score``).
        id_col: Name of the id column of the result.
        aggregate: ``mean``, ``min``, ``max`` or ``per_rater``.
        source: The table's name in the errors.
    """
    if aggregate == "per_rater":
        long = long.with_columns((pl.col("_crit") + RATER_SEP + pl.col("_rater")).alias("_target"))
    else:
        long = long.with_columns(pl.col("_crit").alias("_target"))
    target_names = long.get_column("_target").unique(maintain_order=True).to_list()
    if id_col in target_names:
        raise InputSchemaError(f"{source}: a criterion is named {id_col!r}, the same as the id column")

    agg = {"mean": pl.col("_score").mean(), "min": pl.col("_score").min(), "max": pl.col("_score").max()}
    cell = agg.get(aggregate, pl.col("_score").first())
    per_cell = long.group_by(["_id", "_target"], maintain_order=True).agg(cell.alias("_value"))
    ids = long.select(pl.col("_id").unique(maintain_order=True))
    if per_cell.height:
        wide = per_cell.pivot(on="_target", index="_id", values="_value", aggregate_function=None)
        wide = ids.join(wide, on="_id", how="left", maintain_order="left")
    else:
        wide = ids
    return wide.select(
        pl.col("_id").alias(id_col),
        *[
            (pl.col(t) if t in wide.columns else pl.lit(None)).cast(pl.Float64).alias(t)
            for t in target_names
        ],
    )


@frame_inputs("df")
def wide_ratings_to_targets(
    df: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    columns: list[str] | None = None,
    aggregate: Aggregate = "mean",
    rater_col: str | None = None,
    log: Log | None = None,
) -> pl.DataFrame:
    """Wide ratings → targets. Columns are criteria, or ``criterion@rater`` per-rater scores.

    ``columns=None`` takes every numeric column except the id (and ``rater_col``), ``conversation_id``, ``turn``
    and id-like names (``docs/design/datasets.md#metric-columns``); ``log`` hears which targets were taken and which left out. With
    ``aggregate="mean"`` (or ``"min"``/``"max"``) the ``criterion@rater`` columns of a criterion are
    combined row-wise, ignoring missing values: ``target = mean_r score[criterion@r]``; plain
    criterion columns pass through. ``"per_rater"`` keeps the columns as they are. When ``rater_col``
    names a column of ``df`` (one row per exchange and rater), the table is melted to long form and
    handled by :func:`ratings_to_targets`. Duplicate ids raise :class:`InputSchemaError`.

    Args:
        df: Wide ratings, one row per exchange (or per exchange and rater with ``rater_col``).
        id_col: The exchange id column.
        columns: The target columns; ``None``: every numeric non-id column.
        aggregate: ``mean``, ``min``, ``max`` or ``per_rater``.
        rater_col: The rater column of a one-row-per-rater table; ``None``: none.
        log: Hears which targets were taken and which left out; ``None``: silent.

    Example:
        >>> wide = pl.DataFrame({"exchange_id": ["a", "b"], "tone@r1": [1, 1], "tone@r2": [0, 1]})
        >>> wide_ratings_to_targets(wide).rows()
        [('a', 0.5), ('b', 1.0)]
    """
    _check_aggregate(aggregate)
    source = "ratings"
    require_columns(df, [id_col], source=source, option="--id")
    _check_ids(df, id_col, source)
    skip = {id_col} | ({rater_col} if rater_col else set())
    if columns is None:
        from tutormetrics.metrics.columns import not_metric_reason

        numeric = [c for c in df.columns if c not in skip and (df.schema[c].is_numeric() or df.schema[c] == pl.Boolean)]
        left_out = [c for c in numeric if not_metric_reason(c.rpartition(RATER_SEP)[0] or c) is not None]
        columns = [c for c in numeric if c not in left_out]
        if log is not None and columns:
            shown = ", ".join(columns[:8]) + (", …" if len(columns) > 8 else "")
            why = f" (not targets: {', '.join(left_out)}: ids)" if left_out else ""
            log(f"note: validate: {len(columns)} targets from wide ratings: {shown}{why}; choose with --targets-from")
        if not columns:
            raise InputSchemaError(
                f"{source}: no numeric rating columns besides {id_col!r}",
                hint="pass the criterion columns explicitly, or give long ratings (criterion, score)",
            )
    else:
        require_columns(df, list(columns), source=source, option="--targets-from")
        columns = list(dict.fromkeys(columns))
    if rater_col and rater_col in df.columns:
        scores = df.select([id_col, rater_col, *columns]).with_columns(
            [_as_float(df, c, id_col=id_col, source=source) for c in columns]
        )
        long = scores.unpivot(index=[id_col, rater_col], on=columns, variable_name="_criterion", value_name="_score")
        return ratings_to_targets(
            long, id_col=id_col, rater_col=rater_col, criterion_col="_criterion", score_col="_score", aggregate=aggregate
        )

    dup = _first_duplicate(df, [id_col])
    if dup is not None:
        raise InputSchemaError(
            f"{source}: id {dup[id_col]!r} appears on more than one row of the wide ratings",
            hint=f"a wide table has one row per {id_col}; give long ratings (rater, criterion, score) for several raters",
        )
    values = {c: _as_float(df, c, id_col=id_col, source=source) for c in columns}
    if aggregate == "per_rater":
        return pl.DataFrame({id_col: df.get_column(id_col), **values})

    groups: dict[str, list[str]] = {}
    for c in columns:
        crit, sep, rater = c.rpartition(RATER_SEP)
        groups.setdefault(crit if sep and crit and rater else c, []).append(c)
    for crit, members in groups.items():
        if crit in members and len(members) > 1:
            raise InputSchemaError(
                f"{source}: criterion {crit!r} has both a plain column and per-rater columns ({', '.join(members)})",
                hint="rename the plain column or pass --targets-from to pick one form",
            )
    if id_col in groups:
        raise InputSchemaError(f"{source}: a criterion is named {id_col!r}, the same as the id column")
    frame = pl.DataFrame(values)
    combine = {"mean": pl.mean_horizontal, "min": pl.min_horizontal, "max": pl.max_horizontal}[aggregate]
    out = frame.select(
        [
            (pl.col(m[0]) if len(m) == 1 else combine([pl.col(c) for c in m])).cast(pl.Float64).alias(crit)
            for crit, m in groups.items()
        ]
    )
    return pl.concat([df.select(id_col), out], how="horizontal")


def is_long_ratings(df: pl.DataFrame, *, criterion_col: str = "criterion", score_col: str = "score") -> bool:
    """True when ``df`` has both a criterion and a score column (long ratings).

    Args:
        df: The ratings table.
        criterion_col: The criterion column.
        score_col: The score column.
    """
    return criterion_col in df.columns and score_col in df.columns


def ratings_frame_to_targets(
    df: pl.DataFrame,
    *,
    source: str = "ratings",
    id_col: str = "exchange_id",
    rater_col: str | None = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    aggregate: Aggregate = "mean",
    columns: list[str] | None = None,
) -> pl.DataFrame:
    """:func:`read_ratings` on a frame already in memory (long or wide, detected).

    Args:
        df: The ratings table.
        source: The table's name in the errors.
        id_col: The exchange id column.
        rater_col: The rater column of long ratings; ``None``: none.
        criterion_col: The criterion column of long ratings.
        score_col: The score column of long ratings.
        aggregate: ``mean``, ``min``, ``max`` or ``per_rater``.
        columns: Long: the criteria kept; wide: the criterion columns; ``None``: all.
    """
    if is_long_ratings(df, criterion_col=criterion_col, score_col=score_col):
        if columns is not None:
            wanted = list(dict.fromkeys(columns))
            present = set(df.get_column(criterion_col).cast(pl.String).unique().to_list())
            missing = [c for c in wanted if c not in present]
            if missing:
                raise InputSchemaError(
                    f"{source}: criterion {', '.join(map(repr, missing))} not found in the ratings",
                    hint=f"available criteria: {', '.join(sorted(str(c) for c in present if c is not None))}",
                )
            df = df.filter(pl.col(criterion_col).cast(pl.String).is_in(wanted))
        return ratings_to_targets(
            df, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col, aggregate=aggregate
        )
    return wide_ratings_to_targets(df, id_col=id_col, columns=columns, aggregate=aggregate, rater_col=rater_col)


# Uncertainty columns of a theta table that are not targets: *_sd, *_psd, *_se, CI/HDI bounds.
_THETA_AUX = re.compile(
    r"(_sd|_psd|_se|_sem)$|(^|_)(sd|psd|se|ci|hdi|eti)(_|$)|(^|_)(lo|hi|low|high|lower|upper)$|(^|_)(ci|hdi)\d+"
)


def theta_to_targets(df: pl.DataFrame, *, id_col: str = "exchange_id") -> pl.DataFrame:
    """Targets from a theta table: the id, ``theta`` and every other numeric column except uncertainty
    columns (``*_sd``, ``*_psd``, ``*_se``, CI/HDI bounds such as ``theta_ci_low`` or ``hdi_high``).

    Example:
        >>> th = pl.DataFrame({"exchange_id": ["a"], "theta": [0.3], "theta_sd": [0.5], "theta_explanatory": [0.1]})
        >>> theta_to_targets(th).columns
        ['exchange_id', 'theta', 'theta_explanatory']
    """
    require_columns(df, [id_col], source="theta", option="--id")
    cols = [
        c
        for c in df.columns
        if c != id_col and (df.schema[c].is_numeric()) and not _THETA_AUX.search(c.lower())
    ]
    if not cols:
        raise InputSchemaError(
            "theta: no numeric target column (expected 'theta')",
            hint=f"the theta table needs {id_col!r} and a numeric 'theta' column",
        )
    return df.select(id_col, *[pl.col(c).cast(pl.Float64).fill_nan(None) for c in cols])


def read_theta(path: str | os.PathLike[str], *, id_col: str = "exchange_id") -> pl.DataFrame:
    """Read a theta table (CSV, Parquet, JSONL) and return its targets (see :func:`theta_to_targets`)."""
    return theta_to_targets(read_table(path, id_columns=[id_col]), id_col=id_col)


def rating_variables(
    ratings: RatingsLike,
    *,
    id_col: str = "exchange_id",
    rater_col: str | None = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
) -> pl.DataFrame:
    """Per exchange, two variables per criterion (``docs/design/raters.md#summarize``), criteria in first-appearance order:

    * ``<criterion>_score`` = the mean score over the exchange's raters;
    * ``<criterion>_endorsed`` = the share of its ratings at the criterion's top category (the
      highest score observed for the criterion in the file).

    Columns: ``id_col`` (as text), then the variables; null where an exchange has no rating.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        id_col: The exchange id column.
        rater_col: The rater column; ``None``: none.
        criterion_col: The criterion column.
        score_col: The score column.

    Example:
        >>> long = pl.DataFrame({"exchange_id": ["a", "a", "b"], "rater": ["r1", "r2", "r1"],
        ...                      "criterion": ["tone"] * 3, "score": [2, 1, 0]})
        >>> rating_variables(long).rows()
        [('a', 1.5, 0.5), ('b', 0.0, 0.0)]
    """
    long = cleaned_long(
        ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col
    ).filter(pl.col("_score").is_not_null())
    long = long.with_columns(pl.col("_id").cast(pl.String), (pl.col("_score") == pl.col("_score").max().over("_crit")).alias("_top"))
    criteria = long.get_column("_crit").unique(maintain_order=True).to_list()
    per_cell = long.group_by(["_id", "_crit"], maintain_order=True).agg(
        pl.col("_score").mean().alias("score"), pl.col("_top").cast(pl.Float64).mean().alias("endorsed")
    )
    ids = long.select(pl.col("_id").unique(maintain_order=True))
    out = ids
    for crit in criteria:
        cell = per_cell.filter(pl.col("_crit") == crit).select(
            "_id", pl.col("score").alias(f"{crit}_score"), pl.col("endorsed").alias(f"{crit}_endorsed")
        )
        out = out.join(cell, on="_id", how="left", maintain_order="left")
    return out.rename({"_id": id_col})


#: A value is "rare" in a criterion when fewer than this many ratings and this share of them hold it.
RARE_COUNT, RARE_SHARE = 3, 0.05


def inferred_levels(scores: Sequence[float]) -> list[float]:
    """The scale a criterion's ratings show: its distinct values, less the rare ones that lie off the
    scale of the common ones (a single 7 or -1 among 0/1 scores is a typo, not a new category).

    A value is rare when fewer than 3 ratings and fewer than 5% of them hold it. With two or more common
    values (step = the smallest gap between them) a rare value is a category only when it lies on their
    lattice, at most one step beyond their range, is not a float artefact of a common value and is not
    negative while they are not — a 0 below 0.5/1 or a 2 above 0/1 (then :func:`rare_categories` names it
    and the rows are noted: the criterion becomes partial credit openly, never silently); a 0.5 or a
    1.0000000001 among 0/1 scores is off the scale (issue 28). With one common value a rare value is off
    the scale when it is more than one step beyond it, or negative while it is not.

    Example:
        >>> inferred_levels([0, 1] * 20 + [7]), inferred_levels([0, 1] * 20 + [-1])
        ([0.0, 1.0], [0.0, 1.0])
        >>> inferred_levels([0, 1] * 20 + [0.5]), inferred_levels([0, 1] * 20 + [1.0000000001])
        ([0.0, 1.0], [0.0, 1.0])
        >>> inferred_levels([1] * 40 + [0, 0]), inferred_levels([0, 1, 2] * 20 + [2])
        ([0.0, 1.0], [0.0, 1.0, 2.0])
    """
    return _scale_parts(scores)[0]


def rare_categories(scores: Sequence[float]) -> list[float]:
    """The rare values :func:`inferred_levels` keeps as categories (each is noted with its rows).

    Example:
        >>> rare_categories([0, 1] * 20 + [2]), rare_categories([0, 1] * 20 + [0.5])
        ([2.0], [])
    """
    return _scale_parts(scores)[1]


def _scale_parts(scores: Sequence[float]) -> tuple[list[float], list[float]]:
    """``(levels, rare values kept among them)``: the rule of :func:`inferred_levels`."""
    values, counts = np.unique(np.asarray(scores, dtype=float), return_counts=True)
    if values.size < 2:
        return [float(v) for v in values], []
    rare = (counts < RARE_COUNT) & (counts < RARE_SHARE * counts.sum())
    common = values[~rare]
    if common.size == 0:
        return [float(v) for v in values], []
    basis = common if common.size > 1 else values
    step = float(np.diff(basis).min()) if basis.size > 1 else 1.0
    beyond = np.maximum(common.min() - values, values - common.max())
    negative = (values < 0) & (common.min() >= 0)
    if common.size > 1:
        k = np.rint((values - common.min()) / step)
        on_lattice = np.abs(common.min() + k * step - values) <= 1e-9 * step
        artefact = np.isin(common.min() + k * step, common) & ~np.isin(values, common)
        off = rare & ~(on_lattice & ~artefact & (beyond <= step + 1e-12) & ~negative)
    else:
        off = rare & ((beyond > step + 1e-12) | negative)
    kept_rare = rare & ~off & ~np.isin(values, common)
    return [float(v) for v in values[~off]], [float(v) for v in values[kept_rare]]


def check_scale(
    ratings: pl.DataFrame,
    *,
    criterion_col: str = "criterion",
    score_col: str = "score",
    id_col: str = "exchange_id",
    levels: Sequence[float] | None = None,
    drop: bool = False,
    source: str = "ratings",
    log: Log = quiet,
) -> pl.DataFrame:
    """Long ratings whose scores all lie on the scale: ``levels`` when given (``--levels 0,1``), else each
    criterion's :func:`inferred_levels` (reported when it leaves a value out).

    A score off the scale is an :class:`InputSchemaError` naming the rows, or with ``drop`` (
    ``--drop-out-of-scale``) the row is dropped and counted — never a silent change of the model (a 7 on a
    0/1 criterion would otherwise turn it into a partial-credit item). Wide ratings pass unchanged.
    :meth:`Ratings.clean` does the same on the cleaned table.

    Args:
        ratings: Ratings (long are checked; wide pass unchanged).
        criterion_col: The criterion column.
        score_col: The score column.
        id_col: The exchange id column (named in the errors).
        levels: The scale of every criterion (``--levels``); ``None``: each criterion's inferred levels.
        drop: Drop off-scale rows instead of raising (``--drop-out-of-scale``).
        source: The table's name in the errors.
        log: Where the notes go.

    Example:
        >>> r = pl.DataFrame({"exchange_id": [str(i) for i in range(41)], "criterion": ["c"] * 41,
        ...                   "score": [0, 1] * 20 + [7]})
        >>> check_scale(r, drop=True).height
        40
    """
    if criterion_col not in ratings.columns or score_col not in ratings.columns:
        return ratings
    score = _as_float(ratings, score_col, id_col=id_col, source=source)
    ids = ratings.get_column(id_col) if id_col in ratings.columns else None
    keep, _scales, _notes = scale_filter(
        ratings.get_column(criterion_col), score, ids, levels=levels, drop=drop, source=source, log=log
    )
    return ratings if keep is None else ratings.filter(keep)


def scale_filter(
    criterion: pl.Series,
    score: pl.Series,
    ids: pl.Series | None,
    *,
    levels: Sequence[float] | None = None,
    drop: bool = False,
    source: str = "ratings",
    log: Log = quiet,
) -> tuple[pl.Series | None, dict[str, tuple[float, ...]], tuple[str, ...]]:
    """The scale check of :func:`check_scale` on parsed scores: ``(rows to keep or None when all are on the
    scale, scale per criterion, notes on rare categories kept and on what was dropped)``; off-scale scores
    raise unless ``drop``.

    Args:
        criterion: Criterion per row.
        score: Parsed score per row.
        ids: Exchange id per row (named in the errors); ``None``: row numbers only.
        levels: The scale of every criterion; ``None``: each criterion's inferred levels.
        drop: Drop off-scale rows instead of raising.
        source: The table's name in the errors.
        log: Where the notes go.
    """
    frame = pl.DataFrame({"__crit": criterion, "__score": score}).with_row_index("__row")
    if ids is not None:
        frame = frame.with_columns(ids.alias("__id"))
    scales: dict[str, tuple[float, ...]] = {}
    offending: list[tuple[int, object, str, float, list[float]]] = []
    notes: list[str] = []
    for (crit,), sub in frame.filter(pl.col("__score").is_not_null()).group_by("__crit", maintain_order=True):
        scale = sorted(float(v) for v in levels) if levels is not None else inferred_levels(sub["__score"].to_list())
        scales[str(crit)] = tuple(scale)
        off = sub.filter(~pl.col("__score").is_in(scale))
        if off.height and levels is None:
            log(f"note: {source}: criterion {crit!r}: scale inferred as {_levels_text(scale)}")
        rare = rare_categories(sub["__score"].to_list()) if levels is None else []
        if rare:  # a category only a few ratings use: the model changes, so say so (counted, rows named)
            held = sub.filter(pl.col("__score").is_in(rare))
            note = (f"{source}: criterion {crit!r}: {held.height} rare score(s) add a category, scale "
                    f"{_levels_text(scale)}: " + _offending_text([(r["__row"], r.get("__id"), str(crit), r["__score"], scale)
                                                                 for r in held.head(3).iter_rows(named=True)])
                    + "; --levels without them refuses them, with --drop-out-of-scale drops them")  # fmt: skip
            log(f"note: {note}")
            notes.append(note)
        for row in off.iter_rows(named=True):
            offending.append((row["__row"], row.get("__id"), str(crit), row["__score"], scale))
    if not offending:
        return None, scales, tuple(notes)
    if drop:
        rows = {o[0] for o in offending}
        note = f"{source}: dropped {len(rows)} rating(s) off the scale (--drop-out-of-scale), e.g. " + _offending_text(offending[:3])
        log(f"note: {note}")
        return ~frame.get_column("__row").is_in(list(rows)), scales, (*notes, note)
    raise InputSchemaError(
        f"{source}: {len(offending)} score(s) off the scale: " + _offending_text(offending[:5]),
        hint="fix them, declare the scale with --levels (e.g. --levels 0,1,2), or drop them with --drop-out-of-scale",
    )


def _levels_text(levels: Sequence[float]) -> str:
    return "{" + ", ".join(f"{v:g}" for v in levels) + "}"


def _offending_text(items: Sequence[tuple[int, object, str, float, list[float]]]) -> str:
    return "; ".join(
        f"data row {row + 1} ({'id ' + repr(ident) + ', ' if ident is not None else ''}{crit!r} = {score:g}, "
        f"scale {_levels_text(scale)})"
        for row, ident, crit, score, scale in items
    )


def parse_levels(text: str | None) -> list[float] | None:
    """``"0,1,2"`` → ``[0.0, 1.0, 2.0]`` (``None`` stays ``None``).

    Example:
        >>> parse_levels("0, 0.5, 1")
        [0.0, 0.5, 1.0]
    """
    if text is None:
        return None
    try:
        values = sorted({float(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise ConfigError(f"--levels {text!r} is not a list of numbers", hint="e.g. --levels 0,1 or --levels 0,1,2") from None
    if len(values) < 2:
        raise ConfigError(f"--levels {text!r} needs at least two values", hint="e.g. --levels 0,1")
    return values


@dataclass(frozen=True)
class Ratings:
    """Ratings read and cleaned once (``docs/statistics.md#targets``, ``docs/design/raters.md#categories``), then handed to θ, agreement,
    validity targets and summaries, so none of them parses, cleans or scale-checks the table again.

    ``frame`` is the table as given less the rows dropped off the scale; ``long`` (long ratings only) its
    cleaned form with columns ``_id, [_rater], _crit, _score`` (:func:`clean_long_ratings`: scores Float64,
    missing → null); ``levels`` the scale of each criterion; ``dropped`` what was dropped and why;
    ``exchangeable`` that the rater labels are anonymous slots (``docs/design/datasets.md#exchangeable-raters``: each row is one rating, a
    label may repeat within a unit, the rater column may be absent). Functions
    that take a ratings frame (:func:`~tutormetrics.psychometrics.mfrm.fit_mfrm`,
    :func:`~tutormetrics.psychometrics.agreement.agreement_table`, :func:`rating_variables`) take a
    ``Ratings`` too, with its own column names: ``fit_mfrm(r, **r.columns())``.

    Example:
        >>> raw = pl.DataFrame({"exchange_id": ["a", "a", "b", "b"], "rater": ["r1", "r2"] * 2,
        ...                     "criterion": ["tone"] * 4, "score": ["1", "0", "1", "1"]})
        >>> r = Ratings.clean(raw)
        >>> r.is_long, r.n_raters, r.levels, r.targets().rows()
        (True, 2, {'tone': (0.0, 1.0)}, [('a', 0.5), ('b', 1.0)])
    """

    frame: pl.DataFrame
    long: pl.DataFrame | None
    id_col: str = "exchange_id"
    rater_col: str | None = "rater"
    criterion_col: str = "criterion"
    score_col: str = "score"
    levels: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    source: str = "ratings"
    exchangeable: bool = False
    #: What ``--na`` and ``--recode`` did before cleaning: ``[{"from": 0.5, "to": 0.0, "ratings": 413}]`` (run.json's
    #: ``recode``; an ``--na`` code has ``"to": None``).
    recoded: tuple[Mapping[str, object], ...] = ()
    #: The warnings said when the ratings were cleaned (a negative score that is a category, ``docs/design/studies.md#na-codes``);
    #: ``--strict`` counts them.
    warnings: tuple[str, ...] = ()

    @classmethod
    @frame_inputs("frame")
    def clean(
        cls,
        frame: pl.DataFrame,
        *,
        id_col: str = "exchange_id",
        rater_col: str | None = "rater",
        criterion_col: str = "criterion",
        score_col: str = "score",
        levels: Sequence[float] | None = None,
        drop_out_of_scale: bool = False,
        source: str = "ratings",
        log: Log = quiet,
        exchangeable: bool = False,
    ) -> Ratings:
        """Long ratings (a criterion and a score column) cleaned and checked against their scale
        (:func:`check_scale`); wide ones kept as they are (each target column is parsed when it is made).
        ``exchangeable``: the rater labels are anonymous slots (a label may repeat within a unit). Without
        ``levels``, a criterion whose scores hold a negative value next to non-negative ones is warned of (to
        ``log`` and in :attr:`warnings`): that value would be a category (``docs/design/studies.md#na-codes``).

        Args:
            frame: The ratings table (long or wide).
            id_col: The exchange id column.
            rater_col: The rater column; ``None``: none.
            criterion_col: The criterion column.
            score_col: The score column.
            levels: The scale of every criterion (``--levels``); ``None``: each criterion's inferred levels.
            drop_out_of_scale: Drop off-scale rows instead of raising.
            source: The table's name in the errors.
            log: Where the notes go.
            exchangeable: Rater labels are anonymous slots (``--raters exchangeable``).
        """
        names = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
        if not is_long_ratings(frame, criterion_col=criterion_col, score_col=score_col):
            return cls(frame, None, **names, source=source, exchangeable=exchangeable)
        long = clean_long_ratings(frame, **names, source=source, repeats=exchangeable)
        warned = () if levels is not None else tuple(negative_category_warnings(long, criterion_col="_crit", score_col="_score"))
        for line in warned:
            log(line)
        keep, scales, dropped = scale_filter(
            long.get_column("_crit"), long.get_column("_score"), long.get_column("_id"),
            levels=levels, drop=drop_out_of_scale, source=source, log=log,
        )  # fmt: skip
        if keep is not None:
            frame, long = frame.filter(keep), long.filter(keep)
        return cls(frame, long, **names, levels=scales, dropped=dropped, source=source, exchangeable=exchangeable, warnings=warned)

    @property
    def is_long(self) -> bool:
        return self.long is not None

    @property
    def n_raters(self) -> int:
        """Distinct raters of long ratings (0 without a rater column or for wide ratings)."""
        if self.long is None or "_rater" not in self.long.columns:
            return 0
        return self.long.get_column("_rater").n_unique()

    def columns(self) -> dict[str, str]:
        """The column keywords of the functions that take a ratings frame (``id_col`` ... ``score_col``)."""
        return {"id_col": self.id_col, "rater_col": self.rater_col or "rater", "criterion_col": self.criterion_col,
                "score_col": self.score_col}  # fmt: skip

    def targets(
        self, aggregate: Aggregate = "mean", columns: Sequence[str] | None = None, log: Log | None = None
    ) -> pl.DataFrame:
        """Wide targets (:func:`ratings_frame_to_targets`): long ratings aggregated over raters, with
        ``columns`` the criteria kept; wide ones with ``columns`` the target columns.

        Args:
            aggregate: ``mean``, ``min``, ``max`` or ``per_rater``.
            columns: Long: the criteria kept; wide: the target columns; ``None``: all.
            log: Hears which wide targets were taken; ``None``: silent.
        """
        _check_aggregate(aggregate)
        if self.long is None:
            return wide_ratings_to_targets(
                self.frame, id_col=self.id_col, columns=None if columns is None else list(columns), aggregate=aggregate,
                rater_col=self.rater_col, log=log,
            )  # fmt: skip
        long = self.long
        if columns is not None:
            wanted = list(dict.fromkeys(columns))
            present = set(long.get_column("_crit").unique().to_list())
            missing = [c for c in wanted if c not in present]
            if missing:
                raise InputSchemaError(
                    f"{self.source}: criterion {', '.join(map(repr, missing))} not found in the ratings",
                    hint=f"available criteria: {', '.join(sorted(str(c) for c in present if c is not None))}",
                )
            long = long.filter(pl.col("_crit").is_in(wanted))
        if aggregate == "per_rater" and self.exchangeable:
            raise ConfigError(
                "--aggregate per_rater needs named raters, but --raters exchangeable says the labels are anonymous slots",
                hint="use --aggregate mean (or min/max), or drop --raters exchangeable",
            )
        if aggregate == "per_rater" and "_rater" not in long.columns:
            raise ConfigError(
                f"aggregate='per_rater' needs a rater column, but {self.rater_col!r} is not in the ratings",
                hint="name the rater column, or use aggregate='mean'",
            )
        return long_to_targets(long, id_col=self.id_col, aggregate=aggregate, source="ratings")


RatingsLike = pl.DataFrame | Ratings


def cleaned_long(
    ratings: RatingsLike,
    *,
    id_col: str = "exchange_id",
    rater_col: str | None = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    source: str = "ratings",
) -> pl.DataFrame:
    """The cleaned long table (``_id, [_rater], _crit, _score``) of a ratings frame, or of a :class:`Ratings`
    without cleaning it again (one that came wide is an error naming the missing columns).

    Args:
        ratings: A ratings table or a cleaned ``Ratings``.
        id_col: The exchange id column.
        rater_col: The rater column; ``None``: none.
        criterion_col: The criterion column.
        score_col: The score column.
        source: The table's name in the errors.
    """
    if isinstance(ratings, Ratings):
        if ratings.long is None:
            require_columns(ratings.frame, [ratings.id_col, ratings.criterion_col, ratings.score_col], source=source)
        assert ratings.long is not None
        return ratings.long
    return clean_long_ratings(
        ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col, source=source
    )


def ratings_table(ratings: RatingsLike) -> pl.DataFrame:
    """The ratings frame of a frame or a :class:`Ratings` (its rows on the scale)."""
    return ratings.frame if isinstance(ratings, Ratings) else ratings
