"""Facets plot of an MFRM fit (``docs/design/effects.md#facets-plot``, the seed's Fig. 2): panels side by side on one shared
logit axis — θ (horizontal histogram of the EAPs, 30 bins, min and max marked), s (raters), b
(criteria), one panel per covariate (γ), and one for topics (β grouped by topic) or groups — with
points at the estimates, segments for the 94% intervals of the facets table and a dashed line at 0.

Only numbers from ``theta_table()`` and ``facets_table()`` are drawn. matplotlib's object API on the
Agg canvas (no pyplot state); about 7 inches wide, legible at paper width.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> fig = facets_figure(fit_mfrm(simulate_mfrm(n_items=50, seed=0)[0]))
    >>> [ax.get_title() for ax in fig.axes]
    ['θ', 's', 'b']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tutormetrics.plotting import DEFAULT_DPI, MAX_WIDTH_IN, check_figure_path, literal_text, save_paper_figure

__all__ = ["facets_figure", "facets_panels", "save_facets_figure"]



def facets_panels(facets: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(title, rows with ``label, group, estimate, lower, upper``) per panel after θ, in the docs/design/effects.md#facets-plot order.

    Example:
        >>> ft = pl.DataFrame({"facet": ["criterion", "rater"], "level": ["c1", "A"], "estimate": [0.5, 0.1],
        ...                    "lower": [0.0, -0.1], "upper": [1.0, 0.3]})
        >>> [t for t, _ in facets_panels(ft)]
        ['s', 'b']
    """
    panels: list[tuple[str, pl.DataFrame]] = []

    def rows(sub: pl.DataFrame, group: pl.Expr) -> pl.DataFrame:
        return sub.select(pl.col("level").alias("label"), group.alias("group"), "estimate", "lower", "upper")

    for facet, title in (("rater", "s"), ("criterion", "b")):
        sub = facets.filter(pl.col("facet") == facet)
        if sub.height:
            panels.append((title, rows(sub, pl.lit(""))))
    for facet in facets["facet"].unique(maintain_order=True).to_list():
        if facet.startswith("covariate:"):
            panels.append((f"γ: {facet.split(':', 1)[1]}", rows(facets.filter(pl.col("facet") == facet), pl.lit(""))))
    for prefix, title in (("topic:", "β: topics"), ("group:", "β: groups")):
        sub = facets.filter(pl.col("facet").str.starts_with(prefix))
        if sub.height:
            panels.append((title, rows(sub, pl.col("facet").str.split(":").list.get(1))))
    return panels


@literal_text
def facets_figure(result: Any) -> Figure:
    """The facets figure of an ``MFRMResult`` or ``BayesMFRMResult`` (see the module docstring)."""
    theta = result.theta_table()["theta"].to_numpy()
    panels = facets_panels(result.facets_table())
    widths = [1.3] + [max(1.0, 0.16 * p.height + 0.5) if p["group"][0] else 1.0 for _, p in panels]
    fig = Figure(figsize=(min(MAX_WIDTH_IN, 1.25 * sum(widths) + 0.6), 3.6), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.06, h_pad=0.06)  # type: ignore[union-attr]  # inside the 7 in of docs/guide/paper.md#figures
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(widths), sharey=True, gridspec_kw={"width_ratios": widths})
    axes = np.atleast_1d(axes)
    ax0 = axes[0]
    ax0.hist(theta, bins=30, orientation="horizontal", color="#9aa7b8", edgecolor="white", linewidth=0.4)
    for v, lab in ((theta.min(), "min"), (theta.max(), "max")):
        ax0.axhline(v, color="#333333", linewidth=0.8, linestyle=":")
        ax0.annotate(f"{lab} {v:.2f}", (1.0, v), xycoords=("axes fraction", "data"), ha="right",
                     va="bottom" if lab == "max" else "top", fontsize=7)  # fmt: skip
    ax0.set_title("θ")
    ax0.set_xlabel("exchanges", fontsize=8)
    ax0.set_ylabel("logit")
    for ax, (title, rows) in zip(axes[1:], panels, strict=True):
        grouped = bool(rows["group"][0])
        x = np.arange(rows.height, dtype=float)
        if grouped:  # gaps between topics/groups
            order = {g: k for k, g in enumerate(rows["group"].unique(maintain_order=True).to_list())}
            codes = np.array([order[g] for g in rows["group"].to_list()], dtype=float)
            x = x + 1.0 * codes
        est, lo, hi = (rows[c].to_numpy() for c in ("estimate", "lower", "upper"))
        ax.vlines(x, lo, hi, color="#1f4e79", linewidth=1.2)
        ax.plot(x, est, "o", color="#1f4e79", markersize=3.5)
        ax.axhline(0.0, color="#666666", linewidth=0.8, linestyle="--")
        ax.set_xticks(x)
        ax.set_xticklabels(rows["label"].to_list(), rotation=90, fontsize=6.5 if grouped else 7)
        ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
        ax.set_title(title)
        if grouped:
            for g in rows["group"].unique(maintain_order=True).to_list():
                xs = x[(rows["group"] == g).to_numpy()]
                ax.annotate(g, (xs.mean(), 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                            fontsize=7, xytext=(0, -10), textcoords="offset points")  # fmt: skip
    for ax in axes:
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", color="#e5e5e5", linewidth=0.5)
        ax.set_axisbelow(True)
    return fig


def save_facets_figure(result: Any, path: str | Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Write :func:`facets_figure` as PNG (``dpi``, default 150), PDF or SVG by the file extension, with the paper
    rules of ``docs/guide/paper.md#figures`` (tight box, 0.05 in pad, at most 7 in wide).

    Args:
        result: The MML or NUTS fit.
        path: The figure file (``.png``, ``.pdf`` or ``.svg``).
        dpi: Resolution of a PNG.
    """
    path = check_figure_path(path, "--facets-plot")
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_paper_figure(facets_figure(result), path, dpi=dpi)
