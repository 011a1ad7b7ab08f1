"""ICC forms against pingouin (studies.md §6) and label aggregation (§4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import polars as pl
import pytest

from tutormetrics.errors import InputSchemaError
from tutormetrics.stats.aggregate import aggregate_labels
from tutormetrics.stats.icc import icc_forms
from tutormetrics.stats.variability import variability_table

SF = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
SPEC = {  # form: icc, ci_low, ci_high, f, df1, df2, p (studies.md §6 worked example)
    "ICC1": (0.1657418, -0.1329323, 0.7225601, 1.7946785, 5, 18, 0.1647688),
    "ICC2": (0.2897638, 0.0187865, 0.7610844, 11.027248, 5, 15, 0.0001346),
    "ICC3": (0.7148407, 0.3424648, 0.9458583, 11.027248, 5, 15, 0.0001346),
    "ICC1k": (0.4427971, -0.8844422, 0.9124154, 1.7946785, 5, 18, 0.1647688),
    "ICC2k": (0.6200505, 0.0711368, 0.9272320, 11.027248, 5, 15, 0.0001346),
    "ICC3k": (0.9093155, 0.6756747, 0.9858917, 11.027248, 5, 15, 0.0001346),
}


def _pingouin(y: np.ndarray) -> pd.DataFrame:
    n, k = y.shape
    df = pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n), "s": y.ravel()})
    old = pg.options.get("round.column.CI95")
    pg.options["round.column.CI95"] = None  # pingouin rounds CI95 to 2 decimals by default
    try:
        return pg.intraclass_corr(df, "t", "r", "s").set_index("Type")
    finally:
        pg.options["round.column.CI95"] = old


def test_shrout_fleiss_worked_example() -> None:
    rows = {r["form"]: r for r in icc_forms(SF)}
    for form, (icc, lo, hi, f, d1, d2, p) in SPEC.items():
        r = rows[form]
        assert (r["icc"], r["ci_low"], r["ci_high"], r["f"], r["p"]) == pytest.approx((icc, lo, hi, f, p), abs=5e-7)
        assert (r["df1"], r["df2"]) == (d1, d2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_equals_pingouin(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = rng.integers(5, 30), rng.integers(2, 6)
    y = rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.5, (1, k)) + rng.normal(0, 0.7, (n, k))
    ref = _pingouin(y)
    for r in icc_forms(y):
        row = ref.loc[r["mcgraw_wong"]]
        assert r["icc"] == pytest.approx(row["ICC"], abs=1e-9)
        assert r["f"] == pytest.approx(row["F"], abs=1e-9) and r["p"] == pytest.approx(row["pval"], abs=1e-9)
        assert (r["df1"], r["df2"]) == (row["df1"], row["df2"])
        np.testing.assert_allclose([r["ci_low"], r["ci_high"]], row["CI95"], atol=1e-9)


def test_variability_table_groups_incomplete_and_reasons() -> None:
    n, k = SF.shape
    frame = pl.DataFrame({"item": np.repeat(np.arange(n), k), "trial": np.tile(np.arange(1, k + 1), n), "total": SF.ravel()})
    a = frame.with_columns(pl.lit("A").alias("model"))
    b = frame.with_columns(pl.lit("B").alias("model"), pl.lit(3.0).alias("total"))
    c = frame.with_columns(pl.lit("C").alias("model")).filter(~((pl.col("item") == 0) & (pl.col("trial") == 2)))
    t, units = variability_table(pl.concat([b, a, c]), unit_col="item", trial_col="trial", group_col="model", cols=["total"])
    assert t["group"].to_list() == ["A"] * 6 + ["B"] * 6 + ["C"] * 6
    ta = t.filter(pl.col("group") == "A")
    np.testing.assert_allclose(ta["icc"], [v[0] for v in SPEC.values()], atol=5e-8)
    assert ta["sd_within"][0] == pytest.approx(2.5027762, abs=5e-8) and ta["mean_unit_sd"][0] == pytest.approx(2.4631885, abs=5e-8)
    assert set(t.filter(pl.col("group") == "B")["reason"]) == {"constant"}
    tc = t.filter(pl.col("group") == "C")
    assert set(tc["reason"]) == {"dropped_1_incomplete_units"} and set(tc["n_units"]) == {5}
    np.testing.assert_allclose(tc["icc"], [r["icc"] for r in icc_forms(SF[1:])], atol=1e-12)
    ua = units.filter((pl.col("group") == "A") & (pl.col("unit") == "0")).row(0, named=True)
    assert ua["sd"] == pytest.approx(3.1622777, abs=5e-8) and ua["n_trials"] == 4
    assert units.filter((pl.col("group") == "C") & (pl.col("unit") == "0"))["n_trials"][0] == 3
    # consistency without agreement error: ICC(C,1) = 1 with a trial shift, f undefined (zero_error)
    y = np.array([[1.0, 2.0], [3.0, 4.0], [6.0, 7.0]])
    z = {r["form"]: r for r in icc_forms(y)}
    assert z["ICC3"]["icc"] == pytest.approx(1.0) and z["ICC3"]["reason"] == "zero_error" and np.isnan(z["ICC3"]["f"])
    assert z["ICC2"]["icc"] < 1 and z["ICC1"]["reason"] == ""
    assert {r["reason"] for r in icc_forms(SF[:1])} == {"too_few"}
    with pytest.raises(InputSchemaError, match="more than once"):
        variability_table(pl.concat([frame, frame.head(1)]), unit_col="item", trial_col="trial")


def test_aggregate_worked_example() -> None:
    df = pl.DataFrame(
        {
            "question_id": ["q1"] * 8,
            "level": ["female"] * 4 + ["male"] * 4,
            "turn": list(range(8)),
            "step_scaffolded": [1, 0, 1, -1, 0, 0, 1, 1],
            "mistake_recognize": [-1, -1, 1, 0, -1, -1, -1, -1],
        }
    )
    res = aggregate_labels(df, by=["question_id", "level"], cols=["step_scaffolded", "mistake_recognize"], na=[-1])
    t = res.result
    assert t.columns == ["question_id", "level", "n_rows", "step_scaffolded", "step_scaffolded_n", "step_scaffolded_n_na",
                         "mistake_recognize", "mistake_recognize_n", "mistake_recognize_n_na"]  # fmt: skip
    f, m = t.row(0, named=True), t.row(1, named=True)
    assert (f["n_rows"], f["step_scaffolded_n"], f["step_scaffolded_n_na"], f["mistake_recognize_n"], f["mistake_recognize_n_na"]) == (4, 3, 1, 2, 2)
    assert f["step_scaffolded"] == pytest.approx(2 / 3, abs=1e-12) and f["mistake_recognize"] == 0.5
    assert m["step_scaffolded"] == 0.5 and np.isnan(m["mistake_recognize"]) and m["mistake_recognize_n"] == 0
    default = aggregate_labels(df, by=["question_id", "level"])  # turn is never a label column
    assert "turn" not in default.result.columns and default.result["step_scaffolded"][0] == 0.25
    assert "aggregate: step_scaffolded has 1 value(s) -1 that are not --na codes" in default.notes
    # empty cells are missing; booleans count 0/1; order of first appearance; missing keys dropped
    text = pl.DataFrame({"k": ["b", "a", "b", None], "x": ["1", "", "0", "1"], "y": [True, False, True, True]})
    r = aggregate_labels(text, by=["k"], cols=["x", "y"])
    assert r.result["k"].to_list() == ["b", "a"] and r.result["x"][0] == 0.5 and r.result["x_n_na"][1] == 1
    assert r.result["y"].to_list() == [1.0, 0.0] and r.notes[0].startswith("aggregate: 1 row(s) with a missing --by")
    with pytest.raises(InputSchemaError, match="row 2"):
        aggregate_labels(pl.DataFrame({"k": ["a", "a"], "x": ["1", "yes"]}), by=["k"], cols=["x"])


def test_icc_equals_r_psych_fixture() -> None:
    """R psych::ICC (2.2.9, lmer = FALSE) on four matrices: tests/fixtures/icc/icc_psych.R wrote icc_psych.csv."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[2] / "fixtures" / "icc"
    data, ref = pl.read_csv(here / "icc_input.csv"), pl.read_csv(here / "icc_psych.csv")
    t, _ = variability_table(data, unit_col="unit", trial_col="trial", group_col="set", cols=["value"])
    assert sorted(set(t["group"])) == sorted(set(ref["set"]))
    joined = t.join(ref, left_on=["group", "form"], right_on=["set", "form"], suffix="_r")
    assert joined.height == 24
    for c in ("icc", "f", "p", "ci_low", "ci_high", "df1", "df2"):
        np.testing.assert_allclose(joined[c].to_numpy(), joined[f"{c}_r"].to_numpy(), rtol=0, atol=1e-9, err_msg=c)
