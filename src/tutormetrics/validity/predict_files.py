"""``predict`` from files (``docs/commands/predict.md#from-python``): the metrics table with its column descriptions,
θ tables and the embeddings side file are read here, then :func:`~tutormetrics.validity.predict_study.predict_study`
fits; the ratings come in already read by :func:`~tutormetrics.psychometrics.ratings_input.read_ratings`.

Example:
    >>> from tutormetrics.validity.predict_options import PredictColumns
    >>> predict_files("metrics.csv", columns=PredictColumns(group_col="conversation_id"))
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: nothing to predict
      hint: pass --ratings and/or --theta
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tutormetrics.errors import ConfigError
from tutormetrics.ids import IdKey, read_keyed
from tutormetrics.progress import Log, Progress, quiet
from tutormetrics.psychometrics.ratings import Ratings, theta_to_targets
from tutormetrics.psychometrics.ratings_input import RatingOptions
from tutormetrics.stats.group_columns import group_columns, with_group_label
from tutormetrics.validity.predict_options import PredictColumns, PredictOptions
from tutormetrics.validity.predict_study import predict_study
from tutormetrics.validity.predictive import PredictResult

__all__ = ["predict_files"]

PathLike = str | os.PathLike[str]


def predict_files(
    metrics: PathLike,
    *,
    columns: PredictColumns,
    ratings: Ratings | None = None,
    theta: Sequence[PathLike] = (),
    embeddings: PathLike | None = None,
    key: IdKey | None = None,
    rating_options: RatingOptions | None = None,
    options: PredictOptions | None = None,
    log: Log = quiet,
    progress: Progress | None = None,
) -> PredictResult:
    """Grouped cross-validated prediction of the ratings' criteria and the θ tables' columns from a metrics table.

    The metric columns and families are the table's manifest's (else the one fallback of
    :func:`~tutormetrics.metrics.columns.describe_frame`), never guessed here; the id parts of a composite
    ``key`` are ids, not features.

    Args:
        metrics: The metrics table (csv/parquet/jsonl), with the id and ``columns.group_col``.
        columns: The group, feature, control and judge columns.
        ratings: Long or wide ratings, read once (``read_ratings``).
        theta: θ tables (targets ``theta`` and their other numeric columns).
        embeddings: The embeddings side file of ``score --embeddings`` (read with ``options.features``
            ``embedding`` or ``both``).
        key: The id every table is joined on (default ``exchange_id``).
        rating_options: How the ratings become targets (aggregate, ``targets_from``, id type).
        options: The models, folds, intervals and features.
        log: Where notes and the join summary go.
        progress: Where the folds fitted are counted and the fold under way is named
            (:func:`~tutormetrics.progress.step_progress`); ``None``: nowhere.
    """
    from tutormetrics.metrics.columns import describe_frame, metric_names
    from tutormetrics.validity.representation import check_features, load_representation

    key, opts = key or IdKey.of(None), options or PredictOptions()
    if ratings is None and not theta:
        raise ConfigError("nothing to predict", hint="pass --ratings and/or --theta")
    opts.check()
    id_col, group_col = key.column, columns.group_col
    wanted = embeddings is not None and opts.features != "metrics"
    source = load_representation(embeddings, metrics, opts.representation) if wanted else None  # type: ignore[arg-type]
    check_features(opts.features, source)
    if embeddings is not None and not wanted:
        log("note: --embeddings is read only with --features embedding or both")
    group_cols = group_columns(group_col) or [group_col]
    frame = read_keyed(metrics, key, id_columns=("exchange_id", "conversation_id", id_col, *group_cols))
    frame = frame.drop([p for p in key.id_parts if p not in group_cols and p in frame.columns])  # ids, not features
    if len(group_cols) > 1:  # a group is the combination (docs/guide/paper.md#group-col)
        frame, group_col = with_group_label(frame, group_cols, source=str(metrics))
    described = describe_frame(frame, source=metrics, exclude={id_col, group_col, *group_cols, "exchange_id", "conversation_id"},
                               log=log, command="predict")  # fmt: skip
    return predict_study(
        frame, group_col=group_col, ratings=ratings, id_col=id_col,
        theta=[theta_to_targets(read_keyed(p, key, drop_parts=True), id_col=id_col) for p in theta],
        metrics_cols=columns.metrics_cols or metric_names(described) or None, controls=columns.controls,
        judge=columns.judge, judge_cols=columns.judge_cols, rating_options=rating_options, options=opts,
        ratings_source=ratings.source if ratings is not None else "ratings",
        families={d.name: d.family for d in described if d.family != "other"},  # an unknown column: its own family
        log=log, representation=source, progress=progress,
    )  # fmt: skip
