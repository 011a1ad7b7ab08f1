"""Writing a conversion: each table as CSV text, ``meta.json`` (licence, attribution, raw hash, counts;
docs/design/datasets.md#converter-rules), all written atomically into one folder."""

from __future__ import annotations

import csv
import hashlib
import io
import json
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
    """``meta.json``: the licence, the attribution, the raw file's hash, rows per file, counts (docs/design/datasets.md#converter-rules)."""
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


def write_conversion(folder: Path, source: Source, conversion: Conversion, raw_path: Path, raw: bytes, version: str) -> list[Path]:
    """Write every table and ``meta.json`` into ``folder`` atomically (same-named files replaced, others left)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [write_text_atomic(folder / name, csv_text(table)) for name, table in conversion.tables.items()]
    body = json.dumps(meta(source, conversion, raw_path, raw, version), indent=2, ensure_ascii=False) + "\n"
    written.append(write_text_atomic(folder / "meta.json", body))
    return written
