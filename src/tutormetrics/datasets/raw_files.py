"""Reading a raw upstream file (JSON or CSV bytes), and the one error for a file of another dataset."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from tutormetrics.datasets.sources import Source
from tutormetrics.errors import InputSchemaError


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
