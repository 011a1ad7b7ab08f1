"""Data for the page: JSON that is safe inside a ``<script>`` element, and compact numbers.

A ``</script>`` (or ``<!--``) inside embedded JSON would end the element and let a tutor reply become
markup. Escaping ``<``, ``>`` and ``&`` as ``\\u003c``/``\\u003e``/``\\u0026`` (and U+2028/U+2029, which
some parsers treat as line ends) makes the text inert while ``JSON.parse`` still returns the same string.
"""

from __future__ import annotations

import json
import math
from typing import Any

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)


def script_json(obj: Any) -> str:
    """JSON text for a ``<script type="application/json">`` element: no ``<``, ``>``, ``&``, U+2028, U+2029.

    NaN and infinities must already be ``None`` (JSON has no NaN).

    Example:
        >>> script_json({"r": "</script><b>&"})
        '{"r":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
        >>> json.loads(script_json(["\\u2028<"])) == ["\\u2028<"]
        True
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_TABLE)


def compact(value: Any, digits: int = 6) -> Any:
    """A JSON-ready cell: floats to ``digits`` significant digits, NaN/inf to ``None``, other values as they are.

    Example:
        >>> compact(0.123456789), compact(float("nan")), compact(3.0), compact("a")
        (0.123457, None, 3, 'a')
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        short = float(f"{value:.{digits}g}")
        return int(short) if short.is_integer() and abs(short) < 1e15 else short
    return value
