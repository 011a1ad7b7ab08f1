"""The Spearman engine: one tidy row per (metric, target) cell (``docs/statistics.md#spearman-tables-validate``).

A cell is estimated by one strategy per kind, chosen once per table:

- :class:`RawSpearman`: ρ is Pearson on average ranks (``scipy.stats.spearmanr``); ``p`` the asymptotic t p, or a
  seeded permutation p below 50 pairs (``docs/statistics.md#p-values``);
- :class:`PartialSpearman`: ρ of the metric and target ranks residualised on the control ranks, ``p`` from t with
  ``df = n − 2 − k`` (``docs/statistics.md#length-controlled-validity-control``);

and its interval by one resampling strategy: :class:`RowResampling` (paired rows, as ``scipy.stats.bootstrap``) or
:class:`ClusterResampling` (whole clusters, ``docs/commands/predict.md#cluster-intervals-in-validate-and-run``).
Fisher-z intervals need no resampling; ``ci_backend="scipy"`` is the per-cell reference path.

Cells that share one complete-pair mask form a group and share one set of resamples. The seeds are keyed by
position, so a table's numbers depend only on its inputs, its options and the order of its columns: the bootstrap
of group ``g`` draws from ``child_rng(root, 0, g)`` (groups in order of first appearance, metric-major) and the
permutation p of cell ``i`` (metric-major index) from ``child_rng(root, 1, i)``
(``docs/statistics.md#the-engine-and-its-seeds``).

Example:
    >>> df = pl.DataFrame({"len": [3.0, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], "q": [1.0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1]})
    >>> t = spearman_matrix(df, ["len"], ["q"], SpearmanOptions(ci="fisher", permutation="never"))
    >>> round(t["rho"][0], 4), t["n"][0], t["ci_method"][0]
    (0.8022, 12, 'fisher')
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns
from tutormetrics.stats.bootstrap import (
    bca_levels,
    bootstrap_spearman_block,
    child_rng,
    jackknife_spearman_block,
    seed_root,
    single_threaded_blas,
)
from tutormetrics.stats.correlation import fisher_ci, spearman_asymptotic_p, spearman_permutation_p, spearman_vec
from tutormetrics.stats.multiplicity import adjust_pvalues, significance_stars
from tutormetrics.stats.partial import (
    bootstrap_partial_block,
    jackknife_partial_block,
    partial_observed_block,
    partial_t_p,
)
from tutormetrics.stats.ranks import tie_key
from tutormetrics.validity.join import refuse_control_targets
from tutormetrics.validity.options import CI_METHODS, PERMUTATION_MODES, STARS_ON, SpearmanOptions  # noqa: F401 - re-exported

CI_BACKENDS: tuple[str, ...] = ("vectorized", "scipy")

#: Tidy output columns in their fixed order (``docs/statistics.md#spearman-tables-validate``), then the diagnostics.
RESULT_COLUMNS: tuple[str, ...] = (
    "metric", "target", "n", "rho", "ci_low", "ci_high", "p", "p_adj", "adjust", "stars", "reason",
)  # fmt: skip
DIAGNOSTIC_COLUMNS: tuple[str, ...] = ("p_method", "ci_method")
#: Added after ``reason`` when the table holds partial rows: the control names joined by ``,``, empty on raw rows.
CONTROL_COLUMN = "control"
#: Added after ``reason`` (and ``control``) with cluster intervals: distinct clusters among a cell's rows.
CLUSTER_COLUMN = "n_clusters"

#: Below this many complete pairs, ``permutation="auto"`` uses a permutation p (``docs/statistics.md#p-values``).
PERMUTATION_N_BELOW = 50


def spearman_options(options: SpearmanOptions | None = None, **overrides: Any) -> SpearmanOptions:
    """``options`` (default :class:`SpearmanOptions`) with the fields named in ``overrides`` replaced.

    >>> spearman_options(SpearmanOptions(ci="none"), seed=3).seed
    3
    """
    base = options if options is not None else SpearmanOptions()
    return replace(base, **overrides) if overrides else base


# --------------------------------------------------------------------------------------------------
# Cells and their mask groups
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


@dataclass(frozen=True)
class _Matrices:
    """The tie-keyed metric (n × m), target (n × t) and control (n × k, or ``None``) values, nulls as NaN."""

    x: np.ndarray
    y: np.ndarray
    ctrl: np.ndarray | None

    def finite_x(self) -> np.ndarray:
        """Per row and metric: the metric and every control are finite."""
        fx = np.isfinite(self.x)
        return fx if self.ctrl is None else fx & np.all(np.isfinite(self.ctrl), axis=1)[:, None]

    def mask(self, cell: _Cell) -> np.ndarray:
        """The complete rows of one cell."""
        return self.finite_x()[:, cell.metric] & np.isfinite(self.y[:, cell.target])


def _plan_cells(m: _Matrices, n_min: int) -> tuple[list[_Cell], list[_Group]]:
    """Complete rows, reason codes and mask groups for every cell, metric-major.

    With controls a row is complete when the metric, the target and every control are finite, and ``too_few`` also
    covers ``df = n − 2 − k < 1`` (``docs/statistics.md#length-controlled-validity-control``).
    """
    fx, fy = m.finite_x(), np.isfinite(m.y)
    k = 0 if m.ctrl is None else m.ctrl.shape[1]
    cells: list[_Cell] = []
    groups: list[_Group] = []
    by_key: dict[bytes, int] = {}
    for i in range(m.x.shape[1]):
        for j in range(m.y.shape[1]):
            cell = _Cell(metric=i, target=j)
            mask = fx[:, i] & fy[:, j]
            cell.n = int(mask.sum())
            if cell.n < n_min or cell.n - 2 - k < 1:
                cell.reason.append("too_few")
            if cell.n > 0 and (np.ptp(m.x[mask, i]) == 0 or np.ptp(m.y[mask, j]) == 0):
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
    m: _Matrices, cells: list[_Cell], group: _Group
) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray]]:
    """Sub-matrix (rows of the group; its metric columns, target columns, then any controls) and cell pair indices."""
    mets = sorted({cells[c].metric for c in group.cells})
    tars = sorted({cells[c].target for c in group.cells})
    mpos = {v: k for k, v in enumerate(mets)}
    tpos = {v: k for k, v in enumerate(tars)}
    parts = [m.x[np.ix_(group.rows, mets)], m.y[np.ix_(group.rows, tars)]]
    if m.ctrl is not None:
        parts.append(m.ctrl[group.rows])
    block = np.concatenate(parts, axis=1)
    ix = np.array([mpos[cells[c].metric] for c in group.cells], dtype=np.intp)
    iy = np.array([tpos[cells[c].target] for c in group.cells], dtype=np.intp)
    return block, len(mets), (ix, iy)


# --------------------------------------------------------------------------------------------------
# Strategies: the estimate and p of a kind, the resampling of an interval
# --------------------------------------------------------------------------------------------------


class Estimator(Protocol):
    """One kind of cell: its point estimates per mask group, its p, and its bootstrap and jackknife replicates."""

    #: Number of controls (0 for raw ρ): the Fisher-z SE uses ``n − 3 − k``.
    k: int

    def observed(self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """ρ of each pair of one group's block, and whether it is undefined (a side the controls reproduce).

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
        """
        ...

    def p_value(self, cell: _Cell, index: int, rows: np.ndarray, m: _Matrices, root: np.random.SeedSequence) -> tuple[float, str]:
        """The cell's p and ``p_method``.

        Args:
            cell: The cell.
            index: The cell's index (its seed stream).
            rows: The cell's rows.
            m: The metric, target and control matrices.
            root: The root seed sequence.
        """
        ...

    def replicates(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], n_resamples: int,
        rng: np.random.Generator, clusters: np.ndarray | None,
    ) -> np.ndarray:  # fmt: skip
        """Bootstrap distribution (n_pairs, B).

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            n_resamples: B, the number of resamples.
            rng: The random generator.
            clusters: Cluster code per row; ``None``: rows are resampled.
        """
        ...

    def jackknife(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], clusters: np.ndarray | None
    ) -> np.ndarray:
        """Leave-one-unit-out estimates (n_pairs, units) for BCa.

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            clusters: Cluster code per row (leave one cluster out); ``None``: leave one row out.
        """
        ...


@dataclass(frozen=True)
class RawSpearman:
    """Spearman ρ; the asymptotic t p, or a seeded permutation p (``permutation``: auto below 50 pairs, always, never)."""

    permutation: str = "auto"
    n_permutations: int = 9999
    k: int = 0

    def observed(self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """ρ as ``spearmanr`` computes it (Pearson on average ranks); never undefined here (constants are planned out).

        Args:
            block: One group's rows × (metric, target) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
        """
        ranks = stats.rankdata(block, axis=0)
        ranks -= ranks.mean(axis=0)
        rx, ry = ranks[:, :n_x], ranks[:, n_x:]
        cross = rx.T @ ry
        norm_x = np.sqrt(np.einsum("nk,nk->k", rx, rx))
        norm_y = np.sqrt(np.einsum("nk,nk->k", ry, ry))
        ix, iy = pairs
        rho = np.clip(cross[ix, iy] / (norm_x[ix] * norm_y[iy]), -1.0, 1.0)
        return rho, np.zeros(rho.shape, dtype=bool)

    def p_value(self, cell: _Cell, index: int, rows: np.ndarray, m: _Matrices, root: np.random.SeedSequence) -> tuple[float, str]:
        """The cell's p and ``p_method``: a seeded permutation p (below 50 pairs with ``auto``), else asymptotic.

        Args:
            cell: The cell.
            index: The cell's index (its seed stream).
            rows: The cell's rows.
            m: The metric and target matrices.
            root: The root seed sequence.
        """
        if self.permutation == "always" or (self.permutation == "auto" and cell.n < PERMUTATION_N_BELOW):
            xv, yv = m.x[rows, cell.metric], m.y[rows, cell.target]
            return spearman_permutation_p(xv, yv, self.n_permutations, child_rng(root, 1, index)), "permutation"
        return float(spearman_asymptotic_p(cell.rho, cell.n)), "asymptotic"

    def replicates(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], n_resamples: int,
        rng: np.random.Generator, clusters: np.ndarray | None,
    ) -> np.ndarray:  # fmt: skip
        """Bootstrap distribution (n_pairs, B) of ρ.

        Args:
            block: One group's rows × (metric, target) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            n_resamples: B, the number of resamples.
            rng: The random generator.
            clusters: Cluster code per row; ``None``: rows are resampled.
        """
        return bootstrap_spearman_block(block, n_x, pairs, n_resamples, rng, clusters)

    def jackknife(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], clusters: np.ndarray | None
    ) -> np.ndarray:
        """Leave-one-unit-out estimates (n_pairs, units) of ρ for BCa.

        Args:
            block: One group's rows × (metric, target) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            clusters: Cluster code per row (leave one cluster out); ``None``: leave one row out.
        """
        return jackknife_spearman_block(block, n_x, pairs, clusters)


@dataclass(frozen=True)
class PartialSpearman:
    """Partial Spearman ρ given ``k`` controls (the last ``k`` columns of each block); p from t, ``df = n − 2 − k``."""

    k: int

    def observed(self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Partial ρ of each pair of one group's block, and whether it is undefined.

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
        """
        return partial_observed_block(block, n_x, self.k, pairs)

    def p_value(self, cell: _Cell, index: int, rows: np.ndarray, m: _Matrices, root: np.random.SeedSequence) -> tuple[float, str]:
        """The cell's p from t with ``df = n − 2 − k``, and ``p_method`` ``t``.

        Args:
            cell: The cell.
            index: The cell's index (unused: no seed).
            rows: The cell's rows (unused).
            m: The matrices (unused).
            root: The root seed sequence (unused).
        """
        return float(partial_t_p(cell.rho, cell.n - 2 - self.k)), "t"

    def replicates(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], n_resamples: int,
        rng: np.random.Generator, clusters: np.ndarray | None,
    ) -> np.ndarray:  # fmt: skip
        """Bootstrap distribution (n_pairs, B) of partial ρ.

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            n_resamples: B, the number of resamples.
            rng: The random generator.
            clusters: Cluster code per row; ``None``: rows are resampled.
        """
        return bootstrap_partial_block(block, n_x, self.k, pairs, n_resamples, rng, clusters)

    def jackknife(
        self, block: np.ndarray, n_x: int, pairs: tuple[np.ndarray, np.ndarray], clusters: np.ndarray | None
    ) -> np.ndarray:
        """Leave-one-unit-out estimates (n_pairs, units) of partial ρ for BCa.

        Args:
            block: One group's rows × (metric, target, control) columns.
            n_x: Number of metric columns of ``block``.
            pairs: (metric column, target column) of each cell.
            clusters: Cluster code per row (leave one cluster out); ``None``: leave one row out.
        """
        return jackknife_partial_block(block, n_x, self.k, pairs, clusters)


@dataclass(frozen=True)
class RowResampling:
    """Paired row resamples (the stream of ``scipy.stats.bootstrap(paired=True)``); ``ci_method`` ``bca``/``percentile``."""

    prefix: str = ""

    def units(self, rows: np.ndarray) -> tuple[np.ndarray | None, bool]:
        """The cluster code of each row of a group (``None``: rows are the units) and whether there are enough."""
        return None, True


@dataclass(frozen=True)
class ClusterResampling:
    """Whole clusters: the ``G`` clusters of a group's rows sorted as text, draws ``integers(0, G, (B, G))``, the
    jackknife over clusters; fewer than ``min_clusters`` give no interval. ``ci_method`` ``cluster_bca``/…"""

    labels: np.ndarray
    min_clusters: int = 10
    prefix: str = "cluster_"

    def units(self, rows: np.ndarray) -> tuple[np.ndarray | None, bool]:
        _, codes = np.unique(self.labels[rows], return_inverse=True)  # labels sorted as text
        codes = codes.ravel()
        return codes, int(codes.max()) + 1 >= self.min_clusters

    def counts(self, m: _Matrices, cells: list[_Cell]) -> list[int]:
        """Distinct clusters among each cell's complete rows (the ``n_clusters`` column)."""
        _, codes = np.unique(self.labels, return_inverse=True)
        codes = codes.ravel()
        fx, fy = m.finite_x(), np.isfinite(m.y)
        return [int(np.unique(codes[fx[:, c.metric] & fy[:, c.target]]).size) for c in cells]


Resampling = RowResampling | ClusterResampling


# --------------------------------------------------------------------------------------------------
# The steps of a table
# --------------------------------------------------------------------------------------------------


def _estimate(m: _Matrices, cells: list[_Cell], groups: list[_Group], estimator: Estimator) -> None:
    """ρ of every planned cell; a cell whose estimate is undefined (a residual the controls reproduce) leaves its group."""
    for group in groups:
        block, n_x, pairs = _group_block(m, cells, group)
        rho, undefined = estimator.observed(block, n_x, pairs)
        for kk, c in enumerate(group.cells):
            cells[c].rho = float(rho[kk])
            if undefined[kk]:
                cells[c].reason.append("constant")
                cells[c].group = -1
        group.cells = [c for c in group.cells if cells[c].defined]


def _fisher_intervals(cells: list[_Cell], k: int, confidence_level: float) -> None:
    for cell in cells:
        if cell.defined:  # n − 3 − k in the SE of a partial ρ
            cell.ci_low, cell.ci_high, _ = fisher_ci(cell.rho, cell.n - k, confidence_level)
            cell.ci_method = "fisher" if np.isfinite(cell.ci_low) else "none"


def _bootstrap_interval(cell: _Cell, dist: np.ndarray, jack: np.ndarray | None, alpha: float, ci: str, prefix: str) -> None:
    """BCa (percentile when BCa degenerates, reason ``ci_percentile``) or percentile bounds of one cell."""
    dist = dist[np.isfinite(dist)]  # a resample with a constant side has no ρ; drop it
    if dist.size < 2:
        cell.ci_method = "none"
        return
    levels = (alpha, 1.0 - alpha)
    method = "percentile"
    if ci == "bca":
        assert jack is not None
        a1, a2 = bca_levels(cell.rho, dist, jack, alpha) if np.all(np.isfinite(jack)) else (np.nan, np.nan)
        if np.isfinite(a1) and np.isfinite(a2):
            levels, method = (a1, a2), "bca"
        else:
            cell.reason.append("ci_percentile")
    lo, hi = np.quantile(dist, levels)  # "linear", as scipy.stats.quantile
    cell.ci_low, cell.ci_high = float(lo), float(hi)
    cell.ci_method = prefix + method


def _bootstrap_intervals(
    m: _Matrices, cells: list[_Cell], groups: list[_Group], estimator: Estimator, resampling: Resampling,
    opts: SpearmanOptions, root: np.random.SeedSequence,
) -> None:  # fmt: skip
    """Every group's cells from one set of resamples (``child_rng(root, 0, g)``), vectorised over its cells."""
    alpha = (1.0 - opts.confidence_level) / 2.0
    for g, group in enumerate(groups):
        if not group.cells:
            continue
        clusters, enough = resampling.units(group.rows)
        if not enough:
            for c in group.cells:
                cells[c].ci_method = "none"
                cells[c].reason.append("too_few_clusters")
            continue
        block, n_x, pairs = _group_block(m, cells, group)
        with single_threaded_blas():
            theta_b = estimator.replicates(block, n_x, pairs, opts.n_resamples, child_rng(root, 0, g), clusters)
            theta_jack = estimator.jackknife(block, n_x, pairs, clusters) if opts.ci == "bca" else None
        for k, c in enumerate(group.cells):
            jack = None if theta_jack is None else theta_jack[k]
            _bootstrap_interval(cells[c], theta_b[k], jack, alpha, opts.ci, resampling.prefix)


def _scipy_intervals(
    m: _Matrices, cells: list[_Cell], groups: list[_Group], opts: SpearmanOptions, root: np.random.SeedSequence
) -> None:
    """Reference path: :func:`scipy.stats.bootstrap` per cell (same seeds, hence same resamples)."""

    def bootstrap(xv: np.ndarray, yv: np.ndarray, method: str, g: int) -> tuple[float, float]:
        """The ``scipy.stats.bootstrap`` interval of paired ρ with the seed stream of group ``g``.

        Args:
            xv: Metric values of the cell's rows.
            yv: Target values of the cell's rows.
            method: ``BCa`` or ``percentile``.
            g: Index of the cell's group (its seed stream).
        """
        res = stats.bootstrap((xv, yv), spearman_vec, paired=True, vectorized=True, n_resamples=opts.n_resamples,
                              confidence_level=opts.confidence_level, method=method, rng=child_rng(root, 0, g))  # fmt: skip
        lo, hi = res.confidence_interval
        return float(lo), float(hi)

    for g, group in enumerate(groups):
        for c in group.cells:
            cell = cells[c]
            xv, yv = m.x[group.rows, cell.metric], m.y[group.rows, cell.target]
            method = opts.ci
            with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
                warnings.simplefilter("ignore", stats.DegenerateDataWarning)
                lo, hi = bootstrap(xv, yv, "BCa" if opts.ci == "bca" else "percentile", g)
                if opts.ci == "bca" and not (np.isfinite(lo) and np.isfinite(hi)):
                    lo, hi = bootstrap(xv, yv, "percentile", g)
                    method = "percentile"
                    cell.reason.append("ci_percentile")
            cell.ci_low, cell.ci_high = lo, hi
            cell.ci_method = method if np.isfinite(lo) and np.isfinite(hi) else "none"


def _intervals(
    m: _Matrices, cells: list[_Cell], groups: list[_Group], estimator: Estimator, resampling: Resampling,
    opts: SpearmanOptions, root: np.random.SeedSequence, ci_backend: str,
) -> None:  # fmt: skip
    if opts.ci == "fisher":
        _fisher_intervals(cells, estimator.k, opts.confidence_level)
    elif opts.ci in ("bca", "percentile") and ci_backend == "vectorized":
        _bootstrap_intervals(m, cells, groups, estimator, resampling, opts, root)
    elif opts.ci in ("bca", "percentile"):
        _scipy_intervals(m, cells, groups, opts, root)
    else:
        for cell in cells:
            if cell.defined:
                cell.ci_method = "none"


_SCHEMA: dict[str, Any] = {
    "metric": pl.String, "target": pl.String, "n": pl.Int64, "rho": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "p": pl.Float64, "p_adj": pl.Float64, "adjust": pl.String, "stars": pl.String,
    "reason": pl.String, "p_method": pl.String, "ci_method": pl.String,
}  # fmt: skip


def _table(cells: list[_Cell], metrics: list[str], targets: list[str], opts: SpearmanOptions) -> pl.DataFrame:
    """The tidy table of the cells: p adjusted over every defined cell, stars on ``stars_on``."""
    p_raw = np.array([cell.p for cell in cells], dtype=float)
    p_adj = adjust_pvalues(p_raw, opts.adjust)  # type: ignore[arg-type]
    starred = p_adj if opts.stars_on == "p_adj" else p_raw
    columns = {
        "metric": [metrics[c.metric] for c in cells], "target": [targets[c.target] for c in cells],
        "n": [c.n for c in cells], "rho": [c.rho for c in cells], "ci_low": [c.ci_low for c in cells],
        "ci_high": [c.ci_high for c in cells], "p": p_raw, "p_adj": p_adj, "adjust": [opts.adjust] * len(cells),
        "stars": [significance_stars(v) for v in starred], "reason": [";".join(c.reason) for c in cells],
        "p_method": [c.p_method for c in cells], "ci_method": [c.ci_method for c in cells],
    }  # fmt: skip
    return pl.DataFrame(columns, schema=_SCHEMA)


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------


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


def _check_controls(data: pl.DataFrame, control: Sequence[str] | str | None, targets: list[str]) -> list[str]:
    """Control names, checked: present, not a target, not duplicated, numeric and not constant."""
    if not control:
        return []
    names = [c.strip() for c in ([control] if isinstance(control, str) else control)]
    if any(not c for c in names):
        raise ConfigError("empty control column name", hint="pass --control COLUMN, e.g. --control resp_words")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise ConfigError(f"duplicate control columns: {', '.join(dupes)}")
    refuse_control_targets(names, targets)
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
    empty = [i for i, v in enumerate(values) if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == ""]
    if empty:
        raise InputSchemaError(f"{len(empty):,} row(s) have an empty cluster label (first row {empty[0] + 1})",
                               hint="every row needs its cluster (dialogue) label")  # fmt: skip
    return np.asarray([str(v) for v in values], dtype=str)


def _inputs(
    data: pl.DataFrame, metrics: list[str], targets: list[str], control: Sequence[str] | str | None,
    opts: SpearmanOptions, ci_backend: str,
) -> tuple[list[str], list[str], list[str], _Matrices]:  # fmt: skip
    """Names and options checked (exit 2 on any problem), and the tie-keyed matrices."""
    metrics = _check_names(metrics, "metric")
    targets = _check_names(targets, "target")
    controls = _check_controls(data, control, targets)
    opts.check()
    if ci_backend not in CI_BACKENDS:
        raise ConfigError(f"unknown ci_backend {ci_backend!r}", hint=f"use one of {', '.join(CI_BACKENDS)}")
    if controls and ci_backend != "vectorized" and opts.ci in ("bca", "percentile"):
        raise ConfigError("partial correlations have only the vectorized bootstrap", hint="use ci_backend='vectorized'")
    require_columns(data, list(dict.fromkeys(metrics + targets)), source="correlation input")
    digits = opts.tie_digits
    ctrl = tie_key(_numeric_matrix(data, controls, "control"), digits) if controls else None
    x, y = (tie_key(_numeric_matrix(data, cols, role), digits) for cols, role in ((metrics, "metric"), (targets, "target")))
    return metrics, targets, controls, _Matrices(x, y, ctrl)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


@frame_inputs("data")
def spearman_matrix(
    data: pl.DataFrame,
    metrics: list[str],
    targets: list[str],
    options: SpearmanOptions | None = None,
    *,
    control: Sequence[str] | None = None,
    cluster: Sequence[object] | np.ndarray | pl.Series | None = None,
    ci_backend: str = "vectorized",
    **overrides: Any,
) -> pl.DataFrame:
    """Spearman ρ of every metric against every target, as a tidy table (``docs/statistics.md#spearman-tables-validate``).

    Per cell the complete pairs are ``isfinite(x) & isfinite(y)`` (and every control); fewer than ``n_min`` give
    reason ``too_few``, a constant side ``constant``: NaN ρ, p and interval, no stars, outside the multiplicity
    family. Values are ranked by their tie key ``float(format(x, ".12g"))`` (``tie_digits``). ``p_adj`` adjusts
    every defined cell of the table together. With ``control`` every cell is the partial ρ (:class:`PartialSpearman`)
    and a ``control`` column follows ``reason``; with ``cluster`` the intervals resample clusters
    (:class:`ClusterResampling`) and an ``n_clusters`` column follows. See the module docstring for the seeds.

    Args:
        data: One row per unit, holding the metric, target (and control) columns.
        metrics: Metric columns, in the order of the rows of the table (metric-major).
        targets: Target columns.
        options: How cells are estimated, tested and bounded (default :class:`SpearmanOptions`).
        control: Columns of ``data`` held fixed (partial ρ); a missing, constant or target column raises.
        cluster: One label per row of ``data`` (compared as text): the intervals resample whole clusters.
        ci_backend: ``vectorized`` (default) or ``scipy`` (:func:`scipy.stats.bootstrap` per cell, the reference).
        **overrides: Fields of ``options`` to replace, e.g. ``ci="fisher"``.

    Returns:
        ``metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason[, control][, n_clusters],
        p_method, ci_method``: one row per (metric, target), metric-major in the given order.

    Example:
        >>> df = pl.DataFrame({"len": [3.0, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], "q": [1.0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1]})
        >>> t = spearman_matrix(df, ["len"], ["q"], ci="fisher", permutation="never")
        >>> round(t["rho"][0], 4), t["n"][0], t["reason"][0]
        (0.8022, 12, '')
    """
    opts = spearman_options(options, **overrides)
    metrics, targets, controls, m = _inputs(data, metrics, targets, control, opts, ci_backend)
    estimator: Estimator = PartialSpearman(len(controls)) if controls else RawSpearman(opts.permutation, opts.n_permutations)
    cells, groups = _plan_cells(m, opts.n_min)
    root = seed_root(opts.seed)
    labels = _cluster_labels(cluster, data.height, opts.ci, ci_backend)
    resampling: Resampling = RowResampling() if labels is None else ClusterResampling(labels, opts.min_clusters)
    _estimate(m, cells, groups, estimator)
    for index, cell in enumerate(cells):
        if cell.defined:
            cell.p, cell.p_method = estimator.p_value(cell, index, groups[cell.group].rows, m, root)
    _intervals(m, cells, groups, estimator, resampling, opts, root, ci_backend)
    table = _table(cells, metrics, targets, opts)
    if controls:
        at = table.columns.index("reason") + 1
        table = table.insert_column(at, pl.Series(CONTROL_COLUMN, [",".join(controls)] * table.height, dtype=pl.String))
    if isinstance(resampling, ClusterResampling):
        at = table.columns.index(CONTROL_COLUMN if controls else "reason") + 1
        table = table.insert_column(at, pl.Series(CLUSTER_COLUMN, resampling.counts(m, cells), dtype=pl.Int64))
    return table
