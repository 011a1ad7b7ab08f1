"""``tutormetrics score`` and ``tutormetrics metrics``: thin commands over :mod:`tutormetrics.engine.file_scoring`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import dialogue_options as dopt
from tutormetrics.commands import options as opt


def register(app: typer.Typer) -> None:
    app.command("score")(score)
    app.command("metrics")(list_metrics_command)


def score(
    input: opt.InputPath,
    output: Annotated[
        str, typer.Option("--output", "-o", help="Output table (.csv, .parquet, .jsonl); '-' writes CSV to stdout.")
    ] = "-",
    id: opt.IdColumn = "exchange_id",
    prompt: opt.PromptColumns = None,
    response: opt.ResponseColumn = "response",
    metrics: opt.MetricsSelection = "all",
    input_format: opt.InputFormat = None,
    output_format: opt.OutputFormat = None,
    encoding: opt.Encoding = "utf8",
    model_name_or_path: opt.ModelNameOrPath = None,
    device: opt.Device = "auto",
    dtype: opt.DType = "auto",
    batch_size: opt.BatchSize = 32,
    max_seq_length: opt.MaxSeqLength = None,
    long_text: opt.LongText = "window",
    trust_remote_code: opt.TrustRemoteCode = False,
    syllables: opt.Syllables = "auto",
    lang: opt.Lang = "auto",
    segmenter: opt.Segmenter = "char",
    chars_per_sentence: opt.CharsPerSentence = 100.0,
    concision_bands: opt.ConcisionBands = "3,6",
    chunk_size: opt.ChunkSize = 2048,
    cache_mb: opt.CacheMb = None,
    engine: opt.Engine = "local",
    ray_address: opt.RayAddress = None,
    num_actors: opt.NumActors = None,
    gpus_per_actor: opt.GpusPerActor = 0.0,
    progress: opt.Progress = None,
    manifest: opt.Manifest = True,
    dedupe: Annotated[bool, typer.Option("--dedupe", help="Keep the first row of each duplicated id instead of stopping.")] = False,
    resume: Annotated[
        bool, typer.Option("--resume/--restart", help="Continue an interrupted run of the same command from its checkpoint.")
    ] = True,
    csv_formula_guard: Annotated[
        bool,
        typer.Option(
            "--csv-formula-guard/--no-csv-formula-guard",
            help="Prefix text cells starting with = + - @ with ' in CSV output so spreadsheets cannot run them (numbers untouched).",
        ),
    ] = True,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=0, help="Worker processes for lexical-only runs (0 = auto: up to 4 on large inputs when there are >= 4 cores).")
    ] = 0,
    keep: Annotated[
        Optional[list[str]],
        typer.Option("--keep", help="Input column to copy into the output after the id (repeatable), e.g. --keep tutor."),
    ] = None,
    metric_param: opt.MetricParams = None,
    strict: opt.Strict = False,
    dialogue: dopt.Dialogue = False,
    conversations: dopt.Conversations = None,
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
    """Score a table of exchanges (one row per prompt/response pair) with reference-free metrics.

    Example: tutormetrics score exchanges.csv -o metrics.csv --prompt query --prompt code --metrics lexical

    Dialogues: tutormetrics score turns.csv --dialogue -o turns_scored.csv --conversations conv.csv --context full

    On Ray: tutormetrics score exchanges.parquet -o metrics.parquet --engine ray --num-actors 8 --gpus-per-actor 1
    """
    from tutormetrics.engine.file_scoring import ScoreOptions, score_file

    options = ScoreOptions(
        id_column=id,
        prompt_columns=list(prompt or ["prompt"]),
        response_column=response,
        metrics=metrics,
        input_format=input_format,
        output_format=output_format,
        encoding=encoding,
        model_name_or_path=model_name_or_path,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        max_seq_length=max_seq_length,
        long_text=long_text,
        trust_remote_code=trust_remote_code,
        syllables=syllables,
        lang=lang,
        segmenter=segmenter,
        chars_per_sentence=chars_per_sentence,
        concision_bands=opt.parse_bands(concision_bands),
        chunk_size=chunk_size,
        cache_mb=cache_mb,
        engine=engine,
        ray_address=ray_address,
        num_actors=num_actors,
        gpus_per_actor=gpus_per_actor,
        progress=progress,
        write_manifest=manifest,
        dedupe=dedupe,
        resume=resume,
        csv_formula_guard=csv_formula_guard,
        n_jobs=jobs,
        keep_columns=list(keep or []),
        metric_params=opt.parse_metric_params(metric_param),
    )
    from tutormetrics.io import check_outputs
    from tutormetrics.metrics.columns import manifest_path

    out = None if output == "-" else Path(output)
    check_outputs([input], [out, out and manifest_path(out), conversations, conversations and manifest_path(conversations)])
    if (dialogue or transcript_col is not None) and engine != "local":
        from tutormetrics.errors import ConfigError

        raise ConfigError("--dialogue runs on the local engine only", hint="drop --engine ray")
    if dialogue or transcript_col is not None:
        from tutormetrics.dialogue.file_scoring import score_dialogue_file

        dialogue_options = dopt.dialogue_options(
            context=context, context_encoding=context_encoding, conversation_col=conversation_col, turn_col=turn_col,
            role_col=role_col, text_col=text_col, transcript_col=transcript_col, tutor_role=tutor_role,
            student_role=student_role, other_role=other_role,
        )  # fmt: skip
        turns = score_dialogue_file(
            Path(input), None if output == "-" else Path(output), options, dialogue_options,
            conversations_output=conversations, log=opt.log,
        )  # fmt: skip
        _to_stdout(turns.turns if output == "-" else None, csv_formula_guard)
        opt.strict_gate(strict, turns.manifest.get("warnings", []))
        return
    if conversations is not None:
        from tutormetrics.errors import ConfigError

        raise ConfigError("--conversations needs --dialogue (or --transcript-col)", hint="add --dialogue")
    if engine not in ("local", "ray"):
        from tutormetrics.errors import ConfigError

        raise ConfigError(f"unknown engine {engine!r}", hint="use --engine local or --engine ray")
    if engine == "ray":
        from tutormetrics.engine.ray_engine import score_file_ray as score_file
    result = score_file(Path(input), None if output == "-" else Path(output), options, log=opt.log)
    _to_stdout(result.frame if output == "-" else None, csv_formula_guard)
    opt.strict_gate(strict, result.manifest.get("warnings", []))


def _to_stdout(frame, csv_formula_guard: bool) -> None:  # noqa: ANN001 - a polars DataFrame or None
    """Write a result frame as CSV to stdout (``-o -``)."""
    if frame is not None:
        if csv_formula_guard:
            from tutormetrics.io import guard_formulas

            frame = guard_formulas(frame)
        frame.write_csv(sys.stdout)


def list_metrics_command(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every registered metric family with its description, output columns and direction."""
    import json

    from tutormetrics.metrics.registry import REGISTRY

    rows = []
    for name in REGISTRY.names():
        cls = REGISTRY.get_class(name)
        metric = cls()
        n_layers = 6 if "encoder" in cls.requires else None  # the bundled MiniLM-L6; real runs read the model
        directions = metric.column_directions(n_layers)
        rows.append(
            {
                "name": name,
                "description": cls.description,
                "requires": sorted(cls.requires),
                "columns": {c: directions.get(c) for c in metric.columns(n_layers)},
                "params": metric.get_params(),
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    arrow = {True: "↑ higher is better", False: "↓ lower is better", None: "· no direction"}
    for row in rows:
        typer.echo(f"{row['name']}  [{', '.join(row['requires']) or 'text'}]")
        typer.echo(f"    {row['description']}")
        if row["params"]:
            typer.echo("    params: " + ", ".join(f"{row['name']}.{k}={v!r}" for k, v in row["params"].items()))
        for col, direction in row["columns"].items():
            typer.echo(f"      {col:<26} {arrow[direction]}")
    typer.echo("\nGroups for --metrics: all, lexical (no encoder), encoder. sync_lNN columns follow the model's layer count.")
