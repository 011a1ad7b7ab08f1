"""The interaction β of a cell of ratings with every main estimate and θ's posterior held fixed
(``docs/measurement.md#bias-interaction``):

    f(β) = Σ_n (x_n − Ē_n(β)) = 0,   Ē_n(β) = Σ_q π_iq E(θ_iq + o_n − β),   f′(β) = Σ_n W̄_n(β),

by Newton from β = 0 (steps within ±1 logit, until |step| < 1e-10, at most 100 steps); SE = 1/√Σ W̄_n(β̂).
β > 0: lower scores than the main effects predict. Ratings that share a cell, a design cell (criterion, rater,
model terms) and a prior mean share the node weights Σ π_iq, so the solver runs on those sums.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
    >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
    >>> from tutormetrics.psychometrics.measurement.observations import observations
    >>> from tutormetrics.psychometrics.measurement.posterior import NodeLikelihood, posterior
    >>> ratings, _ = simulate_mfrm(n_items=200, seed=0)
    >>> prep = prepare_ratings(ratings)
    >>> est = estimates_from_result(fit_mfrm(ratings), prep)
    >>> obs = observations(est, prep)
    >>> cells = interaction_cells(est, obs, posterior(NodeLikelihood(est, prep)), obs.crit, len(est.criteria))
    >>> bool(np.all(np.abs(cells.bias) < 0.05))  # a criterion as one cell: MML's own score equation
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.fit import extreme_elements
from tutormetrics.psychometrics.measurement.observations import Observations, category_moments
from tutormetrics.psychometrics.measurement.posterior import Posterior

__all__ = ["InteractionCells", "interaction_cells"]

STEP_CLIP = 1.0
TOLERANCE = 1e-10
MAX_STEPS = 100


@dataclass(frozen=True)
class InteractionCells:
    """Per cell: ratings ``n``, ``observed`` Σx, ``expected`` ΣĒ(0), ``bias`` β̂, ``se`` and a ``reason``
    (``extreme``, ``too_few``, ``not_converged`` or empty; ``no_observations`` for an empty cell)."""

    n: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    bias: np.ndarray
    se: np.ndarray
    reason: list[str]


def interaction_cells(
    est: Estimates, obs: Observations, post: Posterior, cell_of_obs: np.ndarray, n_cells: int, *, min_n: int = 1
) -> InteractionCells:
    """β̂ and SE of every cell (``cell_of_obs``: the cell of each rating, −1 for none) by the Newton of the module.

    Args:
        est: the estimates (thresholds).
        obs: the ratings.
        post: θ's posterior per exchange (node weights and prior means).
        cell_of_obs: cell index 0..n_cells−1 of each rating, or −1.
        n_cells: number of cells.
        min_n: cells with fewer ratings get reason ``too_few`` and no β.
    """
    valid = np.flatnonzero(cell_of_obs >= 0)
    cell = cell_of_obs[valid]
    shift_levels, shift_code = np.unique(post.shift, return_inverse=True)
    n_dc = obs.cell_offset.size
    key = (cell.astype(np.int64) * n_dc + obs.cell[valid]) * shift_levels.size + shift_code[obs.item[valid]]
    uniq, sub = np.unique(key, return_inverse=True)
    sub_cell = uniq // (n_dc * shift_levels.size)
    sub_dc = (uniq // shift_levels.size) % n_dc
    sub_shift = shift_levels[uniq % shift_levels.size]
    members = sparse.csr_matrix(
        (np.ones(valid.size), (sub, obs.item[valid])), shape=(uniq.size, post.pi.shape[0])
    )
    weight = np.asarray(members @ post.pi)  # (subcells, Q): Σ_{n in subcell} π_iq
    eta0 = (sub_shift + obs.cell_offset[sub_dc])[:, None] + post.nodes[None, :]
    sub_crit = obs.cell_crit[sub_dc]
    x = obs.cat[valid].astype(float)
    n = np.bincount(cell, minlength=n_cells)
    observed = np.bincount(cell, weights=x, minlength=n_cells)
    extreme = extreme_elements(cell, obs.cat[valid], obs.top[valid], n_cells)

    def sums(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e, w, _c = category_moments(eta0 - beta[sub_cell][:, None], sub_crit, est.tau, est.n_steps)
        return (
            np.bincount(sub_cell, weights=(weight * e).sum(1), minlength=n_cells),
            np.bincount(sub_cell, weights=(weight * w).sum(1), minlength=n_cells),
        )

    expected, _ = sums(np.zeros(n_cells))
    active = (n >= max(min_n, 1)) & ~extreme
    beta, done = np.zeros(n_cells), ~active
    for _ in range(MAX_STEPS):
        if done.all():
            break
        e_sum, w_sum = sums(beta)
        step = np.clip((observed - e_sum) / np.where(w_sum > 0, w_sum, np.nan), -STEP_CLIP, STEP_CLIP)
        step = np.where(done | ~np.isfinite(step), 0.0, step)
        beta = beta - step
        done = done | (np.abs(step) < TOLERANCE)
    _, w_hat = sums(beta)
    with np.errstate(divide="ignore"):
        se = 1.0 / np.sqrt(w_hat)
    reason = [
        "no_observations" if n[c] == 0 else "extreme" if extreme[c] else "too_few" if n[c] < min_n
        else "" if done[c] else "not_converged"
        for c in range(n_cells)
    ]  # fmt: skip
    bad = np.array([r != "" for r in reason], dtype=bool)
    return InteractionCells(
        n=n, observed=observed, expected=expected, bias=np.where(bad, np.nan, beta), se=np.where(bad, np.nan, se), reason=reason
    )
