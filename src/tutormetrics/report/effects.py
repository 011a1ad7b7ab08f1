"""Effect matrix of a ``compare`` table (``raters.md`` §5): r_rb by metric (rows) × contrast (columns).

Colours use the diverging ``RdBu_r`` map on [−1, 1]; r_rb > 0 means the first group of "A vs B" is
higher (the title says so). Each cell prints r_rb with two decimals; cells whose CI of r_rb excludes 0
are outlined and marked with "†", and |r_rb| ≥ 0.10 is set in bold, the way EduFair-Bench's tables
read. The title names the interval behind the mark (the table's ``ci_level``: the unadjusted 95% CI
by default, the family's Bonferroni interval with ``compare --violation-ci bonferroni``) and that
``p_adj`` is not what the mark shows. Undefined cells are grey and print why (``too_few``/``constant``
and n), with a footnote. Drawn with matplotlib's object API on
the Agg canvas (no pyplot state).

Example:
    >>> t = pl.DataFrame({"metric": ["ttr"], "test": ["wilcoxon"], "group_a": ["A"], "group_b": ["B"],
    ...                   "r_rb": [0.4], "ci_low": [0.1], "ci_high": [0.7]})
    >>> effect_matrix(t)[1], effect_matrix(t)[2].tolist()
    (['A vs B'], [[0.4]])
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.atomic import save_figure
from tutormetrics.io.tables import require_columns
from tutormetrics.plotting import literal_text

__all__ = ["FIGURE_FORMATS", "effect_matrix", "plot_effect_matrix"]

FIGURE_FORMATS = (".png", ".svg", ".pdf")
BOLD_AT = 0.10


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
    rows = table.filter(pl.col("test") == "wilcoxon") if "test" in table.columns else table
    if rows.height == 0:
        raise InputSchemaError("comparison table has no pairwise (wilcoxon) rows to draw")
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


def _empty_cells(table: pl.DataFrame, metrics: list[str], contrasts: list[str]) -> dict[tuple[int, int], str]:
    """Why a cell has no r_rb: its reason code (``too_few``, ``constant``) and n, drawn in the grey cell."""
    rows = table.filter(pl.col("test") == "wilcoxon") if "test" in table.columns else table
    strata = _strata(table)
    out = {}
    for row in rows.iter_rows(named=True):
        v = row["r_rb"]
        if v is None or not np.isfinite(v):
            reason = (row.get("reason") or "").split(";")[0] or "undefined"
            n = row.get("n")
            out[(metrics.index(row["metric"]), contrasts.index(_contrast_label(row, strata)))] = reason + (f"\nn={n}" if n is not None else "")
    return out


def _interval_words(table: pl.DataFrame) -> str:
    """Which interval the † mark uses, from the table's ``ci_level`` (95% unadjusted when absent)."""
    levels = table["ci_level"].drop_nulls().drop_nans().unique().to_list() if "ci_level" in table.columns else []
    if not levels or levels == [0.95]:
        return "unadjusted 95% CI"
    if len(levels) == 1:
        return f"Bonferroni-adjusted {100 * levels[0]:.4g}% CI"
    return f"Bonferroni-adjusted CI ({100 * min(levels):.4g}-{100 * max(levels):.4g}% per family)"


@literal_text
def plot_effect_matrix(table: pl.DataFrame, output: str | os.PathLike[str] | None = None, *, dpi: int = 200) -> Figure:
    """Draw the effect matrix (and save it as .png/.svg/.pdf when ``output`` is given)."""
    out = Path(output) if output is not None else None
    if out is not None and out.suffix.lower() not in FIGURE_FORMATS:
        raise ConfigError(
            f"{out}: cannot tell the figure format from {out.suffix or '(no extension)'!r}",
            hint="name the figure .png, .svg or .pdf",
        )
    metrics, contrasts, r, excl = effect_matrix(table)
    empty = _empty_cells(table, metrics, contrasts)
    n_rows, n_cols = r.shape
    width = min(20.0, 2.0 + 0.9 * n_cols + 0.08 * max(len(m) for m in metrics))
    fig = Figure(figsize=(max(width, 7.5), 1.9 + 0.45 * n_rows))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    cmap = colormaps["RdBu_r"].with_extremes(bad="#dddddd")
    norm = Normalize(-1.0, 1.0)
    image = ax.imshow(np.ma.masked_invalid(r), cmap=cmap, norm=norm, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            v = r[i, j]
            if not np.isfinite(v):
                if (i, j) in empty:
                    ax.text(j, i, empty[(i, j)], ha="center", va="center", fontsize=6, color="#555555")
                continue
            text = f"{v:.2f}" + ("†" if excl[i, j] else "")
            color = "white" if abs(v) > 0.6 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color,
                    fontweight="bold" if abs(v) >= BOLD_AT else "normal")  # fmt: skip
            if excl[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.2))
    ax.set_xticks(range(n_cols), contrasts, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(n_rows), metrics, fontsize=8)
    adjust = ""
    if "adjust" in table.columns and table["adjust"].drop_nulls().len():
        adjust = f"; p_adj ({table['adjust'].drop_nulls()[0]}) is in the table, not in the mark"
    ax.set_title(
        f"rank-biserial r: > 0 (red) = the first group of 'A vs B' higher, < 0 (blue) = the second higher\n"
        f"†, outlined: {_interval_words(table)} of r excludes 0{adjust}; bold: |r| ≥ 0.10",
        fontsize=8,
    )
    if empty:
        fig.text(0.01, 0.005, "grey: no r - too_few = fewer complete pairs than --n-min; constant = every difference 0",
                 fontsize=7, color="#555555", ha="left", va="bottom")  # fmt: skip
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02).set_label("r_rb", fontsize=8)
    fig.tight_layout()
    if out is not None:
        save_figure(fig, out, dpi=dpi)
    return fig
