"""``tutormetrics run``: the whole study on one command (thin wrapper over :mod:`tutormetrics.runs`).

It takes every option of ``score`` and ``validate`` (:data:`tutormetrics.commands.options.RUN`) but those
that name their own outputs: ``run`` writes a fixed set of files into its folder.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tutormetrics.commands import options as opt


def register(app: typer.Typer) -> None:
    opt.command(app, "run", run, opt.COMMANDS["run"], outputs=("output/",))


def run(
    exchanges: Annotated[
        Optional[Path], typer.Argument(help="Exchanges table (.csv/.parquet/.jsonl); omit with --example.", dir_okay=False)
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.", file_okay=False)] = Path("tutormetrics-out"),
    example: Annotated[
        bool,
        typer.Option(
            "--example",
            help="Use bundled data: the 40 C++ debugging exchanges and their ratings, 'run --example fairness' for the "
            "per-dimension fairness study, or with 'run --example dialogue' "
            "12 tutoring conversations rated per conversation.",
        ),
    ] = False,
    group_col: Annotated[
        Optional[str],
        typer.Option("--group-col", help="Also write predictive.csv: grouped K-fold predictive validity (`predict`), groups = this input column.", show_default=False),
    ] = None,
    **kwargs: Any,
) -> None:
    """Score → θ (MFRM) → agreement → Spearman table → heatmap, all into one folder.

    Example: tutormetrics run --example -o demo-out

    Dialogues (turns.csv, conversations.csv; ratings keyed by exchange_id "<conversation>:<turn>" validate the
    turns, ratings keyed by conversation_id the conversations; the turn level of those only with
    --cluster-col conversation_id, no p): tutormetrics run --example dialogue -o demo-dialogue
    """
    from tutormetrics.dialogue.file_scoring import DialogueOptions
    from tutormetrics.engine.file_scoring import ScoreOptions
    from tutormetrics.examples import EXAMPLE_NAMES, EXAMPLE_PROMPT_COLUMNS, dialogue_example_paths, example_paths
    from tutormetrics.runs import check_ratings_path, run_pipeline
    from tutormetrics.validity.study import ValidateOptions

    ratings, dialogue = kwargs["ratings"], kwargs["dialogue"] or kwargs["transcript_col"] is not None
    history = None
    if kwargs["history_col"] is not None:  # each row's response after its history (datasets.md §3.4)
        from tutormetrics.dialogue.history import check_history_options
        from tutormetrics.errors import ConfigError

        check_history_options(transcript_col=kwargs["transcript_col"], prompt_given=kwargs["prompt"] is not None,
                              dialogue=kwargs["dialogue"], conversations=None)  # fmt: skip
        if kwargs["engine"] != "local":
            raise ConfigError("--history-col runs on the local engine only", hint="drop --engine ray")
        history = opt.from_kwargs(DialogueOptions, kwargs)
    if example and exchanges is not None and str(exchanges) == "fairness" and not exchanges.exists():
        from tutormetrics.commands.studies import run_fairness_example  # studies.md §9: no text scoring

        run_fairness_example(output, n_resamples=kwargs["n_resamples"], seed=kwargs["seed"], log=opt.log)
        return
    check_ratings_path(ratings, example)
    prompt_columns = list(kwargs["prompt"] or [])
    if example and exchanges is not None and str(exchanges) in EXAMPLE_NAMES and not exchanges.exists():
        example, name, exchanges = str(exchanges) != "dialogue", str(exchanges), None  # 'run --example dialogue'
        if name == "dialogue":
            paths = dialogue_example_paths()
            exchanges, ratings, dialogue = paths["dialogues"], ratings or paths["ratings"], True
    if example:
        paths = example_paths()
        exchanges = exchanges or paths["exchanges"]
        ratings = ratings or paths["ratings"]
        prompt_columns = prompt_columns or EXAMPLE_PROMPT_COLUMNS
    if exchanges is None:
        from tutormetrics.errors import InputSchemaError

        raise InputSchemaError("run needs an exchanges table", hint="tutormetrics run EXCHANGES --ratings RATINGS -o OUTDIR")
    score_options = opt.from_kwargs(ScoreOptions, kwargs, prompt_columns=prompt_columns or ["prompt"])
    if not dialogue:  # the cluster and group columns travel with the metrics (kept, never metrics)
        extra = [c for c in (kwargs["cluster_col"], group_col) if c and c not in score_options.keep_columns]
        score_options = replace(score_options, keep_columns=[*score_options.keep_columns, *dict.fromkeys(extra)])
    summary = run_pipeline(
        exchanges, ratings, output, score_options=score_options, validate_options=opt.from_kwargs(ValidateOptions, kwargs),
        theta=kwargs["theta"] or [], dialogue=opt.from_kwargs(DialogueOptions, kwargs) if dialogue else None,
        metric_cols=_checked_metric_cols(kwargs["metrics_cols"]), top=kwargs["top"], group_col=group_col, log=opt.log,
        history=history,
    )  # fmt: skip
    opt.log(f"done: {output}/ ({', '.join(Path(p).name for p in summary['files'].values())})")
    opt.strict_gate(kwargs["strict"], summary.get("warnings", []))


def _checked_metric_cols(value: str | None) -> list[str] | None:
    """``--metrics-cols``: an id, structure or diagnostic column named there is exit 2 (``datasets.md`` §4)."""
    from tutormetrics.metrics.columns import check_named_columns

    names = opt.split_list(value)
    check_named_columns(names, "--metrics-cols")
    return names
