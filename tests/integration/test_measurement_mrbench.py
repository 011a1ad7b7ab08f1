"""The measurement report on MRBench (one gold rater; docs/measurement.md#mrbench): fit, separation and DIF by
tutor type (human vs LLM), each checked against a re-implementation from THETA/FACETS and the raw ratings;
``revealing_of_the_answer`` is named as running against the other criteria. Skips without ../shared."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from tutormetrics.psychometrics.measurement.measurement_report import (
    MeasurementOptions,
    measurement_report,
    prepare_like_fit,
)
from tutormetrics.psychometrics.mfrm import fit_mfrm

pytestmark = pytest.mark.mrbench

V3_CRITERIA = ["mistake_identification", "mistake_location", "providing_guidance", "actionability"]


@pytest.fixture(scope="module")
def mrbench(mrbench_dir):
    ratings = pl.read_csv(mrbench_dir / "ratings.csv").select("exchange_id", "rater", "criterion", "score")
    meta = pl.read_csv(mrbench_dir / "exchanges_meta.csv").select("exchange_id", "tutor_is_human")
    return ratings, meta


@pytest.fixture(scope="module")
def four(mrbench):
    ratings, meta = mrbench
    ratings = ratings.filter(pl.col("criterion").is_in(V3_CRITERIA))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit_mfrm(ratings)
    options = MeasurementOptions(fit=True, separation=True, dif=True, bias=True, dif_groups=meta, dif_col="tutor_is_human")
    return ratings, result, measurement_report(result, prepare_like_fit(ratings, result), options)


def _pcm(eta: np.ndarray, tau: np.ndarray) -> np.ndarray:
    logits = np.concatenate([np.zeros((eta.size, 1)), np.cumsum(eta[:, None] - tau[None, :], axis=1)], axis=1)
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def test_fit_against_a_reimplementation(four):
    """Criterion and exchange rows equal the formulas applied per rating to THETA's EAP and FACETS' b, τ (1e-10)."""
    ratings, result, rep = four
    theta = dict(result.theta_table().select("exchange_id", "theta").iter_rows())
    facets = result.facets_table()
    b = dict(facets.filter(pl.col("facet") == "criterion").select("level", "estimate").iter_rows())
    tau = {c: facets.filter(pl.col("level").str.starts_with(f"{c}:") & (pl.col("facet") == "threshold"))["estimate"].to_numpy()
           for c in V3_CRITERIA}  # fmt: skip
    df = ratings.with_columns((pl.col("score") * 2).cast(pl.Int64).alias("x"))
    ext = df.group_by("exchange_id").agg(((pl.col("x") == 0).all() | (pl.col("x") == 2).all()).alias("extreme"))
    df = df.join(ext, on="exchange_id").filter(~pl.col("extreme"))
    rows = {}
    for crit in V3_CRITERIA:
        sub = df.filter(pl.col("criterion") == crit)
        eta = np.array([theta[i] for i in sub["exchange_id"]]) - b[crit]
        p = _pcm(eta, tau[crit])
        k = np.arange(3.0)
        e = p @ k
        w = ((k - e[:, None]) ** 2 * p).sum(1)
        x = sub["x"].to_numpy()
        rows[crit] = (np.sum((x - e) ** 2) / np.sum(w), np.mean((x - e) ** 2 / w))
    table = rep.tables["fit"].filter(pl.col("facet") == "criterion")
    for row in table.iter_rows(named=True):
        assert row["infit"] == pytest.approx(rows[row["level"]][0], abs=1e-10)
        assert row["outfit"] == pytest.approx(rows[row["level"]][1], abs=1e-10)
        assert row["n"] == df.filter(pl.col("criterion") == row["level"]).height
    exchanges = rep.tables["fit"].filter(pl.col("facet") == "exchange")
    assert exchanges.height == 1655 and exchanges.filter(pl.col("reason") == "extreme").height == ext["extreme"].sum()
    groups = rep.tables["fit"].filter(pl.col("facet") == "group")
    assert groups["level"].to_list() == ["0", "1"]


def test_separation(four):
    _ratings, result, rep = four
    crit, rater, exch = rep.tables["separation"].rows(named=True)
    assert crit["n"] == 4 and crit["reliability"] > 0.9 and crit["p_chi2"] < 1e-10
    assert rater["reason"] == "one_element"
    assert exch["reliability"] == pytest.approx(result.reliability, abs=1e-12)
    assert rep.lines[1].startswith("separation: criterion G ") and "rater one element" in rep.lines[1]


def _mantel_reference(ratings: pl.DataFrame, meta: pl.DataFrame, crit: str) -> tuple[float, float]:
    """Mantel's χ² and SMD of one criterion matched on the total over the four, from the raw ratings."""
    wide = ratings.with_columns((pl.col("score") * 2).cast(pl.Int64).alias("x")).pivot("criterion", index="exchange_id", values="x")
    wide = wide.join(meta, on="exchange_id").with_columns(pl.sum_horizontal(V3_CRITERIA).alias("total"))
    chi_num = chi_den = e_tot = f_tot = smd = 0.0
    n_focal = wide.filter(pl.col("tutor_is_human") == 1).join(
        wide.group_by("total").agg(pl.col("tutor_is_human").n_unique().alias("k")).filter(pl.col("k") == 2), on="total").height
    for _total, stratum in wide.group_by("total"):
        ref, foc = stratum.filter(pl.col("tutor_is_human") == 0)[crit], stratum.filter(pl.col("tutor_is_human") == 1)[crit]
        if ref.len() == 0 or foc.len() == 0:
            continue
        y = stratum[crit].to_numpy().astype(float)
        n, n_f, n_r = y.size, foc.len(), ref.len()
        f_tot += float(foc.sum())
        e_tot += n_f / n * y.sum()
        chi_den += n_r * n_f / (n**2 * (n - 1)) * (n * (y**2).sum() - y.sum() ** 2)
        smd += n_f / n_focal * (float(foc.mean()) - float(ref.mean()))
    chi_num = (f_tot - e_tot) ** 2
    return chi_num / chi_den, smd


def test_dif_by_tutor_type(four, mrbench):
    """Human (1) against LLM (0) tutors: actionability BB favouring humans and Rasch B (contrast < 0); the other three
    AA and A; nothing purified. Mantel χ² and SMD equal a re-implementation from the raw ratings."""
    ratings, _result, rep = four
    dif = rep.tables["dif"]
    assert dif["criterion"].to_list() == V3_CRITERIA
    assert (dif["focal"] == "1").all() and (dif["reference"] == "0").all()
    assert dif["n_focal"].to_list() == [255] * 4 and dif["n_reference"].to_list() == [1400] * 4
    assert (dif["method"] == "mantel").all() and (dif["matching_out"] == "").all() and (dif["rasch_matching_out"] == "").all()
    act = dif.filter(pl.col("criterion") == "actionability").row(0, named=True)
    assert (act["ets_class"], act["favours"], act["rasch_class"]) == ("BB", "focal", "B") and act["contrast"] < -0.4
    others = dif.filter(pl.col("criterion") != "actionability")
    assert set(others["ets_class"]) == {"AA"} and set(others["rasch_class"]) == {"A"}
    for row in dif.iter_rows(named=True):
        chi2, smd = _mantel_reference(ratings, mrbench[1], row["criterion"])
        assert row["chi2"] == pytest.approx(chi2, rel=1e-10) and row["smd"] == pytest.approx(smd, abs=1e-12)
    assert rep.lines[3] == "dif: tutor_is_human 1 vs 0 (reference): 4 criteria, ETS AA 3 BB 1, Rasch A 3 B 1"
    bias = rep.tables["bias"]
    assert bias["pair"].unique().to_list() == ["criterion:group"] and bias.height == 8


def test_revealing_of_the_answer_is_named(mrbench):
    ratings, _meta = mrbench
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit_mfrm(ratings)
    rep = measurement_report(result, prepare_like_fit(ratings, result), MeasurementOptions())
    against = [w for w in rep.warnings if "runs against the others" in w]
    assert any("'revealing_of_the_answer'" in w and "--recode" in w for w in against)
    assert any("disordered thresholds" in w for w in rep.warnings)
