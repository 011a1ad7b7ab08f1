"""``tutormetrics run``: the whole study on one command (thin wrapper over :mod:`tutormetrics.pipeline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import dialogue_options as dopt
from tutormetrics.commands import options as opt


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    exchanges: Annotated[
        Optional[Path], typer.Argument(help="Exchanges table (.csv/.parquet/.jsonl); omit with --example.", dir_okay=False)
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.", file_okay=False)] = Path("tutormetrics-out"),
    ratings: Annotated[
        Optional[Path], typer.Option("--ratings", help="Ratings: long (id, rater, criterion, score) or wide.", dir_okay=False)
    ] = None,
    theta: Annotated[
        Optional[Path], typer.Option("--theta", help="θ table (id, theta[, theta_sd]); estimated from long ratings when omitted.")
    ] = None,
    example: Annotated[
        bool,
        typer.Option(
            "--example",
            help="Use bundled data: the 40 C++ debugging exchanges and their ratings, or with 'run --example dialogue' "
            "12 tutoring conversations rated per conversation.",
        ),
    ] = False,
    id: opt.IdColumn = "exchange_id",
    prompt: opt.PromptColumns = None,
    response: opt.ResponseColumn = "response",
    metrics: opt.MetricsSelection = "all",
    model_name_or_path: opt.ModelNameOrPath = None,
    device: opt.Device = "auto",
    dtype: opt.DType = "auto",
    batch_size: opt.BatchSize = 32,
    long_text: opt.LongText = "window",
    syllables: opt.Syllables = "auto",
    chunk_size: opt.ChunkSize = 2048,
    progress: opt.Progress = None,
    aggregate: Annotated[str, typer.Option("--aggregate", help="Rater aggregation: mean, per_rater, min or max.")] = "mean",
    adjust: Annotated[str, typer.Option("--adjust", help="Multiplicity over the whole matrix: bh, holm, by or none.")] = "bh",
    ci: Annotated[str, typer.Option("--ci", help="Confidence interval: bca, percentile, fisher or none.")] = "bca",
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=2, help="Bootstrap resamples.")] = 9999,
    seed: Annotated[int, typer.Option("--seed", help="Seed for bootstrap and permutation draws.")] = 0,
    stars_on: Annotated[str, typer.Option("--stars-on", help="Column the stars refer to: p_adj or p.")] = "p_adj",
    estimate_theta: Annotated[
        bool, typer.Option("--estimate-theta/--no-estimate-theta", help="Fit an MFRM for θ when --theta is not given.")
    ] = True,
    dialogue: dopt.Dialogue = False,
    context: dopt.Context = "full",
    context_encoding: dopt.ContextEncoding = "joined",
    conversation_col: dopt.ConversationCol = "conversation_id",
    turn_col: dopt.TurnCol = "turn",
    role_col: dopt.RoleCol = "role",
    text_col: dopt.TextCol = "text",
    tutor_role: dopt.TutorRole = None,
    student_role: dopt.StudentRole = None,
    transcript_col: dopt.TranscriptCol = None,
    other_role: dopt.OtherRole = "keep",
) -> None:
    """Score → θ (MFRM) → agreement → Spearman table → heatmap, all into one folder.

    Example: tutormetrics run --example -o demo-out

    Dialogues (turns.csv, conversations.csv; ratings keyed by exchange_id "<conversation>:<turn>" or by
    conversation_id): tutormetrics run --example dialogue -o demo-dialogue
    """
    from tutormetrics.examples import EXAMPLE_PROMPT_COLUMNS, example_paths
    from tutormetrics.pipeline import ValidateOptions, check_ratings_path, run_pipeline
    from tutormetrics.engine.files import ScoreOptions

    from tutormetrics.examples import EXAMPLE_NAMES, dialogue_example_paths

    check_ratings_path(ratings, example)
    prompt_columns = list(prompt or [])
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
    score_options = ScoreOptions(
        id_column=id,
        prompt_columns=prompt_columns or ["prompt"],
        response_column=response,
        metrics=metrics,
        model_name_or_path=model_name_or_path,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        long_text=long_text,
        syllables=syllables,
        chunk_size=chunk_size,
        progress=progress,
    )
    validate_options = ValidateOptions(
        aggregate=aggregate, adjust=adjust, ci=ci, n_resamples=n_resamples, seed=seed, stars_on=stars_on,
        estimate_theta=estimate_theta,
    )
    dialogue_options = None
    if dialogue or transcript_col is not None:
        from tutormetrics.dialogue.files import DialogueOptions

        dialogue_options = DialogueOptions(
            context=context,
            context_encoding=context_encoding,
            conversation_col=conversation_col,
            turn_col=turn_col,
            role_col=role_col,
            text_col=text_col,
            transcript_col=transcript_col,
            tutor_roles=list(tutor_role) if tutor_role else None,
            student_roles=list(student_role) if student_role else None,
            other_role=other_role,
        )
    summary = run_pipeline(
        exchanges, ratings, output, score_options=score_options, validate_options=validate_options, theta=theta,
        dialogue=dialogue_options, log=opt.log,
    )  # fmt: skip
    opt.log(f"done: {output}/ ({', '.join(Path(p).name for p in summary['files'].values())})")
