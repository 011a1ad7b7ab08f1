"""The level of validation: metric rows that share a rating id inherit that rating (``docs/guide/dialogues.md``, the level of validation).

A conversation's rating joined onto each of its turns is one judgement repeated, not one per turn: a
row-level p treats the turns as independent (pseudo-replication). So several metric rows per rating
id are refused without cluster intervals (:func:`check_shared_ids`), the clusters must hold each rated
unit whole, and with them the table keeps ρ and the cluster interval but no p (:func:`mark_inherited`).

Example:
    >>> import polars as pl
    >>> m = pl.DataFrame({"conversation_id": ["c1", "c1", "c2"], "x": [1.0, 2.0, 3.0]})
    >>> shared_ids(m, "conversation_id", ["c1", "c2"])
    SharedIds(n_rows=3, n_ids=2)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from tutormetrics.errors import ConfigError

#: The reason code of a cell whose target was inherited from a rated unit above the row.
INHERITED_REASON = "inherited_rating"


@dataclass(frozen=True)
class SharedIds:
    """Metric rows whose rating id is shared: ``n_rows`` rows over ``n_ids`` ids (``n_rows > n_ids`` when any)."""

    n_rows: int
    n_ids: int

    @property
    def any(self) -> bool:
        """True when some rating id covers more than one metric row."""
        return self.n_rows > self.n_ids


def shared_ids(metrics: pl.DataFrame, id_col: str, target_ids: Iterable[str]) -> SharedIds:
    """The metric rows whose id is a target id, and how many distinct ids they carry.

    Args:
        metrics: The metrics table.
        id_col: Its id column.
        target_ids: The target ids (text).

    >>> shared_ids(pl.DataFrame({"id": ["a", "b"]}), "id", ["a", "b", "c"])
    SharedIds(n_rows=2, n_ids=2)
    """
    if id_col not in metrics.columns:
        return SharedIds(0, 0)
    ids = metrics.get_column(id_col).cast(pl.String)
    rated = ids.filter(ids.is_in(pl.Series(list(target_ids), dtype=pl.String).implode()).fill_null(False))
    return SharedIds(rated.len(), rated.n_unique())


def check_shared_ids(
    metrics: pl.DataFrame, id_col: str, target_ids: Iterable[str], cluster_col: str | None, source: str = "ratings"
) -> bool:
    """Whether the targets are inherited by several metric rows each; raise when that is not allowed.

    Several metric rows per rating id need ``cluster_col`` (exit 2 otherwise), and
    every rated id must lie in one cluster (resampling clusters must keep a rated unit whole).

    Args:
        metrics: The metrics table.
        id_col: Its id column.
        target_ids: The target ids (text).
        cluster_col: The ``--cluster-col``; ``None``: none.
        source: The targets' name in the errors.
    """
    ids = list(target_ids)
    shared = shared_ids(metrics, id_col, ids)
    if not shared.any:
        return False
    if cluster_col is None:
        spread = "a conversation's rating would be spread over its turns" if id_col == "conversation_id" else \
            "one rating would be spread over several metric rows"  # fmt: skip
        raise ConfigError(
            f"validate: {shared.n_rows:,} metric rows share {shared.n_ids:,} ids of the {source} ({id_col!r}): {spread}",
            hint="validate the CONV table (score --dialogue --conversations), or pass --cluster-col conversation_id "
            "for turn-level intervals over conversations",
        )
    if cluster_col != id_col and cluster_col in metrics.columns:
        check_nested(metrics, id_col, cluster_col)
    return True


def check_one_row_per_id(metrics: pl.DataFrame, id_col: str, target_ids: Iterable[str], *, command: str = "predict",
                         source: str = "ratings") -> None:  # fmt: skip
    """Exit 2 when several metric rows carry one target id: ``predict`` folds rows, so a copy of a rated exchange in
    another group would put one rating in a training and a test fold (``docs/commands/predict.md#one-row-per-id``).

    Args:
        metrics: The metrics table (ids as text).
        id_col: Its id column.
        target_ids: The target ids (text).
        command: The command named in the message.
        source: The targets' name in the message.

    >>> check_one_row_per_id(pl.DataFrame({"exchange_id": ["a", "b"]}), "exchange_id", ["a", "b"])
    """
    shared = shared_ids(metrics, id_col, target_ids)
    if not shared.any:
        return
    ids = metrics.get_column(id_col).cast(pl.String)
    first = ids.filter(ids.is_duplicated() & ids.is_in(pl.Series(list(target_ids), dtype=pl.String).implode()))[0]
    raise ConfigError(
        f"{command}: {shared.n_rows:,} metric rows share {shared.n_ids:,} ids of the {source} ({id_col!r}), e.g. "
        f"{first!r}: one rating would count once per row, and a copy in another group would sit in a training and a "
        "test fold",
        hint="keep one metrics row per rated id (drop the copies, or score with --dedupe); for conversation ratings "
        "predict the CONV table (score --dialogue --conversations)",
    )


def check_nested(metrics: pl.DataFrame, id_col: str, cluster_col: str, option: str = "--cluster-col") -> None:
    """Each value of ``id_col`` lies in one cluster of ``cluster_col`` (labels as text), else exit 2.

    Args:
        metrics: The metrics table.
        id_col: The rated id column.
        cluster_col: The cluster column.
        option: The option that named it, in the message (``--cluster-col``, ``--group-col``).

    >>> check_nested(pl.DataFrame({"conversation_id": ["c1", "c1"], "school": ["s", "s"]}), "conversation_id", "school")
    """
    pairs = metrics.select(pl.col(id_col).cast(pl.String), pl.col(cluster_col).cast(pl.String)).unique()
    split = pairs.group_by(id_col, maintain_order=True).len().filter(pl.col("len") > 1)
    if split.height:
        first = split.get_column(id_col)[0]
        raise ConfigError(
            f"{option} {cluster_col}: {split.height:,} rated {id_col} value(s) lie in several clusters, "
            f"e.g. {first!r} in {int(split.get_column('len')[0])}",
            hint=f"the clusters must hold each rated unit whole: pass {option} {id_col}, or a column constant "
            f"within each {id_col}",
        )


def mark_inherited(table: pl.DataFrame) -> pl.DataFrame:
    """Empty ``p``, ``p_adj`` and ``stars`` (``p_method`` ``none``) and add reason ``inherited_rating`` to every row.

    ρ and the (cluster) interval stay: the point estimate is the turn-level association, the interval
    resamples the rated units; a row-level p would count one rating once per row.

    >>> t = pl.DataFrame({"p": [0.01], "p_adj": [0.02], "stars": ["*"], "reason": [""], "p_method": ["asymptotic"]})
    >>> mark_inherited(t).row(0)
    (None, None, '', 'inherited_rating', 'none')
    """
    reason = pl.col("reason").fill_null("")
    return table.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("p"),
        pl.lit(None, dtype=pl.Float64).alias("p_adj"),
        pl.lit("").alias("stars"),
        pl.when(reason == "").then(pl.lit(INHERITED_REASON)).otherwise(reason + ";" + INHERITED_REASON).alias("reason"),
        *([pl.lit("none").alias("p_method")] if "p_method" in table.columns else []),
    )
