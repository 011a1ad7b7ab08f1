"""Effects on the probability scale with 94% HDIs (``docs/design/effects.md#effects``, ``docs/statistics.md#mfrm-effect-sizes``).

At the reference point ``η*_j = −b_j`` (θ* = 0, s* = 0, covariates 0 on the model scale, no topic,
groups at their zero-sum mean) each term's contrast is ``Δp_j = p(η*_j + c_j) − p(η*_j)`` with
``c_j`` the covariate slope γ_jc (one model unit), the topic effect β_jk or the group effect β_jg,
and ``p`` the probability of the criterion's top category (σ for a binary criterion). Draws: for MML
``x⁽ˢ⁾ = x̂ + L z⁽ˢ⁾`` with ``L = chol(Ĥ⁻¹)`` and ``z = default_rng(seed).standard_normal((S, n_x))``;
for NUTS every posterior draw. Summaries: mean, SD (ddof 1), the 94% HDI by ArviZ's rule, and the
share of draws with Δp > 0. The reference probability ``p_ref`` is the mean of ``p(η*_j)`` over the same
draws (the facets table's ``baseline_probability`` estimate); ``p_ref_plugin`` is ``p`` at the point
estimate (``docs/guide/paper.md#baseline``).

Example:
    >>> hdi(np.array([0.12, -0.03, 0.05, 0.08, 0.31, 0.02, 0.07, 0.04, 0.10, -0.01,
    ...               0.06, 0.09, 0.03, 0.11, 0.05, 0.00, 0.14, 0.06, 0.08, 0.04]))
    (-0.03, 0.14)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit

from tutormetrics.psychometrics.mfrm.design import partial_credit_probabilities, short_number

__all__ = [
    "EFFECT_COLUMNS", "HDI_PROB", "BaselineRow", "EffectTerm", "baseline_rows", "effects_frame", "hdi", "mml_effects",
    "mml_parameter_draws", "top_probability",
]  # fmt: skip

#: Mass of the highest-density interval.
HDI_PROB = 0.94
#: A 0/1 covariate or topic with fewer exchanges at the contrast level gets reason ``sparse_<n>``.
SPARSE_BELOW = 10
EFFECT_COLUMNS: tuple[str, ...] = (
    "effect", "term", "criterion", "contrast", "reference", "outcome", "p_ref", "p_ref_plugin", "delta_p", "delta_p_mean",
    "delta_p_sd", "hdi_low", "hdi_high", "p_gt_zero", "hdi_excl_zero", "method", "n_draws", "reason",
)  # fmt: skip


def hdi(values: np.ndarray, prob: float = HDI_PROB) -> tuple[float, float]:
    """Highest-density interval by ArviZ's rule: sort the S finite values, ``m = ⌊prob·S⌋``, the
    narrowest ``[x₍ᵢ₎, x₍ᵢ₊ₘ₎]`` (0-based), the first on ties; ``(nan, nan)`` without values.

    Example:
        >>> hdi(np.array([3.0, 1.0, 2.0, 10.0]), 0.5)
        (1.0, 3.0)
    """
    x = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    n = x.size
    if n == 0:
        return float("nan"), float("nan")
    m = math.floor(prob * n)
    if m >= n:
        return float(x[0]), float(x[-1])
    widths = x[m:] - x[: n - m]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + m])


def top_probability(eta: np.ndarray, tau: np.ndarray | None, m: int) -> np.ndarray:
    """P(y = top category | η): σ(η) for a binary criterion (``m ≤ 1``), else the partial-credit
    probability of category ``m`` with thresholds ``tau[..., :m]`` (broadcast against ``eta``).

    Args:
        eta: Linear predictor η (logits).
        tau: Partial-credit thresholds (last axis the steps); ``None``: binary.
        m: The top category (number of steps; ≤ 1: binary).

    Example:
        >>> float(top_probability(np.array(0.0), None, 1))
        0.5
    """
    eta = np.asarray(eta, dtype=float)
    if m <= 1 or tau is None:
        return expit(eta)
    return partial_credit_probabilities(eta, np.asarray(tau, dtype=float)[..., :m])[..., m]


@dataclass(frozen=True)
class EffectTerm:
    """One contrasted term: its kind, name, contrast text, and the coefficient per criterion at the
    point estimate (J,) and per draw (S, J); ``reason`` codes shared by its rows."""

    effect: str
    term: str
    contrast: str
    point: np.ndarray
    draws: np.ndarray | None
    reason: tuple[str, ...] = ()


def covariate_contrast(name: str, scale: tuple[str, float, float]) -> str:
    """``flag 0 -> 1`` (raw) or ``len 212.4 -> 298.1 (+1 sd)`` (z-scored).

    Example:
        >>> covariate_contrast("len", ("z", 212.4, 85.7))
        'len 212.4 -> 298.1 (+1 sd)'
    """
    kind, mean, sd = scale
    if kind == "raw":
        return f"{name} 0 -> 1"
    return f"{name} {short_number(mean)} -> {short_number(mean + sd)} (+1 sd)"


def sparse_reason(indicator: np.ndarray | None) -> tuple[str, ...]:
    """``("sparse_<n>",)`` when a 0/1 column has n < 10 exchanges at its rarer level; ``()`` otherwise (or not 0/1).

    n is the smaller of the two level counts (v = 0 and v = 1; a topic absent and present) among the rated
    exchanges, so the rule does not depend on how the column is coded (``docs/guide/paper.md#sparse``).

    Example:
        >>> sparse_reason(np.array([1.0, 0, 0, 1])), sparse_reason(np.array([1.0] * 12 + [0.0] * 3))
        (('sparse_2',), ('sparse_3',))
    """
    if indicator is None:
        return ()
    col = np.asarray(indicator, dtype=float)
    if not np.all((col == 0) | (col == 1)):
        return ()
    n = int(min((col == 1).sum(), (col == 0).sum()))
    return (f"sparse_{n}",) if n < SPARSE_BELOW else ()


def draw_summary(values: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, SD (ddof 1), and the 94% HDI of one quantity's draws.

    Example:
        >>> draw_summary(np.array([1.0, 2.0, 3.0]))
        (2.0, 1.0, 1.0, 3.0)
    """
    lo, hi = hdi(values)
    sd = float(values.std(ddof=1)) if values.size > 1 else float("nan")
    return float(values.mean()), sd, lo, hi


@dataclass(frozen=True)
class BaselineRow:
    """One ``baseline_probability`` row of the facets table (``docs/guide/paper.md#baseline``)."""

    level: str
    estimate: float
    se: float
    lower: float
    upper: float
    plugin: float


def baseline_rows(
    criterion: str, m: int, b: float, tau: np.ndarray | None, b_draws: np.ndarray | None, tau_draws: np.ndarray | None
) -> list[BaselineRow]:
    """The baseline probabilities of one criterion at η* = −b: P(y = 1) (``m ≤ 1``) or P(y = k), k = 0..m.

    ``estimate`` is the mean of p(η*) over the draws, ``se`` their SD (ddof 1), ``lower``/``upper`` their
    94% HDI and ``plugin`` p at the point (b, τ). Without draws ``estimate = plugin`` and the rest is NaN.
    The top category's per-draw values are exactly those behind the effects table's ``p_ref``.

    Args:
        criterion: the criterion name (the row's ``level``, with ``:P(y=k)`` for partial credit).
        m: its number of steps (1 = binary).
        b: the point estimate of b_j.
        tau: its thresholds (``tau[:m]``), or ``None``.
        b_draws: (S,) draws of b_j, or ``None``.
        tau_draws: (S, ≥ m) draws of the thresholds, or ``None``.

    Example:
        >>> r = baseline_rows("c", 1, 0.0, None, np.array([-0.1, 0.0, 0.1]), None)
        >>> r[0].plugin, round(r[0].estimate, 12)
        (0.5, 0.5)
    """
    nan = float("nan")
    if m <= 1:
        plug = np.array([float(top_probability(np.array(-b), None, 1))])
        draws = None if b_draws is None else top_probability(-b_draws, None, 1)[:, None]
        levels = [criterion]
    else:
        t = np.asarray(tau, dtype=float)[:m]
        plug = partial_credit_probabilities(np.array(-b), t)
        draws = None if b_draws is None or tau_draws is None else partial_credit_probabilities(-b_draws, tau_draws[:, :m])
        levels = [f"{criterion}:P(y={k})" for k in range(m + 1)]
    out = []
    for k, level in enumerate(levels):
        p0 = float(plug[k])
        stats = (p0, nan, nan, nan) if draws is None else draw_summary(draws[:, k])
        out.append(BaselineRow(level, *stats, plugin=p0))
    return out


def effects_frame(
    terms: Sequence[EffectTerm],
    *,
    criteria: Sequence[str],
    outcomes: Sequence[str],
    n_steps: np.ndarray,
    b_point: np.ndarray,
    tau_point: np.ndarray,
    b_draws: np.ndarray | None,
    tau_draws: np.ndarray | None,
    reference: str,
    method: str,
    point_from_draws: bool,
    extra_reason: Sequence[str] = (),
    row_reason: Callable[[int, int], Sequence[str]] | None = None,
) -> pl.DataFrame:
    """The effects table (``docs/design/effects.md#effects-table``, ``docs/guide/paper.md#baseline``): one row per term × criterion.

    ``b_draws`` (S, J) and ``tau_draws`` (S, J, M) give the per-draw reference point. ``p_ref`` is the mean
    of p(η*_j) over the draws (the facets ``baseline_probability`` estimate) and ``p_ref_plugin`` p at the
    point estimate; without draws both are the plug-in, the draw columns NaN and ``n_draws`` 0. With
    ``point_from_draws`` (NUTS) ``delta_p`` is the mean over draws, else the plug-in at the point.
    ``row_reason(t, j)`` adds codes for term ``t`` at criterion ``j`` (NUTS: ``not_converged``).

    Args:
        terms: The contrasted terms, one block of rows each.
        criteria: The criterion names (J).
        outcomes: The outcome label per criterion (:func:`outcome_labels`).
        n_steps: Steps per criterion (J,).
        b_point: Criterion difficulties at the point estimate (J,).
        tau_point: Thresholds at the point estimate (J, M).
        b_draws: Difficulties per draw (S, J); ``None``: plug-in only.
        tau_draws: Thresholds per draw (S, J, M); ``None``: plug-in only.
        reference: The reference-point text of every row (:func:`reference_text`).
        method: The ``method`` column (``mml`` or ``nuts``).
        point_from_draws: ``delta_p`` is the mean over draws (NUTS), not the plug-in.
        extra_reason: Reason codes added to every row.
        row_reason: ``(term index, criterion index)`` → extra codes; ``None``: none.
    """
    rows: dict[str, list[Any]] = {c: [] for c in EFFECT_COLUMNS}
    n_draws = 0 if b_draws is None else int(b_draws.shape[0])
    for t_index, term in enumerate(terms):
        for j, crit in enumerate(criteria):
            m = int(n_steps[j])
            eta0 = -float(b_point[j])
            tau0 = tau_point[j] if m > 1 else None
            p_plugin = float(top_probability(np.array(eta0), tau0, m))
            p_ref, dp = p_plugin, float(top_probability(np.array(eta0 + float(term.point[j])), tau0, m)) - p_plugin
            stats = (float("nan"),) * 5
            if b_draws is not None and term.draws is not None:
                eta_s = -b_draws[:, j]
                tau_s = tau_draws[:, j] if (m > 1 and tau_draws is not None) else None
                p_s = top_probability(eta_s, tau_s, m)
                d_s = top_probability(eta_s + term.draws[:, j], tau_s, m) - p_s
                mean, sd, lo, hi = draw_summary(d_s)
                stats = (mean, sd, lo, hi, float((d_s > 0).mean()))
                p_ref = float(p_s.mean())
                if point_from_draws:
                    dp = mean
            mean, sd, lo, hi, pgt = stats
            reason = [*term.reason, *extra_reason, *(row_reason(t_index, j) if row_reason else ())]
            for col, val in zip(
                EFFECT_COLUMNS,
                (term.effect, term.term, crit, term.contrast, reference, outcomes[j], p_ref, p_plugin, dp, mean, sd, lo,
                 hi, pgt, bool(lo > 0 or hi < 0), method, n_draws if term.draws is not None else 0, ";".join(reason)), strict=True
            ):  # fmt: skip
                rows[col].append(val)
    schema = {c: pl.Float64 for c in EFFECT_COLUMNS}
    schema.update({c: pl.String for c in ("effect", "term", "criterion", "contrast", "reference", "outcome", "method", "reason")})
    schema.update({"hdi_excl_zero": pl.Boolean, "n_draws": pl.Int64})
    return pl.DataFrame(rows, schema=schema)


def outcome_labels(criteria: Sequence[str], n_steps: np.ndarray, score_levels: dict[str, list[float]]) -> list[str]:
    """``P(y=1)`` for a binary criterion, ``P(y=<top score>)`` for partial credit.

    Args:
        criteria: The criterion names.
        n_steps: Steps per criterion.
        score_levels: Criterion → its score values, lowest first.

    Example:
        >>> outcome_labels(["a"], np.array([2]), {"a": [0.0, 0.5, 1.0]})
        ['P(y=1)']
    """
    out = []
    for j, c in enumerate(criteria):
        levels = score_levels.get(c) or [0.0, 1.0]
        out.append(f"P(y={short_number(levels[-1] if int(n_steps[j]) > 1 else 1.0)})")
    return out


def mml_draws(free_x: np.ndarray, free_cov: np.ndarray, n_draws: int, seed: int) -> np.ndarray | None:
    """``x̂ + z Lᵀ`` with ``L = chol(Ĥ⁻¹)`` and ``z = default_rng(seed).standard_normal((S, n_x))``;
    ``None`` when the covariance is not positive definite (reason ``no_covariance``).

    Args:
        free_x: The free parameters at the mode, x̂ (n_x,).
        free_cov: Their covariance Ĥ⁻¹ (n_x, n_x).
        n_draws: S, the number of draws.
        seed: Seed of the normals.

    Example:
        >>> mml_draws(np.zeros(2), np.eye(2), 5, 0).shape
        (5, 2)
    """
    if free_cov.size == 0 or not np.all(np.isfinite(free_cov)):
        return None
    try:
        chol = np.linalg.cholesky(free_cov)
    except np.linalg.LinAlgError:
        return None
    z = np.random.default_rng(seed).standard_normal((n_draws, free_x.size))
    return free_x[None, :] + z @ chol.T


@dataclass(frozen=True)
class ParameterDraws:
    """MML draws mapped to the natural parameters: all of them (S, n_natural), b (S, J) and τ (S, J, M) or ``None``."""

    natural: np.ndarray
    b: np.ndarray
    tau: np.ndarray | None


def mml_parameter_draws(result: Any, n_draws: int = 4000, seed: int = 0) -> ParameterDraws | None:
    """The S draws of an MML fit (``docs/design/effects.md#effect-draws``) that both ``theta --effects`` and the facets table's
    baseline probabilities use: ``x̂ + L z`` with the given ``seed``, mapped by the zero-sum maps;
    ``None`` when Ĥ is not positive definite (``no_covariance``).

    Args:
        result: The MML fit (``MFRMResult``).
        n_draws: S, the number of draws (``--effect-draws``).
        seed: Seed of the draws (``--seed``).
    """
    free = mml_draws(result.free_x, result.free_covariance, n_draws, seed)
    if free is None:
        return None
    nat = free @ result.natural_map.T
    index = {lab: i for i, lab in enumerate(result.natural_labels)}
    n_crit = len(result.criteria)
    b = np.stack([nat[:, index[("criterion", str(j), "")]] for j in range(n_crit)], axis=1)
    tau = None
    if result.tau.shape[1] and np.any(result.n_steps > 1):
        tau = np.zeros((nat.shape[0], n_crit, result.tau.shape[1]))
        for j in range(n_crit):
            m = int(result.n_steps[j])
            for h in range(1, m + 1 if m > 1 else 1):
                tau[:, j, h - 1] = nat[:, index[("threshold", str(j), str(h))]]
    return ParameterDraws(nat, b, tau)


def mml_effects(result: Any, n_draws: int = 4000, seed: int = 0) -> pl.DataFrame:
    """The effects table of an MML fit (``MFRMResult``; ``docs/design/effects.md#effects``), draws from N(x̂, Ĥ⁻¹).

    Args:
        result: The MML fit (``MFRMResult``).
        n_draws: S, the number of draws (``--effect-draws``).
        seed: Seed of the draws (``--seed``).
    """
    index = {lab: i for i, lab in enumerate(result.natural_labels)}
    draws = mml_parameter_draws(result, n_draws, seed)
    crits = range(len(result.criteria))

    def pick(facet: str, k: str) -> np.ndarray | None:
        if draws is None:
            return None
        return np.stack([draws.natural[:, index[(facet, str(j), k)]] for j in crits], axis=1)

    terms: list[EffectTerm] = []
    raw = result.covariate_raw
    for c, name in enumerate(result.covariate_names):
        scale = result.covariate_scales[c]
        terms.append(EffectTerm("covariate", name, covariate_contrast(name, scale), result.gamma[:, c],
                                pick("covariate", str(c)), sparse_reason(None if raw is None else raw[:, c])))  # fmt: skip
    for k, name in enumerate(result.topic_names):
        mat = result.topic_matrix
        terms.append(EffectTerm("topic", name, f"{name} 0 -> 1", result.topic[:, k], pick("topic", str(k)),
                                sparse_reason(None if mat is None else mat[:, k])))  # fmt: skip
    if len(result.group_levels) > 1:
        for g, name in enumerate(result.group_levels):
            terms.append(EffectTerm("group", name, f"{name} vs mean of groups", result.beta[:, g], pick("group", str(g))))
    extra = [] if result.converged else ["not_converged"]
    if draws is None:
        extra.append("no_covariance")
    return effects_frame(
        terms,
        criteria=result.criteria,
        outcomes=outcome_labels(result.criteria, result.n_steps, result.score_levels),
        n_steps=result.n_steps,
        b_point=result.b,
        tau_point=result.tau,
        b_draws=None if draws is None else draws.b,
        tau_draws=None if draws is None else draws.tau,
        reference=result.reference_point,
        method="mml",
        point_from_draws=False,
        extra_reason=extra,
    )


def effects_summary_line(table: pl.DataFrame, reference: str, draws_text: str) -> str:
    """The stderr line of ``theta --effects`` (``docs/design/effects.md#effects-table``).

    Args:
        table: The effects table.
        reference: The reference-point text.
        draws_text: What the draws were (e.g. ``NUTS draws 4000``).
    """
    n_excl = int(table["hdi_excl_zero"].fill_null(False).sum())
    return f"effects: {table.height} rows, reference {reference}; {draws_text}; 94% HDI excludes 0 in {n_excl}"

