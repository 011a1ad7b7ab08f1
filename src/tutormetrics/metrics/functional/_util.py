"""Small helpers shared by the functional metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tutormetrics.text import tokenize

NAN = float("nan")


def as_tokens(x: str | Sequence[str]) -> Sequence[str]:
    """A string is tokenised with ``T(x)``; a sequence of tokens is used as it is."""
    return tokenize(x) if isinstance(x, str) else x


def ratio(num: float, den: float) -> float:
    """``num/den``, NaN when the denominator is 0; ``-0.0`` becomes ``0.0``."""
    return num / den + 0.0 if den else NAN


def clean(x: float) -> float:
    """Clamp ``-0.0`` to ``0.0`` and keep NaN."""
    return x if math.isnan(x) else x + 0.0
