"""dialogue.md §6 worked examples and §7 invariants, through the Python API and the three input forms."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.dialogue import (
    Conversation,
    read_conversations,
    read_dialogues,
    score_dialogues,
)
from tutormetrics.dialogue.readers import ReadOptions
from tutormetrics.engine import Scorer

EX1 = [
    ("tutor", "Hi! What is 3^3?"),
    ("student", "Is it 9?"),
    ("tutor", "Not quite. What does the exponent 3 tell you to do?"),
    ("student", "Multiply 3 by itself 3 times, so 27."),
    ("tutor", "Yes, 27! Can you also compute 2^5?"),
]
EX1_COLS = ["tutor_turn", "ctx_turns", "resp_words", "jaccard_1", "contain_prompt_in_resp", "len_ratio",
            "prev_student_jaccard_1", "resp_questions"]  # fmt: skip
NAN = math.nan
EX1_TABLE = {
    "full": {
        "c1:0": [1, 0, 5, 0.0, NAN, NAN, NAN, 1],
        "c1:2": [2, 2, 11, 0.133333, 0.333333, 1.375, 0.0, 1],
        "c1:4": [3, 4, 8, 0.074074, 0.095238, 0.296296, 0.071429, 1],
    },
    "last": {"c1:2": [2, 1, 11, 0.0, 0.0, 3.666667, 0.0, 1], "c1:4": [3, 1, 8, 0.071429, 0.142857, 1.0, 0.071429, 1]},
    2: {"c1:4": [3, 2, 8, 0.086957, 0.117647, 0.421053, 0.071429, 1]},
}


def close(a: float, b: float, tol: float = 1e-6) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def ex1() -> Conversation:
    return Conversation.from_lists("c1", [r for r, _ in EX1], [t for _, t in EX1])


@pytest.mark.parametrize("context", ["full", "last", 2])
def test_ex1_turns(context):
    turns = score_dialogues([ex1()], metrics="lexical", context=context).turns
    rows = {r["exchange_id"]: r for r in turns.iter_rows(named=True)}
    for eid, want in EX1_TABLE[context].items():
        got = [rows[eid][c] for c in EX1_COLS]
        assert all(close(float(g), w) for g, w in zip(got, want, strict=True)), (eid, got, want)
    assert rows["c1:0"]["prompt_empty"] is True
    assert turns.columns[:5] == ["exchange_id", "conversation_id", "turn", "tutor_turn", "ctx_turns"]
    tail = turns.columns[turns.columns.index("flesch_kincaid_grade") + 1 :]
    assert tail[:3] == ["prev_student_jaccard_1", "resp_questions", "prompt_empty"]


def test_ex1_conversation():
    conv = score_dialogues([ex1()], metrics="lexical").conversations.row(0, named=True)
    want = {"n_turns": 5, "n_tutor_turns": 3, "n_student_turns": 2, "tutor_words": 24, "student_words": 11,
            "talk_ratio": 2.181818, "tutor_question_rate": 1.0, "tutor_self_jaccard": 0.104701,
            "mean_jaccard_1": 0.069136, "mean_prev_student_jaccard_1": 0.035714}  # fmt: skip
    for col, value in want.items():
        assert close(conv[col], value), (col, conv[col])
    assert "mean_turn" not in conv and "mean_ctx_turns" not in conv and "mean_prompt_empty" not in conv


EX2_HISTORY = "Tutor: Let's solve 2x + 3 = 11.\nStudent: I subtract 3\nfrom both sides: 2x = 8\nTUTOR: Good. What next?\nStudent: x = 4"
EX2_RESPONSE = "Right, x = 4. Why did you divide by 2?"
EX3 = {
    "conversation_id": "u7",
    "messages": [
        {"role": "system", "content": "You are a tutor."},
        {"role": "user", "content": "What is a prime?"},
        {"role": "assistant", "content": [{"type": "text", "text": "A prime has exactly two divisors."}, {"type": "text", "text": "Is 1 prime?"}]},
        {"role": "user", "content": "No"},
        {"role": "assistant", "content": "Right: 1 has one divisor. Is 2 prime?"},
    ],
}


def test_ex2_transcript(tmp_path):
    path = tmp_path / "ex.csv"
    pl.DataFrame({"exchange_id": ["e1"], "history": [EX2_HISTORY], "response": [EX2_RESPONSE]}).write_csv(path)
    found = read_conversations(path, ReadOptions(transcript_col="history")).conversations[0]
    assert [t.text for t in found.turns] == ["Let's solve 2x + 3 = 11.", "I subtract 3\nfrom both sides: 2x = 8",
                                             "Good. What next?", "x = 4", EX2_RESPONSE]  # fmt: skip
    out = score_dialogues(path, metrics="overlap", transcript_col="history")
    got = [(r["exchange_id"], r["ctx_turns"], r["jaccard_1"], r["prev_student_jaccard_1"], r["resp_questions"])
           for r in out.turns.iter_rows(named=True)]  # fmt: skip
    want = [("e1:0", 0, 0.0, NAN, 0), ("e1:2", 2, 0.0, 0.0, 1), ("e1:4", 4, 0.086957, 0.222222, 1)]
    for g, w in zip(got, want, strict=True):
        assert g[:2] == w[:2] and all(close(a, b) for a, b in zip(g[2:], w[2:], strict=True)), (g, w)
    conv = out.conversations.row(0, named=True)
    assert (conv["n_turns"], conv["tutor_words"], conv["student_words"]) == (5, 17, 10)
    assert close(conv["talk_ratio"], 1.7) and close(conv["tutor_question_rate"], 0.666667)
    assert conv["tutor_self_jaccard"] == 0.0


def test_ex3_chat_jsonl(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(EX3) + "\n")
    out = score_dialogues(path, metrics="overlap")
    rows = list(out.turns.iter_rows(named=True))
    assert [(r["exchange_id"], r["tutor_turn"], r["ctx_turns"]) for r in rows] == [("u7:2", 1, 1), ("u7:4", 2, 3)]
    want = [(0.333333, 0.75, 0.333333, 1), (0.285714, 0.4, 0.0, 1)]
    for r, w in zip(rows, want, strict=True):
        got = (r["jaccard_1"], r["contain_prompt_in_resp"], r["prev_student_jaccard_1"], r["resp_questions"])
        assert all(close(a, b) for a, b in zip(got, w, strict=True)), got
    conv = out.conversations.row(0, named=True)
    assert conv["n_turns"] == 4 and close(conv["talk_ratio"], 3.4) and conv["tutor_question_rate"] == 1.0
    assert close(conv["tutor_self_jaccard"], 0.333333)
    long = read_dialogues(path)
    assert long["turn"].to_list() == [1, 2, 3, 4] and long["text"][1] == "A prime has exactly two divisors.\nIs 1 prime?"


# -- §7 invariants ---------------------------------------------------------------------------------
WORDS = ["what", "is", "the", "sum", "of", "two", "and", "three", "why", "do", "you", "think", "so", "can", "you", "try", "again", "good", "yes", "no", "it", "half"]


def random_conversations(n: int, seed: int = 0) -> list[tuple[str, list[tuple[str, str]]]]:
    """Conversations ending with a tutor turn; tutor-first and same-speaker runs included."""
    rng = random.Random(seed)
    out = []
    for c in range(n):
        k = rng.randint(1, 7)
        turns = [(rng.choice(["tutor", "student"]), " ".join(rng.choices(WORDS, k=rng.randint(0, 8))) + rng.choice(["", "?", "."]))
                 for _ in range(k)]  # fmt: skip
        turns.append(("tutor", " ".join(rng.choices(WORDS, k=rng.randint(1, 8))) + "?"))
        out.append((f"conv{c}", [(r, t.strip()) for r, t in turns]))
    return out


def write_three_forms(tmp: Path, convs) -> tuple[Path, Path, Path]:
    long, chat, transcript = tmp / "long.csv", tmp / "chat.jsonl", tmp / "tr.csv"
    with long.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["conversation_id", "turn", "role", "text"])
        for cid, turns in convs:
            for i, (role, text) in enumerate(turns):
                w.writerow([cid, i, role, text])
    with chat.open("w") as fh:
        for cid, turns in convs:
            msgs = [{"role": "assistant" if r == "tutor" else "user", "content": t} for r, t in turns]
            fh.write(json.dumps({"conversation_id": cid, "messages": msgs}) + "\n")
    with transcript.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["exchange_id", "history", "response"])
        for cid, turns in convs:
            history = "\n".join(f"{'Tutor' if r == 'tutor' else 'Student'}: {t}" for r, t in turns[:-1])
            w.writerow([cid, history, turns[-1][1]])
    return long, chat, transcript


@pytest.mark.parametrize("context", ["full", "last", 3])
def test_three_forms_give_identical_turns_and_conversations(tmp_path, context):
    long, chat, transcript = write_three_forms(tmp_path, random_conversations(25))
    a = score_dialogues(long, metrics="lexical", context=context)
    b = score_dialogues(chat, metrics="lexical", context=context)
    c = score_dialogues(transcript, metrics="lexical", context=context, transcript_col="history")
    assert a.turns.height > 25
    assert a.turns.equals(b.turns) and a.turns.equals(c.turns)
    assert a.conversations.equals(b.conversations) and a.conversations.equals(c.conversations)


def test_shuffled_rows_change_nothing(tmp_path):
    long, _, _ = write_three_forms(tmp_path, random_conversations(15, seed=3))
    frame = pl.read_csv(long, infer_schema=False)
    shuffled = tmp_path / "shuffled.csv"
    # shuffle turns within the file but keep the first appearance order of conversations
    order = frame.with_row_index("i").sample(fraction=1.0, shuffle=True, seed=1)
    first = frame.unique("conversation_id", keep="first", maintain_order=True)["conversation_id"].to_list()
    order = order.sort(pl.col("conversation_id").replace_strict(first, list(range(len(first)))), maintain_order=True)
    order.drop("i").write_csv(shuffled)
    assert score_dialogues(long).turns.equals(score_dialogues(shuffled).turns)


def test_full_equals_large_n_and_last_has_at_most_one_turn(tmp_path):
    convs = [Conversation.from_lists(c, [r for r, _ in t], [x for _, x in t]) for c, t in random_conversations(20, 5)]
    full = score_dialogues(convs, metrics="lexical", context="full").turns
    assert full.equals(score_dialogues(convs, metrics="lexical", context=8).turns)
    assert set(score_dialogues(convs, metrics="lexical", context="last").turns["ctx_turns"]) <= {0, 1}


def test_plain_scoring_with_the_built_context_gives_the_same_metric_columns():
    convs = [Conversation.from_lists(c, [r for r, _ in t], [x for _, x in t]) for c, t in random_conversations(10, 7)]
    turns = score_dialogues(convs, metrics="lexical").turns
    prompts, responses = [], []
    for conv in convs:
        for i, t in enumerate(conv.turns):
            if t.kind == "tutor":
                prompts.append("\n".join(x.text for x in conv.turns[:i]))
                responses.append(t.text)
    plain = Scorer("lexical", progress=False).score(turns["exchange_id"].to_list(), prompts, responses)
    assert turns.select(plain.columns).equals(plain)


def test_conversation_without_tutor_turns_and_empty_tutor_turn():
    silent = Conversation.from_lists("s", ["student", "student"], ["hello", "anyone?"])
    empty = Conversation.from_lists("e", ["student", "tutor"], ["hello", "   "])
    out = score_dialogues([silent, empty], metrics="lexical")
    assert out.turns["conversation_id"].to_list() == ["e"]
    assert out.turns["resp_empty"][0] is True and out.turns["resp_words"][0] == 0
    assert math.isnan(out.turns["jaccard_2"][0]) and out.turns["jaccard_1"][0] == 0.0
    s = out.conversations.row(0, named=True)
    assert (s["conversation_id"], s["n_tutor_turns"], s["n_student_turns"]) == ("s", 0, 2)
    assert math.isnan(s["tutor_question_rate"]) and math.isnan(s["mean_jaccard_1"]) and s["talk_ratio"] == 0.0


def test_unknown_roles_are_other_turns_by_default(tmp_path):
    path = tmp_path / "t.csv"
    pl.DataFrame({"conversation_id": ["c"] * 3, "turn": [0, 1, 2], "role": ["narrator", "Student", "TEACHER"],
                  "text": ["A class at noon.", "Is 1 prime?", "No."]}).write_csv(path)  # fmt: skip
    out = score_dialogues(path, metrics="overlap")
    assert out.turns["ctx_turns"].to_list() == [2] and out.conversations["n_turns"][0] == 3
    assert out.warnings and "'narrator' ×1" in out.warnings[0]
    ignored = score_dialogues(path, metrics="overlap", other_role="ignore")
    assert ignored.turns["ctx_turns"].to_list() == [1] and not ignored.warnings


def test_string_turns_sort_as_strings_and_integer_strings_numerically(tmp_path):
    path = tmp_path / "t.csv"
    pl.DataFrame({"conversation_id": ["c"] * 3, "turn": ["10", "9", "2"], "role": ["tutor", "student", "student"],
                  "text": ["ok?", "b", "a"]}).write_csv(path)  # fmt: skip
    turns = score_dialogues(path, metrics="overlap").turns
    assert turns["turn"].dtype == pl.Int64 and turns["exchange_id"].to_list() == ["c:10"]
    assert turns["ctx_turns"].to_list() == [2]
    pl.DataFrame({"conversation_id": ["c"] * 3, "turn": ["t10", "t9", "t2"], "role": ["tutor", "student", "student"],
                  "text": ["ok?", "b", "a"]}).write_csv(path)  # fmt: skip
    turns = score_dialogues(path, metrics="overlap").turns
    assert turns["turn"].dtype == pl.String and turns["ctx_turns"].to_list() == [0]  # "t10" < "t2" < "t9"
