"""Local coherence of the response: mean cosine between consecutive sentence vectors.

With the sentences ``S(r)`` (``docs/metrics.md#sentences``) located in the response as character spans, each
sentence vector is the mean of the response's last-layer content-token vectors whose span *starts*
inside the sentence's span (CLS/SEP and padding excluded), and

    resp_coherence = mean_{k=1..m−1} cos(s_k, s_{k+1})

over the m sentences that received at least one token. NaN when m < 2, and a pair whose vector has
zero norm is left out of the mean (NaN when no pair is left).

The token vectors come from the single encoder pass the other encoder families read: nothing is
re-encoded per sentence, so each token keeps its context in the whole reply.

**Long replies** (``docs/metrics.md#long-texts``): with ``long_text="window"`` the reply was encoded in
consecutive windows of ``max_seq_length − 2`` pieces; every piece of every window is used, each with
the context of its own window, and a sentence that straddles a window boundary pools the pieces from
both windows. With ``long_text="truncate"`` only the first window's pieces exist: sentences after the
cut get no token and drop out, and a sentence cut in two keeps the pieces before the cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tutormetrics.text import split_sentences

NAN = float("nan")
_NON_SPACE = re.compile(r"\S+")  # \s in a str pattern is exactly str.isspace()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans in ``text`` of the sentences ``S(text)``, in order.

    ``S`` strips list markers and whitespace and may join an abbreviation's segments with one space,
    so each sentence is located by its non-whitespace characters, which appear contiguously and in
    order in ``text``. ``text`` should be NFC-normalised (as the suite's texts are).

    Example:
        >>> t = "Good job.  Now   add 2.\\n1. Then check."
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['Good job.', 'Now   add 2.', 'Then check.']
    """
    runs = [(m.start(), m.end()) for m in _NON_SPACE.finditer(text)]
    lengths = np.fromiter((b - a for a, b in runs), dtype=np.int64, count=len(runs))
    firsts = np.fromiter((a for a, _ in runs), dtype=np.int64, count=len(runs))
    # positions[k]: where the k-th non-whitespace character of text is
    into = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(runs) else np.zeros(0, np.int64)
    positions = np.repeat(firsts - into, lengths) + np.arange(int(lengths.sum()))
    compact = "".join(text[a:b] for a, b in runs)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        needle = "".join(sentence.split())
        if not needle:
            continue
        at = compact.find(needle, cursor)
        if at < 0:  # cannot happen for S's output; skip rather than guess
            continue
        spans.append((int(positions[at]), int(positions[at + len(needle) - 1]) + 1))
        cursor = at + len(needle)
    return spans


def sentence_token_ranges(offsets: np.ndarray, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Per sentence span, the rows ``[lo, hi)`` of the tokens whose start lies in ``[start, end)``; sentences
    without a token are left out. Token starts are in text order (windows follow each other), so each
    sentence's tokens are one run found by binary search.

    Example:
        >>> sentence_token_ranges(np.array([[0, 1], [2, 3], [5, 6]]), [(0, 4), (4, 5), (5, 12)])
        [(0, 2), (2, 3)]
    """
    starts = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)[:, 0]
    lo = np.searchsorted(starts, [a for a, _ in spans], side="left")
    hi = np.searchsorted(starts, [b for _, b in spans], side="left")
    return [(int(a), int(b)) for a, b in zip(lo, hi, strict=True) if b > a]


def sentence_vectors(
    vectors: np.ndarray, offsets: np.ndarray, spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Mean token vector per sentence span, over the tokens whose start lies in ``[start, end)``.

    Sentences without a token are dropped. Returns ``(m, d)`` float64.

    Args:
        vectors: (n, d) token vectors.
        offsets: (n, 2) character ``(start, end)`` of each token.
        spans: character ``(start, end)`` of each sentence.

    Example:
        >>> v = np.array([[1.0, 0], [3, 0], [0, 2]])
        >>> sentence_vectors(v, np.array([[0, 1], [2, 3], [5, 6]]), [(0, 4), (4, 8), (9, 12)]).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    vecs = np.asarray(vectors, dtype=np.float64)
    d = vecs.shape[1] if vecs.ndim == 2 else 0
    starts = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)[:, 0]
    if np.all(np.diff(starts) >= 0):
        out = [vecs[a:b].mean(axis=0) for a, b in sentence_token_ranges(offsets, spans)]
    else:  # tokens out of text order: select each sentence's by mask
        masks = [(starts >= a) & (starts < b) for a, b in spans]
        out = [vecs[m].mean(axis=0) for m in masks if m.any()]
    return np.array(out, dtype=np.float64).reshape(len(out), d)


def consecutive_cosine(sent: np.ndarray) -> float:
    """Mean cosine of consecutive rows; NaN with fewer than two rows or no pair of non-zero rows.

    Example:
        >>> consecutive_cosine(np.array([[1.0, 0], [1, 1], [0, 1]]))
        0.7071067811865475
    """
    if sent.shape[0] < 2:
        return NAN
    norms = np.linalg.norm(sent, axis=1)
    num = np.einsum("kd,kd->k", sent[:-1], sent[1:])
    den = norms[:-1] * norms[1:]
    ok = den > 0
    if not ok.any():
        return NAN
    return float(np.clip(np.mean(num[ok] / den[ok]), -1.0, 1.0)) + 0.0


def response_coherence(text: str, vectors: np.ndarray, offsets: np.ndarray) -> float:
    """``resp_coherence`` of one response from its last-layer token vectors and their character spans.

    Args:
        text: the response.
        vectors: (n, d) last-layer token vectors; none gives NaN.
        offsets: (n, 2) character ``(start, end)`` of each token in ``text``.
    """
    if len(vectors) == 0:
        return NAN
    return consecutive_cosine(sentence_vectors(vectors, offsets, sentence_spans(text)))
