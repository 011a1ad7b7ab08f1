"""Embedding similarity between a prompt and a response (``docs/metrics.md#embedding-similarity``), as pure numpy functions.

Everything here works on already-encoded vectors: token states, pooled vectors and extrema vectors.
The encoder pass itself lives in :mod:`tutormetrics.encoders.hf`. All arithmetic is float64; an
undefined value (empty side, zero norm, ``P + R = 0``) is NaN, never 0, and never clamped with an eps.

Columns: ``emb_mean_cos``, ``emb_extrema_cos``, ``emb_greedy``, ``emb_greedy_precision``,
``emb_greedy_recall``, ``emb_greedy_f1``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tutormetrics.encoders.reductions import extrema_rule
from tutormetrics.encoders.spill import BLOCK_ROWS, SpilledTokens, is_spilled, row_blocks
from tutormetrics.metrics.functional.names import EMBEDDING_COLUMNS as EMBEDDING_COLUMNS  # defined where numpy is not


def _finite_or_nan(x: np.ndarray) -> np.ndarray:
    """Clip rounding excursions to [-1, 1] and turn ``-0.0`` into ``0.0``; NaN passes through."""
    return np.clip(x, -1.0, 1.0) + 0.0


def masked_mean_pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token states where ``mask`` is 1 (sentence-transformers mean pooling).

    ``pool = Σ_t mask_t · h_t / Σ_t mask_t``. Works on ``(T, d)`` with a ``(T,)`` mask, or on any
    leading batch/layer axes, ``(..., T, d)`` with ``(..., T)`` (the mask broadcasts). Where the mask
    is all zero the pool is NaN (sentence-transformers clamps the count to 1e-9 and returns 0).

    Example:
        >>> masked_mean_pool(np.array([[1.0, 0.0], [0.0, 1.0], [9.0, 9.0]]), np.array([1, 1, 0]))
        array([0.5, 0.5])
    """
    h = np.asarray(states, dtype=np.float64)
    m = np.asarray(mask, dtype=np.float64)
    m = np.broadcast_to(m, h.shape[:-1])
    total = np.einsum("...t,...td->...d", m, h)
    count = m.sum(axis=-1)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
    return out


def window_weighted_pool(window_sums: np.ndarray, window_counts: np.ndarray) -> np.ndarray:
    """Pool of a windowed text: token-count-weighted mean of the window mean-pools.

    ``pool = Σ_w n_w · mean_w / Σ_w n_w = Σ_w sum_w / Σ_w n_w`` with ``sum_w`` the masked token sum of
    window ``w`` (``(W, ..., d)``) and ``n_w`` its token count (``(W,)``, CLS/SEP included when the
    sums include them). NaN when no window has a token.

    Example (``docs/metrics.md#example-windows``, window sums [2,2], [4,4], [3,0] of 4, 4 and 3 tokens):
        >>> window_weighted_pool(np.array([[2.0, 2.0], [4.0, 4.0], [3.0, 0.0]]), np.array([4, 4, 3])).round(6)
        array([0.818182, 0.545455])
    """
    sums = np.asarray(window_sums, dtype=np.float64)
    counts = np.asarray(window_counts, dtype=np.float64)
    total = counts.sum()
    if sums.shape[0] == 0 or total <= 0:
        return np.full(sums.shape[1:], np.nan)
    return sums.sum(axis=0) / total


def extrema_vector(tokens: np.ndarray) -> np.ndarray:
    """Vector extrema of a ``(n, d)`` token matrix (Liu rule, see :func:`extrema_rule`).

    NaN vector of length ``d`` when ``n == 0``.

    Example (``docs/metrics.md#example-embedding`` and the tie case):
        >>> extrema_vector(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]]))
        array([1., 1., 1.])
        >>> extrema_vector(np.array([[1.0, 0.0], [-1.0, 0.0]]))
        array([1., 0.])
    """
    t = np.asarray(tokens, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError(f"tokens must be 2-d (n, d), got shape {t.shape}")
    if t.shape[0] == 0:
        return np.full(t.shape[1], np.nan)
    return extrema_rule(t.max(axis=0), t.min(axis=0))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity ``a·b / (‖a‖ ‖b‖)`` in float64; NaN for an empty, NaN or zero-norm vector.

    No eps clamp (``torch.nn.functional.cosine_similarity`` clamps, sklearn returns 0).

    Example:
        >>> round(cosine(np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])), 6)
        0.707107
        >>> cosine(np.zeros(3), np.ones(3))
        nan
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(cosine_rows(a[None, :], b[None, :])[0])


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` matrices (vectorised :func:`cosine`); NaN where undefined.

    Example:
        >>> cosine_rows(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1.0, 1.0], [1.0, 0.0]])).round(6)
        array([0.707107,      nan])
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    dot = np.einsum("...d,...d->...", a, b)
    norm = np.sqrt(np.einsum("...d,...d->...", a, a)) * np.sqrt(np.einsum("...d,...d->...", b, b))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norm > 0, dot / np.where(norm > 0, norm, 1.0), np.nan)
    return _finite_or_nan(out)


def normalize_rows(tokens: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """L2-normalise each row, ``x / ‖x‖``; a zero-norm row becomes NaN (its cosines are undefined).

    Example:
        >>> normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
        array([[0.6, 0.8],
               [nan, nan]])
    """
    t = np.asarray(tokens, dtype=dtype)
    norm = np.sqrt(np.einsum("nd,nd->n", t, t))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, t / np.where(norm > 0, norm, 1), np.nan).astype(dtype, copy=False)


def greedy_matching(resp_tokens: np.ndarray, prompt_tokens: np.ndarray) -> tuple[float, float]:
    """Symmetric greedy matching of token cosines; the response is the candidate (BERTScore-style).

    With ``S_ij = cos(r_i, p_j)``: precision ``P = mean_i max_j S_ij``, recall ``R = mean_j max_i S_ij``.
    Returns ``(nan, nan)`` when either side has no tokens; a zero-norm token makes both NaN.

    Example (``docs/metrics.md#example-embedding``):
        >>> P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        >>> R = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]])
        >>> [round(x, 6) for x in greedy_matching(R, P)]
        [0.235702, 0.707107]
    """
    r = np.asarray(resp_tokens, dtype=np.float64)
    p = np.asarray(prompt_tokens, dtype=np.float64)
    if r.ndim != 2 or p.ndim != 2:
        raise ValueError(f"token matrices must be 2-d, got {r.shape} and {p.shape}")
    if r.shape[0] == 0 or p.shape[0] == 0:
        return float("nan"), float("nan")
    s = normalize_rows(r) @ normalize_rows(p).T
    return float(s.max(axis=1).mean()), float(s.max(axis=0).mean())


def _greedy_summary(precision: np.ndarray, recall: np.ndarray) -> dict[str, np.ndarray]:
    """``emb_greedy = (P+R)/2`` and ``emb_greedy_f1 = 2PR/(P+R)`` (NaN when ``P + R = 0``)."""
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    s = p + r
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(s != 0, 2.0 * p * r / np.where(s != 0, s, 1.0), np.nan)
    return {
        "emb_greedy": _finite_or_nan(s / 2.0),
        "emb_greedy_precision": _finite_or_nan(p),
        "emb_greedy_recall": _finite_or_nan(r),
        "emb_greedy_f1": f1 + 0.0,
    }


def embedding_similarity(
    prompt_pool: np.ndarray,
    resp_pool: np.ndarray,
    prompt_extrema: np.ndarray,
    resp_extrema: np.ndarray,
    prompt_tokens: np.ndarray,
    resp_tokens: np.ndarray,
) -> dict[str, float]:
    """All six ``emb_*`` columns of one exchange from its encoded prompt and response.

    ``emb_mean_cos = cos(pool_p, pool_r)``, ``emb_extrema_cos = cos(v_p, v_r)``, greedy as in
    :func:`greedy_matching` with ``emb_greedy = (P+R)/2`` and ``emb_greedy_f1 = 2PR/(P+R)``.

    Args:
        prompt_pool: (d,) pooled prompt vector.
        resp_pool: (d,) pooled response vector.
        prompt_extrema: (d,) extrema vector of the prompt.
        resp_extrema: (d,) extrema vector of the response.
        prompt_tokens: (n_p, d) prompt token vectors.
        resp_tokens: (n_r, d) response token vectors.

    Example (``docs/metrics.md#example-embedding``, no special tokens, so pools are plain token means):
        >>> P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        >>> R = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]])
        >>> out = embedding_similarity(P.mean(0), R.mean(0), extrema_vector(P), extrema_vector(R), P, R)
        >>> {k: round(v, 6) for k, v in out.items()}["emb_greedy_f1"]
        0.353553
    """
    prec, rec = greedy_matching(resp_tokens, prompt_tokens)
    greedy = _greedy_summary(np.array([prec]), np.array([rec]))
    out = {
        "emb_mean_cos": cosine(prompt_pool, resp_pool),
        "emb_extrema_cos": cosine(prompt_extrema, resp_extrema),
    }
    out.update({k: float(v[0]) for k, v in greedy.items()})
    return {c: out[c] for c in EMBEDDING_COLUMNS}


def greedy_matching_batch(
    resp_tokens: Sequence[np.ndarray],
    prompt_tokens: Sequence[np.ndarray],
    prompt_keys: Sequence[object] | np.ndarray | None = None,
    *,
    normalized: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy precision and recall for many pairs, one matrix product per distinct prompt.

    Pairs that share a prompt (``prompt_keys`` equal; by default the identity of the prompt array)
    are stacked: ``S = [R_1; R_2; …] · P^T`` is one ``(Σ n_r, n_p)`` product, precision comes from the
    row maxima averaged per response segment and recall from the per-segment column maxima
    (``np.maximum.reduceat``). The product runs in float32 when the inputs are float32 (rows are
    unit vectors, so the cosine error is ~1e-7) and the means in float64.

    Args:
        resp_tokens: per pair, the response's ``(n_r, d)`` token states.
        prompt_tokens: per pair, the prompt's ``(n_p, d)`` token states.
        prompt_keys: per pair, a hashable key identifying the prompt (e.g. its unique-text index).
        normalized: rows are already L2-normalised (skip the normalisation).

    Returns:
        ``(precision, recall)``, float64 arrays of length ``len(resp_tokens)``; NaN for empty sides.

    Example:
        >>> P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        >>> R = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]])
        >>> prec, rec = greedy_matching_batch([R, P, np.zeros((0, 3))], [P, P, P], [0, 0, 0])
        >>> prec.round(6), rec.round(6)
        (array([0.235702, 1.      ,      nan]), array([0.707107, 1.      ,      nan]))
    """
    n = len(resp_tokens)
    if len(prompt_tokens) != n:
        raise ValueError(f"expected as many prompts as responses, got {len(prompt_tokens)} and {n}")
    if prompt_keys is None:
        prompt_keys = [id(p) for p in prompt_tokens]
    elif len(prompt_keys) != n:
        raise ValueError(f"expected {n} prompt keys, got {len(prompt_keys)}")
    precision = np.full(n, np.nan)
    recall = np.full(n, np.nan)

    groups: dict[object, list[int]] = {}
    for i, raw in enumerate(prompt_keys):
        key = raw.item() if isinstance(raw, np.generic) else raw
        groups.setdefault(key, []).append(i)

    for members in groups.values():
        p = prompt_tokens[members[0]]
        p = p if is_spilled(p) else np.asarray(p)
        if p.shape[0] == 0:
            continue
        work_dtype = np.float32 if p.dtype == np.float32 else np.float64
        pn = p if is_spilled(p) else _unit_rows(p, work_dtype, normalized)
        valid = [i for i in members if len(resp_tokens[i]) > 0]
        # One product per response against the shared, normalised prompt matrix: a stacked GEMM would
        # round a row differently depending on its position, so identical pairs would not tie exactly.
        for i in valid:
            r = resp_tokens[i]
            if is_spilled(r) or is_spilled(pn) or len(r) * len(pn) > GREEDY_BLOCK_ELEMENTS:
                precision[i], recall[i] = _greedy_blocked(r, pn, work_dtype, normalized)
                continue
            sim = _unit_rows(r, work_dtype, normalized) @ pn.T  # (n_r, n_p)
            precision[i] = sim.max(axis=1).astype(np.float64).mean()
            recall[i] = sim.max(axis=0).astype(np.float64).mean()
    return precision, recall


#: Largest similarity matrix (elements) formed at once; longer pairs are matched block by block.
GREEDY_BLOCK_ELEMENTS = 1 << 24


def _unit_rows(x: np.ndarray, dtype: type, normalized: bool) -> np.ndarray:
    return np.asarray(x, dtype=dtype) if normalized else normalize_rows(x, dtype)


def _greedy_blocked(
    resp: np.ndarray | SpilledTokens, prompt: np.ndarray | SpilledTokens, dtype: type, normalized: bool
) -> tuple[float, float]:
    """Greedy precision and recall without forming the ``(n_r, n_p)`` matrix: running row and column maxima
    over blocks (``max`` and ``np.maximum`` both propagate NaN, so a zero-norm token spoils its row and
    column as in the full product). Either side may be a :class:`SpilledTokens` on disk."""
    n_r, n_p = len(resp), len(prompt)
    row_best = np.full(n_r, -np.inf, dtype=dtype)
    col_best = np.full(n_p, -np.inf, dtype=dtype)
    p_rows = min(n_p, BLOCK_ROWS)
    r_rows = max(1, GREEDY_BLOCK_ELEMENTS // p_rows)
    for r0, block in row_blocks(resp, r_rows):
        rb = _unit_rows(block, dtype, normalized)
        for p0, pb in row_blocks(prompt, p_rows):
            sim = rb @ _unit_rows(pb, dtype, normalized).T
            rows, cols = row_best[r0 : r0 + len(rb)], col_best[p0 : p0 + len(pb)]
            np.maximum(rows, sim.max(axis=1), out=rows)
            np.maximum(cols, sim.max(axis=0), out=cols)
    return float(row_best.astype(np.float64).mean()), float(col_best.astype(np.float64).mean())


def embedding_similarity_batch(
    prompt_pools: np.ndarray,
    resp_pools: np.ndarray,
    prompt_extrema: np.ndarray,
    resp_extrema: np.ndarray,
    prompt_tokens: Sequence[np.ndarray],
    resp_tokens: Sequence[np.ndarray],
    prompt_keys: Sequence[object] | np.ndarray | None = None,
    *,
    normalized: bool = False,
) -> dict[str, np.ndarray]:
    """Vectorised :func:`embedding_similarity` for ``n`` pairs (``(n, d)`` pools and extrema).

    Args:
        prompt_pools: (n, d) pooled prompt vectors.
        resp_pools: (n, d) pooled response vectors.
        prompt_extrema: (n, d) prompt extrema vectors.
        resp_extrema: (n, d) response extrema vectors.
        prompt_tokens: per pair, the prompt's (n_p, d) token vectors.
        resp_tokens: per pair, the response's (n_r, d) token vectors.
        prompt_keys: per pair, a hashable key of the prompt, so pairs sharing one are batched; ``None`` uses array
            identity.
        normalized: token rows are already L2-normalised.

    Example:
        >>> P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        >>> R = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]])
        >>> out = embedding_similarity_batch(P.mean(0)[None], R.mean(0)[None], extrema_vector(P)[None],
        ...                                  extrema_vector(R)[None], [P], [R])
        >>> out["emb_greedy"].round(6)
        array([0.471405])
    """
    prec, rec = greedy_matching_batch(resp_tokens, prompt_tokens, prompt_keys, normalized=normalized)
    out = {
        "emb_mean_cos": cosine_rows(prompt_pools, resp_pools),
        "emb_extrema_cos": cosine_rows(prompt_extrema, resp_extrema),
    }
    out.update(_greedy_summary(prec, rec))
    return {c: out[c] for c in EMBEDDING_COLUMNS}
