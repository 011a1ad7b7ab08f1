"""θ's posterior on the 21 Gauss–Hermite nodes with the facets held at their estimates (``docs/measurement.md#posterior``).

For exchange i with prior N(μ_i, 1) the nodes are θ_iq = μ_i + t_q and

    π_iq ∝ w_q L_i(θ_iq),   L_i(θ) = Π_{n∈i} P(x_n | θ + o_n),

optionally over the ratings of some criteria only (the DIF contrast's matching set). With μ_i = 0 and every
criterion this is the fit's own posterior: its mean is THETA's EAP. A group's mean μ_g (the marginal ML mean
with the facets fixed) solves mean_{i∈g} EAP_i(μ) = μ; Newton from 0 with derivative mean PSD² − 1.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
    >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
    >>> ratings, _ = simulate_mfrm(n_items=50, seed=0)
    >>> result, prep = fit_mfrm(ratings), prepare_ratings(ratings)
    >>> post = posterior(NodeLikelihood(estimates_from_result(result, prep), prep))
    >>> bool(np.allclose(post.eap(), result.theta, atol=1e-9))
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.observations import cell_offsets
from tutormetrics.psychometrics.mfrm.design import PreparedRatings, quadrature

__all__ = ["GroupMeans", "NodeLikelihood", "Posterior", "check_same_fit", "group_means", "posterior"]

N_NODES = 21


class NodeLikelihood:
    """log L_i(θ) of every exchange at any common set of θ values, from the design's count matrix.

    ``criteria`` (FACETS indices) restricts the likelihood to those criteria's ratings.
    """

    def __init__(
        self, est: Estimates, prep: PreparedRatings, criteria: Sequence[int] | None = None, *, patterns: bool = False
    ) -> None:
        d = prep.design
        self.est, self.design = est, d
        self.cell_offset, self.cell_crit = cell_offsets(est, prep)
        self.keep = np.ones(d.n_cells, dtype=bool) if criteria is None else np.isin(self.cell_crit, list(criteria))
        #: rows: exchanges, or with ``patterns`` the design's unique exact rating patterns (``design.item_pattern``)
        self.counts = (d.pat_counts_cat if patterns else d.counts_cat).tocsr()

    def cell_log_probs(self, theta: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """(M_max + 1, len(cells), len(theta)) log P(category | θ + o_cell); 0 for absent categories and left-out cells."""
        est = self.est
        out = np.zeros((self.design.m_max + 1, cells.size, theta.size))
        eta = self.cell_offset[cells][:, None] + theta[None, :]
        crit, keep = self.cell_crit[cells], self.keep[cells]
        for j in np.unique(crit[keep]):
            rows = np.flatnonzero((crit == j) & keep)
            m = int(est.n_steps[j])
            steps = eta[rows][..., None] - est.tau[j, :m]
            logits = np.concatenate([np.zeros(steps.shape[:-1] + (1,)), np.cumsum(steps, axis=-1)], axis=-1)
            top = logits.max(axis=-1, keepdims=True)
            logp = logits - (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))
            out[: m + 1, rows, :] = np.moveaxis(logp, -1, 0)
        return out

    def loglik(self, theta: np.ndarray, items: np.ndarray | None = None) -> np.ndarray:
        """(rows, len(theta)) Σ_{n∈i} log P(x_n | θ + o_n) for every row (or the rows ``items``); only the
        cells those rows use are evaluated."""
        theta = np.asarray(theta, dtype=float)
        counts = self.counts if items is None else self.counts[items]
        n_cells = self.design.n_cells
        cat, cell = np.divmod(counts.indices.astype(np.int64), n_cells)
        cells, pos = np.unique(cell, return_inverse=True)
        logp = self.cell_log_probs(theta, cells)
        local = sparse.csr_matrix((counts.data, cat * cells.size + pos, counts.indptr), shape=(counts.shape[0], logp.shape[0] * cells.size))
        return np.asarray(local @ logp.reshape(-1, theta.size))


@dataclass(frozen=True)
class Posterior:
    """Node weights ``pi`` (I, Q) of θ_iq = ``shift[i]`` + ``nodes[q]``."""

    pi: np.ndarray
    shift: np.ndarray
    nodes: np.ndarray

    def eap(self) -> np.ndarray:
        return self.shift + self.pi @ self.nodes

    def psd(self) -> np.ndarray:
        mean = self.pi @ self.nodes
        return np.sqrt(np.maximum(self.pi @ self.nodes**2 - mean**2, 0.0))


def _weights(loglik: np.ndarray, logw: np.ndarray) -> np.ndarray:
    s = loglik + logw[None, :]
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=1, keepdims=True)


def posterior(lik: NodeLikelihood, shift: np.ndarray | None = None) -> Posterior:
    """π_iq for priors N(``shift[i]``, 1) (default 0); one likelihood pass per distinct shift."""
    t, w = quadrature(N_NODES)
    logw = np.log(w)
    n_items = lik.design.n_items
    shift = np.zeros(n_items) if shift is None else np.asarray(shift, dtype=float)
    pi = np.empty((n_items, t.size))
    for mu in np.unique(shift):
        rows = np.flatnonzero(shift == mu)
        pi[rows] = _weights(lik.loglik(mu + t, rows), logw)
    return Posterior(pi=pi, shift=shift, nodes=t)


@dataclass(frozen=True)
class GroupMeans:
    """μ_g per level (NaN where not defined) and a reason per level (``extreme``, ``not_converged`` or empty)."""

    mu: np.ndarray
    reason: list[str]

    def per_item(self, code: np.ndarray) -> np.ndarray:
        """μ of each exchange's level (0 where μ is NaN, so that its posterior stays defined)."""
        mu = np.where(np.isfinite(self.mu), self.mu, 0.0)
        return mu[code]


def group_means(
    lik: NodeLikelihood, code: np.ndarray, n_levels: int, extreme_item: np.ndarray, *, tol: float = 1e-12, max_steps: int = 200
) -> GroupMeans:
    """μ_g: the root of mean_{i∈g} EAP_i(μ) − μ by Newton from 0, derivative mean PSD_i² − 1, steps within ±1.

    Args:
        lik: the likelihood (all criteria, or the DIF matching set).
        code: level of each exchange (−1: in no level).
        n_levels: number of levels.
        extreme_item: exchanges with an extreme score; a level with only such exchanges has no μ (``extreme``).
        tol: Newton stops when a step is below this.
        max_steps: most Newton steps.
    """
    t, w = quadrature(N_NODES)
    logw = np.log(w)
    mu = np.full(n_levels, np.nan)
    reason = [""] * n_levels
    for g in range(n_levels):
        rows = np.flatnonzero(code == g)
        if rows.size == 0 or extreme_item[rows].all():
            reason[g] = "extreme" if rows.size else "no_observations"
            continue
        m, done = 0.0, False
        for _ in range(max_steps):
            post = Posterior(_weights(lik.loglik(m + t, rows), logw), np.full(rows.size, m), t)
            f = float(post.eap().mean()) - m
            deriv = float(np.mean(post.psd() ** 2)) - 1.0
            step = float(np.clip(-f / deriv, -1.0, 1.0))
            m += step
            if abs(step) < tol:
                done = True
                break
        mu[g] = m if done else np.nan
        reason[g] = "" if done else "not_converged"
    return GroupMeans(mu=mu, reason=reason)


def check_same_fit(est: Estimates, prep: PreparedRatings, tol: float = 1e-6) -> float:
    """The EAP recomputed from FACETS and the ratings must equal THETA's ``theta`` (MML fits) within ``tol``;
    returns the largest difference, raises :class:`~tutormetrics.errors.InputSchemaError` otherwise.

    Args:
        est: Estimates read from THETA and FACETS.
        prep: The prepared ratings.
        tol: Largest allowed EAP difference (logits).
    """
    from tutormetrics.errors import InputSchemaError

    diff = float(np.max(np.abs(posterior(NodeLikelihood(est, prep)).eap() - est.theta), initial=0.0))
    if not diff <= tol:
        raise InputSchemaError(
            f"THETA.csv and FACETS.csv come from different fits (EAPs differ by up to {diff:.3g})",
            hint="pass the THETA and FACETS files one theta run wrote for these ratings, or use --estimate-theta",
        )
    return diff
