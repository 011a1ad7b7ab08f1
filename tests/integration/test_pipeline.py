"""`tutormetrics run`: the README's demo (score → θ → agreement → validate → heatmap) end to end."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.engine import Scorer

STAT_COLUMNS = ["metric", "target", "n", "rho", "ci_low", "ci_high", "p", "p_adj", "adjust", "stars", "reason"]


@pytest.mark.model
@pytest.mark.slow  # the full example with the real encoder: ~20 s CPU, run once for this and getting-started's test
def test_run_example_values_match_scipy(demo_run, example_dir):
    out, err = demo_run  # `run --example -o demo-out`, as docs/getting-started.md gives it
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
    _check_correlations_against_scipy(out, example_dir / "ratings.csv", n_permutations=9999)


def _check_correlations_against_scipy(out, ratings_path, *, n_permutations: int) -> None:
    """Every cell of correlations.csv recomputed from the written metrics.csv, the ratings (mean over
    raters per exchange and criterion) and theta.csv with scipy (statistics.md §1)."""
    from scipy import stats

    metrics = pl.read_csv(out / "metrics.csv")
    targets = (
        pl.read_csv(ratings_path)
        .group_by("exchange_id", "criterion")
        .agg(pl.col("score").cast(pl.Float64).mean())
        .pivot(on="criterion", index="exchange_id", values="score")
    )
    theta = pl.read_csv(out / "theta.csv").select("exchange_id", "theta")
    data = metrics.join(targets, on="exchange_id").join(theta, on="exchange_id")
    assert data.height == metrics.height == 40
    corr = pl.read_csv(out / "correlations.csv")
    n_metrics = len(Scorer("all").metric_columns())
    assert corr.height == n_metrics * 6 and corr["reason"].fill_null("").eq("").all()
    for row in corr.iter_rows(named=True):
        x = data[row["metric"]].cast(pl.Float64).to_numpy()
        y = data[row["target"]].cast(pl.Float64).to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        expected = stats.spearmanr(x[ok], y[ok])
        assert row["n"] == ok.sum()
        assert row["rho"] == pytest.approx(expected.statistic, abs=1e-12), (row["metric"], row["target"])
        assert row["ci_low"] <= row["rho"] <= row["ci_high"]
        assert 1 / (n_permutations + 1) <= row["p"] <= 1
    # n < 50: permutation p (§1.3); scipy's own permutation test, another seed, agrees within Monte Carlo error
    rng = np.random.default_rng(12345)
    for row in corr.filter(pl.col("metric").is_in(["ttr", "distinct_3"])).iter_rows(named=True):
        x, y = data[row["metric"]].to_numpy(), data[row["target"]].to_numpy()
        ry = stats.rankdata(y) - (len(y) + 1) / 2

        def rho(xp: np.ndarray, axis: int = -1, ry: np.ndarray = ry) -> np.ndarray:  # ρ along the last axis
            rx = stats.rankdata(xp, axis=axis) - (len(ry) + 1) / 2
            return (rx @ ry) / np.sqrt((rx * rx).sum(-1) * (ry @ ry))

        assert rho(x) == pytest.approx(row["rho"], abs=1e-12)
        ref = stats.permutation_test(
            (x,), rho, permutation_type="pairings", vectorized=True, n_resamples=n_permutations, rng=rng
        ).pvalue
        half = min(ref, row["p"]) / 2  # two-sided p = 2·min(one-sided tail shares)
        assert abs(row["p"] - ref) <= 0.002 + 2 * 5 * np.sqrt(max(half * (1 - half), 1e-3) / n_permutations), row
    # BH over the whole matrix of defined cells (§1.4), and the stars that follow from it
    assert corr["adjust"].eq("bh").all()
    np.testing.assert_allclose(corr["p_adj"].to_numpy(), stats.false_discovery_control(corr["p"].to_numpy()), rtol=1e-12)
    stars = ["***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "" for p in corr["p_adj"]]
    assert corr["stars"].fill_null("").to_list() == stars
    # rho_matrix.csv is the same ρ laid out metrics × targets
    matrix = pl.read_csv(out / "rho_matrix.csv")
    for row in corr.iter_rows(named=True):
        m_row = matrix.filter(pl.col("metric") == row["metric"])
        assert m_row[row["target"]].item() == pytest.approx(row["rho"], abs=1e-15)


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


@pytest.mark.slow  # score + validate (with θ) on all MRBench rows: ~25 s
def test_mrbench_score_validate_heatmap(mrbench_dir, tmp_path, capsys):
    """Issue 4's end-to-end claim on real data: all rows scored, every cell checked against scipy, a figure."""
    from scipy import stats

    metrics, corr, fig = tmp_path / "m.parquet", tmp_path / "corr.csv", tmp_path / "fig.svg"
    assert main(["score", str(mrbench_dir / "exchanges.csv"), "-m", "lexical", "-o", str(metrics), "--no-progress"]) == 0
    assert main(["validate", str(metrics), "--ratings", str(mrbench_dir / "ratings.csv"), "--n-resamples", "499",
                 "--estimate-theta", "-o", str(corr)]) == 0
    assert main(["heatmap", str(corr), "-o", str(fig)]) == 0
    err = capsys.readouterr().err
    assert "1,655 of 1,655 metric rows matched ratings" in err
    table = pl.read_csv(corr)
    assert set(table["target"]) >= {"mistake_identification", "revealing_of_the_answer", "humanlikeness", "theta"}
    assert fig.read_text().lstrip().startswith("<?xml")

    m = pl.read_parquet(metrics)
    ratings = pl.read_csv(mrbench_dir / "ratings.csv")
    target = ratings.filter(pl.col("criterion") == "providing_guidance").select("exchange_id", "score")
    joined = m.join(target, on="exchange_id")
    for metric in ("resp_words", "ttr", "jaccard_1", "flesch_reading_ease"):
        x, y = joined[metric].to_numpy(), joined["score"].to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        expected = stats.spearmanr(x[ok], y[ok])
        row = table.filter((pl.col("metric") == metric) & (pl.col("target") == "providing_guidance")).row(0, named=True)
        assert row["n"] == ok.sum()
        assert row["rho"] == pytest.approx(expected.statistic, abs=1e-12)
        assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
        assert row["ci_low"] <= row["rho"] <= row["ci_high"]


def test_run_group_col_typo_names_the_option_and_close_columns(tmp_path, example_dir, capsys):
    """Issue 35: ``run --group-col dialogue`` (a typo) said "choose another column with --keep" after reading the
    ratings; now exit 2 before any scoring, naming --group-col (and close names where there are some), not --keep."""
    for typo, close in (("dialogue", None), ("Tutor", "'tutor'")):
        code = main(["run", str(example_dir / "exchanges.csv"), "--ratings", str(example_dir / "ratings.csv"), "--prompt", "query",
                     "-m", "lexical", "--group-col", typo, "-o", str(tmp_path / "o"), "--no-progress"])  # fmt: skip
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and f"missing column {typo!r}" in errors[0], err
        assert "--group-col" in err and "--keep" not in err and "[1/4] scoring" not in err
        assert close is None or f"did you mean {close}?" in errors[0]
        assert not (tmp_path / "o").exists()
