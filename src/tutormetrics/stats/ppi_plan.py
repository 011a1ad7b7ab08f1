"""The label budget: how many human labels for a ±h interval of a mean, humans alone and PPI++
(``docs/guide/judges.md#label-budget``).

From a pilot (humans Y and the judge f on n labelled items, the judge f̃ on N others; pool M = n + N):
σ_Y² = var(Y), σ_f² = var(f ∪ f̃), c = cov(Y, f) (ddof 1), ρ = clip(c/(σ_Yσ_f), −1, 1) (0 when an SD is 0) and
c := ρσ_Yσ_f; z = z₁₋α/₂, n₀ = z²σ_Y²/h².

* classical: n_classical = max(2, ⌈deff_c·n₀⌉);
* PPI++: for n = 2 … M − 1 (N = M − n) λ*(n) = clip(c/(σ_f²(1 + n/N)), 0, 1) and
  V(n) = (σ_Y² − 2λ*c + λ*²σ_f²)/n + λ*²σ_f²/N; n_ppi = the smallest n with z²·deff_p·V(n) ≤ h², else M when
  z²·deff_p·σ_Y²/M ≤ h² (label everything), else infeasible. While λ* < 1 this is
  ⌈n₀(1 − ρ₊²)/(1 − n₀ρ₊²/M)⌉ (ρ₊ = max(ρ, 0)).
* n_ppi ≥ n_classical: the plan is the classical one (``no_gain``).

Example (``docs/guide/judges.md#label-budget``):
    >>> y = [1, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
    >>> f = [1, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
    >>> u = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]
    >>> p = ppi_plan(y, f, u, 0.15)
    >>> p.n_classical, p.n_ppi, round(p.lambda_plan, 7), round(p.achieved_half_width, 7), p.reasons
    (34, 21, 0.5251348, 0.1490101, ['few_labeled'])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from tutormetrics.stats.ppi import FEW_LABELED

__all__ = ["Plan", "closed_form_n_ppi", "ppi_plan"]


@dataclass
class Plan:
    """A label budget from a pilot (``n_classical``/``n_ppi`` None when not computable)."""

    n_labeled: int
    n_pool: int
    half_width: float
    sd_human: float = float("nan")
    sd_judge: float = float("nan")
    rho: float = float("nan")
    deff_classical: float = float("nan")
    deff_ppi: float = float("nan")
    n_classical: int | None = None
    n_ppi: int | None = None
    lambda_plan: float = float("nan")
    achieved_half_width: float = float("nan")
    labels_saved: int | None = None
    reasons: list[str] = field(default_factory=list)


def closed_form_n_ppi(n0: float, rho: float, pool: int) -> int:
    """⌈n₀(1 − ρ₊²)/(1 − n₀ρ₊²/M)⌉, the scan's answer while λ* < 1.

    Args:
        n0: labels the classical mean needs for the target half-width.
        rho: human–judge correlation ρ (negative values count as 0).
        pool: M, the number of items (labelled and unlabelled) available.

    >>> closed_form_n_ppi(100.0, 0.8, 10_000)
    37
    """
    r2 = max(rho, 0.0) ** 2
    return math.ceil(n0 * (1 - r2) / (1 - n0 * r2 / pool))


def _moments(y: np.ndarray, judged: np.ndarray, f: np.ndarray) -> tuple[float, float, float]:
    """σ_Y, σ_f and the clipped correlation ρ (0 when an SD is 0)."""
    sy, sf = float(np.std(y, ddof=1)), float(np.std(judged, ddof=1))
    if not (sy > 0 and sf > 0):
        return sy, sf, 0.0
    return sy, sf, float(np.clip(np.cov(y, f, ddof=1)[0, 1] / (sy * sf), -1.0, 1.0))


def _variance(n: np.ndarray, pool: int, var_y: float, var_f: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """λ*(n) and V(n) for labelled sizes ``n`` < pool."""
    big_n = pool - n
    lam = np.clip(c / (var_f * (1 + n / big_n)), 0.0, 1.0) if var_f > 0 else np.zeros(n.shape)
    return lam, (var_y - 2 * lam * c + lam**2 * var_f) / n + lam**2 * var_f / big_n


def ppi_plan(
    y: Sequence[float] | np.ndarray, f: Sequence[float] | np.ndarray, f_unl: Sequence[float] | np.ndarray, half_width: float,
    *, confidence_level: float = 0.95, deff_classical: float = 1.0, deff_ppi: float = 1.0,
) -> Plan:  # fmt: skip
    """The plan of ``docs/guide/judges.md#label-budget`` from one pilot row; design effects below 1 count as 1.
    Reasons ``too_few_labeled`` (n < 2), ``few_labeled``, ``human_constant``, ``judge_constant``, ``infeasible``,
    ``no_gain``.

    Args:
        y: human labels of the pilot's labelled items.
        f: judge scores of the same items.
        f_unl: judge scores of the unlabelled items.
        half_width: target half-width of the interval, in label units.
        confidence_level: coverage of the interval, in (0, 1).
        deff_classical: design effect applied to the classical variance.
        deff_ppi: design effect applied to the PPI variance.
    """
    yv, fv, uv = (np.asarray(v, dtype=float) for v in (y, f, f_unl))
    pool = yv.size + uv.size
    plan = Plan(yv.size, pool, half_width, deff_classical=max(1.0, deff_classical), deff_ppi=max(1.0, deff_ppi))
    if yv.size < 2:
        plan.reasons.append("too_few_labeled")
        return plan
    if yv.size < FEW_LABELED:
        plan.reasons.append("few_labeled")
    plan.sd_human, plan.sd_judge, plan.rho = _moments(yv, np.concatenate((fv, uv)), fv)
    plan.reasons += ["human_constant"] * (not plan.sd_human > 0) + ["judge_constant"] * (not plan.sd_judge > 0)
    var_y, var_f = plan.sd_human**2, plan.sd_judge**2
    c = plan.rho * plan.sd_human * plan.sd_judge
    z2 = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0)) ** 2
    h2 = half_width**2
    plan.n_classical = max(2, math.ceil(plan.deff_classical * z2 * var_y / h2))
    sizes = np.arange(2, pool)
    lam, var = _variance(sizes, pool, var_y, var_f, c)
    ok = np.flatnonzero(z2 * plan.deff_ppi * var <= h2)
    if ok.size:
        plan.n_ppi, plan.lambda_plan, best = int(sizes[ok[0]]), float(lam[ok[0]]), float(var[ok[0]])
    elif z2 * plan.deff_ppi * var_y / pool <= h2:
        plan.n_ppi, plan.lambda_plan, best = pool, 0.0, var_y / pool
    else:
        plan.reasons.append("infeasible")
        best = float(min(var.min(initial=np.inf), var_y / pool))
    plan.achieved_half_width = math.sqrt(z2 * plan.deff_ppi * best)
    if plan.n_ppi is not None and plan.n_ppi >= plan.n_classical:
        plan.n_ppi, plan.lambda_plan = plan.n_classical, 0.0
        plan.achieved_half_width = math.sqrt(z2 * plan.deff_classical * var_y / plan.n_classical)
        plan.reasons.append("no_gain")
    if plan.n_ppi is not None:
        plan.labels_saved = plan.n_classical - plan.n_ppi
    return plan
