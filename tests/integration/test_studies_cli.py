"""End-to-end CLI tests for studies.md: compare per subset with --strata/--family/--directions/--summary,
aggregate, variability, summarize --total, agree --na and agree --judge leniency."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unittests" / "stats"))
from test_compare_studies import toy


def test_compare_two_dimension_file_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "toy.csv"
    toy().with_columns(pl.lit("M").alias("model")).write_csv(path)
    dirs = tmp_path / "dirs.csv"
    dirs.write_text("metric,desirable\nm,higher\n")
    out, summ = tmp_path / "cmp.csv", tmp_path / "cells.csv"
    code = main(["compare", str(path), "--group-col", "level", "--block-col", "question_id", "--dimension", "dimension",
                 "--strata", "model", "--groups", "female,male,low,mid,high", "--n-min", "10", "--n-resamples", "199",
                 "--adjust", "bonferroni", "--family", "all", "--directions", str(dirs),
                 "--summary", str(summ), "--by", "model", "--cells", "model,dimension_value", "-o", str(out)])  # fmt: skip
    assert code == 0
    t = pl.read_csv(out)
    assert t.columns[:3] == ["model", "dimension", "dimension_value"] and t.columns[-8:] == [
        "mean_a", "mean_b", "mean_diff", "diff_ci_low", "diff_ci_high", "family", "favoured", "ci_level"]  # fmt: skip
    assert t.height == 5 and t["test"].to_list() == ["wilcoxon", "friedman", "wilcoxon", "wilcoxon", "wilcoxon"]
    np.testing.assert_allclose(t.filter(pl.col("test") == "wilcoxon")["p_adj"], [0.0861816, 0.109375, 0.0078125, 0.109375], atol=5e-7)
    assert t["favoured"].to_list()[0] == "female" and t["favoured"].to_list()[2] == "mid"
    s = pl.read_csv(summ)
    assert s["n_cells"][0] == 2 and s["n_contrasts"][0] == 4 and s["direction"][0] == "higher"
    assert s["max_abs_r"][0] == pytest.approx(1.0)
    err = capsys.readouterr().err
    assert "family=all" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--family", "pairs"], "unknown --family"),
        (["--adjust", "sidak"], "unknown --adjust"),
        (["--by", "model"], "need(s) --summary"),
        (["--summary", "S.csv", "--by", "tutor"], "unknown key"),
        (["--groups", "female,nobody"], "not found"),
    ],
)
def test_compare_bad_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    path = tmp_path / "toy.csv"
    toy().write_csv(path)
    extra = [str(tmp_path / e) if e.endswith(".csv") else e for e in extra]
    code = main(["compare", str(path), "--group-col", "level", "--block-col", "question_id", "--dimension", "dimension",
                 "--n-resamples", "0", "-o", str(tmp_path / "c.csv"), *extra])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_compare_bad_directions_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "toy.csv"
    toy().write_csv(path)
    dirs = tmp_path / "dirs.csv"
    dirs.write_text("metric,desirable\nm,up\n")
    code = main(["compare", str(path), "--group-col", "level", "--block-col", "question_id", "--dimension", "dimension",
                 "--n-resamples", "0", "--directions", str(dirs), "-o", str(tmp_path / "c.csv")])  # fmt: skip
    assert code == 2 and "desirable 'up'" in capsys.readouterr().err


def test_aggregate_then_compare_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    rows = []
    for q in range(16):
        for level, p in (("female", 0.7), ("male", 0.4)):
            for turn in range(5):
                lab = int(rng.random() < p)
                rows.append((f"q{q}", level, turn, lab if turn else -1, int(rng.random() < 0.5)))
    turns = tmp_path / "turns.csv"
    pl.DataFrame(rows, schema=["question_id", "level", "turn", "step", "tone"], orient="row").write_csv(turns)
    rates = tmp_path / "rates.csv"
    assert main(["aggregate", str(turns), "--by", "question_id,level", "--na", "-1", "-o", str(rates)]) == 0
    t = pl.read_csv(rates)
    assert t.columns == ["question_id", "level", "n_rows", "step", "step_n", "step_n_na", "tone", "tone_n", "tone_n_na"]
    assert (t["step_n"] == 4).all() and (t["step_n_na"] == 1).all()
    cmp = tmp_path / "cmp.csv"
    assert main(["compare", str(rates), "--group-col", "level", "--block-col", "question_id", "--n-resamples", "0", "-o", str(cmp)]) == 0
    assert pl.read_csv(cmp)["metric"].to_list() == ["step", "tone"]  # counts are not compared
    assert main(["aggregate", str(turns), "--by", "question_id", "--na", "x", "-o", str(tmp_path / "r2.csv")]) == 2
    assert "--na: 'x' is not a number" in capsys.readouterr().err


def test_variability_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    rows = [(m, f"EX{i:02d}", t, float(rng.integers(6, 16))) for m in ("A", "B") for i in range(8) for t in (1, 2)]
    path = tmp_path / "totals.csv"
    pl.DataFrame(rows, schema=["model", "item", "trial", "total"], orient="row").write_csv(path)
    out, units = tmp_path / "var.csv", tmp_path / "units.csv"
    code = main(["variability", str(path), "--unit-col", "item", "--trial-col", "trial", "--group-col", "model",
                 "--cols", "total", "--units-out", str(units), "-o", str(out)])  # fmt: skip
    assert code == 0
    t = pl.read_csv(out)
    assert t.columns == ["group", "variable", "form", "mcgraw_wong", "n_units", "n_trials", "icc", "ci_low", "ci_high",
                         "f", "df1", "df2", "p", "sd_within", "mean_unit_sd", "reason"]  # fmt: skip
    assert t.height == 12 and pl.read_csv(units).height == 16
    dup = tmp_path / "dup.csv"
    pl.DataFrame(rows + rows[:1], schema=["model", "item", "trial", "total"], orient="row").write_csv(dup)
    assert main(["variability", str(dup), "--group-col", "model", "-o", str(tmp_path / "v2.csv")]) == 2
    assert "more than once" in capsys.readouterr().err


GENERAL = ["concision", "vocabulary", "accuracy", "formatting", "tone", "actionability", "targeting"]
SLOT = ["hint_not_answer", "ack_progress", "build_on_success", "concept_clarity"]


def _scores(tmp_path: Path) -> Path:
    """studies.md §5 worked example: models A and B, items EX01 (debug), EX09 (iterative), EX16 (conceptual)."""
    spec = [
        ("A", "EX01", [2, 2, 1, 2, 2, 1, 1], "hint_not_answer", 1),
        ("A", "EX09", [2, 2, 2, 2, 2, 1, 1], "ack_progress", 2),
        ("A", "EX16", [2, 2, 2, 2, 2, 2, 1], "concept_clarity", 2),
        ("B", "EX01", [2, 1, 2, 2, 1, 1, 1], "hint_not_answer", 0),
        ("B", "EX09", [1, 1, 2, 2, 1, 1, 1], "ack_progress", 1),
        ("B", "EX16", [2, 2, 2, 2, 2, 1, 1], "concept_clarity", 2),
    ]
    rows = []
    for i, (model, item, general, slot, value) in enumerate(spec):
        row = {"exchange_id": f"x{i}", "model": model, "item": item, **dict(zip(GENERAL, general, strict=True))}
        row.update({s: (value if s == slot else None) for s in SLOT})
        rows.append(row)
    path = tmp_path / "scores.csv"
    pl.DataFrame(rows, schema={"exchange_id": pl.String, "model": pl.String, "item": pl.String,
                               **{c: pl.Int64 for c in GENERAL + SLOT}}).write_csv(path)  # fmt: skip
    return path


def _total_args(path: Path) -> list[str]:
    return ["summarize", str(path), "--group-col", "model", "--n-resamples", "0",
            "--total", "total=" + "+".join(GENERAL) + "+specific", "--slot", "specific=" + ",".join(SLOT), "--max", "16"]  # fmt: skip


def test_summarize_total_worked_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scores(tmp_path)
    out, rows = tmp_path / "pooled.csv", tmp_path / "totals.csv"
    assert main([*_total_args(path), "--totals-out", str(rows), "-o", str(out)]) == 0
    t = pl.read_csv(out)
    assert t.columns[-2:] == ["pct_of_max", "rank"]
    tot = t.filter(pl.col("variable") == "total")
    assert t["variable"].unique(maintain_order=True).to_list()[-1] == "total"
    a, b = tot.row(0, named=True), tot.row(1, named=True)
    assert (a["n"], a["median"], a["rank"], b["n"], b["median"], b["rank"]) == (3, 14, 1, 3, 10, 2)
    assert a["mean"] == pytest.approx(13.6666667, abs=5e-8) and a["sd"] == pytest.approx(1.5275252, abs=5e-8)
    assert a["pct_of_max"] == pytest.approx(85.4166667, abs=5e-8) and b["pct_of_max"] == pytest.approx(70.8333333, abs=5e-8)
    assert b["mean"] == pytest.approx(11.3333333, abs=5e-8) and b["sd"] == pytest.approx(2.3094011, abs=5e-8)
    assert t.filter(pl.col("variable") != "total")["rank"].is_null().all()
    r = pl.read_csv(rows)
    assert r["total"].to_list() == [12, 14, 15, 10, 10, 14]
    assert r["pct_of_max"].to_list() == [75, 87.5, 93.75, 62.5, 62.5, 87.5]
    # the paper table: the total with % of max and rank; transposed on request
    md = tmp_path / "t.md"
    assert main([*_total_args(path), "--vars", "accuracy,total", "-o", str(md)]) == 0
    lines = md.read_text().splitlines()
    assert lines[0] == "| model | accuracy | total | \\% of max | rank |"
    assert lines[2] == "| A | 1.667 | 13.667 | 85.4 | 1 |"
    tex = tmp_path / "t.tex"
    assert main([*_total_args(path), "--vars", "total", "--transpose", "-o", str(tex)]) == 0
    body = tex.read_text()
    assert "variable & A & B" in body and r"\% of max & 85.4 & 70.8" in body and "rank & 1 & 2" in body


def test_summarize_total_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scores(tmp_path)
    frame = pl.read_csv(path).with_columns(pl.when(pl.col("item") == "EX01").then(1).otherwise(pl.col("ack_progress")).alias("ack_progress"))
    two = tmp_path / "two.csv"
    frame.write_csv(two)
    assert main([*_total_args(two), "-o", str(tmp_path / "o.csv")]) == 2
    assert "row 1: slot 'specific' has 2 values (hint_not_answer, ack_progress)" in capsys.readouterr().err
    assert main(["summarize", str(path), "--group-col", "model", "--max", "16", "-o", str(tmp_path / "o.csv")]) == 2
    assert "need --total" in capsys.readouterr().err
    assert main(["summarize", str(path), "--group-col", "model", "--total", "total=accuracy+nope", "-o", str(tmp_path / "o.csv")]) == 2
    assert "'nope' is neither a column nor a criterion" in capsys.readouterr().err
    # an empty slot makes the total missing in that row, counted on stderr
    empty = tmp_path / "empty.csv"
    pl.read_csv(path).with_columns(pl.lit(None, dtype=pl.Int64).alias("concept_clarity")).write_csv(empty)
    assert main([*_total_args(empty), "-o", str(tmp_path / "e.csv")]) == 0
    assert "total missing in 2 row(s)" in capsys.readouterr().err
    assert pl.read_csv(tmp_path / "e.csv").filter(pl.col("variable") == "total")["n"].to_list() == [2, 2]


def test_paper_table_keeps_diagnostics_out(tmp_path: Path) -> None:
    frame = pl.DataFrame({"exchange_id": ["a", "b", "c", "d"], "tutor": ["T", "T", "U", "U"], "ttr": [0.5, 0.6, 0.4, 0.3],
                          "resp_windows": [1, 1, 2, 1], "resp_truncated": [0, 0, 1, 0], "turn": [1, 2, 1, 2]})  # fmt: skip
    ratings = pl.DataFrame({"exchange_id": list("abcd"), "rater": ["h"] * 4, "criterion": ["tone"] * 4, "score": [1, 0, 1, 1]})
    m, r = tmp_path / "m.csv", tmp_path / "r.csv"
    frame.write_csv(m)
    ratings.write_csv(r)
    md = tmp_path / "s.md"
    assert main(["summarize", str(m), "--ratings", str(r), "--n-resamples", "0", "-o", str(md)]) == 0
    assert md.read_text().splitlines()[0] == "| tutor | ttr | tone\\_score |"  # no diagnostics, no duplicate _endorsed
    csv = tmp_path / "s.csv"
    assert main(["summarize", str(m), "--ratings", str(r), "--n-resamples", "0", "-o", str(csv)]) == 0
    assert pl.read_csv(csv)["variable"].unique(maintain_order=True).to_list() == ["ttr", "tone_score", "tone_endorsed"]
    assert main(["summarize", str(m), "--n-resamples", "0", "--vars", "zzz", "-o", str(md)]) == 2


def test_agree_na_and_two_judges_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import krippendorff

    rng = np.random.default_rng(3)
    rows = []
    for u in range(30):
        truth = int(rng.integers(0, 2))
        na = rng.random() < 0.3
        for r in ("h1", "h2", "h3"):
            rows.append((f"u{u}", r, "tone", -1 if na else (truth if rng.random() < 0.8 else 1 - truth)))
        rows.append((f"u{u}", "llm", "tone", -1 if na else 1))
        rows.append((f"u{u}", "slm", "tone", -1 if na else truth))
    path = tmp_path / "ann.csv"
    frame = pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")
    frame.write_csv(path)
    out = tmp_path / "alpha.csv"
    assert main(["agree", str(path), "-o", str(out), "--n-resamples", "0"]) == 0
    assert 'pass --na -1' in capsys.readouterr().err
    assert main(["agree", str(path), "--na", "-1", "-o", str(out), "--n-resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert "recode -1 -> missing:" in err and "pass --na" not in err
    kept = frame.filter((pl.col("score") != -1) & pl.col("rater").str.starts_with("h"))
    units = sorted(kept["exchange_id"].unique().to_list())
    data = np.full((3, len(units)), np.nan)
    for u, r, _, s in kept.iter_rows():
        data[int(r[1]) - 1, units.index(u)] = s
    humans_only = tmp_path / "h.csv"
    kept.write_csv(humans_only)
    assert main(["agree", str(humans_only), "-o", str(out), "--n-resamples", "0"]) == 0
    alpha = pl.read_csv(out)["krippendorff_alpha"][0]
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12)
    judges = tmp_path / "judges.csv"
    assert main(["agree", str(path), "--na", "-1", "--judge", "llm", "--judge", "slm", "-o", str(judges), "--n-resamples", "0"]) == 0
    t = pl.read_csv(judges)
    assert t["judge"].unique(maintain_order=True).to_list() == ["llm", "slm"]
    assert t.filter(pl.col("judge") == "llm")["pct_max_judge"].to_list() == [100.0] * 4 + [100.0] * 4  # + the pooled rows
    assert "leniency: llm on tone: 100.0% of max" in capsys.readouterr().err
    assert main(["agree", str(path), "--judge", "llm", "--judge", "llm", "-o", str(judges)]) == 2
    assert "given twice" in capsys.readouterr().err


def test_run_example_fairness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fair"
    assert main(["run", "--example", "fairness", "-o", str(out), "--n-resamples", "199"]) == 0
    fair = pl.read_csv(out / "fair.csv")
    assert fair.columns[:4] == ["model", "domain", "dimension", "dimension_value"]
    # per subset: gender has no Friedman row, ses has one per metric (k = 3), none with n = 0
    ses = fair.filter(pl.col("dimension_value") == "ses")
    assert set(ses.filter(pl.col("test") == "friedman")["k"]) == {3} and fair["n"].min() >= 14  # a dialogue with every turn -1 has no rate
    assert fair.filter(pl.col("dimension_value") == "gender")["test"].unique().to_list() == ["wilcoxon"]
    # the built-in effect: tutor-b scaffolds female students more in math
    hit = fair.filter((pl.col("model") == "tutor-b") & (pl.col("domain") == "math") & (pl.col("metric") == "step_scaffolded")
                      & (pl.col("group_a") == "female")).row(0, named=True)  # fmt: skip
    assert hit["r_rb"] > 0.5 and hit["favoured"] == "female" and hit["mean_diff"] > 0
    cells = pl.read_csv(out / "cells.csv")
    assert cells["model"].to_list() == ["tutor-a", "tutor-b"] and (cells["n_cells"] == 4).all()
    rates = pl.read_csv(out / "rates.csv")
    assert rates.height == 2 * 2 * 16 * 5 and (rates["step_scaffolded_n"] + rates["step_scaffolded_n_na"] == 4).all()
    assert (out / "effects.png").stat().st_size > 10_000
    assert "domain-dimension cells" in capsys.readouterr().err


def test_rubric_benchmark_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/studies.md §2: summarize --totals-out -> compare trials per model -> variability."""
    rng = np.random.default_rng(11)
    rows = []
    for m in ("A", "B", "C"):
        for i in range(16):
            kind = SLOT[i % 4]
            skill = rng.normal(0, 0.4)
            for trial in (1, 2):
                general = np.clip(np.round(1.2 + skill + 0.3 * (trial - 1) + rng.normal(0, 0.5, 7)), 0, 2).astype(int)
                row = {"exchange_id": f"{m}{i}t{trial}", "model": m, "item": f"EX{i:02d}", "trial": trial, **dict(zip(GENERAL, general.tolist(), strict=True))}
                row.update({s: (int(np.clip(round(1 + skill + rng.normal(0, 0.5)), 0, 2)) if s == kind else None) for s in SLOT})
                rows.append(row)
    scores = tmp_path / "scores.csv"
    pl.DataFrame(rows).write_csv(scores)
    totals = tmp_path / "totals.csv"
    assert main([*_total_args(scores), "--totals-out", str(totals), "-o", str(tmp_path / "pooled.csv")]) == 0
    trials, improved = tmp_path / "trials.csv", tmp_path / "improved.csv"
    assert main(["compare", str(totals), "--group-col", "trial", "--groups", "1,2", "--block-col", "item", "--dimension", "model",
                 "--metrics-cols", "total", "--n-resamples", "199", "--summary", str(improved), "--by", "dimension", "-o", str(trials)]) == 0  # fmt: skip
    t = pl.read_csv(trials)
    assert t["dimension_value"].to_list() == ["A", "B", "C"] and (t["mean_diff"] < 0).sum() >= 2
    s = pl.read_csv(improved)
    assert s["n_contrasts"][0] == 3 and s["n_b_higher"][0] == int((t["mean_diff"] < 0).sum())
    assert "total: 2 > 1 in" in capsys.readouterr().err
    var = tmp_path / "var.csv"
    assert main(["variability", str(totals), "--unit-col", "item", "--trial-col", "trial", "--group-col", "model", "--cols", "total", "-o", str(var)]) == 0
    v = pl.read_csv(var)
    assert v.height == 18 and (v.filter(pl.col("form") == "ICC2")["icc"] <= v.filter(pl.col("form") == "ICC3")["icc"] + 1e-12).all()


def test_summarize_total_with_rating_criteria(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = pl.DataFrame({"exchange_id": ["a", "b", "c", "d"], "tutor": ["T", "T", "U", "U"], "bonus": [1, 0, 1, 1]})
    r = pl.DataFrame({"exchange_id": list("aabbccdd"), "rater": ["h1", "h2"] * 4, "criterion": ["tone"] * 8,
                      "score": [2, 1, 0, 0, 2, 2, 1, 1]})  # fmt: skip
    mp, rp, out, rows = tmp_path / "m.csv", tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "rows.csv"
    m.write_csv(mp)
    r.write_csv(rp)
    args = ["summarize", str(mp), "--ratings", str(rp), "--n-resamples", "0", "--total", "total=tone+bonus", "--max", "3"]
    assert main([*args, "--totals-out", str(rows), "-o", str(out)]) == 0
    t = pl.read_csv(rows)
    assert t.columns == ["exchange_id", "tutor", "bonus", "tone_score", "total", "pct_of_max"]
    assert t["total"].to_list() == [2.5, 0.0, 3.0, 2.0] and t["pct_of_max"][0] == pytest.approx(250 / 3)
    s = pl.read_csv(out).filter(pl.col("variable") == "total")
    assert s["rank"].to_list() == [2, 1] and s["mean"].to_list() == [1.25, 2.5]
    clash = tmp_path / "clash.csv"
    m.with_columns(pl.col("bonus").alias("tone")).write_csv(clash)
    assert main(["summarize", str(clash), "--ratings", str(rp), "--n-resamples", "0", "--total", "total=tone+bonus", "-o", str(out)]) == 2
    assert "both a column and a criterion" in capsys.readouterr().err


def _refused(capsys: pytest.CaptureFixture[str], code: int, *fragments: str) -> str:
    """Exit 2 with one ``error:`` line naming ``fragments``, no exception class name, no traceback."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1, err
    assert all(f in errors[0] for f in fragments), err
    assert "Error" not in errors[0] and "Traceback" not in err, err
    return err


def test_table_commands_refuse_hostile_tables_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: aggregate's output names and infinite labels, variability's and compare's option clashes."""
    clash = tmp_path / "clash.csv"
    clash.write_text("q,n_rows,a,a_n\nq1,1,1,0\nq1,0,0,1\n")
    out = tmp_path / "o.csv"
    _refused(capsys, main(["aggregate", str(clash), "--by", "q", "-o", str(out)]), "'n_rows' (the row count and label 'n_rows')", "'a_n'")
    inf = tmp_path / "inf.csv"
    inf.write_text("q,lab\nq1,1\nq1,0\nq2,inf\n")
    _refused(capsys, main(["aggregate", str(inf), "--by", "q", "-o", str(out)]), "row 3", "'lab'", "inf")
    trials = tmp_path / "trials.csv"
    trials.write_text("item,trial,grp,x\n1,1,a,1\n1,2,a,2\n2,1,a,3\n2,2,a,5\n")
    _refused(capsys, main(["variability", str(trials), "--unit-col", "item", "--trial-col", "item", "-o", str(out)]),
             "--unit-col and --trial-col both name the column 'item'")  # fmt: skip
    _refused(capsys, main(["compare", str(trials), "--group-col", "grp", "--block-col", "grp", "--n-resamples", "0", "-o", str(out)]),
             "--group-col and --block-col both name the column 'grp'")  # fmt: skip
    _refused(capsys, main(["aggregate", str(trials), "--by", "item", "--cols", "x,item", "-o", str(out)]), "--by and --cols")
    assert not out.exists()


def test_table_commands_say_what_they_leave_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: a 0/1 label with R's NA is aggregated (NA missing); one with another spelling is left out with a
    note; variability counts the rows with an empty trial or group it leaves out."""
    turns = tmp_path / "turns.csv"
    turns.write_text("q,lab,odd\nq1,1,1\nq1,NA,n.a.\nq2,0,0\n")
    rates = tmp_path / "rates.csv"
    assert main(["aggregate", str(turns), "--by", "q", "-o", str(rates)]) == 0
    err = capsys.readouterr().err
    assert pl.read_csv(rates).columns == ["q", "n_rows", "lab", "lab_n", "lab_n_na"]
    assert "'odd' left out of the default labels: row 2 holds 'n.a.'" in err and "--cols" in err
    trials = tmp_path / "trials.csv"
    trials.write_text("item,trial,grp,x\n1,1,a,1\n1,2,a,2\n2,1,a,3\n2,2,a,5\n3,1,,3\n3,,a,4\n")
    assert main(["variability", str(trials), "--group-col", "grp", "-o", str(tmp_path / "v.csv")]) == 0
    err = capsys.readouterr().err
    assert "variability: 2 row(s) with an empty unit, trial or group left out (--trial-col 1, --group-col 1)" in err


def test_summarize_counts_the_variables_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: ``summarize --vars resp_words,ttr`` said "24 variables" for a 2-variable table."""
    metrics = tmp_path / "m.csv"
    rng = np.random.default_rng(1)
    pl.DataFrame({"exchange_id": [f"e{i}" for i in range(12)], "tutor": ["A", "B"] * 6,
                  **{f"v{j}": rng.normal(size=12) for j in range(6)}}).write_csv(metrics)  # fmt: skip
    out = tmp_path / "s.csv"
    assert main(["summarize", str(metrics), "--vars", "v2,v0", "--n-resamples", "0", "-o", str(out)]) == 0
    assert "summarize: 2 groups x 2 variables" in capsys.readouterr().err
    assert pl.read_csv(out)["variable"].n_unique() == 2
    assert main(["summarize", str(metrics), "--n-resamples", "0", "-o", str(tmp_path / "s.md")]) == 0
    assert "summarize: 2 groups x 6 variables" in capsys.readouterr().err
