"""Column names of the encoder families in plain Python, so that listing the registry (``tutormetrics metrics``)
imports no numpy (``docs/development.md#command-loading``); :mod:`.embedding` and :mod:`.synchrony` compute them.

Example:
    >>> EMBEDDING_COLUMNS[0], synchrony_columns(1)[:2]
    ('emb_mean_cos', ['sync_l00', 'sync_l01'])
"""

from __future__ import annotations

__all__ = ["EMBEDDING_COLUMNS", "SUMMARY_COLUMNS", "synchrony_columns"]

#: The six embedding columns, in canonical order.
EMBEDDING_COLUMNS: tuple[str, ...] = (
    "emb_mean_cos",
    "emb_extrema_cos",
    "emb_greedy",
    "emb_greedy_precision",
    "emb_greedy_recall",
    "emb_greedy_f1",
)

#: The synchrony summaries after the per-layer columns.
SUMMARY_COLUMNS: tuple[str, ...] = ("sync_min", "sync_mean", "sync_max", "sync_mid", "sync_last")


def synchrony_columns(n_layers: int) -> list[str]:
    """Column names for an encoder with ``n_layers`` blocks: ``sync_l00..sync_lLL`` and the summaries.

    Example:
        >>> synchrony_columns(2)
        ['sync_l00', 'sync_l01', 'sync_l02', 'sync_min', 'sync_mean', 'sync_max', 'sync_mid', 'sync_last']
    """
    if int(n_layers) < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    return [f"sync_l{i:02d}" for i in range(int(n_layers) + 1)] + list(SUMMARY_COLUMNS)
