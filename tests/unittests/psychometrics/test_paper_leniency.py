"""Leniency on a declared scale, Bowker's df and the pooled row (``docs/guide/paper.md#scale``), on paper.md
§3–§5's seed 002 calibration set (human, phi4, sonnet4 on 51 replies; 8 of 11 criteria per reply, 0–2).

The expected numbers are recomputed here with pandas, statsmodels' ``SquareTable.symmetry`` and scipy, and
compared with the spec's [ref] values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import SquareTable

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.leniency import POOLED, pooled_leniency
from tutormetrics.psychometrics.level_scale import LevelScale, parse_level_options


@pytest.fixture(scope="module")
def calibration(paper_data: Path) -> pl.DataFrame:
    return pl.read_csv(paper_data / "s002" / "calibration.csv")


@pytest.fixture(scope="module")
def inferred(calibration):
    return judge_table(calibration, ["phi4", "sonnet4"], n_resamples=200)


@pytest.fixture(scope="module")
def declared(calibration):
    return judge_table(calibration, ["phi4", "sonnet4"], n_resamples=200, levels=parse_level_options(["0,1,2"]))


def _wide(calibration: pl.DataFrame) -> pd.DataFrame:
    return calibration.to_pandas().pivot_table(index=["exchange_id", "criterion"], columns="rater", values="score").reset_index()


def _row(result, judge: str, criterion: str, reference: str = "human") -> dict:
    t = result.table.filter(pl.col("judge") == judge, pl.col("criterion") == criterion, pl.col("reference") == reference)
    assert t.height == 1
    return t.row(0, named=True)


# paper.md §3 [ref]: criterion, declared?, pct_max_ref, pct_max_judge (phi4 against the human)
PCT = [
    ("vocabulary", False, 82.352941, 92.156863),
    ("vocabulary", True, 91.176471, 96.078431),
    ("concept_clarity", False, 33.333333, 100.0),
    ("concept_clarity", True, 66.666667, 100.0),
]


@pytest.mark.parametrize(("criterion", "is_declared", "ref", "judge"), PCT)
def test_pct_of_max_on_the_declared_and_the_inferred_scale(calibration, inferred, declared, criterion, is_declared, ref, judge):
    w = _wide(calibration)
    w = w[w["criterion"] == criterion].dropna(subset=["human", "phi4"])
    lo, hi = (0.0, 2.0) if is_declared else (min(w["human"].min(), w["phi4"].min(), w["sonnet4"].min()), 2.0)
    oracle = (100 * (w["human"].mean() - lo) / (hi - lo), 100 * (w["phi4"].mean() - lo) / (hi - lo))
    assert oracle == pytest.approx((ref, judge), abs=1e-6)
    row = _row(declared if is_declared else inferred, "phi4", criterion)
    assert (row["pct_max_ref"], row["pct_max_judge"]) == pytest.approx((ref, judge), abs=1e-6)
    assert ("scale_inferred" in row["reason"]) is not is_declared


def test_inferred_scale_note_and_reason(inferred, declared) -> None:
    assert inferred.scale_note == (
        "agree: leniency scale inferred from the data (no --levels): vocabulary 1..2, concept_clarity 1..2; "
        "0..2 for the other 9 criteria"
    )
    assert inferred.table["reason"].str.contains("scale_inferred").all()
    assert declared.scale_note == "" and not declared.table["reason"].str.contains("scale_inferred").any()


def test_bowker_df_counts_the_declared_table(calibration, inferred, declared) -> None:
    """paper.md §4: vocabulary's table [[0,0,0],[0,4,5],[0,0,42]], χ² = 5: df 1, p 0.025347 inferred; df 3, p 0.171797
    declared; concept_clarity χ² = 4: p 0.045500 → 0.261464. statsmodels counts k(k − 1)/2 for the table it is given."""
    w = _wide(calibration)
    for criterion, chi2, p_inferred, p_declared in (("vocabulary", 5, 0.025347, 0.171797), ("concept_clarity", 4, 0.045500, 0.261464)):
        sub = w[w["criterion"] == criterion].dropna(subset=["human", "phi4"])
        full = pd.crosstab(pd.Categorical(sub["human"], [0, 1, 2]), pd.Categorical(sub["phi4"], [0, 1, 2]), dropna=False).to_numpy()
        seen = sorted(set(calibration.filter(pl.col("criterion") == criterion)["score"].to_list()))
        small = pd.crosstab(pd.Categorical(sub["human"], seen), pd.Categorical(sub["phi4"], seen), dropna=False).to_numpy()
        if criterion == "vocabulary":
            assert full.tolist() == [[0, 0, 0], [0, 4, 5], [0, 0, 42]]
        for table, result, p, df in ((small, inferred, p_inferred, 1), (full, declared, p_declared, 3)):
            sym = SquareTable(table, shift_zeros=False).symmetry()
            assert (sym.statistic, sym.df, sym.pvalue) == pytest.approx((chi2, df, p), abs=5e-7)
            row = _row(result, "phi4", criterion)
            assert (row["bowker_chi2"], row["bowker_df"], row["bowker_p"]) == pytest.approx((sym.statistic, sym.df, sym.pvalue), abs=1e-12)
    # --confusion: every declared level is a row and a column, the empty ones included
    conf = declared.confusion.filter(pl.col("judge") == "phi4", pl.col("criterion") == "vocabulary", pl.col("reference") == "human")
    assert conf.height == 9 and conf.sort("reference_score", "judge_score")["count"].to_list() == [0, 0, 0, 0, 4, 5, 0, 0, 42]
    assert inferred.confusion.filter(pl.col("judge") == "phi4", pl.col("criterion") == "vocabulary", pl.col("reference") == "human").height == 4


# paper.md §5 [ref]: pct_max_judge, pct_max_ref, mean_diff, over, under, accuracy, units over, units under, sign_p
POOLED_REF = {
    "phi4": (89.460784, 77.818627, 0.232843, 0.232843, 0.0, 0.767157, 42, 0, 4.547474e-13),
    "sonnet4": (75.980392, 77.818627, -0.036765, 0.026961, 0.063725, 0.909314, 8, 17, 0.107752),
}


@pytest.mark.parametrize("judge", ["phi4", "sonnet4"])
def test_pooled_row_against_pandas_and_scipy(calibration, declared, judge: str) -> None:
    w = _wide(calibration).dropna(subset=["human", judge])
    assert len(w) == 408 and w["exchange_id"].nunique() == 51
    d = w[judge] - w["human"]
    per_unit = d.groupby(w["exchange_id"]).sum()
    n_over, n_under = int((per_unit > 0).sum()), int((per_unit < 0).sum())
    oracle = (100 * w[judge].sum() / (2 * len(w)), 100 * w["human"].sum() / (2 * len(w)), d.mean(), (d > 0).mean(),
              (d < 0).mean(), (d == 0).mean(), n_over, n_under, stats.binomtest(n_over, n_over + n_under).pvalue)  # fmt: skip
    want = POOLED_REF[judge]
    assert oracle[:6] == pytest.approx(want[:6], abs=1e-6) and oracle[6:8] == want[6:8]
    assert oracle[8] == pytest.approx(want[8], rel=1e-6, abs=1e-6)  # the spec prints six significant digits
    row = _row(declared, judge, POOLED)
    got = (row["pct_max_judge"], row["pct_max_ref"], row["mean_diff"], row["over_rate"], row["under_rate"], row["accuracy"])
    assert got == pytest.approx(oracle[:6], abs=1e-12)
    assert row["sign_p"] == pytest.approx(oracle[8], rel=1e-9) and row["n"] == 408
    assert row["reason"] == "pooled"
    for col in ("cohen_kappa", "krippendorff_alpha", "gwet_ac1", "macro_f1", "bowker_chi2", "stuart_maxwell_p", "kappa_ci_low"):
        assert np.isnan(row[col]), col
    # the CI resamples units with all their pairs: scipy's paired bootstrap of Σd/Σn over units
    units = w.groupby("exchange_id")
    sums, counts = units.apply(lambda g: (g[judge] - g["human"]).sum()).to_numpy(), units.size().to_numpy().astype(float)
    ref = stats.bootstrap((sums, counts), lambda s, c, axis=-1: s.sum(axis) / c.sum(axis), paired=True, vectorized=True,
                          method="percentile", n_resamples=200, rng=np.random.default_rng(0))  # fmt: skip
    ci = ref.confidence_interval
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_pooled_rows_follow_each_judge(declared, inferred) -> None:
    t = declared.table
    crit = t["criterion"].to_list()
    assert crit.index(POOLED) == 22 and t.height == 2 * (22 + 2)  # 11 criteria × (human, majority), then (all) × 2
    assert t.row(22, named=True)["judge"] == "phi4" and t.row(46, named=True)["judge"] == "sonnet4"
    # the inferred scale gives other pooled percentages: the trap of §3
    row = _row(inferred, "phi4", POOLED)
    assert (round(row["pct_max_judge"], 3), round(row["pct_max_ref"], 3)) == (88.669, 76.153)
    assert row["reason"] == "pooled;scale_inferred"


def test_pooled_leniency_small_case() -> None:
    r = pooled_leniency(np.array(["a", "a", "b", "c"]), np.array([0.0, 1, 1, 2]), np.array([1.0, 1, 0, 2]),
                        np.zeros(4), np.array([2.0, 2, 1, 3]), n_resamples=0)  # fmt: skip
    assert r["n"] == 4 and r["mean_diff"] == 0 and r["pct_max_judge"] == pytest.approx(100 * 4 / 8)
    assert r["sign_p"] == 1.0 and np.isnan(r["diff_ci_low"])  # units a (+1), b (−1): one each way


def test_level_options() -> None:
    s = parse_level_options(["0,1,2", "vocabulary=1,2,3"])
    assert s == LevelScale((0.0, 1.0, 2.0), {"vocabulary": (1.0, 2.0, 3.0)})
    assert parse_level_options(None) is None and parse_level_options("0,1").default == (0.0, 1.0)
    for bad, match in ((["a=0,1", "a=0,2"], "twice"), (["0,1", "0,1,2"], "twice"), (["=0,1"], "no criterion"), (["a=0"], "two values")):
        with pytest.raises(ConfigError, match=match):
            parse_level_options(bad)


def test_level_option_errors(calibration) -> None:
    with pytest.raises(ConfigError, match="not in the ratings"):
        judge_table(calibration, "phi4", n_resamples=0, levels=parse_level_options(["vocab=0,1,2"]))
    with pytest.raises(InputSchemaError, match="off its declared scale"):
        judge_table(calibration, "phi4", n_resamples=0, levels=parse_level_options(["vocabulary=0,1"]))
    with pytest.raises(InputSchemaError, match=r"named '\(all\)'"):
        judge_table(calibration.with_columns(pl.col("criterion").replace("tone", POOLED)), "phi4", n_resamples=0)
    # one criterion declared: only the others are inferred
    one = judge_table(calibration, "phi4", n_resamples=0, levels=parse_level_options(["vocabulary=0,1,2"]))
    assert one.scale_note.endswith(": concept_clarity 1..2; 0..2 for the other 9 criteria")
    assert _row(one, "phi4", "vocabulary")["pct_max_ref"] == pytest.approx(91.176471, abs=1e-6)
