"""Local coherence of the response: mean cosine between consecutive sentence vectors.

With the sentences ``S(r)`` (``metrics.md`` §2) located in the response as character spans, each
sentence vector is the mean of the response's last-layer content-token vectors whose span *starts*
inside the sentence's span (CLS/SEP and padding excluded), and

    resp_coherence = mean_{k=1..m−1} cos(s_k, s_{k+1})

over the m sentences that received at least one token. NaN when m < 2, and a pair whose vector has
zero norm is left out of the mean (NaN when no pair is left).

The token vectors come from the single encoder pass the other encoder families read: nothing is
re-encoded per sentence, so each token keeps its context in the whole reply.

**Long replies** (``metrics.md`` §6.2): with ``long_text="window"`` the reply was encoded in
consecutive windows of ``max_seq_length − 2`` pieces; every piece of every window is used, each with
the context of its own window, and a sentence that straddles a window boundary pools the pieces from
both windows. With ``long_text="truncate"`` only the first window's pieces exist: sentences after the
cut get no token and drop out, and a sentence cut in two keeps the pieces before the cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tutormetrics.text import split_sentences

NAN = float("nan")


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
    positions = [i for i, ch in enumerate(text) if not ch.isspace()]
    compact = "".join(text[i] for i in positions)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        needle = "".join(ch for ch in sentence if not ch.isspace())
        if not needle:
            continue
        at = compact.find(needle, cursor)
        if at < 0:  # cannot happen for S's output; skip rather than guess
            continue
        spans.append((positions[at], positions[at + len(needle) - 1] + 1))
        cursor = at + len(needle)
    return spans


def sentence_vectors(
    vectors: np.ndarray, offsets: np.ndarray, spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Mean token vector per sentence span, over the tokens whose start lies in ``[start, end)``.

    Sentences without a token are dropped. Returns ``(m, d)`` float64.

    Example:
        >>> v = np.array([[1.0, 0], [3, 0], [0, 2]])
        >>> sentence_vectors(v, np.array([[0, 1], [2, 3], [5, 6]]), [(0, 4), (4, 8), (9, 12)]).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    vecs = np.asarray(vectors, dtype=np.float64)
    starts = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)[:, 0]
    out = []
    for a, b in spans:
        inside = (starts >= a) & (starts < b)
        if inside.any():
            out.append(vecs[inside].mean(axis=0))
    return np.array(out, dtype=np.float64).reshape(len(out), vecs.shape[1] if vecs.ndim == 2 else 0)


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
    """``resp_coherence`` of one response from its last-layer token vectors and their character spans."""
    if len(vectors) == 0:
        return NAN
    return consecutive_cosine(sentence_vectors(vectors, offsets, sentence_spans(text)))
