"""TURNS: one exchange per tutor turn, and the dialogue columns (``docs/design/dialogue.md#turns``).

:func:`build_exchanges` turns conversations into the engine's input: ids, prompts as lists of context
turns (joined with "\\n" for the text families, pooled over turns for the encoder), responses, and the
previous student turn as an ``aux`` text, which the ``dialogue_turn`` family
(:class:`tutormetrics.metrics.dialogue_turn.DialogueTurnMetrics`) reads in the same pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tutormetrics.dialogue.context import Context, context_indices
from tutormetrics.dialogue.model import Conversation
from tutormetrics.errors import ConfigError
from tutormetrics.metrics.dialogue_turn import PREV_STUDENT

ID_COLUMNS = ("exchange_id", "conversation_id", "turn", "tutor_turn", "ctx_turns")


CONTEXT_ENCODINGS = ("joined", "turns")


def check_context_encoding(value: str) -> str:
    """``joined`` or ``turns`` (``ConfigError`` otherwise).

    >>> check_context_encoding("turns")
    'turns'
    """
    if value not in CONTEXT_ENCODINGS:
        raise ConfigError(f"invalid --context-encoding {value!r}", hint="use joined or turns")
    return value


@dataclass
class Exchanges:
    """Engine input for the tutor turns of some conversations, plus their id columns."""

    ids: list[str] = field(default_factory=list)
    prompts: list[list[str]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    prev_student: list[str | None] = field(default_factory=list)
    id_columns: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in ID_COLUMNS[1:]})
    keep: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def chunk(self, context_encoding: str = "joined") -> tuple[Any, ...]:
        """``(ids, prompts, responses, aux)`` for :meth:`Scorer.iter_scores`.

        ``joined``: each prompt is its context text (turns joined with "\n"), encoded like any text;
        ``turns``: each prompt is its list of turns, encoded turn by turn and pooled (O(T)).
        """
        prompts = self.prompts if context_encoding == "turns" else ["\n".join(p) for p in self.prompts]
        return self.ids, prompts, self.responses, {PREV_STUDENT: self.prev_student}


def build_exchanges(
    conversations: Sequence[Conversation], context: Context = "full", keep_columns: Sequence[str] = ()
) -> Exchanges:
    """One exchange per tutor turn: prompt = the context's texts (docs/design/dialogue.md#context), aux = the previous student turn.

    Args:
        conversations: the conversations.
        context: the prompt's context: ``"full"``, ``"last"`` or a number of earlier turns.
        keep_columns: per-turn input columns carried onto each exchange.

    >>> c = Conversation.from_lists("c1", ["tutor", "student", "tutor"], ["Hi", "Is it 9?", "Not quite."])
    >>> ex = build_exchanges([c])
    >>> ex.ids, ex.prompts, ex.prev_student, ex.id_columns["ctx_turns"]
    (['c1:0', 'c1:2'], [[], ['Hi', 'Is it 9?']], [None, 'Is it 9?'], [0, 2])
    """
    out = Exchanges(keep={c: [] for c in keep_columns})
    for conv in conversations:
        tutor_turn = 0
        last_student: str | None = None
        for i, t in enumerate(conv.turns):
            if t.kind == "tutor":
                tutor_turn += 1
                ctx = context_indices(conv.turns, i, context)
                out.ids.append(f"{conv.conversation_id}:{t.turn}")
                out.prompts.append([conv.turns[j].text for j in ctx])
                out.responses.append(t.text)
                out.prev_student.append(last_student)
                for col, value in zip(ID_COLUMNS[1:], (conv.conversation_id, t.turn, tutor_turn, len(ctx)), strict=True):
                    out.id_columns[col].append(value)
                for col in keep_columns:
                    out.keep[col].append(t.keep.get(col))
            elif t.kind == "student":
                last_student = t.text
    return out
