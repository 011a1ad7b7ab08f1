"""Vectorised paired bootstrap and jackknife of Spearman ρ for many cells at once, and BCa levels (``docs/statistics.md#confidence-intervals``).

Resampling the rows of a paired sample is the same as giving every original row an integer weight ``w_i``
(how often it was drawn), so the average rank of row ``i`` inside the resample is::

    r_i(w) = W_below(i) + (W_tied(i) + 1) / 2

where ``W_below`` is the total weight of rows with a smaller value and ``W_tied`` the total weight of
rows tied with row ``i``. One cumulative sum over each column's sorted order gives the ranks of all
rows for every resample, with no sorting inside the bootstrap loop. The mean rank is always
``(N + 1) / 2`` with ``N = Σ w``, so Spearman's rho of a resample is the weighted Pearson correlation
of centred ranks, and all metric × target cells of a resample come out of one batched matrix
product. The BCa jackknife reuses the same code with the weights ``1 − e_i`` (leave row ``i`` out).
Resample indices are drawn exactly as :func:`scipy.stats.bootstrap` draws them
(``rng.integers(0, n, (B, n))``), so with the same seed this path and ``scipy.stats.bootstrap`` see
identical resamples (measured speed and agreement: ``benchmarks/RESULTS.md`` §4).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import special

# Elements (rows × columns × resamples) per bootstrap chunk: ~16 MiB per float64 work array.
_CHUNK_ELEMENTS = 1 << 21


@dataclass(frozen=True)
class _RankPlan:
    """Tie structure of several columns, flattened so one gather serves all of them.

    ``order`` (K, n) sorts each column; ``ends`` are flat positions (into K·n) of the last row of each
    tie group; ``prev`` indexes the previous group's end in ``ends`` shifted by one (0 = column start);
    ``group_of_row`` (K·n) maps each row of each column, in original order, to its global tie group.
    """

    order: np.ndarray
    ends: np.ndarray
    prev: np.ndarray
    group_of_row: np.ndarray
    n_cols: int
    n_rows: int


def _rank_plan(cols: np.ndarray) -> _RankPlan:
    """Build a :class:`_RankPlan` for the columns of ``cols`` (n rows × K columns, all finite)."""
    n, k = cols.shape
    order = np.argsort(cols, axis=0, kind="stable").T.copy()  # (K, n)
    ends_list: list[np.ndarray] = []
    prev_list: list[np.ndarray] = []
    group_of_row = np.empty(k * n, dtype=np.intp)
    offset = 0
    for j in range(k):
        sorted_vals = cols[order[j], j]
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        new_group[1:] = sorted_vals[1:] != sorted_vals[:-1]
        gid_sorted = np.cumsum(new_group) - 1  # group index of each sorted position
        n_groups = int(gid_sorted[-1]) + 1
        last = np.flatnonzero(np.append(new_group[1:], True))  # last sorted position of each group
        ends_list.append(j * n + last)
        # previous group's end: index into [0, E...] padded array (0 means "nothing before").
        prev_list.append(np.concatenate(([0], offset + np.arange(1, n_groups))))
        rows = np.empty(n, dtype=np.intp)
        rows[order[j]] = gid_sorted
        group_of_row[j * n : (j + 1) * n] = offset + rows
        offset += n_groups
    return _RankPlan(
        order=order,
        ends=np.concatenate(ends_list),
        prev=np.concatenate(prev_list),
        group_of_row=group_of_row,
        n_cols=k,
        n_rows=n,
    )


def _weighted_centred_ranks(weights: np.ndarray, plan: _RankPlan) -> np.ndarray:
    """Twice the centred average ranks of every column under integer row weights.

    ``weights`` is an int64 (c, n) array; the result is float64 (c, K, n) holding
    ``2·r_i(w) − (Σw + 1)`` with ``r_i(w) = W_below(i) + (W_tied(i) + 1)/2``, i.e.
    ``W_before_group + W_through_group − Σw``. Everything up to the final gather is integer
    arithmetic (an int64 cumulative sum is several times faster than a float one, and exact);
    doubling keeps half-ranks integral. Rows with zero weight get a rank but no influence.
    """
    c = weights.shape[0]
    ws = weights[:, plan.order]  # (c, K, n) weights in each column's sorted order
    cs = np.cumsum(ws, axis=2).reshape(c, -1)
    end = cs[:, plan.ends]  # (c, G) cumulative weight through each tie group
    padded = np.concatenate((np.zeros((c, 1), dtype=end.dtype), end), axis=1)
    # groups are numbered consecutively, so the previous group's end sits right before in `padded`,
    # except at a column start where `prev` points at the zero pad.
    twice = padded[:, plan.prev] + end - weights.sum(axis=1, keepdims=True)
    return twice.astype(np.float64)[:, plan.group_of_row].reshape(c, plan.n_cols, plan.n_rows)


def _weighted_spearman_block(
    weights: np.ndarray, plan: _RankPlan, n_x: int, pairs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Spearman ρ of the requested (x, y) column pairs for each weight row; returns (c, n_pairs).

    The first ``n_x`` columns of ``plan`` are metrics, the rest targets. ρ is the weighted Pearson
    correlation of centred ranks: ``Σ w rx ry / sqrt(Σ w rx² · Σ w ry²)`` (the factor 2 of the
    doubled ranks cancels).
    """
    r = _weighted_centred_ranks(weights, plan)
    rx, ry = r[:, :n_x, :], r[:, n_x:, :]
    wf = weights.astype(np.float64)
    wx = rx * wf[:, None, :]
    # a contiguous (c, n, n_y) operand keeps the batched product on BLAS
    cross = np.matmul(wx, np.ascontiguousarray(ry.transpose(0, 2, 1)))  # (c, n_x, n_y)
    vx = np.einsum("ckn,ckn->ck", wx, rx)
    vy = np.einsum("ckn,ckn->ck", ry * wf[:, None, :], ry)
    ix, iy = pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cross[:, ix, iy] / np.sqrt(vx[:, ix] * vy[:, iy])
    return np.clip(rho, -1.0, 1.0)


def single_threaded_blas() -> contextlib.AbstractContextManager[object]:
    """Limit BLAS to one thread while the bootstrap runs, when threadpoolctl is available.

    Each chunk makes many small batched products; a multi-threaded BLAS spends more time waking and
    spinning its workers than multiplying (measured 1.5–2× more CPU time on 2 cores).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: results are identical, only slower
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _chunk_size(n_rows: int, n_cols: int, total: int) -> int:
    return int(max(1, min(total, _CHUNK_ELEMENTS // max(1, n_rows * n_cols))))


def resample_weights(rng: np.random.Generator, c: int, n: int, clusters: np.ndarray | None = None) -> np.ndarray:
    """Integer row weights (c, n) of ``c`` resamples.

    Rows: ``rng.integers(0, n, (c, n))``, the stream of ``scipy.stats.bootstrap(paired=True)``. With
    ``clusters`` (code 0…G−1 per row, codes of the labels sorted as text) the draws are
    ``rng.integers(0, G, (c, G))`` and row i weighs as often as its cluster was drawn
    (``docs/design/predictive.md#cluster-resampling``); with one row per cluster in row order both are the same.

    Args:
        rng: generator the draws come from.
        c: number of resamples (rows of the result).
        n: number of data rows (columns of the result).
        clusters: cluster code 0…G−1 per row; ``None`` resamples rows.

    >>> resample_weights(np.random.default_rng(0), 1, 4, np.array([0, 0, 1, 1])).tolist()
    [[0, 0, 2, 2]]
    """
    g = n if clusters is None else int(clusters.max()) + 1
    idx = rng.integers(0, g, (c, g))
    flat = (idx + (np.arange(c) * g)[:, None]).ravel()
    counts = np.bincount(flat, minlength=c * g).reshape(c, g).astype(np.int64)
    return counts if clusters is None else counts[:, clusters]


def jackknife_weights(start: int, c: int, n: int, clusters: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out weights for units ``start … start + c − 1``: rows, or clusters (``1 − 1[cluster(i) = j]``).

    Args:
        start: first unit left out.
        c: number of units left out, one per result row.
        n: number of data rows (columns of the result).
        clusters: cluster code 0…G−1 per row, the units; ``None``: the units are rows.
    """
    units = np.arange(start, start + c)
    if clusters is None:
        weights = np.ones((c, n), dtype=np.int64)
        weights[np.arange(c), units] = 0
        return weights
    return (clusters[None, :] != units[:, None]).astype(np.int64)


def n_units(n: int, clusters: np.ndarray | None) -> int:
    """Jackknife units: rows, or clusters."""
    return n if clusters is None else int(clusters.max()) + 1


def bootstrap_spearman_block(
    block: np.ndarray,
    n_x: int,
    pairs: tuple[np.ndarray, np.ndarray],
    n_resamples: int,
    rng: np.random.Generator,
    clusters: np.ndarray | None = None,
) -> np.ndarray:
    """Bootstrap distribution (n_pairs, B) of ρ for paired row resamples drawn like scipy does
    (or cluster resamples, see :func:`resample_weights`).

    Args:
        block: (n, K) finite values; the first ``n_x`` columns are metrics, the rest targets.
        n_x: number of metric columns in ``block``.
        pairs: ``(ix, iy)`` index arrays of the (metric, target) pairs; ``iy`` counts from the first target column.
        n_resamples: number of bootstrap resamples B.
        rng: generator of the resamples (same stream as ``scipy.stats.bootstrap(paired=True)``).
        clusters: cluster code 0…G−1 per row for cluster resamples; ``None`` resamples rows.
    """
    n = block.shape[0]
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, n_resamples))
    step = _chunk_size(n, block.shape[1], n_resamples)
    for start in range(0, n_resamples, step):
        c = min(step, n_resamples - start)
        weights = resample_weights(rng, c, n, clusters)  # identical stream to scipy.stats.bootstrap(paired=True)
        out[:, start : start + c] = _weighted_spearman_block(weights, plan, n_x, pairs).T
    return out


def weighted_spearman(x: np.ndarray, y: np.ndarray, weight_chunks: Iterable[tuple[int, np.ndarray]], n_resamples: int) -> np.ndarray:
    """Spearman ρ(x, y) of every weighted resample: ``weight_chunks`` yields ``(start, weights)`` with integer
    weights (c, n); ρ is that of the expanded resample (average ranks), NaN where a side is constant.

    Args:
        x: (n,) first variable.
        y: (n,) second variable.
        weight_chunks: ``(start, weights)`` pairs; ``weights`` (c, n) are integer counts of resamples from ``start``.
        n_resamples: total number of resamples (length of the result; resamples never yielded stay NaN).

    >>> w = [(0, np.array([[1, 1, 1], [2, 0, 1]]))]
    >>> weighted_spearman(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]), w, 2).round(3).tolist()
    [0.5, 1.0]
    """
    plan = _rank_plan(np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)]))
    pair = (np.array([0]), np.array([0]))
    out = np.full(n_resamples, np.nan)
    for start, weights in weight_chunks:
        out[start : start + weights.shape[0]] = _weighted_spearman_block(weights, plan, 1, pair)[:, 0]
    return out


def jackknife_spearman_block(
    block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], clusters: np.ndarray | None = None
) -> np.ndarray:
    """Leave-one-out ρ (n_pairs, units) for every row (weights ``1 − e_i``) or every cluster.

    Args:
        block: (n, K) finite values; the first ``n_x`` columns are metrics, the rest targets.
        n_x: number of metric columns in ``block``.
        pairs: ``(ix, iy)`` index arrays of the (metric, target) pairs; ``iy`` counts from the first target column.
        clusters: cluster code 0…G−1 per row to leave out whole clusters; ``None`` leaves out rows.
    """
    n = block.shape[0]
    m = n_units(n, clusters)
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, m))
    step = _chunk_size(n, block.shape[1], m)
    for start in range(0, m, step):
        c = min(step, m - start)
        weights = jackknife_weights(start, c, n, clusters)
        out[:, start : start + c] = _weighted_spearman_block(weights, plan, n_x, pairs).T
    return out


def bca_levels(theta_hat: float, theta_b: np.ndarray, theta_jack: np.ndarray, alpha: float) -> tuple[float, float]:
    """BCa quantile levels (Efron & Tibshirani 1993, eq. 14.10/15.36), as in ``scipy.stats.bootstrap``.

    ``z0 = Φ⁻¹((#{θ*_b < θ̂} + #{θ*_b ≤ θ̂}) / 2B)``;
    ``a = Σ U³ / (6 (Σ U²)^{3/2})`` with jackknife ``U_i = (n − 1)(θ̄_(·) − θ̂_(i))``;
    ``α_1 = Φ(z0 + (z0 + z_α)/(1 − a(z0 + z_α)))`` and likewise ``α_2`` with ``z_{1−α}``.

    Args:
        theta_hat: the statistic θ̂ on the full sample.
        theta_b: (B,) bootstrap statistics θ*_b.
        theta_jack: leave-one-out statistics θ̂_(i).
        alpha: lower tail probability, e.g. 0.025 for a 95% interval.
    """
    b = theta_b.size
    pct = (np.count_nonzero(theta_b < theta_hat) + np.count_nonzero(theta_b <= theta_hat)) / (2.0 * b)
    z0 = float(special.ndtri(pct))
    n_j = float(theta_jack.size)
    u = (n_j - 1.0) * (theta_jack.mean() - theta_jack)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_hat = (1.0 / 6.0) * (np.sum(u**3) / n_j**3) / (np.sum(u**2) / n_j**2) ** 1.5
        z_a = float(special.ndtri(alpha))
        num1 = z0 + z_a
        num2 = z0 - z_a
        a1 = float(special.ndtr(z0 + num1 / (1.0 - a_hat * num1)))
        a2 = float(special.ndtr(z0 + num2 / (1.0 - a_hat * num2)))
    return a1, a2


def seed_root(seed: int | None) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed)


def child_rng(root: np.random.SeedSequence, kind: int, index: int) -> np.random.Generator:
    """Independent, reproducible stream per purpose (0 = bootstrap group, 1 = permutation cell).

    Args:
        root: the run's seed sequence.
        kind: purpose code: 0 = bootstrap group, 1 = permutation cell.
        index: number of the group or cell within that purpose.
    """
    return np.random.default_rng(np.random.SeedSequence(entropy=root.entropy, spawn_key=(kind, index)))


def percentile_ci(boot: np.ndarray, confidence_level: float) -> tuple[float, float]:
    """Percentile interval of the finite values of ``boot``; NaN when none is finite.

    Example:
        >>> percentile_ci(np.array([np.nan, 1.0, 2.0, 3.0]), 0.5)
        (1.5, 2.5)
    """
    finite = boot[np.isfinite(boot)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1 - confidence_level) / 2
    lo, hi = np.quantile(finite, [tail, 1 - tail])
    return float(lo), float(hi)
