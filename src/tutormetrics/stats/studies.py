"""Bias profiles of a ``compare`` table (``docs/design/studies.md#bias-summary``): |r_rb| per contrast, per cell and per summary row.

1. **Contrast value**, one per (strata, dimension, dimension_value, metric): the |r_rb| of the Wilcoxon
   row (two groups) or, with k ≥ 3 groups, the maximum (``reduce="max"``) or mean (``"mean"``) of the
   finite pairwise |r_rb|; NaN when none is finite.
2. **Cell value**: the mean of the finite contrast values sharing the ``cells`` keys.
3. **Summary row** per ``by`` combination (sorted as text): defined cells, their mean and maximum, the
   cell of the maximum, how many reach ``threshold`` (no tolerance), and counts over the Wilcoxon rows
   (violations; ``n_a_higher``/``n_b_higher`` by the sign of ``mean_diff`` — "k of m improved").

Example:
    >>> t = pl.DataFrame({"test": ["wilcoxon"] * 2, "metric": ["a", "b"], "r_rb": [0.2, -0.05],
    ...                   "violation": [True, False], "mean_diff": [1.0, -1.0]})
    >>> s = bias_summary(t, by=["metric"])
    >>> s["mean_abs_r"].to_list(), s["n_ge_threshold"].to_list()
    ([0.2, 0.05], [1, 0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError

__all__ = ["SUMMARY_KEYS", "bias_summary"]

SUMMARY_KEYS: tuple[str, ...] = ("metric", "dimension", "dimension_value")


def _check_keys(table: pl.DataFrame, by: list[str], cells: list[str], strata: Sequence[str]) -> list[str]:
    """The contrast keys (strata, dimension, dimension_value, metric present in the table); names checked."""
    allowed = [*strata, *(k for k in ("dimension", "dimension_value") if k in table.columns), "metric"]
    unknown = [k for k in dict.fromkeys(by + cells) if k not in allowed]
    if unknown:
        raise ConfigError(f"--by/--cells: unknown key(s) {unknown}", hint=f"use the strata columns, metric, dimension or dimension_value: {allowed}")
    if not set(by) <= set(cells):
        raise ConfigError(f"--cells {','.join(cells)} must contain every --by key ({','.join(by)})")
    return allowed


def bias_summary(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = ("metric",),
    cells: Sequence[str] | None = None,
    strata: Sequence[str] = (),
    threshold: float = 0.10,
    reduce: Literal["max", "mean"] = "max",
    directions: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """The ``--summary`` table of a comparison table (only its Wilcoxon rows are read).

    Columns: the ``by`` keys, ``n_cells, mean_abs_r, max_abs_r, max_cell, n_ge_threshold,
    share_ge_threshold, threshold, n_contrasts, n_violations, n_a_higher, n_b_higher, direction, reason``.

    Args:
        table: a ``compare`` table.
        by: keys of one summary row, among the strata columns, ``metric``, ``dimension``, ``dimension_value``.
        cells: keys of one cell (must contain every ``by`` key); ``None`` uses ``by``.
        strata: the strata columns of the comparison.
        threshold: |r_rb| a cell must reach to count in ``n_ge_threshold``.
        reduce: contrast value with k ≥ 3 groups: ``max`` or ``mean`` of the pairwise |r_rb|.
        directions: metric → desirable direction (``higher``, ``lower``, ``neutral``), shown in ``direction``.
    """
    by, cells = list(by), list(cells) if cells else list(by)
    if reduce not in ("max", "mean"):
        raise ConfigError(f"unknown --reduce {reduce!r}", hint="use max or mean")
    if "test" not in table.columns or "r_rb" not in table.columns:
        raise InputSchemaError("comparison table: needs the test and r_rb columns of `tutormetrics compare`")
    keys = _check_keys(table, by, cells, strata)
    wil = table.filter(pl.col("test") == "wilcoxon").with_columns([pl.col(k).cast(pl.String) for k in keys])
    agg = pl.col("abs_r").max() if reduce == "max" else pl.col("abs_r").mean()
    contrasts = (
        wil.with_columns(pl.col("r_rb").cast(pl.Float64).abs().fill_nan(None).alias("abs_r"))
        .group_by(keys, maintain_order=True)
        .agg(agg.alias("value"))
    )
    cell_values = contrasts.group_by(cells, maintain_order=True).agg(pl.col("value").drop_nulls().mean().alias("value")).sort(cells)
    directions = dict(directions or {})
    rows = []
    groups = sorted({tuple(r) for r in wil.select(by).iter_rows()}, key=lambda t: tuple("" if v is None else v for v in t))
    rest = [c for c in cells if c not in by]
    for combo in groups:
        match = pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in zip(by, combo, strict=True)])
        mine = cell_values.filter(match)
        defined = mine.filter(pl.col("value").is_not_null())
        values = defined["value"].to_numpy()
        contrast_rows = wil.filter(match)
        row: dict[str, object] = dict(zip(by, combo, strict=True))
        n_cells = int(values.size)
        best = int(np.argmax(values)) if n_cells else -1
        n_ge = int((values >= threshold).sum())
        mean_diff = contrast_rows["mean_diff"].cast(pl.Float64) if "mean_diff" in contrast_rows.columns else pl.Series([], dtype=pl.Float64)
        labels = {directions.get(m) for m in contrast_rows["metric"].unique().to_list()} if directions else set()
        direction = "" if not labels or labels == {None} else (next(iter(labels)) if len(labels) == 1 else "mixed")
        undefined = mine.height - n_cells
        row.update(
            n_cells=n_cells,
            mean_abs_r=float(values.mean()) if n_cells else float("nan"),
            max_abs_r=float(values.max()) if n_cells else float("nan"),
            max_cell=";".join(f"{k}={defined[k][best]}" for k in rest) if n_cells else "",
            n_ge_threshold=n_ge,
            share_ge_threshold=n_ge / n_cells if n_cells else float("nan"),
            threshold=float(threshold),
            n_contrasts=contrast_rows.height,
            n_violations=int(contrast_rows["violation"].fill_null(False).sum()) if "violation" in contrast_rows.columns else 0,
            n_a_higher=int((mean_diff > 0).sum()),
            n_b_higher=int((mean_diff < 0).sum()),
            direction=direction,
            reason=f"cells_undefined_{undefined}" if undefined else "",
        )
        rows.append(row)
    schema: dict[str, pl.DataType] = {k: pl.String() for k in by}
    schema.update(
        n_cells=pl.Int64(), mean_abs_r=pl.Float64(), max_abs_r=pl.Float64(), max_cell=pl.String(), n_ge_threshold=pl.Int64(),
        share_ge_threshold=pl.Float64(), threshold=pl.Float64(), n_contrasts=pl.Int64(), n_violations=pl.Int64(),
        n_a_higher=pl.Int64(), n_b_higher=pl.Int64(), direction=pl.String(), reason=pl.String(),
    )  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")
