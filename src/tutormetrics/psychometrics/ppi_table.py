"""``ppi``: a criterion's mean human score, overall and per group, from judge labels on every item and human
labels on a few (``docs/design/predictive.md#ppi``), optionally with dialogue-robust intervals (``cluster_col``), strata
(``strata_col``) or as a label budget (:func:`ppi_plan_table`); ``docs/guide/judges.md#cluster-ppi``.
Formulas in :mod:`tutormetrics.stats.ppi`, :mod:`~tutormetrics.stats.ppi_strata` and
:mod:`~tutormetrics.stats.ppi_plan`.

Example:
    >>> judge = pl.DataFrame({"exchange_id": [f"e{i}" for i in range(6)], "rater": "llm", "criterion": "c",
    ...                       "score": [1, 0, 1, 1, 0, 1]})
    >>> human = pl.DataFrame({"exchange_id": ["e0", "e1", "e2"], "rater": "h", "criterion": "c", "score": [1, 0, 0]})
    >>> t = ppi_table(judge, human)
    >>> t.select("n_labeled", "n_unlabeled", "estimate").row(0)
    (3, 3, 0.3333333333333333)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.exchange_labels import LABEL, exchange_labels, independence_note
from tutormetrics.psychometrics.ppi_options import AGGREGATES, PPIOptions, parse_lambda
from tutormetrics.psychometrics.ratings import Ratings, RatingsLike, cleaned_long, long_to_targets, ratings_table
from tutormetrics.stats.group_columns import group_columns, with_group_label
from tutormetrics.stats.ppi import PPIResult, ppi_mean, ppi_mean_clustered
from tutormetrics.stats.ppi_plan import Plan, ppi_plan
from tutormetrics.stats.ppi_strata import combine_strata, share_weights

__all__ = [
    "CLUSTER_COLUMNS", "COLUMNS", "PLAN_COLUMNS", "STRATA_COLUMNS", "check_ppi_options", "parse_lambda", "ppi_plan_study", "ppi_plan_table", "ppi_study", "ppi_table", "read_strata_weights",
]  # fmt: skip

COLUMNS: tuple[str, ...] = (
    "criterion", "group", "n_labeled", "n_unlabeled", "lambda", "estimate", "se", "ci_low", "ci_high", "classical",
    "classical_se", "classical_ci_low", "classical_ci_high", "judge_mean", "n_effective", "reason",
)  # fmt: skip
#: After ``reason`` with ``strata_col``, then with ``cluster_col`` (``docs/guide/judges.md#ppi-columns``).
STRATA_COLUMNS: tuple[str, ...] = ("stratum", "n_strata")
CLUSTER_COLUMNS: tuple[str, ...] = ("n_clusters", "n_clusters_labeled", "se_rows", "design_effect")
PLAN_COLUMNS: tuple[str, ...] = (
    "criterion", "group", "n_labeled", "n_pool", "half_width", "sd_human", "sd_judge", "rho", "deff_classical", "deff_ppi",
    "n_classical", "n_ppi", "lambda_plan", "achieved_half_width", "labels_saved", "reason",
)  # fmt: skip
_INTS = {"n_labeled", "n_unlabeled", "n_strata", "n_clusters", "n_clusters_labeled", "n_pool", "n_classical", "n_ppi", "labels_saved"}
_TEXT = {"criterion", "group", "reason", "stratum"}


def _judge_scores(long: pl.DataFrame, judge: str | None, id_col: str, rater_col: str) -> pl.DataFrame:
    """The judge's score per exchange and criterion, from cleaned long labels (``_id, [_rater], _crit, _score``)."""
    if "_rater" in long.columns:
        raters = sorted(set(long.get_column("_rater").to_list()))
        if judge is None:
            if len(raters) > 1:
                raise InputSchemaError(f"the judge labels hold {len(raters)} raters ({', '.join(raters[:5])})",
                                       hint="pick one with --judge NAME")  # fmt: skip
        elif judge not in raters:
            raise InputSchemaError(f"the judge {judge!r} is not a rater of the judge labels", hint=f"raters: {', '.join(raters[:10])}")
        else:
            long = long.filter(pl.col("_rater") == judge)
    elif judge is not None:
        raise InputSchemaError(f"--judge needs a rater column ({rater_col!r}) in the judge labels")
    return long_to_targets(long, id_col=id_col)


class _Inputs(NamedTuple):
    """Judge and human scores per exchange (``_id`` text), the criteria and the per-exchange labels."""

    judge: pl.DataFrame
    human: pl.DataFrame
    criteria: list[str]
    labels: dict[str, pl.DataFrame]


def _check_join(jw: pl.DataFrame, hw: pl.DataFrame, id_col: str) -> None:
    """Refuse human labels none of whose ids is a judge-labelled exchange (``docs/guide/judges.md#errors``)."""
    if hw.height and not hw["_id"].is_in(jw["_id"].implode()).any():
        preview = lambda s: ", ".join(repr(v) for v in s.head(3).to_list())  # noqa: E731
        raise InputSchemaError(
            f"no {id_col} of the human labels is among the judge labels: judge labels have {preview(jw['_id'])}, "
            f"human labels have {preview(hw['_id'])}",
            hint=f"ids are compared as text; check that --id names the same column ({id_col}) in both files",
        )


def _read_inputs(judge_labels: RatingsLike, human_labels: RatingsLike, judge: str | None, aggregate: str,
                 label_cols: Mapping[str, str | None], src: dict[str, str], log: Log) -> _Inputs:  # fmt: skip
    """Clean both files (a :class:`~tutormetrics.psychometrics.ratings.Ratings` is cleaned already), pivot them to
    one score per exchange and criterion, read the per-exchange labels."""
    if aggregate not in AGGREGATES:
        raise ConfigError(f"--aggregate {aggregate!r} does not give one human score per exchange", hint="use mean, min or max")
    judge_long = cleaned_long(judge_labels, source="judge labels", **src)  # one clear message for a bad file
    human_long = cleaned_long(human_labels, source="human labels", **src)
    id_col = src["id_col"]
    jw = _judge_scores(judge_long, judge, id_col, src["rater_col"]).with_columns(pl.col(id_col).cast(pl.String).alias("_id"))
    hw = long_to_targets(human_long, id_col=id_col, aggregate=aggregate).with_columns(pl.col(id_col).cast(pl.String).alias("_id"))  # type: ignore[arg-type]
    _check_join(jw, hw, id_col)
    table = ratings_table(judge_labels)
    group_cols = group_columns(label_cols.get("--group-col"))
    if len(group_cols) > 1:  # a group is the combination (docs/guide/paper.md#group-col)
        table, joined = with_group_label(table, group_cols, source="judge labels")
        label_cols = {**label_cols, "--group-col": joined}
    labels = {option: exchange_labels(table, id_col, col, option=option, source="judge labels")
              for option, col in label_cols.items() if col}  # fmt: skip
    if "--strata-col" in labels and "--cluster-col" in labels:
        _check_strata_nest(labels["--cluster-col"], labels["--strata-col"], label_cols)
    criteria = [c for c in jw.columns if c not in (id_col, "_id")]
    missing = [c for c in hw.columns if c not in (id_col, "_id") and c not in criteria]
    if missing:
        log(f"note: human criteria without judge labels, skipped: {', '.join(missing)}")
    return _Inputs(jw, hw, criteria, labels)


def _check_strata_nest(clusters: pl.DataFrame, strata: pl.DataFrame, cols: Mapping[str, str | None]) -> None:
    """A cluster lies in one stratum (its items cannot be split between two independent estimates)."""
    both = clusters.join(strata.rename({LABEL: "_stratum"}), on="_id")
    split = both.group_by(LABEL, maintain_order=True).agg(pl.col("_stratum").n_unique().alias("_k")).filter(pl.col("_k") > 1)
    if split.height:
        raise InputSchemaError(
            f"{split.height:,} cluster(s) of --cluster-col {cols['--cluster-col']} lie in two or more strata of "
            f"--strata-col {cols['--strata-col']}, e.g. {split[LABEL][0]!r}",
            hint="strata must hold whole clusters (e.g. stratify by a dialogue-level column)",
        )


def _criterion_frame(inputs: _Inputs, crit: str) -> tuple[pl.DataFrame, int]:
    """``_id, _f, _y`` (+ ``_group``, ``_cluster``, ``_stratum``) of one criterion and the human-labelled
    exchanges without a judge score."""
    j = inputs.judge.select("_id", pl.col(crit).alias("_f")).filter(pl.col("_f").is_not_null() & pl.col("_f").is_not_nan())
    h = (inputs.human.select("_id", pl.col(crit).alias("_y")).filter(pl.col("_y").is_not_null() & pl.col("_y").is_not_nan())
         if crit in inputs.human.columns else pl.DataFrame(schema={"_id": pl.String, "_y": pl.Float64}))  # fmt: skip
    both = j.join(h, on="_id", how="left", maintain_order="left")
    for option, name in (("--group-col", "_group"), ("--cluster-col", "_cluster"), ("--strata-col", "_stratum")):
        if option in inputs.labels:
            both = both.join(inputs.labels[option].rename({LABEL: name}), on="_id", how="left", maintain_order="left")
    return both, h.filter(~pl.col("_id").is_in(j["_id"].implode())).height


def _parts(both: pl.DataFrame) -> Iterator[tuple[str, pl.DataFrame]]:
    """The pooled row's items, then each group's (sorted as text)."""
    yield "", both
    if "_group" in both.columns:
        for g in sorted(set(both["_group"].drop_nulls().to_list())):
            yield g, both.filter(pl.col("_group") == g)


def _estimate(part: pl.DataFrame, lam: float | str, confidence_level: float) -> PPIResult:
    """One PPI row of the items in ``part`` (cluster-robust when they carry ``_cluster``)."""
    lab, unl = part.filter(pl.col("_y").is_not_null()), part.filter(pl.col("_y").is_null())
    args = (lab["_y"].to_numpy(), lab["_f"].to_numpy(), unl["_f"].to_numpy())
    if "_cluster" in part.columns:
        return ppi_mean_clustered(*args, lab["_cluster"].to_numpy(), unl["_cluster"].to_numpy(), lam=lam, confidence_level=confidence_level)
    return ppi_mean(*args, lam=lam, confidence_level=confidence_level)


def _row(crit: str, group: str, r: PPIResult, extra: list[str], **more: Any) -> dict[str, Any]:
    return {
        "criterion": crit, "group": group, "n_labeled": r.n_labeled, "n_unlabeled": r.n_unlabeled, "lambda": r.lam,
        "estimate": r.estimate, "se": r.se, "ci_low": r.ci_low, "ci_high": r.ci_high, "classical": r.classical,
        "classical_se": r.classical_se, "classical_ci_low": r.classical_ci_low, "classical_ci_high": r.classical_ci_high,
        "judge_mean": r.judge_mean, "n_effective": r.n_effective, "reason": ";".join([*r.reasons, *extra]),
        "n_clusters": r.n_clusters, "n_clusters_labeled": r.n_clusters_labeled, "se_rows": r.se_rows, "design_effect": r.design_effect,
        **more,
    }  # fmt: skip


def _strata_weights(weights: Mapping[str, float] | None, present: list[str]) -> np.ndarray | None:
    """The given weights of the strata present (exit 2 when one is missing); None for the data's shares."""
    if weights is None:
        return None
    missing = [s for s in present if s not in weights]
    if missing:
        raise ConfigError(f"--strata-weights has no weight for stratum {missing[0]!r} ({len(missing)} missing)",
                          hint="give a weight for every stratum of --strata-col")  # fmt: skip
    w = np.array([float(weights[s]) for s in present])
    if not w.sum() > 0:
        raise ConfigError("--strata-weights: the strata present all weigh 0", hint=f"strata: {', '.join(present[:10])}")
    return w


def _stratified_rows(crit: str, group: str, part: pl.DataFrame, lam: float | str, confidence_level: float,
                     weights: Mapping[str, float] | None, extra: list[str]) -> list[dict[str, Any]]:  # fmt: skip
    """The combined row of one criterion × group, then one row per stratum (text-sorted)."""
    strata = sorted(set(part["_stratum"].to_list()))
    results = [_estimate(part.filter(pl.col("_stratum") == s), lam, confidence_level) for s in strata]
    w = _strata_weights(weights, strata)
    clusters = {}
    if "_cluster" in part.columns:
        clusters = {"n_clusters": part["_cluster"].n_unique(), "n_clusters_labeled": part.filter(pl.col("_y").is_not_null())["_cluster"].n_unique()}
    combined = combine_strata(results, share_weights(results) if w is None else w, lam=None if lam == "auto" else float(lam),
                              confidence_level=confidence_level, **clusters)  # fmt: skip
    rows = [_row(crit, group, combined, extra, stratum=None, n_strata=len(strata))]
    rows += [_row(crit, group, r, [], stratum=s, n_strata=None) for s, r in zip(strata, results, strict=True)]
    return rows


def read_strata_weights(table: pl.DataFrame, source: str = "--strata-weights") -> dict[str, float]:
    """W.csv (``stratum, weight``) as stratum (text) → weight; exit 2 on a missing column, a repeated or empty
    stratum, a weight that is not a finite number ≥ 0, or weights that are all 0.

    >>> read_strata_weights(pl.DataFrame({"stratum": ["a", "b"], "weight": [1, 3]}))
    {'a': 1.0, 'b': 3.0}
    """
    missing = [c for c in ("stratum", "weight") if c not in table.columns]
    if missing:
        raise InputSchemaError(f"{source}: no column {missing[0]!r}", hint="give a table with columns stratum, weight")
    strata = table.get_column("stratum").cast(pl.String).str.strip_chars()
    weights = table.get_column("weight").cast(pl.Float64, strict=False)
    for i, (s, w) in enumerate(zip(strata.to_list(), weights.to_list(), strict=True), start=1):
        if not s:
            raise InputSchemaError(f"{source}: row {i} has an empty stratum", hint="name every stratum")
        if w is None or not np.isfinite(w) or w < 0:
            raise ConfigError(f"{source}: stratum {s!r} has weight {table.get_column('weight')[i - 1]!r}",
                              hint="weights are finite numbers >= 0 (they are normalised over the strata present)")  # fmt: skip
    if strata.is_duplicated().any():
        raise InputSchemaError(f"{source}: stratum {strata.filter(strata.is_duplicated())[0]!r} appears twice", hint="one row per stratum")
    out = dict(zip(strata.to_list(), weights.to_list(), strict=True))
    if not sum(out.values()) > 0:
        raise ConfigError(f"{source}: every weight is 0", hint="give each stratum its population share")
    return out


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pl.DataFrame:
    schema = {c: (pl.Int64 if c in _INTS else pl.String if c in _TEXT else pl.Float64) for c in columns}
    return pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema=schema, orient="row")


@frame_inputs(judge_labels=Ratings, human_labels=Ratings)
def ppi_table(
    judge_labels: RatingsLike,
    human_labels: RatingsLike,
    *,
    judge: str | None = None,
    group_col: str | None = None,
    lam: float | str = 1.0,
    confidence_level: float = 0.95,
    aggregate: str = "mean",
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    cluster_col: str | None = None,
    strata_col: str | None = None,
    strata_weights: Mapping[str, float] | None = None,
    log: Log = quiet,
) -> pl.DataFrame:
    """One row per criterion × group (pooled row first, ``group`` empty; groups sorted as text).

    ``cluster_col`` (an ALL.csv column, one label per exchange): cluster-robust se and, after ``reason``,
    :data:`CLUSTER_COLUMNS`. ``strata_col``: per criterion × group the combined row (``stratum`` empty,
    ``n_strata`` = K) then one row per stratum, :data:`STRATA_COLUMNS` after ``reason``; ``strata_weights``
    (stratum → weight, e.g. population shares) replaces the data's shares. Human labels that match no judged
    exchange stop the run (exit 2).

    Args:
        judge_labels: Long judge labels (every exchange).
        human_labels: Long human labels (the labelled subset).
        judge: The judge's rater name; ``None``: the judge labels hold one rater.
        group_col: Column of the judge labels to report per group; ``None``: pooled only.
        lam: λ in [0, 1], or ``"auto"`` (PPI++ tuning).
        confidence_level: Interval level, in (0, 1).
        aggregate: How several human scores of an exchange combine: ``mean``, ``min`` or ``max``.
        id_col: The exchange id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        cluster_col: Cluster column (one label per exchange); ``None``: independent exchanges.
        strata_col: Stratum column of the judge labels; ``None``: no strata.
        strata_weights: Stratum → weight; ``None``: the data's shares.
        log: Where the notes go.
    """
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"--confidence-level must lie in (0, 1), got {confidence_level}")
    if strata_weights is not None and strata_col is None:
        raise ConfigError("--strata-weights needs --strata-col", hint="name the stratum column of the judge labels")
    lam = parse_lambda(lam) if isinstance(lam, str) else parse_lambda(str(lam))
    src = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    cols = {"--group-col": group_col, "--cluster-col": cluster_col, "--strata-col": strata_col}
    inputs = _read_inputs(judge_labels, human_labels, judge, aggregate, cols, src, log)
    if strata_weights is not None:
        present = set(inputs.labels["--strata-col"][LABEL].to_list())
        absent = [s for s in strata_weights if s not in present]
        if absent:
            log(f"note: --strata-weights: stratum {', '.join(map(repr, absent[:5]))} is not in the judge labels, ignored")
    rows: list[dict[str, Any]] = []
    for crit in inputs.criteria:
        both, orphan = _criterion_frame(inputs, crit)
        extra = [f"human_without_judge_{orphan}"] if orphan else []
        for g, part in _parts(both):
            if strata_col:
                rows.extend(_stratified_rows(crit, g, part, lam, confidence_level, strata_weights, extra if g == "" else []))
            else:
                rows.append(_row(crit, g, _estimate(part, lam, confidence_level), extra if g == "" else []))
    columns = COLUMNS + (STRATA_COLUMNS if strata_col else ()) + (CLUSTER_COLUMNS if cluster_col else ())
    return _frame(rows, columns)


def _plan_row(crit: str, group: str, part: pl.DataFrame, half_width: float, confidence_level: float) -> dict[str, Any]:
    lab, unl = part.filter(pl.col("_y").is_not_null()), part.filter(pl.col("_y").is_null())
    y, f, u = lab["_y"].to_numpy(), lab["_f"].to_numpy(), unl["_f"].to_numpy()
    deff = {}
    if "_cluster" in part.columns and y.size >= 2:
        tuned = _estimate(part, "auto", confidence_level)
        rows_se = float(np.std(y) / np.sqrt(y.size))
        deff = {"deff_classical": tuned.classical_se**2 / rows_se**2 if rows_se > 0 else 1.0,
                "deff_ppi": tuned.design_effect if np.isfinite(tuned.design_effect) else 1.0}  # fmt: skip
    plan: Plan = ppi_plan(y, f, u, half_width, confidence_level=confidence_level, **deff)
    out = {k: getattr(plan, k) for k in PLAN_COLUMNS if hasattr(plan, k)}
    return {**out, "criterion": crit, "group": group, "reason": ";".join(plan.reasons)}


@frame_inputs(judge_labels=Ratings, human_labels=Ratings)
def ppi_plan_table(
    judge_labels: RatingsLike,
    human_labels: RatingsLike,
    *,
    half_width: float,
    judge: str | None = None,
    group_col: str | None = None,
    cluster_col: str | None = None,
    confidence_level: float = 0.95,
    aggregate: str = "mean",
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    log: Log = quiet,
) -> pl.DataFrame:
    """``ppi --plan --half-width h``: per criterion × group the human labels for a ±h interval, classical and
    PPI++ (:func:`~tutormetrics.stats.ppi_plan.ppi_plan`), columns :data:`PLAN_COLUMNS`; with ``cluster_col``
    the pilot's design effects (each at least 1) enter both.

    Args:
        judge_labels: Long judge labels (every exchange).
        human_labels: Long human labels (the pilot).
        half_width: The target interval half-width h (score units, > 0).
        judge: The judge's rater name; ``None``: the judge labels hold one rater.
        group_col: Column of the judge labels to plan per group; ``None``: pooled only.
        cluster_col: Cluster column (one label per exchange); ``None``: no design effects.
        confidence_level: Interval level, in (0, 1).
        aggregate: How several human scores of an exchange combine: ``mean``, ``min`` or ``max``.
        id_col: The exchange id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        log: Where the notes go.
    """
    if not half_width > 0:
        raise ConfigError(f"--half-width must be > 0, got {half_width:g}", hint="e.g. --plan --half-width 0.05 (score units)")
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"--confidence-level must lie in (0, 1), got {confidence_level}")
    src = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    inputs = _read_inputs(judge_labels, human_labels, judge, aggregate, {"--group-col": group_col, "--cluster-col": cluster_col}, src, log)
    rows = []
    for crit in inputs.criteria:
        both, _ = _criterion_frame(inputs, crit)
        rows.extend(_plan_row(crit, g, part, half_width, confidence_level) for g, part in _parts(both))
    return _frame(rows, PLAN_COLUMNS)


def check_ppi_options(*, plan: bool, half_width: float | None, strata_col: str | None, strata_weights: object | None) -> None:
    """The option rules of ``ppi`` (``docs/guide/judges.md#errors``): ``--plan`` needs a positive ``--half-width``
    and no ``--strata-col``; ``--half-width`` needs ``--plan``; ``--strata-weights`` needs ``--strata-col``.

    Args:
        plan: ``--plan`` is given.
        half_width: The ``--half-width``; ``None``: not given.
        strata_col: The ``--strata-col``; ``None``: not given.
        strata_weights: The ``--strata-weights``; ``None``: not given.

    >>> check_ppi_options(plan=True, half_width=0.05, strata_col=None, strata_weights=None)
    """
    if plan and half_width is None:
        raise ConfigError("--plan needs --half-width", hint="e.g. --plan --half-width 0.05 (in score units)")
    if half_width is not None and not plan:
        raise ConfigError("--half-width is the target of --plan", hint="add --plan to write the label budget instead of the estimates")
    if half_width is not None and not half_width > 0:
        raise ConfigError(f"--half-width must be > 0, got {half_width:g}", hint="e.g. --half-width 0.05")
    if plan and strata_col is not None:
        raise ConfigError("--plan does not take --strata-col", hint="plan per stratum with --group-col, or drop --strata-col")
    if strata_weights is not None and strata_col is None:
        raise ConfigError("--strata-weights needs --strata-col", hint="name the stratum column of the judge labels")


def ppi_study(
    judge_labels: Ratings, human_labels: Ratings, options: PPIOptions | None = None, *,
    strata_weights: Mapping[str, float] | None = None, log: Log = quiet,
) -> pl.DataFrame:  # fmt: skip
    """``ppi``: :func:`ppi_table` of judge and human labels each read once by
    :func:`~tutormetrics.psychometrics.ratings_input.read_ratings` (their columns: the judge labels')
    under ``options`` (``docs/commands/ppi.md#from-python``), ``strata_weights`` from :func:`read_strata_weights`.
    Judge labels with a conversation column but no ``options.cluster_col`` earn one note on ``log``
    (``docs/guide/judges.md#why-dialogues``).

    Args:
        judge_labels: The judge labels, cleaned.
        human_labels: The human labels, cleaned.
        options: Judge, groups, λ, level, aggregate, cluster and strata columns; ``None``: the defaults.
        strata_weights: Stratum → weight; ``None``: the data's shares.
        log: Where the notes go.

    >>> judge = Ratings.clean(pl.DataFrame({"exchange_id": [f"e{i}" for i in range(6)], "rater": "llm",
    ...                                     "criterion": "c", "score": [1, 0, 1, 1, 0, 1]}))
    >>> human = Ratings.clean(pl.DataFrame({"exchange_id": ["e0", "e1", "e2"], "rater": "h", "criterion": "c",
    ...                                     "score": [1, 0, 0]}))
    >>> ppi_study(judge, human).select("n_labeled", "estimate").row(0)
    (3, 0.3333333333333333)
    """
    o = options or PPIOptions()
    _note_independence(judge_labels, o.cluster_col, log)
    return ppi_table(
        judge_labels, human_labels, judge=o.judge, group_col=o.group_col, lam=o.lam, confidence_level=o.confidence_level,
        aggregate=o.aggregate, cluster_col=o.cluster_col, strata_col=o.strata_col, strata_weights=strata_weights, log=log,
        **judge_labels.columns(),
    )  # fmt: skip


def ppi_plan_study(judge_labels: Ratings, human_labels: Ratings, options: PPIOptions, half_width: float, *, log: Log = quiet) -> pl.DataFrame:
    """``ppi --plan --half-width h``: :func:`ppi_plan_table` under ``options`` (``docs/guide/judges.md#label-budget``);
    ``--strata-col`` is refused (:func:`check_ppi_options`), ``--lambda`` is unused (the plan tunes λ).

    Args:
        judge_labels: The judge labels, cleaned.
        human_labels: The pilot's human labels, cleaned.
        options: Judge, groups, level, aggregate and cluster column.
        half_width: The target interval half-width h (score units, > 0).
        log: Where the notes go.
    """
    check_ppi_options(plan=True, half_width=half_width, strata_col=options.strata_col, strata_weights=None)
    _note_independence(judge_labels, options.cluster_col, log)
    return ppi_plan_table(
        judge_labels, human_labels, half_width=half_width, judge=options.judge, group_col=options.group_col,
        cluster_col=options.cluster_col, confidence_level=options.confidence_level, aggregate=options.aggregate, log=log,
        **judge_labels.columns(),
    )  # fmt: skip


def _note_independence(judge_labels: RatingsLike, cluster_col: str | None, log: Log) -> None:
    """The once-per-run note that the intervals treat replies as independent (``docs/guide/judges.md#why-dialogues``)."""
    note = independence_note(ratings_table(judge_labels).columns, cluster_col, "ppi")
    if note:
        log(f"note: {note}")
