"""``tutormetrics run``: the whole study on one command (thin wrapper over :mod:`tutormetrics.pipeline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import dialogue_options as dopt
from tutormetrics.commands import options as opt
from tutormetrics.commands.validity import ClusterCol, MinClusters
from tutormetrics.pipeline import ValidateOptions
from tutormetrics.psychometrics.ratings import parse_levels

_DEFAULTS = ValidateOptions()


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
    lang: opt.Lang = "auto",
    segmenter: opt.Segmenter = "char",
    chars_per_sentence: opt.CharsPerSentence = 100.0,
    concision_bands: opt.ConcisionBands = "3,6",
    chunk_size: opt.ChunkSize = 2048,
    progress: opt.Progress = None,
    metric_param: opt.MetricParams = None,
    rater_col: opt.RaterColumn = _DEFAULTS.rater_col,
    criterion_col: opt.CriterionColumn = _DEFAULTS.criterion_col,
    score_col: opt.ScoreColumn = _DEFAULTS.score_col,
    aggregate: opt.Aggregate = _DEFAULTS.aggregate,
    targets_from: opt.TargetsFrom = None,
    adjust: opt.Adjust = _DEFAULTS.adjust,
    ci: opt.CI = _DEFAULTS.ci,
    n_resamples: opt.NResamples = _DEFAULTS.n_resamples,
    confidence_level: opt.ConfidenceLevel = _DEFAULTS.confidence_level,
    seed: opt.Seed = _DEFAULTS.seed,
    permutation: opt.Permutation = _DEFAULTS.permutation,
    n_permutations: opt.NPermutations = _DEFAULTS.n_permutations,
    stars_on: opt.StarsOn = _DEFAULTS.stars_on,
    n_min: opt.NMin = _DEFAULTS.n_min,
    id_type: opt.IdType = _DEFAULTS.id_type,
    levels: opt.Levels = None,
    drop_out_of_scale: opt.DropOutOfScale = False,
    estimate_theta: Annotated[
        bool, typer.Option("--estimate-theta/--no-estimate-theta", help="Fit an MFRM for θ when --theta is not given.")
    ] = _DEFAULTS.estimate_theta,
    control: opt.Control = None,
    cluster_col: ClusterCol = None,
    min_clusters: MinClusters = _DEFAULTS.min_clusters,
    group_col: Annotated[
        Optional[str],
        typer.Option("--group-col", help="Also write predictive.csv: grouped K-fold predictive validity (`predict`), groups = this input column.", show_default=False),
    ] = None,
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
    from tutormetrics.pipeline import check_ratings_path, run_pipeline
    from tutormetrics.engine.file_scoring import ScoreOptions

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
        lang=lang,
        segmenter=segmenter,
        chars_per_sentence=chars_per_sentence,
        concision_bands=opt.parse_bands(concision_bands),
        chunk_size=chunk_size,
        progress=progress,
        metric_params=opt.parse_metric_params(metric_param),
        keep_columns=[] if (dialogue or transcript_col is not None) else list(dict.fromkeys(c for c in (cluster_col, group_col) if c)),
    )
    validate_options = ValidateOptions(
        rater_col=rater_col,
        criterion_col=criterion_col,
        score_col=score_col,
        aggregate=aggregate,
        targets_from=opt.split_list(targets_from),
        adjust=adjust,
        ci=ci,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
        permutation=permutation,
        n_permutations=n_permutations,
        stars_on=stars_on,
        n_min=n_min,
        id_type=id_type,
        levels=parse_levels(levels),
        drop_out_of_scale=drop_out_of_scale,
        estimate_theta=estimate_theta,
        control=list(dict.fromkeys(opt.split_list(control) or [])),
        cluster_col=cluster_col,
        min_clusters=min_clusters,
    )
    dialogue_options = None
    if dialogue or transcript_col is not None:
        dialogue_options = dopt.dialogue_options(
            context=context, context_encoding=context_encoding, conversation_col=conversation_col, turn_col=turn_col,
            role_col=role_col, text_col=text_col, transcript_col=transcript_col, tutor_role=tutor_role,
            student_role=student_role, other_role=other_role,
        )  # fmt: skip
    summary = run_pipeline(
        exchanges, ratings, output, score_options=score_options, validate_options=validate_options, theta=theta,
        dialogue=dialogue_options, group_col=group_col, log=opt.log,
    )  # fmt: skip
    opt.log(f"done: {output}/ ({', '.join(Path(p).name for p in summary['files'].values())})")
