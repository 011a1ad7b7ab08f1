"""Duplicate ids (docs/design/datasets.md#converter-rules, rule D1): ``#k`` suffixes, how many ids repeated, and the check that none
survived a conversion."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


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


def assert_unique(ids: Sequence[str], what: str) -> None:
    dupes = [k for k, n in Counter(ids).items() if n > 1]
    if dupes:  # the id rules make this impossible; a converter bug must not pass silently
        raise AssertionError(f"duplicate {what} after conversion: {dupes[:3]}")
