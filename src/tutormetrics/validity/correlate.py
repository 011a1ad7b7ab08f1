"""Correlation tables of metrics against targets: the join, the raw and partial rows, the wide matrices and the
summary (``docs/statistics.md#spearman-tables-validate``).

:func:`correlate_with_targets` joins target tables onto a metrics table by id and puts the raw rows, then (with
controls) the partial rows into one tidy table; the cells come from the Spearman engine
(:func:`~tutormetrics.validity.spearman.spearman_matrix`, re-exported here). :func:`rho_matrix` pivots a table to
wide form, :func:`split_by_control` splits it by kind and :func:`summarize_correlations` says it in a few lines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns
from tutormetrics.validity.join import JoinReport, join_targets, metric_columns, refuse_control_targets
from tutormetrics.validity.spearman import (
    CI_BACKENDS,
    CI_METHODS,
    CLUSTER_COLUMN,
    CONTROL_COLUMN,
    DIAGNOSTIC_COLUMNS,
    PERMUTATION_MODES,
    PERMUTATION_N_BELOW,
    RESULT_COLUMNS,
    STARS_ON,
    SpearmanOptions,
    spearman_matrix,
    spearman_options,
)

__all__ = [
    "CI_BACKENDS", "CI_METHODS", "CLUSTER_COLUMN", "CONTROL_COLUMN", "DIAGNOSTIC_COLUMNS", "PERMUTATION_MODES",
    "PERMUTATION_N_BELOW", "RESULT_COLUMNS", "STARS_ON", "SpearmanOptions", "ValidityResult", "correlate_with_targets",
    "prevalence_ceiling", "rho_matrix", "spearman_matrix", "split_by_control", "summarize_correlations",
]


def prevalence_ceiling(y: Sequence[float] | np.ndarray | pl.Series) -> float:
    """Upper bound on |Spearman ρ| for a target with category proportions ``p_k``: ``sqrt(1 − Σ p_k³)``.

    For a binary target with prevalence p this is ``sqrt(3p(1 − p))``
    (``docs/statistics.md#ties-binary-targets-and-the-prevalence-ceiling``). Non-finite values are
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


@frame_inputs("table")
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
        p_adj = row["p_adj"]  # empty for inherited ratings (validity.level)
        p_text = f"p_adj {p_shown(p_adj)} {row['stars']}" if p_adj is not None and np.isfinite(p_adj) else "no p"
        lines.append(f"  {row['metric']} ~ {row['target']}: ρ = {_fmt(row['rho'])}{ci}, n = {row['n']:,}, {p_text}".rstrip())
    return "\n".join(lines)


#: The smallest p a summary line writes as a number; below it (a float underflows to 0 near 1e-308) ``< 1e-300``.
P_FLOOR = 1e-300


def p_shown(p: float) -> str:
    """A p value as the stderr summaries write it: ``= `` and two significant digits, or ``< 1e-300`` below
    :data:`P_FLOOR`, never ``= 0`` (``docs/commands/validate.md#worked-example``).

    Args:
        p: The p value (finite).

    >>> p_shown(0.0067), p_shown(6e-28), p_shown(0.0)
    ('= 0.0067', '= 6e-28', '< 1e-300')
    """
    return f"< {P_FLOOR:g}" if p < P_FLOOR else f"= {p:.2g}"


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


@frame_inputs("metrics", "targets")
def correlate_with_targets(
    metrics: pl.DataFrame,
    targets: Sequence[pl.DataFrame],
    options: SpearmanOptions | None = None,
    *,
    names: Sequence[str] | None = None,
    id_col: str = "exchange_id",
    metrics_cols: Sequence[str] | None = None,
    id_type: str = "str",
    control: Sequence[str] | None = None,
    cluster_col: str | None = None,
    **overrides: Any,
) -> ValidityResult:
    """Join ``targets`` onto ``metrics`` by id (reporting unmatched ids) and correlate every metric with every target.

    With ``control`` the table holds the raw rows (``control`` empty) and then the partial rows
    (``docs/statistics.md#length-controlled-validity-control``); ``p_adj`` adjusts within each value of
    ``control``. Control and cluster columns are carried into the join even when they are not among
    ``metrics_cols``; a cluster column is never a metric.

    Args:
        metrics: The metrics table, with ``id_col``.
        targets: Target tables, each with ``id_col`` (ratings targets, θ, ...).
        options: The Spearman engine's options (:class:`~tutormetrics.validity.spearman.SpearmanOptions`; a
            :class:`~tutormetrics.validity.study.ValidateOptions` is one).
        names: The tables' names in the join report.
        id_col: The id both sides are joined on.
        metrics_cols: The metric columns (default: every described numeric column but the id).
        id_type: ``str`` (ids compared as text) or ``int`` (as whole numbers), as in
            :func:`~tutormetrics.validity.join.join_targets`.
        control: Metrics columns held fixed for the partial rows.
        cluster_col: Metrics column of cluster labels: the intervals resample clusters.
        **overrides: Fields of ``options`` to replace (``ci="none"``, ``n_resamples=999``, ...).

    Example:
        >>> m = pl.DataFrame({"exchange_id": list("abcdefghijkl"), "x": [float(i % 5) for i in range(12)]})
        >>> t = pl.DataFrame({"exchange_id": list("abcdefghijkl"), "y": [float(i % 3) for i in range(12)]})
        >>> correlate_with_targets(m, [t], ci="none").table["n"].to_list()
        [12]
    """
    opts = spearman_options(options, **overrides)
    mcols = metric_columns(metrics, id_col=id_col, columns=list(metrics_cols) if metrics_cols else None)
    if cluster_col is not None:
        require_columns(metrics, [cluster_col], source="metrics", option="--cluster-col")
        mcols = [c for c in mcols if c != cluster_col]
        if not mcols:
            raise InputSchemaError("metrics: no metric column besides the cluster column")
    target_cols = [c for t in targets for c in t.columns if c != id_col]
    controls = list(dict.fromkeys(c.strip() for c in (control or [])))
    if controls:
        refuse_control_targets(controls, target_cols)
        require_columns(metrics, controls, source="metrics", option="--control")
    keep = [c for c in dict.fromkeys([*mcols, *controls, *([cluster_col] if cluster_col else [])]) if c != id_col]
    joined, report = join_targets(metrics.select(id_col, *keep), *targets, id_col=id_col, names=names, id_type=id_type)
    cluster = joined.get_column(cluster_col).cast(pl.String) if cluster_col is not None else None
    table = spearman_matrix(joined, mcols, target_cols, opts, cluster=cluster)
    if controls:
        partial = spearman_matrix(joined, mcols, target_cols, opts, control=controls, cluster=cluster)
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
