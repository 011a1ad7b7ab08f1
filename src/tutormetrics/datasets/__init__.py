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

from collections.abc import Callable
from types import ModuleType

from tutormetrics.datasets import bridge, cima, mathdial, mrbench, uptake
from tutormetrics.datasets.conversion import Conversion
from tutormetrics.datasets.output_files import write_conversion
from tutormetrics.datasets.sources import Source

_MODULES: dict[str, ModuleType] = {m.SOURCE.name: m for m in (mrbench, mathdial, cima, bridge, uptake)}
#: name → ``convert(raw: bytes, raw_name: str, **options) -> Conversion``
CONVERTERS: dict[str, Callable[..., Conversion]] = {name: m.convert for name, m in _MODULES.items()}
#: name → its :class:`Source` (repository, licence, citation)
SOURCES: dict[str, Source] = {name: m.SOURCE for name, m in _MODULES.items()}

__all__ = ["CONVERTERS", "SOURCES", "Conversion", "Source", "write_conversion"]
