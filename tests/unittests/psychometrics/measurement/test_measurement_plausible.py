"""Plausible values and ρ pooled by Rubin's rules (docs/measurement.md#plausible-values, #theta-pv): the worked
examples, an independent marginal-likelihood fit, the NUTS draw positions, the reasons, and coverage in a simulation."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from measurement_fixtures import _pcm_draw, fitted
from numpy.polynomial.hermite_e import hermegauss
from scipy import optimize, stats
from scipy.special import expit

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.measurement.estimates import estimates_from_tables
from tutormetrics.psychometrics.measurement.plausible import (
    GRID,
    GridLikelihood,
    condition_on,
    grid_draws,
    normal_scores,
    plausible_values,
    plausible_values_from_draws,
    random_numbers,
)
from tutormetrics.psychometrics.measurement.posterior import check_same_fit
from tutormetrics.validity.plausible_rho import PV_COLUMNS, rubin_pool, theta_pv_line, theta_pv_table


def test_unconditioned_worked_example(bundled):
    u, _e = random_numbers(0, 5, 40)
    np.testing.assert_allclose(u[:, 0], [0.6369616873, 0.5715298307, 0.7577288453, 0.3443099788, 0.3807705083], atol=5e-11)
    pv = plausible_values(bundled.est, bundled.prep, draws=5, seed=0)
    assert pv.columns == ["exchange_id", "pv_1", "pv_2", "pv_3", "pv_4", "pv_5"]
    first = pv.row(0)
    assert first[0] == "cpp01::gpt-4o"
    np.testing.assert_allclose(first[1:], [1.367486, 1.23936, 1.634888, 0.8128708, 0.8830931], atol=5e-7)


def test_grid_posterior_agrees_with_theta(bundled):
    loglik = GridLikelihood(bundled.est, bundled.prep).rows(np.arange(40))
    logp = loglik - 0.5 * GRID**2
    p = np.exp(logp - logp.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    mean = p @ GRID
    sd = np.sqrt(p @ GRID**2 - mean**2)
    assert np.max(np.abs(mean - bundled.est.theta)) < 6e-6 and np.max(np.abs(sd - bundled.est.theta_sd)) < 3e-5
    assert check_same_fit(bundled.est, bundled.prep) < 1e-9


def _spec_draw(loglik: np.ndarray, mean: np.ndarray, sd: float, u: np.ndarray) -> np.ndarray:
    """The grid rule written as specified: normalised p, F = cumsum p, k* = first k with F > u."""
    logp = loglik - 0.5 * ((GRID[None, :] - mean[:, None]) / sd) ** 2
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    out = []
    for row, ui in zip(p, u, strict=True):
        cdf = np.cumsum(row)
        hits = np.flatnonzero(cdf > ui)
        k = int(hits[0]) if hits.size else row.size - 1
        out.append(-8 + k * 0.01 + 0.01 * (ui - (cdf[k - 1] if k else 0.0)) / row[k])
    return np.array(out)


def test_grid_draws_equal_the_rule(bundled):
    """Blocks, the bound instead of the row maximum, and the fallback for rows far from their bound."""
    loglik = GridLikelihood(bundled.est, bundled.prep).rows(np.arange(40))
    rng = np.random.default_rng(2)
    for sd in (0.05, 0.7, 1.7, 5.0):
        mean, u = rng.normal(scale=2, size=40), rng.random(40)
        np.testing.assert_allclose(grid_draws(loglik, mean, sd, u), _spec_draw(loglik, mean, sd, u), atol=1e-9)
    peaked = np.tile(-0.5 * ((GRID - 5.0) / 0.05) ** 2, (3, 1))  # a likelihood far from a narrow prior
    mean, u = np.full(3, -5.0), np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(grid_draws(peaked, mean, 0.05, u), _spec_draw(peaked, mean, 0.05, u), atol=1e-9)


def test_mismatched_theta_is_refused(bundled):
    theta = bundled.result.theta_table().with_columns(pl.col("theta") + 0.01)
    est = estimates_from_tables(theta, bundled.result.facets_table(), bundled.prep)
    with pytest.raises(InputSchemaError, match="come from different fits"):
        check_same_fit(est, bundled.prep)


def test_pooling_worked_example():
    pooled = rubin_pool(np.array([0.31, 0.35, 0.28, 0.33, 0.30]), 120)
    assert pooled.rho == pytest.approx(0.3142046, abs=5e-8)
    assert pooled.ci == (pytest.approx(0.124986, abs=5e-7), pytest.approx(0.481369, abs=5e-7))
    assert pooled.p == pytest.approx(0.00172985, abs=5e-9)
    assert pooled.within == pytest.approx(0.008970855, abs=5e-10) and pooled.between == pytest.approx(0.0009013625, abs=5e-11)
    assert pooled.fmi == pytest.approx(0.1075987, abs=5e-8) and pooled.df == pytest.approx(79.14998, abs=5e-6)
    same = rubin_pool(np.full(4, 0.3), 50)
    assert same.between == 0 and same.df == pytest.approx(48 / 50 * 47)  # ν = ν_obs when B = 0


def test_conditioned_worked_example(bundled):
    """Bundled example, metric = position in THETA order, seed 0, M = 20."""
    metrics = pl.DataFrame({"exchange_id": bundled.est.ids, "position": np.arange(40.0)})
    z = normal_scores(stats.rankdata(np.arange(40.0)))
    cond = condition_on(bundled.est, bundled.obs, np.arange(40), z)
    assert (cond.alpha, cond.beta, cond.sigma) == (
        pytest.approx(0.6211364, abs=5e-7), pytest.approx(-0.3398698, abs=5e-7), pytest.approx(1.7433145, abs=5e-7),
    )  # fmt: skip
    np.testing.assert_allclose(np.diag(cond.cov), [0.140131, 0.0999389, 0.0279411], atol=5e-7)
    _u, e = random_numbers(0, 20, 40)
    np.testing.assert_allclose(e[0], [-1.209627, -1.733003, -1.154171], atol=5e-7)
    row = theta_pv_table(metrics, ["position"], bundled.est, bundled.obs, bundled.prep, draws=20, seed=0).row(0, named=True)
    assert row["rho"] == pytest.approx(-0.1401478, abs=5e-7)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(-0.4808749, abs=5e-7), pytest.approx(0.2373547, abs=5e-7))
    assert row["p"] == pytest.approx(0.4558264, abs=5e-7) and row["pv_within"] == pytest.approx(0.0273727, abs=5e-8)
    assert row["pv_between"] == pytest.approx(0.0070037, abs=5e-8) and row["pv_fmi"] == pytest.approx(0.2117658, abs=5e-7)
    assert row["pv_df"] == pytest.approx(26.0058, abs=5e-5) and row["target"] == "theta_pv"
    assert (row["p_method"], row["ci_method"], row["pv_condition"], row["pv_draws"]) == ("rubin", "rubin", "metric", 20)


def _independent_marginal(ratings: pl.DataFrame, facets: pl.DataFrame, ids: list[str], z: np.ndarray):
    """log Σ_q w_q Π_n P(x_n | α + βz_i + σt_q − b_j − s_r), written per exchange (binary ratings)."""
    t, w = hermegauss(21)
    w = w / w.sum()
    b = dict(facets.filter(pl.col("facet") == "criterion").select("level", "estimate").iter_rows())
    s = dict(facets.filter(pl.col("facet") == "rater").select("level", "estimate").iter_rows())
    by_id = {i: [] for i in ids}
    for r in ratings.to_dicts():
        by_id[r["exchange_id"]].append((r["score"], b[r["criterion"]] + s[r["rater"]]))

    def loglik(psi: np.ndarray) -> float:
        total = 0.0
        for k, i in enumerate(ids):
            theta = psi[0] + psi[1] * z[k] + math.exp(psi[2]) * t
            lp = np.zeros(21)
            for x, d in by_id[i]:
                p = expit(theta - d)
                lp += np.log(p if x == 1 else 1 - p)
            total += math.log(float(np.exp(lp) @ w))
        return total

    return loglik


def test_conditioning_against_an_independent_fit(bundled):
    ids = bundled.est.ids.to_list()
    z = normal_scores(stats.rankdata(np.sin(np.arange(40.0))))
    loglik = _independent_marginal(bundled.ratings, bundled.result.facets_table(), ids, z)
    ref = optimize.minimize(lambda p: -loglik(p), np.zeros(3), method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000})  # fmt: skip
    cond = condition_on(bundled.est, bundled.obs, np.arange(40), z)
    assert cond.converged
    np.testing.assert_allclose([cond.alpha, cond.beta, math.log(cond.sigma)], ref.x, atol=1e-5)
    # V = (Σ s_i s_iᵀ)⁻¹ with the scores by central differences of each exchange's marginal
    eps = 1e-6
    psi = np.array([cond.alpha, cond.beta, math.log(cond.sigma)])
    scores = np.zeros((40, 3))
    for k in range(40):
        single = _independent_marginal(bundled.ratings.filter(pl.col("exchange_id") == ids[k]), bundled.result.facets_table(), [ids[k]], z[k : k + 1])
        for c in range(3):
            step = np.eye(3)[c] * eps
            scores[k, c] = (single(psi + step) - single(psi - step)) / (2 * eps)
    np.testing.assert_allclose(cond.cov, np.linalg.inv(scores.T @ scores), rtol=1e-5)


def test_reasons_and_the_unconditioned_option(bundled):
    metrics = pl.DataFrame({
        "exchange_id": bundled.est.ids, "const": np.ones(40), "few": [1.0, 2.0, 3.0] + [None] * 37, "pos": np.arange(40.0),
    })  # fmt: skip
    table = theta_pv_table(metrics, ["const", "few", "pos"], bundled.est, bundled.obs, bundled.prep, draws=4, seed=1, condition="none")
    assert table.columns[-len(PV_COLUMNS) :] == PV_COLUMNS
    assert table["reason"].to_list() == ["constant", "too_few", ""] and table["n"].to_list() == [40, 3, 40]
    pv = plausible_values(bundled.est, bundled.prep, draws=4, seed=1)
    rho = [stats.spearmanr(pv[f"pv_{m}"].to_numpy(), np.arange(40.0)).statistic for m in range(1, 5)]
    assert table["rho"][2] == pytest.approx(rubin_pool(np.array(rho), 40).rho, abs=1e-12)
    assert np.isnan(table["pv_alpha"][2]) and table["pv_condition"][2] == "none"
    assert theta_pv_line(table).startswith("theta_pv: 3 metrics, 4 PVs unconditioned; median FMI")
    with pytest.raises(ConfigError):
        theta_pv_table(metrics, ["pos"], bundled.est, bundled.obs, bundled.prep, draws=1)


def test_nuts_draw_positions(bundled):
    draws = np.arange(10.0)[:, None] * np.ones((1, 40))
    pv = plausible_values_from_draws(bundled.est, draws, draws=4)
    assert [pv[f"pv_{m}"][0] for m in range(1, 5)] == [1.0, 3.0, 6.0, 8.0]  # ⌊(m + ½)·10/4⌋
    with pytest.raises(ConfigError, match="10 draws"):
        plausible_values_from_draws(bundled.est, draws, draws=11)


@pytest.mark.slow
def test_coverage_of_the_pooled_interval():
    """500 × 4 criteria on 0–2, one rater; x = 0.5θ + e (target Spearman 0.4826): the conditioned-PV interval
    covers at the nominal rate, the EAP's Fisher interval does not; an unrelated metric keeps its level."""
    target = 6 / math.pi * math.asin(0.25)
    n_rep, covered, eap_covered, rejected = 60, 0, 0, 0
    tau = np.array([-0.6, 0.6])
    b = np.array([-0.8, -0.3, 0.2, 0.7])
    for rep in range(n_rep):
        rng = np.random.default_rng(1000 + rep)
        theta = rng.standard_normal(500)
        y = _pcm_draw(rng, theta[:, None] - b[None, :], tau)
        ids = np.array([f"e{i:03d}" for i in range(500)])
        ratings = pl.DataFrame({"exchange_id": np.repeat(ids, 4), "rater": "gold",
                                "criterion": np.tile([f"c{j}" for j in range(4)], 500), "score": y.ravel() / 2.0})  # fmt: skip
        f = fitted(ratings)
        x = 0.5 * theta + rng.normal(scale=math.sqrt(0.75), size=500)
        metrics = pl.DataFrame({"exchange_id": ids, "x": x, "noise": rng.standard_normal(500)})
        row, null = theta_pv_table(metrics, ["x", "noise"], f.est, f.obs, f.prep, draws=20, seed=rep).rows(named=True)
        covered += row["ci_low"] <= target <= row["ci_high"]
        rejected += null["p"] < 0.05
        rho_eap = stats.spearmanr(f.est.theta, x).statistic
        half = 1.96 * math.sqrt((1 + rho_eap**2 / 2) / 497)
        eap_covered += math.tanh(math.atanh(rho_eap) - half) <= target <= math.tanh(math.atanh(rho_eap) + half)
    print(f"coverage: conditioned PVs {covered / n_rep:.3f}, EAP {eap_covered / n_rep:.3f}; unrelated metric p < .05: {rejected / n_rep:.3f}")
    assert covered / n_rep >= 0.88  # nominal .95; 60 replications: SD ≈ .028
    assert eap_covered / n_rep <= 0.5
    assert rejected / n_rep <= 0.12
