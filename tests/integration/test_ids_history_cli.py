"""Composite ids (``datasets.md`` §3.1, §9.2) and ``score --history-col`` (§3.4, §9.4), end to end through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main

PUBLIC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public"
FAST = ["--n-resamples", "99", "--n-permutations", "99"]


def _public(*parts: str) -> Path:
    path = PUBLIC.joinpath(*parts)
    if not path.exists():
        pytest.skip("../shared/data/public not available")
    return path


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# --- §3.1 composite ids -------------------------------------------------------------------------------------


def test_uptake_composite_ids_score_and_validate_join(tmp_path, capsys):
    """§9.2: two --id build 4/65, 4/296, 7/69 …, the ids of `convert uptake`; validate with the same two --id joins
    every row and has no id row or target."""
    raw = _public("uptake", "uptake_data_first200.csv")
    m = tmp_path / "m.csv"
    assert main(["score", str(raw), "--id", "obs_id", "--id", "exchange_idx", "--prompt", "student_text", "--response",
                 "teacher_text", "--metrics", "lexical", "-o", str(m), "--no-progress"]) == 0
    scored = pl.read_csv(m, infer_schema_length=0)
    assert scored.height == 200 and scored.columns[:3] == ["exchange_id", "obs_id", "exchange_idx"]
    assert scored["exchange_id"].head(3).to_list() == ["4/65", "4/296", "7/69"]
    source = pl.read_csv(raw, infer_schema_length=0)
    assert scored["exchange_id"].to_list() == [f"{o}/{i}" for o, i in zip(source["obs_id"], source["exchange_idx"], strict=True)]
    roles = json.loads((tmp_path / "m.csv.manifest.json").read_text())["columns"]
    assert roles["id"] == ["exchange_id"] and roles["id_parts"] == ["obs_id", "exchange_idx"]
    assert not {"obs_id", "exchange_idx"} & set(roles["metrics"])

    converted = tmp_path / "up"
    assert main(["convert", "uptake", str(raw), "-o", str(converted)]) == 0
    assert pl.read_csv(converted / "exchanges.csv", infer_schema_length=0)["exchange_id"].to_list() == scored["exchange_id"].to_list()

    capsys.readouterr()
    corr = tmp_path / "c.csv"
    assert main(["validate", str(m), "--ratings", str(raw), "--id", "obs_id", "--id", "exchange_idx", "-o", str(corr),
                 *FAST, "--top", "0"]) == 0
    err = capsys.readouterr().err
    assert "200 of 200 metric rows matched ratings" in err
    assert "12 targets from wide ratings" in err
    table = pl.read_csv(corr)
    assert not {"obs_id", "exchange_idx"} & (set(table["metric"]) | set(table["target"]))
    assert table["target"].n_unique() == 12 and set(table["n"].drop_nulls()) <= set(range(201))


def test_parts_as_text_integers_as_digits_and_a_custom_separator(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("school,lesson,prompt,response\n007,1,What is 2+2?,It is 4.\n007,2,Why?,Because.\n")
    out = tmp_path / "o.csv"
    assert main(["score", str(csv), "--id", "school", "--id", "lesson", "--id-sep", "|", "--metrics", "lexical", "-o", str(out),
                 "--no-progress"]) == 0
    assert pl.read_csv(out, infer_schema_length=0)["exchange_id"].to_list() == ["007|1", "007|2"]
    parquet = tmp_path / "x.parquet"
    pl.DataFrame({"school": ["a", "b"], "lesson": [10, 2], "prompt": ["p", "q"], "response": ["r", "s"]}).write_parquet(parquet)
    assert main(["score", str(parquet), "--id", "school", "--id", "lesson", "--metrics", "lexical", "-o", str(out),
                 "--no-progress"]) == 0
    frame = pl.read_csv(out, infer_schema_length=0)
    assert frame["exchange_id"].to_list() == ["a/10", "b/2"] and frame.columns[:3] == ["exchange_id", "school", "lesson"]


@pytest.mark.parametrize(
    ("text", "extra", "needle"),
    [
        ("a,b,prompt,response\n1,x/y,p,r\n", [], "data row 1: id part 'b' = 'x/y' contains the separator '/'"),
        ("a,b,prompt,response\n1,2,p,r\n3,,p,r\n", [], "data row 2: id part 'b' is empty"),
        ("exchange_id,a,b,prompt,response\nq,1,2,p,r\n", [], "already has an 'exchange_id' column"),
        ("a,prompt,response\n1,p,r\n", [], "--id"),
        ("a,b,prompt,response\n1,2,p,r\n1,2,p,s\n", [], "2 rows share 1 ids in column 'exchange_id'"),
        ("a,b,prompt,response\n1,2,p,r\n", ["--id-sep", ""], "--id-sep is empty"),
    ],
)
def test_bad_composite_ids_are_exit_2(tmp_path, capsys, text, extra, needle):
    csv = tmp_path / "x.csv"
    csv.write_text(text)
    assert main(["score", str(csv), "--id", "a", "--id", "b", *extra, "--metrics", "lexical", "-o", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert needle in err and "hint:" in err
    assert not (tmp_path / "o.csv").exists()


def test_a_float_part_is_exit_2_naming_the_column(tmp_path, capsys):
    parquet = tmp_path / "x.parquet"
    pl.DataFrame({"a": [1.0], "b": [2], "prompt": ["p"], "response": ["r"]}).write_parquet(parquet)
    assert main(["score", str(parquet), "--id", "a", "--id", "b", "--metrics", "lexical", "-o", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert "id part 'a' holds Float64 values" in err and "cast it to text" in err


def _long_ratings(tmp_path: Path) -> tuple[Path, Path]:
    """The same long ratings keyed by the parts and by the joined id."""
    rows = []
    for o, i, scores in [("4", "65", (0, 1)), ("4", "296", (1, 1)), ("7", "69", (2, 1)), ("7", "80", (2, 2)), ("9", "1", (0, 0)),
                         ("9", "2", (1, 2))]:
        for rater, s in zip(("r1", "r2"), scores, strict=True):
            rows.append({"obs_id": o, "exchange_idx": i, "rater": rater, "criterion": "uptake", "score": s})
    parts = pl.DataFrame(rows)
    by_parts, joined = tmp_path / "parts.csv", tmp_path / "joined.csv"
    parts.write_csv(by_parts)
    parts.select(pl.concat_str("obs_id", "exchange_idx", separator="/").alias("exchange_id"), "rater", "criterion", "score").write_csv(joined)
    return by_parts, joined


def test_agree_and_theta_build_the_same_key(tmp_path):
    by_parts, joined = _long_ratings(tmp_path)
    ids = ["--id", "obs_id", "--id", "exchange_idx"]
    for command, extra in (("agree", ["--n-resamples", "99"]), ("theta", [])):
        a, b = tmp_path / f"{command}_a.csv", tmp_path / f"{command}_b.csv"
        assert main([command, str(by_parts), *ids, "-o", str(a), *extra]) == 0
        assert main([command, str(joined), "-o", str(b), *extra]) == 0
        assert pl.read_csv(a).equals(pl.read_csv(b)), command
    theta = pl.read_csv(tmp_path / "theta_a.csv", infer_schema_length=0)
    assert set(theta["exchange_id"]) == {"4/65", "4/296", "7/69", "7/80", "9/1", "9/2"}


def test_validate_uses_exchange_id_where_a_table_lacks_the_parts(tmp_path, capsys):
    by_parts, joined = _long_ratings(tmp_path)
    metrics = tmp_path / "m.csv"
    pl.DataFrame({"exchange_id": ["4/65", "4/296", "7/69", "7/80", "9/1", "9/2"],
                  "resp_words": [3.0, 5.0, 8.0, 9.0, 1.0, 4.0]}).write_csv(metrics)  # fmt: skip
    ids = ["--id", "obs_id", "--id", "exchange_idx"]
    out = tmp_path / "c.csv"
    assert main(["validate", str(metrics), "--ratings", str(by_parts), *ids, "-o", str(out), *FAST, "--n-min", "3", "--ci", "none"]) == 0
    assert pl.read_csv(out)["n"].to_list() == [6]
    no_key = tmp_path / "nokey.csv"
    pl.read_csv(joined).rename({"exchange_id": "item"}).write_csv(no_key)
    capsys.readouterr()
    assert main(["validate", str(metrics), "--ratings", str(no_key), *ids, "-o", str(out), *FAST]) == 2
    assert "has neither the id parts of --id obs_id --id exchange_idx" in _error(capsys)
    # a table scored with another separator is refused, not joined to nothing
    both = tmp_path / "both.csv"
    pl.read_csv(by_parts, infer_schema_length=0).with_columns(
        pl.concat_str("obs_id", "exchange_idx", separator="|").alias("exchange_id")).write_csv(both)
    assert main(["validate", str(metrics), "--ratings", str(both), *ids, "-o", str(out), *FAST]) == 2
    assert "is not its parts joined" in _error(capsys)


# --- §3.4 --history-col -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cima_exchanges(tmp_path_factory) -> Path:
    raw = _public("cima", "dataset_first80.json")
    out = tmp_path_factory.mktemp("cima")
    assert main(["convert", "cima", str(raw), "-o", str(out)]) == 0
    return out / "exchanges.csv"


def _score(path: Path, out: Path, *args: str) -> pl.DataFrame:
    assert main(["score", str(path), *args, "--metrics", "lexical", "-o", str(out), "--no-progress"]) == 0
    return pl.read_csv(out, infer_schema_length=10000)


def test_history_col_on_cima_gives_the_spec_numbers(cima_exchanges, tmp_path):
    h = _score(cima_exchanges, tmp_path / "h.csv", "--history-col", "prompt")
    assert h.height == 245 and h["exchange_id"].head(2).to_list() == ["0::0", "0::1"]
    assert h["exchange_id"].to_list() == pl.read_csv(cima_exchanges, infer_schema_length=0)["exchange_id"].to_list()
    assert h.columns[:2] == ["exchange_id", "ctx_turns"]
    assert not {"conversation_id", "turn", "tutor_turn"} & set(h.columns)
    cols = h.columns
    assert cols.index("prev_student_jaccard_1") < cols.index("resp_questions") < cols.index("prompt_empty")
    row = h.row(0, named=True)
    assert row["ctx_turns"] == 10 and row["resp_words"] == 19 and row["resp_questions"] == 0
    assert row["jaccard_1"] == pytest.approx(0.071429, abs=1e-6)
    assert row["contain_prompt_in_resp"] == pytest.approx(0.095238, abs=1e-6)
    assert row["prev_student_jaccard_1"] == pytest.approx(0.045455, abs=1e-6)
    second = h.row(1, named=True)
    assert (second["ctx_turns"], second["resp_words"], second["resp_questions"]) == (10, 12, 1)
    assert second["jaccard_1"] == pytest.approx(0.04, abs=1e-6)
    last = _score(cima_exchanges, tmp_path / "hl.csv", "--history-col", "prompt", "--context", "last").row(0, named=True)
    assert last["ctx_turns"] == 1
    assert last["jaccard_1"] == pytest.approx(0.045455, abs=1e-6)
    assert last["contain_prompt_in_resp"] == pytest.approx(0.2, abs=1e-6)
    manifest = json.loads((tmp_path / "h.csv.manifest.json").read_text())
    roles = manifest["columns"]
    assert roles["id"] == ["exchange_id"] and roles["structure"] == ["ctx_turns"] and "resp_questions" in roles["metrics"]
    assert manifest["stats"]["n_exchanges"] == 245  # only each row's final turn is scored, not every tutor turn of it


@pytest.mark.parametrize("context", ["full", "last", "2"])
def test_history_col_equals_the_final_turns_row_of_transcript_col(cima_exchanges, tmp_path, context):
    """§3.4's invariant: each row equals the last TURNS row of --transcript-col on the same row, except exchange_id,
    conversation_id, turn and tutor_turn."""
    h = _score(cima_exchanges, tmp_path / "h.csv", "--history-col", "prompt", "--keep", "response_index", "--context", context)
    turns = _score(cima_exchanges, tmp_path / "t.csv", "--transcript-col", "prompt", "--keep", "response_index", "--context", context)
    final = turns.group_by("conversation_id", maintain_order=True).last()
    assert turns.height > h.height and final["conversation_id"].to_list() == h["exchange_id"].to_list()
    shared = [c for c in h.columns if c != "exchange_id"]
    assert set(shared) == set(turns.columns) - {"exchange_id", "conversation_id", "turn", "tutor_turn"}
    assert h.columns[1] == "response_index"
    assert h.select(shared).equals(final.select(shared))


def test_history_col_with_tags_separators_speakers_and_an_empty_history(tmp_path):
    """§9.3's transcript as a history (--turn-sep, --speaker, --turn-tag), a row with an empty history (ctx_turns 0),
    and the invariant with --transcript-col on the same rows."""
    rows = pl.DataFrame({
        "item": ["e1", "e2", "e3"],
        "history": ["Teacher: (probing) What is 3 x 4?|EOM|Cody: 12", "", "Teacher: (focus)Add them.|EOM|Cody: 15?"],
        "response": ["(focus)Right. And 12 + 3?", "(generic)Hello, what are we solving?", "Yes! Why?"],
    })  # fmt: skip
    path = tmp_path / "rows.csv"
    rows.write_csv(path)
    args = ["--id", "item", "--turn-sep", "|EOM|", "--speaker", "Cody=student", "--turn-tag", r"\((?P<move>\w+)\)\s*"]
    h = _score(path, tmp_path / "h.csv", "--history-col", "history", *args)
    assert h.columns[:3] == ["item", "move", "ctx_turns"]
    assert h["move"].to_list() == ["focus", "generic", None] and h["ctx_turns"].to_list() == [2, 0, 2]
    e1 = h.row(0, named=True)  # §9.3's TURNS row e1:2
    assert e1["resp_words"] == 4 and e1["resp_questions"] == 1
    assert e1["jaccard_1"] == pytest.approx(0.25) and e1["contain_prompt_in_resp"] == pytest.approx(0.333333, abs=1e-6)
    assert e1["prev_student_jaccard_1"] == pytest.approx(0.25)
    e2 = h.row(1, named=True)
    assert e2["prompt_empty"] is True and e2["jaccard_1"] == 0.0 and math.isnan(e2["prev_student_jaccard_1"])
    turns = _score(path, tmp_path / "t.csv", "--transcript-col", "history", *args)
    final = turns.group_by("conversation_id", maintain_order=True).last()
    shared = [c for c in h.columns if c != "item"]
    assert h.select(shared).equals(final.select(shared), null_equal=True)


def test_history_col_keeps_a_composite_id(tmp_path):
    path = tmp_path / "rows.csv"
    pl.DataFrame({"obs": ["4", "4"], "idx": ["65", "296"], "prompt": ["Student: I add.", "Tutor: Hi\nStudent: 3?"],
                  "response": ["Why add?", "Yes."]}).write_csv(path)  # fmt: skip
    h = _score(path, tmp_path / "h.csv", "--history-col", "prompt", "--id", "obs", "--id", "idx")
    assert h.columns[:4] == ["exchange_id", "obs", "idx", "ctx_turns"]
    assert h["exchange_id"].to_list() == ["4/65", "4/296"] and h["ctx_turns"].to_list() == [1, 2]
    turns = _score(path, tmp_path / "t.csv", "--transcript-col", "prompt", "--id", "obs", "--id", "idx")
    assert turns["conversation_id"].unique(maintain_order=True).to_list() == ["4/65", "4/296"]
    assert turns["exchange_id"].to_list() == ["4/65:1", "4/296:0", "4/296:2"]


@pytest.mark.parametrize(
    "extra",
    [["--transcript-col", "prompt"], ["--prompt", "query"], ["--dialogue"], ["--conversations", "CONV"]],
)
def test_history_col_refuses_the_other_input_forms(tmp_path, capsys, extra):
    path = tmp_path / "rows.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["Student: hi"], "response": ["Hello"]}).write_csv(path)
    extra = [str(tmp_path / "conv.csv") if e == "CONV" else e for e in extra]
    assert main(["score", str(path), "--history-col", "prompt", *extra, "-o", str(tmp_path / "h.csv")]) == 2
    err = _error(capsys)
    assert "--history-col cannot be combined with" in err and extra[0] in err
    assert not (tmp_path / "h.csv").exists()


def test_history_col_unknown_labels_and_a_missing_column_are_exit_2(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["Teacher: 3 x 4?|EOM|Cody: 12"], "response": ["Right."]}).write_csv(path)
    assert main(["score", str(path), "--history-col", "prompt", "--turn-sep", "|EOM|", "-o", str(tmp_path / "h.csv")]) == 2
    assert "neither tutor nor student roles: Cody (1)" in _error(capsys)
    assert main(["score", str(path), "--history-col", "nope", "-o", str(tmp_path / "h.csv")]) == 2
    assert "nope" in _error(capsys)
    clash = tmp_path / "clash.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["Student: hi"], "response": ["Hello"], "resp_words": ["3"]}).write_csv(clash)
    assert main(["score", str(clash), "--history-col", "prompt", "--keep", "resp_words", "-o", str(tmp_path / "h.csv")]) == 2
    assert "'resp_words' is named like an output column" in _error(capsys)


def test_run_accepts_history_col(cima_exchanges, tmp_path):
    out = tmp_path / "run"
    ratings = cima_exchanges.with_name("ratings.csv")
    assert main(["run", str(cima_exchanges), "--history-col", "prompt", "--ratings", str(ratings), "--metrics", "lexical",
                 "-o", str(out), "--no-estimate-theta", "--ci", "none", "--no-progress", *FAST]) == 0
    metrics = pl.read_csv(out / "metrics.csv", infer_schema_length=0)
    assert metrics.height == 245 and metrics.columns[:2] == ["exchange_id", "ctx_turns"]
    corr = pl.read_csv(out / "correlations.csv")
    assert "ctx_turns" not in set(corr["metric"]) and corr["n"].max() == 245
    assert "resp_questions" in set(corr["metric"])
