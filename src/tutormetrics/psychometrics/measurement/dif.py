"""Differential functioning of criteria across a group column (``docs/measurement.md#dif``).

Two views per focal level × criterion, each purified on its own:

* **Observed score** (Holland & Thayer 1988): the units are exchanges of the modal design (the most frequent
  set of rated (criterion, rater) cells); the score on criterion j is X_ij = Σ_r x_ijr, the matching total
  T_i = Σ_{k∈S_j} X_ik; every distinct T is a stratum. A binary criterion rated by one rater gets
  Mantel–Haenszel (Δ_MH, ETS A/B/C), any other Mantel's χ² with the SMD (AA/BB/CC).
* **Rasch contrast** (Winsteps/FACETS): β_jg by the interaction solver with θ's posterior from the ratings of
  S_j and the prior N(μ_g, 1); contrast = β_jF − β_jR with a Welch t.

Purification: F = ∅; every criterion with S_j = all \\ (F \\ {j}); F′ = criteria classed C (CC); repeat until
F′ = F (at most 10 rounds, else ``refine_not_stable``).

Example:
    >>> g = dif_groups(pl.DataFrame({"id": ["a", "b", "c"], "tutor": ["h", "m", "m"]}), "tutor", pl.Series("id", ["a", "b", "c"]))
    >>> g.levels, g.code.tolist(), reference_level(g, None)
    (['h', 'm'], [0, 1, 1], 1)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.measurement.bias import DifGroups
from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.fit import extreme_elements
from tutormetrics.psychometrics.measurement.interaction import InteractionCells, interaction_cells
from tutormetrics.psychometrics.measurement.mantel import (
    ets_class,
    ets_ordinal_class,
    mantel_haenszel,
    ordinal_mantel,
    rasch_class,
)
from tutormetrics.psychometrics.measurement.observations import Observations
from tutormetrics.psychometrics.measurement.posterior import NodeLikelihood, group_means, posterior
from tutormetrics.psychometrics.mfrm.design import PreparedRatings
from tutormetrics.stats.multiplicity import adjust_pvalues

__all__ = ["DIF_COLUMNS", "DifRule", "dif_groups", "dif_line", "dif_table", "modal_design", "reference_level"]

DIF_COLUMNS = [
    "criterion", "focal", "reference", "n_focal", "n_reference", "n_excluded", "method", "matching_out", "n_strata",
    "alpha_mh", "delta_mh", "delta_mh_se", "chi2", "p", "p_adj", "smd", "smd_sd", "ets_class", "favours",
    "rasch_matching_out", "prior_mean_focal", "prior_mean_reference", "contrast", "contrast_se", "t", "welch_df",
    "p_contrast", "p_contrast_adj", "rasch_class", "reason",
]  # fmt: skip
_NAN = float("nan")


@dataclass(frozen=True)
class DifRule:
    """``reference`` level (``--dif-reference``; default the level with most exchanges), ``min_n`` (``--dif-min``),
    ``adjust`` (``--adjust``) and the purification's ``max_rounds``."""

    reference: str | None = None
    min_n: int = 30
    adjust: str = "holm"
    max_rounds: int = 10


def dif_groups(table: pl.DataFrame, col: str, ids: pl.Series) -> DifGroups:
    """The group column ``col`` of ``table`` (one row per exchange, keyed by ``ids.name``) over the rated exchanges.

    Args:
        table: The ``--dif-groups`` table.
        col: Its group column (``--dif-col``).
        ids: The rated exchange ids, in THETA order (its name is the id column).
    """
    id_col = ids.name
    for name in (id_col, col):
        if name not in table.columns:
            raise InputSchemaError(f"--dif-groups: no column {name!r}", hint=f"columns: {', '.join(table.columns)}")
    keyed = table.select(pl.col(id_col).cast(ids.dtype), pl.col(col).cast(pl.String))
    if keyed[id_col].is_duplicated().any():
        raise InputSchemaError(f"--dif-groups: {id_col!r} has duplicated ids", hint="give one row per exchange")
    joined = pl.DataFrame({id_col: ids}).join(keyed, on=id_col, how="left", maintain_order="left")
    if joined[col].null_count():
        raise InputSchemaError(
            f"--dif-groups: {joined[col].null_count()} rated exchanges have no value in {col!r}",
            hint="provide a group for every exchange in the ratings",
        )
    levels = sorted(set(joined[col].to_list()))
    if len(levels) < 2:
        raise ConfigError(f"--dif-col {col} has one level ({levels[0]!r})", hint="DIF compares two or more groups")
    index = {lev: k for k, lev in enumerate(levels)}
    return DifGroups(col, levels, np.array([index[v] for v in joined[col].to_list()], dtype=np.int64))


def reference_level(groups: DifGroups, reference: str | None) -> int:
    """``reference`` or the level with the most exchanges (ties: the first in sorted order)."""
    if reference is not None:
        if reference not in groups.levels:
            raise ConfigError(f"--dif-reference {reference!r} is not a level of {groups.name}", hint=f"levels: {', '.join(groups.levels)}")
        return groups.levels.index(reference)
    counts = np.bincount(groups.code, minlength=len(groups.levels))
    return int(np.argmax(counts))


def modal_design(obs: Observations, n_items: int, n_raters: int) -> tuple[np.ndarray, np.ndarray]:
    """Exchanges whose set of rated (criterion, rater) cells is the most frequent one, and the number of raters
    of each criterion in that set.

    Args:
        obs: The observations.
        n_items: Number of exchanges.
        n_raters: Number of raters.
    """
    code = obs.crit * n_raters + obs.rater
    order = np.lexsort((code, obs.item))
    item, code = obs.item[order], code[order]
    starts = np.searchsorted(item, np.arange(n_items + 1))
    keys = [np.unique(code[starts[i] : starts[i + 1]]).tobytes() for i in range(n_items)]
    modal = Counter(keys).most_common(1)[0][0]
    in_modal = np.array([k == modal for k in keys])
    cells = np.frombuffer(modal, dtype=code.dtype)
    n_crit = int(obs.crit.max()) + 1 if obs.n else 0
    return in_modal, np.bincount(cells // n_raters, minlength=n_crit)


def _observed_row(x: np.ndarray, total: np.ndarray, foc: np.ndarray, binary: bool, top: int) -> dict[str, object]:
    """MH or Mantel statistics of one criterion's scores ``x`` matched on ``total`` (``foc``: focal exchanges)."""
    strata, k = np.unique(total, return_inverse=True)
    has_ref = np.bincount(k, weights=~foc, minlength=strata.size) > 0
    has_foc = np.bincount(k, weights=foc, minlength=strata.size) > 0
    both = (has_ref & has_foc)[k]
    x, k, foc = x[both], np.unique(k[both], return_inverse=True)[1], foc[both]
    n_k, width = int(k.max()) + 1 if k.size else 0, top + 1
    row: dict[str, object] = {"n_strata": n_k, "method": "mh" if binary else "mantel"}
    row.update(dict.fromkeys(("alpha_mh", "delta_mh", "delta_mh_se", "chi2", "p", "smd", "smd_sd"), _NAN))
    if n_k == 0:
        row.update(ets_class="", favours="", reason="extreme" if binary else "constant")
        return row
    counts = np.bincount(k * width + x.astype(np.int64) + foc * n_k * width, minlength=2 * n_k * width)
    ref_c, foc_c = counts[: n_k * width].reshape(n_k, width), counts[n_k * width :].reshape(n_k, width)
    om = ordinal_mantel(ref_c, foc_c, np.arange(width, dtype=float))
    row.update(smd=om.smd, smd_sd=om.sd)
    if binary:
        mh = mantel_haenszel(ref_c[:, 1], ref_c[:, 0], foc_c[:, 1], foc_c[:, 0])
        cls = ets_class(mh.delta, mh.delta_se, mh.p)
        row.update(alpha_mh=mh.alpha, delta_mh=mh.delta, delta_mh_se=mh.delta_se, chi2=mh.chi2, p=mh.p, ets_class=cls,
                   favours=_favours(cls, mh.delta, "A"), reason=mh.reason)  # fmt: skip
    else:
        cls = ets_ordinal_class(om.smd, om.sd, om.p)
        row.update(chi2=om.chi2, p=om.p, ets_class=cls, favours=_favours(cls, om.smd, "AA"), reason=om.reason)
    return row


def _favours(cls: str, signed: float, none: str) -> str:
    if cls in ("", none) or not np.isfinite(signed) or signed == 0:
        return ""
    return "focal" if signed > 0 else "reference"


def _purified(
    compute: Callable[[list[set[int]]], list[dict[str, object]]], n_crit: int, flagged: Callable[[dict], bool], max_rounds: int
) -> tuple[list[dict[str, object]], list[set[int]], bool]:
    """Run ``compute`` with S_j = all \\ (F \\ {j}) until the flagged set F is stable; (rows, exclusions, stable)."""
    chosen: set[int] = set()
    for _ in range(max_rounds):
        outs = [chosen - {j} for j in range(n_crit)]
        rows = compute(outs)
        new = {j for j, r in enumerate(rows) if flagged(r)}
        if new == chosen:
            return rows, outs, True
        chosen = new
    return rows, outs, False


def _rasch_rows(
    est: Estimates, obs: Observations, prep: PreparedRatings, pair_code: np.ndarray, outs: list[set[int]]
) -> list[dict[str, object]]:  # fmt: skip
    """The Rasch contrast of every criterion, focal (pair_code 1) against reference (0), with S_j = all \\ outs[j]."""
    n_crit = len(est.criteria)
    rows: list[dict[str, object]] = [{} for _ in range(n_crit)]
    for out in {frozenset(o) for o in outs}:
        studied = [j for j in range(n_crit) if outs[j] == out]
        keep = [j for j in range(n_crit) if j not in out]
        lik = NodeLikelihood(est, prep, criteria=keep)
        in_s = np.isin(obs.crit, keep)
        ext = extreme_elements(obs.item[in_s], obs.cat[in_s], obs.top[in_s], est.n_items)
        means = group_means(lik, pair_code, 2, ext)
        shift = np.where(pair_code >= 0, means.per_item(np.maximum(pair_code, 0)), 0.0)
        post = posterior(lik, shift)
        group = pair_code[obs.item]
        cell = np.where(np.isin(obs.crit, studied) & (group >= 0), obs.crit * 2 + group, -1)
        res = interaction_cells(est, obs, post, cell, n_crit * 2)
        for j in studied:
            rows[j] = _contrast_row(res, j, means.mu, means.reason)
    return rows


def _contrast_row(res: InteractionCells, j: int, mu: np.ndarray, mu_reason: list[str]) -> dict[str, object]:
    ref, foc = 2 * j, 2 * j + 1
    reasons = [r for r in (mu_reason[1], mu_reason[0], res.reason[foc], res.reason[ref]) if r]
    row: dict[str, object] = {"prior_mean_focal": float(mu[1]), "prior_mean_reference": float(mu[0])}
    se_f, se_r = float(res.se[foc]), float(res.se[ref])
    contrast = float(res.bias[foc] - res.bias[ref])
    se = float(np.sqrt(se_f**2 + se_r**2))
    n_f, n_r = int(res.n[foc]), int(res.n[ref])
    ok = not reasons and n_f > 1 and n_r > 1
    df = (se_f**2 + se_r**2) ** 2 / (se_f**4 / (n_f - 1) + se_r**4 / (n_r - 1)) if ok else _NAN
    t = contrast / se if ok else _NAN
    p = float(2 * stats.t.sf(abs(t), df)) if ok else _NAN
    row.update(contrast=contrast if ok else _NAN, contrast_se=se if ok else _NAN, t=t, welch_df=df, p_contrast=p,
               rasch_class=rasch_class(contrast, se, p) if ok else "", rasch_reason=";".join(dict.fromkeys(reasons)))  # fmt: skip
    return row


def dif_table(
    est: Estimates, obs: Observations, prep: PreparedRatings, groups: DifGroups, rule: DifRule = DifRule()
) -> pl.DataFrame:
    """Rows focal level (sorted) × criterion (FACETS order); columns :data:`DIF_COLUMNS`.

    Args:
        est: The fitted estimates.
        obs: Their observations.
        prep: The prepared ratings.
        groups: The group of each exchange.
        rule: Reference level, smallest group size and purification rounds.

    Example:
        >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
        >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
        >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
        >>> from tutormetrics.psychometrics.measurement.observations import observations
        >>> ratings, _ = simulate_mfrm(n_items=200, seed=1)
        >>> prep = prepare_ratings(ratings)
        >>> est = estimates_from_result(fit_mfrm(ratings), prep)
        >>> g = DifGroups("half", ["a", "b"], np.arange(200) % 2)
        >>> dif_table(est, observations(est, prep), prep, g)["method"].to_list()
        ['mantel', 'mantel', 'mantel', 'mantel', 'mantel']
    """
    ref = reference_level(groups, rule.reference)
    in_modal, raters_per = modal_design(obs, est.n_items, len(est.raters))
    n_crit = len(est.criteria)
    x = np.zeros((est.n_items, n_crit))
    np.add.at(x, (obs.item, obs.crit), obs.cat)
    binary = (est.n_steps == 1) & (raters_per == 1)
    tops = est.n_steps * np.maximum(raters_per, 1)
    incomplete = (~in_modal).sum() > est.n_items / 2
    counts = np.bincount(groups.code, minlength=len(groups.levels))
    rows: list[dict[str, object]] = []
    for f in [g for g in range(len(groups.levels)) if g != ref]:
        pair = np.where(groups.code == ref, 0, np.where(groups.code == f, 1, -1))
        used = in_modal & (pair >= 0)
        base = {"focal": groups.levels[f], "reference": groups.levels[ref], "n_focal": int((used & (pair == 1)).sum()),
                "n_reference": int((used & (pair == 0)).sum()), "n_excluded": int(((pair >= 0) & ~in_modal).sum())}  # fmt: skip
        if min(counts[f], counts[ref]) < rule.min_n:
            rows += [_too_few(c, base) for c in est.criteria]
            continue

        def observed(outs: list[set[int]], used: np.ndarray = used, pair: np.ndarray = pair) -> list[dict[str, object]]:
            """The observed-score rows of every criterion, the criteria in ``outs[j]`` left out of criterion j's matching score.

            Args:
                outs: Per criterion, the criteria left out of its matching score (purification).
                used (np.ndarray): The exchanges in the modal design and in the pair (bound per focal level).
                pair (np.ndarray): 0 reference, 1 focal, −1 neither, per exchange (bound per focal level).
            """
            xs, foc = x[used], pair[used] == 1
            return [_observed_row(xs[:, j], np.delete(xs, sorted(outs[j]), axis=1).sum(1), foc, bool(binary[j]), int(tops[j]))
                    for j in range(n_crit)]  # fmt: skip

        obs_rows, obs_outs, obs_stable = _purified(observed, n_crit, lambda r: r["ets_class"] in ("C", "CC"), rule.max_rounds)
        rasch, rasch_outs, rasch_stable = _purified(
            lambda outs, pair=pair: _rasch_rows(est, obs, prep, pair, outs), n_crit, lambda r: r["rasch_class"] == "C", rule.max_rounds
        )
        for j, crit in enumerate(est.criteria):
            reasons = [obs_rows[j].pop("reason"), rasch[j].pop("rasch_reason")]
            reasons += [] if obs_stable and rasch_stable else ["refine_not_stable"]
            reasons += ["incomplete_design"] if incomplete else []
            rows.append({"criterion": crit, **base, **obs_rows[j], **rasch[j],
                         "matching_out": ",".join(est.criteria[k] for k in sorted(obs_outs[j])),
                         "rasch_matching_out": ",".join(est.criteria[k] for k in sorted(rasch_outs[j])),
                         "reason": ";".join(dict.fromkeys(r for part in reasons for r in part.split(";") if r))})  # fmt: skip
    return _dif_frame(rows, rule.adjust)


def _too_few(criterion: str, base: dict[str, object]) -> dict[str, object]:
    row: dict[str, object] = {"criterion": criterion, **base, "method": "", "matching_out": "", "n_strata": 0,
                              "ets_class": "", "favours": "", "rasch_matching_out": "", "rasch_class": "", "reason": "too_few"}  # fmt: skip
    return row


_STRING = ("criterion", "focal", "reference", "method", "matching_out", "ets_class", "favours", "rasch_matching_out",
           "rasch_class", "reason")  # fmt: skip
_INT = ("n_focal", "n_reference", "n_excluded", "n_strata")


def _dif_frame(rows: list[dict[str, object]], adjust: str) -> pl.DataFrame:
    schema = {c: pl.String if c in _STRING else pl.Int64 if c in _INT else pl.Float64 for c in DIF_COLUMNS}
    full = [{c: r.get(c, "" if c in _STRING else _NAN) for c in DIF_COLUMNS if c not in ("p_adj", "p_contrast_adj")} for r in rows]
    frame = pl.DataFrame(full, schema={c: t for c, t in schema.items() if c not in ("p_adj", "p_contrast_adj")})
    frame = frame.with_columns(
        pl.Series("p_adj", adjust_pvalues(frame["p"].to_numpy(), adjust)),
        pl.Series("p_contrast_adj", adjust_pvalues(frame["p_contrast"].to_numpy(), adjust)),
    )
    return frame.select(DIF_COLUMNS)


def dif_line(table: pl.DataFrame, name: str) -> str:
    """``dif: tutor_is_human 1 vs 0 (reference): 4 criteria, ETS AA 3 BB 1, Rasch A 3 B 1``."""
    parts = []
    for focal in table["focal"].unique(maintain_order=True).to_list():
        block = table.filter(pl.col("focal") == focal)
        ets = Counter(v for v in block["ets_class"].to_list() if v)
        rasch = Counter(v for v in block["rasch_class"].to_list() if v)
        text = f"{name} {focal} vs {block['reference'][0]} (reference): {block.height} criteri{'on' if block.height == 1 else 'a'}"
        if not ets and not rasch:
            text += f" ({block['reason'][0]})"
        else:
            text += ", ETS " + " ".join(f"{k} {ets[k]}" for k in sorted(ets))
            text += ", Rasch " + " ".join(f"{k} {rasch[k]}" for k in sorted(rasch))
        parts.append(text)
    return "dif: " + "; ".join(parts)
