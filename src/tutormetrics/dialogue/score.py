"""Score conversations: TURNS (one row per tutor turn) and CONV (one row per conversation).

The engine does the metric work: each tutor turn is an exchange whose prompt is the list of its
context turns, so every distinct turn is encoded once per chunk and a context's encoder values are
pooled over its turns (``docs/guide/dialogues.md`` for that split). Chunks hold whole conversations; one of more
than ``--chunk-size`` tutor turns is cut into pieces of that many (``docs/design/dialogue.md#context-memory``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.dialogue.context import Context, parse_context
from tutormetrics.dialogue.conversation_measures import conversation_table
from tutormetrics.dialogue.model import Conversation, Roles
from tutormetrics.dialogue.readers import (
    ReadOptions,
    long_conversations,
    read_conversations,
)
from tutormetrics.dialogue.turns import (
    ID_COLUMNS,
    ConversationPiece,
    Exchanges,
    build_exchanges,
    check_context_encoding,
)
from tutormetrics.engine.chunk_run import ChunkRun
from tutormetrics.engine.scorer import Scorer
from tutormetrics.errors import ConfigError
from tutormetrics.frames import frame_inputs
from tutormetrics.metrics.dialogue_turn import DialogueTurnMetrics
from tutormetrics.metrics.registry import REGISTRY


@dataclass
class DialogueScores:
    """``turns`` (TURNS), ``conversations`` (CONV) and the warnings met on the way."""

    turns: pl.DataFrame
    conversations: pl.DataFrame
    warnings: list[str] = field(default_factory=list)


def dialogue_scorer(scorer: Scorer) -> Scorer:
    """The same scorer with the ``dialogue_turn`` family (:class:`DialogueTurnMetrics`) appended (its columns
    come last), with its encoder column when the scorer has an encoder."""
    if any(isinstance(f, DialogueTurnMetrics) for f in scorer.families):
        return scorer
    scorer.families.append(REGISTRY.get(DialogueTurnMetrics.name, encoder=scorer.needs_encoder))
    scorer.progress_unit = "tutor turns"
    return scorer


def conversation_chunks(conversations: Sequence[Conversation], size: int) -> Iterator[list[ConversationPiece]]:
    """Whole conversations, about ``size`` tutor turns per chunk; a conversation of more than ``size`` tutor turns is
    cut into pieces of ``size`` tutor turns (``docs/design/dialogue.md#context-memory``), so that no chunk holds more
    than ``size`` exchanges however long one conversation is.

    >>> cs = [Conversation.from_lists(str(i), ["tutor"] * 3, ["a"] * 3) for i in range(5)]
    >>> [len(c) for c in conversation_chunks(cs, 6)]
    [2, 2, 1]
    >>> [[(p.start, p.stop) for p in c] for c in conversation_chunks(cs[:2], 2)]
    [[(0, 2)], [(2, 3)], [(0, 2)], [(2, 3)]]
    """
    chunk: list[ConversationPiece] = []
    n = 0
    for piece in conversation_pieces(conversations, size):
        k = piece.n_tutor_turns
        if chunk and n + k > size:
            yield chunk
            chunk, n = [], 0
        chunk.append(piece)
        n += k
    if chunk:
        yield chunk


def conversation_pieces(conversations: Sequence[Conversation], size: int) -> Iterator[ConversationPiece]:
    """Each conversation whole when it has at most ``size`` tutor turns, else in pieces of ``size`` tutor turns.

    >>> c = Conversation.from_lists("c", ["tutor"] * 5, ["a"] * 5)
    >>> [(p.start, p.stop) for p in conversation_pieces([c], 2)]
    [(0, 2), (2, 4), (4, 5)]
    """
    for conv in conversations:
        k = conv.n_tutor_turns
        if k <= size:
            yield ConversationPiece(conv, 0, k)
            continue
        for start in range(0, k, size):
            yield ConversationPiece(conv, start, min(start + size, k))


def turn_rows(scorer: Scorer, turn_dtype: pl.DataType) -> Callable[[pl.DataFrame, Exchanges], pl.DataFrame]:
    """The TURNS rows of a scored chunk: the id, the conversation's id columns, the ``--keep`` columns, the scores."""

    def finish(frame: pl.DataFrame, b: Exchanges) -> pl.DataFrame:
        ids = pl.DataFrame(
            {
                "conversation_id": pl.Series(b.id_columns["conversation_id"], dtype=pl.String),
                "turn": _turn_series(b.id_columns["turn"], turn_dtype),
                "tutor_turn": pl.Series(b.id_columns["tutor_turn"], dtype=pl.Int64),
                "ctx_turns": pl.Series(b.id_columns["ctx_turns"], dtype=pl.Int64),
                **{kept_name(c, scorer): pl.Series(v, strict=False) for c, v in b.keep.items()},
            }
        )
        return pl.concat([frame.select(scorer.id_column), ids, frame.drop(scorer.id_column)], how="horizontal")

    return finish


def turn_items(
    conversations: Sequence[Conversation],
    scorer: Scorer,
    context: Context = "full",
    keep_columns: Sequence[str] = (),
    context_encoding: str = "joined",
) -> Iterator[tuple[tuple[Any, ...], Exchanges]]:
    """The chunks of whole conversations, or pieces of a longer one (:func:`conversation_chunks`, at most
    ``scorer.chunk_size`` tutor turns each) as ``(chunk, exchanges)`` items: what the scorer takes, and what
    :func:`turn_rows` builds the TURNS rows from. Each chunk's exchanges are built when it is reached, so only one
    chunk's contexts exist at a time.

    Args:
        conversations: the conversations, in order.
        scorer: the scorer (its ``chunk_size``).
        context: the context of each tutor turn (``docs/guide/dialogues.md``).
        keep_columns: the ``--keep`` and ``--turn-tag`` columns each turn carries.
        context_encoding: ``joined`` or ``turns``.
    """
    for chunk in conversation_chunks(conversations, scorer.chunk_size):
        if any(c.n_tutor_turns for c in chunk):
            built = build_exchanges(chunk, context, keep_columns)
            yield built.chunk(context_encoding), built


def score_turns(
    conversations: Sequence[Conversation],
    scorer: Scorer,
    context: Context = "full",
    keep_columns: Sequence[str] = (),
    *,
    context_encoding: str = "joined",
    turn_dtype: pl.DataType | None = None,
) -> pl.DataFrame:
    """TURNS of every tutor turn, in memory, scored in chunks of whole conversations (or pieces of a long one) through
    the engine's chunk pipeline (files are scored by :mod:`tutormetrics.dialogue.file_scoring`, with checkpoints).

    Args:
        conversations: the conversations, in order.
        scorer: the scorer (with the ``dialogue_turn`` family: :func:`dialogue_scorer`).
        context: the context of each tutor turn.
        keep_columns: the columns each turn carries into TURNS.
        context_encoding: ``joined`` or ``turns``.
        turn_dtype: the ``turn`` column's type (:func:`turn_column_dtype` when ``None``).
    """
    dtype = turn_dtype or turn_column_dtype(conversations)
    total = sum(c.n_tutor_turns for c in conversations)
    run = ChunkRun(scorer, total=total, finish=turn_rows(scorer, dtype))
    frames = [frame for _, frame in run.frames(turn_items(conversations, scorer, context, keep_columns, context_encoding))]
    return pl.concat(frames, how="vertical_relaxed") if frames else empty_turns_frame(scorer, keep_columns, dtype)


def kept_name(column: str, scorer: Scorer) -> str:
    """A ``--keep`` column's name in TURNS: ``input_<name>`` when TURNS already has that column (e.g. a
    transcript table's own ``conversation_id``).

    >>> kept_name("conversation_id", Scorer("length")), kept_name("tutor", Scorer("length"))
    ('input_conversation_id', 'tutor')
    """
    taken = {*ID_COLUMNS, *scorer.metric_columns(), *scorer.diagnostic_columns()}
    return f"input_{column}" if column in taken else column


def check_tag_columns(tags: Sequence[str], scorer: Scorer) -> None:
    """``--turn-tag`` columns named like a TURNS column (an id or structure column, a metric, a diagnostic) are exit
    2, not renamed to ``input_<name>`` as ``--keep`` columns are (``docs/design/datasets.md#turn-tag``).

    >>> check_tag_columns(["move"], Scorer("length"))
    >>> check_tag_columns(["resp_words"], Scorer("length"))
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --turn-tag group 'resp_words' is named like a TURNS column (a metric)
      hint: rename the group, e.g. (?P<tag_resp_words>...)
    """
    kinds = {**dict.fromkeys(scorer.diagnostic_columns(), "a diagnostic"), **dict.fromkeys(scorer.metric_columns(), "a metric"),
             **dict.fromkeys(ID_COLUMNS, "an id or structure column")}
    for tag in tags:
        if tag in kinds:
            raise ConfigError(f"--turn-tag group {tag!r} is named like a TURNS column ({kinds[tag]})",
                              hint=f"rename the group, e.g. (?P<tag_{tag}>...)")


def turn_column_dtype(conversations: Sequence[Conversation]) -> pl.DataType:
    """``Int64`` when every turn number is an integer, else ``String``."""
    ints = all(isinstance(t.turn, int) and not isinstance(t.turn, bool) for c in conversations for t in c.turns)
    return pl.Int64() if ints else pl.String()


def _turn_series(values: list[Any], dtype: pl.DataType) -> pl.Series:
    return pl.Series("turn", values if dtype == pl.Int64 else [str(v) for v in values], dtype=dtype)


def empty_turns_frame(scorer: Scorer, keep_columns: Sequence[str], turn_dtype: pl.DataType) -> pl.DataFrame:
    """TURNS with no rows (no tutor turn anywhere), with the full schema.

    Args:
        scorer: the scorer (its columns).
        keep_columns: the kept columns.
        turn_dtype: the ``turn`` column's type.
    """
    base = scorer.empty_frame()
    schema: dict[str, Any] = {scorer.id_column: pl.String, "conversation_id": pl.String, "turn": turn_dtype}
    schema.update({"tutor_turn": pl.Int64, "ctx_turns": pl.Int64, **{kept_name(c, scorer): pl.String for c in keep_columns}})
    ids = pl.DataFrame(schema=schema)
    return pl.concat([ids, base.drop(scorer.id_column)], how="horizontal")


def mean_columns(scorer: Scorer) -> list[str]:
    """TURNS columns CONV averages: every metric column (the dialogue ones included)."""
    return scorer.metric_columns()


@frame_inputs(data=(str, Path, list, tuple))
def score_dialogues(
    data: str | Path | pl.DataFrame | Sequence[Conversation],
    *,
    metrics: str | Sequence[Any] | None = "lexical",
    context: str | int = "full",
    context_encoding: str = "joined",
    encoder: Any = None,
    tutor_roles: Sequence[str] | None = None,
    student_roles: Sequence[str] | None = None,
    other_role: str = "keep",
    transcript_col: str | None = None,
    keep_columns: Sequence[str] = (),
    chunk_size: int = 2048,
    progress: bool | None = False,
    **columns: str,
) -> DialogueScores:
    """Score every tutor turn of some conversations and summarise each conversation.

    Args:
        data: a file (long table, chat JSONL, or an exchange table with ``transcript_col``), a long
            polars, pandas or pyarrow frame (``conversation_id, turn, role, text``), or a list of :class:`Conversation`.
        metrics: families as for :class:`~tutormetrics.engine.scorer.Scorer` (default: ``"lexical"``).
        context: ``"full"``, ``"last"`` or N (``docs/guide/dialogues.md``).
        context_encoding: how the encoder families see a context of several turns: ``"joined"``
            (default) encodes the joined text like any prompt, exactly what scoring that text without
            dialogues gives (``docs/guide/dialogues.md``); ``"turns"`` encodes each turn once and pools the
            context over its turns (``docs/guide/dialogues.md`` for the split at turn boundaries): O(T) encoder
            work per conversation instead of O(T²), but attention no longer crosses turns, so the
            encoder columns differ from ``"joined"``. Text families are the same either way.
        encoder: an ``EncoderConfig`` or ``TextEncoder`` for the encoder families.
        tutor_roles: role names that are tutor turns; ``None`` keeps the defaults.
        student_roles: role names that are student turns; ``None`` keeps the defaults.
        other_role: what to do with a turn of any other role: ``keep``, ``ignore`` or ``error`` (``--other-role``).
        transcript_col: read ``data`` as an exchange table whose column of that name holds each transcript.
        keep_columns: input columns carried into the TURNS frame (``--keep``).
        chunk_size: exchanges scored per chunk, as for :class:`~tutormetrics.engine.scorer.Scorer`.
        progress: show a progress bar, as for :class:`~tutormetrics.engine.scorer.Scorer`.
        columns: ``conversation_col``, ``turn_col``, ``role_col``, ``text_col``, ``id_col``,
            ``response_col`` to rename the input columns.

    Returns:
        :class:`DialogueScores` with the TURNS and CONV polars frames.

    Example:
        >>> c = Conversation.from_lists("c1", ["tutor", "student", "tutor"], ["Hi! What is 3^3?", "Is it 9?", "Not quite. What does the exponent 3 tell you to do?"])
        >>> out = score_dialogues([c], metrics="overlap")
        >>> out.turns["exchange_id"].to_list(), round(out.turns["jaccard_1"][1], 6), out.conversations["n_turns"][0]
        (['c1:0', 'c1:2'], 0.133333, 3)
    """
    ctx = parse_context(context)
    read_opts = ReadOptions(
        roles=Roles.of(tutor_roles, student_roles),
        other_role=other_role,
        transcript_col=transcript_col,
        keep_columns=list(keep_columns),
        **columns,
    )
    warnings: list[str] = []
    if isinstance(data, (str, Path)):
        found = read_conversations(data, read_opts)
        conversations, warnings = found.conversations, found.warnings
    elif isinstance(data, pl.DataFrame):
        from tutormetrics.dialogue.readers import _apply_other_role

        found = _apply_other_role(long_conversations(data, read_opts, source="frame"), "long", read_opts, "frame")
        conversations, warnings = found.conversations, found.warnings
    else:
        conversations = list(data)
        if not all(isinstance(c, Conversation) for c in conversations):
            raise ConfigError("data must be a path, a polars, pandas or pyarrow data frame or a list of Conversation")
    _check_unique_ids(conversations)
    scorer = dialogue_scorer(Scorer(metrics, encoder=encoder, chunk_size=chunk_size, progress=progress))
    dtype = turn_column_dtype(conversations)
    encoding = check_context_encoding(context_encoding)
    turns = score_turns(conversations, scorer, ctx, keep_columns, turn_dtype=dtype, context_encoding=encoding)
    conv = conversation_table(conversations, turns, mean_columns(scorer))
    return DialogueScores(turns, conv, warnings)


def _check_unique_ids(conversations: Sequence[Conversation]) -> None:
    seen: set[str] = set()
    for c in conversations:
        if c.conversation_id in seen:
            raise ConfigError(f"conversation id {c.conversation_id!r} is used twice", hint="ids must be unique")
        seen.add(c.conversation_id)
