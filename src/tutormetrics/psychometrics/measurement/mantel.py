"""Observed-score DIF statistics on stratified counts (``docs/measurement.md#dif``): Mantel–Haenszel with Δ_MH and
the ETS A/B/C classes for binary scores, Mantel's χ² with the standardised mean difference and AA/BB/CC for
ordinal ones, and the Rasch contrast's class on the logit scale.

Stratum k of a binary criterion: A, B reference with X = 1, 0; C, D focal with X = 1, 0; N = A + B + C + D:

    α_MH = Σ AD/N / Σ BC/N,   Δ_MH = −2.35 ln α_MH   (Δ < 0: harder for the focal group)
    Var(ln α) by Robins, Breslow & Greenland (1986);   SE(Δ) = 2.35 √Var
    χ²_MH = (|ΣA − ΣE(A)| − c)² / ΣV(A),  c = ½ when |ΣA − ΣE(A)| ≥ ½ (R's mantelhaen.test), else 0.

Example:
    >>> mh = mantel_haenszel(np.array([20, 30, 25]), np.array([10, 10, 5]), np.array([8, 15, 14]), np.array([12, 10, 6]))
    >>> round(mh.alpha, 5), round(mh.delta, 6), round(mh.chi2, 6), ets_class(mh.delta, mh.delta_se, mh.p)
    (2.33913, -1.996981, 5.169029, 'B')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "DELTA_SCALE",
    "MantelHaenszel",
    "OrdinalMantel",
    "ets_class",
    "ets_ordinal_class",
    "mantel_haenszel",
    "ordinal_mantel",
    "rasch_class",
]

#: Δ = −2.35 ln α: the ETS delta scale (SD 4) over the logistic-to-normal factor 1.7, 4/1.7 ≈ 2.35.
DELTA_SCALE = 2.35
_NAN = float("nan")


@dataclass(frozen=True)
class MantelHaenszel:
    """α_MH, ln α's SE, Δ_MH and its SE, χ²_MH (1 df) and p; ``reason`` ``extreme`` when α is undefined."""

    alpha: float
    log_alpha_se: float
    delta: float
    delta_se: float
    chi2: float
    p: float
    reason: str = ""


def mantel_haenszel(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> MantelHaenszel:
    """The Mantel–Haenszel statistics of 2×2 strata (arrays over strata; module docstring).

    Args:
        a: Reference group, correct (higher) count per stratum.
        b: Reference group, incorrect (lower) count per stratum.
        c: Focal group, correct (higher) count per stratum.
        d: Focal group, incorrect (lower) count per stratum.
    """
    a, b, c, d = (np.asarray(v, dtype=float) for v in (a, b, c, d))
    n = a + b + c + d
    r, s = a * d / n, b * c / n
    r_sum, s_sum = float(r.sum()), float(s.sum())
    n_ref, n_foc, m1, m0 = a + b, c + d, a + c, b + d
    e_a = n_ref * m1 / n
    v_a = n_ref * n_foc * m1 * m0 / (n**2 * (n - 1))
    diff = abs(float(a.sum() - e_a.sum()))
    corr = 0.5 if diff >= 0.5 else 0.0
    v_sum = float(v_a.sum())
    chi2 = (diff - corr) ** 2 / v_sum if v_sum > 0 else _NAN
    p = float(stats.chi2.sf(chi2, 1)) if np.isfinite(chi2) else _NAN
    if r_sum <= 0 or s_sum <= 0:
        return MantelHaenszel(_NAN, _NAN, _NAN, _NAN, chi2, p, "extreme")
    pp, qq = (a + d) / n, (b + c) / n
    var = (
        float(np.sum(pp * r)) / (2 * r_sum**2)
        + float(np.sum(pp * s + qq * r)) / (2 * r_sum * s_sum)
        + float(np.sum(qq * s)) / (2 * s_sum**2)
    )
    alpha = r_sum / s_sum
    se = math.sqrt(var)
    return MantelHaenszel(alpha, se, -DELTA_SCALE * math.log(alpha), DELTA_SCALE * se, chi2, p)


def ets_class(delta: float, se: float, p: float) -> str:
    """ETS A/B/C: A if |Δ| < 1 or p ≥ .05; C if |Δ| ≥ 1.5 and the null |Δ| ≤ 1 is rejected at .05,
    p_C = Φ((1 − |Δ|)/SE) + Φ((−1 − |Δ|)/SE) < .05; B otherwise (empty when undefined).

    Args:
        delta: MH D-DIF Δ (delta scale).
        se: Its standard error.
        p: The MH χ² p value.
    """
    return _interval_class(delta, se, p, small=1.0, large=1.5)


def rasch_class(contrast: float, se: float, p: float) -> str:
    """The ETS rule on the logit scale (Winsteps): Δ thresholds 1 and 1.5 divided by 2.35.

    Args:
        contrast: The DIF contrast (logits).
        se: Its standard error.
        p: Its p value.
    """
    return _interval_class(contrast, se, p, small=1.0 / DELTA_SCALE, large=1.5 / DELTA_SCALE)


def _interval_class(value: float, se: float, p: float, *, small: float, large: float) -> str:
    if not (np.isfinite(value) and np.isfinite(p)):
        return ""
    size = abs(value)
    if size < small or p >= 0.05:
        return "A"
    p_c = stats.norm.cdf((small - size) / se) + stats.norm.cdf((-small - size) / se) if se > 0 else 0.0
    return "C" if size >= large and p_c < 0.05 else "B"


@dataclass(frozen=True)
class OrdinalMantel:
    """Mantel's χ² (1 df) and p, the SMD (> 0 favours the focal group), the SD of the scores; ``reason``
    ``constant`` when V(F) = 0."""

    chi2: float
    p: float
    smd: float
    sd: float
    reason: str = ""


def ordinal_mantel(reference: np.ndarray, focal: np.ndarray, scores: np.ndarray) -> OrdinalMantel:
    """Mantel's (1963) test and Dorans & Schmitt's SMD on (strata × score values) counts of each group:

        F = Σ_k Σ_t y_t n_Ftk,  E(F) = Σ_k (n_Fk/N_k) Σ_t y_t n_+tk,
        V(F) = Σ_k n_Rk n_Fk/(N_k²(N_k − 1)) [N_k Σ_t y_t² n_+tk − (Σ_t y_t n_+tk)²],  χ² = (F − E(F))²/V(F),
        SMD = Σ_k (n_Fk/n_F)(m_Fk − m_Rk),  SD = sample SD (ddof 1) of the scores of both groups.

    Args:
        reference: Reference group counts, strata × score values.
        focal: Focal group counts, strata × score values.
        scores: The score value y_t of each column.

    Example:
        >>> ref, foc = np.array([[10, 8, 2], [4, 10, 12]]), np.array([[9, 4, 1], [6, 7, 5]])
        >>> m = ordinal_mantel(ref, foc, np.arange(3.0))
        >>> round(m.chi2, 5), round(m.smd / m.sd, 7), ets_ordinal_class(m.smd, m.sd, m.p)
        (2.77899, -0.3539253, 'AA')
    """
    ref, foc, y = np.asarray(reference, dtype=float), np.asarray(focal, dtype=float), np.asarray(scores, dtype=float)
    tot = ref + foc
    n_r, n_f, n_k = ref.sum(1), foc.sum(1), tot.sum(1)
    f = float((foc @ y).sum())
    e_f = float(np.sum(n_f / n_k * (tot @ y)))
    v_f = float(np.sum(n_r * n_f / (n_k**2 * (n_k - 1)) * (n_k * (tot @ y**2) - (tot @ y) ** 2)))
    smd = float(np.sum(n_f / n_f.sum() * (foc @ y / n_f - ref @ y / n_r)))
    counts = tot.sum(0)
    n_all = counts.sum()
    mean = float(counts @ y / n_all)
    sd = math.sqrt(float(counts @ (y - mean) ** 2) / (n_all - 1)) if n_all > 1 else _NAN
    if v_f <= 0:
        return OrdinalMantel(_NAN, _NAN, smd, sd, "constant")
    chi2 = (f - e_f) ** 2 / v_f
    return OrdinalMantel(chi2, float(stats.chi2.sf(chi2, 1)), smd, sd)


def ets_ordinal_class(smd: float, sd: float, p: float) -> str:
    """AA if p ≥ .05 or |SMD/SD| ≤ .17; CC if p < .05 and |SMD/SD| > .25; BB otherwise (empty when undefined).

    Args:
        smd: Standardized mean difference SMD.
        sd: Pooled SD of the scores.
        p: Mantel's χ² p value.
    """
    if not (np.isfinite(smd) and np.isfinite(sd) and sd > 0 and np.isfinite(p)):
        return ""
    size = abs(smd / sd)
    if p >= 0.05 or size <= 0.17:
        return "AA"
    return "CC" if size > 0.25 else "BB"
