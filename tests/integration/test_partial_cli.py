"""`validate --control`, `heatmap --compare-control` and their errors, through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.engine import Scorer
from tutormetrics.stats.partial import partial_spearman


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(1)
    n = 60
    ids = [f"ex{i:02d}" for i in range(n)]
    words = rng.integers(5, 90, n).astype(float)
    quality = words / 30 + rng.normal(size=n)
    metrics = pl.DataFrame(
        {"exchange_id": ids, "resp_words": words, "ttr": 1 - words / 120 + rng.normal(0, 0.05, n), "noise": rng.normal(size=n)}
    )
    rows = [(ex, r, "guidance", float(quality[i] + rng.normal() > 1.5)) for i, ex in enumerate(ids) for r in ("r1", "r2")]
    ratings = pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")
    paths = {"metrics": tmp_path / "metrics.csv", "ratings": tmp_path / "ratings.csv"}
    metrics.write_csv(paths["metrics"])
    ratings.write_csv(paths["ratings"])
    return paths


def test_validate_control_writes_raw_then_partial(files, tmp_path):
    out = tmp_path / "corr.csv"
    code = main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--control", "resp_words",
                 "--ci", "none", "-o", str(out)])
    assert code == 0
    t = pl.read_csv(out, schema_overrides={"control": pl.String, "reason": pl.String, "stars": pl.String})
    assert t["control"].fill_null("").to_list() == ["", "", "", "resp_words", "resp_words", "resp_words"]
    assert (tmp_path / "corr_rho_matrix.csv").exists() and (tmp_path / "corr_rho_matrix_partial.csv").exists()
    m = pl.read_csv(files["metrics"])
    y = pl.read_csv(files["ratings"]).group_by("exchange_id").agg(pl.col("score").mean())
    d = m.join(y, on="exchange_id")
    rho, p = partial_spearman(d["ttr"].to_numpy(), d["score"].to_numpy(), d["resp_words"].to_numpy())
    row = t.filter((pl.col("control") == "resp_words") & (pl.col("metric") == "ttr")).row(0, named=True)
    assert row["rho"] == pytest.approx(rho, abs=1e-12) and row["p"] == pytest.approx(p, abs=1e-12)
    assert t.filter((pl.col("control") == "resp_words") & (pl.col("metric") == "resp_words"))["reason"][0] == "constant"

    fig = tmp_path / "cmp.png"
    assert main(["heatmap", str(out), "--compare-control", "-o", str(fig)]) == 0
    assert fig.stat().st_size > 10_000
    assert main(["heatmap", str(out), "-o", str(tmp_path / "partial.svg")]) == 0
    assert "controlling for resp_words" in (tmp_path / "partial.svg").read_text()


@pytest.mark.parametrize(
    ("control", "message"),
    [
        ("resp_wrds", "did you mean 'resp_words'"),
        ("guidance", "also targets"),
        ("const", "constant"),
    ],
)
def test_bad_control_exits_2(files, tmp_path, capsys, control, message):
    m = pl.read_csv(files["metrics"]).with_columns(pl.lit(3.0).alias("const"))
    m.write_csv(files["metrics"])
    out = tmp_path / "c.csv"
    code = main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--control", control,
                 "--ci", "none", "-o", str(out)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_compare_control_needs_partial_rows(files, tmp_path, capsys):
    out = tmp_path / "raw.csv"
    assert main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--ci", "none", "-o", str(out)]) == 0
    assert main(["heatmap", str(out), "--compare-control", "-o", str(tmp_path / "x.png")]) == 2
    assert "control" in capsys.readouterr().err


@pytest.mark.slow
def test_run_control_writes_both_tables_and_heatmaps(tmp_path):
    out = tmp_path / "run"
    code = main(["run", "--example", "--metrics", "length,lexical_diversity", "--ci", "none", "--no-estimate-theta",
                 "--control", "resp_words", "-o", str(out), "--no-progress"])
    assert code == 0
    for name in ("correlations.csv", "rho_matrix.csv", "rho_matrix_partial.csv", "heatmap.png", "heatmap_partial.png"):
        assert (out / name).exists(), name
    t = pl.read_csv(out / "correlations.csv", schema_overrides={"control": pl.String, "reason": pl.String, "stars": pl.String})
    assert set(t["control"].fill_null("")) == {"", "resp_words"}
    ctrl_rows = t.filter((pl.col("control") == "resp_words") & (pl.col("metric") == "resp_words"))
    assert ctrl_rows.height == 5 and (ctrl_rows["reason"] == "constant").all()
    n_metrics = len(Scorer("length,lexical_diversity").metric_columns())
    assert pl.read_csv(out / "rho_matrix.csv").height == pl.read_csv(out / "rho_matrix_partial.csv").height == n_metrics
