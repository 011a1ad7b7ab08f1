"""Rubric totals (``docs/design/studies.md#totals``): slots of type-specific criteria, a per-row total, percent of maximum, rank.

* ``--slot S=c1,c2,…``: S is whichever of c1, c2, … the row has (exactly one non-missing value; none:
  missing; two or more: exit 2 naming the row and the slot).
* ``--total NAME=t1+t2+…``: NAME = Σ terms per row; a missing term makes NAME missing (no partial sums).
* ``pct_of_max = 100·mean/M``; ``rank`` by mean, 1 = highest, ties share the smallest rank (1, 2, 2, 4).

Example:
    >>> df = pl.DataFrame({"a": [2, 1], "h": [1, None], "k": [None, 2]})
    >>> spec = parse_total("total=a+specific"); slots = parse_slots(["specific=h,k"])
    >>> add_total(df, spec, slots).frame["total"].to_list()
    [3.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError

__all__ = ["TotalResult", "TotalSpec", "add_total", "parse_slots", "parse_total", "rank_desc"]


@dataclass(frozen=True)
class TotalSpec:
    """``NAME=t1+t2+…`` parsed."""

    name: str
    terms: tuple[str, ...]


@dataclass(frozen=True)
class TotalResult:
    """The frame with NAME added, and the stderr notes."""

    frame: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def parse_total(text: str) -> TotalSpec:
    """``"total=a+b+c"`` → TotalSpec; a malformed value is exit 2.

    Example:
        >>> parse_total("total = a + b")
        TotalSpec(name='total', terms=('a', 'b'))
    """
    name, sep, rhs = text.partition("=")
    terms = tuple(t.strip() for t in rhs.split("+"))
    if not sep or not name.strip() or not terms or any(not t for t in terms):
        raise ConfigError(f"--total {text!r}: expected NAME=term1+term2+...", hint="e.g. --total total=concision+accuracy+specific")
    return TotalSpec(name.strip(), terms)


def parse_slots(values: Sequence[str] | None) -> dict[str, tuple[str, ...]]:
    """``["S=c1,c2"]`` → ``{"S": ("c1", "c2")}``; malformed or repeated slot names are exit 2."""
    out: dict[str, tuple[str, ...]] = {}
    for text in values or []:
        name, sep, rhs = text.partition("=")
        members = tuple(m.strip() for m in rhs.split(",") if m.strip())
        if not sep or not name.strip() or not members:
            raise ConfigError(f"--slot {text!r}: expected S=c1,c2,...", hint="e.g. --slot specific=hint_not_answer,ack_progress")
        if name.strip() in out:
            raise ConfigError(f"--slot {name.strip()!r} given twice")
        out[name.strip()] = members
    return out


def _resolve(df: pl.DataFrame, name: str, criteria: Mapping[str, str]) -> str:
    """The column behind a term: a numeric column, or a criterion's ``<c>_score``; both or neither is exit 2."""
    in_cols = name in df.columns and name not in criteria.values()
    if in_cols and name in criteria:
        raise ConfigError(f"term {name!r} is both a column and a criterion (--ratings)", hint="rename the column or the criterion")
    if name in criteria:
        return criteria[name]
    if name in df.columns:
        _as_float(df, name)
        return name
    raise InputSchemaError(f"--total/--slot: {name!r} is neither a column nor a criterion", hint=f"columns: {', '.join(df.columns)}")


def _as_float(df: pl.DataFrame, col: str) -> np.ndarray:
    """A column as float (NaN = missing); text is allowed only when empty or numeric (an empty CSV column reads as text)."""
    dtype = df.schema[col]
    if dtype.is_numeric() or dtype in (pl.Null, pl.Boolean):
        return df[col].cast(pl.Float64).fill_null(np.nan).to_numpy()
    if dtype == pl.String:
        text = df[col].str.strip_chars().replace("", None)
        values = text.cast(pl.Float64, strict=False)
        if (values.is_null() & text.is_not_null()).any():
            raise InputSchemaError(f"metrics: total term {col!r} is not numeric")
        return values.fill_null(np.nan).to_numpy()
    raise InputSchemaError(f"metrics: total term {col!r} is not numeric")


def add_total(
    df: pl.DataFrame,
    spec: TotalSpec,
    slots: Mapping[str, Sequence[str]] | None = None,
    *,
    criteria: Mapping[str, str] | None = None,
    max_total: float | None = None,
) -> TotalResult:
    """``df`` with the total column ``spec.name`` (Float64) appended; ``criteria`` maps criterion → ``<c>_score``.

    Args:
        df: the table with the term columns.
        spec: the parsed ``--total NAME=t1+t2+…``.
        slots: slot name → its member criteria or columns (from ``--slot``); a row must have at most one of them.
        criteria: criterion name → its ``<c>_score`` column.
        max_total: the rubric maximum; rows above it are noted.
    """
    slots, criteria = dict(slots or {}), dict(criteria or {})
    if spec.name in df.columns:
        raise ConfigError(f"--total {spec.name!r}: the table already has a column of that name", hint="choose another NAME")
    notes: list[str] = []
    values: dict[str, np.ndarray] = {}
    for slot, members in slots.items():
        if slot in df.columns or slot in criteria:
            raise ConfigError(f"--slot {slot!r} is also a column or criterion name", hint="name the slot differently")
        cols = [_resolve(df, m, criteria) for m in members]
        mat = np.column_stack([_as_float(df, c) for c in cols])
        present = np.isfinite(mat)
        many = np.flatnonzero(present.sum(1) >= 2)
        if many.size:
            i = int(many[0])
            names = ", ".join(m for m, ok in zip(members, present[i], strict=True) if ok)
            raise InputSchemaError(f"row {i + 1}: slot {slot!r} has {int(present[i].sum())} values ({names})", hint="a slot holds exactly one of its criteria per row")
        values[slot] = np.where(present.any(1), np.nansum(np.where(present, mat, 0.0), 1), np.nan)
    terms = []
    for t in spec.terms:
        terms.append(values[t] if t in values else _as_float(df, _resolve(df, t, criteria)))
    total = np.sum(np.column_stack(terms), axis=1) if df.height else np.empty(0)
    n_missing = int(np.isnan(total).sum())
    if n_missing:
        notes.append(f"summarize: {spec.name} missing in {n_missing} row(s) (a missing term or an empty slot)")
    if max_total is not None:
        above = int((total > max_total).sum())
        if above:
            notes.append(f"summarize: {above} row(s) with {spec.name} above --max {max_total:g}")
    return TotalResult(df.with_columns(pl.Series(spec.name, total, dtype=pl.Float64).fill_nan(None)), notes)


def rank_desc(values: Sequence[float]) -> list[int | None]:
    """Rank by value, 1 = highest, ties share the smallest rank; NaN gets no rank.

    Example:
        >>> rank_desc([3.0, 5.0, 3.0, 1.0])
        [2, 1, 2, 4]
    """
    arr = np.asarray(values, dtype=float)
    out: list[int | None] = []
    for v in arr:
        out.append(None if not np.isfinite(v) else int((arr[np.isfinite(arr)] > v).sum()) + 1)
    return out
