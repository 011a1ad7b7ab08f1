"""What ``validate``, ``summarize --ratings`` and ``run`` say about recoding (``docs/guide/paper.md#recode``).

``--recode FROM=TO`` acts right after RATINGS is read, before ``--levels``, ``--drop-out-of-scale`` and the
aggregate over raters (:mod:`tutormetrics.psychometrics.recode` does it). This module words the rest:
run.json's ``recode`` record, and the note for scores that are not whole numbers when no ``--recode`` is
given (the targets then use them as numbers, a valid ordinal target, so this is a note, not an error).

Example:
    >>> recode_record({0.5: 0.0, -1.0: None}, {0.5: 413, -1.0: 0})
    [{'from': 0.5, 'to': 0.0, 'ratings': 413}, {'from': -1.0, 'to': None, 'ratings': 0}]
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

__all__ = ["non_integer_note", "recode_record"]


def recode_record(mapping: Mapping[float, float | None] | None, counts: Mapping[float, int] | None) -> list[dict[str, object]]:
    """run.json's ``"recode"``: one ``{"from", "to", "ratings"}`` per pair (``to`` ``None`` = missing); ``[]`` without.

    Example:
        >>> recode_record(None, None)
        []
    """
    counts = counts or {}
    return [{"from": float(k), "to": None if v is None else float(v), "ratings": int(counts.get(k, 0))} for k, v in (mapping or {}).items()]


def non_integer_note(ratings: pl.DataFrame, command: str, *, criterion_col: str = "criterion", score_col: str = "score") -> str:
    """``validate: i1, i2, i3, i4 have non-integer scores (0.5); the targets use them as numbers (pass --recode 0.5=0
    for endorsements)``, or ``""`` when every score is a whole number. Criteria in first-appearance order.

    Args:
        ratings: Long ratings.
        command: The command name the note starts with.
        criterion_col: The criterion column.
        score_col: The score column.

    Example:
        >>> r = pl.DataFrame({"criterion": ["a", "a", "b"], "score": [1.0, 0.5, 1.0]})
        >>> non_integer_note(r, "run")
        'run: a has non-integer scores (0.5); the targets use them as numbers (pass --recode 0.5=0 for endorsements)'
    """
    score = ratings.get_column(score_col).cast(pl.Float64, strict=False)
    frame = pl.DataFrame({"c": ratings.get_column(criterion_col).cast(pl.String), "s": score}).drop_nulls()
    order = frame["c"].unique(maintain_order=True).to_list()
    frame = frame.filter(pl.col("s").is_finite() & (pl.col("s") != pl.col("s").round(0)))
    if frame.height == 0:
        return ""
    odd = set(frame["c"].to_list())
    criteria = [c for c in order if c in odd]
    values = sorted(set(frame["s"].to_list()))
    shown = ", ".join(f"{v:g}" for v in values[:5]) + (", ..." if len(values) > 5 else "")
    verb = "has" if len(criteria) == 1 else "have"
    recode = " ".join(f"--recode {v:g}=0" for v in values[:3])
    names = ", ".join(criteria[:8]) + (f" and {len(criteria) - 8} more" if len(criteria) > 8 else "")
    return f"{command}: {names} {verb} non-integer scores ({shown}); the targets use them as numbers (pass {recode} for endorsements)"
