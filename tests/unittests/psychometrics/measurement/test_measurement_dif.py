"""DIF (docs/measurement.md#dif): Mantel–Haenszel against statsmodels' StratifiedTable, Mantel's ordinal test against
R vcdExtra's CMHtest, the worked examples, the planted simulations, groups and errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from measurement_fixtures import fitted, planted, planted_binary
from statsmodels.stats.contingency_tables import StratifiedTable

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.measurement.bias import DifGroups
from tutormetrics.psychometrics.measurement.dif import (
    DIF_COLUMNS,
    DifRule,
    dif_groups,
    dif_line,
    dif_table,
    reference_level,
)
from tutormetrics.psychometrics.measurement.mantel import (
    ets_class,
    ets_ordinal_class,
    mantel_haenszel,
    ordinal_mantel,
    rasch_class,
)

R_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "r"


def _stratified(a, b, c, d) -> StratifiedTable:
    return StratifiedTable(np.stack([np.stack([a, b]), np.stack([c, d])]).astype(float))


def test_mh_worked_example_and_statsmodels():
    a, b, c, d = np.array([20, 30, 25]), np.array([10, 10, 5]), np.array([8, 15, 14]), np.array([12, 10, 6])
    mh = mantel_haenszel(a, b, c, d)
    assert mh.alpha == pytest.approx(2.33913, abs=5e-6) and mh.log_alpha_se == pytest.approx(0.3478374, abs=5e-8)
    assert mh.delta == pytest.approx(-1.996981, abs=5e-7) and mh.delta_se == pytest.approx(0.8174179, abs=5e-8)
    assert mh.chi2 == pytest.approx(5.169029, abs=5e-7) and mh.p == pytest.approx(0.02299306, abs=5e-9)
    assert ets_class(mh.delta, mh.delta_se, mh.p) == "B"  # |Δ| > 1.5 but not significantly beyond 1 (p_C 0.111)
    ref = _stratified(a, b, c, d)
    assert mh.alpha == pytest.approx(ref.oddsratio_pooled, abs=1e-10)
    assert mh.log_alpha_se == pytest.approx(ref.logodds_pooled_se, abs=1e-10)
    assert mh.chi2 == pytest.approx(ref.test_null_odds(correction=True).statistic, abs=1e-10)


@pytest.mark.parametrize("seed", range(8))
def test_mh_random_strata_against_statsmodels(seed):
    """α, SE(ln α) and χ² equal StratifiedTable to 1e-10 (statsmodels subtracts ½ always; R and we only when
    |ΣA − ΣE(A)| ≥ ½, the one convention that differs)."""
    rng = np.random.default_rng(seed)
    a, b, c, d = (rng.integers(1, 30, size=rng.integers(2, 9)) for _ in range(4))
    b, c, d = (v[: a.size] if v.size >= a.size else np.resize(v, a.size) for v in (b, c, d))
    mh, ref = mantel_haenszel(a, b, c, d), _stratified(a, b, c, d)
    assert mh.alpha == pytest.approx(ref.oddsratio_pooled, abs=1e-10)
    assert mh.log_alpha_se == pytest.approx(ref.logodds_pooled_se, abs=1e-10)
    e_a = ((a + b) * (a + c) / (a + b + c + d)).sum()
    corrected = abs(a.sum() - e_a) >= 0.5
    assert mh.chi2 == pytest.approx(ref.test_null_odds(correction=corrected).statistic, abs=1e-10)


def test_ordinal_worked_example_and_the_binary_case():
    ref, foc = np.array([[10, 8, 2], [4, 10, 12]]), np.array([[9, 4, 1], [6, 7, 5]])
    m = ordinal_mantel(ref, foc, np.arange(3.0))
    assert m.chi2 == pytest.approx(2.77899, abs=5e-6) and m.p == pytest.approx(0.0955084, abs=5e-8)
    assert m.smd == pytest.approx(-0.2793269, abs=5e-8) and m.sd == pytest.approx(0.7892256, abs=5e-8)
    assert m.smd / m.sd == pytest.approx(-0.3539253, abs=5e-8) and ets_ordinal_class(m.smd, m.sd, m.p) == "AA"
    # two score values: Mantel's χ² is the uncorrected χ²_MH
    rng = np.random.default_rng(5)
    a, b, c, d = (rng.integers(2, 25, size=5) for _ in range(4))
    om = ordinal_mantel(np.c_[b, a], np.c_[d, c], np.array([0.0, 1.0]))
    assert om.chi2 == pytest.approx(_stratified(a, b, c, d).test_null_odds(correction=False).statistic, abs=1e-10)


def test_ordinal_against_vcdextra():
    """6 random 2 × J × K tables: Mantel's χ² equals vcdExtra::CMHtest ("rmeans", overall) to 1e-10."""
    tables = pl.read_csv(R_DIR / "mantel_cmh_tables.csv")
    expected = pl.read_csv(R_DIR / "mantel_cmh.csv")
    for row in expected.iter_rows(named=True):
        t = tables.filter(pl.col("table") == row["table"])
        n_strata, n_score = t["stratum"].max(), t["score"].max() + 1

        def counts(group: str, t=t, n_strata=n_strata, n_score=n_score) -> np.ndarray:
            g = t.filter(pl.col("group") == group).sort("stratum", "score")
            return g["count"].to_numpy().reshape(n_strata, n_score)

        m = ordinal_mantel(counts("reference"), counts("focal"), np.arange(n_score, dtype=float))
        assert m.chi2 == pytest.approx(row["chisq"], abs=1e-10)


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
def test_vcdextra_fixture_reproduces(tmp_path):
    if subprocess.run(["Rscript", "-e", "library(vcdExtra)"], capture_output=True, check=False).returncode:
        pytest.skip("R package vcdExtra is not installed")
    subprocess.run(["Rscript", str(R_DIR / "mantel_cmh.R"), str(tmp_path)], check=True, capture_output=True)
    for name in ("mantel_cmh.csv", "mantel_cmh_tables.csv"):
        new, old = pl.read_csv(tmp_path / name), pl.read_csv(R_DIR / name)
        assert new.shape == old.shape
        for col in new.columns:
            if new[col].dtype.is_numeric():
                np.testing.assert_allclose(new[col].to_numpy(), old[col].to_numpy(), rtol=1e-12)


def test_classes():
    assert ets_class(-0.9, 0.1, 0.001) == "A" and ets_class(-2.0, 0.3, 0.2) == "A"
    assert ets_class(-2.0, 0.2, 1e-6) == "C" and ets_class(1.2, 0.2, 1e-6) == "B"
    assert rasch_class(0.40, 0.05, 1e-6) == "A" and rasch_class(0.70, 0.05, 1e-9) == "C"
    assert rasch_class(0.50, 0.05, 1e-6) == "B"
    assert ets_ordinal_class(0.3, 1.0, 0.01) == "CC" and ets_ordinal_class(0.2, 1.0, 0.01) == "BB"
    assert ets_ordinal_class(0.3, 1.0, 0.2) == "AA"


def _table(ratings: pl.DataFrame, groups: pl.DataFrame, **rule):
    f = fitted(ratings)
    return dif_table(f.est, f.obs, f.prep, dif_groups(groups, "tutor", f.est.ids), DifRule(**rule))


@pytest.mark.parametrize("seed", [1, 2])
def test_planted_ordinal(seed):
    """500 × 6 × 4 on 0–4, c3 2 logits harder for humans (40%): only c3 CC and Rasch C, after purification."""
    table = _table(*planted(seed))
    assert table.columns == DIF_COLUMNS and table["criterion"].to_list() == [f"c{j}" for j in range(1, 7)]
    assert (table["method"] == "mantel").all() and table["alpha_mh"].is_nan().all()
    flagged = table.filter(pl.col("ets_class") == "CC")["criterion"].to_list()
    assert flagged == ["c3"] and table.filter(pl.col("criterion") == "c3")["favours"][0] == "reference"
    assert table.filter(pl.col("rasch_class") == "C")["criterion"].to_list() == ["c3"]
    others = table.filter(pl.col("criterion") != "c3")
    assert (others["matching_out"] == "c3").all() and (others["rasch_matching_out"] == "c3").all()
    assert (table["reason"] == "").all() and (table["reference"] == "llm").all() and (table["n_focal"] == 200).all()


@pytest.mark.parametrize("seed", [1, 2])
def test_planted_binary(seed):
    """The one-rater binary companion (1,200 × 8, c3 1.5 logits harder for humans): only c3 ETS C and Rasch C."""
    table = _table(*planted_binary(seed))
    assert (table["method"] == "mh").all()
    assert table.filter(pl.col("ets_class") == "C")["criterion"].to_list() == ["c3"]
    assert table.filter(pl.col("rasch_class") == "C")["criterion"].to_list() == ["c3"]
    assert table.filter(pl.col("criterion") == "c3")["delta_mh"][0] < -1.5
    assert dif_line(table, "tutor").startswith("dif: tutor human vs llm (reference): 8 criteria, ETS A 7 C 1, Rasch")


def test_no_dif_and_impact():
    """Without DIF but with the focal group 1 logit more able: nothing beyond A/AA (the group means at work)."""
    table = _table(*planted_binary(3, dif=0.0, impact=1.0))
    assert set(table["ets_class"]) == {"A"} and set(table["rasch_class"]) == {"A"}
    assert abs(table["prior_mean_focal"][0] - table["prior_mean_reference"][0] - 1.0) < 0.3
    table = _table(*planted(4, random_rater=False, severe=0.0, dif=0.0))
    assert set(table["ets_class"]) == {"AA"} and set(table["rasch_class"]) == {"A"}


def test_too_few_and_reference(bundled):
    ids = bundled.est.ids.to_list()
    groups = pl.DataFrame({"exchange_id": ids, "tutor": ["human" if "human" in i else "llm" for i in ids]})
    g = dif_groups(groups, "tutor", bundled.est.ids)
    assert g.levels == ["human", "llm"] and reference_level(g, None) == 1 and reference_level(g, "human") == 0
    table = dif_table(bundled.est, bundled.obs, bundled.prep, g)
    assert (table["reason"] == "too_few").all() and table["p"].is_nan().all() and (table["n_focal"] == 10).all()
    table = dif_table(bundled.est, bundled.obs, bundled.prep, g, DifRule(min_n=5, reference="human"))
    assert (table["focal"] == "llm").all() and (table["method"] == "mantel").all()  # two raters: 0..2 scores


def test_group_errors(bundled):
    ids = bundled.est.ids
    with pytest.raises(ConfigError, match="has one level \\('x'\\)"):
        dif_groups(pl.DataFrame({"exchange_id": ids, "tutor": ["x"] * ids.len()}), "tutor", ids)
    with pytest.raises(InputSchemaError, match="duplicated"):
        dif_groups(pl.DataFrame({"exchange_id": [ids[0], ids[0]], "tutor": ["a", "b"]}), "tutor", ids)
    with pytest.raises(InputSchemaError, match="no value"):
        dif_groups(pl.DataFrame({"exchange_id": ids[:5], "tutor": ["a", "b", "a", "b", "a"]}), "tutor", ids)
    g = DifGroups("tutor", ["a", "b"], np.arange(ids.len()) % 2)
    with pytest.raises(ConfigError, match="not a level"):
        reference_level(g, "c")
