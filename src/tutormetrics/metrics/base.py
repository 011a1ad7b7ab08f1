"""The metric protocol: what every metric family declares, and the shared artifacts it reads.

A metric family is a thin class over pure functions (``tutormetrics.metrics.functional``). It declares
its output columns up front, the shared artifacts it ``requires`` and its parameters; the suite
(:mod:`tutormetrics.engine.scorer`) computes each artifact once per unique text and hands the same
read-only :class:`Artifacts` to every family.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tutormetrics.text import detect_language

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np  # annotations only: listing the registry imports no numpy (docs/development.md#command-loading)

    from tutormetrics.encoders.artifacts import EncodedTexts

#: Artifact names a metric may require. "tokens": T(x) per text; "sentences": S(x) counts;
#: "encoder": one transformer pass per unique text (:class:`~tutormetrics.encoders.artifacts.EncodedTexts`).
#: Every metric may read the NFC-normalised ``Artifacts.texts``.
ARTIFACTS = frozenset({"tokens", "sentences", "encoder"})

#: Levels a metric column lives at (:attr:`Metric.level`).
LEVELS: tuple[str, ...] = ("exchange", "turn", "conversation")
#: Family of a numeric column no registered family declares.
OTHER = "other"


@dataclass(frozen=True)
class ColumnDescription:
    """One metric column: its family (registry name) and the family's figure label, a row label,
    direction (``None``: "better" undefined), level, the family's parameters and the column it aliases.

    Example:
        >>> ColumnDescription("ttr", "lexical_diversity", "diversity").to_dict()["level"]
        'exchange'
    """

    name: str
    family: str
    family_label: str
    label: str = ""
    higher_is_better: bool | None = None
    level: str = "exchange"
    params: Mapping[str, Any] = field(default_factory=dict)
    alias_of: str | None = None

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the manifest entry)."""
        out = asdict(self)
        out["params"] = dict(self.params)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnDescription:
        """A description read back from a manifest (unknown keys ignored; missing labels default)."""
        family = str(data.get("family") or OTHER)
        return cls(
            name=str(data["name"]),
            family=family,
            family_label=str(data.get("family_label") or family),
            label=str(data.get("label") or data["name"]),
            higher_is_better=data.get("higher_is_better"),
            level=str(data.get("level") or "exchange"),
            params=dict(data.get("params") or {}),
            alias_of=data.get("alias_of") or None,
        )


@dataclass(frozen=True)
class ExchangeBatch:
    """A batch of exchanges as indices into the unique texts of :class:`Artifacts`.

    ``prompt_idx[i]`` and ``response_idx[i]`` point into ``Artifacts.texts`` for exchange ``ids[i]``.
    ``aux_idx`` holds further texts per exchange by name (e.g. a dialogue's previous student turn,
    ``Scorer.score(..., aux=...)``), indices into the same texts, ``-1`` where an exchange has none.
    """

    ids: tuple[str, ...]
    prompt_idx: np.ndarray
    response_idx: np.ndarray
    aux_idx: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Artifacts:
    """Per-unique-text artifacts, computed once and shared read-only by all metric families.

    ``texts`` are NFC-normalised. Optional fields are ``None`` unless some metric requires them.
    ``langs[i]`` is the ``lang`` (docs/design/languages.md#lang) of rows whose response is ``texts[i]``; ``None``
    means "apply the auto rule to the text". ``segmented[i]`` asks for rjieba word segmentation of
    ``texts[i]`` (a Chinese row under ``--segmenter rjieba``); ``None`` means characters throughout.
    ``pieces[i]``, when not ``None``, are the parts ``texts[i]`` is the ``"\\n"``-join of (a dialogue context), so
    its tokens are theirs one after the other (``docs/design/dialogue.md#context-memory``); ``None``: no text is.
    """

    texts: list[str]
    tokens: list[list[str]] | None = None
    sentences: np.ndarray | None = None
    encoded: EncodedTexts | None = None
    langs: list[str] | None = None
    segmented: list[bool] | None = None
    pieces: list[tuple[str, ...] | None] | None = None

    def lang(self, i: int) -> str:
        """``lang`` of text ``i``: the recorded one, else the auto rule."""
        return self.langs[i] if self.langs is not None else detect_language(self.texts[i])

    def prompts(self, batch: ExchangeBatch) -> list[str]:
        return [self.texts[i] for i in batch.prompt_idx]

    def responses(self, batch: ExchangeBatch) -> list[str]:
        return [self.texts[i] for i in batch.response_idx]


class Metric(ABC):
    """Base class of a metric family.

    Subclasses set the class attributes and implement :meth:`columns` and :meth:`score`.
    ``__init__`` only stores keyword arguments (scikit-learn convention), so :meth:`get_params`
    can read them back for the run manifest.

    Example:
        >>> from tutormetrics.metrics import get_metric
        >>> get_metric("lexical_diversity").columns()[:2]
        ['ttr', 'distinct_1']
    """

    #: Registry key, e.g. ``"lexical_diversity"``.
    name: ClassVar[str]
    #: One line shown by ``tutormetrics metrics``.
    description: ClassVar[str]
    #: Shared artifacts this family reads (subset of :data:`ARTIFACTS`).
    requires: ClassVar[frozenset[str]] = frozenset()
    #: ``True``/``False`` orients reports; ``None`` when "better" is not defined (e.g. length).
    higher_is_better: ClassVar[bool | None] = None
    #: Why a column may be NaN for most exchanges and what to do, appended to the run's warning (``"; ..."``).
    nan_hints: ClassVar[dict[str, str]] = {}
    #: Names of the ``aux`` texts it reads from ``ExchangeBatch.aux_idx`` (e.g. ``("prev_student",)``).
    aux_texts: ClassVar[tuple[str, ...]] = ()
    #: Short label of the family in figures and the report (default: :attr:`name`).
    label: ClassVar[str | None] = None
    #: What one row is: ``"exchange"`` (a prompt and its reply), ``"turn"`` or ``"conversation"``.
    level: ClassVar[str] = "exchange"

    @abstractmethod
    def columns(self, n_layers: int | None = None) -> list[str]:
        """Canonical output column names. ``n_layers`` (encoder blocks) matters only to synchrony."""

    @abstractmethod
    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        """Return one float64 array of ``len(batch)`` values per column in :meth:`columns`."""

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters, read back from attributes of the same name."""
        params = {}
        for pname, p in inspect.signature(type(self).__init__).parameters.items():
            if pname == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            params[pname] = getattr(self, pname)
        return params

    def column_directions(self, n_layers: int | None = None) -> dict[str, bool | None]:
        """``higher_is_better`` per column; override when columns of a family differ."""
        return {c: self.higher_is_better for c in self.columns(n_layers)}

    def column_quantities(self, n_layers: int | None = None) -> dict[str, str]:
        """Optional: a key naming the quantity a column computes, for columns that other columns (of this or
        another family) may equal; equal keys make the later column an alias (``ColumnDescription.alias_of``)."""
        return {}

    def describe_columns(self, n_layers: int | None = None) -> list[ColumnDescription]:
        """One :class:`~tutormetrics.metrics.columns.ColumnDescription` per column (what the manifest records).

        Example:
            >>> from tutormetrics.metrics import get_metric
            >>> get_metric("lexical_diversity").describe_columns()[0].family_label
            'diversity'
        """
        directions = self.column_directions(n_layers)
        params = self.get_params()
        return [
            ColumnDescription(c, self.name, self.label or self.name, c, directions.get(c), self.level, params)
            for c in self.columns(n_layers)
        ]

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        """Documented closed range ``(low, high)`` of each column's defined values (NaN aside)."""
        return {c: (-math.inf, math.inf) for c in self.columns(n_layers)}

    def nan_reasons(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, dict[str, int]]:
        """Optional: per column, how many exchanges of ``batch`` are NaN and why (``{column: {reason: count}}``).

        The suite adds these up into the run summary. The default says nothing.
        """
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
