"""``--where EXPR`` on the six commands (``docs/guide/paper.md#where``) and exit 2 for a single-value option given
twice, on every command: paper.md §8's worked examples on the seeded synthetic data, checked against
independent computations (krippendorff, polars)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main

TOTAL = "total=concision+vocabulary+accuracy+formatting+tone+actionability+targeting+specific"
SLOT = "specific=hint_not_answer,ack_progress,build_on_success,concept_clarity"


def test_summarize_where_prompt_2(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t2.csv"
    assert main(["summarize", str(paper_data / "s002" / "scores.csv"), "--where", "prompt == 2", "--group-col", "model",
                 "--total", TOTAL, "--slot", SLOT, "--max", "16", "-o", str(out)]) == 0  # fmt: skip
    assert "where: kept 561 of 1,122 rows (prompt == 2)" in capsys.readouterr().err
    row = pl.read_csv(out).filter((pl.col("group") == "gemma3_27b") & (pl.col("variable") == "total")).row(0, named=True)
    assert row["n"] == 51 and row["rank"] == 1 and row["mean"] == pytest.approx(13.764706, abs=1e-6)
    # the oracle: the same mean from the raw rows
    raw = pl.read_csv(paper_data / "s002" / "scores.csv").filter((pl.col("prompt") == 2) & (pl.col("model") == "gemma3_27b"))
    slot = raw.select(pl.coalesce("hint_not_answer", "ack_progress", "build_on_success", "concept_clarity")).to_series()
    general = raw.select(pl.sum_horizontal("concision", "vocabulary", "accuracy", "formatting", "tone", "actionability",
                                           "targeting")).to_series()  # fmt: skip
    assert float((general + slot).mean()) == pytest.approx(13.764706, abs=1e-6)


def _alpha(calibration: pl.DataFrame, criterion: str) -> float:
    import krippendorff

    wide = (calibration.filter((pl.col("criterion") == criterion) & (pl.col("score") != -1))
            .pivot(on="exchange_id", index="rater", values="score"))  # fmt: skip
    data = wide.drop("rater").to_numpy().astype(float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_agree_where_rater_not_judge(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calibration = paper_data / "s001" / "calibration.csv"
    out = tmp_path / "a.csv"
    assert main(["agree", str(calibration), "--where", "rater != judge", "--na", "-1", "-o", str(out)]) == 0
    assert "where: kept 2,700 of 3,600 rows (rater != judge)" in capsys.readouterr().err
    alpha = dict(pl.read_csv(out).select("criterion", "krippendorff_alpha").iter_rows())
    want = {"step_scaffolded": (0.605972, 0.600402), "actionability": (0.724068, 0.654462)}  # paper.md §8 [ref]
    frame = pl.read_csv(calibration)
    for criterion, (annotators, with_judge) in want.items():
        assert alpha[criterion] == pytest.approx(annotators, abs=1e-6)
        assert _alpha(frame.filter(pl.col("rater") != "judge"), criterion) == pytest.approx(annotators, abs=1e-6)
        assert _alpha(frame, criterion) == pytest.approx(with_judge, abs=1e-6)


def test_aggregate_variability_compare_where(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = paper_data / "s001"
    rates = tmp_path / "rates.csv"
    assert main(["aggregate", str(d / "turns.csv"), "--where", "model in llama31_8b,qwen25_7b", "--where", "dimension == ses",
                 "--by", "question_id,model,domain,dimension,level", "--cols", "actionability", "--na", "-1",
                 "-o", str(rates)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "where: kept" in err and "(model in llama31_8b, qwen25_7b and dimension == ses)" in err
    table = pl.read_csv(rates)
    assert set(table["model"]) == {"llama31_8b", "qwen25_7b"} and set(table["dimension"]) == {"ses"}
    out = tmp_path / "cmp.md"
    assert main(["compare", str(rates), "--where", "domain == math", "--group-col", "level", "--block-col", "question_id",
                 "--strata", "model", "--n-resamples", "100", "-o", str(out)]) == 0  # fmt: skip
    assert "where: kept 120 of 360 rows (domain == math)" in capsys.readouterr().err
    assert out.read_text().startswith("| model |")
    scores = tmp_path / "totals.csv"
    assert main(["summarize", str(paper_data / "s002" / "scores.csv"), "--group-col", "model", "--total", TOTAL, "--slot", SLOT,
                 "--max", "16", "--totals-out", str(scores), "-o", str(tmp_path / "s.csv")]) == 0  # fmt: skip
    var = tmp_path / "var.md"
    assert main(["variability", str(scores), "--where", "prompt == 2", "--where", "model == gemma3_27b", "--unit-col", "item",
                 "--trial-col", "run", "--group-col", "model", "--cols", "total", "-o", str(var)]) == 0  # fmt: skip
    assert "where: kept 51 of 1,122 rows (prompt == 2 and model == gemma3_27b)" in capsys.readouterr().err
    assert "gemma3\\_27b" in var.read_text() and "\n\nTable: " in var.read_text()


def test_validate_where(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = paper_data / "s000"
    metrics = tmp_path / "m.csv"
    rows = pl.read_csv(d / "exchanges.csv").select("exchange_id", "response")
    rows.with_columns(resp_chars=pl.col("response").str.len_chars(), half=(np.arange(rows.height) % 2)).drop("response").write_csv(metrics)
    out = tmp_path / "rho.md"
    assert main(["validate", str(metrics), "--ratings", str(d / "ratings_raw.csv"), "--where", "half == 0",
                 "--metrics-cols", "resp_chars", "--n-resamples", "99", "-o", str(out)]) == 0  # fmt: skip
    assert "where: kept 125 of 249 rows (half == 0)" in capsys.readouterr().err
    assert "n = 125" in out.read_text()


@pytest.mark.parametrize(("expr", "says"), [
    ("rater == A1 or rater == A2", "'or' is not supported"),
    ("(rater == A1)", "--where"),
    ("score > 1", "--where"),
    ("nope == 1", "nope"),
    ("rater ==", "--where"),
    ("rater == nobody", "no row"),
])  # fmt: skip
def test_where_errors_exit_2(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], expr: str, says: str) -> None:
    assert main(["agree", str(paper_data / "s001" / "calibration.csv"), "--where", expr, "-o", str(tmp_path / "a.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and "Traceback" not in err
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("argv", [
    ["compare", "x.csv", "--adjust", "holm", "--adjust", "bh", "-o", "o.csv"],
    ["theta", "x.csv", "--seed=1", "--seed", "2", "-o", "o.csv"],
    ["agree", "x.csv", "-o", "a.csv", "--output", "b.csv"],
    ["summarize", "x.csv", "--caption", "A", "--caption", "B", "-o", "o.md"],
])  # fmt: skip
def test_single_value_option_twice_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "was given twice" in err and "but takes one value" in err
    assert not list(tmp_path.iterdir())


def test_single_value_twice_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "x.csv", "--adjust", "holm", "--adjust", "bh", "-o", "o.csv"]) == 2
    assert "error: --adjust was given twice (holm, bh) but takes one value" in capsys.readouterr().err


def test_flags_and_repeatable_options_may_repeat(paper_data: Path, tmp_path: Path) -> None:
    """Flags are exempt; repeatable options (--judge, --where, --recode) repeat; a value that looks like an
    option is a value."""
    out = tmp_path / "j.csv"
    assert main(["agree", str(paper_data / "s002" / "calibration.csv"), "--judge", "phi4", "--judge", "sonnet4",
                 "--levels", "0,1,2", "--n-resamples", "50", "-o", str(out)]) == 0  # fmt: skip
    assert main(["summarize", str(paper_data / "s002" / "scores.csv"), "--group-col", "model", "--caption", "--caption", "-o", str(tmp_path / "s.md"),
                 "--vars", "concision"]) == 0  # fmt: skip
    assert "Table: --caption" in (tmp_path / "s.md").read_text()


def test_summarize_two_group_cols(paper_data: Path, tmp_path: Path) -> None:
    """paper.md §9 [ref]: 22 groups; gemma3_27b/1 mean 12.450980, gemma3_27b/2 13.764706; md header model / prompt."""
    out = tmp_path / "g.csv"
    scores = paper_data / "s002" / "scores.csv"
    assert main(["summarize", str(scores), "--group-col", "model", "--group-col", "prompt", "--total", TOTAL, "--slot", SLOT,
                 "--max", "16", "--n-resamples", "50", "-o", str(out)]) == 0  # fmt: skip
    t = pl.read_csv(out)
    assert t.columns[:4] == ["group", "model", "prompt", "variable"] and t["group"].n_unique() == 22
    total = {r["group"]: r["mean"] for r in t.filter(pl.col("variable") == "total").iter_rows(named=True)}
    assert total["gemma3_27b/1"] == pytest.approx(12.450980, abs=1e-6) and total["gemma3_27b/2"] == pytest.approx(13.764706, abs=1e-6)
    groups = t["group"].unique(maintain_order=True).to_list()
    assert groups == sorted(groups, key=lambda g: (g.split("/")[0], int(g.split("/")[1])))  # sorted by the value tuple
    md = tmp_path / "g.md"
    assert main(["summarize", str(scores), "--group-col", "model,prompt", "--vars", "concision", "--n-resamples", "20",
                 "-o", str(md)]) == 0  # fmt: skip
    assert md.read_text().startswith("| model \\/ prompt | concision |")


def test_variability_two_group_cols_against_pingouin(paper_data: Path, tmp_path: Path) -> None:
    pingouin = pytest.importorskip("pingouin")
    totals = tmp_path / "totals.csv"
    assert main(["summarize", str(paper_data / "s002" / "scores.csv"), "--group-col", "model", "--total", TOTAL, "--slot", SLOT,
                 "--max", "16", "--n-resamples", "20", "--totals-out", str(totals), "-o", str(tmp_path / "s.csv")]) == 0  # fmt: skip
    out = tmp_path / "v.csv"
    assert main(["variability", str(totals), "--group-col", "model,prompt", "--unit-col", "item", "--trial-col", "run",
                 "--cols", "total", "-o", str(out)]) == 0  # fmt: skip
    t = pl.read_csv(out).filter(pl.col("mcgraw_wong") == "ICC(A,1)")
    got = {r["group"]: r for r in t.iter_rows(named=True)}
    assert len(got) == 22
    row = got["gemma3_27b/2"]
    assert (row["icc"], row["ci_low"], row["ci_high"]) == pytest.approx((0.171383, -0.110530, 0.515573), abs=1e-6)
    assert got["gemma3_27b/1"]["icc"] == pytest.approx(0.296394, abs=1e-6)
    rows = pl.read_csv(totals).filter((pl.col("model") == "gemma3_27b") & (pl.col("prompt") == 2)).to_pandas()
    icc = pingouin.intraclass_corr(rows, targets="item", raters="run", ratings="total").set_index("Type")
    assert icc.loc["ICC(A,1)", "ICC"] == pytest.approx(0.171383, abs=1e-6)


def test_group_col_label_clash_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t.csv"
    pl.DataFrame({"a": ["x/y", "x"], "b": ["z", "y/z"], "item": [1, 1], "trial": [1, 1], "v": [1.0, 2.0]}).write_csv(table)
    assert main(["variability", str(table), "--group-col", "a,b", "-o", str(tmp_path / "v.csv")]) == 2
    assert "names 2 different combinations" in capsys.readouterr().err


def test_ppi_two_group_cols(tmp_path: Path) -> None:
    ids = [f"e{i:02d}" for i in range(40)]
    judge = pl.DataFrame({"exchange_id": ids, "rater": "llm", "criterion": "c", "score": [float(i % 3 == 0) for i in range(40)],
                          "tutor": [f"t{i % 2}" for i in range(40)], "arm": [f"a{(i // 2) % 2}" for i in range(40)]})  # fmt: skip
    human = pl.DataFrame({"exchange_id": ids[:24], "rater": "h", "criterion": "c", "score": [float(i % 2) for i in range(24)]})
    judge.write_csv(tmp_path / "all.csv")
    human.write_csv(tmp_path / "sub.csv")
    out = tmp_path / "ppi.csv"
    assert main(["ppi", "--judge-labels", str(tmp_path / "all.csv"), "--human-labels", str(tmp_path / "sub.csv"),
                 "--group-col", "tutor", "--group-col", "arm", "-o", str(out)]) == 0  # fmt: skip
    groups = pl.read_csv(out, schema_overrides={"group": pl.String})["group"].fill_null("").to_list()
    assert groups == ["", "t0/a0", "t0/a1", "t1/a0", "t1/a1"]


def test_predict_two_group_cols(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    n = 120
    x = rng.normal(size=n)
    ids = [f"e{i:03d}" for i in range(n)]
    pl.DataFrame({"exchange_id": ids, "school": [f"s{i % 6}" for i in range(n)], "conv": [f"c{(i // 6) % 5}" for i in range(n)],
                  "ttr": x, "resp_words": rng.normal(size=n)}).write_csv(tmp_path / "m.csv")  # fmt: skip
    pl.DataFrame({"exchange_id": ids, "rater": "h", "criterion": "clear", "score": (x + rng.normal(size=n) > 0).astype(float)}
                 ).write_csv(tmp_path / "r.csv")  # fmt: skip
    out = tmp_path / "p.csv"
    assert main(["predict", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--group-col", "school,conv",
                 "--n-resamples", "50", "--metrics-cols", "ttr,resp_words", "-o", str(out)]) == 0  # fmt: skip
    assert pl.read_csv(out).height > 0


def test_theta_groups_two_group_cols(paper_data: Path, tmp_path: Path) -> None:
    d = paper_data / "s000"
    ids = pl.read_csv(d / "covariates.csv")["exchange_id"]
    groups = tmp_path / "groups.csv"
    pl.DataFrame({"exchange_id": ids, "site": [f"s{i % 2}" for i in range(ids.len())],
                  "arm": [f"a{(i // 2) % 2}" for i in range(ids.len())]}).write_csv(groups)  # fmt: skip
    effects = tmp_path / "effects.csv"
    assert main(["theta", str(d / "ratings_raw.csv"), "--recode", "0.5=0", "--groups", str(groups), "--group-col", "site",
                 "--group-col", "arm", "--effects", str(effects), "--effect-draws", "200", "-o", str(tmp_path / "t.csv")]) == 0  # fmt: skip
    terms = set(pl.read_csv(effects)["term"].to_list())
    assert terms <= {"s0/a0", "s0/a1", "s1/a0", "s1/a1"} and len(terms) >= 3


def test_compare_two_group_cols_and_labels(paper_data: Path, tmp_path: Path) -> None:
    rates = tmp_path / "rates.csv"
    assert main(["aggregate", str(paper_data / "s001" / "turns.csv"), "--where", "dimension == gender", "--where", "domain == math",
                 "--by", "question_id,model,domain,dimension,level", "--cols", "actionability", "--na", "-1",
                 "-o", str(rates)]) == 0  # fmt: skip
    out = tmp_path / "cmp.csv"
    assert main(["compare", str(rates), "--group-col", "model", "--group-col", "level", "--block-col", "question_id",
                 "--groups", "gpt5_mini/female,gpt5_mini/male", "--n-resamples", "50", "-o", str(out)]) == 0  # fmt: skip
    t = pl.read_csv(out)
    labels = {str(v) for c in t.columns if c.startswith("group_") for v in t[c].to_list() if v is not None}
    assert {"gpt5_mini/female", "gpt5_mini/male"} <= labels


def test_run_two_group_cols(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    out = tmp_path / "demo"
    assert main(["run", "--example", "--metrics", "lexical", "--group-col", "conversation_id,tutor", "--no-estimate-theta",
                 "--n-resamples", "99", "-o", str(out)]) == 0  # fmt: skip
    assert pl.read_csv(out / "predictive.csv").height > 0
