"""Bias/interaction tables: rater × criterion and criterion × group cells (``docs/measurement.md#bias-interaction``).

Per cell β̂ and SE by :func:`~tutormetrics.psychometrics.measurement.interaction.interaction_cells` with θ's
posterior held fixed: prior N(0, 1) for ``rater:criterion``, N(μ_g, 1) for ``criterion:group`` (μ_g the group's
marginal ML mean). t = β̂/SE, df = N − 1, p two-sided from t_df, ``p_adj`` within each pair (default Holm) over
the cells without a reason; ``flag`` = ``bias`` when p_adj < .05 and |β̂| ≥ 0.5 logit.

Example:
    >>> parse_bias_pairs(["rater:criterion", "group:criterion"])
    [('rater', 'criterion'), ('group', 'criterion')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.fit import extreme_elements
from tutormetrics.psychometrics.measurement.interaction import interaction_cells
from tutormetrics.psychometrics.measurement.observations import Observations
from tutormetrics.psychometrics.measurement.posterior import NodeLikelihood, Posterior, group_means, posterior
from tutormetrics.psychometrics.mfrm.design import PreparedRatings
from tutormetrics.stats.multiplicity import adjust_pvalues

__all__ = [
    "BIAS_COLUMNS", "BIAS_PAIRS", "BiasRule", "DifGroups", "bias_line", "bias_table", "check_bias_pairs", "default_bias_pairs",
    "parse_bias_pairs",
]  # fmt: skip

BIAS_COLUMNS = [
    "pair", "level_a", "level_b", "n", "observed", "expected", "obs_minus_exp", "bias", "se", "t", "df", "p", "p_adj",
    "adjust", "flag", "prior_mean", "reason",
]  # fmt: skip
BIAS_PAIRS = ("rater:criterion", "criterion:rater", "criterion:group", "group:criterion")


@dataclass(frozen=True)
class BiasRule:
    """``min_n`` (``--bias-min``), ``logit`` (``--bias-logit``), ``adjust`` (``--adjust``) and the p cut-off."""

    min_n: int = 10
    logit: float = 0.5
    adjust: str = "holm"
    alpha: float = 0.05


@dataclass(frozen=True)
class DifGroups:
    """A group column over the rated exchanges: ``name``, sorted ``levels`` and each exchange's level ``code``."""

    name: str
    levels: list[str]
    code: np.ndarray


def parse_bias_pairs(pairs: Sequence[str]) -> list[tuple[str, str]]:
    """``A:B`` texts → (A, B); each one of :data:`BIAS_PAIRS`."""
    out = []
    for text in pairs:
        if text not in BIAS_PAIRS:
            raise ConfigError(f"--bias-facets {text!r} is not a pair of facets", hint=f"use one of {', '.join(BIAS_PAIRS)}")
        a, b = text.split(":")
        out.append((a, b))
    return out


def default_bias_pairs(n_raters: int, has_groups: bool) -> list[str]:
    """``rater:criterion`` with two or more raters, plus ``criterion:group`` with DIF groups."""
    return (["rater:criterion"] if n_raters > 1 else []) + (["criterion:group"] if has_groups else [])


def check_bias_pairs(pairs: Sequence[tuple[str, str]], est: Estimates, has_groups: bool, exchangeable: bool = False) -> None:
    """The errors of ``docs/measurement.md#errors`` for ``--bias-facets``.

    Args:
        pairs: The ``--bias-facets`` pairs, e.g. ``("rater", "criterion")``.
        est: The fitted estimates.
        has_groups: A ``--dif-groups`` table is given.
        exchangeable: ``--raters exchangeable`` (no rater facet).
    """
    for a, b in pairs:
        if "group" in (a, b) and not has_groups:
            raise ConfigError(f"--bias-facets {a}:{b} needs --dif-groups", hint="name the group table and --dif-col")
        if "rater" in (a, b):
            if exchangeable:
                raise ConfigError(f"--bias-facets {a}:{b}: --raters exchangeable has no rater facet", hint="drop the rater pair")
            if len(est.raters) < 2:
                raise ConfigError(
                    f"the ratings have one rater ({est.raters[0]!r}); a rater × criterion interaction needs two",
                    hint="drop rater:criterion from --bias-facets",
                )


def bias_table(
    est: Estimates,
    obs: Observations,
    prep: PreparedRatings,
    pairs: Sequence[str],
    *,
    groups: DifGroups | None = None,
    rule: BiasRule = BiasRule(),
) -> pl.DataFrame:
    """One block of cells per pair in ``pairs`` (``A:B``: ``level_a`` from A), columns :data:`BIAS_COLUMNS`.

    Args:
        est: the estimates.
        obs: the ratings.
        prep: their design (for θ's posterior).
        pairs: e.g. ``["rater:criterion", "criterion:group"]``.
        groups: the DIF group column (needed by a group pair).
        rule: minimum cell size, the substantive logit and the adjustment.
    """
    parsed = parse_bias_pairs(pairs)
    check_bias_pairs(parsed, est, groups is not None)
    lik = NodeLikelihood(est, prep)
    blocks = []
    for a, b in parsed:
        if "group" in (a, b):
            assert groups is not None
            ext = extreme_elements(obs.item, obs.cat, obs.top, est.n_items)
            means = group_means(lik, groups.code, len(groups.levels), ext)
            post = posterior(lik, means.per_item(groups.code))
            levels, key, prior, group_reason = groups.levels, groups.code[obs.item], means.mu, means.reason
        else:
            post = posterior(lik)
            levels, key, prior, group_reason = est.raters, obs.rater, np.zeros(len(est.raters)), None
        blocks.append(_pair_block(f"{a}:{b}", a == "criterion", est, obs, post, levels, key, prior, rule, group_reason))
    if not blocks:
        return pl.DataFrame(schema=_SCHEMA)
    return pl.concat(blocks, how="vertical")


_SCHEMA = {c: pl.Float64 for c in BIAS_COLUMNS} | {
    "pair": pl.String, "level_a": pl.String, "level_b": pl.String, "n": pl.Int64, "df": pl.Int64, "adjust": pl.String,
    "flag": pl.String, "reason": pl.String,
}  # fmt: skip


def _pair_block(
    pair: str, criterion_first: bool, est: Estimates, obs: Observations, post: Posterior,
    levels: list[str], key: np.ndarray, prior: np.ndarray, rule: BiasRule, group_reason: list[str] | None,
) -> pl.DataFrame:  # fmt: skip
    """The cells criterion × level (or level × criterion) in the pair's row order."""
    n_j, n_l = len(est.criteria), len(levels)
    cell = obs.crit * n_l + key if criterion_first else key * n_j + obs.crit
    res = interaction_cells(est, obs, post, cell, n_j * n_l, min_n=rule.min_n)
    crit_idx = np.repeat(np.arange(n_j), n_l) if criterion_first else np.tile(np.arange(n_j), n_l)
    lev_idx = np.tile(np.arange(n_l), n_j) if criterion_first else np.repeat(np.arange(n_l), n_j)
    reason = list(res.reason)
    if group_reason is not None:  # a group without μ: its cells are extreme (or not converged)
        reason = [group_reason[lev] or r for r, lev in zip(reason, lev_idx, strict=True)]
    bad = np.array([r != "" for r in reason])
    bias, se = np.where(bad, np.nan, res.bias), np.where(bad, np.nan, res.se)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = bias / se
        df = res.n - 1
        p = np.where(bad, np.nan, 2.0 * stats.t.sf(np.abs(t), np.maximum(df, 1)))
    p_adj = adjust_pvalues(p, rule.adjust)
    with np.errstate(invalid="ignore"):
        flag = np.where((p_adj < rule.alpha) & (np.abs(bias) >= rule.logit), "bias", "")
    names_a = [est.criteria[j] for j in crit_idx] if criterion_first else [levels[g] for g in lev_idx]
    names_b = [levels[g] for g in lev_idx] if criterion_first else [est.criteria[j] for j in crit_idx]
    return pl.DataFrame(
        {
            "pair": [pair] * crit_idx.size, "level_a": names_a, "level_b": names_b, "n": res.n.astype(np.int64),
            "observed": res.observed, "expected": res.expected,
            "obs_minus_exp": np.where(res.n > 0, (res.observed - res.expected) / np.maximum(res.n, 1), np.nan),
            "bias": bias, "se": se, "t": t, "df": [None if x else int(v) for x, v in zip(bad, df, strict=True)], "p": p, "p_adj": p_adj,
            "adjust": [rule.adjust] * crit_idx.size, "flag": flag.tolist(), "prior_mean": prior[lev_idx], "reason": reason,
        },
        schema=_SCHEMA,
    ).select(BIAS_COLUMNS)  # fmt: skip


def bias_line(table: pl.DataFrame) -> str:
    """``bias: criterion:group 8 cells, 0 flagged (holm)`` (one clause per pair)."""
    parts = []
    for pair in table["pair"].unique(maintain_order=True).to_list():
        block = table.filter(pl.col("pair") == pair)
        parts.append(f"{pair} {block.height} cells, {block.filter(pl.col('flag') == 'bias').height} flagged ({block['adjust'][0]})")
    return "bias: " + ("; ".join(parts) if parts else "no pairs")
