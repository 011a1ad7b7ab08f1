"""``agree RATINGS --stability A,B``: how many verdicts change between two runs or versions of a judge on the
same items (``docs/guide/judges.md#stability``).

Per criterion, on the n units both A and B rated, with the criterion's categories and the table T (rows A,
columns B): ``flips`` = #{aᵢ ≠ bᵢ}, ``flip_rate``, the shares that went up (b > a) and down, the means and
their shift, Cohen's κ of A and B (test–retest), Wilson's interval of the flip rate at n/deff, McNemar's exact
test of up vs down, Bowker's symmetry test (:func:`~tutormetrics.psychometrics.leniency.symmetry_tests`) and,
with clusters, the clustered McNemar test (:mod:`tutormetrics.stats.flip_tests`).

Example:
    >>> df = pl.DataFrame({"exchange_id": [1, 2, 3] * 2, "rater": ["v1"] * 3 + ["v2"] * 3,
    ...                    "criterion": "c", "score": [0, 1, 1, 0, 1, 2]})
    >>> stability_table(df, ("v1", "v2"), n_min=2).select("flips", "up_rate").row(0)
    (1, 0.3333333333333333)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.agreement import _Criterion, clean_ratings, join_reasons, split_criteria
from tutormetrics.psychometrics.leniency import symmetry_tests
from tutormetrics.psychometrics.pairwise_agreement import cohen_kappa, contingency_table
from tutormetrics.psychometrics.ratings import RatingsLike
from tutormetrics.psychometrics.resampled_agreement import unit_clusters
from tutormetrics.stats.flip_tests import clustered_mcnemar, flip_design_effect, mcnemar_exact_p, wilson_interval

__all__ = ["STABILITY_COLUMNS", "parse_stability", "stability_table"]

STABILITY_COLUMNS = [
    "criterion", "run_a", "run_b", "n", "n_clusters", "flips", "flip_rate", "flip_ci_low", "flip_ci_high", "design_effect",
    "up_rate", "down_rate", "mean_a", "mean_b", "mean_shift", "cohen_kappa", "mcnemar_p", "bowker_chi2", "bowker_df",
    "bowker_p", "mcnemar_cluster_chi2", "mcnemar_cluster_p", "reason",
]  # fmt: skip


def parse_stability(text: str, *, judges: list[str] | None = None, raters: str | None = None) -> tuple[str, str]:
    """``"A,B"`` → ``("A", "B")``; exit 2 unless two distinct names, or with ``--judge``/``--raters``.

    Args:
        text: The ``--stability`` value, ``A,B``.
        judges: The ``--judge`` names (refused with ``--stability``).
        raters: The ``--raters`` value (refused with ``--stability``).

    >>> parse_stability("run1, run2")
    ('run1', 'run2')
    """
    if judges or raters:
        raise ConfigError("--stability compares two runs of one judge; it cannot be combined with --judge or --raters",
                          hint="run agree --stability A,B on its own")  # fmt: skip
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) != 2 or parts[0] == parts[1]:
        raise ConfigError(f"--stability needs two distinct raters, got {text!r}", hint="e.g. --stability gpt-judge@2026-01,gpt-judge@2026-06")
    return parts[0], parts[1]


def _row(crit: _Criterion, pair: tuple[str, str], labels: Mapping[str, str] | None, n_min: int, confidence_level: float) -> dict[str, Any]:
    """The stability row of one criterion."""
    ca, cb = crit.rater_codes(pair[0]), crit.rater_codes(pair[1])
    both = (ca >= 0) & (cb >= 0)
    a, b = crit.values[ca[both]].astype(float), crit.values[cb[both]].astype(float)
    n = int(a.size)
    clusters = unit_clusters(crit.ids, labels) if labels is not None else None
    out: dict[str, Any] = {"n": n, "n_clusters": None if clusters is None else int(np.unique(clusters.codes[both]).size)}
    if n == 0:
        return {**out, "reason": "too_few"}
    table = contingency_table(ca[both], cb[both], crit.values.size)
    flipped = (a != b).astype(int)
    up, down = int((b > a).sum()), int((b < a).sum())
    p = float(flipped.mean())
    deff = 1.0 if clusters is None else flip_design_effect(flipped, clusters.codes[both])
    low, high = wilson_interval(p, n / deff, confidence_level)
    sym = symmetry_tests(table)
    out.update(
        flips=int(flipped.sum()), flip_rate=p, flip_ci_low=low, flip_ci_high=high, design_effect=deff, up_rate=up / n,
        down_rate=down / n, mean_a=float(a.mean()), mean_b=float(b.mean()), mean_shift=float((b - a).mean()),
        cohen_kappa=float(cohen_kappa(table)), mcnemar_p=mcnemar_exact_p(up, down),
        bowker_chi2=sym["bowker_chi2"], bowker_df=sym["bowker_df"], bowker_p=sym["bowker_p"],
    )  # fmt: skip
    if clusters is not None:
        net = np.bincount(clusters.codes[both], weights=np.sign(b - a), minlength=clusters.n_clusters)
        out["mcnemar_cluster_chi2"], out["mcnemar_cluster_p"] = clustered_mcnemar(net)
    reasons = ["too_few"] * (n < n_min) + ["no_flips"] * (up + down == 0)
    return {**out, "reason": join_reasons(reasons)}


def stability_table(
    ratings: RatingsLike,
    pair: tuple[str, str],
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    n_min: int = 10,
    confidence_level: float = 0.95,
    cluster_labels: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Table FLIPS: one row per criterion (first-appearance order), columns :data:`STABILITY_COLUMNS`.
    ``cluster_labels`` (exchange id as text → dialogue): the design effect and the clustered McNemar test.
    Reasons ``too_few`` (n < ``n_min``, numbers kept), ``no_flips``. A or B not a rater: exit 2.

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        pair: The two runs (raters) A and B.
        id_col: The unit (exchange) id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        n_min: Fewest paired units before the ``too_few`` reason.
        confidence_level: Interval level, in (0, 1).
        cluster_labels: Exchange id as text → its dialogue; ``None``: independent units.
    """
    long = clean_ratings(ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col)
    raters = sorted(long["_rater"].unique().to_list())
    missing = [r for r in pair if r not in raters]
    if missing:
        raise InputSchemaError(f"--stability: {missing[0]!r} is not a rater of the ratings", hint=f"raters: {', '.join(raters[:10])}")
    rows = [{"criterion": crit.name, "run_a": pair[0], "run_b": pair[1],
             **_row(crit, pair, cluster_labels, n_min, confidence_level)} for crit in split_criteria(long)]  # fmt: skip
    schema: dict[str, Any] = {k: pl.Float64 for k in STABILITY_COLUMNS}
    schema.update({"criterion": pl.String, "run_a": pl.String, "run_b": pl.String, "reason": pl.String})
    schema.update({"n": pl.Int64, "n_clusters": pl.Int64, "flips": pl.Int64})
    return pl.DataFrame([{k: r.get(k) for k in STABILITY_COLUMNS} for r in rows], schema=schema, orient="row")
