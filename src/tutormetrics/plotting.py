"""What every figure shares: user text drawn literally (no mathtext), whatever labels a study brings, and the
paper rules of ``docs/guide/paper.md#figures``: the format from the extension (``.png``, ``.pdf``, ``.svg``),
``--dpi`` 50–1200 for PNG, at most 7 in wide, fonts of at least 6 pt, saved with a tight bounding box and a
0.05 in pad, so no label is clipped and the border is background.

Criterion, tutor and metric names come from users' files; in matplotlib a ``$`` starts mathtext, so a criterion
called ``$\\foo$`` would crash the heatmap and a ``$5 tip`` would lose its dollar signs. Every plotting function
runs under :func:`literal_text`.

Example:
    >>> import io
    >>> from matplotlib.figure import Figure
    >>> @literal_text
    ... def draw():
    ...     fig = Figure()
    ...     fig.text(0.5, 0.5, r"$\\foo$ and $5")
    ...     fig.savefig(io.BytesIO(), format="png")  # would raise ValueError (unknown symbol) with mathtext on
    ...     return fig
    >>> draw().texts[0].get_text()
    '$\\\\foo$ and $5'
"""

from __future__ import annotations

import functools
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tutormetrics.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "DPI_RANGE", "FIGURE_FORMATS", "MAX_WIDTH_IN", "MIN_FONT_PT", "PAD_IN", "check_dpi", "check_figure_path", "literal_text",
    "save_paper_figure", "text_extent", "wrap_to_width",
]  # fmt: skip

#: The figure formats, by extension.
FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
#: Widest figure (a two-column page's text width), smallest font, the pad of the tight bounding box (inches, points).
MAX_WIDTH_IN = 7.0
MIN_FONT_PT = 6.0
PAD_IN = 0.05
#: ``--dpi`` bounds and default (PNG only).
DPI_RANGE = (50, 1200)
DEFAULT_DPI = 150


def check_figure_path(path: str | os.PathLike[str], option: str = "") -> Path:
    """``path`` when its extension is ``.png``, ``.pdf`` or ``.svg``; exit 2 otherwise.

    Example:
        >>> check_figure_path("fig3.PDF").name
        'fig3.PDF'
    """
    out = Path(path)
    if out.suffix.lower() not in FIGURE_FORMATS:
        raise ConfigError(f"{out}: cannot tell the figure format{' of ' + option if option else ''} from {out.suffix or '(no extension)'!r}",
                          hint="name the figure .png, .pdf or .svg")  # fmt: skip
    return out


def check_dpi(dpi: int) -> int:
    """``--dpi`` within 50–1200; exit 2 otherwise.

    Example:
        >>> check_dpi(300)
        300
    """
    lo, hi = DPI_RANGE
    if not lo <= int(dpi) <= hi:
        raise ConfigError(f"--dpi {dpi} is out of range", hint=f"use {lo} to {hi} (default {DEFAULT_DPI})")
    return int(dpi)


def save_paper_figure(fig: Any, path: str | os.PathLike[str], *, dpi: int = DEFAULT_DPI) -> Path:
    """Save ``fig`` by its extension (atomically, white background) with ``bbox_inches="tight"`` and a 0.05 in pad.

    The figure's artists must lie inside its canvas, so the tight box is never wider than the figure
    (at most :data:`MAX_WIDTH_IN`); a figure drawn wider is an error of the code that drew it.

    Args:
        fig: the matplotlib figure.
        path: the output file; its extension picks the format.
        dpi: resolution of raster formats, in dots per inch.
    """
    from tutormetrics.io.atomic import atomic_output

    out = check_figure_path(path)
    check_dpi(dpi)
    width = float(fig.get_size_inches()[0])
    if width > MAX_WIDTH_IN + 1e-9:
        raise ValueError(f"a paper figure is at most {MAX_WIDTH_IN:g} in wide, this one {width:.2f} in")
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    if box.width + 2 * PAD_IN > MAX_WIDTH_IN:
        raise ValueError(f"a paper figure is at most {MAX_WIDTH_IN:g} in wide; its labels reach {box.width + 2 * PAD_IN:.2f} in")
    with atomic_output(out) as tmp:
        fig.savefig(tmp, dpi=dpi, format=FIGURE_FORMATS[out.suffix.lower()], facecolor="white", bbox_inches="tight", pad_inches=PAD_IN)
    return out


def literal_text(function: F) -> F:
    """Run ``function`` with ``text.parse_math`` off: every Text it creates shows its string as written."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def text_extent(fig: Any, text: str, size: float, **kw: object) -> tuple[float, float]:
    """Width and height in inches of ``text`` rendered at ``size`` points on ``fig``.

    Args:
        fig: the matplotlib figure.
        text: the text; empty gives ``(0, 0)``.
        size: font size in points.
        **kw: more ``Figure.text`` settings (e.g. ``weight``).
    """
    if not text:
        return 0.0, 0.0
    artist = fig.text(0, 0, text, fontsize=size, **kw)
    box = artist.get_window_extent(renderer=fig.canvas.get_renderer())
    artist.remove()
    return box.width / fig.dpi, box.height / fig.dpi


def wrap_to_width(fig: Any, text: str, width_in: float, size: float) -> list[str]:
    """``text`` wrapped at word boundaries so that every line, as rendered at ``size`` points, fits ``width_in``.

    Args:
        fig: the matplotlib figure the text is measured on.
        text: the text.
        width_in: the width every line must fit, in inches.
        size: font size in points.
    """
    width = max(20, int(width_in * 72 / (0.5 * size)))  # a first guess: half an em per character
    while True:
        lines = textwrap.wrap(text, width=width, break_on_hyphens=False)
        if width <= 20 or all(text_extent(fig, line, size)[0] <= width_in for line in lines):
            return lines
        width -= 4
