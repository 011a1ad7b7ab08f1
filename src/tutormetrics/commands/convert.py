"""The command ``convert``: a public tutoring dataset's raw file → the toolkit's input forms (``docs/commands/convert.md``).

It parses :class:`ConvertArgs` and calls :func:`tutormetrics.datasets.convert_file.convert_file`.

Example:
    >>> import typer
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

__all__ = ["ConvertArgs", "convert", "register"]

_NAMES = "mrbench, mathdial, cima, bridge or uptake"  # datasets.convert_file.NAMES (not imported at start-up)


@dataclass(kw_only=True)
class ConvertArgs:
    """The options of ``convert`` (``docs/commands/convert.md``)."""

    name: str = argument(help=f"Dataset: {_NAMES}.")
    raw: Path = argument(help="The raw release file (recognised by its content, not its name).", dir_okay=False)
    output: Path = flag("--output", "-o", file_okay=False, help="Output folder (created; same-named files are replaced, others left).")
    ambiguous: str | None = flag(
        "--ambiguous", default=None, show_default=False,
        help="uptake only: a lone mean of 1 on the 0-2 scale is 'drop'ped (default) or 'spread' as 0, 1, 2.",
    )


def convert(args: ConvertArgs) -> None:
    """Convert MRBench, MathDial, CIMA, Bridge or conversational-uptake files into exchanges or dialogues, ratings and
    meta tables, with a meta.json carrying the source's licence and attribution."""
    from tutormetrics.datasets.convert_file import convert_file

    done = convert_file(args.name, args.raw, args.output, ambiguous=args.ambiguous)
    log(f"converted {done.key} {args.raw.name} -> {args.output}: {done.conversion.summary}")
    for note in done.conversion.notes:
        log(f"note: {note}")
    log(f"licence: {done.source.licence}; cite {done.source.citation} ({args.output / 'meta.json'})")


def register(app: typer.Typer) -> None:
    """Add the ``convert`` command to ``app``."""
    command(app, "convert", convert, outputs=("output/",))
