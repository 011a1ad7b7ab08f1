"""``tutormetrics run``: the whole study on one command (thin wrapper over :mod:`tutormetrics.runs`,
``docs/commands/run.md``).

It takes every option of ``score`` and ``validate`` but those that name their own outputs (:data:`RUN_EXCLUDES`,
and ``score``'s ``--output``/``--conversations``/``--embeddings``): ``run`` writes a fixed set of files into its
folder. Its ``--id``/``--id-sep`` are ``score``'s; ``--estimate-theta`` is on.

Example:
    >>> RunArgs().validate.estimate_theta, RunArgs().output
    (True, PosixPath('tutormetrics-out'))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import typer

from tutormetrics.commands.flag_groups import DialogueSwitch, Gate, Targets
from tutormetrics.commands.registration import command
from tutormetrics.commands.score import prompt_given
from tutormetrics.commands.terminal import log, strict_gate
from tutormetrics.dialogue.file_scoring import DialogueOptions
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.errors import ConfigError
from tutormetrics.flags import argument, flag
from tutormetrics.stats.group_columns import group_columns, join_group_cols
from tutormetrics.validity.options import ValidateOptions

__all__ = ["RUN_EXCLUDES", "RunArgs", "register", "run"]

#: Fields of score's and validate's options that ``run`` leaves at their defaults: the scored table's format and
#: manifest (run names its own files and always writes the manifest).
RUN_EXCLUDES = ("output_format", "write_manifest")


def register(app: typer.Typer) -> None:
    command(app, "run", run, outputs=("output/",), exclude=RUN_EXCLUDES)


@dataclass(kw_only=True)
class RunArgs(Gate, DialogueSwitch, Targets):
    """What ``run`` is told: the input (or ``--example``), the folder, the targets, and the options of the library's
    scoring (:class:`ScoreOptions`, :class:`DialogueOptions`) and validity study (:class:`ValidateOptions`)."""

    exchanges: Path | None = argument(
        default=None, dir_okay=False, help="Exchanges table (.csv/.parquet/.jsonl); omit with --example."
    )
    output: Path = flag("--output", "-o", default=Path("tutormetrics-out"), file_okay=False, help="Output folder.")
    example: bool = flag(
        "--example", default=False,
        help="Use bundled data: the 40 C++ debugging exchanges and their ratings, 'run --example fairness' for the "
        "per-dimension fairness study, or with 'run --example dialogue' 12 tutoring conversations rated per conversation.",
    )
    group_col: str | None = flag(
        "--group-col", default=None, show_default=False, parse=join_group_cols, cli_type=list[str] | None,
        help="Also write predictive.csv: grouped K-fold predictive validity (`predict`), groups = this input column "
        "(repeat or comma-separate: their combination).",
    )
    score: ScoreOptions = field(default_factory=ScoreOptions)
    dialogue: DialogueOptions = field(default_factory=DialogueOptions)
    validate: ValidateOptions = field(default_factory=ValidateOptions)


def run(args: RunArgs) -> None:
    """Score → θ (MFRM) → agreement → Spearman table → heatmap, all into one folder.

    Example: tutormetrics run --example -o demo-out

    Dialogues (turns.csv, conversations.csv; ratings keyed by exchange_id "<conversation>:<turn>" validate the
    turns, ratings keyed by conversation_id the conversations; the turn level of those only with
    --cluster-col conversation_id, no p): tutormetrics run --example dialogue -o demo-dialogue
    """
    from tutormetrics.metrics.columns import check_named_columns
    from tutormetrics.runs import check_ratings_path, run_pipeline

    history = _history(args)
    if args.example and args.exchanges is not None and str(args.exchanges) == "fairness" and not args.exchanges.exists():
        from tutormetrics.commands.studies import (
            run_fairness_example,  # docs/design/studies.md#seed-studies: no text scoring
        )

        run_fairness_example(args.output, n_resamples=args.validate.n_resamples, seed=args.validate.seed, log=log)
        return
    check_ratings_path(args.ratings, args.example)
    exchanges, ratings, dialogue, prompts = _inputs(args)
    score_options = replace(args.score, prompt_columns=prompts or ["prompt"])
    # the cluster and group columns travel with the metrics (kept, never metrics), checked before any scoring; a
    # dialogue's turns carry them and its conversations take their one value each (runs.levels.dialogue_levels)
    named = {"--cluster-col": [args.validate.cluster_col], "--group-col": group_columns(args.group_col)}
    if dialogue:
        from tutormetrics.dialogue.turns import ID_COLUMNS

        named = {option: [c for c in cols if c not in ID_COLUMNS] for option, cols in named.items()}
    if any(c for cols in named.values() for c in cols):
        _require_input_columns(exchanges, score_options, named)
    extra = [c for cols in named.values() for c in cols if c and c not in score_options.keep_columns]
    score_options = replace(score_options, keep_columns=[*score_options.keep_columns, *dict.fromkeys(extra)])
    check_named_columns(args.metrics_cols, "--metrics-cols")  # an id or structure column is exit 2 (docs/design/datasets.md#metric-columns)
    summary = run_pipeline(
        exchanges, ratings, args.output, score_options=score_options, validate_options=args.validate, theta=args.theta,
        dialogue=args.dialogue if dialogue else None, metric_cols=args.metrics_cols, top=args.top, group_col=args.group_col,
        log=log, history=history,
    )  # fmt: skip
    log(f"done: {args.output}/ ({', '.join(Path(p).name for p in summary['files'].values())})")
    strict_gate(args.strict, summary.get("warnings", []))


def _history(args: RunArgs) -> DialogueOptions | None:
    """The dialogue options under ``--history-col`` (each row's response after its history,
    ``docs/guide/dialogues.md#one-response-after-its-history-history-col``), checked; ``None`` without it."""
    if args.dialogue.history_col is None:
        return None
    from tutormetrics.dialogue.history import check_history_options

    check_history_options(transcript_col=args.dialogue.transcript_col, prompt_given=prompt_given(args.score),
                          dialogue=args.dialogue_input, conversations=None)  # fmt: skip
    if args.score.engine != "local":
        raise ConfigError("--history-col runs on the local engine only", hint="drop --engine ray")
    return args.dialogue


def _require_input_columns(exchanges: Path, options: ScoreOptions, named: dict[str, list[str | None]]) -> None:
    """The columns ``run`` carries into the metrics for its own options (``--group-col``, ``--cluster-col``) are in
    the input: a missing one is exit 2 naming that option and the close column names, before any scoring."""
    import polars as pl

    from tutormetrics.io.tables import require_columns, scan_table

    header = pl.DataFrame(schema=dict.fromkeys(scan_table(exchanges, options.input_format, encoding=options.encoding).collect_schema().names(), pl.String))
    for option, cols in named.items():
        require_columns(header, [c for c in cols if c], source=str(exchanges), option=option)


def _inputs(args: RunArgs) -> tuple[Path, Path | None, bool, list[str]]:
    """The exchanges, the ratings, whether the input holds conversations, and the prompt columns: what was given,
    or a bundled example's (``--example``, ``--example dialogue``; ``docs/commands/run.md``)."""
    from tutormetrics.examples import EXAMPLE_NAMES, EXAMPLE_PROMPT_COLUMNS, dialogue_example_paths, example_paths

    exchanges, ratings, example = args.exchanges, args.ratings, args.example
    dialogue = args.dialogue_input or args.dialogue.transcript_col is not None
    prompts = list(args.score.prompt_columns) if prompt_given(args.score) else []
    if example and exchanges is not None and str(exchanges) in EXAMPLE_NAMES and not exchanges.exists():
        example, name, exchanges = str(exchanges) != "dialogue", str(exchanges), None  # 'run --example dialogue'
        if name == "dialogue":
            paths = dialogue_example_paths()
            exchanges, ratings, dialogue = paths["dialogues"], ratings or paths["ratings"], True
    if example:
        paths = example_paths()
        exchanges, ratings = exchanges or paths["exchanges"], ratings or paths["ratings"]
        prompts = prompts or EXAMPLE_PROMPT_COLUMNS
    if exchanges is None:
        from tutormetrics.errors import InputSchemaError

        raise InputSchemaError("run needs an exchanges table", hint="tutormetrics run EXCHANGES --ratings RATINGS -o OUTDIR")
    return exchanges, ratings, dialogue, prompts
