"""The worked example of ``docs/guide/judges.md`` (30 replies in 12 dialogues, humans A and B, judge J and its
rerun K), as long ratings and a metrics table."""

from __future__ import annotations

import numpy as np
import polars as pl

A = [0, 1, 1, 2, 2, 2, 1, 2, 2, 1, 1, 2, 2, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1, 0]
B = [0, 1, 0, 2, 2, 2, 1, 2, 2, 2, 1, 2, 1, 2, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1, 0]
J = [0, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 2, 2, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 2, 2, 0, 1, 2, 1]
K = [0, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 2, 2, 0, 0, 2, 1, 1, 0, 2, 0, 0, 1, 2, 2, 0, 1, 1, 1]
WORDS = [39, 28, 37, 65, 31, 12, 26, 50, 29, 40, 54, 23, 69, 88, 47, 46, 61, 83, 33, 23, 39, 14, 11, 19, 44, 41, 12, 13, 28, 26]
SIZES = [3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 2, 2]
IDS = [f"e{i:02d}" for i in range(1, 31)]
DIALOGUE = [f"d{k + 1:02d}" for k, size in enumerate(SIZES) for _ in range(size)]
CLUSTER = np.repeat(np.arange(12), SIZES)


def ratings(raters: dict[str, list[int]] | None = None, criterion: str = "c") -> pl.DataFrame:
    """Long ratings of the raters (default A, B, J, K) with a conversation_id column."""
    raters = raters or {"A": A, "B": B, "J": J, "K": K}
    rows = [(i, d, name, criterion, s) for name, scores in raters.items() for i, d, s in zip(IDS, DIALOGUE, scores, strict=True)]
    return pl.DataFrame(rows, schema=["exchange_id", "conversation_id", "rater", "criterion", "score"], orient="row")


def metrics() -> pl.DataFrame:
    """The metrics table: id, conversation and the reply's words."""
    return pl.DataFrame({"exchange_id": IDS, "conversation_id": DIALOGUE, "resp_words": WORDS})
