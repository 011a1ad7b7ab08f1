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
from itertools import chain

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
        art.tokens = text_tokens(art.texts, art.segmented, art.pieces)
    if "sentences" in requires:
        sentences = np.zeros(len(art.texts), dtype=np.int64)
        for i in set(response_idx.tolist()):
            sentences[i] = len(split_sentences(art.texts[i]))
        art.sentences = sentences


def text_tokens(
    texts: Sequence[str], segmented: Sequence[bool] | None = None, pieces: Sequence[tuple[str, ...] | None] | None = None
) -> list[list[str]]:
    """``T(x)`` of every text (rjieba for those marked ``segmented``); a text with ``pieces`` (the parts it is the
    ``"\\n"``-join of: a dialogue context) gets its pieces' tokens one after the other. ``T(x)`` never crosses a
    ``"\\n"``, so that is ``T`` of the joined text, but each distinct piece is tokenised once and every context
    holding it shares its token strings (``docs/design/dialogue.md#context-memory``).

    Args:
        texts: The distinct texts of a chunk.
        segmented: Per text, whether it is tokenised by rjieba (Chinese under ``--segmenter rjieba``).
        pieces: Per text, the parts it joins (``None``: a plain text).

    >>> text_tokens(["Hi there.", "Hi there.\\nWhy?"], pieces=[None, ("Hi there.", "Why?")])
    [['hi', 'there'], ['hi', 'there', 'why']]
    """
    seen: dict[tuple[str, bool], list[str]] = {}

    def tokens_of(text: str, rjieba: bool) -> list[str]:
        got = seen.get((text, rjieba))
        if got is None:
            got = seen[(text, rjieba)] = tokenize(text, "rjieba" if rjieba else "char")
        return got

    out: list[list[str]] = []
    for i, text in enumerate(texts):
        rjieba = bool(segmented[i]) if segmented is not None else False  # Chinese rows under --segmenter rjieba
        parts = pieces[i] if pieces is not None else None
        out.append(tokens_of(text, rjieba) if parts is None else list(chain.from_iterable(tokens_of(p, rjieba) for p in parts)))
    return out


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
