"""Options of ``score --dialogue`` and ``run --dialogue`` (``dialogue.md`` §1), shared so they never drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

PANEL = "Dialogues (dialogue.md)"

Dialogue = Annotated[
    bool,
    typer.Option(
        "--dialogue",
        rich_help_panel=PANEL,
        help="Input holds conversations (long table: conversation_id, turn, role, text; or chat JSONL with 'messages'): "
        "score every tutor turn against its context.",
    ),
]
Conversations = Annotated[
    Path | None,
    typer.Option("--conversations", rich_help_panel=PANEL, help="With --dialogue: also write one row per conversation (CONV) to this table.", dir_okay=False),
]
Context = Annotated[
    str, typer.Option("--context", rich_help_panel=PANEL, help="Prompt of a tutor turn: full (all earlier turns), last (latest non-tutor turn) or N (last N turns).")
]
ContextEncoding = Annotated[
    str,
    typer.Option(
        "--context-encoding",
        rich_help_panel=PANEL,
        help="Encoder view of a multi-turn context: joined (encode the joined text, the same numbers as scoring it "
        "without --dialogue) or turns (encode each turn once and pool over turns: O(T) instead of O(T²) per "
        "conversation; attention does not cross turns, so emb_/sync_ values differ).",
    ),
]
ConversationCol = Annotated[str, typer.Option("--conversation-col", rich_help_panel=PANEL, help="Conversation id column of a long dialogue table.")]
TurnCol = Annotated[str, typer.Option("--turn-col", rich_help_panel=PANEL, help="Turn number column of a long dialogue table (turns are sorted by it).")]
RoleCol = Annotated[str, typer.Option("--role-col", rich_help_panel=PANEL, help="Speaker role column of a long dialogue table.")]
TextCol = Annotated[str, typer.Option("--text-col", rich_help_panel=PANEL, help="Turn text column of a long dialogue table.")]
TutorRole = Annotated[
    list[str] | None,
    typer.Option("--tutor-role", rich_help_panel=PANEL, help="Role that counts as tutor (repeatable; replaces the defaults tutor, assistant, teacher; case-insensitive).", show_default=False),
]
StudentRole = Annotated[
    list[str] | None,
    typer.Option("--student-role", rich_help_panel=PANEL, help="Role that counts as student (repeatable; replaces the defaults student, user, learner).", show_default=False),
]
TranscriptCol = Annotated[
    str | None,
    typer.Option(
        "--transcript-col",
        rich_help_panel=PANEL,
        help="Exchange-table column holding the history as 'Tutor: ...'/'Student: ...' lines; each row is one conversation "
        "ending with its response (implies --dialogue).",
        show_default=False,
    ),
]
OtherRole = Annotated[
    str,
    typer.Option("--other-role", rich_help_panel=PANEL, help="Turns of unknown roles: keep (context, warned), ignore (dropped) or error (exit 2)."),
]


def dialogue_options(
    *,
    context: str,
    context_encoding: str,
    conversation_col: str,
    turn_col: str,
    role_col: str,
    text_col: str,
    transcript_col: str | None,
    tutor_role: list[str] | None,
    student_role: list[str] | None,
    other_role: str,
) -> object:
    """The :class:`tutormetrics.dialogue.file_scoring.DialogueOptions` of the parsed options (one place for
    ``score`` and ``run``)."""
    from tutormetrics.dialogue.file_scoring import DialogueOptions

    return DialogueOptions(
        context=context,
        context_encoding=context_encoding,
        conversation_col=conversation_col,
        turn_col=turn_col,
        role_col=role_col,
        text_col=text_col,
        transcript_col=transcript_col,
        tutor_roles=list(tutor_role) if tutor_role else None,
        student_roles=list(student_role) if student_role else None,
        other_role=other_role,
    )
