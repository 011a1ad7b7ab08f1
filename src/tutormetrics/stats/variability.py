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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.flags import flag, split_list
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns, require_distinct
from tutormetrics.progress import Log, quiet
from tutormetrics.stats.group_columns import group_columns, group_order, join_group_cols, with_group_label

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
    group_col: str | None = flag(
        "--group-col", default=None, parse=join_group_cols, cli_type=list[str] | None,
        help="Analyse each group (e.g. model) separately; repeat or comma-separate: a group is the combination, labelled a/b.",
    )
    cols: list[str] | None = flag(
        "--cols", default=None, parse=split_list, cli_type=list[str] | None,
        help="Columns, repeat or comma-separate (default: every numeric column but the keys).",
    )

    @property
    def id_columns(self) -> list[str]:
        """The key columns, read as text: unit, trial and (when given) group."""
        return [self.unit_col, self.trial_col, *group_columns(self.group_col)]


class VariabilityResult(NamedTuple):
    """The ICC table (six forms per group × variable) and the per-unit spread over trials."""

    icc: pl.DataFrame
    units: pl.DataFrame


@frame_inputs("table")
def trial_variability(table: pl.DataFrame, options: VariabilityOptions | None = None, log: Log = quiet) -> VariabilityResult:
    """``variability`` from Python: :func:`variability_table` of ``table`` under ``options``
    (``docs/commands/variability.md``); ``log`` receives the note on rows left out (an empty unit, trial or group).

    Args:
        table: the long table, one row per unit × trial (× group).
        options: the unit, trial and group columns and the columns analysed.
        log: where the notes go.

    >>> df = pl.DataFrame({"item": [1, 1, 2, 2, 3, 3], "trial": [1, 2] * 3, "total": [10., 11., 14., 14., 8., 9.]})
    >>> round(trial_variability(df).icc["icc"][0], 4)
    0.9579
    """
    o = options or VariabilityOptions()
    return VariabilityResult(*variability_table(table, unit_col=o.unit_col, trial_col=o.trial_col, group_col=o.group_col, cols=o.cols, log=log))

_COLUMNS = ["group", "variable", "form", "mcgraw_wong", "n_units", "n_trials", "icc", "ci_low", "ci_high",
            "f", "df1", "df2", "p", "sd_within", "mean_unit_sd", "reason"]  # fmt: skip


#: values per block of columns analysed together (bounds the memory of one block's units × trials × columns array)
_BLOCK = 1 << 21


def _empty_keys(df: pl.DataFrame, options: dict[str, list[str]], log: Log) -> pl.DataFrame:
    """Rows with an empty (missing or blank) unit, trial or group left out, counted per option on one stderr line."""
    empty = {opt: pl.any_horizontal(pl.col(c).is_null() | (pl.col(c).cast(pl.String).str.strip_chars() == "") for c in cols)
             for opt, cols in options.items() if cols}  # fmt: skip
    flags = df.select(**{opt: e for opt, e in empty.items()})
    anyone = flags.select(pl.any_horizontal(pl.all())).to_series()
    if anyone.any():
        counts = ", ".join(f"{opt} {int(flags[opt].sum())}" for opt in flags.columns if flags[opt].any())
        log(f"variability: {int(anyone.sum())} row(s) with an empty unit, trial or group left out ({counts})")
        df = df.filter(~anyone)
    return df


def _block(
    y: np.ndarray, group: str, names: list[str], unit_keys: list[str], k: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The ICC rows and per-unit rows of one block: ``y`` is columns × units × trials (NaN where missing)."""
    from tutormetrics.stats.icc import FORMS, icc_arrays  # scipy when the ICCs are computed, not when the CLI starts

    v, u, _ = y.shape
    out = icc_arrays(y)
    n = out["n_units"]
    full = np.isfinite(y).all(2)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.where(full[:, :, None], y - np.where(full, y.mean(2), 0.0)[:, :, None], 0.0) ** 2
        ok = (n >= 2) & (k >= 2)
        sd_within = np.where(ok, np.sqrt(dev.sum((1, 2)) / (n * (k - 1))), np.nan)
        unit_sd = np.sqrt(dev.sum(2) / (k - 1))
        mean_unit_sd = np.where(ok, np.where(full, unit_sd, 0.0).sum(1) / n, np.nan)
    dropped = np.array([f"dropped_{u - m}_incomplete_units" if u - m else "" for m in n.tolist()], dtype=object)
    reason = np.array([";".join(x for x in (r, d) if x) for r, d in zip(out["reason"].ravel(), np.repeat(dropped, 6), strict=True)], dtype=object)
    icc = {
        "group": np.full(v * 6, group, dtype=object), "variable": np.repeat(np.array(names, dtype=object), 6),
        "form": np.tile(np.array([f for f, _, _ in FORMS], dtype=object), v), "mcgraw_wong": np.tile(np.array([m for _, m, _ in FORMS], dtype=object), v),
        "n_units": np.repeat(n, 6), "n_trials": np.full(v * 6, k),
        **{key: out[key].ravel() for key in ("icc", "ci_low", "ci_high", "f", "df1", "df2", "p")},
        "sd_within": np.repeat(sd_within, 6), "mean_unit_sd": np.repeat(mean_unit_sd, 6), "reason": reason,
    }  # fmt: skip
    has = np.isfinite(y)
    count = has.sum(2)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(has, y, 0.0).sum(2) / count
        sd = np.sqrt(np.where(has, (y - mean[:, :, None]) ** 2, 0.0).sum(2) / (count - 1))
    keep = (count > 0).ravel()
    units = {
        "group": np.full(int(keep.sum()), group, dtype=object), "variable": np.repeat(np.array(names, dtype=object), u)[keep],
        "unit": np.tile(np.array(unit_keys, dtype=object), v)[keep], "n_trials": count.ravel()[keep],
        "mean": mean.ravel()[keep], "sd": np.where(count >= 2, sd, np.nan).ravel()[keep],
        "min": np.where(has, y, np.inf).min(2).ravel()[keep], "max": np.where(has, y, -np.inf).max(2).ravel()[keep],
    }  # fmt: skip
    return icc, units


def _group_blocks(sub: pl.DataFrame, group: str, unit_col: str, trial_col: str, cols: list[str]) -> Iterator[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """The blocks of one group: its units (sorted) × trials (sorted) × a block of columns, each through :func:`_block`."""
    codes = sub.select(pl.col(unit_col).rank("dense").cast(pl.Int64) - 1, pl.col(trial_col).rank("dense").cast(pl.Int64) - 1)
    ui, ti = codes[unit_col].to_numpy(), codes[trial_col].to_numpy()
    unit_keys = sub[unit_col].unique().sort().to_list()
    u, k = len(unit_keys), int(ti.max()) + 1 if ti.size else 0
    step = max(1, _BLOCK // max(1, u * k))
    for start in range(0, len(cols), step):
        names = cols[start : start + step]
        x = sub.select(pl.col(names).cast(pl.Float64).fill_nan(None)).to_numpy().astype(float)  # null -> NaN
        y = np.full((u, k, len(names)), np.nan)
        y[ui, ti, :] = x
        yield _block(np.ascontiguousarray(y.transpose(2, 0, 1)), group, names, unit_keys, k)


def variability_table(
    df: pl.DataFrame, *, unit_col: str, trial_col: str, group_col: str | None = None, cols: Sequence[str] | None = None, log: Log = quiet
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ICC table (columns ``group, variable, form, mcgraw_wong, n_units, n_trials, icc, ci_low, ci_high,
    f, df1, df2, p, sd_within, mean_unit_sd, reason``) and the per-unit table (``group, variable, unit,
    n_trials, mean, sd, min, max``). Rows with an empty unit, trial or group are left out and counted through
    ``log``; the work is a few array passes per block of columns, linear in rows × columns.

    Args:
        df: the long table, one row per unit × trial (× group).
        unit_col: column naming the rated unit (the ICC rows).
        trial_col: column naming the repeated trial (the ICC columns).
        group_col: column(s) (comma-joined) splitting the table into groups analysed apart; ``None``: one group.
        cols: numeric columns to analyse; ``None`` takes every numeric column but the keys.
        log: where the note on left-out rows goes.
    """
    group_cols = group_columns(group_col)
    keys = [unit_col, trial_col, *group_cols]
    require_distinct({"--unit-col": unit_col, "--trial-col": trial_col, "--group-col": group_cols, "--cols": list(cols or [])},
                     command="variability", hint="the unit, the trial, the group and the analysed columns are different columns")  # fmt: skip
    require_columns(df, keys, source="table", option="--unit-col/--trial-col/--group-col")
    if cols is None:
        cols = [c for c, dt in df.schema.items() if (dt.is_integer() or dt.is_float()) and c not in keys]
        if not cols:
            raise InputSchemaError("table: no numeric column to analyse", hint="name them with --cols")
    cols = list(dict.fromkeys(cols))
    require_columns(df, cols, source="table", option="--cols")
    schema = df.schema
    for c in cols:
        if not (schema[c].is_numeric() or schema[c] in (pl.Boolean, pl.Null)):
            raise InputSchemaError(f"table: column {c!r} is not numeric", hint="choose numeric columns with --cols")
    df = _empty_keys(df.select([*keys, *cols]), {"--unit-col": [unit_col], "--trial-col": [trial_col], "--group-col": group_cols}, log)
    df = df.with_columns(pl.col(trial_col).cast(pl.String), pl.col(unit_col).cast(pl.String))
    if not group_cols:
        df = df.with_columns(pl.lit("").alias("__group"))
        group_col, order = "__group", [""]
    else:
        df, group_col = with_group_label(df, group_cols, source="table")
        order = group_order(df, group_cols) if len(group_cols) > 1 else sorted(df[group_col].drop_nulls().cast(pl.String).unique().to_list())
    dup = df.group_by([group_col, unit_col, trial_col], maintain_order=True).len().filter(pl.col("len") > 1)
    if dup.height:
        r = dup.row(0, named=True)
        raise InputSchemaError(
            f"table: {dup.height} (group, unit, trial) combination(s) occur more than once, e.g. unit {r[unit_col]!r} trial {r[trial_col]!r}",
            hint="one row per group, unit and trial (aggregate first)",
        )
    parts = df.with_columns(pl.col(group_col).cast(pl.String)).partition_by(group_col, as_dict=True, maintain_order=True)
    icc_parts, unit_parts = [], []
    for group in order:
        if (group,) in parts:
            for icc, units in _group_blocks(parts[(group,)], group, unit_col, trial_col, cols):
                icc_parts.append(icc)
                unit_parts.append(units)
    schema_out = {c: (pl.String if c in ("group", "variable", "form", "mcgraw_wong", "reason") else pl.Int64 if c in ("n_units", "n_trials") else pl.Float64) for c in _COLUMNS}
    unit_schema = {"group": pl.String, "variable": pl.String, "unit": pl.String, "n_trials": pl.Int64, "mean": pl.Float64,
                   "sd": pl.Float64, "min": pl.Float64, "max": pl.Float64}  # fmt: skip
    return _frame(icc_parts, schema_out), _frame(unit_parts, unit_schema)


def _frame(parts: list[dict[str, np.ndarray]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The blocks' columns concatenated into one frame of ``schema``."""
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame({c: pl.Series(c, np.concatenate([p[c] for p in parts]).tolist() if dt == pl.String else np.concatenate([p[c] for p in parts]), dtype=dt, strict=False)
                         for c, dt in schema.items()})  # fmt: skip
