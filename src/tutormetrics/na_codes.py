""""Not applicable" codes (``docs/design/studies.md#na-codes``): the one ``--na CODES`` option (:func:`na_flag`,
its parser :func:`parse_na_codes`) of every command that reads ratings and of ``aggregate``, what it does to long
ratings (:func:`split_na_codes`, :func:`drop_na_codes`), and the warning when a negative code would silently become
a category (:func:`negative_category_warnings`).

``--na -1`` on ratings is shorthand for ``--recode -1=`` (``docs/design/effects.md#recode``): ratings with these
scores are missing, dropped right after reading (before the scale is inferred) and counted on stderr in the recode
wording (``recode -1 -> missing: 3 ratings``; a code that never occurs is reported with 0).

Example:
    >>> r = pl.DataFrame({"criterion": ["c"] * 4, "score": [1, -1, 0, -1]})
    >>> notes = []
    >>> drop_na_codes(r, [-1], log=notes.append).height, notes
    (2, ['recode -1 -> missing: 2 ratings'])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, split_list
from tutormetrics.progress import Log, quiet

__all__ = ["drop_na_codes", "na_flag", "na_message", "negative_category_warnings", "parse_na_codes", "split_na_codes"]


def parse_na_codes(values: Sequence[str] | str | None) -> tuple[float, ...]:
    """``--na -1,-9`` (repeatable) as numbers, ``()`` when not given; a non-number is exit 2.

    >>> parse_na_codes(["-1,-9"]), parse_na_codes(None)
    ((-1.0, -9.0), ())
    """
    out = []
    for v in split_list(values) or []:
        try:
            code = float(v)
        except ValueError:
            code = math.nan
        if not math.isfinite(code):
            raise ConfigError(f"--na: {v!r} is not a number", hint="e.g. --na -1 or --na -1,-9 (empty cells are missing already)")
        out.append(code)
    return tuple(dict.fromkeys(out))


def na_flag(panel: str | None = None) -> Any:
    """``--na CODES``: the one declaration of the option (flag, parser, help) for ratings and ``aggregate``'s labels."""
    return flag(
        "--na", default=None, parse=parse_na_codes, cli_type=list[str] | None, panel=panel, show_default=False,
        help="Codes meaning 'not applicable', e.g. -1 or -1,-9 (repeat or comma-separate): read as missing, never as a "
        "score or category, and counted.",
    )


def _score(score_col: str) -> pl.Expr:
    return pl.col(score_col).cast(pl.Float64, strict=False)


def split_na_codes(ratings: pl.DataFrame, codes: Sequence[float], *, score_col: str = "score") -> tuple[pl.DataFrame, dict[float, int]]:
    """``ratings`` without the rows whose score is one of ``codes`` (numeric match), and the count per code.

    Args:
        ratings: Long ratings.
        codes: The "not applicable" scores (``--na``).
        score_col: The score column.

    >>> kept, counts = split_na_codes(pl.DataFrame({"score": ["1", "-1", "NA"]}), [-1.0, -9.0])
    >>> kept["score"].to_list(), counts
    (['1', 'NA'], {-1.0: 1, -9.0: 0})
    """
    score = ratings.select(_score(score_col)).to_series()
    counts = {float(c): int((score == c).sum()) for c in codes}
    return ratings.filter(~score.is_in(list(counts)).fill_null(False)), counts


def na_message(counts: dict[float, int]) -> str:
    """``recode -1 -> missing: 3 ratings; -9 -> missing: 0 ratings`` (the wording of ``--recode``)."""
    return "recode " + "; ".join(f"{c:g} -> missing: {n} ratings" for c, n in counts.items())


def drop_na_codes(
    ratings: pl.DataFrame, codes: Sequence[float], *, score_col: str = "score", log: Log = quiet
) -> pl.DataFrame:
    """``ratings`` without the rows whose score is one of ``codes`` (numeric match), counted to ``log``.

    Args:
        ratings: Long ratings.
        codes: The scores that mean "not rated" (``--na``).
        score_col: The score column.
        log: Where the ``recode`` line goes.
    """
    if not codes or score_col not in ratings.columns:
        return ratings
    kept, counts = split_na_codes(ratings, codes, score_col=score_col)
    log(na_message(counts))
    return kept


def negative_category_warnings(ratings: pl.DataFrame, *, criterion_col: str = "criterion", score_col: str = "score") -> list[str]:
    """One warning per criterion whose categories hold a negative score next to a non-negative one.

    Args:
        ratings: Long ratings.
        criterion_col: The criterion column.
        score_col: The score column.

    >>> print(negative_category_warnings(pl.DataFrame({"criterion": ["c"] * 3, "score": [1, 0, -1]}))[0])
    warning: ratings: criterion 'c': score -1 (1 ratings) is a category; if it means "not applicable", pass --na -1
    """
    if criterion_col not in ratings.columns or score_col not in ratings.columns:
        return []
    frame = ratings.select(pl.col(criterion_col).alias("c"), _score(score_col).alias("s")).drop_nulls()
    out = []
    for (crit,), sub in frame.group_by("c", maintain_order=True):
        if not (sub["s"] >= 0).any():
            continue
        for value, n in sorted(sub.filter(pl.col("s") < 0)["s"].value_counts().iter_rows()):
            out.append(
                f"warning: ratings: criterion {crit!r}: score {value:g} ({n} ratings) is a category; "
                f'if it means "not applicable", pass --na {value:g}'
            )
    return out
