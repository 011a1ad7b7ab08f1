"""``score --dialogue`` / ``--transcript-col`` through the real CLI: outputs, bad input (exit 2, one
message naming file and row/line), warnings and --strict, stdout, resume."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main

LONG = """conversation_id,turn,role,text
c1,0,tutor,Hi! What is 3^3?
c1,1,student,Is it 9?
c1,2,tutor,Not quite. What does the exponent 3 tell you to do?
c2,0,student,hello
"""


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--no-progress"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return code, out.out, out.err


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_long_table_writes_turns_conversations_and_manifest(tmp_path, capsys):
    src = write(tmp_path, "t.csv", LONG)
    code, _, err = run(capsys, "score", str(src), "--dialogue", "-o", str(tmp_path / "turns.csv"),
                       "--conversations", str(tmp_path / "conv.csv"), "-m", "lexical")  # fmt: skip
    assert code == 0, err
    turns = pl.read_csv(tmp_path / "turns.csv")
    conv = pl.read_csv(tmp_path / "conv.csv", infer_schema=False)
    assert turns["exchange_id"].to_list() == ["c1:0", "c1:2"]
    assert conv["conversation_id"].to_list() == ["c1", "c2"] and conv["n_tutor_turns"].to_list() == ["2", "0"]
    assert "1 conversation(s) have no tutor turn" in err and "c2" in err
    manifest = json.loads((tmp_path / "turns.csv.manifest.json").read_text())
    assert manifest["dialogue"]["form"] == "long" and manifest["n_turn_rows"] == 2
    assert not (tmp_path / "turns.csv.partial").exists()
    # a rerun is identical (the checkpoint was removed, so it scores afresh)
    before = (tmp_path / "turns.csv").read_bytes()
    assert run(capsys, "score", str(src), "--dialogue", "-o", str(tmp_path / "turns.csv"), "-m", "lexical")[0] == 0
    assert (tmp_path / "turns.csv").read_bytes() == before


def test_stdout_and_keep(tmp_path, capsys):
    src = write(tmp_path, "t.csv", LONG.replace("conversation_id,turn,role,text", "conversation_id,turn,role,text") )
    frame = pl.read_csv(src).with_columns(pl.lit("x").alias("tutor_name"))
    frame.write_csv(src)
    code, out, _ = run(capsys, "score", str(src), "--dialogue", "-m", "overlap", "--keep", "tutor_name", "--context", "last")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("exchange_id,conversation_id,turn,tutor_turn,ctx_turns,tutor_name,jaccard_1")
    assert lines[2].startswith("c1:2,c1,2,2,1,x,")


@pytest.mark.parametrize(
    ("name", "text", "args", "fragment"),
    [
        ("dup.csv", LONG + "c1,2,student,again\n", [], "duplicate turn 2 in conversation c1 (rows 3 and 5)"),
        ("noturn.csv", LONG + "c1,,student,again\n", [], "row 5: missing 'turn'"),
        ("norole.csv", LONG + "c1,7,,again\n", [], "row 5: missing 'role'"),
        ("role.csv", LONG + "c1,7,narrator,again\n", ["--other-role", "error"], "unknown role 'narrator'"),
        ("nocol.csv", LONG.replace("text", "body", 1), [], "missing column 'text'"),
        ("t.csv", LONG, ["--role-col", "text"], "--role-col and --text-col both name the column 'text'"),  # issue 35: was exit 0
        ("t.csv", LONG, ["--context", "0"], "invalid --context '0'"),
        ("t.csv", LONG, ["--context", "some"], "invalid --context 'some'"),
        ("t.csv", LONG, ["--tutor-role", "x", "--student-role", "X"], "both tutor and student roles"),
        ("chat.jsonl", '{"messages": [{"role": "user", "content": "hi"}]}\n{"id": 3}\n', [], "chat.jsonl: line 2: not a conversation"),
        ("chat.jsonl", '{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [\n', [], "line 2: not valid JSON"),
        ("chat.jsonl", '{"messages": [{"role": "user", "content": 5}]}\n', [], "line 1: message 0: 'content' must be"),
        ("chat.jsonl", '{"messages": [{"content": "x"}]}\n', [], "line 1: message 0 is not an object with a string 'role'"),
    ],
)
def test_bad_input_exits_2_with_one_message(tmp_path, capsys, name, text, args, fragment):
    src = write(tmp_path, name, text)
    code, _, err = run(capsys, "score", str(src), "--dialogue", "-o", str(tmp_path / "o.csv"), "-m", "lexical", *args)
    assert code == 2
    assert fragment in err and "hint:" in err
    assert not (tmp_path / "o.csv").exists()


def test_unknown_roles_warn_and_strict_exits_1(tmp_path, capsys):
    src = write(tmp_path, "t.csv", LONG + "c1,7,narrator,the end\n")
    code, _, err = run(capsys, "score", str(src), "--dialogue", "-o", str(tmp_path / "o.csv"), "-m", "length", "--strict")
    assert code == 1 and "unknown roles kept as context" in err and (tmp_path / "o.csv").exists()


def test_conversations_needs_dialogue(tmp_path, capsys):
    src = write(tmp_path, "t.csv", "exchange_id,prompt,response\ne,a,b\n")
    code, _, err = run(capsys, "score", str(src), "-o", str(tmp_path / "o.csv"), "--conversations", str(tmp_path / "c.csv"))
    assert code == 2 and "--conversations needs --dialogue" in err


def test_transcript_col_implies_dialogue(tmp_path, capsys):
    src = tmp_path / "ex.csv"
    pl.DataFrame({"exchange_id": ["e1", "e2"], "history": ["Student: 2+2?", "Note: none\nTutor: Hi"],
                  "response": ["4. Why?", ""]}).write_csv(src)  # fmt: skip
    code, _, err = run(capsys, "score", str(src), "--transcript-col", "history", "-o", str(tmp_path / "o.csv"), "-m", "lexical")
    assert code == 0, err
    turns = pl.read_csv(tmp_path / "o.csv")
    assert turns["exchange_id"].to_list() == ["e1:1", "e2:1", "e2:2"]  # e2: a leading other turn, then Tutor
    assert turns["resp_empty"].to_list() == [False, False, True]


def test_transcript_with_another_id_column_still_writes_exchange_id(tmp_path, capsys):
    src = tmp_path / "ex.csv"
    pl.DataFrame({"row": ["r1"], "history": ["Student: 2+2?"], "response": ["4"], "conversation_id": ["orig"]}).write_csv(src)
    code, _, err = run(capsys, "score", str(src), "--transcript-col", "history", "--id", "row", "--keep", "conversation_id",
                       "-o", str(tmp_path / "o.csv"), "-m", "length")  # fmt: skip
    assert code == 0, err
    turns = pl.read_csv(tmp_path / "o.csv")
    assert turns.columns[:6] == ["exchange_id", "conversation_id", "turn", "tutor_turn", "ctx_turns", "input_conversation_id"]
    assert turns.row(0) [:6] == ("r1:1", "r1", 1, 1, 1, "orig")


def test_interrupted_run_resumes_from_its_checkpoint(tmp_path, capsys, monkeypatch):
    from tutormetrics.engine.checkpoint import Checkpoint

    src = write(tmp_path, "t.csv", LONG + "c3,0,student,why?\nc3,1,tutor,Because.\n")
    args = ["score", str(src), "--dialogue", "-o", str(tmp_path / "o.csv"), "-m", "lexical", "--chunk-size", "1"]
    assert run(capsys, *args)[0] == 0
    fresh = (tmp_path / "o.csv").read_bytes()
    (tmp_path / "o.csv").unlink()
    real_save = Checkpoint.save

    def save_then_stop(self, index, frame, *rest):
        real_save(self, index, frame, *rest)
        if index == 0:
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "save", save_then_stop)
    assert run(capsys, *args)[0] == 130 and not (tmp_path / "o.csv").exists()
    monkeypatch.setattr(Checkpoint, "save", real_save)
    code, _, err = run(capsys, *args)
    assert code == 0 and "resuming: 1 verified chunk(s)" in err
    assert (tmp_path / "o.csv").read_bytes() == fresh


def test_chat_keep_copies_record_keys_and_rejects_unknown_ones(tmp_path, capsys):
    lines = [{"conversation_id": "a", "model": "m1", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]},
             {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello?"}]}]  # fmt: skip
    src = write(tmp_path, "c.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    code, out, err = run(capsys, "score", str(src), "--dialogue", "-m", "length", "--keep", "model")
    assert code == 0, err
    assert out.splitlines()[1].startswith("a:1,a,1,1,1,m1,") and out.splitlines()[2].startswith("2:1,2,1,1,1,,")
    code, _, err = run(capsys, "score", str(src), "--dialogue", "-m", "length", "--keep", "modle")
    assert code == 2 and "--keep 'modle' is not a top-level key" in err
