"""CLI tests for the theta / agree / compare commands (throwaway Typer app + CliRunner)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from tutormetrics.commands import agree, compare, theta
from tutormetrics.psychometrics.mfrm.mml import simulate_mfrm


def register(app: typer.Typer) -> None:
    """The psychometrics commands on a bare app."""
    for module in (theta, agree, compare):
        module.register(app)


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def sim(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    gamma = rng.normal(0, 0.5, 5)
    beta = rng.normal(0, 0.5, (5, 2))
    beta -= beta.mean(axis=1, keepdims=True)
    ratings, truth = simulate_mfrm(n_items=80, seed=0, gamma=gamma, beta=beta)
    paths = {
        "ratings": tmp_path / "ratings.csv",
        "single": tmp_path / "single.csv",
        "cov": tmp_path / "cov.csv",
        "groups": tmp_path / "groups.csv",
    }
    ratings.write_csv(paths["ratings"])
    ratings.filter(pl.col("rater") == "r1").write_csv(paths["single"])
    truth.select("exchange_id", pl.col("v").alias("length_z"), pl.lit(1.0).alias("unused")).write_csv(paths["cov"])
    truth.select("exchange_id", pl.col("group").alias("tutor")).write_csv(paths["groups"])
    return paths


def test_theta_writes_tables_and_summary(app, runner, sim, tmp_path) -> None:
    out, facets = tmp_path / "theta.csv", tmp_path / "facets.csv"
    res = runner.invoke(app, ["theta", str(sim["ratings"]), "-o", str(out), "--facets", str(facets)])
    assert res.exit_code == 0, res.output
    theta = pl.read_csv(out)
    assert theta.columns == ["exchange_id", "theta", "theta_sd", "theta_low", "theta_high"]
    assert theta.height == 80
    ft = pl.read_csv(facets)
    assert set(ft["facet"]) == {"criterion", "rater", "baseline_probability"}
    assert "800 observations" in res.stderr and "reliability" in res.stderr and "converged True" in res.stderr
    assert res.stdout == ""


def test_theta_with_covariate_groups_and_model(app, runner, sim, tmp_path) -> None:
    out, facets = tmp_path / "theta.parquet", tmp_path / "facets.csv"
    res = runner.invoke(
        app,
        [
            "theta", str(sim["ratings"]), "-o", str(out), "--facets", str(facets),
            "--covariates", str(sim["cov"]), "--covariate-col", "length_z",
            "--groups", str(sim["groups"]), "--group-col", "tutor", "--model", "partial-credit",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    ft = pl.read_csv(facets)
    assert {"covariate:length_z", "group:g1", "group:g2"} <= set(ft["facet"])
    assert "MFRM partial_credit" in res.stderr
    assert pl.read_parquet(out).height == 80


def test_theta_single_rater_and_custom_columns(app, runner, sim, tmp_path) -> None:
    renamed = tmp_path / "renamed.csv"
    pl.read_csv(sim["single"]).rename({"exchange_id": "item", "score": "y"}).write_csv(renamed)
    out = tmp_path / "theta.csv"
    res = runner.invoke(app, ["theta", str(renamed), "-o", str(out), "--id", "item", "--score", "y"])
    assert res.exit_code == 0, res.output
    assert "rater facet dropped" in res.stderr
    assert pl.read_csv(out).columns[0] == "item"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "graded"], "unknown --model"),
        (["--score", "points"], "missing column"),
        (["--covariate-col", "x"], "needs --covariates"),
    ],
)
def test_theta_errors_exit_2(app, runner, sim, tmp_path, extra, message) -> None:
    res = runner.invoke(app, ["theta", str(sim["ratings"]), "-o", str(tmp_path / "t.csv"), *extra])
    assert res.exit_code == 2
    assert message in res.stderr
    assert not (tmp_path / "t.csv").exists()


def test_theta_missing_file_exit_2(app, runner, tmp_path) -> None:
    res = runner.invoke(app, ["theta", str(tmp_path / "nope.csv"), "-o", str(tmp_path / "t.csv")])
    assert res.exit_code == 2
    assert "not found" in res.stderr


def test_agree(app, runner, sim, tmp_path) -> None:
    out = tmp_path / "agree.csv"
    res = runner.invoke(app, ["agree", str(sim["ratings"]), "-o", str(out), "--n-resamples", "200", "--seed", "3"])
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    assert table["criterion"].to_list() == ["c1", "c2", "c3", "c4", "c5"]
    assert {"pa", "kappa", "ac1", "alpha_nominal", "kappa_ci_low", "reason"} <= set(table.columns)
    assert table["n"].to_list() == [80] * 5
    again = tmp_path / "again.csv"
    runner.invoke(app, ["agree", str(sim["ratings"]), "-o", str(again), "--n-boot", "200", "--seed", "3"])
    assert pl.read_csv(again).equals(table)


def test_agree_single_rater_is_a_reason_not_an_error(app, runner, sim, tmp_path) -> None:
    out = tmp_path / "a.csv"
    res = runner.invoke(app, ["agree", str(sim["single"]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    assert table["reason"].to_list() == ["one_rater"] * 5
    assert table["krippendorff_alpha"].is_null().all() or table["krippendorff_alpha"].is_nan().all()
    assert "see reason" in res.stderr


SPEC_JUDGE = {
    "A": [2, 2, 1, 0, 2, 1, 0, 2, 1, 2],
    "B": [2, 1, 1, 0, 2, 0, 0, 2, 2, 2],
    "C": [2, 2, 0, 0, 1, 1, None, 2, 0, 2],
    "J": [2, 2, 1, 1, 2, 0, 0, 1, 2, 2],
}


def _spec_judge_file(tmp_path: Path) -> Path:
    rows = [
        (f"u{i}", r, "guidance", v) for r, vals in SPEC_JUDGE.items() for i, v in enumerate(vals) if v is not None
    ]
    path = tmp_path / "judge.csv"
    pl.DataFrame(rows, schema=["item", "who", "criterion", "score"], orient="row").write_csv(path)
    return path


def test_agree_judge_spec_example(app, runner, tmp_path) -> None:
    path, out, conf = _spec_judge_file(tmp_path), tmp_path / "judge_out.csv", tmp_path / "conf.csv"
    res = runner.invoke(
        app,
        ["agree", str(path), "--judge", "J", "--id", "item", "--rater", "who", "--n-min", "9",
         "--n-resamples", "200", "-o", str(out), "--confusion", str(conf)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    assert table["criterion"].to_list() == ["guidance"] * 4 + ["(all)"] * 4  # paper.md §5: the pooled rows follow
    table = table.head(4)
    assert table["reference"].to_list() == ["A", "B", "C", "majority"]
    assert table["cohen_kappa"].to_list() == pytest.approx([0.3548387, 0.5238095, -0.0384615, 0.4705882], abs=5e-7)
    assert table["macro_f1_lenient"].to_list() == pytest.approx([0.6875, 0.8666667, 0.3571429, 0.6785714], abs=5e-7)
    assert table["reason"].fill_null("").to_list() == ["scale_inferred"] * 3 + ["majority_ties_1;scale_inferred"]
    confusion = pl.read_csv(conf)
    assert confusion.columns == ["judge", "criterion", "reference", "reference_score", "judge_score", "count"]  # studies.md §7
    assert confusion.filter(pl.col("reference") == "A")["count"].sum() == 10
    assert "4 references" in res.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--judge", "j"], "did you mean J"),
        (["--confusion", "x.csv"], "--confusion needs --judge"),
        (["--judge", "J", "--raters", "A,B"], "cannot be combined"),
    ],
)
def test_agree_judge_errors_exit_2(app, runner, tmp_path, extra, message) -> None:
    path = _spec_judge_file(tmp_path)
    res = runner.invoke(app, ["agree", str(path), "--id", "item", "--rater", "who", "-o", str(tmp_path / "o.csv"), *extra])
    assert res.exit_code == 2
    assert message in res.stderr
    assert not (tmp_path / "o.csv").exists()


def test_compare(app, runner, tmp_path) -> None:
    rng = np.random.default_rng(1)
    n = 20
    base = rng.normal(0, 1, n)
    metrics = pl.DataFrame(
        {
            "exchange_id": [f"{c}::{t}" for t in "ABC" for c in range(n)],
            "conversation_id": np.tile(np.arange(n), 3),
            "tutor": np.repeat(["A", "B", "C"], n),
            "ttr": np.r_[base + 0.8, base, base + rng.normal(0, 0.3, n)],
            "words": rng.normal(10, 2, 3 * n),
        }
    )
    path, out = tmp_path / "metrics.csv", tmp_path / "cmp.csv"
    metrics.write_csv(path)
    res = runner.invoke(
        app,
        [
            "compare", str(path), "--group-col", "tutor", "--block-col", "conversation_id",
            "--metrics-cols", "ttr,words", "--groups", "A,B", "--n-resamples", "199", "-o", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    assert table.columns[:15] == [  # issue 22: each metric's family follows it
        "metric", "metric_family", "group_a", "group_b", "n", "n_nonzero", "t_plus", "p", "p_adj",
        "adjust", "r_rb", "ci_low", "ci_high", "stars", "reason",
    ]  # fmt: skip
    assert table["metric"].to_list() == ["ttr", "words"]
    assert table["r_rb"][0] == 1.0 and table["stars"][0] == "***"
    res = runner.invoke(app, ["compare", str(path), "--groups", "A,Z", "-o", str(out)])
    assert res.exit_code == 2 and "not found" in res.stderr
    res = runner.invoke(app, ["compare", str(path), "--adjust", "sidak", "-o", str(out)])  # bonferroni is valid since studies.md §2.2
    assert res.exit_code == 2
