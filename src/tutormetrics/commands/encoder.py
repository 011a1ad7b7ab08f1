"""``tutormetrics encoder export``: the one-time local ONNX export behind ``--backend onnx`` (``docs/commands/encoder.md``).

It parses :class:`ExportArgs` and calls :func:`tutormetrics.engine.int8_drift.export_with_drift`.

Example:
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.terminal import log
from tutormetrics.flags import argument, flag

__all__ = ["ExportArgs", "encoder_app", "export", "register"]

encoder_app = typer.Typer(help="Encoder utilities: export a local model for the onnx backend.", no_args_is_help=True)


@dataclass(kw_only=True)
class ExportArgs:
    """The options of ``encoder export``."""

    path: Path | None = argument(
        default=None, help="A local sentence-transformers BERT-family model folder (default: the bundled all-MiniLM-L6-v2)."
    )
    store: Path | None = flag(
        "--store", default=None, show_default=False,
        help="Export store (default: $TUTORMETRICS_ONNX_DIR, else ~/.cache/tutormetrics/onnx); the export goes to "
        "<store>/<model>-<hash>. Scoring reads the default store: set TUTORMETRICS_ONNX_DIR to a --store you chose.",
    )
    force: bool = flag("--force", default=False, help="Export again even when a fresh export exists.")


def _export_folder(args: ExportArgs) -> list[Path]:
    """The export store ``encoder export`` writes into (created, then locked for the command)."""
    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.store import export_dir_for

    store = export_dir_for(args.path if args.path is not None else default_model_path(), root=args.store).parent
    store.mkdir(parents=True, exist_ok=True)
    return [store]


def export(args: ExportArgs) -> None:
    """Export a model to ONNX once (needs torch here; scoring with the export does not).

    Example: tutormetrics encoder export            # the bundled MiniLM, into the user cache

    Then: tutormetrics score exchanges.csv -o m.csv --backend onnx
    """
    from tutormetrics.engine.int8_drift import export_with_drift

    typer.echo(str(export_with_drift(args.path, args.store, force=args.force, log=log)))


def register(app: typer.Typer) -> None:
    """Add the ``encoder`` command group (``encoder export``) to ``app``."""
    app.add_typer(encoder_app, name="encoder")


command(encoder_app, "export", export, outputs=_export_folder)
