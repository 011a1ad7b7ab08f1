"""The ΔP forest plot of ``theta --effects-plot FILE`` (``docs/guide/paper.md#figures``, seed 000's Fig. 3).

One panel per criterion (the effects table's order), at most five per row, sharing both axes: y = the terms in
effects order (covariates, topics, groups, a rule between the sets), x = ΔP symmetric about 0. Each row is a
point at ``delta_p_mean`` on its 94% HDI bar, filled when the HDI excludes 0 and hollow otherwise; a dashed
line marks 0; a footer names the reference point and the draws. Only numbers of the effects table are drawn.
Size: width min(7, 1.6 + 1.1·panels) in, height 0.9 + 0.22·terms per panel row.

Example:
    >>> t = pl.DataFrame({"effect": ["covariate"] * 2, "term": ["suff"] * 2, "criterion": ["i1", "i2"],
    ...                   "reference": ["theta=0"] * 2, "delta_p_mean": [0.05, -0.02], "hdi_low": [0.01, -0.09],
    ...                   "hdi_high": [0.09, 0.04], "hdi_excl_zero": [True, False], "method": ["mml"] * 2, "n_draws": [4000] * 2})
    >>> [round(float(v), 2) for v in delta_p_figure(t).get_size_inches()]
    [3.8, 1.12]
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tutormetrics.errors import InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.plotting import DEFAULT_DPI, MAX_WIDTH_IN, literal_text, save_paper_figure, wrap_to_width

__all__ = ["delta_p_figure", "delta_p_figure_size", "draws_text", "save_delta_p_figure"]

PANELS_PER_ROW = 5
_COLOUR = "#1f4e79"


def delta_p_figure_size(n_panels: int, n_terms: int) -> tuple[float, float]:
    """(width, height) in inches: min(7, 1.6 + 1.1·panels per row) by (0.9 + 0.22·terms) per panel row.

    Example:
        >>> delta_p_figure_size(5, 6)  # seed 000's M3: suff + 5 topics, 5 criteria
        (7.0, 2.22)
    """
    per_row = min(n_panels, PANELS_PER_ROW)
    rows = math.ceil(n_panels / PANELS_PER_ROW)
    return round(min(MAX_WIDTH_IN, 1.6 + 1.1 * per_row), 6), round(rows * (0.9 + 0.22 * n_terms), 6)


def draws_text(table: pl.DataFrame, seed: int = 0) -> str:
    """``MML: 4000 draws from N(mode, H^-1), seed 0`` or ``NUTS: 4000 posterior draws`` from the table.

    Example:
        >>> draws_text(pl.DataFrame({"method": ["mml"], "n_draws": [4000]}), seed=3)
        'MML: 4000 draws from N(mode, H^-1), seed 3'
    """
    method = str(table["method"][0]) if "method" in table.columns and table.height else "mml"
    n = int(table["n_draws"].max() or 0) if "n_draws" in table.columns and table.height else 0
    if method == "nuts":
        return f"NUTS: {n} posterior draws"
    return f"MML: {n} draws from N(mode, H^-1), seed {seed}" if n else "MML: no draws (the Hessian is not positive definite)"


def _terms(table: pl.DataFrame) -> tuple[list[tuple[str, str]], list[int]]:
    """The (effect, term) rows in effects order and the positions where a new set of terms starts."""
    keys = list(dict.fromkeys(zip(table["effect"].to_list(), table["term"].to_list(), strict=True)))
    breaks = [i for i in range(1, len(keys)) if keys[i][0] != keys[i - 1][0]]
    return keys, breaks


@literal_text
def delta_p_figure(table: pl.DataFrame, *, seed: int = 0) -> Figure:
    """The ΔP forest plot of an effects table (see the module docstring)."""
    require_columns(table, ["effect", "term", "criterion", "delta_p_mean", "hdi_low", "hdi_high", "hdi_excl_zero"],
                    source="effects table")  # fmt: skip
    if table.height == 0:
        raise InputSchemaError("the effects table has no rows to draw")
    criteria = table["criterion"].unique(maintain_order=True).to_list()
    keys, breaks = _terms(table)
    n_rows = math.ceil(len(criteria) / PANELS_PER_ROW)
    n_cols = min(len(criteria), PANELS_PER_ROW)
    fig = Figure(figsize=delta_p_figure_size(len(criteria), len(keys)), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.06, h_pad=0.06, wspace=0.02, hspace=0.02)  # type: ignore[union-attr]
    FigureCanvasAgg(fig)
    axes = np.atleast_2d(fig.subplots(n_rows, n_cols, sharex=True, sharey=True, squeeze=False))
    finite = np.abs(table.select("hdi_low", "hdi_high", "delta_p_mean").to_numpy().astype(float).ravel())
    finite = finite[np.isfinite(finite)]
    limit = 1.08 * float(finite.max()) if finite.size and finite.max() > 0 else 0.1
    y_of = {k: i for i, k in enumerate(keys)}
    for k, crit in enumerate(criteria):
        ax = axes[k // n_cols, k % n_cols]
        rows = table.filter(pl.col("criterion") == crit)
        y = np.array([y_of[(e, t)] for e, t in zip(rows["effect"].to_list(), rows["term"].to_list(), strict=True)], dtype=float)
        mean, lo, hi = (rows[c].cast(pl.Float64).to_numpy() for c in ("delta_p_mean", "hdi_low", "hdi_high"))
        filled = rows["hdi_excl_zero"].fill_null(False).to_numpy().astype(bool)
        ax.hlines(y, lo, hi, color=_COLOUR, linewidth=1.1)
        ax.plot(mean[filled], y[filled], "o", color=_COLOUR, markersize=3.6)
        ax.plot(mean[~filled], y[~filled], "o", markerfacecolor="white", markeredgecolor=_COLOUR, markersize=3.6, markeredgewidth=0.9)
        ax.axvline(0.0, color="#666666", linewidth=0.7, linestyle="--")
        for b in breaks:
            ax.axhline(b - 0.5, color="#999999", linewidth=0.6)
        ax.set_title(str(crit), fontsize=8, pad=3)
        ax.tick_params(labelsize=7, length=2, pad=1.5)
        ax.grid(axis="x", color="#ececec", linewidth=0.5)
        ax.set_axisbelow(True)
    for k in range(len(criteria), n_rows * n_cols):
        axes[k // n_cols, k % n_cols].set_visible(False)
    first = axes[0, 0]
    first.set_xlim(-limit, limit)
    first.set_ylim(len(keys) - 0.5, -0.5)
    first.set_yticks(range(len(keys)), [t for _, t in keys])
    for k in range(len(criteria)):  # the lowest panel of each column carries the ΔP axis
        if k + n_cols >= len(criteria):
            ax = axes[k // n_cols, k % n_cols]
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("ΔP", fontsize=7, labelpad=1)
    reference = str(table["reference"][0]) if "reference" in table.columns else ""
    footer = f"ΔP at {reference}; mean and 94% HDI (filled: the HDI excludes 0). {draws_text(table, seed)}"
    fig.supxlabel("\n".join(wrap_to_width(fig, footer, fig.get_size_inches()[0] - 0.2, 6)), fontsize=6, color="#333333")
    return fig


def save_delta_p_figure(table: pl.DataFrame, path: str | os.PathLike[str], *, seed: int = 0, dpi: int = DEFAULT_DPI) -> Path:
    """Draw :func:`delta_p_figure` and save it by the extension (``.png`` at ``dpi``, ``.pdf``, ``.svg``).

    Args:
        table: The effects table (``theta --effects``).
        path: The figure file (``.png``, ``.pdf`` or ``.svg``).
        seed: The MML draws' seed, named in the figure.
        dpi: Resolution of a PNG.
    """
    return save_paper_figure(delta_p_figure(table, seed=seed), path, dpi=dpi)
