"""Per-group descriptive statistics with a seeded percentile bootstrap CI of the mean (``docs/design/raters.md#summarize``).

Per cell, over the non-missing values: ``n``, ``mean``, ``sd`` (ddof = 1; NaN when n < 2), ``median``
(mean of the two middle values when n is even) and ``ci_low``/``ci_high``, the percentile interval of
the bootstrap means (indices ``rng.integers(0, n, (B, n))`` from a fresh ``default_rng(seed)`` per cell,
so a cell's interval does not depend on the other cells); NaN when n < 2.

Example:
    >>> d = describe([1, 2, 4, float("nan")], n_resamples=0)
    >>> d["n"], round(d["mean"], 7), round(d["sd"], 7), d["median"]
    (3, 2.3333333, 1.5275252, 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.tables import require_columns

__all__ = ["SUMMARY_COLUMNS", "bootstrap_mean_ci", "describe", "numeric_variables", "summarize_groups"]

SUMMARY_COLUMNS = ["group", "variable", "n", "mean", "sd", "median", "ci_low", "ci_high"]

# Bootstrap draws held at once (~32 MiB of int64 indices).
_CHUNK_DRAWS = 1 << 22


def bootstrap_mean_ci(
    x: np.ndarray, *, n_resamples: int = 2000, seed: int = 0, confidence_level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (finite values); NaN when n < 2.

    Args:
        x: values (expected finite).
        n_resamples: number of bootstrap resamples; 0 gives NaN.
        seed: seed of the resampling generator.
        confidence_level: coverage of the interval, in (0, 1).

    Example:
        >>> lo, hi = bootstrap_mean_ci(np.arange(20.0), n_resamples=500)
        >>> bool(lo < 9.5 < hi)
        True
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 2 or n_resamples <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_DRAWS // n))
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        means[start : start + b] = x[rng.integers(0, n, size=(b, n))].mean(1)
    tail = (1 - confidence_level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def describe(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = 2000, seed: int = 0, confidence_level: float = 0.95
) -> dict[str, Any]:
    """``n, mean, sd, median, ci_low, ci_high`` of the finite values (see the module docstring).

    Args:
        values: the values; non-finite ones are dropped.
        n_resamples: bootstrap resamples for the mean's interval; 0 gives NaN bounds.
        seed: seed of the resampling generator.
        confidence_level: coverage of the interval, in (0, 1).
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    nan = float("nan")
    lo, hi = bootstrap_mean_ci(x, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level)
    return {
        "n": n,
        "mean": float(x.mean()) if n else nan,
        "sd": float(x.std(ddof=1)) if n >= 2 else nan,
        "median": float(np.median(x)) if n else nan,
        "ci_low": lo,
        "ci_high": hi,
    }


def numeric_variables(df: pl.DataFrame, exclude: Sequence[str]) -> list[str]:
    """Integer and float columns of ``df`` in file order, except ``exclude`` (booleans and text are not variables).

    Example:
        >>> numeric_variables(pl.DataFrame({"id": [1], "t": ["a"], "x": [1.0], "ok": [True]}), ["id"])
        ['x']
    """
    return [c for c, dt in df.schema.items() if c not in exclude and (dt.is_integer() or dt.is_float())]


def summarize_groups(
    df: pl.DataFrame,
    *,
    group_col: str,
    variables: Sequence[str],
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> tuple[pl.DataFrame, int]:
    """One row per group × variable (``group, variable, n, mean, sd, median, ci_low, ci_high``) and the
    number of rows dropped for a missing group. Groups are sorted as strings; variables keep their order.

    Args:
        df: the metrics table.
        group_col: column naming each row's group; rows where it is missing are dropped and counted.
        variables: numeric columns to describe.
        n_resamples: bootstrap resamples per cell for the mean's interval; 0 gives NaN bounds.
        seed: seed of the resampling generator (the same for every cell).
        confidence_level: coverage of the interval, in (0, 1).

    Example:
        >>> df = pl.DataFrame({"tutor": ["b", "a", "a", None], "x": [1.0, 2.0, 4.0, 3.0]})
        >>> table, dropped = summarize_groups(df, group_col="tutor", variables=["x"], n_resamples=0)
        >>> table["group"].to_list(), table["mean"].to_list(), dropped
        (['a', 'b'], [3.0, 1.0], 1)
    """
    require_columns(df, [group_col, *variables], source="metrics", option="--group-col")
    if not 0 < confidence_level < 1:
        raise ConfigError("confidence_level must be in (0, 1)")
    group = df.get_column(group_col).cast(pl.String)
    keep = group.is_not_null()
    dropped = int((~keep).sum())
    rows: list[dict[str, Any]] = []
    frame = df.filter(keep).with_columns(group.filter(keep).alias("__group"))
    for name in sorted(frame["__group"].unique().to_list()):
        sub = frame.filter(pl.col("__group") == name)
        for var in variables:
            try:
                x = sub.get_column(var).cast(pl.Float64).fill_null(np.nan).to_numpy()
            except pl.exceptions.PolarsError as exc:
                raise InputSchemaError(f"metrics: column {var!r} is not numeric") from exc
            cell = describe(x, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level)
            rows.append({"group": name, "variable": var, **cell})
    schema = {c: pl.Float64 for c in SUMMARY_COLUMNS}
    schema.update({"group": pl.String, "variable": pl.String, "n": pl.Int64})
    return pl.DataFrame(rows, schema=schema, orient="row"), dropped
