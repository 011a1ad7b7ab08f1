"""Judge leniency against a reference (``docs/design/studies.md#leniency``): a *shift*, not (dis)agreement.

On the n units both rated (y = reference, ŷ = judge) and their Q × Q table (rows y, columns ŷ):
means, ``mean_diff = mean(ŷ − y)`` (> 0: the judge is more lenient) with a percentile bootstrap CI over
units, percent of maximum ``100·(mean − lo)/(hi − lo)``, the shares above/below the diagonal, the exact
sign test (McNemar's exact test on 2 × 2), Bowker's symmetry test and the Stuart–Maxwell test of
marginal homogeneity over the Q′ categories that occur off the diagonal. Bowker's df is Q(Q − 1)/2 for the
table's dimension Q, as statsmodels' ``SquareTable.symmetry`` counts it: under a declared scale the table
has every declared level, empty ones included (``docs/guide/paper.md#bowker``). :func:`pooled_leniency`
is the all-criteria row, with units (each carrying all its pairs) as the independent draws.

Example:
    >>> t = np.array([[3, 2], [0, 5]])
    >>> r = symmetry_tests(t)
    >>> r["bowker_chi2"], r["stuart_maxwell_chi2"], round(r["sign_p"], 4)
    (2.0, 2.0, 0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tutormetrics.stats.paired import mean_diff_ci
from tutormetrics.stats.paired_bootstrap import bootstrap_paired, percentile_interval

__all__ = ["LENIENCY_COLUMNS", "POOLED", "leniency_columns", "pooled_leniency", "symmetry_tests"]

#: The criterion of the pooled all-criteria row of ``agree --judge`` (``docs/guide/paper.md#pooled``).
POOLED = "(all)"

LENIENCY_COLUMNS: list[str] = [
    "mean_judge", "mean_ref", "mean_diff", "diff_ci_low", "diff_ci_high", "pct_max_judge", "pct_max_ref",
    "over_rate", "under_rate", "sign_p", "bowker_chi2", "bowker_df", "bowker_p",
    "stuart_maxwell_chi2", "stuart_maxwell_df", "stuart_maxwell_p",
]  # fmt: skip
_NAN = float("nan")


def symmetry_tests(table: np.ndarray) -> dict[str, Any]:
    """Sign test, Bowker and Stuart–Maxwell on a Q × Q table (rows reference, columns judge), plus reasons.

    Bowker: ``Σ_{i<j} (n_ij − n_ji)²/(n_ij + n_ji)`` (empty pairs contribute 0), df = Q(Q − 1)/2.
    Stuart–Maxwell: d = row − column margins, ``S_ii = n_i· + n_·i − 2n_ii``, ``S_ij = −(n_ij + n_ji)``,
    χ² = dᵀS⁻¹d over the first Q′ − 1 of the Q′ categories with a discordant cell, df = Q′ − 1.
    """
    t = np.asarray(table, dtype=float)
    q = t.shape[0]
    n_over = float(np.triu(t, 1).sum())  # ŷ > y: columns above the diagonal (categories sorted)
    n_under = float(np.tril(t, -1).sum())
    out: dict[str, Any] = {"bowker_df": q * (q - 1) / 2, "reasons": []}
    if n_over + n_under == 0:
        out.update(sign_p=1.0, bowker_chi2=0.0, bowker_p=1.0, stuart_maxwell_chi2=0.0, stuart_maxwell_df=_NAN, stuart_maxwell_p=1.0)
        out["reasons"] = ["no_discordant"]
        return out
    out["sign_p"] = float(stats.binomtest(int(n_over), int(n_over + n_under), 0.5).pvalue)
    pair_sum = t + t.T
    diff2 = (t - t.T) ** 2
    iu = np.triu_indices(q, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(pair_sum[iu] > 0, diff2[iu] / pair_sum[iu], 0.0)
    bowker = float(terms.sum())
    out.update(bowker_chi2=bowker, bowker_p=float(stats.chi2.sf(bowker, out["bowker_df"])) if out["bowker_df"] > 0 else _NAN)
    off = t.copy()
    np.fill_diagonal(off, 0)
    used = np.flatnonzero((off.sum(0) + off.sum(1)) > 0)
    d = (t.sum(1) - t.sum(0))[used][:-1]
    s = -(pair_sum[np.ix_(used, used)])
    np.fill_diagonal(s, (t.sum(1) + t.sum(0) - 2 * np.diag(t))[used])
    s = s[:-1, :-1]
    try:
        if np.linalg.matrix_rank(s) < s.shape[0]:
            raise np.linalg.LinAlgError
        chi2 = float(d @ np.linalg.solve(s, d))
        df = used.size - 1
        out.update(stuart_maxwell_chi2=chi2, stuart_maxwell_df=float(df), stuart_maxwell_p=float(stats.chi2.sf(chi2, df)))
    except np.linalg.LinAlgError:
        out.update(stuart_maxwell_chi2=_NAN, stuart_maxwell_df=_NAN, stuart_maxwell_p=_NAN)
        out["reasons"].append("stuart_maxwell_singular")
    return out


def leniency_columns(
    y: np.ndarray,
    yhat: np.ndarray,
    table: np.ndarray,
    lo: float,
    hi: float,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> tuple[dict[str, float], list[str]]:
    """The leniency columns of one judge × reference row (``y``, ``yhat``: the scores of the n paired units).

    Args:
        y: Reference scores of the paired units.
        yhat: Judge scores of the paired units.
        table: The Q×Q reference × judge count table (symmetry tests).
        lo: Lowest level of the criterion's scale.
        hi: Highest level of the criterion's scale.
        n_resamples: Bootstrap resamples of the mean-difference interval.
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
    """
    out = {c: _NAN for c in LENIENCY_COLUMNS}
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    n = y.size
    if n == 0:
        return out, []
    m = mean_diff_ci(yhat, y, n_resamples=n_resamples, confidence_level=confidence_level, seed=seed)
    span = hi - lo
    out.update(
        mean_judge=m["mean_a"], mean_ref=m["mean_b"], mean_diff=m["mean_diff"], diff_ci_low=m["diff_ci_low"], diff_ci_high=m["diff_ci_high"],
        pct_max_judge=100 * (m["mean_a"] - lo) / span if span > 0 else _NAN,
        pct_max_ref=100 * (m["mean_b"] - lo) / span if span > 0 else _NAN,
        over_rate=float((yhat > y).mean()), under_rate=float((yhat < y).mean()),
    )  # fmt: skip
    tests = symmetry_tests(table)
    reasons = tests.pop("reasons")
    out.update({k: float(v) for k, v in tests.items()})
    return out, reasons


def pooled_leniency(
    units: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> dict[str, float]:
    """The pooled all-criteria row over (unit, criterion) pairs (``docs/guide/paper.md#pooled``).

    ``n`` pairs; ``accuracy``, the means, ``mean_diff``, ``over_rate`` and ``under_rate`` over the pairs;
    ``pct_max_* = 100·Σ(score − lo_c)/Σ(hi_c − lo_c)`` with each pair's criterion scale. Units are the
    independent draws: ``diff_ci_*`` is a percentile bootstrap of Σd/Σn over resampled units (the draws of
    ``default_rng(seed).integers(0, U, (n_resamples, U))``, as ``scipy.stats.bootstrap(..., paired=True)``),
    ``sign_p`` the exact sign test over the units' d_u = Σ_c (ŷ − y), d_u = 0 dropped. Every other
    leniency column is NaN.

    Args:
        units: the unit (exchange id) of each pair.
        y: reference score of each pair.
        yhat: judge score of each pair.
        lo: the lowest level of each pair's criterion.
        hi: the highest level of each pair's criterion.
        n_resamples: bootstrap resamples of ``diff_ci_*`` (over units).
        seed: seed of the bootstrap.
        confidence_level: interval level, in (0, 1).

    Example:
        >>> r = pooled_leniency(np.array(["a", "a", "b"]), np.array([0.0, 1, 1]), np.array([1.0, 1, 2]),
        ...                     np.zeros(3), np.full(3, 2.0), n_resamples=0)
        >>> r["n"], round(r["pct_max_judge"], 4), r["sign_p"]
        (3, 66.6667, 0.5)
    """
    out: dict[str, float] = {c: _NAN for c in LENIENCY_COLUMNS}
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    n = int(y.size)
    out.update(n=n, accuracy=_NAN)
    if n == 0:
        return out
    d = yhat - y
    span = float((hi - lo).sum())
    out.update(
        n=n, accuracy=float((d == 0).mean()), mean_judge=float(yhat.mean()), mean_ref=float(y.mean()), mean_diff=float(d.mean()),
        pct_max_judge=100 * float((yhat - lo).sum()) / span if span > 0 else _NAN,
        pct_max_ref=100 * float((y - lo).sum()) / span if span > 0 else _NAN,
        over_rate=float((d > 0).mean()), under_rate=float((d < 0).mean()),
    )  # fmt: skip
    _, inverse = np.unique(np.asarray(units), return_inverse=True)
    d_unit = np.bincount(inverse, weights=d)
    n_unit = np.bincount(inverse).astype(float)
    n_over, n_under = int((d_unit > 0).sum()), int((d_unit < 0).sum())
    out["sign_p"] = float(stats.binomtest(n_over, n_over + n_under, 0.5).pvalue) if n_over + n_under else 1.0
    if d_unit.size >= 2 and n_resamples > 0:
        _, (sum_d, sum_n) = bootstrap_paired([], [d_unit, n_unit], d_unit.size, n_resamples, seed)
        lo_ci, hi_ci = percentile_interval(np.asarray(sum_d) / np.asarray(sum_n), confidence_level)
        out.update(diff_ci_low=lo_ci, diff_ci_high=hi_ci)
    return out
