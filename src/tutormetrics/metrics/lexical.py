"""Lexical diversity and repetition family (``ttr``, ``distinct_n``, ``entropy_n``, ``rep_n``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.lexical import lexical_diversity

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

DIVERSITY_COLUMNS = ["ttr", "distinct_1", "distinct_2", "distinct_3", "entropy_1", "entropy_2", "rep_1", "rep_2"]
VARIANT_COLUMNS = [
    "distinct_2_li",
    "distinct_3_li",
    "entropy_1_nats",
    "entropy_2_nats",
    "entropy_1_evenness",
    "entropy_2_evenness",
]


class LexicalDiversity(Metric):
    """Per-response diversity: ``V_n/N_n``, normalised n-gram entropy ``H_n/ln N_n`` and ``rep_n = 1 − V_n/N_n``.

    ``variants=True`` adds the reserved optional columns (Li et al. distinct, raw and evenness entropy).
    """

    name = "lexical_diversity"
    label = "diversity"
    description = "Type-token ratio, distinct-1/2/3, normalised n-gram entropy, repetition rep-1/2 of the response"
    requires = frozenset({"tokens"})
    higher_is_better = True

    def __init__(self, variants: bool = False) -> None:
        self.variants = variants

    def columns(self, n_layers: int | None = None) -> list[str]:
        return DIVERSITY_COLUMNS + (VARIANT_COLUMNS if self.variants else [])

    def column_directions(self, n_layers: int | None = None) -> dict[str, bool | None]:
        return {c: (False if c.startswith("rep_") else True) for c in self.columns()}

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        ranges = dict.fromkeys(self.columns(), (0.0, 1.0))
        for c in ("entropy_1_nats", "entropy_2_nats", "distinct_2_li", "distinct_3_li"):
            if c in ranges:
                ranges[c] = (0.0, math.inf)
        return ranges

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        assert art.tokens is not None
        cache: dict[int, dict[str, float]] = {}
        for i in set(batch.response_idx.tolist()):
            cache[i] = lexical_diversity(art.tokens[i], variants=self.variants)
        return {c: np.array([cache[i][c] for i in batch.response_idx], dtype=np.float64) for c in self.columns()}
