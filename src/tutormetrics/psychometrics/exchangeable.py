"""Anonymous rater slots and one rater on mixed scales (``docs/design/datasets.md#exchangeable-raters``).

``--raters exchangeable`` says the rater labels are slots, not people (uptake: up to 3 of 13 raters per
item, stored as ``slot1, slot2, slot3``). Then:

* agreement keeps only what depends on each unit's multiset of scores: :func:`slot_labels` renames the
  ratings of a unit ``slot1 … slotk`` (k = its number of ratings), so ``n_raters`` is the most ratings on one
  unit and no label is carried from one unit to another;
* θ has no rater facet (s_r ≡ 0): :func:`single_rater` gives every rating one label, so θ is unchanged when
  labels are permuted or merged within units.

Without the option, :func:`slot_warning` flags labels that look like slots: at least two different numbers
of ratings per unit, and every unit rated k times is rated by exactly the first k labels in sorted order.
:func:`mixed_scale_warning` flags θ from one rater over criteria on different scales.

Example:
    >>> long = pl.DataFrame({"_id": ["a", "a", "b"], "_rater": ["s1", "s2", "s1"], "_crit": ["c"] * 3,
    ...                      "_score": [0.0, 1.0, 1.0]})
    >>> slot_labels(long)["_rater"].to_list()
    ['slot1', 'slot2', 'slot1']
    >>> print(slot_warning(long))
    warning: ratings: raters s1, s2 fill slots in order (c: 1 unit has 1 rating): if they are anonymous, pass --raters exchangeable
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.ratings import Ratings

__all__ = [
    "EXCHANGEABLE", "REASON", "SINGLE_LABEL", "check_raters_mode", "mixed_scale_warning", "single_rater", "slot_labels",
    "slot_warning", "theta_ratings",
]

#: The keyword value of ``--raters``.
EXCHANGEABLE = "exchangeable"
#: The agreement reason code of a table computed with exchangeable raters.
REASON = "exchangeable_raters"
#: The one rater label θ sees with exchangeable raters.
SINGLE_LABEL = "exchangeable"


def check_raters_mode(value: str | None, command: str) -> bool:
    """``--raters`` of ``theta``, ``run`` and ``validate``: ``None`` or ``exchangeable`` (→ True); anything
    else is a :class:`~tutormetrics.errors.ConfigError` (only ``agree`` names a pair ``A,B``).

    >>> check_raters_mode("exchangeable", "theta"), check_raters_mode(None, "run")
    (True, False)
    """
    if value is None:
        return False
    if value.strip() == EXCHANGEABLE:
        return True
    raise ConfigError(
        f"{command + ' ' if command else ''}--raters {value!r}: the only value here is {EXCHANGEABLE!r} (the rater labels are anonymous slots)",
        hint="agree --raters A,B names the two raters of its two-rater columns; theta, run and validate take --raters exchangeable",
    )


def slot_labels(long: pl.DataFrame, keep: Sequence[str] = ()) -> pl.DataFrame:
    """Cleaned long ratings (``_id, [_rater], _crit, _score``) with the rater of each rating replaced by its
    slot within the unit (id, criterion): ``slot1 … slotk`` in ascending score order, so a unit's multiset
    of scores is all that is left. Ratings by a rater named in ``keep`` (a judge) keep their label and must
    be one per unit; the slot prefix never equals a kept name.

    >>> long = pl.DataFrame({"_id": ["a", "a", "a"], "_rater": ["x", "x", "J"], "_crit": ["c"] * 3,
    ...                      "_score": [2.0, 1.0, 0.0]})
    >>> slot_labels(long, keep=["J"]).sort("_rater")["_rater"].to_list()
    ['J', 'slot1', 'slot2']
    """
    keep = list(keep)
    if "_rater" not in long.columns:
        if keep:
            raise InputSchemaError("ratings: no rater column, so the judge cannot be found", hint="add the rater column (--rater)")
        long = long.with_columns(pl.lit("", dtype=pl.String).alias("_rater"))
    prefix = "slot"
    while any(str(k).startswith(prefix) for k in keep):
        prefix = "_" + prefix
    kept = pl.col("_rater").is_in(keep) if keep else pl.lit(False)
    judged = long.filter(kept)
    if judged.height:
        dup = judged.filter(pl.struct("_id", "_rater", "_crit").is_duplicated())
        if dup.height:
            row = dup.row(0, named=True)
            raise InputSchemaError(
                f"ratings: the judge {row['_rater']!r} scores {row['_crit']!r} of {row['_id']!r} more than once",
                hint="a judge rates each criterion of an exchange once (only the human slots may repeat)",
            )
    out = long.with_row_index("_row")
    slots = (
        out.filter(~kept)
        .sort(["_id", "_crit", "_score", "_row"], nulls_last=True)
        .with_columns(
            (pl.lit(prefix) + (pl.int_range(pl.len()).over(["_id", "_crit"]) + 1).cast(pl.String)).alias("_slot")
        )
        .select("_row", "_slot")
    )
    out = out.join(slots, on="_row", how="left", maintain_order="left")
    return out.with_columns(pl.coalesce("_slot", "_rater").alias("_rater")).select(long.columns)


def single_rater(ratings: Ratings, label: str = SINGLE_LABEL) -> Ratings:
    """The same ratings with one rater label on every rating (θ without a rater facet: s_r ≡ 0); the rater
    column is added when the table has none.

    >>> raw = pl.DataFrame({"exchange_id": ["a", "a"], "criterion": ["c", "c"], "score": [0, 1]})
    >>> single_rater(Ratings.clean(raw, exchangeable=True)).long["_rater"].to_list()
    ['exchangeable', 'exchangeable']
    """
    if ratings.long is None:
        return ratings
    rater_col = ratings.rater_col or "rater"
    return replace(
        ratings,
        frame=ratings.frame.with_columns(pl.lit(label, dtype=pl.String).alias(rater_col)),
        long=ratings.long.with_columns(pl.lit(label, dtype=pl.String).alias("_rater")),
        rater_col=rater_col,
    )


def _count_text(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def slot_warning(long: pl.DataFrame, exclude: Sequence[str] = ()) -> str | None:
    """The warning of labels that look like anonymous slots, or ``None``: at least two different numbers of
    ratings per unit (id, criterion), and every unit rated k times is rated by exactly the first k labels in
    sorted order. ``exclude`` leaves raters out (a judge). The parenthesis lists, per criterion whose units
    are not all rated equally often, how many units have fewer ratings than the most.
    """
    if "_rater" not in long.columns:
        return None
    rated = long.filter(pl.col("_score").is_not_null() & ~pl.col("_rater").is_in(list(exclude)))
    if rated.height == 0:
        return None
    labels = sorted(rated.get_column("_rater").unique().to_list())
    rank = pl.DataFrame({"_rater": labels, "_rank": list(range(1, len(labels) + 1))})
    units = (
        rated.join(rank, on="_rater", how="left")
        .group_by(["_crit", "_id"], maintain_order=True)
        .agg(pl.len().alias("k"), pl.col("_rank").n_unique().alias("distinct"), pl.col("_rank").max().alias("top"))
    )
    if units.get_column("k").n_unique() < 2:
        return None
    # rated by exactly the first k labels: k distinct labels, the highest being the k-th
    if units.filter((pl.col("distinct") != pl.col("k")) | (pl.col("top") != pl.col("k"))).height:
        return None
    parts = []
    for (crit,), sub in units.group_by("_crit", maintain_order=True):
        top = int(sub["k"].max())
        fewer = sub.filter(pl.col("k") < top).group_by("k").len().sort("k", descending=True)
        if fewer.height:
            counts = [f"{_count_text(int(n), 'unit')} {'has' if n == 1 else 'have'} {_count_text(int(k), 'rating')}"
                      if i == 0 else f"{int(n)} {'has' if n == 1 else 'have'} {int(k)}"
                      for i, (k, n) in enumerate(fewer.iter_rows())]  # fmt: skip
            parts.append(f"{crit}: {', '.join(counts)}")
    return (
        f"warning: ratings: raters {', '.join(map(str, labels))} fill slots in order ({'; '.join(parts)}): "
        "if they are anonymous, pass --raters exchangeable"
    )


def _scale_text(levels: Sequence[float]) -> str:
    """``(1, 2, 3, 4, 5)`` → ``1-5`` (three or more consecutive whole numbers), else the values: ``0, 0.5, 1``."""
    values = [float(v) for v in levels]
    whole = all(v.is_integer() for v in values)
    if len(values) >= 3 and whole and all(b - a == 1 for a, b in pairwise(values)):
        return f"{values[0]:g}-{values[-1]:g}"
    return ", ".join(f"{v:g}" for v in values)


def mixed_scale_warning(ratings: Ratings) -> str | None:
    """The warning of θ from one rater over criteria on different scales, or ``None``: the ratings have
    exactly one rater label (or no rater column), are not exchangeable, and the criteria's levels differ.

    >>> raw = pl.DataFrame({"exchange_id": ["a", "a", "b", "b"], "rater": ["gold"] * 4, "criterion": ["x", "y"] * 2,
    ...                     "score": [0, 1, 1, 5]})
    >>> print(mixed_scale_warning(Ratings.clean(raw)).split(": θ pools")[0])
    warning: θ: one rater ('gold') and criteria on different scales (x: 0, 1; y: 1, 5)
    """
    long = ratings.long
    if long is None or ratings.exchangeable:
        return None
    names = long.get_column("_rater").unique().to_list() if "_rater" in long.columns else []
    if len(names) > 1:
        return None
    groups: dict[tuple[float, ...], list[str]] = {}
    for crit in long.get_column("_crit").unique(maintain_order=True).to_list():
        scale = tuple(ratings.levels.get(str(crit), ()))
        if scale:
            groups.setdefault(scale, []).append(str(crit))
    if len(groups) < 2:
        return None
    who = f"one rater ({names[0]!r})" if names else "one rater (no rater column)"
    scales = "; ".join(f"{', '.join(crits)}: {_scale_text(scale)}" for scale, crits in groups.items())
    return (
        f"warning: θ: {who} and criteria on different scales ({scales}): θ pools them as one trait; "
        "fit θ on one scale, or pass --no-estimate-theta"
    )


def theta_ratings(ratings: Ratings) -> tuple[Ratings, list[str], list[str]]:
    """The ratings θ is fitted on, notes and warnings for people: with exchangeable raters one rater label
    (:func:`single_rater`) and a note; otherwise the ratings as they are and the slot and mixed-scale warnings."""
    if ratings.long is None:
        return ratings, [], []
    if ratings.exchangeable:
        n = ratings.long.get_column("_rater").n_unique() if "_rater" in ratings.long.columns else 0
        labels = f" (the {n} labels are one)" if n > 1 else ""
        return single_rater(ratings), [f"note: θ: --raters exchangeable: no rater facet (s = 0){labels}"], []
    warned = [w for w in (slot_warning(ratings.long), mixed_scale_warning(ratings)) if w]
    if "_rater" not in ratings.long.columns:  # no rater column: one rater
        return single_rater(ratings, label="rater"), [], warned
    return ratings, [], warned
