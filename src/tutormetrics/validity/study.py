"""The in-memory validity study that ``validate``, ``run`` and the API share: ratings → targets (+ θ) → Spearman table.

:func:`validate_metrics` takes a metrics frame, ratings (a frame, or :class:`~tutormetrics.psychometrics.ratings.Ratings`
already cleaned) and θ tables, builds the targets once (:func:`study_targets`: the rating targets, then each θ
table, θ estimated by the MFRM when asked and none is given) and correlates every metric with every target
(``docs/statistics.md#spearman-tables-validate``). Nothing is read from or written to disk here: ``validate``
reads a metrics table and writes the table; ``run`` (:mod:`tutormetrics.runs`) scores first and writes the folder.

Example:
    >>> import polars as pl
    >>> metrics = pl.DataFrame({"exchange_id": [str(i) for i in range(12)], "resp_words": [float(i) for i in range(12)]})
    >>> ratings = pl.DataFrame({"exchange_id": [str(i) for i in range(12)], "rater": ["a"] * 12,
    ...                         "criterion": ["clear"] * 12, "score": [0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1]})
    >>> study = validate_metrics(metrics, ratings=ratings, options=ValidateOptions(estimate_theta=False, ci="none"))
    >>> round(study.validity.table["rho"][0], 3)
    0.71
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log, NoProgress, Progress, quiet
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.validity.correlate import ValidityResult, correlate_with_targets
from tutormetrics.validity.options import ValidateOptions

__all__ = [
    "StudyResult", "StudyTargets", "ValidateOptions", "estimate_theta_targets", "study_targets", "target_tables",
    "validate_metrics",
]


@dataclass
class StudyTargets:
    """The targets of one study, in join order: ``tables`` named ``names`` (``ratings``, then ``theta``, ``theta2``,
    ...); ``ratings`` the rating targets (the first table, ``None`` without ratings); ``fit`` the MFRM when θ was
    estimated here, with its ``warnings`` for people."""

    tables: list[pl.DataFrame]
    names: list[str]
    ratings: pl.DataFrame | None = None
    fit: Any | None = None
    warnings: list[str] = field(default_factory=list)
    fitted: Ratings | None = None  # the ratings θ was fitted on (one rater label with --raters exchangeable)


@dataclass
class StudyResult:
    """What :func:`validate_metrics` computed: the Spearman result, the θ fit when estimated, the cleaned ratings and
    the rating targets they gave (``run`` writes them as ``targets.csv``, the report reads them there)."""

    validity: ValidityResult
    theta_fit: Any | None = None  # MFRMResult when θ was estimated here
    long_ratings: bool = False
    ratings: Ratings | None = None  # the ratings the targets came from, cleaned once
    warnings: list[str] = field(default_factory=list)  # θ's: slot-like raters, one rater on mixed scales
    targets: pl.DataFrame | None = None  # the rating targets as correlated (id + one column per target)
    theta_pv: pl.DataFrame | None = None  # --theta-pv: the theta_pv rows (also in validity.table)


def target_tables(
    ratings: pl.DataFrame | None, theta: Sequence[pl.DataFrame], id_col: str = "exchange_id"
) -> tuple[list[pl.DataFrame], list[str]]:
    """The target tables in join order with their names: the rating targets (``ratings``), then each θ table
    (``theta``, ``theta2``, ...). A column of a later θ table whose name an earlier table holds gets the table's
    number (``theta`` → ``theta2``); other names stay (``docs/statistics.md#targets``).

    Args:
        ratings: The rating targets (``None``: θ only).
        theta: θ target tables, in the order given.
        id_col: The id column of every table (never renamed).

    >>> t = pl.DataFrame({"exchange_id": ["a"], "theta": [0.1]})
    >>> tables, names = target_tables(None, [t, t.rename({"theta": "theta_neg"}), t])
    >>> names, [x.columns[1:] for x in tables]
    (['theta', 'theta2', 'theta3'], [['theta'], ['theta_neg'], ['theta3']])
    """
    tables = [] if ratings is None else [ratings]
    names = [] if ratings is None else ["ratings"]
    taken = {c for t in tables for c in t.columns if c != id_col}
    for k, given in enumerate(theta):
        table = given
        if k:
            table = given.rename({c: f"{c}{k + 1}" for c in table.columns if c != id_col and c in taken})
        taken.update(c for c in table.columns if c != id_col)
        tables.append(table)
        names.append("theta" if k == 0 else f"theta{k + 1}")
    return tables, names


@frame_inputs(ratings=Ratings)
def estimate_theta_targets(
    ratings: pl.DataFrame | Ratings,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
) -> tuple[pl.DataFrame, Any]:
    """θ (the EAP of the descriptive MFRM, ``docs/statistics.md#many-facet-rasch-model-theta``) from long ratings, as a
    target table plus the fit.

    Args:
        ratings: Long ratings: a frame, or a :class:`~tutormetrics.psychometrics.ratings.Ratings` (whose own column
            names win over the keywords).
        id_col: The exchange id column.
        rater_col: The rater column (left out of the model when absent).
        criterion_col: The criterion column.
        score_col: The score column.

    Returns:
        ``(targets, fit)``: ``targets`` has ``id_col`` and ``theta``; ``fit`` is the MFRM result.
    """
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.ratings import theta_to_targets

    if isinstance(ratings, Ratings):
        c = ratings.columns()
        id_col, rater_col, criterion_col, score_col = c["id_col"], c["rater_col"], c["criterion_col"], c["score_col"]
    present = ratings.frame.columns if isinstance(ratings, Ratings) else ratings.columns
    rater = rater_col if rater_col in present else None
    fit = fit_mfrm(ratings, id_col=id_col, rater_col=rater, criterion_col=criterion_col, score_col=score_col)
    return theta_to_targets(fit.theta_table(), id_col=id_col), fit


def _estimated_theta(rated: Ratings, log: Log, progress: Progress) -> tuple[pl.DataFrame | None, Any | None, list[str], Ratings | None]:
    """θ estimated from the ratings (long ones only), with the fit, θ's warnings and the ratings fitted; each said on
    ``log``, the fit named in ``progress`` while it runs."""
    if not rated.is_long:
        log("θ: not estimated (the ratings are wide; the MFRM needs long ratings)")
        return None, None, [], None
    log("no θ given: estimating θ from the ratings with a many-facet Rasch model (MML, EAP)")
    from tutormetrics.psychometrics.exchangeable import theta_ratings

    fitted, notes, warned = theta_ratings(rated)
    for line in [*notes, *warned]:
        log(line)
    progress.detail(f"θ: MFRM fit (MML, {fitted.frame.height:,} ratings)")
    table, fit = estimate_theta_targets(fitted)
    log(f"      {fit.summary()}")
    return table, fit, warned, fitted


def study_targets(
    rated: Ratings | None, theta: Sequence[pl.DataFrame], options: ValidateOptions, *, id_col: str = "exchange_id",
    log: Log = quiet, progress: Progress | None = None,
) -> StudyTargets:
    """The targets of a study, built once: the rating targets (``--aggregate``, ``--targets-from``), then the θ tables
    given, or θ estimated from long ratings when none is given and ``options.estimate_theta`` asks for it.

    Args:
        rated: The cleaned ratings, or ``None`` (θ tables only).
        theta: θ target tables (:func:`~tutormetrics.psychometrics.ratings.theta_to_targets`).
        options: The study's options.
        id_col: The id column of every table.
        log: Where notes go.
        progress: Where the θ fit is named while it runs (:func:`~tutormetrics.progress.step_progress`).
    """
    rating_targets = rated.targets(options.aggregate, options.targets_from, log=log) if rated is not None else None  # type: ignore[arg-type]
    fit, warned, thetas, fitted = None, [], list(theta), None
    if rated is not None and not thetas and options.estimate_theta:
        estimated, fit, warned, fitted = _estimated_theta(rated, log, progress if progress is not None else NoProgress())
        thetas = [estimated] if estimated is not None else []
    tables, names = target_tables(rating_targets, thetas, id_col)
    return StudyTargets(tables, names, rating_targets, fit, warned, fitted)


def _check_study(rated: Ratings | None, theta: Sequence[pl.DataFrame], vo: ValidateOptions, fit_tables: Any = None) -> None:
    if rated is None and not theta:
        raise ConfigError("nothing to correlate against", hint="pass ratings and/or theta")
    if vo.theta_pv:
        from tutormetrics.validity.theta_pv import check_theta_pv

        check_theta_pv(rated, bool(theta), fit_tables is not None, vo)
    if rated is None and vo.targets_from:
        raise ConfigError("--targets-from needs --ratings")
    from tutormetrics.metrics.columns import check_named_columns

    check_named_columns(vo.targets_from, "--targets-from", what="target")  # ids are never targets
    check_named_columns(vo.control, "--control", what="control")


def _inherited_targets(metrics: pl.DataFrame, tables: Sequence[pl.DataFrame], id_col: str, vo: ValidateOptions) -> bool:
    """Whether several metric rows share a target id (then they inherit it); exit 2 without ``--cluster-col``."""
    from tutormetrics.validity.join import _id_series
    from tutormetrics.validity.level import check_shared_ids

    if id_col not in metrics.columns:
        return False
    ids = {v for t in tables if id_col in t.columns for v in _id_series(t, id_col, vo.id_type, "targets").to_list() if v is not None}
    keyed = metrics.with_columns(_id_series(metrics, id_col, vo.id_type, "metrics").alias(id_col))
    return check_shared_ids(keyed, id_col, ids, vo.cluster_col)


@frame_inputs("metrics", "theta", "fit_tables", ratings=Ratings)
def validate_metrics(
    metrics: pl.DataFrame,
    *,
    ratings: pl.DataFrame | Ratings | None = None,
    theta: Sequence[pl.DataFrame] = (),
    options: ValidateOptions | None = None,
    id_col: str = "exchange_id",
    metric_cols: Sequence[str] | None = None,
    ratings_source: str = "ratings",
    fit_tables: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    log: Log = quiet,
    progress: Progress | None = None,
) -> StudyResult:
    """Every metric column against every target of the ratings and θ tables (``docs/statistics.md#spearman-tables-validate``).

    Metric rows that share a rating id inherit it (a conversation's rating on each of its turns): that needs
    ``cluster_col``, and the table then keeps ρ and the cluster interval but no p
    (``docs/guide/dialogues.md``, :func:`~tutormetrics.validity.level.mark_inherited`).

    Args:
        metrics: The metrics table, with ``id_col``.
        ratings: Long or wide ratings: a frame (cleaned here under ``options``) or a
            :class:`~tutormetrics.psychometrics.ratings.Ratings` already cleaned.
        theta: θ target tables (the first is named ``theta``, then ``theta2``, ...).
        options: The study's options (default :class:`ValidateOptions`).
        id_col: The id metrics and targets are joined on.
        metric_cols: The metric columns (``run`` passes the Scorer's); default every numeric column but the id.
        ratings_source: The ratings' name in messages.
        fit_tables: ``--theta-pv`` with ``--theta``: THETA and FACETS of the first θ table (the fit the PVs are
            drawn from; ``docs/measurement.md#theta-pv``).
        log: Where notes and the θ fit's summary go.
        progress: Where the step under way is named (θ fit, correlations, plausible values;
            :func:`~tutormetrics.progress.step_progress`); ``None``: nowhere.

    Returns:
        The :class:`StudyResult`.
    """
    vo = options or ValidateOptions()
    steps = progress if progress is not None else NoProgress()
    rated = vo.clean_ratings(ratings, id_col=id_col, source=ratings_source, log=log) if ratings is not None else None
    _check_study(rated, theta, vo, fit_tables)
    targets = study_targets(rated, theta, vo, id_col=id_col, log=log, progress=steps)
    inherited = _inherited_targets(metrics, targets.tables, id_col, vo)
    steps.detail(_correlating(targets, vo, id_col, metrics.height))
    result = correlate_with_targets(
        metrics, targets.tables, vo, names=targets.names, id_col=id_col, metrics_cols=metric_cols, id_type=vo.id_type,
        control=vo.control or None, cluster_col=vo.cluster_col,
    )  # fmt: skip
    if inherited:  # one rating over several rows: ρ and the cluster interval, no p
        from tutormetrics.validity.level import mark_inherited

        result = replace(result, table=mark_inherited(result.table))
    pv = None
    if vo.theta_pv and rated is not None:  # docs/measurement.md#theta-pv: the theta_pv rows after the theta rows
        from tutormetrics.validity.theta_pv import theta_pv_rows

        steps.detail(f"θ plausible values ({vo.theta_pv:,} draws)")
        pv = theta_pv_rows(metrics, result, rated, targets, vo, fit_tables, log)
        result = replace(result, table=pv[1])
    long = rated is not None and rated.is_long
    return StudyResult(result, targets.fit, long, rated, targets.warnings, targets.ratings, pv[0] if pv else None)


def _correlating(targets: StudyTargets, vo: ValidateOptions, id_col: str, n_rows: int) -> str:
    """The correlation step as a progress detail.

    >>> t = StudyTargets([pl.DataFrame({"exchange_id": ["a"], "clear": [1.0], "kind": [0.0]})], ["ratings"])
    >>> _correlating(t, ValidateOptions(n_resamples=2000), "exchange_id", 1655)
    'correlations: 2 targets, 1,655 rows, bca intervals of 2,000 resamples'
    """
    n_targets = sum(len(t.columns) - (id_col in t.columns) for t in targets.tables)
    text = f"correlations: {n_targets:,} targets, {n_rows:,} rows"
    return text + (f", {vo.ci} intervals of {vo.n_resamples:,} resamples" if vo.ci in ("bca", "percentile") else "")
