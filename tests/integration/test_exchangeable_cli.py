"""``--raters exchangeable`` end to end (datasets.md §5, §9.5): agree and theta on ``convert uptake``'s sample
ratings, the slot warning without the option, run with anonymous slots, and the one-rater mixed-scale warning
(``--strict`` exit 1, recorded in run.json)."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.examples import example_paths

PUBLIC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public"
SLOT_WARNING = (
    "warning: ratings: raters slot1, slot2, slot3 fill slots in order (uptake: 12 units have 2 ratings, 8 have 1): "
    "if they are anonymous, pass --raters exchangeable"
)
FAST = ["--metrics", "lexical", "--n-resamples", "99", "--n-permutations", "99", "--no-progress", "--top", "0"]


@pytest.fixture(scope="module")
def uptake(tmp_path_factory) -> Path:
    raw = PUBLIC / "uptake" / "uptake_data_first200.csv"
    if not raw.exists():
        pytest.skip("../shared/data/public not available")
    out = tmp_path_factory.mktemp("uptake")
    assert main(["convert", "uptake", str(raw), "-o", str(out)]) == 0
    return out


def _slot_matrix(ratings: pl.DataFrame, crit: str) -> np.ndarray:
    """slot × unit matrix of one criterion (NaN = no rating), as krippendorff.alpha reads it."""
    wide = ratings.filter(pl.col("criterion") == crit).pivot(on="exchange_id", index="rater", values="score")
    return wide.drop("rater").to_numpy().astype(float)


def _two_rater_columns(header: list[str]) -> list[str]:
    return header[header.index("alpha_ci_high") + 1 : header.index("reason")]


def test_agree_exchangeable_on_uptake_is_the_worked_example(uptake, tmp_path, capsys):
    out = tmp_path / "agree.csv"
    assert main(["agree", str(uptake / "ratings.csv"), "--raters", "exchangeable", "-o", str(out), "--n-resamples", "200"]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and "raters exchangeable" in err
    table = pl.read_csv(out, infer_schema_length=0)  # text: an empty cell stays ""
    rows = {r["criterion"]: r for r in table.iter_rows(named=True)}
    up = rows["uptake"]
    assert int(up["n_units"]) == 179 and int(up["n_raters"]) == 3
    assert float(up["krippendorff_alpha"]) == pytest.approx(0.303311, abs=5e-7)
    assert float(up["alpha_ordinal"]) == pytest.approx(0.425066, abs=5e-7)
    assert float(up["alpha_interval"]) == pytest.approx(0.481111, abs=5e-7)
    assert float(rows["teacher_on_task"]["krippendorff_alpha"]) == pytest.approx(0.591283, abs=5e-7)
    assert float(rows["student_on_task"]["krippendorff_alpha"]) == pytest.approx(0.641886, abs=5e-7)
    two = _two_rater_columns(table.columns)
    assert {"n", "kappa", "pabak", "p_neg", "kappa_ci_low", "alpha_quadratic_ci_high", "rater_a", "rater_b"} <= set(two)
    assert all(r[c] is None for r in rows.values() for c in two), "every two-rater cell is empty"
    assert all(r["reason"].split(";")[-1] == "exchangeable_raters" for r in rows.values())
    # the slot × unit matrix through an independent implementation
    ratings = pl.read_csv(uptake / "ratings.csv", infer_schema_length=0).with_columns(pl.col("score").cast(pl.Float64))
    for crit, row in rows.items():
        m = _slot_matrix(ratings, crit)
        assert float(row["krippendorff_alpha"]) == pytest.approx(krippendorff.alpha(reliability_data=m, level_of_measurement="nominal"), abs=1e-12)
    m = _slot_matrix(ratings, "uptake")
    for level, col in (("ordinal", "alpha_ordinal"), ("interval", "alpha_interval")):
        assert float(up[col]) == pytest.approx(krippendorff.alpha(reliability_data=m, level_of_measurement=level), abs=1e-12)


def test_agree_without_the_option_warns_and_keeps_todays_table(uptake, tmp_path, capsys):
    out = tmp_path / "agree.csv"
    assert main(["agree", str(uptake / "ratings.csv"), "-o", str(out), "--n-resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert err.count(SLOT_WARNING) == 1
    table = pl.read_csv(out)
    assert table["rater_a"].to_list() == ["slot1"] * 3 and "exchangeable_raters" not in ";".join(table["reason"])
    pair = tmp_path / "pair.csv"
    assert main(["agree", str(uptake / "ratings.csv"), "-o", str(pair), "--n-resamples", "0", "--raters", "slot1,slot3"]) == 0
    assert pl.read_csv(pair)["rater_b"].to_list() == ["slot3"] * 3  # --raters A,B keeps its meaning


def test_agree_exchangeable_without_rater_column_with_judge_and_refusals(uptake, tmp_path, capsys):
    ratings = pl.read_csv(uptake / "ratings.csv", infer_schema_length=0)
    bare = tmp_path / "bare.csv"
    ratings.drop("rater").write_csv(bare)  # each row one rating
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["agree", str(uptake / "ratings.csv"), "--raters", "exchangeable", "-o", str(a), "--n-resamples", "50"]) == 0
    assert main(["agree", str(bare), "--raters", "exchangeable", "-o", str(b), "--n-resamples", "50"]) == 0
    assert pl.read_csv(a).equals(pl.read_csv(b))
    capsys.readouterr()
    # a judge: the humans are slots, the judge is named, the reference is the majority only
    judge = ratings.filter(pl.col("rater") == "slot1").with_columns(pl.lit("llm").alias("rater"))
    with_judge = tmp_path / "judge_in.csv"
    pl.concat([ratings, judge]).write_csv(with_judge)
    out = tmp_path / "judge.csv"
    assert main(["agree", str(with_judge), "--raters", "exchangeable", "--judge", "llm", "-o", str(out), "--n-resamples", "0"]) == 0
    assert "1 references (majority)" in capsys.readouterr().err
    table = pl.read_csv(out)
    assert table["criterion"][-1] == "(all)"  # paper.md §5: the pooled row after the judge's criteria
    assert table["reference"].to_list() == ["majority"] * 4 and table["judge"].to_list() == ["llm"] * 4
    named = tmp_path / "named.csv"
    assert main(["agree", str(with_judge), "--judge", "llm", "-o", str(named), "--n-resamples", "0"]) == 0
    assert pl.read_csv(named).filter(pl.col("reference") == "majority").equals(table)
    # refusals: exit 2, one message, nothing written
    per = tmp_path / "per.csv"
    assert main(["agree", str(uptake / "ratings.csv"), "--raters", "exchangeable", "-o", str(tmp_path / "x.csv"),
                 "--per-rater", str(per)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "--per-rater needs named raters" in err and "Traceback" not in err
    assert not per.exists() and not (tmp_path / "x.csv").exists()
    assert main(["agree", str(uptake / "ratings.csv"), "--raters", "slot1", "-o", str(tmp_path / "y.csv")]) == 2


def test_theta_exchangeable_has_no_rater_facet_and_ignores_labels(uptake, tmp_path, capsys):
    ratings = pl.read_csv(uptake / "ratings.csv", infer_schema_length=0)
    rng = np.random.default_rng(7)
    permuted = ratings.with_columns(pl.Series("_key", rng.random(ratings.height)))
    permuted = permuted.with_columns(pl.col("rater").sort_by("_key").over(["exchange_id", "criterion"])).drop("_key")
    assert not permuted["rater"].equals(ratings["rater"])
    perm_path, merged_path = tmp_path / "permuted.csv", tmp_path / "merged.csv"
    permuted.write_csv(perm_path)
    ratings.with_columns(pl.lit("someone").alias("rater")).write_csv(merged_path)
    thetas = []
    for k, path in enumerate([uptake / "ratings.csv", perm_path, merged_path]):
        out, facets = tmp_path / f"theta{k}.csv", tmp_path / f"facets{k}.csv"
        assert main(["theta", str(path), "--raters", "exchangeable", "-o", str(out), "--facets", str(facets)]) == 0
        err = capsys.readouterr().err
        assert err.count("note: θ: --raters exchangeable: no rater facet") == 1 and "warning" not in err
        assert "rater" not in pl.read_csv(facets)["facet"].to_list()
        thetas.append(pl.read_csv(out, infer_schema_length=0).with_columns(pl.col("theta").cast(pl.Float64)))
    for other in thetas[1:]:
        assert other["exchange_id"].to_list() == thetas[0]["exchange_id"].to_list()
        np.testing.assert_allclose(other["theta"].to_numpy(), thetas[0]["theta"].to_numpy(), rtol=0, atol=1e-9)
    # without the option: the slot warning, and a rater facet of three "slots"
    out, facets = tmp_path / "named.csv", tmp_path / "named_facets.csv"
    assert main(["theta", str(uptake / "ratings.csv"), "-o", str(out), "--facets", str(facets)]) == 0
    assert capsys.readouterr().err.count(SLOT_WARNING) == 1
    assert pl.read_csv(facets).filter(pl.col("facet") == "rater")["level"].to_list() == ["slot1", "slot2", "slot3"]
    assert main(["theta", str(uptake / "ratings.csv"), "--raters", "slot1,slot2", "-o", str(tmp_path / "bad.csv")]) == 2
    assert "the only value here is 'exchangeable'" in capsys.readouterr().err


def test_run_exchangeable_writes_agreement_theta_and_run_json(uptake, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", str(uptake / "exchanges.csv"), "--ratings", str(uptake / "ratings.csv"), *FAST]
    assert main([*args, "--raters", "exchangeable", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: θ: --raters exchangeable" in err and SLOT_WARNING not in err
    agreement = pl.read_csv(out / "agreement.csv")
    assert all(r.endswith("exchangeable_raters") for r in agreement["reason"]) and agreement["kappa"].null_count() == 3
    assert "rater" not in pl.read_csv(out / "facets.csv")["facet"].to_list()
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["theta"]["raters"] == "exchangeable" and run_json["validate_options"]["raters"] == "exchangeable"
    assert run_json["warnings"] == []
    # without it: the slot warning once, recorded, and --strict exits 1
    plain = tmp_path / "plain"
    assert main([*args, "-o", str(plain), "--strict"]) == 1
    assert capsys.readouterr().err.count(SLOT_WARNING) == 1
    assert SLOT_WARNING in json.loads((plain / "run.json").read_text())["warnings"]
    assert main([*args, "--raters", "r1,r2", "-o", str(tmp_path / "bad")]) == 2


def _one_rater_mixed(tmp_path: Path) -> Path:
    """The bundled example's ratings of rater r1 only, one criterion moved to a 1-5 scale."""
    ratings = pl.read_csv(example_paths()["ratings"]).filter(pl.col("rater") == "r1")
    crit = ratings["criterion"][0]
    five = ratings.filter(pl.col("criterion") == crit).with_columns((pl.int_range(pl.len()) % 5 + 1).alias("score"))
    path = tmp_path / "one_rater.csv"
    pl.concat([ratings.filter(pl.col("criterion") != crit), five.select(ratings.columns)]).write_csv(path)
    return path


def test_one_rater_mixed_scales_warns_and_strict_exits_1(tmp_path, capsys):
    ratings = _one_rater_mixed(tmp_path)
    paths = example_paths()
    args = ["run", str(paths["exchanges"]), "--ratings", str(ratings), "--prompt", "query", *FAST, "--ci", "none"]
    assert main([*args, "-o", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("warning: θ: one rater ('r1') and criteria on different scales (")]
    assert len(lines) == 1 and ": 1-5): θ pools them as one trait; fit θ on one scale, or pass --no-estimate-theta" in lines[0]
    run_json = json.loads((tmp_path / "a" / "run.json").read_text())
    assert lines[0] in run_json["warnings"] and run_json["theta"]["warnings"] == [lines[0]]
    assert main([*args, "-o", str(tmp_path / "b"), "--strict"]) == 1
    capsys.readouterr()
    assert main([*args, "-o", str(tmp_path / "c"), "--strict", "--no-estimate-theta"]) == 0  # no θ, no warning
    # theta says it too
    assert main(["theta", str(ratings), "-o", str(tmp_path / "t.csv")]) == 0
    assert "warning: θ: one rater ('r1')" in capsys.readouterr().err
    assert main(["theta", str(ratings), "-o", str(tmp_path / "t2.csv"), "--strict"]) == 1
    assert (tmp_path / "t2.csv").exists()  # results written, then exit 1
    assert main(["theta", str(ratings), "-o", str(tmp_path / "t3.csv"), "--strict", "--levels", "0,1,2,3,4,5"]) == 0


def test_mathdial_one_rater_warning_is_the_spec_message(tmp_path, capsys):
    """datasets.md §5 / §9.6: `convert mathdial`'s sample ratings (rater 'gold', a 0/0.5/1 and two 1-5 criteria)."""
    raw = PUBLIC / "mathdial" / "test_first40.csv"
    if not raw.exists():
        pytest.skip("../shared/data/public not available")
    out = tmp_path / "md"
    assert main(["convert", "mathdial", str(raw), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["theta", str(out / "ratings.csv"), "--id", "conversation_id", "-o", str(tmp_path / "t.csv")]) == 0
    assert (
        "warning: θ: one rater ('gold') and criteria on different scales (self_correctness: 0, 0.5, 1; "
        "self_typical_confusion, self_typical_interactions: 1-5): θ pools them as one trait; fit θ on one scale, or "
        "pass --no-estimate-theta"
    ) in capsys.readouterr().err.splitlines()
