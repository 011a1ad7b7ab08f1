"""``convert``: the worked examples of datasets.md §9.1 on the shared samples, MRBench byte identity, the shared rules.

Reference values are the spec's [ref] numbers (computed there with plain Python and krippendorff 0.9.0); the
uptake α values are recomputed here with ``krippendorff.alpha`` on the rebuilt slot × unit matrix.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tutormetrics.datasets import CONVERTERS, SOURCES, bridge, cima, mathdial, mrbench, uptake
from tutormetrics.datasets.cell_text import score_text
from tutormetrics.datasets.duplicate_ids import suffix_duplicates
from tutormetrics.datasets.output_files import csv_text
from tutormetrics.errors import InputSchemaError

ROOT = Path(__file__).resolve().parents[3]
PUBLIC = ROOT.parent / "shared" / "data" / "public"
MRBENCH = ROOT.parent / "shared" / "data" / "mrbench"
SAMPLE_V2 = ROOT / "tests" / "fixtures" / "mrbench_raw" / "MRBench_V2_sample.json"


def _raw(rel: str) -> bytes:
    path = PUBLIC / rel
    if not path.exists():
        pytest.skip("../shared/data/public not available")
    return path.read_bytes()


def _rows(table) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(csv_text(table), newline="")))


# --- mrbench ---------------------------------------------------------------------------------------------------


def test_mrbench_sample_rows_are_byte_identical_to_the_shared_copy():
    if not (MRBENCH / "exchanges.csv").exists():
        pytest.skip("../shared/data/mrbench not available")
    conv = mrbench.convert(SAMPLE_V2.read_bytes(), SAMPLE_V2.name)
    shared_ids = {}
    for name in ("exchanges.csv", "ratings.csv", "exchanges_meta.csv"):
        text = (MRBENCH / name).read_text(encoding="utf8")
        records = list(csv.reader(io.StringIO(text, newline="")))
        mine = list(csv.reader(io.StringIO(csv_text(conv.tables[name]), newline="")))
        assert mine[0] == records[0]
        # ids of the sample: the suffixed duplicate gets #1/#2 only in the full file; compare by raw id + tutor
        wanted = {tuple(r) for r in records[1:]}
        shared_ids[name] = wanted
        for row in mine[1:]:
            if "291616268" in row[0]:
                continue  # both items of the duplicate are in the sample: #1/#2 as in the full file
            assert tuple(row) in wanted, (name, row[:3])
    # the duplicated id is suffixed in file order, exactly as in the shared copy
    dup = [r for r in _rows(conv.tables["exchanges.csv"]) if r["conversation_id"].startswith("291616268")]
    assert [r["conversation_id"] for r in dup][:1] == ["291616268#1"] and dup[-1]["conversation_id"] == "291616268#2"
    for row in csv.reader(io.StringIO(csv_text(conv.tables["exchanges.csv"]), newline="")):
        if row[0].startswith("291616268"):
            assert tuple(row) in shared_ids["exchanges.csv"]
    # the file is written with CRLF records and LF inside quoted prompts, like the shared copy
    assert csv_text(conv.tables["exchanges.csv"]).startswith("exchange_id,conversation_id,tutor,prompt,response\r\n")
    assert conv.counts == {"conversations": 5, "exchanges": 43, "ratings": 344, "duplicated_ids": 1}


@pytest.mark.skipif(not os.environ.get("MRBENCH_V2_JSON"), reason="set MRBENCH_V2_JSON to the upstream MRBench_V2.json")
def test_mrbench_full_v2_is_byte_identical():
    raw = Path(os.environ["MRBENCH_V2_JSON"]).read_bytes()
    conv = mrbench.convert(raw, "MRBench_V2.json")
    for name in ("exchanges.csv", "ratings.csv", "exchanges_meta.csv"):
        assert csv_text(conv.tables[name]).encode("utf8") == (MRBENCH / name).read_bytes(), name


def test_mrbench_history_rules():
    text = "\u00a0Tutor: Hi\u00a0 there\u00a0\n\u00a0Student: 2 +\n  2 = 4\nTeacher: ok\nTUROR : fine"
    assert mrbench.history_transcript(text) == "Tutor: Hi there\nStudent: 2 + 2 = 4\nTutor: ok\nTutor: fine"
    assert mrbench.history_transcript("hello\nStudent: x") == "Unknown: hello\nStudent: x"


def test_mrbench_bea_test_set_has_a_header_only_ratings_table():
    item = {"conversation_id": "c1", "conversation_history": "Tutor: a\nStudent: b",
            "tutor_responses": {"Tutor_1": {"response": "r1"}, "Tutor_2": {"response": "r2"}}}
    conv = mrbench.convert(json.dumps([item]).encode(), "test.json")
    assert conv.tables["ratings.csv"].rows == []
    assert [r[0] for r in conv.tables["exchanges.csv"].rows] == ["c1::Tutor_1", "c1::Tutor_2"]


def test_mrbench_label_off_the_scale_names_the_item():
    item = {"conversation_id": "c9", "conversation_history": "Tutor: a",
            "anno_llm_responses": {"GPT4": {"response": "r", "annotation": {"Tutor_Tone": "Rude"}}}}
    with pytest.raises(InputSchemaError, match=r"c9 \(GPT4\).*'Rude' of tutor_tone"):
        mrbench.convert(json.dumps([item]).encode(), "x.json")


# --- mathdial --------------------------------------------------------------------------------------------------


def test_mathdial_sample_counts_and_first_turn():
    conv = mathdial.convert(_raw("mathdial/test_first40.csv"), "test_first40.csv")
    assert conv.counts == {"conversations": 40, "turns": 487, "tutor_turns": 256, "student_turns": 231,
                           "student_turns_labelled_by_name": 3, "ratings": 120, "turn_ratings": 1024,
                           "duplicated_ids": 10}
    turns = _rows(conv.tables["dialogues.csv"])
    assert Counter(t["move"] for t in turns if t["role"] == "tutor") == {"focus": 91, "probing": 74, "generic": 54, "telling": 37}
    named = [(t["conversation_id"], t["turn"]) for t in turns if t["role"] == "student" and t["speaker"] != "Student"]
    assert named == [("6000057", "1"), ("6000057", "3"), ("6000057", "5")]
    assert {t["speaker"] for t in turns if (t["conversation_id"], t["turn"]) in named} == {"Cody"}
    first = turns[0]
    assert (first["conversation_id"], first["role"], first["speaker"], first["move"], first["text"]) == (
        "6000025#1", "tutor", "Teacher", "generic", "Hi Mariana, please talk me through your solution")
    ratings = _rows(conv.tables["ratings.csv"])
    assert Counter(r["score"] for r in ratings if r["criterion"] == "self_correctness") == {"1": 31, "0.5": 7, "0": 2}
    assert {r["criterion"] for r in ratings} == {"self_correctness", "self_typical_confusion", "self_typical_interactions"}
    moves = _rows(conv.tables["turn_ratings.csv"])
    assert moves[0]["exchange_id"] == "6000025#1:0" and sum(int(m["score"]) for m in moves) == 256


def test_mathdial_csv_and_jsonl_give_identical_tables():
    a = mathdial.convert(_raw("mathdial/test_first40.csv"), "test_first40.csv")
    b = mathdial.convert(_raw("mathdial/test_first40.jsonl"), "test_first40.jsonl")
    assert {k: csv_text(t) for k, t in a.tables.items()} == {k: csv_text(t) for k, t in b.tables.items()}


def test_mathdial_unknown_speaker_and_move_are_errors():
    with pytest.raises(InputSchemaError, match="unknown speaker 'Narrator'"):
        mathdial.split_turns("Teacher: (focus)hi|EOM|Narrator: x", "Cody", "c1")
    with pytest.raises(InputSchemaError, match=r"unknown move \(shouting\)"):
        mathdial.split_turns("Teacher: (shouting)hi", "Cody", "c1")
    # a student's parenthesis is text, not a move
    assert mathdial.split_turns("Student: (5) is it", "Cody", "c1") == [("student", "Student", "", "(5) is it")]


# --- cima -------------------------------------------------------------------------------------------------------


def test_cima_sample():
    conv = cima.convert(_raw("cima/dataset_first80.json"), "dataset_first80.json")
    assert conv.counts == {"conversations": 80, "exchanges": 245, "ratings": 1225, "dialogues": 59}
    ratings = _rows(conv.tables["ratings.csv"])
    by = Counter((r["criterion"], r["label"]) for r in ratings)
    assert (by["hint", "true"], by["hint", "false"], by["other", "true"]) == (166, 79, 3)
    first = _rows(conv.tables["exchanges.csv"])[0]
    lines = first["prompt"].split("\n")
    assert first["exchange_id"] == "0::0" and len(lines) == 10
    assert lines[0] == 'Tutor: "Pink" is "rosa". Please try to fill in the blank in Italian.'
    assert lines[1].startswith("Student: ")


def test_cima_dialogues_join_prefix_histories():
    assert cima.dialogue_ids({"10": ["a"], "2": ["a", "b"], "3": ["c"], "11": ["a", "x"]}) == {
        "10": "2", "2": "2", "3": "3", "11": "2"}


# --- bridge -----------------------------------------------------------------------------------------------------


def test_bridge_validation_split():
    conv = bridge.convert(_raw("bridge/validation.json"), "validation.json")
    assert conv.counts == {"conversations": 71, "exchanges": 142, "ratings": 0, "duplicated_ids": 5}
    ids = [r[0] for r in conv.tables["exchanges.csv"].rows]
    assert "4294755_60#1::Novice" in ids and ids[:2] == [ids[0].replace("Expert", "Novice"), ids[0].replace("Novice", "Expert")]
    assert conv.tables["ratings.csv"].rows == [] and conv.tables["ratings.csv"].header[0] == "exchange_id"
    items = json.loads(_raw("bridge/validation.json"))
    novice = " ".join(t["text"].replace("\u00a0", " ").strip() for t in items[0]["c_r"] if t["text"].strip())
    assert conv.tables["exchanges.csv"].rows[0][4] == novice


# --- uptake -----------------------------------------------------------------------------------------------------


def test_uptake_sample_multisets_and_alpha():
    krippendorff = pytest.importorskip("krippendorff")
    conv = uptake.convert(_raw("uptake/uptake_data_first200.csv"), "uptake_data_first200.csv")
    assert conv.counts == {"exchanges": 200, "conversations": 105, "ratings": 1709, "ambiguous": 8, "unrated": 13}
    ratings = _rows(conv.tables["ratings.csv"])
    per_unit = Counter(r["exchange_id"] for r in ratings if r["criterion"] == "uptake")
    assert len(per_unit) == 179 and Counter(per_unit.values()) == {3: 159, 2: 12, 1: 8}
    assert [(r["rater"], r["score"]) for r in ratings if r["exchange_id"] == "4/65" and r["criterion"] == "uptake"] == [
        ("slot1", "0"), ("slot2", "0")]
    meta = _rows(conv.tables["exchanges_meta.csv"])
    assert [m["exchange_id"] for m in meta if m["uptake_status"] == "ambiguous"][:2] == ["19/11", "54/213"]
    expected = {"uptake": (0.303311, 0.425066, 0.481111), "teacher_on_task": (0.591283,), "student_on_task": (0.641886,)}
    for criterion, alphas in expected.items():
        units = sorted({r["exchange_id"] for r in ratings if r["criterion"] == criterion})
        matrix = np.full((3, len(units)), np.nan)
        index = {u: i for i, u in enumerate(units)}
        for r in ratings:
            if r["criterion"] == criterion:
                matrix[int(r["rater"][4:]) - 1, index[r["exchange_id"]]] = float(r["score"])
        # truncation intended: the binary criteria have one alpha (nominal), uptake three
        for level, want in zip(("nominal", "ordinal", "interval"), alphas, strict=False):
            assert krippendorff.alpha(reliability_data=matrix, level_of_measurement=level) == pytest.approx(want, abs=5e-7)


def test_uptake_rebuild_rules():
    assert uptake.rebuild(0.0, 3, 0.0, (0, 1, 2), False) == ([0.0, 0.0, 0.0], "exact")
    assert uptake.rebuild(4 / 3, 2, 2.0, (0, 1, 2), False) == ([0.0, 2.0, 2.0], "exact")
    assert uptake.rebuild(0.5, 1, None, (0, 1, 2), False) == ([0.0, 1.0], "exact")
    assert uptake.rebuild(2.0, 1, None, (0, 1, 2), False) == ([2.0], "exact")
    assert uptake.rebuild(1.0, 1, None, (0, 1, 2), True) == ([0.0, 1.0, 2.0], "ambiguous")
    with pytest.raises(ValueError, match="off the scale"):
        uptake.rebuild(0.9, 2, 1.0, (0, 1, 2), False)


def test_uptake_spread_keeps_the_ambiguous_units():
    conv = uptake.convert(_raw("uptake/uptake_data_first200.csv"), "u.csv", ambiguous="spread")
    assert conv.counts["ratings"] == 1709 + 8 * 3


# --- shared rules -----------------------------------------------------------------------------------------------


def test_shared_rules():
    assert suffix_duplicates(["a", "b", "a", "a"]) == ["a#1", "b", "a#2", "a#3"]
    assert [score_text(v) for v in (1.0, 0.0, 0.5, 4.0)] == ["1", "0", "0.5", "4"]
    assert set(CONVERTERS) == set(SOURCES) == {"mrbench", "mathdial", "cima", "bridge", "uptake"}
    assert SOURCES["cima"].attribution() == (
        "Stasaski, Kao & Hearst (2020), CIMA: A Large Open Access Dialogue Dataset for Tutoring, BEA 2020. Data: "
        "https://github.com/kstats/CIMA (CC BY 2.5). Converted by tutormetrics convert cima.")
    assert SOURCES["mathdial"].share_alike and not SOURCES["bridge"].share_alike


@pytest.mark.parametrize("name", ["bridge", "uptake"])
def test_mit_notice_matches_the_upstream_licence_file(name):
    text = _raw(f"{name}/LICENSE").decode()
    assert " ".join(SOURCES[name].licence_notice.split()) == " ".join(text.split())


@pytest.mark.parametrize("name", sorted(CONVERTERS))
def test_a_file_of_another_dataset_is_refused(name):
    other = "cima/dataset_first80.json" if name != "cima" else "bridge/validation.json"
    with pytest.raises(InputSchemaError, match=f"not a {name} file"):
        CONVERTERS[name](_raw(other), Path(other).name)
