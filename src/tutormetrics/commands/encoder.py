"""``tutormetrics encoder export``: the one-time local ONNX export behind ``--backend onnx``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import options as opt

encoder_app = typer.Typer(help="Encoder utilities: export a local model for the onnx backend.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(encoder_app, name="encoder")


def _export_folder(kwargs: dict) -> list[Path]:
    """The export store ``encoder export`` writes into (created, then locked for the command)."""
    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.store import export_dir_for

    path = kwargs["path"]
    store = export_dir_for(path if path is not None else default_model_path(), root=kwargs["store"]).parent
    store.mkdir(parents=True, exist_ok=True)
    return [store]


def export(
    path: Annotated[
        Optional[Path],
        typer.Argument(
            help="A local sentence-transformers BERT-family model folder (default: the bundled all-MiniLM-L6-v2).",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        Optional[Path],
        typer.Option(
            "--store",
            help="Export store (default: $TUTORMETRICS_ONNX_DIR, else ~/.cache/tutormetrics/onnx); the export goes to "
            "<store>/<model>-<hash>. Scoring reads the default store: set TUTORMETRICS_ONNX_DIR to a --store you chose.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Export again even when a fresh export exists.")] = False,
) -> None:
    """Export a model to ONNX once (needs torch here; scoring with the export does not).

    Example: tutormetrics encoder export            # the bundled MiniLM, into the user cache

    Then: tutormetrics score exchanges.csv -o metrics.csv --backend onnx
    """
    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.export import export_model
    from tutormetrics.encoders.onnx.store import DRIFT_NAME, export_dir_for

    out = None if store is None else export_dir_for(path if path is not None else default_model_path(), root=store)
    folder = export_model(path, out, force=force, log=opt.log)
    drift_file = folder / DRIFT_NAME
    if not drift_file.exists():
        import json
        import os

        if store is not None:  # scoring finds the export in the store it was written to (this process only)
            os.environ["TUTORMETRICS_ONNX_DIR"] = str(store)

        from tutormetrics.engine.int8_drift import int8_drift

        opt.log("export: measuring int8 drift per column on the bundled example's 40 real replies")
        drift = int8_drift(None if path is None else str(path))
        drift_file.write_text(json.dumps(drift, indent=2, sort_keys=True), encoding="utf-8")
        worst = max(drift["max_abs"].items(), key=lambda kv: kv[1] if kv[1] == kv[1] else -1)
        opt.log(f"export: int8 drift: largest max |Δ| {worst[1]:.2e} ({worst[0]}); recorded in {drift_file}")
    typer.echo(str(folder))


opt.command(encoder_app, "export", export, outputs=_export_folder)
