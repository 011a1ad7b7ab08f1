"""Separation, strata, reliability and the fixed (all same) χ² per facet (``docs/measurement.md#separation``).

For the estimates d with standard errors SE of one facet (n elements):

    SD² = Σ (d − d̄)²/n,  RMSE² = Σ SE²/n,  true SD = √max(0, SD² − RMSE²),
    G = true SD / RMSE,  H = (4G + 1)/3,  R = G²/(1 + G²),
    χ² = Σ w (d − d̄_w)²  (w = 1/SE², df n − 1).

Exchanges use the EAPs and PSDs: the EAPs are already shrunk, so true SD = SD of the EAPs and R is the EAP
reliability var(EAP)/(var(EAP) + mean PSD²); χ² is NaN (reason ``eap``).

Example:
    >>> row = separation_row("criterion", np.array([-1.0, 0.0, 1.0]), np.array([0.2, 0.2, 0.2]), "mml")
    >>> round(row["separation"], 4), round(row["reliability"], 4)
    (3.9581, 0.94)
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.psychometrics.measurement.estimates import Estimates

__all__ = ["SEPARATION_COLUMNS", "separation_line", "separation_row", "separation_table"]

SEPARATION_COLUMNS = [
    "facet", "n", "mean", "sd", "rmse", "true_sd", "separation", "strata", "reliability", "chi2", "df", "p_chi2",
    "estimator", "reason",
]  # fmt: skip

_NAN = float("nan")


def separation_row(facet: str, d: np.ndarray, se: np.ndarray, estimator: str) -> dict[str, object]:
    """One row of the table for estimates ``d`` with SEs ``se`` (``estimator`` ``eap``: the exchange rule).

    Args:
        facet: The facet name (``criterion``, ``rater``, ``exchange``).
        d: Element estimates (logits).
        se: Their standard errors.
        estimator: How they were estimated (``eap``: the exchange rule).
    """
    n = int(d.size)
    row: dict[str, object] = {"facet": facet, "n": n, "estimator": estimator, "df": n - 1, "reason": ""}
    row.update(dict.fromkeys(("mean", "sd", "rmse", "true_sd", "separation", "strata", "reliability", "chi2", "p_chi2"), _NAN))
    if n < 2:
        row["reason"] = "one_element"
        return row
    row["mean"], row["sd"] = float(d.mean()), float(d.std())
    if not np.all(np.isfinite(se)):
        row["reason"] = "no_se"
        return row
    sd2, rmse2 = float(np.var(d)), float(np.mean(se**2))
    true_var = sd2 if estimator == "eap" else max(0.0, sd2 - rmse2)
    g = math.sqrt(true_var / rmse2) if rmse2 > 0 else _NAN
    row.update(
        rmse=math.sqrt(rmse2), true_sd=math.sqrt(true_var), separation=g, strata=(4 * g + 1) / 3,
        reliability=true_var / (true_var + rmse2) if rmse2 > 0 else _NAN,
    )  # fmt: skip
    if estimator == "eap":
        row["reason"] = "eap"
        return row
    w = 1.0 / se**2
    chi2 = float(np.sum(w * (d - np.sum(w * d) / np.sum(w)) ** 2))
    row["chi2"], row["p_chi2"] = chi2, float(stats.chi2.sf(chi2, n - 1))
    return row


def separation_table(est: Estimates) -> pl.DataFrame:
    """Rows ``criterion`` (b̂, SE), ``rater`` (ŝ, SE) and ``exchange`` (EAP, PSD); columns :data:`SEPARATION_COLUMNS`.

    Example:
        >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
        >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
        >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
        >>> ratings, _ = simulate_mfrm(n_items=80, seed=4)
        >>> sep = separation_table(estimates_from_result(fit_mfrm(ratings), prepare_ratings(ratings)))
        >>> sep["facet"].to_list(), sep["estimator"].to_list()
        (['criterion', 'rater', 'exchange'], ['mml', 'mml', 'eap'])
    """
    method = est.method if est.method in ("mml", "nuts") else "mml"
    rows = [
        separation_row("criterion", est.b, est.b_se, method),
        separation_row("rater", est.s, est.s_se, method),
        separation_row("exchange", est.theta, est.theta_sd, "eap"),
    ]
    schema = {c: pl.Float64 for c in SEPARATION_COLUMNS}
    schema.update(facet=pl.String, n=pl.Int64, df=pl.Int64, estimator=pl.String, reason=pl.String)
    return pl.DataFrame(rows, schema=schema).select(SEPARATION_COLUMNS)


def separation_line(table: pl.DataFrame) -> str:
    """``separation: criterion G 9.44 R 0.989; rater one element; exchange G 1.42 R 0.669``."""
    parts = []
    for row in table.iter_rows(named=True):
        if row["reason"] == "one_element":
            parts.append(f"{row['facet']} one element")
        elif row["reason"] == "no_se":
            parts.append(f"{row['facet']} no SEs")
        else:
            parts.append(f"{row['facet']} G {row['separation']:.2f} R {row['reliability']:.3f}")
    return "separation: " + "; ".join(parts)
