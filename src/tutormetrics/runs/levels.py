"""The levels a ``run`` scores and validates (``docs/guide/dialogues.md``): exchanges give one level; a dialogue gives
the turns, or — with ratings keyed by ``conversation_id`` — the conversations first (the headline: ``correlations.csv``)
and the turns second (``turns_*``: each turn inherits its conversation's rating, intervals over clusters, no p), the
turn level only with ``--cluster-col``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log
from tutormetrics.runs.record import RunRecord
from tutormetrics.validity.study import ValidateOptions

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.metrics.columns import ColumnDescription


@dataclass(frozen=True)
class Level:
    """One scored level: its file ``prefix`` (``""`` or ``turns_``), the scored ``frame``, its metric columns and the
    manifest's column descriptions.

    The metric columns are the described ones, aliases too: the heatmap draws them once, but a cell's seeded
    permutation p depends on its index (``docs/statistics.md#the-engine-and-its-seeds``).
    """

    prefix: str
    frame: pl.DataFrame
    metric_cols: list[str]
    columns: list[ColumnDescription]


def _described(manifest: dict[str, Any]) -> list[ColumnDescription]:
    from tutormetrics.metrics.columns import MANIFEST_KEY, ColumnDescription

    return [ColumnDescription.from_dict(d) for d in manifest[MANIFEST_KEY]]


def _level(prefix: str, frame: pl.DataFrame, columns: list[ColumnDescription]) -> Level:
    from tutormetrics.metrics.columns import metric_names

    return Level(prefix, frame, metric_names(columns), columns)


def _score_exchanges(record: RunRecord, log: Log, history: Any) -> list[Level]:
    """``metrics.csv`` (local or Ray engine, as ``score`` does; or each response after its history)."""
    metrics_path, options = record.path("metrics.csv"), record.score_options
    score = score_file
    if options.engine == "ray":
        from tutormetrics.engine.ray_engine import score_file_ray as score
    resumable = {"keep_checkpoint": True}  # removed at the end of the run: a failed later step resumes
    if history is not None:  # each row's response after its history: one row per exchange
        from tutormetrics.dialogue.history import score_history_file

        resumable = {}

        def score(path: Path, out: Path, so: ScoreOptions, *, log: Log, keep_frame: bool) -> Any:
            """Score each response of ``path`` after its history (same call as :func:`score_file`).

            Args:
                path: The exchanges file.
                out: The ``metrics.csv`` to write.
                so: The score options of the run.
                log: Where the progress lines go.
                keep_frame: Keep the scored frame in the result.
            """
            return score_history_file(path, out, so, history, log=log, keep_frame=keep_frame)

    scored = score(record.exchanges, metrics_path, options, log=log, keep_frame=True, **resumable)
    record.files["metrics"] = str(metrics_path)
    record.warnings.extend(scored.manifest.get("warnings", []))
    return [_level("", scored.frame, _described(scored.manifest))]


def _score_dialogues(record: RunRecord, dialogue: Any, id_col: str, log: Log) -> list[Level]:
    """``turns.csv`` and ``conversations.csv``; the conversations are the first level when the ratings are keyed by
    conversation (the CONV measures and the ``mean_*`` of the turn metrics), the turns (``turns_``) second."""
    from tutormetrics.dialogue.conversation_measures import conversation_columns
    from tutormetrics.dialogue.file_scoring import score_dialogue_file

    turns_path, conv_path = record.path("turns.csv"), record.path("conversations.csv")
    result = score_dialogue_file(record.exchanges, turns_path, record.score_options, dialogue,
                                 conversations_output=conv_path, log=log, keep_checkpoint=True)  # fmt: skip
    record.files.update(turns=str(turns_path), conversations=str(conv_path))
    record.warnings.extend(result.manifest.get("warnings", []))
    turn_columns = _described(result.manifest)
    if id_col == "conversation_id" and result.conversations is not None:
        conv = _level("", result.conversations, conversation_columns(turn_columns))
        return [conv, _level("turns_", result.turns, turn_columns)]
    return [_level("", result.turns, turn_columns)]


def score_levels(record: RunRecord, dialogue: Any, id_col: str, log: Log, history: Any = None) -> list[Level]:
    """Score the input into the folder; the scoring run's warnings go to ``record.warnings``.

    Args:
        record: The run (inputs, options, files written).
        dialogue: A :class:`~tutormetrics.dialogue.file_scoring.DialogueOptions` when the input holds conversations.
        id_col: The id the ratings are keyed by.
        log: Where progress and notes go.
        history: A ``DialogueOptions`` with ``history_col``: each row's response scored after its history.

    Returns:
        The scored levels, the headline level first.
    """
    if dialogue is None:
        return _score_exchanges(record, log, history)
    return _score_dialogues(record, dialogue, id_col, log)


def level_metric_cols(metric_cols: Sequence[str] | None, frame: pl.DataFrame, head: dict[str, Any]) -> list[str] | None:
    """``--metrics-cols`` for the first level: at the conversation level a turn metric ``X`` names ``mean_X``.

    Args:
        metric_cols: ``--metrics-cols`` as given.
        frame: The first level's scored frame.
        head: ``run.json``'s head so far (its ``level``).

    >>> level_metric_cols(["resp_words", "talk_ratio"], pl.DataFrame({"mean_resp_words": [1.0], "talk_ratio": [2.0]}),
    ...                   {"level": "conversation"})
    ['mean_resp_words', 'talk_ratio']
    """
    if not metric_cols:
        return None
    if head.get("level") != "conversation":
        return list(metric_cols)
    from tutormetrics.metrics.columns import at_conversation_level

    return at_conversation_level(metric_cols, frame.columns)


def conversation_controls(vo: ValidateOptions, conv: pl.DataFrame, log: Log) -> ValidateOptions:
    """``--control`` at the conversation level: a turn metric there is its conversations' mean, ``mean_<col>``, so
    ``--control resp_words`` holds ``mean_resp_words`` fixed for the conversations and ``resp_words`` for the turns.
    Said on stderr and recorded in ``run.json`` (``conversation_control``); a name that is neither stays as given
    (and is refused as missing).

    Args:
        vo: The run's validation options.
        conv: The scored conversations.
        log: Where the note goes.
    """
    from tutormetrics.metrics.columns import at_conversation_level

    mapped = at_conversation_level(vo.control, conv.columns)
    for given, used in zip(vo.control, mapped, strict=True):
        if given != used:
            log(f"note: --control {given}: the conversation level controls for {used} (the mean over its turns); "
                f"a turn level holds {given} itself")  # fmt: skip
    return replace(vo, control=mapped) if mapped != vo.control else vo


def _with_turn_labels(conv: Level, turns: pl.DataFrame, cols: Sequence[str], option: str) -> Level:
    """The conversations with the labels ``cols`` of their turns (columns that hold each conversation whole, as
    text); a column missing from the turns, or with two values in one conversation, is exit 2 naming ``option``."""
    from tutormetrics.io.tables import require_columns
    from tutormetrics.validity.level import check_nested

    cols = [c for c in dict.fromkeys(cols) if c not in conv.frame.columns]
    if not cols:
        return conv
    require_columns(turns, cols, source="turns", option=option)
    for col in cols:
        check_nested(turns, "conversation_id", col, option)
    labels = turns.select(pl.col("conversation_id").cast(pl.String), *(pl.col(c).cast(pl.String) for c in cols)).unique()
    frame = conv.frame.with_columns(pl.col("conversation_id").cast(pl.String))
    return replace(conv, frame=frame.join(labels, on="conversation_id", how="left", maintain_order="left"))


def dialogue_levels(
    levels: list[Level], id_col: str, vo: ValidateOptions, log: Log, group_cols: Sequence[str] = ()
) -> tuple[list[Level], ValidateOptions, dict[str, Any]]:
    """Which levels a dialogue run validates, the options of the first, and what ``run.json`` records.

    Conversation-keyed ratings: the CONV table first (``correlations.csv``, the headline); the turns (``turns_*``,
    ratings inherited, no p) only with ``--cluster-col``: ``conversation_id``, or a column that holds each
    conversation whole (the CONV rows then resample it too). Turn-keyed ratings: the turns. The ``--group-col``
    columns are carried from the turns onto the conversations (one value per conversation, else exit 2).

    Args:
        levels: The scored levels (:func:`score_levels`).
        id_col: The id the ratings are keyed by.
        vo: The run's validation options.
        log: Where notes go.
        group_cols: ``--group-col``'s columns (kept on the turns).
    """
    if id_col != "conversation_id":
        if vo.cluster_col is None:
            log("note: turns are nested in conversations; --cluster-col conversation_id gives intervals over conversations")
        return levels, vo, {"level": "turn"}
    conv, turns = levels[0], levels[1].frame
    conv = _with_turn_labels(conv, turns, [c for c in group_cols if c != "conversation_id"], "--group-col")
    levels = [conv, *levels[1:]]
    n = conv.frame.height
    conv_vo = conversation_controls(vo, conv.frame, log)
    summary: dict[str, Any] = {"level": "conversation", "n_conversations": n}
    if conv_vo.control != vo.control:
        summary["conversation_control"] = conv_vo.control
    if vo.cluster_col is None:
        log(f"validating conversations (ratings keyed by conversation_id: {n:,} conversations); "
            "the turn level needs --cluster-col conversation_id")  # fmt: skip
        return levels[:1], conv_vo, summary
    conversation_only = [c for c in vo.control if c not in turns.columns]
    if conversation_only:  # found before the conversation level writes anything
        raise ConfigError(
            f"--control {conversation_only[0]}: the turn level (asked for by --cluster-col) has no such column",
            hint="control for a turn metric (the conversations then hold its mean_ fixed), or drop --cluster-col",
        )
    log(f"validating conversations (ratings keyed by conversation_id: {n:,} conversations); the turn level "
        f"(turns_correlations.csv) with intervals over {vo.cluster_col} and no p (inherited ratings)")  # fmt: skip
    summary["turn_level"] = "turns_correlations.csv"
    if vo.cluster_col == "conversation_id":  # one CONV row per cluster: the row bootstrap
        return levels, replace(conv_vo, cluster_col=None), summary
    return [_with_turn_labels(conv, turns, [vo.cluster_col], "--cluster-col"), *levels[1:]], conv_vo, summary


@frame_inputs("ratings")
def dialogue_ratings_key(ratings: pl.DataFrame, id_col: str, source: str) -> str:
    """The id a dialogue run's ratings are keyed by: ``id_col`` (default ``exchange_id``, one tutor turn) when
    present, else ``conversation_id``.

    Args:
        ratings: The ratings as read.
        id_col: The input's exchange id column.
        source: The ratings' name in messages.

    >>> dialogue_ratings_key(pl.DataFrame({"conversation_id": ["c1"], "score": [1]}), "exchange_id", "r.csv")
    'conversation_id'
    """
    if id_col in ratings.columns:
        return id_col
    if "conversation_id" in ratings.columns:
        return "conversation_id"
    raise InputSchemaError(
        f"{source}: ratings have neither {id_col!r} nor 'conversation_id'",
        hint="key dialogue ratings by exchange_id ('<conversation_id>:<turn>') or by conversation_id",
    )
