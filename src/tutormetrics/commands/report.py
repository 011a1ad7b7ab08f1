"""``tutormetrics report``: one self-contained HTML page from a study's output folder (thin wrapper over :mod:`tutormetrics.report`).

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import log

__all__ = ["register", "report"]


def register(app: typer.Typer) -> None:
    opt.command(app, "report", report, outputs=_outputs)


def _outputs(kwargs: dict) -> list[Path | None]:
    """The page, and the folder it reads (no report of a folder a `run` is writing)."""
    outdir, output = kwargs["outdir"], kwargs["output"]
    if not outdir.is_dir():  # nothing to lock: the command says the folder is missing (no folder is created)
        return []
    return [outdir, output if output is not None else outdir / "report.html"]


def report(
    outdir: Annotated[
        Path, typer.Argument(help="Study folder: the -o of `run`, or a folder holding metrics/correlations/theta/agreement tables.", file_okay=False)
    ],
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="HTML file to write (default: OUTDIR/report.html).", dir_okay=False)
    ] = None,
    exchanges: Annotated[
        Optional[Path],
        typer.Option("--exchanges", help="Scored input with the prompts and responses (default: the one recorded in run.json / the metrics manifest).", dir_okay=False),
    ] = None,
    max_exchanges: Annotated[
        int, typer.Option("--max-exchanges", min=1, help="Exchanges in the drill-down; beyond it a seeded random sample (statistics always use all).")
    ] = 20_000,
) -> None:
    """Write one HTML file: provenance, heatmap, agreement, θ, per-tutor tables and every exchange to read.

    It opens offline (CSS, JS and data inline; no network), and every tutor reply is shown as text.

    Example: tutormetrics report demo-out -o demo-out/report.html
    """
    import sys

    from tutormetrics.errors import InputSchemaError, TutorMetricsError
    from tutormetrics.io.paths import check_outputs
    from tutormetrics.report import build_report, report_inputs, write_report

    try:
        if not outdir.is_dir():
            raise InputSchemaError(f"report: {outdir} is not a folder", hint="pass the -o folder of `tutormetrics run`")
        if output is not None and str(output) == "-":  # the page on stdout
            sys.stdout.write(build_report(outdir, exchanges=exchanges, max_exchanges=max_exchanges, on_stale=_stale))
            return
        target = output if output is not None else outdir / "report.html"
        if target.suffix.lower() not in (".html", ".htm"):
            raise InputSchemaError(f"report: {target} is not an .html file", hint="the report is one HTML page: name it e.g. study.html")
        check_outputs(report_inputs(outdir, exchanges), [target])
        path = write_report(outdir, target, exchanges=exchanges, max_exchanges=max_exchanges, on_stale=_stale)
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    log(f"report: {path} ({path.stat().st_size / 1e6:.2f} MB)")


def _stale(line: str) -> None:
    """A part the report left out (the page's banner says it too)."""
    log(f"warning: report: {line}")
