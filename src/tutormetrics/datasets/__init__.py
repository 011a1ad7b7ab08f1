"""Converters for public tutoring datasets (``tutormetrics convert NAME RAW -o DIR``; docs/design/datasets.md#convert).

Each converter turns one raw release file into the toolkit's input forms (exchanges or a long dialogue table,
long ratings, meta tables) and a ``meta.json`` with the source's licence and attribution.

What the converters share, one module per job: :mod:`~tutormetrics.datasets.sources` (where a dataset comes from,
its licence), :mod:`~tutormetrics.datasets.conversion` (the tables a converter returns),
:mod:`~tutormetrics.datasets.cell_text` (upstream values as cell text), :mod:`~tutormetrics.datasets.duplicate_ids`
(rule D1), :mod:`~tutormetrics.datasets.raw_files` (reading the raw JSON or CSV) and
:mod:`~tutormetrics.datasets.output_files` (the CSV files and ``meta.json`` written into the folder).

Example:
    >>> from tutormetrics.datasets import CONVERTERS
    >>> sorted(CONVERTERS)
    ['bridge', 'cima', 'mathdial', 'mrbench', 'uptake']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType

from tutormetrics.datasets import bridge, cima, mathdial, mrbench, uptake
from tutormetrics.datasets.conversion import Conversion
from tutormetrics.datasets.output_files import write_conversion
from tutormetrics.datasets.raw_values import HINT
from tutormetrics.datasets.sources import Source
from tutormetrics.errors import InputSchemaError

_MODULES: dict[str, ModuleType] = {m.SOURCE.name: m for m in (mrbench, mathdial, cima, bridge, uptake)}


def _guarded(name: str, convert: Callable[..., Conversion]) -> Callable[..., Conversion]:
    """The converter, with a last guard: a shape of the raw file that no check foresaw is exit 2 naming the file
    (docs/design/datasets.md#hostile-releases), never a traceback."""

    @functools.wraps(convert)
    def guarded(raw: bytes, raw_name: str, **options: object) -> Conversion:
        try:
            return convert(raw, raw_name, **options)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as exc:
            detail = str(exc).splitlines()[0][:120] if str(exc) else "unexpected structure"
            raise InputSchemaError(f"{raw_name}: not a {name} release as published (an unexpected value: {detail})",
                                   hint=HINT) from None

    return guarded


#: name → ``convert(raw: bytes, raw_name: str, **options) -> Conversion``
CONVERTERS: dict[str, Callable[..., Conversion]] = {name: _guarded(name, m.convert) for name, m in _MODULES.items()}
#: name → its :class:`Source` (repository, licence, citation)
SOURCES: dict[str, Source] = {name: m.SOURCE for name, m in _MODULES.items()}

__all__ = ["CONVERTERS", "SOURCES", "Conversion", "Source", "write_conversion"]
