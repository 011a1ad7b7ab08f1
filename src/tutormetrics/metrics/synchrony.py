"""Layerwise synchrony family: per-layer cosine of pooled prompt and response states (``docs/metrics.md#layerwise-synchrony``).

``s_ℓ = cos(pool_ℓ(p), pool_ℓ(r))`` for hidden states ``ℓ = 0..L`` of separate encoder passes, with
the ``emb_mean_cos`` pooling (CLS/SEP included, window-weighted) or, with ``exclude_special=True``,
the content tokens only. Invariant: ``sync_last == emb_mean_cos``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.embedding import _encoded, pooled_cosine_key, score_texts
from tutormetrics.metrics.functional.names import synchrony_columns

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder


class LayerwiseSynchrony(Metric):
    """Cosine of prompt and response mean pools at every encoder layer, plus summaries.

    Columns for an encoder with ``L`` blocks: ``sync_l00`` (embedding output) … ``sync_lLL``,
    ``sync_min``/``sync_mean``/``sync_max`` (NaN-aware over blocks 1..L), ``sync_mid = s_⌈L/2⌉`` and
    ``sync_last = s_L``.

    The layer count belongs to the encoder: the suite passes it to :meth:`columns`. Called without
    it, :meth:`columns` assumes :attr:`DEFAULT_N_LAYERS` = 6, the bundled all-MiniLM-L6-v2, so that a
    registry listing works without loading a model; :meth:`score` always uses the encoder's count.

    Args:
        exclude_special: pool without CLS/SEP (like extrema and greedy) instead of the default
            sentence-transformers pooling.

    Example:
        >>> LayerwiseSynchrony().columns(2)
        ['sync_l00', 'sync_l01', 'sync_l02', 'sync_min', 'sync_mean', 'sync_max', 'sync_mid', 'sync_last']
    """

    name: ClassVar[str] = "layerwise_synchrony"
    label: ClassVar[str | None] = "synchrony"
    description: ClassVar[str] = "per-layer cosine of mean-pooled prompt and response states (sync_l00..sync_lLL)"
    requires: ClassVar[frozenset[str]] = frozenset({"encoder"})
    higher_is_better: ClassVar[bool | None] = True
    #: Layer count assumed by :meth:`columns` when none is given (all-MiniLM-L6-v2).
    DEFAULT_N_LAYERS: ClassVar[int] = 6

    def __init__(self, exclude_special: bool = False) -> None:
        self.exclude_special = exclude_special

    def columns(self, n_layers: int | None = None) -> list[str]:
        n = self.DEFAULT_N_LAYERS if n_layers is None else n_layers
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
            raise ConfigError(f"n_layers must be a positive integer (the encoder's block count), got {n_layers!r}")
        return synchrony_columns(int(n))

    def column_quantities(self, n_layers: int | None = None) -> dict[str, str]:
        """``sync_lNN`` is the pooled cosine at layer NN; ``sync_mid`` and ``sync_last`` repeat layers ⌈L/2⌉ and L
        (and ``sync_last`` is ``emb_mean_cos`` unless ``exclude_special``)."""
        if n_layers is None:
            return {}
        cols = self.columns(n_layers)
        key = {c: pooled_cosine_key(int(c[6:]), exclude_special=bool(self.exclude_special)) for c in cols if c[6:].isdigit()}
        key["sync_mid"] = key[f"sync_l{math.ceil(n_layers / 2):02d}"]
        key["sync_last"] = key[f"sync_l{n_layers:02d}"]
        return key

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        from tutormetrics.metrics.functional.synchrony import layerwise_synchrony_batch

        enc = _encoded(art, self.name)
        if not isinstance(self.exclude_special, bool):
            raise ConfigError(f"exclude_special must be True or False, got {self.exclude_special!r}")
        pools = enc.pools_content if self.exclude_special else enc.pools
        pi = np.asarray(batch.prompt_idx, dtype=np.int64)
        ri = np.asarray(batch.response_idx, dtype=np.int64)
        out = layerwise_synchrony_batch(pools[pi], pools[ri])
        return {c: out[c] for c in self.columns(enc.n_layers)}


def layerwise_synchrony_texts(
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    encoder: TextEncoder | EncoderConfig | None = None,
    exclude_special: bool = False,
    progress: bool | None = None,
) -> dict[str, np.ndarray]:
    """All ``sync_*`` columns for paired prompts and responses; each unique text is encoded once.

    Args:
        prompts: student queries (or dialogue contexts).
        responses: tutor replies, ``responses[i]`` answering ``prompts[i]``.
        encoder: a :class:`TextEncoder`, an :class:`EncoderConfig`, or ``None`` for the bundled
            all-MiniLM-L6-v2.
        exclude_special: pool without CLS/SEP.
        progress: tqdm bar on stderr (``None``: only on a terminal).

    Returns:
        ``{column: float64 array of len(prompts)}`` with ``sync_l00 .. sync_lLL`` and the summaries.

    Example:
        >>> out = layerwise_synchrony_texts(["Why?"], ["Because."])  # doctest: +SKIP
        >>> sorted(out)[-1]                                           # doctest: +SKIP
        'sync_mid'
    """
    metric = LayerwiseSynchrony(exclude_special=exclude_special)
    return score_texts(metric, prompts, responses, encoder, progress=progress)
