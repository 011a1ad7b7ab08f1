"""An LLM judge validated against human raters (``docs/design/raters.md#judge``).

One rater of the long ratings is the judge; every other rater is a human. Per criterion, the judge is
compared with each human (sorted) and with the human **majority**: the unique most frequent score
among a unit's human ratings (a tie for the top count has no majority; such units are left out and
counted as ``majority_ties_<k>``). On the n units both rated (y = reference, ŷ = judge):

* ``accuracy`` = mean(ŷ = y);
* ``macro_f1`` = mean over the labels present in y or ŷ of ``2TP/(2TP + FP + FN)``;
* ``macro_f1_lenient`` = the same after merging the middle level with the top on a 3-level scale
  (BEA 2025 lenient); = ``macro_f1`` with ≤ 2 levels; NaN with more than 3;
* ``cohen_kappa`` (unweighted), ``krippendorff_alpha`` (nominal) and ``gwet_ac1`` (with the
  criterion's Q categories) from the Q×Q table, and a percentile bootstrap CI of κ over units.

Example:
    >>> t = np.array([[3, 1, 0], [0, 2, 1], [0, 1, 2]])
    >>> round(macro_f1(t), 4), round(macro_f1(lenient_table(t)), 4)
    (0.6984, 0.8901)
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.psychometrics.agreement import _Criterion, clean_ratings, join_reasons, split_criteria
from tutormetrics.psychometrics.leniency import LENIENCY_COLUMNS, POOLED, leniency_columns, pooled_leniency
from tutormetrics.psychometrics.level_scale import LevelScale, as_level_scale, inferred_scale_note
from tutormetrics.psychometrics.multirater_agreement import unit_counts
from tutormetrics.psychometrics.pairwise_agreement import (
    bootstrap_tables,
    cohen_kappa,
    contingency_table,
    gwet_ac,
    krippendorff_alpha,
)
from tutormetrics.psychometrics.ratings import Ratings, RatingsLike
from tutormetrics.psychometrics.resampled_agreement import (
    pair_clusters,
    resampled_tables,
    table_measures,
    unit_clusters,
)
from tutormetrics.stats.bootstrap import percentile_ci
from tutormetrics.stats.cluster_resample import MIN_CLUSTERS, ClusterDraws, percentile_interval

__all__ = [
    "MAJORITY", "JudgeResult", "JudgeSetup", "criterion_references", "judge_setup", "judge_table", "lenient_table", "macro_f1",
    "majority_codes", "row_intervals",
]  # fmt: skip

#: Name of the human-majority reference.
MAJORITY = "majority"

_METRICS = ["accuracy", "macro_f1", "macro_f1_lenient", "cohen_kappa", "krippendorff_alpha", "gwet_ac1"]
_COLUMNS = ["criterion", "judge", "reference", "n", *_METRICS, "kappa_ci_low", "kappa_ci_high", *LENIENCY_COLUMNS, "reason"]
#: Intervals from the shared draws, after ``reason`` (``docs/guide/judges.md#judge-intervals``).
_NEW_CI = ["alpha_ci_low", "alpha_ci_high", "ac1_ci_low", "ac1_ci_high", "f1_ci_low", "f1_ci_high"]


def macro_f1(table: np.ndarray) -> float:
    """Macro-F1 from a confusion table (rows y, columns ŷ) over the labels present in y or ŷ.

    ``F1_k = 2TP_k/(2TP_k + FP_k + FN_k)``; equals scikit-learn's ``f1_score(y, ŷ, average="macro")``.

    Example:
        >>> macro_f1(np.array([[2, 0], [1, 1]]))
        0.7333333333333334
    """
    t = np.asarray(table, dtype=float)
    tp = np.diag(t)
    rows, cols = t.sum(1), t.sum(0)
    present = (rows + cols) > 0
    if not present.any():
        return float("nan")
    f1 = 2 * tp[present] / (rows[present] + cols[present])
    return float(f1.mean())


def lenient_table(table: np.ndarray) -> np.ndarray | None:
    """Merge the middle level with the top of a 3-level table (0 vs {1, 2}); unchanged with ≤ 2 levels;
    ``None`` with more than 3.

    Example:
        >>> lenient_table(np.arange(9).reshape(3, 3)).tolist()
        [[0, 3], [9, 24]]
    """
    t = np.asarray(table)
    q = t.shape[0]
    if q <= 2:
        return t
    if q > 3:
        return None
    merge = np.array([[1, 0], [0, 1], [0, 1]])
    return merge.T @ t @ merge


def majority_codes(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the unique most frequent category (−1 when tied or unrated) and a tie flag.

    Example:
        >>> majority_codes(np.array([[2, 1, 0], [1, 1, 1], [0, 0, 0], [0, 1, 0]]))[0].tolist()
        [0, -1, -1, 1]
    """
    c = np.asarray(counts)
    top = c.max(1)
    rated = top > 0
    tied = rated & ((c == top[:, None]).sum(1) > 1)
    codes = np.where(rated & ~tied, c.argmax(1), -1)
    return codes, tied


class JudgeResult(NamedTuple):
    """The judge table (one row per criterion × reference), the confusion counts and notes for people;
    ``scale_note`` names the criteria whose leniency scale was inferred (empty when every scale was declared)."""

    table: pl.DataFrame
    confusion: pl.DataFrame
    notes: list[str]
    scale_note: str = ""


def _row_metrics(table: np.ndarray, *, n_resamples: int, seed: int, confidence_level: float) -> dict[str, float]:
    """Agreement of ŷ (columns) with y (rows) on one confusion table, with the bootstrap CI of κ
    (today's multinomial draws; none when ``n_resamples`` is 0)."""
    lenient = lenient_table(table)
    out = {
        "accuracy": float(np.trace(table) / table.sum()),
        "macro_f1": macro_f1(table),
        "macro_f1_lenient": float("nan") if lenient is None else macro_f1(lenient),
        "cohen_kappa": float(cohen_kappa(table)),
        "krippendorff_alpha": float(krippendorff_alpha(table)),
        "gwet_ac1": float(gwet_ac(table)),
        "kappa_ci_low": float("nan"),
        "kappa_ci_high": float("nan"),
    }
    if n_resamples > 0:
        boot = cohen_kappa(bootstrap_tables(table, n_resamples, np.random.default_rng(seed)))
        out["kappa_ci_low"], out["kappa_ci_high"] = percentile_ci(boot, confidence_level)
    return out


def _reference_row(
    y_codes: np.ndarray, judge_codes: np.ndarray, values: np.ndarray, scale: np.ndarray, *, n_min: int, **boot: Any
) -> tuple[dict[str, Any], np.ndarray, list[str]]:
    """One row's metrics and leniency columns, the Q×Q confusion table on the criterion's ``scale`` (rows:
    reference; every declared level, ``docs/guide/paper.md#bowker``) and reason codes. Agreement coefficients
    use the observed categories ``values``; the symmetry tests and the confusion output use ``scale``."""
    q = values.size
    both = (y_codes >= 0) & (judge_codes >= 0)
    y, yhat = y_codes[both], judge_codes[both]
    table = contingency_table(y, yhat, q)
    at = np.searchsorted(scale, values)  # observed category -> its position on the scale
    scale_table = contingency_table(at[y], at[yhat], scale.size)
    row: dict[str, Any] = {"n": int(y.size), **{k: float("nan") for k in [*_METRICS, "kappa_ci_low", "kappa_ci_high", *LENIENCY_COLUMNS]}}
    if y.size == 0:
        return row, scale_table, ["too_few"]
    # docs/design/raters.md#judge: with n < n_min the row is flagged too_few, and its values are still reported (the
    # worked example there lists them at n = 9), so a small pilot still shows what it measured
    row.update(_row_metrics(table, **boot))
    shift, shift_reasons = leniency_columns(values[y], values[yhat], scale_table, float(scale[0]), float(scale[-1]), **boot)
    row.update(shift)
    p = table / table.sum()
    p_e = float((p.sum(1) * p.sum(0)).sum())
    reasons = ["too_few"] if y.size < n_min else []
    return row, scale_table, reasons + (["constant"] if np.isclose(p_e, 1.0) else []) + shift_reasons


def row_intervals(
    tables: np.ndarray, values: np.ndarray, *, n: int, n_clusters: int, clustered: bool, min_clusters: int, confidence_level: float
) -> tuple[dict[str, Any], list[str]]:
    """The intervals of one judge × reference row from its resampled tables (B, Q, Q) of the shared draws
    (``docs/guide/judges.md#resamples``): α, AC1 and macro-F1 always; κ and the mean difference too when
    the draws resample clusters. Reasons ``too_few_clusters`` (no interval), ``ci_dropped_<k>`` (the most
    resamples any of the row's intervals left out).

    Args:
        tables: The row's resampled Q×Q tables, shape (B, Q, Q).
        values: The criterion's Q score values.
        n: Units of the row.
        n_clusters: Clusters among the row's units.
        clustered: The draws resample clusters (dialogues), not units.
        min_clusters: Fewest clusters for an interval.
        confidence_level: Interval level, in (0, 1).
    """
    keys = [("alpha", "krippendorff_alpha"), ("ac1", "gwet_ac1"), ("f1", "macro_f1")]
    keys += [("kappa", "cohen_kappa"), ("diff", "mean_diff")] if clustered else []
    out: dict[str, Any] = {f"{k}_ci_{s}": float("nan") for k, _ in keys for s in ("low", "high")}
    if clustered:
        out.update(n_clusters=n_clusters, ci_method="cluster_percentile")
    if clustered and n_clusters < min_clusters:
        out["ci_method"] = "none"
        return out, ["too_few_clusters"]
    if n == 0 or tables.shape[0] == 0:
        if clustered:
            out["ci_method"] = "none"
        return out, []
    measures = table_measures(tables, values)
    dropped = 0
    for prefix, name in keys:
        interval = percentile_interval(measures[name], confidence_level)
        out[f"{prefix}_ci_low"], out[f"{prefix}_ci_high"] = interval.low, interval.high
        dropped = max(dropped, interval.dropped)
    return out, [f"ci_dropped_{dropped}"] if dropped else []


def _check_raters(all_raters: list[str], judges: list[str]) -> list[str]:
    """The human raters (sorted: every rater not named as a judge); errors for an unknown or repeated
    judge, no human, or a human named ``majority``."""
    repeated = sorted({j for j in judges if judges.count(j) > 1})
    if repeated:
        raise ConfigError(f"--judge {', '.join(repeated)} given twice", hint="name each judge once")
    for judge in judges:
        if judge not in all_raters:
            lower = {r.lower(): r for r in all_raters}
            close = [lower[c] for c in difflib.get_close_matches(judge.lower(), list(lower), n=3, cutoff=0.5)]
            hint = f"did you mean {', '.join(close)}?" if close else f"raters in the file: {', '.join(all_raters[:10])}"
            raise InputSchemaError(f"ratings: the judge {judge!r} is not a rater in the file", hint=hint)
    humans = [r for r in all_raters if r not in judges]
    judge = ", ".join(judges)
    if not humans:
        raise InputSchemaError(
            f"ratings: the judge(s) {judge!r} are the only raters; there is no human rater to compare with",
            hint="add the human ratings (same exchange_id and criterion) to the file",
        )
    if MAJORITY in humans:
        raise InputSchemaError(
            f"ratings: a human rater is named {MAJORITY!r}, the name of the human-majority reference",
            hint=f"rename that rater (e.g. {MAJORITY}_rater) before running agree --judge",
        )
    return humans


class JudgeSetup(NamedTuple):
    """The cleaned ratings of a judge study: judges, humans (sorted), criteria and whether the human labels
    are anonymous slots."""

    judges: list[str]
    humans: list[str]
    criteria: list[_Criterion]
    exchangeable: bool


def judge_setup(ratings: RatingsLike, judge: str | Sequence[str], *, exchangeable: bool = False, **columns: str) -> JudgeSetup:
    """Clean the ratings once and check the judges (:func:`judge_table`'s first step, shared by the length-bias
    and differences tables).

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        judge: One judge's rater name, or several.
        exchangeable: Human labels are anonymous slots (``--raters exchangeable``).
        **columns: ``id_col``, ``rater_col``, ``criterion_col``, ``score_col`` of :func:`clean_ratings`.
    """
    judges = [judge] if isinstance(judge, str) else list(judge)
    long = clean_ratings(ratings, exchangeable=exchangeable, **columns)  # type: ignore[arg-type]
    if exchangeable:
        from tutormetrics.psychometrics.exchangeable import slot_labels

        if "_rater" not in long.columns:
            raise InputSchemaError(f"ratings: no rater column {columns['rater_col']!r}, so the judge cannot be found", hint="name it with --rater")
        long = slot_labels(long, keep=judges)
    humans = _check_raters(sorted(long["_rater"].unique().to_list()), judges)
    return JudgeSetup(judges, humans, split_criteria(long), exchangeable)


def criterion_references(
    crit: _Criterion, jname: str, humans: list[str], exchangeable: bool
) -> tuple[list[tuple[str, np.ndarray, list[str]]], list[str]]:
    """The references of judge ``jname`` on one criterion: ``(name, codes per unit, extra reasons)`` for
    each human (sorted) and the majority, and the judge-only scores (a note).

    Args:
        crit: The criterion's coded ratings.
        jname: The judge's rater name.
        humans: The human raters' names.
        exchangeable: Human labels are anonymous slots: only the majority is a reference.
    """
    q = crit.values.size
    jcodes = crit.rater_codes(jname)
    human_sel = np.isin(crit.rater, [crit.raters.index(h) for h in humans if h in crit.raters])
    counts = unit_counts(crit.unit[human_sel], crit.code[human_sel], crit.n_units, q)
    judge_only = [f"{v:g}" for k, v in enumerate(crit.values) if counts[:, k].sum() == 0 and (jcodes == k).any()]
    maj, tied = majority_codes(counts)
    refs = [] if exchangeable else [(h, crit.rater_codes(h), []) for h in humans]
    n_ties = int((tied & (jcodes >= 0)).sum())
    refs.append((MAJORITY, maj, [f"majority_ties_{n_ties}"] if n_ties else []))
    return refs, judge_only


class _TableOptions(NamedTuple):
    n_resamples: int
    seed: int
    confidence_level: float
    n_min: int
    scales: Mapping[str, tuple[np.ndarray, bool]]  # per criterion: its levels and whether they were declared
    cluster_labels: Mapping[str, str] | None
    min_clusters: int


def _criterion_rows(
    c: int, crit: _Criterion, setup: JudgeSetup, opts: _TableOptions
) -> tuple[list[Any], list[Any], list[Any], dict[tuple[int, int], tuple[np.ndarray, ...]]]:
    """Every judge × reference row of criterion ``c`` (keyed by judge, criterion, reference index), its
    confusion cells (on the criterion's scale), notes, and each (judge, reference)'s pairs for the pooled row;
    the intervals of all rows come from one pass over the criterion's draws."""
    values = np.asarray(crit.values, float)
    scale, declared = opts.scales[crit.name]
    inferred = [] if declared else ["scale_inferred"]
    ids = np.asarray(crit.ids, dtype=object)
    clustered = opts.cluster_labels is not None
    # with dialogues, κ and the mean difference take the shared cluster draws instead of their own
    boot = {"n_resamples": 0 if clustered else opts.n_resamples, "seed": opts.seed, "confidence_level": opts.confidence_level}
    q = values.size
    pairs, pending, cells, notes = [], [], [], []
    pooled: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}
    for j, jname in enumerate(setup.judges):
        refs, judge_only = criterion_references(crit, jname, setup.humans, setup.exchangeable)
        if judge_only:
            who = "the judge" if len(setup.judges) == 1 else f"the judge {jname}"
            notes.append(((j, c), f"{crit.name}: {who} uses score(s) {', '.join(judge_only)} that no human used"))
        jcodes = crit.rater_codes(jname)
        block = []
        for r, (ref, y_codes, extra) in enumerate(refs):
            row, table, reasons = _reference_row(y_codes, jcodes, values, scale, n_min=opts.n_min, **boot)
            mask = (y_codes >= 0) & (jcodes >= 0)
            pending.append(((j, c, r), {"criterion": crit.name, "judge": jname, "reference": ref, **row}, [*reasons, *extra, *inferred], mask))
            pairs.append((y_codes, jcodes))
            block.extend((jname, crit.name, ref, float(scale[a]), float(scale[b]), int(table[a, b]))
                         for a in range(scale.size) for b in range(scale.size))  # fmt: skip
            ones = np.ones(int(mask.sum()))
            pooled[(j, r)] = (ids[mask], values[y_codes[mask]], values[jcodes[mask]], scale[0] * ones, scale[-1] * ones)
        cells.append(((j, c), block))
    clusters = unit_clusters(crit.ids, opts.cluster_labels)
    tables = resampled_tables(clusters, ClusterDraws(clusters.n_clusters, opts.n_resamples, opts.seed, c), pairs, q)
    keyed = []
    for k, (key, row, reasons, mask) in enumerate(pending):
        ci, ci_reasons = row_intervals(tables[:, k], values, n=int(row["n"]), n_clusters=pair_clusters(clusters, mask), clustered=clustered,
                                       min_clusters=opts.min_clusters, confidence_level=opts.confidence_level)  # fmt: skip
        keyed.append((key, {**row, **ci, "reason": join_reasons([*reasons, *ci_reasons])}))
    return keyed, cells, notes, pooled


def _criterion_scales(criteria: Sequence[_Criterion], scale: LevelScale) -> dict[str, tuple[np.ndarray, bool]]:
    """Per criterion, its levels and whether they were declared (``docs/guide/paper.md#scale``); exit 2 for a
    criterion named ``(all)``, a ``--levels CRIT=L`` naming no criterion, or a score off a declared scale."""
    names = [c.name for c in criteria]
    if POOLED in names:
        raise InputSchemaError(f"ratings: a criterion is named {POOLED!r}, the name of the pooled row of agree --judge",
                               hint="rename that criterion")  # fmt: skip
    scale.check_criteria(names)
    out: dict[str, tuple[np.ndarray, bool]] = {}
    for crit in criteria:
        declared = scale.levels_for(crit.name)
        if declared is None:
            out[crit.name] = (np.asarray(crit.values, float), False)
            continue
        levels = np.asarray(declared, float)
        off = [float(v) for v in crit.values if not np.any(levels == v)]
        if off:
            raise InputSchemaError(
                f"ratings: criterion {crit.name!r} has score(s) {', '.join(f'{v:g}' for v in off)} off its declared scale "
                f"{', '.join(f'{v:g}' for v in levels)}",
                hint="fix them, declare them in --levels, or drop them with --drop-out-of-scale",
            )
        out[crit.name] = (levels, True)
    return out


def _pooled_rows(
    setup: JudgeSetup, parts: Mapping[tuple[int, int], list[tuple[np.ndarray, ...]]], opts: _TableOptions
) -> list[tuple[tuple[int, int, int], dict[str, Any]]]:
    """The ``(all)`` row of each judge × reference, keyed to sort after the judge's criteria
    (``docs/guide/paper.md#pooled``). Units are the draws: exchanges, or their dialogues with ``cluster_labels``."""
    any_inferred = not all(declared for _, declared in opts.scales.values())
    reason = join_reasons(["pooled", "scale_inferred" if any_inferred else ""])
    refs = [] if setup.exchangeable else list(setup.humans)
    out = []
    for (j, r), chunks in sorted(parts.items()):
        ids, y, yhat, lo, hi = (np.concatenate([ch[k] for ch in chunks]) for k in range(5))
        units = ids if opts.cluster_labels is None else np.asarray([opts.cluster_labels.get(str(i), str(i)) for i in ids], dtype=object)
        values = pooled_leniency(units.astype(str), y, yhat, lo, hi, n_resamples=opts.n_resamples, seed=opts.seed,
                                 confidence_level=opts.confidence_level)  # fmt: skip
        row: dict[str, Any] = {c: float("nan") for c in [*_COLUMNS, *_NEW_CI]}
        row.update(values)
        row.update(criterion=POOLED, judge=setup.judges[j], reference=[*refs, MAJORITY][r], n=int(values["n"]), reason=reason)
        if opts.cluster_labels is not None:  # the units resampled are the dialogues
            row.update(n_clusters=int(np.unique(units.astype(str)).size), ci_method="cluster_percentile")
        out.append(((j, len(setup.criteria), r), row))
    return out


def _schema(clustered: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {c: pl.Float64 for c in [*_COLUMNS, *_NEW_CI]}
    schema.update({"criterion": pl.String, "judge": pl.String, "reference": pl.String, "n": pl.Int64, "reason": pl.String})
    if clustered:
        schema.update({"n_clusters": pl.Int64, "ci_method": pl.String})
    return schema


@frame_inputs(ratings=Ratings)
def judge_table(
    ratings: RatingsLike,
    judge: str | Sequence[str],
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    n_min: int = 10,
    levels: LevelScale | Sequence[float] | None = None,
    exchangeable: bool = False,
    cluster_labels: Mapping[str, str] | None = None,
    min_clusters: int = MIN_CLUSTERS,
) -> JudgeResult:
    """Each judge (``judge``: one name or several, ``docs/design/studies.md#leniency``) against each human rater and the
    human majority, per criterion; every rater not named as a judge is a human. Rows come judge by
    judge (in the order given), then criterion, then reference; after a judge's criterion rows, one
    pooled row per reference with criterion ``(all)`` (``docs/guide/paper.md#pooled``).

    Table columns: ``criterion, judge, reference, n, accuracy, macro_f1, macro_f1_lenient,
    cohen_kappa, krippendorff_alpha, gwet_ac1, kappa_ci_low, kappa_ci_high``, the leniency columns
    of :mod:`tutormetrics.psychometrics.leniency` (on the criterion's scale: ``levels``, a list for every
    criterion or a :class:`~tutormetrics.psychometrics.level_scale.LevelScale`, else the observed categories
    with reason ``scale_inferred``; ``scale_note`` names those), ``reason`` (also ``too_few``, ``constant``,
    ``majority_ties_<k>``, ``no_discordant``, ``stuart_maxwell_singular``, ``too_few_clusters``,
    ``ci_dropped_<k>``, ``pooled``), then
    ``alpha_ci_low, alpha_ci_high, ac1_ci_low, ac1_ci_high, f1_ci_low, f1_ci_high`` from the shared draws
    (``docs/guide/judges.md#resamples``) and, with ``cluster_labels`` (exchange id as text → its
    dialogue), ``n_clusters, ci_method``: then every interval, ``kappa_ci_*`` and ``diff_ci_*`` included,
    resamples dialogues (none below ``min_clusters``). Without ``cluster_labels`` κ's and the mean
    difference's intervals keep their own draws, so those columns never move. Confusion columns:
    ``judge, criterion, reference, reference_score, judge_score, count`` (every cell of the Q×Q table on the
    scale). The agreement coefficients' categories are the criterion's distinct scores over all raters, judge
    included; a score only the judge uses is reported in ``notes``. ``exchangeable`` (``docs/design/datasets.md#exchangeable-raters``): the human labels are anonymous slots, so
    the only reference is ``majority`` (the judge stays named and rates a unit once).

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        judge: One judge's rater name, or several.
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        n_resamples: Bootstrap resamples per interval (0: no intervals).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        n_min: Fewest paired units for a statistic.
        levels: The criterion scale (``--levels``); ``None``: the observed categories.
        exchangeable: Human labels are anonymous slots (``--raters exchangeable``).
        cluster_labels: Exchange id as text → its dialogue; ``None``: resample units.
        min_clusters: Fewest clusters for a cluster interval.

    Example:
        >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["h", "llm"] * 2,
        ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
        >>> judge_table(df, "llm", n_min=2, n_resamples=0).table.select("criterion", "reference", "accuracy").rows()
        [('c', 'h', 0.5), ('c', 'majority', 0.5), ('(all)', 'h', 0.5), ('(all)', 'majority', 0.5)]
    """
    columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    setup = judge_setup(ratings, judge, exchangeable=exchangeable, **columns)
    scales = _criterion_scales(setup.criteria, as_level_scale(levels))
    opts = _TableOptions(n_resamples, seed, confidence_level, n_min, scales, cluster_labels, min_clusters)
    keyed, cells, notes = [], [], []
    pooled: dict[tuple[int, int], list[tuple[np.ndarray, ...]]] = {}
    for c, crit in enumerate(setup.criteria):
        rows, blocks, crit_notes, crit_pairs = _criterion_rows(c, crit, setup, opts)
        keyed += rows
        cells += blocks
        notes += crit_notes
        for key, part in crit_pairs.items():
            pooled.setdefault(key, []).append(part)
    keyed += _pooled_rows(setup, pooled, opts)
    schema = _schema(cluster_labels is not None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [{k: r.get(k) for k in schema} for _, r in sorted(keyed, key=lambda kr: kr[0])]
        table = pl.DataFrame(rows, schema=schema, orient="row")
    confusion = pl.DataFrame(
        [cell for _, block in sorted(cells, key=lambda kb: kb[0]) for cell in block],
        schema={"judge": pl.String, "criterion": pl.String, "reference": pl.String, "reference_score": pl.Float64, "judge_score": pl.Float64, "count": pl.Int64},
        orient="row",
    )
    ranges = {name: (float(lv[0]), float(lv[-1])) for name, (lv, declared) in scales.items() if not declared}
    return JudgeResult(table, confusion, [note for _, note in sorted(notes, key=lambda kn: kn[0])], inferred_scale_note(ranges))
