"""Layerwise synchrony between a prompt and a response (``docs/metrics.md#layerwise-synchrony``), as pure numpy functions.

Hidden states run over layers ``0..L`` (0 = embedding output, 1..L = transformer blocks). Per layer,
``s_ℓ = cos(pool_ℓ(p), pool_ℓ(r))`` with the same pooling as ``emb_mean_cos``. Summaries (min, mean,
max) are NaN-aware over the blocks ``1..L`` only; ``sync_mid = s_⌈L/2⌉`` and ``sync_last = s_L``
(which equals ``emb_mean_cos``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tutormetrics.metrics.functional.embedding import cosine_rows
from tutormetrics.metrics.functional.names import SUMMARY_COLUMNS as SUMMARY_COLUMNS  # defined where numpy is not
from tutormetrics.metrics.functional.names import synchrony_columns as synchrony_columns


def layerwise_synchrony_batch(prompt_pools: np.ndarray, resp_pools: np.ndarray) -> dict[str, np.ndarray]:
    """Synchrony columns for ``n`` pairs from ``(n, L+1, d)`` pooled states per layer.

    ``s[k, ℓ] = cos(prompt_pools[k, ℓ], resp_pools[k, ℓ])``; NaN where a pool is NaN or has zero norm.

    Example:
        >>> p = np.array([[[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
        >>> r = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
        >>> layerwise_synchrony_batch(p, r)["sync_mean"].round(6)
        array([0.853553])
    """
    p = np.asarray(prompt_pools, dtype=np.float64)
    r = np.asarray(resp_pools, dtype=np.float64)
    if p.ndim != 3 or p.shape != r.shape:
        raise ValueError(f"expected two (n, L+1, d) arrays of equal shape, got {p.shape} and {r.shape}")
    n_layers = p.shape[1] - 1
    s = cosine_rows(p, r)  # (n, L+1)
    out = {f"sync_l{i:02d}": s[:, i] for i in range(n_layers + 1)}
    blocks = s[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN, as specified
        out["sync_min"] = np.nanmin(blocks, axis=1) if n_layers else np.full(len(s), np.nan)
        out["sync_mean"] = np.nanmean(blocks, axis=1) if n_layers else np.full(len(s), np.nan)
        out["sync_max"] = np.nanmax(blocks, axis=1) if n_layers else np.full(len(s), np.nan)
    out["sync_mid"] = s[:, math.ceil(n_layers / 2)]
    out["sync_last"] = s[:, n_layers]
    return {k: np.asarray(v, dtype=np.float64) + 0.0 for k, v in out.items()}


def layerwise_synchrony(prompt_pools: np.ndarray, resp_pools: np.ndarray) -> dict[str, float]:
    """Synchrony columns of one exchange from ``(L+1, d)`` per-layer pools of prompt and response.

    Example (``docs/metrics.md#example-synchrony``, default pooling with CLS/SEP, PAD ignored):
        >>> from tutormetrics.metrics.functional.embedding import masked_mean_pool
        >>> hp = np.array([[[1, 0], [0, 1], [1, 0], [9, 9]], [[1, 1], [1, 0], [0, 0], [9, 9]],
        ...                [[0, 1], [0, 2], [0, 1], [9, 9]]], dtype=float)
        >>> hr = np.array([[[1, 0], [1, 1], [0, 1], [1, 0]], [[1, 0], [2, 0], [0, 1], [1, 1]],
        ...                [[1, 1], [0, 1], [0, 1], [0, 1]]], dtype=float)
        >>> out = layerwise_synchrony(masked_mean_pool(hp, np.array([1, 1, 1, 0])),
        ...                           masked_mean_pool(hr, np.array([1, 1, 1, 1])))
        >>> {k: round(v, 6) for k, v in out.items()}["sync_l00"], round(out["sync_mean"], 6)
        (0.992278, 0.985071)
    """
    p = np.asarray(prompt_pools, dtype=np.float64)
    r = np.asarray(resp_pools, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"expected (L+1, d) pools, got shape {p.shape}")
    return {k: float(v[0]) for k, v in layerwise_synchrony_batch(p[None], r[None]).items()}
