"""Writing a conversion: each table as CSV text, ``meta.json`` (licence, attribution, raw hash, counts;
docs/design/datasets.md#converter-rules), all swapped into one folder together (never half old, half new)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from tutormetrics.datasets.conversion import Conversion, Table
from tutormetrics.datasets.sources import Source
from tutormetrics.io.atomic import write_text_atomic


def csv_text(table: Table) -> str:
    """The file text in the dialect of Python's ``csv.writer`` defaults (CRLF records, minimal quoting)."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return buf.getvalue()


def meta(source: Source, conversion: Conversion, raw_path: Path, raw: bytes, version: str) -> dict:
    """``meta.json``: the licence, the attribution, the raw file's hash, rows per file, counts (docs/design/datasets.md#converter-rules).

    Args:
        source: the dataset's source record (licence, attribution).
        conversion: the converted tables, counts and notes.
        raw_path: the raw file read.
        raw: its bytes (hashed).
        version: the tutormetrics version.
    """
    out: dict = {
        "dataset": source.name,
        "repository": source.repository,
        "licence": source.licence,
        "licence_url": source.licence_url,
        "share_alike": source.share_alike,
        "attribution": source.attribution(),
        "raw": {"name": raw_path.name, "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()},
        "files": {name: len(table.rows) for name, table in conversion.tables.items()},
        "counts": conversion.counts,
        "csv_formula_guard": False,
        "tutormetrics": version,
    }
    if source.licence_notice:
        out["licence_notice"] = source.licence_notice
    if conversion.notes:
        out["notes"] = conversion.notes
    return out


#: every file name a converter writes: the only names an earlier conversion's ``meta.json`` may have removed
OUTPUT_NAMES = frozenset({"exchanges.csv", "ratings.csv", "exchanges_meta.csv", "ratings_wide.csv", "dialogues.csv",
                          "turn_ratings.csv", "conversations_meta.csv", "meta.json"})
_STAGE = ".convert-stage."


def previous_files(folder: Path) -> set[str]:
    """The files of an earlier conversion in ``folder``: those its ``meta.json`` lists (converter names only), and
    ``meta.json``; none when there is no readable ``meta.json`` of a known dataset."""
    try:
        old = json.loads((folder / "meta.json").read_text(encoding="utf8"))
        listed = set(old["files"]) if isinstance(old.get("files"), dict) and "dataset" in old else set()
    except (OSError, ValueError, AttributeError, TypeError):
        return set()
    return {name for name in listed | {"meta.json"} if name in OUTPUT_NAMES}


def _swap(stage: Path, folder: Path, new: list[str], stale: list[str]) -> None:
    """Move the old files aside, the staged ones in (``meta.json`` last), then drop the old ones; on any error put
    everything back, so the folder holds the old conversion or the new one, never a mix."""
    aside = stage / ".old"
    aside.mkdir()
    moved_aside: list[str] = []
    moved_in: list[str] = []
    try:
        for name in dict.fromkeys([*new, *stale]):
            if os.path.lexists(folder / name):
                os.replace(folder / name, aside / name)
                moved_aside.append(name)
        for name in new:
            os.replace(stage / name, folder / name)
            moved_in.append(name)
    except BaseException:
        for name in moved_in:
            os.replace(folder / name, stage / name)
        for name in moved_aside:
            os.replace(aside / name, folder / name)
        raise


def write_conversion(folder: Path, source: Source, conversion: Conversion, raw_path: Path, raw: bytes, version: str) -> list[Path]:
    """Write every table and ``meta.json`` into ``folder`` as one swap (docs/design/datasets.md#converter-rules):
    all files are written into a staging folder inside it first, then moved in together; an earlier conversion's
    files that this one does not write (listed in its ``meta.json``) go with it. Other files are left alone; a
    failure half-way leaves the folder as it was.

    Args:
        folder: the output folder (created).
        source: the dataset.
        conversion: the tables, counts and notes.
        raw_path: the raw file (never removed, even when an old ``meta.json`` lists its name).
        raw: its bytes (hashed into ``meta.json``).
        version: the tutormetrics version.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(f"{_STAGE}*"):  # a killed earlier run (the command holds the folder's lock)
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
    texts = {name: csv_text(table) for name, table in conversion.tables.items()}
    texts["meta.json"] = json.dumps(meta(source, conversion, raw_path, raw, version), indent=2, ensure_ascii=False) + "\n"
    stale = [n for n in sorted(previous_files(folder) - set(texts)) if not _same_file(folder / n, raw_path)]
    stage = Path(tempfile.mkdtemp(prefix=_STAGE, dir=folder))
    try:
        for name, text in texts.items():
            write_text_atomic(stage / name, text)
        _swap(stage, folder, list(texts), stale)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return [folder / name for name in texts]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
