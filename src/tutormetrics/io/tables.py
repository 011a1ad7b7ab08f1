"""Tables (CSV, TSV, Parquet, JSONL) read and written with polars (``docs/design/io.md#tables``).

Every table the package reads goes through :func:`read_table` or :func:`scan_table`, which refuse what polars would
read wrongly or silently (a missing, empty, compressed or non-UTF-8 file, a header naming a column twice, a JSONL key
given twice or holding an object on some lines) with one message naming the file; every table it writes goes through
:func:`write_table`: atomically (:mod:`tutormetrics.io.atomic`) and, for CSV, formula-guarded
(:mod:`tutormetrics.io.formula_guard`).

Example:
    >>> infer_format("metrics.tsv"), csv_separator("metrics.tsv")
    ('csv', '\\t')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.atomic import atomic_output
from tutormetrics.io.formula_guard import (
    any_guarded,
    forget_guard,
    guard_formulas,
    record_guard,
    unguard_formulas_expr,
    unguard_headers,
    written_with_guard,
)

__all__ = [
    "TableFormat", "close_columns", "csv_separator", "infer_format", "read_table", "require_columns", "require_distinct",
    "scan_table", "write_table",
]

TableFormat = Literal["csv", "parquet", "jsonl"]
_EXTENSIONS: dict[str, TableFormat] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def infer_format(path: str | os.PathLike[str], fmt: str | None = None) -> TableFormat:
    """Table format from an explicit ``fmt`` or from the file extension (``.csv``, ``.parquet``, ``.jsonl``)."""
    if fmt:
        fmt = fmt.lower()
        if fmt not in ("csv", "parquet", "jsonl"):
            raise InputSchemaError(f"unknown table format {fmt!r}", hint="use csv, parquet or jsonl")
        return fmt  # type: ignore[return-value]
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise InputSchemaError(
            f"{path}: cannot tell the table format from the extension {suffix or '(none)'!r}",
            hint="name the file .csv, .parquet or .jsonl, or pass --format",
        )
    return _EXTENSIONS[suffix]


def read_table(
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    encoding: str = "utf8",
    string_columns: bool = False,
    id_columns: Sequence[str] = (),
) -> pl.DataFrame:
    """Read a CSV, Parquet or JSONL file into a polars DataFrame with clear errors.

    ``string_columns=True`` reads every CSV column as text; ``id_columns`` are always read as text
    (ids such as ``007`` keep their zeros and never collide with ``7``). The CSV formula guard is undone
    only in files tutormetrics wrote (:func:`written_with_guard`), so a user's own ``'+`` stays as it is.

    Args:
        path: the file.
        fmt: ``csv``, ``parquet`` or ``jsonl`` (from the extension when ``None``).
        encoding: the text encoding of a CSV.
        string_columns: read every CSV column as text.
        id_columns: columns always read as text.
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    _check_file(path, kind)
    try:
        if kind == "csv":
            separator = "\t" if path.suffix.lower() == ".tsv" else ","
            if _is_utf8(encoding):
                _check_utf8(path)
                source: Path | bytes = path
            else:
                source = path.read_bytes().decode(encoding).encode("utf8")
            header = pl.read_csv(source, separator=separator, n_rows=0).columns
            overrides = {c: pl.String for c in id_columns if c in header}
            df = pl.read_csv(
                source, separator=separator, infer_schema=not string_columns, schema_overrides=overrides or None
            )
        elif kind == "parquet":
            df = pl.read_parquet(path)
        else:
            nested = _check_jsonl(path)
            df = pl.read_ndjson(path)
            _refuse_stringified(df.schema, nested, path)
    except InputSchemaError:
        raise
    except LookupError as exc:
        raise InputSchemaError(f"unknown text encoding {encoding!r}", hint="e.g. utf8, cp1252, latin-1") from exc
    except UnicodeDecodeError as exc:
        raise InputSchemaError(f"{path}: not valid {encoding}: {exc.reason} at byte {exc.start}", hint="check --encoding") from exc
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputSchemaError(f"{path}: could not be read as {kind}: {_first_line(exc)}") from exc
    if kind == "csv" and written_with_guard(path):
        df = unguard_headers(df.with_columns(unguard_formulas_expr(df)))
    return _ids_as_text(df, id_columns, path)


def _ids_as_text(df: pl.DataFrame, id_columns: Sequence[str], path: Path) -> pl.DataFrame:
    """Id columns as text; a nested value (list, struct) in an id column is an error."""
    for col in id_columns:
        if col not in df.columns or df.schema[col] == pl.String:
            continue
        if df.schema[col].is_nested() or df.schema[col] == pl.Object:
            raise InputSchemaError(f"{path}: id column {col!r} holds {df.schema[col]} values", hint="ids must be text or numbers")
        df = df.with_columns(pl.col(col).cast(pl.String))
    return df


def write_table(
    df: pl.DataFrame | pl.LazyFrame,
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    formula_guard: bool = True,
    record: bool = True,
) -> Path:
    """Write ``df`` atomically (temporary file in the same folder, then rename) as CSV, Parquet or JSONL.

    A LazyFrame is streamed to disk without being collected in memory. CSV text cells that a spreadsheet
    would run as a formula are guarded (:func:`guard_formulas`); when any cell was (and ``record``), the
    guard is recorded in ``<path>.manifest.json`` with the file's SHA-256 so :func:`read_table` undoes it
    exactly.

    Args:
        df: the table (a LazyFrame is streamed).
        path: where to write it.
        fmt: the format (from the extension when ``None``).
        formula_guard: guard CSV cells a spreadsheet would run.
        record: note a guard in ``<path>.manifest.json``.
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    if kind == "csv" and formula_guard:
        needs_record = record and (isinstance(df, pl.LazyFrame) or any_guarded(df))
        _write_atomic_table(guard_formulas(df), path, kind)
        if needs_record:
            record_guard(path)
        else:
            forget_guard(path)
        return path
    _write_atomic_table(df, path, kind)
    if kind == "csv":
        forget_guard(path)
    return path


def _write_atomic_table(df: pl.DataFrame | pl.LazyFrame, path: Path, kind: TableFormat) -> None:
    separator = csv_separator(path)
    with atomic_output(path) as tmp:
        if isinstance(df, pl.LazyFrame):
            if kind == "csv":
                df.sink_csv(tmp, separator=separator)
            else:
                {"parquet": df.sink_parquet, "jsonl": df.sink_ndjson}[kind](tmp)
        elif kind == "csv":
            df.write_csv(tmp, separator=separator)
        elif kind == "parquet":
            df.write_parquet(tmp)
        else:
            df.write_ndjson(tmp)


def csv_separator(path: str | os.PathLike[str]) -> str:
    """The delimiter the extension asks for: tab for ``.tsv``, else comma.

    >>> csv_separator("a.tsv"), csv_separator("a.csv")
    ('\\t', ',')
    """
    return "\t" if Path(path).suffix.lower() == ".tsv" else ","


def scan_table(
    path: str | os.PathLike[str], fmt: str | None = None, *, encoding: str = "utf8"
) -> pl.LazyFrame:
    """Open a table lazily for chunked reading; CSV columns are read as text (no type guessing).

    Args:
        path: the file.
        fmt: the format (from the extension when ``None``).
        encoding: the text encoding of a CSV.
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    _check_file(path, kind)
    if kind == "csv":
        separator = "\t" if path.suffix.lower() == ".tsv" else ","
        if _is_utf8(encoding):
            _check_utf8(path)
            lf = pl.scan_csv(path, separator=separator, infer_schema=False)
        else:
            lf = read_table(path, fmt, encoding=encoding, string_columns=True).lazy()
        try:
            lf.collect_schema()
        except pl.exceptions.PolarsError as exc:
            raise InputSchemaError(f"{path}: could not be read as csv: {_first_line(exc)}") from exc
        return unguard_headers(lf.with_columns(unguard_formulas_expr(lf))) if written_with_guard(path) else lf
    if kind == "parquet":
        return pl.scan_parquet(path)
    nested = _check_jsonl(path)
    lf = pl.scan_ndjson(path)
    try:
        schema = lf.collect_schema()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"{path}: could not be read as jsonl: {_first_line(exc)}") from exc
    _refuse_stringified(schema, nested, path)
    return lf


def _check_jsonl(path: Path) -> dict[str, int]:
    """One pass over a JSONL file: every line an object without duplicate keys; returns, per key, the first line
    (1-based) whose value is a JSON object or array.

    polars keeps the first of two equal keys and, past the rows it infers types from, turns a JSON object in a text
    column into its string form; both would be scored silently, so both are refused here.
    """
    import json

    def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"duplicate key {dup!r}")
        return dict(pairs)

    nested: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=no_duplicates)
            except ValueError as exc:  # JSONDecodeError is a ValueError
                message = str(exc) if str(exc).startswith("duplicate key") else f"not valid JSON ({getattr(exc, 'msg', exc)})"
                raise InputSchemaError(f"{path}: line {number}: {message}", hint="one JSON object per line, each key once") from None
            if not isinstance(record, dict):
                raise InputSchemaError(f"{path}: line {number}: not a JSON object", hint="one JSON object per line")
            for key, value in record.items():
                if isinstance(value, (dict, list)) and key not in nested:
                    nested[key] = number
    return nested


def _refuse_stringified(schema: pl.Schema, nested: dict[str, int], path: Path) -> None:
    """A column read as text that holds a JSON object or array on some line is an error naming that line."""
    for key, number in nested.items():
        if schema.get(key) == pl.String:
            raise InputSchemaError(
                f"{path}: line {number}: {key!r} holds a JSON object or array where other lines hold text",
                hint="give every line the same kind of value (flatten structured values to text first)",
            )


def close_columns(name: str, columns: Sequence[str], n: int = 3) -> list[str]:
    """The columns a misspelt ``name`` most likely means: same name in another case first, then
    :func:`difflib.get_close_matches` (ratio ≥ 0.6), then columns that contain ``name`` or are contained in it.

    Args:
        name: the column asked for.
        columns: the table's columns.
        n: at most this many.

    >>> close_columns("Tutor", ["tutor", "tutors", "conversation_id"])
    ['tutor', 'tutors']
    >>> close_columns("dialogue", ["dialogue_id", "turn"]), close_columns("zz", ["turn"])
    (['dialogue_id'], [])
    """
    import difflib

    folded = name.casefold()
    same_case = [c for c in columns if c.casefold() == folded and c != name]
    close = difflib.get_close_matches(name, list(columns), n=n, cutoff=0.6)
    inside = [c for c in columns if len(folded) >= 3 and (folded in c.casefold() or (len(c) >= 3 and c.casefold() in folded))]
    return list(dict.fromkeys([*same_case, *close, *inside]))[:n]


def _names(columns: Sequence[str], limit: int = 12) -> str:
    """At most ``limit`` column names, then how many more: ``a, b, … (40 in all)``."""
    shown = ", ".join(columns[:limit])
    return shown if len(columns) <= limit else f"{shown}, … ({len(columns)} in all)"


def require_columns(
    df: pl.DataFrame, columns: list[str], *, source: str, option: str | None = None, also: str | None = None
) -> None:
    """Raise :class:`InputSchemaError` naming the missing columns and the closest existing ones
    (:func:`close_columns`); the hint names ``option`` and the table's columns (the first 12).

    Args:
        df: the table.
        columns: the columns it must have.
        source: its name in the message.
        option: the option that names the column, for the hint.
        also: another way out, added to the hint (e.g. carrying an input column with ``score --keep``).
    """
    present = set(df.columns)  # one set: the check is linear in the number of columns
    missing = [c for c in columns if c not in present]
    if not missing:
        return
    parts = []
    for col in missing:
        close = close_columns(col, df.columns)
        parts.append(f"{col!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    ways = [f"name an existing column with {option}" if option else "", also or ""]
    hint = "; ".join([w for w in ways if w] + [f"the columns are {_names(df.columns)}"])
    raise InputSchemaError(f"{source}: missing column {', '.join(parts)}", hint=hint)


def require_distinct(roles: Mapping[str, str | Sequence[str] | None], *, command: str, hint: str | None = None) -> None:
    """Exit 2 when two options that need different columns name the same one (``--group-col grp --block-col grp``).

    Args:
        roles: option → the column(s) it names (``None``: not given); a column named twice by one option is not
            checked here.
        command: the command, for the message.
        hint: the hint (default: each option names its own column).

    >>> require_distinct({"--group-col": "grp", "--block-col": "grp"}, command="compare")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: compare: --group-col and --block-col both name the column 'grp'
      hint: each of these options names a different column
    """
    seen: dict[str, str] = {}
    for option, cols in roles.items():
        for col in [cols] if isinstance(cols, str) else list(cols or []):
            first = seen.setdefault(col, option)
            if first != option:
                raise ConfigError(f"{command}: {first} and {option} both name the column {col!r}",
                                  hint=hint or "each of these options names a different column")  # fmt: skip


def _is_utf8(encoding: str) -> bool:
    return encoding.lower().replace("-", "").replace("_", "") in ("utf8", "utf8lossy")


#: Magic bytes of compressed or archive files that are not tables.
_COMPRESSED = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"\xfd7zXZ": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd"}


def _check_file(path: Path, kind: str | None = None) -> None:
    """A readable regular file with content: a pipe, a compressed file or CR-only line endings get their own message."""
    import stat

    if not path.exists():
        raise InputSchemaError(f"{path}: file not found")
    if path.is_dir():
        raise InputSchemaError(f"{path}: is a directory, expected a file")
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        what = "a pipe (FIFO)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise InputSchemaError(f"{path}: is {what}; tables are read from files",
                               hint="write the data to a file first (e.g. ... > exchanges.csv) and pass that")
    if path.stat().st_size == 0:
        raise InputSchemaError(f"{path}: file is empty", hint="the file needs a header row and at least one data row")
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    for magic, name in _COMPRESSED.items():
        if head.startswith(magic) and kind != "parquet":
            raise InputSchemaError(f"{path}: is a {name}-compressed file, not a table", hint=f"decompress it first (e.g. with {name} -d or unzip)")
    if kind == "csv":
        _check_header(path, head)
    if kind == "csv" and b"\r" in head and b"\n" not in head:
        raise InputSchemaError(f"{path}: uses CR-only line endings (classic Mac), which CSV readers take as one line",
                               hint="convert the line endings to LF or CRLF (e.g. tr '\\r' '\\n' < in.csv > out.csv)")


def _check_header(path: Path, head: bytes) -> None:
    """A CSV header that names one column twice is an error (polars would silently rename the second)."""
    import csv
    import io as _io
    from collections import Counter

    text = head.decode("utf8", errors="replace")
    try:
        header = next(csv.reader(_io.StringIO(text, newline=""), delimiter=csv_separator(path)))
    except (StopIteration, csv.Error):
        return
    twice = [name for name, n in Counter(header).items() if n > 1 and name]
    if twice:
        raise InputSchemaError(
            f"{path}: the header names {', '.join(map(repr, twice))} more than once",
            hint="give every column its own name; tutormetrics never guesses which of two equal columns you mean",
        )


def _check_utf8(path: Path, chunk: int = 1 << 20) -> None:
    """Fail early, with the byte offset, on a file that is not UTF-8."""
    decoder = __import__("codecs").getincrementaldecoder("utf-8")()
    offset = 0
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                raise InputSchemaError(
                    f"{path}: not valid UTF-8 (byte {offset + exc.start})",
                    hint="re-save the file as UTF-8, or pass --encoding (e.g. --encoding cp1252 or latin-1)",
                ) from None
            offset += len(block)
        decoder.decode(b"", final=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
