"""Row filters: ``--where EXPR`` (``docs/guide/paper.md#where``), a small hand-written parser and evaluator.

Nothing the user writes reaches ``eval``, ``pandas.query`` or SQL: the text is scanned character by character
into conditions, and each condition becomes a polars comparison. The grammar::

    EXPR  := COND ("and" COND)*        COND  := COL ("==" | "!=") VALUE  |  COL "in" VALUE ("," VALUE)*
    COL   := [A-Za-z_][A-Za-z0-9_.:-]* | `any text`        VALUE := BARE | "text" | 'text'
    BARE  := characters other than whitespace , = ! ' " ` ( )

Keywords are lower case, spaces around operators are optional, and repeated ``--where`` options are joined
by ``and``. A comparison is numeric when the column is numeric and the value parses as a number (2 = 2.0),
else it compares the cell's text; ``""`` matches a missing cell; ``!=`` keeps exactly the rows ``==`` drops.
Anything else (``or``, parentheses, ``>``, ``=~``, an unknown column, a missing value, no row left) is one
message naming the position, exit 2.

Example:
    >>> df = pl.DataFrame({"prompt": [1, 2, 2], "model": ["a", "b", "c"]})
    >>> apply_where(df, ["prompt==2", "model in b, 'x'"])["model"].to_list()
    ['b']
    >>> describe(parse_where("prompt==2 and `model` != c"))
    'prompt == 2 and model != c'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.progress import Log, quiet

__all__ = ["Condition", "apply_where", "describe", "parse_where", "where_mask"]

_COL = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_OPERATOR_CHARS = "<>=!~"
_NOT_BARE = set(" \t\r\n\f\v,=!'\"`()")
_HINT = "write COL == VALUE, COL != VALUE or COL in V1,V2, joined by 'and', e.g. --where \"prompt == 2\""


@dataclass(frozen=True)
class Condition:
    """One ``COL op VALUE[, VALUE…]`` of a ``--where`` expression; ``position`` is where it starts (1-based)."""

    column: str
    op: str
    values: tuple[str, ...]
    position: int = 1


class _Scanner:
    """Reads one expression left to right; every error names the 1-based position of what it did not accept."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def fail(self, what: str, at: int | None = None) -> ConfigError:
        where = self.i if at is None else at
        return ConfigError(f"--where: {what} (at position {where + 1} of {self.text!r})", hint=_HINT)

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def at_end(self) -> bool:
        self.skip()
        return self.i >= len(self.text)

    def word(self) -> str:
        m = re.compile(r"[A-Za-z]+").match(self.text, self.i)
        return m.group(0) if m else ""

    def column(self) -> str:
        self.skip()
        if self.i >= len(self.text):
            raise self.fail("a column name is missing")
        if self.text[self.i] == "`":
            end = self.text.find("`", self.i + 1)
            if end < 0:
                raise self.fail("the backtick is not closed")
            name, self.i = self.text[self.i + 1 : end], end + 1
            return name
        if self.text[self.i] in "()":
            raise self.fail("parentheses are not supported; repeat --where for 'and'")
        m = _COL.match(self.text, self.i)
        if not m:
            raise self.fail(f"expected a column name, found {self.text[self.i]!r}; quote other names in backticks")
        self.i = m.end()
        return m.group(0)

    def operator(self) -> str:
        self.skip()
        start, rest = self.i, self.text[self.i :]
        if rest.startswith(("==", "!=")) and rest[2:3] not in tuple(_OPERATOR_CHARS):
            self.i += 2
            return rest[:2]
        if self.word() == "in":
            self.i += 2
            return "in"
        m = re.compile(f"[{re.escape(_OPERATOR_CHARS)}]+").match(self.text, self.i)
        if m:
            raise self.fail(f"the operator {m.group(0)!r} is not supported; use ==, != or in", start)
        if rest[:1] in ("(", ")"):
            raise self.fail("parentheses are not supported; repeat --where for 'and'")
        found = rest[:1] or "the end"
        raise self.fail(f"expected ==, != or in, found {found!r}" if rest else "expected ==, != or in, found the end")

    def value(self) -> str:
        self.skip()
        if self.i >= len(self.text) or self.text[self.i] == ",":
            raise self.fail("a value is missing")
        quote = self.text[self.i]
        if quote in "'\"":
            end = self.text.find(quote, self.i + 1)
            if end < 0:
                raise self.fail(f"the quote {quote} is not closed")
            text, self.i = self.text[self.i + 1 : end], end + 1
            return text
        if quote in "()":
            raise self.fail("parentheses are not supported; repeat --where for 'and'")
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in _NOT_BARE:
            self.i += 1
        if self.i == start:
            raise self.fail(f"a value is missing before {self.text[self.i]!r}")
        return self.text[start : self.i]

    def condition(self) -> Condition:
        self.skip()
        start = self.i
        column = self.column()
        op = self.operator()
        values = [self.value()]
        while op == "in" and not self.at_end() and self.text[self.i] == ",":
            self.i += 1
            values.append(self.value())
        return Condition(column, op, tuple(values), start + 1)

    def expression(self) -> list[Condition]:
        if self.at_end():
            raise self.fail("the expression is empty")
        out = [self.condition()]
        while not self.at_end():
            word = self.word()
            if word == "and":
                self.i += 3
                out.append(self.condition())
            elif word == "or":
                raise self.fail("'or' is not supported; repeat --where for 'and'")
            elif word.lower() in ("and", "or"):
                raise self.fail(f"keywords are lower case: write {word.lower()!r}")
            elif self.text[self.i] in "()":
                raise self.fail("parentheses are not supported; repeat --where for 'and'")
            elif self.text[self.i] in _OPERATOR_CHARS:
                m = re.compile(f"[{re.escape(_OPERATOR_CHARS)}]+").match(self.text, self.i)
                raise self.fail(f"the operator {m.group(0)!r} is not supported; use ==, != or in")  # type: ignore[union-attr]
            else:
                raise self.fail(f"expected 'and' or the end, found {self.text[self.i]!r}; quote values with spaces")
        return out


def parse_where(expressions: str | Sequence[str]) -> list[Condition]:
    """The conditions of one ``--where`` text or of several (joined by ``and``), in order.

    Example:
        >>> parse_where(["prompt == 2", "model in 'a b', c"])
        [Condition(column='prompt', op='==', values=('2',), position=1), Condition(column='model', op='in', values=('a b', 'c'), position=1)]
    """
    texts = [expressions] if isinstance(expressions, str) else list(expressions)
    return [c for text in texts for c in _Scanner(text).expression()]


def _number(text: str) -> float | None:
    if not _NUMBER.fullmatch(text.strip()):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _missing(col: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype.is_float():
        return col.is_null() | col.is_nan()
    if dtype == pl.String:
        return col.is_null() | (col == "")
    return col.is_null()


def _equals(frame: pl.DataFrame, column: str, value: str) -> pl.Expr:
    """Cells of ``column`` equal to ``value``: numerically on a numeric column, else as text; ``""`` = missing."""
    dtype = frame.schema[column]
    col = pl.col(column)
    if value == "":
        return _missing(col, dtype)
    number = _number(value) if dtype.is_numeric() else None
    if number is not None:
        return (col.cast(pl.Float64) == number).fill_null(False)
    return (col.cast(pl.String) == value).fill_null(False)


def where_mask(frame: pl.DataFrame, conditions: Sequence[Condition], *, source: str = "input") -> pl.Series:
    """A boolean Series: the rows every condition keeps; an unknown column is exit 2.

    Args:
        frame: the table.
        conditions: the parsed ``--where`` conditions.
        source: the table's name, for the messages.

    Example:
        >>> where_mask(pl.DataFrame({"x": [1.0, None, 2.0]}), parse_where('x != ""')).to_list()
        [True, False, True]
    """
    for cond in conditions:
        if cond.column not in frame.columns:
            shown = ", ".join(frame.columns[:15]) + (", ..." if frame.width > 15 else "")
            raise ConfigError(f"--where: {source} has no column {cond.column!r} (at position {cond.position})", hint=f"columns: {shown}")
    expr = pl.lit(True)
    for cond in conditions:
        hit = pl.any_horizontal([_equals(frame, cond.column, v) for v in cond.values])
        expr = expr & (~hit if cond.op == "!=" else hit)
    return frame.select(expr.alias("where")).to_series()


def _quoted(value: str) -> str:
    if value and not any(c in _NOT_BARE for c in value):
        return value
    return f"'{value}'" if "'" not in value else f'"{value}"'


def describe(conditions: Sequence[Condition]) -> str:
    """The conditions as one canonical text (``prompt == 2 and model in a, b``), as the stderr line shows them."""
    parts = []
    for c in conditions:
        col = c.column if _COL.fullmatch(c.column) else f"`{c.column}`"
        parts.append(f"{col} {c.op} {', '.join(_quoted(v) for v in c.values)}")
    return " and ".join(parts)


def apply_where(
    frame: pl.DataFrame, expressions: str | Sequence[str] | None, *, source: str = "input", log: Log = quiet
) -> pl.DataFrame:
    """``frame`` filtered by ``--where`` (none: unchanged), with the stderr line
    ``where: kept 561 of 1,122 rows (prompt == 2)``; exit 2 when no row is left.

    Args:
        frame: the table.
        expressions: the ``--where`` expression(s); ``None`` or empty leaves ``frame`` unchanged.
        source: the table's name, for the messages.
        log: receives the ``where: kept ...`` line.

    Example:
        >>> lines = []
        >>> apply_where(pl.DataFrame({"p": [1, 2]}), "p == 2", log=lines.append).height, lines
        (1, ['where: kept 1 of 2 rows (p == 2)'])
    """
    if not expressions:
        return frame
    conditions = parse_where(expressions)
    kept = frame.filter(where_mask(frame, conditions, source=source))
    text = describe(conditions)
    if kept.height == 0:
        raise ConfigError(f"--where: no row of {source} is left ({text})", hint="check the column's values; comparisons are exact")
    log(f"where: kept {kept.height:,} of {frame.height:,} rows ({text})")
    return kept
