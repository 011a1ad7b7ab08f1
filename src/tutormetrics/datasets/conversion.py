"""What a converter returns: tables of text cells by file name, the counts and the stderr summary line.

A converter is a pure function ``raw bytes -> Conversion``; writing the folder is
:func:`tutormetrics.datasets.output_files.write_conversion`, so the rules for files live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RATINGS_HEADER = ["exchange_id", "rater", "criterion", "label", "score"]


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


def thousands(n: int) -> str:
    return f"{n:,}"
