"""Values of a raw release, checked for their type (docs/design/datasets.md#hostile-releases): a required text that is
``null``, a list where a text belongs, a response that is a text where an object belongs, is exit 2 naming the item
and the field — never the word ``None`` in a cell, never a Python exception.

Example:
    >>> text_value("Hi", "item c1", "response"), optional_text(None, "item c1", "Topic"), id_value(6000025, "item 0", "qid")
    ('Hi', '', '6000025')
"""

from __future__ import annotations

import math

from tutormetrics.datasets.cell_text import raw_id
from tutormetrics.errors import InputSchemaError

#: the hint of every malformed-release error
HINT = "convert reads each release as published: check the raw file against the upstream one (or re-download it)"


def _kind(value: object) -> str:
    """The JSON name of a value's type, for messages.

    >>> [_kind(v) for v in (None, True, 3, 1.5, "a", [1], {})]
    ['null', 'a boolean', 'a number', 'a number', 'a text', 'a list', 'an object']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a text"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def refuse(where: str, message: str) -> InputSchemaError:
    """The one error of a malformed release: ``<where>: <message>`` with the "as published" hint."""
    return InputSchemaError(f"{where}: {message}", hint=HINT)


def wrong_type(value: object, where: str, field: str, wanted: str) -> InputSchemaError:
    """The exit-2 error for a raw value of the wrong JSON type.

    Args:
        value: the value found.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.
        wanted: the type expected, in words (e.g. ``a text``).
    """
    return refuse(where, f"{field} is {_kind(value)}, not {wanted}")


def text_value(value: object, where: str, field: str) -> str:
    """A required text (a response, a turn, a history): anything else, ``null`` included, is exit 2.

    Args:
        value: the raw value.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.

    >>> text_value(None, "item c1 (GPT4)", "response")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: item c1 (GPT4): response is null, not a text
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    if not isinstance(value, str):
        raise wrong_type(value, where, field, "a text")
    return value


def optional_text(value: object, where: str, field: str) -> str:
    """An optional meta value (a topic, a split): ``null`` or absent is empty, a number is its decimal text, a list or
    an object is exit 2.

    Args:
        value: the raw value.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.

    >>> optional_text(3.0, "item 1", "Split"), optional_text(True, "item 1", "x")
    ('3', 'true')
    """
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        raise wrong_type(value, where, field, "a text")
    if isinstance(value, float) and not math.isfinite(value):
        raise refuse(where, f"{field} is {value!r}, not a text")
    return value if isinstance(value, str) else raw_id(value)


def id_value(value: object, where: str, field: str) -> str:
    """A raw id: a non-empty text or an integer (decimal digits); anything else is exit 2.

    Args:
        value: the raw value.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.

    >>> id_value("4294755_60", "item 3", "c_id"), id_value(7.0, "item 3", "c_id")
    ('4294755_60', '7')
    """
    whole_float = isinstance(value, float) and math.isfinite(value) and value.is_integer()
    if isinstance(value, bool) or not (isinstance(value, (str, int)) or whole_float):
        raise wrong_type(value, where, field, "a text or an integer")
    text = raw_id(value)
    if not text.strip():
        raise refuse(where, f"{field} is empty")
    return text


def object_value(value: object, where: str, field: str) -> dict:
    """A JSON object (an item, a response with its annotation).

    Args:
        value: the raw value.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.
    """
    if not isinstance(value, dict):
        raise wrong_type(value, where, field, "an object")
    return value


def list_value(value: object, where: str, field: str) -> list:
    """A JSON list (turns, responses, action flags).

    Args:
        value: the raw value.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.
    """
    if not isinstance(value, list):
        raise wrong_type(value, where, field, "a list")
    return value


def finite_number(text: str, where: str, field: str) -> float:
    """A numeric label or mean: ``inf``, ``NaN`` and non-numbers are exit 2 (they would become scores).

    Args:
        text: the raw cell.
        where: the item or row, for the message (e.g. ``item c1 (GPT4)``).
        field: the field's name, for the message.

    >>> finite_number(" 4 ", "conversation 1", "self_typical_confusion")
    4.0
    >>> finite_number("inf", "conversation 1", "self_typical_confusion")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.InputSchemaError: conversation 1: self_typical_confusion 'inf' is not a finite number
      hint: convert reads each release as published: check the raw file against the upstream one (or re-download it)
    """
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise refuse(where, f"{field} {text!r} is not a number") from None
    if not math.isfinite(number):
        raise refuse(where, f"{field} {text!r} is not a finite number")
    return number
