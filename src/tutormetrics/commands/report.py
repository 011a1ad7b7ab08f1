"""``tutormetrics report``: one self-contained HTML page from a study's output folder (thin wrapper over :mod:`tutormetrics.report`,
``docs/commands/report.md``).

Example:
    >>> ReportArgs(outdir=Path("demo-out")).max_exchanges
    20000
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.terminal import log
from tutormetrics.flags import argument, flag

__all__ = ["ReportArgs", "register", "report"]


@dataclass(kw_only=True)
class ReportArgs:
    """What ``report`` is told: the study folder, the page, the exchanges shown and how many."""

    outdir: Path = argument(
        file_okay=False,
        help="Study folder: the -o of `run`, or a folder holding metrics/correlations/theta/agreement tables.",
    )
    output: Path | None = flag(
        "--output", "-o", default=None, dir_okay=False, help="HTML file to write (default: OUTDIR/report.html)."
    )
    exchanges: Path | None = flag(
        "--exchanges", default=None, dir_okay=False,
        help="Scored input with the prompts and responses (default: the one recorded in run.json / the metrics manifest).",
    )
    max_exchanges: int = flag(
        "--max-exchanges", default=20_000, min=1,
        help="Exchanges in the drill-down; beyond it a seeded random sample (statistics always use all).",
    )


def register(app: typer.Typer) -> None:
    command(app, "report", report, outputs=_outputs)


def _outputs(args: ReportArgs) -> list[Path | None]:
    """The page, and the folder it reads (no report of a folder a `run` is writing)."""
    if not args.outdir.is_dir():  # nothing to lock: the command says the folder is missing (no folder is created)
        return []
    return [args.outdir, args.output if args.output is not None else args.outdir / "report.html"]


def report(args: ReportArgs) -> None:
    """Write one HTML file: provenance, heatmap, agreement, θ, per-tutor tables and every exchange to read.

    It opens offline (CSS, JS and data inline; no network), and every tutor reply is shown as text.

    Example: tutormetrics report demo-out -o demo-out/report.html
    """
    import sys

    from tutormetrics.errors import InputSchemaError
    from tutormetrics.io.paths import check_outputs
    from tutormetrics.report import build_report, report_inputs, write_report

    outdir, output, exchanges = args.outdir, args.output, args.exchanges
    if not outdir.is_dir():
        raise InputSchemaError(f"report: {outdir} is not a folder", hint="pass the -o folder of `tutormetrics run`")
    if output is not None and str(output) == "-":  # the page on stdout
        sys.stdout.write(build_report(outdir, exchanges=exchanges, max_exchanges=args.max_exchanges, on_stale=_stale))
        return
    target = output if output is not None else outdir / "report.html"
    if target.suffix.lower() not in (".html", ".htm"):
        raise InputSchemaError(f"report: {target} is not an .html file", hint="the report is one HTML page: name it e.g. study.html")
    check_outputs(report_inputs(outdir, exchanges), [target])
    path = write_report(outdir, target, exchanges=exchanges, max_exchanges=args.max_exchanges, on_stale=_stale)
    log(f"report: {path} ({path.stat().st_size / 1e6:.2f} MB)")


def _stale(line: str) -> None:
    """A part the report left out (the page's banner says it too)."""
    log(f"warning: report: {line}")
