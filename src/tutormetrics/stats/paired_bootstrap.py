"""Bootstrap of r_rb and of mean(d) for many paired comparisons at once, with ``scipy.stats.bootstrap``'s
draws, and their BCa / percentile intervals (``docs/statistics.md#paired-group-comparisons``, ``docs/design/studies.md#mean-differences``).

``scipy.stats.bootstrap((d,), statistic, rng=np.random.default_rng(seed))`` resamples with
``rng.integers(0, n, (B, n))``: the draws depend only on (seed, n). Every comparison of a table with the
same n therefore sees the *same* resamples, so they are drawn once (in chunks; the stream is the same)
and turned into integer weights ``w`` (how often each pair was drawn). Then, per comparison:

* **r_rb**: the weights summed per (|d| tie group, sign) bucket of :func:`signed_ranks` — one sparse
  product ``S @ wᵀ`` with a 0/1 matrix S (buckets × pairs) — give T+ by one cumulative sum over the
  sorted buckets (:func:`rank_biserial_from_buckets`), exactly (integers) as ``rankdata`` would;
* **mean(d)**: ``w @ d / n``, one matrix product for all comparisons, on d split into two whole-number
  parts (:func:`_split_exact`) so the sums are exact and independent of the batch (equal to scipy's
  ``np.mean`` of the resampled values up to float rounding, ~1e-16 relative).

The BCa acceleration uses the O(n) jackknife of :func:`jackknife_rank_biserial`; the levels and the
quantiles are scipy's (:func:`tutormetrics.stats.bootstrap.bca_levels`, :func:`scipy.stats.quantile`).
Cost per comparison: O(n log n) once plus O(n) per resample, against scipy's ``rankdata`` of a B × n
array and an n × (n − 1) jackknife.

Example:
    >>> d = np.array([0.8, -0.3, 1.2, 2.1, -0.9, 0.4, 1.7, -1.4, 2.6, 0.6, 1.1, -0.2, 3.0, 0.5, 1.9])
    >>> sr = signed_ranks(d)
    >>> rb, means = bootstrap_paired([sr], [d], 15, 999, seed=7)
    >>> [round(v, 6) for v in rank_biserial_interval(sr, rb[0], 0.95)[:2]]
    [0.055815, 0.95]
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from scipy import sparse, stats

from tutormetrics.stats.bootstrap import bca_levels, single_threaded_blas
from tutormetrics.stats.signed_rank import (
    SignedRanks,
    jackknife_rank_biserial,
    rank_biserial_from_buckets,
    signed_ranks,
)

__all__ = ["bootstrap_paired", "paired_intervals", "percentile_interval", "rank_biserial_interval", "signed_ranks"]

# Resampled weights per sparse product (c·n float32: 64 MiB) and drawn indices per draw (int64: 32 MiB).
_WEIGHT_ELEMENTS = 1 << 24
_DRAW_ELEMENTS = 1 << 22
_MAX_STEP = 256
# Bytes per comparison and pair held during one pass of :func:`paired_intervals` (ranks, sparse matrix, d).
_PASS_BYTES = 1 << 29
_BYTES_PER_PAIR = 40


def _threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def _bucket_matrix(sr: SignedRanks, dtype: type) -> sparse.csc_array:
    """0/1 matrix (buckets × n) with a one where pair j belongs to bucket b, column-compressed: the
    product with the weights then reads them pair by pair, in order (2–3× faster than row-compressed)."""
    bucket = np.full(sr.n, -1, dtype=np.int64)
    bucket[sr.members] = np.repeat(np.arange(sr.n_buckets), np.diff(sr.bucket_ptr))
    nonzero = bucket >= 0
    indptr = np.concatenate(([0], np.cumsum(nonzero)))
    data = np.ones(sr.n_nonzero, dtype=dtype)
    return sparse.csc_array((data, bucket[nonzero], indptr), shape=(sr.n_buckets, sr.n))


def _split_exact(d: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], tuple[float, float]]:
    """``d ≈ q1·hi + q2·lo`` with whole numbers |q1|, |q2| ≤ 2²⁶ and powers of two hi = 2^(e − 26),
    lo = 2^(e − 52) (max|d| < 2^e): error ≤ max|d|·2⁻⁵². Resample sums ``Σ w·q`` are then exact whole
    numbers (Σw = n, so below n·2²⁶ < 2⁵³), whatever order a matrix product adds them in: each
    comparison's means do not depend on which other comparisons share the product.

    Example:
        >>> d = np.array([0.1, -3.0])
        >>> (q1, q2), (hi, lo) = _split_exact(d)
        >>> bool(np.all(np.abs(q1 * hi + q2 * lo - d) <= 3.0 * 2.0**-52)), bool(np.all(np.abs(q1) <= 2**26))
        (True, True)
    """
    top = float(np.max(np.abs(d))) if d.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return (d.copy(), np.zeros_like(d)), (1.0, 0.0)
    e = math.frexp(top)[1]  # top < 2**e
    hi, lo = math.ldexp(1.0, e - 26), math.ldexp(1.0, e - 52)
    q1 = np.trunc(d / hi)  # exact scaling by a power of two
    q2 = np.round((d - q1 * hi) / lo)  # the remainder is exact; rounding drops bits below 2^(e − 53)
    return (q1, q2), (hi, lo)


def _check_pairs(ranked: Sequence[SignedRanks | None], means: Sequence[np.ndarray | None], n: int) -> None:
    """Raise ``ValueError`` unless every entry of ``ranked`` and ``means`` has ``n`` pairs."""
    for sr in ranked:
        if sr is not None and sr.n != n:
            raise ValueError("every comparison must have n pairs")
    for m in means:
        if m is not None and m.size != n:
            raise ValueError("every comparison must have n pairs")


def bootstrap_paired(
    ranked: Sequence[SignedRanks | None],
    means: Sequence[np.ndarray | None],
    n: int,
    n_resamples: int,
    seed: int,
) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
    """Bootstrap distributions (each of length ``n_resamples``) of r_rb for every ``ranked`` entry and of
    the mean for every ``means`` vector; all have ``n`` pairs and share the draws of
    ``np.random.default_rng(seed).integers(0, n, (n_resamples, n))``. ``None`` entries give ``None``.
    An entry with no non-zero difference gives an all-zero r_rb distribution (``rank_biserial``'s value).

    Args:
        ranked: signed ranks of each r_rb comparison, or ``None``.
        means: (n,) differences whose mean is bootstrapped, or ``None``.
        n: number of pairs of every entry.
        n_resamples: length of each distribution; ≤ 0 returns without drawing.
        seed: seed of ``np.random.default_rng``.
    """
    _check_pairs(ranked, means, n)
    r_out: list[np.ndarray | None] = [None if sr is None else np.zeros(n_resamples) for sr in ranked]
    m_out: list[np.ndarray | None] = [None if m is None else np.empty(n_resamples) for m in means]
    active = [i for i, sr in enumerate(ranked) if sr is not None and sr.n_nonzero > 0]
    mean_idx = [i for i, m in enumerate(means) if m is not None]
    if n_resamples <= 0 or (not active and not mean_idx):
        return r_out, m_out
    # float32 sums are exact below 2**24 pairs
    dtype = np.float32 if n < (1 << 24) else np.float64
    mats = {i: _bucket_matrix(ranked[i], dtype) for i in active}  # type: ignore[arg-type]
    if mean_idx:
        parts = [_split_exact(np.asarray(means[i], dtype=np.float64)) for i in mean_idx]
        dmat_t = np.vstack([q for q, _ in parts for q in q])  # (2·n_means, n) whole numbers
        scales = [sc for _, sc in parts]
    else:
        dmat_t = None
    rng = np.random.default_rng(seed)
    # resamples per sparse product: longer rows gain nothing past a few hundred and cost memory per bucket
    step = int(max(1, min(n_resamples, _MAX_STEP, _WEIGHT_ELEMENTS // max(1, n))))
    draw = int(max(1, min(step, _DRAW_ELEMENTS // max(1, n))))  # resamples per draw

    def weights(start: int, c: int) -> np.ndarray | None:
        """Draw resamples start … start + c − 1: the means directly, the weights (n, c) for r_rb."""
        counts = np.empty((c, n), dtype=dtype)
        for sub in range(0, c, draw):
            k = min(draw, c - sub)
            idx = rng.integers(0, n, (k, n))  # scipy.stats.bootstrap's stream, chunk by chunk
            for row, drawn in enumerate(idx, start=sub):
                counts[row] = np.bincount(drawn, minlength=n)
            del idx
            if dmat_t is not None:
                # (2·n_means, k): this orientation runs 3x faster in OpenBLAS than counts @ dmat
                sums = dmat_t @ counts[sub : sub + k].astype(np.float64).T  # exact: whole numbers below 2**53
                for col, i in enumerate(mean_idx):
                    hi, lo = scales[col]
                    m_out[i][start + sub : start + sub + k] = (sums[2 * col] * hi + sums[2 * col + 1] * lo) / n  # type: ignore[index]
        weights_t = np.ascontiguousarray(counts.T) if active else None
        return weights_t

    def one(i: int, weights_t: np.ndarray, start: int) -> None:
        """Fill resamples ``start … start + c − 1`` of the r_rb distribution of comparison ``i``.

        Args:
            i: index of the comparison in ``ranked``.
            weights_t: (n, c) resample counts of the chunk.
            start: index of the chunk's first resample.
        """
        r_out[i][start : start + weights_t.shape[1]] = rank_biserial_from_buckets(ranked[i], mats[i] @ weights_t)  # type: ignore[arg-type,index]

    starts = list(range(0, n_resamples, step))
    # the sparse products (which release the GIL) of one chunk run in worker threads while this
    # thread draws the next chunk; BLAS stays on one thread so the two do not oversubscribe the cores
    with single_threaded_blas(), ThreadPoolExecutor(_threads()) as pool:
        pending: list[Future[None]] = []
        for start in starts:
            weights_t = weights(start, min(step, n_resamples - start))
            for fut in pending:
                fut.result()
            pending = [] if weights_t is None else [pool.submit(one, i, weights_t, start) for i in active]
        for fut in pending:
            fut.result()
    return r_out, m_out


def percentile_interval(theta_b: np.ndarray, confidence_level: float) -> tuple[float, float]:
    """Percentile interval as ``scipy.stats.bootstrap(method="percentile")`` forms it from its distribution.

    Example:
        >>> percentile_interval(np.arange(5.0), 0.5)
        (1.0, 3.0)
    """
    alpha = (1 - confidence_level) / 2
    ci = stats.quantile(theta_b, np.array([alpha, 1 - alpha]))
    return float(ci[0]), float(ci[1])


def rank_biserial_interval(sr: SignedRanks, theta_b: np.ndarray, confidence_level: float) -> tuple[float, float, bool]:
    """BCa interval of r_rb from its bootstrap distribution (``scipy.stats.bootstrap(method="BCa")``'s
    levels and quantiles, its jackknife computed in O(n)); the percentile interval when BCa is not
    finite (e.g. every resample gives the same r). Returns ``(low, high, used_percentile)``.

    Args:
        sr: signed ranks of the observed differences.
        theta_b: (B,) bootstrap distribution of r_rb.
        confidence_level: coverage of the interval, in (0, 1).
    """
    alpha = (1 - confidence_level) / 2
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        a1, a2 = bca_levels(sr.r_rb, theta_b, jackknife_rank_biserial(sr), alpha)
        ci = stats.quantile(theta_b, np.array([a1, a2]))
    lo, hi = float(ci[0]), float(ci[1])
    if np.isfinite(lo) and np.isfinite(hi):
        return lo, hi, False
    lo, hi = percentile_interval(theta_b, confidence_level)
    return lo, hi, True


def paired_intervals(
    jobs: Sequence[tuple[np.ndarray | None, np.ndarray | None]],
    n_resamples: int,
    confidence_level: float,
    seed: int,
) -> list[tuple[tuple[float, float, bool] | None, tuple[float, float] | None, np.ndarray | None]]:
    """Intervals of many comparisons, each ``(d_rank, d_mean)``: the r_rb interval of ``d_rank`` (rounded
    differences, zeros included) and the percentile interval of mean(``d_mean``); either may be ``None``.
    Both vectors of one job have the same n. Comparisons with equal n share one stream of draws
    (``default_rng(seed)``, as each ``scipy.stats.bootstrap`` call would draw), in passes bounded in memory.
    Returns per job ``(rank interval (low, high, used_percentile), mean interval (low, high), r_rb
    distribution)``, ``None`` where not asked.

    Args:
        jobs: ``(d_rank, d_mean)`` per comparison, each an (n,) difference vector or ``None``.
        n_resamples: bootstrap resamples per comparison; 0 gives no intervals.
        confidence_level: coverage of the intervals, in (0, 1).
        seed: seed of the shared draws.

    Example:
        >>> d = np.array([1.0, -0.5, 2.0, 0.0, 3.0, 1.5])
        >>> (rank, mean, _), = paired_intervals([(d, d)], 200, 0.9, seed=1)
        >>> rank[2], bool(mean[0] < d.mean() < mean[1])
        (False, True)
    """
    out: list[tuple[tuple[float, float, bool] | None, tuple[float, float] | None, np.ndarray | None]] = [(None, None, None)] * len(jobs)
    by_n: dict[int, list[int]] = {}
    for i, (dr, dm) in enumerate(jobs):
        ref = dr if dr is not None else dm
        if ref is not None and ref.size >= 2 and n_resamples > 0:
            by_n.setdefault(int(ref.size), []).append(i)
    for n, members in by_n.items():
        cap = max(1, _PASS_BYTES // (_BYTES_PER_PAIR * n))
        passes = -(-len(members) // cap)
        size = -(-len(members) // passes)
        for p in range(passes):
            part = members[p * size : (p + 1) * size]
            ranked = [None if jobs[i][0] is None else signed_ranks(jobs[i][0]) for i in part]
            means = [jobs[i][1] for i in part]
            rb, mb = bootstrap_paired(ranked, means, n, n_resamples, seed)
            for i, sr, r, m in zip(part, ranked, rb, mb, strict=True):
                rank = None if sr is None or r is None else rank_biserial_interval(sr, r, confidence_level)
                mean = None if m is None else percentile_interval(m, confidence_level)
                out[i] = (rank, mean, r)
    return out
