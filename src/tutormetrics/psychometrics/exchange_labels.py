"""One label per exchange from a column of a table: a cluster (dialogue), a stratum or a group
(``docs/guide/judges.md#cluster-column``).

Labels are compared as text. Every exchange that appears has exactly one label: an empty label, or two
different labels on the rows of one exchange, stop the run (exit 2) naming the count and the first id.

Example:
    >>> t = pl.DataFrame({"exchange_id": [1, 1, 2], "conversation_id": ["d1", "d1", "d2"]})
    >>> exchange_labels(t, "exchange_id", "conversation_id").rows()
    [('1', 'd1'), ('2', 'd2')]
"""

from __future__ import annotations

import polars as pl

from tutormetrics.errors import InputSchemaError

__all__ = ["LABEL", "conversation_column", "exchange_labels", "independence_note", "label_column"]

#: Name of the label column of :func:`exchange_labels` (the id column is ``_id``, as text).
LABEL = "_label"
#: Columns that name a reply's conversation; their presence without a cluster column earns a note.
_CONVERSATION_COLUMNS = ("conversation_id", "dialogue_id", "conversation", "dialogue")


def label_column(tables: list[tuple[str, pl.DataFrame | None]], col: str, option: str) -> tuple[str, pl.DataFrame]:
    """The first ``(source, table)`` of ``tables`` that holds ``col``; else exit 2 naming the columns there.

    Args:
        tables: ``(source, table)`` pairs searched in order; a ``None`` table is skipped.
        col: The column to find.
        option: The option that named it, for the error.

    Example:
        >>> label_column([("ratings", pl.DataFrame({"c": [1]}))], "c", "--cluster-col")[0]
        'ratings'
    """
    present = [(source, t) for source, t in tables if t is not None]
    for source, table in present:
        if col in table.columns:
            return source, table
    where = "; ".join(f"{source}: {', '.join(t.columns[:12])}{', …' if len(t.columns) > 12 else ''}" for source, t in present)
    raise InputSchemaError(f"{option} {col!r} is not a column of {' or '.join(s for s, _ in present)}", hint=f"columns there: {where}")


def exchange_labels(table: pl.DataFrame, id_col: str, col: str, *, option: str = "--cluster-col", source: str = "ratings") -> pl.DataFrame:
    """``_id`` (text) and ``_label`` (text), one row per exchange in first-appearance order.

    Raises :class:`InputSchemaError` on an empty label or on two labels for one exchange.

    Args:
        table: The table holding the labels.
        id_col: The exchange id column.
        col: The label column.
        option: The option that named ``col``, for the errors.
        source: The table's name in the errors.
    """
    if col not in table.columns:
        label_column([(source, table)], col, option)
    if id_col not in table.columns:
        raise InputSchemaError(f"{source}: no id column {id_col!r} to attach the {option} labels to", hint="name it with --id")
    frame = table.select(pl.col(id_col).cast(pl.String).alias("_id"), pl.col(col).cast(pl.String).str.strip_chars().alias(LABEL))
    empty = frame.filter(pl.col(LABEL).is_null() | (pl.col(LABEL) == ""))
    if empty.height:
        raise InputSchemaError(
            f"{source}: {empty.height:,} row(s) have an empty {option} {col!r}, e.g. {id_col}={empty['_id'][0]!r}",
            hint=f"every exchange needs its {col} label",
        )
    per = frame.group_by("_id", maintain_order=True).agg(pl.col(LABEL).n_unique().alias("_k"), pl.col(LABEL).first())
    split = per.filter(pl.col("_k") > 1)
    if split.height:
        raise InputSchemaError(
            f"{source}: {split.height:,} exchange(s) carry two or more {col!r} labels, e.g. {id_col}={split['_id'][0]!r}",
            hint=f"{option} needs one {col} per exchange",
        )
    return per.select("_id", LABEL)


def conversation_column(columns: list[str]) -> str | None:
    """The first column that names a reply's conversation (``conversation_id``, ``dialogue_id``, …), or None.

    Example:
        >>> conversation_column(["exchange_id", "dialogue_id"])
        'dialogue_id'
    """
    return next((c for c in _CONVERSATION_COLUMNS if c in columns), None)


def independence_note(columns: list[str], cluster_col: str | None, command: str) -> str | None:
    """The one stderr note of ``agree``/``ppi`` (the command prints it once, as a note) when the table names
    conversations but no cluster column is given: their intervals then treat the replies as independent
    (``docs/guide/judges.md#why-dialogues``).

    Args:
        columns: The input table's columns.
        cluster_col: The ``--cluster-col`` given; ``None``: none.
        command: The command name the note starts with.

    Example:
        >>> independence_note(["exchange_id", "conversation_id"], None, "ppi")[:34]
        'ppi: the input has a conversation_'
        >>> independence_note(["exchange_id", "conversation_id"], "conversation_id", "ppi") is None
        True
    """
    conv = conversation_column(columns)
    if cluster_col is not None or conv is None:
        return None
    return (
        f"{command}: the input has a {conv} column, but these intervals treat its replies as independent; "
        f"replies of one conversation share its problem and student, so pass --cluster-col {conv} for intervals "
        "that resample conversations"
    )
