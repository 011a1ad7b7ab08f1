"""The text artifacts of a chunk, built in one place: ``T(x)`` once per unique text and ``S(x)`` counts per
response (``docs/metrics.md#sentences``), then every CPU family scored on them. The Scorer calls it in this process, in a
thread beside the encoder, or in a worker process (:mod:`tutormetrics.engine.concurrency`).

Example:
    >>> import numpy as np
    >>> art = Artifacts(texts=["Hi there.", "The cat sat. It slept."])
    >>> add_text_artifacts(art, frozenset({"tokens", "sentences"}), np.array([1]))
    >>> art.tokens[0], art.sentences.tolist()
    (['hi', 'there'], [0, 2])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.text import split_sentences, tokenize


def add_text_artifacts(art: Artifacts, requires: frozenset[str], response_idx: np.ndarray) -> None:
    """Fill ``art.tokens`` (every text; rjieba for the rows marked ``segmented``) and ``art.sentences``
    (responses only, 0 elsewhere) when ``requires`` names them.

    Args:
        art: the chunk's artifacts, filled in place.
        requires: artifact names the families need (``tokens``, ``sentences``).
        response_idx: index into ``art.texts`` of each exchange's response.
    """
    if "tokens" in requires:
        if art.segmented is None:
            art.tokens = [tokenize(t) for t in art.texts]
        else:  # Chinese rows under --segmenter rjieba
            art.tokens = [tokenize(t, "rjieba" if s else "char") for t, s in zip(art.texts, art.segmented, strict=True)]
    if "sentences" in requires:
        sentences = np.zeros(len(art.texts), dtype=np.int64)
        for i in set(response_idx.tolist()):
            sentences[i] = len(split_sentences(art.texts[i]))
        art.sentences = sentences


def score_text_families(
    families: Sequence[Metric], batch: ExchangeBatch, art: Artifacts
) -> dict[str, dict[str, np.ndarray]]:
    """The text artifacts the families need, then ``{family: {column: values}}`` (picklable: runs in a worker).

    Args:
        families: the text (non-encoder) families to score.
        batch: the chunk's exchanges.
        art: the chunk's artifacts (texts; tokens and sentences are added).
    """
    requires = frozenset().union(*(f.requires for f in families)) if families else frozenset()
    add_text_artifacts(art, requires, batch.response_idx)
    return {f.name: f.score(batch, art) for f in families}
