"""Options of the command layer that no library dataclass owns: ``--strict``, ``--dialogue``, the target files of
``validate`` and ``run``.

Each is a small options dataclass a command's own ``Args`` extends or nests (``docs/guide/options.md``).

Example:
    >>> Gate().strict
    False
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tutormetrics.flags import flag, metrics_cols_flag, ratings_file_flag, theta_files_flag

__all__ = ["DialogueSwitch", "Gate", "Targets"]


@dataclass(kw_only=True)
class Gate:
    """``--strict``: every command that can complete with warnings."""

    PANEL: ClassVar[str] = "Output"

    strict: bool = flag("--strict", default=False, help="Exit with code 1 when the run completed with warnings.")


@dataclass(kw_only=True)
class DialogueSwitch:
    """``--dialogue``: the input holds conversations (``score``, ``run``; ``docs/guide/dialogues.md``)."""

    PANEL: ClassVar[str] = "Dialogues"

    dialogue_input: bool = flag(
        "--dialogue", default=False,
        help="Input holds conversations (long table: conversation_id, turn, role, text; or chat JSONL with 'messages'): "
        "score every tutor turn against its context.",
    )


@dataclass(kw_only=True)
class Targets:
    """What ``validate`` and ``run`` correlate the metrics with (``docs/commands/validate.md``): the ratings, θ
    tables, the metric columns used, and how many of the strongest correlations stderr lists.

    >>> Targets().theta, Targets().top
    ([], 5)
    """

    PANEL: ClassVar[str] = "Targets"

    ratings: Path | None = ratings_file_flag()
    theta: list[Path] = theta_files_flag()
    metrics_cols: list[str] | None = metrics_cols_flag()
    top: int = flag("--top", default=5, min=0, panel="Validity", help="Strongest correlations to list on stderr.")
