"""``tutormetrics score`` and ``tutormetrics metrics``: thin commands over :mod:`tutormetrics.engine.file_scoring`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tutormetrics.commands import options as opt


def register(app: typer.Typer) -> None:
    opt.command(app, "score", score, opt.COMMANDS["score"], outputs=("output", "conversations", "embeddings"))
    app.command("metrics")(list_metrics_command)


def score(
    input: Annotated[
        Path, typer.Argument(help="Exchanges table: .csv, .parquet or .jsonl.", exists=False, dir_okay=False, show_default=False)
    ],
    output: Annotated[
        str, typer.Option("--output", "-o", help="Output table (.csv, .parquet, .jsonl); '-' writes CSV to stdout.")
    ] = "-",
    embeddings: Annotated[
        Path | None, typer.Option("--embeddings", dir_okay=False, show_default=False,
                                     help="Also write the encoder's pooled vectors (response, prompt, last student turn "
                                     "under --history-col) to this Parquet file with its manifest, for predict --features.")
    ] = None,
    embedding_layers: Annotated[
        str, typer.Option("--embedding-layers", help="Hidden states the --embeddings file keeps: last (the "
                          "sentence-transformers embedding) or all.")
    ] = "last",
    **kwargs: Any,
) -> None:
    """Score a table of exchanges (one row per prompt/response pair) with reference-free metrics.

    Example: tutormetrics score exchanges.csv -o metrics.csv --prompt query --prompt code --metrics lexical

    Dialogues: tutormetrics score turns.csv --dialogue -o turns_scored.csv --conversations conv.csv --context full

    A response after its history: tutormetrics score exchanges.csv --history-col prompt -o h.csv

    Composite ids: tutormetrics score uptake.csv --id obs_id --id exchange_idx --prompt student_text ...

    On Ray: tutormetrics score exchanges.parquet -o metrics.parquet --engine ray --num-actors 8 --gpus-per-actor 1
    """
    from tutormetrics.dialogue.file_scoring import DialogueOptions
    from tutormetrics.engine.embedding_file import EmbeddingRequest, embeddings_manifest_path
    from tutormetrics.engine.file_scoring import ScoreOptions, score_file
    from tutormetrics.errors import ConfigError
    from tutormetrics.io.paths import check_outputs
    from tutormetrics.metrics.columns import manifest_path

    options = opt.from_kwargs(ScoreOptions, kwargs)
    conversations, engine, strict = kwargs["conversations"], options.engine, kwargs["strict"]
    dialogue = kwargs["dialogue"] or kwargs["transcript_col"] is not None
    out = None if output == "-" else Path(output)
    emb = EmbeddingRequest(embeddings, embedding_layers) if embeddings is not None else None
    check_outputs([input], [out, out and manifest_path(out), conversations, conversations and manifest_path(conversations),
                            embeddings, embeddings and embeddings_manifest_path(embeddings)])  # fmt: skip
    if emb is not None and (dialogue or engine != "local"):
        raise ConfigError("--embeddings works with plain and --history-col scoring on the local engine",
                          hint="drop --dialogue/--transcript-col and --engine ray, or drop --embeddings")  # fmt: skip
    if kwargs["history_col"] is not None:  # each row's response after its history (datasets.md §3.4)
        from tutormetrics.dialogue.history import check_history_options, score_history_file

        check_history_options(transcript_col=kwargs["transcript_col"], prompt_given=kwargs["prompt"] is not None,
                              dialogue=kwargs["dialogue"], conversations=conversations)  # fmt: skip
        if engine != "local":
            raise ConfigError("--history-col runs on the local engine only", hint="drop --engine ray")
        result = score_history_file(Path(input), out, options, opt.from_kwargs(DialogueOptions, kwargs), log=opt.log,
                                    embeddings=emb)  # fmt: skip
        _to_stdout(result.frame if out is None else None, options.csv_formula_guard)
        opt.strict_gate(strict, result.manifest.get("warnings", []))
        return
    if dialogue and engine != "local":
        raise ConfigError("--dialogue runs on the local engine only", hint="drop --engine ray")
    if dialogue:
        from tutormetrics.dialogue.file_scoring import score_dialogue_file

        turns = score_dialogue_file(
            Path(input), out, options, opt.from_kwargs(DialogueOptions, kwargs), conversations_output=conversations, log=opt.log
        )
        _to_stdout(turns.turns if out is None else None, options.csv_formula_guard)
        opt.strict_gate(strict, turns.manifest.get("warnings", []))
        return
    if conversations is not None:
        raise ConfigError("--conversations needs --dialogue (or --transcript-col)", hint="add --dialogue")
    if engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {engine!r}", hint="use --engine local or --engine ray")
    if engine == "ray":
        from tutormetrics.engine.ray_engine import score_file_ray

        result = score_file_ray(Path(input), out, options, log=opt.log)
    else:
        result = score_file(Path(input), out, options, log=opt.log, embeddings=emb)
    _to_stdout(result.frame if out is None else None, options.csv_formula_guard)
    opt.strict_gate(strict, result.manifest.get("warnings", []))


def _to_stdout(frame, csv_formula_guard: bool) -> None:  # noqa: ANN001 - a polars DataFrame or None
    """Write a result frame as CSV to stdout (``-o -``)."""
    if frame is not None:
        if csv_formula_guard:
            from tutormetrics.io.formula_guard import guard_formulas

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
