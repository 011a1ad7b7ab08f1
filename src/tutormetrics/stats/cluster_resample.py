"""The one set of resamples that every interval of a criterion shares (``docs/guide/judges.md#resamples``).

For criterion c (0-based) the units are its exchanges, sorted into G clusters (labels compared as text;
without a cluster column each unit is its own cluster, ids sorted as text). Resample b draws
``idx = default_rng([seed, c]).integers(0, G, size=(B, G))`` and unit i weighs
``w_bi = #{j : idx[b, j] = cluster(i)}``. A statistic that is a function of per-unit sums (a Q×Q table,
a mean) is recomputed from ``W @ F``: the (B, G) cluster counts times the (G, F) cluster sums of the
unit features, so no resample is ever materialised. Because every row of a criterion sees the same
draws, the difference of two rows' statistics is a paired resample for free.

The draws are taken in chunks of resamples; numpy's generator keeps its 32-bit buffer in the bit
generator, so the chunked stream equals one ``integers(0, G, size=(B, G))`` call exactly
(``tests/unittests/stats/test_cluster_resample.py``).

Example:
    >>> draws = ClusterDraws(n_clusters=3, n_resamples=4, seed=0, criterion=0)
    >>> sums = resampled_sums(draws, np.array([[1.0], [2.0], [3.0]]))
    >>> sums.shape, bool((resampled_sums(draws, np.ones((3, 1))) == 3).all())
    ((4, 1), True)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

__all__ = [
    "MIN_CLUSTERS",
    "ClusterDraws",
    "Interval",
    "cluster_codes",
    "cluster_sums",
    "percentile_interval",
    "resampled_sums",
]

#: Fewest clusters among a row's units for a cluster interval (``--min-clusters``, as ``validate``).
MIN_CLUSTERS = 10
#: Cluster counts per chunk (resamples × clusters): 32 MiB of float64.
_CHUNK_ELEMENTS = 1 << 22


def cluster_codes(labels: Sequence[object] | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per unit the 0-based code of its cluster, clusters sorted as text, and the sorted labels.

    Example:
        >>> codes, names = cluster_codes(["d2", "d10", "d2", 7])
        >>> codes.tolist(), names
        ([2, 1, 2, 0], ['7', 'd10', 'd2'])
    """
    text = np.asarray([str(v) for v in labels], dtype=str)
    if text.size == 0:
        return np.zeros(0, dtype=np.int64), []
    names, codes = np.unique(text, return_inverse=True)
    return codes.ravel().astype(np.int64), names.tolist()


@dataclass(frozen=True)
class ClusterDraws:
    """The B resamples of G clusters of one criterion: ``default_rng([seed, criterion])``."""

    n_clusters: int
    n_resamples: int
    seed: int
    criterion: int

    def index_chunks(self, max_elements: int = _CHUNK_ELEMENTS) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, idx)``: the drawn cluster indices (c, G) of resamples ``start … start + c − 1``; the chunks
        together are the one ``integers(0, G, size=(B, G))`` draw."""
        g, total = self.n_clusters, self.n_resamples
        if g == 0 or total <= 0:
            return
        rng = np.random.default_rng([self.seed, self.criterion])
        step = int(max(1, min(total, max_elements // g)))
        for start in range(0, total, step):
            yield start, rng.integers(0, g, size=(min(step, total - start), g))

    def chunks(self, max_elements: int = _CHUNK_ELEMENTS) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, counts)`` with counts (c, G) float64: how often each cluster is drawn in resamples
        ``start … start + c − 1``."""
        g = self.n_clusters
        for start, idx in self.index_chunks(max_elements):
            c = idx.shape[0]
            flat = (idx + (np.arange(c) * g)[:, None]).ravel()
            yield start, np.bincount(flat, minlength=c * g).reshape(c, g).astype(np.float64)

    def unit_weights(self, unit_cluster: np.ndarray, unit_pattern: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, weights)``: the (c, n) integer weights of the units whose cluster codes are given or, with
        ``unit_pattern`` (a code 0…P−1 per unit, e.g. its distinct (x, y) pair), the (c, P) total weight of
        each pattern: a statistic of the expanded resample that depends on the units only through their
        values is the same on the patterns, and P is often far below n."""
        codes = np.asarray(unit_cluster, dtype=np.int64)
        if unit_pattern is None:
            step = max(1, _CHUNK_ELEMENTS // max(1, self.n_clusters, codes.size))
            for start, counts in self.chunks(max_elements=step * max(1, self.n_clusters)):
                yield start, counts[:, codes].astype(np.int64)
            return
        pattern = np.asarray(unit_pattern, dtype=np.int64)
        n_patterns = int(pattern.max()) + 1 if pattern.size else 0
        member = sparse.csr_matrix((np.ones(codes.size), (pattern, codes)), shape=(n_patterns, max(1, self.n_clusters)))
        step = max(1, _CHUNK_ELEMENTS // max(1, self.n_clusters, n_patterns))
        for start, counts in self.chunks(max_elements=step * max(1, self.n_clusters)):
            yield start, np.rint(member @ counts.T).T.astype(np.int64)


def cluster_sums(unit_cluster: np.ndarray, features: np.ndarray, n_clusters: int) -> np.ndarray:
    """(G, F) sums of the (n, F) unit ``features`` within each cluster.

    Args:
        unit_cluster: (n,) cluster code 0…G−1 of each unit.
        features: (n, F) values per unit.
        n_clusters: number of clusters G (rows of the result).

    Example:
        >>> cluster_sums(np.array([0, 1, 0]), np.array([[1.0], [2.0], [4.0]]), 2).tolist()
        [[5.0], [2.0]]
    """
    f = np.asarray(features, dtype=np.float64)
    out = np.zeros((n_clusters, f.shape[1]))
    np.add.at(out, np.asarray(unit_cluster, dtype=np.int64), f)
    return out


def resampled_sums(draws: ClusterDraws, cluster_features: np.ndarray) -> np.ndarray:
    """(B, F) feature sums of every resample: ``Σ_i w_bi·F_i = counts_b @ cluster_features``.

    When the clusters' feature rows repeat (P distinct rows, P ≤ G/4: e.g. single replies, whose features are
    one confusion cell), the draws are mapped to those P patterns and counted there, ``pattern counts (c, P) @
    distinct rows (P, F)``: the same sums without the (c, G) count matrix and its product (measured 2.5× faster
    at G = 100,000, ``benchmarks/RESULTS.md`` §22).
    """
    feats = np.asarray(cluster_features, dtype=np.float64)
    out = np.empty((draws.n_resamples, feats.shape[1]))
    found = _patterns(feats)
    if found is not None:
        rows, pattern = found
        p = rows.shape[0]
        for start, idx in draws.index_chunks():
            c = idx.shape[0]
            flat = (pattern[idx] + (np.arange(c) * p)[:, None]).ravel()
            out[start : start + c] = np.bincount(flat, minlength=c * p).reshape(c, p).astype(np.float64) @ rows
        return out
    for start, counts in draws.chunks():
        out[start : start + counts.shape[0]] = counts @ feats
    return out


def _patterns(feats: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct rows of small non-negative integer features and each cluster's row, when there are at
    most G/4 of them (one integer key per row, as :func:`numpy.unique` on 1-D keys is fast); else None."""
    g, f = feats.shape
    if g < 64 or f == 0 or feats.min() < 0 or not np.array_equal(feats, np.round(feats)):
        return None
    radix = int(feats.max()) + 1
    if f * np.log2(max(radix, 2)) >= 62:
        return None
    key = feats.astype(np.int64) @ (radix ** np.arange(f, dtype=np.int64))
    _, first, pattern = np.unique(key, return_index=True, return_inverse=True)
    if 4 * first.size > g:
        return None
    return feats[first], pattern.ravel()


class Interval(NamedTuple):
    """A percentile interval and how many resamples were left out because the statistic was undefined."""

    low: float
    high: float
    dropped: int


def percentile_interval(values: np.ndarray, confidence_level: float = 0.95) -> Interval:
    """``numpy.quantile(v, [α/2, 1 − α/2])`` (linear) over the finite resample values ``v``; NaN when
    fewer than two are left.

    Example:
        >>> percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0]), 0.5)
        Interval(low=1.5, high=2.5, dropped=1)
    """
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    dropped = int(v.size - finite.size)
    if finite.size < 2:
        return Interval(float("nan"), float("nan"), dropped)
    tail = (1.0 - confidence_level) / 2.0
    lo, hi = np.quantile(finite, [tail, 1.0 - tail])
    return Interval(float(lo), float(hi), dropped)
