"""Partial Spearman correlation: rank, residualise on the control ranks, Pearson of residuals (``docs/statistics.md#length-controlled-validity-control``).

Per cell with k controls on the n complete rows:

1. rank the metric x, the target y and every control z_j (average ranks for ties);
2. residualise r_x and r_y on ``Z = [1, r_z1, …, r_zk]`` by OLS: ``e = r − Z β̂``;
3. ``ρ = Pearson(e_x, e_y)``;
4. two-sided p from ``t = ρ·sqrt(df/(1 − ρ²))`` with ``df = n − 2 − k``.

This is the partial correlation of the rank variables, ``−P_xy/sqrt(P_xx P_yy)`` for the inverse P of
their covariance matrix, which is how ``pingouin.partial_corr(method="spearman")`` computes it. A
residual that is numerically constant (``ptp(e) ≤ 1e-12·ptp(r)``, e.g. when the metric *is* the
control) makes ρ undefined; pingouin instead silently returns the raw ρ there.

The bootstrap pieces work on integer row weights, like :mod:`tutormetrics.stats.bootstrap`: a
resample is a weight vector, ranks are re-computed under the weights (re-ranking per resample, as the
``docs/statistics.md#partial-definition`` requires), and the residualisation is a weighted Gram–Schmidt of the centred control ranks, so
every cell of a complete-row group comes out of a few batched products.

Example (the worked example of docs/statistics.md#partial-example):
    >>> z = [8, 12, 15, 19, 23, 27, 30, 34, 41, 47, 52, 60]
    >>> x = [0.91, 0.88, 0.93, 0.80, 0.84, 0.79, 0.83, 0.74, 0.77, 0.70, 0.73, 0.66]
    >>> y = [0, 1, 0, 1, 1, 0, 2, 1, 2, 1, 2, 2]
    >>> rho, p = partial_spearman(x, y, z)
    >>> round(rho, 7), round(p, 7)
    (0.3282452, 0.3243738)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from tutormetrics.stats.bootstrap import (
    _chunk_size,
    _rank_plan,
    _weighted_centred_ranks,
    jackknife_weights,
    n_units,
    resample_weights,
)

#: ``ptp(e) ≤ RESIDUAL_RTOL·ptp(r)`` marks a residual vector as constant (docs/statistics.md#partial-reasons).
RESIDUAL_RTOL = 1e-12
#: The bootstrap's equivalent on sums of squares (``ss_resid ≤ 1e-9·ss_rank``, i.e. R² > 1 − 1e-9).
_SS_RTOL = 1e-9


def residualize(r: np.ndarray, z: np.ndarray) -> np.ndarray:
    """OLS residuals of the columns of ``r`` (n × m) on ``[1, z]`` (z: n × k): ``e = r − Z β̂``.

    Example:
        >>> residualize(np.array([[1.0], [2.0], [4.0]]), np.array([[1.0], [2.0], [3.0]])).round(4).ravel().tolist()
        [0.1667, -0.3333, 0.1667]
    """
    r = np.asarray(r, dtype=float)
    z = np.asarray(z, dtype=float).reshape(r.shape[0], -1)
    design = np.column_stack((np.ones(r.shape[0]), z))
    beta, *_ = np.linalg.lstsq(design, r, rcond=None)
    return r - design @ beta


def residual_is_constant(e: np.ndarray, r: np.ndarray) -> bool:
    """``ptp(e) ≤ 1e-12·ptp(r)``: the controls reproduce ``r`` (its residual carries no information).

    Example:
        >>> residual_is_constant(np.array([1e-16, -1e-16]), np.array([1.0, 2.0]))
        True
    """
    return bool(np.ptp(e) <= RESIDUAL_RTOL * np.ptp(r))


def partial_t_p(rho: float | np.ndarray, df: int | np.ndarray) -> np.ndarray:
    """Two-sided p of a partial correlation: ``t = ρ·sqrt(df/(1 − ρ²))`` on ``df`` degrees of freedom.

    Example:
        >>> round(float(partial_t_p(0.3282452, 9)), 6)
        0.324374
    """
    rho = np.asarray(rho, dtype=float)
    df = np.asarray(df, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt((df / ((1.0 + rho) * (1.0 - rho))).clip(0))
    return 2.0 * special.stdtr(df, -np.abs(t))


def partial_spearman(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, z: Sequence[float] | np.ndarray
) -> tuple[float, float]:
    """Partial Spearman ρ of x and y controlling for the column(s) of z, and its t p (df = n − 2 − k).

    All inputs must be finite and of equal length; ``z`` is a vector (one control) or n × k. NaN ρ and
    p when x, y or a residual is constant, or when df < 1.

    Args:
        x: (n,) first variable.
        y: (n,) second variable.
        z: (n,) control, or (n, k) controls.
    """
    xv, yv = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    zv = np.asarray(z, dtype=float).reshape(xv.size, -1)
    n, k = xv.size, zv.shape[1]
    nan = (float("nan"), float("nan"))
    if n - 2 - k < 1 or np.ptp(xv) == 0 or np.ptp(yv) == 0:
        return nan
    rxy = stats.rankdata(np.column_stack((xv, yv)), axis=0)
    e = residualize(rxy, stats.rankdata(zv, axis=0))
    if residual_is_constant(e[:, 0], rxy[:, 0]) or residual_is_constant(e[:, 1], rxy[:, 1]):
        return nan
    rho = float(np.clip(np.corrcoef(e[:, 0], e[:, 1])[0, 1], -1.0, 1.0))
    return rho, float(partial_t_p(rho, n - 2 - k))


def partial_observed_block(
    block: np.ndarray, n_x: int, n_ctrl: int, pairs: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Observed partial ρ of the requested pairs of one complete-row block, and a "residual constant" flag.

    ``block`` holds the metric columns, then the target columns, then the ``n_ctrl`` control columns
    (all finite). Returns ``(rho, constant)`` with one entry per pair.

    Args:
        block: (n, K) finite values: the metric columns, then the target columns, then the ``n_ctrl`` control columns.
        n_x: number of metric columns.
        n_ctrl: number of control columns (the last ones).
        pairs: ``(ix, iy)`` index arrays of the (metric, target) pairs; ``iy`` counts from the first target column.
    """
    ranks = stats.rankdata(block, axis=0)
    n_cols = block.shape[1] - n_ctrl
    r = ranks[:, :n_cols]
    e = residualize(r, ranks[:, n_cols:])
    const = np.ptp(e, axis=0) <= RESIDUAL_RTOL * np.ptp(r, axis=0)
    e = e - e.mean(axis=0)
    ex, ey = e[:, :n_x], e[:, n_x:]
    ix, iy = pairs
    cross = np.einsum("ni,ni->i", ex[:, ix], ey[:, iy])
    norm = np.sqrt(np.einsum("nk,nk->k", e, e))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.clip(cross / (norm[ix] * norm[n_x + iy]), -1.0, 1.0)
    bad = const[ix] | const[n_x + iy]
    rho[bad] = np.nan
    return rho, bad


def _weighted_partial_block(
    weights: np.ndarray, plan: object, n_x: int, n_ctrl: int, pairs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Partial ρ of the pairs for each weight row (c, n_pairs); NaN where a residual is constant.

    Ranks are re-computed under the weights; the centred control ranks are orthonormalised under the
    weighted inner product ``⟨a, b⟩ = Σ w a b`` (Gram–Schmidt), and with ``P = ⟨v, q⟩``:
    ``⟨e_x, e_y⟩ = ⟨x, y⟩ − P_x·P_y``, ``‖e‖² = ‖v‖² − ‖P_v‖²``.
    """
    r = _weighted_centred_ranks(weights, plan)  # (c, K, n), centred under the weights (×2)
    wf = weights.astype(np.float64)[:, None, :]
    n_cols = r.shape[1] - n_ctrl
    v, zc = r[:, :n_cols, :], r[:, n_cols:, :]
    q = np.empty_like(zc)
    for j in range(n_ctrl):
        u = zc[:, j, :].copy()
        for i in range(j):
            u -= np.einsum("cn,cn->c", u * wf[:, 0, :], q[:, i, :])[:, None] * q[:, i, :]
        norm2 = np.einsum("cn,cn->c", u * wf[:, 0, :], u)
        scale = np.einsum("cn,cn->c", zc[:, j, :] * wf[:, 0, :], zc[:, j, :])
        # A control that is constant in this resample, or a combination of earlier ones, adds no
        # direction: it is skipped, which is what the least-squares (pseudo-inverse) fit does.
        keep = norm2 > _SS_RTOL * scale
        with np.errstate(invalid="ignore", divide="ignore"):
            q[:, j, :] = np.where(keep[:, None], u / np.sqrt(np.where(keep, norm2, 1.0))[:, None], 0.0)
    wv = v * wf
    proj = np.matmul(wv, np.ascontiguousarray(q.transpose(0, 2, 1)))  # (c, n_cols, k)
    raw_ss = np.einsum("ckn,ckn->ck", wv, v)
    ss = raw_ss - np.einsum("ckj,ckj->ck", proj, proj)
    ix, iy = pairs
    wx = wv[:, :n_x, :]
    cross_all = np.matmul(wx, np.ascontiguousarray(v[:, n_x:, :].transpose(0, 2, 1)))  # (c, n_x, n_y)
    cross = cross_all[:, ix, iy] - np.einsum("cpj,cpj->cp", proj[:, ix, :], proj[:, n_x + iy, :])
    # A residual is constant when its sum of squares vanishes relative to the rank's own. ``ss`` is a
    # difference of two sums, so its rounding error is ~1e-16·raw_ss: the cut sits well above that.
    tiny = ss <= _SS_RTOL * raw_ss
    ss = np.where(tiny, np.nan, ss)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cross / np.sqrt(ss[:, ix] * ss[:, n_x + iy])
    return np.clip(rho, -1.0, 1.0)


def bootstrap_partial_block(
    block: np.ndarray,
    n_x: int,
    n_ctrl: int,
    pairs: tuple[np.ndarray, np.ndarray],
    n_resamples: int,
    rng: np.random.Generator,
    clusters: np.ndarray | None = None,
) -> np.ndarray:
    """Bootstrap distribution (n_pairs, B) of partial ρ; paired row resamples drawn like scipy does,
    or cluster resamples (:func:`~tutormetrics.stats.bootstrap.resample_weights`).

    Args:
        block: (n, K) finite values: the metric columns, then the target columns, then the ``n_ctrl`` control columns.
        n_x: number of metric columns.
        n_ctrl: number of control columns (the last ones).
        pairs: ``(ix, iy)`` index arrays of the (metric, target) pairs; ``iy`` counts from the first target column.
        n_resamples: number of bootstrap resamples B.
        rng: generator of the resamples (same stream as ``scipy.stats.bootstrap(paired=True)``).
        clusters: cluster code 0…G−1 per row for cluster resamples; ``None`` resamples rows.
    """
    n = block.shape[0]
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, n_resamples))
    step = _chunk_size(n, block.shape[1] + n_ctrl, n_resamples)
    for start in range(0, n_resamples, step):
        c = min(step, n_resamples - start)
        weights = resample_weights(rng, c, n, clusters)  # same stream as scipy.stats.bootstrap(paired=True)
        out[:, start : start + c] = _weighted_partial_block(weights, plan, n_x, n_ctrl, pairs).T
    return out


def jackknife_partial_block(
    block: np.ndarray, n_x: int, n_ctrl: int, pairs: tuple[np.ndarray, np.ndarray], clusters: np.ndarray | None = None
) -> np.ndarray:
    """Leave-one-out partial ρ (n_pairs, units) for every row (weights ``1 − e_i``) or every cluster.

    Args:
        block: (n, K) finite values: the metric columns, then the target columns, then the ``n_ctrl`` control columns.
        n_x: number of metric columns.
        n_ctrl: number of control columns (the last ones).
        pairs: ``(ix, iy)`` index arrays of the (metric, target) pairs; ``iy`` counts from the first target column.
        clusters: cluster code 0…G−1 per row to leave out whole clusters; ``None`` leaves out rows.
    """
    n = block.shape[0]
    m = n_units(n, clusters)
    plan = _rank_plan(block)
    out = np.empty((pairs[0].size, m))
    step = _chunk_size(n, block.shape[1] + n_ctrl, m)
    for start in range(0, m, step):
        c = min(step, m - start)
        weights = jackknife_weights(start, c, n, clusters)
        out[:, start : start + c] = _weighted_partial_block(weights, plan, n_x, n_ctrl, pairs).T
    return out
