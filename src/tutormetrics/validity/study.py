"""One call from a metrics table and target tables to the tidy Spearman table (used by ``validate`` and ``run``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from tutormetrics.validity.correlate import spearman_matrix
from tutormetrics.validity.join import JoinReport, join_targets, metric_columns


@dataclass
class ValidityResult:
    table: pl.DataFrame  # metric, target, n, rho, ci_low, ci_high, p, p_adj, adjust, stars, reason, ...
    joined: pl.DataFrame  # the metrics with every target column, one row per metric row
    report: JoinReport
    metric_cols: list[str]
    target_cols: list[str]


def correlate_with_targets(
    metrics: pl.DataFrame,
    targets: Sequence[pl.DataFrame],
    *,
    names: Sequence[str] | None = None,
    id_col: str = "exchange_id",
    metrics_cols: Sequence[str] | None = None,
    **spearman_options: Any,
) -> ValidityResult:
    """Join ``targets`` onto ``metrics`` by id (reporting unmatched ids) and correlate every metric with every target.

    ``spearman_options`` go to :func:`~tutormetrics.validity.correlate.spearman_matrix`
    (``adjust``, ``ci``, ``n_resamples``, ``seed``, ``stars_on``, ...).
    """
    mcols = metric_columns(metrics, id_col=id_col, columns=list(metrics_cols) if metrics_cols else None)
    target_cols = [c for t in targets for c in t.columns if c != id_col]
    joined, report = join_targets(metrics.select(id_col, *mcols), *targets, id_col=id_col, names=names)
    table = spearman_matrix(joined, mcols, target_cols, **spearman_options)
    return ValidityResult(table, joined, report, mcols, target_cols)


def estimate_theta_targets(
    ratings: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
) -> tuple[pl.DataFrame, Any]:
    """θ (EAP of the descriptive MFRM, statistics.md §2.2) from long ratings, as a target table plus the fit.

    Returns ``(targets, fit)`` where ``targets`` has ``id_col`` and ``theta``.
    """
    from tutormetrics.validity.mfrm import fit_mfrm
    from tutormetrics.validity.targets import theta_to_targets

    rater = rater_col if rater_col in ratings.columns else None
    fit = fit_mfrm(ratings, id_col=id_col, rater_col=rater, criterion_col=criterion_col, score_col=score_col)
    return theta_to_targets(fit.theta_table(), id_col=id_col), fit
