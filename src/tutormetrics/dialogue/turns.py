"""TURNS: one exchange per tutor turn, and the dialogue columns (``docs/design/dialogue.md#turns``).

:func:`build_exchanges` turns conversations, or :class:`ConversationPiece` runs of their tutor turns, into the
engine's input: ids, prompts as lists of context turns (joined with "\\n" for the text families, pooled over turns
for the encoder), responses, and the previous student turn as an ``aux`` text, which the ``dialogue_turn`` family
(:class:`tutormetrics.metrics.dialogue_turn.DialogueTurnMetrics`) reads in the same pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tutormetrics.dialogue.context import Context, context_indices
from tutormetrics.dialogue.model import Conversation
from tutormetrics.engine.prompt_parts import JoinedParts
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


@dataclass(frozen=True)
class ConversationPiece:
    """The tutor turns ``start`` to ``stop - 1`` (0-based among the conversation's tutor turns; ``stop=None``: to the
    end) of a conversation: what one chunk scores of a conversation longer than the chunk
    (``docs/design/dialogue.md#context-memory``). Their contexts still reach back into the whole conversation.

    >>> c = Conversation.from_lists("c", ["tutor", "student", "tutor", "tutor"], list("abcd"))
    >>> ConversationPiece(c, 1).n_tutor_turns, ConversationPiece(c, 0, 2).n_tutor_turns
    (2, 2)
    """

    conversation: Conversation
    start: int = 0
    stop: int | None = None

    @property
    def n_tutor_turns(self) -> int:
        n = self.conversation.n_tutor_turns
        return max(0, min(n, n if self.stop is None else self.stop) - self.start)


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

        ``joined``: each prompt is its context text (turns joined with "\\n", handed over as
        :class:`~tutormetrics.engine.prompt_parts.JoinedParts`), encoded like any text;
        ``turns``: each prompt is its list of turns, encoded turn by turn and pooled (O(T)).
        """
        prompts = self.prompts if context_encoding == "turns" else [JoinedParts(p) for p in self.prompts]
        return self.ids, prompts, self.responses, {PREV_STUDENT: self.prev_student}


def build_exchanges(
    conversations: Sequence[Conversation | ConversationPiece], context: Context = "full", keep_columns: Sequence[str] = ()
) -> Exchanges:
    """One exchange per tutor turn: prompt = the context's texts (docs/design/dialogue.md#context), aux = the previous student turn.

    Args:
        conversations: the conversations, or pieces of them (only the piece's tutor turns become exchanges).
        context: the prompt's context: ``"full"``, ``"last"`` or a number of earlier turns.
        keep_columns: per-turn input columns carried onto each exchange.

    >>> c = Conversation.from_lists("c1", ["tutor", "student", "tutor"], ["Hi", "Is it 9?", "Not quite."])
    >>> ex = build_exchanges([c])
    >>> ex.ids, ex.prompts, ex.prev_student, ex.id_columns["ctx_turns"]
    (['c1:0', 'c1:2'], [[], ['Hi', 'Is it 9?']], [None, 'Is it 9?'], [0, 2])
    >>> build_exchanges([ConversationPiece(c, 1)]).ids
    ['c1:2']
    """
    out = Exchanges(keep={c: [] for c in keep_columns})
    for item in conversations:
        piece = item if isinstance(item, ConversationPiece) else ConversationPiece(item)
        conv, stop = piece.conversation, piece.stop
        tutor_turn = 0
        last_student: str | None = None
        for i, t in enumerate(conv.turns):
            if t.kind == "tutor":
                tutor_turn += 1
                if stop is not None and tutor_turn > stop:
                    break
                if tutor_turn <= piece.start:
                    continue
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
