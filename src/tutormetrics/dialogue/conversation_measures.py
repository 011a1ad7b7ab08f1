"""CONV: one row per conversation (``docs/design/dialogue.md#conv``), computed without a model."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from tutormetrics.dialogue.model import Conversation
from tutormetrics.metrics.columns import ColumnDescription, conversation_mean, conversation_means
from tutormetrics.metrics.dialogue_turn import count_questions
from tutormetrics.metrics.functional._util import ratio
from tutormetrics.text import tokenize

CONV_COLUMNS = (
    "conversation_id",
    "n_turns",
    "n_tutor_turns",
    "n_student_turns",
    "tutor_words",
    "student_words",
    "talk_ratio",
    "tutor_question_rate",
    "tutor_self_jaccard",
)
DIALOGUE_TURN_COLUMNS = ("prev_student_jaccard_1", "emb_prev_student_cos", "resp_questions")


def self_jaccard(tutor_tokens: Sequence[Sequence[str]]) -> float:
    """``tutor_self_jaccard``: mean over k ≥ 2 of ``max_{j<k} jaccard_1(t_k, t_j)`` (NaN terms skipped).

    >>> round(self_jaccard([["hi", "what", "is"], ["what", "is", "it"], ["yes"]]), 6)
    0.25
    """
    sets = [set(t) for t in tutor_tokens]  # jaccard_1 on unigram sets built once per turn, not once per pair
    terms = []
    for k in range(1, len(sets)):
        b = sets[k]
        values = [ratio(inter, len(a) + len(b) - inter) for a in sets[:k] for inter in (len(a & b),)]
        values = [v for v in values if not math.isnan(v)]
        if values:
            terms.append(max(values))
    return float(np.mean(terms)) if terms else math.nan


def conversation_row(conv: Conversation) -> dict[str, object]:
    """The measures of docs/design/dialogue.md#conv for one conversation (without the ``mean_<col>`` columns).

    >>> c = Conversation.from_lists("c", ["tutor", "student", "tutor"], ["What is 2+2?", "4", "Yes! Why?"])
    >>> r = conversation_row(c); r["talk_ratio"], r["tutor_question_rate"]
    (6.0, 1.0)
    """
    tutor = [tokenize(t.text) for t in conv.turns if t.kind == "tutor"]
    student = [tokenize(t.text) for t in conv.turns if t.kind == "student"]
    tutor_words = sum(map(len, tutor))
    student_words = sum(map(len, student))
    questions = [count_questions(t.text) >= 1 for t in conv.turns if t.kind == "tutor"]
    return {
        "conversation_id": conv.conversation_id,
        "n_turns": len(conv.turns),
        "n_tutor_turns": len(tutor),
        "n_student_turns": len(student),
        "tutor_words": tutor_words,
        "student_words": student_words,
        "talk_ratio": tutor_words / student_words if student_words else math.nan,
        "tutor_question_rate": float(np.mean(questions)) if questions else math.nan,
        "tutor_self_jaccard": self_jaccard(tutor),
    }


def conversation_table(
    conversations: Sequence[Conversation], turns: pl.DataFrame, mean_columns: Sequence[str]
) -> pl.DataFrame:
    """CONV in conversation order: docs/design/dialogue.md#conv measures, then ``mean_<col>`` (NaN-skipping) of the TURNS columns.

    Args:
        conversations: the conversations, in output order.
        turns: the TURNS table (with ``conversation_id``).
        mean_columns: TURNS columns averaged per conversation as ``mean_<col>``.
    """
    base = pl.DataFrame(
        [conversation_row(c) for c in conversations],
        schema={
            "conversation_id": pl.String,
            **{c: pl.Int64 for c in CONV_COLUMNS[1:6]},
            **{c: pl.Float64 for c in CONV_COLUMNS[6:]},
        },
        orient="row",
    )
    if not mean_columns:
        return base
    means = (
        turns.select("conversation_id", *mean_columns)
        .group_by("conversation_id")
        .agg(pl.col(c).cast(pl.Float64).fill_nan(None).mean().alias(conversation_mean(c)) for c in mean_columns)
    )
    out = base.join(means, on="conversation_id", how="left", maintain_order="left")
    return out.with_columns(pl.col(conversation_mean(c)).fill_null(math.nan) for c in mean_columns)


#: Family of the docs/design/dialogue.md#conv conversation measures (``talk_ratio``, ...) in column descriptions.
CONVERSATION_FAMILY = "conversation"


def conversation_columns(turn_columns: Sequence[ColumnDescription]) -> list[ColumnDescription]:
    """Descriptions of CONV's metric columns: the docs/design/dialogue.md#conv measures (family ``conversation``), then ``mean_<col>``
    of each TURNS metric column (its family, direction and parameters), all at the conversation level.

    >>> [d.name for d in conversation_columns([ColumnDescription("ttr", "lexical_diversity", "diversity")])][-2:]
    ['tutor_self_jaccard', 'mean_ttr']
    """
    own = [ColumnDescription(c, CONVERSATION_FAMILY, CONVERSATION_FAMILY, level="conversation") for c in CONV_COLUMNS[1:]]
    return own + conversation_means(turn_columns)
