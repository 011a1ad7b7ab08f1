"""Tests for the optional Bayesian MFRM (statistics.md §2.3, §2.6 item 3); skipped without PyMC."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

import typer
from typer.testing import CliRunner

from tutormetrics.commands import agree, compare, theta
from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.mfrm import MFRMResult, fit_mfrm, fit_theta, simulate_mfrm
from tutormetrics.psychometrics.mfrm.bayes import (
    ESS_MIN,
    R_HAT_MAX,
    BayesMFRMResult,
    _observations,
    _threshold_map,
    compare_models,
    fit_mfrm_bayes,
    pareto_k_threshold,
)
from tutormetrics.psychometrics.mfrm.design import prepare_ratings

# Only the warnings we expect are silenced; any other (a sampler, ArviZ or scipy warning) stays visible.
# PyTensor warns once, at the first compile, when pip-installed without a BLAS to link against.
pytestmark = pytest.mark.filterwarnings(r"ignore:PyTensor could not link to a BLAS installation:UserWarning")

# nutpie runs its chains on threads; two cores is what the test machines have.
CORES = 2


def register(app: typer.Typer) -> None:
    """The psychometrics commands on a bare app."""
    for module in (theta, agree, compare):
        module.register(app)


@pytest.fixture(scope="module")
def seed_scale() -> tuple[BayesMFRMResult, MFRMResult]:
    """§2.6 design (249 × 5 criteria × 2 raters, b = (1.517, 1.553, 0, −1.577, −1.493)); NUTS 4 × (500 + 500)
    (~50 s on two cores, so every test using it is slow)."""
    ratings, _ = simulate_mfrm(seed=1)
    nuts = fit_mfrm_bayes(ratings, draws=500, tune=500, chains=4, seed=0, cores=CORES)
    mml = fit_mfrm(ratings)
    assert isinstance(mml, MFRMResult)
    return nuts, mml


# ---------------------------------------------------------------- cheap checks (no sampling)


def test_observations_round_trip() -> None:
    """The ratings rebuilt from the MML design are exactly the input ratings, in canonical order."""
    ratings, truth = simulate_mfrm(n_items=30, seed=4, gamma=[0.5] * 5, thresholds=[[-0.5, 0.5]] * 5)
    prep = prepare_ratings(ratings, covariates=truth.select("exchange_id", "v"))
    obs = _observations(prep.design)
    assert obs.n == ratings.height
    rebuilt = sorted(
        zip(
            np.asarray(prep.ids)[obs.item],
            np.asarray(prep.criteria)[obs.crit],
            np.asarray(prep.raters)[obs.rater],
            obs.cat.astype(float),
            np.round(obs.cov[:, 0], 12), strict=True
        )
    )
    v = dict(zip(truth["exchange_id"], (truth["v"] - truth["v"].mean()) / truth["v"].std(ddof=0), strict=True))
    original = sorted(
        (e, c, r, s, round(float(v[e]), 12)) for e, r, c, s in ratings.select("exchange_id", "rater", "criterion", "score").iter_rows()
    )
    assert rebuilt == original
    # canonical order: the same for a model without the covariate (whose cells differ)
    obs0 = _observations(prepare_ratings(ratings).design)
    for name in ("item", "crit", "rater", "cat"):
        np.testing.assert_array_equal(getattr(obs0, name), getattr(obs, name))


def test_threshold_map_is_zero_sum_normal() -> None:
    """τ_j = Q_{M_j}ᵀ z_j: rows sum to zero over the criterion's own steps, zero padding, A ᵀA = I."""
    n_steps = np.array([1, 3, 2])
    a = _threshold_map(n_steps, 3)
    assert a.shape == (9, 3)
    np.testing.assert_allclose(a.T @ a, np.eye(3), atol=1e-12)
    tau = (a @ np.random.default_rng(0).normal(size=3)).reshape(3, 3)
    np.testing.assert_allclose(tau.sum(axis=1), 0.0, atol=1e-12)
    assert np.all(tau[0] == 0) and tau[2, 2] == 0


def test_pareto_k_threshold() -> None:
    assert pareto_k_threshold(4000) == 0.7
    assert pareto_k_threshold(1000) == pytest.approx(1 - 1 / 3)


def test_missing_extra_raises_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    ratings, _ = simulate_mfrm(n_items=10, seed=0)
    monkeypatch.setitem(sys.modules, "pymc", None)  # makes `import pymc` raise ImportError
    with pytest.raises(ConfigError, match="bayes extra") as info:
        fit_mfrm_bayes(ratings)
    assert info.value.hint == "pip install 'tutormetrics[bayes]'"
    with pytest.raises(ConfigError, match="bayes extra"):
        fit_theta(ratings, method="nuts")


def test_option_errors() -> None:
    ratings, _truth = simulate_mfrm(n_items=10, seed=0)
    with pytest.raises(ConfigError, match="sampler"):
        fit_mfrm_bayes(ratings, sampler="stan")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="target_accept"):
        fit_mfrm_bayes(ratings, target_accept=1.0)
    with pytest.raises(TypeError, match="draws"):
        fit_mfrm(ratings, draws=10)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="covariates, topics and/or groups"):
        compare_models(ratings)


# ---------------------------------------------------------------- seed-scale fit vs MML


@pytest.mark.slow  # NUTS
def test_seed_scale_diagnostics(seed_scale: tuple[BayesMFRMResult, MFRMResult]) -> None:
    """0 divergences; R-hat ≤ 1.01 and ESS bulk/tail ≥ 400 for the facets (b, s).

    θ gets R-hat ≤ 1.02: the largest of 249 R-hats at 500 draws per chain exceeds 1.01 by chance
    (the strict all-parameter check runs with 4 × (1000 + 1000) in the slow test below).
    """
    nuts, _ = seed_scale
    diag = nuts.diagnostics()
    assert diag.height == 249 + 5 + 2
    assert diag["parameter"].str.starts_with("theta[").sum() == 249
    summary = nuts.diagnostic_summary
    assert summary.n_divergences == 0
    facets = diag.filter(pl.col("parameter").str.contains(r"^(b|s)\["))
    assert facets.height == 7
    assert facets["r_hat"].max() <= R_HAT_MAX
    assert facets["ess_bulk"].min() >= ESS_MIN and facets["ess_tail"].min() >= ESS_MIN
    assert summary.max_r_hat <= 1.02
    assert min(summary.min_ess_bulk, summary.min_ess_tail) >= ESS_MIN
    assert "divergences 0" in str(summary)


@pytest.mark.slow  # NUTS
def test_seed_scale_agrees_with_mml(seed_scale: tuple[BayesMFRMResult, MFRMResult]) -> None:
    """Every |b̂_NUTS − b̂_MML| < 0.1 (issue 7) and corr(θ_NUTS, θ_MML) > 0.95."""
    nuts, mml = seed_scale
    assert nuts.criteria == mml.criteria and nuts.raters == mml.raters
    assert np.all(np.abs(nuts.b - mml.b) < 0.1), (nuts.b, mml.b)
    assert np.all(np.abs(nuts.s - mml.s) < 0.1)
    assert np.corrcoef(nuts.theta, mml.theta)[0, 1] > 0.95
    assert nuts.theta_sd.mean() == pytest.approx(mml.theta_sd.mean(), rel=0.1)
    np.testing.assert_allclose(nuts.theta.sum(), 0.0, atol=1e-6)  # ZeroSumNormal θ


@pytest.mark.slow  # NUTS
def test_seed_scale_tables_mirror_mml(seed_scale: tuple[BayesMFRMResult, MFRMResult]) -> None:
    nuts, mml = seed_scale
    tt, mt = nuts.theta_table(), mml.theta_table()
    assert tt.columns == mt.columns and tt.height == 249
    assert tt["exchange_id"].to_list() == mt["exchange_id"].to_list()
    assert ((tt["theta_low"] < tt["theta"]) & (tt["theta"] < tt["theta_high"])).all()
    # a 94% HDI of a near-normal posterior spans about 2·1.881 SD
    width = ((tt["theta_high"] - tt["theta_low"]) / tt["theta_sd"]).median()
    assert 3.4 < width < 4.1
    ft, fm = nuts.facets_table(), mml.facets_table()
    assert ft.columns == fm.columns
    assert ft.select("facet", "level").rows() == fm.select("facet", "level").rows()
    assert ((ft["lower"] <= ft["estimate"]) & (ft["estimate"] <= ft["upper"])).all()
    base = ft.filter(pl.col("facet") == "baseline_probability")
    np.testing.assert_allclose(base["estimate"].to_numpy(), 1 / (1 + np.exp(nuts.b)), atol=0.01)
    assert nuts.converged == nuts.diagnostic_summary.ok
    assert "Bayesian NUTS" in nuts.summary()
    assert nuts.idata.log_likelihood["y"].shape == (4, 500, 2490)


@pytest.mark.slow
def test_spec_full_nuts_check() -> None:
    """§2.6 item 3 as specified: 4 × (1000 + 1000) draws, every threshold met, |b̂_NUTS − b̂_MML| < 0.05."""
    ratings, _ = simulate_mfrm(seed=1)
    nuts = fit_mfrm_bayes(ratings, seed=0, cores=CORES)
    mml = fit_mfrm(ratings)
    assert nuts.diagnostic_summary.ok, str(nuts.diagnostic_summary)
    assert np.all(np.abs(nuts.b - mml.b) < 0.05), (nuts.b, mml.b)


@pytest.mark.slow
def test_pymc_sampler_mixed_steps_groups_covariate() -> None:
    """PyMC's sampler; partial credit with a one-step criterion (τ via Q_{M_j}ᵀ z), groups and a covariate."""
    beta = np.array([[0.5, -0.5, 0], [0.3, 0, -0.3], [0, 0, 0], [-0.4, 0.4, 0], [0.2, 0.2, -0.4]])
    ratings, truth = simulate_mfrm(n_items=90, seed=7, thresholds=[[-0.6, 0.6]] * 5, beta=beta, gamma=[0.5] * 5)
    one_step = (pl.col("criterion") == "c1") & (pl.col("score") > 0)
    ratings = ratings.with_columns(pl.when(one_step).then(1.0).otherwise(pl.col("score")).alias("score"))
    kw = {"groups": truth.select("exchange_id", "group"), "covariates": truth.select("exchange_id", "v")}
    mml = fit_mfrm(ratings, **kw)
    nuts = fit_theta(ratings, method="nuts", draws=300, tune=300, chains=2, sampler="pymc", seed=2, cores=CORES, **kw)
    assert isinstance(nuts, BayesMFRMResult) and isinstance(mml, MFRMResult)
    assert nuts.model == "partial_credit" and nuts.n_steps.tolist() == [1, 2, 2, 2, 2]
    assert nuts.diagnostic_summary.n_divergences == 0
    ft, fm = nuts.facets_table(), mml.facets_table()
    assert ft.select("facet", "level").rows() == fm.select("facet", "level").rows()
    np.testing.assert_allclose(ft["estimate"].to_numpy(), fm["estimate"].to_numpy(), atol=0.1)
    np.testing.assert_allclose(nuts.tau.sum(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(nuts.beta.sum(axis=1), 0.0, atol=1e-9)


# ---------------------------------------------------------------- PSIS-LOO model comparison


@pytest.mark.slow  # NUTS
def test_compare_models_prefers_real_covariate() -> None:
    """Criterion-specific γ (not absorbable into θ) must make the covariate model win by more than dse."""
    ratings, truth = simulate_mfrm(n_items=100, seed=5, gamma=[1.2, -1.2, 1.0, -1.0, 0.0])
    table = compare_models(
        ratings, covariates=truth.select("exchange_id", "v"), draws=300, tune=300, chains=4, seed=1, cores=CORES
    )
    assert table.columns == [
        "model", "terms", "rank", "elpd_loo", "se", "p_loo", "elpd_diff", "dse", "weight", "n_points",
        "n_high_pareto_k", "share_k_ok", "pareto_k_threshold", "ref_model", "delta_elpd_ref", "delta_elpd_ref_se", "warning",
    ]  # fmt: skip
    assert table["ref_model"].to_list() == ["facets"] * 2 and table["terms"].to_list() == ["v", ""]
    assert table["delta_elpd_ref"][0] == pytest.approx(table["elpd_diff"][1]) and table["delta_elpd_ref_se"][0] == pytest.approx(table["dse"][1])
    assert table["model"].to_list() == ["facets+covariate", "facets"]
    best, other = table.row(0, named=True), table.row(1, named=True)
    assert best["elpd_diff"] == 0.0 and best["dse"] == 0.0
    assert other["elpd_diff"] > other["dse"] > 0
    assert other["elpd_loo"] == pytest.approx(best["elpd_loo"] - other["elpd_diff"])
    assert 0 < best["p_loo"] < 150
    assert table["pareto_k_threshold"].to_list() == [pytest.approx(pareto_k_threshold(1200))] * 2
    assert (table["n_high_pareto_k"] >= 0).all()


# ---------------------------------------------------------------- CLI


@pytest.mark.slow  # NUTS
def test_cli_theta_nuts_partial_credit(tmp_path: Path) -> None:
    """``theta --method nuts`` on 0-2 scores: theta, facets (with thresholds) and diagnostics files."""
    ratings, _ = simulate_mfrm(n_items=60, seed=6, thresholds=[[-0.6, 0.6]] * 5)
    ratings.write_csv(tmp_path / "ratings.csv")
    app = typer.Typer()
    register(app)
    out = tmp_path / "out" / "theta.csv"
    args = ["theta", str(tmp_path / "ratings.csv"), "-o", str(out), "--facets", str(tmp_path / "facets.csv")]
    nuts = ["--method", "nuts", "--draws", "300", "--tune", "300", "--chains", "2", "--seed", "3"]
    result = CliRunner().invoke(app, [*args, *nuts])
    assert result.exit_code == 0, result.output
    theta = pl.read_csv(out)
    assert theta.columns == ["exchange_id", "theta", "theta_sd", "theta_low", "theta_high"] and theta.height == 60
    diag = pl.read_csv(tmp_path / "out" / "theta_diagnostics.csv")
    assert diag.columns == ["parameter", "r_hat", "ess_bulk", "ess_tail"]
    assert diag.height == 60 + 5 + 2 + 5 * 2  # θ, b, s, τ (two steps per criterion)
    assert "MFRM partial_credit" in result.stderr and "NUTS (nutpie, 2 chains x 300 tune + 300 draws)" in result.stderr
    facets = pl.read_csv(tmp_path / "facets.csv")
    assert facets.filter(pl.col("facet") == "threshold").height == 10
    base = facets.filter(pl.col("facet") == "baseline_probability")
    assert base.height == 15
    np.testing.assert_allclose(base.group_by(pl.col("level").str.split(":").list.first()).agg(pl.col("estimate").sum())["estimate"], 1.0)
    # agreement with MML on the same file
    mml = fit_mfrm(ratings)
    np.testing.assert_allclose(
        facets.filter(pl.col("facet") == "criterion")["estimate"].to_numpy(), mml.b, atol=0.1
    )
    assert np.corrcoef(theta["theta"].to_numpy(), mml.theta)[0, 1] > 0.95
    # usage errors exit 2 without sampling
    bad = CliRunner().invoke(app, [*args, "--method", "nuts", "--compare-models", str(tmp_path / "loo.csv")])
    assert bad.exit_code == 2 and "--covariates, --topics and/or --groups" in bad.stderr
    bad = CliRunner().invoke(app, [*args, "--method", "bayes"])
    assert bad.exit_code == 2 and "unknown --method" in bad.stderr


# ---------------------------------------------------------------- effects.md: topics, named models, pooled θ, effects


@pytest.mark.slow  # NUTS
def test_nuts_topics_named_models_pooled_theta_and_effects() -> None:
    """effects.md §2.4 (θ-key ties from pooled draws, same draws for a shuffled file), §3 (NUTS effects),
    §5 (zero-sum topics) and §6 (user-named models, delta_elpd_ref) on a small design."""
    from tutormetrics.psychometrics.mfrm.effects import EFFECT_COLUMNS

    rng = np.random.default_rng(9)
    ratings, truth = simulate_mfrm(n_items=60, seed=9)
    shown = ["zeta", "alpha", "mu", "beta", "omega"]  # first appearance, not sorted
    ratings = ratings.with_columns(pl.col("criterion").replace(dict(zip(["c1", "c2", "c3", "c4", "c5"], shown, strict=True))))
    ids = truth["exchange_id"]
    cov = pl.DataFrame({"exchange_id": ids, "suff": (rng.random(60) < 0.5).astype(int)})
    top = pl.DataFrame({"exchange_id": ids, **{f"t{k}": (rng.random(60) < 0.4).astype(int) for k in range(3)}})
    opts = {"draws": 200, "tune": 200, "chains": 2, "seed": 4, "cores": CORES}
    fit = fit_mfrm_bayes(ratings, covariates=cov, topics=top, **opts)
    shuffled = fit_mfrm_bayes(ratings.sample(fraction=1.0, shuffle=True, seed=1), covariates=cov.reverse(),
                              topics=top.reverse(), **opts)  # fmt: skip
    assert fit.theta_table().equals(shuffled.theta_table())
    th = fit.theta_table().with_columns(key=pl.Series(fit.theta_key))
    assert th.group_by("key").agg(pl.col("theta").n_unique())["theta"].max() == 1
    topic_rows = fit.facets_table().filter(pl.col("facet").str.starts_with("topic:"))
    assert topic_rows.height == 15
    beta = np.asarray(fit.idata.posterior["beta_topic"].values)
    np.testing.assert_allclose(beta.sum(-1), 0.0, atol=1e-10)
    assert fit.facets_table().filter(pl.col("facet") == "criterion")["level"].to_list() == shown
    eff = fit.effects_table()
    assert eff.columns == list(EFFECT_COLUMNS) and eff.height == 20
    assert eff["criterion"].to_list()[:5] == shown
    mml = fit_mfrm(ratings, covariates=cov, topics=top).effects_table()
    np.testing.assert_allclose(eff["delta_p"], mml["delta_p"], atol=0.08)  # same rows, same order
    assert (eff["n_draws"] == 400).all() and (eff["method"] == "nuts").all()
    assert ((eff["hdi_low"] <= eff["delta_p"]) & (eff["delta_p"] <= eff["hdi_high"])).all()
    # p_ref = the facets baseline (posterior mean of p), p_ref_plugin = p at the posterior mean of b
    base = fit.facets_table().filter(pl.col("facet") == "baseline_probability")
    np.testing.assert_allclose(eff["p_ref"][:5], base["estimate"], rtol=1e-9)
    b_mean = fit.facets_table().filter(pl.col("facet") == "criterion")["estimate"].to_numpy()
    np.testing.assert_allclose(eff["p_ref_plugin"][:5], 1 / (1 + np.exp(b_mean)), rtol=1e-12)
    np.testing.assert_allclose(base["plugin"], 1 / (1 + np.exp(b_mean)), rtol=1e-12)
    assert eff["reason"].str.contains("not_converged").all()  # 2 × 200 draws cannot reach ESS 400
    table = compare_models(ratings, covariates=cov, topics=top, specs=[("M0", []), ("M1", ["suff"]), ("M3", ["suff", "topics"])], **opts)
    assert sorted(table["model"].to_list()) == ["M0", "M1", "M3"] and (table["ref_model"] == "M0").all()
    m0 = table.filter(pl.col("model") == "M0").row(0, named=True)
    assert m0["delta_elpd_ref"] == 0.0 and m0["delta_elpd_ref_se"] == 0.0 and m0["n_points"] == 600
    assert table.filter(pl.col("model") == "M3")["terms"][0] == "suff+topics"
    assert ((table["share_k_ok"] >= 0) & (table["share_k_ok"] <= 1)).all()
    with pytest.raises(ConfigError, match="unknown term"):
        compare_models(ratings, covariates=cov, specs=[("A", []), ("B", ["nope"])], **opts)
