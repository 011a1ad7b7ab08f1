"""Prediction-powered mean of human scores from many judge labels and a few human labels (``docs/design/predictive.md#ppi``).

With human scores ``Y`` and judge scores ``f`` on the n labelled items (L) and judge scores ``f̃`` on the
N unlabelled ones (U):

- ``θ̂_λ = λ·mean(f̃) + mean(Y − λf)`` (λ = 1: PPI; λ = 0: the classical mean);
- PPI++ power tuning: ``λ̂ = clip(cov₀(Y, f) / ((1 + n/N)·var₁(f ∪ f̃)), 0, 1)``;
- ``se = sqrt(var₀(λf̃)/N + var₀(Y − λf)/n)``; interval ``θ̂ ± z·se``;
- classical: ``Ȳ ± z·sd₀(Y)/√n``; ``n_effective = n·se_classical²/se²``.

These are ``ppi_py``'s ``ppi_mean_pointestimate``, ``ppi_mean_ci`` (``lam=None`` = their ``_calc_lam_glm``
with d = 1) and ``classical_mean_ci``; ppi_py defaults to a 90% interval and to tuning λ.

Example (the worked example of docs/design/predictive.md#ppi):
    >>> y = [1, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
    >>> f = [1, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
    >>> u = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]
    >>> r = ppi_mean(y, f, u, lam=1.0)
    >>> round(r.estimate, 7), round(r.se, 7), round(r.n_effective, 7)
    (0.7416667, 0.0966032, 19.3476374)
    >>> round(ppi_mean(y, f, u, lam="auto").lam, 7)
    0.6876766
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

#: Below this many labelled items the normal interval is rough (reason ``few_labeled``).
FEW_LABELED = 30
#: Below this many clusters with a labelled item the cluster se is rough (reason ``few_labeled_clusters``).
FEW_LABELED_CLUSTERS = 30


@dataclass
class PPIResult:
    """One prediction-powered mean with its classical and naive counterparts."""

    n_labeled: int
    n_unlabeled: int
    lam: float = float("nan")
    estimate: float = float("nan")
    se: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    classical: float = float("nan")
    classical_se: float = float("nan")
    classical_ci_low: float = float("nan")
    classical_ci_high: float = float("nan")
    judge_mean: float = float("nan")
    n_effective: float = float("nan")
    reasons: list[str] = field(default_factory=list)
    # with clusters (docs/guide/judges.md#cluster-ppi): clusters among L ∪ U, those with a labelled item,
    # today's row-level se at the row's λ and se²/se_rows²
    n_clusters: int | None = None
    n_clusters_labeled: int | None = None
    se_rows: float = float("nan")
    design_effect: float = float("nan")


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_unl: np.ndarray) -> float:
    """PPI++ λ̂ for a mean: ``clip(cov₀(Y, f) / ((1 + n/N)·var₁(f ∪ f̃)), 0, 1)``; NaN when the judge is constant.

    Args:
        y: (n,) human labels of the labelled items.
        f: (n,) judge scores of the labelled items.
        f_unl: (N,) judge scores of the unlabelled items.
    """
    n, big_n = y.size, f_unl.size
    cov0 = float(np.mean((y - y.mean()) * (f - f.mean())))
    var1 = float(np.var(np.concatenate((f, f_unl)), ddof=1))
    if not var1 > 0:
        return float("nan")
    return float(np.clip(cov0 / ((1.0 + n / big_n) * var1), 0.0, 1.0))


def ppi_mean(
    y: Sequence[float] | np.ndarray,
    f: Sequence[float] | np.ndarray,
    f_unl: Sequence[float] | np.ndarray,
    *,
    lam: float | str = 1.0,
    confidence_level: float = 0.95,
) -> PPIResult:
    """Prediction-powered mean (and PPI++ with ``lam="auto"``) with the edge cases of ``docs/design/predictive.md#ppi-edge-cases``.

    Args:
        y: human labels of the n labelled items.
        f: judge scores of the same items.
        f_unl: judge scores of the N unlabelled items.
        lam: λ: a number (1 = plain PPI, 0 = the classical mean) or ``"auto"`` for the PPI++ λ̂.
        confidence_level: coverage of the intervals, in (0, 1).
    """
    yv, fv, uv = (np.asarray(v, dtype=float) for v in (y, f, f_unl))
    n, big_n = yv.size, uv.size
    z = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    res = PPIResult(n, big_n)
    both = np.concatenate((fv, uv))
    res.judge_mean = float(both.mean()) if both.size else float("nan")
    if n < 2:
        res.reasons.append("too_few_labeled")
        return res
    if n < FEW_LABELED:
        res.reasons.append("few_labeled")
    res.classical = float(yv.mean())
    res.classical_se = float(yv.std() / math.sqrt(n))
    res.classical_ci_low = res.classical - z * res.classical_se
    res.classical_ci_high = res.classical + z * res.classical_se
    if big_n == 0:
        res.reasons.append("no_unlabeled")
        res.lam, res.estimate, res.se = 0.0, res.classical, res.classical_se
        res.ci_low, res.ci_high, res.n_effective = res.classical_ci_low, res.classical_ci_high, float(n)
        return res
    if lam == "auto":
        value = tuned_lambda(yv, fv, uv)
        if not np.isfinite(value):
            res.reasons.append("judge_constant")
            value = 0.0
    else:
        value = float(lam)
    res.lam = value
    res.estimate = float(value * uv.mean() + np.mean(yv - value * fv))
    res.se = float(math.sqrt(np.var(value * uv) / big_n + np.var(yv - value * fv) / n))
    res.ci_low, res.ci_high = res.estimate - z * res.se, res.estimate + z * res.se
    with np.errstate(invalid="ignore", divide="ignore"):
        res.n_effective = float(n * res.classical_se**2 / res.se**2) if res.se > 0 else float("nan")
    return res


def _z(confidence_level: float) -> float:
    return float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))


def cluster_terms(
    y: np.ndarray, f: np.ndarray, f_unl: np.ndarray, c_lab: np.ndarray, c_unl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per cluster g: ``A_g = Σ_{L,g}(Yᵢ − Ȳ)/n`` and ``B_g = Σ_{L,g}(fᵢ − f̄)/n − Σ_{U,g}(f̃ⱼ − mean f̃)/N``
    (``docs/guide/judges.md#cluster-ppi``), the number of clusters and of those with a labelled item.

    Args:
        y: (n,) human labels of the labelled items.
        f: (n,) judge scores of the labelled items.
        f_unl: (N,) judge scores of the unlabelled items.
        c_lab: (n,) cluster label of each labelled item (compared as text).
        c_unl: (N,) cluster label of each unlabelled item.

    >>> a, b, g, g_l = cluster_terms(np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([0.0, 1.0]),
    ...                              np.array(["d1", "d2"]), np.array(["d1", "d3"]))
    >>> a.tolist(), b.tolist(), g, g_l
    ([0.25, -0.25, 0.0], [0.25, 0.0, -0.25], 3, 2)
    """
    labels = np.concatenate((np.asarray(c_lab, dtype=str), np.asarray(c_unl, dtype=str)))
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    n, big_n = y.size, f_unl.size
    g = int(codes.max()) + 1 if codes.size else 0
    lab, unl = codes[:n], codes[n:]
    a = np.bincount(lab, weights=(y - y.mean()) / n, minlength=g)
    c = np.bincount(lab, weights=(f - f.mean()) / n, minlength=g)
    d = np.bincount(unl, weights=(f_unl - f_unl.mean()) / big_n, minlength=g) if big_n else np.zeros(g)
    return a, c - d, g, int(np.unique(lab).size)


def ppi_mean_clustered(
    y: Sequence[float] | np.ndarray,
    f: Sequence[float] | np.ndarray,
    f_unl: Sequence[float] | np.ndarray,
    clusters_labeled: Sequence[object] | np.ndarray,
    clusters_unlabeled: Sequence[object] | np.ndarray,
    *,
    lam: float | str = 1.0,
    confidence_level: float = 0.95,
) -> PPIResult:
    """:func:`ppi_mean` with the cluster-robust variance of ``docs/guide/judges.md#cluster-ppi``: the same
    estimate, ``se² = Σ_g (A_g − λB_g)²``, ``classical_se² = Σ_g A_g²``, ``--lambda auto`` the exact
    minimiser ``clip(Σ A_gB_g / Σ B_g², 0, 1)``; ``se_rows`` is :func:`ppi_mean`'s se at the same λ.

    Args:
        y: human labels of the n labelled items.
        f: judge scores of the same items.
        f_unl: judge scores of the N unlabelled items.
        clusters_labeled: cluster label (e.g. dialogue) of each labelled item.
        clusters_unlabeled: cluster label of each unlabelled item.
        lam: λ: a number (1 = plain PPI, 0 = the classical mean) or ``"auto"`` for the cluster-exact λ.
        confidence_level: coverage of the intervals, in (0, 1).

    Example (``docs/guide/judges.md#cluster-ppi``, item i in dialogue i mod 14):
        >>> y = [1, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
        >>> f = [1, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
        >>> u = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]
        >>> c = [f"c{i % 14}" for i in range(42)]
        >>> r = ppi_mean_clustered(y, f, u, c[:12], c[12:])
        >>> round(r.se, 7), round(r.design_effect, 7), r.reasons
        (0.0907875, 0.8832196, ['few_labeled', 'few_labeled_clusters'])
    """
    yv, fv, uv = (np.asarray(v, dtype=float) for v in (y, f, f_unl))
    rows = ppi_mean(yv, fv, uv, lam=lam, confidence_level=confidence_level)
    res = PPIResult(rows.n_labeled, rows.n_unlabeled, judge_mean=rows.judge_mean, reasons=list(rows.reasons))
    a, b, res.n_clusters, res.n_clusters_labeled = cluster_terms(yv, fv, uv, np.asarray(clusters_labeled), np.asarray(clusters_unlabeled))
    if res.n_labeled < 2:
        return res
    if res.n_clusters_labeled < FEW_LABELED_CLUSTERS:
        res.reasons.append("too_few_labeled_clusters" if res.n_clusters_labeled < 2 else "few_labeled_clusters")
    value = rows.lam
    if lam == "auto" and res.n_unlabeled and "judge_constant" not in rows.reasons:
        denom = float((b**2).sum())
        value = float(np.clip((a * b).sum() / denom, 0.0, 1.0)) if denom > 0 else 0.0
    at = rows if value == rows.lam else ppi_mean(yv, fv, uv, lam=value, confidence_level=confidence_level)
    z = _z(confidence_level)
    res.lam, res.estimate, res.classical, res.se_rows = value, at.estimate, at.classical, at.se
    if res.n_clusters_labeled < 2:
        return res
    res.classical_se = float(math.sqrt((a**2).sum()))
    res.classical_ci_low, res.classical_ci_high = res.classical - z * res.classical_se, res.classical + z * res.classical_se
    res.se = res.classical_se if not res.n_unlabeled else float(math.sqrt(((a - value * b) ** 2).sum()))
    res.ci_low, res.ci_high = res.estimate - z * res.se, res.estimate + z * res.se
    with np.errstate(invalid="ignore", divide="ignore"):
        res.n_effective = float(res.n_labeled * res.classical_se**2 / res.se**2) if res.se > 0 else float("nan")
        res.design_effect = float(res.se**2 / res.se_rows**2) if res.se_rows > 0 else float("nan")
    return res
