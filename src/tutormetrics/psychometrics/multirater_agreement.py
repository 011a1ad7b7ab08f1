"""Agreement among any number of raters with missing ratings (``docs/design/raters.md#many-raters``), from unit counts.

Everything starts from the count matrix ``r`` of shape (units, Q): ``r[i, k]`` = number of ratings of
unit i in category k, ``r_i = Σ_k r_ik`` (a missing rating simply does not count).

* ``exact``: among units with r_i ≥ 2, the share whose ratings are all equal;
* Fleiss' κ (1971) on the units rated by the modal number m* of raters (docs/design/raters.md#fleiss);
* Krippendorff's α through the coincidence matrix ``o_ck = Σ_i r_ic (r_ik − [c = k]) / (r_i − 1)``
  over pairable units, with nominal, ordinal and interval distances (docs/design/raters.md#krippendorff);
* Gwet's AC1 for many raters (docs/design/raters.md#gwet), where units with one rating count in π_k but not in p_a;
* a percentile bootstrap CI of the nominal α over units, vectorised (docs/design/raters.md#agreement-interval).

Example (irrCAC's ``raw_4raters``, ``docs/design/raters.md#example-many-raters``):
    >>> r = np.array([[3,0,0,0,0],[0,3,1,0,0],[0,0,4,0,0],[0,0,4,0,0],[0,4,0,0,0],[1,1,1,1,0],
    ...               [0,0,0,4,0],[3,1,0,0,0],[0,4,0,0,0],[0,0,0,0,3],[2,0,0,0,0],[0,0,1,0,0]])
    >>> round(float(krippendorff_alpha_counts(r)), 7), round(float(gwet_ac1_counts(r)), 7)
    (0.7434211, 0.7754441)
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from tutormetrics.stats.bootstrap import percentile_ci
from tutormetrics.stats.cluster_resample import ClusterDraws, cluster_sums, resampled_sums

__all__ = [
    "FleissResult",
    "alpha_bootstrap",
    "alpha_bootstrap_values",
    "alpha_from_coincidence",
    "alpha_resampled",
    "coincidence_matrix",
    "exact_agreement",
    "fleiss_kappa_modal",
    "gwet_ac1_counts",
    "krippendorff_alpha_counts",
    "unit_counts",
]

Level = Literal["nominal", "ordinal", "interval"]


def unit_counts(unit: np.ndarray, code: np.ndarray, n_units: int, q: int) -> np.ndarray:
    """Count matrix ``r[i, k]`` from one (unit index, category code) pair per rating.

    Args:
        unit: Unit index per rating (0..n_units−1).
        code: Category code per rating (0..q−1).
        n_units: Number of units (rows).
        q: Number of categories (columns).

    Example:
        >>> unit_counts(np.array([0, 0, 1]), np.array([1, 1, 0]), 2, 2).tolist()
        [[0, 2], [1, 0]]
    """
    flat = np.asarray(unit, dtype=np.int64) * q + np.asarray(code, dtype=np.int64)
    return np.bincount(flat, minlength=n_units * q).reshape(n_units, q)


def exact_agreement(counts: np.ndarray) -> float:
    """Share of pairable units (r_i ≥ 2) whose ratings all fall in one category; NaN without any.

    Example:
        >>> exact_agreement(np.array([[2, 0], [1, 1], [0, 1]]))
        0.5
    """
    r = np.asarray(counts)
    ri = r.sum(1)
    pairable = ri >= 2
    if not pairable.any():
        return float("nan")
    return float((r[pairable].max(1) == ri[pairable]).mean())


class FleissResult(NamedTuple):
    """Fleiss' κ on the modal units: ``kappa`` over ``u`` of the ``v`` pairable units, each with ``m`` ratings."""

    kappa: float
    u: int
    v: int
    m: int

    @property
    def reason(self) -> str:
        """``fleiss_<u>_of_<v>_units_with_<m>_ratings`` (empty when no unit is pairable)."""
        return f"fleiss_{self.u}_of_{self.v}_units_with_{self.m}_ratings" if self.v else ""


def fleiss_kappa_modal(counts: np.ndarray) -> FleissResult:
    """Fleiss' κ on the units with the modal number of ratings m* (ties: the larger r_i).

    ``P_i = Σ_k r_ik(r_ik − 1)/(m*(m* − 1))``, ``p_k = Σ_i r_ik/(u m*)``, ``P_e = Σ p_k²``,
    ``κ = (P̄ − P_e)/(1 − P_e)``; NaN when ``P_e = 1``.

    Example:
        >>> fleiss_kappa_modal(np.array([[3, 0], [0, 3], [2, 1], [1, 0]]))
        FleissResult(kappa=0.55, u=3, v=3, m=3)
    """
    r = np.asarray(counts, dtype=float)
    ri = r.sum(1).astype(np.int64)
    pairable = ri >= 2
    v = int(pairable.sum())
    if v == 0:
        return FleissResult(float("nan"), 0, 0, 0)
    freq = np.bincount(ri[pairable])
    m = int(np.flatnonzero(freq == freq.max())[-1])
    sub = r[ri == m]
    u = sub.shape[0]
    p_bar = (sub * (sub - 1)).sum(1).mean() / (m * (m - 1))
    p_k = sub.sum(0) / (u * m)
    p_e = float((p_k**2).sum())
    kappa = float("nan") if np.isclose(p_e, 1.0) else float((p_bar - p_e) / (1 - p_e))
    return FleissResult(kappa, u, v, m)


def coincidence_matrix(counts: np.ndarray) -> np.ndarray:
    """Krippendorff's coincidence matrix ``o_ck = Σ_{i: r_i ≥ 2} r_ic (r_ik − [c=k]) / (r_i − 1)``.

    Example:
        >>> coincidence_matrix(np.array([[2, 1], [0, 1]])).tolist()
        [[1.0, 1.0], [1.0, 0.0]]
    """
    r = np.asarray(counts, dtype=float)
    ri = r.sum(1)
    r = r[ri >= 2]
    scale = 1.0 / (r.sum(1) - 1.0)
    o = (r * scale[:, None]).T @ r
    o[np.diag_indices_from(o)] -= (r * scale[:, None]).sum(0)
    return o


def _delta2(n_c: np.ndarray, values: np.ndarray, level: Level) -> np.ndarray:
    """Squared distances δ²_ck for the nominal, interval or ordinal metric (``docs/design/raters.md#krippendorff``)."""
    q = n_c.size
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ordinal":
        cum = np.concatenate(([0.0], np.cumsum(n_c)))
        lo = np.minimum.outer(np.arange(q), np.arange(q))
        hi = np.maximum.outer(np.arange(q), np.arange(q))
        between = cum[hi + 1] - cum[lo]  # Σ_{g=c..k} n_g
        return (between - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    raise ValueError(f"unknown level {level!r}; use nominal, ordinal or interval")


def alpha_from_coincidence(o: np.ndarray, values: np.ndarray | None = None, level: Level = "nominal") -> float:
    """``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck``; NaN when the denominator is 0.

    Args:
        o: The Q×Q coincidence matrix.
        values: The category scores; ``None``: the ranks 0..Q−1.
        level: ``nominal``, ``ordinal`` or ``interval`` (the δ² metric).

    Example:
        >>> round(alpha_from_coincidence(np.array([[10., 2.], [2., 6.]])), 4)
        0.6042
    """
    o = np.asarray(o, dtype=float)
    q = o.shape[0]
    vals = np.arange(q, dtype=float) if values is None else np.asarray(values, dtype=float)
    n_c = o.sum(1)
    n = n_c.sum()
    d2 = _delta2(n_c, vals, level)
    expected = float((np.outer(n_c, n_c) * d2).sum())
    if not expected > 0:
        return float("nan")
    return float(1.0 - (n - 1.0) * (o * d2).sum() / expected)


def krippendorff_alpha_counts(counts: np.ndarray, values: np.ndarray | None = None, level: Level = "nominal") -> float:
    """Krippendorff's α from unit counts (missing ratings allowed), at the given level.

    Args:
        counts: Unit × category count matrix.
        values: The category scores; ``None``: the ranks 0..Q−1.
        level: ``nominal``, ``ordinal`` or ``interval`` (the δ² metric).

    Example:
        >>> round(krippendorff_alpha_counts(np.array([[2, 0], [0, 2], [1, 1]])), 4)
        0.4444
    """
    return alpha_from_coincidence(coincidence_matrix(counts), values, level)


def gwet_ac1_counts(counts: np.ndarray) -> float:
    """Gwet's multi-rater AC1 with Q = number of columns of ``counts``.

    ``p_a = mean_{r_i ≥ 2} Σ_k r_ik(r_ik − 1)/(r_i(r_i − 1))``, ``π_k = mean_{r_i ≥ 1} r_ik/r_i``,
    ``p_e = Σ_k π_k(1 − π_k)/(Q − 1)``, ``AC1 = (p_a − p_e)/(1 − p_e)``; NaN when Q < 2.

    Example:
        >>> round(gwet_ac1_counts(np.array([[2, 0], [0, 2], [1, 1]])), 4)
        0.3333
    """
    r = np.asarray(counts, dtype=float)
    q = r.shape[1]
    ri = r.sum(1)
    pairable = ri >= 2
    if q < 2 or not pairable.any():
        return float("nan")
    rp = r[pairable]
    p_a = ((rp * (rp - 1)).sum(1) / (ri[pairable] * (ri[pairable] - 1))).mean()
    rated = ri >= 1
    pi = (r[rated] / ri[rated, None]).mean(0)
    p_e = (pi * (1 - pi)).sum() / (q - 1)
    if np.isclose(p_e, 1.0):
        return float("nan")
    return float((p_a - p_e) / (1 - p_e))


def _alpha_nominal_features(counts: np.ndarray) -> np.ndarray:
    """Per unit: ``[r_i1..r_iQ, Σ_c o_i,cc]`` for pairable units, zeros for the others.

    Summing these rows over a resample gives the marginals ``n_c`` and the agreeing coincidences.
    """
    r = np.asarray(counts, dtype=float)
    ri = r.sum(1)
    pairable = ri >= 2
    feats = np.zeros((r.shape[0], r.shape[1] + 1))
    feats[pairable, :-1] = r[pairable]
    rp = r[pairable]
    feats[pairable, -1] = (rp * (rp - 1)).sum(1) / (ri[pairable] - 1)
    return feats


def _alpha_nominal_from_sums(sums: np.ndarray) -> np.ndarray:
    """Nominal α per row of summed features: ``1 − (n − 1)(n − Σ o_cc)/(n² − Σ n_c²)``."""
    n_c, agree = sums[:, :-1], sums[:, -1]
    n = n_c.sum(1)
    expected = n**2 - (n_c**2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - (n - 1.0) * (n - agree) / expected
    return np.where(expected > 0, out, np.nan)


def alpha_bootstrap_values(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Nominal α of weighted resamples: ``weights`` (B, U) says how often each unit was drawn.

    Example:
        >>> r = np.array([[2, 0], [0, 2], [1, 1]])
        >>> alpha_bootstrap_values(r, np.array([[1, 1, 1], [2, 1, 0]])).round(4).tolist()
        [0.4444, 1.0]
    """
    return _alpha_nominal_from_sums(np.asarray(weights, dtype=float) @ _alpha_nominal_features(counts))


def alpha_resampled(counts: np.ndarray, draws: ClusterDraws, unit_cluster: np.ndarray) -> np.ndarray:
    """Nominal α of every resample of the shared draws (``docs/guide/judges.md#resamples``): the coincidence
    matrix under unit weights, ``o_ck = Σᵢ wᵢ·rᵢc(rᵢk − [c = k])/(rᵢ − 1)``, from the clusters' feature sums.

    Args:
        counts: Unit × category count matrix.
        draws: The shared cluster draws.
        unit_cluster: Cluster index per unit.

    Example:
        >>> r = np.array([[2, 0], [0, 2], [1, 1]])
        >>> alpha_resampled(r, ClusterDraws(2, 3, seed=0, criterion=0), np.array([0, 0, 1])).shape
        (3,)
    """
    feats = _alpha_nominal_features(counts)
    return _alpha_nominal_from_sums(resampled_sums(draws, cluster_sums(unit_cluster, feats, draws.n_clusters)))


def alpha_bootstrap(
    counts: np.ndarray,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the nominal α over units (every row of ``counts`` is a unit).

    Units are reduced to their distinct count patterns; resampling U units with replacement then
    only matters through how many draws land on each pattern, which is ``Multinomial(U, f_p/U)``
    (f_p = units with pattern p). One multinomial draw of P ≪ U cells per resample, from
    ``default_rng(seed)``, replaces U index draws. Resamples where α is undefined are dropped.

    Args:
        counts: Unit × category count matrix.
        n_resamples: Bootstrap resamples (≤ 0: NaN interval).
        seed: Seed of ``default_rng``.
        confidence_level: Interval level, in (0, 1).

    Example:
        >>> r = np.array([[2, 0], [0, 2], [1, 1], [2, 0], [0, 2], [2, 0]] * 5)
        >>> lo, hi = alpha_bootstrap(r, n_resamples=200)
        >>> bool(lo < krippendorff_alpha_counts(r) < hi)
        True
    """
    feats = _alpha_nominal_features(counts)
    n_units = feats.shape[0]
    if n_resamples <= 0 or n_units == 0:
        return float("nan"), float("nan")
    r = np.asarray(counts, dtype=np.int64)
    radix = int(r.max(initial=0)) + 1
    if r.shape[1] * np.log2(radix) < 62:  # one integer per count pattern: a fast 1-D unique
        key = r @ radix ** np.arange(r.shape[1], dtype=np.int64)
        _, first, freq = np.unique(key, return_index=True, return_counts=True)
        patterns = feats[first]
    else:
        patterns, freq = np.unique(feats, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_units, freq / n_units, size=n_resamples)
    boot = _alpha_nominal_from_sums(weights @ patterns)
    return percentile_ci(boot, confidence_level)
