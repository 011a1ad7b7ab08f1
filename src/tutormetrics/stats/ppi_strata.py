"""Stratified PPI: per-stratum prediction-powered means combined with weights (``docs/guide/judges.md#strata``).

With strata k, their rows (:func:`~tutormetrics.stats.ppi.ppi_mean` or its clustered form) and weights w_k
(Σ w_k = 1): θ̂ = Σ w_kθ̂_k, se² = Σ w_k²se_k², ``classical`` = Σ w_kȲ_k with Σ w_k²classical_se_k²,
``judge_mean`` = Σ w_k·judge_mean_k, ``n_effective`` = n·classical_se²/se² (n = Σ n_k); with clusters
``se_rows`` and ``design_effect`` alike [Fisch et al. 2024; glide ``StratifiedPPIMeanEstimator``]. The default
weights are each stratum's share of the judged items, w_k = (n_k + N_k)/Σ(n_k + N_k).

Example (``docs/guide/judges.md#strata``):
    >>> from tutormetrics.stats.ppi import ppi_mean
    >>> y = [1, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
    >>> f = [1, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
    >>> u = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]
    >>> s1 = [i % 3 == 0 for i in range(42)]
    >>> part = lambda keep: ppi_mean([v for v, k in zip(y, keep) if k], [v for v, k in zip(f, keep) if k],
    ...                               [v for v, k in zip(u, keep[12:]) if k])
    >>> parts = [part(s1), part([not k for k in s1])]
    >>> r = combine_strata(parts, share_weights(parts))
    >>> round(r.estimate, 7), round(r.se, 7)
    (0.7416667, 0.0926275)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from tutormetrics.stats.ppi import FEW_LABELED, FEW_LABELED_CLUSTERS, PPIResult

__all__ = ["combine_strata", "share_weights"]


def share_weights(parts: Sequence[PPIResult]) -> np.ndarray:
    """w_k = (n_k + N_k)/Σ(n_k + N_k): each stratum's share of the judged items.

    >>> share_weights([PPIResult(2, 8), PPIResult(5, 25)]).round(4).tolist()
    [0.25, 0.75]
    """
    sizes = np.array([p.n_labeled + p.n_unlabeled for p in parts], dtype=float)
    return sizes / sizes.sum()


def _weighted(values: Sequence[float], w: np.ndarray, square: bool = False) -> float:
    v = np.asarray(values, dtype=float)
    return float(math.sqrt(np.sum(w**2 * v**2))) if square else float(np.sum(w * v))


def combine_strata(
    parts: Sequence[PPIResult], weights: np.ndarray, *, lam: float | None = None, confidence_level: float = 0.95,
    n_clusters: int | None = None, n_clusters_labeled: int | None = None,
) -> PPIResult:  # fmt: skip
    """The combined row of strata ``parts`` with ``weights`` (normalised here); ``lam`` the fixed λ (None with
    ``auto``). A stratum with fewer than two labelled items makes the row NaN (``stratum_too_few_labeled_<k>``,
    k such strata); ``judge_mean`` is still given.

    Args:
        parts: the per-stratum results.
        weights: one weight per stratum (e.g. its share of items); normalised to sum 1.
        lam: the fixed λ of the row; ``None`` with ``--lambda auto`` (λ is per stratum).
        confidence_level: coverage of the intervals, in (0, 1).
        n_clusters: clusters over all strata, for clustered rows; ``None`` when not clustered.
        n_clusters_labeled: clusters with a labelled item; ``None`` when not clustered.
    """
    w = np.asarray(weights, dtype=float) / float(np.sum(weights))
    res = PPIResult(sum(p.n_labeled for p in parts), sum(p.n_unlabeled for p in parts), lam=float("nan") if lam is None else lam)
    res.judge_mean = _weighted([p.judge_mean for p in parts], w)
    res.n_clusters, res.n_clusters_labeled = n_clusters, n_clusters_labeled
    short = sum(p.n_labeled < 2 for p in parts)
    if res.n_labeled < FEW_LABELED:
        res.reasons.append("few_labeled")
    if n_clusters_labeled is not None and n_clusters_labeled < FEW_LABELED_CLUSTERS:
        res.reasons.append("too_few_labeled_clusters" if n_clusters_labeled < 2 else "few_labeled_clusters")
    if short:
        res.reasons.append(f"stratum_too_few_labeled_{short}")
        return res
    z = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    res.estimate, res.se = _weighted([p.estimate for p in parts], w), _weighted([p.se for p in parts], w, square=True)
    res.classical, res.classical_se = _weighted([p.classical for p in parts], w), _weighted([p.classical_se for p in parts], w, square=True)
    res.ci_low, res.ci_high = res.estimate - z * res.se, res.estimate + z * res.se
    res.classical_ci_low, res.classical_ci_high = res.classical - z * res.classical_se, res.classical + z * res.classical_se
    with np.errstate(invalid="ignore", divide="ignore"):
        res.n_effective = float(res.n_labeled * res.classical_se**2 / res.se**2) if res.se > 0 else float("nan")
        if n_clusters is not None:
            res.se_rows = _weighted([p.se_rows for p in parts], w, square=True)
            res.design_effect = float(res.se**2 / res.se_rows**2) if res.se_rows > 0 else float("nan")
    return res
