"""Reading and writing tables (CSV, Parquet, JSONL) with polars. Every file the package reads goes through here."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from tutormetrics.errors import InputSchemaError

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
    text_columns: Sequence[str] = (),
) -> pl.DataFrame:
    """Read a CSV, Parquet or JSONL file into a polars DataFrame with clear errors.

    ``string_columns=True`` reads every CSV column as text (ids such as ``007`` keep their zeros);
    ``text_columns`` reads just those columns (where present) as text, e.g. the id columns.
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    _check_file(path)
    overrides = dict.fromkeys(text_columns, pl.String) or None
    try:
        if kind == "csv":
            separator = "\t" if path.suffix.lower() == ".tsv" else ","
            if _is_utf8(encoding):
                _check_utf8(path)
                df = pl.read_csv(
                    path, separator=separator, infer_schema=not string_columns, encoding="utf8", schema_overrides=overrides
                )
            else:
                text = path.read_bytes().decode(encoding)
                df = pl.read_csv(
                    text.encode("utf8"), separator=separator, infer_schema=not string_columns, schema_overrides=overrides
                )
        elif kind == "parquet":
            df = pl.read_parquet(path)
        else:
            df = pl.read_ndjson(path)
    except InputSchemaError:
        raise
    except LookupError as exc:
        raise InputSchemaError(f"unknown text encoding {encoding!r}", hint="e.g. utf8, cp1252, latin-1") from exc
    except UnicodeDecodeError as exc:
        raise InputSchemaError(f"{path}: not valid {encoding}: {exc.reason} at byte {exc.start}", hint="check --encoding") from exc
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputSchemaError(f"{path}: could not be read as {kind}: {_first_line(exc)}") from exc
    if kind == "csv":
        df = df.with_columns(unguard_formulas_expr(df))
    elif text_columns:
        df = df.with_columns(pl.col(c).cast(pl.String) for c in dict.fromkeys(text_columns) if c in df.columns)
    return df


def write_table(df: pl.DataFrame | pl.LazyFrame, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Write ``df`` atomically (temporary file in the same folder, then rename) as CSV, Parquet or JSONL.

    A LazyFrame is streamed to disk without being collected in memory.
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if isinstance(df, pl.LazyFrame):
            {"csv": df.sink_csv, "parquet": df.sink_parquet, "jsonl": df.sink_ndjson}[kind](tmp)
        elif kind == "csv":
            df.write_csv(tmp)
        elif kind == "parquet":
            df.write_parquet(tmp)
        else:
            df.write_ndjson(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def scan_table(
    path: str | os.PathLike[str], fmt: str | None = None, *, encoding: str = "utf8"
) -> pl.LazyFrame:
    """Open a table lazily for chunked reading; CSV columns are read as text (no type guessing)."""
    path = Path(path)
    kind = infer_format(path, fmt)
    _check_file(path)
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
        return lf.with_columns(unguard_formulas_expr(lf))
    if kind == "parquet":
        return pl.scan_parquet(path)
    return pl.scan_ndjson(path)


def require_columns(df: pl.DataFrame, columns: list[str], *, source: str, option: str | None = None) -> None:
    """Raise :class:`InputSchemaError` naming the missing columns and the closest existing ones."""
    import difflib

    missing = [c for c in columns if c not in df.columns]
    if not missing:
        return
    parts = []
    for col in missing:
        close = difflib.get_close_matches(col, df.columns, n=1, cutoff=0.6)
        parts.append(f"{col!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    hint = f"available columns: {', '.join(df.columns)}"
    if option:
        hint += f"; choose another column with {option}"
    raise InputSchemaError(f"{source}: missing column {', '.join(parts)}", hint=hint)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _is_utf8(encoding: str) -> bool:
    return encoding.lower().replace("-", "").replace("_", "") in ("utf8", "utf8lossy")


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InputSchemaError(f"{path}: file not found")
    if path.is_dir():
        raise InputSchemaError(f"{path}: is a directory, expected a file")
    if path.stat().st_size == 0:
        raise InputSchemaError(f"{path}: file is empty", hint="the file needs a header row and at least one data row")


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


def join_prompt_columns(df: pl.DataFrame, columns: list[str]) -> pl.Series:
    """One prompt per row: a single column as it is, several joined as labelled sections.

    With ``columns=["query", "code"]`` a row becomes ``"Query:\\n<query>\\n\\nCode:\\n<code>"``;
    empty sections are left out.
    """
    if len(columns) == 1:
        return df.get_column(columns[0]).cast(pl.String).fill_null("")
    parts = [
        pl.when(pl.col(c).cast(pl.String).fill_null("").str.strip_chars() != "")
        .then(pl.lit(f"{_label(c)}:\n") + pl.col(c).cast(pl.String))
        .otherwise(None)
        for c in columns
    ]
    return df.select(pl.concat_str(parts, separator="\n\n", ignore_nulls=True).fill_null("").alias("prompt")).to_series()


def stable_id(prompt: str | None, response: str | None, seen: dict[str, int]) -> str:
    """Content id for inputs without an id column: ``sha1(prompt, response)[:12]``, then ``-2``, ``-3`` for repeats.

    Stable when rows are reordered or added, unlike row numbers. ``seen`` counts digests across chunks.
    """
    import hashlib

    digest = hashlib.sha1(f"{prompt or ''}\x1f{response or ''}".encode()).hexdigest()[:12]
    seen[digest] = seen.get(digest, 0) + 1
    return digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"


#: Characters that make a spreadsheet treat a cell as a formula (OWASP CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def guard_formulas(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Prefix text cells that start with ``= + - @`` (or tab/CR) with ``'`` so spreadsheets show them as text.

    Only string columns change; numbers are never altered. :func:`read_table` undoes it.
    """
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    # A cell that already starts with ' is guarded too, so reading back never eats a real apostrophe.
    pattern = "^['" + "".join("\\" + c if c in "-+" else c for c in FORMULA_PREFIXES) + "]"
    exprs = [
        pl.when(pl.col(name).str.contains(pattern)).then(pl.lit("'") + pl.col(name)).otherwise(pl.col(name)).alias(name)
        for name, dtype in schema.items()
        if dtype == pl.String
    ]
    return frame.with_columns(exprs) if exprs else frame


def unguard_formulas_expr(frame: pl.DataFrame | pl.LazyFrame) -> list[pl.Expr]:
    """Expressions that strip the ``'`` added by :func:`guard_formulas` from string columns."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    pattern = "^'['" + "".join("\\" + c if c in "-+" else c for c in FORMULA_PREFIXES) + "]"
    return [
        pl.when(pl.col(name).str.contains(pattern)).then(pl.col(name).str.slice(1)).otherwise(pl.col(name)).alias(name)
        for name, dtype in schema.items()
        if dtype == pl.String
    ]


def _label(column: str) -> str:
    return column.replace("_", " ").strip().capitalize()
