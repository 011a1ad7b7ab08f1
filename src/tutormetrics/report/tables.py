"""Paper tables from a summary (``raters.md`` §4): groups as rows, variables as columns, "mean [CI]".

``md`` writes a GitHub pipe table, ``tex`` a booktabs ``tabular``; both round to 3 decimals. Group and
variable names are user text and are escaped (Markdown: backslash before ASCII punctuation, newlines
as spaces; LaTeX: the ten special characters and brackets).

Example:
    >>> t = pl.DataFrame({"group": ["A"], "variable": ["x_1"], "mean": [0.5], "ci_low": [0.25], "ci_high": [0.75]})
    >>> print(markdown_table(t))
    | group | x\\_1 |
    |---|---|
    | A | 0.500 [0.250, 0.750] |
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.io.atomic import write_text_atomic

__all__ = ["TABLE_FORMATS", "cell_text", "escape_latex", "escape_markdown", "latex_table", "markdown_table", "write_text"]

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


def escape_latex(text: object) -> str:
    r"""Escape LaTeX's special characters (and brackets, which ``\\`` would read as an argument).

    Example:
        >>> escape_latex("50% & $x_1$")
        '50\\% \\& \\$x\\_1\\$'
    """
    return "".join(_LATEX.get(c, c) for c in _one_line(text))


def _num(x: float | None) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def cell_text(mean: float | None, lo: float | None, hi: float | None) -> str:
    """``"mean [lo, hi]"`` with 3 decimals; the mean alone when the CI is undefined; empty when the mean is.

    Example:
        >>> cell_text(1.23456, float("nan"), float("nan"))
        '1.235'
    """
    m = _num(mean)
    if not m:
        return ""
    low, high = _num(lo), _num(hi)
    return f"{m} [{low}, {high}]" if low and high else m


def _grid(summary: pl.DataFrame) -> tuple[list[str], list[str], dict[tuple[str, str], str]]:
    groups = summary["group"].unique(maintain_order=True).to_list()
    variables = summary["variable"].unique(maintain_order=True).to_list()
    cells = {
        (r["group"], r["variable"]): cell_text(r["mean"], r["ci_low"], r["ci_high"])
        for r in summary.iter_rows(named=True)
    }
    return groups, variables, cells


def markdown_table(summary: pl.DataFrame, group_label: str = "group") -> str:
    """A GitHub pipe table of a summary: one row per group, one column per variable."""
    groups, variables, cells = _grid(summary)
    lines = [
        "| " + " | ".join([escape_markdown(group_label), *map(escape_markdown, variables)]) + " |",
        "|" + "---|" * (len(variables) + 1),
    ]
    for g in groups:
        lines.append("| " + " | ".join([escape_markdown(g), *(cells.get((g, v), "") for v in variables)]) + " |")
    return "\n".join(lines)


def latex_table(summary: pl.DataFrame, group_label: str = "group") -> str:
    """A booktabs ``tabular`` of a summary: one row per group, one column per variable."""
    groups, variables, cells = _grid(summary)
    lines = [
        r"\begin{tabular}{l" + "r" * len(variables) + "}",
        r"\toprule",
        " & ".join([escape_latex(group_label), *map(escape_latex, variables)]) + r" \\",
        r"\midrule",
    ]
    for g in groups:
        row = [escape_latex(g), *(cells.get((g, v), "").replace("[", "{[}").replace("]", "{]}") for v in variables)]
        lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


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


RENDERERS: dict[str, Callable[[pl.DataFrame, str], str]] = {"md": markdown_table, "tex": latex_table}


def write_text(text: str, path: str | os.PathLike[str]) -> Path:
    """Write ``text`` (UTF-8, trailing newline) atomically: a temporary file in the same folder, then rename."""
    return write_text_atomic(path, text.rstrip("\n") + "\n")
