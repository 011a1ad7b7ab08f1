"""Optional Bayesian many-facet Rasch model: NUTS with PyMC (nutpie or PyMC's sampler) and PSIS-LOO.

Model (``docs/statistics.md#mfrm-model``, ``docs/statistics.md#mfrm-nuts``), binary scores::

    logit P(y_ijr = 1) = θ_i − b_j − s_r + γ_j·v_i + Σ_k β_jk·x_ik

Priors: ``θ ~ ZeroSumNormal(1)`` over exchanges, ``s ~ ZeroSumNormal(1)`` over raters,
``b_j ~ N(0, 1)``, ``γ_jc ~ N(0, 0.5²)``, ``β_j· ~ ZeroSumNormal(0.5)`` over groups within each
criterion. With one rater the rater facet is dropped (as in the MML fit).

Partial credit (docs/statistics.md#partial-credit, Masters 1982), categories ``0..M_j``: ``P(y = k) ∝ exp(Σ_{h≤k}(η − τ_jh))``
(``logits = [0, cumsum(η − τ_j)]``, ``pm.Categorical(logit_p=logits)``) with
``τ_j· ~ ZeroSumNormal(1)`` over steps. When criteria have different numbers of steps the zero-sum
vectors are built as ``τ_j = Q_{M_j}ᵀ z_j``, ``z_j ~ N(0, I)`` — the same distribution.

Data preparation (id/criterion/rater coding, covariate standardisation, score → category mapping,
automatic model choice, dropped criteria) is the MML path's own (:func:`mfrm.prepare_ratings`), so both
fits see identical data. Results mirror :class:`~tutormetrics.psychometrics.mfrm.mml.MFRMResult`:
``theta_table()`` (EAP = posterior mean, ``theta_sd`` = posterior SD, 94% HDI) and
``facets_table()`` (posterior mean, SD, 94% HDI), plus sampler diagnostics (rank-normalised R-hat
≤ 1.01, bulk/tail ESS ≥ 400, 0 divergences) and ``.idata`` (with the pointwise log-likelihood, one
entry per rating, for PSIS-LOO).

PyMC and ArviZ are imported lazily; without them a :class:`~tutormetrics.errors.ConfigError` asks
for the ``bayes`` extra (``pip install 'tutormetrics[bayes]'``).

Example:
    >>> from tutormetrics.psychometrics.mfrm.mml import simulate_mfrm
    >>> ratings, _ = simulate_mfrm(n_items=40, seed=1)
    >>> res = fit_mfrm_bayes(ratings, draws=200, tune=200, chains=2)  # doctest: +SKIP
    >>> res.theta_table().columns  # doctest: +SKIP
    ['exchange_id', 'theta', 'theta_sd', 'theta_low', 'theta_high']
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.mfrm.design import (
    ABSENT_CATEGORY,
    REFERENCE_POINT,
    SIGMA_B,
    SIGMA_BETA,
    SIGMA_GAMMA,
    SIGMA_S,
    SIGMA_TAU,
    Design,
    ModelKind,
    PreparedRatings,
    covariate_reference,
    prepare_ratings,
    reference_text,
    summary_report,
    zero_sum_basis,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "BayesDiagnostics",
    "BayesMFRMResult",
    "HDI_PROB",
    "R_HAT_MAX",
    "ESS_MIN",
    "compare_models",
    "fit_mfrm_bayes",
    "loo_table",
    "pareto_k_threshold",
]

Sampler = Literal["nutpie", "pymc"]

#: Interval mass of the reported highest-density intervals (ArviZ 0.23's default ``stats.ci_prob``).
HDI_PROB = 0.94
#: Convergence thresholds of ``docs/statistics.md#mfrm-nuts``.
R_HAT_MAX = 1.01
ESS_MIN = 400.0
_PARAMS = ("theta", "b", "s", "gamma", "beta", "beta_topic", "tau")  # sampled parameters (diagnostics run over these)
_EXTRA_HINT = "pip install 'tutormetrics[bayes]'"


def _bayes_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """Import ``pymc``, ``pytensor.tensor`` and ``arviz`` or raise :class:`ConfigError` naming the extra."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # ArviZ 0.23 announces its 1.0 refactor on import
            import arviz as az
            import pymc as pm
            import pytensor.tensor as pt
    except ImportError as exc:
        raise ConfigError("the Bayesian MFRM needs the bayes extra", hint=_EXTRA_HINT) from exc
    return pm, pt, az


def pareto_k_threshold(n_samples: int) -> float:
    """PSIS-LOO Pareto-k flag threshold ``min(1 − 1/log10(S), 0.7)`` for S posterior draws.

    Example:
        >>> pareto_k_threshold(4000)
        0.7
        >>> round(pareto_k_threshold(100), 3)
        0.5
    """
    if n_samples < 2:
        raise ValueError("n_samples must be >= 2")
    return float(min(1.0 - 1.0 / math.log10(n_samples), 0.7))


# --------------------------------------------------------------------------------------------
# Observations and model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Obs:
    """One row per rating, in a canonical order (exchange, criterion, rater, category)."""

    item: np.ndarray
    crit: np.ndarray
    rater: np.ndarray
    group: np.ndarray
    cov: np.ndarray  # (N, C)
    cat: np.ndarray
    topic: np.ndarray | None = None  # (N, K) topic indicators

    @property
    def n(self) -> int:
        return int(self.item.shape[0])


def _observations(d: Design) -> _Obs:
    """Expand the MML design's (exchange × category·cell) count matrix back into single ratings.

    The canonical sort makes the pointwise log-likelihoods of nested models (whose cells differ)
    line up rating by rating, which ``az.compare`` needs for ``dse``.
    """
    coo = d.counts_cat.tocoo()
    count = np.rint(coo.data).astype(np.int64)
    item = np.repeat(coo.row.astype(np.int64), count)
    cat, cell = np.divmod(np.repeat(coo.col.astype(np.int64), count), d.n_cells)
    crit, rater, group = d.cell_j[cell], d.cell_r[cell], d.cell_g[cell]
    order = np.lexsort((cat, rater, crit, item))
    return _Obs(
        item=item[order],
        crit=crit[order].astype(np.int64),
        rater=rater[order].astype(np.int64),
        group=group[order].astype(np.int64),
        cov=np.asarray(d.cell_v[cell][order], dtype=float).reshape(order.size, d.n_cov),
        cat=cat[order],
        topic=np.asarray(d.cell_x[cell][order], dtype=float).reshape(order.size, d.n_topics) if d.n_topics else None,
    )


def _threshold_map(n_steps: np.ndarray, m_max: int) -> np.ndarray:
    """Matrix A ((J·M_max) × Σ(M_j − 1)) with ``vec(τ) = A z``: ``τ_j = Q_{M_j}ᵀ z_j``, zero-padded."""
    n_free = int(sum(max(int(m) - 1, 0) for m in n_steps))
    a = np.zeros((n_steps.size * m_max, n_free))
    pos = 0
    for j, m in enumerate(int(x) for x in n_steps):
        if m > 1:
            a[j * m_max : j * m_max + m, pos : pos + m - 1] = zero_sum_basis(m).T
            pos += m - 1
    return a


def _build_model(pm: ModuleType, pt: ModuleType, prep: PreparedRatings, obs: _Obs) -> Any:
    """PyMC model of docs/statistics.md#mfrm-nuts (binary, ``pm.Bernoulli``) or docs/statistics.md#partial-credit (partial credit, ``pm.Categorical``)."""
    d = prep.design
    coords: dict[str, Any] = {
        "exchange": [str(x) for x in prep.ids.to_list()],
        "criterion": prep.criteria,
        "obs": np.arange(obs.n),
    }
    if d.n_raters > 1:
        coords["rater"] = prep.raters
    if d.n_cov:
        coords["covariate"] = prep.cov_names
    if d.n_groups > 1:
        coords["group"] = prep.group_levels
    if d.n_topics > 1:
        coords["topic"] = prep.topic_names
    if d.m_max > 1:
        coords["step"] = np.arange(1, d.m_max + 1)
        coords["category"] = np.arange(d.m_max + 1)
    with pm.Model(coords=coords) as model:
        theta = pm.ZeroSumNormal("theta", sigma=1.0, dims="exchange")
        b = pm.Normal("b", 0.0, SIGMA_B, dims="criterion")
        eta = theta[obs.item] - b[obs.crit]
        if d.n_raters > 1:
            s = pm.ZeroSumNormal("s", sigma=SIGMA_S, dims="rater")
            eta = eta - s[obs.rater]
        if d.n_cov:
            gamma = pm.Normal("gamma", 0.0, SIGMA_GAMMA, dims=("criterion", "covariate"))
            eta = eta + (gamma[obs.crit] * obs.cov).sum(axis=-1)
        if d.n_groups > 1:
            beta = pm.ZeroSumNormal("beta", sigma=SIGMA_BETA, dims=("criterion", "group"))
            eta = eta + beta[obs.crit, obs.group]
        if d.n_topics > 1:  # docs/design/effects.md#topics: zero sum over topics within each criterion
            beta_topic = pm.ZeroSumNormal("beta_topic", sigma=SIGMA_BETA, dims=("criterion", "topic"))
            eta = eta + (beta_topic[obs.crit] * obs.topic).sum(axis=-1)
        if d.m_max == 1:
            pm.Deterministic("baseline_p", pm.math.sigmoid(-b), dims="criterion")
            pm.Bernoulli("y", logit_p=eta, observed=obs.cat, dims="obs")
            return model
        n_crit, m_max = d.n_crit, d.m_max
        if np.all(d.n_steps == m_max):
            tau = pm.ZeroSumNormal("tau", sigma=SIGMA_TAU, dims=("criterion", "step"))
        else:
            a = _threshold_map(d.n_steps, m_max)
            z = pm.Normal("tau_z", 0.0, SIGMA_TAU, shape=a.shape[1])
            tau = pm.Deterministic("tau", pt.dot(a, z).reshape((n_crit, m_max)), dims=("criterion", "step"))
        ks = np.arange(m_max + 1, dtype=float)
        cum = pt.concatenate([pt.zeros((n_crit, 1)), pt.cumsum(tau, axis=1)], axis=1)  # Σ_{h≤k} τ_jh
        has_cat = ks[None, :] <= d.n_steps[:, None]  # (J, M+1)
        logits = pt.where(has_cat[obs.crit], eta[:, None] * ks[None, :] - cum[obs.crit], -ABSENT_CATEGORY)
        pm.Categorical("y", logit_p=logits, observed=obs.cat, dims="obs")
        base = pt.where(has_cat, -b[:, None] * ks[None, :] - cum, -ABSENT_CATEGORY)
        pm.Deterministic("baseline_p", pt.special.softmax(base, axis=1), dims=("criterion", "category"))
    return model


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BayesDiagnostics:
    """Sampler health against ``docs/statistics.md#mfrm-nuts`` (R-hat ≤ 1.01, ESS bulk/tail ≥ 400, 0 divergences)."""

    sampler: str
    chains: int
    draws: int
    tune: int
    n_divergences: int
    max_r_hat: float
    min_ess_bulk: float
    min_ess_tail: float
    worst_r_hat: str
    worst_ess: str

    @property
    def ok(self) -> bool:
        """True when every threshold holds (NaN R-hat, e.g. one chain, counts as a failure)."""
        return (
            self.n_divergences == 0
            and self.max_r_hat <= R_HAT_MAX
            and min(self.min_ess_bulk, self.min_ess_tail) >= ESS_MIN
        )

    def __str__(self) -> str:
        return (
            f"NUTS ({self.sampler}, {self.chains} chains x {self.tune} tune + {self.draws} draws): "
            f"divergences {self.n_divergences}, max R-hat {self.max_r_hat:.4f} ({self.worst_r_hat}), "
            f"min ESS bulk {self.min_ess_bulk:.0f} / tail {self.min_ess_tail:.0f} ({self.worst_ess}); "
            f"thresholds R-hat <= {R_HAT_MAX}, ESS >= {ESS_MIN:.0f}, 0 divergences: "
            + ("met" if self.ok else "NOT met")
        )


@dataclass
class BayesMFRMResult:
    """Posterior of the MFRM: the tables of :class:`~tutormetrics.psychometrics.mfrm.mml.MFRMResult` plus diagnostics.

    ``summary_ds`` is ``az.summary(idata, hdi_prob=0.94, fmt="xarray")`` over the parameters and the
    baseline probabilities; point estimates are posterior means, ``se`` the posterior SD and
    intervals 94% HDIs. ``idata`` holds the draws, sample stats and pointwise log-likelihood.
    """

    model: str
    sampler: str
    id_col: str
    exchange_ids: pl.Series
    criteria: list[str]
    raters: list[str]
    covariate_names: list[str]
    group_levels: list[str]
    score_levels: dict[str, list[float]]
    n_steps: np.ndarray
    n_obs: int
    idata: Any = field(repr=False)
    summary_ds: Any = field(repr=False)
    diagnostic_summary: BayesDiagnostics
    dropped_criteria: list[str] = field(default_factory=list)
    reference_point: str = REFERENCE_POINT
    method: str = "nuts"
    topic_names: list[str] = field(default_factory=list)
    covariate_scales: list[tuple[str, float, float]] = field(default_factory=list)
    covariate_raw: np.ndarray | None = None
    topic_matrix: np.ndarray | None = None
    #: per exchange, the representative of its θ-key (docs/design/effects.md#nuts-ties); None = per-exchange summaries
    theta_key: np.ndarray | None = None
    #: coding indices of the criteria in display (first-appearance) order; None = coding order
    display: list[int] | None = None

    def _order(self) -> list[int]:
        return list(self.display) if self.display else list(range(len(self.criteria)))

    def _shown(self) -> list[tuple[int, str]]:
        """(coding index, name) of the criteria in display order (tables follow the input, docs/design/effects.md#theta-requirements)."""
        return [(j, self.criteria[j]) for j in self._order()]

    def _pooled_theta(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """θ mean, SD (ddof 1) and 94% HDI per θ-key from the pooled draws of its exchanges, copied to each."""
        cached = getattr(self, "_pooled_cache", None)
        if cached is not None:
            return cached
        from tutormetrics.psychometrics.mfrm.effects import hdi

        draws = np.asarray(self.idata.posterior["theta"].values, dtype=float)
        draws = draws.reshape(-1, draws.shape[-1])  # (S, I)
        key = self.theta_key if self.theta_key is not None else np.arange(draws.shape[1])
        out = np.empty((4, draws.shape[1]))
        for k in np.unique(key):
            members = np.flatnonzero(key == k)
            pooled = draws[:, members].ravel(order="F")
            lo, hi = hdi(pooled)
            out[:, members] = np.array([pooled.mean(), pooled.std(ddof=1), lo, hi])[:, None]
        self._pooled_cache = (out[0], out[1], out[2], out[3])
        return self._pooled_cache

    # ------------------------------------------------------------------ accessors
    def _metric(self, var: str, metric: str) -> np.ndarray:
        return np.asarray(self.summary_ds[var].sel(metric=metric).values, dtype=float)

    def _has(self, var: str) -> bool:
        return var in self.summary_ds.data_vars

    @property
    def theta(self) -> np.ndarray:
        """Posterior mean (EAP) of θ per exchange, pooled over the exchanges of its θ-key (docs/design/effects.md#nuts-ties)."""
        return self._pooled_theta()[0]

    @property
    def theta_sd(self) -> np.ndarray:
        return self._pooled_theta()[1]

    @property
    def b(self) -> np.ndarray:
        return self._metric("b", "mean")

    @property
    def s(self) -> np.ndarray:
        return self._metric("s", "mean") if self._has("s") else np.zeros(len(self.raters))

    @property
    def gamma(self) -> np.ndarray:
        return self._metric("gamma", "mean") if self._has("gamma") else np.zeros((len(self.criteria), 0))

    @property
    def beta(self) -> np.ndarray:
        return self._metric("beta", "mean") if self._has("beta") else np.zeros((len(self.criteria), 1))

    @property
    def tau(self) -> np.ndarray:
        return self._metric("tau", "mean") if self._has("tau") else np.zeros((len(self.criteria), 1))

    @property
    def n_items(self) -> int:
        return int(self.exchange_ids.len())

    @property
    def reliability(self) -> float:
        """EAP reliability ``var(EAP) / (var(EAP) + mean(posterior var))``."""
        v = float(np.var(self.theta))
        return v / (v + float(np.mean(self.theta_sd**2)))

    @property
    def converged(self) -> bool:
        """The docs/statistics.md#mfrm-nuts diagnostic thresholds hold (see :attr:`diagnostic_summary`)."""
        return self.diagnostic_summary.ok

    @property
    def n_divergences(self) -> int:
        return self.diagnostic_summary.n_divergences

    # ------------------------------------------------------------------ tables
    def theta_table(self) -> pl.DataFrame:
        """One row per exchange: ``exchange_id, theta, theta_sd, theta_low, theta_high`` (94% HDI)."""
        return pl.DataFrame(
            {
                self.id_col: self.exchange_ids,
                "theta": self.theta,
                "theta_sd": self.theta_sd,
                "theta_low": self._pooled_theta()[2],
                "theta_high": self._pooled_theta()[3],
            }
        )

    def facets_table(self) -> pl.DataFrame:  # noqa: C901 - one flat block per facet, in the order of the table's rows
        """Tidy facets as in ``MFRMResult.facets_table``: ``facet, level, estimate, se, lower, upper, reference``.

        ``estimate`` is the posterior mean, ``se`` the posterior SD, ``lower``/``upper`` the 94% HDI;
        baseline probabilities are summarised per draw at ``reference_point``.
        """
        cols = ("facet", "level", "estimate", "se", "lower", "upper", "reference", "plugin")
        rows: dict[str, list[Any]] = {k: [] for k in cols}

        def add(facet: str, level: str, var: str, index: tuple[int, ...], ref: str = "", plugin: float | None = None) -> None:
            """Append one facet row: posterior mean, SD and 94% HDI of ``var[index]``.

            Args:
                facet: The facet column value.
                level: The level column value.
                var: The posterior variable.
                index: Index of the element within ``var``.
                ref: The reference column value.
                plugin: The plug-in estimate; ``None``: none.
            """
            vals = [float(self._metric(var, m)[index]) for m in ("mean", "sd", "hdi_3%", "hdi_97%")]
            for key, val in zip(cols, [facet, level, *vals, ref, plugin], strict=True):
                rows[key].append(val)

        for j, crit in self._shown():
            add("criterion", crit, "b", (j,))
        if self._has("s"):
            for r, name in enumerate(self.raters):
                add("rater", name, "s", (r,))
        for c, cname in enumerate(self.covariate_names):
            ref = covariate_reference(cname, self.covariate_scales[c]) if self.covariate_scales else ""
            for j, crit in self._shown():
                add(f"covariate:{cname}", crit, "gamma", (j, c), ref)
        if self._has("beta_topic"):
            for k, tname in enumerate(self.topic_names):
                for j, crit in self._shown():
                    add(f"topic:{tname}", crit, "beta_topic", (j, k))
        if self._has("beta"):
            for k, lev in enumerate(self.group_levels):
                for j, crit in self._shown():
                    add(f"group:{lev}", crit, "beta", (j, k))
        if self._has("tau"):
            for j, crit in self._shown():
                m = int(self.n_steps[j])
                if m > 1:
                    for h in range(1, m + 1):
                        add("threshold", f"{crit}:{h}", "tau", (j, h - 1))
        for j, crit in self._shown():
            m = int(self.n_steps[j])
            plug = self._baseline_plugin(j, m)
            if self._metric("baseline_p", "mean").ndim == 1:
                add("baseline_probability", crit, "baseline_p", (j,), self.reference_point, float(plug[-1]))
            elif m <= 1:  # a one-step criterion in a partial-credit fit is a Rasch item: P(y=1), as in MML
                add("baseline_probability", crit, "baseline_p", (j, 1), self.reference_point, float(plug[-1]))
            else:
                for k in range(m + 1):
                    add("baseline_probability", f"{crit}:P(y={k})", "baseline_p", (j, k), self.reference_point, float(plug[k]))
        schema = {c: pl.Float64 for c in cols}
        schema.update({"facet": pl.String, "level": pl.String, "reference": pl.String})
        return pl.DataFrame(rows, schema=schema)

    def _baseline_plugin(self, j: int, m: int) -> np.ndarray:
        """p at the posterior mean of b_j (and τ_j): ``[P(y=0), P(y=1)]`` (binary) or P(y=k), k = 0..m."""
        from tutormetrics.psychometrics.mfrm.effects import baseline_rows

        b = float(self._metric("b", "mean")[j])
        tau = np.asarray(self._metric("tau", "mean"), dtype=float)[j] if (m > 1 and self._has("tau")) else None
        rows = baseline_rows("c", m if tau is not None else 1, b, tau, None, None)
        plugin = np.array([r.plugin for r in rows])
        return plugin if plugin.size > 1 else np.array([1 - plugin[0], plugin[0]])

    def effects_table(self) -> pl.DataFrame:
        """Δp per covariate, topic and group level per criterion over every posterior draw (``docs/design/effects.md#effects``);
        ``p_ref`` and ``delta_p`` are means over draws. ``not_converged`` on a row whose b or coefficient has
        R-hat > 1.01 or ESS < 400, or when the run had divergences (docs/design/effects.md#reason-codes)."""
        from tutormetrics.psychometrics.mfrm.effects import (
            EffectTerm,
            covariate_contrast,
            effects_frame,
            outcome_labels,
            sparse_reason,
        )  # fmt: skip

        post = self.idata.posterior

        def flat(var: str) -> np.ndarray:
            a = np.asarray(post[var].values, dtype=float)
            return a.reshape(-1, *a.shape[2:])

        order = np.asarray(self._order(), dtype=np.int64)

        def flat_shown(var: str) -> np.ndarray:  # criteria (axis 1) in display order
            return flat(var)[:, order]

        b_d = flat_shown("b")
        terms: list[EffectTerm] = []
        if self.covariate_names:
            g_d = flat_shown("gamma")
            for c, name in enumerate(self.covariate_names):
                raw = None if self.covariate_raw is None else self.covariate_raw[:, c]
                terms.append(EffectTerm("covariate", name, covariate_contrast(name, self.covariate_scales[c]),
                                        g_d[:, :, c].mean(0), g_d[:, :, c], sparse_reason(raw)))  # fmt: skip
        if self._has("beta_topic"):
            t_d = flat_shown("beta_topic")
            for k, name in enumerate(self.topic_names):
                raw = None if self.topic_matrix is None else self.topic_matrix[:, k]
                terms.append(EffectTerm("topic", name, f"{name} 0 -> 1", t_d[:, :, k].mean(0), t_d[:, :, k], sparse_reason(raw)))
        if self._has("beta"):
            gb = flat_shown("beta")
            for g, name in enumerate(self.group_levels):
                terms.append(EffectTerm("group", name, f"{name} vs mean of groups", gb[:, :, g].mean(0), gb[:, :, g]))
        tau_d = flat_shown("tau") if self._has("tau") else None
        sources = [("gamma", c) for c in range(len(self.covariate_names))]
        sources += [("beta_topic", k) for k in range(len(self.topic_names))] if self._has("beta_topic") else []
        sources += [("beta", g) for g in range(len(self.group_levels))] if self._has("beta") else []

        def healthy(var: str, index: tuple[int, ...]) -> bool:
            r_hat = float(self._metric(var, "r_hat")[index])
            ess = min(float(self._metric(var, "ess_bulk")[index]), float(self._metric(var, "ess_tail")[index]))
            return r_hat <= R_HAT_MAX and ess >= ESS_MIN

        def row_reason(t: int, j: int) -> list[str]:
            var, k = sources[t]
            jj = int(order[j])
            ok = self.n_divergences == 0 and healthy("b", (jj,)) and healthy(var, (jj, k))
            return [] if ok else ["not_converged"]

        return effects_frame(
            terms,
            criteria=[self.criteria[j] for j in order],
            outcomes=outcome_labels([self.criteria[j] for j in order], self.n_steps[order], self.score_levels),
            n_steps=self.n_steps[order],
            b_point=b_d.mean(0),
            tau_point=tau_d.mean(0) if tau_d is not None else np.zeros((len(order), 1)),
            b_draws=b_d,
            tau_draws=tau_d,
            reference=self.reference_point,
            method="nuts",
            point_from_draws=True,
            row_reason=row_reason,
        )

    def diagnostics(self) -> pl.DataFrame:
        """One row per scalar parameter: ``parameter, r_hat, ess_bulk, ess_tail`` (rank-normalised, ArviZ)."""
        return _diagnostics_frame(self.summary_ds)

    def summary(self) -> str:
        """Short human-readable report (data, diagnostics, facet table)."""
        return summary_report(
            self,
            header=f"MFRM ({self.model}, Bayesian NUTS; posterior mean, SD and {HDI_PROB:.0%} HDI)",
            fit_line=str(self.diagnostic_summary),
            spread="sd",
        )


def _flat_labels(da: xr.DataArray) -> list[str]:
    """``name[coord, ...]`` labels of a summary variable's scalar entries (C order)."""
    dims = [d for d in da.dims if d != "metric"]
    if not dims:
        return [str(da.name)]
    grids = np.meshgrid(*[np.asarray(da[d].values).astype(str) for d in dims], indexing="ij")
    return [f"{da.name}[{', '.join(parts)}]" for parts in zip(*(g.ravel() for g in grids), strict=True)]


def _diagnostics_frame(summary_ds: xr.Dataset) -> pl.DataFrame:
    names, rhat, bulk, tail = [], [], [], []
    for var in _PARAMS:
        if var not in summary_ds.data_vars:
            continue
        da = summary_ds[var].transpose("metric", ...)
        names += _flat_labels(da)
        for out, metric in ((rhat, "r_hat"), (bulk, "ess_bulk"), (tail, "ess_tail")):
            out.extend(np.asarray(da.sel(metric=metric).values, dtype=float).ravel().tolist())
    return pl.DataFrame(
        {"parameter": names, "r_hat": rhat, "ess_bulk": bulk, "ess_tail": tail},
        schema={"parameter": pl.String, "r_hat": pl.Float64, "ess_bulk": pl.Float64, "ess_tail": pl.Float64},
    )


def _diagnostic_summary(idata: Any, summary_ds: xr.Dataset, *, sampler: str, chains: int, draws: int, tune: int) -> BayesDiagnostics:
    diag = _diagnostics_frame(summary_ds)
    div = idata.sample_stats.get("diverging")
    n_div = int(np.asarray(div.values).sum()) if div is not None else 0
    rhat = diag["r_hat"].to_numpy()
    ess = np.minimum(diag["ess_bulk"].to_numpy(), diag["ess_tail"].to_numpy())
    all_nan = not np.isfinite(rhat).any()
    i_r = 0 if all_nan else int(np.nanargmax(rhat))
    i_e = int(np.nanargmin(ess)) if np.isfinite(ess).any() else 0
    return BayesDiagnostics(
        sampler=sampler,
        chains=chains,
        draws=draws,
        tune=tune,
        n_divergences=n_div,
        max_r_hat=float("nan") if all_nan else float(rhat[i_r]),
        min_ess_bulk=float(np.nanmin(diag["ess_bulk"].to_numpy())),
        min_ess_tail=float(np.nanmin(diag["ess_tail"].to_numpy())),
        worst_r_hat=str(diag["parameter"][i_r]),
        worst_ess=str(diag["parameter"][i_e]),
    )


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------


def _check_options(*, model: str, draws: int, tune: int, chains: int, target_accept: float, sampler: str) -> None:
    if model not in ("auto", "binary", "partial_credit"):
        raise ConfigError(f"unknown model {model!r}", hint="use auto, binary or partial_credit")
    if sampler not in ("nutpie", "pymc"):
        raise ConfigError(f"unknown sampler {sampler!r}", hint="use nutpie or pymc")
    if draws < 1 or tune < 0 or chains < 1:
        raise ConfigError("draws and chains must be >= 1 and tune >= 0")
    if not 0.0 < target_accept < 1.0:
        raise ConfigError(f"target_accept must be in (0, 1), got {target_accept}")
    if sampler == "nutpie" and importlib.util.find_spec("nutpie") is None:
        raise ConfigError("sampler 'nutpie' is not installed", hint=f"use sampler='pymc' or {_EXTRA_HINT}")


def fit_mfrm_bayes(
    ratings: pl.DataFrame,
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
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    target_accept: float = 0.9,
    sampler: Sampler = "nutpie",
    seed: int = 0,
    cores: int | None = None,
) -> BayesMFRMResult:
    """Sample the MFRM posterior with NUTS; ``logit P(y=1) = θ_i − b_j − s_r + γ_j·v_i + Σ_k β_jk·x_ik``.

    Inputs and the automatic binary/partial-credit choice are those of
    :func:`~tutormetrics.psychometrics.mfrm.mml.fit_mfrm` (same preparation code). Priors and the
    partial-credit likelihood are in the module docstring.

    Args:
        ratings: long ratings, as in :func:`~tutormetrics.psychometrics.mfrm.mml.fit_mfrm`.
        id_col: the exchange id column.
        rater_col: the rater column.
        criterion_col: the criterion column.
        score_col: the score column.
        covariates: exchange-level covariate table, as in ``fit_mfrm``.
        covariate_cols: its covariate columns (default: every numeric column but the id).
        standardize_covariates: deprecated alias of ``covariate_scale`` (True: ``"z"``, False: ``"raw"``).
        covariate_scale: ``"auto"``, ``"raw"`` or ``"z"``, as in ``fit_mfrm``.
        groups: exchange-level group table, as in ``fit_mfrm``.
        group_col: its group column.
        topics: exchange-level 0/1 topic table, as in ``fit_mfrm``.
        topic_cols: its topic columns (default: every 0/1 column).
        model: ``"auto"``, ``"binary"`` or ``"partial_credit"``.
        draws: NUTS draws kept per chain.
        tune: warm-up iterations per chain.
        chains: number of chains.
        target_accept: NUTS target acceptance (step-size adaptation).
        sampler: ``"nutpie"`` (Rust NUTS on a numba-compiled log density) or ``"pymc"``.
        seed: random seed (reproducible for a given sampler and core count).
        cores: parallel chains (default: the sampler's choice).

    Returns:
        :class:`BayesMFRMResult` with ``idata`` (posterior, sample_stats, log_likelihood).
    """
    _check_options(model=model, draws=draws, tune=tune, chains=chains, target_accept=target_accept, sampler=sampler)
    pm, pt, az = _bayes_modules()
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
    if prep.design.n_items < 2:
        raise ConfigError("the Bayesian MFRM needs at least two exchanges (theta sums to zero)")
    obs = _observations(prep.design)
    pm_model = _build_model(pm, pt, prep, obs)
    kwargs: dict[str, Any] = {
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "target_accept": target_accept,
        "random_seed": seed,
        "progressbar": False,
        "nuts_sampler": sampler,
        "compute_convergence_checks": False,
    }
    if sampler == "nutpie":
        kwargs["nuts_sampler_kwargs"] = {"cores": cores} if cores else {}
    elif cores:
        kwargs["cores"] = cores
    with pm_model:
        idata = pm.sample(**kwargs)
        pm.compute_log_likelihood(idata, model=pm_model, progressbar=False)
    var_names = [v for v in (*_PARAMS, "baseline_p") if v in idata.posterior.data_vars]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # R-hat of one chain
        summary_ds = az.summary(idata, var_names=var_names, hdi_prob=HDI_PROB, fmt="xarray", round_to="none")
    return BayesMFRMResult(
        model=prep.model,
        sampler=sampler,
        id_col=id_col,
        exchange_ids=prep.ids.alias(id_col),
        criteria=prep.criteria,
        raters=prep.raters,
        covariate_names=prep.cov_names,
        group_levels=prep.group_levels,
        score_levels={c: prep.score_levels[c] for c in prep.criteria},
        n_steps=prep.design.n_steps,
        n_obs=prep.design.n_obs,
        idata=idata,
        summary_ds=summary_ds,
        diagnostic_summary=_diagnostic_summary(idata, summary_ds, sampler=sampler, chains=chains, draws=draws, tune=tune),
        dropped_criteria=prep.dropped,
        reference_point=reference_text(prep.cov_names, prep.cov_scales, prep.topic_names, prep.group_levels),
        topic_names=prep.topic_names,
        covariate_scales=prep.cov_scales,
        covariate_raw=prep.cov_raw,
        topic_matrix=prep.item_topic,
        theta_key=prep.design.item_theta_rep,
        display=prep.display,
    )


# --------------------------------------------------------------------------------------------
# Model comparison (PSIS-LOO)
# --------------------------------------------------------------------------------------------


def loo_table(fits: Mapping[str, BayesMFRMResult], terms: Mapping[str, str] | None = None) -> pl.DataFrame:
    """``az.compare`` of PSIS-LOO (one rating per point) as polars, best model first (``docs/design/effects.md#nested-models``).

    Columns: ``model, terms, rank, elpd_loo, se, p_loo, elpd_diff, dse, weight, n_points,
    n_high_pareto_k, share_k_ok, pareto_k_threshold, ref_model, delta_elpd_ref, delta_elpd_ref_se,
    warning``. ``n_high_pareto_k`` counts ratings with Pareto k above ``min(1 − 1/log10 S, 0.7)`` and
    ``share_k_ok`` is the share at or below it; ``ref_model`` is the first model of ``fits``,
    ``delta_elpd_ref = elpd_loo − elpd_loo(ref)`` (positive = better) with SE ``√(N·var(d_n))`` over the
    pointwise differences (ddof 0, as ``az.compare``); ``warning`` is ArviZ's flag or any high k.
    """
    if len(fits) < 2:
        raise ConfigError("model comparison needs at least two fitted models")
    _, _, az = _bayes_modules()
    loos: dict[str, Any] = {}
    n_high: dict[str, int] = {}
    thresholds: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # high-k warnings are counted below
        warnings.simplefilter("ignore", DeprecationWarning)  # ArviZ 0.23 + pandas 3: sort_values(inplace=...)
        for name, fit in fits.items():
            loo = az.loo(fit.idata, pointwise=True)
            post = fit.idata.posterior
            thr = pareto_k_threshold(int(post.sizes["chain"] * post.sizes["draw"]))
            loos[name] = loo
            thresholds[name] = thr
            n_high[name] = int((np.asarray(loo.pareto_k.values) > thr).sum())
        cmp = az.compare(loos, ic="loo")
    names = [str(n) for n in cmp.index]
    ref = next(iter(fits))
    pointwise = {n: np.asarray(loos[n].loo_i.values, dtype=float).ravel() for n in loos}
    n_points = {n: int(v.size) for n, v in pointwise.items()}

    def delta(n: str) -> tuple[float, float]:
        d = pointwise[n] - pointwise[ref]
        return float(d.sum()), float(np.sqrt(d.size * np.var(d)))

    deltas = {n: delta(n) for n in names}
    return pl.DataFrame(
        {
            "model": names,
            "terms": [(terms or {}).get(n, "") for n in names],
            "rank": cmp["rank"].to_numpy().astype(np.int64),
            "elpd_loo": cmp["elpd_loo"].to_numpy(dtype=float),
            "se": cmp["se"].to_numpy(dtype=float),
            "p_loo": cmp["p_loo"].to_numpy(dtype=float),
            "elpd_diff": cmp["elpd_diff"].to_numpy(dtype=float),
            "dse": cmp["dse"].to_numpy(dtype=float),
            "weight": cmp["weight"].to_numpy(dtype=float),
            "n_points": [n_points[n] for n in names],
            "n_high_pareto_k": [n_high[n] for n in names],
            "share_k_ok": [1.0 - n_high[n] / n_points[n] for n in names],
            "pareto_k_threshold": [thresholds[n] for n in names],
            "ref_model": [ref] * len(names),
            "delta_elpd_ref": [deltas[n][0] for n in names],
            "delta_elpd_ref_se": [deltas[n][1] for n in names],
            "warning": [bool(w) or n_high[n] > 0 for w, n in zip(cmp["warning"].to_numpy(), names, strict=True)],
        }
    )


def model_specs(
    specs: Sequence[tuple[str, Sequence[str]]] | None, *, covariate_names: Sequence[str], has_topics: bool, has_groups: bool
) -> dict[str, tuple[list[str], bool, bool]]:
    """Models to compare: name → (covariates, topics?, groups?) (``docs/design/effects.md#nested-models``).

    Without ``specs``: ``facets`` and every non-empty combination of the term sets given, named
    ``facets+covariate``, ``facets+topics``, ``facets+groups``, ``facets+covariate+topics``, ...

    Args:
        specs: User models ``[(name, terms)]``; ``None``: the default combinations.
        covariate_names: The covariates available as terms.
        has_topics: A topic table is given.
        has_groups: A group table is given.

    Example:
        >>> model_specs([("M0", []), ("M1", ["suff"])], covariate_names=["suff"], has_topics=False, has_groups=False)
        {'M0': ([], False, False), 'M1': (['suff'], False, False)}
    """
    if specs:
        out: dict[str, tuple[list[str], bool, bool]] = {}
        for name, terms in specs:
            covs = [t for t in terms if t not in ("topics", "groups")]
            unknown = [t for t in covs if t not in covariate_names]
            if unknown:
                raise ConfigError(f"--spec {name}: unknown term(s) {unknown}", hint=f"use {list(covariate_names)}, topics or groups")
            if "topics" in terms and not has_topics:
                raise ConfigError(f"--spec {name}: term 'topics' needs --topics")
            if "groups" in terms and not has_groups:
                raise ConfigError(f"--spec {name}: term 'groups' needs --groups")
            out[name] = (covs, "topics" in terms, "groups" in terms)
        if len(out) < 2:
            raise ConfigError("model comparison needs at least two models")
        return out
    sets = [("covariate", bool(covariate_names)), ("topics", has_topics), ("groups", has_groups)]
    given = [n for n, on in sets if on]
    out = {"facets": ([], False, False)}
    from itertools import combinations

    for size in range(1, len(given) + 1):
        for combo in combinations(given, size):
            out["facets+" + "+".join(combo)] = (list(covariate_names) if "covariate" in combo else [], "topics" in combo, "groups" in combo)
    if len(out) < 2:
        raise ConfigError("model comparison needs covariates, topics and/or groups", hint="pass --covariates, --topics or --groups")
    return out


def compare_models(
    ratings: pl.DataFrame,
    *,
    covariates: pl.DataFrame | None = None,
    covariate_cols: str | Sequence[str] | None = None,
    groups: pl.DataFrame | None = None,
    group_col: str | None = None,
    topics: pl.DataFrame | None = None,
    topic_cols: str | Sequence[str] | None = None,
    specs: Sequence[tuple[str, Sequence[str]]] | None = None,
    **fit_options: Any,
) -> pl.DataFrame:
    """Fit the nested models and compare them by PSIS-LOO (:func:`loo_table`).

    Models: the user-named ``specs`` (``[(name, terms)]``, terms = covariate names, ``topics``,
    ``groups``; the first is the reference), or by default ``facets`` plus every combination of the
    term sets given (:func:`model_specs`). ``fit_options`` go to :func:`fit_mfrm_bayes` (column
    names, covariate scale, model, draws, tune, chains, sampler, seed, ...). All models see the same
    ratings, so the pointwise elpd differences are paired.

    Args:
        ratings: Long ratings.
        covariates: Covariate table, one row per exchange.
        covariate_cols: Its covariate columns; ``None``: every numeric non-id column.
        groups: Group table, one row per exchange.
        group_col: Its group column.
        topics: Topic table, one row per exchange.
        topic_cols: Its topic columns; ``None``: every 0/1 non-id column.
        specs: Models ``[(name, terms)]``, the first the reference; ``None``: the default set.
        **fit_options: Passed to :func:`fit_mfrm_bayes` (column names, scale, model, draws, seed, ...).
    """
    if covariates is None:
        cov_names: list[str] = []
    elif covariate_cols is None:
        id_col = fit_options.get("id_col", "exchange_id")
        cov_names = [c for c, dt in covariates.schema.items() if c != id_col and dt.is_numeric()]
    else:
        cov_names = [covariate_cols] if isinstance(covariate_cols, str) else list(covariate_cols)
    plan = model_specs(specs, covariate_names=cov_names, has_topics=topics is not None, has_groups=groups is not None)
    fits = {
        name: fit_mfrm_bayes(
            ratings,
            covariates=covariates if covs else None,
            covariate_cols=covs or None,
            groups=groups if use_groups else None,
            group_col=group_col if use_groups else None,
            topics=topics if use_topics else None,
            topic_cols=topic_cols if use_topics else None,
            **fit_options,
        )
        for name, (covs, use_topics, use_groups) in plan.items()
    }
    terms = {name: "+".join([*covs, *(["topics"] if t else []), *(["groups"] if g else [])]) for name, (covs, t, g) in plan.items()}
    return loo_table(fits, terms)
