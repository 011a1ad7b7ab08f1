"""ICC forms against pingouin (studies.md §6) and label aggregation (§4)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pingouin as pg
import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
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


# -- issue 35: hostile tables ------------------------------------------------------------------------


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    """The error's message (the hint is its own line): one line, no exception class name from polars."""
    message = str(exc.value).split("\n  hint: ")[0]
    assert "\n" not in message and "Error" not in message, message
    return message


@pytest.mark.parametrize(
    ("frame", "by", "named"),
    [
        ({"q": ["a", "a"], "n_rows": [1, 0]}, ["q"], "'n_rows' (the row count and label 'n_rows')"),
        ({"q": ["a", "a"], "a": [1, 0], "a_n": [0, 1]}, ["q"], "'a_n' (the count of 'a' and label 'a_n')"),
        ({"q": ["a", "a"], "a": [1, 0], "a_n_na": [0, 1]}, ["q"], "'a_n_na' (the missing count of 'a' and label 'a_n_na')"),
        ({"a_n": ["k", "k"], "a": [1, 0]}, ["a_n"], "'a_n' (--by 'a_n' and the count of 'a')"),
    ],
)
def test_aggregate_output_names_clash_before_computing(frame: dict[str, list[object]], by: list[str], named: str) -> None:
    """Before: polars DuplicateError. Now one line naming the clashing output columns, and a hint."""
    with pytest.raises(InputSchemaError, match="clash") as exc:
        aggregate_labels(pl.DataFrame(frame), by=by)
    assert named in _one_line(exc) and "--cols" in str(exc.value)


def test_aggregate_missing_text_and_columns_left_out_are_said() -> None:
    """NA, N/A, null and empty text are missing; a label column with other text is left out of the default set with a
    note naming the column, the row and the value; text columns are listed; named with --cols it is refused."""
    df = pl.DataFrame({
        "q": ["q1", "q1", "q2", "q2"],
        "lab": ["1", "NA", "0", " n/a "],  # 0/1 with R's NA: read as numbers, NA missing
        "odd": ["1", "0", "n.a.", "1"],  # an unknown spelling: not a label
        "tutor": ["a", "b", "a", "b"],  # text: not a label
        "flag": [True, False, None, True],
    })  # fmt: skip
    res = aggregate_labels(df, by=["q"])
    assert res.result.columns == ["q", "n_rows", "lab", "lab_n", "lab_n_na", "flag", "flag_n", "flag_n_na"]
    assert res.result["lab"].to_list() == [1.0, 0.0] and res.result["lab_n_na"].to_list() == [1, 1]
    left = [n for n in res.notes if "'odd'" in n]
    assert len(left) == 1 and "row 3 holds 'n.a.'" in left[0] and "--cols" in left[0] and "--na" in left[0]
    assert "aggregate: 1 column(s) without numbers not aggregated: tutor" in res.notes
    with pytest.raises(InputSchemaError, match=re.escape("row 3: column 'odd' has the non-numeric value 'n.a.'")) as exc:
        aggregate_labels(df, by=["q"], cols=["odd"])
    _one_line(exc)


@pytest.mark.parametrize(
    ("values", "row", "shown"),
    [([1.0, float("inf"), 0.0], 2, "inf"), ([1.0, 0.0, float("-inf")], 3, "-inf"), (["1", "0", "inf"], 3, "inf")],
)
def test_aggregate_non_finite_labels_are_refused(values: list[object], row: int, shown: str) -> None:
    """Before: a rate of inf with exit 0. Now exit 2 naming the row and column; NaN stays a missing value."""
    df = pl.DataFrame({"q": ["a", "a", "b"], "lab": values})
    for cols in (None, ["lab"]):
        with pytest.raises(InputSchemaError, match=f"row {row}: column 'lab' has the value {shown}") as exc:
            aggregate_labels(df, by=["q"], cols=cols)
        _one_line(exc)
    nan = aggregate_labels(pl.DataFrame({"q": ["a", "a"], "lab": [1.0, float("nan")]}), by=["q"]).result
    assert nan["lab"][0] == 1.0 and nan["lab_n_na"][0] == 1


def _frame_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the whole-frame polars calls (filter, select, with_columns, pivot, group_by, partition_by)."""
    calls: dict[str, int] = {}
    for name in ("filter", "select", "with_columns", "pivot", "group_by", "partition_by"):
        original = getattr(pl.DataFrame, name)

        def counted(self: pl.DataFrame, *a: object, __name: str = name, __f: object = original, **k: object) -> object:
            calls[__name] = calls.get(__name, 0) + 1
            return __f(self, *a, **k)  # type: ignore[operator]

        monkeypatch.setattr(pl.DataFrame, name, counted)
    return calls


def test_aggregate_and_variability_pass_over_the_frame_a_fixed_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: one frame filter (aggregate) or pivot and filter (variability) per column, so the time grew with the
    square of the columns (benchmarks/RESULTS.md §25). Now the number of whole-frame passes does not depend on
    the number of columns."""
    rng = np.random.default_rng(0)

    def counts(n_cols: int) -> tuple[dict[str, int], dict[str, int]]:
        labels = {f"l{j}": np.where(rng.random(40) < 0.2, -1, rng.integers(0, 2, 40)) for j in range(n_cols)}
        turns = pl.DataFrame({"q": [f"q{i % 5}" for i in range(40)], **labels})
        trials = pl.DataFrame({"item": np.repeat(np.arange(20), 2), "trial": np.tile([1, 2], 20), **{c: rng.normal(size=40) for c in labels}})
        with monkeypatch.context() as m:
            calls = _frame_calls(m)
            aggregate_labels(turns, by=["q"])
            agg = dict(calls)
            calls.clear()
            variability_table(trials, unit_col="item", trial_col="trial")
            return agg, dict(calls)

    assert counts(3) == counts(60)


def test_variability_option_clash_and_empty_keys() -> None:
    """Before: --unit-col item --trial-col item was a polars ComputeError, and rows with an empty group or trial
    were dropped without a word. Now the clash is exit 2 and the rows left out are counted on stderr."""
    df = pl.DataFrame({"item": ["1", "1", "2", "2", "3", "3", "4"], "trial": ["1", "2", "1", "2", "1", "", "2"],
                       "model": ["a", "a", "a", "a", None, "a", "a"], "x": [1.0, 2.0, 3.0, 5.0, 4.0, 4.0, 1.0]})  # fmt: skip
    for kw, named in (({"unit_col": "item", "trial_col": "item"}, "--unit-col and --trial-col"),
                      ({"unit_col": "item", "trial_col": "trial", "group_col": "trial"}, "--trial-col and --group-col"),
                      ({"unit_col": "item", "trial_col": "trial", "cols": ["x", "item"]}, "--unit-col and --cols")):  # fmt: skip
        with pytest.raises(ConfigError, match=named) as exc:
            variability_table(df, **kw)  # type: ignore[arg-type]
        _one_line(exc)
    notes: list[str] = []
    t, units = variability_table(df, unit_col="item", trial_col="trial", group_col="model", log=notes.append)
    assert notes == ["variability: 2 row(s) with an empty unit, trial or group left out (--trial-col 1, --group-col 1)"]
    assert set(t["n_units"]) == {2} and set(t["reason"]) == {"dropped_1_incomplete_units"}
    assert sorted(units["unit"].to_list()) == ["1", "2", "4"]


def test_icc_arrays_equal_icc_forms_per_matrix() -> None:
    """The vectorised forms (every column of a group at once) equal the one-matrix forms on each column's complete
    units, including the constant and too-few cases."""
    from tutormetrics.stats.icc import icc_arrays

    rng = np.random.default_rng(3)
    y = rng.normal(size=(5, 9, 3)).round(1)
    y[1, 2, 0] = y[1, 5, 2] = np.nan  # two incomplete units
    y[2] = 4.0  # constant
    y[3, 1:] = np.nan  # one complete unit: too few
    y[4, :, 1] = y[4, :, 0] + 1.0  # a trial shift: consistency ICC exact
    out = icc_arrays(y)
    for v in range(5):
        complete = y[v][np.isfinite(y[v]).all(1)]
        for j, r in enumerate(icc_forms(complete)):
            assert out["reason"][v, j] == r["reason"] and out["n_units"][v] == r["n_units"]
            for key in ("icc", "ci_low", "ci_high", "f", "df1", "df2", "p"):
                np.testing.assert_allclose(out[key][v, j], r[key], rtol=1e-12, atol=1e-14, err_msg=f"{v} {j} {key}")


def test_the_missing_spellings_shown_are_those_read():
    from tutormetrics.stats.aggregate import _MISSING_SHOWN, MISSING_TEXT

    shown = [t.lower() for t in _MISSING_SHOWN.split(", ")]
    assert shown == ["empty", *MISSING_TEXT[1:]]
