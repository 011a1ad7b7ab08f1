"""``tutormetrics score``: a thin command over :mod:`tutormetrics.engine.file_scoring`
(``docs/commands/score.md``).

Example:
    >>> ScoreArgs(input=Path("x.csv")).score.metrics, ScoreArgs(input=Path("x.csv")).output
    ('all', '-')
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import typer

from tutormetrics.commands.flag_groups import DialogueSwitch, Gate
from tutormetrics.commands.registration import command
from tutormetrics.commands.terminal import log, strict_gate
from tutormetrics.dialogue.file_scoring import DialogueOptions
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.errors import ConfigError
from tutormetrics.flags import argument, flag

__all__ = ["ScoreArgs", "check_score_form", "prompt_given", "register", "score"]


def register(app: typer.Typer) -> None:
    command(app, "score", score, outputs=("output", "conversations", "embeddings"))


@dataclass(kw_only=True)
class ScoreArgs(Gate, DialogueSwitch):
    """What ``score`` is told: the input and its outputs, then the library's :class:`ScoreOptions` and
    :class:`DialogueOptions`."""

    input: Path = argument(help="Exchanges table: .csv, .parquet or .jsonl.", dir_okay=False)
    output: str = flag("--output", "-o", default="-", help="Output table (.csv, .parquet, .jsonl); '-' writes CSV to stdout.")
    conversations: Path | None = flag(
        "--conversations", default=None, dir_okay=False, panel="Dialogues",
        help="With --dialogue: also write one row per conversation (CONV) to this table.",
    )
    embeddings: Path | None = flag(
        "--embeddings", default=None, dir_okay=False, show_default=False,
        help="Also write the encoder's pooled vectors (response, prompt, last student turn under --history-col) to this "
        "Parquet file with its manifest, for predict --features.",
    )
    embedding_layers: str = flag(
        "--embedding-layers", default="last",
        help="Hidden states the --embeddings file keeps: last (the sentence-transformers embedding) or all.",
    )
    score: ScoreOptions = field(default_factory=ScoreOptions)
    dialogue: DialogueOptions = field(default_factory=DialogueOptions)


def score(args: ScoreArgs) -> None:
    """Score a table of exchanges (one row per prompt/response pair) with reference-free metrics.

    Example: tutormetrics score exchanges.csv -o metrics.csv --prompt query --prompt code --metrics lexical

    Dialogues: tutormetrics score turns.csv --dialogue -o turns_scored.csv --conversations conv.csv --context full

    A response after its history: tutormetrics score exchanges.csv --history-col prompt -o h.csv

    Composite ids: tutormetrics score uptake.csv --id obs_id --id exchange_idx --prompt student_text ...

    On Ray: tutormetrics score exchanges.parquet -o metrics.parquet --engine ray --num-actors 8 --gpus-per-actor 1
    """
    from tutormetrics.engine.embedding_file import EmbeddingRequest, embeddings_manifest_path
    from tutormetrics.io.paths import check_outputs
    from tutormetrics.metrics.columns import manifest_path

    options, turns, conversations = args.score, args.dialogue, args.conversations
    out = None if args.output == "-" else Path(args.output)
    emb = EmbeddingRequest(args.embeddings, args.embedding_layers) if args.embeddings is not None else None
    check_outputs([args.input], [out, out and manifest_path(out), conversations, conversations and manifest_path(conversations),
                                 args.embeddings, args.embeddings and embeddings_manifest_path(args.embeddings)])  # fmt: skip
    check_score_form(args)
    if turns.history_col is not None:  # each row's response after its history (docs/guide/dialogues.md)
        from tutormetrics.dialogue.history import score_history_file

        result = score_history_file(args.input, out, options, turns, log=log, embeddings=emb)
        frame = result.frame
    elif args.dialogue_input or turns.transcript_col is not None:
        from tutormetrics.dialogue.file_scoring import score_dialogue_file

        result = score_dialogue_file(args.input, out, options, turns, conversations_output=conversations, log=log)
        frame = result.turns
    elif options.engine == "ray":
        from tutormetrics.engine.ray_engine import score_file_ray

        result = score_file_ray(args.input, out, options, log=log)
        frame = result.frame
    else:
        from tutormetrics.engine.file_scoring import score_file

        result = score_file(args.input, out, options, log=log, embeddings=emb)
        frame = result.frame
    _to_stdout(frame if out is None else None, options.csv_formula_guard)
    strict_gate(args.strict, result.manifest.get("warnings", []))


def check_score_form(args: ScoreArgs) -> None:
    """The input form (exchanges, ``--dialogue``/``--transcript-col``, ``--history-col``) against the engine and the
    side files: a combination that cannot run is exit 2 before any work (``docs/commands/score.md``)."""
    engine, turns = args.score.engine, args.dialogue
    dialogue = args.dialogue_input or turns.transcript_col is not None
    if args.embeddings is not None and (dialogue or engine != "local"):
        raise ConfigError("--embeddings works with plain and --history-col scoring on the local engine",
                          hint="drop --dialogue/--transcript-col and --engine ray, or drop --embeddings")  # fmt: skip
    if turns.history_col is not None:
        from tutormetrics.dialogue.history import check_history_options

        check_history_options(transcript_col=turns.transcript_col, prompt_given=prompt_given(args.score),
                              dialogue=args.dialogue_input, conversations=args.conversations)  # fmt: skip
        if engine != "local":
            raise ConfigError("--history-col runs on the local engine only", hint="drop --engine ray")
        return
    if dialogue and engine != "local":
        raise ConfigError("--dialogue runs on the local engine only", hint="drop --engine ray")
    if dialogue:
        return
    if args.conversations is not None:
        raise ConfigError("--conversations needs --dialogue (or --transcript-col)", hint="add --dialogue")
    if engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {engine!r}", hint="use --engine local or --engine ray")


def prompt_given(options: ScoreOptions) -> bool:
    """Whether ``--prompt`` names a column other than the default ``prompt`` (``--prompt prompt`` is the default).

    >>> prompt_given(ScoreOptions()), prompt_given(ScoreOptions(prompt_columns=["query"]))
    (False, True)
    """
    return options.prompt_columns != ["prompt"]


def _to_stdout(frame, csv_formula_guard: bool) -> None:  # noqa: ANN001 - a polars DataFrame or None
    """Write a result frame as CSV to stdout (``-o -``)."""
    if frame is not None:
        if csv_formula_guard:
            from tutormetrics.io.formula_guard import guard_formulas

            frame = guard_formulas(frame)
        frame.write_csv(sys.stdout)
