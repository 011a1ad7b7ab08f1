"""datasets.md §9.6 on the shared MathDial sample: conversation ratings are validated per conversation."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from tutormetrics.cli import main

PUBLIC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public"


@pytest.fixture(scope="module")
def mathdial(tmp_path_factory) -> Path:
    raw = PUBLIC / "mathdial" / "test_first40.csv"
    if not raw.exists():
        pytest.skip("../shared/data/public not available")
    out = tmp_path_factory.mktemp("mathdial") / "md"
    assert main(["convert", "mathdial", str(raw), "-o", str(out)]) == 0
    return out


def _run(md: Path, out: Path, *extra: str) -> int:
    return main(["run", str(md / "dialogues.csv"), "--dialogue", "--ratings", str(md / "ratings.csv"), "--metrics",
                 "lexical", "-o", str(out), "--n-resamples", "199", "--no-progress", "--no-estimate-theta", *extra])  # fmt: skip


def test_mathdial_conversation_level(mathdial, tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(mathdial, out) == 0
    err = capsys.readouterr().err
    assert ("validating conversations (ratings keyed by conversation_id: 40 conversations); the turn level needs "
            "--cluster-col conversation_id") in err
    assert not (out / "conversations_correlations.csv").exists() and not (out / "turns_correlations.csv").exists()
    corr = pl.read_csv(out / "correlations.csv")
    sc = corr.filter(pl.col("target") == "self_correctness")
    assert sc.height and sc["n"].max() == 40
    assert sc.filter(pl.col("metric") == "n_turns")["n"].item() == 40
    # ρ equals scipy on the CONV table joined with the mean rating per conversation
    conv = pl.read_csv(out / "conversations.csv", schema_overrides={"conversation_id": pl.String})
    ratings = pl.read_csv(mathdial / "ratings.csv", schema_overrides={"conversation_id": pl.String})
    target = ratings.filter(pl.col("criterion") == "self_correctness").group_by("conversation_id").agg(pl.col("score").mean())
    joined = conv.join(target, on="conversation_id")
    for metric in ("n_turns", "student_words", "mean_len_ratio"):
        row = sc.filter(pl.col("metric") == metric).row(0, named=True)
        assert row["rho"] == pytest.approx(stats.spearmanr(joined[metric], joined["score"]).statistic, abs=1e-12)
        assert row["p"] is not None
    run = json.loads((out / "run.json").read_text())
    assert run["level"] == "conversation" and run["n_conversations"] == 40


def test_mathdial_turn_level_with_clusters(mathdial, tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(mathdial, out, "--cluster-col", "conversation_id") == 0
    capsys.readouterr()
    assert (pl.read_csv(out / "correlations.csv")["n"].max()) == 40
    turns = pl.read_csv(out / "turns_correlations.csv")
    sc = turns.filter(pl.col("target") == "self_correctness")
    assert sc["n"].max() == 256 and (sc["n_clusters"] == 40).all()
    assert sc["p"].is_null().all() and sc["p_adj"].is_null().all() and (sc["stars"].fill_null("") == "").all()
    assert all("inherited_rating" in r for r in sc["reason"])
    # the notes' old headline (len_ratio ~ self_correctness, n = 216) is now a turn-level row without p
    row = sc.filter(pl.col("metric") == "len_ratio").row(0, named=True)
    assert row["n"] == 216 and row["rho"] == pytest.approx(0.2135630291904531, abs=1e-9)
    assert row["ci_method"] in ("cluster_bca", "cluster_percentile")
