"""``score --dialogue``: read a dialogue file, score TURNS in checkpointed chunks of whole conversations,
write TURNS (and CONV) atomically, plus a manifest. The command only parses options."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.dialogue.context import parse_context
from tutormetrics.dialogue.model import Roles
from tutormetrics.dialogue.readers import ReadOptions, read_conversations
from tutormetrics.dialogue.score import (
    _check_unique_ids,
    dialogue_scorer,
    empty_turns_frame,
    iter_turn_frames,
    mean_columns,
    turn_column_dtype,
)
from tutormetrics.dialogue.summary import conversation_columns, conversation_table
from tutormetrics.dialogue.turns import check_context_encoding
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.files import ScoreOptions, build_scorer
from tutormetrics.metrics.columns import manifest_path
from tutormetrics.io import infer_format, record_guard, remove_stale_temporaries, write_table, write_text_atomic

Log = Callable[[str], None]


@dataclass
class DialogueOptions:
    """The ``score --dialogue`` options (``dialogue.md`` §1); other options live in :class:`ScoreOptions`."""

    context: str = "full"
    context_encoding: str = "joined"
    conversation_col: str = "conversation_id"
    turn_col: str = "turn"
    role_col: str = "role"
    text_col: str = "text"
    transcript_col: str | None = None
    tutor_roles: list[str] | None = None
    student_roles: list[str] | None = None
    other_role: str = "keep"

    def read_options(self, score: ScoreOptions) -> ReadOptions:
        return ReadOptions(
            conversation_col=self.conversation_col,
            turn_col=self.turn_col,
            role_col=self.role_col,
            text_col=self.text_col,
            transcript_col=self.transcript_col,
            id_col=score.id_column,
            response_col=score.response_column,
            roles=Roles.of(self.tutor_roles, self.student_roles),
            other_role=self.other_role,
            keep_columns=list(score.keep_columns),
            input_format=score.input_format,
            encoding=score.encoding,
        )


@dataclass
class DialogueResult:
    turns: pl.DataFrame | None
    conversations: pl.DataFrame | None
    manifest: dict[str, Any] = field(default_factory=dict)
    n_turn_rows: int = 0
    n_conversations: int = 0


def score_dialogue_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    dialogue: DialogueOptions,
    *,
    conversations_output: Path | None = None,
    log: Log = lambda _m: None,
) -> DialogueResult:
    """Score every tutor turn of ``path`` into ``output`` (TURNS) and, if asked, ``conversations_output`` (CONV).

    TURNS and CONV are returned in memory as well (with ``output=None`` TURNS is not checkpointed).
    """
    context = parse_context(dialogue.context)
    encoding = check_context_encoding(dialogue.context_encoding)
    for target in (output, conversations_output):
        if target is not None:
            infer_format(target, options.output_format if target == output else None)
    found = read_conversations(path, dialogue.read_options(options))
    convs = found.conversations
    _check_unique_ids(convs)
    silent = [c.conversation_id for c in convs if c.n_tutor_turns == 0]
    if silent:
        shown = ", ".join(silent[:5]) + (", ..." if len(silent) > 5 else "")
        log(f"note: {len(silent)} conversation(s) have no tutor turn, so no TURNS rows (CONV has n_tutor_turns = 0): {shown}")
    n_rows = sum(c.n_tutor_turns for c in convs)
    # TURNS is keyed by exchange_id = "{conversation_id}:{turn}" whatever --id named in a transcript table
    # No text cache across chunks here: chunks hold whole conversations (their turns are encoded once within the
    # chunk), and a resumed run restarts after a verified prefix with a fresh Scorer, so a cache would batch the
    # remaining texts differently from an uninterrupted run (the byte-identical resume guarantee).
    scorer = dialogue_scorer(build_scorer(replace(options, id_column="exchange_id", cache_mb=0), n_rows))
    dtype = turn_column_dtype(convs)
    keep = list(options.keep_columns)
    caught_all: list[str] = list(found.warnings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if output is None:
            frames = list(iter_turn_frames(convs, scorer, context, keep, turn_dtype=dtype, context_encoding=encoding))
            turns = pl.concat(frames) if frames else empty_turns_frame(scorer, keep, dtype)
        else:
            with Checkpoint(output, _run_key(path, options, dialogue, scorer)) as checkpoint:
                checkpoint.open(options.resume, log)
                remove_stale_temporaries(output)
                done = _verified_prefix(checkpoint)
                scored = iter_turn_frames(
                    convs, scorer, context, keep, skip=done, turn_dtype=dtype, context_encoding=encoding
                )
                for offset, frame in enumerate(scored):
                    checkpoint.save(done + offset, frame, "exchange_id", {}, [])
                parts = checkpoint.parts(len(checkpoint.ledger))
                turns = pl.concat([pl.read_parquet(p) for p in parts]) if parts else empty_turns_frame(scorer, keep, dtype)
                _write(turns, output, options)
                checkpoint.remove()
    caught_all += [str(w.message) for w in caught]
    for message in caught_all:
        log(f"warning: {message}")
    conv = conversation_table(convs, turns, mean_columns(scorer))
    turn_columns = scorer.column_descriptions(level="turn")
    if conversations_output is not None:
        if options.write_manifest:  # CONV's own column descriptions (before the table: a CSV guard record joins it)
            conv_manifest = {"tutormetrics": __version__, "turns": str(output) if output else None,
                             "columns": [d.to_dict() for d in conversation_columns(turn_columns)]}
            write_text_atomic(manifest_path(conversations_output), json.dumps(conv_manifest, indent=2, default=str))
        _write(conv, conversations_output, options, fmt=None)
    manifest = scorer.manifest() | {
        "columns": [d.to_dict() for d in turn_columns],
        "input": str(path),
        "dialogue": asdict(dialogue) | {"form": found.form},
        "n_conversations": len(convs),
        "n_turn_rows": turns.height,
        "conversations_without_tutor_turn": len(silent),
        "options": asdict(options),
        "warnings": caught_all,
    }
    if output is not None:
        if options.write_manifest:
            target = output.with_name(output.name + ".manifest.json")
            write_text_atomic(target, json.dumps(manifest, indent=2, default=str))
            if options.csv_formula_guard and infer_format(output, options.output_format) == "csv":
                record_guard(output)
        log(f"scored {turns.height:,} tutor turns of {len(convs):,} conversations -> {output}"
            + (f"; conversations -> {conversations_output}" if conversations_output else ""))
    return DialogueResult(turns, conv, manifest, turns.height, len(convs))


def _verified_prefix(checkpoint: Checkpoint) -> int:
    """Chunks ``0..k-1`` that verified (turn chunks follow the conversations in order, so only an unbroken
    prefix is reused; any later chunk is dropped and recomputed)."""
    done = 0
    while done in checkpoint.ledger:
        done += 1
    for index in [i for i in checkpoint.ledger if i >= done]:
        checkpoint.forget(index)
    return done


def _write(frame: pl.DataFrame, path: Path, options: ScoreOptions, fmt: str | None | object = ...) -> None:
    fmt = options.output_format if fmt is ... else fmt
    write_table(frame, path, fmt, formula_guard=options.csv_formula_guard, record=options.write_manifest)  # type: ignore[arg-type]


def _run_key(path: Path, options: ScoreOptions, dialogue: DialogueOptions, scorer: Any) -> str:
    """SHA-256 over the input bytes, the options that change numbers, metric params, encoder, version."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    meta = {
        "options": options.result_key(),
        "dialogue": asdict(dialogue),
        "params": {f.name: f.get_params() for f in scorer.families},
        "encoder": scorer.encoder.config.fingerprint() if scorer.needs_encoder else None,
        "version": __version__,
    }
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return h.hexdigest()
