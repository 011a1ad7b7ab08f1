"""Upstream values as the text of output cells (docs/design/datasets.md#converter-rules): cleaned responses, collapsed history turns,
transcripts, ids and scores."""

from __future__ import annotations

from collections.abc import Iterable


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

