"""Tables keyed by an id (exchange or conversation) as the page embeds them: the id read as text, each column's
values in the order of the rows the page shows.

Example:
    >>> df = pl.DataFrame({"conversation_id": ["c2", "c1"], "theta": [0.5, -1.0]})
    >>> values_by_id(df, "conversation_id", ["c1", "c3", "c2"], ["theta"])
    {'theta': [-1, None, 0.5]}
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.io.tables import read_table
from tutormetrics.report.embed import compact

#: The columns of a θ table the page shows.
THETA_COLUMNS = ("theta", "theta_sd", "theta_low", "theta_high")


def read_keyed(path: Path, id_col: str) -> pl.DataFrame:
    """A table with its id column read as text (a CSV id such as ``007`` keeps its zeros, as in ``score``)."""
    df = read_table(path)
    if id_col in df.columns:
        ids = read_table(path, string_columns=True).get_column(id_col) if path.suffix.lower() == ".csv" else df.get_column(id_col)
        df = df.with_columns(ids.cast(pl.String).alias(id_col))
    return df


def values_by_id(df: pl.DataFrame, id_col: str, ids: Sequence[str], columns: Sequence[str]) -> dict[str, list[Any]]:
    """``{column: [value of each id in ids]}`` as compact numbers, ``None`` where an id has no row or no number;
    columns of ``columns`` that ``df`` lacks are left out.

    Args:
        df: The table.
        id_col: Its id column.
        ids: The ids, in output order.
        columns: The columns wanted.
    """
    index = {key: i for i, key in enumerate(df.get_column(id_col).cast(pl.String).to_list())}
    out: dict[str, list[Any]] = {}
    for col in columns:
        if col not in df.columns or col == id_col:
            continue
        values = df.get_column(col).cast(pl.Float64, strict=False).to_list()
        out[col] = [compact(values[index[i]]) if i in index and values[index[i]] is not None else None for i in ids]
    return out


def theta_by_id(paths: Sequence[Path], id_col: str, ids: Sequence[str]) -> dict[str, list[Any]]:
    """θ and its interval per id from the first θ table keyed by ``id_col`` (``{}`` when none is).

    Args:
        paths: Candidate θ tables, tried in order.
        id_col: The id column.
        ids: The ids, in output order.
    """
    for path in paths:
        df = read_keyed(path, id_col)
        if id_col in df.columns:
            return values_by_id(df, id_col, ids, THETA_COLUMNS)
    return {}
