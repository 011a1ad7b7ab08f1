"""Encoder values of a text made of parts, from the parts' own encodings (``docs/metrics.md#pooling``).

A dialogue context is its turns joined with ``"\\n"``. Encoding each turn once, as its own window (or
windows), and pooling the context over its turns gives exactly what docs/metrics.md#pooling gives for a long text split
into those windows:

* mean pools (every layer, with and without CLS/SEP): ``Σ_t n_t · pool_t / Σ_t n_t`` with ``n_t`` the
  tokens pooled for part ``t`` (content tokens, plus the special tokens of each of its windows);
* extrema: the Liu rule on the per-dimension max / min over all parts' content tokens;
* greedy token set: all parts' content-token states, in order (a :class:`~tutormetrics.encoders.spill.StackedTokens`
  view over the parts' matrices, concatenated only when read);
* windows and content tokens add up; ``truncated`` if any part was truncated.

Parts without content tokens contribute nothing; a text whose parts are all empty is empty (NaN).
Each part is encoded once however many texts share it, so a conversation of T turns costs O(T)
encoder work instead of the O(T²) of encoding every flattened prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.reductions import extrema_rule
from tutormetrics.encoders.spill import SpilledTokens, StackedTokens, is_spilled, row_blocks

#: Parts combined per vectorised block (bounds the float64 working memory).
_BLOCK = 4096


def pool_parts(enc: EncodedTexts, parts: Sequence[Sequence[int]], n_special: int) -> EncodedTexts:
    """One pooled record per entry of ``parts`` (indices into ``enc``, in text order).

    ``pool = Σ_t (n_content_t + n_special · n_windows_t) · pool_t / Σ_t (…)``; content pools weight by
    ``n_content_t``; extrema from the max/min over parts; token states concatenated.

    Args:
        enc: the encoded parts (with ``maxima`` and ``minima``).
        parts: per output record, the indices into ``enc`` of its parts; an empty entry gives an empty record.
        n_special: special tokens per window (their states are in the all-token pools).

    Example (two parts of one content token each, 1-d, no special tokens):
        >>> e = EncodedTexts(n_layers=0, hidden_size=1, pools=np.array([[[1.0]], [[4.0]]], np.float32),
        ...     pools_content=np.array([[[1.0]], [[4.0]]], np.float32), extrema=np.array([[1.0], [4.0]], np.float32),
        ...     token_states=[np.ones((1, 1), np.float32)] * 2, n_content_tokens=np.array([1, 1]),
        ...     n_windows=np.array([1, 1]), truncated=np.zeros(2, bool),
        ...     maxima=np.array([[1.0], [4.0]], np.float32), minima=np.array([[1.0], [4.0]], np.float32))
        >>> out = pool_parts(e, [[0, 1], [1], []], n_special=2)
        >>> out.pools[:, 0, 0].round(4).tolist(), out.n_windows.tolist(), out.extrema[0, 0].item()
        ([2.5, 4.0, nan], [2, 1, 0], 4.0)
    """
    if enc.maxima is None or enc.minima is None:
        raise ValueError("pool_parts needs EncodedTexts with maxima and minima (TextEncoder.encode records them)")
    n = len(parts)
    out = EncodedTexts.empty_like(enc.n_layers, enc.hidden_size, n)
    lens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=n)
    flat = np.fromiter((i for p in parts for i in p), dtype=np.int64, count=int(lens.sum()))
    seg = np.repeat(np.arange(n, dtype=np.int64), lens)
    n_win = np.asarray(enc.n_windows, dtype=np.int64)
    n_content = np.asarray(enc.n_content_tokens, dtype=np.int64)
    out.n_windows[:] = np.bincount(seg, weights=n_win[flat], minlength=n).astype(np.int64)
    out.n_content_tokens[:] = np.bincount(seg, weights=n_content[flat], minlength=n).astype(np.int64)
    out.truncated[:] = np.bincount(seg, weights=np.asarray(enc.truncated)[flat], minlength=n) > 0

    live = n_win[flat] > 0
    flat, seg = flat[live], seg[live]
    if not len(flat):
        return out
    w_all = (n_content[flat] + n_special * n_win[flat]).astype(np.float64)
    w_content = n_content[flat].astype(np.float64)
    # Blocks of whole groups: [start, stop) over the (sorted) live parts.
    bounds = np.flatnonzero(np.diff(seg)) + 1
    starts = np.concatenate(([0], bounds))
    stop_all = np.concatenate((bounds, [len(seg)]))
    g = 0
    while g < len(starts):
        h = g + 1
        while h < len(starts) and stop_all[h - 1] - starts[g] < _BLOCK:
            h += 1
        lo, hi = starts[g], stop_all[h - 1]
        sel, rows = flat[lo:hi], seg[starts[g:h]]
        local = starts[g:h] - lo
        for name, w in (("pools", w_all), ("pools_content", w_content)):
            src = getattr(enc, name)[sel].astype(np.float64) * w[lo:hi, None, None]
            total = np.add.reduceat(src, local, axis=0)
            count = np.add.reduceat(w[lo:hi], local)[:, None, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                getattr(out, name)[rows] = (total / count).astype(np.float32)
        vmax = np.maximum.reduceat(enc.maxima[sel], local, axis=0)
        vmin = np.minimum.reduceat(enc.minima[sel], local, axis=0)
        out.maxima[rows], out.minima[rows] = vmax, vmin
        out.extrema[rows] = extrema_rule(vmax, vmin).astype(np.float32)
        g = h
    for row, a, b in zip(seg[starts], starts, stop_all, strict=True):
        states = [enc.token_states[i] for i in flat[a:b]]
        out.token_states[row] = states[0] if len(states) == 1 else _stack_rows(states)
    return out


def _stack_rows(parts: Sequence[np.ndarray | SpilledTokens]) -> StackedTokens | SpilledTokens:
    """Rows of every part, in order: a view over the parts in memory (no copy per context:
    ``docs/design/dialogue.md#context-memory``), or on disk when a part already was."""
    if not any(is_spilled(p) for p in parts):
        return StackedTokens(parts)  # type: ignore[arg-type]
    out = SpilledTokens(sum(len(p) for p in parts), parts[0].shape[1])
    row = 0
    for part in parts:
        for start, block in row_blocks(part):
            out.write_rows(row + start, block)
        row += len(part)
    return out
