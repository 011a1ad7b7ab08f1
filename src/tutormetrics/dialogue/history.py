"""``score FILE --history-col H`` (``docs/guide/dialogues.md#one-response-after-its-history-history-col``): each row's ``--response`` scored as the next tutor turn
after the turns of its history ``H``, keeping the row's id: the "rate the next tutor move" unit of MRBench, CIMA and
Bridge.

A row is read exactly as ``--transcript-col H`` reads it (the same transcript rules, ``--turn-sep``, ``--speaker``,
``--turn-tag``, roles, unknown labels), but only its **final** tutor turn, the response, is scored: one exchange
per row, whose prompt is the context of ``--context`` (texts joined with ``"\\n"``, no labels) and whose previous
student turn feeds ``prev_student_jaccard_1``/``emb_prev_student_cos``. So the row equals the last TURNS row of
``--transcript-col H`` on the same row, except for ``exchange_id``, ``conversation_id``, ``turn`` and ``tutor_turn``.

Output columns: the id (named as in a plain ``score``; ``exchange_id`` for a composite id), the composite id's
parts and the ``--keep`` columns, the ``--turn-tag`` columns, ``ctx_turns``, the metric columns, the dialogue
columns, the diagnostics; one row per input row, in input order.

Example:
    >>> from tutormetrics.dialogue.model import Conversation
    >>> c = Conversation.from_lists("e1", ["tutor", "student", "tutor"], ["What is 3 x 4?", "12", "Right. And 12 + 3?"])
    >>> ex = final_exchanges([c])
    >>> ex.ids, ex.prompts, ex.prev_student, ex.id_columns["ctx_turns"]
    (['e1'], [['What is 3 x 4?', '12']], ['12'], [2])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.dialogue.context import Context, context_indices, parse_context
from tutormetrics.dialogue.model import Conversation
from tutormetrics.dialogue.readers import (
    ReadOptions,
    _apply_other_role,
    transcript_conversations,
)
from tutormetrics.dialogue.score import dialogue_scorer
from tutormetrics.dialogue.turns import Exchanges, check_context_encoding
from tutormetrics.engine.embedding_file import EmbeddingOutput, EmbeddingRequest
from tutormetrics.engine.file_scoring import ScoreOptions, ScoreResult, build_scorer, kept_columns
from tutormetrics.engine.runner import Scored, ScoringJob, run_job
from tutormetrics.engine.scorer import Scorer
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.ids import input_key
from tutormetrics.io.tables import infer_format, read_table, require_columns, require_distinct
from tutormetrics.metrics.columns import MANIFEST_KEY, ROLES_KEY, column_roles
from tutormetrics.progress import Log, quiet

__all__ = ["check_history_options", "final_exchanges", "history_conversations", "score_history_file"]


def check_history_options(*, transcript_col: str | None, prompt_given: bool, dialogue: bool, conversations: Any) -> None:
    """``--history-col`` is its own input form: with ``--transcript-col``, ``--prompt``, ``--dialogue`` or
    ``--conversations`` it is exit 2 (``docs/guide/dialogues.md#one-response-after-its-history-history-col``).

    Args:
        transcript_col: ``--transcript-col``.
        prompt_given: whether ``--prompt`` was given.
        dialogue: ``--dialogue``.
        conversations: ``--conversations``.
    """
    clashes = [flag for flag, on in (("--transcript-col", transcript_col is not None), ("--prompt", prompt_given),
                                     ("--dialogue", dialogue), ("--conversations", conversations is not None)) if on]  # fmt: skip
    if clashes:
        raise ConfigError(
            f"--history-col cannot be combined with {', '.join(clashes)}",
            hint="--history-col scores each row's response after its history (the context is the prompt); "
            "--transcript-col scores every tutor turn of the history",
        )


def history_conversations(frame: pl.DataFrame, opts: ReadOptions, *, source: str = "input") -> tuple[list[Conversation], list[str]]:
    """Each row as the conversation ``--transcript-col`` reads (its history's turns, then the response as the final
    tutor turn), with the unknown-role rule applied; and the warnings.

    Args:
        frame: the exchange table.
        opts: the reader options (``history_col``, ``response_col``, roles, speakers, tags).
        source: the input's name in messages.
    """
    assert opts.history_col is not None
    require_distinct({"--history-col": opts.history_col, "--response": opts.response_col}, command=source,
                     hint="the history and the response are two different columns")  # fmt: skip
    require_columns(frame, [opts.history_col], source=source, option="--history-col")
    require_columns(frame, [opts.response_col], source=source, option="--response")
    as_transcript = replace(opts, transcript_col=opts.history_col, history_col=None, response_required=True)
    convs = transcript_conversations(frame, as_transcript, source=source)
    found = _apply_other_role(convs, "history", as_transcript, source)
    return found.conversations, found.warnings


def final_exchanges(conversations: Sequence[Conversation], context: Context = "full", keep_columns: Sequence[str] = ()) -> Exchanges:
    """One exchange per conversation: its final turn (the response) after the context of ``context``, the most
    recent earlier student turn as ``prev_student``; the id is the conversation's (the row's).

    Args:
        conversations: one conversation per row, its final turn the response.
        context: the context of the response.
        keep_columns: columns each exchange carries.
    """
    out = Exchanges(keep={c: [] for c in keep_columns})
    for conv in conversations:
        i = len(conv.turns) - 1
        final = conv.turns[i]
        ctx = context_indices(conv.turns, i, context)
        prev = next((t.text for t in reversed(conv.turns[:i]) if t.kind == "student"), None)
        out.ids.append(conv.conversation_id)
        out.prompts.append([conv.turns[j].text for j in ctx])
        out.responses.append(final.text)
        out.prev_student.append(prev)
        tutor_turns = sum(t.kind == "tutor" for t in conv.turns)
        for col, value in (("conversation_id", conv.conversation_id), ("turn", final.turn), ("tutor_turn", tutor_turns),
                           ("ctx_turns", len(ctx))):  # fmt: skip
            out.id_columns[col].append(value)
        for col in keep_columns:
            out.keep[col].append(final.keep.get(col))
    return out


def _chunks(exchanges: Exchanges, size: int) -> Iterator[Exchanges]:
    for start in range(0, len(exchanges), size):
        end = start + size
        yield Exchanges(
            ids=exchanges.ids[start:end], prompts=exchanges.prompts[start:end], responses=exchanges.responses[start:end],
            prev_student=exchanges.prev_student[start:end],
            id_columns={c: v[start:end] for c, v in exchanges.id_columns.items()},
            keep={c: v[start:end] for c, v in exchanges.keep.items()},
        )  # fmt: skip


def history_rows(scorer: Scorer) -> Callable[[pl.DataFrame, Exchanges], pl.DataFrame]:
    """The output rows of a scored chunk: the id, the kept and tag columns, ``ctx_turns``, then the scores."""

    def finish(frame: pl.DataFrame, b: Exchanges) -> pl.DataFrame:
        extra = pl.DataFrame({**{c: pl.Series(v, strict=False) for c, v in b.keep.items()},
                              "ctx_turns": pl.Series(b.id_columns["ctx_turns"], dtype=pl.Int64)})  # fmt: skip
        return pl.concat([frame.select(scorer.id_column), extra, frame.drop(scorer.id_column)], how="horizontal")

    return finish


class HistoryJob(ScoringJob):
    """The ``score --history-col`` kind of :func:`~tutormetrics.engine.runner.run_job`: one exchange per row (its
    final tutor turn after its history), in chunks of ``chunk_size`` rows, each row's id, kept and tag columns and
    ``ctx_turns`` before the scores; ``form="history"`` and the dialogue options in the run key.

    Args:
        path: the exchange table with the history column.
        options: the score options.
        dialogue: the dialogue options (a :class:`~tutormetrics.dialogue.file_scoring.DialogueOptions` with
            ``history_col``).
        log: where the reader's notes go.
        output: the output (its name is checked before any work).
        embeddings: also write the pooled vectors of the response, the context and the last student turn
            (:mod:`tutormetrics.engine.embedding_file`).
    """

    in_memory = True

    def __init__(self, path: Path, options: ScoreOptions, dialogue: Any, log: Log = quiet, output: Path | None = None,
                 embeddings: EmbeddingRequest | None = None) -> None:  # fmt: skip
        self.context = parse_context(dialogue.context)
        self.encoding = check_context_encoding(dialogue.context_encoding)
        if output is not None:
            infer_format(output, options.output_format)
        read = dialogue.read_options(options)  # option errors (--speaker, --turn-tag) before the input is read
        frame = read_table(path, options.input_format, encoding=options.encoding, string_columns=True)
        frame = input_key(frame, options.id_key, str(path))
        if options.dedupe and options.id_column in frame.columns:
            first = frame.get_column(options.id_column).is_first_distinct()
            if not first.all():
                log(f"note: --dedupe dropped {int((~first).sum())} rows whose id appeared earlier")
                frame = frame.filter(first)
        self.kept = kept_columns(options)
        read = replace(read, id_col=options.id_column, keep_columns=self.kept)
        convs, found_warnings = history_conversations(frame, read, source=str(path))
        self.generated_ids = options.id_column not in frame.columns
        if self.generated_ids:
            log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of history and response)")
        self.tags = dialogue.tag_columns()
        self.exchanges = final_exchanges(convs, self.context, [*self.kept, *self.tags])
        scorer = dialogue_scorer(build_scorer(replace(options, cache_mb=0), len(self.exchanges)))
        clash = sorted({*self.kept, *self.tags} & {"ctx_turns", *scorer.columns()})
        if clash:
            raise InputSchemaError(f"{path}: the kept column {clash[0]!r} is named like an output column",
                                   hint="rename it in the input (or keep another column)")
        scorer.progress_unit = "responses"
        super().__init__(path, scorer, len(self.exchanges), found_warnings)
        self.options, self.dialogue = options, dialogue
        self._rows = history_rows(scorer)
        self.embeddings = None if embeddings is None else EmbeddingOutput(embeddings, scorer, options.id_column)

    def items(self) -> Iterator[tuple[tuple[Any, ...], Exchanges]]:
        return ((chunk.chunk(self.encoding), chunk) for chunk in _chunks(self.exchanges, self.scorer.chunk_size))

    def finish(self, frame: pl.DataFrame, extra: Exchanges) -> pl.DataFrame:
        return self._rows(frame, extra)

    def key_parts(self) -> dict[str, Any]:
        return {"dialogue": asdict(self.dialogue), "form": "history"}

    def write_more(self, scored: Scored, output: Path | None) -> None:
        """The embeddings side file, when asked for (the reused chunks are encoded again: this kind has no text
        cache)."""
        if self.embeddings is not None:
            self.embeddings.write((chunk for chunk, _ in self.items()), output)

    def manifest_fields(self, scored: Scored) -> dict[str, Any]:
        assert scored.frame is not None
        return {"dialogue": asdict(self.dialogue) | {"form": "history"}, "n_rows": scored.frame.height,
                "generated_ids": self.generated_ids}  # fmt: skip

    def manifest_extra(self, scored: Scored) -> dict[str, Any]:
        assert scored.frame is not None
        described = self.scorer.column_descriptions(level="turn")
        parts = self.options.id_key.id_parts
        roles = column_roles(scored.frame.columns, id_col=self.options.id_column, descriptions=described, id_parts=parts,
                             kept=[c for c in self.kept if c not in parts], tags=self.tags)  # fmt: skip
        return {MANIFEST_KEY: [d.to_dict() for d in described], ROLES_KEY: roles}

    def done_message(self, scored: Scored, output: Path) -> str:
        assert scored.frame is not None
        return f"scored {scored.frame.height:,} responses after their histories -> {output}"


def score_history_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    dialogue: Any,
    *,
    log: Log = quiet,
    keep_frame: bool = False,
    keep_checkpoint: bool = False,
    embeddings: EmbeddingRequest | None = None,
) -> ScoreResult:
    """Score each row's response after its history into ``output`` (atomically, checkpointed like ``score``) plus its
    manifest; the frame is returned with ``output=None`` or ``keep_frame``.

    Args:
        path: the exchange table with the history column.
        output: the output, or ``None`` for the frame in memory only.
        options: what to score and how (the ``score`` options).
        dialogue: a :class:`~tutormetrics.dialogue.file_scoring.DialogueOptions` with ``history_col``.
        log: where notes, warnings and the last line go.
        keep_frame: return the frame although it was written.
        keep_checkpoint: keep the verified chunks after success (as :func:`~tutormetrics.engine.file_scoring.score_file`).
        embeddings: also write the pooled vectors of the encoder pass there (:mod:`tutormetrics.engine.embedding_file`).
    """
    job = HistoryJob(path, options, dialogue, log, output, embeddings)
    scored = run_job(job, output, options, log=log, keep_frame=keep_frame, keep_checkpoint=keep_checkpoint)
    assert scored.frame is not None
    keep = output is None or keep_frame
    return ScoreResult(scored.frame if keep else None, scored.manifest, output, scored.frame.height, scored.n_reused,
                       job.scorer.column_families())  # fmt: skip
