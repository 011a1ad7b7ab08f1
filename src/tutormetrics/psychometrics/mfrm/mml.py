"""Many-facet Rasch model (MFRM) fitted by marginal maximum a posteriori (MML/MAP) with EAP theta.

Model (``docs/statistics.md#mfrm-model``), binary scores::

    logit P(y_ijr = 1) = θ_i − b_j − s_r + γ_j·v_i + Σ_k β_jk·x_ik

* ``θ_i ~ N(0, 1)`` is integrated out with 21 probabilists' Gauss–Hermite nodes (docs/statistics.md#mfrm-mml);
  ``theta`` is the EAP ``Σ_q π_iq t_q`` and ``theta_sd`` the posterior SD, with a 94% interval
  ``EAP ± 1.881·PSD``.
* Priors: ``b_j ~ N(0, 1)``, ``γ_j ~ N(0, 0.5²)``, ``s ~ ZeroSumNormal(1)`` over raters and
  ``β_j· ~ ZeroSumNormal(0.5)`` over groups within each criterion. Zero-sum vectors are
  parametrised exactly as ``s = Qᵀz`` with the orthonormal Helmert map ``Q`` of
  :func:`zero_sum_basis` (``QQᵀ = I``, rows sum to 0, ``QᵀQ = I − J/K``) and ``z ~ N(0, σ²I)``.
* With one rater the rater facet is dropped (``s = 0``).

Partial credit (Masters 1982, docs/statistics.md#partial-credit), scores ``0..M_j``: adjacent-category logits
``log P(k)/P(k−1) = η − τ_jh`` with per-criterion thresholds summing to zero over steps
(``τ_j = Q_{M_j}ᵀ z``, ``z ~ N(0, 1)``), so ``b_j`` is the criterion's mean step difficulty.
Disordered thresholds are reported as they are.

Choice of model (``model="auto"``): **binary** when every score is 0 or 1; otherwise **partial
credit**, where the distinct observed score values of *each criterion*, in increasing order, become
the ordered categories ``0..M_j`` (0/0.5/1 → 0/1/2; a criterion that only uses two values, e.g.
0/1, has a single step and behaves as a Rasch item; unobserved values are squeezed out as in
Facets' default). A criterion with a single observed value carries no information and is dropped
(listed in ``MFRMResult.dropped_criteria``).

Computation: observations are collapsed into *cells* that share the linear predictor (criterion,
rater, group; plus exchange when a covariate is present), the per-exchange, per-node
log-likelihood is a sparse count matrix times the cell log-probabilities, and the analytic
gradient is scattered to the facets with ``np.bincount``. ``scipy.optimize.minimize`` runs
L-BFGS-B; facet SEs come from the inverse Hessian (central differences of the analytic gradient).

Example:
    >>> ratings, truth = simulate_mfrm(n_items=120, seed=1)
    >>> res = fit_mfrm(ratings)
    >>> res.model, res.converged, res.n_obs
    ('binary', True, 1200)
    >>> res.theta_table().columns
    ['exchange_id', 'theta', 'theta_sd', 'theta_low', 'theta_high']
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import optimize
from scipy.special import expit

from tutormetrics.errors import ConfigError
from tutormetrics.frames import frame_inputs
from tutormetrics.psychometrics.mfrm.design import (
    ABSENT_CATEGORY,
    DENSE_BASIS_MAX,
    REFERENCE_POINT,
    SIGMA_B,
    SIGMA_BETA,
    SIGMA_GAMMA,
    SIGMA_S,
    SIGMA_TAU,
    Z94,
    Design,
    ModelKind,
    PreparedRatings,
    covariate_reference,
    partial_credit_probabilities,
    prepare_ratings,
    quadrature,
    reference_text,
    summary_report,
    zero_sum_basis,
)
from tutormetrics.psychometrics.ratings import Ratings

__all__ = [
    "Z94",
    "MFRMResult",
    "fit_mfrm",
    "partial_credit_probabilities",
    "quadrature",
    "simulate_mfrm",
    "zero_sum_basis",
]

# --------------------------------------------------------------------------------------------
# The objective: parameters, priors, cell probabilities, the negative log posterior
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Params:
    b: np.ndarray  # (J,)
    s: np.ndarray  # (R,)
    gamma: np.ndarray  # (J, C)
    beta: np.ndarray  # (J, K) (K = max(n_groups, 1))
    tau: np.ndarray  # (J, M_max) zero-padded beyond M_j
    topic: np.ndarray  # (J, T) zero-sum topic effects (T = n_topics, may be 0)


def _split(x: np.ndarray, d: Design) -> dict[str, np.ndarray]:
    out, pos = {}, 0
    for name, size in d.sizes().items():
        out[name] = x[pos : pos + size]
        pos += size
    return out


def _unpack(x: np.ndarray, d: Design) -> _Params:
    parts = _split(x, d)
    s = d.q_rater.expand(parts["zs"]) if d.n_raters > 1 else np.zeros(max(d.n_raters, 1))
    gamma = parts["gamma"].reshape(d.n_crit, d.n_cov)
    k = max(d.n_groups, 1)
    if d.n_groups > 1:
        beta = parts["zbeta"].reshape(d.n_crit, k - 1) @ d.q_group
    else:
        beta = np.zeros((d.n_crit, k))
    if d.n_topics > 1:
        topic = parts["ztopic"].reshape(d.n_crit, d.n_topics - 1) @ d.q_topic
    else:
        topic = np.zeros((d.n_crit, d.n_topics))
    tau = np.zeros((d.n_crit, d.m_max))
    pos = 0
    for j, steps in enumerate(d.n_steps):
        m = int(steps)
        if m > 1:
            tau[j, :m] = d.q_steps[j].T @ parts["ztau"][pos : pos + m - 1]
            pos += m - 1
    return _Params(b=parts["b"], s=s, gamma=gamma, beta=beta, tau=tau, topic=topic)


def _log_prior(x: np.ndarray, d: Design) -> tuple[float, np.ndarray]:
    parts = _split(x, d)
    sig = {"b": SIGMA_B, "zs": SIGMA_S, "gamma": SIGMA_GAMMA, "zbeta": SIGMA_BETA, "ztopic": SIGMA_BETA, "ztau": SIGMA_TAU}
    lp, grad = 0.0, []
    for name, val in parts.items():
        lp += -0.5 * float(val @ val) / sig[name] ** 2
        grad.append(-val / sig[name] ** 2)
    return lp, np.concatenate(grad) if grad else np.zeros(0)


def _cell_terms(x: np.ndarray, d: Design, t: np.ndarray) -> tuple[_Params, np.ndarray, np.ndarray]:
    """Linear predictor per cell and the (categories, cells, nodes) log-probabilities."""
    p = _unpack(x, d)
    c = -p.b[d.cell_j] - p.s[d.cell_r] + p.beta[d.cell_j, d.cell_g]
    if d.n_cov:
        c = c + np.einsum("nc,nc->n", d.cell_v, p.gamma[d.cell_j])
    if d.n_topics:
        c = c + np.einsum("nk,nk->n", d.cell_x, p.topic[d.cell_j])
    eta = c[:, None] + t[None, :]  # (cells, Q)
    # cumulative threshold sums T_jk (T_j0 = 0), masked beyond M_j
    cum = np.concatenate([np.zeros((d.n_crit, 1)), np.cumsum(p.tau, axis=1)], axis=1)
    ks = np.arange(d.m_max + 1)
    cum = np.where(ks[None, :] <= d.n_steps[:, None], cum, ABSENT_CATEGORY)
    if d.m_max == 1 and not np.any(d.n_steps < 1):
        soft = np.logaddexp(0.0, eta)  # log(1 + e^η)
        logp = np.stack([-soft, eta - soft], axis=0)
    else:
        logits = ks[:, None, None] * eta[None, :, :] - cum[d.cell_j].T[:, :, None]
        logp = logits - _lse(logits, axis=0)[None]
    return p, c, logp


def _lse(a: np.ndarray, axis: int) -> np.ndarray:
    """Fast log-sum-exp for finite input (scipy's version has array-API overhead)."""
    m = a.max(axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.exp(a - m).sum(axis=axis))


def _neg_log_posterior(
    x: np.ndarray, d: Design, t: np.ndarray, logw: np.ndarray, *, want_grad: bool = True
) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Scaled objective ``−(Σ_p m_p log ∫ p(y_p|θ) N(θ) dθ + log prior)/n_obs`` and its gradient.

    The sum runs over the unique exact patterns p (sorted, multiplicity m_p; ``docs/design/effects.md#canonical-coding``), so
    the value does not depend on the row order of the input. Also returns the node posteriors ``π_pq``
    per pattern and the unscaled marginal log-likelihood.
    """
    _p, _c, logp = _cell_terms(x, d, t)
    ncat, n_cells, n_q = logp.shape
    # S_pq = Σ_{cells, categories} counts · log P
    lp2 = logp.reshape(ncat * n_cells, n_q)
    s_iq = d.pat_counts_cat @ lp2 + logw[None, :]
    log_marg = _lse(s_iq, axis=1)
    loglik = float(d.pat_weight @ log_marg)
    lprior, gprior = _log_prior(x, d)
    f = -(loglik + lprior) / d.n_obs
    pi = np.exp(s_iq - log_marg[:, None])
    if not want_grad:
        return f, np.zeros_like(x), pi, loglik
    prob = np.exp(logp)  # (ncat, cells, Q)
    ks = np.arange(ncat, dtype=float)
    expected = np.tensordot(ks, prob, axes=(0, 0))  # E[Y | cell, node]
    weight = np.asarray(d.pat_counts_cell.T @ (pi * d.pat_weight[:, None]))  # (cells, Q): Σ_i n_ik π_iq
    obs_sum = d.cell_cat_total @ ks  # Σ y over a cell
    g_c = obs_sum - np.einsum("kq,kq->k", expected, weight)  # d loglik / d c_k
    grads: list[np.ndarray] = [-np.bincount(d.cell_j, g_c, minlength=d.n_crit)]
    if d.n_raters > 1:
        grads.append(d.q_rater.reduce(-np.bincount(d.cell_r, g_c, minlength=d.n_raters)))
    if d.n_cov:
        gg = np.stack(
            [np.bincount(d.cell_j, g_c * d.cell_v[:, c], minlength=d.n_crit) for c in range(d.n_cov)], axis=1
        )
        grads.append(gg.ravel())
    if d.n_groups > 1:
        gb = np.bincount(d.cell_j * d.n_groups + d.cell_g, g_c, minlength=d.n_crit * d.n_groups)
        grads.append((gb.reshape(d.n_crit, d.n_groups) @ d.q_group.T).ravel())
    if d.n_topics > 1:
        gt = np.stack(
            [np.bincount(d.cell_j, g_c * d.cell_x[:, k], minlength=d.n_crit) for k in range(d.n_topics)], axis=1
        )
        grads.append((gt @ d.q_topic.T).ravel())
    if any(int(m) > 1 for m in d.n_steps):
        # d loglik / d τ_h = Σ [P(Y ≥ h) − 1[y ≥ h]]
        p_ge = np.cumsum(prob[::-1], axis=0)[::-1][1:]  # P(Y >= h): (M, cells, Q)
        model_ge = np.einsum("hkq,kq->kh", p_ge, weight)
        obs_ge = np.cumsum(d.cell_cat_total[:, ::-1], axis=1)[:, ::-1][:, 1:]
        g_tau_cell = model_ge - obs_ge
        g_tau = np.stack(
            [np.bincount(d.cell_j, g_tau_cell[:, h], minlength=d.n_crit) for h in range(d.m_max)], axis=1
        )
        for j, steps in enumerate(d.n_steps):
            m = int(steps)
            if m > 1:
                grads.append(d.q_steps[j] @ g_tau[j, :m])
    g = np.concatenate(grads) + gprior
    return f, -g / d.n_obs, pi, loglik


def _natural_map(d: Design, raters: bool = True) -> tuple[np.ndarray, list[tuple[str, str, str]]]:
    """Linear map A (natural × free) and labels (facet, level-kind, index) of the natural vector; without
    ``raters`` the rater rows are left out (many raters: their SEs come from :mod:`.rater_se`)."""
    sizes = d.sizes()
    n_free = sum(sizes.values())
    blocks: list[np.ndarray] = []
    labels: list[tuple[str, str, str]] = []
    offset = 0

    def block(rows: np.ndarray, start: int) -> np.ndarray:
        out = np.zeros((rows.shape[0], n_free))
        out[:, start : start + rows.shape[1]] = rows
        return out

    blocks.append(block(np.eye(d.n_crit), offset))
    labels += [("criterion", str(j), "") for j in range(d.n_crit)]
    offset += sizes["b"]
    if d.n_raters > 1 and raters:
        blocks.append(block(d.q_rater.dense().T, offset))
        labels += [("rater", str(r), "") for r in range(d.n_raters)]
    offset += sizes["zs"]
    if d.n_cov:
        blocks.append(block(np.eye(d.n_crit * d.n_cov), offset))
        labels += [("covariate", str(j), str(c)) for j in range(d.n_crit) for c in range(d.n_cov)]
    offset += sizes["gamma"]
    if d.n_groups > 1:
        blocks.append(block(np.kron(np.eye(d.n_crit), d.q_group.T), offset))
        labels += [("group", str(j), str(k)) for j in range(d.n_crit) for k in range(d.n_groups)]
    offset += sizes["zbeta"]
    if d.n_topics > 1:
        blocks.append(block(np.kron(np.eye(d.n_crit), d.q_topic.T), offset))
        labels += [("topic", str(j), str(k)) for j in range(d.n_crit) for k in range(d.n_topics)]
    offset += sizes["ztopic"]
    for j, steps in enumerate(d.n_steps):
        m = int(steps)
        if m > 1:
            blocks.append(block(d.q_steps[j].T, offset))
            offset += m - 1
            labels += [("threshold", str(j), str(h)) for h in range(1, m + 1)]
    return np.vstack(blocks), labels


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@dataclass
class MFRMResult:
    """Fitted MFRM: EAP theta per exchange, facet estimates with SEs, and fit diagnostics.

    Attributes hold plain numpy arrays; :meth:`theta_table` and :meth:`facets_table` return tidy
    polars frames. Intervals are 94% (``± 1.881·SE``; baseline probabilities are intervals on the
    logit scale mapped back).
    """

    model: str
    method: str
    id_col: str
    exchange_ids: pl.Series
    criteria: list[str]
    raters: list[str]
    theta: np.ndarray
    theta_sd: np.ndarray
    b: np.ndarray
    s: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    tau: np.ndarray
    n_steps: np.ndarray
    covariance: np.ndarray  # natural-parameter covariance (NaN if SEs were not computed)
    natural_labels: list[tuple[str, str, str]]
    covariate_names: list[str]
    group_levels: list[str]
    score_levels: dict[str, list[float]]
    log_likelihood: float
    log_posterior: float
    converged: bool
    n_obs: int
    n_iter: int
    message: str
    n_nodes: int
    dropped_criteria: list[str] = field(default_factory=list)
    reference_point: str = REFERENCE_POINT
    topic: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (J, T)
    topic_names: list[str] = field(default_factory=list)
    #: per covariate (scale raw/z, mean, SD) over the rated exchanges (``docs/design/effects.md#covariate-scale``)
    covariate_scales: list[tuple[str, float, float]] = field(default_factory=list)
    #: raw covariate values and topic indicators per exchange (for the sparse rule of docs/design/effects.md#reason-codes)
    covariate_raw: np.ndarray | None = None
    topic_matrix: np.ndarray | None = None
    #: the free vector at the mode, its covariance H⁻¹ (NaN when H is not PD) and the natural map A
    free_x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    free_covariance: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    natural_map: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    #: above DENSE_BASIS_MAX raters: each rater's SE from the diagonal of the information (:mod:`.rater_se`);
    #: then ``free_x``, ``free_covariance``, ``natural_map`` and ``covariance`` leave the raters out
    rater_se: np.ndarray | None = None

    @property
    def reliability(self) -> float:
        """EAP reliability ``var(EAP) / (var(EAP) + mean(PSD²))``."""
        v = float(np.var(self.theta))
        return v / (v + float(np.mean(self.theta_sd**2)))

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    def theta_table(self) -> pl.DataFrame:
        """One row per exchange: ``exchange_id, theta, theta_sd, theta_low, theta_high`` (94%).

        The id column keeps the name passed as ``id_col`` (``exchange_id`` by default).
        """
        return pl.DataFrame(
            {
                self.id_col: self.exchange_ids,
                "theta": self.theta,
                "theta_sd": self.theta_sd,
                "theta_low": self.theta - Z94 * self.theta_sd,
                "theta_high": self.theta + Z94 * self.theta_sd,
            }
        )

    def _se(self) -> np.ndarray:
        diag = np.diag(self.covariance) if self.covariance.size else np.zeros(0)
        return np.sqrt(np.where(diag >= 0, diag, np.nan))

    def facets_table(self, n_draws: int = 4000, seed: int = 0) -> pl.DataFrame:  # noqa: C901 - one flat block per facet, in the order of the table's rows
        """Tidy facet estimates: ``facet, level, estimate, se, lower, upper, reference, plugin``.

        Facets: ``criterion`` (b_j), ``rater`` (s_r), ``covariate:<name>`` (γ_j, level = criterion),
        ``group:<level>`` (β_jk, level = criterion), ``threshold`` (τ_jh, level ``<criterion>:<h>``)
        and ``baseline_probability`` (binary criterion: P(y = 1); partial credit: one row
        ``<criterion>:P(y=k)`` per category) at η = −b_j, evaluated at ``reference_point``. The
        baseline rows summarise the ``n_draws`` draws of :meth:`effects_table` (same ``seed``): the mean,
        the SD and the 94% HDI; ``plugin`` is p at the mode, empty on the other facets
        (``docs/guide/paper.md#baseline``). Without a positive-definite Ĥ the estimate is the plug-in.
        """
        from tutormetrics.psychometrics.mfrm.effects import baseline_rows, mml_parameter_draws

        se_all = self._se()
        cols = ("facet", "level", "estimate", "se", "lower", "upper", "reference", "plugin")
        rows: dict[str, list] = {k: [] for k in cols}

        def add(facet: str, level: str, est: float, se: float, lo: float, hi: float, ref: str = "", plugin: float | None = None) -> None:
            """Append one facet row.

            Args:
                facet: The facet column value.
                level: The level column value.
                est: The estimate.
                se: Its standard error.
                lo: Lower end of its interval.
                hi: Upper end of its interval.
                ref: The reference column value.
                plugin: The plug-in estimate; ``None``: none.
            """
            for key, val in zip(cols, (facet, level, float(est), float(se), float(lo), float(hi), ref, plugin), strict=True):
                rows[key].append(val)

        index = {lab: i for i, lab in enumerate(self.natural_labels)}

        def se_of(lab: tuple[str, str, str]) -> float:
            i = index.get(lab)
            return float(se_all[i]) if i is not None and i < se_all.shape[0] else float("nan")

        for j, crit in enumerate(self.criteria):
            se = se_of(("criterion", str(j), ""))
            add("criterion", crit, self.b[j], se, self.b[j] - Z94 * se, self.b[j] + Z94 * se)
        if len(self.raters) > 1:
            for r, name in enumerate(self.raters):
                se = se_of(("rater", str(r), "")) if self.rater_se is None else float(self.rater_se[r])
                add("rater", name, self.s[r], se, self.s[r] - Z94 * se, self.s[r] + Z94 * se)
        for c, cname in enumerate(self.covariate_names):
            ref = covariate_reference(cname, self.covariate_scales[c]) if self.covariate_scales else ""
            for j, crit in enumerate(self.criteria):
                est, se = self.gamma[j, c], se_of(("covariate", str(j), str(c)))
                add(f"covariate:{cname}", crit, est, se, est - Z94 * se, est + Z94 * se, ref)
        if len(self.topic_names) > 1:
            for k, tname in enumerate(self.topic_names):
                for j, crit in enumerate(self.criteria):
                    est, se = self.topic[j, k], se_of(("topic", str(j), str(k)))
                    add(f"topic:{tname}", crit, est, se, est - Z94 * se, est + Z94 * se)
        if len(self.group_levels) > 1:
            for k, lev in enumerate(self.group_levels):
                for j, crit in enumerate(self.criteria):
                    est, se = self.beta[j, k], se_of(("group", str(j), str(k)))
                    add(f"group:{lev}", crit, est, se, est - Z94 * se, est + Z94 * se)
        for j, crit in enumerate(self.criteria):
            m = int(self.n_steps[j])
            if m > 1:
                for h in range(1, m + 1):
                    est, se = self.tau[j, h - 1], se_of(("threshold", str(j), str(h)))
                    add("threshold", f"{crit}:{h}", est, se, est - Z94 * se, est + Z94 * se)
        draws = mml_parameter_draws(self, n_draws, seed)
        for j, crit in enumerate(self.criteria):
            m = int(self.n_steps[j])
            b_s = None if draws is None else draws.b[:, j]
            tau_s = None if draws is None or draws.tau is None else draws.tau[:, j]
            for row in baseline_rows(crit, m, float(self.b[j]), self.tau[j] if m > 1 else None, b_s, tau_s):
                add("baseline_probability", row.level, row.estimate, row.se, row.lower, row.upper, self.reference_point, row.plugin)
        schema = {c: pl.Float64 for c in cols}
        schema.update({"facet": pl.String, "level": pl.String, "reference": pl.String})
        return pl.DataFrame(rows, schema=schema)

    def effects_table(self, n_draws: int = 4000, seed: int = 0) -> pl.DataFrame:
        """Δp per covariate, topic and group level per criterion at the reference point, with draws from
        N(x̂, Ĥ⁻¹) (``docs/design/effects.md#effects``); columns :data:`~tutormetrics.psychometrics.mfrm.effects.EFFECT_COLUMNS`."""
        from tutormetrics.psychometrics.mfrm.effects import mml_effects

        return mml_effects(self, n_draws=n_draws, seed=seed)

    def summary(self) -> str:
        """Short human-readable report (fit, reliability, facet table)."""
        return summary_report(
            self,
            header=f"MFRM ({self.model}, {self.method.upper()} + EAP, {self.n_nodes} Gauss-Hermite nodes)",
            fit_line=f"log-likelihood {self.log_likelihood:.3f}, converged {self.converged} ({self.n_iter} iterations)",
            spread="se",
        )




# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------










@frame_inputs("covariates", "groups", "topics", ratings=Ratings)
def fit_mfrm(
    ratings: pl.DataFrame | Ratings,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    covariates: pl.DataFrame | None = None,
    covariate_cols: str | Sequence[str] | None = None,
    standardize_covariates: bool | None = None,
    covariate_scale: str = "auto",
    groups: pl.DataFrame | None = None,
    group_col: str | None = None,
    topics: pl.DataFrame | None = None,
    topic_cols: str | Sequence[str] | None = None,
    model: ModelKind = "auto",
    n_nodes: int = 21,
    compute_se: bool = True,
    maxiter: int = 1000,
) -> MFRMResult:
    """Fit the MFRM by marginal MAP over θ ~ N(0,1) (Gauss–Hermite) and return EAP theta.

    ``logit P(y=1) = θ_i − b_j − s_r + γ_j·v_i + Σ_k β_jk·x_ik`` (binary) or its partial-credit
    extension (see the module docstring for the automatic choice and the score → category rule).

    Args:
        ratings: long ratings, one row per (exchange, rater, criterion) score; null scores are dropped.
        id_col: the exchange id column.
        rater_col: the rater column.
        criterion_col: the criterion column.
        score_col: the score column.
        covariates: exchange-level table with ``id_col`` and numeric column(s) ``covariate_cols``
            (default: every numeric column but the id). ``covariate_scale`` (``docs/design/effects.md#covariate-scale``): ``"auto"``
            uses a 0/1 column raw and z-scores any other over the rated exchanges (γ_j per SD); ``"raw"``
            and ``"z"`` force one scale (``standardize_covariates`` is a deprecated alias). Makes θ
            residual (latent regression).
        covariate_cols: the covariate columns (see ``covariates``).
        standardize_covariates: deprecated alias of ``covariate_scale`` (True: ``"z"``, False: ``"raw"``).
        covariate_scale: ``"auto"``, ``"raw"`` or ``"z"`` (see ``covariates``).
        topics: exchange-level 0/1 topic columns ``topic_cols`` (multi-hot; default every 0/1 column),
            with β_j· summing to zero over topics within each criterion (ZeroSumNormal(0.5)).
        topic_cols: the topic columns (see ``topics``).
        groups: exchange-level table with ``id_col`` and a categorical ``group_col`` (default: the one
            non-id column); one-hot x with zero-sum β_j· over groups.
        group_col: the group column (see ``groups``).
        model: ``"auto"``, ``"binary"`` or ``"partial_credit"``.
        n_nodes: Gauss–Hermite nodes over θ.
        compute_se: facet SEs from the inverse Hessian (finite differences of the gradient).
        maxiter: most optimizer iterations.

    Example:
        >>> ratings, _ = simulate_mfrm(n_items=100, seed=3)
        >>> res = fit_mfrm(ratings)
        >>> res.facets_table().filter(pl.col("facet") == "criterion").height
        5
    """
    _check_fit_options(model, n_nodes)
    prep = prepare_ratings(
        ratings,
        id_col=id_col,
        rater_col=rater_col,
        criterion_col=criterion_col,
        score_col=score_col,
        covariates=covariates,
        covariate_cols=covariate_cols,
        standardize_covariates=standardize_covariates,
        covariate_scale=covariate_scale,
        groups=groups,
        group_col=group_col,
        topics=topics,
        topic_cols=topic_cols,
        model=model,
    )
    t, w = quadrature(n_nodes)
    logw = np.log(w)
    opt = _maximise_posterior(prep.design, t, logw, _start_values(prep), maxiter=maxiter)
    design = prep.design
    many = design.n_raters > DENSE_BASIS_MAX  # O(R) memory: raters apart (rater_se), the rest by the Hessian
    amap, labels = _natural_map(design, raters=not many)
    keep = _free_without_raters(design) if many else np.arange(opt.x.size)
    amap = amap[:, keep]
    if compute_se and keep.size:
        cov_free = _free_covariance(opt.x, design, t, logw, keep)
    else:
        cov_free = np.full((keep.size, keep.size), np.nan)
    se_r = None
    if many:
        from tutormetrics.psychometrics.mfrm.rater_se import rater_se

        se_r = rater_se(_rater_information(opt.x, design, t, logw)) if compute_se else np.full(design.n_raters, np.nan)
    return _mml_result(prep, opt, t, logw, cov_free, amap, labels, id_col=id_col, n_nodes=n_nodes, keep=keep, rater_se=se_r)


def _rater_information(x: np.ndarray, d: Design, t: np.ndarray, logw: np.ndarray) -> np.ndarray:
    """The diagonal of the observed information of the rater severities at ``x`` (:mod:`.rater_se`)."""
    from tutormetrics.psychometrics.mfrm.rater_se import rater_information

    _f, _g, pi, _ll = _neg_log_posterior(x, d, t, logw, want_grad=False)
    return rater_information(d, _cell_terms(x, d, t)[2], pi)


def _free_without_raters(d: Design) -> np.ndarray:
    """Indices of the free vector outside the rater block (``zs``)."""
    sizes = d.sizes()
    n = sum(sizes.values())
    return np.setdiff1d(np.arange(n), np.arange(sizes["b"], sizes["b"] + sizes["zs"]))


def _check_fit_options(model: str, n_nodes: int) -> None:
    """``model`` is auto/binary/partial_credit and the quadrature has at least 3 nodes."""
    if model not in ("auto", "binary", "partial_credit"):
        raise ConfigError(f"unknown model {model!r}", hint="use auto, binary or partial_credit")
    if n_nodes < 3:
        raise ConfigError("n_nodes must be at least 3")


def _start_values(prep: PreparedRatings) -> np.ndarray:
    """Zeros, except ``b_j = −1.2·logit(p̄_j)`` with ``p̄_j`` the mean score proportion ``cat/M_j`` of
    criterion j clipped to [.02, .98] (1.2 corrects the attenuation of marginal logits)."""
    design, crit_codes, n_steps = prep.design, prep.crit_codes, prep.design.n_steps
    n_crit = len(prep.criteria)
    x0 = np.zeros(sum(design.sizes().values()))
    tot = np.bincount(crit_codes, prep.cat / n_steps[crit_codes], minlength=n_crit)
    cnt = np.bincount(crit_codes, minlength=n_crit)
    prop = np.clip(tot / np.maximum(cnt, 1), 0.02, 0.98)
    x0[:n_crit] = -1.2 * np.log(prop / (1 - prop))
    return x0


def _maximise_posterior(
    design: Design, t: np.ndarray, logw: np.ndarray, x0: np.ndarray, *, maxiter: int
) -> optimize.OptimizeResult:
    """L-BFGS-B on the scaled negative log posterior with its analytic gradient."""

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g, _, _ = _neg_log_posterior(x, design, t, logw)
        return f, g

    return optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter, "ftol": 1e-13, "gtol": 1e-8}
    )


def _free_covariance(x: np.ndarray, design: Design, t: np.ndarray, logw: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``H⁻¹`` with ``H`` the Hessian of the negative log posterior at the mode over the free parameters
    ``keep`` (the others held at the mode); all NaN (with a warning) when ``H`` is not positive definite."""
    hess = _hessian(x, design, t, logw, keep) * design.n_obs
    try:
        cov_free = np.linalg.inv(hess)
        if np.any(np.diag(cov_free) < 0) or not np.all(np.isfinite(cov_free)):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        warnings.warn("MFRM Hessian is not positive definite; SEs are NaN", stacklevel=3)
        cov_free = np.full((keep.size, keep.size), np.nan)
    return cov_free


def _mml_result(
    prep: PreparedRatings,
    opt: optimize.OptimizeResult,
    t: np.ndarray,
    logw: np.ndarray,
    cov_free: np.ndarray,
    amap: np.ndarray,
    labels: list[tuple[str, str, str]],
    *,
    id_col: str,
    n_nodes: int,
    keep: np.ndarray | None = None,
    rater_se: np.ndarray | None = None,
) -> MFRMResult:
    """The result at the mode: EAP ``θ = Σ_q π_q t_q`` and posterior SD once per θ-key (from its first
    pattern, copied to every member; ``docs/design/effects.md#canonical-coding``), facet values in display order."""
    design = prep.design
    f_hat, g_hat, pi, loglik = _neg_log_posterior(opt.x, design, t, logw)
    # row-wise reductions: every row is summed the same way whatever its position
    theta_pat = (pi * t[None, :]).sum(axis=1)
    sd_pat = np.sqrt(np.maximum((pi * (t**2)[None, :]).sum(axis=1) - theta_pat**2, 0.0))
    theta, theta_sd = theta_pat[design.item_theta_rep], sd_pat[design.item_theta_rep]
    p = _unpack(opt.x, design)
    order = np.asarray(prep.display if prep.display else range(len(prep.criteria)), dtype=np.int64)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    criteria = [prep.criteria[j] for j in order]
    shown = [(facet, str(int(inv[int(j)])) if facet != "rater" else j, k) for facet, j, k in labels]
    return MFRMResult(
        model=prep.model,
        method="mml",
        id_col=id_col,
        exchange_ids=prep.ids.alias(id_col),
        criteria=criteria,
        raters=prep.raters,
        theta=theta,
        theta_sd=theta_sd,
        b=p.b[order].copy(),
        s=p.s.copy() if len(prep.raters) > 1 else np.zeros(len(prep.raters)),
        gamma=p.gamma[order].copy(),
        beta=p.beta[order].copy(),
        tau=p.tau[order].copy(),
        n_steps=design.n_steps[order],
        covariance=amap @ cov_free @ amap.T,
        natural_labels=shown,
        covariate_names=prep.cov_names,
        group_levels=prep.group_levels,
        score_levels={c: prep.score_levels[c] for c in criteria},
        log_likelihood=loglik,
        log_posterior=-f_hat * design.n_obs,
        converged=bool(opt.success) or float(np.max(np.abs(g_hat), initial=0.0)) < 1e-6,
        n_obs=design.n_obs,
        n_iter=int(opt.nit),
        message=str(opt.message),
        n_nodes=n_nodes,
        dropped_criteria=prep.dropped,
        reference_point=reference_text(prep.cov_names, prep.cov_scales, prep.topic_names, prep.group_levels),
        topic=p.topic[order].copy(),
        topic_names=prep.topic_names,
        covariate_scales=prep.cov_scales,
        covariate_raw=prep.cov_raw,
        topic_matrix=prep.item_topic,
        free_x=opt.x.copy() if keep is None else opt.x[keep].copy(),
        free_covariance=cov_free,
        natural_map=amap,
        rater_se=rater_se,
    )


def _hessian(
    x: np.ndarray, d: Design, t: np.ndarray, logw: np.ndarray, keep: np.ndarray | None = None, step: float = 1e-4
) -> np.ndarray:
    """Hessian of the scaled objective over the free parameters ``keep`` (default all) by central
    differences of the analytic gradient: ``2·len(keep)`` gradients, a ``len(keep)²`` matrix."""
    keep = np.arange(x.size) if keep is None else keep
    n = keep.size
    h = np.empty((n, n))
    for col, k in enumerate(keep):
        e = np.zeros(x.size)
        e[k] = step * max(1.0, abs(x[k]))
        gp = _neg_log_posterior(x + e, d, t, logw)[1]
        gm = _neg_log_posterior(x - e, d, t, logw)[1]
        h[:, col] = (gp[keep] - gm[keep]) / (2 * e[k])
    return 0.5 * (h + h.T)


# --------------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------------


def simulate_mfrm(
    n_items: int = 249,
    b: Sequence[float] = (1.517, 1.553, 0.0, -1.577, -1.493),
    severities: Sequence[float] = (0.036, -0.036),
    seed: int | None = 0,
    *,
    gamma: Sequence[float] | None = None,
    beta: np.ndarray | Sequence[Sequence[float]] | None = None,
    thresholds: np.ndarray | Sequence[Sequence[float]] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Simulate fully crossed MFRM ratings (design of ``docs/statistics.md#mfrm-recovery``).

    θ ~ N(0,1) centred; ``gamma`` (J,) adds a standardised covariate v; ``beta`` (J×K, rows summing
    to zero) adds K balanced groups; ``thresholds`` (J×M, rows summing to zero) makes partial-credit
    scores 0..M instead of 0/1.

    Args:
        n_items: Number of exchanges.
        b: Criterion difficulties b_j (logits); their count is J.
        severities: Rater severities s_r (logits); their count is R.
        seed: Seed of ``default_rng``.
        gamma: Covariate effect per criterion (J,); ``None``: no covariate.
        beta: Group effects (J×K, rows summing to zero); ``None``: no groups.
        thresholds: Partial-credit thresholds (J×M, rows summing to zero); ``None``: binary scores.

    Returns:
        ``(ratings, truth)``: ratings ``exchange_id, rater, criterion, score`` and the exchange-level
        truth ``exchange_id, theta`` (+ ``v``, ``group`` when simulated).

    Example:
        >>> ratings, truth = simulate_mfrm(n_items=10, seed=0)
        >>> ratings.height, truth.columns
        (100, ['exchange_id', 'theta'])
    """
    rng = np.random.default_rng(seed)
    b = np.asarray(b, dtype=float)
    sev = np.asarray(severities, dtype=float)
    n_crit, n_rat = b.size, sev.size
    theta = rng.standard_normal(n_items)
    theta -= theta.mean()
    width = len(str(max(n_items - 1, 0)))
    ids = [f"ex{i:0{width}d}" for i in range(n_items)]
    truth: dict[str, object] = {"exchange_id": ids, "theta": theta}
    eta_item = theta[:, None] - b[None, :]  # (I, J)
    if gamma is not None:
        v = rng.standard_normal(n_items)
        v = (v - v.mean()) / v.std()
        eta_item = eta_item + v[:, None] * np.asarray(gamma, dtype=float)[None, :]
        truth["v"] = v
    if beta is not None:
        beta_arr = np.asarray(beta, dtype=float)
        k = beta_arr.shape[1]
        grp = rng.permutation(np.arange(n_items) % k)
        eta_item = eta_item + beta_arr[:, grp].T
        truth["group"] = [f"g{g + 1}" for g in grp]
    eta = eta_item[:, :, None] - sev[None, None, :]  # (I, J, R)
    if thresholds is None:
        y = (rng.random(eta.shape) < expit(eta)).astype(float)
    else:
        tau = np.asarray(thresholds, dtype=float)
        probs = np.stack([partial_credit_probabilities(eta[:, j, :], tau[j]) for j in range(n_crit)], axis=1)
        u = rng.random(eta.shape)[..., None]
        y = (u > np.cumsum(probs, axis=-1)).sum(-1).astype(float)
        y = np.minimum(y, tau.shape[1])
    ii, jj, rr = np.meshgrid(np.arange(n_items), np.arange(n_crit), np.arange(n_rat), indexing="ij")
    ratings = pl.DataFrame(
        {
            "exchange_id": pl.Series(ids)[ii.ravel()],
            "rater": pl.Series([f"r{r + 1}" for r in range(n_rat)])[rr.ravel()],
            "criterion": pl.Series([f"c{j + 1}" for j in range(n_crit)])[jj.ravel()],
            "score": y.ravel(),
        }
    )
    return ratings, pl.DataFrame(truth)
