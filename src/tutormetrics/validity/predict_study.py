"""Inputs of ``predict`` (``docs/commands/predict.md``): targets from ratings and θ, features, controls, judge.

:func:`predict_study` turns a metrics table, ratings (long or wide) and θ tables into the joined frame
that :func:`tutormetrics.validity.predictive.predict_frame` fits, with ``validate``'s join and rating
options; ``--judge NAME`` takes one rater of long ratings out of the targets and uses its scores as
predictions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns
from tutormetrics.progress import Log, Progress, quiet
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.ratings_input import RatingOptions, clean_ratings_frame
from tutormetrics.validity.join import metric_columns, refuse_control_targets
from tutormetrics.validity.predictive import PredictOptions, PredictResult, predict_frame
from tutormetrics.validity.representation import RepresentationSource, check_features

_JUDGE_PREFIX = "__judge__:"


def registry_families(n_layers: int = 48) -> dict[str, str]:
    """Column → family of every registered metric family (the first family listing a column wins).

    >>> registry_families()["resp_words"], registry_families()["ttr"]
    ('length', 'lexical_diversity')
    """
    from tutormetrics.metrics.columns import column_families, declared_columns  # the one registry reading

    return column_families(declared_columns(None, n_layers).values())


def _require_sklearn() -> None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ConfigError("predict needs scikit-learn", hint="pip install 'scikit-learn>=1.6'") from None


def parse_judge_cols(values: Sequence[str] | None) -> tuple[dict[str, str], str | None]:
    """``["mi=j_mi", "j_all"]`` → ``({"mi": "j_mi"}, "j_all")`` (targets → column, and the bare column)."""
    per: dict[str, str] = {}
    bare: str | None = None
    for item in values or []:
        target, sep, col = item.partition("=")
        if sep:
            if not target.strip() or not col.strip():
                raise ConfigError(f"--judge-col {item!r} is not TARGET=COL or COL", hint="e.g. --judge-col mistake_identification=llm_mi")
            per[target.strip()] = col.strip()
        else:
            if bare is not None:
                raise ConfigError("more than one bare --judge-col", hint="a bare --judge-col COL serves every target; give TARGET=COL for the others")
            bare = item.strip()
    return per, bare


def _split_judge(rated: Ratings, judge: str) -> tuple[Ratings, Ratings]:
    """The human raters' ratings and the judge's (one rater of the long ratings), both as cleaned."""
    long = rated.long
    assert long is not None
    if "_rater" not in long.columns or rated.rater_col is None:
        raise InputSchemaError(f"--judge needs a rater column, but {rated.rater_col!r} is not in the ratings",
                               hint="pass long ratings with a rater column, or use --judge-col")  # fmt: skip
    names = sorted(set(long.get_column("_rater").to_list()))
    if judge not in names:
        raise InputSchemaError(f"ratings: the judge {judge!r} is not a rater in the file", hint=f"raters: {', '.join(names[:10])}")
    if len(names) < 2:
        raise InputSchemaError(f"ratings: the judge {judge!r} is the only rater; there are no human targets",
                               hint="add the human ratings to the file")  # fmt: skip
    in_long = long.get_column("_rater") == judge
    in_frame = rated.frame.get_column(rated.rater_col).cast(pl.String) == judge
    humans = replace(rated, frame=rated.frame.filter(~in_frame), long=long.filter(~in_long))
    return humans, replace(rated, frame=rated.frame.filter(in_frame), long=long.filter(in_long), source=f"{rated.source} (judge {judge})")


def _rated(ratings: pl.DataFrame | Ratings, ro: RatingOptions, id_col: str, source: str, log: Log) -> Ratings:
    """``ratings`` as :class:`~tutormetrics.psychometrics.ratings.Ratings`: as given when already read with
    :func:`~tutormetrics.psychometrics.ratings_input.read_ratings`, else cleaned once under ``ro``
    (:func:`~tutormetrics.psychometrics.ratings_input.clean_ratings_frame`: ``--na``, ``--recode``, the scale)."""
    if isinstance(ratings, Ratings):
        return ratings
    return clean_ratings_frame(ratings, ro, id_col=id_col, source=source, log=log)


def _rating_targets(rated: Ratings, judge: str | None, ro: RatingOptions) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The rating targets (criteria after ``--aggregate``), and with ``--judge`` the judge's own as predictions."""
    judged = None
    if judge is not None:
        if not rated.is_long:
            raise InputSchemaError("--judge needs long ratings (id, rater, criterion, score)", hint="or use --judge-col")
        rated, judged = _split_judge(rated, judge)
    targets = rated.targets(ro.aggregate, ro.targets_from)  # type: ignore[arg-type]
    return targets, None if judged is None else judged.targets(ro.aggregate, ro.targets_from)  # type: ignore[arg-type]


def _check_controls(metrics: pl.DataFrame, controls: list[str], target_cols: list[str]) -> None:
    """Controls are numeric, not constant and not targets (as for ``validate --control``)."""
    refuse_control_targets(controls, target_cols)
    for c in controls:
        col = metrics.get_column(c)
        if not col.dtype.is_numeric():
            raise InputSchemaError(f"control column {c!r} is {col.dtype}, not numeric", hint="pick a numeric control such as resp_words")
        vals = col.cast(pl.Float64).drop_nulls().drop_nans()
        if vals.len() == 0 or vals.min() == vals.max():
            raise InputSchemaError(f"control column {c!r} is constant or empty", hint="a constant control explains nothing; drop it")


def _features(metrics: pl.DataFrame, id_col: str, metrics_cols: Sequence[str] | None, excluded: set[str]) -> list[str]:
    """The feature columns: ``--metrics-cols``, or every numeric non-boolean metric column; never a group, control or
    judge column."""
    if metrics_cols:
        features = [f for f in metric_columns(metrics, id_col=id_col, columns=list(metrics_cols)) if f not in excluded]
    else:
        features = [c for c in metric_columns(metrics, id_col=id_col) if c not in excluded and metrics.schema[c] != pl.Boolean]
    if not features:
        raise InputSchemaError("no feature column", hint="pass --metrics-cols, or a metrics table with numeric metric columns")
    return features


def _join_judge(joined: pl.DataFrame, judge_table: pl.DataFrame, judge: str | None, target_cols: list[str], id_col: str,
                id_type: str) -> tuple[pl.DataFrame, dict[str, str]]:  # fmt: skip
    """The judge's targets joined as prediction columns (``__judge__:<target>``), and target → its column."""
    from tutormetrics.validity.join import _id_series

    judge_table = judge_table.rename({c: _JUDGE_PREFIX + c for c in judge_table.columns if c != id_col})
    jt = judge_table.with_columns(_id_series(judge_table, id_col, id_type, "judge").alias(id_col))
    ids = _id_series(joined, id_col, id_type, "metrics")
    joined = joined.with_columns(ids.alias("__jid")).join(
        jt.rename({id_col: "__jid"}), on="__jid", how="left", maintain_order="left"
    ).drop("__jid")
    judge_map = {c: _JUDGE_PREFIX + c for c in target_cols if _JUDGE_PREFIX + c in joined.columns}
    if not judge_map:
        raise InputSchemaError(f"the judge {judge!r} rated none of the criteria")
    return joined, judge_map


def _check_one_row_per_id(metrics: pl.DataFrame, tables: Sequence[pl.DataFrame], id_col: str, id_type: str) -> None:
    """Several metric rows per target id (a copy of an exchange) are exit 2, ids compared as the join compares them."""
    from tutormetrics.validity.join import _id_series
    from tutormetrics.validity.level import check_one_row_per_id

    ids = {v for t in tables for v in _id_series(t, id_col, id_type, "targets").to_list() if v is not None}
    keyed = metrics.select(_id_series(metrics, id_col, id_type, "metrics").alias(id_col))
    check_one_row_per_id(keyed, id_col, ids, command="predict", source="targets")


@frame_inputs("metrics", "theta", ratings=Ratings)
def predict_study(
    metrics: pl.DataFrame,
    *,
    group_col: str,
    ratings: pl.DataFrame | Ratings | None = None,
    theta: Sequence[pl.DataFrame] = (),
    id_col: str = "exchange_id",
    metrics_cols: Sequence[str] | None = None,
    controls: Sequence[str] = (),
    judge: str | None = None,
    judge_cols: Sequence[str] | None = None,
    rating_options: RatingOptions | None = None,
    options: PredictOptions | None = None,
    families: Mapping[str, str] | None = None,
    ratings_source: str = "ratings",
    log: Log = quiet,
    representation: RepresentationSource | None = None,
    progress: Progress | None = None,
) -> PredictResult:
    """Targets (criteria after ``aggregate``, then θ, in ``validate``'s order), features, controls and judge →
    :func:`predict_frame` (``docs/commands/predict.md``).

    Args:
        metrics: The metrics table, with ``id_col`` and ``group_col``.
        group_col: The column whose groups the folds keep whole (a dialogue).
        ratings: Long or wide ratings: :class:`~tutormetrics.psychometrics.ratings.Ratings` as read by
            :func:`~tutormetrics.psychometrics.ratings_input.read_ratings` (used as they are), or a frame (cleaned
            once under ``rating_options``).
        theta: θ target tables (named and ordered as in :func:`~tutormetrics.validity.study.target_tables`).
        id_col: The id metrics and targets are joined on.
        metrics_cols: The feature columns (default: every numeric non-boolean metric column).
        controls: Metrics columns in every model but ``judge``.
        judge: A rater of the long ratings whose scores are predictions (the targets aggregate the others).
        judge_cols: ``TARGET=COL`` or a bare ``COL``: metrics columns holding a judge's value.
        rating_options: The ratings' columns, aggregate, scale and id type.
        options: The models, folds and intervals.
        families: Feature → family for ``importance="drop"`` (default: the registry's).
        ratings_source: The ratings' name in messages.
        log: Where the join summary and notes go.
        representation: The embeddings side file for ``options.features`` ``embedding``/``both``
            (:func:`~tutormetrics.validity.representation.load_representation`).
        progress: Where the folds fitted are counted (:func:`~tutormetrics.validity.predictive.predict_frame`).
    """
    from tutormetrics.validity.join import join_targets
    from tutormetrics.validity.study import target_tables

    ro, opts = rating_options or RatingOptions(), options or PredictOptions()
    opts.check()
    check_features(opts.features, representation)
    _require_sklearn()
    if ratings is None and not theta:
        raise ConfigError("nothing to predict", hint="pass --ratings and/or --theta")
    if judge is not None and judge_cols:
        raise ConfigError("--judge and --judge-col exclude each other", hint="name the judge as a rater or as a metrics column")
    require_columns(metrics, [id_col], source="metrics", option="--id")
    require_columns(metrics, [group_col], source="metrics", option="--group-col", also=f"carry an input column with `score --keep {group_col}`")
    controls = list(dict.fromkeys(c.strip() for c in controls if c.strip()))
    require_columns(metrics, controls, source="metrics", option="--control")
    per_target, bare = parse_judge_cols(judge_cols)
    jcols = list(dict.fromkeys([*per_target.values(), *([bare] if bare else [])]))
    require_columns(metrics, jcols, source="metrics", option="--judge-col")
    if ratings is None and judge is not None:
        raise ConfigError("--judge needs --ratings")
    rating_targets, judge_table = None, None
    if ratings is not None:
        rating_targets, judge_table = _rating_targets(_rated(ratings, ro, id_col, ratings_source, log), judge, ro)
    tables, names = target_tables(rating_targets, theta, id_col)
    target_cols = [c for t in tables for c in t.columns if c != id_col]
    _check_controls(metrics, controls, target_cols)
    unknown = [t for t in per_target if t not in target_cols]
    if unknown:
        raise InputSchemaError(f"--judge-col names unknown target(s) {', '.join(map(repr, unknown))}",
                               hint=f"targets: {', '.join(target_cols)}")  # fmt: skip
    _check_one_row_per_id(metrics, tables, id_col, ro.id_type)
    features = _features(metrics, id_col, metrics_cols, {group_col, *controls, *jcols})
    frame = metrics.select(id_col, *dict.fromkeys([group_col, *features, *controls, *jcols]))
    joined, report = join_targets(frame, *tables, id_col=id_col, names=names, id_type=ro.id_type)
    log(report.summary())
    if judge_table is not None:
        joined, judge_map = _join_judge(joined, judge_table, judge, target_cols, id_col, ro.id_type)
    else:
        judge_map = {t: col for t in target_cols if (col := per_target.get(t, bare))}
    log(f"predict: {len(features)} features, {len(controls)} control(s), {len(target_cols)} target(s), "
        f"{opts.folds} folds, model {opts.model}")  # fmt: skip
    fam = dict(families) if families is not None else (registry_families() if opts.importance == "drop" else {})
    block = None
    if representation is not None and opts.features != "metrics":
        ids = [str(i) for i in metrics.get_column(id_col).cast(pl.String).to_list()]
        block = representation.block_for(joined.get_column(id_col).cast(pl.String).to_list(), ids, opts.representation)
        log(f"predict: representation {opts.representation} ({block.shape[1]:,} columns → {opts.components} principal "
            "components in each training fold)")  # fmt: skip
    return predict_frame(
        joined, targets=target_cols, features=features, group_col=group_col, controls=controls,
        judge_cols=judge_map, families=fam, id_col=id_col, options=opts, log=log, representation=block, progress=progress,
    )  # fmt: skip
