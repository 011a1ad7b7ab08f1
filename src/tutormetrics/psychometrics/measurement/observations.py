"""One row per rating, as the measurement tables see it: exchange, criterion, rater, category, and the part of the
linear predictor that is not θ (``docs/measurement.md#inputs``).

For rating n of exchange i on criterion j by rater r the model's linear predictor is ``η_n = θ_i + o_n`` with

    o_n = −b_j − s_r + β_j,g(i) + γ_j·v_i + Σ_k β_jk·x_ik    (every explanatory term of the fitted model).

The categories are those of the fit (``prepare_ratings``: 0/0.5/1 → 0/1/2; binary: the score); ``top`` is
M_j of the rating's criterion. :func:`category_moments` gives the model mean E, variance W and fourth central
moment C of a category at any η, for every criterion's thresholds at once.

Example:
    >>> e, w, c = category_moments(np.array([0.0]), np.array([0]), np.zeros((1, 1)), np.array([1]))
    >>> e.tolist(), w.tolist(), c.tolist()
    ([0.5], [0.25], [0.0625])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.mfrm.design import PreparedRatings

__all__ = ["Observations", "category_moments", "cell_offsets", "observations"]


@dataclass(frozen=True)
class Observations:
    """Per-rating arrays (length n) and the per-design-cell offsets they come from.

    ``item`` indexes the THETA order, ``crit`` the FACETS order, ``rater`` the sorted raters, ``cat`` the
    category 0..M_j, ``top`` = M_j, ``offset`` o_n, ``cell`` the design cell (ratings of one cell share o_n and
    j). ``cell_offset``/``cell_crit`` are per design cell.
    """

    item: np.ndarray
    crit: np.ndarray
    rater: np.ndarray
    cat: np.ndarray
    top: np.ndarray
    offset: np.ndarray
    cell: np.ndarray
    cell_offset: np.ndarray
    cell_crit: np.ndarray

    @property
    def n(self) -> int:
        return int(self.item.shape[0])


def observations(est: Estimates, prep: PreparedRatings) -> Observations:
    """The ratings of ``prep`` as :class:`Observations` with the offsets of ``est``.

    Example:
        >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
        >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
        >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
        >>> ratings, _ = simulate_mfrm(n_items=30, seed=1)
        >>> prep = prepare_ratings(ratings)
        >>> obs = observations(estimates_from_result(fit_mfrm(ratings), prep), prep)
        >>> obs.n, int(obs.top.max())
        (300, 1)
    """
    d = prep.design
    coo = d.counts_cat.tocoo()
    count = np.rint(coo.data).astype(np.int64)
    item = np.repeat(coo.row.astype(np.int64), count)
    col = np.repeat(coo.col.astype(np.int64), count)
    cat, cell = np.divmod(col, d.n_cells)
    off, cell_crit = cell_offsets(est, prep)
    crit = cell_crit[cell]
    return Observations(
        item=item, crit=crit, rater=d.cell_r[cell].astype(np.int64), cat=cat, top=est.n_steps[crit],
        offset=off[cell], cell=cell, cell_offset=off, cell_crit=cell_crit,
    )  # fmt: skip


def cell_offsets(est: Estimates, prep: PreparedRatings) -> tuple[np.ndarray, np.ndarray]:
    """Per design cell the offset o = η − θ (every term of the fitted model) and the criterion (FACETS index)."""
    d = prep.design
    cell_crit = est.display_of_coding[d.cell_j]
    off = -est.b[cell_crit] - est.s[d.cell_r] + est.beta[cell_crit, d.cell_g if est.beta.shape[1] > 1 else 0]
    if est.gamma.shape[1]:
        off = off + np.einsum("nc,nc->n", d.cell_v, est.gamma[cell_crit])
    if est.topic.shape[1]:
        off = off + np.einsum("nk,nk->n", d.cell_x, est.topic[cell_crit])
    return off, cell_crit


def category_moments(
    eta: np.ndarray, crit: np.ndarray, tau: np.ndarray, n_steps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Model mean, variance and fourth central moment of the category at η (``docs/measurement.md#fit``):

        E = Σ_k k P_k,   W = Σ_k (k − E)² P_k,   C = Σ_k (k − E)⁴ P_k   (binary: E = P, W = P(1 − P), C = W(1 − 3W)).

    Args:
        eta: linear predictors, any shape whose first axis is the rating.
        crit: the criterion (FACETS index) of each row of ``eta``.
        tau: (J, M_max) thresholds.
        n_steps: (J,) M_j, the number of steps of each criterion.
    """
    e, w, c = np.empty_like(eta), np.empty_like(eta), np.empty_like(eta)
    for j in np.unique(crit):
        rows = crit == j
        m = int(n_steps[j])
        if m == 1:
            p = expit(eta[rows] - tau[j, 0])
            var = p * (1.0 - p)
            e[rows], w[rows], c[rows] = p, var, var * (1.0 - 3.0 * var)
            continue
        ks = np.arange(m + 1, dtype=float)
        logits = ks * eta[rows][..., None] - np.concatenate([[0.0], np.cumsum(tau[j, :m])])
        prob = np.exp(logits - logits.max(axis=-1, keepdims=True))
        prob /= prob.sum(axis=-1, keepdims=True)
        mean = prob @ ks
        dev = ks - mean[..., None]
        sq = dev * dev
        e[rows], w[rows], c[rows] = mean, (sq * prob).sum(-1), (sq * sq * prob).sum(-1)
    return e, w, c
