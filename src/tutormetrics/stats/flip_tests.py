"""How often, and which way, verdicts change between two runs on the same items (``docs/guide/judges.md#stability``).

* Wilson's score interval [Wilson 1927] of a proportion at an effective size n/deff, with Kish's design
  effect from clusters deff = max(1, v_cl/(p̂(1 − p̂)/n)), v_cl = Σ_g(Σ_{i∈g}(xᵢ − p̂))²/n² [Korn & Graubard 1998];
* McNemar's exact test of up vs down flips (the two-sided binomial test at ½);
* the clustered McNemar χ² = (Σ_g d_g)²/Σ_g d_g², d_g = up_g − down_g, χ²₁ [Durkalski et al. 2003].

Example:
    >>> [round(v, 7) for v in wilson_interval(4 / 30, 30)]
    [0.0530966, 0.2968133]
    >>> round(mcnemar_exact_p(3, 1), 3), [round(v, 7) for v in clustered_mcnemar(np.array([1, 1, -1, 1]))]
    (0.625, [1.0, 0.3173105])
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

__all__ = ["clustered_mcnemar", "flip_design_effect", "mcnemar_exact_p", "wilson_interval"]


def wilson_interval(p: float, n_effective: float, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` observed on ``n_effective`` items (NaN for n ≤ 0).

    Args:
        p: observed proportion, in [0, 1].
        n_effective: number of items the proportion rests on (may be fractional); ≤ 0 gives NaN.
        confidence_level: coverage of the interval, in (0, 1).
    """
    if not n_effective > 0:
        return float("nan"), float("nan")
    z = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    denom = 1.0 + z * z / n_effective
    centre = (p + z * z / (2 * n_effective)) / denom
    half = z * math.sqrt(p * (1 - p) / n_effective + z * z / (4 * n_effective**2)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def flip_design_effect(flipped: np.ndarray, clusters: np.ndarray) -> float:
    """Kish's design effect of the flip rate of items in ``clusters`` (codes), at least 1; 1 when p̂ is 0 or 1.

    >>> flip_design_effect(np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1]))
    2.0
    """
    x = np.asarray(flipped, dtype=float)
    n, p = x.size, float(x.mean())
    if p in (0.0, 1.0):
        return 1.0
    sums = np.bincount(np.asarray(clusters), weights=x - p)
    return max(1.0, float((sums**2).sum() / n**2) / (p * (1 - p) / n))


def mcnemar_exact_p(up: int, down: int) -> float:
    """Two-sided exact binomial p of ``up`` flips among ``up + down`` at ½ (1 when there is none)."""
    total = int(up) + int(down)
    return 1.0 if total == 0 else float(stats.binomtest(int(up), total, 0.5).pvalue)


def clustered_mcnemar(d: np.ndarray) -> tuple[float, float]:
    """χ² = (Σ d_g)²/Σ d_g² of the per-cluster net flips ``d`` and its χ²₁ p; NaN without a net flip."""
    dv = np.asarray(d, dtype=float)
    denom = float((dv**2).sum())
    if not denom > 0:
        return float("nan"), float("nan")
    chi2 = float(dv.sum() ** 2 / denom)
    return chi2, float(stats.chi2.sf(chi2, 1))
