"""``score --dialogue``: read a dialogue file, score TURNS in checkpointed chunks of whole conversations,
write TURNS (and CONV) atomically, plus a manifest. The command only parses options."""

from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__

from tutormetrics.dialogue.context import parse_context
from tutormetrics.dialogue.model import Roles
from tutormetrics.dialogue.readers import DialogueColumns, ReadOptions, compile_turn_tag, read_conversations, tag_columns
from tutormetrics.dialogue.speakers import SpeakerMap
from tutormetrics.dialogue.score import _check_unique_ids, dialogue_scorer, mean_columns, score_turns, turn_column_dtype
from tutormetrics.dialogue.summary import conversation_columns, conversation_table
from tutormetrics.dialogue.turns import check_context_encoding
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ScoreOptions, build_scorer
from tutormetrics.engine.run_summary import log_summary, run_key, run_manifest, write_run_manifest
from tutormetrics.engine.resolved import resolved_settings
from tutormetrics.engine.run_warnings import run_notes
from tutormetrics.io.atomic import remove_stale_temporaries, write_text_atomic
from tutormetrics.io.tables import infer_format, write_table
from tutormetrics.metrics.columns import MANIFEST_KEY, ROLES_KEY, column_roles, manifest_path
from tutormetrics.progress import Log, quiet


@dataclass
class DialogueOptions(DialogueColumns):
    """The ``score --dialogue`` options (``dialogue.md`` §1): the column names, then the context and role rules;
    other options live in :class:`ScoreOptions`."""

    context: str = "full"
    context_encoding: str = "joined"
    tutor_roles: list[str] | None = None
    student_roles: list[str] | None = None
    other_role: str = "keep"
    turn_sep: str | None = None
    speakers: list[str] | None = None
    turn_tag: str | None = None
    response_required: bool = False

    def read_options(self, score: ScoreOptions) -> ReadOptions:
        columns = {f.name: getattr(self, f.name) for f in fields(DialogueColumns)}
        return ReadOptions(
            **columns,
            id_col=score.id_column,
            id_key=score.id_key,
            response_col=score.response_column,
            roles=Roles.of(self.tutor_roles, self.student_roles),
            other_role=self.other_role,
            keep_columns=list(score.keep_columns),
            input_format=score.input_format,
            encoding=score.encoding,
            turn_sep=self.turn_sep,
            speakers=SpeakerMap.parse(self.speakers, allow_text=self.transcript_col is not None or self.history_col is not None),
            turn_tag=compile_turn_tag(self.turn_tag, score.keep_columns),
            response_required=self.response_required,
        )

    def tag_columns(self) -> list[str]:
        """The ``--turn-tag`` columns TURNS carries after the ``--keep`` columns (never metrics)."""
        return tag_columns(compile_turn_tag(self.turn_tag))


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
    log: Log = quiet,
    keep_checkpoint: bool = False,
) -> DialogueResult:
    """Score every tutor turn of ``path`` into ``output`` (TURNS) and, if asked, ``conversations_output`` (CONV).

    TURNS and CONV are returned in memory as well (with ``output=None`` TURNS is not checkpointed);
    ``keep_checkpoint`` as in :func:`tutormetrics.engine.file_scoring.score_file`.
    """
    context = parse_context(dialogue.context)
    encoding = check_context_encoding(dialogue.context_encoding)
    for target in (output, conversations_output):
        if target is not None:
            infer_format(target, options.output_format if target == output else None)
    found = read_conversations(path, dialogue.read_options(options))
    for note in found.notes:
        log(f"note: {note}")
    convs = found.conversations
    _check_unique_ids(convs)
    silent = [c.conversation_id for c in convs if c.n_tutor_turns == 0]
    if silent:
        shown = ", ".join(silent[:5]) + (", ..." if len(silent) > 5 else "")
        log(f"note: {len(silent)} conversation(s) have no tutor turn, so no TURNS rows (CONV has n_tutor_turns = 0): {shown}")
    n_rows = sum(c.n_tutor_turns for c in convs)
    # TURNS is keyed by exchange_id = "{conversation_id}:{turn}" whatever --id named in a transcript table
    # No text cache across chunks here: chunks hold whole conversations (their turns are encoded once within the
    # chunk), so every chunk is scored on its own and a resumed run reuses any verified chunk and scores the
    # others exactly as an uninterrupted run does (the byte-identical resume guarantee).
    scorer = dialogue_scorer(build_scorer(replace(options, id_columns=["exchange_id"], cache_mb=0), n_rows))
    keep = [*options.keep_columns, *dialogue.tag_columns()]
    with warnings.catch_warnings(record=True) as caught, contextlib.ExitStack() as stack:
        warnings.simplefilter("always")
        checkpoint = None
        if output is not None:
            key = run_key(path, scorer, options=options.result_key(resolved_settings(scorer)), dialogue=asdict(dialogue))
            checkpoint = stack.enter_context(Checkpoint(output, key))
            checkpoint.open(options.resume, log)
            remove_stale_temporaries(output)
        turns, run = score_turns(
            convs, scorer, context, keep, turn_dtype=turn_column_dtype(convs), context_encoding=encoding,
            caught=caught, checkpoint=checkpoint,
        )
        if output is not None and checkpoint is not None:
            _write(turns, output, options)
            if not keep_checkpoint:
                checkpoint.remove()
        all_warnings = list(found.warnings) + run.run_warnings()
    notes, nan_reasons = run_notes(scorer.stats, [f.name for f in scorer.families])
    log_summary(log, all_warnings, notes)
    conv = conversation_table(convs, turns, mean_columns(scorer))
    turn_columns = scorer.column_descriptions(level="turn")
    if conversations_output is not None:
        if options.write_manifest:  # CONV's own column descriptions (before the table: a CSV guard record joins it)
            conv_columns = conversation_columns(turn_columns)
            conv_manifest = {"tutormetrics": __version__, "turns": str(output) if output else None,
                             MANIFEST_KEY: [d.to_dict() for d in conv_columns],
                             ROLES_KEY: column_roles(conv.columns, id_col="conversation_id", descriptions=conv_columns,
                                                     kept=list(options.keep_columns))}  # fmt: skip
            write_text_atomic(manifest_path(conversations_output), json.dumps(conv_manifest, indent=2, default=str))
        _write(conv, conversations_output, options, fmt=None)
    manifest = run_manifest(
        scorer, source=path, options=options, warnings=all_warnings, nan_reasons=nan_reasons,
        dialogue=asdict(dialogue) | {"form": found.form}, n_conversations=len(convs), n_turn_rows=turns.height,
        conversations_without_tutor_turn=len(silent),
    )
    manifest[MANIFEST_KEY] = [d.to_dict() for d in turn_columns]
    manifest[ROLES_KEY] = column_roles(turns.columns, id_col="exchange_id", descriptions=turn_columns,
                                       kept=list(options.keep_columns), tags=dialogue.tag_columns())  # fmt: skip
    if output is not None:
        write_run_manifest(output, manifest, options)
        log(f"scored {turns.height:,} tutor turns of {len(convs):,} conversations -> {output}"
            + (f"; conversations -> {conversations_output}" if conversations_output else ""))
    return DialogueResult(turns, conv, manifest, turns.height, len(convs))


def _write(frame: pl.DataFrame, path: Path, options: ScoreOptions, fmt: str | None | object = ...) -> None:
    fmt = options.output_format if fmt is ... else fmt
    write_table(frame, path, fmt, formula_guard=options.csv_formula_guard, record=options.write_manifest)  # type: ignore[arg-type]
