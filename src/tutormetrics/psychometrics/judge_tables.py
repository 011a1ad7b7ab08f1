"""One call per ``agree`` mode of ``docs/guide/judges.md``: the judge table with its optional length-bias and
differences tables (:func:`judge_tables`), the many-rater table and the stability table with dialogue
intervals (:func:`cluster_labels` feeds both).

Each option of the command maps to one field of :class:`~tutormetrics.psychometrics.agree_options.JudgeOptions` (``--cluster-col`` → ``cluster_col``,
``--min-clusters`` → ``min_clusters``, ``--length-col`` → ``length_col``, ``--length-bias`` → ``length_bias``,
``--differences`` → ``differences``; ``--n-resamples``, ``--seed``, ``--n-min``, ``--levels``, ``--raters
exchangeable`` as today); ``--metrics-table`` is the ``metrics`` frame.

Example:
    >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["h", "llm"] * 2,
    ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
    >>> out = judge_tables(df, ["llm"], JudgeOptions(n_resamples=0, n_min=2))
    >>> out.table["criterion"].to_list(), out.table["accuracy"].to_list(), out.length_bias is None
    (['c', 'c', '(all)', '(all)'], [0.5, 0.5, 0.5, 0.5], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.agree_options import JudgeOptions
from tutormetrics.psychometrics.exchange_labels import LABEL, exchange_labels, independence_note, label_column
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.judge_differences import differences_table
from tutormetrics.psychometrics.length_bias import length_bias_table
from tutormetrics.psychometrics.ratings import RatingsLike, ratings_table
from tutormetrics.psychometrics.stability import parse_stability

__all__ = ["JudgeOptions", "JudgeTables", "check_agree_options", "cluster_labels", "judge_tables"]


class JudgeTables(NamedTuple):
    """The judge table and confusion counts, the optional length-bias and differences tables, and notes."""

    table: pl.DataFrame
    confusion: pl.DataFrame
    length_bias: pl.DataFrame | None
    differences: pl.DataFrame | None
    notes: list[str]
    #: ``agree: leniency scale inferred from the data (no --levels): …`` (``""`` when every scale was declared).
    scale_note: str = ""


def cluster_labels(
    ratings: RatingsLike, cluster_col: str | None, *, metrics: pl.DataFrame | None = None, id_col: str = "exchange_id",
    metrics_id_col: str | None = None, reserved: Sequence[str] = ("rater", "criterion", "score"),
) -> dict[str, str] | None:  # fmt: skip
    """Exchange id (text) → its cluster label from ``cluster_col`` of RATINGS, else of the metrics table
    (``docs/guide/judges.md#cluster-column``); None without ``cluster_col``. Exit 2 when it names a rater,
    criterion or score column (``reserved``), when neither table has it (naming the columns there), on an empty
    label or two labels for one exchange.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        cluster_col: The ``--cluster-col``; ``None``: no clusters.
        metrics: The ``--metrics-table``, searched when the ratings lack the column.
        id_col: The ratings' exchange id column.
        metrics_id_col: The metrics table's id column; ``None``: ``id_col``.
        reserved: The ratings' rater, criterion and score columns (refused as clusters).
    """
    if cluster_col is None:
        return None
    if cluster_col in reserved:
        raise ConfigError(f"--cluster-col {cluster_col!r} is the ratings' {cluster_col} column, not a dialogue",
                          hint="name the column that holds each reply's dialogue, e.g. conversation_id")  # fmt: skip
    frame = ratings_table(ratings)
    source, table = label_column([("ratings", frame), ("--metrics-table", metrics)], cluster_col, "--cluster-col")
    key = id_col if source == "ratings" else (metrics_id_col or id_col)
    labels = exchange_labels(table, key, cluster_col, option="--cluster-col", source=source)
    return dict(zip(labels["_id"].to_list(), labels[LABEL].to_list(), strict=True))


def check_agree_options(
    *, judges: Sequence[str] | None, raters: str | None = None, metrics: bool = False, length_bias: bool = False,
    differences: bool = False, stability: str | None = None,
) -> tuple[str, str] | None:  # fmt: skip
    """The option rules of ``agree`` (``docs/guide/judges.md#errors``); returns the ``--stability`` pair.

    Args:
        judges: The ``--judge`` names; ``None``: none given.
        raters: The ``--raters`` value.
        metrics: A ``--metrics-table`` is given.
        length_bias: ``--length-bias`` is asked for.
        differences: ``--differences`` is asked for.
        stability: The ``--stability A,B`` value; ``None``: not asked for.

    >>> check_agree_options(judges=None, stability="v1,v2")
    ('v1', 'v2')
    """
    if length_bias and not judges:
        raise ConfigError("--length-bias needs --judge", hint="the length bias is the judge's, against the humans")
    if length_bias and not metrics:
        raise ConfigError("--length-bias needs --metrics-table (the table with the reply lengths)",
                          hint="e.g. --metrics-table metrics.csv --length-col resp_words")  # fmt: skip
    if differences and not judges:
        raise ConfigError("--differences needs --judge", hint="a contrast needs two judges, or a judge and two humans")
    return parse_stability(stability, judges=list(judges or []), raters=raters) if stability is not None else None


def judge_tables(
    ratings: RatingsLike,
    judges: Sequence[str],
    options: JudgeOptions = JudgeOptions(),
    *,
    metrics: pl.DataFrame | None = None,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    metrics_id_col: str | None = None,
) -> JudgeTables:
    """``agree --judge J [--judge K …]``: the judge table (``docs/design/raters.md#judge`` with the intervals of
    ``docs/guide/judges.md#judge-intervals``), with ``options.length_bias`` the LB table (needs ``metrics``) and
    with ``options.differences`` the DIFF table. ``notes`` holds the judge-only scores, the metrics-table ids
    without a rating and, when the ratings name conversations but no ``cluster_col`` is given, the note that
    the intervals treat replies as independent.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        judges: The judges' rater names.
        options: Resamples, seed, level, ``n_min``, cluster column and the tables asked for.
        metrics: The metrics table with the reply lengths (``--metrics-table``).
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        metrics_id_col: The metrics table's id column; ``None``: ``id_col``.
    """
    if options.length_bias and metrics is None:
        raise ConfigError("--length-bias needs --metrics-table (the table with the reply lengths)",
                          hint="e.g. --metrics-table metrics.csv --length-col resp_words")  # fmt: skip
    columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    labels = cluster_labels(ratings, options.cluster_col, metrics=metrics, id_col=id_col, metrics_id_col=metrics_id_col,
                            reserved=(rater_col, criterion_col, score_col))  # fmt: skip
    shared = {"n_resamples": options.n_resamples, "seed": options.seed, "confidence_level": options.confidence_level,
              "n_min": options.n_min, "exchangeable": options.exchangeable, "cluster_labels": labels,
              "min_clusters": options.min_clusters}  # fmt: skip
    result = judge_table(ratings, list(judges), **columns, **shared, levels=options.levels)
    notes = list(result.notes)
    lb = None
    if options.length_bias:
        assert metrics is not None
        lb_result = length_bias_table(ratings, list(judges), metrics, length_col=options.length_col, metrics_id_col=metrics_id_col,
                                      **columns, **shared)  # fmt: skip
        lb, notes = lb_result.table, notes + lb_result.notes
    diff = differences_table(ratings, list(judges), **columns, **shared) if options.differences else None
    note = independence_note(ratings_table(ratings).columns + (metrics.columns if metrics is not None else []), options.cluster_col, "agree")
    return JudgeTables(result.table, result.confusion, lb, diff, notes + ([note] if note else []), result.scale_note)
