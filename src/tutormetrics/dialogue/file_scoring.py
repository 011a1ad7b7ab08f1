"""``score --dialogue``: read a dialogue file, score TURNS in checkpointed chunks of whole conversations,
write TURNS (and CONV) atomically, plus a manifest. The command only parses options."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import polars as pl

from tutormetrics import __version__
from tutormetrics.dialogue.context import parse_context
from tutormetrics.dialogue.conversation_measures import conversation_columns, conversation_table
from tutormetrics.dialogue.model import Roles
from tutormetrics.dialogue.readers import (
    DialogueColumns,
    ReadOptions,
    compile_turn_tag,
    read_conversations,
    tag_columns,
)
from tutormetrics.dialogue.score import (
    _check_unique_ids,
    check_tag_columns,
    dialogue_scorer,
    empty_turns_frame,
    mean_columns,
    turn_column_dtype,
    turn_items,
    turn_rows,
)
from tutormetrics.dialogue.speakers import SpeakerMap
from tutormetrics.dialogue.turns import check_context_encoding
from tutormetrics.engine.file_scoring import ScoreOptions, build_scorer
from tutormetrics.engine.runner import Scored, ScoringJob, run_job
from tutormetrics.flags import flag, list_or_none
from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.tables import infer_format, write_table
from tutormetrics.metrics.columns import MANIFEST_KEY, ROLES_KEY, column_roles, manifest_path
from tutormetrics.progress import Log, quiet

_T = TypeVar("_T")


@dataclass
class DialogueOptions(DialogueColumns):
    """The ``score --dialogue`` options (``docs/guide/dialogues.md``): the column names, then the context and role rules;
    other options live in :class:`ScoreOptions`."""

    PANEL: ClassVar[str] = "Dialogues"

    context: str = flag('--context', default='full',
         help='Prompt of a tutor turn: full (all earlier turns), last (latest non-tutor turn) or N (last N turns).')
    context_encoding: str = flag('--context-encoding', default='joined',
         help='Encoder view of a multi-turn context: joined (encode the joined text, the same numbers as scoring it without --dialogue) or turns (encode each turn once and pool over turns: O(T) instead of O(T²) per conversation; attention does not cross turns, so emb_/sync_ values differ).')
    tutor_roles: list[str] | None = flag('--tutor-role', default=None, parse=list_or_none, cli_type=list[str] | None, show_default=False,
         help='Role that counts as tutor (repeatable; replaces the defaults tutor, assistant, teacher; case-insensitive).')
    student_roles: list[str] | None = flag('--student-role', default=None, parse=list_or_none, cli_type=list[str] | None, show_default=False,
         help='Role that counts as student (repeatable; replaces the defaults student, user, learner).')
    other_role: str = flag('--other-role', default='keep',
         help='Turns of unknown roles: keep (context, warned), ignore (dropped) or error (exit 2).')
    turn_sep: str | None = flag('--turn-sep', default=None, show_default=False,
         help="Literal text between the turns of a --transcript-col cell (e.g. '|EOM|'); default: one turn per line.")
    speakers: list[str] | None = flag('--speaker', default=None, parse=list_or_none, cli_type=list[str] | None, show_default=False,
         help="LABEL=ROLE (repeatable; ROLE tutor, student, other, system or text; LABEL may be a glob such as '*'): the role of a transcript label or of a long-table/chat role value. Unknown speaker-like labels stop the run.")
    turn_tag: str | None = flag('--turn-tag', default=None, show_default=False,
         help="Regex matched at the start of every turn (e.g. '\\((?P<move>\\w+)\\)\\s*'): the match is removed and each named group becomes a TURNS column (never a metric).")
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


def recorded_read_options(manifest: Mapping[str, Any]) -> ReadOptions:
    """The reader options a TURNS manifest records (its ``options`` and ``dialogue``), so that what reads the input
    again (the report) reads it as scoring did: columns, roles, ``--speaker``, ``--turn-tag``, ``--other-role``
    (``docs/design/scoring.md#one-chat-reader``). Entries a manifest lacks take their defaults.

    >>> opts = recorded_read_options({"options": {"keep_columns": ["tutor"]},
    ...                               "dialogue": {"speakers": ["Cody=tutor"], "form": "transcript"}})
    >>> opts.kind("Cody"), opts.keep_columns
    ('tutor', ['tutor'])
    """
    score = _known(ScoreOptions, manifest.get("options"))
    dialogue = _known(DialogueOptions, manifest.get("dialogue"))
    return dialogue.read_options(score)


def _known(kind: type[_T], recorded: Any) -> _T:
    """``kind`` from a recorded ``asdict`` (entries it does not know, like the dialogue's ``form``, left out)."""
    names = {f.name for f in fields(kind)}  # type: ignore[arg-type]
    values = {k: v for k, v in recorded.items() if k in names} if isinstance(recorded, Mapping) else {}
    if isinstance(values.get("concision_bands"), list):
        values["concision_bands"] = tuple(values["concision_bands"])
    return kind(**values)


@dataclass
class DialogueResult:
    turns: pl.DataFrame | None
    conversations: pl.DataFrame | None
    manifest: dict[str, Any] = field(default_factory=dict)
    n_turn_rows: int = 0
    n_conversations: int = 0


class DialogueJob(ScoringJob):
    """The ``score --dialogue`` kind of :func:`~tutormetrics.engine.runner.run_job`: chunks of whole conversations
    (:func:`~tutormetrics.dialogue.score.turn_items`), TURNS rows (:func:`~tutormetrics.dialogue.score.turn_rows`),
    the dialogue options in the run key, and CONV written after TURNS.

    Args:
        path: the dialogue input (long table, chat JSONL, or an exchange table with a transcript column).
        options: the score options.
        dialogue: the dialogue options.
        log: where the reader's notes go.
        output: TURNS (its name is checked before any work).
        conversations_output: CONV, when wanted (likewise).
    """

    in_memory = True  # CONV is built from TURNS

    def __init__(
        self, path: Path, options: ScoreOptions, dialogue: DialogueOptions, log: Log = quiet, *,
        output: Path | None = None, conversations_output: Path | None = None,
    ) -> None:  # fmt: skip
        self.context = parse_context(dialogue.context)
        self.encoding = check_context_encoding(dialogue.context_encoding)
        for target in (output, conversations_output):  # fail before any work on a bad output name
            if target is not None:
                infer_format(target, options.output_format if target == output else None)
        self.conversations_output = conversations_output
        found = read_conversations(path, dialogue.read_options(options))
        for note in found.notes:
            log(f"note: {note}")
        self.conversations, self.form = found.conversations, found.form
        _check_unique_ids(self.conversations)
        self.silent = [c.conversation_id for c in self.conversations if c.n_tutor_turns == 0]
        if self.silent:
            shown = ", ".join(self.silent[:5]) + (", ..." if len(self.silent) > 5 else "")
            log(f"note: {len(self.silent)} conversation(s) have no tutor turn, so no TURNS rows (CONV has n_tutor_turns = 0): {shown}")
        n_rows = sum(c.n_tutor_turns for c in self.conversations)
        # TURNS is keyed by exchange_id = "{conversation_id}:{turn}" whatever --id named in a transcript table.
        # No text cache across chunks here: chunks hold whole conversations (their turns are encoded once within the
        # chunk), so every chunk is scored on its own and a resumed run reuses any verified chunk and scores the
        # others exactly as an uninterrupted run does (the byte-identical resume guarantee).
        scorer = dialogue_scorer(build_scorer(replace(options, id_columns=["exchange_id"], cache_mb=0), n_rows))
        check_tag_columns(dialogue.tag_columns(), scorer)
        super().__init__(path, scorer, n_rows, found.warnings)
        self.options, self.dialogue = options, dialogue
        self.keep = [*options.keep_columns, *dialogue.tag_columns()]
        self.turn_dtype = turn_column_dtype(self.conversations)
        self._rows = turn_rows(scorer, self.turn_dtype)
        self.conv: pl.DataFrame | None = None

    def items(self) -> Iterator[tuple[tuple[Any, ...], Any]]:
        return turn_items(self.conversations, self.scorer, self.context, self.keep, self.encoding)

    def finish(self, frame: pl.DataFrame, extra: Any) -> pl.DataFrame:
        return self._rows(frame, extra)

    def empty(self) -> pl.DataFrame:
        return empty_turns_frame(self.scorer, self.keep, self.turn_dtype)

    def key_parts(self) -> dict[str, Any]:
        return {"dialogue": asdict(self.dialogue)}

    def write_more(self, scored: Scored, output: Path | None) -> None:
        """CONV (in memory always; written to :attr:`conversations_output` with its own manifest when set)."""
        assert scored.frame is not None
        self.conv = conversation_table(self.conversations, scored.frame, mean_columns(self.scorer))
        target = self.conversations_output
        if target is None:
            return
        if self.options.write_manifest:  # CONV's own column descriptions (before the table: a CSV guard record joins it)
            conv_columns = conversation_columns(self.scorer.column_descriptions(level="turn"))
            conv_manifest = {"tutormetrics": __version__, "turns": str(output) if output else None,
                             MANIFEST_KEY: [d.to_dict() for d in conv_columns],
                             ROLES_KEY: column_roles(self.conv.columns, id_col="conversation_id", descriptions=conv_columns,
                                                     kept=list(self.options.keep_columns))}  # fmt: skip
            write_text_atomic(manifest_path(target), json.dumps(conv_manifest, indent=2, default=str))
        write_table(self.conv, target, None, formula_guard=self.options.csv_formula_guard, record=self.options.write_manifest)

    def manifest_fields(self, scored: Scored) -> dict[str, Any]:
        assert scored.frame is not None
        return {"dialogue": asdict(self.dialogue) | {"form": self.form}, "n_conversations": len(self.conversations),
                "n_turn_rows": scored.frame.height, "conversations_without_tutor_turn": len(self.silent)}  # fmt: skip

    def manifest_extra(self, scored: Scored) -> dict[str, Any]:
        assert scored.frame is not None
        described = self.scorer.column_descriptions(level="turn")
        roles = column_roles(scored.frame.columns, id_col="exchange_id", descriptions=described,
                             kept=list(self.options.keep_columns), tags=self.dialogue.tag_columns())  # fmt: skip
        return {MANIFEST_KEY: [d.to_dict() for d in described], ROLES_KEY: roles}

    def done_message(self, scored: Scored, output: Path) -> str:
        assert scored.frame is not None
        return (f"scored {scored.frame.height:,} tutor turns of {len(self.conversations):,} conversations -> {output}"
                + (f"; conversations -> {self.conversations_output}" if self.conversations_output else ""))


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

    Args:
        path: the dialogue input (long table, chat JSONL, or an exchange table with ``--transcript-col``).
        output: TURNS, or ``None`` for the frames in memory only.
        options: what to score and how (the ``score`` options).
        dialogue: the dialogue options (columns, context, roles, speakers, turn tags).
        conversations_output: CONV, when wanted.
        log: where notes, warnings and the last line go.
        keep_checkpoint: keep the verified chunks after success.
    """
    job = DialogueJob(path, options, dialogue, log, output=output, conversations_output=conversations_output)
    scored = run_job(job, output, options, log=log, keep_checkpoint=keep_checkpoint)
    assert scored.frame is not None and job.conv is not None
    return DialogueResult(scored.frame, job.conv, scored.manifest, scored.frame.height, len(job.conversations))
