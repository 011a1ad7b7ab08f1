"""Fit statistics (docs/measurement.md#fit): the worked examples, eRm's itemfit/personfit given the same estimates,
the bundled example, the extreme rule and the flag rule."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.estimates import estimates_from_tables
from tutormetrics.psychometrics.measurement.fit import (
    FitRange,
    fit_flags,
    fit_line,
    fit_sums,
    fit_table,
    mean_squares,
    parse_fit_range,
)
from tutormetrics.psychometrics.measurement.observations import category_moments, observations
from tutormetrics.psychometrics.mfrm.design import prepare_ratings

R_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "r"


def test_binary_worked_example():
    x = np.array([1.0, 0, 1, 1, 0, 1])
    p = np.array([0.8, 0.3, 0.6, 0.9, 0.5, 0.2])
    sums = fit_sums(x, p)
    infit, infit_z, outfit, outfit_z = (float(v[0]) for v in mean_squares(*sums))
    assert infit == pytest.approx(1.07207, abs=5e-6) and infit_z == pytest.approx(0.307722, abs=5e-7)
    assert outfit == pytest.approx(1.07606, abs=5e-6) and outfit_z == pytest.approx(0.322465, abs=5e-7)
    # q from the sums: 0.418701 (infit), 0.59019 (outfit)
    n, _z2, cw2, _r2, w, cmw = (float(v[0]) for v in sums)
    assert np.sqrt(cmw / w**2) == pytest.approx(0.418701, abs=5e-7)
    assert np.sqrt(cw2 / n**2 - 1 / n) == pytest.approx(0.59019, abs=5e-6)


def test_partial_credit_worked_example():
    eta, tau = np.array([-0.5, 0.3, 1.2]), np.array([[-0.4, 0.4]])
    e, w, c = category_moments(eta, np.zeros(3, dtype=int), tau, np.array([2]))
    np.testing.assert_allclose(e, [0.721866, 1.17, 1.59042], atol=5e-6)
    np.testing.assert_allclose(w, [0.524511, 0.554679, 0.359635], atol=5e-7)
    np.testing.assert_allclose(c, [0.553841, 0.566666, 0.430616], atol=5e-7)
    infit, infit_z, outfit, outfit_z = (float(v[0]) for v in mean_squares(*fit_sums(np.array([2.0, 0, 1]), e, w, c)))
    assert (infit, infit_z) == (pytest.approx(2.32908, abs=5e-6), pytest.approx(1.74632, abs=5e-6))
    assert (outfit, outfit_z) == (pytest.approx(2.18394, abs=5e-6), pytest.approx(1.53586, abs=5e-6))


def test_moments_against_direct_sums():
    """E, W, C of the partial-credit model equal the sums over the category probabilities written out."""
    rng = np.random.default_rng(3)
    eta, tau = rng.normal(size=50), np.array([-1.0, 0.2, 0.8])
    logits = np.concatenate([np.zeros((50, 1)), np.cumsum(eta[:, None] - tau[None, :], axis=1)], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    k = np.arange(4.0)
    e_ref = p @ k
    w_ref = ((k - e_ref[:, None]) ** 2 * p).sum(1)
    c_ref = ((k - e_ref[:, None]) ** 4 * p).sum(1)
    e, w, c = category_moments(eta, np.zeros(50, dtype=int), tau[None, :], np.array([3]))
    np.testing.assert_allclose(np.c_[e, w, c], np.c_[e_ref, w_ref, c_ref], rtol=1e-12)


def test_zstd_undefined_for_one_binary_rating_at_one_half():
    sums = fit_sums(np.array([1.0]), np.array([0.5]))
    _infit, infit_z, _outfit, outfit_z = mean_squares(*sums)
    assert np.isnan(infit_z[0]) and np.isnan(outfit_z[0])


def test_flag_rule_needs_both_mnsq_and_zstd():
    rule = FitRange()
    infit = np.array([1.6, 1.6, 0.4, 0.4, 1.0, 1.6])
    z = np.array([2.5, 1.0, -2.5, -1.0, 5.0, 2.0])
    out = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.4])
    out_z = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -3.0])
    assert fit_flags(infit, z, out, out_z, rule) == ["underfit", "", "overfit", "", "", "underfit"]


def test_fit_range_parsing_and_errors():
    assert parse_fit_range("0.7,1.3") == FitRange(0.7, 1.3, 2.0)
    for bad in ("1.5,0.5", "0.5", "a,b", "0,1.5", "0.5,1"):
        with pytest.raises(ConfigError):
            parse_fit_range(bad)


def test_bundled_example(bundled):
    """docs/measurement.md#fit-numbers: 11 extreme exchanges, guidance_accuracy overfit, the two raters."""
    table = fit_table(bundled.est, bundled.obs)
    assert table.columns == ["facet", "level", "n", "infit", "infit_zstd", "outfit", "outfit_zstd", "flag", "reason"]
    row = table.filter(pl.col("level") == "guidance_accuracy").row(0, named=True)
    assert round(row["infit"], 3) == 0.601 and round(row["infit_zstd"], 3) == -2.133
    assert round(row["outfit"], 3) == 0.493 and round(row["outfit_zstd"], 3) == -2.196
    assert row["flag"] == "overfit"
    raters = table.filter(pl.col("facet") == "rater")
    assert [round(v, 3) for v in raters["infit"]] == [0.744, 0.777]
    assert [round(v, 3) for v in raters["outfit"]] == [0.575, 0.576]
    exchanges = table.filter(pl.col("facet") == "exchange")
    assert exchanges.height == 40 and exchanges["level"].to_list() == bundled.est.ids.to_list()
    extreme = exchanges.filter(pl.col("reason") == "extreme")
    assert extreme.height == 11 and extreme["infit"].is_nan().all()
    assert (extreme["n"] == 10).all()  # their observation count
    assert fit_line(table).startswith("fit: 5 criteria, 2 raters, 40 exchanges (11 extreme, not fitted); 0 elements underfit")


def test_group_rows_cover_their_exchanges(bundled):
    ids = bundled.est.ids.to_list()
    code = np.array([0 if "gpt" in i else 1 for i in ids])
    table = fit_table(bundled.est, bundled.obs, groups=(["gpt", "other"], code))
    groups = table.filter(pl.col("facet") == "group")
    assert groups["level"].to_list() == ["gpt", "other"]
    used = table.filter((pl.col("facet") == "exchange") & (pl.col("reason") == ""))
    assert int(groups["n"].sum()) == int(used["n"].sum())


# ---------------------------------------------------------------------------------------------- eRm


def _erm_inputs(model: str):
    ratings = pl.read_csv(R_DIR / f"erm_{model}_ratings.csv")
    est = pl.read_csv(R_DIR / f"erm_{model}_estimates.csv")
    prep = prepare_ratings(ratings, model="binary" if model == "rm" else "partial_credit")
    person = dict(est.filter(pl.col("facet") == "exchange").select("level", "estimate").iter_rows())
    theta = pl.DataFrame(
        {"exchange_id": prep.ids, "theta": [person.get(i, 0.0) for i in prep.ids], "theta_sd": [1.0] * prep.ids.len()}
    )
    thr = est.filter(pl.col("facet") == "threshold").with_columns(
        pl.col("level").str.split(":").list.get(0).alias("item")
    )
    rows: list[tuple[str, str, float, float]] = []
    for item, block in thr.group_by("item", maintain_order=True):
        delta = block["estimate"].to_numpy()
        b = float(delta.mean())
        rows.append(("criterion", str(item[0]), b, float("nan")))
        if delta.size > 1:
            rows += [("threshold", f"{item[0]}:{h + 1}", float(d - b), float("nan")) for h, d in enumerate(delta)]
    facets = pl.DataFrame(rows, schema=["facet", "level", "estimate", "se"], orient="row")
    return prep, estimates_from_tables(theta, facets, prep)


@pytest.mark.parametrize("model", ["rm", "pcm"])
def test_erm_itemfit_and_personfit(model):
    """Given eRm's CML item and ML person estimates, the fit table equals eRm's itemfit/personfit to 1e-6 and
    leaves out the same extreme persons (pers.ex)."""
    prep, est = _erm_inputs(model)
    ours = fit_table(est, observations(est, prep))
    ref = pl.read_csv(R_DIR / f"erm_{model}_fit.csv")
    joined = ref.join(ours, on=["facet", "level"], suffix="_ours", how="left")
    assert joined["n_ours"].null_count() == 0
    fitted = joined.filter(pl.col("excluded") == 0)
    assert (fitted["reason"] == "").all()
    for col in ("infit", "infit_zstd", "outfit", "outfit_zstd"):
        np.testing.assert_allclose(fitted[f"{col}_ours"].to_numpy(), fitted[col].to_numpy(), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(fitted["n_ours"].to_numpy(), fitted["n"].to_numpy())
    excluded = joined.filter(pl.col("excluded") == 1)
    assert excluded.height > 0 and (excluded["reason"] == "extreme").all()
    ours_extreme = ours.filter((pl.col("facet") == "exchange") & (pl.col("reason") == "extreme"))
    assert sorted(ours_extreme["level"]) == sorted(excluded["level"])


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
def test_erm_fixture_reproduces(tmp_path):
    """Rerunning tests/fixtures/r/erm_fit.R (R 4.2, eRm 1.0.2) gives the stored fixtures."""
    check = subprocess.run(["Rscript", "-e", "library(eRm)"], capture_output=True, text=True, check=False)
    if check.returncode:
        pytest.skip("R package eRm is not installed")
    subprocess.run(["Rscript", str(R_DIR / "erm_fit.R"), str(tmp_path)], check=True, capture_output=True)
    for model in ("rm", "pcm"):
        for part in ("ratings", "estimates", "fit"):
            new = pl.read_csv(tmp_path / f"erm_{model}_{part}.csv")
            old = pl.read_csv(R_DIR / f"erm_{model}_{part}.csv")
            assert new.columns == old.columns and new.height == old.height
            for col in new.columns:
                if new[col].dtype.is_numeric():
                    np.testing.assert_allclose(new[col].to_numpy(), old[col].to_numpy(), rtol=1e-12, equal_nan=True)
                else:
                    assert new[col].to_list() == old[col].to_list()
