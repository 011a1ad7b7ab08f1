"""Tests for the MML many-facet Rasch model (statistics.md §2)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.optimize import approx_fprime
from scipy.special import expit
from scipy.stats import norm

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.mfrm import fit_theta
from tutormetrics.psychometrics.mfrm import mml as mfrm
from tutormetrics.psychometrics.mfrm.design import prepare_ratings
from tutormetrics.psychometrics.mfrm.mml import (
    Z94,
    fit_mfrm,
    partial_credit_probabilities,
    quadrature,
    simulate_mfrm,
    zero_sum_basis,
)

B_TRUE = np.array([1.517, 1.553, 0.0, -1.577, -1.493])


def _gamma_beta(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gamma = rng.normal(0, 0.5, 5)
    beta = rng.normal(0, 0.5, (5, 3))
    return gamma, beta - beta.mean(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def fitted() -> tuple[mfrm.MFRMResult, pl.DataFrame]:
    ratings, truth = simulate_mfrm(seed=1)
    return fit_mfrm(ratings), truth


@pytest.fixture(scope="module")
def full_model_data() -> tuple[pl.DataFrame, pl.DataFrame]:
    gamma, beta = _gamma_beta(0)
    return simulate_mfrm(seed=2, gamma=gamma, beta=beta, thresholds=[[-0.5, 0.5]] * 5)


# ---------------------------------------------------------------- building blocks


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_zero_sum_basis_identities(k: int) -> None:
    q = zero_sum_basis(k)
    assert q.shape == (k - 1, k)
    np.testing.assert_allclose(q @ q.T, np.eye(k - 1), atol=1e-12)
    np.testing.assert_allclose(q.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(k) - np.full((k, k), 1 / k), atol=1e-12)


def test_quadrature_moments() -> None:
    t, w = quadrature(21)
    assert t.size == 21
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w @ t == pytest.approx(0.0, abs=1e-12)
    assert w @ t**2 == pytest.approx(1.0, abs=1e-10)
    assert w @ t**4 == pytest.approx(3.0, abs=1e-9)


def test_partial_credit_check_values() -> None:
    """§2.5 [ref]: η = [−2, 0, 1.5], τ = [−0.4, 0.4]."""
    p = partial_credit_probabilities(np.array([-2.0, 0.0, 1.5]), np.array([-0.4, 0.4]))
    np.testing.assert_allclose(np.log(p[:, 1] / p[:, 0]), [-1.6, 0.4, 1.9], atol=1e-12)
    np.testing.assert_allclose(np.log(p[:, 2] / p[:, 1]), [-2.4, -0.4, 1.1], atol=1e-12)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_partial_credit_one_step_is_rasch() -> None:
    eta = np.linspace(-3, 3, 7)
    p = partial_credit_probabilities(eta, np.array([0.0]))
    np.testing.assert_allclose(p[:, 1], expit(eta), atol=1e-12)


# ---------------------------------------------------------------- objective and gradient


def _prepared(ratings: pl.DataFrame, **kwargs) -> tuple:
    prep = prepare_ratings(ratings, **kwargs)
    t, w = quadrature(21)
    return prep, t, np.log(w)


@pytest.mark.parametrize("kind", ["binary", "full_partial_credit"])
def test_gradient_matches_finite_differences(kind: str, full_model_data) -> None:
    if kind == "binary":
        ratings, _ = simulate_mfrm(n_items=80, seed=5)
        prep, t, logw = _prepared(ratings)
    else:
        ratings, truth = full_model_data
        prep, t, logw = _prepared(
            ratings.filter(pl.col("exchange_id") < "ex080"),
            covariates=truth.select("exchange_id", "v"),
            groups=truth.select("exchange_id", "group"),
        )
    d = prep.design
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.5, sum(d.sizes().values()))

    def f(z: np.ndarray) -> float:
        return mfrm._neg_log_posterior(z, d, t, logw)[0]

    g = mfrm._neg_log_posterior(x, d, t, logw)[1]
    g_fd = approx_fprime(x, f, 1e-7)
    assert g.shape == x.shape
    np.testing.assert_allclose(g, g_fd, atol=2e-5 * max(1.0, np.abs(g).max()))


def test_marginal_likelihood_matches_brute_force(full_model_data) -> None:
    """Cells + sparse counts must equal a naive per-exchange, per-node product of probabilities."""
    ratings, truth = full_model_data
    sub = ratings.filter(pl.col("exchange_id") < "ex030")
    prep, t, logw = _prepared(
        sub, covariates=truth.select("exchange_id", "v"), groups=truth.select("exchange_id", "group")
    )
    d = prep.design
    x = np.random.default_rng(3).normal(0, 0.4, sum(d.sizes().values()))
    _, _, _, loglik = mfrm._neg_log_posterior(x, d, t, logw)
    p = mfrm._unpack(x, d)
    ids = prep.ids.to_list()
    vmap = dict(zip(truth["exchange_id"], truth["v"], strict=True))
    vals = np.array([vmap[k] for k in ids])  # z-scored over the rated exchanges, as fit_mfrm does
    vz = dict(zip(ids, (vals - vals.mean()) / vals.std(), strict=True))
    gmap = dict(zip(truth["exchange_id"], truth["group"], strict=True))
    groups = sorted(set(gmap[k] for k in ids))
    crit_index = {c: j for j, c in enumerate(prep.criteria)}
    rater_index = {r: k for k, r in enumerate(prep.raters)}
    total = 0.0
    for ex in ids:
        rows = sub.filter(pl.col("exchange_id") == ex)
        like = np.ones_like(t)
        for row in rows.iter_rows(named=True):
            j, r = crit_index[row["criterion"]], rater_index[row["rater"]]
            eta = t - p.b[j] - p.s[r] + p.gamma[j, 0] * vz[ex] + p.beta[j, groups.index(gmap[ex])]
            probs = partial_credit_probabilities(eta, p.tau[j, : d.n_steps[j]])
            like *= probs[:, int(row["score"])]
        total += np.log(np.exp(logw) @ like)
    assert loglik == pytest.approx(total, rel=1e-10)


# ---------------------------------------------------------------- recovery (fast, seeded)


def test_fast_recovery(fitted) -> None:
    res, truth = fitted
    assert res.model == "binary" and res.converged
    joined = truth.join(res.theta_table(), on="exchange_id", suffix="_hat")
    corr = np.corrcoef(joined["theta"], joined["theta_hat"])[0, 1]
    assert corr > 0.70
    assert np.all(np.abs(res.b - B_TRUE) < 0.35)
    covered = ((joined["theta_low"] <= joined["theta"]) & (joined["theta"] <= joined["theta_high"])).mean()
    assert 0.88 <= covered <= 0.98


def test_zero_sum_identities(full_model_data) -> None:
    ratings, truth = full_model_data
    res = fit_mfrm(ratings, covariates=truth.select("exchange_id", "v"), groups=truth.select("exchange_id", "group"))
    assert res.model == "partial_credit" and res.converged
    assert res.s.sum() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res.beta.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(res.tau.sum(axis=1), 0.0, atol=1e-12)
    ft = res.facets_table()
    assert ft.filter(pl.col("facet") == "rater")["estimate"].sum() == pytest.approx(0.0, abs=1e-12)
    groups = ft.filter(pl.col("facet").str.starts_with("group:"))
    assert groups.group_by("level").agg(pl.col("estimate").sum())["estimate"].abs().max() < 1e-12
    # zero-sum facets: the SEs of a rater pair are equal and the covariance is singular along 1
    se = ft.filter(pl.col("facet") == "rater")["se"].to_numpy()
    assert se[0] == pytest.approx(se[1]) and np.all(se > 0)
    # the covariate and group effects are recovered in direction
    gamma, beta = _gamma_beta(0)
    assert np.corrcoef(res.gamma[:, 0], gamma)[0, 1] > 0.6
    assert np.corrcoef(res.beta.ravel(), beta.ravel())[0, 1] > 0.8


def test_facets_table_layout(fitted) -> None:
    res, _ = fitted
    ft = res.facets_table()
    assert ft.columns[:6] == ["facet", "level", "estimate", "se", "lower", "upper"]
    assert set(ft["facet"]) == {"criterion", "rater", "baseline_probability"}
    crit = ft.filter(pl.col("facet") == "criterion")
    assert crit["level"].to_list() == ["c1", "c2", "c3", "c4", "c5"]
    np.testing.assert_allclose(crit["upper"] - crit["estimate"], Z94 * crit["se"], rtol=1e-12)
    base = ft.filter(pl.col("facet") == "baseline_probability")
    np.testing.assert_allclose(base["plugin"], expit(-res.b), rtol=1e-12)  # the plug-in at the mode
    assert ft.filter(pl.col("facet") != "baseline_probability")["plugin"].is_null().all()
    # the estimate is the mean over the 4,000 draws: within 4 Monte Carlo SEs of the plug-in's neighbourhood
    assert ((base["estimate"] - base["plugin"]).abs() < 0.02).all()
    assert (base["lower"] < base["estimate"]).all() and (base["estimate"] < base["upper"]).all()
    assert base["reference"][0].startswith("theta=0; s=0 (mean rater)")
    assert res.reference_point == base["reference"][0]


def _grid_posterior(ratings: pl.DataFrame, res: mfrm.MFRMResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EAP, PSD and the posterior mass inside EAP ± 1.881·PSD of each exchange, by brute force: the binary
    Rasch likelihood ``σ(θ − b_j − s_r)`` at the fitted facets times the N(0, 1) prior on a 4,001-point grid
    (no Gauss–Hermite nodes, no code of the package)."""
    grid = np.linspace(-8.0, 8.0, 4001)
    b = dict(zip(res.criteria, res.b, strict=True))
    s = dict(zip(res.raters, res.s, strict=True))
    ids = res.exchange_ids.to_list()
    loglik = np.zeros((len(ids), grid.size))
    row = {e: i for i, e in enumerate(ids)}
    for e, r, c, y in ratings.select("exchange_id", "rater", "criterion", "score").iter_rows():
        eta = grid - b[c] - s[r]
        loglik[row[e]] += y * eta - np.logaddexp(0.0, eta)
    logpost = loglik - grid**2 / 2
    post = np.exp(logpost - logpost.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    eap = post @ grid
    psd = np.sqrt(post @ grid**2 - eap**2)
    z = float(norm.ppf(0.97))
    inside = (np.abs(grid[None, :] - eap[:, None]) <= z * psd[:, None])
    return eap, psd, (post * inside).sum(axis=1)


def test_theta_table_and_reliability(fitted) -> None:
    res, truth = fitted
    ratings, _ = simulate_mfrm(seed=1)
    th = res.theta_table()
    assert th.columns == ["exchange_id", "theta", "theta_sd", "theta_low", "theta_high"]
    assert th.height == 249 and th["exchange_id"].is_sorted()
    # EAP and PSD equal a brute-force grid posterior at the fitted facets (21 Gauss-Hermite nodes are exact enough)
    eap, psd, mass = _grid_posterior(ratings, res)
    np.testing.assert_allclose(res.theta, eap, atol=1e-5)
    np.testing.assert_allclose(res.theta_sd, psd, atol=1e-5)
    # the 94% interval: z = Φ⁻¹(0.97) from scipy, and about 94% of each grid posterior lies inside it
    assert Z94 == pytest.approx(norm.ppf(0.97), abs=1e-12)
    np.testing.assert_allclose(th["theta_high"] - th["theta"], norm.ppf(0.97) * psd, atol=1e-3)
    assert 0.925 < float(np.mean(mass)) < 0.955
    # EAP reliability from the independent EAP/PSD, and against the truth: corr(EAP, θ)² estimates it
    v = float(np.var(eap))
    assert res.reliability == pytest.approx(v / (v + float(np.mean(psd**2))), abs=1e-4)
    joined = truth.join(th, on="exchange_id", suffix="_hat")
    r2 = float(np.corrcoef(joined["theta"], joined["theta_hat"])[0, 1] ** 2)
    assert abs(res.reliability - r2) < 0.1
    assert res.n_obs == 2490
    assert res.log_likelihood < 0
    text = res.summary()
    assert "reliability" in text and "2490" in text


def test_single_rater_drops_rater_facet() -> None:
    ratings, _ = simulate_mfrm(n_items=150, severities=(0.0,), seed=4)
    res = fit_mfrm(ratings)
    assert res.raters == ["r1"]
    assert np.all(res.s == 0)
    assert "rater" not in set(res.facets_table()["facet"])
    assert "rater facet dropped" in res.summary()


def test_partial_credit_on_binary_data_equals_binary() -> None:
    ratings, _ = simulate_mfrm(n_items=100, seed=6)
    a = fit_mfrm(ratings, model="binary")
    b = fit_mfrm(ratings, model="partial_credit")
    assert b.model == "partial_credit"
    np.testing.assert_allclose(a.b, b.b, atol=1e-6)
    assert a.log_likelihood == pytest.approx(b.log_likelihood, rel=1e-9)


def test_auto_maps_half_points_to_categories() -> None:
    ratings, _ = simulate_mfrm(n_items=150, seed=7, thresholds=[[-0.3, 0.3]] * 5)
    halves = ratings.with_columns(pl.col("score") / 2)
    res_int = fit_mfrm(ratings)
    res_half = fit_mfrm(halves)
    assert res_int.model == res_half.model == "partial_credit"
    assert res_half.score_levels["c1"] == [0.0, 0.5, 1.0]
    np.testing.assert_allclose(res_int.b, res_half.b, atol=1e-8)
    np.testing.assert_allclose(res_int.theta, res_half.theta, atol=1e-8)
    thr = res_half.facets_table().filter(pl.col("facet") == "threshold")
    assert thr["level"].to_list()[:2] == ["c1:1", "c1:2"]
    base = res_half.facets_table().filter(pl.col("facet") == "baseline_probability")
    sums = base.with_columns(pl.col("level").str.split(":").list.first().alias("c")).group_by("c").agg(pl.col("estimate").sum())
    np.testing.assert_allclose(sums["estimate"], 1.0, atol=1e-12)


def test_mixed_criteria_steps_and_dropped_constant() -> None:
    ratings, _ = simulate_mfrm(n_items=120, seed=8, thresholds=[[-0.3, 0.3]] * 5)
    # c5 becomes binary (0/2 -> two categories, one step); c4 becomes constant and is dropped
    ratings = ratings.with_columns(
        pl.when(pl.col("criterion") == "c5").then((pl.col("score") > 0).cast(pl.Float64) * 2)
        .when(pl.col("criterion") == "c4").then(pl.lit(1.0))
        .otherwise(pl.col("score")).alias("score")
    )
    with pytest.warns(UserWarning, match="single observed score"):
        res = fit_mfrm(ratings)
    assert res.dropped_criteria == ["c4"]
    assert res.criteria == ["c1", "c2", "c3", "c5"]
    assert list(res.n_steps) == [2, 2, 2, 1]
    assert "c5:1" not in res.facets_table()["level"].to_list()


def test_row_order_invariance() -> None:
    ratings, _ = simulate_mfrm(n_items=60, seed=9)
    a = fit_mfrm(ratings)
    b = fit_mfrm(ratings.sample(fraction=1.0, shuffle=True, seed=1))
    # criteria keep their order of first appearance; compare by name
    order = [b.criteria.index(c) for c in a.criteria]
    np.testing.assert_allclose(a.b, b.b[order], atol=1e-6)
    np.testing.assert_allclose(a.theta, b.theta, atol=1e-6)
    assert a.log_likelihood == pytest.approx(b.log_likelihood, rel=1e-10)


def test_errors() -> None:
    ratings, _ = simulate_mfrm(n_items=20, seed=0)
    with pytest.raises(InputSchemaError, match="missing column"):
        fit_mfrm(ratings.rename({"score": "value"}))
    with pytest.raises(ConfigError):
        fit_mfrm(ratings.with_columns(pl.col("score") / 2 + 0.25), model="binary")
    with pytest.raises(ConfigError):
        fit_theta(ratings, method="bogus")  # type: ignore[arg-type]
    cov = pl.DataFrame({"exchange_id": ["ex00"], "v": [1.0]})
    with pytest.raises(InputSchemaError, match="no value"):
        fit_mfrm(ratings, covariates=cov)


def test_simulate_shapes() -> None:
    gamma, beta = _gamma_beta(1)
    ratings, truth = simulate_mfrm(n_items=30, seed=0, gamma=gamma, beta=beta)
    assert ratings.height == 300
    assert truth.columns == ["exchange_id", "theta", "v", "group"]
    assert truth["theta"].mean() == pytest.approx(0.0, abs=1e-12)
    assert set(ratings["score"].unique()) <= {0.0, 1.0}


@pytest.mark.slow
def test_recovery_30_replications() -> None:
    corrs, abs_err, cover = [], [], []
    for rep in range(30):
        ratings, truth = simulate_mfrm(seed=1000 + rep)
        res = fit_mfrm(ratings, compute_se=False)
        joined = truth.join(res.theta_table(), on="exchange_id", suffix="_hat")
        corrs.append(np.corrcoef(joined["theta"], joined["theta_hat"])[0, 1])
        abs_err.append(np.abs(res.b - B_TRUE))
        cover.append(((joined["theta_low"] <= joined["theta"]) & (joined["theta"] <= joined["theta_high"])).mean())
    assert np.mean(corrs) >= 0.75
    assert np.mean(abs_err) <= 0.15
    assert 0.90 <= np.mean(cover) <= 0.97
