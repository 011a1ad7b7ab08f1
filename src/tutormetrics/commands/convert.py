"""Thin Typer command ``convert``: a public tutoring dataset's raw file → the toolkit's input forms (datasets.md §2).

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
from tutormetrics.errors import ConfigError, InputSchemaError, TutorMetricsError

__all__ = ["register"]

_NAMES = "mrbench, mathdial, cima, bridge or uptake"


def convert(
    name: Annotated[str, typer.Argument(help=f"Dataset: {_NAMES}.", show_default=False)],
    raw: Annotated[Path, typer.Argument(help="The raw release file (recognised by its content, not its name).", dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder (created; same-named files are replaced, others left).", file_okay=False)],
    ambiguous: Annotated[
        Optional[str],
        typer.Option("--ambiguous", help="uptake only: a lone mean of 1 on the 0-2 scale is 'drop'ped (default) or 'spread' as 0, 1, 2.", show_default=False),
    ] = None,
) -> None:
    """Convert MRBench, MathDial, CIMA, Bridge or conversational-uptake files into exchanges or dialogues, ratings and
    meta tables, with a meta.json carrying the source's licence and attribution."""
    from tutormetrics import __version__
    from tutormetrics.datasets import CONVERTERS, SOURCES, write_conversion
    from tutormetrics.io.paths import check_outputs

    try:
        key = name.strip().lower()
        if key not in CONVERTERS:
            raise ConfigError(f"convert: unknown dataset {name!r}", hint=f"choose {_NAMES}")
        if ambiguous is not None and key != "uptake":
            raise ConfigError(f"convert {key}: --ambiguous belongs to convert uptake", hint="leave it out")
        if not raw.is_file():
            raise InputSchemaError(f"convert: {raw} is not a file", hint=SOURCES[key].raw_hint)
        options = {"ambiguous": ambiguous} if ambiguous is not None else {}
        data = raw.read_bytes()
        conversion = CONVERTERS[key](data, raw.name, **options)
        targets = [output / f for f in (*conversion.tables, "meta.json")]
        check_outputs([raw], targets)
        write_conversion(output, SOURCES[key], conversion, raw, data, __version__)
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    except OSError as exc:
        typer.echo(f"error: convert: cannot read {raw} or write {output}: {exc.strerror or exc}", err=True)
        raise typer.Exit(code=2) from None
    source = SOURCES[key]
    typer.echo(f"converted {key} {raw.name} -> {output}: {conversion.summary}", err=True)
    for note in conversion.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"licence: {source.licence}; cite {source.citation} ({output / 'meta.json'})", err=True)


def register(app: typer.Typer) -> None:
    """Add the ``convert`` command to ``app``."""
    opt.command(app, "convert", convert, outputs=("output/",))
