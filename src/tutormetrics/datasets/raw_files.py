"""Reading a raw upstream file (JSON, JSONL or CSV bytes), strictly (docs/design/datasets.md#hostile-releases), and the
one error for a file of another dataset.

Strict means: UTF-8 or a message naming the byte; a JSON object with a key twice, ``NaN``/``Infinity``, numbers
of more than 4,300 digits and nesting too deep to read are exit 2; JSONL lines are split on ``\\n`` only (U+2028
and U+0085 belong to strings); a CSV cut inside a quoted cell, a row with more or fewer cells than the header
and a header naming a column twice are exit 2 naming the line; cells have no size limit (``score`` reads any).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tutormetrics.datasets.raw_values import HINT, refuse
from tutormetrics.datasets.sources import Source
from tutormetrics.errors import InputSchemaError


def not_this_dataset(raw_name: str, source: Source, expected: str) -> InputSchemaError:
    """The exit-2 error for a raw file that is not the dataset's.

    Args:
        raw_name: the raw file's name, for the message.
        source: the dataset being converted.
        expected: what the file should hold, for the message.
    """
    return InputSchemaError(
        f"{raw_name}: not a {source.name} file: expected {expected}",
        hint="convert mrbench takes MRBench/*.json or the BEA 2025 JSON; mathdial data/*.csv|jsonl; cima dataset.json; "
        "bridge dataset/*.json; uptake data/uptake_data.csv",
    )


def empty_release(raw_name: str, source: Source, what: str) -> InputSchemaError:
    """A release with no items: exit 2 rather than header-only tables with exit 0.

    Args:
        raw_name: the raw file's name, for the message.
        source: the dataset being converted.
        what: the items the release lacks (e.g. ``exchanges``).
    """
    return InputSchemaError(f"{raw_name}: holds no {what}: nothing to convert",
                            hint=f"convert {source.name} takes a whole split of the release ({source.raw_hint})")


def decode_utf8(raw: bytes, raw_name: str) -> str:
    """The file's text (a BOM dropped); a byte that is not UTF-8 is exit 2 naming its offset.

    >>> decode_utf8(b"ok \\xff", "x.json")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: x.json: not UTF-8 text: byte 0xff at offset 3
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise refuse(raw_name, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start}") from None


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


class _RepeatedKey(ValueError):
    pass


def _no_constant(name: str) -> object:
    raise _NotJson(f"{name} is not a JSON number")


class _NotJson(ValueError):
    pass


def parse_json(text: str, where: str) -> object:
    """``json.loads`` for releases: a repeated key (JSON keeps the last, silently dropping an item), ``NaN`` or
    ``Infinity``, a number over 4,300 digits or nesting too deep is exit 2 naming ``where``; plain syntax errors
    raise :class:`json.JSONDecodeError` for the caller to word.

    >>> parse_json('{"7": 1, "7": 2}', "dataset.json")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: dataset.json: the key '7' appears twice in one object (JSON would keep only the last)
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise
    except _RepeatedKey as exc:
        raise refuse(where, f"the key {exc.args[0]!r} appears twice in one object (JSON would keep only the last)") from None
    except _NotJson as exc:
        raise refuse(where, str(exc)) from None
    except RecursionError:
        raise refuse(where, "nested too deeply to read (thousands of brackets)") from None
    except ValueError as exc:  # int() of a number past sys.get_int_max_str_digits()
        raise refuse(where, f"holds a number that cannot be read ({str(exc).split(';')[0]})") from None


def load_json(raw: bytes, raw_name: str, source: Source, expected: str) -> object:
    """The parsed JSON of a raw file; text that is not JSON is :func:`not_this_dataset`.

    Args:
        raw: the file's bytes (UTF-8).
        raw_name: the raw file's name, for the messages.
        source: the dataset being converted.
        expected: what the file should hold, for the message.
    """
    text = decode_utf8(raw, raw_name)
    try:
        return parse_json(text, raw_name)
    except json.JSONDecodeError:
        raise not_this_dataset(raw_name, source, expected) from None


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the non-blank lines, split on ``\\n`` only: U+2028, U+0085 and a lone ``\\r``
    inside a JSON string are characters of that string (``str.splitlines`` would cut the record there).

    >>> list(jsonl_lines('{"a": "x\\u2028y"}\\n\\n{"b": 1}\\r\\n'))
    [(1, '{"a": "x\\u2028y"}'), (3, '{"b": 1}')]
    """
    for number, piece in enumerate(text.split("\n"), 1):
        line = piece.removesuffix("\r")
        if line.strip():
            yield number, line


@contextmanager
def _no_field_limit() -> Iterator[None]:
    """The csv module refuses cells over 128 KiB by default; ``score`` reads them, so ``convert`` does too."""
    old = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def read_csv_rows(raw: bytes, raw_name: str, source: Source, expected: str, required: Sequence[str]) -> list[dict[str, str]]:
    """The data rows as dicts (blank lines skipped); see the module docstring for what is refused.

    Args:
        raw: the file's bytes.
        raw_name: its name, for messages.
        source: the dataset it should be.
        expected: what the dataset's file looks like, for the "not a ... file" message.
        required: the columns the header must have.
    """
    text = decode_utf8(raw, raw_name)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, str]] = []
    with _no_field_limit():
        try:
            header = next(reader, None)
            if header is None or not set(required) <= set(header):
                raise not_this_dataset(raw_name, source, expected)
            twice = sorted({c for c in header if header.count(c) > 1})
            if twice:
                raise refuse(raw_name, f"the header names the column {twice[0]!r} twice")
            for cells in reader:
                if not cells:
                    continue
                if len(cells) != len(header):
                    raise InputSchemaError(
                        f"{raw_name}: line {reader.line_num}: {len(cells)} cells where the header has {len(header)} "
                        "(a row cut short, or an unquoted comma)", hint=HINT)
                rows.append(dict(zip(header, cells, strict=True)))
        except csv.Error as exc:  # e.g. "unexpected end of data": the file ends inside a quoted cell
            raise InputSchemaError(f"{raw_name}: line {reader.line_num}: not valid CSV ({exc}; a file cut inside a "
                                   "quoted cell?)", hint=HINT) from None
    return rows
