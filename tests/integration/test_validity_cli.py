"""End-to-end tests of the ``validate`` and ``heatmap`` commands on a throwaway Typer app."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from tutormetrics.commands.validity import register
from tutormetrics.validity.correlate import DIAGNOSTIC_COLUMNS, RESULT_COLUMNS


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    n = 80
    ids = [f"ex{i:03d}" for i in range(n)]
    quality = rng.normal(size=n)
    metrics = pl.DataFrame(
        {
            "exchange_id": ids,
            "resp_chars": np.round(40 + 20 * quality + 10 * rng.normal(size=n)),
            "ttr": rng.uniform(size=n),
            "resp_windows": np.ones(n, dtype=int),
            "resp_truncated": np.zeros(n, dtype=int),  # a Scorer flag by name (issue 22: no suffix guess)
            "tutor": ["GPT4"] * n,
        }
    )
    rows = []
    for i, ex in enumerate(ids):
        for rater in ("r1", "r2"):
            rows.append((ex, rater, "guidance", float(quality[i] + rng.normal() > 0)))
            rows.append((ex, rater, "coherence", float(rng.uniform() > 0.3)))
    ratings = pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")
    theta = pl.DataFrame({"exchange_id": ids[:70], "theta": quality[:70] + 0.3 * rng.normal(size=70), "theta_sd": 0.4})
    paths = {"metrics": tmp_path / "metrics.csv", "ratings": tmp_path / "ratings.csv", "theta": tmp_path / "theta.csv"}
    metrics.write_csv(paths["metrics"])
    ratings.write_csv(paths["ratings"])
    theta.write_csv(paths["theta"])
    return paths


def test_validate_writes_table_and_matrix(app: typer.Typer, files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "corr.csv"
    args = ["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--theta", str(files["theta"])]
    result = CliRunner().invoke(app, [*args, "--n-resamples", "199", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pl.read_csv(out)
    assert table.columns == [*RESULT_COLUMNS, *DIAGNOSTIC_COLUMNS]
    assert table.select("metric", "target").rows() == [
        (m, t) for m in ("resp_chars", "ttr") for t in ("guidance", "coherence", "theta")
    ]
    assert table.filter(pl.col("target") == "theta")["n"].to_list() == [70, 70]
    assert table.filter(pl.col("target") == "guidance")["n"].to_list() == [80, 80]
    best = table.filter((pl.col("metric") == "resp_chars") & (pl.col("target") == "theta")).row(0, named=True)
    assert best["rho"] > 0.5 and best["stars"] == "***" and best["ci_method"] == "bca"
    matrix = pl.read_csv(out.parent / "corr_rho_matrix.csv")
    assert matrix.columns == ["metric", "guidance", "coherence", "theta"]
    assert "80 of 80 metric rows matched ratings; 0 rating ids without metrics" in result.stderr
    assert "70 of 80 metric rows matched theta" in result.stderr
    assert "resp_chars ~ theta" in result.stderr


def test_validate_options(app: typer.Typer, files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "corr.parquet"
    result = CliRunner().invoke(
        app,
        [
            "validate", str(files["metrics"]), "--ratings", str(files["ratings"]),
            "--aggregate", "per_rater", "--targets-from", "guidance", "--metrics-cols", "resp_chars",
            "--adjust", "holm", "--ci", "fisher", "--stars-on", "p", "--n-min", "5", "-o", str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    table = pl.read_parquet(out)
    assert table["target"].to_list() == ["guidance@r1", "guidance@r2"]
    assert set(table["adjust"]) == {"holm"} and set(table["ci_method"]) == {"fisher"}
    assert (out.parent / "corr_rho_matrix.csv").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--aggregate", "median"], "unknown aggregate 'median'"),
        (["--adjust", "fdr"], "fdr"),
        (["--metrics-cols", "nope"], "nope"),
        (["--targets-from", "humour"], "humour"),
    ],
)
def test_validate_errors(app: typer.Typer, files: dict[str, Path], tmp_path: Path, extra: list[str], message: str) -> None:
    """A bad option or a missing column: one ``error:`` line naming it, exit 2, nothing written."""
    args = ["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "-o", str(tmp_path / "c.csv")]
    result = CliRunner().invoke(app, [*args, "--ci", "none", *extra])
    assert result.exit_code == 2 and result.output.startswith("error:") and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "c.csv").exists()


def test_validate_needs_targets_and_a_known_output(app: typer.Typer, files: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(files["metrics"]), "-o", str(tmp_path / "c.csv")])
    assert result.exit_code == 2 and result.output.startswith("error:"), result.output
    result = CliRunner().invoke(
        app, ["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "-o", str(tmp_path / "c.xlsx")]
    )
    assert result.exit_code == 2 and result.output.startswith("error:"), result.output
    result = CliRunner().invoke(
        app, ["validate", str(tmp_path / "missing.csv"), "--ratings", str(files["ratings"]), "-o", str(tmp_path / "c.csv")]
    )
    assert result.exit_code == 2 and result.output.startswith("error:"), result.output


def test_heatmap_command(app: typer.Typer, files: dict[str, Path], tmp_path: Path) -> None:
    corr = tmp_path / "corr.csv"
    result = CliRunner().invoke(
        app, ["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--ci", "fisher", "-o", str(corr)]
    )
    assert result.exit_code == 0, result.output
    for ext in ("png", "svg", "pdf"):
        fig = tmp_path / f"fig.{ext}"
        result = CliRunner().invoke(
            app,
            ["heatmap", str(corr), "-o", str(fig), "--mask-nonsignificant", "--order", "cluster", "--title", "T", "--dpi", "100"],
        )
        assert result.exit_code == 0, result.output
        assert fig.stat().st_size > 1000
    result = CliRunner().invoke(app, ["heatmap", str(corr), "-o", str(tmp_path / "fig.gif")])
    assert result.exit_code == 2 and result.output.startswith("error:"), result.output
    result = CliRunner().invoke(app, ["heatmap", str(corr), "-o", str(tmp_path / "f.png"), "--value", "nope"])
    assert result.exit_code == 2 and result.output.startswith("error:"), result.output


@pytest.mark.mrbench
def test_validate_on_mrbench(app: typer.Typer, mrbench_dir: Path, tmp_path: Path) -> None:
    ex = pl.read_csv(mrbench_dir / "exchanges.csv")
    metrics = tmp_path / "metrics.csv"
    pl.DataFrame({"exchange_id": ex["exchange_id"], "resp_chars": [len(r) for r in ex["response"]]}).write_csv(metrics)
    out = tmp_path / "corr.csv"
    result = CliRunner().invoke(
        app, ["validate", str(metrics), "--ratings", str(mrbench_dir / "ratings.csv"), "--n-resamples", "499", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "1,655 of 1,655 metric rows matched ratings; 0 rating ids without metrics" in result.stderr
    table = pl.read_csv(out)
    assert table.height == 8 and (table["n"] == 1655).all()


def test_validate_can_estimate_theta(example_dir, tmp_path):
    from tutormetrics.cli import main

    metrics = tmp_path / "m.csv"
    assert main(["score", str(example_dir / "exchanges.csv"), "--prompt", "query", "-m", "length", "-o", str(metrics)]) == 0
    out = tmp_path / "corr.csv"
    args = ["validate", str(metrics), "--ratings", str(example_dir / "ratings.csv"), "--ci", "fisher", "-o", str(out)]
    assert main([*args, "--estimate-theta"]) == 0
    assert "theta" in set(pl.read_csv(out)["target"])
    assert (tmp_path / "corr_theta.csv").exists()
    assert main(args) == 0
    assert "theta" not in set(pl.read_csv(out)["target"])
