"""Publication heatmap of a :func:`~tutormetrics.validity.correlate.spearman_matrix` table.

Metrics are rows (grouped by family, with separator lines and family labels on the left), targets are
columns. Colours use the diverging ``RdBu_r`` map centred at 0; each cell shows ρ with two decimals,
without the leading zero (APA style, ``.31``), and its stars on a second line. Undefined cells are grey
with their reason code in small type. The figure is drawn with matplotlib's object API on the Agg
canvas (no pyplot state), so nothing is shown and nothing stays open.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns
from tutormetrics.metrics.columns import OTHER, ColumnDescription, aliases, describe_table, family_labels
from tutormetrics.plotting import MAX_WIDTH_IN, MIN_FONT_PT, literal_text, save_paper_figure, text_extent, wrap_to_width

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.image import AxesImage
    from matplotlib.patches import Rectangle

_REASON_LABEL = {"too_few": "too few", "constant": "const."}
_FORMATS = {".png", ".svg", ".pdf"}
_GREY_NAN = "#d9d9d9"
_GREY_NS = "#f4f4f4"


#: The colour scale of ρ in the PNG/PDF heatmaps and the report: ``RdBu_r`` on [−RHO_LIMIT, RHO_LIMIT].
RHO_LIMIT = 1.0
#: A page's text height: a taller heatmap shrinks its cells (``docs/guide/paper.md#heatmap``); cell heights (in).
PAGE_HEIGHT_IN = 9.0
MAX_CELL_H = 0.32
MIN_CELL_H = 0.11


def star_legend(table: pl.DataFrame) -> str:
    """What the stars of a correlation table mean: which p they use (``p_adj`` with its method, or raw p).

    The table does not name the p its stars use; a starred cell whose ``p_adj`` is not below .05 means raw p.

    Example:
        >>> star_legend(pl.DataFrame({"p": [0.01], "p_adj": [0.03], "adjust": ["bh"], "stars": ["*"]}))
        '*\xa0p_adj\xa0<\xa0.05, **\xa0p_adj\xa0<\xa0.01, ***\xa0p_adj\xa0<\xa0.001 (p_adj: BH).'
    """
    if "stars" not in table.columns or not (table["stars"].fill_null("") != "").any():
        return ""
    basis = "p_adj"
    if "p_adj" in table.columns:
        starred = table.filter(pl.col("stars").fill_null("") != "")
        if starred.height and (starred["p_adj"].fill_null(1.0).fill_nan(1.0) >= 0.05).any():
            basis = "p"
    elif "p" in table.columns:
        basis = "p"
    nb = "\u00a0"  # a no-break space keeps "** p_adj < .01" on one line of a wrapped note
    text = ", ".join(f"{'*' * k}{nb}{basis}{nb}<{nb}{v}" for k, v in ((1, ".05"), (2, ".01"), (3, ".001")))
    adjust = table.get_column("adjust").drop_nulls()[0] if "adjust" in table.columns and table["adjust"].drop_nulls().len() else None
    if basis == "p_adj" and adjust:
        text += f" (p_adj: {_ADJUST_NAMES.get(str(adjust), str(adjust))})"
    return text + "."


_ADJUST_NAMES = {"bh": "BH", "holm": "Holm", "by": "BY", "bonferroni": "Bonferroni", "none": "unadjusted"}


def row_descriptions(metrics: list[str], columns: Sequence[ColumnDescription] | None) -> list[ColumnDescription]:
    """A description for every metric row: from ``columns`` (the manifest), else the registry fallback
    (:func:`tutormetrics.metrics.columns.describe_table`). Aliases keep ``alias_of`` only when the column
    they alias is a row too."""
    known = {d.name: d for d in columns or ()}
    missing = [m for m in metrics if m not in known]
    if missing:
        known.update({d.name: d for d in describe_table(missing)})
    rows = [known.get(m) or ColumnDescription(m, OTHER, OTHER) for m in metrics]
    present = set(metrics)
    return [d if d.alias_of is None or d.alias_of in present else replace(d, alias_of=None) for d in rows]


def alias_note(rows: Sequence[ColumnDescription]) -> str:
    """The note naming the rows drawn once for several columns.

    Example:
        >>> alias_note([ColumnDescription("a", "f", "f"), ColumnDescription("b", "g", "g", alias_of="a")])
        'a also stands for b (the same quantity).'
    """
    found = aliases(rows)
    if not found:
        return ""
    parts = [f"{k} also stands for {', '.join(v)}" for k, v in found.items()]
    return "; ".join(parts) + " (the same quantity)."


def format_rho(value: float) -> str:
    """Two decimals without the leading zero and with a true minus sign: ``-0.314`` → ``"−.31"``.

    Example:
        >>> format_rho(0.314), format_rho(-0.05), format_rho(1.0)
        ('.31', '−.05', '1.00')
    """
    if not np.isfinite(value):
        return ""
    text = f"{abs(value):.2f}"
    if text.startswith("0."):
        text = text[1:]
    return ("−" if value < 0 and text.strip("0.") else "") + text


def _cluster_order(rows: np.ndarray) -> list[int]:
    """Leaf order of average-linkage clustering of the rows (NaN → 0), optimal leaf ordering."""
    if rows.shape[0] < 3:
        return list(range(rows.shape[0]))
    from scipy.cluster.hierarchy import leaves_list, linkage

    filled = np.nan_to_num(rows, nan=0.0)
    link = linkage(filled, method="average", metric="euclidean", optimal_ordering=True)
    return [int(i) for i in leaves_list(link)]


def _arrange(
    metrics: list[str], mat: np.ndarray, groups: Mapping[str, str], order: str
) -> tuple[list[int], list[tuple[str, int, int]]]:
    """Row order (indices into ``metrics``) and family blocks ``(family, start, stop)``."""
    fam_of = [groups.get(m, OTHER) for m in metrics]
    families = list(dict.fromkeys(fam_of))
    row_order: list[int] = []
    blocks: list[tuple[str, int, int]] = []
    for fam in families:
        idx = [i for i, f in enumerate(fam_of) if f == fam]
        if order == "cluster":
            idx = [idx[k] for k in _cluster_order(mat[idx])]
        blocks.append((fam, len(row_order), len(row_order) + len(idx)))
        row_order.extend(idx)
    return row_order, blocks


@dataclass(frozen=True)
class _Grid:
    """The table as matrices in display order: values, stars and reason codes, with row/column labels."""

    values: np.ndarray
    stars: np.ndarray
    reasons: np.ndarray
    rows: list[str]
    columns: list[str]
    blocks: list[tuple[str, int, int]]

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    @property
    def show_families(self) -> bool:
        return len(self.blocks) > 1 or self.blocks[0][0] != "other"


@dataclass(frozen=True)
class _Layout:
    """Where everything goes, in inches from the top-left corner of the figure."""

    width: float
    height: float
    fs: float  # tick-label font size (pt)
    pad: float
    left: float
    top: float
    heat_w: float
    heat_h: float
    cell_w: float
    cell_h: float
    ylab_w: float  # widest metric label
    fam_h: float  # height of a bold family label (its width once rotated)
    fam_w: float  # width of the family-label column (rotated labels, or the widest horizontal one)
    fam_rotated: list[bool]  # per block: the label runs along the block (it fits), else across it
    xlab_h: float  # tallest rotated target label
    cbar_h: float
    note_lines: list[str]

    def frac(self, x_in: float, y_in_from_top: float, w_in: float, h_in: float) -> list[float]:
        """An axes rectangle in figure fractions from inches measured from the top-left corner.

        Args:
            x_in: Left edge, inches from the left.
            y_in_from_top: Top edge, inches from the top.
            w_in: Width in inches.
            h_in: Height in inches.
        """
        return [x_in / self.width, 1 - (y_in_from_top + h_in) / self.height, w_in / self.width, h_in / self.height]


def _check_options(order: str, width_in: float, output: str | Path | None) -> Path | None:
    """Validate the drawing options; return the output path (``None`` when nothing is saved)."""
    if order not in ("given", "cluster"):
        raise ConfigError(f"unknown order {order!r}", hint="use 'given' or 'cluster'")
    if not 1.0 <= width_in <= MAX_WIDTH_IN:
        raise ConfigError(f"the heatmap width must lie between 1 and {MAX_WIDTH_IN:g} inches, got {width_in:g}",
                          hint="3.5 is one column, 7 a full page width (docs/guide/paper.md#figures)")  # fmt: skip
    out_path = Path(output) if output is not None else None
    if out_path is not None and out_path.suffix.lower() not in _FORMATS:
        raise ConfigError(
            f"{out_path}: cannot tell the figure format from {out_path.suffix or '(no extension)'!r}",
            hint="name the figure .png, .svg or .pdf",
        )
    return out_path


def _check_table(table: pl.DataFrame, value: str) -> None:
    """The correlation table has metric, target and a numeric ``value`` column, one row per pair."""
    require_columns(table, ["metric", "target", value], source="correlation table", option="--value")
    if table.height == 0:
        raise InputSchemaError("correlation table has no rows")
    if not table.schema[value].is_numeric():
        raise InputSchemaError(f"correlation table column {value!r} is not numeric", hint="use --value rho")
    if table.select(pl.struct("metric", "target").is_duplicated().any()).item():
        raise InputSchemaError("correlation table has duplicate (metric, target) rows")


def _cell_grid(
    table: pl.DataFrame,
    value: str,
    *,
    mask_nonsignificant: bool,
    groups: Mapping[str, str],
    order: str,
) -> _Grid:
    """Value, stars and reason matrices (metrics × targets), rows in family blocks.

    Without a ``stars`` column, ``mask_nonsignificant`` marks cells with ``p_adj < .05`` by ``*``.
    """
    metrics = table.get_column("metric").cast(pl.String).unique(maintain_order=True).to_list()
    targets = table.get_column("target").cast(pl.String).unique(maintain_order=True).to_list()
    mi = {m: i for i, m in enumerate(metrics)}
    ti = {t: j for j, t in enumerate(targets)}
    shape = (len(metrics), len(targets))
    mat = np.full(shape, np.nan)
    stars = np.full(shape, "", dtype=object)
    reasons = np.full(shape, "", dtype=object)
    has_stars = "stars" in table.columns
    for row in table.iter_rows(named=True):
        i, j = mi[str(row["metric"])], ti[str(row["target"])]
        v = row[value]
        mat[i, j] = float(v) if v is not None else np.nan
        stars[i, j] = (row.get("stars") or "") if has_stars else ""
        reasons[i, j] = row.get("reason") or ""
    if mask_nonsignificant and not has_stars:
        if "p_adj" not in table.columns:
            raise InputSchemaError("mask_nonsignificant needs a 'stars' or 'p_adj' column")
        for row in table.iter_rows(named=True):
            p = row["p_adj"]
            if p is not None and np.isfinite(p) and p < 0.05:
                stars[mi[str(row["metric"])], ti[str(row["target"])]] = "*"
    row_order, blocks = _arrange(metrics, mat, groups, order)
    return _Grid(
        values=mat[row_order],
        stars=stars[row_order],
        reasons=reasons[row_order],
        rows=[metrics[i] for i in row_order],
        columns=targets,
        blocks=blocks,
    )


def _colour_limit(values: np.ndarray, vmax: float | None) -> float:
    """``vmax`` as given, or the largest finite |value| rounded up to 0.1 (at least 0.1)."""
    finite = np.abs(values[np.isfinite(values)])
    if vmax is None:
        vmax = max(0.1, math.ceil(float(finite.max(initial=0.0)) * 10 - 1e-9) / 10)
    if not vmax > 0:
        raise ConfigError(f"vmax must be positive, got {vmax}")
    return vmax


def _layout(fig: Figure, grid: _Grid, *, width_in: float, title: str | None, note: str | None, max_height_in: float = PAGE_HEIGHT_IN) -> _Layout:
    """Measure the labels on ``fig`` and place the heat map, colour bar and note; resizes ``fig``.

    Cells are ``width / n_targets`` wide and 0.19–0.32 in tall, so the height grows with the metrics, until the
    figure would pass ``max_height_in``: then the cells shrink (down to 0.11 in) to keep it on one page
    (``docs/guide/paper.md#heatmap``).
    """
    lay = _layout_once(fig, grid, width_in=width_in, title=title, note=note, cell_h_max=MAX_CELL_H)
    if lay.height > max_height_in and grid.shape[0]:
        fits = (max_height_in - (lay.height - lay.heat_h)) / grid.shape[0]
        lay = _layout_once(fig, grid, width_in=width_in, title=title, note=note, cell_h_max=max(MIN_CELL_H, fits))
    return lay


def _layout_once(fig: Figure, grid: _Grid, *, width_in: float, title: str | None, note: str | None, cell_h_max: float) -> _Layout:
    n_rows, n_cols = grid.shape
    fs = float(np.interp(width_in, [3.5, 7.0], [6.5, 8.0]))  # tick-label size
    fs = max(MIN_FONT_PT, min(fs, cell_h_max * 72 / 1.2))  # rows of 6 pt labels do not collide
    pad = 0.06  # ≥ the 0.05 in pad of the tight box: the saved file is never larger than the figure
    ylab_w = max(text_extent(fig, s, fs)[0] for s in grid.rows)
    fam_h = text_extent(fig, "Xg", fs, fontweight="bold")[1]
    fam_len = [text_extent(fig, fam, fs, fontweight="bold")[0] for fam, _, _ in grid.blocks]
    right = 0.08
    fam_w, rotated = fam_h, [True] * len(grid.blocks)
    for _ in range(3):  # a label that does not fit along its block is written across it, which widens the margin
        left = pad + (fam_w + 0.06 if grid.show_families else 0.0) + ylab_w + 0.06
        heat_w = width_in - left - right
        if heat_w < 0.3 * width_in:
            raise ConfigError(
                f"width_in={width_in} leaves too little room for {n_cols} targets beside the metric labels",
                hint="use a larger width (e.g. 7 for a two-column figure)",
            )
        cell_w = heat_w / n_cols
        cell_h = float(min(cell_h_max, np.clip(cell_w * 0.8, 0.19, MAX_CELL_H)))
        rotated = [w <= (stop - start) * cell_h - 0.02 for w, (_, start, stop) in zip(fam_len, grid.blocks, strict=True)]
        wanted = max([fam_h] + [w for w, r in zip(fam_len, rotated, strict=True) if not r])
        if wanted <= fam_w:
            break
        fam_w = wanted
    heat_h = cell_h * n_rows
    xlab = [text_extent(fig, s, fs, rotation=45) for s in grid.columns]
    xlab_h = max(h for _, h in xlab)
    # a label anchored at its column centre and rotated 45° runs down-left; keep it on the page
    overhang = max(w - (j + 0.5) * cell_w for j, (w, _) in enumerate(xlab))
    if overhang > left - pad:
        left = pad + overhang
        heat_w = width_in - left - right
        cell_w = heat_w / n_cols
    title_h = text_extent(fig, title, fs + 1.5, fontweight="bold")[1] + 0.1 if title else 0.0
    cbar_h, cbar_lab = 0.07, text_extent(fig, "Spearman ρ", fs)[1]
    note_lines = wrap_to_width(fig, note, width_in - 2 * pad, fs - 0.5) if note else []
    note_h = len(note_lines) * (fs - 0.5) * 1.3 / 72 + (0.06 if note_lines else 0.0)
    top = pad + title_h
    bottom_stack = 0.05 + xlab_h + 0.12 + cbar_h + fs * 1.3 / 72 + cbar_lab + 0.04 + note_h + pad
    height = top + heat_h + bottom_stack
    fig.set_size_inches(width_in, height)
    return _Layout(
        width=width_in, height=height, fs=fs, pad=pad, left=left, top=top, heat_w=heat_w, heat_h=heat_h,
        cell_w=cell_w, cell_h=cell_h, ylab_w=ylab_w, fam_h=fam_h, fam_w=fam_w, fam_rotated=rotated, xlab_h=xlab_h,
        cbar_h=cbar_h, note_lines=note_lines,
    )


def _draw_heat(fig: Figure, lay: _Layout, grid: _Grid, vmax: float) -> tuple[Axes, AxesImage]:
    """The coloured cells (``RdBu_r`` on ``[−vmax, vmax]``, grey where undefined), labels and white grid."""
    n_rows, n_cols = grid.shape
    ax = fig.add_axes(lay.frac(lay.left, lay.top, lay.heat_w, lay.heat_h))
    cmap = colormaps["RdBu_r"].with_extremes(bad=_GREY_NAN)
    norm = Normalize(vmin=-vmax, vmax=vmax)
    image = ax.imshow(np.ma.masked_invalid(grid.values), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(n_cols))
    ax.set_xticklabels(grid.columns, rotation=45, ha="right", rotation_mode="anchor", fontsize=lay.fs)
    ax.set_yticks(range(n_rows))
    ax.set_yticklabels(grid.rows, fontsize=lay.fs)
    ax.tick_params(length=0, pad=2)
    ax.set_xticks(np.arange(-0.5, n_cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, n_rows, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_linewidth(0.6)
    return ax, image


def _cell_text_mode(fig: Figure, lay: _Layout, grid: _Grid) -> tuple[str, float]:
    """How the cells show ρ: on ``"one"`` line with its stars, on ``"two"`` (ρ over its stars), ``"rho"`` (no room for the stars)
    or ``"none"`` (the colour alone), and the size (at most the tick size, at least 6 pt), from the widest text."""
    size = max(MIN_FONT_PT, float(min(lay.fs - 0.5, lay.cell_w * 72 / 2.4, lay.cell_h * 72 / 2.5)))
    room_w, room_h = 0.92 * lay.cell_w, 0.92 * lay.cell_h
    longest = max((len(str(s)) for s in grid.stars.ravel()), default=0)
    star = "*" * longest
    trials = [("one", f"−.88{star}"), ("two", f"−.88\n{star}")] if star else []
    for mode, text in [*trials, ("rho", "−.88")]:
        w, h = text_extent(fig, text, size, linespacing=0.9)
        if w <= room_w and h <= room_h:
            return mode, size
    return "none", size


def _annotate_cells(ax: Axes, lay: _Layout, grid: _Grid, *, vmax: float, mask_nonsignificant: bool) -> None:
    """ρ (APA style) and stars in each defined cell; the reason code in grey italics in undefined ones; text
    that would not fit its cell at 6 pt is left out (the colour still shows ρ; ``docs/guide/paper.md#heatmap``).

    With ``mask_nonsignificant``, cells without stars get a pale patch and grey text.
    """
    fig = ax.figure
    n_rows, n_cols = grid.shape
    mode, size = _cell_text_mode(fig, lay, grid)  # type: ignore[arg-type]
    labels = {c: _REASON_LABEL.get(c, c) for c in {str(r).split(";")[0] for r in grid.reasons.ravel()} if c}
    fits = {c: (lambda w, h: w <= 0.95 * lay.cell_w and h <= 0.95 * lay.cell_h)(*text_extent(fig, t, MIN_FONT_PT, style="italic"))  # type: ignore[arg-type]
            for c, t in labels.items()}  # fmt: skip
    for i in range(n_rows):
        for j in range(n_cols):
            v = grid.values[i, j]
            if not np.isfinite(v):
                code = str(grid.reasons[i, j]).split(";")[0]
                if code and fits.get(code):
                    ax.text(j, i, labels[code], ha="center", va="center", fontsize=MIN_FONT_PT, color="#555555", style="italic")
                continue
            star = str(grid.stars[i, j])
            if mask_nonsignificant and not star:
                ax.add_patch(_cell_patch(i, j, _GREY_NS))
                color = "#8c8c8c"
            else:
                color = "white" if abs(v) > 0.55 * vmax else "black"
            if mode == "none":
                continue
            text = format_rho(v) + ({"two": f"\n{star}", "one": star}.get(mode, "") if star else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=color, linespacing=0.9)


def _draw_families(ax: Axes, fig: Figure, lay: _Layout, grid: _Grid) -> None:
    """Separator lines between family blocks and a bracket with a rotated family label left of each."""
    tick_pad = 2.0 / 72  # tick_params(pad=2) in inches
    bracket_in = tick_pad + lay.ylab_w + 0.04  # left of the longest metric label
    bracket_x = -0.5 - bracket_in / lay.cell_w  # in data units
    label_x = -0.5 - (bracket_in + 0.03 + lay.fam_h / 2) / lay.cell_w
    across_x = -0.5 - (bracket_in + 0.03) / lay.cell_w  # right edge of a label written across its block
    tick = 0.03 / lay.cell_w
    for k, ((fam, start, stop), along) in enumerate(zip(grid.blocks, lay.fam_rotated, strict=True)):
        if k > 0:
            ax.axhline(start - 0.5, color="black", linewidth=0.9)
        if along:
            ax.text(label_x, (start + stop - 1) / 2, fam, rotation=90, ha="center", va="center",
                    fontsize=lay.fs, fontweight="bold", clip_on=False)
        else:  # a one- or two-row block: the whole name, across
            ax.text(across_x, (start + stop - 1) / 2, fam, ha="right", va="center",
                    fontsize=lay.fs, fontweight="bold", clip_on=False)
        y0, y1 = start - 0.5 + 0.06, stop - 0.5 - 0.06
        ax.plot([bracket_x + tick, bracket_x, bracket_x, bracket_x + tick], [y0, y0, y1, y1],
                color="black", linewidth=0.6, clip_on=False, solid_joinstyle="miter")


def _draw_colorbar(fig: Figure, lay: _Layout, image: AxesImage, *, vmax: float, value: str) -> None:
    """A horizontal colour bar centred under the target labels, five ticks from −vmax to vmax."""
    cbar_w = min(lay.heat_w, max(1.2, 0.6 * lay.heat_w))
    cbar_top = lay.top + lay.heat_h + 0.05 + lay.xlab_h + 0.12
    cax = fig.add_axes(lay.frac(lay.left + (lay.heat_w - cbar_w) / 2, cbar_top, cbar_w, lay.cbar_h))
    cbar = fig.colorbar(image, cax=cax, orientation="horizontal")
    cbar.set_ticks(np.linspace(-vmax, vmax, 5))
    cbar.set_label("Spearman ρ" if value == "rho" else value, fontsize=lay.fs, labelpad=2)
    cbar.ax.tick_params(labelsize=lay.fs - 0.5, length=2, width=0.5, pad=1)
    cbar.outline.set_linewidth(0.5)  # type: ignore[attr-defined]


def _draw_title_and_note(fig: Figure, lay: _Layout, title: str | None) -> None:
    """The bold title centred over the heat map; the wrapped note at the bottom left."""
    if title:
        fig.text(lay.left + lay.heat_w / 2, lay.height - lay.pad, title, ha="center", va="top", fontsize=lay.fs + 1.5,
                 fontweight="bold", transform=fig.dpi_scale_trans)
    if lay.note_lines:
        fig.text(lay.pad, lay.pad, "\n".join(lay.note_lines), ha="left", va="bottom", fontsize=lay.fs - 0.5,
                 color="#333333", transform=fig.dpi_scale_trans, linespacing=1.3)


@literal_text
@frame_inputs("table")
def plot_heatmap(
    table: pl.DataFrame,
    output: str | Path | None = None,
    *,
    value: str = "rho",
    groups: Mapping[str, str] | None = None,
    columns: Sequence[ColumnDescription] | None = None,
    mask_nonsignificant: bool = False,
    order: Literal["given", "cluster"] = "given",
    title: str | None = None,
    note: str | None = None,
    width_in: float = 3.5,
    dpi: int = 300,
    vmax: float | None = RHO_LIMIT,
    metrics: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
) -> Figure:
    """Heatmap of ``value`` (default ρ) with metrics as rows and targets as columns.

    Colours: ``RdBu_r`` on ``[−vmax, vmax]``, centred at 0 (``vmax=None`` uses the largest |value|,
    rounded up to 0.1). Cells show the value and the ``stars`` column; undefined cells are grey with
    their ``reason``. ``mask_nonsignificant`` fades cells without stars. Rows are grouped by family
    (``columns``: the metric columns' descriptions from the manifest, else :func:`row_descriptions`' registry
    fallback; ``groups`` maps metric → family label and overrides them) with
    separator lines and family labels on the left; ``order="cluster"`` orders rows within each family
    by average-linkage clustering of their values. The height grows with the number of metrics; fonts
    stay 5–8 pt for widths of 3.5–7 in. With ``output`` the figure is saved as PNG, SVG or PDF
    (by extension) at ``dpi``, with a tight bounding box and a 0.05 in pad. ``metrics`` (metric columns),
    ``families`` (family names or labels) and ``targets`` choose and order what is drawn
    (:func:`select_cells`); the width is at most 7 in, and a figure that would pass 9 in shrinks its cells to
    stay on one page (``docs/guide/paper.md#heatmap``).

    Args:
        table: The correlation table (``metric, target``, ``value``, ``stars``, ``reason``).
        output: The figure file (``.png``, ``.svg`` or ``.pdf``); ``None``: not saved.
        value: The column drawn.
        groups: Metric → family label, overriding ``columns``.
        columns: Descriptions of the metric columns; ``None``: the registry fallback.
        mask_nonsignificant: Fade cells without stars.
        order: ``given``, or ``cluster`` (average linkage within each family).
        title: Title above the map; ``None``: none.
        note: Note text under the map; ``None``: none.
        width_in: Figure width in inches (3.5–7).
        dpi: Resolution of a PNG.
        vmax: Colour limit; ``None``: the largest |value| rounded up to 0.1.
        metrics: The metric rows to draw, in order; ``None``: all.
        families: The families to draw (names or labels); ``None``: all.
        targets: The target columns to draw, in order; ``None``: all.

    Example:
        >>> t = pl.DataFrame({"metric": ["resp_chars", "ttr"], "target": ["tone", "tone"],
        ...                   "rho": [0.31, -0.12], "stars": ["**", ""], "reason": ["", ""]})
        >>> fig = plot_heatmap(t, "heatmap.png")  # doctest: +SKIP
    """
    out_path = _check_options(order, width_in, output)
    table, control_note = partial_rows(table)
    if control_note:
        note = control_note + (" " + note if note else "")
    _check_table(table, value)
    table = select_cells(table, columns, metrics=metrics, families=families, targets=targets)
    rows = row_descriptions(table.get_column("metric").cast(pl.String).unique(maintain_order=True).to_list(), columns)
    drawn = {d.name for d in rows if d.alias_of is None}
    table = table.filter(pl.col("metric").cast(pl.String).is_in(list(drawn)))  # an alias is drawn once, as its column
    extra = [t for t in (alias_note(rows), star_legend(table)) if t]
    if extra:
        note = " ".join([*([note] if note else []), *extra])
    groups = dict(groups) if groups is not None else family_labels(rows)
    grid = _cell_grid(table, value, mask_nonsignificant=mask_nonsignificant, groups=groups, order=order)
    vmax = _colour_limit(grid.values, vmax)

    fig = Figure(figsize=(width_in, 4.0), dpi=dpi)
    FigureCanvasAgg(fig)
    lay = _layout(fig, grid, width_in=width_in, title=title, note=note)
    ax, image = _draw_heat(fig, lay, grid, vmax)
    _annotate_cells(ax, lay, grid, vmax=vmax, mask_nonsignificant=mask_nonsignificant)
    if grid.show_families:
        _draw_families(ax, fig, lay, grid)
    n_rows, n_cols = grid.shape
    ax.set_xlim(-0.5, n_cols - 0.5)  # the clip-free bracket lines must not move the limits
    ax.set_ylim(n_rows - 0.5, -0.5)
    _draw_colorbar(fig, lay, image, vmax=vmax, value=value)
    _draw_title_and_note(fig, lay, title)

    if out_path is not None:
        save_paper_figure(fig, out_path, dpi=dpi)
    return fig


def _unknown(kind: str, names: Sequence[str], known: Sequence[str], option: str) -> ConfigError:
    import difflib

    close = [c for n in names for c in difflib.get_close_matches(n, list(known), n=2, cutoff=0.6)]
    hint = f"did you mean {', '.join(dict.fromkeys(close))}?" if close else f"{kind}: {', '.join(list(known)[:20])}"
    return ConfigError(f"{option}: {', '.join(map(repr, names))} not in the correlation table", hint=hint)


def select_cells(
    table: pl.DataFrame,
    columns: Sequence[ColumnDescription] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The rows of a correlation table a heatmap draws (``docs/guide/paper.md#heatmap``).

    ``metrics`` and ``families`` choose metric rows (a family by its name or figure label; both given: the
    union), in the order named; ``targets`` chooses and orders the columns. A name that is not in the table
    is exit 2 with the closest names.

    Args:
        table: The correlation table.
        columns: Descriptions of the metric columns (their families); ``None``: the registry fallback.
        metrics: The metric rows, in order; ``None``: all.
        families: The families (names or figure labels); ``None``: all.
        targets: The target columns, in order; ``None``: all.

    Example:
        >>> t = pl.DataFrame({"metric": ["resp_chars", "ttr", "ttr"], "target": ["a", "a", "b"], "rho": [0.1, 0.2, 0.3]})
        >>> select_cells(t, families=["diversity"], targets=["b", "a"]).rows()
        [('ttr', 'b', 0.3), ('ttr', 'a', 0.2)]
    """
    present = table.get_column("metric").cast(pl.String).unique(maintain_order=True).to_list()
    keys: list[pl.Expr] = []
    if metrics or families:
        chosen = list(dict.fromkeys(metrics or []))
        missing = [m for m in chosen if m not in present]
        if missing:
            raise _unknown("metrics", missing, present, "--metrics-cols")
        if families:
            rows = row_descriptions(present, columns)
            names = {d.family: d.family for d in rows} | {d.family_label: d.family for d in rows}
            lower = {k.lower(): v for k, v in names.items()}
            missing = [f for f in families if f.lower() not in lower]
            if missing:
                raise _unknown("families", missing, sorted(set(names)), "--families")
            wanted = [lower[f.lower()] for f in families]
            for fam in dict.fromkeys(wanted):
                chosen += [d.name for d in rows if d.family == fam and d.name not in chosen]
        order = {m: i for i, m in enumerate(chosen)}
        table = table.filter(pl.col("metric").cast(pl.String).is_in(chosen))
        keys.append(pl.col("metric").cast(pl.String).replace_strict(order, return_dtype=pl.Int64))
    if targets:
        have = table.get_column("target").cast(pl.String).unique(maintain_order=True).to_list()
        missing = [t for t in targets if t not in have]
        if missing:
            raise _unknown("targets", missing, have, "--targets")
        order = {t: i for i, t in enumerate(dict.fromkeys(targets))}
        table = table.filter(pl.col("target").cast(pl.String).is_in(list(order)))
        keys.append(pl.col("target").cast(pl.String).replace_strict(order, return_dtype=pl.Int64))
    return table.sort(keys, maintain_order=True) if keys else table


def partial_rows(table: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """The rows a heatmap draws: the partial rows when the table has any (``docs/statistics.md#partial-output``), and a note.

    A table without a ``control`` column, or with only raw rows, is returned as it is with an empty
    note. With several control sets, the first one is drawn.

    Example:
        >>> t = pl.DataFrame({"metric": ["a", "a"], "target": ["y", "y"], "rho": [0.5, 0.1], "control": ["", "resp_words"]})
        >>> rows, note = partial_rows(t)
        >>> rows["rho"].to_list(), note
        ([0.1], 'Partial Spearman ρ controlling for resp_words.')
    """
    if "control" not in table.columns:
        return table, ""
    ctrl = pl.col("control").fill_null("")
    values = [v for v in table.select(ctrl).to_series().unique(maintain_order=True).to_list() if v]
    if not values:
        return table, ""
    note = f"Partial Spearman ρ controlling for {values[0].replace(',', ', ')}."
    if len(values) > 1:
        note += f" ({len(values) - 1} other control set(s) not shown.)"
    return table.filter(ctrl == values[0]), note


@literal_text
def plot_compare_control(
    table: pl.DataFrame,
    output: str | Path | None = None,
    *,
    note: str | None = None,
    width_in: float = 7.0,
    **kwargs: object,
) -> Figure:
    """Raw and length-controlled ρ side by side: the raw block of targets, a separator, the partial block.

    ``table`` must hold raw rows (``control`` empty) and partial rows (one control set; the first is
    used when there are several). Partial columns are labelled ``"<target> | <control>"``. Other
    keyword arguments go to :func:`plot_heatmap`.

    Args:
        table: The correlation table with raw and partial rows.
        output: The figure file (``.png``, ``.svg`` or ``.pdf``); ``None``: not saved.
        note: Note text under the map; ``None``: none.
        width_in: Figure width in inches.
        **kwargs: Passed to :func:`plot_heatmap`.
    """
    if output is not None and Path(output).suffix.lower() not in _FORMATS:
        raise ConfigError(f"{output}: cannot tell the figure format", hint="name the figure .png, .svg or .pdf")
    if "control" not in table.columns:
        raise InputSchemaError(
            "correlation table has no 'control' column", hint="write it with `tutormetrics validate ... --control resp_words`"
        )
    ctrl = pl.col("control").fill_null("")
    raw = table.filter(ctrl == "")
    partial, ctrl_note = partial_rows(table)
    if raw.height == 0 or not ctrl_note:
        raise InputSchemaError(
            "--compare-control needs both raw rows (empty control) and partial rows",
            hint="validate with --control COL writes both",
        )
    control = partial.get_column("control")[0]
    targets = raw.get_column("target").unique(maintain_order=True).to_list()
    label = {t: f"{t} | {control}" for t in targets}
    both = pl.concat(
        [
            raw.drop("control"),
            partial.drop("control").with_columns(pl.col("target").replace_strict(label, default=pl.col("target"))),
        ],
        how="vertical_relaxed",
    )
    text = f"Left: raw Spearman ρ. Right: partial ρ controlling for {control.replace(',', ', ')}."
    fig = plot_heatmap(both, None, note=text + (" " + note if note else ""), width_in=width_in, **kwargs)  # type: ignore[arg-type]
    ax = fig.axes[0]
    ax.axvline(len(targets) - 0.5, color="black", linewidth=1.6)
    if output is not None:
        save_paper_figure(fig, Path(output), dpi=int(kwargs.get("dpi", 300)))  # type: ignore[call-overload]
    return fig


def _cell_patch(i: int, j: int, color: str) -> Rectangle:
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=color, edgecolor="none", zorder=1.2)


def ceiling_note(targets: pl.DataFrame, columns: list[str] | None = None, *, below: float = 0.9) -> str:
    """Note text listing targets whose prevalence ceiling on |ρ| (``sqrt(1 − Σ p_k³)``) is below ``below``.

    Args:
        targets: The targets table.
        columns: The target columns; ``None``: every numeric column.
        below: Ceilings below this are listed.

    Example:
        >>> ceiling_note(pl.DataFrame({"tone": [1.0] * 45 + [0.0] * 204}))
        'Max attainable |ρ| given target prevalence: tone .67.'
    """
    from tutormetrics.validity.correlate import prevalence_ceiling

    cols = columns if columns is not None else [c for c in targets.columns if targets.schema[c].is_numeric()]
    parts = []
    for c in cols:
        cap = prevalence_ceiling(targets.get_column(c).cast(pl.Float64).fill_null(float("nan")).to_numpy())
        if np.isfinite(cap) and cap < below:
            parts.append(f"{c} {format_rho(cap)}")
    return f"Max attainable |ρ| given target prevalence: {', '.join(parts)}." if parts else ""
