"""``agree --judge … --differences``: paired contrasts of agreement, judge − judge and judge − human–human
(``docs/guide/judges.md#differences``).

Per criterion and for each measure m of :data:`~tutormetrics.psychometrics.resampled_agreement.MEASURES`:

* ``judges``: for judges a before b and each reference (humans sorted, then ``majority``),
  m(a, ref) − m(b, ref) on the units a, b and the reference all rated;
* ``judge_vs_humans`` (≥ 2 humans): m̄(J) = mean over humans h of m(J, h) (each on the units J and h rated)
  minus m̄(H) = mean over unordered human pairs of m(h, h′) (on the units both rated).

Both sides of a difference are recomputed in each resample of the criterion's shared draws, so the
percentile interval of the difference is paired.

Example:
    >>> import polars as pl
    >>> df = pl.DataFrame({"exchange_id": [1, 1, 1, 2, 2, 2], "rater": ["h", "j", "k"] * 2,
    ...                    "criterion": ["c"] * 6, "score": [1, 1, 0, 0, 0, 0]})
    >>> t = differences_table(df, ["j", "k"], n_resamples=0, n_min=2)
    >>> t.filter(pl.col("measure") == "accuracy").select("reference", "estimate").rows()
    [('h', 0.5), ('majority', 0.5)]
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.agreement import _Criterion, join_reasons
from tutormetrics.psychometrics.judge import criterion_references, judge_setup
from tutormetrics.psychometrics.pairwise_agreement import contingency_table
from tutormetrics.psychometrics.ratings import RatingsLike
from tutormetrics.psychometrics.resampled_agreement import (
    MEASURES,
    UnitClusters,
    pair_clusters,
    resampled_tables,
    table_measures,
    unit_clusters,
)
from tutormetrics.stats.cluster_resample import MIN_CLUSTERS, ClusterDraws, percentile_interval

__all__ = ["DIFFERENCE_COLUMNS", "differences_table"]

DIFFERENCE_COLUMNS = [
    "criterion", "contrast", "a", "b", "reference", "measure", "estimate_a", "estimate_b", "estimate", "ci_low", "ci_high",
    "n", "n_clusters", "reason",
]  # fmt: skip

_Pair = tuple[np.ndarray, np.ndarray]


class _Contrast(NamedTuple):
    """One contrast: side a is the mean of m over ``pairs_a``, side b over ``pairs_b`` (indices into the
    criterion's list of pairs); ``mask`` selects the units it counts."""

    head: dict[str, Any]
    pairs_a: list[int]
    pairs_b: list[int]
    mask: np.ndarray


def _restrict(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, codes, -1)


def _contrasts(crit: _Criterion, judges: list[str], humans: list[str], exchangeable: bool) -> tuple[list[_Contrast], list[_Pair]]:
    """Every contrast of one criterion and the (reference, rater) code pairs they need."""
    pairs: list[_Pair] = []

    def add(a: np.ndarray, b: np.ndarray) -> int:
        pairs.append((a, b))
        return len(pairs) - 1

    refs = {j: criterion_references(crit, j, humans, exchangeable)[0] for j in judges}
    codes = {r: crit.rater_codes(r) for r in [*judges, *humans]}
    out = []
    for ja, jb in itertools.combinations(judges, 2):
        for ref, y, _ in refs[ja]:
            mask = (y >= 0) & (codes[ja] >= 0) & (codes[jb] >= 0)
            head = {"contrast": "judges", "a": ja, "b": jb, "reference": ref}
            out.append(_Contrast(head, [add(_restrict(y, mask), codes[ja])], [add(_restrict(y, mask), codes[jb])], mask))
    rated = [h for h in humans if h in crit.raters]
    if exchangeable or len(rated) < 2:
        return out, pairs
    n_human = sum((codes[h] >= 0).astype(int) for h in rated)
    human_pairs = [add(codes[h], codes[k]) for h, k in itertools.combinations(rated, 2)]
    for j in judges:
        mask = (codes[j] >= 0) & (n_human >= 2)
        head = {"contrast": "judge_vs_humans", "a": j, "b": "humans", "reference": None}
        out.append(_Contrast(head, [add(codes[h], codes[j]) for h in rated], human_pairs, mask))
    return out, pairs


def _side(measures: dict[str, np.ndarray], idx: list[int], name: str) -> np.ndarray:
    """Mean of measure ``name`` over the pairs ``idx`` (last axis: pairs)."""
    return measures[name][..., idx].mean(axis=-1)


def _criterion_rows(
    crit: _Criterion, c: int, contrasts: list[_Contrast], pairs: list[_Pair], clusters: UnitClusters, opts: dict[str, Any]
) -> list[dict[str, Any]]:
    """The rows of one criterion: each contrast × measure, with its paired interval."""
    q = crit.values.size
    point = table_measures(np.stack([contingency_table(a[(a >= 0) & (b >= 0)], b[(a >= 0) & (b >= 0)], q) for a, b in pairs], axis=-3))
    draws = ClusterDraws(clusters.n_clusters, opts["n_resamples"], opts["seed"], c)
    boot = table_measures(resampled_tables(clusters, draws, pairs, q)) if opts["n_resamples"] > 0 else None
    rows = []
    for con in contrasts:
        n, n_clusters = int(con.mask.sum()), pair_clusters(clusters, con.mask)
        base = ["too_few"] if n < opts["n_min"] else []
        few = clusters.clustered and n_clusters < opts["min_clusters"]
        for name in MEASURES:
            est_a, est_b = float(_side(point, con.pairs_a, name)), float(_side(point, con.pairs_b, name))
            lo = hi = float("nan")
            reasons = [*base, *(["too_few_clusters"] if few else [])]
            if boot is not None and not few and n > 0:
                interval = percentile_interval(_side(boot, con.pairs_a, name) - _side(boot, con.pairs_b, name), opts["confidence_level"])
                lo, hi = interval.low, interval.high
                reasons += [f"ci_dropped_{interval.dropped}"] if interval.dropped else []
            rows.append({
                "criterion": crit.name, **con.head, "measure": name, "estimate_a": est_a, "estimate_b": est_b,
                "estimate": est_a - est_b, "ci_low": lo, "ci_high": hi, "n": n,
                "n_clusters": n_clusters if clusters.clustered else None, "reason": join_reasons(reasons),
            })  # fmt: skip
    return rows


def differences_table(
    ratings: RatingsLike,
    judges: str | Sequence[str],
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    n_min: int = 10,
    exchangeable: bool = False,
    cluster_labels: Mapping[str, str] | None = None,
    min_clusters: int = MIN_CLUSTERS,
) -> pl.DataFrame:
    """The ``--differences`` table: columns :data:`DIFFERENCE_COLUMNS`, per criterion the ``judges`` rows
    (judge pairs in the order given × references × measures) then the ``judge_vs_humans`` rows. ``n``:
    the units of the contrast (for ``judge_vs_humans`` those with a judge score and ≥ 2 human scores);
    ``n_clusters`` with ``cluster_labels``. Reasons ``too_few`` (n < ``n_min``, estimates kept),
    ``too_few_clusters``, ``ci_dropped_<k>``. One judge and fewer than two humans: exit 2.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        judges: One judge's rater name, or several.
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        n_resamples: Bootstrap resamples per interval (0: no intervals).
        seed: Seed of the bootstrap.
        confidence_level: Interval level, in (0, 1).
        n_min: Fewest units of a contrast before the ``too_few`` reason.
        exchangeable: Human labels are anonymous slots (``--raters exchangeable``).
        cluster_labels: Exchange id as text → its dialogue; ``None``: resample units.
        min_clusters: Fewest clusters for a cluster interval.
    """
    columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
    setup = judge_setup(ratings, judges, exchangeable=exchangeable, **columns)
    if len(setup.judges) < 2 and (len(setup.humans) < 2 or exchangeable):
        raise ConfigError(
            f"--differences: one judge ({setup.judges[0]}) and {'anonymous' if exchangeable else len(setup.humans)} human rater(s): nothing to contrast",
            hint="a contrast needs a second --judge, or two named human raters (judge vs the human-human level)",
        )
    opts = {"n_resamples": n_resamples, "seed": seed, "confidence_level": confidence_level, "n_min": n_min, "min_clusters": min_clusters}
    rows: list[dict[str, Any]] = []
    for c, crit in enumerate(setup.criteria):
        contrasts, pairs = _contrasts(crit, setup.judges, setup.humans, exchangeable)
        if contrasts:
            rows.extend(_criterion_rows(crit, c, contrasts, pairs, unit_clusters(crit.ids, cluster_labels), opts))
    schema: dict[str, Any] = {k: pl.String for k in DIFFERENCE_COLUMNS}
    schema.update({k: pl.Float64 for k in ("estimate_a", "estimate_b", "estimate", "ci_low", "ci_high")})
    schema.update({"n": pl.Int64, "n_clusters": pl.Int64})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.DataFrame([{k: r.get(k) for k in DIFFERENCE_COLUMNS} for r in rows], schema=schema, orient="row")
