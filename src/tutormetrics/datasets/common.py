"""What every converter shares (docs/design/datasets.md#converter-rules): cleaning, duplicate ids, scores as text, CSV files, meta.json.

A converter is a pure function ``raw bytes -> Conversion`` (tables as header + rows of text, counts); writing the
folder is :func:`write_conversion`, so the rules for files live in one place.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tutormetrics.errors import InputSchemaError
from tutormetrics.io.atomic import write_text_atomic

RATINGS_HEADER = ["exchange_id", "rater", "criterion", "label", "score"]


@dataclass(frozen=True)
class Source:
    """Where a dataset comes from (docs/design/datasets.md#sources)."""

    name: str
    repository: str
    licence: str
    licence_url: str
    citation: str
    raw_hint: str
    licence_notice: str | None = None

    @property
    def share_alike(self) -> bool:
        return "BY-SA" in self.licence

    def attribution(self) -> str:
        """The attribution line of meta.json: ``"<citation>. Data: https://<repository> (<licence>). Converted by ..."``."""
        return f"{self.citation}. Data: https://{self.repository} ({self.licence}). Converted by tutormetrics convert {self.name}."


@dataclass
class Table:
    """One output CSV: a header and rows of text cells."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class Conversion:
    """What a converter returns: the tables by file name, the counts, and the stderr summary line."""

    tables: dict[str, Table]
    counts: dict[str, int]
    summary: str
    notes: list[str] = field(default_factory=list)


def clean_text(text: str) -> str:
    """A response or long-table turn: U+00A0 → space, outer whitespace stripped, nothing else.

    >>> clean_text("\\u00a0 Well done!\\u00a0")
    'Well done!'
    """
    return text.replace("\u00a0", " ").strip()


def collapse(text: str) -> str:
    """A history turn: U+00A0 → space, every whitespace run → one space, stripped.

    >>> collapse(" a\\n\\tb\\u00a0 c ")
    'a b c'
    """
    return " ".join(text.replace("\u00a0", " ").split())


def transcript(turns: Iterable[tuple[str, str]]) -> str:
    """History turns as a ``prompt``: one line ``Tutor: text`` / ``Student: text`` per turn (texts collapsed).

    >>> transcript([("Tutor", "Hi\\n there"), ("Student", "2")])
    'Tutor: Hi there\\nStudent: 2'
    """
    return "\n".join(f"{role}: {collapse(text)}" for role, text in turns)


def suffix_duplicates(ids: Sequence[str]) -> list[str]:
    """Rule D1: an id that occurs more than once gets ``#1``, ``#2``, … in file order; others stay as they are.

    >>> suffix_duplicates(["a", "b", "a"])
    ['a#1', 'b', 'a#2']
    """
    total = Counter(ids)
    seen: Counter[str] = Counter()
    out = []
    for raw in ids:
        if total[raw] > 1:
            seen[raw] += 1
            out.append(f"{raw}#{seen[raw]}")
        else:
            out.append(raw)
    return out


def repeated_ids(ids: Sequence[str]) -> int:
    """How many distinct raw ids occur more than once (each got ``#k`` suffixes by rule D1)."""
    return sum(1 for n in Counter(ids).values() if n > 1)


def score_text(value: float) -> str:
    """A score as the shortest decimal: ``1``, ``0``, ``0.5``, ``4``.

    >>> [score_text(v) for v in (1.0, 0, 0.5, 4.0, 1 / 3)]
    ['1', '0', '0.5', '4', '0.3333333333333333']
    """
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def raw_id(value: object) -> str:
    """A raw id as text (JSON numbers as decimal digits).

    >>> raw_id(6000025), raw_id("4294755_60"), raw_id(3.0)
    ('6000025', '4294755_60', '3')
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def label_text(value: object) -> str:
    """An upstream label as text: a JSON ``4.0`` is ``4``, booleans ``true``/``false``."""
    return raw_id(value)


def assert_unique(ids: Sequence[str], what: str) -> None:
    dupes = [k for k, n in Counter(ids).items() if n > 1]
    if dupes:  # the id rules make this impossible; a converter bug must not pass silently
        raise AssertionError(f"duplicate {what} after conversion: {dupes[:3]}")


def not_this_dataset(raw_name: str, source: Source, expected: str) -> InputSchemaError:
    return InputSchemaError(
        f"{raw_name}: not a {source.name} file: expected {expected}",
        hint="convert mrbench takes MRBench/*.json or the BEA 2025 JSON; mathdial data/*.csv|jsonl; cima dataset.json; "
        "bridge dataset/*.json; uptake data/uptake_data.csv",
    )


def load_json(raw: bytes, raw_name: str, source: Source, expected: str) -> object:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise not_this_dataset(raw_name, source, expected) from None


def read_csv_rows(raw: bytes, raw_name: str, source: Source, expected: str, required: Sequence[str]) -> list[dict[str, str]]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise not_this_dataset(raw_name, source, expected) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is None or not set(required) <= set(reader.fieldnames):
        raise not_this_dataset(raw_name, source, expected)
    return list(reader)


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


_MIT = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated "
    "documentation files (the \"Software\"), to deal in the Software without restriction, including without limitation "
    "the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to "
    "permit persons to whom the Software is furnished to do so, subject to the following conditions:\n\nThe above "
    "copyright notice and this permission notice shall be included in all copies or substantial portions of the "
    "Software.\n\nTHE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT "
    "LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL "
    "THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF "
    "CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN "
    "THE SOFTWARE."
)


def mit_notice(copyright_line: str) -> str:
    """The MIT licence text with its copyright line (must travel with copies of MIT data)."""
    return f"MIT License\n\n{copyright_line}\n\n{_MIT}"


def thousands(n: int) -> str:
    return f"{n:,}"


SPACES = re.compile(r"\s+")
