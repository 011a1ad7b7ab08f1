"""The report reads a dialogue input with the reader scoring used and the options its manifest records (issue 32:
one chat-JSONL reader): ``--tutor-role``, ``--speaker``, ``--turn-tag``, ``--other-role`` and the column names are
honoured, so each turn's kind and text in "Dialogues turn by turn" are what was scored."""

from __future__ import annotations

import json

import polars as pl

from tutormetrics.cli import main
from tutormetrics.report.collect import collect_study

CHAT = [
    {"conversation_id": "c1", "messages": [
        {"role": "system", "content": "be kind"},
        {"role": "learner", "content": "Is 9 prime?"},
        {"role": "coach", "content": "(probe) Why do you think so?"},
        {"role": "learner", "content": "It has no divisors"},
        {"role": "coach", "content": [{"type": "text", "text": "(hint) Try 3."}]},
        {"role": "narrator", "content": "the bell rings"},
    ]},
    {"conversation_id": "c2", "messages": [{"role": "learner", "content": "hi"}, {"role": "coach", "content": "(greet) Hello!"}]},
]


def test_chat_turns_in_the_report_are_the_scored_turns(tmp_path):
    src = tmp_path / "chat.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in CHAT) + "\n")
    out = tmp_path / "study"
    assert main(["score", str(src), "--dialogue", "-o", str(out / "turns.csv"), "-m", "length", "--no-progress",
                 "--tutor-role", "coach", "--student-role", "learner", "--other-role", "ignore",
                 "--turn-tag", r"\((?P<move>\w+)\)\s*"]) == 0  # fmt: skip
    turns = pl.read_csv(out / "turns.csv")
    data = collect_study(out)
    c1 = data["dialogues"][0]
    # system dropped, the narrator ignored (--other-role ignore), tags stripped as scoring stripped them
    assert [(t["turn"], t["kind"], t["text"]) for t in c1["turns"]] == [
        ("1", "student", "Is 9 prime?"), ("2", "tutor", "Why do you think so?"), ("3", "student", "It has no divisors"),
        ("4", "tutor", "Try 3."),
    ]
    tutor_ids = [t["exchange_id"] for d in data["dialogues"] for t in d["turns"] if t["kind"] == "tutor"]
    assert tutor_ids == turns["exchange_id"].to_list() == ["c1:2", "c1:4", "c2:1"]
    ex = data["exchanges"]
    assert [ex["texts"][i] for i in ex["response"]] == ["Why do you think so?", "Try 3.", "Hello!"]  # the scored texts


def test_a_long_table_with_its_own_column_names_and_speakers(tmp_path):
    long = pl.DataFrame({"dialog": ["d1", "d1", "d1"], "step": [0, 1, 2], "who": ["Cody", "Ana", "Cody"],
                         "utterance": ["What is 3 x 4?", "12", "Right. And 12 + 3?"]})  # fmt: skip
    long.write_csv(tmp_path / "long.csv")
    out = tmp_path / "study"
    assert main(["score", str(tmp_path / "long.csv"), "--dialogue", "-o", str(out / "turns.csv"), "-m", "length",
                 "--no-progress", "--conversation-col", "dialog", "--turn-col", "step", "--role-col", "who",
                 "--text-col", "utterance", "--speaker", "Cody=tutor", "--speaker", "Ana=student"]) == 0  # fmt: skip
    (d1,) = collect_study(out)["dialogues"]
    assert [(t["role"], t["kind"]) for t in d1["turns"]] == [("Cody", "tutor"), ("Ana", "student"), ("Cody", "tutor")]
