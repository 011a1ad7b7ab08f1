""""Not applicable" codes in long ratings (``docs/design/studies.md#na-codes``): ``agree --na CODES`` and the warning when a
negative code silently becomes a category.

``--na -1`` is shorthand for ``--recode -1=`` (``docs/design/effects.md#recode``): ratings with these scores are missing,
dropped right after reading (before the scale is inferred) and counted on stderr in the recode wording
(``recode -1 -> missing: 3 ratings``; a code that never occurs is reported with 0).

Example:
    >>> r = pl.DataFrame({"criterion": ["c"] * 4, "score": [1, -1, 0, -1]})
    >>> notes = []
    >>> drop_na_codes(r, [-1], log=notes.append).height, notes
    (2, ['recode -1 -> missing: 2 ratings'])
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from tutormetrics.progress import Log, quiet

__all__ = ["drop_na_codes", "negative_category_warnings"]


def _score(ratings: pl.DataFrame, score_col: str) -> pl.Expr:
    return pl.col(score_col).cast(pl.Float64, strict=False)


def drop_na_codes(
    ratings: pl.DataFrame, codes: Sequence[float], *, score_col: str = "score", log: Log = quiet
) -> pl.DataFrame:
    """``ratings`` without the rows whose score is one of ``codes`` (numeric match).

    Args:
        ratings: Long ratings.
        codes: The scores that mean "not rated" (``--na``).
        score_col: The score column.
        log: Where the ``recode`` line goes.
    """
    if not codes or score_col not in ratings.columns:
        return ratings
    score = ratings.select(_score(ratings, score_col)).to_series()
    parts = [f"{c:g} -> missing: {int((score == c).sum())} ratings" for c in codes]
    log("recode " + "; ".join(parts))
    return ratings.filter(~score.is_in([float(c) for c in codes]).fill_null(False))


def negative_category_warnings(ratings: pl.DataFrame, *, criterion_col: str = "criterion", score_col: str = "score") -> list[str]:
    """One warning per criterion whose categories hold a negative score next to a non-negative one.

    Args:
        ratings: Long ratings.
        criterion_col: The criterion column.
        score_col: The score column.
    """
    if criterion_col not in ratings.columns or score_col not in ratings.columns:
        return []
    frame = ratings.select(pl.col(criterion_col).alias("c"), _score(ratings, score_col).alias("s")).drop_nulls()
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
