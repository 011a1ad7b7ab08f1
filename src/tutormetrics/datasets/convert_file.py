"""``convert`` from Python (``docs/commands/convert.md#from-python``): one raw release file → the toolkit's input
tables and ``meta.json`` in a folder, the dataset named, its options checked and the outputs refused before any write
when they would overwrite the raw file.

Example:
    >>> convert_file("nope", "raw.json", "out")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: convert: unknown dataset 'nope'
      hint: choose mrbench, mathdial, cima, bridge or uptake
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tutormetrics.datasets import CONVERTERS, SOURCES
from tutormetrics.datasets.conversion import Conversion
from tutormetrics.datasets.output_files import write_conversion
from tutormetrics.datasets.sources import Source
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.paths import check_outputs

__all__ = ["NAMES", "Converted", "convert_file"]

#: The datasets ``convert`` knows, as ``--help`` lists them.
NAMES = "mrbench, mathdial, cima, bridge or uptake"


@dataclass(frozen=True)
class Converted:
    """What :func:`convert_file` wrote: the dataset's ``key``, its :class:`Source` (licence, citation), the
    :class:`Conversion` (tables, summary, notes) and the ``written`` paths."""

    key: str
    source: Source
    conversion: Conversion
    written: list[Path]


def convert_file(name: str, raw: str | os.PathLike[str], output: str | os.PathLike[str], *, ambiguous: str | None = None) -> Converted:
    """Convert the raw file ``raw`` of dataset ``name`` into ``output`` (created; same-named files replaced).

    Args:
        name: mrbench, mathdial, cima, bridge or uptake (any case).
        raw: The raw release file (recognised by its content, not its name).
        output: The output folder.
        ambiguous: uptake only: ``"drop"`` (default) or ``"spread"`` a lone mean of 1 on the 0-2 scale.

    Raises :class:`~tutormetrics.errors.TutorMetricsError` (exit 2) on an unknown dataset, a misplaced option,
    a file that is not the release, or a file that cannot be read or written.
    """
    from tutormetrics import __version__

    raw, output = Path(raw), Path(output)
    key = name.strip().lower()
    if key not in CONVERTERS:
        raise ConfigError(f"convert: unknown dataset {name!r}", hint=f"choose {NAMES}")
    if ambiguous is not None and key != "uptake":
        raise ConfigError(f"convert {key}: --ambiguous belongs to convert uptake", hint="leave it out")
    if not raw.is_file():
        raise InputSchemaError(f"convert: {raw} is not a file", hint=SOURCES[key].raw_hint)
    options = {"ambiguous": ambiguous} if ambiguous is not None else {}
    try:
        data = raw.read_bytes()
        conversion = CONVERTERS[key](data, raw.name, **options)
        check_outputs([raw], [output / f for f in (*conversion.tables, "meta.json")])
        written = write_conversion(output, SOURCES[key], conversion, raw, data, __version__)
    except OSError as exc:
        raise InputSchemaError(f"convert: cannot read {raw} or write {output}: {exc.strerror or exc}") from None
    return Converted(key, SOURCES[key], conversion, written)
