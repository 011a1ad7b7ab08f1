"""The CSV formula guard and its record (``docs/design/io.md#formula-guard``).

A spreadsheet runs a cell that starts with ``= + - @`` (or tab/CR) as a formula (OWASP "CSV injection"). Every CSV
the package writes prefixes such text cells and headers with ``'`` (:func:`guard_formulas`); when it did, it notes so
in ``<file>.manifest.json`` together with the file's SHA-256 (:func:`record_guard`), so that reading that very file
back undoes the guard exactly (:func:`written_with_guard`, :func:`unguard_formulas_expr`), while a user's own
``'+1`` in a file tutormetrics did not write stays as it is.

Example:
    >>> guard_formulas(pl.DataFrame({"t": ["=1+2", "-3.5", "'x", "ok"]}))["t"].to_list()
    ["'=1+2", '-3.5', "''x", 'ok']
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.hashing import file_sha256

__all__ = [
    "FORMULA_PREFIXES",
    "GUARD_RECORD_SUFFIX",
    "any_guarded",
    "forget_guard",
    "guard_formulas",
    "needs_guard",
    "record_guard",
    "unguard_formulas_expr",
    "unguard_headers",
    "written_with_guard",
]

#: Characters that make a spreadsheet treat a cell as a formula (OWASP CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: The record of a guarded file sits in its manifest: ``<file>.manifest.json``.
GUARD_RECORD_SUFFIX = ".manifest.json"

#: A cell that is a plain number (``-3.5``, ``+2e3``): a spreadsheet reads it as that number, never as a formula.
_PLAIN_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_GUARD_PATTERN = "^['" + "".join("\\" + c if c in "-+" else c for c in FORMULA_PREFIXES) + "]"


def _guard_condition(name: str) -> pl.Expr:
    col = pl.col(name)
    return col.str.contains(_GUARD_PATTERN) & ~col.str.contains(_PLAIN_NUMBER)


def guard_formulas(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Prefix text cells that start with ``= + - @`` (or tab/CR) with ``'`` so spreadsheets show them as text.

    Only string columns change, and plain numbers in them (``-3.5``) are left alone. A cell that already
    starts with ``'`` is guarded too, so undoing the guard (:func:`unguard_formulas_expr`) is exact.

    Example:
        >>> guard_formulas(pl.DataFrame({"=h": ["@x"]})).columns
        ["'=h"]
    """
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    exprs = [
        pl.when(_guard_condition(name)).then(pl.lit("'") + pl.col(name)).otherwise(pl.col(name)).alias(name)
        for name, dtype in schema.items()
        if dtype == pl.String
    ]
    guarded = frame.with_columns(exprs) if exprs else frame
    headers = {name: "'" + name for name in schema if needs_guard(name)}
    return guarded.rename(headers) if headers else guarded


def needs_guard(text: str) -> bool:
    """Whether a header or cell would be guarded: it starts with ``= + - @``, tab, CR or ``'`` and is no plain number.

    >>> needs_guard("=HYPERLINK(1)"), needs_guard("-3.5"), needs_guard("tone")
    (True, False, False)
    """
    return bool(re.match(_GUARD_PATTERN, text)) and not re.match(_PLAIN_NUMBER, text)


def any_guarded(df: pl.DataFrame) -> bool:
    """Whether :func:`guard_formulas` would change ``df`` (a header or a text cell).

    >>> any_guarded(pl.DataFrame({"t": ["ok", "-3.5"]})), any_guarded(pl.DataFrame({"t": ["=1"]}))
    (False, True)
    """
    if any(needs_guard(name) for name in df.columns):
        return True
    cols = [name for name, dtype in df.schema.items() if dtype == pl.String]
    if not cols or df.height == 0:
        return False
    return bool(df.select(pl.any_horizontal(_guard_condition(c).any() for c in cols)).item())


def _record_path(path: str | os.PathLike[str]) -> Path:
    return Path(str(path) + GUARD_RECORD_SUFFIX)


def record_guard(path: str | os.PathLike[str], extra: dict[str, Any] | None = None) -> None:
    """Note in ``<path>.manifest.json`` that tutormetrics guarded this CSV (with its SHA-256).

    An existing manifest (``score`` writes one) keeps its other entries.
    """
    path = Path(path)
    record = _record_path(path)
    data: dict[str, Any] = {}
    if record.is_file() and not record.is_symlink():
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
    from tutormetrics import __version__

    data.update(extra or {})
    data["written_by"] = f"tutormetrics {__version__}"
    data["csv_formula_guard"] = {"file": path.name, "sha256": file_sha256(path)}
    write_text_atomic(record, json.dumps(data, indent=2, default=str))


def forget_guard(path: str | os.PathLike[str]) -> None:
    """Drop a stale guard record of ``path`` (the file was rewritten without guarded cells)."""
    record = _record_path(path)
    if not record.is_file() or record.is_symlink():
        return
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and "csv_formula_guard" in data:
        data.pop("csv_formula_guard")
        if set(data) <= {"written_by"}:
            record.unlink()
        else:
            write_text_atomic(record, json.dumps(data, indent=2, default=str))


def written_with_guard(path: str | os.PathLike[str]) -> bool:
    """True when ``<path>.manifest.json`` says tutormetrics guarded this very file (same SHA-256)."""
    record = _record_path(path)
    if not record.is_file():
        return False
    try:
        entry = json.loads(record.read_text()).get("csv_formula_guard")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(entry, dict) and entry.get("sha256") == file_sha256(Path(path))


def unguard_headers(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Undo :func:`guard_formulas`'s header guard (only for files tutormetrics wrote)."""
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    renames = {n: n[1:] for n in names if n.startswith("'") and needs_guard(n[1:])}
    return frame.rename(renames) if renames else frame


def unguard_formulas_expr(frame: pl.DataFrame | pl.LazyFrame) -> list[pl.Expr]:
    """Expressions that strip the ``'`` added by :func:`guard_formulas` from string columns."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    pattern = "^'" + _GUARD_PATTERN[1:]
    return [
        pl.when(pl.col(name).str.contains(pattern)).then(pl.col(name).str.slice(1)).otherwise(pl.col(name)).alias(name)
        for name, dtype in schema.items()
        if dtype == pl.String
    ]
