"""The Wright map of an MFRM fit (``docs/measurement.md#wright-map``): exchanges, raters and criteria on one
vertical logit axis, 7.0 × 4.5 in, fonts of at least 8 pt.

Left to right: **exchanges** — a horizontal histogram of the EAPs (bins of 0.25 logit aligned on 0, counts at
the bottom, bars growing away from the scale); **raters** — ŝ_r as points with labels; **criteria** — one lane
per criterion with b̂_j as a point and, for partial-credit criteria, the Andrich thresholds b̂_j + τ̂_jh as short
ticks labelled h; the lanes are numbered and the names sit to the right, each joined to its point. Higher means
more able exchanges, more severe raters, harder criteria (logit P = θ − b − s). Raters and criteria flagged
``underfit`` in the fit table are open red markers. Labels are cut to 24 characters and pushed apart to at least
1.15 font heights; a column of more than 30 elements shows points only and a note. Only numbers of THETA, FACETS
and the fit table are drawn.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
    >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
    >>> ratings, _ = simulate_mfrm(n_items=60, seed=0)
    >>> fig = wright_map_figure(estimates_from_result(fit_mfrm(ratings), prepare_ratings(ratings)))
    >>> [ax.get_title() for ax in fig.axes], fig.get_size_inches().tolist()
    (['exchanges', 'raters', 'criteria'], [7.0, 4.5])
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from tutormetrics.errors import ConfigError
from tutormetrics.plotting import literal_text
from tutormetrics.psychometrics.measurement.estimates import Estimates

__all__ = ["LABEL_MAX", "WRIGHT_FORMATS", "save_wright_map", "shorten", "spread_labels", "wright_map_figure"]

WRIGHT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
SIZE = (7.0, 4.5)
DPI = 300
FONT = 8.0
LABEL_MAX = 24
MAX_LABELLED = 30
BIN = 0.25
BLUE, RED = "#1f4e79", "#c0392b"


def shorten(text: str, limit: int = LABEL_MAX) -> str:
    """At most ``limit`` characters, the last one "…" when cut.

    >>> shorten("revealing_of_the_answer_and_more")
    'revealing_of_the_answer…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spread_labels(y: np.ndarray, gap: float, low: float, high: float) -> np.ndarray:
    """Label positions as close to ``y`` as possible with at least ``gap`` between neighbours, within [low, high].

    Args:
        y: Wanted label positions.
        gap: Smallest distance between neighbours.
        low: Lowest allowed position.
        high: Highest allowed position.

    Example:
        >>> spread_labels(np.array([0.0, 0.05, 0.1]), 0.2, -5, 5).round(3).tolist()
        [-0.15, 0.05, 0.25]
    """
    order = np.argsort(y, kind="stable")
    pos = y[order].astype(float).copy()
    for _ in range(50):  # push up, push down from the top bound, recentre on the wanted mean
        for k in range(1, pos.size):
            pos[k] = max(pos[k], pos[k - 1] + gap)
        if pos.size and pos[-1] > high:
            pos[-1] = high
            for k in range(pos.size - 2, -1, -1):
                pos[k] = min(pos[k], pos[k + 1] - gap)
        shift = float(np.mean(y[order] - pos))
        moved = np.clip(pos + shift, low, high)
        if np.all(np.diff(moved) >= gap - 1e-9) and np.allclose(moved, pos):
            break
        pos = moved if np.all(np.diff(moved) >= gap - 1e-9) else pos
    out = np.empty_like(pos)
    out[order] = pos
    return out


def _underfit(fit: pl.DataFrame | None, facet: str, levels: list[str]) -> np.ndarray:
    if fit is None:
        return np.zeros(len(levels), dtype=bool)
    flagged = set(fit.filter((pl.col("facet") == facet) & (pl.col("flag") == "underfit"))["level"].to_list())
    return np.array([lev in flagged for lev in levels], dtype=bool)


def _points(ax: Axes, x: np.ndarray, y: np.ndarray, flagged: np.ndarray) -> None:
    ax.plot(x[~flagged], y[~flagged], "o", color=BLUE, markersize=4.5, linestyle="none")
    ax.plot(x[flagged], y[flagged], "o", markerfacecolor="white", markeredgecolor=RED, markeredgewidth=1.3,
            markersize=5.5, linestyle="none")  # fmt: skip


def _labels(ax: Axes, x_point: np.ndarray, y: np.ndarray, names: list[str], x_text: float, gap: float, ylim: tuple[float, float]) -> None:
    """Names to the right at spread positions, each joined to its point by a thin line."""
    pos = spread_labels(y, gap, ylim[0] + gap / 2, ylim[1] - gap / 2)
    for xp, yp, yl, name in zip(x_point, y, pos, names, strict=True):
        ax.plot([xp, x_text - 0.08], [yp, yl], color="#9a9a9a", linewidth=0.5)
        ax.text(x_text, yl, name, fontsize=FONT, va="center", ha="left")


@literal_text
def wright_map_figure(est: Estimates, fit: pl.DataFrame | None = None) -> Figure:
    """The figure of the module docstring from the estimates (THETA, FACETS) and, optionally, the fit table."""
    fig = Figure(figsize=SIZE, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [1.5, 1.25, 2.25]})
    theta, n_crit, n_rat = est.theta, len(est.criteria), len(est.raters)
    thresholds = [est.b[j] + est.tau[j, : est.n_steps[j]] for j in range(n_crit) if est.n_steps[j] > 1]
    values = np.concatenate([theta, est.b, est.s, *thresholds])
    ylim = (math.floor(values.min() / BIN) * BIN - 0.5, math.ceil(values.max() / BIN) * BIN + 0.5)
    height_pt = 0.78 * SIZE[1] * 72
    gap = 1.15 * FONT * (ylim[1] - ylim[0]) / height_pt
    ax_e, ax_r, ax_c = axes
    edges = np.arange(math.floor(theta.min() / BIN) * BIN, math.ceil(theta.max() / BIN) * BIN + BIN / 2, BIN)
    if edges.size < 2:
        edges = np.array([edges[0], edges[0] + BIN])
    ax_e.hist(theta, bins=edges, orientation="horizontal", color="#9aa7b8", edgecolor="white", linewidth=0.4)
    ax_e.invert_xaxis()
    ax_e.set_xlabel("count", fontsize=FONT)
    ax_e.set_ylabel("logit (higher: more able, more severe, harder)", fontsize=FONT)
    _rater_column(ax_r, est, fit, gap, ylim)
    _criterion_column(ax_c, est, fit, gap, ylim)
    for ax, title in zip(axes, ("exchanges", "raters", "criteria"), strict=True):
        ax.set_title(title, fontsize=9)
        ax.axhline(0.0, color="#666666", linewidth=0.8, linestyle="--")
        ax.tick_params(labelsize=FONT)
        ax.set_ylim(*ylim)
    handles = [Line2D([], [], marker="o", color=BLUE, linestyle="none", markersize=4.5, label="estimate")]
    if fit is not None and fit.filter(pl.col("facet").is_in(["rater", "criterion"]) & (pl.col("flag") == "underfit")).height:
        handles.append(Line2D([], [], marker="o", markerfacecolor="white", markeredgecolor=RED, linestyle="none",
                              markersize=5.5, label="underfit (fit table)"))  # fmt: skip
    ax_r.legend(handles=handles, fontsize=FONT, loc="lower center", frameon=False)  # the raters column has room
    fig.suptitle(f"Wright map: {est.n_items} exchanges, {n_crit} criteria, {n_rat} rater{'s' if n_rat != 1 else ''}", fontsize=10)
    return fig


def _rater_column(ax: Axes, est: Estimates, fit: pl.DataFrame | None, gap: float, ylim: tuple[float, float]) -> None:
    ax.set_xticks([])
    ax.set_xlim(-0.5, 2.5)
    n = len(est.raters)
    if n == 1:
        ax.plot([0.0], [0.0], "o", color=BLUE, markersize=4.5)
        ax.annotate("one rater (s = 0)", (0.0, 0.0), xytext=(6, 3), textcoords="offset points", fontsize=FONT, va="bottom")
        return
    flagged = _underfit(fit, "rater", est.raters)
    if n > MAX_LABELLED:
        x = np.linspace(-0.3, 0.3, n)
        _points(ax, x, est.s, flagged)
        ax.text(0.5, 0.02, f"{n} raters", transform=ax.transAxes, fontsize=FONT, ha="center")
        return
    _points(ax, np.zeros(n), est.s, flagged)
    _labels(ax, np.zeros(n), est.s, [shorten(r) for r in est.raters], 0.35, gap, ylim)


def _criterion_column(ax: Axes, est: Estimates, fit: pl.DataFrame | None, gap: float, ylim: tuple[float, float]) -> None:
    n = len(est.criteria)
    flagged = _underfit(fit, "criterion", est.criteria)
    if n > MAX_LABELLED:
        _points(ax, np.linspace(-0.3, 0.3, n), est.b, flagged)
        ax.set_xticks([])
        ax.set_xlim(-1, 1)
        ax.text(0.5, 0.02, f"{n} criteria", transform=ax.transAxes, fontsize=FONT, ha="center")
        return
    lanes = np.arange(n, dtype=float) * 0.6
    for j, x in enumerate(lanes):
        m = int(est.n_steps[j])
        if m > 1:
            for h, tau in enumerate(est.tau[j, :m], start=1):
                ax.plot([x - 0.15, x + 0.15], [est.b[j] + tau] * 2, color=BLUE, linewidth=1.1)
                ax.text(x + 0.18, est.b[j] + tau, str(h), fontsize=FONT, va="center", color="#444444")
    _points(ax, lanes, est.b, flagged)
    ax.set_xticks(lanes)
    ax.set_xticklabels([str(j + 1) for j in range(n)])
    x_text = lanes[-1] + 0.7
    _labels(ax, lanes, est.b, [f"{j + 1} {shorten(c)}" for j, c in enumerate(est.criteria)], x_text, gap, ylim)
    ax.set_xlim(-0.45, x_text + 2.6)


def save_wright_map(est: Estimates, path: str | Path, fit: pl.DataFrame | None = None) -> Path:
    """Write :func:`wright_map_figure` as PNG (300 dpi: 2100 × 1350 px), PDF or SVG by the extension.

    Args:
        est: The fitted estimates.
        path: The figure file (``.png``, ``.pdf`` or ``.svg``).
        fit: The fit table (its ``underfit`` elements drawn as open red markers); ``None``: no marks.
    """
    path = Path(path)
    fmt = WRIGHT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(f"--wright-map {path}: cannot tell the figure format", hint="name the map .png, .pdf or .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    wright_map_figure(est, fit).savefig(path, format=fmt, dpi=DPI)
    return path
