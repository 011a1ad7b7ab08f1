"""Intraclass correlations of repeated trials (``docs/design/studies.md#variability``; Shrout & Fleiss 1979, McGraw & Wong 1996).

On the n × k matrix y (units × trials) with grand mean ȳ: ``SS_R = k Σ_i (ȳ_i· − ȳ)²``,
``SS_C = n Σ_j (ȳ_·j − ȳ)²``, ``SS_E = Σ (y_ij − ȳ_i· − ȳ_·j + ȳ)²``; ``MS_R = SS_R/(n − 1)``,
``MS_C = SS_C/(k − 1)``, ``MS_E = SS_E/((n − 1)(k − 1))``, ``MS_W = (SS_C + SS_E)/(n(k − 1))``.
Six forms (ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k = McGraw & Wong's ICC(1,1), ICC(A,1), ICC(C,1),
ICC(1,k), ICC(A,k), ICC(C,k)) with F tests and 95% CIs (ICC2: McGraw & Wong's approximate df).

Example:
    >>> y = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    >>> [round(r["icc"], 4) for r in icc_forms(y)]
    [0.1657, 0.2898, 0.7148, 0.4428, 0.6201, 0.9093]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

__all__ = ["FORMS", "icc_arrays", "icc_forms"]

#: (form, McGraw & Wong label as in pingouin 0.7, description)
FORMS: tuple[tuple[str, str, str], ...] = (
    ("ICC1", "ICC(1,1)", "one-way random, single"),
    ("ICC2", "ICC(A,1)", "two-way, absolute agreement, single"),
    ("ICC3", "ICC(C,1)", "two-way, consistency, single"),
    ("ICC1k", "ICC(1,k)", "one-way, mean of k"),
    ("ICC2k", "ICC(A,k)", "two-way, absolute agreement, mean of k"),
    ("ICC3k", "ICC(C,k)", "two-way, consistency, mean of k"),
)
_NAN = float("nan")


_FIELDS = ("icc", "ci_low", "ci_high", "f", "df1", "df2", "p")


def icc_arrays(y: np.ndarray, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """The six ICC forms of V matrices at once: ``y`` is V × units × k with NaN where a value is missing, and each
    matrix keeps only its **complete** units (a finite value in all k trials).

    Returns ``n_units`` (V,) and, per form in :data:`FORMS` order, ``icc, ci_low, ci_high, f, df1, df2, p`` (V × 6)
    and ``reason`` (V × 6 text: ``too_few`` with n < 2 or k < 2, ``constant`` when every complete value is the same,
    ``zero_error`` when the form's F denominator is ≤ 1e-12 of the total SS: f, p and the interval NaN). The work is
    a few array passes over ``y``: linear in V × units × k.

    Args:
        y: V × units × k values.
        alpha: 1 − the interval's coverage.

    >>> y = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    >>> gap = y.copy(); gap[0, 1] = np.nan  # unit 0 is incomplete in the second matrix
    >>> out = icc_arrays(np.stack([y, gap]))
    >>> out["n_units"].tolist(), out["icc"][0, :3].round(4).tolist(), bool(out["icc"][1, 0] == icc_forms(y[1:])[0]["icc"])
    ([6, 5], [0.1657, 0.2898, 0.7148], True)
    """
    y = np.asarray(y, dtype=float)
    v_count, _, k = y.shape
    full = np.isfinite(y).all(2)  # complete units, V × units
    n = full.sum(1)
    w = full[:, :, None]
    z = np.where(w, y, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        row_m = z.sum(2) / k
        grand = z.sum((1, 2)) / (n * k)
        col_m = z.sum(1) / n[:, None]
        ss_r = k * np.where(full, (row_m - grand[:, None]) ** 2, 0.0).sum(1)
        ss_c = n * ((col_m - grand[:, None]) ** 2).sum(1)
        ss_e = (np.where(w, y - row_m[:, :, None] - col_m[:, None, :] + grand[:, None, None], 0.0) ** 2).sum((1, 2))
        ss_t = ss_r + ss_c + ss_e
        same = np.where(w, y, -np.inf).max((1, 2)) == np.where(w, y, np.inf).min((1, 2))
        ms_r, ms_c = ss_r / (n - 1), ss_c / (k - 1) if k > 1 else np.full(v_count, np.nan)
        ms_e, ms_w = ss_e / ((n - 1) * (k - 1)), (ss_c + ss_e) / (n * (k - 1))
        tiny = 1e-12 * ss_t
        df_w, df_e = n * (k - 1.0), (n - 1.0) * (k - 1)
        icc1 = (ms_r - ms_w) / (ms_r + (k - 1) * ms_w)
        icc2 = (ms_r - ms_e) / (ms_r + (k - 1) * ms_e + k * (ms_c - ms_e) / n)
        icc3 = (ms_r - ms_e) / (ms_r + (k - 1) * ms_e)
        icc1k = (ms_r - ms_w) / ms_r
        icc2k = (ms_r - ms_e) / (ms_r + (ms_c - ms_e) / n)
        icc3k = (ms_r - ms_e) / ms_r
        f1, f3 = ms_r / ms_w, ms_r / ms_e
        q = 1 - alpha / 2
        d1 = n - 1.0
        fl1, fu1 = f1 / stats.f.ppf(q, d1, df_w), f1 * stats.f.ppf(q, df_w, d1)
        fl3, fu3 = f3 / stats.f.ppf(q, d1, df_e), f3 * stats.f.ppf(q, df_e, d1)
        p1, p3 = stats.f.sf(f1, d1, df_w), stats.f.sf(f3, d1, df_e)
        rho, fj = icc2, ms_c / ms_e  # ICC2: McGraw & Wong's approximate df
        c = n * (1 + (k - 1) * rho) - k * rho
        v = (n - 1) * (k - 1) * (k * rho * fj + c) ** 2 / ((n - 1) * k**2 * rho**2 * fj**2 + c**2)
        f_star, f_2star = stats.f.ppf(q, d1, v), stats.f.ppf(q, v, d1)
        d = k * ms_c + (k * n - k - n) * ms_e
        lo = n * (ms_r - f_star * ms_e) / (f_star * d + n * ms_r)
        hi = n * (f_2star * ms_r - ms_e) / (d + n * f_2star * ms_r)
        sb_lo, sb_hi = lo * k / (1 + (k - 1) * lo), hi * k / (1 + (k - 1) * hi)  # Spearman-Brown for the mean of k
        out = {
            "icc": np.stack([icc1, icc2, icc3, icc1k, icc2k, icc3k], 1),
            "ci_low": np.stack([(fl1 - 1) / (fl1 + k - 1), lo, (fl3 - 1) / (fl3 + k - 1), 1 - 1 / fl1, sb_lo, 1 - 1 / fl3], 1),
            "ci_high": np.stack([(fu1 - 1) / (fu1 + k - 1), hi, (fu3 - 1) / (fu3 + k - 1), 1 - 1 / fu1, sb_hi, 1 - 1 / fu3], 1),
            "f": np.stack([f1, f3, f3, f1, f3, f3], 1),
            "df1": np.stack([d1] * 6, 1),
            "df2": np.stack([df_w, df_e, df_e, df_w, df_e, df_e], 1),
            "p": np.stack([p1, p3, p3, p1, p3, p3], 1),
        }
    zero_w, zero_e = ms_w <= tiny, ms_e <= tiny
    zero = np.stack([zero_w, zero_e, zero_e, zero_w, zero_e, zero_e], 1)
    for key in _FIELDS[1:]:
        out[key] = np.where(zero, np.nan, out[key])
    too_few = (n < 2) | (k < 2)
    constant = ~too_few & ((ss_t == 0) | same)
    void = (too_few | constant)[:, None]
    for key in _FIELDS:
        out[key] = np.where(void, np.nan, out[key]).astype(float)
    reason = np.where(zero, "zero_error", "").astype(object)
    reason[constant] = "constant"
    reason[too_few] = "too_few"
    return {"n_units": n, **out, "reason": reason}


def icc_forms(y: np.ndarray, alpha: float = 0.05) -> list[dict[str, Any]]:
    """The six ICC rows of a complete n × k matrix (``form, mcgraw_wong, n_units, n_trials, icc, ci_low,
    ci_high, f, df1, df2, p, reason``); reasons ``too_few``, ``constant``, ``zero_error`` (:func:`icc_arrays`).

    Args:
        y: n units × k trials.
        alpha: 1 − the interval's coverage.
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 2:
        raise ValueError("icc_forms takes one n x k matrix")
    out = icc_arrays(y[None], alpha)
    return [
        {"form": form, "mcgraw_wong": mw, "n_units": int(y.shape[0]), "n_trials": int(y.shape[1]),
         **{key: float(out[key][0, j]) for key in _FIELDS}, "reason": str(out["reason"][0, j])}
        for j, (form, mw, _) in enumerate(FORMS)
    ]  # fmt: skip
