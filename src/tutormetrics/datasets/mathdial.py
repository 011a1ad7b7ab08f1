"""``convert mathdial``: MathDial ``data/{train,test}.csv|jsonl`` → the long dialogue table, conversation and turn
ratings, conversation meta (docs/design/datasets.md#mathdial).

Each ``conversation`` cell holds turns separated by ``|EOM|`` as ``Persona: (move) text``; student turns are
sometimes labelled with the student's name (the first word of ``student_profile``).
"""

from __future__ import annotations

import json
import re
import unicodedata

from tutormetrics.datasets.cell_text import clean_text, score_text
from tutormetrics.datasets.conversion import Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import refuse_repeats, repeated_ids, suffix_duplicates
from tutormetrics.datasets.raw_files import (
    decode_utf8,
    empty_release,
    jsonl_lines,
    not_this_dataset,
    parse_json,
    read_csv_rows,
)
from tutormetrics.datasets.raw_values import finite_number, id_value, optional_text, refuse, text_value
from tutormetrics.datasets.sources import Source
from tutormetrics.errors import InputSchemaError

SOURCE = Source(
    name="mathdial",
    repository="github.com/eth-nlped/mathdial",
    licence="CC BY-SA 4.0",
    licence_url="https://creativecommons.org/licenses/by-sa/4.0/",
    citation="Macina, Daheim, Chowdhury, Sinha, Kapur, Gurevych & Sachan (2023), MathDial, Findings of EMNLP 2023",
    raw_hint="data/*.csv|jsonl",
)
EXPECTED = "a CSV or JSONL with qid, student_profile, self-correctness, ..., conversation"
META_COLUMNS = ["qid", "scenario", "question", "ground_truth", "student_incorrect_solution", "student_profile",
                "teacher_described_confusion"]
RATING_COLUMNS = ["self-correctness", "self-typical-confusion", "self-typical-interactions"]
REQUIRED = [*META_COLUMNS, *RATING_COLUMNS, "conversation"]
MOVES = ("focus", "probing", "telling", "generic")
CORRECTNESS = {"Yes": 1.0, "Yes, but I had to reveal the answer": 0.5, "No": 0.0}
_PIECE = re.compile(r"^\s*([^:]{1,40}?)\s*:(.*)$", re.DOTALL)
_MOVE = re.compile(r"^\((\w+)\)")


def _records(raw: bytes, raw_name: str) -> list[dict[str, object]]:
    """CSV or JSONL rows, told apart by content (a JSONL line opens with ``{``); JSONL is split on ``\\n`` only."""
    text = decode_utf8(raw, raw_name)
    if not text.lstrip().startswith("{"):
        return read_csv_rows(raw, raw_name, SOURCE, EXPECTED, REQUIRED)  # type: ignore[return-value]
    rows = []
    for number, line in jsonl_lines(text):
        try:
            row = parse_json(line, f"{raw_name}: line {number}")
        except json.JSONDecodeError:
            raise not_this_dataset(raw_name, SOURCE, EXPECTED + f" (line {number} is not JSON)") from None
        if not isinstance(row, dict) or not set(REQUIRED) <= set(row):
            raise not_this_dataset(raw_name, SOURCE, EXPECTED)
        rows.append(row)
    return rows


def _cell(value: object, where: str, field: str) -> str:
    return optional_text(value, where, field)


def split_turns(conversation: str, student_name: str, where: str) -> list[tuple[str, str, str, str]]:
    """``(role, speaker, move, text)`` per non-blank ``|EOM|`` piece.

    Args:
        conversation: the raw conversation, pieces separated by ``|EOM|``.
        student_name: the student's name in this conversation (its speaker label besides ``Student``).
        where: the conversation, for the messages.

    >>> split_turns("Teacher: (probing)What is 3 x 4?|EOM|Cody: 12", "Cody", "c1")
    [('tutor', 'Teacher', 'probing', 'What is 3 x 4?'), ('student', 'Cody', '', '12')]
    """
    turns = []
    for index, piece in enumerate(p for p in conversation.split("|EOM|") if p.strip()):
        match = _PIECE.match(piece)
        if not match:
            raise InputSchemaError(f"mathdial: conversation {where}, piece {index}: no 'Speaker:' label: {piece[:60]!r}",
                                   hint="convert mathdial reads the MathDial release as published")
        speaker, text = match.group(1), match.group(2).strip()
        if speaker == "Teacher":
            role = "tutor"
        elif speaker == "Student" or (student_name and unicodedata.normalize("NFC", speaker) == student_name):
            role = "student"
        else:
            raise InputSchemaError(
                f"mathdial: conversation {where}, piece {index}: unknown speaker {speaker!r} "
                f"(expected Teacher, Student or the student's name {student_name!r})",
                hint="convert mathdial reads the MathDial release as published",
            )
        move = ""
        tag = _MOVE.match(text)
        # A move tag is the teacher's; a student's "(5) ..." is text, unless it is one of the four moves.
        if tag and (role == "tutor" or tag.group(1) in MOVES):
            if tag.group(1) not in MOVES:
                raise InputSchemaError(
                    f"mathdial: conversation {where}, piece {index}: unknown move ({tag.group(1)})",
                    hint=f"MathDial's moves are {', '.join(MOVES)}",
                )
            move, text = tag.group(1), text[tag.end():]
        turns.append((role, speaker, move, clean_text(text)))
    return turns


def _rating(column: str, value: object, where: str) -> tuple[str, str, float] | None:
    """``(criterion, label, score)`` of one rating cell, or ``None`` when it is empty (unrated)."""
    label = _cell(value, where, column).strip()
    if not label:
        return None
    criterion = column.replace("-", "_")
    if column == "self-correctness":
        if label not in CORRECTNESS:
            raise InputSchemaError(f"{where}: {criterion} label {label!r} is not one of "
                                   f"{', '.join(CORRECTNESS)}", hint="convert mathdial reads the release as published")
        return criterion, label, CORRECTNESS[label]
    return criterion, label, finite_number(label, where, f"{criterion} label")


def _student_name(profile: str) -> str:
    """The first word of ``student_profile``, NFC (a name in NFD is still the name).

    >>> _student_name("Zoe\\u0301 is a 7th grade student") == "Zo\\u00e9"
    True
    """
    words = unicodedata.normalize("NFC", profile).split()
    return words[0] if words else ""


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert one MathDial split (CSV or JSONL; both give identical tables)."""
    records = _records(raw, raw_name)
    if not records:
        raise empty_release(raw_name, SOURCE, "conversations")
    qids = [id_value(r["qid"], f"{raw_name}: record {i + 1}", "qid") for i, r in enumerate(records)]
    conv_ids = suffix_duplicates(qids, raw_name)
    dialogues = Table(["conversation_id", "turn", "role", "speaker", "move", "text"])
    ratings = Table(["conversation_id", "rater", "criterion", "label", "score"])
    turn_ratings = Table(["exchange_id", "rater", "criterion", "label", "score"])
    meta = Table(["conversation_id", "qid", "source_index", "scenario", "student_name", "question", "ground_truth",
                  "student_incorrect_solution", "student_profile", "teacher_described_confusion"])
    by_name = tutor_turns = 0
    for index, (record, conv) in enumerate(zip(records, conv_ids, strict=True)):
        where = f"mathdial: conversation {conv}"
        profile = _cell(record["student_profile"], where, "student_profile")
        name = _student_name(profile)
        turns = split_turns(text_value(record["conversation"], where, "conversation"), name, conv)
        if not turns:
            raise refuse(where, "the conversation has no turns (a rated conversation of 0 turns would be kept)")
        for turn, (role, speaker, move, text) in enumerate(turns):
            dialogues.rows.append([conv, str(turn), role, speaker, move, text])
            by_name += role == "student" and speaker != "Student"
            tutor_turns += role == "tutor"
            if role == "tutor" and move:
                for option in MOVES:
                    turn_ratings.rows.append([f"{conv}:{turn}", "gold", f"move_{option}", move, str(int(option == move))])
        for column in RATING_COLUMNS:
            rating = _rating(column, record[column], where)
            if rating is not None:
                criterion, label, score = rating
                ratings.rows.append([conv, "gold", criterion, label, score_text(score)])
        meta.rows.append([conv, qids[index], str(index), _cell(record["scenario"], where, "scenario"), name,
                          *(_cell(record[c], where, c) for c in META_COLUMNS[2:])])
    refuse_repeats([f"{r[0]}:{r[1]}" for r in dialogues.rows], [f"conversation {r[0]}" for r in dialogues.rows],
                   "turn id", raw_name)
    n_turns = len(dialogues.rows)
    counts = {
        "conversations": len(records), "turns": n_turns, "tutor_turns": tutor_turns,
        "student_turns": n_turns - tutor_turns, "student_turns_labelled_by_name": by_name,
        "ratings": len(ratings.rows), "turn_ratings": len(turn_ratings.rows), "duplicated_ids": repeated_ids(qids),
    }
    summary = (f"{thousands(len(records))} conversations, {thousands(n_turns)} turns ({thousands(tutor_turns)} tutor, "
               f"{thousands(n_turns - tutor_turns)} student), {thousands(len(ratings.rows))} ratings, "
               f"{thousands(len(turn_ratings.rows))} turn ratings")
    tables = {"dialogues.csv": dialogues, "ratings.csv": ratings, "turn_ratings.csv": turn_ratings,
              "conversations_meta.csv": meta}
    return Conversion(tables, counts, summary)
