"""Spearman correlation matrix of metrics against rubric targets (``statistics.md`` §1).

The core entry point is :func:`spearman_matrix`, which returns a tidy polars table with one row per
(metric, target) cell: ``metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason``
followed by the diagnostics ``p_method, ci_method``.

Bootstrap confidence intervals come from :mod:`tutormetrics.stats.bootstrap` (all cells that share a
complete-pair mask in one vectorised pass); p-values are adjusted over the whole matrix by
:func:`tutormetrics.stats.adjust_pvalues`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.validity.join import JoinReport, join_targets, metric_columns
from tutormetrics.stats.bootstrap import (
    bca_levels,
    bootstrap_spearman_block,
    child_rng,
    jackknife_spearman_block,
    seed_root,
    single_threaded_blas,
)
from tutormetrics.stats.ranks import DEFAULT_TIE_DIGITS, tie_key
from tutormetrics.stats.correlation import fisher_ci, spearman_asymptotic_p, spearman_permutation_p, spearman_vec
from tutormetrics.stats.partial import (
    bootstrap_partial_block,
    jackknife_partial_block,
    partial_observed_block,
    partial_t_p,
)
from tutormetrics.stats.multiplicity import ADJUST_METHODS, AdjustMethod, adjust_pvalues, significance_stars

CIMethod = Literal["bca", "percentile", "fisher", "none"]
PermutationMode = Literal["auto", "always", "never"]
CIBackend = Literal["vectorized", "scipy"]

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
#: Added after ``reason`` when the table holds partial rows (``richness.md`` §1.3): the control
#: names joined by ``,``, empty on raw rows.
CONTROL_COLUMN = "control"
#: Added after ``reason`` (and ``control``) with cluster intervals (``predictive.md`` §2.3).
CLUSTER_COLUMN = "n_clusters"

#: Below this many complete pairs, ``permutation="auto"`` uses a permutation p (§1.3).
PERMUTATION_N_BELOW = 50


# --------------------------------------------------------------------------------------------------
# Small pure helpers
# --------------------------------------------------------------------------------------------------






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


def _plan_cells(
    x: np.ndarray, y: np.ndarray, n_min: int, ctrl: np.ndarray | None = None
) -> tuple[list[_Cell], list[_Group]]:
    """Complete rows, reason codes and mask groups for every cell, metric-major.

    With controls (``ctrl``, n × k) a row is complete when the metric, the target and every control
    are finite, and ``too_few`` also covers ``df = n − 2 − k < 1`` (``richness.md`` §1.2).
    """
    fx, fy = np.isfinite(x), np.isfinite(y)
    k = 0 if ctrl is None else ctrl.shape[1]
    if ctrl is not None:
        fx = fx & np.all(np.isfinite(ctrl), axis=1)[:, None]
    cells: list[_Cell] = []
    groups: list[_Group] = []
    by_key: dict[bytes, int] = {}
    for i in range(x.shape[1]):
        for j in range(y.shape[1]):
            cell = _Cell(metric=i, target=j)
            mask = fx[:, i] & fy[:, j]
            cell.n = int(mask.sum())
            if cell.n < n_min or cell.n - 2 - k < 1:
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
    x: np.ndarray, y: np.ndarray, cells: list[_Cell], group: _Group, ctrl: np.ndarray | None = None
) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray]]:
    """Sub-matrix (rows of the group; its metric columns, target columns, then any controls) and cell pair indices."""
    mets = sorted({cells[c].metric for c in group.cells})
    tars = sorted({cells[c].target for c in group.cells})
    mpos = {m: k for k, m in enumerate(mets)}
    tpos = {t: k for k, t in enumerate(tars)}
    parts = [x[np.ix_(group.rows, mets)], y[np.ix_(group.rows, tars)]]
    if ctrl is not None:
        parts.append(ctrl[group.rows])
    block = np.concatenate(parts, axis=1)
    ix = np.array([mpos[cells[c].metric] for c in group.cells], dtype=np.intp)
    iy = np.array([tpos[cells[c].target] for c in group.cells], dtype=np.intp)
    return block, len(mets), (ix, iy)






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
    ctrl: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    min_clusters: int = 10,
) -> None:
    alpha = (1.0 - confidence_level) / 2.0
    k_ctrl = 0 if ctrl is None else ctrl.shape[1]
    prefix = "" if labels is None else "cluster_"
    for g, group in enumerate(groups):
        if not group.cells:
            continue
        clusters = None
        if labels is not None:
            _, clusters = np.unique(labels[group.rows], return_inverse=True)  # labels sorted as text
            clusters = clusters.ravel()
            if int(clusters.max()) + 1 < min_clusters:
                for c in group.cells:
                    cells[c].ci_method = "none"
                    cells[c].reason.append("too_few_clusters")
                continue
        block, n_x, pairs = _group_block(x, y, cells, group, ctrl)
        with single_threaded_blas():
            if k_ctrl:
                theta_b = bootstrap_partial_block(block, n_x, k_ctrl, pairs, n_resamples, child_rng(root, 0, g), clusters)
                theta_jack = jackknife_partial_block(block, n_x, k_ctrl, pairs, clusters) if ci == "bca" else None
            else:
                theta_b = bootstrap_spearman_block(block, n_x, pairs, n_resamples, child_rng(root, 0, g), clusters)
                theta_jack = jackknife_spearman_block(block, n_x, pairs, clusters) if ci == "bca" else None
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
                a1, a2 = bca_levels(cell.rho, dist, jack, alpha) if np.all(np.isfinite(jack)) else (np.nan, np.nan)
                if np.isfinite(a1) and np.isfinite(a2):
                    levels, method = (a1, a2), "bca"
                else:
                    cell.reason.append("ci_percentile")
            cell.ci_low, cell.ci_high = _quantiles(dist, levels)
            cell.ci_method = prefix + method


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
                    rng=child_rng(root, 0, g),
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
                        rng=child_rng(root, 0, g),
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
    control: Sequence[str] | None = None,
    tie_digits: int = DEFAULT_TIE_DIGITS,
    cluster: Sequence[object] | np.ndarray | pl.Series | None = None,
    min_clusters: int = 10,
) -> pl.DataFrame:
    """Spearman ρ of every metric against every target, as a tidy table (``statistics.md`` §1).

    Ties (``effects.md`` §2.5): metric, target and control values are ranked by their key
    ``float(format(x, ".12g"))`` (:func:`~tutormetrics.stats.ranks.tie_key`), so float noise ties;
    ``tie_digits`` changes 12 and ``tie_digits=0`` ranks the raw values.

    With ``control`` (column names of ``data``), every cell is instead the **partial** Spearman ρ
    controlling for those columns (``richness.md`` §1): complete rows need the controls finite too;
    the metric and target ranks are residualised on the control ranks (OLS with intercept) and ρ is
    the Pearson correlation of the residuals; ``p`` is the t p with ``df = n − 2 − k`` at every n
    (``p_method`` ``t``; no permutation p); the bootstrap re-ranks and re-residualises per resample;
    ``ci="fisher"`` uses ``n − 3 − k``. A residual that is numerically constant (the metric is
    reproduced by the controls, e.g. is one of them) gives reason ``constant``. The table gains a
    ``control`` column after ``reason`` (names joined by ``,``), and ``p_adj`` adjusts the partial
    cells as one family.

    With ``cluster`` (one label per row of ``data``, compared as text) the bootstrap resamples whole
    clusters (``predictive.md`` §2): the G clusters of a cell's rows sorted as text, draws
    ``integers(0, G, (B, G))``, BCa with the jackknife over clusters; ``ci_method`` reads
    ``cluster_bca``/``cluster_percentile``; fewer than ``min_clusters`` clusters give no interval
    (reason ``too_few_clusters``); a column ``n_clusters`` follows ``reason`` (and ``control``).
    ρ and p are unchanged; ``ci="fisher"`` is refused. A control that is missing, non-numeric, constant or also a target raises.
    :func:`correlate_with_targets` (``control=...``) puts raw and partial rows in one table.

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

    The vectorised path and ``scipy.stats.bootstrap`` agree to 2e-16 with the same seed (measured
    speed and agreement: ``benchmarks/RESULTS.md``). The jackknife costs as much as n resamples, so for
    n well above 10,000 prefer ``ci="percentile"``.

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
    controls = _check_controls(data, control, targets)
    _validate_options(adjust, ci, permutation, stars_on, ci_backend, n_resamples, n_permutations, confidence_level, n_min)
    if controls and ci_backend != "vectorized" and ci in ("bca", "percentile"):
        raise ConfigError("partial correlations have only the vectorized bootstrap", hint="use ci_backend='vectorized'")
    require_columns(data, list(dict.fromkeys(metrics + targets)), source="correlation input")
    if tie_digits < 0:
        raise ConfigError("tie_digits must be >= 0", hint="use 12 (default) or 0 for the raw values")
    x = tie_key(_numeric_matrix(data, metrics, "metric"), tie_digits)
    y = tie_key(_numeric_matrix(data, targets, "target"), tie_digits)
    ctrl = tie_key(_numeric_matrix(data, controls, "control"), tie_digits) if controls else None
    k_ctrl = len(controls)
    cells, groups = _plan_cells(x, y, n_min, ctrl)
    root = seed_root(seed)
    labels = _cluster_labels(cluster, data.height, ci, ci_backend)

    for group in groups:
        block, n_x, pairs = _group_block(x, y, cells, group, ctrl)
        if ctrl is None:
            rho = _observed(block, n_x, pairs)
        else:
            rho, constant = partial_observed_block(block, n_x, k_ctrl, pairs)
        for kk, c in enumerate(group.cells):
            cells[c].rho = float(rho[kk])
            if ctrl is not None and constant[kk]:  # the controls reproduce a side: no partial ρ
                cells[c].reason.append("constant")
                cells[c].group = -1
        group.cells = [c for c in group.cells if cells[c].defined]

    for idx, cell in enumerate(cells):
        if not cell.defined:
            continue
        if ctrl is not None:
            cell.p = float(partial_t_p(cell.rho, cell.n - 2 - k_ctrl))
            cell.p_method = "t"
            continue
        use_perm = permutation == "always" or (permutation == "auto" and cell.n < PERMUTATION_N_BELOW)
        if use_perm:
            rows = groups[cell.group].rows
            cell.p = spearman_permutation_p(x[rows, cell.metric], y[rows, cell.target], n_permutations, child_rng(root, 1, idx))
            cell.p_method = "permutation"
        else:
            cell.p = float(spearman_asymptotic_p(cell.rho, cell.n))
            cell.p_method = "asymptotic"

    if ci == "fisher":
        for cell in cells:
            if cell.defined:
                # n − 3 − k in the SE for a partial ρ (richness.md §1.1 step 6)
                cell.ci_low, cell.ci_high, _ = fisher_ci(cell.rho, cell.n - k_ctrl, confidence_level)
                cell.ci_method = "fisher" if np.isfinite(cell.ci_low) else "none"
    elif ci in ("bca", "percentile"):
        if ci_backend == "vectorized":
            _vectorized_cis(x, y, cells, groups, ci, n_resamples, confidence_level, root, ctrl, labels, min_clusters)
        else:
            _scipy_cis(x, y, cells, groups, ci, n_resamples, confidence_level, root)
    else:
        for cell in cells:
            if cell.defined:
                cell.ci_method = "none"

    p_raw = np.array([cell.p for cell in cells], dtype=float)
    p_adj = adjust_pvalues(p_raw, adjust)
    starred = p_adj if stars_on == "p_adj" else p_raw
    table = pl.DataFrame(
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
    if controls:
        at = table.columns.index("reason") + 1
        table = table.insert_column(at, pl.Series(CONTROL_COLUMN, [",".join(controls)] * table.height, dtype=pl.String))
    if labels is not None:
        at = table.columns.index(CONTROL_COLUMN if controls else "reason") + 1
        counts = _cell_clusters(x, y, ctrl, labels, cells)
        table = table.insert_column(at, pl.Series(CLUSTER_COLUMN, counts, dtype=pl.Int64))
    return table


def _cluster_labels(cluster: Any, n: int, ci: str, ci_backend: str) -> np.ndarray | None:
    """Cluster labels as text, checked: one per row, none empty; Fisher and the scipy path refused."""
    if cluster is None:
        return None
    if ci == "fisher":
        raise ConfigError("--ci fisher assumes independent rows; it cannot be combined with --cluster-col",
                          hint="use --ci bca (default) or percentile")  # fmt: skip
    if ci_backend != "vectorized":
        raise ConfigError("cluster intervals have only the vectorized bootstrap", hint="use ci_backend='vectorized'")
    values = cluster.to_list() if isinstance(cluster, pl.Series) else list(cluster)
    if len(values) != n:
        raise ConfigError(f"cluster has {len(values)} labels for {n} rows")
    empty = [i for i, v in enumerate(values) if v is None or (isinstance(v, float) and v != v) or str(v).strip() == ""]
    if empty:
        raise InputSchemaError(f"{len(empty):,} row(s) have an empty cluster label (first row {empty[0] + 1})",
                               hint="every row needs its cluster (dialogue) label")  # fmt: skip
    return np.asarray([str(v) for v in values], dtype=str)


def _cell_clusters(x: np.ndarray, y: np.ndarray, ctrl: np.ndarray | None, labels: np.ndarray, cells: list[_Cell]) -> list[int]:
    """Distinct clusters among each cell's complete rows."""
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    fx, fy = np.isfinite(x), np.isfinite(y)
    if ctrl is not None:
        fx = fx & np.all(np.isfinite(ctrl), axis=1)[:, None]
    out = []
    for cell in cells:
        mask = fx[:, cell.metric] & fy[:, cell.target]
        out.append(int(np.unique(codes[mask]).size))
    return out


def _check_controls(data: pl.DataFrame, control: Sequence[str] | None, targets: list[str]) -> list[str]:
    """Control names, checked: present, not a target, not duplicated, numeric and not constant."""
    if not control:
        return []
    if isinstance(control, str):
        control = [control]
    names = [c.strip() for c in control]
    if any(not c for c in names):
        raise ConfigError("empty control column name", hint="pass --control COLUMN, e.g. --control resp_words")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise ConfigError(f"duplicate control columns: {', '.join(dupes)}")
    clash = [c for c in names if c in targets]
    if clash:
        raise ConfigError(
            f"control column(s) {', '.join(map(repr, clash))} are also targets",
            hint="a control is a column of the metrics table held fixed; it cannot be a rating target",
        )
    require_columns(data, names, source="correlation input", option="--control")
    values = _numeric_matrix(data, names, "control")
    for j, name in enumerate(names):
        col = values[:, j]
        col = col[np.isfinite(col)]
        if col.size == 0:
            raise InputSchemaError(f"control column {name!r} has no finite values", hint="pick a numeric control such as resp_words")
        if np.ptp(col) == 0:
            raise InputSchemaError(
                f"control column {name!r} is constant ({col[0]:g} on every row)",
                hint="a constant control cannot explain anything; drop it or pick another",
            )
    return names


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
    parts = split_by_control(table)
    if len(parts) > 1 or "" not in parts:
        out = []
        for ctrl, sub in parts.items():
            out.append(("raw ρ: " if not ctrl else f"partial ρ controlling for {ctrl}: ") + _summarize_one(sub, top))
        return "\n".join(out)
    return _summarize_one(table, top)


def _summarize_one(table: pl.DataFrame, top: int) -> str:
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
        p_adj = row["p_adj"]  # empty for inherited ratings (datasets.md §6)
        p_text = f"p_adj = {p_adj:.2g} {row['stars']}" if p_adj is not None and np.isfinite(p_adj) else "no p"
        lines.append(f"  {row['metric']} ~ {row['target']}: ρ = {_fmt(row['rho'])}{ci}, n = {row['n']:,}, {p_text}".rstrip())
    return "\n".join(lines)


def _fmt(v: float) -> str:
    text = f"{abs(v):.2f}"
    text = text[1:] if text.startswith("0.") else text
    return ("-" if v < 0 else "") + text


@dataclass
class ValidityResult:
    table: pl.DataFrame  # metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason, ...
    joined: pl.DataFrame  # the metrics with every target column, one row per metric row
    report: JoinReport
    metric_cols: list[str]
    target_cols: list[str]


def correlate_with_targets(
    metrics: pl.DataFrame,
    targets: Sequence[pl.DataFrame],
    *,
    names: Sequence[str] | None = None,
    id_col: str = "exchange_id",
    metrics_cols: Sequence[str] | None = None,
    id_type: str = "str",
    control: Sequence[str] | None = None,
    cluster_col: str | None = None,
    **spearman_options: Any,
) -> ValidityResult:
    """Join ``targets`` onto ``metrics`` by id (reporting unmatched ids; ``id_type`` as in
    :func:`~tutormetrics.validity.join.join_targets`) and correlate every metric with every target.

    With ``control`` (columns of ``metrics``, e.g. ``["resp_words"]``) the table holds the raw rows
    (``control`` empty) and then the partial rows (``richness.md`` §1.3); ``p_adj`` adjusts within
    each value of ``control``. Control columns are carried into the join even when they are not
    among ``metrics_cols``.

    ``spearman_options`` go to :func:`~tutormetrics.validity.correlate.spearman_matrix`
    (``adjust``, ``ci``, ``n_resamples``, ``seed``, ``stars_on``, ...).
    """
    mcols = metric_columns(metrics, id_col=id_col, columns=list(metrics_cols) if metrics_cols else None)
    if cluster_col is not None:
        require_columns(metrics, [cluster_col], source="metrics", option="--cluster-col")
        mcols = [c for c in mcols if c != cluster_col]  # a cluster label is never a metric
        if not mcols:
            raise InputSchemaError("metrics: no metric column besides the cluster column")
    target_cols = [c for t in targets for c in t.columns if c != id_col]
    controls = list(dict.fromkeys(c.strip() for c in (control or [])))
    if controls:
        clash = [c for c in controls if c in target_cols]
        if clash:
            raise ConfigError(
                f"control column(s) {', '.join(map(repr, clash))} are also targets",
                hint="a control is a column of the metrics table held fixed; it cannot be a rating target",
            )
        require_columns(metrics, controls, source="metrics", option="--control")
    keep = [c for c in dict.fromkeys([*mcols, *controls, *([cluster_col] if cluster_col else [])]) if c != id_col]
    joined, report = join_targets(metrics.select(id_col, *keep), *targets, id_col=id_col, names=names, id_type=id_type)
    if cluster_col is not None:
        spearman_options["cluster"] = joined.get_column(cluster_col).cast(pl.String)
    table = spearman_matrix(joined, mcols, target_cols, **spearman_options)
    if controls:
        partial = spearman_matrix(joined, mcols, target_cols, control=controls, **spearman_options)
        raw = table.insert_column(
            table.columns.index("reason") + 1, pl.Series(CONTROL_COLUMN, [""] * table.height, dtype=pl.String)
        )
        table = pl.concat([raw, partial], how="vertical")
    return ValidityResult(table, joined, report, mcols, target_cols)


def split_by_control(table: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The rows of a correlation table per value of ``control`` (``""`` = raw), in order of appearance.

    A table without a ``control`` column is all raw.

    Example:
        >>> t = pl.DataFrame({"metric": ["a", "a"], "target": ["y", "y"], "control": ["", "resp_words"]})
        >>> list(split_by_control(t))
        ['', 'resp_words']
    """
    if CONTROL_COLUMN not in table.columns:
        return {"": table}
    col = pl.col(CONTROL_COLUMN).fill_null("")
    values = table.select(col).to_series().unique(maintain_order=True).to_list()
    return {v: table.filter(col == v) for v in values}
