"""``agree --judge J --metrics-table M.csv --length-bias LB.csv``: does the judge reward long replies more than
humans do? (``docs/guide/judges.md#length-bias``)

Per judge and criterion, on the units with a judge score Jᵢ, at least one human score and a finite length
Lᵢ ≥ 0: dᵢ = Jᵢ − H̄ᵢ (H̄ the mean human score), xᵢ = ln(1 + Lᵢ), zᵢ = (xᵢ − x̄)/s_x (ddof 1).

* ``slope``: OLS dᵢ = a + b·zᵢ, the change in judge − human per SD of log length, HC3 or cluster se,
  normal interval and p (:mod:`tutormetrics.stats.robust_ols`);
* ``rho``: Spearman ρ(d, L) with the percentile interval of the criterion's shared draws;
* ``logit``: γ of the cumulative logit P(J ≤ v_k) = expit(τ_k − β·H̄ − γ·z)
  (:mod:`tutormetrics.stats.ordinal_logit`), the log-odds of a higher judge score per SD of log length at
  equal human score.

Example:
    >>> LENGTH_BIAS_COLUMNS[:6]
    ['judge', 'criterion', 'reference', 'length_col', 'n', 'n_clusters']
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from scipy import special, stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.agreement import _Criterion, join_reasons
from tutormetrics.psychometrics.judge import judge_setup
from tutormetrics.psychometrics.ratings import RatingsLike
from tutormetrics.psychometrics.resampled_agreement import UnitClusters, unit_clusters
from tutormetrics.stats.bootstrap import weighted_spearman
from tutormetrics.stats.cluster_resample import MIN_CLUSTERS, ClusterDraws, percentile_interval
from tutormetrics.stats.ordinal_logit import fit_ordinal_logit
from tutormetrics.stats.robust_ols import ols_robust

__all__ = ["LENGTH_BIAS_COLUMNS", "LengthBiasResult", "length_bias_table", "lengths_by_id"]

LENGTH_BIAS_COLUMNS = [
    "judge", "criterion", "reference", "length_col", "n", "n_clusters", "mean_log_length", "sd_log_length", "intercept",
    "slope", "slope_se", "slope_ci_low", "slope_ci_high", "slope_p", "rho", "rho_ci_low", "rho_ci_high", "logit", "logit_se",
    "logit_ci_low", "logit_ci_high", "logit_p", "se_method", "reason",
]  # fmt: skip
_NUMBERS = LENGTH_BIAS_COLUMNS[6:-2]
_INFERENCE = ["slope_se", "slope_ci_low", "slope_ci_high", "slope_p", "rho_ci_low", "rho_ci_high", "logit_se",
              "logit_ci_low", "logit_ci_high", "logit_p"]  # fmt: skip
#: |γ| or its se beyond these: separation, the ordinal fit is not reported (``logit_unstable``).
_MAX_LOGIT, _MAX_LOGIT_SE = 15.0, 100.0


class LengthBiasResult(NamedTuple):
    """The length-bias table and notes for people (metrics-table ids that no rating has)."""

    table: pl.DataFrame
    notes: list[str]


def lengths_by_id(metrics: pl.DataFrame, id_col: str, length_col: str) -> dict[str, float]:
    """Id (as text) → length from the metrics table; exit 2 when the column is missing or not numeric, or an
    id repeats.

    Args:
        metrics: The metrics table.
        id_col: Its id column.
        length_col: Its length column (e.g. ``resp_words``).

    >>> lengths_by_id(pl.DataFrame({"exchange_id": [1, 2], "resp_words": [3, None]}), "exchange_id", "resp_words")
    {'1': 3.0, '2': nan}
    """
    if id_col not in metrics.columns:
        raise InputSchemaError(f"--metrics-table: no id column {id_col!r}", hint="name it with --id")
    if length_col not in metrics.columns:
        raise ConfigError(f"--length-col {length_col!r} is not a column of the metrics table",
                          hint=f"columns there: {', '.join(metrics.columns[:12])}")  # fmt: skip
    if not (metrics.schema[length_col].is_numeric() or metrics.schema[length_col] == pl.Null):
        raise ConfigError(f"--length-col {length_col!r} is not numeric ({metrics.schema[length_col]})",
                          hint="name a count such as resp_words or resp_tokens")  # fmt: skip
    ids = metrics.get_column(id_col).cast(pl.String)
    if ids.is_duplicated().any():
        raise InputSchemaError(f"--metrics-table: {int(ids.is_duplicated().sum()):,} rows repeat an {id_col}, e.g. {ids.filter(ids.is_duplicated())[0]!r}",
                               hint="give the table with one row per exchange")  # fmt: skip
    values = metrics.get_column(length_col).cast(pl.Float64).fill_null(float("nan")).to_numpy()
    return dict(zip(ids.to_list(), values.tolist(), strict=True))


def _normal(estimate: float, se: float, z: float) -> dict[str, float]:
    """Normal interval and two-sided p of an estimate."""
    p = float(2 * special.ndtr(-abs(estimate) / se)) if se > 0 else float("nan")
    return {"se": se, "ci_low": estimate - z * se, "ci_high": estimate + z * se, "p": p}


def _ordinal(judge: np.ndarray, human: np.ndarray, z: np.ndarray, groups: np.ndarray | None, zq: float) -> tuple[dict[str, float], list[str]]:
    """γ of the cumulative logit of the judge on [H̄, z] (z alone when H̄ is constant)."""
    levels, codes = np.unique(judge, return_inverse=True)
    if levels.size < 2:
        return {}, ["judge_constant"]
    reasons = [] if np.ptp(human) > 0 else ["human_constant"]
    x = np.column_stack([human, z]) if not reasons else z[:, None]
    fit = fit_ordinal_logit(codes.ravel(), x, groups)
    gamma, se = float(fit.params[-1]), float(fit.se[-1])
    if not fit.converged or not np.isfinite(gamma) or abs(gamma) > _MAX_LOGIT or not se <= _MAX_LOGIT_SE:
        return {}, [*reasons, "logit_unstable"]
    normal = _normal(gamma, se, zq)
    return {"logit": gamma, **{f"logit_{k}": v for k, v in normal.items()}}, reasons


def _row_data(crit: _Criterion, judge: str, humans: list[str], lengths: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Unit index, judge score, mean human score and length of the row's units, and the judge-and-human-rated
    units without a length."""
    values = np.asarray(crit.values, dtype=np.float64)
    jcodes = crit.rater_codes(judge)
    sel = np.isin(crit.rater, [crit.raters.index(h) for h in humans if h in crit.raters])
    n_h = np.bincount(crit.unit[sel], minlength=crit.n_units)
    h_sum = np.bincount(crit.unit[sel], weights=values[crit.code[sel]], minlength=crit.n_units)
    length = np.array([lengths.get(str(i), np.nan) for i in crit.ids], dtype=np.float64)
    rated = (jcodes >= 0) & (n_h > 0)
    ok = rated & np.isfinite(length) & (length >= 0)
    units = np.flatnonzero(ok)
    return units, values[jcodes[units]], h_sum[units] / n_h[units], length[units], int(rated.sum() - ok.sum())


def _row(units: np.ndarray, judge: np.ndarray, human: np.ndarray, length: np.ndarray, clusters: UnitClusters,
         draws: ClusterDraws, opts: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:  # fmt: skip
    """The numbers of one judge × criterion row and its reasons (``docs/guide/judges.md#length-bias``)."""
    n = units.size
    out: dict[str, Any] = {k: float("nan") for k in _NUMBERS}
    n_clusters = int(np.unique(clusters.codes[units]).size)
    out.update(n=n, n_clusters=n_clusters if clusters.clustered else None, se_method="cluster" if clusters.clustered else "hc3")
    if n < opts["n_min"]:
        return out, ["too_few"]
    x = np.log1p(length)
    out.update(mean_log_length=float(x.mean()), sd_log_length=float(x.std(ddof=1)))
    if np.ptp(length) == 0:
        out["sd_log_length"] = 0.0
        return out, ["constant_length"]
    z = (x - x.mean()) / out["sd_log_length"]
    d = judge - human
    groups = clusters.codes[units] if clusters.clustered else None
    zq = float(special.ndtri(1 - (1 - opts["confidence_level"]) / 2))
    reasons: list[str] = []
    if np.ptp(d) == 0:
        out.update(intercept=float(d[0]), slope=0.0, slope_se=0.0, slope_ci_low=0.0, slope_ci_high=0.0)
        reasons.append("constant_difference")
    else:
        fit = ols_robust(d, np.column_stack([np.ones(n), z]), groups)
        out.update(intercept=float(fit.params[0]), slope=float(fit.params[1]))
        out.update({f"slope_{k}": v for k, v in _normal(out["slope"], float(fit.se[1]), zq).items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["rho"] = float(stats.spearmanr(d, length).statistic)
        if opts["n_resamples"] > 0:  # ρ depends on the units only through their (d, L) pairs: resample those
            pairs, pattern = np.unique(np.column_stack([d, length]), axis=0, return_inverse=True)
            weights = draws.unit_weights(clusters.codes[units], pattern.ravel())
            boot = weighted_spearman(pairs[:, 0], pairs[:, 1], weights, draws.n_resamples)
            interval = percentile_interval(boot, opts["confidence_level"])
            out.update(rho_ci_low=interval.low, rho_ci_high=interval.high)
            reasons += [f"ci_dropped_{interval.dropped}"] if interval.dropped else []
    logit, logit_reasons = _ordinal(judge, human, z, groups, zq)
    out.update(logit)
    reasons += logit_reasons
    if clusters.clustered and n_clusters < opts["min_clusters"]:
        out.update({k: float("nan") for k in _INFERENCE})
        reasons = [r for r in reasons if not r.startswith("ci_dropped_")] + ["too_few_clusters"]
    return out, reasons


def length_bias_table(
    ratings: RatingsLike,
    judges: str | Sequence[str],
    metrics: pl.DataFrame,
    *,
    length_col: str = "resp_words",
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    n_min: int = 10,
    exchangeable: bool = False,
    cluster_labels: Mapping[str, str] | None = None,
    min_clusters: int = MIN_CLUSTERS,
    metrics_id_col: str | None = None,
) -> LengthBiasResult:
    """Table LB: one row per judge × criterion (judges in the order given), columns :data:`LENGTH_BIAS_COLUMNS`.

    Reasons: ``too_few`` (n < ``n_min``: every number NaN), ``no_length_<k>`` (k judge- and human-rated units
    without a finite length ≥ 0), ``constant_length``, ``constant_difference`` (slope 0, se 0, no p, no ρ),
    ``human_constant`` (the ordinal model on z alone), ``judge_constant``, ``logit_unstable``,
    ``too_few_clusters`` (estimates kept, no se, interval or p), ``ci_dropped_<k>``. ``metrics`` is joined on
    the id as text (``metrics_id_col``, default ``id_col``); its ids that no rating has are counted in ``notes``.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        judges: One judge's rater name, or several.
        metrics: The metrics table with the reply lengths (``--metrics-table``).
        length_col: The length column of ``metrics`` (``--length-col``).
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        n_resamples: Bootstrap resamples per interval (0: no intervals).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        n_min: Fewest units per row; fewer: every number NaN.
        exchangeable: Human labels are anonymous slots (``--raters exchangeable``).
        cluster_labels: Exchange id as text → its dialogue; ``None``: resample units.
        min_clusters: Fewest clusters for a cluster interval.
        metrics_id_col: The metrics table's id column; ``None``: ``id_col``.
    """
    columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    setup = judge_setup(ratings, judges, exchangeable=exchangeable, **columns)
    lengths = lengths_by_id(metrics, metrics_id_col or id_col, length_col)
    rated_ids = {str(i) for crit in setup.criteria for i in crit.ids}
    unknown = sum(1 for i in lengths if i not in rated_ids)
    notes = [f"--metrics-table: {unknown:,} id(s) have no rating and are ignored"] if unknown else []
    opts = {"n_min": n_min, "n_resamples": n_resamples, "confidence_level": confidence_level, "min_clusters": min_clusters}
    rows = []
    for judge in setup.judges:
        for c, crit in enumerate(setup.criteria):
            clusters = unit_clusters(crit.ids, cluster_labels)
            draws = ClusterDraws(clusters.n_clusters, n_resamples, seed, c)
            units, jscore, human, length, no_length = _row_data(crit, judge, setup.humans, lengths)
            row, reasons = _row(units, jscore, human, length, clusters, draws, opts)
            extra = [f"no_length_{no_length}"] if no_length else []
            head = {"judge": judge, "criterion": crit.name, "reference": "human_mean", "length_col": length_col}
            rows.append({**head, **row, "reason": join_reasons([*reasons, *extra])})
    schema: dict[str, Any] = {k: pl.Float64 for k in LENGTH_BIAS_COLUMNS}
    schema.update({k: pl.String for k in ("judge", "criterion", "reference", "length_col", "se_method", "reason")})
    schema.update({"n": pl.Int64, "n_clusters": pl.Int64})
    table = pl.DataFrame([{k: r.get(k) for k in LENGTH_BIAS_COLUMNS} for r in rows], schema=schema, orient="row")
    return LengthBiasResult(table, notes)
