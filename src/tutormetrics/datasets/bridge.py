"""``convert bridge``: Bridge ``dataset/*.json`` → a Novice and an Expert exchange per item, no ratings, meta with
the expert's error type, strategy and intention (docs/design/datasets.md#bridge)."""

from __future__ import annotations

from tutormetrics.datasets.cell_text import clean_text, raw_id, transcript
from tutormetrics.datasets.conversion import RATINGS_HEADER, Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import assert_unique, repeated_ids, suffix_duplicates
from tutormetrics.datasets.raw_files import load_json, not_this_dataset
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


def _response(turns: list[dict]) -> str:
    return " ".join(text for text in (clean_text(str(t.get("text", ""))) for t in turns) if text)


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert one Bridge split."""
    items = load_json(raw, raw_name, SOURCE, EXPECTED)
    if not isinstance(items, list) or not all(isinstance(it, dict) and {"c_id", "c_h", "c_r", "c_r_"} <= set(it) for it in items):
        raise not_this_dataset(raw_name, SOURCE, EXPECTED)
    raw_ids = [raw_id(it["c_id"]) for it in items]
    conv_ids = suffix_duplicates(raw_ids)
    exchanges = Table(["exchange_id", "conversation_id", "tutor", "prompt", "response"])
    meta = Table(["exchange_id", "conversation_id", "raw_conversation_id", "source_index", "tutor", "lesson_topic",
                  "error_type", "strategy", "intention"])
    for index, (item, conv, raw_conv) in enumerate(zip(items, conv_ids, raw_ids)):
        history = []
        for turn in item["c_h"]:
            role = _ROLES.get(str(turn.get("user")))
            if role is None:
                raise InputSchemaError(f"bridge: item {raw_conv}: history speaker {turn.get('user')!r} is neither tutor nor student",
                                       hint="convert bridge reads the Bridge release as published")
            history.append((role, str(turn.get("text", ""))))
        prompt = transcript(history)
        labels = [clean_text(str(item.get(k) or "")) for k in ("e", "z_what", "z_why")]
        for tutor, turns in (("Novice", item["c_r"]), ("Expert", item["c_r_"])):
            exchange = f"{conv}::{tutor}"
            exchanges.rows.append([exchange, conv, tutor, prompt, _response(turns)])
            meta.rows.append([exchange, conv, raw_conv, str(index), tutor, str(item.get("lesson_topic", "")), *labels])
    assert_unique([row[0] for row in exchanges.rows], "exchange ids")
    counts = {"conversations": len(items), "exchanges": len(exchanges.rows), "ratings": 0,
              "duplicated_ids": repeated_ids(raw_ids)}
    summary = (f"{thousands(len(items))} conversations, {thousands(counts['exchanges'])} exchanges (Novice, Expert), "
               "no ratings (compare the tutors with compare --group-col tutor --block-col conversation_id)")
    tables = {"exchanges.csv": exchanges, "ratings.csv": Table(list(RATINGS_HEADER)), "exchanges_meta.csv": meta}
    return Conversion(tables, counts, summary)
