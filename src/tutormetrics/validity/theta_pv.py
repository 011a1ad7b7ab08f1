"""The ``theta_pv`` step of a validity study (``validate --theta-pv M``, ``run --theta-pv M``;
``docs/measurement.md#theta-pv``): the estimates of the θ being validated — the fit estimated here, or THETA and
FACETS given (checked to come from one fit) — then ρ(metric, θ) over M plausible values per metric, pooled by
Rubin's rules (:func:`~tutormetrics.validity.plausible_rho.theta_pv_table`), placed after each metric's ``theta`` row.

Example:
    >>> from tutormetrics.validity.options import ValidateOptions
    >>> from tutormetrics.errors import ConfigError
    >>> try:
    ...     check_theta_pv(None, False, False, ValidateOptions(theta_pv=20))
    ... except ConfigError as error:
    ...     print(str(error).splitlines()[0])
    --theta-pv needs long ratings (--ratings)
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.progress import Log
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.validity.correlate import ValidityResult
from tutormetrics.validity.options import ValidateOptions

__all__ = ["check_theta_pv", "theta_pv_rows"]


def check_theta_pv(rated: Ratings | None, theta_given: bool, tables_given: bool, vo: ValidateOptions) -> None:
    """The errors of ``docs/measurement.md#errors`` for ``--theta-pv`` (exit 2 before any work).

    Args:
        rated: The cleaned ratings (``None``: none given).
        theta_given: ``--theta`` was given.
        tables_given: THETA and FACETS of that θ were given (``--facets``).
        vo: The study's options.
    """
    if vo.theta_pv < 2:
        raise ConfigError(f"--theta-pv {vo.theta_pv}: needs at least 2 plausible values", hint="e.g. --theta-pv 20")
    if vo.pv_condition not in ("metric", "none"):
        raise ConfigError(f"unknown --pv-condition {vo.pv_condition!r}", hint="use metric or none")
    if rated is None or not rated.is_long:
        raise ConfigError("--theta-pv needs long ratings (--ratings)", hint="the PVs are drawn from the ratings' likelihood")
    if theta_given and not tables_given:
        raise ConfigError("--theta-pv with --theta needs --facets", hint="pass the FACETS.csv theta wrote with that THETA.csv")
    if not theta_given and not vo.estimate_theta:
        raise ConfigError("--theta-pv needs a θ", hint="pass --theta THETA.csv --facets FACETS.csv, or --estimate-theta")


def _fit_estimates(rated: Ratings, targets: Any, fit_tables: tuple[pl.DataFrame, pl.DataFrame] | None) -> tuple[Any, Any, Any]:
    """(estimates, observations, prepared ratings) of the θ validated: the fit estimated here, or THETA/FACETS."""
    from tutormetrics.psychometrics.measurement import estimates_from_result, estimates_from_tables, observations
    from tutormetrics.psychometrics.measurement.measurement_report import prepare_like_fit
    from tutormetrics.psychometrics.measurement.posterior import check_same_fit

    if targets.fit is not None:
        fitted = targets.fitted
        prep = prepare_like_fit(fitted, targets.fit, **fitted.columns())
        est = estimates_from_result(targets.fit, prep)
    else:
        from tutormetrics.psychometrics.exchangeable import theta_ratings
        from tutormetrics.psychometrics.mfrm.design import prepare_ratings

        fitted = theta_ratings(rated)[0]
        theta, facets = fit_tables  # type: ignore[misc]
        prep = prepare_ratings(fitted, **fitted.columns())
        est = estimates_from_tables(theta, facets, prep)
        check_same_fit(est, prep)
    return est, observations(est, prep), prep


def theta_pv_rows(
    metrics: pl.DataFrame, result: ValidityResult, rated: Ratings, targets: Any, vo: ValidateOptions,
    fit_tables: tuple[pl.DataFrame, pl.DataFrame] | None, log: Log,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """The ``theta_pv`` rows and the correlation table with them after each metric's ``theta`` row; their line on
    ``log``.

    Args:
        metrics: The metrics table (keyed by the ratings' id column).
        result: The study's correlations.
        rated: The cleaned ratings.
        targets: The study's :class:`~tutormetrics.validity.study.StudyTargets` (the fit when estimated here).
        vo: The study's options (``theta_pv``, ``pv_condition``, ``seed``, ``adjust``, ``n_min``, ...).
        fit_tables: THETA and FACETS given, when θ was not estimated here.
        log: Where the ``theta_pv:`` line goes.
    """
    from tutormetrics.validity.plausible_rho import theta_pv_line, theta_pv_table, with_theta_pv

    est, obs, prep = _fit_estimates(rated, targets, fit_tables)
    pv = theta_pv_table(
        metrics, result.metric_cols, est, obs, prep, draws=vo.theta_pv, seed=vo.seed, condition=vo.pv_condition,
        adjust=vo.adjust, n_min=vo.n_min, confidence_level=vo.confidence_level, tie_digits=vo.tie_digits,
    )  # fmt: skip
    table = result.table
    raw = table.filter(pl.col("target") == "theta")
    if "control" in raw.columns:
        raw = raw.filter(pl.col("control").fill_null("") == "")
    eap = dict(zip(raw["metric"].to_list(), raw["rho"].cast(pl.Float64).to_list(), strict=True))
    log(theta_pv_line(pv, eap))
    return pv, with_theta_pv(table, pv)
