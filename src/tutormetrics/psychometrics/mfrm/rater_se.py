"""Rater SEs in O(R) memory: the diagonal of the observed information of the rater severities.

Above :data:`~tutormetrics.psychometrics.mfrm.design.DENSE_BASIS_MAX` raters the MML fit does not build the
(R−1)×(R−1) Hessian (20k raters: 3.2 GB per dense copy and 40k gradient evaluations). Instead:

* the other facets (criteria, covariates, groups, topics, thresholds: a few dozen numbers) get their
  covariance from the central-difference Hessian over those parameters only, the raters held at the mode;
* each rater severity ``s_r`` gets ``SE_r = 1/√I_rr`` with ``I_rr`` the exact diagonal of the observed
  information of the negative log posterior in ``s`` (Louis 1982)::

      I_rr = Σ_p m_p [ Σ_q π_pq Σ_{k∈r} n_pk V_kq − Var_π(a_pr) ] + 1/σ_s²,   a_prq = Σ_{k∈r} (n_pk E_kq − y_pk)

  over unique patterns p (multiplicity m_p, node posterior π_pq), cells k of rater r (n_pk ratings summing to
  y_pk; model mean E_kq and variance V_kq at node q).

The approximation drops the covariances between raters (through θ and the zero-sum constraint, which would
shrink each variance by about a factor (R−1)/R) and between raters and the other facets — as R's TAM does in
``tam.se`` ("covariances between parameter estimates are ignored"; each SE from the one-dimensional numerical
second derivative of the marginal log-likelihood, which ``I_rr`` is analytically). With many raters each rating
few exchanges these covariances are small; on a fully crossed 8-rater design the rater SEs come out 13% wider
than the full Hessian's and the criteria's within 1% (``tests/unittests/psychometrics/test_mfrm_many_raters.py``).

The MML module computes the cell log-probabilities and node posteriors at the mode and calls
:func:`rater_information` (this module imports nothing from it).

Example:
    >>> from tutormetrics.psychometrics.mfrm.mml import _rater_information, simulate_mfrm
    >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings, quadrature
    >>> prep = prepare_ratings(simulate_mfrm(n_items=50, seed=0)[0])
    >>> t, w = quadrature(21)
    >>> x = np.zeros(sum(prep.design.sizes().values()))
    >>> _rater_information(x, prep.design, t, np.log(w)).shape
    (2,)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from tutormetrics.psychometrics.mfrm.design import SIGMA_S

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.psychometrics.mfrm.design import Design


def rater_information(d: Design, logp: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``I_rr`` (R,) from the cell log-probabilities ``logp`` (categories, cells, nodes) and the node posteriors
    ``pi`` (patterns, nodes) at one parameter vector: memory O(nonzero pattern cells × nodes + R).

    Args:
        d: The design.
        logp: Cell log-probabilities (categories, cells, nodes).
        pi: Node posteriors (patterns, nodes).
    """
    prob = np.exp(logp)  # (ncat, cells, Q)
    ks = np.arange(prob.shape[0], dtype=float)
    mean = np.tensordot(ks, prob, axes=(0, 0))  # E[Y | cell, node]
    var = np.tensordot(ks**2, prob, axes=(0, 0)) - mean**2
    weight = np.asarray(d.pat_counts_cell.T @ (pi * d.pat_weight[:, None]))  # (cells, Q)
    complete = np.bincount(d.cell_r, np.einsum("kq,kq->k", var, weight), minlength=d.n_raters)
    # the missing information: Var over the node posterior of each pattern's score for rater r
    n_cells = d.n_cells
    counts = d.pat_counts_cell.tocoo()
    rows, cols, n = counts.row, counts.col, counts.data
    scored = sum(float(y) * d.pat_counts_cat[:, y * n_cells : (y + 1) * n_cells] for y in range(1, prob.shape[0]))
    obs = np.asarray(sparse.csr_matrix(scored)[rows, cols]).ravel() if rows.size else np.zeros(0)
    a = n[:, None] * mean[cols] - obs[:, None]  # (nnz, Q)
    key = rows.astype(np.int64) * d.n_raters + d.cell_r[cols]
    uniq, inv = np.unique(key, return_inverse=True)
    group = sparse.csr_matrix((np.ones(inv.size), (inv.ravel(), np.arange(inv.size))), shape=(uniq.size, inv.size))
    a_pr = np.asarray(group @ a)  # (pattern-rater pairs, Q)
    p_of, r_of = uniq // d.n_raters, uniq % d.n_raters
    w_pr = pi[p_of]
    m1 = np.einsum("nq,nq->n", w_pr, a_pr)
    missing = np.einsum("nq,nq->n", w_pr, a_pr**2) - m1**2
    missing = np.bincount(r_of, d.pat_weight[p_of] * missing, minlength=d.n_raters)
    return complete - missing + 1.0 / SIGMA_S**2


def rater_se(info: np.ndarray) -> np.ndarray:
    """``1/√I_rr`` (NaN where the information is not positive).

    Example:
        >>> rater_se(np.array([4.0, 0.0])).tolist()
        [0.5, nan]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(info > 0, 1.0 / np.sqrt(np.where(info > 0, info, 1.0)), np.nan)
