"""Bias/interaction (docs/measurement.md#bias-interaction): the bundled example, an independent solver written out
per rating with scipy's brentq, group means, the table's shape and its errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from measurement_fixtures import fitted
from numpy.polynomial.hermite_e import hermegauss
from scipy import optimize, stats
from scipy.special import expit

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.bias import BIAS_COLUMNS, BiasRule, DifGroups, bias_line, bias_table
from tutormetrics.psychometrics.measurement.fit import extreme_elements
from tutormetrics.psychometrics.measurement.posterior import NodeLikelihood, group_means


def _reference_binary(ratings: pl.DataFrame, theta_table: pl.DataFrame, facets: pl.DataFrame, prior: dict[str, float]):
    """θ's node posterior and the cell equation written out per rating (binary ratings; prior mean per exchange)."""
    t, w = hermegauss(21)
    w = w / w.sum()
    b = dict(facets.filter(pl.col("facet") == "criterion").select("level", "estimate").iter_rows())
    s = dict(facets.filter(pl.col("facet") == "rater").select("level", "estimate").iter_rows())
    rows = ratings.to_dicts()
    ids = sorted({r["exchange_id"] for r in rows})
    loglik = {i: np.zeros(21) for i in ids}
    for r in rows:
        eta = prior[r["exchange_id"]] + t - b[r["criterion"]] - s.get(r["rater"], 0.0)
        p = expit(eta)
        loglik[r["exchange_id"]] += np.log(p if r["score"] == 1 else 1 - p)
    pi = {}
    for i in ids:
        v = np.exp(loglik[i] - loglik[i].max()) * w
        pi[i] = v / v.sum()
    return t, b, s, rows, pi


def test_bundled_rater_by_criterion(bundled):
    """docs/measurement.md#bias-numbers: the largest |t| is r1 × providing_guidance, nothing flagged."""
    table = bias_table(bundled.est, bundled.obs, bundled.prep, ["rater:criterion"])
    assert table.columns == BIAS_COLUMNS and table.height == 10
    assert table["level_a"].to_list()[:5] == ["r1"] * 5 and table["level_b"].to_list()[:5] == bundled.est.criteria
    top = table.row(int(table["t"].abs().arg_max()), named=True)
    assert (top["level_a"], top["level_b"]) == ("r1", "providing_guidance")
    assert top["bias"] == pytest.approx(-1.288047, abs=5e-7)
    assert top["se"] == pytest.approx(1.051076, abs=5e-7)
    assert top["t"] == pytest.approx(-1.225456, abs=5e-7) and top["df"] == 39
    assert (table["flag"] == "").all() and (table["prior_mean"] == 0).all()
    assert bias_line(table) == "bias: rater:criterion 10 cells, 0 flagged (holm)"


def test_against_an_independent_solver(bundled):
    """Every cell's β̂, SE, expected and p equal a per-rating re-implementation solved with brentq (1e-8)."""
    ratings = bundled.ratings
    prior = {i: 0.0 for i in bundled.est.ids.to_list()}
    t, b, s, rows, pi = _reference_binary(ratings, bundled.result.theta_table(), bundled.result.facets_table(), prior)
    table = bias_table(bundled.est, bundled.obs, bundled.prep, ["rater:criterion"])
    for row in table.iter_rows(named=True):
        cell = [r for r in rows if r["rater"] == row["level_a"] and r["criterion"] == row["level_b"]]
        x = np.array([r["score"] for r in cell], dtype=float)

        def ebar(beta: float, cell=cell) -> np.ndarray:
            return np.array([pi[r["exchange_id"]] @ expit(t - b[r["criterion"]] - s[r["rater"]] - beta) for r in cell])

        def wbar(beta: float, cell=cell) -> np.ndarray:
            return np.array([pi[r["exchange_id"]] @ (lambda p: p * (1 - p))(expit(t - b[r["criterion"]] - s[r["rater"]] - beta)) for r in cell])

        beta = optimize.brentq(lambda v, x=x: float(np.sum(x - ebar(v))), -10, 10, xtol=1e-14)
        se = 1 / np.sqrt(wbar(beta).sum())
        assert row["expected"] == pytest.approx(float(ebar(0.0).sum()), abs=1e-9)
        assert row["bias"] == pytest.approx(beta, abs=1e-8) and row["se"] == pytest.approx(se, abs=1e-8)
        assert row["p"] == pytest.approx(2 * stats.t.sf(abs(beta / se), len(cell) - 1), abs=1e-8)


def _groups(bundled) -> DifGroups:
    ids = bundled.est.ids.to_list()
    levels = ["human", "llm"]
    return DifGroups("tutor", levels, np.array([0 if "human" in i else 1 for i in ids]))


def test_group_means_solve_their_equation(bundled):
    groups = _groups(bundled)
    lik = NodeLikelihood(bundled.est, bundled.prep)
    ext = extreme_elements(bundled.obs.item, bundled.obs.cat, bundled.obs.top, bundled.est.n_items)
    means = group_means(lik, groups.code, 2, ext)
    assert means.reason == ["", ""]
    t, w = hermegauss(21)
    w = w / w.sum()
    for g, mu in enumerate(means.mu):
        rows = np.flatnonzero(groups.code == g)
        ll = lik.loglik(mu + t, rows) + np.log(w)
        p = np.exp(ll - ll.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        assert float((p @ (mu + t)).mean()) == pytest.approx(mu, abs=1e-10)


def test_criterion_by_group_uses_the_group_means(bundled):
    groups = _groups(bundled)
    table = bias_table(bundled.est, bundled.obs, bundled.prep, ["criterion:group"], groups=groups)
    assert table.height == 10 and table["level_a"].to_list()[:2] == [bundled.est.criteria[0]] * 2
    assert table["level_b"].to_list()[:2] == ["human", "llm"]
    lik = NodeLikelihood(bundled.est, bundled.prep)
    ext = extreme_elements(bundled.obs.item, bundled.obs.cat, bundled.obs.top, bundled.est.n_items)
    mu = group_means(lik, groups.code, 2, ext).mu
    np.testing.assert_allclose(table["prior_mean"].to_numpy()[:2], mu)
    # against the per-rating solver with the group prior
    ids = bundled.est.ids.to_list()
    prior = {i: float(mu[groups.code[k]]) for k, i in enumerate(ids)}
    t, b, s, rows, pi = _reference_binary(bundled.ratings, None, bundled.result.facets_table(), prior)
    row = table.filter((pl.col("level_a") == "mistake_location") & (pl.col("level_b") == "llm")).row(0, named=True)
    cell = [r for r in rows if r["criterion"] == "mistake_location" and "human" not in r["exchange_id"]]
    x = np.array([r["score"] for r in cell], dtype=float)
    beta = optimize.brentq(
        lambda v: float(np.sum(x - [pi[r["exchange_id"]] @ expit(prior[r["exchange_id"]] + t - b[r["criterion"]] - s[r["rater"]] - v) for r in cell])),
        -10, 10, xtol=1e-14,
    )  # fmt: skip
    assert row["bias"] == pytest.approx(beta, abs=1e-8)


def test_too_few_and_extreme_cells(bundled):
    table = bias_table(bundled.est, bundled.obs, bundled.prep, ["rater:criterion"], rule=BiasRule(min_n=41))
    assert (table["reason"] == "too_few").all() and table["bias"].is_nan().all()
    assert table["expected"].is_finite().all() and table["p_adj"].is_nan().all()
    assert table["df"].null_count() == table.height


def test_errors(bundled):
    with pytest.raises(ConfigError, match="not a pair"):
        bias_table(bundled.est, bundled.obs, bundled.prep, ["rater:exchange"])
    with pytest.raises(ConfigError, match="needs --dif-groups"):
        bias_table(bundled.est, bundled.obs, bundled.prep, ["criterion:group"])
    one = fitted(bundled.ratings.filter(pl.col("rater") == "r1"))
    with pytest.raises(ConfigError, match="one rater \\('r1'\\)"):
        bias_table(one.est, one.obs, one.prep, ["rater:criterion"])


def test_no_interaction_gives_no_artefact():
    """Binary 2,000 × 5 × 4 without interactions (docs/measurement.md#posterior): with θ held as its posterior the
    cells of a criterion average to ≈ 0 (the plug-in EAP would shift them all one way), and nothing is flagged."""
    from tutormetrics.psychometrics.mfrm import simulate_mfrm

    ratings, _ = simulate_mfrm(n_items=2000, b=(-1.5, -0.75, 0.0, 0.75, 1.5), severities=(0.3, 0.1, -0.1, -0.3), seed=11)
    f = fitted(ratings)
    table = bias_table(f.est, f.obs, f.prep, ["rater:criterion"])
    means = table.group_by("level_b").agg(pl.col("bias").mean())["bias"].to_numpy()
    assert np.max(np.abs(means)) < 0.01
    assert (table["flag"] == "").all() and float(table["t"].abs().max()) < 3.5
