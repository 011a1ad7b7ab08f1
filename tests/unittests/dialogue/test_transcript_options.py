"""Transcript options of datasets.md §3.2–§3.3: --turn-sep, --speaker, unknown labels, --turn-tag (worked example §9.3)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tutormetrics.dialogue.file_scoring import DialogueOptions, score_dialogue_file
from tutormetrics.dialogue.model import Roles
from tutormetrics.dialogue.readers import ReadOptions, apply_turn_tag, compile_turn_tag, long_conversations
from tutormetrics.dialogue.speakers import SpeakerMap, is_speaker_like
from tutormetrics.dialogue.transcript import parse_transcript, pieces
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.errors import ConfigError, InputSchemaError

EX93 = "Teacher: (probing) What is 3 x 4?|EOM|Cody: 12|EOM|Teacher: (focus)Right. And 12 + 3?|EOM|Cody: 15"
TAG = r"\((?P<move>\w+)\)\s*"
PUBLIC = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public"


def _score(tmp_path: Path, **dialogue) -> tuple[pl.DataFrame, pl.DataFrame]:
    table = tmp_path / "t.csv"
    pl.DataFrame({"exchange_id": ["e1"], "conversation": [EX93]}).write_csv(table)
    result = score_dialogue_file(table, None, ScoreOptions(metrics="lexical"),
                                 DialogueOptions(transcript_col="conversation", turn_sep="|EOM|", **dialogue),
                                 conversations_output=tmp_path / "c.csv")
    return result.turns, result.conversations


def test_worked_example_9_3_speaker_and_tag(tmp_path):
    turns, conv = _score(tmp_path, speakers=["Cody=student"], turn_tag=TAG)
    assert turns["exchange_id"].to_list() == ["e1:0", "e1:2"] and turns["move"].to_list() == ["probing", "focus"]
    assert turns["ctx_turns"].to_list() == [0, 2] and turns["resp_words"].to_list() == [5, 4]
    second = turns.row(1, named=True)
    assert second["jaccard_1"] == pytest.approx(0.25, abs=1e-6)
    assert second["contain_prompt_in_resp"] == pytest.approx(0.333333, abs=1e-6)
    assert second["prev_student_jaccard_1"] == pytest.approx(0.25, abs=1e-6) and second["resp_questions"] == 1
    c = conv.row(0, named=True)
    assert (c["n_turns"], c["n_student_turns"], c["tutor_words"], c["student_words"], c["talk_ratio"]) == (4, 2, 9, 2, 4.5)


def test_worked_example_9_3_star_text_reproduces_the_glued_turns(tmp_path):
    _, conv = _score(tmp_path, speakers=["*=text"], turn_tag=TAG)
    c = conv.row(0, named=True)
    assert (c["n_turns"], c["n_student_turns"], c["tutor_words"], c["student_words"]) == (2, 0, 13, 0)
    assert c["talk_ratio"] != c["talk_ratio"]  # NaN


def test_unknown_labels_stop_the_run_listing_them(tmp_path):
    with pytest.raises(InputSchemaError) as err:
        _score(tmp_path)
    assert "2 speaker labels in 1 conversation are neither tutor nor student roles: Cody (2)" in str(err.value)
    assert "--speaker Cody=student" in str(err.value.hint)


def test_speaker_like_labels():
    like = ["Cody", "Mr. Smith", "Step 1", "Note", "小明", "O'Neil", "Mary-Jane Doe"]
    unlike = ["from both sides", "narrator", "10", "x", "a b c d", "2x + 3 = 11"]
    assert all(is_speaker_like(x) for x in like) and not any(is_speaker_like(x) for x in unlike)


def test_role_precedence_exact_then_roles_then_system_then_glob():
    sp = SpeakerMap.parse(["Note=text", "*=student", "Mr. Smith=tutor"])
    p = parse_transcript("Mr. Smith: hi\nNote: aside\nAna: 2\nSystem: dropped\nmore\nTutor: ok", Roles(), speakers=sp)
    assert [(t.kind, t.text) for t in p.turns] == [("tutor", "hi\nNote: aside"), ("student", "2"), ("tutor", "ok")]
    assert not p.unknown


def test_unknown_only_after_the_first_turn_and_lowercase_prefixes_continue():
    p = parse_transcript("Problem: 2x = 8\nTutor: solve it\nStudent: I divide\nfrom both sides: x = 4")
    assert [t.kind for t in p.turns] == ["other", "tutor", "student"] and not p.unknown
    assert dict(parse_transcript("Tutor: hi\nNote: aside").unknown) == {"Note": 1}


def test_turn_sep_pieces_keep_their_line_breaks():
    assert pieces("Tutor: a\nb|EOM|  |EOM|Student: c", "|EOM|") == ["Tutor: a\nb", "Student: c"]
    seps = parse_transcript("Tutor: a|EOM|Student: b\nc", turn_sep="|EOM|").turns
    lines = parse_transcript("Tutor: a\nStudent: b\nc").turns
    assert [(t.kind, t.text) for t in seps] == [(t.kind, t.text) for t in lines]


def test_bad_speaker_options():
    with pytest.raises(ConfigError, match="expected LABEL=ROLE"):
        SpeakerMap.parse(["Cody"])
    with pytest.raises(ConfigError, match="role 'teacher' is not one of"):
        SpeakerMap.parse(["Cody=teacher"])
    with pytest.raises(ConfigError, match="role 'text' is not one of"):
        SpeakerMap.parse(["Cody=text"], allow_text=False)


def test_speaker_maps_long_table_roles():
    frame = pl.DataFrame({"conversation_id": ["c"] * 3, "turn": ["0", "1", "2"], "role": ["coach", "kid", "bot"],
                          "text": ["hi", "2", "x"]})
    opts = ReadOptions(speakers=SpeakerMap.parse(["coach=tutor", "k*=student", "bot=system"], allow_text=False))
    conv = long_conversations(frame, opts)[0]
    assert [t.kind for t in conv.turns] == ["tutor", "student"]


def test_turn_tag_columns_and_errors():
    assert apply_turn_tag("(focus) Right", compile_turn_tag(TAG)) == ("Right", {"move": "focus"})
    assert apply_turn_tag("Right", compile_turn_tag(TAG)) == ("Right", {"move": None})
    assert apply_turn_tag("[Q] why", compile_turn_tag(r"\[(\w)\]\s*")) == ("why", {"tag": "Q"})
    assert apply_turn_tag("#1 why", compile_turn_tag(r"#\d+ ")) == ("why", {"tag": "#1 "})
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        compile_turn_tag("(")
    with pytest.raises(ConfigError, match="named like an existing column"):
        compile_turn_tag(r"(?P<tutor>\w+)", ["tutor"])


def test_raw_mathdial_scores_like_the_converted_long_table(tmp_path):
    raw = PUBLIC / "mathdial" / "test_first40.csv"
    if not raw.exists():
        pytest.skip("../shared/data/public not available")
    from tutormetrics.datasets import CONVERTERS, SOURCES, write_conversion

    conversion = CONVERTERS["mathdial"](raw.read_bytes(), raw.name)
    write_conversion(tmp_path / "md", SOURCES["mathdial"], conversion, raw, raw.read_bytes(), "test")
    opts = ScoreOptions(metrics="length")
    long = score_dialogue_file(tmp_path / "md" / "dialogues.csv", None, opts, DialogueOptions(),
                               conversations_output=tmp_path / "a.csv").conversations
    transcript = score_dialogue_file(
        raw, None, opts,
        DialogueOptions(transcript_col="conversation", turn_sep="|EOM|", speakers=["*=student"], turn_tag=TAG),
        conversations_output=tmp_path / "b.csv",
    ).conversations
    columns = ["n_turns", "n_tutor_turns", "n_student_turns", "tutor_words", "student_words"]
    assert long.select(columns).sort(columns).equals(transcript.select(columns).sort(columns))
    assert (transcript["student_words"] > 0).all() and transcript.height == 40


def test_cli_turn_sep_speaker_and_tag(tmp_path, capsys):
    from tutormetrics.cli import main

    table = tmp_path / "t.csv"
    pl.DataFrame({"exchange_id": ["e1"], "conversation": [EX93]}).write_csv(table)
    base = ["score", str(table), "--transcript-col", "conversation", "--turn-sep", "|EOM|", "--metrics", "lexical",
            "-o", str(tmp_path / "turns.csv")]
    assert main(base) == 2
    assert "Cody (2)" in capsys.readouterr().err
    assert main([*base, "--speaker", "Cody=student", "--turn-tag", TAG, "--progress-every", "0"]) == 0
    assert "the transcript alone is the conversation" in capsys.readouterr().err
    turns = pl.read_csv(tmp_path / "turns.csv")
    assert turns["move"].to_list() == ["probing", "focus"] and turns["resp_words"].to_list() == [5, 4]
    assert main([*base, "--speaker", "Cody=student", "--progress-every", "0.05"]) == 2


# --- issue 35: turn numbers are read per conversation; NaN is a missing turn ---------------------------------


def _long(turns, cids=None) -> pl.DataFrame:
    n = len(turns)
    return pl.DataFrame({"conversation_id": cids or ["c1"] * n, "turn": turns, "role": ["tutor", "student"] * (n // 2) + ["tutor"] * (n % 2),
                         "text": [f"t{i}" for i in range(n)]})


def test_a_text_turn_in_one_conversation_does_not_sort_the_others_as_text():
    cids = ["c1"] * 12 + ["c2"] * 2
    turns = [str(i) for i in range(12)] + ["a", "b"]
    convs = long_conversations(_long(turns, cids), ReadOptions())
    assert [t.turn for t in convs[0].turns] == list(range(12))  # not 0, 1, 10, 11, 2, ...
    assert [t.turn for t in convs[1].turns] == ["a", "b"]


def test_a_text_turn_among_numbers_is_refused_naming_the_row():
    with pytest.raises(InputSchemaError, match=r"row 1: turn 'intro' of conversation c1 is not a number"):
        long_conversations(_long(["intro", "0", "1"]), ReadOptions())


@pytest.mark.parametrize("turns", [["0", "NaN", "2"], [0.0, float("nan"), 2.0]])
def test_a_nan_turn_is_a_missing_turn(turns):
    with pytest.raises(InputSchemaError, match=r"row 2: missing 'turn'"):
        long_conversations(_long(turns), ReadOptions())


def test_ids_keep_their_form_in_every_conversation():
    frame = _long([0.0, 1.0, 0.0, 1.5], ["c1", "c1", "c2", "c2"])
    convs = long_conversations(frame, ReadOptions())
    assert [str(t.turn) for t in convs[0].turns] == ["0", "1"] and [str(t.turn) for t in convs[1].turns] == ["0.0", "1.5"]
    with pytest.raises(InputSchemaError, match=r"row 2: turn 'inf' is not a finite number"):
        long_conversations(_long(["0", "inf"]), ReadOptions())


@pytest.mark.parametrize("given", [["Cody=student", "Cody=tutor"], ["cody=student", "CODY=other"], ["*=text", "*=student"]])
def test_a_speaker_given_twice_with_two_roles_is_refused(given):
    with pytest.raises(ConfigError, match=r"is given twice, as \w+ and as \w+"):
        SpeakerMap.parse(given)
    assert SpeakerMap.parse(["Cody=student", "cody=student"]).exact == {"cody": "student"}


@pytest.mark.parametrize("group", ["resp_words", "ctx_turns", "turn", "resp_empty"])
def test_a_turn_tag_group_named_like_a_turns_column_is_refused(tmp_path, group):
    table = tmp_path / "t.csv"
    pl.DataFrame({"exchange_id": ["e1"], "conversation": [EX93]}).write_csv(table)
    dialogue = DialogueOptions(transcript_col="conversation", turn_sep="|EOM|", speakers=["Cody=student"],
                               turn_tag=rf"\((?P<{group}>\w+)\)\s*")
    with pytest.raises(ConfigError, match=rf"--turn-tag group '{group}' is named like a TURNS column"):
        score_dialogue_file(table, None, ScoreOptions(metrics="length"), dialogue)
