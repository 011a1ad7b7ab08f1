"""Duplicate ids (docs/design/datasets.md#converter-rules, rule D1): ``#k`` suffixes, how many ids repeated, and the
check that no two items of a release give one output id (exit 2 naming both)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tutormetrics.datasets.raw_values import refuse


def suffix_duplicates(ids: Sequence[str], source: str = "release") -> list[str]:
    """Rule D1: an id that occurs more than once gets ``#1``, ``#2``, … in file order; others stay as they are. A
    suffixed id that is also a raw id of the file (``a``, ``a``, ``a#1``) is exit 2: the two would be one.

    >>> suffix_duplicates(["a", "b", "a"])
    ['a#1', 'b', 'a#2']
    >>> suffix_duplicates(["a", "a", "a#2"], "x.json")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: x.json: the repeated id 'a' would become 'a#2' (rule D1), which is also an id of the file
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    total = Counter(ids)
    seen: Counter[str] = Counter()
    out = []
    for raw in ids:
        if total[raw] > 1:
            seen[raw] += 1
            suffixed = f"{raw}#{seen[raw]}"
            if suffixed in total:
                raise refuse(source, f"the repeated id {raw!r} would become {suffixed!r} (rule D1), which is also an id of the file")
            out.append(suffixed)
        else:
            out.append(raw)
    return out


def repeated_ids(ids: Sequence[str]) -> int:
    """How many distinct raw ids occur more than once (each got ``#k`` suffixes by rule D1)."""
    return sum(1 for n in Counter(ids).values() if n > 1)


def refuse_repeats(ids: Sequence[str], origins: Sequence[str], what: str, source: str) -> None:
    """No output id twice: two items whose parts join to one id (``a::b`` + ``c`` and ``a`` + ``b::c``) are exit 2
    naming both (``origins[i]`` says where ``ids[i]`` came from).

    Args:
        ids: the output ids.
        origins: per id, the item it was built from (for the message).
        what: ``exchange ids``, ``turn ids``.
        source: the raw file's name.

    >>> refuse_repeats(["a::b::c", "a::b::c"], ["item 0 (c)", "item 1 (b::c)"], "exchange id", "x.json")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: x.json: the exchange id 'a::b::c' is built twice, from item 0 (c) and from item 1 (b::c)
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    first: dict[str, int] = {}
    for i, key in enumerate(ids):
        j = first.setdefault(key, i)
        if j != i:
            raise refuse(source, f"the {what} {key!r} is built twice, from {origins[j]} and from {origins[i]}")
