"""Score recoding before any model: ``--recode FROM=TO`` (``docs/design/effects.md#recode``).

FROM is a number; TO a number or empty for *missing* (the rating is dropped and counted). All pairs
apply at once (``1=0`` with ``0=1`` swaps), matching is numeric (0.5 = .5 = 0.50).

Example:
    >>> m = parse_recode(["0.5=0", "-1="])
    >>> m
    {0.5: 0.0, -1.0: None}
    >>> df, counts = apply_recode(pl.DataFrame({"score": [0.0, 0.5, 1.0, -1.0]}), "score", m)
    >>> df["score"].to_list(), counts
    ([0.0, 0.0, 1.0, None], {0.5: 1, -1.0: 1})
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.ratings import _as_float

__all__ = ["apply_recode", "parse_recode", "recode_message"]

_HINT = "write --recode FROM=TO with numbers, e.g. --recode 0.5=0, or --recode -1= for missing"


def _number(text: str, what: str, item: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ConfigError(f"--recode {item!r}: {what} {text!r} is not a number", hint=_HINT) from None
    if not math.isfinite(v):
        raise ConfigError(f"--recode {item!r}: {what} must be finite", hint=_HINT)
    return v


def parse_recode(items: Sequence[str] | None) -> dict[float, float | None]:
    """``["FROM=TO", ...]`` → ``{from: to or None}``; one FROM with two different TOs is an error.

    Example:
        >>> parse_recode(["1=0", "0=1"])
        {1.0: 0.0, 0.0: 1.0}
    """
    out: dict[float, float | None] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--recode {item!r} has no '='", hint=_HINT)
        src, dst = (p.strip() for p in item.split("=", 1))
        key = _number(src, "FROM", item)
        val = None if dst == "" else _number(dst, "TO", item)
        if key in out and out[key] != val:
            raise ConfigError(f"--recode maps {src} to two values", hint="give each FROM one TO")
        out[key] = val
    return out


def apply_recode(
    ratings: pl.DataFrame, score_col: str, mapping: dict[float, float | None], *, id_col: str = "exchange_id", source: str = "ratings"
) -> tuple[pl.DataFrame, dict[float, int]]:
    """The ratings with ``score_col`` recoded (as Float64; missing TO → null) and the count per FROM.

    Every pair is applied to the original scores at once; a FROM that never occurs counts 0.

    Args:
        ratings: The ratings.
        score_col: The score column.
        mapping: FROM → TO score (``None``: missing), e.g. from ``--recode 0.5=0``.
        id_col: The exchange id column (named in the errors).
        source: The table's name in the errors.
    """
    if not mapping:
        return ratings, {}
    score = _as_float(ratings, score_col, id_col=id_col, source=source)
    counts = {k: int((score == k).sum()) for k in mapping}
    keys = pl.Series(list(mapping), dtype=pl.Float64)
    vals = pl.Series([v for v in mapping.values()], dtype=pl.Float64)
    hit = score.is_in([float(k) for k in mapping])
    new = score.replace_strict(keys, vals, default=score, return_dtype=pl.Float64)
    new = pl.select(pl.when(hit).then(new).otherwise(score)).to_series()
    return ratings.with_columns(new.alias(score_col)), counts


def recode_message(mapping: dict[float, float | None], counts: dict[float, int]) -> str:
    """``recode 0.5 -> 0: 412 ratings; -1 -> missing: 3 ratings``.

    Example:
        >>> recode_message({0.5: 0.0}, {0.5: 2})
        'recode 0.5 -> 0: 2 ratings'
    """
    parts = [
        f"{k:g} -> {'missing' if v is None else format(v, 'g')}: {counts.get(k, 0)} ratings" for k, v in mapping.items()
    ]
    return "recode " + "; ".join(parts)
