"""TURNS: one exchange per tutor turn, and the dialogue columns (``dialogue.md`` §4).

:func:`build_exchanges` turns conversations into the engine's input: ids, prompts as lists of context
turns (joined with "\\n" for the text families, pooled over turns for the encoder), responses, and the
previous student turn as an ``aux`` text. :class:`DialogueTurnMetrics` is the family that adds
``prev_student_jaccard_1``, ``emb_prev_student_cos`` and ``resp_questions`` from the same pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tutormetrics.dialogue.context import Context, context_indices
from tutormetrics.dialogue.model import Conversation
from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.embedding import cosine_rows
from tutormetrics.metrics.functional.overlap import jaccard
from tutormetrics.text import split_sentences, tokenize

PREV_STUDENT = "prev_student"
ID_COLUMNS = ("exchange_id", "conversation_id", "turn", "tutor_turn", "ctx_turns")
_QUESTION_END = re.compile(r"[?？][?？!！]*[\"'”’)\]」』）】]*$")


CONTEXT_ENCODINGS = ("joined", "turns")


def check_context_encoding(value: str) -> str:
    """``joined`` or ``turns`` (``ConfigError`` otherwise).

    >>> check_context_encoding("turns")
    'turns'
    """
    if value not in CONTEXT_ENCODINGS:
        raise ConfigError(f"invalid --context-encoding {value!r}", hint="use joined or turns")
    return value


def count_questions(text: str | None) -> int:
    """``resp_questions``: sentences of ``S(r)`` that end (after ``rstrip``) in ``?``/``？`` (then ``?？!！``
    and closing quotes or brackets only).

    >>> count_questions("Yes, 27! Can you also compute 2^5?"), count_questions('He asked "why?" Then?!')
    (1, 2)
    """
    return sum(bool(_QUESTION_END.search(s.rstrip())) for s in split_sentences(text or ""))


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
    """One exchange per tutor turn: prompt = the context's texts (§2), aux = the previous student turn.

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


class DialogueTurnMetrics(Metric):
    """Columns of a tutor turn against the conversation (not the context): the previous student turn
    and the questions asked.

    - ``prev_student_jaccard_1``: ``jaccard_1`` of the turn with the most recent earlier student turn;
      NaN without one or when neither has tokens.
    - ``emb_prev_student_cos`` (with an encoder): ``emb_mean_cos`` of the same pair; NaN as above or
      for an empty side.
    - ``resp_questions``: question sentences of the turn (:func:`count_questions`).

    Reads the previous student turn from ``ExchangeBatch.aux_idx["prev_student"]`` (``-1`` = none).

    Example:
        >>> DialogueTurnMetrics(encoder=True).columns()
        ['prev_student_jaccard_1', 'emb_prev_student_cos', 'resp_questions']
    """

    name: ClassVar[str] = "dialogue_turn"
    description: ClassVar[str] = "overlap and embedding cosine with the previous student turn; questions asked"
    higher_is_better: ClassVar[bool | None] = None

    def __init__(self, encoder: bool = False) -> None:
        self.encoder = encoder
        self.requires = frozenset({"encoder"}) if encoder else frozenset()  # type: ignore[misc]

    def columns(self, n_layers: int | None = None) -> list[str]:
        cols = ["prev_student_jaccard_1", "emb_prev_student_cos", "resp_questions"]
        return cols if self.encoder else [c for c in cols if not c.startswith("emb_")]

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        ranges = {"prev_student_jaccard_1": (0.0, 1.0), "emb_prev_student_cos": (-1.0, 1.0), "resp_questions": (0.0, np.inf)}
        return {c: ranges[c] for c in self.columns(n_layers)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        n = len(batch)
        prev = np.asarray(batch.aux_idx.get(PREV_STUDENT, np.full(n, -1)), dtype=np.int64)
        ri = np.asarray(batch.response_idx, dtype=np.int64)
        tokens: dict[int, list[str]] = {}

        def toks(i: int) -> list[str]:
            if i not in tokens:
                tokens[i] = art.tokens[i] if art.tokens is not None else tokenize(art.texts[i])
            return tokens[i]

        jac = np.array([np.nan if p < 0 else jaccard(toks(p), toks(r)) for p, r in zip(prev, ri, strict=True)])
        questions = np.array([count_questions(art.texts[i]) for i in ri], dtype=np.float64)
        out = {"prev_student_jaccard_1": jac, "resp_questions": questions}
        if self.encoder:
            cos = np.full(n, np.nan)
            has = prev >= 0
            if has.any() and art.encoded is not None:
                last = art.encoded.pools[:, art.encoded.n_layers]
                cos[has] = cosine_rows(last[prev[has]], last[ri[has]])
            out["emb_prev_student_cos"] = cos
        return out
