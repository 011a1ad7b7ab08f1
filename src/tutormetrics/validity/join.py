"""Join metric tables to target tables on the exchange id, reporting every unmatched row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns

#: How many unmatched ids :meth:`JoinReport.summary` prints per side and table.
SUMMARY_MAX_IDS = 10


@dataclass
class JoinReport:
    """What :func:`join_targets` matched and what it did not, per target table.

    ``n_matched[k]`` counts metric rows whose id occurs in target table ``k``;
    ``unmatched_metric_ids[k]`` lists metric ids absent from table ``k`` and
    ``unmatched_target_ids[k]`` the ids of table ``k`` absent from the metrics (all in file order).
    """

    n_metrics_rows: int
    names: list[str] = field(default_factory=list)
    n_target_rows: list[int] = field(default_factory=list)
    n_matched: list[int] = field(default_factory=list)
    unmatched_metric_ids: list[list[str]] = field(default_factory=list)
    unmatched_target_ids: list[list[str]] = field(default_factory=list)

    @property
    def all_matched(self) -> bool:
        """True when every metric row found every target table and no target id was left over."""
        return all(m == self.n_metrics_rows for m in self.n_matched) and not any(self.unmatched_target_ids)

    def summary(self) -> str:
        """One line per target table, e.g. ``1,655 of 1,655 metric rows matched ratings; 0 rating ids without metrics``.

        Unmatched ids are listed up to the first 10 per side.
        """
        lines = []
        for k, name in enumerate(self.names):
            noun = name[:-1] if name.endswith("s") else name
            line = (
                f"{self.n_matched[k]:,} of {self.n_metrics_rows:,} metric rows matched {name}; "
                f"{len(self.unmatched_target_ids[k]):,} {noun} ids without metrics"
            )
            extras = []
            if self.unmatched_metric_ids[k]:
                extras.append(f"metric ids without {name}: {_preview(self.unmatched_metric_ids[k])}")
            if self.unmatched_target_ids[k]:
                extras.append(f"{noun} ids without metrics: {_preview(self.unmatched_target_ids[k])}")
            if extras:
                line += " (" + "; ".join(extras) + ")"
            lines.append(line)
        return "\n".join(lines)


def _preview(ids: list[str], limit: int = SUMMARY_MAX_IDS) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... (+{len(ids) - limit:,} more)" if len(ids) > limit else "")


ID_TYPES: tuple[str, ...] = ("str", "int")


def _id_series(df: pl.DataFrame, id_col: str, id_type: str = "str", source: str = "metrics") -> pl.Series:
    """Ids as text (``007`` and ``7`` differ). With ``id_type="int"`` ids are read as whole numbers first,
    so ``1``, ``1.0`` and ``001`` are one id; an id that is not a whole number is an error.

    Example:
        >>> _id_series(pl.DataFrame({"id": ["1.0", "007"]}), "id", "int").to_list()
        ['1', '7']
    """
    text = df.get_column(id_col).cast(pl.String)
    if id_type == "str":
        return text
    if id_type != "int":
        raise InputSchemaError(f"unknown id type {id_type!r}", hint=f"use one of {', '.join(ID_TYPES)}")
    # Exact integers (Decimal → int), never through float64: 2**53 + 1 and 2**53 stay two ids.
    values = text.to_list()
    canonical = {v: _whole_number(v) for v in set(values) if v is not None}
    bad = [v for v in values if v is not None and canonical[v] is None]
    if bad:
        raise InputSchemaError(
            f"{source}: id {bad[0]!r} in {id_col!r} is not a whole number ({len(bad)} such ids)",
            hint="--id-type int compares ids as numbers; leave it out to compare them as text",
        )
    return pl.Series(text.name, [None if v is None else canonical[v] for v in values], dtype=pl.String)


def _whole_number(text: str) -> str | None:
    """The decimal digits of a whole number written as text (``+007``, ``1.0``, ``1e3``), else ``None``.

    >>> _whole_number("9007199254740993"), _whole_number("1.000"), _whole_number("1.5"), _whole_number("nan")
    ('9007199254740993', '1', None, None)
    """
    from decimal import Decimal, InvalidOperation

    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not number.is_finite() or number != number.to_integral_value():
        return None
    return str(int(number))


@frame_inputs("metrics", "targets")
def join_targets(
    metrics: pl.DataFrame,
    *targets: pl.DataFrame,
    id_col: str = "exchange_id",
    names: Sequence[str] | None = None,
    id_type: str = "str",
) -> tuple[pl.DataFrame, JoinReport]:
    """Left-join target tables onto the metrics by ``id_col``; never drops a metric row.

    Every metric row is kept in order; target columns are null where the id has no target row.
    Ids are compared as text (or as whole numbers with ``id_type="int"``). A target table that matches no
    metric id at all raises :class:`InputSchemaError` with a sample of both sides' ids. A target table with duplicate ids, or a target column whose name is
    already taken, raises :class:`InputSchemaError`. ``names`` labels the tables in the report
    (default ``ratings``, then ``targets2``, ``targets3``, ...).

    Args:
        metrics: The metrics table.
        *targets: The target tables, joined in order.
        id_col: The id column of every table.
        names: The tables' labels in the report; ``None``: ``ratings``, ``targets2``, ...
        id_type: ``str`` (ids as text) or ``int`` (whole numbers).

    Example:
        >>> m = pl.DataFrame({"exchange_id": ["a", "b"], "len": [3, 5]})
        >>> r = pl.DataFrame({"exchange_id": ["b", "c"], "tone": [1.0, 0.0]})
        >>> joined, report = join_targets(m, r)
        >>> joined.rows(), report.summary()
        ([('a', 3, None), ('b', 5, 1.0)], '1 of 2 metric rows matched ratings; 1 rating ids without metrics (metric ids without ratings: a; rating ids without metrics: c)')
    """
    if names is None:
        names = ["ratings"] + [f"targets{k + 1}" for k in range(1, len(targets))]
    names = list(names)
    if len(names) != len(targets):
        raise InputSchemaError(f"join_targets got {len(targets)} target tables but {len(names)} names")
    require_columns(metrics, [id_col], source="metrics", option="--id")
    metric_ids = _id_series(metrics, id_col, id_type, "metrics")
    report = JoinReport(n_metrics_rows=metrics.height, names=names)
    joined = metrics.with_columns(metric_ids.alias("__id"))
    taken = set(metrics.columns)
    for name, table in zip(names, targets, strict=True):
        require_columns(table, [id_col], source=name, option="--id")
        ids = _id_series(table, id_col, id_type, name)
        if ids.null_count():
            raise InputSchemaError(f"{name}: {ids.null_count()} row(s) have an empty {id_col!r}")
        dup = ids.filter(ids.is_duplicated()).unique(maintain_order=True)
        if dup.len():
            raise InputSchemaError(
                f"{name}: {dup.len():,} id(s) occur more than once, e.g. {_preview(dup.to_list(), 3)}",
                hint=f"a target table needs one row per {id_col}; aggregate the ratings first",
            )
        new_cols = [c for c in table.columns if c != id_col]
        clash = [c for c in new_cols if c in taken or c == "__id"]
        if clash:
            raise InputSchemaError(
                f"{name}: column(s) {', '.join(map(repr, clash))} already exist in the metrics or an earlier table",
                hint="rename the target columns so every name is unique",
            )
        taken.update(new_cols)
        in_target = metric_ids.is_in(ids.implode()).fill_null(False)
        if metrics.height and table.height and not in_target.any():
            raise InputSchemaError(
                f"no id of {name} matches a metric id: metrics have {_preview(metric_ids.drop_nulls().head(3).to_list(), 3)}, "
                f"{name} have {_preview(ids.head(3).to_list(), 3)}",
                hint="ids are compared as text; if both sides hold the same numbers written differently "
                "(1 and 1.0), pass --id-type int; check --id names the same column in both files",
            )
        report.n_target_rows.append(table.height)
        report.n_matched.append(int(in_target.sum()))
        report.unmatched_metric_ids.append(
            ["<missing id>" if v is None else str(v) for v in metric_ids.filter(~in_target).to_list()]
        )
        report.unmatched_target_ids.append(ids.filter(~ids.is_in(metric_ids.drop_nulls().implode())).to_list())
        right = table.select(pl.Series("__id", ids.to_list(), dtype=pl.String), *new_cols)
        joined = joined.join(right, on="__id", how="left", maintain_order="left")
    return joined.drop("__id"), report


def refuse_control_targets(controls: Sequence[str], targets: Sequence[str]) -> None:
    """Exit 2 when a control column is also a target: a control is a metrics column held fixed
    (``docs/statistics.md#length-controlled-validity-control``), never a rating target.

    >>> refuse_control_targets(["resp_words"], ["tone", "theta"])
    """
    clash = [c for c in controls if c in set(targets)]
    if clash:
        raise ConfigError(
            f"control column(s) {', '.join(map(repr, clash))} are also targets",
            hint="a control is a column of the metrics table held fixed; it cannot be a rating target",
        )


def metric_columns(df: pl.DataFrame, *, id_col: str = "exchange_id", columns: Sequence[str] | None = None) -> list[str]:
    """Metric columns of a metrics table.

    By default the columns :func:`tutormetrics.metrics.columns.describe_frame` describes (every numeric
    column but the id, the Scorer's flags and the dialogue structure columns). With
    ``columns`` those names are checked and returned; a non-numeric one raises :class:`InputSchemaError`.

    Args:
        df: The metrics table.
        id_col: Its id column.
        columns: The metric columns asked for (``--metrics-cols``); ``None``: the described ones.

    Example:
        >>> df = pl.DataFrame({"exchange_id": ["a"], "ttr": [0.5], "resp_windows": [1], "resp_empty": [0], "tutor": ["x"]})
        >>> metric_columns(df)
        ['ttr']
    """
    if columns is not None:
        cols = list(dict.fromkeys(columns))
        require_columns(df, cols, source="metrics", option="--metrics-cols")
        bad = [c for c in cols if not df.schema[c].is_numeric()]
        if bad:
            raise InputSchemaError(
                f"metrics: column(s) {', '.join(map(repr, bad))} are not numeric", hint="pick numeric metric columns"
            )
        return cols
    from tutormetrics.metrics.columns import describe_frame, metric_names, not_metric_columns

    cols = metric_names(describe_frame(df, exclude=not_metric_columns(id_col)))
    if not cols:
        raise InputSchemaError("metrics: no numeric metric columns found", hint="pass --metrics-cols to name them")
    return cols
