"""``convert`` under hostile raw files (issue 35, docs/design/datasets.md#hostile-releases): every malformed release is
one ``InputSchemaError`` naming the item or row (exit 2 with a hint), never a Python exception, never the word
``None`` in a cell, never a silently wrong table."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from tutormetrics.cli import main
from tutormetrics.datasets import CONVERTERS, SOURCES, write_conversion
from tutormetrics.datasets.output_files import OUTPUT_NAMES, csv_text
from tutormetrics.errors import InputSchemaError

PUBLIC = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public"

MRBENCH = {"conversation_id": "c1", "conversation_history": "Tutor: 2 + 2?\nStudent: 5", "Topic": "sums",
           "anno_llm_responses": {"GPT4": {"response": "Check again.", "annotation": {"Tutor_Tone": "Encouraging"}},
                                  "Expert": {"response": "Count on.", "annotation": {"Tutor_Tone": "Neutral"}}}}
CIMA = {"past_convo": ["Say 'tree'.", "albero?"], "tutorResponses": ["Yes!"], "tutorActions": [[False, False, False, True, False]],
        "prep": "e dietro"}
BRIDGE = {"c_id": "b1", "c_h": [{"user": "tutor", "text": "2 + 2?"}, {"user": "student", "text": "5"}],
          "c_r": [{"user": "tutor", "text": "No."}], "c_r_": [{"user": "tutor", "text": "Count on."}],
          "lesson_topic": "sums", "e": "guess", "z_what": "hint", "z_why": "correct"}
MATHDIAL = {"qid": 1, "scenario": "s", "question": "q", "ground_truth": "g", "student_incorrect_solution": "x",
            "student_profile": "Cody is a student", "teacher_described_confusion": "t", "self-correctness": "Yes",
            "self-typical-confusion": 4, "self-typical-interactions": 3,
            "conversation": "Teacher: (probing)What is 3 x 4?|EOM|Cody: 12"}
UPTAKE_HEADER = ["obs_id", "exchange_idx", "student_text", "teacher_text",
                 *(f"{c}{s}" for c in ("uptake", "teacher_on_task", "student_on_task")
                   for s in ("", "_num_agree", "_majority", "_zscore"))]
UPTAKE_ROW = ["4", "65", "I got 5", "Why 5?", "2", "3", "2", "1.1", "1", "3", "1", "0.5", "1", "3", "1", "0.4"]


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _mrbench(**change) -> bytes:
    item = copy.deepcopy(MRBENCH)
    item.update(change)
    return _json([item])


def _response(**change) -> bytes:
    item = copy.deepcopy(MRBENCH)
    item["anno_llm_responses"]["GPT4"].update(change)
    return _json([item])


def _cima(**change) -> bytes:
    return _json({"prepDataset": {"0": {**copy.deepcopy(CIMA), **change}}})


def _bridge(**change) -> bytes:
    return _json([{**copy.deepcopy(BRIDGE), **change}])


def _mathdial(**change) -> bytes:
    return _json({**MATHDIAL, **change}) + b"\n"


def _uptake(*rows: list[str], header: list[str] = UPTAKE_HEADER) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows([header, *rows])
    return buf.getvalue().encode()


def _with(row: list[str], **cells: str) -> list[str]:
    out = list(row)
    for name, value in cells.items():
        out[UPTAKE_HEADER.index(name)] = value
    return out


def _refused(name: str, raw: bytes, pattern: str) -> InputSchemaError:
    with pytest.raises(InputSchemaError, match=pattern) as info:
        CONVERTERS[name](raw, "raw.json")
    assert info.value.hint, "every refusal has a hint"
    return info.value


def test_the_minimal_releases_convert():
    assert CONVERTERS["mrbench"](_mrbench(), "m.json").counts["ratings"] == 2
    assert CONVERTERS["cima"](_cima(), "c.json").counts["ratings"] == 5
    assert CONVERTERS["bridge"](_bridge(), "b.json").counts["exchanges"] == 2
    assert CONVERTERS["mathdial"](_mathdial(), "d.jsonl").counts["turns"] == 2
    assert CONVERTERS["uptake"](_uptake(UPTAKE_ROW), "u.csv").counts["ratings"] == 9


# --- JSON null and wrong JSON types: exit 2 naming the item, never the word None --------------------------------

@pytest.mark.parametrize(("name", "raw", "pattern"), [
    ("mrbench", _response(response=None), r"item c1 \(GPT4\): response is null, not a text"),
    ("mrbench", _mrbench(conversation_history=None), r"item c1: conversation_history is null"),
    ("mrbench", _mrbench(conversation_history=["Tutor: a"]), r"item c1: conversation_history is a list, not a text"),
    ("mrbench", _mrbench(anno_llm_responses={"GPT4": "Check again."}), r"item c1 \(GPT4\): the response is a text, not an object"),
    ("mrbench", _response(annotation={"Tutor_Tone": ["Neutral"]}), r"the label of Tutor_Tone is a list, not a text"),
    ("mrbench", _response(annotation=["Tutor_Tone"]), r"annotation is a list, not an object"),
    ("mrbench", _mrbench(Topic=["sums"]), r"item c1: Topic is a list"),
    ("mrbench", _mrbench(conversation_id=None), r"item 0: conversation_id is null"),
    ("cima", _cima(tutorResponses=[None]), r"item 0: tutorResponses\[0\] is null, not a text"),
    ("cima", _cima(past_convo="Say 'tree'. albero?"), r"item 0: past_convo is a text, not a list"),
    ("cima", _cima(past_convo=["Say 'tree'.", None]), r"item 0: past_convo turn 1 is null"),
    ("cima", _cima(tutorActions=[None]), r"item 0, response 0: tutorActions is null, not a list"),
    ("cima", _cima(tutorActions=[[None] * 5]), r"item 0, response 0, question: the action flag None is not true or false"),
    ("cima", _cima(tutorActions=[[1, 0, 0, 0, 0]]), r"response 0, question: the action flag 1 is not true or false"),
    ("cima", _cima(tutorActions=[["yes", "no", "no", "no", "no"]]), r"the action flag 'yes' is not true or false"),
    ("cima", _cima(prep=["e dietro"]), r"item 0: prep is a list"),
    ("bridge", _bridge(c_r=None), r"item b1: c_r is null, not a list"),
    ("bridge", _bridge(c_r=[{"user": "tutor", "text": None}]), r"item b1: c_r\[0\].text is null, not a text"),
    ("bridge", _bridge(c_h=[{"user": "tutor", "text": None}]), r"item b1: c_h\[0\].text is null"),
    ("bridge", _bridge(c_h="Tutor: hi"), r"item b1: c_h is a text, not a list"),
    ("bridge", _bridge(e=["guess"]), r"item b1: e is a list"),
    ("mathdial", _mathdial(conversation=None), r"conversation 1: conversation is null, not a text"),
    ("mathdial", _mathdial(question=["q"]), r"conversation 1: question is a list"),
    ("mathdial", _mathdial(qid=None), r"record 1: qid is null"),
])
def test_wrong_json_types_are_refused_naming_the_item(name, raw, pattern):
    _refused(name, raw, pattern)


def test_null_optional_meta_is_empty_not_the_word_none():
    conv = CONVERTERS["mrbench"](_mrbench(Topic=None, Data=None), "m.json")
    assert all("None" not in cell for row in conv.tables["exchanges_meta.csv"].rows for cell in row)
    conv = CONVERTERS["bridge"](_bridge(lesson_topic=None, e=None), "b.json")
    assert all("None" not in cell for row in conv.tables["exchanges_meta.csv"].rows for cell in row)


def test_cima_text_flags_true_and_false_are_read_as_such():
    conv = CONVERTERS["cima"](_cima(tutorActions=[["True", " false", "FALSE", "true", False]]), "c.json")
    assert [r[4] for r in conv.tables["ratings.csv"].rows] == ["1", "0", "0", "1", "0"]


# --- labels and means that would become scores -----------------------------------------------------------------

@pytest.mark.parametrize("label", ["inf", "NaN", "-Infinity", "lots"])
def test_mathdial_non_finite_labels_are_refused(label):
    _refused("mathdial", _mathdial(**{"self-typical-confusion": label}), rf"conversation 1: self_typical_confusion label '{label}' is not a")


@pytest.mark.parametrize(("cells", "pattern"), [
    ({"uptake": "nan"}, r"row 2 \(4/65\): uptake 'nan' is not a finite number"),
    ({"uptake_num_agree": "inf"}, r"row 2 \(4/65\): uptake_num_agree 'inf' is not a finite number"),
    ({"uptake_num_agree": "2.5"}, r"uptake_num_agree '2.5' is not a whole number"),
    ({"uptake_majority": "nan"}, r"uptake_majority 'nan' is not a finite number"),
    ({"obs_id": "4/6"}, r"row 2: obs_id '4/6' is empty or contains '/'"),
    ({"exchange_idx": ""}, r"row 2: exchange_idx '' is empty"),
])
def test_uptake_bad_cells_are_refused_naming_the_row(cells, pattern):
    _refused("uptake", _uptake(_with(UPTAKE_ROW, **cells)), pattern)


def test_json_nan_and_infinity_are_refused():
    _refused("mathdial", _mathdial().replace(b'"self-typical-confusion": 4', b'"self-typical-confusion": NaN'),
             r"line 1: NaN is not a JSON number")
    _refused("mrbench", b'[{"conversation_id": Infinity}]', r"Infinity is not a JSON number")


# --- structure: repeated keys, keys differing in case, id collisions, empty releases ---------------------------

def test_a_repeated_item_key_is_refused_not_dropped():
    raw = b'{"prepDataset": {"7": %s, "7": %s}}' % (_json(CIMA), _json(CIMA))
    _refused("cima", raw, r"the key '7' appears twice in one object")


def test_annotation_keys_differing_only_in_case_are_refused():
    _refused("mrbench", _response(annotation={"Tutor_Tone": "Neutral", "tutor_tone": "Neutral"}),
             r"item c1 \(GPT4\): annotation keys 'Tutor_Tone' and 'tutor_tone' differ only in case")


def test_rule_d1_suffix_colliding_with_a_raw_id_is_refused():
    items = [dict(BRIDGE), dict(BRIDGE), {**BRIDGE, "c_id": "b1#2"}]
    _refused("bridge", _json(items), r"the repeated id 'b1' would become 'b1#2' \(rule D1\), which is also an id")


def test_joined_ids_colliding_are_refused_naming_both_items():
    a = {**MRBENCH, "conversation_id": "a::b", "anno_llm_responses": {"c": {"response": "x"}}}
    b = {**MRBENCH, "conversation_id": "a", "anno_llm_responses": {"b::c": {"response": "y"}}}
    _refused("mrbench", _json([a, b]), r"the exchange id 'a::b::c' is built twice, from item a::b \(tutor 'c'\) and from item a")


@pytest.mark.parametrize(("name", "raw"), [
    ("mrbench", b"[]"), ("cima", b'{"prepDataset": {}}'), ("bridge", b"[]"), ("mathdial", b""),
    ("uptake", _uptake()),
])
def test_an_empty_release_is_refused(name, raw):
    if name == "mathdial":
        raw = b",".join(s.encode() for s in MATHDIAL) + b"\n"
    _refused(name, raw, r"holds no \w+: nothing to convert")


@pytest.mark.parametrize("conversation", ["", "  |EOM| "])
def test_a_conversation_without_turns_is_refused(conversation):
    _refused("mathdial", _mathdial(conversation=conversation), r"conversation 1: the conversation has no turns")


# --- bytes, JSONL lines, CSV quoting and limits ----------------------------------------------------------------

def test_jsonl_is_split_on_newlines_only():
    raw = json.dumps({**MATHDIAL, "question": "a\u2028b\u0085c"}, ensure_ascii=False).encode() + b"\n" + _mathdial(qid=2)
    assert "\u2028".encode() in raw  # the character itself, not its escape
    conv = CONVERTERS["mathdial"](raw, "d.jsonl")
    assert conv.counts["conversations"] == 2
    assert conv.tables["conversations_meta.csv"].rows[0][5] == "a\u2028b\u0085c"


@pytest.mark.parametrize("name", ["mrbench", "cima", "bridge", "mathdial", "uptake"])
def test_a_bad_utf8_byte_is_named(name):
    raw = {"mrbench": _mrbench(), "cima": _cima(), "bridge": _bridge(), "mathdial": _mathdial(), "uptake": _uptake(UPTAKE_ROW)}[name]
    at = len(raw) // 2
    _refused(name, raw[:at] + b"\xff" + raw[at:], rf"not UTF-8 text: byte 0xff at offset {at}")


def test_deep_nesting_and_huge_numbers_are_messages():
    _refused("mrbench", b"[" * 100_000 + b"]" * 100_000, r"nested too deeply to read")
    _refused("bridge", b'[{"c_id": ' + b"7" * 5000 + b"}]", r"holds a number that cannot be read")
    _refused("mathdial", b'{"qid": ' + b"7" * 5000 + b"}\n", r"line 1: holds a number that cannot be read")


def _mathdial_csv(rows: list[dict]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(MATHDIAL))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def test_a_csv_cut_inside_a_quoted_cell_is_refused():
    two = _mathdial_csv([MATHDIAL, {**MATHDIAL, "qid": 2, "conversation": "Teacher: hi\nthere|EOM|Cody: 12"}])
    cut = two[: two.rindex(b"there")]
    _refused("mathdial", cut, r"line \d+: not valid CSV \(unexpected end of data; a file cut inside a quoted cell\?\)")


def test_an_uptake_row_cut_short_is_refused():
    _refused("uptake", _uptake(UPTAKE_ROW, UPTAKE_ROW[:7]), r"line 3: 7 cells where the header has 16")


def test_a_cell_over_128_kib_is_read():
    long_text = "word " * 40_000
    conv = CONVERTERS["uptake"](_uptake(_with(UPTAKE_ROW, teacher_text=long_text)), "u.csv")
    assert conv.tables["exchanges.csv"].rows[0][4] == long_text.strip()


def test_a_student_name_in_nfd_matches_its_nfc_label():
    raw = _mathdial(student_profile="Zoe\u0301 is a student", conversation="Teacher: hi|EOM|Zo\u00e9: 12")
    turns = CONVERTERS["mathdial"](raw, "d.jsonl").tables["dialogues.csv"].rows
    assert [t[2] for t in turns] == ["tutor", "student"]


def test_an_unforeseen_shape_is_a_message_not_a_traceback(monkeypatch):
    from tutormetrics.datasets import cima

    monkeypatch.setattr(cima, "dialogue_ids", lambda histories: {}.__getitem__("x"))
    monkeypatch.setattr("tutormetrics.datasets.CONVERTERS", CONVERTERS)
    with pytest.raises(InputSchemaError, match=r"raw.json: not a cima release as published \(an unexpected value"):
        CONVERTERS["cima"](_cima(), "raw.json")


# --- the folder: one conversion, never two side by side --------------------------------------------------------

def _convert(name: str, raw: bytes, folder: Path) -> None:
    raw_path = folder.parent / f"{name}.raw"
    raw_path.write_bytes(raw)
    write_conversion(folder, SOURCES[name], CONVERTERS[name](raw, raw_path.name), raw_path, raw, "test")


def test_a_failure_half_way_leaves_the_old_conversion_whole(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _convert("mrbench", _mrbench(), out)
    (out / "mine.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    from tutormetrics.datasets import output_files

    real = output_files.write_text_atomic
    calls = []

    def fail_third(path, text):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(path, text)

    monkeypatch.setattr(output_files, "write_text_atomic", fail_third)
    second = _mrbench(conversation_id="c2")
    with pytest.raises(OSError, match="No space left"):
        _convert("mrbench", second, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging folder left, no file replaced


def test_a_rename_failing_half_way_is_rolled_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _convert("mrbench", _mrbench(), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import os as os_module

    from tutormetrics.datasets import output_files

    real, calls = os_module.replace, []

    def fail_late(src, dst):
        calls.append(dst)
        if len(calls) == 6:  # three moved aside, two new ones moved in
            raise OSError(5, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(output_files.os, "replace", fail_late)
    with pytest.raises(OSError, match="I/O error"):
        _convert("mrbench", _mrbench(conversation_id="c2"), out)
    monkeypatch.setattr(output_files.os, "replace", real)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_another_dataset_into_the_same_folder_replaces_the_whole_conversion(tmp_path):
    out = tmp_path / "out"
    _convert("mathdial", _mathdial(), out)
    (out / "mine.txt").write_text("mine")
    _convert("mrbench", _mrbench(), out)
    assert sorted(p.name for p in out.iterdir()) == ["exchanges.csv", "exchanges_meta.csv", "meta.json", "mine.txt",
                                                      "ratings.csv"]
    assert json.loads((out / "meta.json").read_text())["dataset"] == "mrbench"


def test_every_converter_writes_only_known_names():
    raws = {"mrbench": _mrbench(), "cima": _cima(), "bridge": _bridge(), "mathdial": _mathdial(), "uptake": _uptake(UPTAKE_ROW)}
    for name, raw in raws.items():
        assert set(CONVERTERS[name](raw, "r").tables) <= OUTPUT_NAMES


def test_cli_prints_one_error_line_and_a_hint(tmp_path, capsys):
    raw = tmp_path / "dataset.json"
    raw.write_bytes(_cima(tutorActions=[[1, 0, 0, 0, 0]]))
    assert main(["convert", "cima", str(raw), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "hint: " in err and "Traceback" not in err and "Error:" not in err
    assert not (tmp_path / "out" / "ratings.csv").exists()


def test_the_shared_samples_still_convert_strictly():
    for name, rel in (("mathdial", "mathdial/test_first40.csv"), ("mathdial", "mathdial/test_first40.jsonl"),
                      ("cima", "cima/dataset_first80.json"), ("bridge", "bridge/validation.json"),
                      ("uptake", "uptake/uptake_data_first200.csv")):
        path = PUBLIC / rel
        if not path.exists():
            pytest.skip("../shared/data/public not available")
        conv = CONVERTERS[name](path.read_bytes(), path.name)
        assert all("None" != cell for t in conv.tables.values() for row in t.rows for cell in row)
        assert csv_text(next(iter(conv.tables.values())))
