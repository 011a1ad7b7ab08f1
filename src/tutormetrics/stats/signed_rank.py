"""Signed ranks of paired differences, sorted once: T+, Kerby's r_rb, the Wilcoxon normal
approximation and the leave-one-out (jackknife) r_rb in O(n) (``docs/statistics.md#paired-group-comparisons``).

The non-zero differences are sorted by ``(|d|, sign)`` once. Tie groups of |d| get midranks
``below_g + (m_g + 1)/2`` (``below_g``: non-zero differences with a smaller |d|; ``m_g``: the group's
size), so ``2·T+ = Σ_g p_g (2·below_g + m_g + 1)`` with ``p_g`` positives in group g is an integer and
every value below is exact before the last division. Within a group the differences are split into
at most two *buckets* (negative, positive); :mod:`tutormetrics.stats.paired_bootstrap` resamples by
summing weights per bucket.

* ``r_rb = 4T+/(n(n + 1)) − 1`` over the n non-zero differences, computed as
  :func:`tutormetrics.stats.paired.rank_biserial` does, so both give the same float.
* The normal approximation reproduces ``scipy.stats.wilcoxon(d, method="asymptotic")`` (no continuity
  correction, tie correction ``Σ(t³ − t)/48``, zeros already dropped) operation for operation.
* Leaving out difference i: a zero changes nothing; a non-zero one in group g removes its rank, lowers
  the other ranks of g by ½ and every rank above g by 1:
  ``2T+_(i) = 2T+ − s_i(2·below_g + m_g + 1) − (p_g − s_i) − 2·P_above(g)`` with ``s_i = [d_i > 0]``.

Example:
    >>> sr = signed_ranks(np.array([1.0, 2.0, -0.5, 0.0]))
    >>> sr.t_plus, sr.r_rb
    (5.0, 0.6666666666666667)
    >>> jackknife_rank_biserial(sr).round(6).tolist()
    [0.333333, 0.333333, 1.0, 0.666667]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["SignedRanks", "jackknife_rank_biserial", "rank_biserial_from_buckets", "signed_ranks", "wilcoxon_asymptotic_p"]


@dataclass(frozen=True)
class SignedRanks:
    """Tie and sign structure of one vector of differences (zeros included as resampled units).

    ``members`` lists the positions of the non-zero differences sorted by ``(|d|, sign, position)``;
    bucket b holds ``members[bucket_ptr[b]:bucket_ptr[b + 1]]``. ``pos_bucket``/``pos_group`` index the
    positive buckets and their tie groups; ``group_start``/``group_end`` are each group's first bucket
    and one past its last. ``zero_mask`` marks the zeros; ``group_of``/``positive`` describe each non-zero
    difference in ``members`` order.
    """

    n: int
    n_nonzero: int
    t_plus2: int
    tie_sizes: np.ndarray
    members: np.ndarray
    bucket_ptr: np.ndarray
    group_start: np.ndarray
    group_end: np.ndarray
    pos_bucket: np.ndarray
    pos_group: np.ndarray
    group_of: np.ndarray
    positive: np.ndarray

    @property
    def t_plus(self) -> float:
        """Wilcoxon T+ (sum of the midranks of |d| over the positive differences)."""
        return self.t_plus2 / 2.0

    @property
    def r_rb(self) -> float:
        """Matched-pairs rank-biserial r (0 when no difference is non-zero)."""
        return float(_r_from_twice(np.array([float(self.t_plus2)]), np.array([float(self.n_nonzero)]))[0])

    @property
    def has_ties(self) -> bool:
        return bool(self.tie_sizes.size and self.tie_sizes.max() > 1)

    @property
    def n_buckets(self) -> int:
        return int(self.bucket_ptr.size - 1)


def signed_ranks(d: np.ndarray) -> SignedRanks:
    """Sort the non-zero differences of ``d`` once by (|d|, sign) and record groups and buckets.

    Example:
        >>> sr = signed_ranks(np.array([0.5, -0.5, 2.0, 0.0]))
        >>> sr.n, sr.n_nonzero, sr.t_plus, sr.tie_sizes.tolist()
        (4, 3, 4.5, [2, 1])
    """
    d = np.asarray(d, dtype=float)
    if d.ndim != 1:
        raise ValueError("signed_ranks needs a 1-D array")
    nz = np.flatnonzero(d != 0)
    a = np.abs(d[nz])
    s = d[nz] > 0
    # sort by (|d|, sign), positions ascending inside a bucket: the bits of a non-negative float sort
    # like the float, so one stable integer sort of (bits << 1 | sign) does it (faster than lexsort)
    order = np.argsort((a.view(np.uint64) << np.uint64(1)) | s.astype(np.uint64), kind="stable")
    a_s, s_s = a[order], s[order]
    k = a_s.size
    new_group = np.ones(k, dtype=bool)
    new_group[1:] = a_s[1:] != a_s[:-1]
    new_bucket = new_group.copy()
    new_bucket[1:] |= s_s[1:] != s_s[:-1]
    gid = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_bucket)
    bucket_ptr = np.append(starts, k).astype(np.int64)
    bucket_group = gid[starts]
    bucket_pos = s_s[starts]
    n_groups = int(gid[-1]) + 1 if k else 0
    group_start = np.searchsorted(bucket_group, np.arange(n_groups), side="left")
    group_end = np.searchsorted(bucket_group, np.arange(n_groups), side="right")
    tie_sizes = np.diff(np.append(np.flatnonzero(new_group), k))
    below = np.cumsum(tie_sizes) - tie_sizes
    pos_per_group = np.bincount(gid[s_s], minlength=n_groups)
    t_plus2 = int(np.sum(pos_per_group * (2 * below + tie_sizes + 1)))
    pos_bucket = np.flatnonzero(bucket_pos)
    return SignedRanks(
        n=int(d.size), n_nonzero=int(k), t_plus2=t_plus2, tie_sizes=tie_sizes.astype(np.int64),
        members=nz[order].astype(np.int64), bucket_ptr=bucket_ptr, group_start=group_start, group_end=group_end,
        pos_bucket=pos_bucket, pos_group=bucket_group[pos_bucket], group_of=gid, positive=s_s,
    )  # fmt: skip


def _r_from_twice(t_plus2: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``4T+/(n(n + 1)) − 1`` (0 where n = 0), the expression of ``rank_biserial``."""
    t_plus = t_plus2 / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 4.0 * t_plus / (n * (n + 1.0)) - 1.0
    return np.where(n > 0, r, 0.0)


def _cumsum_rows(a: np.ndarray) -> np.ndarray:
    """``[0; cumsum(a, axis=0)]`` in float64 for whole-number ``a`` (m, c), by blocks of rows: one
    vectorised add per row of a block and one cumulative sum over the block totals (numpy's
    ``cumsum`` runs one element at a time; the sums are exact integers, so the order does not matter).

    Example:
        >>> _cumsum_rows(np.arange(6.0).reshape(3, 2)).tolist()
        [[0.0, 0.0], [0.0, 1.0], [2.0, 4.0], [6.0, 9.0]]
    """
    m, c = a.shape
    k = int(max(1, min(64, np.sqrt(m))))
    blocks = -(-m // k)
    buf = np.zeros((blocks * k + 1, c))
    buf[1 : m + 1] = a
    b = buf[1:].reshape(blocks, k, c)
    for i in range(1, k):
        np.add(b[:, i], b[:, i - 1], out=b[:, i])
    if blocks > 1:
        b[1:] += np.cumsum(b[:-1, -1], axis=0)[:, None, :]
    return buf[: m + 1]


def rank_biserial_from_buckets(sr: SignedRanks, sums: np.ndarray) -> np.ndarray:
    """r_rb of ``c`` resamples from the weight sums per bucket, ``sums`` (n_buckets, c) of whole numbers.

    With ``C`` the cumulative weight over the sorted buckets, group g starts at ``C_before(g)`` and ends
    at ``C_through(g)``; its positive bucket (the last of the group) of weight V adds
    ``V·(C_before(g) + C_through(g) + 1)`` to 2T+ (each of its V members has the midrank
    ``(C_before + C_through + 1)/2``).

    Example:
        >>> sr = signed_ranks(np.array([1.0, 2.0, -0.5, 0.0]))
        >>> rank_biserial_from_buckets(sr, np.diff(sr.bucket_ptr)[:, None].astype(float)).tolist()
        [0.6666666666666667]
    """
    cum = _cumsum_rows(sums)
    # a positive bucket is the last of its group: its group ends at cum[b + 1]
    through = cum[sr.pos_bucket + 1]
    t2 = np.einsum("pc,pc->c", through - cum[sr.pos_bucket], cum[sr.group_start[sr.pos_group]] + through + 1.0)
    return _r_from_twice(t2, cum[-1])


def wilcoxon_asymptotic_p(sr: SignedRanks) -> float:
    """Two-sided normal-approximation p of the signed-rank test over the non-zero differences, as
    ``scipy.stats.wilcoxon(d[d != 0], method="asymptotic")`` computes it:
    ``z = (T+ − n(n + 1)/4)/sqrt((n(n + 1)(2n + 1) − Σ(t³ − t)/2)/24)``, ``p = 2Φ(−|z|)``.

    Example:
        >>> f"{wilcoxon_asymptotic_p(signed_ranks(np.arange(1.0, 61.0))):.6g}"
        '1.62956e-11'
    """
    count = float(sr.n_nonzero)
    t = sr.tie_sizes.astype(np.float64)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    tie_correct = np.sum(t**3 - t)
    se = np.sqrt((se - tie_correct / 2) / 24)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (sr.t_plus - mn) / se
    return float(2 * special.ndtr(-np.abs(z)))


def jackknife_rank_biserial(sr: SignedRanks) -> np.ndarray:
    """Leave-one-out r_rb for every difference (zeros included), in the order of ``d``.

    These are the values ``scipy.stats.bootstrap(method="BCa")`` computes by ranking each of the n
    samples of size n − 1; here they come from the group counts in O(n).
    """
    n_groups = sr.tie_sizes.size
    out_twice = np.full(sr.n, float(sr.t_plus2))
    out_n = np.full(sr.n, float(sr.n_nonzero))
    if sr.n_nonzero:
        below = np.cumsum(sr.tie_sizes) - sr.tie_sizes
        pos = np.bincount(sr.group_of[sr.positive], minlength=n_groups)
        pos_above = pos[::-1].cumsum()[::-1] - pos
        g = sr.group_of
        s = sr.positive.astype(np.int64)
        twice = sr.t_plus2 - s * (2 * below[g] + sr.tie_sizes[g] + 1) - (pos[g] - s) - 2 * pos_above[g]
        out_twice[sr.members] = twice
        out_n[sr.members] = sr.n_nonzero - 1
    return _r_from_twice(out_twice, out_n)
