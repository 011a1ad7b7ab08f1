"""Multi-turn tutoring conversations: read three input forms into one model, score every tutor turn
against its context (TURNS) and summarise each conversation (CONV). Design: ``docs/design/dialogue.md#dialogue``.

>>> from tutormetrics.dialogue import Conversation, score_dialogues
>>> c = Conversation.from_lists("c1", ["student", "tutor"], ["Is 1 prime?", "No. Why not?"])
>>> score_dialogues([c], metrics="length").turns["resp_questions"].to_list()
[1.0]
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutormetrics.dialogue.model import Conversation, Roles, Turn
from tutormetrics.dialogue.readers import ReadOptions, read_conversations
from tutormetrics.dialogue.score import DialogueScores, score_dialogues

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "Conversation",
    "DialogueScores",
    "ReadOptions",
    "Roles",
    "Turn",
    "read_conversations",
    "read_dialogues",
    "score_dialogues",
]


def read_dialogues(
    path: str | Path, *, tutor_roles: Iterable[str] | None = None, student_roles: Iterable[str] | None = None, **options: Any
) -> pl.DataFrame:
    """Read a dialogue file (any of the three forms) into a long polars frame:
    ``conversation_id, turn, role, kind, text`` (``system`` dropped; ``kind`` is tutor/student/other).

    ``options`` are the fields of :class:`ReadOptions` (``transcript_col=...``, ``other_role=...``);
    ``tutor_roles``/``student_roles`` replace the default role lists.

    Args:
        path (str | Path): the dialogue file, in any of the three forms.
        tutor_roles (Iterable[str] | None): role names that are tutor turns; ``None`` keeps the defaults.
        student_roles (Iterable[str] | None): role names that are student turns; ``None`` keeps the defaults.
        **options (Any): further :class:`ReadOptions` fields.
    """
    import polars as pl

    found = read_conversations(path, ReadOptions(roles=Roles.of(tutor_roles, student_roles), **options))
    rows = [
        (c.conversation_id, str(t.turn), t.role, t.kind, t.text) for c in found.conversations for t in c.turns
    ]
    frame = pl.DataFrame(rows, schema=["conversation_id", "turn", "role", "kind", "text"], orient="row")
    from tutormetrics.dialogue.score import turn_column_dtype

    if turn_column_dtype(found.conversations) == pl.Int64:
        frame = frame.with_columns(pl.col("turn").cast(pl.Int64))
    return frame
