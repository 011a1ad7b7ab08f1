"""Warnings about the rating scale itself (``docs/measurement.md#scale-warnings``): a criterion that runs against
the others, and partial-credit thresholds out of order.

* **Item–rest correlation** of criterion j: Pearson r over the exchanges between its score proportion
  p_ij = mean over raters of x/M_j and the mean proportion of the other criteria. r < 0 means a high score on
  j goes with low scores elsewhere — e.g. MRBench's ``revealing_of_the_answer`` (1 = the tutor gave the answer
  away): pooled into θ as it stands, it measures the opposite of the rest.
* **Disordered thresholds**: τ_j1 < τ_j2 < … fails, so some middle category is at no θ the most likely one.

Example:
    >>> disordered_thresholds(np.array([[-0.5, 0.5], [0.3, -0.3]]), np.array([2, 2]))
    [False, True]
"""

from __future__ import annotations

import numpy as np

from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.observations import Observations

__all__ = ["disordered_thresholds", "item_rest_correlations", "scale_warnings"]


def item_rest_correlations(est: Estimates, obs: Observations) -> np.ndarray:
    """r(p_j, mean of the other criteria's p) per criterion (FACETS order); NaN with fewer than 3 exchanges or a
    constant side."""
    n_items, n_crit = est.n_items, len(est.criteria)
    total = np.zeros((n_items, n_crit))
    count = np.zeros((n_items, n_crit))
    np.add.at(total, (obs.item, obs.crit), obs.cat / obs.top)
    np.add.at(count, (obs.item, obs.crit), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        prop = total / count
    out = np.full(n_crit, np.nan)
    for j in range(n_crit):
        others = np.delete(prop, j, axis=1)
        rated = np.isfinite(others)
        rest = np.where(rated, others, 0.0).sum(1) / np.maximum(rated.sum(1), 1)
        keep = np.isfinite(prop[:, j]) & (rated.sum(1) > 0)
        x, y = prop[keep, j], rest[keep]
        if x.size >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
            out[j] = float(np.corrcoef(x, y)[0, 1])
    return out


def disordered_thresholds(tau: np.ndarray, n_steps: np.ndarray) -> list[bool]:
    """Per criterion: its thresholds τ_j1..τ_jM are not strictly increasing (M ≥ 2)."""
    return [bool(m >= 2 and np.any(np.diff(tau[j, :m]) <= 0)) for j, m in enumerate(n_steps.astype(int))]


def scale_warnings(est: Estimates, obs: Observations) -> list[str]:
    """The stderr warnings: each criterion with a negative item–rest r, naming it and pointing to ``--recode``,
    and each criterion with disordered thresholds."""
    lines = []
    for crit, r in zip(est.criteria, item_rest_correlations(est, obs), strict=True):
        if np.isfinite(r) and r < 0:
            lines.append(
                f"warning: criterion {crit!r} runs against the others (item-rest r = {r:.2f}): if a high score means "
                "worse, reverse it before the fit (--recode FROM=TO, e.g. --recode 1=0 --recode 0=1, recodes every "
                "criterion: reverse it in a ratings file of its own) or leave it out of theta"
            )
    for j, bad in enumerate(disordered_thresholds(est.tau, est.n_steps)):
        if bad:
            m = int(est.n_steps[j])
            taus = ", ".join(f"{v:.2f}" for v in est.tau[j, :m])
            lines.append(
                f"warning: criterion {est.criteria[j]!r} has disordered thresholds (tau = {taus}): a middle category "
                "is at no theta the most likely; consider merging it with a neighbour (--recode)"
            )
    return lines
