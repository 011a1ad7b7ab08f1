"""The measurement report entry point and the scale warnings (docs/measurement.md#commands, #scale-warnings):
options, errors, stderr lines, the planted simulation end to end."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from measurement_fixtures import fitted, planted
from scipy import stats

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.measurement_report import (
    MeasurementOptions,
    measurement_report,
    prepare_like_fit,
)
from tutormetrics.psychometrics.measurement.scale_checks import (
    disordered_thresholds,
    item_rest_correlations,
    scale_warnings,
)
from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm


def test_item_rest_against_pearson():
    ratings, _ = simulate_mfrm(n_items=150, seed=7)
    reversed_ = ratings.with_columns(
        pl.when(pl.col("criterion") == "c3").then(1 - pl.col("score")).otherwise(pl.col("score")).alias("score")
    )
    f = fitted(reversed_)
    r = item_rest_correlations(f.est, f.obs)
    wide = reversed_.group_by("exchange_id", "criterion").agg(pl.col("score").mean()).pivot("criterion", index="exchange_id")
    for j, crit in enumerate(f.est.criteria):
        rest = wide.select([c for c in f.est.criteria if c != crit]).to_numpy().mean(1)
        assert r[j] == pytest.approx(stats.pearsonr(wide[crit].to_numpy(), rest).statistic, abs=1e-12)
    lines = scale_warnings(f.est, f.obs)
    assert len(lines) == 1 and "'c3' runs against the others" in lines[0] and "--recode" in lines[0]
    assert r[f.est.criteria.index("c3")] < 0 < min(np.delete(r, f.est.criteria.index("c3")))


def test_disordered_thresholds_are_flagged(bundled):
    assert disordered_thresholds(np.array([[-0.5, 0.5, 0.0], [0.2, -0.2, 0.0], [-1.0, 0.0, 1.0]]), np.array([2, 2, 3])) == [False, True, False]
    assert disordered_thresholds(np.zeros((2, 1)), np.array([1, 1])) == [False, False]
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(400)
    # a middle category that is rarely the most likely: thresholds +0.8, −0.8 (disordered)
    eta = theta[:, None] - np.array([-0.5, 0.5])[None, :]
    logits = np.stack([np.zeros_like(eta), eta - 0.8, 2 * eta], axis=-1)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    y = (rng.random(eta.shape)[..., None] > np.cumsum(p, -1)).sum(-1)
    ratings = pl.DataFrame({"exchange_id": np.repeat([f"e{i:03d}" for i in range(400)], 2), "rater": "r",
                            "criterion": np.tile(["a", "b"], 400), "score": y.ravel() / 2})  # fmt: skip
    f = fitted(ratings)
    lines = scale_warnings(f.est, f.obs)
    assert sum("disordered thresholds" in line for line in lines) == 2


def test_report_on_the_planted_simulation():
    """End to end: exactly r4 underfit, exactly (r2, c5) flagged, only c3 CC and Rasch C; one line per table."""
    ratings, groups = planted(1)
    result = fit_mfrm(ratings)
    prep = prepare_like_fit(ratings, result)
    options = MeasurementOptions(fit=True, separation=True, bias=True, dif=True, dif_groups=groups, dif_col="tutor", pv=True, pv_draws=3)
    rep = measurement_report(result, prep, options)
    assert list(rep.tables) == ["fit", "separation", "bias", "dif", "pv"]
    fit = rep.tables["fit"].filter(pl.col("facet").is_in(["criterion", "rater", "group"]))
    assert fit.filter(pl.col("flag") != "")[["level", "flag"]].rows() == [("r4", "underfit")]
    assert rep.tables["fit"].filter(pl.col("facet") == "group")["level"].to_list() == ["human", "llm"]
    bias = rep.tables["bias"]
    assert set(bias["pair"]) == {"rater:criterion", "criterion:group"}
    assert bias.filter((pl.col("pair") == "rater:criterion") & (pl.col("flag") == "bias"))[["level_a", "level_b"]].rows() == [("r2", "c5")]
    dif = rep.tables["dif"]
    assert dif.filter(pl.col("ets_class") == "CC")["criterion"].to_list() == ["c3"]
    assert dif.filter(pl.col("rasch_class") == "C")["criterion"].to_list() == ["c3"]
    assert [line.split(":")[0] for line in rep.lines] == ["fit", "separation", "bias", "dif", "pv"]
    assert rep.lines[0].startswith("fit: 6 criteria, 4 raters, 2 groups, 500 exchanges (0 extreme, not fitted); ")
    assert rep.tables["pv"].columns == ["exchange_id", "pv_1", "pv_2", "pv_3"] and rep.warnings == []


def test_report_on_data_without_planted_effects():
    """Without them: no rater or criterion misfits, no bias flag, no C/CC, no more than the nominal rate."""
    ratings, groups = planted(5, random_rater=False, severe=0.0, dif=0.0)
    result = fit_mfrm(ratings)
    rep = measurement_report(result, prepare_like_fit(ratings, result),
                             MeasurementOptions(fit=True, bias=True, dif=True, dif_groups=groups, dif_col="tutor"))  # fmt: skip
    fit = rep.tables["fit"]
    assert fit.filter(pl.col("facet").is_in(["criterion", "rater", "group"]) & (pl.col("flag") != "")).height == 0
    assert fit.filter((pl.col("facet") == "exchange") & (pl.col("flag") != "")).height <= 0.10 * 500
    assert rep.tables["bias"].filter(pl.col("flag") == "bias").height == 0
    assert set(rep.tables["dif"]["ets_class"]) <= {"AA", "BB"} and set(rep.tables["dif"]["rasch_class"]) <= {"A", "B"}


def test_option_errors(bundled):
    result, prep = bundled.result, bundled.prep
    groups = pl.DataFrame({"exchange_id": bundled.est.ids, "tutor": ["h" if "human" in i else "m" for i in bundled.est.ids]})
    cases = [
        (MeasurementOptions(dif=True), "--dif needs --dif-groups"),
        (MeasurementOptions(dif=True, dif_groups=groups, dif_col="tutor", model_group_col="tutor"), "model's --group-col"),
        (MeasurementOptions(pv=True, pv_draws=1), "at least 2 draws"),
        (MeasurementOptions(fit=True, fit_range=(1.2, 1.5)), "0 < lo < 1 < hi"),
        (MeasurementOptions(adjust="fdr"), "--adjust"),
        (MeasurementOptions(bias=True, bias_facets=["criterion:group"]), "needs --dif-groups"),
        (MeasurementOptions(bias=True, exchangeable=True), "exchangeable"),
    ]
    for options, message in cases:
        with pytest.raises(ConfigError, match=message):
            measurement_report(result, prep, options)
    one = fitted(bundled.ratings.filter(pl.col("rater") == "r1"))
    with pytest.raises(ConfigError, match="a rater × criterion interaction needs two"):
        measurement_report(one.result, one.prep, MeasurementOptions(bias=True, bias_facets=["rater:criterion"]))
    # one rater and no groups: no default pair, an empty bias table
    rep = measurement_report(one.result, one.prep, MeasurementOptions(bias=True))
    assert rep.tables["bias"].height == 0 and rep.lines == ["bias: no pairs"]
