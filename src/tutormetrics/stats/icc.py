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

__all__ = ["FORMS", "icc_forms"]

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


def _nan_rows(n: int, k: int, reason: str) -> list[dict[str, Any]]:
    return [
        {"form": f, "mcgraw_wong": mw, "n_units": n, "n_trials": k, "icc": _NAN, "ci_low": _NAN, "ci_high": _NAN,
         "f": _NAN, "df1": _NAN, "df2": _NAN, "p": _NAN, "reason": reason}
        for f, mw, _ in FORMS
    ]  # fmt: skip


def icc_forms(y: np.ndarray, alpha: float = 0.05) -> list[dict[str, Any]]:
    """The six ICC rows of a complete n × k matrix (``form, mcgraw_wong, n_units, n_trials, icc, ci_low,
    ci_high, f, df1, df2, p, reason``); reasons ``too_few``, ``constant``, ``zero_error``."""
    y = np.asarray(y, dtype=float)
    n, k = y.shape
    if n < 2 or k < 2:
        return _nan_rows(n, k, "too_few")
    grand = y.mean()
    row_m, col_m = y.mean(1), y.mean(0)
    ss_r = k * ((row_m - grand) ** 2).sum()
    ss_c = n * ((col_m - grand) ** 2).sum()
    ss_e = ((y - row_m[:, None] - col_m[None, :] + grand) ** 2).sum()
    ss_t = ss_r + ss_c + ss_e
    if ss_t == 0:
        return _nan_rows(n, k, "constant")
    ms_r, ms_c = ss_r / (n - 1), ss_c / (k - 1)
    ms_e, ms_w = ss_e / ((n - 1) * (k - 1)), (ss_c + ss_e) / (n * (k - 1))
    tiny = 1e-12 * ss_t
    df_w, df_e = n * (k - 1), (n - 1) * (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (ms_r - ms_w) / (ms_r + (k - 1) * ms_w)
        icc2 = (ms_r - ms_e) / (ms_r + (k - 1) * ms_e + k * (ms_c - ms_e) / n)
        icc3 = (ms_r - ms_e) / (ms_r + (k - 1) * ms_e)
        icc1k = (ms_r - ms_w) / ms_r
        icc2k = (ms_r - ms_e) / (ms_r + (ms_c - ms_e) / n)
        icc3k = (ms_r - ms_e) / ms_r
        f1, f3 = ms_r / ms_w, ms_r / ms_e
    q = 1 - alpha / 2

    def bounds(f: float, d1: float, d2: float) -> tuple[float, float]:
        """Lower and upper bounds for the F ratio ``f`` from the ``q = 1 − α/2`` quantiles of F.

        Args:
            f: observed F ratio.
            d1: numerator degrees of freedom.
            d2: denominator degrees of freedom.
        """
        return f / stats.f.ppf(q, d1, d2), f * stats.f.ppf(q, d2, d1)

    zero_w, zero_e = ms_w <= tiny, ms_e <= tiny
    out: dict[str, dict[str, Any]] = {}
    if not zero_w:
        fl, fu = bounds(f1, n - 1, df_w)
        p1 = float(stats.f.sf(f1, n - 1, df_w))
        out["ICC1"] = {"icc": icc1, "ci_low": (fl - 1) / (fl + k - 1), "ci_high": (fu - 1) / (fu + k - 1), "f": f1, "df1": n - 1, "df2": df_w, "p": p1}
        out["ICC1k"] = {"icc": icc1k, "ci_low": 1 - 1 / fl, "ci_high": 1 - 1 / fu, "f": f1, "df1": n - 1, "df2": df_w, "p": p1}
    if not zero_e:
        fl, fu = bounds(f3, n - 1, df_e)
        p3 = float(stats.f.sf(f3, n - 1, df_e))
        out["ICC3"] = {"icc": icc3, "ci_low": (fl - 1) / (fl + k - 1), "ci_high": (fu - 1) / (fu + k - 1), "f": f3, "df1": n - 1, "df2": df_e, "p": p3}
        out["ICC3k"] = {"icc": icc3k, "ci_low": 1 - 1 / fl, "ci_high": 1 - 1 / fu, "f": f3, "df1": n - 1, "df2": df_e, "p": p3}
        rho, fj = icc2, ms_c / ms_e
        c = n * (1 + (k - 1) * rho) - k * rho
        v = (n - 1) * (k - 1) * (k * rho * fj + c) ** 2 / ((n - 1) * k**2 * rho**2 * fj**2 + c**2)
        f_star, f_2star = stats.f.ppf(q, n - 1, v), stats.f.ppf(q, v, n - 1)
        d = k * ms_c + (k * n - k - n) * ms_e
        lo = n * (ms_r - f_star * ms_e) / (f_star * d + n * ms_r)
        hi = n * (f_2star * ms_r - ms_e) / (d + n * f_2star * ms_r)
        out["ICC2"] = {"icc": icc2, "ci_low": lo, "ci_high": hi, "f": f3, "df1": n - 1, "df2": df_e, "p": p3}

        def sb(b: float) -> float:  # Spearman-Brown: the interval of one rater's ICC for the mean of k
            return b * k / (1 + (k - 1) * b)

        out["ICC2k"] = {"icc": icc2k, "ci_low": sb(lo), "ci_high": sb(hi), "f": f3, "df1": n - 1, "df2": df_e, "p": p3}
    rows = []
    values = {"ICC1": icc1, "ICC2": icc2, "ICC3": icc3, "ICC1k": icc1k, "ICC2k": icc2k, "ICC3k": icc3k}
    for form, mw, _ in FORMS:
        stat = out.get(form)
        row = {"form": form, "mcgraw_wong": mw, "n_units": n, "n_trials": k}
        if stat is None:
            row.update(icc=float(values[form]), ci_low=_NAN, ci_high=_NAN, f=_NAN, df1=_NAN, df2=_NAN, p=_NAN, reason="zero_error")
        else:
            row.update({key: float(val) for key, val in stat.items()}, reason="")
        rows.append(row)
    return rows
