"""Embedding similarity family: ``emb_mean_cos``, ``emb_extrema_cos`` and greedy matching (``docs/metrics.md#embedding-similarity``).

The class reads the shared encoder artifact (:class:`~tutormetrics.encoders.artifacts.EncodedTexts`);
it never owns or loads the encoder. :func:`embedding_similarity_texts` is the stand-alone entry point
for users with plain lists of strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.names import EMBEDDING_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from tutormetrics.encoders.artifacts import EncodedTexts
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder


def _encoded(art: Artifacts, family: str) -> EncodedTexts:
    if art.encoded is None:
        raise ValueError(f"{family} needs the 'encoder' artifact, but Artifacts.encoded is None")
    return art.encoded


class EmbeddingSimilarity(Metric):
    """Prompt-response similarity of sentence-transformer embeddings (all ``emb_*`` columns).

    - ``emb_mean_cos``: cosine of the mean-pooled last layer (CLS/SEP included, window-weighted);
      equals ``cos(model.encode(p), model.encode(r))`` for texts within ``max_seq_length``.
    - ``emb_extrema_cos``: cosine of vector-extrema vectors (Liu rule, content tokens only).
    - ``emb_greedy_precision`` ``P = mean_i max_j cos(r_i, p_j)``, ``emb_greedy_recall``
      ``R = mean_j max_i cos(r_i, p_j)``, ``emb_greedy = (P+R)/2``, ``emb_greedy_f1 = 2PR/(P+R)``.

    A side with no content tokens makes every column NaN.

    Example:
        >>> EmbeddingSimilarity().columns()[:2]
        ['emb_mean_cos', 'emb_extrema_cos']
    """

    name: ClassVar[str] = "embedding_similarity"
    label: ClassVar[str | None] = "embedding"
    description: ClassVar[str] = "cosine of mean-pooled and extrema embeddings, greedy token matching (P/R/F1)"
    requires: ClassVar[frozenset[str]] = frozenset({"encoder"})
    higher_is_better: ClassVar[bool | None] = True

    def columns(self, n_layers: int | None = None) -> list[str]:
        return list(EMBEDDING_COLUMNS)

    def column_quantities(self, n_layers: int | None = None) -> dict[str, str]:
        """``emb_mean_cos`` is the cosine of the pools (special tokens included) at the last layer."""
        return {} if n_layers is None else {"emb_mean_cos": pooled_cosine_key(n_layers, exclude_special=False)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        from tutormetrics.metrics.functional.embedding import embedding_similarity_batch

        enc = _encoded(art, self.name)
        pi = np.asarray(batch.prompt_idx, dtype=np.int64)
        ri = np.asarray(batch.response_idx, dtype=np.int64)
        L = enc.n_layers
        return embedding_similarity_batch(
            enc.pools[pi, L],
            enc.pools[ri, L],
            enc.extrema[pi],
            enc.extrema[ri],
            [enc.token_states[i] for i in pi],
            [enc.token_states[i] for i in ri],
            prompt_keys=pi,
            normalized=True,
        )


def pooled_cosine_key(layer: int, *, exclude_special: bool) -> str:
    """The quantity key of ``cos(pool_layer(p), pool_layer(r))`` (``Metric.column_quantities``).

    >>> pooled_cosine_key(6, exclude_special=False)
    'pooled_cos:layer=6:special=True'
    """
    return f"pooled_cos:layer={int(layer)}:special={not exclude_special}"


def window_diagnostics(
    encoded: EncodedTexts, prompt_idx: np.ndarray, response_idx: np.ndarray
) -> dict[str, np.ndarray]:
    """Diagnostic columns (not metrics): ``prompt_windows``, ``resp_windows`` (int; 0 = empty,
    1 = fitted) and ``prompt_truncated``, ``resp_truncated`` (bool; truncate mode).

    Args:
        encoded: the encoded unique texts.
        prompt_idx: index into ``encoded`` of each exchange's prompt.
        response_idx: index into ``encoded`` of each exchange's response.
    """
    import numpy as np

    pi = np.asarray(prompt_idx, dtype=np.int64)
    ri = np.asarray(response_idx, dtype=np.int64)
    return {
        "prompt_windows": encoded.n_windows[pi].astype(np.int64),
        "resp_windows": encoded.n_windows[ri].astype(np.int64),
        "prompt_truncated": encoded.truncated[pi].astype(bool),
        "resp_truncated": encoded.truncated[ri].astype(bool),
    }


def _resolve_encoder(encoder: TextEncoder | EncoderConfig | None) -> TextEncoder:
    """A ready encoder of the config's backend (:func:`~tutormetrics.encoders.backend.make_encoder`)."""
    from tutormetrics.encoders.backend import is_encoder, make_encoder
    from tutormetrics.encoders.config import EncoderConfig

    if encoder is None:
        return make_encoder(EncoderConfig())
    if isinstance(encoder, EncoderConfig):
        return make_encoder(encoder)
    if is_encoder(encoder):
        return encoder  # type: ignore[return-value]
    raise TypeError(f"encoder must be a TextEncoder, an EncoderConfig or None, got {type(encoder).__name__}")


def score_texts(
    metric: Metric,
    prompts: Sequence[str],
    responses: Sequence[str],
    encoder: TextEncoder | EncoderConfig | None = None,
    *,
    progress: bool | None = None,
) -> dict[str, np.ndarray]:
    """Score paired texts with an encoder family: NFC, dedupe, encode each unique text once, score.

    Args:
        metric: the encoder family that scores.
        prompts: prompt texts.
        responses: response texts, one per prompt.
        encoder: a :class:`TextEncoder`, an :class:`EncoderConfig`, or ``None`` for the bundled all-MiniLM-L6-v2.
        progress: ``True`` bars, ``False`` nothing, ``None`` by whether stderr is a terminal.
    """
    import numpy as np

    prompts, responses = list(prompts), list(responses)
    if len(prompts) != len(responses):
        raise ValueError(f"expected as many prompts as responses, got {len(prompts)} and {len(responses)}")
    enc = _resolve_encoder(encoder)
    index: dict[str, int] = {}
    pi = np.array([index.setdefault(unicodedata.normalize("NFC", t), len(index)) for t in prompts], dtype=np.int64)
    ri = np.array([index.setdefault(unicodedata.normalize("NFC", t), len(index)) for t in responses], dtype=np.int64)
    texts = list(index)
    art = Artifacts(texts=texts, encoded=enc.encode(texts, progress=progress))
    batch = ExchangeBatch(ids=tuple(str(i) for i in range(len(prompts))), prompt_idx=pi, response_idx=ri)
    return metric.score(batch, art)


def embedding_similarity_texts(
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    encoder: TextEncoder | EncoderConfig | None = None,
    progress: bool | None = None,
) -> dict[str, np.ndarray]:
    """All ``emb_*`` columns for paired prompts and responses; each unique text is encoded once.

    Args:
        prompts: student queries (or dialogue contexts).
        responses: tutor replies, ``responses[i]`` answering ``prompts[i]``.
        encoder: a loaded/unloaded :class:`TextEncoder`, an :class:`EncoderConfig`, or ``None`` for
            the bundled all-MiniLM-L6-v2 on the best local device.
        progress: tqdm bar on stderr (``None``: only on a terminal).

    Returns:
        ``{column: float64 array of len(prompts)}``.

    Example:
        >>> out = embedding_similarity_texts(["What is 2+2?"], ["What is 2+2?"])  # doctest: +SKIP
        >>> float(out["emb_mean_cos"][0])                                        # doctest: +SKIP
        1.0
    """
    return score_texts(EmbeddingSimilarity(), prompts, responses, encoder, progress=progress)

