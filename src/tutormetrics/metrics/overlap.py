"""Prompt–response overlap family (Jaccard and containment on unigram and bigram sets)."""

from __future__ import annotations

import numpy as np

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.overlap import OVERLAP_COLUMNS, prompt_overlap


class PromptOverlap(Metric):
    """``jaccard_n = |A∩B|/|A∪B|`` and containment ``|A∩B|/|A|``, ``|A∩B|/|B|`` with A the prompt's, B the response's n-gram set."""

    name = "overlap"
    description = "Prompt-response overlap: Jaccard and containment on unigram and bigram sets"
    requires = frozenset({"tokens"})
    higher_is_better = None

    def columns(self, n_layers: int | None = None) -> list[str]:
        return list(OVERLAP_COLUMNS)

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        return dict.fromkeys(OVERLAP_COLUMNS, (0.0, 1.0))

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        assert art.tokens is not None
        cache: dict[tuple[int, int], dict[str, float]] = {}
        rows = []
        for p, r in zip(batch.prompt_idx.tolist(), batch.response_idx.tolist()):
            key = (p, r)
            if key not in cache:
                cache[key] = prompt_overlap(art.tokens[p], art.tokens[r])
            rows.append(cache[key])
        return {c: np.array([row[c] for row in rows], dtype=np.float64) for c in OVERLAP_COLUMNS}
