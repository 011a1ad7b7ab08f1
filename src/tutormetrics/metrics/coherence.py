"""Coherence family: ``resp_coherence``, the mean cosine between consecutive sentences of the response.

Each sentence vector is the mean of the response's last-layer content-token vectors inside the
sentence's character span, read from the encoder pass the embedding and synchrony families already
use (no extra forward pass). See :mod:`tutormetrics.metrics.functional.coherence` for the definition
and the long-text (window / truncate) case.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from tutormetrics.encoders.artifacts import EncodedTexts
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder


class Coherence(Metric):
    """``resp_coherence = mean_k cos(s_k, s_{k+1})`` over the response's sentences ``S(r)``.

    NaN for a response with fewer than two sentences that hold an encoded token, and when the encoder's
    tokenizer gives no character offsets (slow tokenizers).

    Example:
        >>> Coherence().columns()
        ['resp_coherence']
    """

    name: ClassVar[str] = "coherence"
    description: ClassVar[str] = "mean cosine between consecutive sentences of the response (same encoder pass)"
    requires: ClassVar[frozenset[str]] = frozenset({"encoder"})
    higher_is_better: ClassVar[bool | None] = True
    #: Opt-in (``--metrics coherence``), so ``all`` keeps its columns.
    include_in_all: ClassVar[bool] = False
    nan_hints: ClassVar[dict[str, str]] = {"resp_coherence": "; coherence needs at least two sentences"}

    def columns(self, n_layers: int | None = None) -> list[str]:
        return ["resp_coherence"]

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        return {"resp_coherence": (-1.0, 1.0)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        enc = _encoded(art)
        cache = {i: _coherence(enc, art.texts[i], i) for i in set(batch.response_idx.tolist())}
        return {"resp_coherence": np.array([cache[i] for i in batch.response_idx], dtype=np.float64)}

    def nan_reasons(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, dict[str, int]]:
        """``empty`` (no encoded token), ``no_offsets`` (slow tokenizer), ``one_sentence`` (fewer than two)."""
        from tutormetrics.metrics.functional.coherence import sentence_spans

        enc = art.encoded
        if enc is None:
            return {}
        why: dict[int, str] = {}
        for i in set(batch.response_idx.tolist()):
            if enc.n_content_tokens[i] == 0:
                why[i] = "empty"
            elif enc.token_offsets is None or enc.token_norms is None:
                why[i] = "no_offsets"
            elif math.isnan(_coherence(enc, art.texts[i], i)):
                why[i] = "one_sentence" if len(sentence_spans(art.texts[i])) < 2 else "undefined"
            else:
                why[i] = ""
        counts = Counter(why[i] for i in batch.response_idx.tolist())
        counts.pop("", None)
        return {"resp_coherence": dict(counts)} if counts else {}


def _encoded(art: Artifacts) -> EncodedTexts:
    if art.encoded is None:
        raise ValueError("coherence needs the 'encoder' artifact, but Artifacts.encoded is None")
    return art.encoded


def _coherence(enc: EncodedTexts, text: str, i: int) -> float:
    import numpy as np

    from tutormetrics.encoders.spill import is_spilled, row_blocks
    from tutormetrics.metrics.functional.coherence import (
        consecutive_cosine,
        response_coherence,
        sentence_spans,
        sentence_token_ranges,
    )

    if enc.token_offsets is None or enc.token_norms is None or enc.n_content_tokens[i] == 0:
        return float("nan")
    states, norms = enc.token_states[i], enc.token_norms[i].astype(np.float64)
    if not is_spilled(states):
        return response_coherence(text, states.astype(np.float64) * norms[:, None], enc.token_offsets[i])
    # Rows on disk (a very long reply): each sentence's mean is summed block by block.
    ranges = sentence_token_ranges(enc.token_offsets[i], sentence_spans(text))
    lo = np.array([a for a, _ in ranges], dtype=np.int64)
    hi = np.array([b for _, b in ranges], dtype=np.int64)
    sums = np.zeros((len(ranges), states.shape[1]))
    for start, block in row_blocks(states):
        stop = start + len(block)
        raw = block.astype(np.float64) * norms[start:stop, None]
        for k in range(int(np.searchsorted(hi, start, side="right")), int(np.searchsorted(lo, stop, side="left"))):
            a, b = max(lo[k], start), min(hi[k], stop)
            sums[k] += raw[a - start : b - start].sum(axis=0)
    return consecutive_cosine(sums / (hi - lo)[:, None])


def coherence_texts(
    responses: Sequence[str],
    *,
    encoder: TextEncoder | EncoderConfig | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """``resp_coherence`` for plain responses (each unique text encoded once).

    Args:
        responses: the response texts.
        encoder: a :class:`TextEncoder`, an :class:`EncoderConfig`, or ``None`` for the bundled all-MiniLM-L6-v2.
        progress: ``True`` bars, ``False`` nothing, ``None`` by whether stderr is a terminal.

    Example:
        >>> coherence_texts(["Add the tens. Then add the ones."])  # doctest: +SKIP
        array([0.6...])
    """
    from tutormetrics.metrics.embedding import score_texts

    responses = list(responses)
    return score_texts(Coherence(), [""] * len(responses), responses, encoder, progress=progress)["resp_coherence"]
