"""Effects on the probability scale with 94% HDIs (``effects.md`` §3, ``statistics.md`` §2.4).

At the reference point ``η*_j = −b_j`` (θ* = 0, s* = 0, covariates 0 on the model scale, no topic,
groups at their zero-sum mean) each term's contrast is ``Δp_j = p(η*_j + c_j) − p(η*_j)`` with
``c_j`` the covariate slope γ_jc (one model unit), the topic effect β_jk or the group effect β_jg,
and ``p`` the probability of the criterion's top category (σ for a binary criterion). Draws: for MML
``x⁽ˢ⁾ = x̂ + L z⁽ˢ⁾`` with ``L = chol(Ĥ⁻¹)`` and ``z = default_rng(seed).standard_normal((S, n_x))``;
for NUTS every posterior draw. Summaries: mean, SD (ddof 1), the 94% HDI by ArviZ's rule, and the
share of draws with Δp > 0.

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

__all__ = ["EFFECT_COLUMNS", "HDI_PROB", "EffectTerm", "effects_frame", "hdi", "mml_effects", "top_probability"]

#: Mass of the highest-density interval.
HDI_PROB = 0.94
#: A 0/1 covariate or topic with fewer exchanges at the contrast level gets reason ``sparse_<n>``.
SPARSE_BELOW = 10
EFFECT_COLUMNS: tuple[str, ...] = (
    "effect", "term", "criterion", "contrast", "reference", "outcome", "p_ref", "delta_p", "delta_p_mean",
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
    m = int(math.floor(prob * n))
    if m >= n:
        return float(x[0]), float(x[-1])
    widths = x[m:] - x[: n - m]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + m])


def top_probability(eta: np.ndarray, tau: np.ndarray | None, m: int) -> np.ndarray:
    """P(y = top category | η): σ(η) for a binary criterion (``m ≤ 1``), else the partial-credit
    probability of category ``m`` with thresholds ``tau[..., :m]`` (broadcast against ``eta``).

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
    """``("sparse_<n>",)`` when a 0/1 column has n < 10 exchanges at 1; ``()`` otherwise (or not 0/1).

    Example:
        >>> sparse_reason(np.array([1.0, 0, 0, 1]))
        ('sparse_2',)
    """
    if indicator is None:
        return ()
    col = np.asarray(indicator, dtype=float)
    if not np.all((col == 0) | (col == 1)):
        return ()
    n = int((col == 1).sum())
    return (f"sparse_{n}",) if n < SPARSE_BELOW else ()


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
    """The effects table (``effects.md`` §3.3): one row per term × criterion.

    ``b_draws`` (S, J) and ``tau_draws`` (S, J, M) give the per-draw reference point; with
    ``point_from_draws`` (NUTS) ``p_ref`` and ``delta_p`` are means over draws, else plug-ins at the
    point estimate. Without draws the draw columns are NaN and ``n_draws`` 0. ``row_reason(t, j)`` adds
    codes for term ``t`` at criterion ``j`` (NUTS: ``not_converged`` from that row's diagnostics).
    """
    rows: dict[str, list[Any]] = {c: [] for c in EFFECT_COLUMNS}
    n_draws = 0 if b_draws is None else int(b_draws.shape[0])
    for t_index, term in enumerate(terms):
        for j, crit in enumerate(criteria):
            m = int(n_steps[j])
            eta0 = -float(b_point[j])
            tau0 = tau_point[j] if m > 1 else None
            p_ref = float(top_probability(np.array(eta0), tau0, m))
            dp = float(top_probability(np.array(eta0 + float(term.point[j])), tau0, m)) - p_ref
            stats = (float("nan"),) * 5
            if b_draws is not None and term.draws is not None:
                eta_s = -b_draws[:, j]
                tau_s = tau_draws[:, j] if (m > 1 and tau_draws is not None) else None
                p_s = top_probability(eta_s, tau_s, m)
                d_s = top_probability(eta_s + term.draws[:, j], tau_s, m) - p_s
                lo, hi = hdi(d_s)
                stats = (float(d_s.mean()), float(d_s.std(ddof=1)) if d_s.size > 1 else float("nan"), lo, hi,
                         float((d_s > 0).mean()))  # fmt: skip
                if point_from_draws:
                    p_ref, dp = float(p_s.mean()), stats[0]
            mean, sd, lo, hi, pgt = stats
            reason = [*term.reason, *extra_reason, *(row_reason(t_index, j) if row_reason else ())]
            for col, val in zip(
                EFFECT_COLUMNS,
                (term.effect, term.term, crit, term.contrast, reference, outcomes[j], p_ref, dp, mean, sd, lo, hi, pgt,
                 bool(lo > 0 or hi < 0), method, n_draws if term.draws is not None else 0, ";".join(reason)),
            ):  # fmt: skip
                rows[col].append(val)
    schema = {c: pl.Float64 for c in EFFECT_COLUMNS}
    schema.update({c: pl.String for c in ("effect", "term", "criterion", "contrast", "reference", "outcome", "method", "reason")})
    schema.update({"hdi_excl_zero": pl.Boolean, "n_draws": pl.Int64})
    return pl.DataFrame(rows, schema=schema)


def outcome_labels(criteria: Sequence[str], n_steps: np.ndarray, score_levels: dict[str, list[float]]) -> list[str]:
    """``P(y=1)`` for a binary criterion, ``P(y=<top score>)`` for partial credit.

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


def mml_effects(result: Any, n_draws: int = 4000, seed: int = 0) -> pl.DataFrame:
    """The effects table of an MML fit (``MFRMResult``; ``effects.md`` §3), draws from N(x̂, Ĥ⁻¹)."""
    labels = result.natural_labels
    index = {lab: i for i, lab in enumerate(labels)}
    amap = result.natural_map
    draws_free = mml_draws(result.free_x, result.free_covariance, n_draws, seed)
    nat = None if draws_free is None else draws_free @ amap.T  # (S, n_natural)
    crits = range(len(result.criteria))

    def pick(facet: str, k: str) -> np.ndarray | None:
        if nat is None:
            return None
        return np.stack([nat[:, index[(facet, str(j), k)]] for j in crits], axis=1)

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
    b_draws = pick("criterion", "")
    tau_draws = None
    if nat is not None and result.tau.shape[1] and np.any(result.n_steps > 1):
        tau_draws = np.zeros((nat.shape[0], len(result.criteria), result.tau.shape[1]))
        for j in crits:
            for h in range(1, int(result.n_steps[j]) + 1):
                if int(result.n_steps[j]) > 1:
                    tau_draws[:, j, h - 1] = nat[:, index[("threshold", str(j), str(h))]]
    extra = [] if result.converged else ["not_converged"]
    if nat is None:
        extra.append("no_covariance")
    return effects_frame(
        terms,
        criteria=result.criteria,
        outcomes=outcome_labels(result.criteria, result.n_steps, result.score_levels),
        n_steps=result.n_steps,
        b_point=result.b,
        tau_point=result.tau,
        b_draws=b_draws,
        tau_draws=tau_draws,
        reference=result.reference_point,
        method="mml",
        point_from_draws=False,
        extra_reason=extra,
    )


def effects_summary_line(table: pl.DataFrame, reference: str, draws_text: str) -> str:
    """The stderr line of ``theta --effects`` (``effects.md`` §3.3)."""
    n_excl = int(table["hdi_excl_zero"].fill_null(False).sum())
    return f"effects: {table.height} rows, reference {reference}; {draws_text}; 94% HDI excludes 0 in {n_excl}"

