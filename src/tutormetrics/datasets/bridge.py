"""``convert bridge``: Bridge ``dataset/*.json`` → a Novice and an Expert exchange per item, no ratings, meta with
the expert's error type, strategy and intention (docs/design/datasets.md#bridge)."""

from __future__ import annotations

from tutormetrics.datasets.cell_text import clean_text, transcript
from tutormetrics.datasets.conversion import RATINGS_HEADER, Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import refuse_repeats, repeated_ids, suffix_duplicates
from tutormetrics.datasets.raw_files import empty_release, load_json, not_this_dataset
from tutormetrics.datasets.raw_values import id_value, list_value, object_value, optional_text, text_value
from tutormetrics.datasets.sources import Source, mit_notice
from tutormetrics.errors import InputSchemaError

SOURCE = Source(
    name="bridge",
    repository="github.com/rosewang2008/bridge",
    licence="MIT, Copyright (c) 2023 Rose E. Wang",
    licence_url="https://opensource.org/licenses/MIT",
    citation="Wang, Zhang, Robinson, Loeb & Demszky (2024), Bridging the Novice-Expert Gap via Models of "
    "Decision-Making, NAACL 2024",
    raw_hint="dataset/*.json",
    licence_notice=mit_notice("Copyright (c) 2023 Rose E. Wang"),
)
EXPECTED = "a JSON list of {c_id, c_h, c_r, c_r_, ...}"
_ROLES = {"tutor": "Tutor", "student": "Student"}


def _turns(value: object, where: str, field: str) -> list[tuple[str, str]]:
    """``(user, text)`` of a list of turn objects; a turn whose text is not a text (``null``, a list) is exit 2."""
    out = []
    for i, cell in enumerate(list_value(value, where, field)):
        turn = object_value(cell, where, f"{field}[{i}]")
        out.append((optional_text(turn.get("user"), where, f"{field}[{i}].user"),
                    text_value(turn.get("text", ""), where, f"{field}[{i}].text")))
    return out


def _response(turns: list[tuple[str, str]]) -> str:
    return " ".join(text for text in (clean_text(t) for _, t in turns) if text)


def _history(turns: list[tuple[str, str]], raw_conv: str) -> str:
    history = []
    for user, text in turns:
        role = _ROLES.get(user)
        if role is None:
            raise InputSchemaError(f"bridge: item {raw_conv}: history speaker {user!r} is neither tutor nor student",
                                   hint="convert bridge reads the Bridge release as published")
        history.append((role, text))
    return transcript(history)


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert one Bridge split."""
    items = load_json(raw, raw_name, SOURCE, EXPECTED)
    if not isinstance(items, list) or not all(isinstance(it, dict) and {"c_id", "c_h", "c_r", "c_r_"} <= set(it) for it in items):
        raise not_this_dataset(raw_name, SOURCE, EXPECTED)
    if not items:
        raise empty_release(raw_name, SOURCE, "items")
    raw_ids = [id_value(it["c_id"], f"{raw_name}: item {i}", "c_id") for i, it in enumerate(items)]
    conv_ids = suffix_duplicates(raw_ids, raw_name)
    exchanges = Table(["exchange_id", "conversation_id", "tutor", "prompt", "response"])
    meta = Table(["exchange_id", "conversation_id", "raw_conversation_id", "source_index", "tutor", "lesson_topic",
                  "error_type", "strategy", "intention"])
    for index, (item, conv, raw_conv) in enumerate(zip(items, conv_ids, raw_ids, strict=True)):
        where = f"{raw_name}: item {raw_conv}"
        prompt = _history(_turns(item["c_h"], where, "c_h"), raw_conv)
        labels = [clean_text(optional_text(item.get(k), where, k)) for k in ("e", "z_what", "z_why")]
        topic = optional_text(item.get("lesson_topic"), where, "lesson_topic")
        for tutor, field in (("Novice", "c_r"), ("Expert", "c_r_")):
            exchange = f"{conv}::{tutor}"
            exchanges.rows.append([exchange, conv, tutor, prompt, _response(_turns(item[field], where, field))])
            meta.rows.append([exchange, conv, raw_conv, str(index), tutor, topic, *labels])
    refuse_repeats([row[0] for row in exchanges.rows], [f"item {r[2]} ({r[4]})" for r in meta.rows], "exchange id", raw_name)
    counts = {"conversations": len(items), "exchanges": len(exchanges.rows), "ratings": 0,
              "duplicated_ids": repeated_ids(raw_ids)}
    summary = (f"{thousands(len(items))} conversations, {thousands(counts['exchanges'])} exchanges (Novice, Expert), "
               "no ratings (compare the tutors with compare --group-col tutor --block-col conversation_id)")
    tables = {"exchanges.csv": exchanges, "ratings.csv": Table(list(RATINGS_HEADER)), "exchanges_meta.csv": meta}
    return Conversion(tables, counts, summary)
