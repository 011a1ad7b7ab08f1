"""Spearman correlation matrix of metrics against rubric targets (``statistics.md`` §1).

The core entry point is :func:`spearman_matrix`, which returns a tidy polars table with one row per
(metric, target) cell: ``metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason``
followed by the diagnostics ``p_method, ci_method``.

Bootstrap confidence intervals are vectorised across cells. Resampling the rows of a paired sample
is the same as giving every original row an integer weight ``w_i`` (how often it was drawn), so the
average rank of row ``i`` inside the resample is::

    r_i(w) = W_below(i) + (W_tied(i) + 1) / 2

where ``W_below`` is the total weight of rows with a smaller value and ``W_tied`` the total weight of
rows tied with row ``i``. One cumulative sum over each column's sorted order gives the ranks of all
rows for every resample, with no sorting inside the bootstrap loop. The mean rank is always
``(N + 1) / 2`` with ``N = Σ w``, so Spearman's rho of a resample is the weighted Pearson correlation
of centred ranks, and all metric × target cells of a resample come out of one batched matrix
product. The BCa jackknife reuses the same code with the weights ``1 − e_i`` (leave row ``i`` out).
Resample indices are drawn exactly as :func:`scipy.stats.bootstrap` draws them
(``rng.integers(0, n, (B, n))``), one stream per distinct complete-pair mask, so with the same seed the
vectorised path and the per-cell ``ci_backend="scipy"`` path see identical resamples.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from scipy import special, stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io import require_columns

AdjustMethod = Literal["bh", "holm", "by", "none"]
CIMethod = Literal["bca", "percentile", "fisher", "none"]
PermutationMode = Literal["auto", "always", "never"]
CIBackend = Literal["vectorized", "scipy"]

ADJUST_METHODS: tuple[str, ...] = ("bh", "holm", "by", "none")
CI_METHODS: tuple[str, ...] = ("bca", "percentile", "fisher", "none")
PERMUTATION_MODES: tuple[str, ...] = ("auto", "always", "never")
CI_BACKENDS: tuple[str, ...] = ("vectorized", "scipy")
STARS_ON: tuple[str, ...] = ("p_adj", "p")

#: Tidy output columns in their fixed order (``statistics.md`` §1.7), then the diagnostics.
RESULT_COLUMNS: tuple[str, ...] = (
    "metric",
    "target",
    "n",
    "rho",
    "ci_low",
    "ci_high",
    "p",
    "p_adj",
    "adjust",
    "stars",
    "reason",
)
DIAGNOSTIC_COLUMNS: tuple[str, ...] = ("p_method", "ci_method")

#: Below this many complete pairs, ``permutation="auto"`` uses a permutation p (§1.3).
PERMUTATION_N_BELOW = 50

# Elements (rows × columns × resamples) per bootstrap chunk: ~16 MiB per float64 work array.
_CHUNK_ELEMENTS = 1 << 21


# --------------------------------------------------------------------------------------------------
# Small pure helpers
# --------------------------------------------------------------------------------------------------


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: str = "bh") -> np.ndarray:
    """Adjust a 1-D vector of p-values for multiplicity; NaN entries stay NaN and are not counted.

    With the m non-NaN p sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:

    - ``"bh"`` (Benjamini–Hochberg): ``adj_(i) = min_{k ≥ i} min(1, m/k · p_(k))``;
    - ``"by"`` (Benjamini–Yekutieli): BH multiplied by ``c(m) = Σ_{k=1..m} 1/k``;
    - ``"holm"``: ``adj_(i) = max_{k ≤ i} min(1, (m − k + 1) · p_(k))``;
    - ``"none"``: ``adj = p``.

    Results are returned in the input order. The function never looks at a 2-D layout: pass the
    raveled p-values of the whole matrix so that the whole matrix is one family (§1.4).

    Example:
        >>> adjust_pvalues([0.01, 0.04, float("nan"), 0.03], "bh").round(3).tolist()
        [0.03, 0.04, nan, 0.04]
    """
    if method not in ADJUST_METHODS:
        raise ConfigError(f"unknown adjust method {method!r}", hint=f"use one of {', '.join(ADJUST_METHODS)}")
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1:
        raise ConfigError(
            f"adjust_pvalues expects a 1-D vector, got shape {arr.shape}",
            hint="ravel the matrix first so the whole matrix is one family",
        )
    out = np.full(arr.shape, np.nan)
    keep = ~np.isnan(arr)
    vals = arr[keep]
    m = vals.size
    if m == 0:
        return out
    if np.any((vals < 0) | (vals > 1)):
        raise ConfigError("p-values must lie in [0, 1]")
    if method == "none":
        out[keep] = vals
        return out
    order = np.argsort(vals, kind="mergesort")
    ranked = vals[order]
    k = np.arange(1, m + 1, dtype=float)
    if method in ("bh", "by"):
        scale = m / k
        if method == "by":
            scale = scale * np.sum(1.0 / k)
        adj = np.minimum.accumulate((scale * ranked)[::-1])[::-1]
    else:  # holm
        adj = np.maximum.accumulate((m - k + 1.0) * ranked)
    adj = np.minimum(adj, 1.0)
    res = np.empty(m)
    res[order] = adj
    out[keep] = res
    return out


def significance_stars(p: float) -> str:
    """``"***"`` for p < .001, ``"**"`` for p < .01, ``"*"`` for p < .05, else ``""`` (NaN gives ``""``).

    Example:
        >>> [significance_stars(v) for v in (0.0009, 0.009, 0.049, 0.05, float("nan"))]
        ['***', '**', '*', '', '']
    """
    if p is None or not np.isfinite(p):
        return ""
    if p < 0.001:
        return "***"
    if p < 0.01:
        return "**"
    if p < 0.05:
        return "*"
    return ""


def prevalence_ceiling(y: Sequence[float] | np.ndarray | pl.Series) -> float:
    """Upper bound on |Spearman ρ| for a target with category proportions ``p_k``: ``sqrt(1 − Σ p_k³)``.

    For a binary target with prevalence p this is ``sqrt(3p(1 − p))`` (§1.2). Non-finite values are
    ignored; an empty input gives NaN.

    Example:
        >>> round(prevalence_ceiling([1] * 45 + [0] * 204), 3)
        0.666
    """
    arr = np.asarray(y.to_numpy() if isinstance(y, pl.Series) else y, dtype=float).ravel()
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return float("nan")
    _, counts = np.unique(arr, return_counts=True)
    props = counts / arr.size
    return float(math.sqrt(max(0.0, 1.0 - float(np.sum(props**3)))))


def fisher_ci(rho: float, n: int, confidence_level: float = 0.95) -> tuple[float, float, float]:
    """Fisher-z interval for Spearman ρ with the Bonett–Wright standard error.

    ``z = atanh ρ``, ``se_z = sqrt((1 + ρ²/2)/(n − 3))``, interval ``tanh(z ± z_{1−α/2} se_z)``.
    The third value is the delta-method SE on the ρ scale, ``se_z · (1 − ρ²)``, as printed by
    statpsych ``ci.spear``. Returns NaNs when ``n ≤ 3`` or ρ is not finite.

    Example (statpsych reference, §1.5):
        >>> [round(v, 7) for v in fisher_ci(0.8699639, 15)]
        [0.5840951, 0.9638297, 0.0824133]
    """
    if not np.isfinite(rho) or n <= 3:
        return float("nan"), float("nan"), float("nan")
    se_z = math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
    crit = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    z = math.atanh(rho) if abs(rho) < 1 else math.copysign(math.inf, rho)
    return math.tanh(z - crit * se_z), math.tanh(z + crit * se_z), se_z * (1.0 - rho * rho)


def spearman_vec(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorised Spearman ρ along ``axis``: average ranks, centre, normalised cross-product.

    This is the statistic passed to :func:`scipy.stats.bootstrap` (``vectorized=True``).

    Example:
        >>> float(spearman_vec(np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4])))
        0.8
    """
    rx = stats.rankdata(x, axis=axis)
    ry = stats.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(rx * ry, axis=axis) / np.sqrt(np.sum(rx * rx, axis=axis) * np.sum(ry * ry, axis=axis))


def spearman_asymptotic_p(rho: float | np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Two-sided t-approximation p of :func:`scipy.stats.spearmanr`.

    ``t = ρ sqrt((n − 2)/((1 + ρ)(1 − ρ)))`` with ``n − 2`` degrees of freedom, ``p = 2·sf(|t|)``.

    Example:
        >>> float(spearman_asymptotic_p(0.0, 30))
        1.0
    """
    rho = np.asarray(rho, dtype=float)
    dof = np.asarray(n, dtype=float) - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt((dof / ((rho + 1.0) * (1.0 - rho))).clip(0))
    return 2.0 * special.stdtr(dof, -np.abs(t))


# --------------------------------------------------------------------------------------------------
# Vectorised weighted ranks (bootstrap and jackknife)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RankPlan:
    """Tie structure of several columns, flattened so one gather serves all of them.

    ``order`` (K, n) sorts each column; ``ends`` are flat positions (into K·n) of the last row of each
    tie group; ``prev`` indexes the previous group's end in ``ends`` shifted by one (0 = column start);
    ``group_of_row`` (K·n) maps each row of each column, in original order, to its global tie group.
    """

    order: np.ndarray
    ends: np.ndarray
    prev: np.ndarray
    group_of_row: np.ndarray
    n_cols: int
    n_rows: int


def _rank_plan(cols: np.ndarray) -> _RankPlan:
    """Build a :class:`_RankPlan` for the columns of ``cols`` (n rows × K columns, all finite)."""
    n, k = cols.shape
    order = np.argsort(cols, axis=0, kind="stable").T.copy()  # (K, n)
    ends_list: list[np.ndarray] = []
    prev_list: list[np.ndarray] = []
    group_of_row = np.empty(k * n, dtype=np.intp)
    offset = 0
    for j in range(k):
        sorted_vals = cols[order[j], j]
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        new_group[1:] = sorted_vals[1:] != sorted_vals[:-1]
        gid_sorted = np.cumsum(new_group) - 1  # group index of each sorted position
        n_groups = int(gid_sorted[-1]) + 1
        last = np.flatnonzero(np.append(new_group[1:], True))  # last sorted position of each group
        ends_list.append(j * n + last)
        # previous group's end: index into [0, E...] padded array (0 means "nothing before").
        prev_list.append(np.concatenate(([0], offset + np.arange(1, n_groups))))
        rows = np.empty(n, dtype=np.intp)
        rows[order[j]] = gid_sorted
        group_of_row[j * n : (j + 1) * n] = offset + rows
        offset += n_groups
    return _RankPlan(
        order=order,
        ends=np.concatenate(ends_list),
        prev=np.concatenate(prev_list),
        group_of_row=group_of_row,
        n_cols=k,
        n_rows=n,
    )


def _weighted_centred_ranks(weights: np.ndarray, plan: _RankPlan) -> np.ndarray:
    """Twice the centred average ranks of every column under integer row weights.

    ``weights`` is an int64 (c, n) array; the result is float64 (c, K, n) holding
    ``2·r_i(w) − (Σw + 1)`` with ``r_i(w) = W_below(i) + (W_tied(i) + 1)/2``, i.e.
    ``W_before_group + W_through_group − Σw``. Everything up to the final gather is integer
    arithmetic (an int64 cumulative sum is several times faster than a float one, and exact);
    doubling keeps half-ranks integral. Rows with zero weight get a rank but no influence.
    """
    c = weights.shape[0]
    ws = weights[:, plan.order]  # (c, K, n) weights in each column's sorted order
    cs = np.cumsum(ws, axis=2).reshape(c, -1)
    end = cs[:, plan.ends]  # (c, G) cumulative weight through each tie group
    padded = np.concatenate((np.zeros((c, 1), dtype=end.dtype), end), axis=1)
    # groups are numbered consecutively, so the previous group's end sits right before in `padded`,
    # except at a column start where `prev` points at the zero pad.
    twice = padded[:, plan.prev] + end - weights.sum(axis=1, keepdims=True)
    return twice.astype(np.float64)[:, plan.group_of_row].reshape(c, plan.n_cols, plan.n_rows)


def _weighted_spearman_block(
    weights: np.ndarray, plan: _RankPlan, n_x: int, pairs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Spearman ρ of the requested (x, y) column pairs for each weight row; returns (c, n_pairs).

    The first ``n_x`` columns of ``plan`` are metrics, the rest targets. ρ is the weighted Pearson
    correlation of centred ranks: ``Σ w rx ry / sqrt(Σ w rx² · Σ w ry²)`` (the factor 2 of the
    doubled ranks cancels).
    """
    r = _weighted_centred_ranks(weights, plan)
    rx, ry = r[:, :n_x, :], r[:, n_x:, :]
    wf = weights.astype(np.float64)
    wx = rx * wf[:, None, :]
    # a contiguous (c, n, n_y) operand keeps the batched product on BLAS
    cross = np.matmul(wx, np.ascontiguousarray(ry.transpose(0, 2, 1)))  # (c, n_x, n_y)
    vx = np.einsum("ckn,ckn->ck", wx, rx)
    vy = np.einsum("ckn,ckn->ck", ry * wf[:, None, :], ry)
    ix, iy = pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cross[:, ix, iy] / np.sqrt(vx[:, ix] * vy[:, iy])
    return np.clip(rho, -1.0, 1.0)


def _single_threaded_blas() -> contextlib.AbstractContextManager[object]:
    """Limit BLAS to one thread while the bootstrap runs, when threadpoolctl is available.

    Each chunk makes many small batched products; a multi-threaded BLAS spends more time waking and
    spinning its workers than multiplying (measured 1.5–2× more CPU time on 2 cores).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: results are identical, only slower
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _chunk_size(n_rows: int, n_cols: int, total: int) -> int:
    return int(max(1, min(total, _CHUNK_ELEMENTS // max(1, n_rows * n_cols))))


def _bootstrap_block(
    block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap distribution (n_pairs, B) of ρ for paired row resamples drawn like scipy does."""
    n = block.shape[0]
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, n_resamples))
    step = _chunk_size(n, block.shape[1], n_resamples)
    for start in range(0, n_resamples, step):
        c = min(step, n_resamples - start)
        idx = rng.integers(0, n, (c, n))  # identical stream to scipy.stats.bootstrap(paired=True)
        flat = (idx + (np.arange(c) * n)[:, None]).ravel()
        weights = np.bincount(flat, minlength=c * n).reshape(c, n).astype(np.int64)
        out[:, start : start + c] = _weighted_spearman_block(weights, plan, n_x, pairs).T
    return out


def _jackknife_block(block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Leave-one-out ρ (n_pairs, n) for every row, via weights ``1 − e_i``."""
    n = block.shape[0]
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, n))
    step = _chunk_size(n, block.shape[1], n)
    for start in range(0, n, step):
        c = min(step, n - start)
        weights = np.ones((c, n), dtype=np.int64)
        weights[np.arange(c), start + np.arange(c)] = 0
        out[:, start : start + c] = _weighted_spearman_block(weights, plan, n_x, pairs).T
    return out


def _bca_levels(theta_hat: float, theta_b: np.ndarray, theta_jack: np.ndarray, alpha: float) -> tuple[float, float]:
    """BCa quantile levels (Efron & Tibshirani 1993, eq. 14.10/15.36), as in ``scipy.stats.bootstrap``.

    ``z0 = Φ⁻¹((#{θ*_b < θ̂} + #{θ*_b ≤ θ̂}) / 2B)``;
    ``a = Σ U³ / (6 (Σ U²)^{3/2})`` with jackknife ``U_i = (n − 1)(θ̄_(·) − θ̂_(i))``;
    ``α_1 = Φ(z0 + (z0 + z_α)/(1 − a(z0 + z_α)))`` and likewise ``α_2`` with ``z_{1−α}``.
    """
    b = theta_b.size
    pct = (np.count_nonzero(theta_b < theta_hat) + np.count_nonzero(theta_b <= theta_hat)) / (2.0 * b)
    z0 = float(special.ndtri(pct))
    n_j = float(theta_jack.size)
    u = (n_j - 1.0) * (theta_jack.mean() - theta_jack)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_hat = (1.0 / 6.0) * (np.sum(u**3) / n_j**3) / (np.sum(u**2) / n_j**2) ** 1.5
        z_a = float(special.ndtri(alpha))
        num1 = z0 + z_a
        num2 = z0 - z_a
        a1 = float(special.ndtr(z0 + num1 / (1.0 - a_hat * num1)))
        a2 = float(special.ndtr(z0 + num2 / (1.0 - a_hat * num2)))
    return a1, a2


# --------------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------------


@dataclass
class _Cell:
    metric: int
    target: int
    n: int = 0
    reason: list[str] = field(default_factory=list)
    rho: float = float("nan")
    p: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    p_method: str = ""
    ci_method: str = ""
    group: int = -1

    @property
    def defined(self) -> bool:
        return self.group >= 0


@dataclass
class _Group:
    """Cells that share one complete-pair mask (same rows), hence one set of bootstrap resamples."""

    rows: np.ndarray
    cells: list[int] = field(default_factory=list)


def _numeric_matrix(data: pl.DataFrame, columns: list[str], role: str) -> np.ndarray:
    """Columns as a float64 matrix with nulls as NaN; non-numeric columns raise InputSchemaError."""
    out = np.empty((data.height, len(columns)))
    for j, col in enumerate(columns):
        s = data.get_column(col)
        if not (s.dtype.is_numeric() or s.dtype == pl.Boolean or s.dtype == pl.Null):
            raise InputSchemaError(
                f"{role} column {col!r} is {s.dtype}, not numeric",
                hint=f"drop it from the {role} columns or convert it to numbers",
            )
        out[:, j] = s.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    return out


def _check_names(names: list[str], role: str) -> list[str]:
    names = list(names)
    if not names:
        raise ConfigError(f"no {role} columns given", hint=f"pass at least one {role} column")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise ConfigError(f"duplicate {role} columns: {', '.join(dupes)}")
    return names


def _validate_options(
    adjust: str,
    ci: str,
    permutation: str,
    stars_on: str,
    ci_backend: str,
    n_resamples: int,
    n_permutations: int,
    confidence_level: float,
    n_min: int,
) -> None:
    for value, allowed, name in (
        (adjust, ADJUST_METHODS, "adjust"),
        (ci, CI_METHODS, "ci"),
        (permutation, PERMUTATION_MODES, "permutation"),
        (stars_on, STARS_ON, "stars_on"),
        (ci_backend, CI_BACKENDS, "ci_backend"),
    ):
        if value not in allowed:
            raise ConfigError(f"unknown {name} {value!r}", hint=f"use one of {', '.join(allowed)}")
    if ci in ("bca", "percentile") and n_resamples < 2:
        raise ConfigError(f"n_resamples must be at least 2, got {n_resamples}")
    if permutation != "never" and n_permutations < 1:
        raise ConfigError(f"n_permutations must be at least 1, got {n_permutations}")
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"confidence_level must lie in (0, 1), got {confidence_level}")
    if n_min < 3:
        raise ConfigError(f"n_min must be at least 3, got {n_min}", hint="Spearman ρ needs 3 or more pairs")


def _plan_cells(x: np.ndarray, y: np.ndarray, n_min: int) -> tuple[list[_Cell], list[_Group]]:
    """Complete pairs, reason codes and mask groups for every cell, metric-major."""
    fx, fy = np.isfinite(x), np.isfinite(y)
    cells: list[_Cell] = []
    groups: list[_Group] = []
    by_key: dict[bytes, int] = {}
    for i in range(x.shape[1]):
        for j in range(y.shape[1]):
            cell = _Cell(metric=i, target=j)
            mask = fx[:, i] & fy[:, j]
            cell.n = int(mask.sum())
            if cell.n < n_min:
                cell.reason.append("too_few")
            if cell.n > 0 and (np.ptp(x[mask, i]) == 0 or np.ptp(y[mask, j]) == 0):
                cell.reason.append("constant")
            if not cell.reason:
                key = np.packbits(mask).tobytes()
                g = by_key.get(key)
                if g is None:
                    g = by_key[key] = len(groups)
                    groups.append(_Group(rows=np.flatnonzero(mask)))
                groups[g].cells.append(len(cells))
                cell.group = g
            cells.append(cell)
    return cells, groups


def _group_block(
    x: np.ndarray, y: np.ndarray, cells: list[_Cell], group: _Group
) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray]]:
    """Sub-matrix (rows of the group; its metric columns then target columns) and cell pair indices."""
    mets = sorted({cells[c].metric for c in group.cells})
    tars = sorted({cells[c].target for c in group.cells})
    mpos = {m: k for k, m in enumerate(mets)}
    tpos = {t: k for k, t in enumerate(tars)}
    block = np.concatenate((x[np.ix_(group.rows, mets)], y[np.ix_(group.rows, tars)]), axis=1)
    ix = np.array([mpos[cells[c].metric] for c in group.cells], dtype=np.intp)
    iy = np.array([tpos[cells[c].target] for c in group.cells], dtype=np.intp)
    return block, len(mets), (ix, iy)


def _seed_root(seed: int | None) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed)


def _child_rng(root: np.random.SeedSequence, kind: int, index: int) -> np.random.Generator:
    """Independent, reproducible stream per purpose (0 = bootstrap group, 1 = permutation cell)."""
    return np.random.default_rng(np.random.SeedSequence(entropy=root.entropy, spawn_key=(kind, index)))


# --------------------------------------------------------------------------------------------------
# Per-cell pieces
# --------------------------------------------------------------------------------------------------


def _observed(block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Observed ρ of the pairs, as ``spearmanr`` computes it (Pearson on average ranks)."""
    ranks = stats.rankdata(block, axis=0)
    ranks -= ranks.mean(axis=0)
    rx, ry = ranks[:, :n_x], ranks[:, n_x:]
    cross = rx.T @ ry
    norm_x = np.sqrt(np.einsum("nk,nk->k", rx, rx))
    norm_y = np.sqrt(np.einsum("nk,nk->k", ry, ry))
    ix, iy = pairs
    return np.clip(cross[ix, iy] / (norm_x[ix] * norm_y[iy]), -1.0, 1.0)


def _permutation_p(xv: np.ndarray, yv: np.ndarray, n_permutations: int, rng: np.random.Generator) -> float:
    """Two-sided permutation p shuffling one side (``permutation_type="pairings"``, §1.3).

    Ranks of a permuted sample are the permuted ranks, so the statistic permutes the centred ranks of
    x and correlates them with the fixed centred ranks of y.
    """
    rx = stats.rankdata(xv)
    rx -= rx.mean()
    ry = stats.rankdata(yv)
    ry -= ry.mean()
    scale = math.sqrt(float(rx @ rx) * float(ry @ ry))

    def statistic(rxp: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(rxp * ry, axis=axis) / scale

    res = stats.permutation_test(
        (rx,),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=n_permutations,
        alternative="two-sided",
        rng=rng,
    )
    return float(res.pvalue)


def _quantiles(theta_b: np.ndarray, levels: tuple[float, float]) -> tuple[float, float]:
    lo, hi = np.quantile(theta_b, levels)  # "linear", as scipy.stats.quantile
    return float(lo), float(hi)


def _vectorized_cis(
    x: np.ndarray,
    y: np.ndarray,
    cells: list[_Cell],
    groups: list[_Group],
    ci: str,
    n_resamples: int,
    confidence_level: float,
    root: np.random.SeedSequence,
) -> None:
    alpha = (1.0 - confidence_level) / 2.0
    for g, group in enumerate(groups):
        block, n_x, pairs = _group_block(x, y, cells, group)
        with _single_threaded_blas():
            theta_b = _bootstrap_block(block, n_x, pairs, n_resamples, _child_rng(root, 0, g))
            theta_jack = _jackknife_block(block, n_x, pairs) if ci == "bca" else None
        for k, c in enumerate(group.cells):
            cell = cells[c]
            dist = theta_b[k]
            dist = dist[np.isfinite(dist)]  # a resample with a constant side has no ρ; drop it
            if dist.size < 2:
                cell.ci_method = "none"
                continue
            levels = (alpha, 1.0 - alpha)
            method = "percentile"
            if ci == "bca":
                assert theta_jack is not None
                jack = theta_jack[k]
                a1, a2 = _bca_levels(cell.rho, dist, jack, alpha) if np.all(np.isfinite(jack)) else (np.nan, np.nan)
                if np.isfinite(a1) and np.isfinite(a2):
                    levels, method = (a1, a2), "bca"
                else:
                    cell.reason.append("ci_percentile")
            cell.ci_low, cell.ci_high = _quantiles(dist, levels)
            cell.ci_method = method


def _scipy_cis(
    x: np.ndarray,
    y: np.ndarray,
    cells: list[_Cell],
    groups: list[_Group],
    ci: str,
    n_resamples: int,
    confidence_level: float,
    root: np.random.SeedSequence,
) -> None:
    """Reference path: :func:`scipy.stats.bootstrap` per cell (same seeds, hence same resamples)."""
    for g, group in enumerate(groups):
        for c in group.cells:
            cell = cells[c]
            xv, yv = x[group.rows, cell.metric], y[group.rows, cell.target]
            method = ci
            with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
                warnings.simplefilter("ignore", stats.DegenerateDataWarning)
                res = stats.bootstrap(
                    (xv, yv),
                    spearman_vec,
                    paired=True,
                    vectorized=True,
                    n_resamples=n_resamples,
                    confidence_level=confidence_level,
                    method="BCa" if ci == "bca" else "percentile",
                    rng=_child_rng(root, 0, g),
                )
                lo, hi = res.confidence_interval
                if ci == "bca" and not (np.isfinite(lo) and np.isfinite(hi)):
                    res = stats.bootstrap(
                        (xv, yv),
                        spearman_vec,
                        paired=True,
                        vectorized=True,
                        n_resamples=n_resamples,
                        confidence_level=confidence_level,
                        method="percentile",
                        rng=_child_rng(root, 0, g),
                    )
                    lo, hi = res.confidence_interval
                    method = "percentile"
                    cell.reason.append("ci_percentile")
            cell.ci_low, cell.ci_high = float(lo), float(hi)
            cell.ci_method = method if np.isfinite(lo) and np.isfinite(hi) else "none"


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def spearman_matrix(
    data: pl.DataFrame,
    metrics: list[str],
    targets: list[str],
    *,
    adjust: AdjustMethod = "bh",
    ci: CIMethod = "bca",
    n_resamples: int = 9999,
    confidence_level: float = 0.95,
    seed: int | None = 0,
    permutation: PermutationMode = "auto",
    n_permutations: int = 9999,
    n_min: int = 10,
    stars_on: Literal["p_adj", "p"] = "p_adj",
    ci_backend: CIBackend = "vectorized",
) -> pl.DataFrame:
    """Spearman ρ of every metric against every target, as a tidy table (``statistics.md`` §1).

    Per cell the complete pairs are ``isfinite(x) & isfinite(y)``; ``n`` counts them. A cell with
    ``n < n_min`` gets reason ``too_few``, one with a constant side ``constant``; such cells have NaN
    ρ, p and CI, no stars, and are left out of the multiplicity family. ρ is Pearson on average ranks
    (equal to :func:`scipy.stats.spearmanr` to 1e-12). ``p`` is the asymptotic t p, or with
    ``permutation="auto"`` a seeded permutation p (pairings, ``n_permutations``) when ``n < 50``;
    ``"always"``/``"never"`` force one or the other. ``p_adj`` adjusts all defined cells of the whole
    matrix together (``adjust`` = ``bh``, ``holm``, ``by`` or ``none``); ``stars`` apply to the column
    named by ``stars_on``.

    Confidence intervals: ``ci="bca"`` (default) is a paired, seeded BCa bootstrap; when BCa
    degenerates it falls back to the percentile interval and adds reason ``ci_percentile``.
    ``"percentile"`` and ``"fisher"`` (Bonett–Wright SE, see :func:`fisher_ci`) and ``"none"`` are
    also available. ``ci_backend="vectorized"`` computes all cells of a complete-pair mask together
    (see the module docstring); ``"scipy"`` calls :func:`scipy.stats.bootstrap` per cell with the same
    resample stream and serves as the reference. Resamples whose ρ is undefined (one side constant)
    are dropped from the vectorised distribution; scipy would instead return NaN.

    Validation of the vectorised BCa against ``scipy.stats.bootstrap(method="BCa")`` (measured with
    scipy 1.17.1, numpy 2.4): with the same seed both paths draw the same resamples and the endpoints
    agree to 2e-16 (480 cells, jackknife acceleration included); with independent streams, 9,999
    resamples and n = 200 (continuous, tied, binary and 0/0.5/1 columns, 9 cells) the endpoints
    differed by 0.003 on average and 0.007 at most. Speed, 40 metrics × 12 targets × 1,655 rows,
    2,000 resamples, 2 shared CPU cores: 13 s wall / 9 s CPU vectorised against 595 s wall / 488 s
    CPU with ``ci_backend="scipy"`` (≈ 45× wall, 54× CPU), identical intervals. The jackknife costs
    as much as n resamples (O(n²) per cell block), so for n well above 10,000 prefer
    ``ci="percentile"``.

    Output columns: ``metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason,
    p_method, ci_method``; one row per (metric, target), metric-major in the given order.

    Example:
        >>> df = pl.DataFrame({"len": [3.0, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], "q": [1.0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1]})
        >>> t = spearman_matrix(df, ["len"], ["q"], ci="fisher", permutation="never")
        >>> round(t["rho"][0], 4), t["n"][0], t["reason"][0]
        (0.8022, 12, '')
    """
    metrics = _check_names(metrics, "metric")
    targets = _check_names(targets, "target")
    _validate_options(adjust, ci, permutation, stars_on, ci_backend, n_resamples, n_permutations, confidence_level, n_min)
    require_columns(data, list(dict.fromkeys(metrics + targets)), source="correlation input")
    x = _numeric_matrix(data, metrics, "metric")
    y = _numeric_matrix(data, targets, "target")
    cells, groups = _plan_cells(x, y, n_min)
    root = _seed_root(seed)

    for group in groups:
        block, n_x, pairs = _group_block(x, y, cells, group)
        rho = _observed(block, n_x, pairs)
        for k, c in enumerate(group.cells):
            cells[c].rho = float(rho[k])

    for idx, cell in enumerate(cells):
        if not cell.defined:
            continue
        use_perm = permutation == "always" or (permutation == "auto" and cell.n < PERMUTATION_N_BELOW)
        if use_perm:
            rows = groups[cell.group].rows
            cell.p = _permutation_p(x[rows, cell.metric], y[rows, cell.target], n_permutations, _child_rng(root, 1, idx))
            cell.p_method = "permutation"
        else:
            cell.p = float(spearman_asymptotic_p(cell.rho, cell.n))
            cell.p_method = "asymptotic"

    if ci == "fisher":
        for cell in cells:
            if cell.defined:
                cell.ci_low, cell.ci_high, _ = fisher_ci(cell.rho, cell.n, confidence_level)
                cell.ci_method = "fisher" if np.isfinite(cell.ci_low) else "none"
    elif ci in ("bca", "percentile"):
        compute = _vectorized_cis if ci_backend == "vectorized" else _scipy_cis
        compute(x, y, cells, groups, ci, n_resamples, confidence_level, root)
    else:
        for cell in cells:
            if cell.defined:
                cell.ci_method = "none"

    p_raw = np.array([cell.p for cell in cells], dtype=float)
    p_adj = adjust_pvalues(p_raw, adjust)
    starred = p_adj if stars_on == "p_adj" else p_raw
    return pl.DataFrame(
        {
            "metric": [metrics[c.metric] for c in cells],
            "target": [targets[c.target] for c in cells],
            "n": [c.n for c in cells],
            "rho": [c.rho for c in cells],
            "ci_low": [c.ci_low for c in cells],
            "ci_high": [c.ci_high for c in cells],
            "p": p_raw,
            "p_adj": p_adj,
            "adjust": [adjust] * len(cells),
            "stars": [significance_stars(v) for v in starred],
            "reason": [";".join(c.reason) for c in cells],
            "p_method": [c.p_method for c in cells],
            "ci_method": [c.ci_method for c in cells],
        },
        schema={
            "metric": pl.String,
            "target": pl.String,
            "n": pl.Int64,
            "rho": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "p": pl.Float64,
            "p_adj": pl.Float64,
            "adjust": pl.String,
            "stars": pl.String,
            "reason": pl.String,
            "p_method": pl.String,
            "ci_method": pl.String,
        },
    )


def rho_matrix(table: pl.DataFrame, value: str = "rho") -> pl.DataFrame:
    """Pivot a :func:`spearman_matrix` table to wide form: a ``metric`` column, then one column per target.

    Metric rows and target columns keep their first-appearance order. ``value`` is any column of the
    table (``rho``, ``p_adj``, ``stars``, ...).

    Example:
        >>> t = pl.DataFrame({"metric": ["a", "a"], "target": ["y", "x"], "rho": [0.1, 0.2]})
        >>> rho_matrix(t).columns
        ['metric', 'y', 'x']
    """
    require_columns(table, ["metric", "target", value], source="correlation table", option="--value")
    if table.select(pl.struct("metric", "target").is_duplicated().any()).item():
        raise InputSchemaError("correlation table has duplicate (metric, target) rows")
    metrics = table.get_column("metric").unique(maintain_order=True).to_list()
    targets = table.get_column("target").unique(maintain_order=True).to_list()
    if "metric" in targets:
        raise InputSchemaError("a target is named 'metric', which clashes with the row label column")
    wide = table.pivot(on="target", index="metric", values=value, aggregate_function=None)
    order = pl.DataFrame({"metric": metrics}, schema={"metric": table.schema["metric"]})
    wide = order.join(wide, on="metric", how="left", maintain_order="left")
    for t in targets:
        if t not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=table.schema[value]).alias(t))
    return wide.select(["metric", *targets])


def summarize_correlations(table: pl.DataFrame, top: int = 5) -> str:
    """Short text summary of a :func:`spearman_matrix` table: counts, then the ``top`` largest |ρ|.

    Example:
        >>> t = pl.DataFrame({"metric": ["a", "b"], "target": ["y", "y"], "n": [40, 40], "rho": [0.5, None],
        ...                   "ci_low": [0.2, None], "ci_high": [0.7, None], "p": [0.001, None],
        ...                   "p_adj": [0.001, None], "adjust": ["bh", "bh"], "stars": ["**", ""],
        ...                   "reason": ["", "constant"]})
        >>> print(summarize_correlations(t))
        1 of 2 cells defined (constant: 1); 1 with p_adj < .05 (bh)
          a ~ y: ρ = .50 [.20, .70], n = 40, p_adj = 0.001 **
    """
    require_columns(table, list(RESULT_COLUMNS), source="correlation table")
    defined = table.filter(pl.col("rho").is_not_null() & pl.col("rho").is_not_nan())
    adjust = table.get_column("adjust")[0] if table.height else "none"
    n_sig = int(defined.filter(pl.col("p_adj") < 0.05).height)
    codes: dict[str, int] = {}
    for reason in table.get_column("reason").to_list():
        for code in (reason or "").split(";"):
            if code:
                codes[code] = codes.get(code, 0) + 1
    head = f"{defined.height:,} of {table.height:,} cells defined"
    if codes:
        head += " (" + ", ".join(f"{k}: {v:,}" for k, v in codes.items()) + ")"
    head += f"; {n_sig:,} with p_adj < .05 ({adjust})"
    lines = [head]
    best = defined.with_columns(pl.col("rho").abs().alias("_abs")).sort("_abs", descending=True, maintain_order=True)
    for row in best.head(top).iter_rows(named=True):
        ci = ""
        if row["ci_low"] is not None and np.isfinite(row["ci_low"]):
            ci = f" [{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]"
        lines.append(
            f"  {row['metric']} ~ {row['target']}: ρ = {_fmt(row['rho'])}{ci}, n = {row['n']:,}, "
            f"p_adj = {row['p_adj']:.2g} {row['stars']}".rstrip()
        )
    return "\n".join(lines)


def _fmt(v: float) -> str:
    text = f"{abs(v):.2f}"
    text = text[1:] if text.startswith("0.") else text
    return ("-" if v < 0 else "") + text
