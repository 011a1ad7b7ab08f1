"""ρ(metric, θ) that carries θ's uncertainty: Spearman ρ per plausible value, pooled by Rubin's rules
(``docs/measurement.md#theta-pv``).

Per metric, over the n exchanges with ratings and a finite metric: PVs drawn conditional on the metric's normal
scores (:mod:`tutormetrics.psychometrics.measurement.plausible`), ρ_m = Spearman(PV_m, metric) on tie keys, then

    z_m = atanh ρ_m,  U_m = (1 + ρ_m²/2)/(n − 3),  Q̄ = mean z_m,  Ū = mean U_m,  B = Σ (z_m − Q̄)²/(M − 1),
    T = Ū + (1 + 1/M) B,  λ = (1 + 1/M) B / T,  ν_old = (M − 1)/λ²,
    ν_obs = (ν_com + 1)/(ν_com + 3) · ν_com (1 − λ),  ν_com = n − 3,  ν = ν_old ν_obs/(ν_old + ν_obs),
    ρ_pv = tanh Q̄,  CI tanh(Q̄ ± t_ν √T),  p = 2 P(t_ν > |Q̄|/√T).

Example:
    >>> pooled = rubin_pool(np.array([0.31, 0.35, 0.28, 0.33, 0.30]), 120)
    >>> round(pooled.rho, 7), round(pooled.df, 5), [round(v, 6) for v in pooled.ci]
    (0.3142046, 79.14998, [0.124986, 0.481369])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.observations import Observations
from tutormetrics.psychometrics.measurement.plausible import (
    GridLikelihood,
    condition_on,
    conditioned_draws,
    normal_scores,
    random_numbers,
)
from tutormetrics.psychometrics.mfrm.design import PreparedRatings
from tutormetrics.stats.correlation import spearman_vec
from tutormetrics.stats.multiplicity import adjust_pvalues, significance_stars
from tutormetrics.stats.ranks import DEFAULT_TIE_DIGITS, tie_key

__all__ = ["PV_COLUMNS", "PooledRho", "rubin_pool", "theta_pv_line", "theta_pv_table", "with_theta_pv"]

#: The columns a ``theta_pv`` row adds after the usual correlation columns.
PV_COLUMNS = ["pv_draws", "pv_within", "pv_between", "pv_fmi", "pv_df", "pv_alpha", "pv_beta", "pv_sigma", "pv_condition"]
_BASE = ["metric", "target", "n", "rho", "ci_low", "ci_high", "p", "p_adj", "adjust", "stars", "reason", "p_method", "ci_method"]
_NAN = float("nan")


@dataclass(frozen=True)
class PooledRho:
    """Rubin's pooled ρ: estimate, interval, p, within Ū, between B, fraction of missing information λ, df ν."""

    rho: float
    ci: tuple[float, float]
    p: float
    within: float
    between: float
    fmi: float
    df: float


def rubin_pool(rho: np.ndarray, n: int, confidence_level: float = 0.95) -> PooledRho:
    """Pool ρ_1..ρ_M of n pairs on Fisher's z with the Bonett–Wright variance and Barnard–Rubin df.

    Args:
        rho: ρ of each of the M plausible values.
        n: Number of pairs.
        confidence_level: Interval level, in (0, 1).
    """
    rho = np.asarray(rho, dtype=float)
    m = rho.size
    z = np.arctanh(rho)
    within = float(np.mean((1.0 + rho**2 / 2.0) / (n - 3)))
    q = float(z.mean())
    between = float(np.sum((z - q) ** 2) / (m - 1))
    total = within + (1.0 + 1.0 / m) * between
    fmi = (1.0 + 1.0 / m) * between / total
    nu_com = n - 3.0
    nu_obs = (nu_com + 1.0) / (nu_com + 3.0) * nu_com * (1.0 - fmi)
    nu = nu_obs if between == 0 else (lambda old: old * nu_obs / (old + nu_obs))((m - 1.0) / fmi**2)
    crit = float(stats.t.ppf(1.0 - (1.0 - confidence_level) / 2.0, nu))
    half = crit * math.sqrt(total)
    p = float(2.0 * stats.t.sf(abs(q) / math.sqrt(total), nu))
    return PooledRho(math.tanh(q), (math.tanh(q - half), math.tanh(q + half)), p, within, between, fmi, nu)


def theta_pv_table(
    metrics: pl.DataFrame,
    metric_cols: Sequence[str],
    est: Estimates,
    obs: Observations,
    prep: PreparedRatings,
    *,
    draws: int = 20,
    seed: int = 0,
    condition: str = "metric",
    adjust: str = "bh",
    n_min: int = 10,
    confidence_level: float = 0.95,
    tie_digits: int = DEFAULT_TIE_DIGITS,
) -> pl.DataFrame:
    """One ``theta_pv`` row per metric (the correlation columns + :data:`PV_COLUMNS`); ``p_adj`` over these rows.

    Args:
        metrics: the metrics table keyed by the ratings' id column (one row per exchange).
        metric_cols: the metric columns, in the output order.
        est: THETA/FACETS of the θ being validated.
        obs: its ratings' observations.
        prep: its prepared ratings.
        draws: M plausible values.
        seed: their generator's seed.
        condition: ``metric`` (PVs conditioned on each metric's normal scores) or ``none`` (``theta --pv``'s).
        adjust: the multiplicity adjustment over these rows.
        n_min: the fewest exchanges.
        confidence_level: of the pooled interval.
        tie_digits: digits of the rank key.
    """
    if condition not in ("metric", "none"):
        from tutormetrics.errors import ConfigError

        raise ConfigError(f"--pv-condition {condition!r}", hint="use metric or none")
    id_col = est.ids.name
    joined = pl.DataFrame({id_col: est.ids}).join(
        metrics.select(pl.col(id_col).cast(est.ids.dtype), *metric_cols), on=id_col, how="left", maintain_order="left"
    )
    u, e = random_numbers(seed, draws, est.n_items)
    grid = GridLikelihood(est, prep)
    free = None
    if condition == "none":
        free = grid.draw(np.arange(est.n_items), np.zeros(1), np.ones(draws), u)
    rows = []
    for name in metric_cols:
        values = joined[name].cast(pl.Float64, strict=False).to_numpy()
        items = np.flatnonzero(np.isfinite(values))
        key = tie_key(values[items], tie_digits)
        rows.append(_metric_row(name, key, items, est, obs, grid, u, e, free, n_min, confidence_level, tie_digits, draws))
    table = pl.DataFrame(rows, schema=_SCHEMA, orient="row")
    p_adj = adjust_pvalues(table["p"].to_numpy(), adjust)
    return table.with_columns(
        pl.Series("p_adj", p_adj), pl.lit(adjust).alias("adjust"), pl.Series("stars", [significance_stars(v) for v in p_adj]),
        pl.lit(condition).alias("pv_condition"),
    ).select(_BASE + PV_COLUMNS)  # fmt: skip


_SCHEMA = {c: pl.Float64 for c in _BASE + PV_COLUMNS} | {
    "metric": pl.String, "target": pl.String, "n": pl.Int64, "adjust": pl.String, "stars": pl.String, "reason": pl.String,
    "p_method": pl.String, "ci_method": pl.String, "pv_draws": pl.Int64, "pv_condition": pl.String,
}  # fmt: skip


def _metric_row(
    name: str, key: np.ndarray, items: np.ndarray, est: Estimates, obs: Observations, grid: GridLikelihood,
    u: np.ndarray, e: np.ndarray, free: np.ndarray | None, n_min: int, level: float, tie_digits: int, draws: int,
) -> list[object]:  # fmt: skip
    """The values of one row in :data:`_SCHEMA`'s order (``p_adj``, ``adjust``, ``stars``, condition filled later)."""
    n = int(items.size)
    empty = [name, "theta_pv", n, _NAN, _NAN, _NAN, _NAN, _NAN, "", "", "", "none", "none", draws] + [_NAN] * 7 + [""]
    if n < max(n_min, 4):
        empty[10] = "too_few"
        return empty
    if np.all(key == key[0]):
        empty[10] = "constant"
        return empty
    alpha = beta = sigma = _NAN
    if free is None:
        z = normal_scores(stats.rankdata(key))
        cond = condition_on(est, obs, items, z)
        alpha, beta, sigma = cond.alpha, cond.beta, cond.sigma
        if not cond.converged:
            empty[10] = "pv_not_converged"
            empty[18:21] = [alpha, beta, sigma]
            return empty
        pv = conditioned_draws(grid, items, z, cond, u, e)
    else:
        pv = free[:, items]
    rho = spearman_vec(_pv_keys(pv, tie_digits), np.broadcast_to(key, pv.shape))
    pooled = rubin_pool(rho, n, level)
    return [name, "theta_pv", n, pooled.rho, pooled.ci[0], pooled.ci[1], pooled.p, _NAN, "", "", "", "rubin", "rubin",
            draws, pooled.within, pooled.between, pooled.fmi, pooled.df, alpha, beta, sigma, ""]  # fmt: skip


def _pv_keys(pv: np.ndarray, digits: int) -> np.ndarray:
    """The rank keys of the PVs: the PVs themselves where no two of a draw are within 1e-10 (relative) of each
    other — keying to ``digits`` ≥ 10 significant digits then merges none of them, so the ranks are the same — and
    :func:`~tutormetrics.stats.ranks.tie_key` otherwise (it formats every value, the slow part)."""
    if digits == 0:
        return pv
    ordered = np.sort(pv, axis=1)
    gap = np.diff(ordered, axis=1)
    scale = np.maximum(np.abs(ordered[:, 1:]), np.abs(ordered[:, :-1]))
    close = np.any(gap <= 1e-10 * scale, axis=1) | (digits < 10)
    out = pv.copy()
    if close.any():
        out[close] = tie_key(pv[close], digits)
    return out


def theta_pv_line(table: pl.DataFrame, eap_rho: dict[str, float] | None = None) -> str:
    """``theta_pv: 27 metrics, 20 PVs conditioned on each metric; median FMI 0.25; median |ρ_pv| − |ρ_eap| +0.03``."""
    ok = table.filter(pl.col("reason") == "")
    draws = int(table["pv_draws"][0]) if table.height else 0
    how = "conditioned on each metric" if table.height and table["pv_condition"][0] == "metric" else "unconditioned"
    text = f"theta_pv: {table.height} metrics, {draws} PVs {how}"
    if ok.height:
        text += f"; median FMI {float(np.median(ok['pv_fmi'].to_numpy())):.2f}"
        if eap_rho:
            diff = [abs(r) - abs(eap_rho[m]) for m, r in zip(ok["metric"], ok["rho"], strict=True) if m in eap_rho and np.isfinite(eap_rho[m])]
            if diff:
                text += f"; median |ρ_pv| − |ρ_eap| {float(np.median(diff)):+.2f}"
    return text


def with_theta_pv(table: pl.DataFrame, pv: pl.DataFrame) -> pl.DataFrame:
    """The correlation table with each metric's ``theta_pv`` row right after its raw ``theta`` row (after the
    metric's last raw row when it has none) and :data:`PV_COLUMNS` at the end, empty on the other rows
    (``docs/measurement.md#theta-pv``).

    >>> t = pl.DataFrame({"metric": ["a", "a", "b", "b"], "target": ["c", "theta", "c", "theta"], "rho": [.1, .2, .3, .4]})
    >>> pv = pl.DataFrame({"metric": ["a", "b"], "target": ["theta_pv"] * 2, "rho": [.25, .45], "pv_draws": [20, 20]})
    >>> with_theta_pv(t, pv)["target"].to_list()
    ['c', 'theta', 'theta_pv', 'c', 'theta', 'theta_pv']
    """
    if "control" in table.columns:
        raw = pl.col("control").fill_null("") == ""
        pv = pv.with_columns(pl.lit("").alias("control"))
    else:
        raw = pl.lit(True)
    indexed = table.with_row_index("_pos").with_columns(pl.col("_pos").cast(pl.Float64))
    anchors = indexed.filter(raw).group_by("metric", maintain_order=True).agg(
        pl.col("_pos").filter(pl.col("target") == "theta").first().alias("_theta"), pl.col("_pos").max().alias("_last")
    )
    placed = pv.join(anchors, on="metric", how="left", maintain_order="left").with_columns(
        (pl.coalesce("_theta", "_last", pl.lit(float(table.height))) + 0.5).alias("_pos")
    ).drop("_theta", "_last")
    columns = table.columns + [c for c in pv.columns if c not in table.columns and c != "_pos"]
    merged = pl.concat([indexed, placed.select([c for c in ["_pos", *columns] if c in placed.columns])], how="diagonal_relaxed")
    return merged.sort("_pos", maintain_order=True).select(columns)
