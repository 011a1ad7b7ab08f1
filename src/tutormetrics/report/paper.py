"""The paper table of a summary (``.md``/``.tex``): which variables, in which order, which way round.

Default variables [decision, issue 24]: the summary's variables in their order **without diagnostics**
(``prompt_windows``, ``resp_windows``, ``*_truncated``, ``*_empty``, the dialogue structure columns
``turn, tutor_turn, ctx_turns``) and without a ``<c>_endorsed`` that repeats ``<c>_score`` (the same n,
mean and CI in every group, as on a 0/1 criterion). ``variables`` chooses and orders them instead;
``diagnostics=True`` keeps the diagnostics. ``transpose=True`` puts variables in rows and groups in
columns. With a total, ``% of max`` and ``rank`` follow the total (columns, or rows when transposed).

Example:
    >>> t = pl.DataFrame({"group": ["A", "B"], "variable": ["x", "x"], "mean": [0.5, 0.25],
    ...                   "ci_low": [float("nan")] * 2, "ci_high": [float("nan")] * 2})
    >>> print(paper_table(t, "md", transpose=True, caption="Means."))
    | variable | A | B |
    |---|---|---|
    | x | 0.500 | 0.250 |
    <BLANKLINE>
    Table: Means.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.columns import NOT_METRICS
from tutormetrics.report.tables import cell_text, number_text, render_rows

__all__ = ["paper_table", "paper_variables", "summary_caption"]

_DIAG_SUFFIXES = ("_truncated", "_empty")


def _is_diagnostic(name: str) -> bool:
    return name in NOT_METRICS or name.endswith(_DIAG_SUFFIXES)


def _duplicate_endorsed(summary: pl.DataFrame, name: str) -> bool:
    """``<c>_endorsed`` whose n, mean and CI equal ``<c>_score``'s in every group."""
    if not name.endswith("_endorsed"):
        return False
    score = name[: -len("_endorsed")] + "_score"
    cols = ["group", "n", "mean", "ci_low", "ci_high"]
    a = summary.filter(pl.col("variable") == name).select(cols).sort("group")
    b = summary.filter(pl.col("variable") == score).select(cols).sort("group")
    return a.height > 0 and a.height == b.height and a.fill_nan(None).equals(b.fill_nan(None))


def paper_variables(summary: pl.DataFrame, variables: Sequence[str] | None = None, *, diagnostics: bool = False) -> list[str]:
    """The variables of the paper table (see the module docstring); an unknown requested name is exit 2.

    Args:
        summary: The ``summarize`` table.
        variables: The variables asked for (``--vars``), in order; ``None``: the default set.
        diagnostics: Keep the diagnostic variables.
    """
    present = summary["variable"].unique(maintain_order=True).to_list()
    if variables:
        unknown = [v for v in variables if v not in present]
        if unknown:
            raise ConfigError(f"--vars: unknown variable(s) {unknown}", hint=f"available: {', '.join(present)}")
        return list(dict.fromkeys(variables))
    return [v for v in present if (diagnostics or not _is_diagnostic(v)) and not _duplicate_endorsed(summary, v)]


def paper_table(
    summary: pl.DataFrame,
    fmt: str,
    group_label: str = "group",
    *,
    variables: Sequence[str] | None = None,
    diagnostics: bool = False,
    transpose: bool = False,
    total: str | None = None,
    caption: str | None = None,
    label: str = "tab:summary",
) -> str:
    """Render ``summary`` as a GitHub pipe table with a ``Table:`` caption (``md``) or a ``table`` float with a
    booktabs ``tabular`` (``tex``), "mean [CI]" cells (``docs/guide/paper.md#tables``); ``caption`` defaults to
    :func:`summary_caption`.

    Args:
        summary: The ``summarize`` table.
        fmt: ``md`` or ``tex``.
        group_label: What a group is, for the caption and header.
        variables: The variables asked for, in order; ``None``: the default set.
        diagnostics: Keep the diagnostic variables.
        transpose: Variables in rows, groups in columns.
        total: The total variable, followed by ``% of max`` and ``rank``; ``None``: none.
        caption: The caption; ``None``: :func:`summary_caption`.
        label: The tex ``\\label``.
    """
    if fmt not in ("md", "tex"):
        raise ConfigError(f"paper table format {fmt!r}", hint="use md or tex")
    names = paper_variables(summary, variables, diagnostics=diagnostics)
    groups = summary["group"].unique(maintain_order=True).to_list()
    cells = {(r["group"], r["variable"]): cell_text(r["mean"], r["ci_low"], r["ci_high"]) for r in summary.iter_rows(named=True)}
    extra: list[tuple[str, dict[str, str]]] = []
    if total is not None and total in names and "rank" in summary.columns:
        rows = {r["group"]: r for r in summary.filter(pl.col("variable") == total).iter_rows(named=True)}
        extra = [
            ("% of max", {g: number_text(rows.get(g, {}).get("pct_of_max"), "1") for g in groups}),
            ("rank", {g: number_text(rows.get(g, {}).get("rank"), "int") for g in groups}),
        ]
    columns = [*names, *(label for label, _ in extra)]

    def value(g: str, col: str) -> str:
        for label, vals in extra:
            if col == label:
                return vals[g]
        return cells.get((g, col), "")

    if transpose:
        header = ["variable", *groups]
        body = [[col, *(value(g, col) for g in groups)] for col in columns]
    else:
        header = [group_label, *columns]
        body = [[g, *(value(g, col) for col in columns)] for g in groups]
    text = summary_caption(summary, group_label, total=total if extra else None) if caption is None else caption
    return render_rows(header, body, [False] + [True] * (len(header) - 1), fmt, caption=text, label=label)


def summary_caption(summary: pl.DataFrame, group_label: str = "group", *, total: str | None = None) -> str:
    """The default caption of a ``summarize`` paper table: what the cells are, the groups and n.

    Args:
        summary: The ``summarize`` table.
        group_label: What a group is.
        total: The total variable; ``None``: none.

    Example:
        >>> t = pl.DataFrame({"group": ["A", "B"], "variable": ["x", "x"], "n": [3, 5]})
        >>> summary_caption(t, "tutor")
        'Mean [95% bootstrap CI] per tutor (2 groups, n = 3–5 per group and variable).'
    """
    groups = summary["group"].n_unique() if "group" in summary.columns else 0
    n = summary["n"].drop_nulls() if "n" in summary.columns else pl.Series([], dtype=pl.Int64)
    n_text = "" if n.len() == 0 else (f", n = {int(n.min()):,}" if n.min() == n.max() else f", n = {int(n.min()):,}–{int(n.max()):,}")
    text = f"Mean [95% bootstrap CI] per {group_label} ({groups} group{'' if groups == 1 else 's'}{n_text} per group and variable)"
    if total is not None:
        text += f"; {total} with its % of the maximum and the groups' rank by mean (1 = highest)"
    return text + "."
