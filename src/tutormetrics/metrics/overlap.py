"""Prompt–response overlap family (Jaccard and containment on unigram and bigram sets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.overlap import OVERLAP_COLUMNS, ngram_sets, overlap_from_sets

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


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
        import numpy as np

        assert art.tokens is not None
        responses = batch.response_idx.tolist()
        sets = {i: ngram_sets(art.tokens[i]) for i in set(responses)}
        rows_of: dict[int, list[int]] = {}  # prompt -> its rows
        for row, p in enumerate(batch.prompt_idx.tolist()):
            rows_of.setdefault(p, []).append(row)
        out = {c: np.empty(len(batch), dtype=np.float64) for c in OVERLAP_COLUMNS}
        for p, rows in rows_of.items():  # one prompt's sets at a time: a chunk of long dialogue contexts never holds them all
            prompt_sets = sets.get(p) or ngram_sets(art.tokens[p])
            for row in rows:
                for c, v in overlap_from_sets(prompt_sets, sets[responses[row]]).items():
                    out[c][row] = v
        return out
