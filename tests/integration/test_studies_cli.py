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
from test_compare_studies import toy  # noqa: E402


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
    assert t.columns[:3] == ["model", "dimension", "dimension_value"] and t.columns[-7:] == [
        "mean_a", "mean_b", "mean_diff", "diff_ci_low", "diff_ci_high", "family", "favoured"]  # fmt: skip
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
