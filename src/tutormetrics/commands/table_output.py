"""One writer for every table a command writes (``docs/guide/paper.md#tables``).

The format comes from the path's extension: ``.csv``, ``.parquet``, ``.jsonl`` as data, ``.md``/``.markdown``/``.tex``
as a paper table in ``kind``'s layout with ``--caption`` (default: the layout's). Data tables (``score -o``, ``theta -o``,
``aggregate -o``, ``--totals-out``, ``--units-out``) go through :func:`write_data` and refuse ``.md``/``.tex`` (exit 2).

Example:
    >>> check_table_path("t.tex"), check_table_path("t.csv", data=True)
    ('tex', 'csv')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # polars and the report's writers load when a table is written, not when the CLI starts
    import polars as pl

from tutormetrics.commands.terminal import log
from tutormetrics.errors import ConfigError
from tutormetrics.row_filter import apply_where

__all__ = ["check_table_path", "filter_rows", "write_data", "write_result"]


def check_table_path(path: str | os.PathLike[str] | None, *, data: bool = False, what: str = "this table") -> str | None:
    """The format of ``path`` (None: None), checked before any work: an unknown extension is exit 2, and so is
    ``.md``/``.tex`` for a data table (``data=True``).

    Args:
        path: The output file, or ``None`` (not asked for).
        data: The table is a data table (θ, predictions, totals): only csv, parquet or jsonl.
        what: The table's name in the message (``theta -o``).
    """
    from tutormetrics.report.paper_tables import paper_format

    if path is None:
        return None
    fmt = paper_format(path)
    if data and fmt in ("md", "tex"):
        raise ConfigError(f"{path}: {what} is a data table, written as .csv, .parquet or .jsonl (not .{fmt})",
                          hint="paper tables (.md/.tex) come from summarize, validate, theta --facets/--effects, agree, "
                               "compare, variability, predict and ppi")  # fmt: skip
    return fmt


def write_result(
    frame: pl.DataFrame,
    path: str | os.PathLike[str],
    kind: str | None = None,
    caption: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> Path:
    """Write a command's table by ``path``'s extension; ``.md``/``.tex`` in ``kind``'s paper layout.

    Args:
        frame: the command's table (as its CSV holds it).
        path: the file; its extension picks csv, parquet, jsonl, md or tex.
        kind: the paper layout (``report/paper_tables.py``'s kinds; default told from the columns).
        caption: ``--caption`` (None: the layout's default caption).
        context: what the caption names that the table does not hold (seed, method, draws).
    """
    from tutormetrics.report.paper_tables import write_paper_table

    return write_paper_table(frame, path, kind=kind, caption=caption, context=context)


def write_data(frame: pl.DataFrame, path: str | os.PathLike[str], what: str) -> Path:
    """Write a data table: ``.csv``, ``.parquet`` or ``.jsonl``; ``.md``/``.tex`` is exit 2.

    Args:
        frame: The table.
        path: The file; its extension picks the format.
        what: The table's name in the message.
    """
    from tutormetrics.report.paper_tables import write_data_table

    return write_data_table(frame, path, what=what)


def filter_rows(frame: pl.DataFrame, where: list[str] | None, source: str | os.PathLike[str]) -> pl.DataFrame:
    """``--where`` on a command's main input, right after it is read (stderr: ``where: kept 561 of 1,122 rows (...)``).

    Args:
        frame: The input as read.
        where: The ``--where`` expressions (joined by ``and``); ``None``: every row.
        source: The input's name in messages.
    """
    return apply_where(frame, where, source=str(source), log=log) if where else frame
