"""Response variability across repeated trials (``docs/design/studies.md#variability``): the six ICC forms per group × column,
plus the pooled within-unit SD and per-unit spread.

Only complete units (a finite value in every trial of the group) enter the ICC; ``sd_within = √MS_W``
and ``mean_unit_sd`` = the mean over complete units of their SD over trials (ddof = 1).

Example:
    >>> df = pl.DataFrame({"item": [1, 1, 2, 2, 3, 3], "trial": [1, 2] * 3, "total": [10., 11., 14., 14., 8., 9.]})
    >>> t, _ = variability_table(df, unit_col="item", trial_col="trial")
    >>> t["form"].to_list()[:2], round(t["icc"][0], 4)
    (['ICC1', 'ICC2'], 0.9579)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.flags import flag, split_list
from tutormetrics.io.tables import require_columns

__all__ = ["VariabilityOptions", "VariabilityResult", "trial_variability", "variability_table"]


@dataclass(kw_only=True)
class VariabilityOptions:
    """``variability``'s options (``docs/commands/variability.md``): the unit, trial and group columns and the
    columns analysed.

    >>> o = VariabilityOptions()
    >>> o.unit_col, o.trial_col, o.group_col, o.id_columns
    ('item', 'trial', None, ['item', 'trial'])
    """

    unit_col: str = flag("--unit-col", default="item", help="Unit column (e.g. item).")
    trial_col: str = flag("--trial-col", default="trial", help="Trial column (repeated runs).")
    group_col: str | None = flag("--group-col", default=None, help="Analyse each group (e.g. model) separately.")
    cols: list[str] | None = flag(
        "--cols", default=None, parse=split_list, cli_type=list[str] | None,
        help="Columns (default: every numeric column but the keys).",
    )

    @property
    def id_columns(self) -> list[str]:
        """The key columns, read as text: unit, trial and (when given) group."""
        return [self.unit_col, self.trial_col, *([self.group_col] if self.group_col else [])]


class VariabilityResult(NamedTuple):
    """The ICC table (six forms per group × variable) and the per-unit spread over trials."""

    icc: pl.DataFrame
    units: pl.DataFrame


def trial_variability(table: pl.DataFrame, options: VariabilityOptions | None = None) -> VariabilityResult:
    """``variability`` from Python: :func:`variability_table` of ``table`` under ``options``
    (``docs/commands/variability.md``).

    >>> df = pl.DataFrame({"item": [1, 1, 2, 2, 3, 3], "trial": [1, 2] * 3, "total": [10., 11., 14., 14., 8., 9.]})
    >>> round(trial_variability(df).icc["icc"][0], 4)
    0.9579
    """
    o = options or VariabilityOptions()
    return VariabilityResult(*variability_table(table, unit_col=o.unit_col, trial_col=o.trial_col, group_col=o.group_col, cols=o.cols))

_COLUMNS = ["group", "variable", "form", "mcgraw_wong", "n_units", "n_trials", "icc", "ci_low", "ci_high",
            "f", "df1", "df2", "p", "sd_within", "mean_unit_sd", "reason"]  # fmt: skip


def _matrix(sub: pl.DataFrame, unit_col: str, trial_col: str, col: str, trials: list[object]) -> tuple[np.ndarray, list[object]]:
    """Units × trials matrix (NaN where a unit lacks a trial or a value) and the unit keys (sorted)."""
    wide = (
        sub.select(pl.col(unit_col), pl.col(trial_col), pl.col(col).cast(pl.Float64).fill_nan(None))
        .pivot(on=trial_col, index=unit_col, values=col)
        .sort(unit_col)
    )
    names = [str(t) for t in trials]
    for nm in names:
        if nm not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(nm))
    return wide.select(names).fill_null(np.nan).to_numpy().astype(float), wide[unit_col].to_list()


def variability_table(
    df: pl.DataFrame, *, unit_col: str, trial_col: str, group_col: str | None = None, cols: Sequence[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ICC table (columns ``group, variable, form, mcgraw_wong, n_units, n_trials, icc, ci_low, ci_high,
    f, df1, df2, p, sd_within, mean_unit_sd, reason``) and the per-unit table (``group, variable, unit,
    n_trials, mean, sd, min, max``).

    Args:
        df: the long table, one row per unit × trial (× group).
        unit_col: column naming the rated unit (the ICC rows).
        trial_col: column naming the repeated trial (the ICC columns).
        group_col: column splitting the table into groups analysed apart; ``None``: one group.
        cols: numeric columns to analyse; ``None`` takes every numeric column but the keys.
    """
    from tutormetrics.stats.icc import icc_forms  # scipy when the ICCs are computed, not when the CLI starts

    keys = [unit_col, trial_col, *([group_col] if group_col else [])]
    require_columns(df, keys, source="table", option="--unit-col/--trial-col/--group-col")
    if cols is None:
        cols = [c for c, dt in df.schema.items() if (dt.is_integer() or dt.is_float()) and c not in keys]
        if not cols:
            raise InputSchemaError("table: no numeric column to analyse", hint="name them with --cols")
    cols = list(dict.fromkeys(cols))
    require_columns(df, cols, source="table", option="--cols")
    for c in cols:
        if not (df.schema[c].is_numeric() or df.schema[c] in (pl.Boolean, pl.Null)):
            raise InputSchemaError(f"table: column {c!r} is not numeric", hint="choose numeric columns with --cols")
    df = df.with_columns(pl.col(trial_col).cast(pl.String), pl.col(unit_col).cast(pl.String))
    if group_col is None:
        df = df.with_columns(pl.lit("").alias("__group"))
        group_col = "__group"
    dup = df.group_by([group_col, unit_col, trial_col], maintain_order=True).len().filter(pl.col("len") > 1)
    if dup.height:
        r = dup.row(0, named=True)
        raise InputSchemaError(
            f"table: {dup.height} (group, unit, trial) combination(s) occur more than once, e.g. unit {r[unit_col]!r} trial {r[trial_col]!r}",
            hint="one row per group, unit and trial (aggregate first)",
        )
    rows, units = [], []
    for group in sorted(df[group_col].drop_nulls().cast(pl.String).unique().to_list()):
        sub = df.filter(pl.col(group_col).cast(pl.String) == group)
        trials = sorted(sub[trial_col].drop_nulls().unique().to_list())
        for col in cols:
            y, unit_keys = _matrix(sub.filter(pl.col(trial_col).is_not_null()), unit_col, trial_col, col, trials)
            has = np.isfinite(y)
            for key, vals in zip(unit_keys, y, strict=True):
                v = vals[np.isfinite(vals)]
                if v.size:
                    sd = float(v.std(ddof=1)) if v.size >= 2 else float("nan")
                    units.append({"group": group, "variable": col, "unit": str(key), "n_trials": int(v.size),
                                  "mean": float(v.mean()), "sd": sd, "min": float(v.min()), "max": float(v.max())})  # fmt: skip
            complete = y[has.all(1)] if y.size else np.empty((0, len(trials)))
            incomplete = int(y.shape[0] - complete.shape[0])
            forms = icc_forms(complete)
            n, k = complete.shape
            ok = n >= 2 and k >= 2
            ms_w = float(((complete - complete.mean(1, keepdims=True)) ** 2).sum() / (n * (k - 1))) if ok else float("nan")
            mean_unit_sd = float(complete.std(1, ddof=1).mean()) if ok else float("nan")
            for r in forms:
                reasons = [x for x in (r["reason"], f"dropped_{incomplete}_incomplete_units" if incomplete else "") if x]
                rows.append({"group": group, "variable": col, **r, "sd_within": float(np.sqrt(ms_w)), "mean_unit_sd": mean_unit_sd,
                             "reason": ";".join(reasons)})  # fmt: skip
    schema = {c: (pl.String if c in ("group", "variable", "form", "mcgraw_wong", "reason") else pl.Int64 if c in ("n_units", "n_trials") else pl.Float64) for c in _COLUMNS}
    table = pl.DataFrame([{c: r[c] for c in _COLUMNS} for r in rows], schema=schema, orient="row")
    unit_schema = {"group": pl.String, "variable": pl.String, "unit": pl.String, "n_trials": pl.Int64, "mean": pl.Float64,
                   "sd": pl.Float64, "min": pl.Float64, "max": pl.Float64}  # fmt: skip
    return table, pl.DataFrame(units, schema=unit_schema, orient="row")
