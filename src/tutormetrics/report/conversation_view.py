"""The conversation level of the page ("Every conversation", ``docs/commands/report.md#what-the-page-holds``).

One row per conversation: its ratings as ``run`` correlated them (``targets.csv`` keyed by ``conversation_id``: a
run validated per conversation), its θ (``theta.csv`` keyed the same way), its conversation measures (the CONV table
``score --dialogue`` writes) and, on demand, its turns (the dialogue input read as scoring read it). The rows are the
conversation table's, else the dialogues', else the targets' — whichever the folder has, in that order.

Example:
    >>> conv = pl.DataFrame({"conversation_id": ["c1", "c2"], "n_turns": [4, 2], "n_tutor_turns": [2, 1]})
    >>> view = conversation_view(ConversationInputs(table=conv), notes=[])
    >>> view["ids"], view["values"]["n_turns"]
    (['c1', 'c2'], [4, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tutormetrics.metrics.base import ColumnDescription
from tutormetrics.metrics.columns import column_families
from tutormetrics.report.keyed_values import THETA_COLUMNS, values_by_id

#: The key of every conversation-level table (CONV, and ratings keyed per conversation).
CONVERSATION_ID = "conversation_id"


@dataclass
class ConversationInputs:
    """What the folder holds at the conversation level (each part optional).

    Attributes:
        table: The CONV table (conversation measures), its id read as text.
        file: Its file name.
        described: Its metric columns (from its manifest).
        targets: The rating targets keyed by conversation_id.
        theta: The θ table keyed by conversation_id.
        dialogues: The conversations with their turns, as the page embeds them.
    """

    table: pl.DataFrame | None = None
    file: str | None = None
    described: list[ColumnDescription] = field(default_factory=list)
    targets: pl.DataFrame | None = None
    theta: pl.DataFrame | None = None
    dialogues: list[dict[str, Any]] | None = None


def _conversation_ids(inputs: ConversationInputs) -> list[str]:
    """The rows: the conversation table's ids, else the dialogues', else the targets' or θ's."""
    if inputs.table is not None:
        return inputs.table.get_column(CONVERSATION_ID).cast(pl.String).to_list()
    if inputs.dialogues:
        return [str(d["conversation_id"]) for d in inputs.dialogues]
    for frame in (inputs.targets, inputs.theta):
        if frame is not None:
            return frame.get_column(CONVERSATION_ID).cast(pl.String).to_list()
    return []


def _sample(ids: list[str], limit: int, seed: int, notes: list[str]) -> list[str]:
    if len(ids) <= limit:
        return ids
    notes.append(f"the conversation table shows a random sample of {limit:,} of {len(ids):,} conversations (seed {seed}); "
                 "every statistic comes from all of them (--max-exchanges to change)")  # fmt: skip
    kept = set(pl.Series(ids).sample(limit, seed=seed).to_list())
    return [i for i in ids if i in kept]


def conversation_view(
    inputs: ConversationInputs, *, notes: list[str], max_rows: int = 20_000, seed: int = 0
) -> dict[str, Any] | None:
    """The page's conversation rows (``None`` when the folder has nothing at that level).

    Returns ``{"ids", "file", "values", "families", "ratings", "theta", "dialogue"}``: values of the conversation
    measures, the ratings and θ, each a list in ``ids`` order (``None``: no value), and ``dialogue[k]`` the index of
    conversation k in :func:`keep_dialogues` of the dialogues and ``ids`` (``-1``: no turns): the page embeds that
    list as its ``dialogues``.

    Args:
        inputs: The conversation-level tables and the dialogues.
        notes: Where a line saying the rows are a sample goes.
        max_rows: With more conversations, a seeded random sample of that many (order kept).
        seed: The sample's seed.
    """
    ids = _sample(_conversation_ids(inputs), max_rows, seed, notes)
    if not ids:
        return None
    measures = [d.name for d in inputs.described if not d.alias_of]
    if inputs.table is not None and not measures:  # no manifest: every numeric column
        measures = [c for c, t in inputs.table.schema.items() if c != CONVERSATION_ID and t.is_numeric()]
    values = values_by_id(inputs.table, CONVERSATION_ID, ids, measures) if inputs.table is not None else {}
    ratings = {}
    if inputs.targets is not None:
        ratings = values_by_id(inputs.targets, CONVERSATION_ID, ids, [c for c in inputs.targets.columns if c != CONVERSATION_ID])
    theta = values_by_id(inputs.theta, CONVERSATION_ID, ids, THETA_COLUMNS) if inputs.theta is not None else {}
    position = {str(d["conversation_id"]): k for k, d in enumerate(keep_dialogues(inputs.dialogues or [], ids))}
    return {
        "ids": ids, "file": inputs.file, "values": values,
        "families": {c: f for c, f in column_families(inputs.described).items() if c in values},
        "ratings": ratings, "theta": theta, "dialogue": [position.get(i, -1) for i in ids],
    }  # fmt: skip


def keep_dialogues(dialogues: Sequence[dict[str, Any]], ids: Sequence[str]) -> list[dict[str, Any]]:
    """The dialogues of the conversations ``ids`` (a sampled conversation table embeds only their turns).

    >>> keep_dialogues([{"conversation_id": "a"}, {"conversation_id": "b"}], ["b"])
    [{'conversation_id': 'b'}]
    """
    wanted = set(ids)
    return [d for d in dialogues if str(d["conversation_id"]) in wanted]
