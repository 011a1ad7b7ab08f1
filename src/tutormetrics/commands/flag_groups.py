"""Options of the command layer that no library dataclass owns: ``--strict``, ``--output`` of a one-table command.

Each is a small options dataclass a command's own ``Args`` extends or nests (``docs/guide/options.md``).

Example:
    >>> Gate().strict
    False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tutormetrics.flags import flag

__all__ = ["Gate"]


@dataclass(kw_only=True)
class Gate:
    """``--strict``: every command that can complete with warnings."""

    PANEL: ClassVar[str] = "Output"

    strict: bool = flag("--strict", default=False, help="Exit with code 1 when the run completed with warnings.")
