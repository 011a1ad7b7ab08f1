"""The metric protocol: what every metric family declares, and the shared artifacts it reads.

A metric family is a thin class over pure functions (``tutormetrics.metrics.functional``). It declares
its output columns up front, the shared artifacts it ``requires`` and its parameters; the suite
(:mod:`tutormetrics.engine.scorer`) computes each artifact once per unique text and hands the same
read-only :class:`Artifacts` to every family.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tutormetrics.text import detect_language

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.encoders.artifacts import EncodedTexts

#: Artifact names a metric may require. "tokens": T(x) per text; "sentences": S(x) counts;
#: "encoder": one transformer pass per unique text (:class:`~tutormetrics.encoders.artifacts.EncodedTexts`).
#: Every metric may read the NFC-normalised ``Artifacts.texts``.
ARTIFACTS = frozenset({"tokens", "sentences", "encoder"})


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
    ``langs[i]`` is the ``lang`` (languages.md §3) of rows whose response is ``texts[i]``; ``None``
    means "apply the auto rule to the text". ``segmented[i]`` asks for rjieba word segmentation of
    ``texts[i]`` (a Chinese row under ``--segmenter rjieba``); ``None`` means characters throughout.
    """

    texts: list[str]
    tokens: list[list[str]] | None = None
    sentences: np.ndarray | None = None
    encoded: EncodedTexts | None = None
    langs: list[str] | None = None
    segmented: list[bool] | None = None

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

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        """Documented closed range ``(low, high)`` of each column's defined values (NaN aside)."""
        return {c: (-np.inf, np.inf) for c in self.columns(n_layers)}

    def nan_reasons(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, dict[str, int]]:
        """Optional: per column, how many exchanges of ``batch`` are NaN and why (``{column: {reason: count}}``).

        The suite adds these up into the run summary. The default says nothing.
        """
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
