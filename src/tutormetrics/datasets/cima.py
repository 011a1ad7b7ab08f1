"""``convert cima``: CIMA ``dataset.json`` → one exchange per tutor response, its five action labels, meta with the
dialogue each item belongs to (docs/design/datasets.md#cima)."""

from __future__ import annotations

from tutormetrics.datasets.cell_text import clean_text, transcript
from tutormetrics.datasets.conversion import RATINGS_HEADER, Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import assert_unique
from tutormetrics.datasets.raw_files import load_json, not_this_dataset
from tutormetrics.datasets.sources import Source

SOURCE = Source(
    name="cima",
    repository="github.com/kstats/CIMA",
    licence="CC BY 2.5",
    licence_url="https://creativecommons.org/licenses/by/2.5/",
    citation="Stasaski, Kao & Hearst (2020), CIMA: A Large Open Access Dialogue Dataset for Tutoring, BEA 2020",
    raw_hint="dataset.json",
)
EXPECTED = '{"prepDataset": {key: {past_convo, tutorResponses, tutorActions, ...}}}'
ACTIONS = ("question", "hint", "correction", "confirmation", "other")
META_FIELDS = (("prep", "prep"), ("obj", "obj"), ("color", "color"), ("eng_prep", "engPrep"), ("eng_obj", "engObj"),
               ("eng_color", "engColor"))


def _number(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 62, key)


def dialogue_ids(histories: dict[str, list[str]]) -> dict[str, str]:
    """Items whose history is a prefix of another item's are one dialogue; its id is the smallest key (by number).

    >>> dialogue_ids({"3": ["a", "b"], "1": ["a", "b", "c", "d"], "2": ["x", "y"]})
    {'3': '1', '1': '1', '2': '2'}
    """
    parent = {key: key for key in histories}

    def find(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    by_history: dict[tuple[str, ...], list[str]] = {}
    for key, history in histories.items():
        by_history.setdefault(tuple(history), []).append(key)
    for key, history in histories.items():
        for length in range(1, len(history) + 1):
            for other in by_history.get(tuple(history[:length]), ()):
                a, b = find(key), find(other)
                if a != b:
                    keep, drop = sorted((a, b), key=_number)
                    parent[drop] = keep
    return {key: find(key) for key in histories}


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert CIMA's ``dataset.json``."""
    data = load_json(raw, raw_name, SOURCE, EXPECTED)
    items = data.get("prepDataset") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(
        isinstance(it, dict) and {"past_convo", "tutorResponses", "tutorActions"} <= set(it) for it in items.values()
    ):
        raise not_this_dataset(raw_name, SOURCE, EXPECTED)
    histories = {key: [str(t) for t in item["past_convo"]] for key, item in items.items()}
    dialogue = dialogue_ids(histories)
    exchanges = Table(["exchange_id", "conversation_id", "response_index", "prompt", "response"])
    ratings = Table(list(RATINGS_HEADER))
    meta = Table(["exchange_id", "conversation_id", "response_index", "dialogue_id", "n_history_turns",
                  *(name for name, _ in META_FIELDS)])
    for key, item in items.items():
        prompt = transcript(("Tutor" if i % 2 == 0 else "Student", text) for i, text in enumerate(histories[key]))
        actions = item["tutorActions"]
        if len(actions) != len(item["tutorResponses"]) or not all(len(a) == len(ACTIONS) for a in actions):
            raise not_this_dataset(raw_name, SOURCE, f"{EXPECTED} (item {key}: one list of five actions per response)")
        for k, (response, labels) in enumerate(zip(item["tutorResponses"], actions)):
            exchange = f"{key}::{k}"
            exchanges.rows.append([exchange, key, str(k), prompt, clean_text(str(response))])
            for action, flag in zip(ACTIONS, labels):
                value = flag if isinstance(flag, bool) else str(flag).strip().lower() == "true"
                ratings.rows.append([exchange, "gold", action, "true" if value else "false", str(int(value))])
            meta.rows.append([exchange, key, str(k), dialogue[key], str(len(histories[key])),
                              *(str(item.get(field, "")) for _, field in META_FIELDS)])
    assert_unique([row[0] for row in exchanges.rows], "exchange ids")
    counts = {"conversations": len(items), "exchanges": len(exchanges.rows), "ratings": len(ratings.rows),
              "dialogues": len(set(dialogue.values()))}
    summary = (f"{thousands(len(items))} items in {thousands(counts['dialogues'])} dialogues, "
               f"{thousands(counts['exchanges'])} exchanges, {thousands(counts['ratings'])} ratings")
    return Conversion({"exchanges.csv": exchanges, "ratings.csv": ratings, "exchanges_meta.csv": meta}, counts, summary)
