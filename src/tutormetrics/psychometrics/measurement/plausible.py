"""Plausible values: draws of θ from its posterior with the facets at their estimates (``docs/measurement.md#plausible-values``).

**The grid draw.** θ_i's posterior on 1,600 cells of width h = 0.01 on [−8, 8] (midpoints g_k):
p_ik ∝ φ((g_k − m_i)/s) L_i(g_k), F_ik = Σ_{l≤k} p_il; for a uniform u, k* = the first k with F_ik > u (the
last cell if none) and PV = −8 + k*·h + h·(u − F_{i,k*−1})/p_ik*. Uniforms ``U = default_rng(seed).random((M, I))``
over the exchanges in THETA order, then ``E = rng.standard_normal((M, 3))`` for the conditioning draws.

**Unconditioned** (``theta --pv``): m_i = 0, s = 1. **Conditioned on a metric** (``validate --theta-pv``):
θ_i ~ N(α + βz_i, σ²) by marginal ML with the facets fixed (21 nodes), z_i the metric's normal scores; the
imputations are proper: ψ_m = ψ̂ + L e_m, ψ = (α, β, log σ), L the Cholesky factor of V = (Σ_i s_i s_iᵀ)⁻¹.

Example:
    >>> u, e = random_numbers(0, 5, 40)
    >>> [round(float(v), 10) for v in u[:, 0]]
    [0.6369616873, 0.5715298307, 0.7577288453, 0.3443099788, 0.3807705083]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import optimize, sparse
from scipy.special import expit, ndtri

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.observations import Observations
from tutormetrics.psychometrics.measurement.posterior import N_NODES, NodeLikelihood
from tutormetrics.psychometrics.mfrm.design import PreparedRatings, quadrature

__all__ = [
    "GRID",
    "Conditioning",
    "GridLikelihood",
    "condition_on",
    "conditioned_draws",
    "grid_draws",
    "normal_scores",
    "plausible_values",
    "plausible_values_from_draws",
    "pv_line",
    "random_numbers",
]

GRID_LOW, GRID_STEP, GRID_CELLS = -8.0, 0.01, 1600
#: The cell midpoints g_k = −8 + (k + ½)h.
GRID = GRID_LOW + (np.arange(GRID_CELLS) + 0.5) * GRID_STEP
SIGMA_BOUNDS = (0.05, 5.0)
#: Rows of the likelihood grid computed at once (bounds the memory at ~ 400 MB).
_CHUNK = 32_768


def random_numbers(seed: int, draws: int, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """``U = default_rng(seed).random((M, I))`` and then ``E = rng.standard_normal((M, 3))`` from the same generator.

    Args:
        seed: Seed of the generator (``--seed``).
        draws: M, the number of PVs per exchange (≥ 2).
        n_items: I, the number of exchanges.
    """
    if draws < 2:
        raise ConfigError(f"--pv-draws {draws}: needs at least 2 draws", hint="e.g. --pv-draws 20")
    rng = np.random.default_rng(seed)
    u = rng.random((draws, n_items))
    return u, rng.standard_normal((draws, 3))


class GridLikelihood:
    """log L_i(g_k) on the 1,600-cell grid, once per unique rating pattern of the design."""

    def __init__(self, est: Estimates, prep: PreparedRatings) -> None:
        lik = NodeLikelihood(est, prep, patterns=True)
        n_pat = lik.counts.shape[0]
        self.pattern_loglik = np.vstack([lik.loglik(GRID, np.arange(a, min(a + _CHUNK, n_pat))) for a in range(0, n_pat, _CHUNK)])
        self.item_pattern = prep.design.item_pattern

    def rows(self, items: np.ndarray) -> np.ndarray:
        return self.pattern_loglik[self.item_pattern[items]]

    def draw(self, items: np.ndarray, mean: np.ndarray, sd: np.ndarray, u: np.ndarray) -> np.ndarray:
        """(M, n) PVs of the exchanges ``items``: draw m with prior N(mean[m], sd[m]²) and uniforms u[m]
        (``mean`` (M, n) or broadcastable, ``sd`` (M,)); each block of rows is gathered once for all M draws.

        Args:
            items: The exchanges (indices), n of them.
            mean: Prior mean per draw and exchange, (M, n) or broadcastable.
            sd: Prior SD per draw, (M,).
            u: The uniforms, (M, n).
        """
        draws = u.shape[0]
        mean = np.broadcast_to(np.asarray(mean, dtype=float), (draws, items.size))
        inv_var = 1.0 / np.asarray(sd, dtype=float) ** 2
        out = np.empty((draws, items.size))
        work = _Buffers(min(_ROWS, items.size))
        for a in range(0, items.size, _ROWS):
            block = self.rows(items[a : a + _ROWS])
            width, lmax = block.shape[0], block.max(axis=1)
            for m in range(draws):
                cols = slice(a, a + width)
                out[m, cols] = _grid_block(block, mean[m, cols], np.full(width, inv_var[m]), u[m, cols], lmax, work)
        return out


#: Rows drawn at once: the (rows × 1600) arrays of one block stay in the CPU cache (256: 1.5× faster than all at once).
_ROWS = 256


def grid_draws(loglik: np.ndarray, mean: np.ndarray, sd: float | np.ndarray, u: np.ndarray) -> np.ndarray:
    """One PV per row by the grid rule of the module (``loglik``: (n, 1600); ``mean``, ``u``: (n,)).

    Args:
        loglik: Log-likelihood on the grid, (n, 1600).
        mean: Prior mean per row, (n,).
        sd: Prior SD, a scalar or (n,).
        u: One uniform per row, (n,).

    Example:
        >>> pv = grid_draws(np.zeros((1, 1600)), np.array([0.0]), 1.0, np.array([0.975]))
        >>> round(float(pv[0]), 3)  # the 97.5% point of N(0, 1) on the grid
        1.96
    """
    mean = np.asarray(mean, dtype=float)
    inv_var = np.broadcast_to(1.0 / np.asarray(sd, dtype=float) ** 2, mean.shape)
    return np.concatenate([_grid_block(loglik[a : a + _ROWS], mean[a : a + _ROWS], inv_var[a : a + _ROWS], u[a : a + _ROWS])
                           for a in range(0, mean.size, _ROWS)])  # fmt: skip


class _Buffers:
    """Work arrays of one block, reused by every draw: a fresh (rows × 1600) array per step costs page faults."""

    def __init__(self, rows: int) -> None:
        self.logp = np.empty((rows, GRID_CELLS))
        self.tmp = np.empty((rows, GRID_CELLS))


#: The rows g, 1, g² of the prior's log density as a product.
_BASIS = np.vstack([GRID, np.ones(GRID_CELLS), GRID**2])
#: Cells per segment of the search: the segment of u is found on the segment sums, the cell within it.
_SEGMENT = 16


def _grid_block(
    loglik: np.ndarray, mean: np.ndarray, inv_var: np.ndarray, u: np.ndarray, lmax: np.ndarray | None = None,
    work: _Buffers | None = None,
) -> np.ndarray:  # fmt: skip
    """The grid rule on a block of rows.

    log p = L − ½((g − m)/s)² is shifted by its bound max L + 0 (the prior's log density peaks at 0), so no row
    maximum is needed; a row whose bound is too far above its maximum (sums below 1e-250, or none) is redone with
    the exact maximum. F is summed by segments of 16 cells: the segment where F passes u·Z is found on the 100
    segment sums, then the cell on that segment's 16 cumulative sums (the same k*, F as one cumulative sum, up to
    rounding)."""
    n = loglik.shape[0]
    work = work if work is not None and work.logp.shape[0] >= n else _Buffers(n)
    logp, tmp = work.logp[:n], work.tmp[:n]
    lmax = loglik.max(axis=1) if lmax is None else lmax
    # −½((g − m)/s)² − bound = (m/s²)·g − (bound + m²/(2s²))·1 − (1/(2s²))·g²: one product with the basis (g, 1, g²)
    coef = np.stack([mean * inv_var, -(lmax + 0.5 * inv_var * mean**2), -0.5 * inv_var], axis=1)
    np.einsum("ij,jk->ik", coef, _BASIS, out=tmp)  # not matmul: a threaded BLAS is slower on this small product
    np.add(loglik, tmp, out=logp)
    dens = np.exp(logp, out=logp)
    seg = dens.reshape(n, -1, _SEGMENT).sum(axis=2)
    weak = ~(seg.sum(axis=1) > 1e-250)
    if weak.any():  # renormalise those rows on their exact maximum
        exact = loglik[weak] - 0.5 * inv_var[weak, None] * (GRID[None, :] - mean[weak, None]) ** 2
        dens[weak] = np.exp(exact - exact.max(axis=1, keepdims=True))
        seg[weak] = dens[weak].reshape(int(weak.sum()), -1, _SEGMENT).sum(axis=2)
    seg_cum = np.cumsum(seg, axis=1)
    target = u * seg_cum[:, -1]
    rows = np.arange(n)
    block = np.minimum((seg_cum <= target[:, None]).sum(axis=1), seg.shape[1] - 1)
    base = np.where(block > 0, seg_cum[rows, np.maximum(block - 1, 0)], 0.0)
    cells = block[:, None] * _SEGMENT + np.arange(_SEGMENT)[None, :]
    within = base[:, None] + np.cumsum(dens[rows[:, None], cells], axis=1)
    inner = np.minimum((within <= target[:, None]).sum(axis=1), _SEGMENT - 1)
    k = block * _SEGMENT + inner
    before = np.where(inner > 0, within[rows, np.maximum(inner - 1, 0)], base)
    return GRID_LOW + k * GRID_STEP + GRID_STEP * (target - before) / dens[rows, k]


def plausible_values(est: Estimates, prep: PreparedRatings, draws: int = 20, seed: int = 0) -> pl.DataFrame:
    """Unconditioned PVs (prior N(0, 1), the fitted model): ``exchange_id, pv_1, …, pv_M`` in THETA order.

    Args:
        est: The fitted estimates.
        prep: The prepared ratings.
        draws: PVs per exchange (``--pv-draws``, ≥ 2).
        seed: Seed of the uniforms (``--seed``).

    Example:
        >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
        >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
        >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
        >>> ratings, _ = simulate_mfrm(n_items=30, seed=1)
        >>> prep = prepare_ratings(ratings)
        >>> plausible_values(estimates_from_result(fit_mfrm(ratings), prep), prep, draws=3).columns
        ['exchange_id', 'pv_1', 'pv_2', 'pv_3']
    """
    u, _e = random_numbers(seed, draws, est.n_items)
    grid = GridLikelihood(est, prep)
    return _pv_frame(est, grid.draw(np.arange(est.n_items), np.zeros(1), np.ones(draws), u))


def plausible_values_from_draws(est: Estimates, theta_draws: np.ndarray, draws: int = 20) -> pl.DataFrame:
    """NUTS: the draws at positions ⌊(m + ½)S/M⌋ of the chain-concatenated posterior draws (S, I) of θ.

    Args:
        est: The fitted estimates.
        theta_draws: Posterior draws of θ, (S, I), chains concatenated.
        draws: PVs per exchange (``--pv-draws``, 2..S).
    """
    s = theta_draws.shape[0]
    if draws < 2 or s < draws:
        raise ConfigError(f"--pv-draws {draws}: the posterior has {s} draws of θ", hint="use at most as many PVs as draws")
    pos = np.floor((np.arange(draws) + 0.5) * s / draws).astype(np.int64)
    return _pv_frame(est, theta_draws[pos])


def nuts_theta_draws(result: Any) -> np.ndarray:
    """(S, I) chain-concatenated θ draws of a Bayesian fit."""
    draws = np.asarray(result.idata.posterior["theta"].values, dtype=float)
    return draws.reshape(-1, draws.shape[-1])


def _pv_frame(est: Estimates, pv: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame({est.ids.name: est.ids, **{f"pv_{m + 1}": pv[m] for m in range(pv.shape[0])}})


def pv_line(draws: int, seed: int, path: str) -> str:
    """``pv: 20 draws, seed 0 -> PV.csv (unconditioned; see validate --theta-pv)``.

    Args:
        draws: PVs per exchange.
        seed: Their seed.
        path: The PV file written.
    """
    return f"pv: {draws} draws, seed {seed} -> {path} (unconditioned; see validate --theta-pv)"


# ------------------------------------------------------------------------------------------- conditioning


def normal_scores(ranks: np.ndarray) -> np.ndarray:
    """z_i = Φ⁻¹(r_i/(n + 1)) of average ranks r_i.

    Example:
        >>> normal_scores(np.array([1.0, 2.0, 3.0])).round(6).tolist()
        [-0.67449, 0.0, 0.67449]
    """
    return ndtri(np.asarray(ranks, dtype=float) / (ranks.size + 1))


@dataclass(frozen=True)
class Conditioning:
    """ψ̂ = (α, β, log σ) of θ ~ N(α + βz, σ²), V = (Σ s_i s_iᵀ)⁻¹, and whether the fit converged inside the bounds."""

    alpha: float
    beta: float
    sigma: float
    cov: np.ndarray
    converged: bool

    def draws(self, e: np.ndarray) -> np.ndarray:
        """(M, 3) ψ_m = ψ̂ + L e_m, L the lower Cholesky factor of V."""
        chol = np.linalg.cholesky(self.cov)
        return np.array([self.alpha, self.beta, math.log(self.sigma)])[None, :] + e @ chol.T


class _Ratings:
    """The ratings of some exchanges (local indices 0..n−1) with their offsets, for the conditioning likelihood."""

    def __init__(self, est: Estimates, obs: Observations, items: np.ndarray) -> None:
        local = np.full(est.n_items, -1, dtype=np.int64)
        local[items] = np.arange(items.size)
        keep = local[obs.item] >= 0
        self.item, self.crit, self.cat = local[obs.item[keep]], obs.crit[keep], obs.cat[keep]
        self.offset, self.est, self.n = obs.offset[keep], est, items.size
        self.sum = sparse.csr_matrix((np.ones(self.item.size), (self.item, np.arange(self.item.size))), shape=(self.n, self.item.size))
        self.by_criterion = [(int(j), np.flatnonzero(self.crit == j)) for j in np.unique(self.crit)]
        cum = np.concatenate([np.zeros((est.tau.shape[0], 1)), np.cumsum(est.tau, axis=1)], axis=1)
        self.cum_tau = cum[self.crit, self.cat]  # Σ_{h ≤ x} τ_h of each rating's own category

    def terms(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, Q) Σ log P(x), Σ (x − E), Σ W over each exchange's ratings at its node values ``theta``."""
        eta = theta[self.item] + self.offset[:, None]
        logp, resid, var = np.empty_like(eta), np.empty_like(eta), np.empty_like(eta)
        for j, rows in self.by_criterion:
            m = int(self.est.n_steps[j])
            if m == 1:  # binary: P = expit(η − τ), log P(x) = xη' − log(1 + e^η')
                shifted = eta[rows] - self.est.tau[j, 0]
                p1 = expit(shifted)
                cat = self.cat[rows][:, None]
                logp[rows] = cat * shifted - np.logaddexp(0.0, shifted)
                resid[rows] = cat - p1
                var[rows] = p1 * (1.0 - p1)
                continue
            # logits k·η − Σ_{h≤k} τ_h of the categories as 2-D arrays (a small trailing axis is slow in numpy)
            e = eta[rows]
            cum = np.concatenate([[0.0], np.cumsum(self.est.tau[j, :m])])
            logits = [k * e - cum[k] for k in range(m + 1)]
            top = np.maximum.reduce(logits)
            expd = [np.exp(v - top) for v in logits]
            norm = np.add.reduce(expd)
            mean = np.add.reduce([k * v for k, v in enumerate(expd)]) / norm
            second = np.add.reduce([k * k * v for k, v in enumerate(expd)]) / norm
            cat = self.cat[rows][:, None]
            logp[rows] = cat * e - self.cum_tau[rows][:, None] - top - np.log(norm)
            resid[rows] = cat - mean
            var[rows] = second - mean**2
        return self.sum @ logp, self.sum @ resid, self.sum @ var


def _marginal(
    psi: np.ndarray, data: _Ratings, z: np.ndarray, t: np.ndarray, logw: np.ndarray, hessian: bool = False
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray | None]:
    """Marginal log-likelihood of ψ, its gradient, the per-exchange scores s_i and (optionally) the Hessian."""
    alpha, beta, sigma = psi[0], psi[1], math.exp(psi[2])
    theta = alpha + beta * z[:, None] + sigma * t[None, :]
    ll, u, w = data.terms(theta)
    s = ll + logw[None, :]
    top = s.max(axis=1, keepdims=True)
    pi = np.exp(s - top)
    norm = pi.sum(axis=1, keepdims=True)
    pi /= norm
    total = float(np.sum(np.log(norm[:, 0]) + top[:, 0]))
    # ∂ log L_i(θ_iq)/∂ψ = u_iq·d_iq with d_iq = (1, z_i, σt_q); the scores are their posterior means
    pu = pi * u
    st = sigma * t
    scores = np.stack([pu.sum(axis=1), z * pu.sum(axis=1), pu @ st], axis=1)
    if not hessian:
        return total, scores.sum(0), scores, None
    # Σ_q π_iq [(u² − W) d dᵀ] + Σ_q π_iq u σt at (log σ, log σ), minus s sᵀ; d dᵀ is separable in (1, z_i) × (1, σt_q)
    a = pi * (u * u - w)
    m0, m1, m2 = a.sum(axis=1), a @ st, a @ st**2
    h = np.array([
        [m0.sum(), (z * m0).sum(), m1.sum()],
        [(z * m0).sum(), (z * z * m0).sum(), (z * m1).sum()],
        [m1.sum(), (z * m1).sum(), m2.sum() + float((pu @ st).sum())],
    ]) - scores.T @ scores  # fmt: skip
    return total, scores.sum(0), scores, h


def condition_on(est: Estimates, obs: Observations, items: np.ndarray, z: np.ndarray) -> Conditioning:
    """Marginal ML of θ_i ~ N(α + βz_i, σ²) over the exchanges ``items`` (facets fixed; 21 nodes; σ ∈ [0.05, 5])
    to |gradient| < 1e-6; V from the outer product of the per-exchange scores.

    Damped Newton with the analytic Hessian from the EAPs' regression on z (a handful of likelihood passes);
    L-BFGS-B within the bounds, then Newton again, where that fails (measured: 5–6 passes per metric instead of
    L-BFGS-B's 20–25).

    Args:
        est: The fitted estimates (facets held fixed).
        obs: Their observations.
        items: The exchanges (indices) to condition.
        z: The conditioning variable per exchange in ``items``.
    """
    t, w = quadrature(N_NODES)
    logw = np.log(w)
    data = _Ratings(est, obs, items)
    low, high = math.log(SIGMA_BOUNDS[0]), math.log(SIGMA_BOUNDS[1])
    eap = est.theta[items]
    slope = float(np.cov(eap, z)[0, 1] / np.var(z, ddof=1)) if np.var(z) > 0 else 0.0
    psi, converged, scores = _newton(np.array([float(eap.mean()), slope, 0.0]), data, z, t, logw, (low, high))
    if not converged:

        def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
            total, grad, _s, _h = _marginal(x, data, z, t, logw)
            return -total, -grad

        opt = optimize.minimize(objective, np.zeros(3), jac=True, method="L-BFGS-B", bounds=[(None, None), (None, None), (low, high)],
                                options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-9})  # fmt: skip
        psi, converged, scores = _newton(opt.x, data, z, t, logw, (low, high))
    inside = low + 1e-6 < psi[2] < high - 1e-6
    cov = np.linalg.inv(scores.T @ scores)
    return Conditioning(float(psi[0]), float(psi[1]), math.exp(psi[2]), cov, converged and inside)


def _newton(psi: np.ndarray, data: _Ratings, z: np.ndarray, t: np.ndarray, logw: np.ndarray, bounds: tuple[float, float],
            max_steps: int = 50) -> tuple[np.ndarray, bool, np.ndarray]:  # fmt: skip
    """Newton ascent with step halving, log σ kept within ``bounds``: (ψ, |gradient| < 1e-6 reached, the
    per-exchange scores at ψ)."""
    psi = psi.copy()
    total, grad, scores, h = _marginal(psi, data, z, t, logw, hessian=True)
    for _ in range(max_steps):
        if np.max(np.abs(grad)) < 1e-6:
            return psi, True, scores
        try:
            step = -np.linalg.solve(h, grad)
        except np.linalg.LinAlgError:
            return psi, False, scores
        if float(step @ grad) <= 0:  # not an ascent direction: the Hessian is not negative definite here
            return psi, False, scores
        lam = 1.0
        while lam > 1e-10:
            trial = psi + lam * step
            trial[2] = min(max(trial[2], bounds[0]), bounds[1])
            new_total, new_grad, new_scores, new_h = _marginal(trial, data, z, t, logw, hessian=True)
            if new_total >= total - 1e-10 * abs(total):
                break
            lam /= 2
        else:
            return psi, False, scores
        psi, total, grad, scores, h = trial, new_total, new_grad, new_scores, new_h
    return psi, bool(np.max(np.abs(grad)) < 1e-6), scores


def conditioned_draws(
    grid: GridLikelihood, items: np.ndarray, z: np.ndarray, cond: Conditioning, u: np.ndarray, e: np.ndarray
) -> np.ndarray:
    """(M, n) PVs of the exchanges ``items`` with ψ_m drawn (``e``: (M, 3)) and ``u`` the (M, I) uniforms.

    Args:
        grid: The likelihood grid of every exchange.
        items: The exchanges (indices), n of them.
        z: The conditioning variable per exchange in ``items``.
        cond: The fitted conditioning model (ψ and its covariance).
        u: The (M, I) uniforms.
        e: The (M, 3) standard normals for ψ_m.
    """
    psi = cond.draws(e)
    return grid.draw(items, psi[:, :1] + psi[:, 1:2] * z[None, :], np.exp(psi[:, 2]), u[:, items])
