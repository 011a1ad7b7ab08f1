"""The dialogue family: a tutor turn against the conversation (not the context), ``docs/design/dialogue.md#turns``.

It reads the previous student turn as an ``aux`` text (``ExchangeBatch.aux_idx["prev_student"]``, ``-1`` =
none), which ``score --dialogue`` passes with every tutor turn; on plain exchanges (no aux) its
``prev_student_*`` columns are NaN. Registered as ``dialogue_turn``, left out of ``--metrics all``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, ClassVar

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.overlap import jaccard
from tutormetrics.text import split_sentences, tokenize

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: The aux text this family reads: the most recent earlier student turn.
PREV_STUDENT = "prev_student"
_QUESTION_END = re.compile(r"[?？][?？!！]*[\"'”’)\]」』）】]*$")


def count_questions(text: str | None) -> int:
    """``resp_questions``: sentences of ``S(r)`` that end (after ``rstrip``) in ``?``/``？`` (then ``?？!！``
    and closing quotes or brackets only).

    >>> count_questions("Yes, 27! Can you also compute 2^5?"), count_questions('He asked "why?" Then?!')
    (1, 2)
    """
    return sum(bool(_QUESTION_END.search(s.rstrip())) for s in split_sentences(text or ""))


class DialogueTurnMetrics(Metric):
    """Columns of a tutor turn against the conversation: the previous student turn and the questions asked.

    - ``prev_student_jaccard_1``: ``jaccard_1`` of the turn with the most recent earlier student turn;
      NaN without one or when neither has tokens.
    - ``emb_prev_student_cos`` (with an encoder): ``emb_mean_cos`` of the same pair; NaN as above or
      for an empty side.
    - ``resp_questions``: question sentences of the turn (:func:`count_questions`; 0 for an empty turn).

    Example:
        >>> DialogueTurnMetrics(encoder=True).columns()
        ['prev_student_jaccard_1', 'emb_prev_student_cos', 'resp_questions']
    """

    name: ClassVar[str] = "dialogue_turn"
    description: ClassVar[str] = "overlap and embedding cosine with the previous student turn; questions asked"
    higher_is_better: ClassVar[bool | None] = None
    include_in_all: ClassVar[bool] = False  # needs the previous student turn, which only dialogues have
    aux_texts: ClassVar[tuple[str, ...]] = (PREV_STUDENT,)
    nan_hints: ClassVar[dict[str, str]] = dict.fromkeys(
        ("prev_student_jaccard_1", "emb_prev_student_cos"), "; it needs an earlier student turn of the conversation (score --dialogue)"
    )

    def __init__(self, encoder: bool = False) -> None:
        self.encoder = encoder
        self.requires = frozenset({"encoder"}) if encoder else frozenset()  # type: ignore[misc]

    def columns(self, n_layers: int | None = None) -> list[str]:
        cols = ["prev_student_jaccard_1", "emb_prev_student_cos", "resp_questions"]
        return cols if self.encoder else [c for c in cols if not c.startswith("emb_")]

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        ranges = {"prev_student_jaccard_1": (0.0, 1.0), "emb_prev_student_cos": (-1.0, 1.0), "resp_questions": (0.0, math.inf)}
        return {c: ranges[c] for c in self.columns(n_layers)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        from tutormetrics.metrics.functional.embedding import cosine_rows

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
