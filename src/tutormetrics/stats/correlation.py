"""Spearman building blocks: vectorised ρ, the t-approximation p, the permutation p and the Fisher-z interval (``docs/statistics.md#p-values``, ``docs/statistics.md#confidence-intervals``)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats


def fisher_ci(rho: float, n: int, confidence_level: float = 0.95) -> tuple[float, float, float]:
    """Fisher-z interval for Spearman ρ with the Bonett–Wright standard error.

    ``z = atanh ρ``, ``se_z = sqrt((1 + ρ²/2)/(n − 3))``, interval ``tanh(z ± z_{1−α/2} se_z)``.
    The third value is the delta-method SE on the ρ scale, ``se_z · (1 − ρ²)``, as printed by
    statpsych ``ci.spear``. Returns NaNs when ``n ≤ 3`` or ρ is not finite.

    Args:
        rho: Spearman ρ.
        n: number of pairs.
        confidence_level: coverage of the interval, in (0, 1).

    Example (statpsych reference, docs/statistics.md#confidence-intervals):
        >>> [round(v, 7) for v in fisher_ci(0.8699639, 15)]
        [0.5840951, 0.9638297, 0.0824133]
    """
    if not np.isfinite(rho) or n <= 3:
        return float("nan"), float("nan"), float("nan")
    se_z = math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
    crit = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    z = math.atanh(rho) if abs(rho) < 1 else math.copysign(math.inf, rho)
    return math.tanh(z - crit * se_z), math.tanh(z + crit * se_z), se_z * (1.0 - rho * rho)


def spearman_vec(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorised Spearman ρ along ``axis``: average ranks, centre, normalised cross-product.

    This is the statistic passed to :func:`scipy.stats.bootstrap` (``vectorized=True``).

    Args:
        x: first variable.
        y: second variable, same shape as ``x``.
        axis: axis along which observations run.

    Example:
        >>> float(spearman_vec(np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4])))
        0.8
    """
    rx = stats.rankdata(x, axis=axis)
    ry = stats.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(rx * ry, axis=axis) / np.sqrt(np.sum(rx * rx, axis=axis) * np.sum(ry * ry, axis=axis))


def spearman_asymptotic_p(rho: float | np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Two-sided t-approximation p of :func:`scipy.stats.spearmanr`.

    ``t = ρ sqrt((n − 2)/((1 + ρ)(1 − ρ)))`` with ``n − 2`` degrees of freedom, ``p = 2·sf(|t|)``.

    Example:
        >>> float(spearman_asymptotic_p(0.0, 30))
        1.0
    """
    rho = np.asarray(rho, dtype=float)
    dof = np.asarray(n, dtype=float) - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt((dof / ((rho + 1.0) * (1.0 - rho))).clip(0))
    return 2.0 * special.stdtr(dof, -np.abs(t))


def spearman_permutation_p(xv: np.ndarray, yv: np.ndarray, n_permutations: int, rng: np.random.Generator) -> float:
    """Two-sided permutation p shuffling one side (``permutation_type="pairings"``, docs/statistics.md#p-values).

    Ranks of a permuted sample are the permuted ranks, so the statistic permutes the centred ranks of
    x and correlates them with the fixed centred ranks of y.

    Args:
        xv: (n,) first variable.
        yv: (n,) second variable.
        n_permutations: number of random permutations.
        rng: generator of the permutations.
    """
    rx = stats.rankdata(xv)
    rx -= rx.mean()
    ry = stats.rankdata(yv)
    ry -= ry.mean()
    scale = math.sqrt(float(rx @ rx) * float(ry @ ry))

    def statistic(rxp: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(rxp * ry, axis=axis) / scale

    res = stats.permutation_test(
        (rx,),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=n_permutations,
        alternative="two-sided",
        rng=rng,
    )
    return float(res.pvalue)

