"""Prediction-powered mean of human scores from many judge labels and a few human labels (``predictive.md`` §3).

With human scores ``Y`` and judge scores ``f`` on the n labelled items (L) and judge scores ``f̃`` on the
N unlabelled ones (U):

- ``θ̂_λ = λ·mean(f̃) + mean(Y − λf)`` (λ = 1: PPI; λ = 0: the classical mean);
- PPI++ power tuning: ``λ̂ = clip(cov₀(Y, f) / ((1 + n/N)·var₁(f ∪ f̃)), 0, 1)``;
- ``se = sqrt(var₀(λf̃)/N + var₀(Y − λf)/n)``; interval ``θ̂ ± z·se``;
- classical: ``Ȳ ± z·sd₀(Y)/√n``; ``n_effective = n·se_classical²/se²``.

These are ``ppi_py``'s ``ppi_mean_pointestimate``, ``ppi_mean_ci`` (``lam=None`` = their ``_calc_lam_glm``
with d = 1) and ``classical_mean_ci``; ppi_py defaults to a 90% interval and to tuning λ.

Example (the spec's worked example, §5.3):
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


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_unl: np.ndarray) -> float:
    """PPI++ λ̂ for a mean: ``clip(cov₀(Y, f) / ((1 + n/N)·var₁(f ∪ f̃)), 0, 1)``; NaN when the judge is constant."""
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
    """Prediction-powered mean (and PPI++ with ``lam="auto"``) with the edge cases of ``predictive.md`` §3.4."""
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
