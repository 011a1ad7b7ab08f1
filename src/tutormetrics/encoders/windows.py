"""Backend-neutral encoder pieces (numpy only): windows, batches, batch inputs, per-window reductions, pooling.

Both encoder backends, :mod:`tutormetrics.encoders.hf` (torch) and :mod:`tutormetrics.encoders.onnx.encoder`
(ONNX Runtime), cut texts and pool windows with these functions, so their numbers differ only by what
the network computes (``docs/metrics.md#pooling``, ``docs/metrics.md#layerwise-synchrony``):

* a text of ``n`` word pieces gets ``ceil(n / w)`` windows of ``w = max_seq_length − 2`` content pieces
  (``long_text="truncate"``: the first only), each wrapped in CLS/SEP;
* windows sorted longest first are cut into batches (:func:`plan_batches`);
* per window: layer sums over all real tokens and over content tokens, last-layer max/min over content
  tokens, unit content-token vectors and their norms;
* per text: ``pooled = Σ_w sum_w / Σ_w n_w`` (:func:`combine`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.pieces import SEGMENT_CHARS, pieces_in_segments
from tutormetrics.encoders.reductions import extrema_rule
from tutormetrics.encoders.spill import SpilledTokens


@dataclass
class Windows:
    """All windows of a call, in text order: window ``k`` covers ``ids[text[k]][start[k]:start[k]+length[k]]``."""

    text: np.ndarray
    start: np.ndarray
    length: np.ndarray


def cut_windows(n_tok: np.ndarray, window: int, long_text: str) -> tuple[Windows, np.ndarray, np.ndarray]:
    """Cut texts of ``n_tok`` pieces into windows of ``window`` pieces; returns the windows, windows per
    text and the truncated flags (``long_text="truncate"`` keeps the first window).

    Args:
        n_tok: (U,) content word pieces per text.
        window: content pieces per window.
        long_text: ``"window"`` (cut every text into windows) or ``"truncate"`` (keep the first window).

    Example:
        >>> win, n_win, trunc = cut_windows(np.array([5, 0, 2]), 2, "window")
        >>> n_win.tolist(), win.start.tolist(), win.length.tolist()
        ([3, 0, 1], [0, 2, 4, 0], [2, 2, 1, 2])
    """
    n_tok = np.asarray(n_tok, dtype=np.int64)
    if long_text == "window":
        n_win = -(-n_tok // window)  # ceil; 0 for empty texts
    else:
        n_win = (n_tok > 0).astype(np.int64)
    truncated = (n_tok > window) & (long_text == "truncate")
    text = np.repeat(np.arange(len(n_tok)), n_win)
    first = np.concatenate(([0], np.cumsum(n_win)[:-1])) if len(n_tok) else np.zeros(0, np.int64)
    k_in_text = np.arange(len(text)) - np.repeat(first, n_win)
    start = k_in_text * window
    length = np.minimum(window, n_tok[text] - start) if len(text) else np.zeros(0, np.int64)
    return Windows(text=text, start=start, length=length), n_win, truncated


def plan_batches(padded_lengths: np.ndarray, batch_size: int, batch_tokens: int | None) -> list[tuple[int, int]]:
    """Cut windows sorted longest first into batches ``[b0, b1)``.

    Without a token budget every batch holds ``batch_size`` windows. With one, a batch starting at a
    window of padded length ``ℓ`` holds ``max(1, batch_tokens // ℓ)`` windows (its padded size
    ``windows × ℓ`` stays within the budget, since later windows are no longer).

    Args:
        padded_lengths: padded length of each window, longest first.
        batch_size: windows per batch without a token budget.
        batch_tokens: token budget per batch (windows × padded length); ``None``: no budget.

    Example:
        >>> plan_batches(np.array([8, 8, 4, 4, 4, 2]), 2, None)
        [(0, 2), (2, 4), (4, 6)]
        >>> plan_batches(np.array([8, 8, 4, 4, 4, 2]), 2, 16)
        [(0, 2), (2, 6)]
    """
    n = len(padded_lengths)
    bounds: list[tuple[int, int]] = []
    b0 = 0
    while b0 < n:
        size = batch_size if batch_tokens is None else max(1, batch_tokens // int(padded_lengths[b0]))
        bounds.append((b0, min(n, b0 + size)))
        b0 += size
    return bounds


def flatten(ids: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """All texts' word pieces in one array, and where each text starts in it.

    Example:
        >>> flatten([[5, 6], [], [7]])
        (array([5, 6, 7]), array([0, 2, 2]))
    """
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if len(ids) else np.zeros(0, np.int64)
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
    return flat, starts


def batch_inputs(
    flat_ids: np.ndarray, starts: np.ndarray, content_len: np.ndarray, prefix: list[int], suffix: list[int], pad_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One padded batch (vectorised): ``input_ids``, ``attention_mask`` (int64), the content-token mask and
    the row-major positions of the content tokens.

    Args:
        flat_ids: word-piece ids of all texts, concatenated.
        starts: (B,) offset in ``flat_ids`` of each window's first content piece.
        content_len: (B,) content pieces per window.
        prefix: special ids put before the content (e.g. ``[CLS]``).
        suffix: special ids put after the content (e.g. ``[SEP]``).
        pad_id: id of the padding token.

    Example:
        >>> ids, attn, content, index = batch_inputs(np.array([7, 8, 9]), np.array([0, 2]), np.array([2, 1]), [101], [102], 0)
        >>> ids.tolist(), attn.tolist(), index.tolist()
        ([[101, 7, 8, 102], [101, 9, 102, 0]], [[1, 1, 1, 1], [1, 1, 1, 0]], [1, 2, 5])
    """
    n_prefix = len(prefix)
    B = len(starts)
    lens = content_len + n_prefix + len(suffix)
    T = int(lens.max())
    pos = np.arange(T)
    rel = pos[None, :] - n_prefix  # content position of every column
    content = (rel >= 0) & (rel < content_len[:, None])
    input_ids = np.full((B, T), pad_id, dtype=np.int64)
    input_ids[content] = flat_ids[(starts[:, None] + rel)[content]]
    if n_prefix:
        input_ids[:, :n_prefix] = prefix
    for k, tok in enumerate(suffix):
        input_ids[np.arange(B), n_prefix + content_len + k] = tok
    attn = (pos[None, :] < lens[:, None]).astype(np.int64)
    return input_ids, attn, content, np.flatnonzero(content)


WindowRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]


def reduce_windows(hidden: Sequence[np.ndarray], attn: np.ndarray, content: np.ndarray, content_len: np.ndarray) -> WindowRows:
    """Per window, in float32 (numpy; :func:`tutormetrics.encoders.hf._reduce` is the torch twin): layer sums
    over all real tokens and over content tokens ``(B, L+1, d)``, last-layer max and min over content tokens
    ``(B, d)``, then per window its content tokens' unit vectors and norms.

    Sums are ``mask · h`` per window (a matrix product over positions).

    Args:
        hidden: per layer (embeddings first), the (B, T, d) hidden states of the batch.
        attn: (B, T) attention mask.
        content: (B, T) content-token mask.
        content_len: (B,) content tokens per window.

    Example:
        >>> h = np.arange(12, dtype=np.float32).reshape(1, 3, 4)  # 1 window, 3 positions, d = 4
        >>> attn = np.array([[1, 1, 0]]); content = np.array([[False, True, False]])
        >>> s_all, s_c, vmax, vmin, unit, norms = reduce_windows([h], attn, content, np.array([1]))
        >>> s_all[0, 0].tolist(), vmax[0].tolist(), norms[0].shape
        ([4.0, 6.0, 8.0, 10.0], [4.0, 5.0, 6.0, 7.0], (1,))
    """
    mask_all = attn.astype(np.float32)[:, None, :]
    mask_content = content.astype(np.float32)[:, None, :]
    s_all = np.stack([np.matmul(mask_all, h.astype(np.float32, copy=False))[:, 0] for h in hidden], axis=1)
    s_content = np.stack([np.matmul(mask_content, h.astype(np.float32, copy=False))[:, 0] for h in hidden], axis=1)
    last = np.asarray(hidden[-1], dtype=np.float32)
    flat = last[content]  # (Σ content tokens, d), row-major over (window, position)
    splits = np.cumsum(content_len)[:-1]
    d = last.shape[-1]
    vmax = np.full((len(last), d), -np.inf, dtype=np.float32)
    vmin = np.full((len(last), d), np.inf, dtype=np.float32)
    has = content_len > 0
    if has.any():
        first = np.concatenate(([0], np.cumsum(content_len)[:-1]))[has]
        vmax[has] = np.maximum.reduceat(flat, first, axis=0)
        vmin[has] = np.minimum.reduceat(flat, first, axis=0)
    norms = np.sqrt(np.einsum("td,td->t", flat, flat, dtype=np.float32)).astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = flat / norms[:, None]  # 0/0 -> NaN (zero norm), as the torch path
    return s_all, s_content, vmax, vmin, np.split(unit, splits), np.split(norms, splits)


def word_pieces(
    call: Callable[..., Any], texts: Sequence[str], with_offsets: bool, segmentable: bool
) -> tuple[list[Any], list[np.ndarray] | None]:
    """Ids (lists, or int64 arrays for texts over :data:`~tutormetrics.encoders.pieces.SEGMENT_CHARS` characters,
    tokenised in segments when ``segmentable``) and, if asked, int32 ``(start, end)`` spans; ``call`` is the
    backend's one tokenizer call (a list of texts → ``{"input_ids": ..., "offset_mapping": ...}``).

    Args:
        call: the backend's tokenizer call.
        texts: the texts.
        with_offsets: also return the ``(start, end)`` character spans.
        segmentable: tokenise texts over ``SEGMENT_CHARS`` characters in segments.
    """
    if not texts:
        return [], [] if with_offsets else None
    long = [i for i, t in enumerate(texts) if len(t) > SEGMENT_CHARS] if segmentable else []
    ids: list[Any] = [None] * len(texts)
    offsets: list[Any] = [None] * len(texts)
    for i in long:
        ids[i], offsets[i] = pieces_in_segments(call, texts[i], with_offsets)
    skip = set(long)
    rest = [i for i in range(len(texts)) if i not in skip]
    if rest:
        out = call([texts[i] for i in rest], **({"return_offsets_mapping": True} if with_offsets else {}))
        for j, i in enumerate(rest):
            ids[i] = out["input_ids"][j]
            if with_offsets:
                offsets[i] = np.asarray(out["offset_mapping"][j], dtype=np.int32).reshape(-1, 2)
    return ids, offsets if with_offsets else None


class WindowSink:
    """Where one encode call's per-window rows land, in text order: window sums and extrema in arrays, content
    tokens in each text's rows (a single-window text takes its window's rows; a longer one one matrix, on disk
    above ``spill_mb``, that every window fills at its offset)."""

    def __init__(self, win: Windows, n_win: np.ndarray, n_layers: int, d: int, spill_mb: float | None) -> None:
        n = len(win.text)
        self.win, self.n_win = win, n_win
        self.sums_all = np.zeros((n, n_layers + 1, d), dtype=np.float32)
        self.sums_content = np.zeros((n, n_layers + 1, d), dtype=np.float32)
        self.wmax = np.zeros((n, d), dtype=np.float32)
        self.wmin = np.zeros((n, d), dtype=np.float32)
        self.states, self.norms = token_destinations(win, n_win, d, spill_mb)

    def put(self, sel: np.ndarray, rows: WindowRows) -> None:
        """Write a batch's rows (windows ``sel``) to their places."""
        win, n_win, states, norms = self.win, self.n_win, self.states, self.norms
        self.sums_all[sel], self.sums_content[sel], self.wmax[sel], self.wmin[sel] = rows[0], rows[1], rows[2], rows[3]
        for k, tokens, token_norms in zip(sel, rows[4], rows[5], strict=True):
            t, start = win.text[k], win.start[k]
            if n_win[t] == 1:
                states[t], norms[t] = tokens, token_norms
                continue
            if isinstance(states[t], SpilledTokens):
                states[t].write_rows(start, tokens)
            else:
                states[t][start : start + len(tokens)] = tokens
            norms[t][start : start + len(token_norms)] = token_norms

    def combine(self, n_texts: int, n_layers: int, d: int, n_special: int, truncated: np.ndarray) -> EncodedTexts:
        """The per-text :class:`EncodedTexts` (:func:`combine`).

        Args:
            n_texts: number of texts U.
            n_layers: number of transformer layers L.
            d: vector width.
            n_special: special tokens per window.
            truncated: (U,) truncated flags.
        """
        return combine(
            n_texts=n_texts, n_layers=n_layers, d=d, win=self.win, n_win=self.n_win, truncated=truncated,
            n_special=n_special, sums_all=self.sums_all, sums_content=self.sums_content, wmax=self.wmax,
            wmin=self.wmin, states=self.states, norms=self.norms,
        )  # fmt: skip


def token_destinations(win: Windows, n_win: np.ndarray, d: int, spill_mb: float | None) -> tuple[list[Any], list[Any]]:
    """Per text: where its content-token states and norms go (``None`` for texts of at most one window,
    which take their window's rows; a float32 matrix, or a :class:`SpilledTokens` above ``spill_mb``).

    Args:
        win: the call's windows.
        n_win: (U,) windows per text.
        d: vector width.
        spill_mb: a text's token matrix above this many MiB goes to disk; ``None``: never.
    """
    n_tokens = np.bincount(win.text, weights=win.length, minlength=len(n_win)).astype(np.int64)
    spill_bytes = None if spill_mb is None else spill_mb * 2**20
    states: list[Any] = [None] * len(n_win)
    norms: list[Any] = [None] * len(n_win)
    multi = np.flatnonzero(n_win > 1)
    big = [t for t in multi if spill_bytes is not None and n_tokens[t] * d * 4 > spill_bytes]
    if big:  # one file for all of them
        for t, spilled in zip(big, SpilledTokens.sharing_one_file([(int(n_tokens[t]), d) for t in big]), strict=True):
            states[t] = spilled
    for t in multi:
        if states[t] is None:
            states[t] = np.empty((int(n_tokens[t]), d), dtype=np.float32)
        norms[t] = np.empty(int(n_tokens[t]), dtype=np.float32)
    return states, norms


def combine(
    *,
    n_texts: int,
    n_layers: int,
    d: int,
    win: Windows,
    n_win: np.ndarray,
    truncated: np.ndarray,
    n_special: int,
    sums_all: np.ndarray,
    sums_content: np.ndarray,
    wmax: np.ndarray,
    wmin: np.ndarray,
    states: list[Any],
    norms: list[Any],
) -> EncodedTexts:
    """Windows (in text order) → per-text pools and extrema: ``pooled = Σ_w sum_w / Σ_w n_w`` (token-weighted
    mean of window means, summed in float64); ``states``/``norms`` are the texts' token rows.

    Args:
        n_texts: number of texts U.
        n_layers: number of transformer layers L.
        d: vector width.
        win: the windows, in text order.
        n_win: (U,) windows per text.
        truncated: (U,) truncated flags.
        n_special: special tokens per window (counted in the all-token pools).
        sums_all: (W, L + 1, d) per-window sums over all real tokens.
        sums_content: (W, L + 1, d) per-window sums over content tokens.
        wmax: (W, d) per-window last-layer maxima over content tokens.
        wmin: (W, d) per-window last-layer minima over content tokens.
        states: per text, its content-token states (:func:`token_destinations`).
        norms: per text, its content-token norms.
    """
    enc = EncodedTexts.empty_like(n_layers, d, n_texts)
    enc.token_norms = [np.zeros(0, dtype=np.float32) for _ in range(n_texts)]
    has = n_win > 0
    if not has.any():
        return enc
    first = np.concatenate(([0], np.cumsum(n_win)[:-1]))[has]
    counts_all = (win.length + n_special).astype(np.float64)
    counts_content = win.length.astype(np.float64)
    # cast on the fly by reduceat: no float64 copy of every window's sums
    tot_all = np.add.reduceat(sums_all, first, axis=0, dtype=np.float64)
    tot_content = np.add.reduceat(sums_content, first, axis=0, dtype=np.float64)
    n_all = np.add.reduceat(counts_all, first)[:, None, None]
    n_content = np.add.reduceat(counts_content, first)[:, None, None]
    enc.pools[has] = (tot_all / n_all).astype(np.float32)
    enc.pools_content[has] = (tot_content / n_content).astype(np.float32)
    vmax = np.maximum.reduceat(wmax, first, axis=0)
    vmin = np.minimum.reduceat(wmin, first, axis=0)
    enc.extrema[has] = extrema_rule(vmax, vmin).astype(np.float32)
    assert enc.maxima is not None and enc.minima is not None
    enc.maxima[has], enc.minima[has] = vmax, vmin
    for t in np.flatnonzero(has):
        enc.token_states[t], enc.token_norms[t] = states[t], norms[t]
    enc.n_content_tokens[:] = np.bincount(win.text, weights=win.length, minlength=n_texts).astype(np.int64)
    enc.n_windows[:] = n_win
    enc.truncated[:] = truncated
    return enc

