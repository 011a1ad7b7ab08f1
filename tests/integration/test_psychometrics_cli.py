"""CLI tests for the theta / agree / compare commands (throwaway Typer app + CliRunner)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from tutormetrics.commands.psychometrics import register
from tutormetrics.psychometrics.mfrm.mml import simulate_mfrm


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
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


def test_agree_single_rater_exit_2(app, runner, sim, tmp_path) -> None:
    res = runner.invoke(app, ["agree", str(sim["single"]), "-o", str(tmp_path / "a.csv")])
    assert res.exit_code == 2
    assert "at least 2 raters" in res.stderr
    assert "hint:" in res.stderr


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
    assert table.columns[:14] == [
        "metric", "group_a", "group_b", "n", "n_nonzero", "t_plus", "p", "p_adj",
        "adjust", "r_rb", "ci_low", "ci_high", "stars", "reason",
    ]  # fmt: skip
    assert table["metric"].to_list() == ["ttr", "words"]
    assert table["r_rb"][0] == 1.0 and table["stars"][0] == "***"
    res = runner.invoke(app, ["compare", str(path), "--groups", "A,Z", "-o", str(out)])
    assert res.exit_code == 2 and "not found" in res.stderr
    res = runner.invoke(app, ["compare", str(path), "--adjust", "bonferroni", "-o", str(out)])
    assert res.exit_code == 2
