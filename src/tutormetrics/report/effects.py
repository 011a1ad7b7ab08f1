"""The figure of a ``compare`` table (``compare --figure``, ``docs/guide/paper.md#figures``): small multiples.

One panel per dimension value (one panel without ``--dimension``), stacked vertically and sharing the x axis:
x = the strata combinations (``model · domain``), y = the metrics, or metric × pair (``metric  low–high``)
when the panel compares k ≥ 3 groups. A cell is the signed rank-biserial r of the Wilcoxon row on the
diverging ``RdBu_r`` map over −1..1 (> 0: the pair's first group higher); its value (two decimals, no
leading zero) is printed when the cell is at least 0.28 in wide, in bold when |r| ≥ ``threshold``, and the
cell is outlined when the row is a ``violation``. Undefined cells are grey. Size: width min(7, max(3.5,
2.0 + 0.35·C)) in for C columns, height 1.6 + 0.3·P + 0.16·R in for P panels and R rows; above 9 in the
panels go, whole, to ``FILE-1.png``, ``FILE-2.png``, … Drawn with matplotlib's object API on the Agg canvas.

Example:
    >>> t = pl.DataFrame({"metric": ["ttr"], "test": ["wilcoxon"], "group_a": ["A"], "group_b": ["B"],
    ...                   "r_rb": [0.4], "ci_low": [0.1], "ci_high": [0.7]})
    >>> effect_matrix(t)[1], effect_matrix(t)[2].tolist()
    (['A vs B'], [[0.4]])
    >>> [p.title for p in compare_panels(t)], compare_figure_size(15, [5, 5, 5, 15])
    (['all'], (7.0, 7.6))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from tutormetrics.errors import InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.plotting import (
    DEFAULT_DPI,
    MAX_WIDTH_IN,
    check_figure_path,
    literal_text,
    save_paper_figure,
    wrap_to_width,
)
from tutormetrics.validity.heatmap import format_rho

__all__ = ["FIGURE_FORMATS", "ComparePanel", "compare_figure_size", "compare_figures", "compare_panels", "effect_matrix",
           "plot_effect_matrix", "save_compare_figure"]  # fmt: skip

FIGURE_FORMATS = (".png", ".svg", ".pdf")
BOLD_AT = 0.10
#: Tallest figure before the panels are split over FILE-1, FILE-2, … (a page's text height).
MAX_HEIGHT_IN = 9.0
#: Narrowest cell that prints its value.
VALUE_CELL_IN = 0.28
_STRATA_JOIN = " · "


def _strata(table: pl.DataFrame) -> list[str]:
    """The ``compare --strata`` columns: those before ``metric`` other than dimension/dimension_value."""
    cols = table.columns[: table.columns.index("metric")] if "metric" in table.columns else []
    return [c for c in cols if c not in ("dimension", "dimension_value")]


def _contrast_label(row: dict[str, object], strata: list[str] | None = None) -> str:
    label = f"{row['group_a']} vs {row['group_b']}"
    if row.get("dimension") is not None:
        label = f"{row['dimension']}={row['dimension_value']}: {label}"
    if strata:
        label = ", ".join(str(row[c]) for c in strata) + " | " + label
    return label


def effect_matrix(table: pl.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Metrics, contrast labels, the r_rb matrix and the "CI excludes 0" matrix from the Wilcoxon rows.

    Rows and columns keep the order of first appearance.
    """
    require_columns(table, ["metric", "group_a", "group_b", "r_rb", "ci_low", "ci_high"], source="comparison table")
    rows = _wilcoxon(table)
    metrics = rows["metric"].unique(maintain_order=True).to_list()
    named = list(rows.iter_rows(named=True))
    strata = _strata(table)
    contrasts = list(dict.fromkeys(_contrast_label(r, strata) for r in named))
    r = np.full((len(metrics), len(contrasts)), np.nan)
    excl = np.zeros(r.shape, dtype=bool)
    for row in named:
        i, j = metrics.index(row["metric"]), contrasts.index(_contrast_label(row, strata))
        value = row["r_rb"]
        r[i, j] = np.nan if value is None else value
        lo, hi = row["ci_low"], row["ci_high"]
        excl[i, j] = lo is not None and hi is not None and (lo > 0 or hi < 0)
    return metrics, contrasts, r, excl


def _wilcoxon(table: pl.DataFrame) -> pl.DataFrame:
    rows = table.filter(pl.col("test") == "wilcoxon") if "test" in table.columns else table
    if rows.height == 0:
        raise InputSchemaError("comparison table has no pairwise (wilcoxon) rows to draw")
    return rows


@dataclass(frozen=True)
class ComparePanel:
    """One panel: its title, row labels (metrics or metric × pair), and r_rb and violation matrices (rows × columns)."""

    title: str
    rows: list[str]
    r: np.ndarray
    violation: np.ndarray


def _columns_of(rows: pl.DataFrame, strata: list[str]) -> pl.Series:
    if not strata:
        return pl.Series(["all"] * rows.height)
    return rows.select(pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in strata], separator=_STRATA_JOIN)).to_series()


def compare_panels(table: pl.DataFrame) -> list[ComparePanel]:
    """The panels of :func:`compare_figures`, in the table's order (see the module docstring)."""
    require_columns(table, ["metric", "group_a", "group_b", "r_rb"], source="comparison table")
    rows = _wilcoxon(table)
    strata = _strata(table)
    rows = rows.with_columns(_columns_of(rows, strata).alias("_col"))
    columns = rows["_col"].unique(maintain_order=True).to_list()
    has_dim = "dimension_value" in rows.columns
    n_dims = rows["dimension"].n_unique() if "dimension" in rows.columns else 0
    dim = pl.col("dimension").cast(pl.String) if n_dims > 1 else pl.lit("")
    value = pl.col("dimension_value").cast(pl.String) if has_dim else pl.lit("all")
    rows = rows.with_columns(pl.concat_str([dim.fill_null(""), value.fill_null("")], separator="\u0000").alias("_panel"))
    panels = []
    for key in rows["_panel"].unique(maintain_order=True).to_list():
        sub = rows.filter(pl.col("_panel") == key)
        dim, value = key.split("\u0000")
        pairs = sub.select("group_a", "group_b").unique(maintain_order=True).height
        label = (pl.col("metric").cast(pl.String) + "  " + pl.col("group_a").cast(pl.String) + "–" + pl.col("group_b").cast(pl.String)
                 if pairs > 1 else pl.col("metric").cast(pl.String))  # fmt: skip
        sub = sub.with_columns(label.alias("_row"))
        labels = sub["_row"].unique(maintain_order=True).to_list()
        r = np.full((len(labels), len(columns)), np.nan)
        viol = np.zeros(r.shape, dtype=bool)
        for row in sub.iter_rows(named=True):
            i, j = labels.index(row["_row"]), columns.index(row["_col"])
            r[i, j] = np.nan if row["r_rb"] is None else float(row["r_rb"])
            viol[i, j] = bool(row.get("violation") or False)
        panels.append(ComparePanel(f"{dim} = {value}" if dim else str(value), labels, r, viol))
    return panels


def compare_figure_size(n_columns: int, panel_rows: list[int]) -> tuple[float, float]:
    """(width, height) in inches: min(7, max(3.5, 2.0 + 0.35·C)) by 1.6 + 0.3·P + 0.16·R.

    Example:
        >>> compare_figure_size(4, [3, 9])  # run --example fairness
        (3.5, 4.12)
    """
    width = round(min(MAX_WIDTH_IN, max(3.5, 2.0 + 0.35 * n_columns)), 6)
    return width, round(1.6 + 0.3 * len(panel_rows) + 0.16 * sum(panel_rows), 6)


def _split(panels: list[ComparePanel], n_columns: int) -> list[list[ComparePanel]]:
    """Whole panels in groups whose figure is at most 9 in tall (a taller single panel stays alone)."""
    groups: list[list[ComparePanel]] = [[]]
    for p in panels:
        trial = [*groups[-1], p]
        if groups[-1] and compare_figure_size(n_columns, [q.r.shape[0] for q in trial])[1] > MAX_HEIGHT_IN:
            groups.append([p])
        else:
            groups[-1] = trial
    return groups


def _note(table: pl.DataFrame, threshold: float) -> str:
    levels = table["ci_level"].drop_nulls().drop_nans().unique().to_list() if "ci_level" in table.columns else []
    ci = "unadjusted 95% CI" if not levels or levels == [0.95] else "Bonferroni-adjusted CI"
    return (f"Rank-biserial r: > 0 (red) = the first group of the pair higher; bold: |r| ≥ {threshold:g}; outlined: "
            f"violation ({ci} of r excludes 0); grey: no r.")  # fmt: skip


@literal_text
def _draw(panels: list[ComparePanel], columns: list[str], note: str, threshold: float) -> Figure:
    width, height = compare_figure_size(len(columns), [p.r.shape[0] for p in panels])
    fig = Figure(figsize=(width, height), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.06, h_pad=0.06, hspace=0.0)  # type: ignore[union-attr]
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": [p.r.shape[0] for p in panels]})[:, 0]
    cmap = colormaps["RdBu_r"].with_extremes(bad="#dddddd")
    image = None
    for ax, p in zip(axes, panels, strict=True):
        image = ax.imshow(np.ma.masked_invalid(p.r), cmap=cmap, norm=Normalize(-1.0, 1.0), aspect="auto", interpolation="nearest")
        ax.set_yticks(range(len(p.rows)), p.rows, fontsize=6.5)
        ax.set_title(p.title, fontsize=7.5, pad=2, loc="left")
        ax.tick_params(length=0, pad=2)
        ax.set_xticks(np.arange(-0.5, len(columns), 1), minor=True)
        ax.set_yticks(np.arange(-0.5, len(p.rows), 1), minor=True)
        ax.grid(which="minor", color="white", linewidth=0.6)
        ax.tick_params(which="minor", length=0)
    axes[-1].set_xticks(range(len(columns)), columns, rotation=45, ha="right", rotation_mode="anchor", fontsize=6.5)
    cbar = fig.colorbar(image, ax=list(axes), fraction=0.05, pad=0.01, aspect=30)
    cbar.set_label("r_rb", fontsize=6.5, labelpad=1)
    cbar.ax.tick_params(labelsize=6, length=2)
    fig.suptitle("\n".join(wrap_to_width(fig, note, width - 0.2, 6.5)), fontsize=6.5, x=0.01, ha="left")
    fig.get_layout_engine().execute(fig)  # type: ignore[union-attr]
    for ax, p in zip(axes, panels, strict=True):
        cell_w = ax.get_position().width * width / max(1, len(columns))
        _annotate(ax, p, threshold, show_values=cell_w >= VALUE_CELL_IN - 1e-9)
    return fig


def _annotate(ax: object, p: ComparePanel, threshold: float, *, show_values: bool) -> None:
    n_rows, n_cols = p.r.shape
    for i in range(n_rows):
        for j in range(n_cols):
            v = p.r[i, j]
            if p.violation[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.0))  # type: ignore[attr-defined]
            if show_values and np.isfinite(v):
                ax.text(j, i, format_rho(v), ha="center", va="center", fontsize=6, color="white" if abs(v) > 0.6 else "black",  # type: ignore[attr-defined]
                        fontweight="bold" if abs(v) >= threshold else "normal")  # fmt: skip


def compare_figures(table: pl.DataFrame, *, threshold: float = BOLD_AT) -> list[Figure]:
    """The small-multiple figure(s) of a compare table: one, or several when it would be taller than 9 in."""
    panels = compare_panels(table)
    rows = _wilcoxon(table)
    columns = _columns_of(rows, _strata(table)).unique(maintain_order=True).to_list()
    note = _note(table, threshold)
    return [_draw(group, columns, note, threshold) for group in _split(panels, len(columns))]


def save_compare_figure(
    table: pl.DataFrame, path: str | os.PathLike[str], *, threshold: float = BOLD_AT, dpi: int = DEFAULT_DPI
) -> list[Path]:
    """Draw :func:`compare_figures` and save them: ``path`` itself, or ``FILE-1.ext``, ``FILE-2.ext``, … when split.

    Args:
        table: The compare table.
        path: The figure file (``.png``, ``.pdf`` or ``.svg``).
        threshold: Effects at least this large are drawn bold.
        dpi: Resolution of a PNG.
    """
    out = check_figure_path(path)
    figs = compare_figures(table, threshold=threshold)
    if len(figs) == 1:
        return [save_paper_figure(figs[0], out, dpi=dpi)]
    return [save_paper_figure(f, out.with_name(f"{out.stem}-{k}{out.suffix}"), dpi=dpi) for k, f in enumerate(figs, start=1)]


def plot_effect_matrix(table: pl.DataFrame, output: str | os.PathLike[str] | None = None, *, dpi: int = DEFAULT_DPI,
                       threshold: float = BOLD_AT) -> Figure:  # fmt: skip
    """The compare figure (saved when ``output`` is given, split as :func:`save_compare_figure`); returns the first.

    Args:
        table: The compare table.
        output: The figure file; ``None``: not saved.
        dpi: Resolution of a PNG.
        threshold: Effects at least this large are drawn bold.
    """
    if output is not None:
        check_figure_path(output)
        save_compare_figure(table, output, threshold=threshold, dpi=dpi)
    return compare_figures(table, threshold=threshold)[0]
