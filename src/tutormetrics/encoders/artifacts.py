"""The encoder artifact: one already-reduced record per unique text, no raw hidden states.

:class:`EncodedTexts` is what :meth:`tutormetrics.encoders.hf.TextEncoder.encode` returns and what
the encoder metric families read from ``Artifacts.encoded``. Its memory is
``U·(L+1)·d·8`` bytes for the two pool arrays plus ``4·d`` bytes per content token for the greedy
token states (MiniLM: 1.5 KiB per word piece), so the suite may encode a large corpus in chunks and
:meth:`EncodedTexts.concat` them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class EncodedTexts:
    """Per-unique-text reductions of one encoder pass (``docs/metrics.md#pooling``, ``docs/metrics.md#layerwise-synchrony``).

    Attributes:
        n_layers: number of transformer blocks ``L`` (hidden states are ``0..L``).
        hidden_size: ``d``.
        pools: ``(U, L+1, d)`` float32, masked mean per layer with CLS/SEP included, window-weighted
            (``Σ_w sum_w / Σ_w n_w``); NaN rows for texts without content tokens. ``pools[:, L]`` is
            the sentence-transformers mean-pooled embedding.
        pools_content: ``(U, L+1, d)`` float32, the same without special tokens
            (``LayerwiseSynchrony(exclude_special=True)``).
        extrema: ``(U, d)`` float32, last-layer vector extrema over content tokens (Liu rule).
        token_states: per text, ``(n_content, d)`` float32 last-layer content-token states with
            L2-normalised rows, all windows concatenated (``(0, d)`` when empty). Stored in float32,
            not float16: half precision moves cosines by ~1e-3, beyond the 1e-5 tolerance. A very long text's
            matrix may be a :class:`~tutormetrics.encoders.spill.SpilledTokens` on disk, a context pooled over its
            turns a :class:`~tutormetrics.encoders.spill.StackedTokens` view over theirs: read with ``np.asarray``
            or :func:`~tutormetrics.encoders.spill.row_blocks`.
        n_content_tokens: ``(U,)`` int, content word pieces that were encoded (rows of ``token_states``;
            in truncate mode at most ``max_seq_length − 2``).
        n_windows: ``(U,)`` int, encoder windows per text (0 = no content tokens, 1 = fitted).
        truncated: ``(U,)`` bool, content was dropped (truncate mode only).
        token_norms: per text, ``(n_content,)`` float32 L2 norms of the last-layer content-token
            states (``token_states[i] * token_norms[i][:, None]`` are the raw vectors); ``None`` when
            the producer did not record them.
        token_offsets: per text, ``(n_content, 2)`` int32 ``(start, end)`` character spans of the
            encoded content pieces in the text as encoded (rows align with ``token_states``; fast
            tokenizers only, else ``None``). In truncate mode only the first window's pieces appear.
        maxima, minima: ``(U, d)`` float32, last-layer per-dimension max and min over content tokens
            (the inputs of :attr:`extrema`; NaN rows for empty texts), so texts made of several parts
            can be pooled exactly (:func:`tutormetrics.encoders.compose.pool_parts`). Optional:
            ``None`` when the producer did not record them.
    """

    n_layers: int
    hidden_size: int
    pools: np.ndarray
    pools_content: np.ndarray
    extrema: np.ndarray
    token_states: list[np.ndarray]
    n_content_tokens: np.ndarray
    n_windows: np.ndarray
    truncated: np.ndarray
    token_norms: list[np.ndarray] | None = None
    token_offsets: list[np.ndarray] | None = None
    maxima: np.ndarray | None = None
    minima: np.ndarray | None = None

    def __post_init__(self) -> None:
        u = len(self.token_states)
        for name in ("token_norms", "token_offsets"):
            value = getattr(self, name)
            if value is not None and len(value) != u:
                raise ValueError(f"EncodedTexts.{name} has {len(value)} entries, expected {u}")
        expected = {
            "pools": (u, self.n_layers + 1, self.hidden_size),
            "pools_content": (u, self.n_layers + 1, self.hidden_size),
            "extrema": (u, self.hidden_size),
            "n_content_tokens": (u,),
            "n_windows": (u,),
            "truncated": (u,),
            "maxima": (u, self.hidden_size),
            "minima": (u, self.hidden_size),
        }
        for name, shape in expected.items():
            if getattr(self, name) is None:
                continue
            got = np.shape(getattr(self, name))
            if got != shape:
                raise ValueError(f"EncodedTexts.{name} has shape {got}, expected {shape}")

    def __len__(self) -> int:
        return len(self.token_states)

    @property
    def empty(self) -> np.ndarray:
        """``(U,)`` bool: texts with no content tokens (every emb_/sync_ column is NaN for them)."""
        return np.asarray(self.n_windows) == 0

    @property
    def n_windowed(self) -> int:
        """Texts split into more than one window (window mode)."""
        return int(np.sum(np.asarray(self.n_windows) > 1))

    @property
    def n_truncated(self) -> int:
        """Texts cut at ``max_seq_length`` (truncate mode)."""
        return int(np.sum(self.truncated))

    @property
    def nbytes(self) -> int:
        """Approximate memory footprint in bytes."""
        arrays = (self.pools, self.pools_content, self.extrema, self.n_content_tokens, self.n_windows)
        return sum(a.nbytes for a in arrays) + sum(t.nbytes for t in self.token_states)

    def subset(self, indices: Sequence[int] | np.ndarray) -> EncodedTexts:
        """A new :class:`EncodedTexts` with the rows ``indices`` (in that order; arrays are copied).

        Example:
            >>> enc.subset([2, 0]).n_content_tokens  # doctest: +SKIP
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        return EncodedTexts(
            n_layers=self.n_layers,
            hidden_size=self.hidden_size,
            pools=self.pools[idx],
            pools_content=self.pools_content[idx],
            extrema=self.extrema[idx],
            token_states=[self.token_states[i] for i in idx],
            n_content_tokens=self.n_content_tokens[idx],
            n_windows=self.n_windows[idx],
            truncated=self.truncated[idx],
            token_norms=None if self.token_norms is None else [self.token_norms[i] for i in idx],
            token_offsets=None if self.token_offsets is None else [self.token_offsets[i] for i in idx],
            maxima=None if self.maxima is None else self.maxima[idx],
            minima=None if self.minima is None else self.minima[idx],
        )

    @classmethod
    def concat(cls, parts: Sequence[EncodedTexts]) -> EncodedTexts:
        """Stack several :class:`EncodedTexts` of the same encoder row-wise (e.g. suite chunks)."""
        if not parts:
            raise ValueError("concat needs at least one EncodedTexts")
        first = parts[0]
        for p in parts[1:]:
            if (p.n_layers, p.hidden_size) != (first.n_layers, first.hidden_size):
                raise ValueError(
                    "cannot concat EncodedTexts of different encoders: "
                    f"(L={p.n_layers}, d={p.hidden_size}) vs (L={first.n_layers}, d={first.hidden_size})"
                )
        return cls(
            n_layers=first.n_layers,
            hidden_size=first.hidden_size,
            pools=np.concatenate([p.pools for p in parts]),
            pools_content=np.concatenate([p.pools_content for p in parts]),
            extrema=np.concatenate([p.extrema for p in parts]),
            token_states=[t for p in parts for t in p.token_states],
            n_content_tokens=np.concatenate([p.n_content_tokens for p in parts]),
            n_windows=np.concatenate([p.n_windows for p in parts]),
            truncated=np.concatenate([p.truncated for p in parts]),
            token_norms=_concat_lists([p.token_norms for p in parts]),
            token_offsets=_concat_lists([p.token_offsets for p in parts]),
            maxima=_concat_optional([p.maxima for p in parts]),
            minima=_concat_optional([p.minima for p in parts]),
        )

    @classmethod
    def empty_like(cls, n_layers: int, hidden_size: int, n: int = 0) -> EncodedTexts:
        """``n`` texts without content tokens (NaN pools and extrema, no token states).

        Args:
            n_layers: number of transformer layers L (pools hold L + 1 entries).
            hidden_size: vector width d.
            n: number of texts.
        """
        return cls(
            n_layers=n_layers,
            hidden_size=hidden_size,
            pools=np.full((n, n_layers + 1, hidden_size), np.nan, dtype=np.float32),
            pools_content=np.full((n, n_layers + 1, hidden_size), np.nan, dtype=np.float32),
            extrema=np.full((n, hidden_size), np.nan, dtype=np.float32),
            token_states=[np.zeros((0, hidden_size), dtype=np.float32) for _ in range(n)],
            n_content_tokens=np.zeros(n, dtype=np.int64),
            n_windows=np.zeros(n, dtype=np.int64),
            truncated=np.zeros(n, dtype=bool),
            maxima=np.full((n, hidden_size), np.nan, dtype=np.float32),
            minima=np.full((n, hidden_size), np.nan, dtype=np.float32),
        )


def _concat_lists(lists: Sequence[list[np.ndarray] | None]) -> list[np.ndarray] | None:
    """Per-text lists of every part joined, or ``None`` when any part lacks them."""
    if any(v is None for v in lists):
        return None
    return [a for v in lists for a in v]  # type: ignore[union-attr]
def _concat_optional(arrays: list[np.ndarray | None]) -> np.ndarray | None:
    """Concatenate optional per-text arrays; ``None`` when any part lacks them."""
    if any(a is None for a in arrays):
        return None
    return np.concatenate(arrays)  # type: ignore[arg-type]
