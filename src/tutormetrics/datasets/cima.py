"""``convert cima``: CIMA ``dataset.json`` → one exchange per tutor response, its five action labels, meta with the
dialogue each item belongs to (docs/design/datasets.md#cima)."""

from __future__ import annotations

from tutormetrics.datasets.cell_text import clean_text, transcript
from tutormetrics.datasets.conversion import RATINGS_HEADER, Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import refuse_repeats
from tutormetrics.datasets.raw_files import empty_release, load_json, not_this_dataset
from tutormetrics.datasets.raw_values import list_value, optional_text, refuse, text_value
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


def action_flag(flag: object, where: str) -> bool:
    """One action flag: a JSON boolean, or the text ``true``/``false`` (any case); anything else — ``1``, ``"yes"``,
    ``null`` — is exit 2 (it would have been read as false).

    >>> action_flag(True, "item 0"), action_flag(" False ", "item 0")
    (True, False)
    """
    if isinstance(flag, bool):
        return flag
    if isinstance(flag, str) and flag.strip().lower() in ("true", "false"):
        return flag.strip().lower() == "true"
    raise refuse(where, f"the action flag {flag!r} is not true or false")


def _item_texts(item: dict, where: str) -> tuple[list[str], list[str], list[list[bool]]]:
    """The history turns, the responses and their five flags each, type-checked."""
    history = [text_value(t, where, f"past_convo turn {i}")
               for i, t in enumerate(list_value(item["past_convo"], where, "past_convo"))]
    responses = [text_value(r, where, f"tutorResponses[{k}]")
                 for k, r in enumerate(list_value(item["tutorResponses"], where, "tutorResponses"))]
    actions = list_value(item["tutorActions"], where, "tutorActions")
    if len(actions) != len(responses):
        raise refuse(where, f"{len(actions)} lists of actions for {len(responses)} responses (one list of five per response)")
    flags = []
    for k, cell in enumerate(actions):
        labels = list_value(cell, f"{where}, response {k}", "tutorActions")
        if len(labels) != len(ACTIONS):
            raise refuse(f"{where}, response {k}", f"{len(labels)} action flags, not five ({', '.join(ACTIONS)})")
        flags.append([action_flag(f, f"{where}, response {k}, {a}") for a, f in zip(ACTIONS, labels, strict=True)])
    return history, responses, flags


def convert(raw: bytes, raw_name: str) -> Conversion:
    """Convert CIMA's ``dataset.json``."""
    data = load_json(raw, raw_name, SOURCE, EXPECTED)
    items = data.get("prepDataset") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(
        isinstance(it, dict) and {"past_convo", "tutorResponses", "tutorActions"} <= set(it) for it in items.values()
    ):
        raise not_this_dataset(raw_name, SOURCE, EXPECTED)
    if not items:
        raise empty_release(raw_name, SOURCE, "items")
    parsed = {key: _item_texts(item, f"{raw_name}: item {key}") for key, item in items.items()}
    histories = {key: texts[0] for key, texts in parsed.items()}
    dialogue = dialogue_ids(histories)
    exchanges = Table(["exchange_id", "conversation_id", "response_index", "prompt", "response"])
    ratings = Table(list(RATINGS_HEADER))
    meta = Table(["exchange_id", "conversation_id", "response_index", "dialogue_id", "n_history_turns",
                  *(name for name, _ in META_FIELDS)])
    for key, item in items.items():
        history, responses, flags = parsed[key]
        prompt = transcript(("Tutor" if i % 2 == 0 else "Student", text) for i, text in enumerate(history))
        facts = [optional_text(item.get(field), f"{raw_name}: item {key}", field) for _, field in META_FIELDS]
        for k, (response, labels) in enumerate(zip(responses, flags, strict=True)):
            exchange = f"{key}::{k}"
            exchanges.rows.append([exchange, key, str(k), prompt, clean_text(response)])
            for action, value in zip(ACTIONS, labels, strict=True):
                ratings.rows.append([exchange, "gold", action, "true" if value else "false", str(int(value))])
            meta.rows.append([exchange, key, str(k), dialogue[key], str(len(history)), *facts])
    refuse_repeats([row[0] for row in exchanges.rows], [f"item {r[1]}" for r in exchanges.rows], "exchange id", raw_name)
    counts = {"conversations": len(items), "exchanges": len(exchanges.rows), "ratings": len(ratings.rows),
              "dialogues": len(set(dialogue.values()))}
    summary = (f"{thousands(len(items))} items in {thousands(counts['dialogues'])} dialogues, "
               f"{thousands(counts['exchanges'])} exchanges, {thousands(counts['ratings'])} ratings")
    return Conversion({"exchanges.csv": exchanges, "ratings.csv": ratings, "exchanges_meta.csv": meta}, counts, summary)
