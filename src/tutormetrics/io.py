"""Reading and writing tables (CSV, Parquet, JSONL) with polars. Every file the package reads goes through here."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
    id_columns: Sequence[str] = (),
) -> pl.DataFrame:
    """Read a CSV, Parquet or JSONL file into a polars DataFrame with clear errors.

    ``string_columns=True`` reads every CSV column as text; ``id_columns`` are always read as text
    (ids such as ``007`` keep their zeros and never collide with ``7``). The CSV formula guard is undone
    only in files tutormetrics wrote (:func:`written_with_guard`), so a user's own ``'+`` stays as it is.
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
    """
    path = Path(path)
    kind = infer_format(path, fmt)
    if kind == "csv" and formula_guard:
        needs_record = record and (isinstance(df, pl.LazyFrame) or _any_guarded(df))
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


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The one way every file is written: yield a fresh temporary file in the target folder (``mkstemp``, which
    never follows a planted symlink), then fsync it, give it the umask's permissions and rename it over ``path``
    (a symlink at ``path`` is replaced, never followed). On any error the temporary file is removed and ``path``
    is untouched; leftovers of a killed write are removed by :func:`remove_stale_temporaries`.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_output(target) as tmp:
        ...     _ = tmp.write_text("done")
        >>> target.read_text()
        'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            yield tmp
        except Exception as exc:  # polars and matplotlib report a full disk in their own words
            if "No space left on device" in str(exc) and not isinstance(exc, OSError):
                import errno

                raise OSError(errno.ENOSPC, "No space left on device", str(path)) from exc
            raise
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
        _fsync_folder(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: some file systems refuse fsync on a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def output_lock(outputs: Sequence[str | os.PathLike[str] | None]) -> Iterator[None]:
    """Hold one lock per output (a file, or a folder like ``run``'s) for the whole command, so two tutormetrics
    processes never write one output: the second stops at once (exit 2) naming the first.

    The lock is ``flock`` on a hidden ``.<name>.lock`` beside the output (inside it for a folder), removed when the
    command ends; the kernel releases it when a process dies, so a killed run never blocks the next one.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "corr.csv"
        >>> with output_lock([out]):
        ...     (out.parent / ".corr.csv.lock").exists()
        True
    """
    import fcntl

    held: list[tuple[int, Path]] = []
    try:
        for out in dict.fromkeys(Path(p) for p in outputs if p is not None and str(p) != "-"):
            lock = (out / ".tutormetrics.lock") if out.is_dir() else out.parent / f".{out.name}.lock"
            lock.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666 & ~_umask())
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    owner = os.pread(fd, 200, 0).decode("utf8", "replace").strip() or "another process"
                    os.close(fd)
                    raise InputSchemaError(
                        f"{out} is being written by another tutormetrics command ({owner})",
                        hint="wait for it to finish, or stop it; two commands must not write one output",
                    ) from None
                # the lock file may have been removed by its previous holder between our open and flock: retry
                try:
                    same = os.fstat(fd).st_ino == os.stat(lock).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
            held.append((fd, lock))
            # under the lock no one else writes this output: leftovers of a killed write can go
            if out.is_dir():
                for tmp in out.glob(".*.tmp"):
                    if tmp.is_file() and not tmp.is_symlink():
                        tmp.unlink()
            else:
                remove_stale_temporaries(out)
        yield
    finally:
        for fd, lock in reversed(held):
            try:
                lock.unlink()
            except OSError:
                pass
            os.close(fd)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_output`: readers see the old file or the new one."""
    path = Path(path)
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf8", newline="") as fh:
            fh.write(text)
    return path


def save_figure(fig: object, path: str | os.PathLike[str], *, dpi: int = 300) -> Path:
    """Save a matplotlib figure through :func:`atomic_output` (format from the extension, white background), so a
    kill or a full disk never leaves a truncated figure where the old one was, and a planted symlink is replaced."""
    path = Path(path)
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=path.suffix.lower().lstrip("."), facecolor="white")  # type: ignore[attr-defined]
    return path


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`."""
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)
    return path


def remove_stale_temporaries(path: str | os.PathLike[str]) -> int:
    """Delete ``.<name>.*.tmp`` files that a killed write of ``path`` left in its folder; returns how many."""
    path = Path(path)
    removed = 0
    if path.parent.is_dir():
        for tmp in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink()
                removed += 1
    return removed


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped."""
    import glob

    return glob.escape(name)


def scan_table(
    path: str | os.PathLike[str], fmt: str | None = None, *, encoding: str = "utf8"
) -> pl.LazyFrame:
    """Open a table lazily for chunked reading; CSV columns are read as text (no type guessing)."""
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


#: A cell that is a plain number (``-3.5``, ``+2e3``): a spreadsheet reads it as that number, never as a formula.
_PLAIN_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_GUARD_PATTERN = "^['" + "".join("\\" + c if c in "-+" else c for c in FORMULA_PREFIXES) + "]"
GUARD_RECORD_SUFFIX = ".manifest.json"


def _guard_condition(name: str) -> pl.Expr:
    col = pl.col(name)
    return col.str.contains(_GUARD_PATTERN) & ~col.str.contains(_PLAIN_NUMBER)


def guard_formulas(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Prefix text cells that start with ``= + - @`` (or tab/CR) with ``'`` so spreadsheets show them as text.

    Only string columns change, and plain numbers in them (``-3.5``) are left alone. A cell that already
    starts with ``'`` is guarded too, so undoing the guard (:func:`unguard_formulas_expr`) is exact.

    Example:
        >>> guard_formulas(pl.DataFrame({"t": ["=1+2", "-3.5", "'x", "ok"]}))["t"].to_list()
        ["'=1+2", '-3.5', "''x", 'ok']
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
    import re

    return bool(re.match(_GUARD_PATTERN, text)) and not re.match(_PLAIN_NUMBER, text)


def _any_guarded(df: pl.DataFrame) -> bool:
    if any(needs_guard(name) for name in df.columns):
        return True
    cols = [name for name, dtype in df.schema.items() if dtype == pl.String]
    if not cols or df.height == 0:
        return False
    return bool(df.select(pl.any_horizontal(_guard_condition(c).any() for c in cols)).item())


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def record_guard(path: str | os.PathLike[str], extra: dict | None = None) -> None:
    """Note in ``<path>.manifest.json`` that tutormetrics guarded this CSV (with its SHA-256).

    An existing manifest (``score`` writes one) keeps its other entries.
    """
    import json

    path = Path(path)
    record = Path(str(path) + GUARD_RECORD_SUFFIX)
    data: dict = {}
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
    import json

    record = Path(str(path) + GUARD_RECORD_SUFFIX)
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
    import json

    path = Path(path)
    record = Path(str(path) + GUARD_RECORD_SUFFIX)
    if not record.is_file():
        return False
    try:
        entry = json.loads(record.read_text()).get("csv_formula_guard")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(entry, dict) and entry.get("sha256") == file_sha256(path)


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


def _label(column: str) -> str:
    return column.replace("_", " ").strip().capitalize()


def check_outputs(inputs: Sequence[str | os.PathLike[str] | None], outputs: Sequence[str | os.PathLike[str] | None]) -> None:
    """Refuse, before any work, outputs that would overwrite an input or each other, or cannot be written.

    Paths are compared after resolving symlinks (and by inode for files that exist), so ``./e.csv``,
    ``e.csv`` and a link to it are the same file. Each output must not be a folder, and its folder (or
    the nearest existing parent) must be writable.

    Example:
        >>> check_outputs(["in.csv"], ["out.csv", "out_rho.csv"])
        >>> check_outputs(["in.csv"], ["./in.csv"])
        Traceback (most recent call last):
        ...
        tutormetrics.errors.InputSchemaError: output in.csv is the input in.csv: tutormetrics never overwrites an input
          hint: choose another output name
    """
    ins = [Path(p) for p in inputs if p is not None]
    outs = [Path(p) for p in outputs if p is not None]
    seen: dict[Path, Path] = {}
    for out in outs:
        key = _identity(out)
        for src in ins:
            if key == _identity(src):
                raise InputSchemaError(
                    f"output {out} is the input {src}: tutormetrics never overwrites an input",
                    hint="choose another output name",
                )
        if key in seen:
            raise InputSchemaError(f"two outputs are the same file: {seen[key]} and {out}", hint="give each output its own name")
        seen[key] = out
        if out.is_dir() and not out.is_symlink():
            raise InputSchemaError(f"output {out} is a folder", hint="name a file inside it, e.g. {}/metrics.csv".format(out))
        _check_writable_folder(out)


def _identity(path: Path) -> Path | tuple[int, int]:
    """A key equal for two names of one file: (device, inode) when it exists, else the resolved path."""
    try:
        st = path.stat()
        return (st.st_dev, st.st_ino)
    except OSError:
        return path.resolve()


def _check_writable_folder(path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    while not folder.exists():
        if folder.parent == folder:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise InputSchemaError(f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputSchemaError(f"cannot write {path}: folder {folder} is not writable", hint="choose a folder you can write to")
