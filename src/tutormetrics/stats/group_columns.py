"""Groups from one or more ``--group-col`` columns (``docs/guide/paper.md#group-col``).

A group is the **combination** of the columns' values; its label is the values joined by ``/`` in option order,
and groups sort by the value tuple. Two combinations with one label are exit 2. With one column nothing changes:
the column itself is the group.

Example:
    >>> df = pl.DataFrame({"model": ["a", "a", "b"], "prompt": [2, 10, 1], "x": [1.0, 2.0, 3.0]})
    >>> framed, col = with_group_label(df, ["model", "prompt"])
    >>> col, framed[col].to_list()
    ('model/prompt', ['a/2', 'a/10', 'b/1'])
    >>> group_order(df, ["model", "prompt"])
    ['a/2', 'a/10', 'b/1']
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.flags import split_list
from tutormetrics.io.tables import require_columns

__all__ = ["group_columns", "group_order", "group_values", "join_group_cols", "with_group_label"]


def join_group_cols(values: list[str] | str | None) -> str | None:
    """``--group-col`` (repeat or comma-separate) as one comma-joined text, ``None`` when not given:
    ``["model", "prompt"]`` → ``"model,prompt"``."""
    cols = split_list(values)
    if cols and len(set(cols)) != len(cols):
        raise ConfigError(f"--group-col names a column twice ({', '.join(cols)})", hint="name each column once")
    return ",".join(cols) if cols else None


def group_columns(text: str | None) -> list[str]:
    """The columns of a (comma-joined) ``--group-col`` value: ``"model,prompt"`` → ``["model", "prompt"]``."""
    return split_list(text) or []


def _label(cols: Sequence[str]) -> pl.Expr:
    return pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in cols], separator="/")


def with_group_label(frame: pl.DataFrame, cols: Sequence[str], *, source: str = "input") -> tuple[pl.DataFrame, str]:
    """``frame`` with a label column ``a/b`` for two or more group columns (their values joined by ``/``) and
    that column's name; one column: ``frame`` and the column. Two combinations with one label are exit 2.

    Args:
        frame: The table holding the group columns.
        cols: The ``--group-col`` columns, in the order given.
        source: The table's name in messages.
    """
    require_columns(frame, list(cols), source=source, option="--group-col")
    if len(cols) < 2:
        return frame, cols[0]
    name = "/".join(cols)
    framed = frame.with_columns(_label(cols).alias(name))
    combos = framed.select(*cols, name).unique()
    clash = combos.group_by(name).len().filter(pl.col("len") > 1)
    if clash.height:
        raise ConfigError(f"--group-col: the label {clash[name][0]!r} names {clash['len'][0]} different combinations",
                          hint="the values must not contain '/'; rename them or group by other columns")  # fmt: skip
    return framed, name


def _sort_key(frame: pl.DataFrame, col: str) -> pl.Expr:
    """Numbers sort as numbers, text as text (a column of numbers read as text sorts numerically)."""
    dtype = frame.schema[col]
    if dtype.is_numeric():
        return pl.col(col)
    as_number = frame[col].cast(pl.Float64, strict=False)
    return pl.col(col).cast(pl.Float64, strict=False) if as_number.null_count() == frame[col].null_count() else pl.col(col)


def group_order(frame: pl.DataFrame, cols: Sequence[str]) -> list[str]:
    """The group labels sorted by the value tuple (``gemma3_27b/2`` before ``gemma3_27b/10``)."""
    combos = frame.select(*cols).unique().drop_nulls()
    combos = combos.sort([_sort_key(combos, c) for c in cols])
    return combos.select(_label(cols).alias("_l"))["_l"].to_list()


def group_values(frame: pl.DataFrame, cols: Sequence[str]) -> pl.DataFrame:
    """One row per group: ``group`` (the label) and each column's value, in :func:`group_order`."""
    combos = frame.select(*cols).unique().drop_nulls()
    combos = combos.sort([_sort_key(combos, c) for c in cols])
    return combos.select(_label(cols).alias("group"), *cols)
