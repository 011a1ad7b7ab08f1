"""The estimates every measurement table reads: THETA's EAPs and FACETS' estimates, in FACETS order.

Every number of the measurement report is a function of the ratings (as ``prepare_ratings`` codes them) and of
what ``theta`` writes — ``theta``/``theta_sd`` of THETA.csv and ``estimate``/``se`` of FACETS.csv
(``docs/measurement.md#inputs``). :func:`estimates_from_tables` reads exactly those two tables, so a study
that refits and a user who passes the files get the same numbers; :func:`estimates_from_result` is the same
through a fitted result's ``theta_table()``/``facets_table()``.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
    >>> ratings, _ = simulate_mfrm(n_items=60, seed=2)
    >>> est = estimates_from_result(fit_mfrm(ratings), prepare_ratings(ratings))
    >>> est.criteria, est.raters, est.n_steps.tolist()
    (['c1', 'c2', 'c3', 'c4', 'c5'], ['r1', 'r2'], [1, 1, 1, 1, 1])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.psychometrics.mfrm.design import PreparedRatings

__all__ = ["Estimates", "estimates_from_result", "estimates_from_tables"]


@dataclass(frozen=True)
class Estimates:
    """Point estimates and SEs of one MFRM fit aligned with a :class:`PreparedRatings`.

    Criteria are in FACETS (display) order; ``coding[k]`` is the prepared coding index of criterion k.
    Exchanges are in THETA order (the prepared, sorted ids). ``tau`` is (J, M_max), zero beyond M_j;
    ``beta`` (J, K) the model's group effects (K ≥ 1), ``gamma`` (J, C) the covariate slopes, ``topic``
    (J, T) the topic effects. With one rater ``s`` is ``[0]`` and ``s_se`` NaN.
    """

    ids: pl.Series
    theta: np.ndarray
    theta_sd: np.ndarray
    criteria: list[str]
    coding: np.ndarray
    b: np.ndarray
    b_se: np.ndarray
    raters: list[str]
    s: np.ndarray
    s_se: np.ndarray
    tau: np.ndarray
    n_steps: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    topic: np.ndarray
    method: str = "mml"

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    @property
    def display_of_coding(self) -> np.ndarray:
        """Display index of each coding index of the criteria."""
        inv = np.empty_like(self.coding)
        inv[self.coding] = np.arange(self.coding.size)
        return inv


def estimates_from_result(result: Any, prep: PreparedRatings) -> Estimates:
    """:func:`estimates_from_tables` on ``result.theta_table()`` and ``result.facets_table()`` (MML or NUTS)."""
    return estimates_from_tables(
        result.theta_table(), result.facets_table(), prep, method=str(getattr(result, "method", "mml"))
    )


def estimates_from_tables(
    theta: pl.DataFrame, facets: pl.DataFrame, prep: PreparedRatings, *, method: str = "mml"
) -> Estimates:
    """The estimates of THETA (``theta``, ``theta_sd`` by the id column) and FACETS (``facet, level,
    estimate, se``) for the prepared ratings; criteria, thresholds and exchanges must match them.

    Args:
        theta: THETA.csv as a frame: the prepared id column, ``theta``, ``theta_sd``.
        facets: FACETS.csv as a frame.
        prep: the ratings as ``prepare_ratings`` coded them for the fit.
        method: ``mml`` or ``nuts`` (the fit that wrote the tables).
    """
    id_col = prep.ids.name
    th = _theta_columns(theta, prep, id_col)
    rows = {(str(f), str(lev)): (float(e), float(s)) for f, lev, e, s in
            facets.select("facet", "level", "estimate", "se").iter_rows()}  # fmt: skip
    coding = np.asarray(prep.display if prep.display else range(len(prep.criteria)), dtype=np.int64)
    criteria = [prep.criteria[j] for j in coding]
    n_steps = prep.design.n_steps[coding].astype(np.int64)

    def value(facet: str, level: str) -> tuple[float, float]:
        if (facet, level) not in rows:
            raise InputSchemaError(
                f"facets: no row {facet!r} / {level!r} for these ratings",
                hint="pass the FACETS.csv written by the theta fit of these ratings",
            )
        return rows[(facet, level)]

    b, b_se = np.array([value("criterion", c) for c in criteria]).T.reshape(2, -1)
    raters = list(prep.raters)
    if len(raters) > 1:
        s, s_se = np.array([value("rater", r) for r in raters]).T.reshape(2, -1)
    else:
        s, s_se = np.zeros(len(raters)), np.full(len(raters), np.nan)
    m_max = int(n_steps.max()) if n_steps.size else 1
    tau = np.zeros((len(criteria), m_max))
    for k, crit in enumerate(criteria):
        if n_steps[k] > 1:
            tau[k, : n_steps[k]] = [value("threshold", f"{crit}:{h}")[0] for h in range(1, n_steps[k] + 1)]
    beta = _term_matrix(value, "group", prep.group_levels if len(prep.group_levels) > 1 else [], criteria, width=1)
    gamma = _term_matrix(value, "covariate", prep.cov_names, criteria, width=0)
    topic = _term_matrix(value, "topic", prep.topic_names if len(prep.topic_names) > 1 else [], criteria, width=0)
    return Estimates(
        ids=prep.ids, theta=th[0], theta_sd=th[1], criteria=criteria, coding=coding, b=b, b_se=b_se,
        raters=raters, s=s, s_se=s_se, tau=tau, n_steps=n_steps, beta=beta, gamma=gamma, topic=topic, method=method,
    )  # fmt: skip


def _theta_columns(theta: pl.DataFrame, prep: PreparedRatings, id_col: str) -> tuple[np.ndarray, np.ndarray]:
    """``theta`` and ``theta_sd`` in the order of the prepared ids; every rated exchange needs a row."""
    missing = [c for c in (id_col, "theta", "theta_sd") if c not in theta.columns]
    if missing:
        raise InputSchemaError(f"theta table: missing column(s) {missing}", hint="pass the THETA.csv written by theta")
    keyed = theta.select(pl.col(id_col).cast(prep.ids.dtype), "theta", "theta_sd")
    joined = pl.DataFrame({id_col: prep.ids}).join(keyed, on=id_col, how="left", maintain_order="left")
    if joined["theta"].null_count():
        raise InputSchemaError(
            f"theta table: {joined['theta'].null_count()} rated exchanges have no theta",
            hint="pass the THETA.csv written by the theta fit of these ratings",
        )
    return joined["theta"].to_numpy().astype(float), joined["theta_sd"].to_numpy().astype(float)


def _term_matrix(value: Any, kind: str, names: list[str], criteria: list[str], *, width: int) -> np.ndarray:
    """(J, len(names)) estimates of ``<kind>:<name>`` per criterion; ``width`` columns of zeros without terms."""
    if not names:
        return np.zeros((len(criteria), width))
    return np.array([[value(f"{kind}:{n}", c)[0] for n in names] for c in criteria])
