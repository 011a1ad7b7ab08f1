"""Turn-level labels to one rate per dialogue/condition (``docs/design/studies.md#aggregate``).

Per combination of the key columns (in order of first appearance): ``n_rows``, then per label column
c the mean of its non-missing values (``c``; the rate for 0/1 labels, NaN when none), their count
``c_n`` and the count of missing values ``c_n_na`` (``na`` codes and empty cells), so
``c_n + c_n_na = n_rows``.

Example:
    >>> df = pl.DataFrame({"q": ["q1"] * 4, "lab": [1, 0, 1, -1]})
    >>> aggregate_labels(df, by=["q"], cols=["lab"], na=[-1]).result.row(0)
    ('q1', 4, 0.6666666666666666, 3, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.flags import flag, split_list
from tutormetrics.io.tables import require_columns

__all__ = ["SKIP_COLUMNS", "AggregateOptions", "AggregateResult", "aggregate_labels", "aggregate_rates", "parse_codes"]

#: dialogue structure columns never aggregated by default
SKIP_COLUMNS: tuple[str, ...] = ("turn", "tutor_turn", "ctx_turns")


@dataclass(frozen=True)
class AggregateResult:
    """The rates table and the stderr notes."""

    result: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def parse_codes(values: Sequence[str] | str | None, option: str = "--na") -> list[float]:
    """``--na -1,-9`` (repeatable) as numbers; a non-number is exit 2.

    >>> parse_codes(["-1,-9"]), parse_codes(None)
    ([-1.0, -9.0], [])
    """
    out = []
    for v in split_list(values) or []:
        try:
            out.append(float(v))
        except ValueError:
            raise ConfigError(f"{option}: {v!r} is not a number", hint=f"e.g. {option} -1 or {option} -1,-9") from None
    return out


def _keys(values: Sequence[str] | str | None) -> list[str]:
    """``--by a,b`` (repeatable) as a list, ``[]`` when empty."""
    return split_list(values) or []


@dataclass(kw_only=True)
class AggregateOptions:
    """``aggregate``'s options (``docs/commands/aggregate.md``): the key columns (required), the label columns
    and the codes that mean "not applicable".

    >>> o = AggregateOptions(by=["q"], na=[-1.0])
    >>> o.by, o.cols, o.na
    (['q'], None, [-1.0])
    """

    by: list[str] = flag(
        "--by", parse=_keys, cli_type=list[str], help="Key column(s): one output row per combination (repeat or comma-separate)."
    )
    cols: list[str] | None = flag(
        "--cols", default=None, parse=split_list, cli_type=list[str] | None,
        help="Label columns (default: every numeric column but the keys and turn columns).",
    )
    na: list[float] = flag(
        "--na", default=None, parse=parse_codes, cli_type=list[str] | None,
        help="Codes meaning 'not applicable' (missing), e.g. -1 or -1,-9.",
    )


def aggregate_rates(turns: pl.DataFrame, options: AggregateOptions) -> AggregateResult:
    """``aggregate`` from Python: :func:`aggregate_labels` of ``turns`` under ``options``
    (``docs/commands/aggregate.md``).

    >>> df = pl.DataFrame({"q": ["q1"] * 4, "lab": [1, 0, 1, -1]})
    >>> aggregate_rates(df, AggregateOptions(by=["q"], na=[-1.0])).result["lab_n_na"].to_list()
    [1]
    """
    return aggregate_labels(turns, by=options.by, cols=options.cols, na=options.na)


def _numeric(df: pl.DataFrame, col: str) -> pl.Expr:
    """Column ``col`` as Float64: booleans 0/1, numeric text parsed, empty text missing; other text is exit 2."""
    dtype = df.schema[col]
    if dtype == pl.Boolean or dtype.is_numeric() or dtype == pl.Null:
        return pl.col(col).cast(pl.Float64)
    if dtype != pl.String:
        raise InputSchemaError(f"turns: column {col!r} ({dtype}) is not numeric", hint="aggregate numeric or 0/1 label columns")
    text = df[col].str.strip_chars()
    text = pl.when(text.str.to_lowercase() == "true").then(pl.lit("1")).when(text.str.to_lowercase() == "false").then(pl.lit("0")).otherwise(text)
    parsed = df.select(text.alias("t")).with_columns(pl.col("t").replace("", None).cast(pl.Float64, strict=False).alias("v"))
    bad = parsed.with_row_index("row", offset=1).filter(pl.col("t").is_not_null() & (pl.col("t") != "") & pl.col("v").is_null())
    if bad.height:
        r = bad.row(0, named=True)
        raise InputSchemaError(f"turns: row {r['row']}: column {col!r} has the non-numeric value {r['t']!r}", hint="labels must be numbers or booleans")
    return pl.lit(parsed["v"]).alias(col)


def aggregate_labels(
    df: pl.DataFrame, *, by: Sequence[str], cols: Sequence[str] | None = None, na: Sequence[float] = ()
) -> AggregateResult:
    """Aggregate label columns per ``by`` combination; ``na`` values and empty cells are missing.

    Args:
        df: the turns table.
        by: key columns of one group (repeats dropped); at least one is required.
        cols: label columns to average; ``None`` takes every numeric or boolean column that is not a key or a known
            non-label column.
        na: missing-value codes (e.g. ``-1``), treated like empty cells and NaN; other negative values are noted.
    """
    by = list(dict.fromkeys(by))
    if not by:
        raise InputSchemaError("aggregate: name the key columns with --by")
    require_columns(df, by, source="turns", option="--by")
    if cols is None:
        cols = [c for c, dt in df.schema.items() if (dt.is_numeric() or dt == pl.Boolean) and c not in by and c not in SKIP_COLUMNS]
        if not cols:
            raise InputSchemaError("turns: no numeric label column to aggregate", hint="name them with --cols")
    cols = list(dict.fromkeys(cols))
    require_columns(df, cols, source="turns", option="--cols")
    clash = [c for c in cols if c in by]
    if clash:
        raise InputSchemaError(f"aggregate: {clash} are both --by keys and --cols", hint="a key column is not aggregated")
    notes: list[str] = []
    missing_key = df.select(pl.any_horizontal(pl.col(k).is_null() for k in by)).to_series()
    if missing_key.any():
        notes.append(f"aggregate: {int(missing_key.sum())} row(s) with a missing --by value dropped")
        df = df.filter(~missing_key)
    values = df.select([*(pl.col(k) for k in by), *(_numeric(df, c) for c in cols)])
    na_list = [float(v) for v in na]
    for c in cols:
        neg = values.filter((pl.col(c) < 0) & ~pl.col(c).is_in(na_list))[c] if na_list else values.filter(pl.col(c) < 0)[c]
        for v, n in sorted(neg.value_counts().iter_rows()):
            shown = int(v) if float(v).is_integer() else v
            notes.append(f"aggregate: {c} has {n} value(s) {shown} that are not --na codes")
    clean = values.with_columns(
        [pl.when(pl.col(c).is_in(na_list) | pl.col(c).is_nan()).then(None).otherwise(pl.col(c)).alias(c) for c in cols]
    )  # fmt: skip
    aggs: list[pl.Expr] = [pl.len().alias("n_rows")]
    for c in cols:
        aggs += [pl.col(c).mean().fill_null(float("nan")).alias(c), pl.col(c).count().alias(f"{c}_n"), pl.col(c).null_count().alias(f"{c}_n_na")]
    result = clean.group_by(by, maintain_order=True).agg(aggs).with_columns(pl.col("n_rows").cast(pl.Int64))
    result = result.with_columns([pl.col(f"{c}_{s}").cast(pl.Int64) for c in cols for s in ("n", "n_na")])
    empty = sum(int((result[f"{c}_n"] == 0).sum()) for c in cols)
    if empty:
        notes.append(f"aggregate: {empty} group x column cell(s) with no non-missing value (NaN)")
    return AggregateResult(result, notes)
