"""Turn-level labels to one rate per dialogue/condition (``docs/design/studies.md#aggregate``).

Per combination of the key columns (in order of first appearance): ``n_rows``, then per label column
c the mean of its non-missing values (``c``; the rate for 0/1 labels, NaN when none), their count
``c_n`` and the count of missing values ``c_n_na`` (``na`` codes and empty cells), so
``c_n + c_n_na = n_rows``.

Example:
    >>> df = pl.DataFrame({"q": ["q1"] * 4, "lab": [1, 0, 1, -1]})
    >>> aggregate_labels(df, by=["q"], cols=["lab"], na=[-1]).result.row(0)
    ('q1', 4, 0.6666666666666666, 3, 1)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce

import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.flags import flag, split_list
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns, require_distinct
from tutormetrics.na_codes import na_flag

__all__ = ["MISSING_TEXT", "SKIP_COLUMNS", "AggregateOptions", "AggregateResult", "aggregate_labels", "aggregate_rates"]

#: dialogue structure columns never aggregated by default
SKIP_COLUMNS: tuple[str, ...] = ("turn", "tutor_turn", "ctx_turns")


@dataclass(frozen=True)
class AggregateResult:
    """The rates table and the stderr notes."""

    result: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def _keys(values: Sequence[str] | str | None) -> list[str]:
    """``--by a,b`` (repeatable) as a list, ``[]`` when empty."""
    return split_list(values) or []


@dataclass(kw_only=True)
class AggregateOptions:
    """``aggregate``'s options (``docs/commands/aggregate.md``): the key columns (required), the label columns
    and the codes that mean "not applicable".

    >>> o = AggregateOptions(by=["q"], na=[-1.0])
    >>> o.by, o.cols, o.na
    (['q'], None, [-1.0])
    """

    by: list[str] = flag(
        "--by", parse=_keys, cli_type=list[str], help="Key column(s): one output row per combination (repeat or comma-separate)."
    )
    cols: list[str] | None = flag(
        "--cols", default=None, parse=split_list, cli_type=list[str] | None,
        help="Label columns, repeat or comma-separate (default: every numeric column but the keys and turn columns).",
    )
    #: ``--na`` (:func:`tutormetrics.na_codes.na_flag`, declared once for ``aggregate`` and every ratings reader).
    na: tuple[float, ...] = na_flag()


@frame_inputs("turns")
def aggregate_rates(turns: pl.DataFrame, options: AggregateOptions) -> AggregateResult:
    """``aggregate`` from Python: :func:`aggregate_labels` of ``turns`` under ``options``
    (``docs/commands/aggregate.md``).

    >>> df = pl.DataFrame({"q": ["q1"] * 4, "lab": [1, 0, 1, -1]})
    >>> aggregate_rates(df, AggregateOptions(by=["q"], na=[-1.0])).result["lab_n_na"].to_list()
    [1]
    """
    return aggregate_labels(turns, by=options.by, cols=options.cols, na=options.na)


#: Text cells read as a missing label (case and surrounding spaces ignored): empty, and R's and pandas' spellings
#: (``docs/design/studies.md#aggregate``).
MISSING_TEXT: tuple[str, ...] = ("", "na", "n/a", "nan", "null", "none", "<na>", "#n/a")
#: The same spellings as the messages show them.
_MISSING_SHOWN = "empty, NA, N/A, NaN, null, None, <NA>, #N/A"


def _text_value(cols: Sequence[str]) -> pl.Expr:
    """Text labels as Float64 (one expression over ``cols``, each keeping its name): ``true``/``false`` are 1/0,
    :data:`MISSING_TEXT` is missing, other text parsed (null when it is not a number)."""
    low = pl.col(cols).str.strip_chars().str.to_lowercase()
    num = low.replace(["true", "false"], ["1", "0"]).cast(pl.Float64, strict=False)
    return pl.when(~low.is_in(MISSING_TEXT)).then(num)


def _is_bad_text(cols: Sequence[str]) -> pl.Expr:
    """Text cells that are neither a number, a boolean nor a :data:`MISSING_TEXT` spelling (one expression over ``cols``)."""
    low = pl.col(cols).str.strip_chars().str.to_lowercase()
    return pl.col(cols).is_not_null() & ~low.is_in(MISSING_TEXT) & _text_value(cols).is_null()


def _values(schema: pl.Schema, cols: Sequence[str]) -> list[pl.Expr]:
    """Columns ``cols`` as Float64 (booleans 0/1, text through :func:`_text_value`), two expressions at most."""
    text = [c for c in cols if schema[c] == pl.String]
    other = [c for c in cols if schema[c] != pl.String]
    return [*([_text_value(text)] if text else []), *([pl.col(other).cast(pl.Float64)] if other else [])]


def _is_label_type(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype in (pl.Boolean, pl.Null, pl.String)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "...'"


def _first_rows(df: pl.DataFrame, flags: pl.Expr | None) -> dict[str, int]:
    """Per column of the multi-column boolean expression ``flags``, the 0-based index of the first row where it holds
    (one pass; columns where it never holds left out)."""
    if flags is None:
        return {}
    hit = df.select(flags.arg_true().first()).row(0, named=True)
    return {c: int(i) for c, i in hit.items() if i is not None}


def _default_cols(df: pl.DataFrame, by: Sequence[str], notes: list[str]) -> list[str]:
    """Every numeric, boolean or all-number text column but the keys and :data:`SKIP_COLUMNS`; a text column with
    some numbers and some other text is left out with a note naming its first such cell, text without numbers is
    listed in one note."""
    schema = df.schema
    candidates = [c for c in df.columns if c not in by and c not in SKIP_COLUMNS]
    text = [c for c in candidates if schema[c] == pl.String]
    numbers = df.select(_text_value(text).count()).row(0, named=True) if text else {}
    some = [c for c in text if numbers[c]]
    bad = _first_rows(df, _is_bad_text(some) if some else None)
    for c, i in bad.items():
        notes.append(
            f"aggregate: {c!r} left out of the default labels: row {i + 1} holds {_shown(df[c][i])}, not a number "
            f"(labels are numbers or booleans; missing: {_MISSING_SHOWN}, or an --na code); fix such cells or name it with --cols"
        )
    no_numbers = [c for c in candidates if not _is_label_type(schema[c]) or (schema[c] == pl.String and not numbers[c])]
    if no_numbers:
        listed = ", ".join(no_numbers[:8]) + (f", … ({len(no_numbers)} in all)" if len(no_numbers) > 8 else "")
        notes.append(f"aggregate: {len(no_numbers)} column(s) without numbers not aggregated: {listed}")
    return [c for c in candidates if _is_label_type(schema[c]) and c not in bad and c not in no_numbers]


def _check_names(by: Sequence[str], cols: Sequence[str]) -> None:
    """Every output column name once: keys, ``n_rows``, then ``c, c_n, c_n_na`` per label; a clash is exit 2."""
    makers: dict[str, list[str]] = {}
    for k in by:
        makers.setdefault(k, []).append(f"--by {k!r}")
    makers.setdefault("n_rows", []).append("the row count")
    for c in cols:
        for name, what in ((c, f"label {c!r}"), (f"{c}_n", f"the count of {c!r}"), (f"{c}_n_na", f"the missing count of {c!r}")):
            makers.setdefault(name, []).append(what)
    clash = {n: m for n, m in makers.items() if len(m) > 1}
    if clash:
        shown = "; ".join(f"{n!r} ({' and '.join(m)})" for n, m in list(clash.items())[:3])
        more = f"; … ({len(clash)} in all)" if len(clash) > 3 else ""
        raise InputSchemaError(
            f"aggregate: output column name(s) would clash: {shown}{more}",
            hint="rename the input column(s), or choose the labels with --cols",
        )


def _check_values(df: pl.DataFrame, cols: Sequence[str]) -> None:
    """Named label columns: text that is not a number, a boolean or missing, and non-numeric types, are exit 2."""
    schema = df.schema
    for c in cols:
        if not _is_label_type(schema[c]):
            raise InputSchemaError(f"turns: column {c!r} ({schema[c]}) is not numeric", hint="aggregate numeric or 0/1 label columns")
    text = [c for c in cols if schema[c] == pl.String]
    bad = _first_rows(df, _is_bad_text(text) if text else None)
    if bad:
        c, i = next(iter(bad.items()))
        raise InputSchemaError(
            f"turns: row {i + 1}: column {c!r} has the non-numeric value {_shown(df[c][i])}",
            hint=f"labels must be numbers or booleans; missing: {_MISSING_SHOWN} or an --na code",
        )


def _check_finite(values: pl.DataFrame, cols: Sequence[str]) -> None:
    """An infinite label is exit 2 naming its row and column (NaN is a missing value)."""
    inf = _first_rows(values, pl.col(cols).is_infinite())
    if inf:
        c, i = next(iter(inf.items()))
        raise InputSchemaError(
            f"turns: row {i + 1}: column {c!r} has the value {values[c][i]:g}; labels must be finite",
            hint="a rate of an infinite label is no rate: make the cell empty (missing) or fix the label",
        )


def aggregate_labels(
    df: pl.DataFrame, *, by: Sequence[str], cols: Sequence[str] | None = None, na: Sequence[float] = ()
) -> AggregateResult:
    """Aggregate label columns per ``by`` combination; ``na`` values, NaN and missing cells (empty text and the
    :data:`MISSING_TEXT` spellings) are missing; an infinite label is exit 2. One pass over the table: the time is
    linear in rows × label columns.

    Args:
        df: the turns table.
        by: key columns of one group (repeats dropped); at least one is required.
        cols: label columns to average; ``None`` takes every numeric, boolean or number-text column that is not a
            key or a known non-label column (the others are named in the notes).
        na: missing-value codes (e.g. ``-1``), treated like empty cells and NaN; other negative values are noted.
    """
    by = list(dict.fromkeys(by))
    if not by:
        raise InputSchemaError("aggregate: name the key columns with --by")
    require_columns(df, by, source="turns", option="--by")
    notes: list[str] = []
    if cols is None:
        cols = _default_cols(df, by, notes)
        if not cols:
            raise InputSchemaError("turns: no numeric label column to aggregate", hint="name them with --cols")
    cols = list(dict.fromkeys(cols))
    require_columns(df, cols, source="turns", option="--cols")
    require_distinct({"--by": by, "--cols": cols}, command="aggregate", hint="a key column is not aggregated")
    _check_names(by, cols)
    _check_values(df, cols)
    schema = df.schema
    values = df.select([*(pl.col(k) for k in by), *_values(schema, cols)]).select([*by, *cols])
    _check_finite(values, cols)
    missing_key = values.select(pl.any_horizontal(pl.col(k).is_null() | (pl.col(k).cast(pl.String).str.strip_chars() == "") for k in by)).to_series()
    if missing_key.any():
        notes.append(f"aggregate: {int(missing_key.sum())} row(s) with a missing --by value dropped")
        values = values.filter(~missing_key)
    codes = sorted({float(v) for v in na})
    is_code = reduce(operator.or_, [pl.col(cols) == v for v in codes]) if codes else None
    negative = pl.col(cols) < 0
    has_other = values.select((negative if is_code is None else negative & ~is_code).any()).row(0, named=True)
    for c in (c for c in cols if has_other[c]):
        for v, n in sorted(r for r in values[c].filter(values[c] < 0).value_counts().iter_rows() if r[0] not in codes):
            shown = int(v) if float(v).is_integer() else v
            notes.append(f"aggregate: {c} has {n} value(s) {shown} that are not --na codes")
    missing = pl.col(cols).is_nan() if is_code is None else is_code | pl.col(cols).is_nan()
    clean = values.with_columns(pl.when(~missing).then(pl.col(cols)))
    counts = [f"{c}_n" for c in cols]
    grouped = clean.group_by(by, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("n_rows"),
        pl.col(cols).mean().fill_null(float("nan")),
        pl.col(cols).count().cast(pl.Int64).name.suffix("_n"),
        pl.col(cols).null_count().cast(pl.Int64).name.suffix("_n_na"),
    )
    result = grouped.select([*by, "n_rows", *(n for c in cols for n in (c, f"{c}_n", f"{c}_n_na"))])
    empty = sum(result.select((pl.col(counts) == 0).sum()).row(0))
    if empty:
        notes.append(f"aggregate: {empty} group x column cell(s) with no non-missing value (NaN)")
    return AggregateResult(result, notes)
