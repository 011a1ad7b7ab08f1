"""The pieces of every paper table (``docs/guide/paper.md#tables``): escaping, number rules, one renderer.

``md`` is a GitHub pipe table, a blank line and pandoc's ``Table: <caption>``; ``tex`` a ``table`` float with
``\\caption``, ``\\label`` and a booktabs ``tabular``. User text is escaped (Markdown: a backslash before
ASCII punctuation, newlines as spaces; LaTeX: its special characters and brackets); numbers follow
:func:`number_text` (never a negative zero).

Example:
    >>> print(render_rows(["group", "x_1"], [["A", "0.500 [0.250, 0.750]"]], [False, True], "md", caption="Means."))
    | group | x\\_1 |
    |---|---|
    | A | 0.500 [0.250, 0.750] |
    <BLANKLINE>
    Table: Means.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

from tutormetrics.errors import ConfigError
from tutormetrics.io.atomic import write_text_atomic

__all__ = [
    "TABLE_FORMATS", "cell_text", "escape_latex", "escape_markdown", "escape_markdown_caption", "number_text", "positive_zero",
    "render_rows", "write_text",
]  # fmt: skip

TABLE_FORMATS = ("csv", "md", "tex")

_MD_PUNCT = set("\\`*_{}[]()<>#+-.!|~\"'$%&,/:;=?@^")
_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "[": "{[}",
    "]": "{]}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def escape_markdown(text: object) -> str:
    """Backslash-escape ASCII punctuation (CommonMark) and fold whitespace, so user text stays literal in a pipe table.

    Example:
        >>> escape_markdown("*bold* | <b>")
        '\\\\*bold\\\\* \\\\| \\\\<b\\\\>'
    """
    return "".join("\\" + c if c in _MD_PUNCT else c for c in _one_line(text))


_MD_PROSE = set(".,:;'\"-()!?/=+&@")


def escape_markdown_caption(text: object) -> str:
    """A caption's text for pandoc's ``Table:`` line: markup characters escaped as in :func:`escape_markdown`,
    prose punctuation (``. , : ; ' " - ( ) ! ? / = + & @``) kept, which is inert inside a caption paragraph.

    Example:
        >>> print(escape_markdown_caption("rate: the top score of the rater's ratings; p_adj < .05 (10%)"))
        rate: the top score of the rater's ratings; p\\_adj \\< .05 (10\\%)
    """
    return "".join("\\" + c if c in _MD_PUNCT and c not in _MD_PROSE else c for c in _one_line(text))


def escape_latex(text: object) -> str:
    r"""Escape LaTeX's special characters (and brackets, which ``\\`` would read as an argument).

    Example:
        >>> escape_latex("50% & $x_1$")
        '50\\% \\& \\$x\\_1\\$'
    """
    return "".join(_LATEX.get(c, c) for c in _one_line(text))


def positive_zero(text: str) -> str:
    """``text`` without the sign of a negative zero: ``-0.000`` → ``0.000``, ``-0`` → ``0`` (``docs/guide/paper.md#tables``).

    Example:
        >>> positive_zero("-0.000"), positive_zero("-0.001"), positive_zero("-0")
        ('0.000', '-0.001', '0')
    """
    return text[1:] if text.startswith("-") and text[1:].replace(".", "").strip("0") == "" and text[1:] else text


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def number_text(x: object, rule: str = "3") -> str:
    """One number as a paper table writes it (``docs/guide/paper.md#tables``); missing/NaN → ``""``.

    Rules: ``"3"`` three decimals (estimates, CIs, ρ, ΔP, χ², means), ``"p"`` three decimals or ``<0.001``,
    ``"1"`` one decimal (``pct_*``, ``% of max``, ``share_*``), ``"int"`` a whole number (counts, df, k,
    rank), ``"g"`` ``%g`` (scale levels), ``"bool"`` ``yes`` or empty. Never a negative zero.

    Example:
        >>> [number_text(v, r) for v, r in ((-0.0001, "3"), (0.0004, "p"), (0.0123, "p"), (91.17647, "1"), (16.0, "int"), (0.5, "g"), (True, "bool"))]
        ['0.000', '<0.001', '0.012', '91.2', '16', '0.5', 'yes']
    """
    if _missing(x):
        return ""
    if rule == "bool":
        return "yes" if bool(x) else ""
    v = float(x)  # type: ignore[arg-type]
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if rule == "p":
        return "<0.001" if v < 0.0005 else positive_zero(f"{v:.3f}")
    if rule == "1":
        return positive_zero(f"{v:.1f}")
    if rule == "int":
        return positive_zero(f"{v:.0f}")
    if rule == "g":
        return positive_zero(f"{v:g}")
    return positive_zero(f"{v:.3f}")


def _num(x: float | None) -> str:
    return number_text(x, "3")


def cell_text(mean: float | None, lo: float | None, hi: float | None) -> str:
    """``"mean [lo, hi]"`` with 3 decimals; the mean alone when the CI is undefined; empty when the mean is.

    Args:
        mean: The mean.
        lo: Lower CI bound.
        hi: Upper CI bound.

    Example:
        >>> cell_text(1.23456, float("nan"), float("nan"))
        '1.235'
    """
    m = _num(mean)
    if not m:
        return ""
    low, high = _num(lo), _num(hi)
    return f"{m} [{low}, {high}]" if low and high else m


_SYMBOLS_TEX = {"ΔP": r"$\Delta P$", "χ²": r"$\chi^2$", "κ": r"$\kappa$", "α": r"$\alpha$", "ρ": r"$\rho$", "≥": r"$\geq$",
                "–": "--"}  # fmt: skip


def _tex_number(text: str) -> str:
    """Our own number text in LaTeX: brackets as ``{[}``/``{]}``, ``<`` and χ² in math, stars as a superscript."""
    stars = re.search(r"\*+$", text)
    body = text[: stars.start()] if stars else text
    body = body.replace("[", "{[}").replace("]", "{]}").replace("<", "$<$").replace("χ²", r"$\chi^2$")
    return body + (f"$^{{{stars.group(0)}}}$" if stars else "")


def _tex_header(text: str) -> str:
    out = escape_latex(text)
    for symbol, macro in _SYMBOLS_TEX.items():
        out = out.replace(symbol, macro)
    return out


def render_rows(header: Sequence[str], body: Sequence[Sequence[str]], numeric: Sequence[bool], fmt: str, *,
                caption: str, label: str = "tab:table") -> str:  # fmt: skip
    """A md pipe table + ``Table:`` caption, or a tex ``table`` float with a booktabs ``tabular``.

    ``header`` is plain text with md symbols; ``numeric[i]`` marks a column of our own number text (not
    escaped; tex brackets, ``<`` and stars converted), the others hold user text (escaped).

    Args:
        header: Column headers (plain text, md symbols).
        body: Rows of cell text.
        numeric: Per column: our own number text (not escaped).
        fmt: ``md`` or ``tex``.
        caption: The caption.
        label: The tex ``\\label``.
    """
    if fmt == "md":
        lines = ["| " + " | ".join(escape_markdown(h) for h in header) + " |", "|" + "---|" * len(header)]
        for row in body:
            cells = [c.replace("*", "\\*") if num else escape_markdown(c) for c, num in zip(row, numeric, strict=True)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join([*lines, "", f"Table: {escape_markdown_caption(caption)}"])
    if fmt != "tex":
        raise ConfigError(f"paper table format {fmt!r}", hint="use md or tex")
    spec = "".join("r" if num else "l" for num in numeric)
    lines = [r"\begin{table}[htbp]", r"\centering", rf"\caption{{{escape_latex(caption)}}}", rf"\label{{{label}}}",
             rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(_tex_header(h) for h in header) + r" \\", r"\midrule"]  # fmt: skip
    for row in body:
        lines.append(" & ".join(_tex_number(c) if num else escape_latex(c) for c, num in zip(row, numeric, strict=True)) + r" \\")
    return "\n".join([*lines, r"\bottomrule", r"\end{tabular}", r"\end{table}"])


def table_format(path: str | os.PathLike[str], fmt: str | None) -> str:
    """``csv``, ``md`` or ``tex`` from ``fmt`` or the extension of ``path`` (``csv`` also stands for the
    ``.parquet``/``.jsonl`` tables; ``.markdown`` counts as md).

    Example:
        >>> table_format("t.tex", None), table_format("t.tex", "md")
        ('tex', 'md')
    """
    if fmt is not None:
        if fmt not in TABLE_FORMATS:
            raise ConfigError(f"unknown --output-format {fmt!r}", hint="use csv, md or tex")
        return fmt
    suffix = Path(path).suffix.lower()
    known = {".md": "md", ".markdown": "md", ".tex": "tex", ".csv": "csv", ".parquet": "csv", ".jsonl": "csv"}
    if suffix not in known:
        raise ConfigError(
            f"{path}: cannot tell the output format from the extension {suffix or '(none)'!r}",
            hint="name the file .csv, .md or .tex (or .parquet/.jsonl), or pass --output-format csv|md|tex",
        )
    return known[suffix]


def write_text(text: str, path: str | os.PathLike[str]) -> Path:
    """Write ``text`` (UTF-8, trailing newline) atomically: a temporary file in the same folder, then rename."""
    return write_text_atomic(path, text.rstrip("\n") + "\n")
