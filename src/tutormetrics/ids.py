"""Composite exchange ids (``docs/design/datasets.md#composite-ids``): ``--id A --id B`` builds ``exchange_id`` from the parts' texts
joined with ``--id-sep`` (default ``/``).

A part's text is the CSV cell as read (``007`` stays ``007``), or a Parquet/JSONL string, or an integer written
in decimal digits; a float or any other type is refused (exit 2), as is an empty part, one containing the
separator, or one beginning or ending with a character of the separator (the joined id would be ambiguous).
With one ``--id`` nothing changes: :class:`IdKey` is then just that column's name.

Example:
    >>> import polars as pl
    >>> key = IdKey.of(["obs_id", "exchange_idx"])
    >>> key.column, key.composite
    ('exchange_id', True)
    >>> with_key(pl.DataFrame({"obs_id": ["4", "7"], "exchange_idx": [65, 69]}), key)["exchange_id"].to_list()
    ['4/65', '7/69']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.flags import flag
from tutormetrics.io.tables import infer_format, read_table

__all__ = [
    "COMPOSITE_ID",
    "IdKey",
    "check_input_columns",
    "check_part_types",
    "input_key",
    "ambiguous_parts",
    "joined_ids",
    "read_keyed",
    "with_key",
]

#: The column a composite id is written to.
COMPOSITE_ID = "exchange_id"


@dataclass(frozen=True)
class IdKey:
    """The ``--id`` columns (one: a plain id column; several: the parts of ``exchange_id``) and ``--id-sep``."""

    parts: tuple[str, ...] = (COMPOSITE_ID,)
    sep: str = "/"

    @classmethod
    def of(cls, columns: Iterable[str] | str | None, sep: str = "/") -> IdKey:
        """The key of the ``--id`` values (``None``/empty: ``exchange_id``); repeats are dropped.

        >>> IdKey.of(None).column, IdKey.of(["a", "a"]).composite
        ('exchange_id', False)
        """
        names = [columns] if isinstance(columns, str) else list(columns or [])
        parts = tuple(dict.fromkeys(n for n in names if n)) or (COMPOSITE_ID,)
        if len(parts) > 1 and not sep:
            raise ConfigError("--id-sep is empty", hint="the parts of a composite id need a separator, e.g. --id-sep /")
        if len(parts) > 1 and COMPOSITE_ID in parts:
            raise ConfigError(f"--id {COMPOSITE_ID} cannot be a part of a composite id (it is the joined id's name)",
                              hint=f"pass {COMPOSITE_ID} as the only --id, or rename that column")
        return cls(parts, sep)

    @property
    def composite(self) -> bool:
        return len(self.parts) > 1

    @property
    def column(self) -> str:
        """The id column every table is joined on: ``exchange_id`` for a composite id, else the one ``--id``."""
        return COMPOSITE_ID if self.composite else self.parts[0]

    @property
    def id_parts(self) -> list[str]:
        """The part columns (empty for a plain id): the manifest role ``id_parts``."""
        return list(self.parts) if self.composite else []

    def label(self) -> str:
        """``--id obs_id --id exchange_idx`` (for messages)."""
        return " ".join(f"--id {p}" for p in self.parts)


@dataclass
class TableIds:
    """``--id`` (repeatable) and ``--id-sep`` of the commands that join tables on an id (ratings, θ, metrics,
    covariates): one declaration for all of them; :attr:`key` is the :class:`IdKey`.

    >>> TableIds(["obs_id", "exchange_idx"]).key.column, TableIds().key.column
    ('exchange_id', 'exchange_id')
    """

    PANEL: ClassVar[str] = "Ratings"

    id_col: list[str] = flag(
        "--id", default=None, parse=lambda v: list(v or []), cli_type=list[str] | None, show_default=False,
        help="Exchange id column in every table (default: exchange_id). Repeat to join on exchange_id built from "
        "several columns (--id obs_id --id exchange_idx), in each table that has them.",
    )
    id_sep: str = flag("--id-sep", default="/", help="Separator between the parts of a composite id (several --id).")

    @property
    def key(self) -> IdKey:
        """The :class:`IdKey` of the ``--id`` values (none: ``exchange_id``)."""
        return IdKey.of(self.id_col, self.id_sep)

    @property
    def column(self) -> str:
        """The column every table is joined on."""
        return self.key.column


def check_part_types(schema: pl.Schema | dict[str, pl.DataType], key: IdKey, source: str) -> None:
    """Every part is text or an integer; a float or another type is exit 2 naming the column.

    Args:
        schema: the table's column types.
        key: the id key (its parts are checked).
        source: the table's name, for the messages.

    >>> check_part_types({"a": pl.String, "b": pl.Float64}, IdKey.of(["a", "b"]), "t.parquet")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: t.parquet: id part 'b' holds Float64 values; a composite id is built from text or integer columns
      hint: cast it to text (e.g. '7' rather than 7.0) and rerun
    """
    for part in key.parts:
        dtype = schema[part]
        if dtype == pl.String or dtype == pl.Null or dtype.is_integer():
            continue
        raise InputSchemaError(
            f"{source}: id part {part!r} holds {dtype} values; a composite id is built from text or integer columns",
            hint="cast it to text (e.g. '7' rather than 7.0) and rerun",
        )


def ambiguous_parts(texts: pl.Series, sep: str) -> pl.Series:
    """Parts that would make a joined id ambiguous: one containing ``sep``, or beginning or ending with any
    character of ``sep`` (with ``--id-sep ::`` both ``k:`` + ``v0`` and ``k`` + ``:v0`` join to ``k:::v0``).
    With those refused, the separators of a joined id are exactly the inserted ones, so its parts are unique
    (``docs/design/datasets.md#composite-ids``).

    >>> ambiguous_parts(pl.Series(["k:", ":v", "a:b", "a::b", "ab"]), "::").to_list()
    [True, True, False, True, False]
    """
    chars = sorted(set(sep))
    out = texts.str.contains(sep, literal=True)
    for ch in chars:
        out = out | texts.str.starts_with(ch) | texts.str.ends_with(ch)
    return out.fill_null(False)


def _clash_reason(text: str, sep: str) -> str:
    if sep in text:
        return f"contains the separator {sep!r}"
    edge = "begins" if text[:1] in sep else "ends"
    return f"{edge} with {(text[:1] if edge == 'begins' else text[-1:])!r}, a character of the separator {sep!r}"


def joined_ids(frame: pl.DataFrame, key: IdKey, source: str) -> pl.Series:
    """``exchange_id`` of every row: the parts' texts joined with ``key.sep``. An empty part, or one that contains
    the separator or begins or ends with one of its characters (:func:`ambiguous_parts`), is exit 2 naming the
    (1-based data) row.

    Args:
        frame: the table with every part column.
        key: the composite id key (parts and separator).
        source: the table's name, for the messages.

    >>> joined_ids(pl.DataFrame({"a": ["007", "1"], "b": [2, 3]}), IdKey.of(["a", "b"], "-"), "t").to_list()
    ['007-2', '1-3']
    """
    check_part_types(frame.schema, key, source)
    texts = frame.select(pl.col(p).cast(pl.String) for p in key.parts)
    for part in key.parts:
        col = texts.get_column(part)
        empty = col.is_null() | (col.str.strip_chars() == "")
        if empty.any():
            row = int(empty.arg_true()[0])
            raise InputSchemaError(f"{source}: data row {row + 1}: id part {part!r} is empty",
                                   hint=f"every part of {key.label()} needs a value")
        clash = ambiguous_parts(col, key.sep)
        if clash.any():
            row = int(clash.arg_true()[0])
            raise InputSchemaError(
                f"{source}: data row {row + 1}: id part {part!r} = {col[row]!r} {_clash_reason(col[row], key.sep)}",
                hint="choose another separator with --id-sep (e.g. --id-sep '|'), so the joined id stays unambiguous",
            )
    return texts.select(pl.concat_str(list(key.parts), separator=key.sep).alias(COMPOSITE_ID)).to_series()


def with_key(frame: pl.DataFrame, key: IdKey, source: str = "table", *, drop_parts: bool = False) -> pl.DataFrame:
    """A table keyed by ``key.column``. A plain id: unchanged. A composite id: built (as the first column) when the
    table has every part, else the table's own ``exchange_id`` is used; neither is exit 2. A table with both must
    agree with the built ids (a table written with another ``--id-sep``, say, is refused). ``drop_parts`` removes
    the part columns afterwards (ratings and θ tables: a part is never a target).

    Args:
        frame: the table.
        key: the id key.
        source: the table's name, for the messages.
        drop_parts: remove the part columns from the result.

    >>> with_key(pl.DataFrame({"exchange_id": ["4/65"], "score": [1]}), IdKey.of(["obs_id", "exchange_idx"])).columns
    ['exchange_id', 'score']
    """
    if not key.composite:
        return frame
    present = [p for p in key.parts if p in frame.columns]
    if len(present) < len(key.parts):
        if COMPOSITE_ID in frame.columns:
            return frame.drop(present) if drop_parts else frame
        missing = [p for p in key.parts if p not in frame.columns]
        raise InputSchemaError(
            f"{source}: has neither the id parts of {key.label()} (missing {', '.join(map(repr, missing))}) "
            f"nor an {COMPOSITE_ID!r} column",
            hint=f"give each table the part columns, or the joined {COMPOSITE_ID} (e.g. the output of score {key.label()})",
        )
    ids = joined_ids(frame, key, source)
    if COMPOSITE_ID in frame.columns:
        own = frame.get_column(COMPOSITE_ID).cast(pl.String)
        differs = own.ne_missing(ids)
        if differs.any():
            row = int(differs.arg_true()[0])
            raise InputSchemaError(
                f"{source}: data row {row + 1}: {COMPOSITE_ID} {own[row]!r} is not its parts joined ({ids[row]!r})",
                hint="pass the --id-sep the table was scored with, or drop its exchange_id column",
            )
        frame = frame.drop(COMPOSITE_ID)
    out = pl.concat([ids.to_frame(), frame], how="horizontal")
    return out.drop(key.parts) if drop_parts else out


def check_input_columns(columns: Sequence[str], key: IdKey, source: str) -> None:
    """The input ``score`` builds a composite id in has every part and no ``exchange_id`` of its own (exit 2).

    Args:
        columns: the input table's columns.
        key: the composite id key.
        source: the table's name, for the messages.
    """
    if COMPOSITE_ID in columns:
        raise InputSchemaError(
            f"{source}: already has an {COMPOSITE_ID!r} column, and {key.label()} would build another",
            hint=f"rename that column, or pass it as the only --id (--id {COMPOSITE_ID})",
        )
    missing = [p for p in key.parts if p not in columns]
    if missing:
        from tutormetrics.io.tables import require_columns

        require_columns(pl.DataFrame(schema=dict.fromkeys(columns, pl.String)), missing, source=source, option="--id")


def input_key(frame: pl.DataFrame, key: IdKey, source: str) -> pl.DataFrame:
    """An input table (``score``'s) with its composite ``exchange_id`` built first; unchanged for a plain id.

    Args:
        frame: the input table.
        key: the id key.
        source: the table's name, for the messages.
    """
    if not key.composite:
        return frame
    check_input_columns(frame.columns, key, source)
    return with_key(frame, key, source)


def read_keyed(
    path: str | os.PathLike[str],
    key: IdKey,
    fmt: str | None = None,
    *,
    id_columns: Sequence[str] = (),
    drop_parts: bool = False,
    **kwargs: object,
) -> pl.DataFrame:
    """:func:`tutormetrics.io.tables.read_table` then :func:`with_key`: CSV parts are read as text (``007`` stays
    ``007``); Parquet/JSONL parts keep their type, so a float part is refused rather than cast.

    Args:
        path: the table file.
        key: the id key.
        fmt: ``csv``, ``parquet`` or ``jsonl``; ``None`` goes by the extension.
        id_columns: further columns read as text (CSV).
        drop_parts: remove the part columns from the result.
        **kwargs: more :func:`~tutormetrics.io.tables.read_table` options.
    """
    ids = [c for c in id_columns if c not in key.parts or not key.composite]
    if key.composite and infer_format(path, fmt) == "csv":
        ids += list(key.parts)
    frame = read_table(path, fmt, id_columns=tuple(dict.fromkeys([*ids, key.column])), **kwargs)  # type: ignore[arg-type]
    return with_key(frame, key, str(Path(path)), drop_parts=drop_parts)
