"""What every figure shares: user text drawn literally (no mathtext), whatever labels a study brings.

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
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def literal_text(function: F) -> F:
    """Run ``function`` with ``text.parse_math`` off: every Text it creates shows its string as written."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
