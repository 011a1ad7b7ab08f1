"""The agreement table: per criterion, the many-rater coefficients (``docs/design/raters.md#many-raters``) then the two-rater block.

The many-rater coefficients (exact agreement, Fleiss' κ on the modal units, Krippendorff's α at three
levels, Gwet's AC1, bootstrap CI of α) come from :mod:`tutormetrics.psychometrics.multirater_agreement`,
the two-rater coefficients (Cohen's κ, Scott's π, Gwet's AC1/AC2, Krippendorff's α from a Q×Q table) from
:mod:`tutormetrics.psychometrics.pairwise_agreement`. With more than two raters the two-rater block uses the
pair given in ``raters`` or, by default, the first two raters in sorted order, and says so in ``reason``
(``first_two_of_<k>_raters``).

Example:
    >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["a", "b"] * 2,
    ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
    >>> agreement_table(df, n_resamples=0, n_min=2)["kappa"].to_list()
    [0.0]
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns
from tutormetrics.psychometrics.kappa_paradox import PARADOX_COLUMNS
from tutormetrics.psychometrics.multirater_agreement import (
    alpha_bootstrap,
    alpha_resampled,
    exact_agreement,
    fleiss_kappa_modal,
    gwet_ac1_counts,
    krippendorff_alpha_counts,
    unit_counts,
)
from tutormetrics.psychometrics.pairwise_agreement import bootstrap_tables, contingency_table, pair_statistics
from tutormetrics.psychometrics.ratings import Ratings, RatingsLike, cleaned_long, ratings_table
from tutormetrics.psychometrics.resampled_agreement import UnitClusters, pair_clusters, resampled_tables, unit_clusters
from tutormetrics.stats.bootstrap import percentile_ci
from tutormetrics.stats.cluster_resample import MIN_CLUSTERS, ClusterDraws, percentile_interval

__all__ = ["SharedDraws", "agreement_table", "clean_ratings", "join_reasons", "split_criteria"]


_MULTI = ["exact", "fleiss_kappa", "krippendorff_alpha", "alpha_ordinal", "alpha_interval", "gwet_ac1"]
_BASE = ["pa", "prevalence", "kappa", "scott_pi", "ac1", "alpha_nominal", *PARADOX_COLUMNS]
_ORDINAL = ["kappa_quadratic", "ac2_quadratic", "alpha_quadratic"]


class _Criterion(NamedTuple):
    """The cleaned ratings of one criterion: unit index, rater code and category code per rating."""

    name: str
    unit: np.ndarray
    rater: np.ndarray
    code: np.ndarray
    values: np.ndarray
    n_units: int
    raters: list[str]
    ids: tuple[object, ...] = ()  # the unit ids, in unit order (sorted, as the dense rank numbers them)

    def rater_codes(self, name: str) -> np.ndarray:
        """Per unit, the category code given by rater ``name`` (−1 where it did not rate the unit)."""
        codes = np.full(self.n_units, -1)
        if name in self.raters:
            sel = self.rater == self.raters.index(name)
            codes[self.unit[sel]] = self.code[sel]
        return codes


def clean_ratings(
    ratings: RatingsLike, *, id_col: str, rater_col: str, criterion_col: str, score_col: str, exchangeable: bool = False
) -> pl.DataFrame:
    """Long ratings through :func:`~tutormetrics.psychometrics.ratings.clean_long_ratings` (a
    :class:`~tutormetrics.psychometrics.ratings.Ratings` is not cleaned again), missing scores dropped:
    columns ``_id, _rater, _crit, _score``. ``exchangeable`` (``docs/design/datasets.md#exchangeable-raters``): the rater column may be
    absent and a label may repeat within a unit (``_rater`` is then missing or not unique per unit).

    Args:
        ratings: Long ratings (a table, a path or a cleaned :class:`~tutormetrics.psychometrics.ratings.Ratings`).
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        exchangeable: Rater labels are anonymous slots (``--raters exchangeable``).
    """
    if exchangeable and not isinstance(ratings, Ratings):
        ratings = Ratings.clean(ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col,
                                score_col=score_col, exchangeable=True)  # fmt: skip
    needed = [id_col, criterion_col, score_col] if exchangeable else [id_col, rater_col, criterion_col, score_col]
    require_columns(ratings_table(ratings), needed, source="ratings")
    long = cleaned_long(
        ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col
    )
    long = long.filter(pl.col("_score").is_not_null())
    if long.height == 0:
        raise InputSchemaError("ratings: no scores (the table is empty or every score is missing)")
    infinite = long.filter(pl.col("_score").is_infinite())
    if infinite.height:
        raise InputSchemaError(
            f"ratings: {infinite.height} score(s) are infinite, e.g. for {id_col}={infinite['_id'][0]!r}",
            hint="scores must be finite numbers (e.g. 0/1 or 0-2)",
        )
    return long


def split_criteria(long: pl.DataFrame) -> list[_Criterion]:
    """One :class:`_Criterion` per criterion (first-appearance order); units are the criterion's ids in
    sorted order, raters its raters in sorted order, categories its distinct scores over all raters,
    sorted (``docs/design/raters.md#categories``)."""
    out = []
    for (crit,), sub in long.group_by("_crit", maintain_order=True):
        coded = sub.select(
            (pl.col("_id").rank("dense") - 1).alias("unit"),
            (pl.col("_rater").rank("dense") - 1).alias("rater"),
            pl.col("_score"),
        )
        unit = coded["unit"].to_numpy().astype(np.int64)
        scores = coded["_score"].to_numpy()
        values = np.unique(scores)
        out.append(
            _Criterion(
                name=str(crit),
                unit=unit,
                rater=coded["rater"].to_numpy().astype(np.int64),
                code=np.searchsorted(values, scores),
                values=values,
                n_units=int(unit.max()) + 1 if unit.size else 0,
                raters=sorted(sub["_rater"].unique().to_list()),
                ids=tuple(sub["_id"].unique().sort().to_list()),
            )
        )
    return out


def _pick_pair(all_raters: list[str], raters: tuple[str, str] | None) -> tuple[tuple[str, str | None], str]:
    """The two raters of the two-rater block and the note ``first_two_of_<k>_raters`` (or "")."""
    if raters is not None:
        missing = [r for r in raters if r not in all_raters]
        if missing or len(raters) != 2 or raters[0] == raters[1]:
            raise ConfigError(f"raters {raters!r} must be two distinct raters of {all_raters}")
        return (raters[0], raters[1]), ""
    if len(all_raters) < 2:
        return (all_raters[0] if all_raters else "", None), ""
    note = f"first_two_of_{len(all_raters)}_raters" if len(all_raters) > 2 else ""
    return (all_raters[0], all_raters[1]), note


def _nan_stats(cols: list[str]) -> dict[str, float]:
    return {k: float("nan") for k in cols}


class SharedDraws(NamedTuple):
    """The dialogue draws of one criterion (``docs/guide/judges.md#many-raters``): its units' clusters, the
    draws and the fewest clusters for an interval."""

    clusters: UnitClusters
    draws: ClusterDraws
    min_clusters: int

    def too_few(self, mask: np.ndarray | None = None) -> bool:
        """Whether the units (all, or those in ``mask``) fall in fewer than ``min_clusters`` clusters."""
        n = self.clusters.n_clusters if mask is None else pair_clusters(self.clusters, mask)
        return n < self.min_clusters


def _cluster_intervals(boot: dict[str, np.ndarray], confidence_level: float) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Percentile intervals of resampled statistics and ``ci_dropped_<k>`` (the most any one left out)."""
    out, dropped = {}, 0
    for k, v in boot.items():
        interval = percentile_interval(v, confidence_level)
        out[k], dropped = (interval.low, interval.high), max(dropped, interval.dropped)
    return out, [f"ci_dropped_{dropped}"] if dropped else []


def multirater_row(
    crit: _Criterion, *, n_min: int, n_resamples: int, seed: int, confidence_level: float, shared: SharedDraws | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The many-rater block of one criterion (``docs/design/raters.md#many-raters``) and its reason codes; with ``shared`` the
    interval of α resamples dialogues.

    Args:
        crit: The criterion's coded ratings.
        n_min: Fewest units with two ratings for a statistic.
        n_resamples: Bootstrap resamples of the α interval (0: no interval).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        shared: The criterion's dialogue draws; ``None``: resample units.
    """
    counts = unit_counts(crit.unit, crit.code, crit.n_units, crit.values.size)
    n_raters = len(crit.raters)
    row: dict[str, Any] = {
        "n_units": crit.n_units,
        "n_raters": n_raters,
        "n_ratings": int(crit.code.size),
        **_nan_stats(_MULTI),
        "alpha_ci_low": float("nan"),
        "alpha_ci_high": float("nan"),
    }
    if n_raters < 2:
        return row, ["one_rater"]
    fleiss = fleiss_kappa_modal(counts)
    reasons = []
    q = crit.values.size
    if fleiss.v < n_min:
        reasons.append("too_few")
    else:
        if q == 1:
            reasons.append("constant")
        row["exact"] = exact_agreement(counts)
        row["fleiss_kappa"] = fleiss.kappa
        row["krippendorff_alpha"] = krippendorff_alpha_counts(counts, crit.values, "nominal")
        if q > 2:
            row["alpha_ordinal"] = krippendorff_alpha_counts(counts, crit.values, "ordinal")
            row["alpha_interval"] = krippendorff_alpha_counts(counts, crit.values, "interval")
        row["gwet_ac1"] = gwet_ac1_counts(counts)
        if n_resamples > 0 and q > 1 and shared is None:
            row["alpha_ci_low"], row["alpha_ci_high"] = alpha_bootstrap(
                counts, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level
            )
        elif n_resamples > 0 and q > 1 and shared.too_few():
            reasons.append("too_few_clusters")
        elif n_resamples > 0 and q > 1:
            cis, dropped = _cluster_intervals({"alpha": alpha_resampled(counts, shared.draws, shared.clusters.codes)}, confidence_level)
            (row["alpha_ci_low"], row["alpha_ci_high"]), reasons = cis["alpha"], reasons + dropped
    reasons.append(fleiss.reason)
    return row, reasons


def two_rater_row(
    crit: _Criterion,
    pair: tuple[str, str | None],
    stats_cols: list[str],
    *,
    n_min: int,
    n_resamples: int,
    seed: int,
    confidence_level: float,
    shared: SharedDraws | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The two-rater block of one criterion (``docs/statistics.md#two-rater-agreement``) for the raters in ``pair``; with ``shared``
    its intervals resample dialogues (``docs/guide/judges.md#many-raters``).

    Args:
        crit: The criterion's coded ratings.
        pair: The two raters (the second ``None`` when there is one rater).
        stats_cols: The two-rater statistics to compute (their column names).
        n_min: Fewest units rated by both raters for a statistic.
        n_resamples: Bootstrap resamples of the intervals (0: no intervals).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        shared: The criterion's dialogue draws; ``None``: resample units.
    """
    q = crit.values.size
    ordinal = q > 2
    a_codes = crit.rater_codes(pair[0])
    b_codes = crit.rater_codes(pair[1]) if pair[1] is not None else np.full(crit.n_units, -1)
    both = (a_codes >= 0) & (b_codes >= 0)
    a, b = a_codes[both], b_codes[both]
    n = int(a.size)
    est = _nan_stats(stats_cols)
    ci = {k: (float("nan"), float("nan")) for k in stats_cols}
    reasons: list[str] = []
    if n < n_min:
        reasons.append("too_few")
    else:
        table = contingency_table(a, b, q)
        est.update({k: float(v) for k, v in pair_statistics(table, crit.values, ordinal).items()})
        if q < 2 or np.count_nonzero(table.sum(0) + table.sum(1)) < 2:
            reasons.append("constant")
        if n_resamples > 0 and shared is None:
            boot = pair_statistics(bootstrap_tables(table, n_resamples, np.random.default_rng(seed)), crit.values, ordinal)
            ci.update({k: percentile_ci(v, confidence_level) for k, v in boot.items()})
        elif n_resamples > 0 and shared.too_few(both):
            reasons.append("too_few_clusters")
        elif n_resamples > 0:
            tables = resampled_tables(shared.clusters, shared.draws, [(a_codes, b_codes)], q)[:, 0]
            cis, dropped = _cluster_intervals(pair_statistics(tables, crit.values, ordinal), confidence_level)
            ci.update(cis)
            reasons.extend(dropped)
    row: dict[str, Any] = {"n": n, **{k: est[k] for k in stats_cols}}
    for k in stats_cols:
        row[f"{k}_ci_low"], row[f"{k}_ci_high"] = ci[k]
    return row, reasons


def _schema(stats_cols: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"criterion": pl.String, "n_units": pl.Int64, "n_raters": pl.Int64, "n_ratings": pl.Int64}
    schema.update({k: pl.Float64 for k in [*_MULTI, "alpha_ci_low", "alpha_ci_high"]})
    schema["n"] = pl.Int64
    schema.update({k: pl.Float64 for k in stats_cols})
    schema.update({f"{k}_ci_{s}": pl.Float64 for k in stats_cols for s in ("low", "high")})
    schema.update({"rater_a": pl.String, "rater_b": pl.String, "reason": pl.String})
    return schema


def _two_rater_keys(stats_cols: list[str]) -> set[str]:
    """The value and CI columns of the two-rater block."""
    return {*stats_cols, *(f"{k}_ci_{s}" for k in stats_cols for s in ("low", "high"))}


def join_reasons(codes: list[str]) -> str:
    """Reason codes joined by ``;``, empty ones dropped and repeats kept once.

    Example:
        >>> join_reasons(["too_few", "", "too_few", "constant"])
        'too_few;constant'
    """
    return ";".join(dict.fromkeys(c for c in codes if c))


@frame_inputs(ratings=Ratings)
def agreement_table(
    ratings: RatingsLike,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    raters: tuple[str, str] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    n_min: int = 10,
    exchangeable: bool = False,
    cluster_labels: Mapping[str, str] | None = None,
    min_clusters: int = MIN_CLUSTERS,
) -> pl.DataFrame:
    """Agreement per criterion among any number of raters, then the two-rater block (``docs/design/raters.md#many-raters``).

    Columns: ``criterion, n_units, n_raters, n_ratings, exact, fleiss_kappa, krippendorff_alpha,
    alpha_ordinal, alpha_interval, gwet_ac1, alpha_ci_low, alpha_ci_high`` (many raters, missing
    ratings allowed), then ``n, pa, prevalence, kappa, scott_pi, ac1, alpha_nominal``, the κ-paradox
    indices ``pabak, prevalence_index, bias_index, p_pos, p_neg`` (``docs/design/effects.md#two-rater-indices``) and, when a
    criterion has more than two categories, ``kappa_quadratic, ac2_quadratic, alpha_quadratic``
    (quadratic weights on the score values) with their ``_ci_low``/``_ci_high`` for the raters in
    ``raters`` (default: the first two in sorted order), ``rater_a, rater_b`` and ``reason``.
    CIs: percentile bootstrap over units, ``n_resamples`` resamples, a fresh ``default_rng(seed)``
    per criterion. Reasons: ``one_rater``, ``too_few`` (fewer than ``n_min`` units with two ratings),
    ``constant``, ``fleiss_<u>_of_<v>_units_with_<m>_ratings``, ``first_two_of_<k>_raters``.

    ``cluster_labels`` (exchange id as text → its dialogue, ``--cluster-col``): ``alpha_ci_*`` and every
    two-rater interval resample dialogues with the shared draws of ``docs/guide/judges.md#many-raters``
    (``default_rng([seed, c])`` for criterion c), and ``n_clusters`` (clusters among the criterion's units)
    and ``ci_method`` (``cluster_percentile``, or ``none`` with ``too_few_clusters``: fewer than
    ``min_clusters``) follow ``reason``; resamples where a statistic is undefined add ``ci_dropped_<k>``.

    ``exchangeable`` (``--raters exchangeable``, ``docs/design/datasets.md#exchangeable-raters``): the labels are anonymous slots; the
    many-rater columns (which depend only on each unit's multiset of scores) are computed as usual with
    ``n_raters`` = the most ratings on one unit, every two-rater column and ``rater_a``, ``rater_b`` are
    empty and the reason has ``exchangeable_raters``.

    Args:
        ratings: Long ratings (a table, a path or a cleaned :class:`~tutormetrics.psychometrics.ratings.Ratings`).
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        raters: The two raters of the two-rater block; ``None``: the first two in sorted order.
        n_resamples: Bootstrap resamples per interval (0: no intervals).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        n_min: Fewest units with two ratings for a statistic.
        exchangeable: Rater labels are anonymous slots (``--raters exchangeable``).
        cluster_labels: Exchange id as text → its dialogue; ``None``: resample units.
        min_clusters: Fewest clusters for a cluster interval.

    Example:
        >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["a", "b"] * 2,
        ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
        >>> out = agreement_table(df, n_resamples=0, n_min=2)
        >>> out["exact"].to_list(), out["pa"].to_list(), out["reason"].to_list()
        ([0.5], [0.5], ['fleiss_2_of_2_units_with_2_ratings'])
    """
    if not 0 < confidence_level < 1:
        raise ConfigError("confidence_level must be in (0, 1)")
    long = clean_ratings(ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col,
                         exchangeable=exchangeable)  # fmt: skip
    if exchangeable:
        if raters is not None:
            raise ConfigError("raters=(A, B) and exchangeable cannot be combined", hint="anonymous slots have no pair to compare")
        from tutormetrics.psychometrics.exchangeable import REASON, slot_labels

        long = slot_labels(long)
        pair, note = (None, None), REASON
    else:
        pair, note = _pick_pair(sorted(long["_rater"].unique().to_list()), raters)
    criteria = split_criteria(long)
    any_ordinal = any(c.values.size > 2 for c in criteria)
    stats_cols = _BASE + (_ORDINAL if any_ordinal else [])
    opts = {"n_min": n_min, "n_resamples": n_resamples, "seed": seed, "confidence_level": confidence_level}
    rows = []
    for c, crit in enumerate(criteria):
        shared = None
        if cluster_labels is not None:
            clusters = unit_clusters(crit.ids, cluster_labels)
            shared = SharedDraws(clusters, ClusterDraws(clusters.n_clusters, n_resamples, seed, c), min_clusters)
        multi, reasons = multirater_row(crit, **opts, shared=shared)
        if exchangeable:  # no pair of people to compare: the whole block is empty
            two, two_reasons = {"n": None, **{k: None for k in _schema(stats_cols) if k in _two_rater_keys(stats_cols)}}, []
        else:
            two, two_reasons = two_rater_row(crit, pair, stats_cols, **opts, shared=shared)
        if "one_rater" in reasons and not exchangeable:
            two = {**two, **_nan_stats([k for k in two if k != "n"])}
            two_reasons = []
        rows.append(
            {
                "criterion": crit.name,
                **multi,
                **two,
                "rater_a": pair[0],
                "rater_b": pair[1],
                "reason": join_reasons([*reasons, *two_reasons, note]),
            }
        )
        if shared is not None:
            none = n_resamples <= 0 or "too_few_clusters" in rows[-1]["reason"].split(";")
            rows[-1].update(n_clusters=shared.clusters.n_clusters, ci_method="none" if none else "cluster_percentile")
    schema = _schema(stats_cols)
    if cluster_labels is not None:
        schema.update({"n_clusters": pl.Int64, "ci_method": pl.String})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")
