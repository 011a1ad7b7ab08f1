"""``convert mrbench``: MRBench V1/V2 and the BEA 2025 JSON → exchanges, long ratings, meta (docs/design/datasets.md#mrbench).

The rules are those of the project's MRBench copy (``docs/design/datasets.md#mrbench``): ``convert mrbench MRBench_V2.json``
writes its three CSVs byte for byte.
"""

from __future__ import annotations

import hashlib
import re

from tutormetrics.datasets.cell_text import clean_text, score_text
from tutormetrics.datasets.conversion import Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import refuse_repeats, repeated_ids, suffix_duplicates
from tutormetrics.datasets.raw_files import empty_release, load_json, not_this_dataset
from tutormetrics.datasets.raw_values import id_value, object_value, optional_text, refuse, text_value
from tutormetrics.datasets.sources import Source
from tutormetrics.errors import InputSchemaError

SOURCE = Source(
    name="mrbench",
    repository="github.com/kaushal0494/UnifyingAITutorEvaluation",
    licence="CC BY-SA 4.0",
    licence_url="https://creativecommons.org/licenses/by-sa/4.0/",
    citation="Maurya, Srivatsa, Petukhova & Kochmar (2025), Unifying AI Tutor Evaluation, NAACL 2025",
    raw_hint="MRBench/*.json or the BEA 2025 JSON",
)
EXPECTED = "a JSON list of {conversation_id, conversation_history, anno_llm_responses | tutor_responses}"
HUMAN_TUTORS = frozenset({"Expert", "Novice"})
_SPEAKER = re.compile(r"^(Tutor|Turor|Teacher|Student)\s*:\s*(.*)$", re.IGNORECASE)

#: label → (score, endorsed) per criterion; criteria not listed use the default Yes / To some extent / No scale.
_DEFAULT = {"Yes": (1.0, 1), "To some extent": (0.5, 0), "No": (0.0, 0)}
_SCALES = {
    "revealing_of_the_answer": {
        "Yes (and the answer is correct)": (1.0, 1),
        "Yes (but the answer is incorrect)": (1.0, 1),
        "No": (0.0, 0),
    },
    "tutor_tone": {"Encouraging": (1.0, 1), "Neutral": (0.5, 0), "Offensive": (0.0, 0)},
}


def history_transcript(history: str) -> str:
    """The ``prompt`` of an item: speaker lines start turns, continuation lines join with one space.

    >>> history_transcript("Tutor: Hi\\u00a0\\n\\u00a0Student: 2 +\\n 2\\nturor: ok")
    'Tutor: Hi\\nStudent: 2 + 2\\nTutor: ok'
    """
    turns: list[tuple[str, list[str]]] = []
    for raw in history.replace("\u00a0", " ").split("\n"):
        line = " ".join(raw.split())
        if not line:
            continue
        match = _SPEAKER.match(line)
        if match:
            role = "Student" if match.group(1).lower() == "student" else "Tutor"
            turns.append((role, [match.group(2)] if match.group(2) else []))
        else:
            if not turns:
                turns.append(("Unknown", []))
            turns[-1][1].append(line)
    return "\n".join(f"{role}: {' '.join(parts)}" for role, parts in turns)


def content_key(history: str, responses: dict[str, str], tutor: str) -> str:
    """``<16 hex of sha1(collapsed history, sorted tutor␟response pairs, joined with ␞)>:<tutor>``.

    Args:
        history: the conversation history (whitespace collapsed before hashing).
        responses: tutor → response of the item.
        tutor: the tutor whose key this is.
    """
    pairs = sorted(f"{name}\x1f{text}" for name, text in responses.items())
    digest = hashlib.sha1("\x1e".join([" ".join(history.split()), *pairs]).encode("utf8")).hexdigest()
    return f"{digest[:16]}:{tutor}"


def _annotation(response: dict, where: str) -> list[tuple[str, str]]:
    """``(criterion, label)`` pairs of one response: keys lower-cased must stay distinct, labels must be texts."""
    annotation = response.get("annotation")
    if annotation is None:
        return []
    pairs: dict[str, tuple[str, str]] = {}
    for key, label in object_value(annotation, where, "annotation").items():
        criterion = key.lower()
        if criterion in pairs:
            raise refuse(where, f"annotation keys {pairs[criterion][0]!r} and {key!r} differ only in case: both would "
                                f"be the criterion {criterion!r}, two gold ratings of one exchange")
        pairs[criterion] = (key, text_value(label, where, f"the label of {key}"))
    return [(criterion, label) for criterion, (_, label) in pairs.items()]


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert one MRBench / BEA 2025 JSON file."""
    items = load_json(raw, raw_name, SOURCE, EXPECTED)
    if not isinstance(items, list) or not all(
        isinstance(it, dict) and "conversation_id" in it and "conversation_history" in it
        and ("anno_llm_responses" in it or "tutor_responses" in it)
        for it in items
    ):
        raise not_this_dataset(raw_name, SOURCE, EXPECTED)
    if not items:
        raise empty_release(raw_name, SOURCE, "items")
    raw_ids = [id_value(it["conversation_id"], f"{raw_name}: item {i}", "conversation_id") for i, it in enumerate(items)]
    conv_ids = suffix_duplicates(raw_ids, raw_name)
    exchanges = Table(["exchange_id", "conversation_id", "tutor", "prompt", "response"])
    ratings = Table(["exchange_id", "rater", "criterion", "label", "score", "endorsed"])
    meta = Table(["exchange_id", "conversation_id", "raw_conversation_id", "source_index", "tutor", "tutor_is_human",
                  "data_source", "orig_split", "topic", "content_key"])
    origins: list[str] = []
    for index, (item, conv, raw_conv) in enumerate(zip(items, conv_ids, raw_ids, strict=True)):
        where = f"{raw_name}: item {raw_conv}"
        history = text_value(item["conversation_history"], where, "conversation_history")
        prompt = history_transcript(history)
        responses = object_value(item.get("anno_llm_responses", item.get("tutor_responses")), where, "the responses")
        by_tutor = {tutor: object_value(r, f"{where} ({tutor})", "the response") for tutor, r in responses.items()}
        texts = {tutor: clean_text(text_value(r.get("response"), f"{where} ({tutor})", "response")) for tutor, r in by_tutor.items()}
        facts = [optional_text(item.get(k), where, k) for k in ("Data", "Split", "Topic")]
        for tutor, response in by_tutor.items():
            exchange = f"{conv}::{tutor}"
            exchanges.rows.append([exchange, conv, tutor, prompt, texts[tutor]])
            origins.append(f"item {raw_conv} (tutor {tutor!r})")
            for criterion, label in _annotation(response, f"{where} ({tutor})"):
                scale = _SCALES.get(criterion, _DEFAULT)
                if label not in scale:
                    raise InputSchemaError(
                        f"{raw_name}: item {raw_conv} ({tutor}): label {label!r} of {criterion} is not on its scale "
                        f"({', '.join(scale)})",
                        hint="convert mrbench reads the MRBench V1/V2 and BEA 2025 releases as published",
                    )
                score, endorsed = scale[label]
                ratings.rows.append([exchange, "gold", criterion, label, score_text(score), str(endorsed)])
            meta.rows.append([
                exchange, conv, raw_conv, str(index), tutor, str(int(tutor in HUMAN_TUTORS)), *facts,
                content_key(history, texts, tutor),
            ])
    refuse_repeats([row[0] for row in exchanges.rows], origins, "exchange id", raw_name)
    counts = {
        "conversations": len(items),
        "exchanges": len(exchanges.rows),
        "ratings": len(ratings.rows),
        "duplicated_ids": repeated_ids(raw_ids),
    }
    summary = (f"{thousands(counts['conversations'])} conversations, {thousands(counts['exchanges'])} exchanges, "
               f"{thousands(counts['ratings'])} ratings")
    return Conversion({"exchanges.csv": exchanges, "ratings.csv": ratings, "exchanges_meta.csv": meta}, counts, summary)
