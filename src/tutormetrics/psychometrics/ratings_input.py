"""The one way in for ratings: how a ratings file is read and cleaned (:class:`RatingsInput`), how ratings become
targets (:class:`RatingOptions`), :func:`read_ratings`, which every command that reads a ratings file calls, and
:func:`clean_ratings_frame`, its cleaning of a table already in memory (``docs/guide/options.md#ratings``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, split_list
from tutormetrics.ids import IdKey, read_keyed
from tutormetrics.io.tables import require_columns
from tutormetrics.na_codes import na_flag, na_message, split_na_codes
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.exchangeable import EXCHANGEABLE, check_raters_mode
from tutormetrics.psychometrics.ratings import Ratings, parse_levels
from tutormetrics.psychometrics.recode import apply_recode, parse_recode, recode_message
from tutormetrics.psychometrics.recode_report import non_integer_note, recode_record
from tutormetrics.row_filter import apply_where

__all__ = ["RatingOptions", "RatingsInput", "clean_ratings_frame", "read_ratings"]


def _parse_recode(items: Sequence[str] | None) -> dict[float, float | None]:
    """``--recode FROM=TO`` (repeatable) → ``{from: to or None}`` (:func:`tutormetrics.psychometrics.recode.parse_recode`)."""
    return parse_recode(items)


def _parse_raters(value: str | None) -> str | None:
    """``--raters``: ``None`` or ``exchangeable`` (:func:`tutormetrics.psychometrics.exchangeable.check_raters_mode`)."""
    return EXCHANGEABLE if check_raters_mode(value, "") else None


@dataclass
class RatingsInput:
    """How a ratings file is read and cleaned, the same for every command that reads one (``theta``, ``agree``,
    ``validate``, ``run``, ``predict``, ``summarize``, ``ppi``): its columns, the "not applicable" codes, the score
    recoding, the scale and whether the rater labels are people (``docs/guide/options.md#ratings``).
    :func:`read_ratings` is the one way in. A score given to both ``--na`` and ``--recode`` is exit 2.

    >>> RatingsInput().score_col, RatingsInput(levels=[0.0, 1.0]).levels, RatingsInput().recode, RatingsInput().na
    ('score', [0.0, 1.0], {}, ())
    >>> RatingsInput(na=(-1.0,), recode={-1.0: 0.0})
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: score -1 is given to both --na and --recode
    """

    PANEL: ClassVar[str] = "Ratings"

    rater_col: str = flag("--rater", default="rater", help="Rater column of long ratings.")
    criterion_col: str = flag("--criterion", default="criterion", help="Criterion column of long ratings.")
    score_col: str = flag("--score", default="score", help="Score column of long ratings.")
    #: ``{from: to}`` applied to the scores right after reading, before anything else (``None``: missing).
    recode: dict[float, float | None] = flag(
        "--recode", default=None, parse=_parse_recode, cli_type=list[str] | None, show_default=False,
        help="Recode scores FROM=TO right after reading (repeatable; TO empty = missing), e.g. --recode 0.5=0.",
    )
    #: Scores that mean "not applicable" (``docs/design/studies.md#na-codes``): those ratings are dropped, and counted,
    #: right after reading, before ``recode``; ``()``: none.
    na: tuple[float, ...] = na_flag()
    levels: list[float] | None = flag(
        "--levels", default=None, parse=parse_levels, cli_type=str | None,
        help="The rating scale, e.g. 0,1 or 0,1,2 (default: inferred per criterion and reported).",
    )
    drop_out_of_scale: bool = flag(
        "--drop-out-of-scale", default=False, help="Drop scores off the scale (counted) instead of stopping."
    )
    #: ``"exchangeable"``: the rater labels are anonymous slots (``docs/guide/datasets.md``); ``None``: raters are people.
    raters: str | None = flag(
        "--raters", default=None, parse=_parse_raters, cli_type=str | None, show_default=False,
        help="exchangeable: the rater labels are anonymous slots, not people (e.g. uptake's slot1-3): θ has no rater "
        "facet and agree keeps only the many-rater columns.",
    )

    def __post_init__(self) -> None:
        both = sorted(set(self.na or ()) & set(self.recode or {}))
        if both:
            raise ConfigError(f"score {both[0]:g} is given to both --na and --recode", hint="a score is either not applicable or recoded")

    @property
    def exchangeable(self) -> bool:
        """The rater labels are anonymous slots (``--raters exchangeable``)."""
        return self.raters is not None


@dataclass
class RatingOptions(RatingsInput):
    """How ratings become correlation targets (``docs/statistics.md``): the aggregate over raters, the target
    columns and the id type, on top of :class:`RatingsInput`. ``validate``/``run``'s
    :class:`~tutormetrics.validity.study.ValidateOptions` extends it, ``predict`` takes it as it is.

    >>> RatingOptions().aggregate, RatingOptions(targets_from=["tone"]).targets_from
    ('mean', ['tone'])
    """

    aggregate: str = flag("--aggregate", default="mean", panel="Validity", help="Rater aggregation: mean, per_rater, min or max.")
    targets_from: list[str] | None = flag(
        "--targets-from", default=None, parse=split_list, cli_type=list[str] | None, panel="Targets",
        help="Criteria (long ratings) or columns (wide) to use as targets, repeatable or comma-separated.",
    )
    id_type: str = flag(
        "--id-type", default="str", panel="Validity",
        help="Compare ids as text (str: 007 and 7 differ) or as whole numbers (int: 1 and 1.0 match).",
    )


def read_ratings(
    path: str | os.PathLike[str], spec: RatingsInput | None = None, key: IdKey | None = None, *,
    log: Log = quiet, require_long: bool = False, where: Sequence[str] | None = None,
) -> Ratings:
    """The one way in: read a ratings file (csv/parquet/jsonl) keyed by ``key``, keep the rows of ``where``, then
    :func:`clean_ratings_frame` it under ``spec`` (``--na``, ``--recode``, the columns, scale and rater mode).

    Args:
        path: The ratings file.
        spec: Its columns, "not applicable" codes, recoding, scale and rater mode (default: :class:`RatingsInput`).
        key: The id key (``--id``, ``--id-sep``; default ``exchange_id``).
        log: Where notes (recoded counts, ratings dropped off the scale, the negative-category warnings) go.
        require_long: Stop (exit 2) unless the id, criterion, score and (named raters) rater columns are present.
        where: ``--where`` expressions applied to the rows right after the file is read
            (``docs/guide/paper.md#where``).

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
        >>> _ = f.write_text("exchange_id,rater,criterion,score\\na,r1,tone,0.5\\na,r2,tone,1\\nb,r1,tone,-1\\n")
        >>> read_ratings(f, RatingsInput(recode={0.5: 0.0}, na=(-1.0,))).long["_score"].to_list()
        [0.0, 1.0]
    """
    spec, key = spec or RatingsInput(), key or IdKey.of(None)
    source, id_col = str(path), key.column
    frame = read_keyed(path, key, id_columns=[id_col], drop_parts=True)
    if where:
        frame = apply_where(frame, where, source=source, log=log)
    if require_long:
        needed = [id_col, spec.criterion_col, spec.score_col] + ([] if spec.exchangeable else [spec.rater_col])
        require_columns(frame, needed, source="ratings")
    return clean_ratings_frame(frame, spec, id_col=id_col, source=source, log=log)


def clean_ratings_frame(
    frame: pl.DataFrame, spec: RatingsInput | None = None, *, id_col: str = "exchange_id", source: str = "ratings",
    log: Log = quiet, command: str | None = None,
) -> Ratings:
    """A ratings table already read, cleaned the one way (``docs/guide/options.md#ratings``): the ``spec.na`` rows
    dropped (counted), ``spec.recode`` applied (counted), then :meth:`Ratings.clean` under ``spec``'s columns, scale
    and rater mode (it warns of negative scores that would be categories). :func:`read_ratings` ends here, and so do
    ``validate`` and ``run``, which read the ratings with the metrics' id columns.

    Args:
        frame: Long or wide ratings.
        spec: The columns, "not applicable" codes, recoding, scale and rater mode (default: :class:`RatingsInput`).
        id_col: The id column.
        source: The table's name in messages.
        log: Where the notes and warnings go.
        command: Without ``--recode``: the command named in the note on non-integer scores
            (``docs/guide/paper.md#recode``); ``None``: no note.

    Example:
        >>> r = pl.DataFrame({"exchange_id": ["a", "a", "b"], "rater": ["r1", "r2", "r1"], "criterion": "tone",
        ...                   "score": [1, 0, -1]})
        >>> notes = []
        >>> clean_ratings_frame(r, RatingsInput(na=(-1.0,)), log=notes.append).long.height, notes
        (2, ['recode -1 -> missing: 1 ratings'])
    """
    spec = spec or RatingsInput()
    dropped: dict[float, int] = {}
    if spec.na:
        if spec.score_col not in frame.columns:
            raise ConfigError(
                f"--na {','.join(f'{c:g}' for c in spec.na)}: the ratings have no score column {spec.score_col!r}",
                hint="--na acts on long ratings (name their score column with --score); in wide ratings leave such cells empty",
            )
        frame, dropped = split_na_codes(frame, spec.na, score_col=spec.score_col)
        log(na_message(dropped))
    counts: dict[float, int] = {}
    if spec.recode and spec.score_col in frame.columns:  # a missing column is reported by the next step
        frame, counts = apply_recode(frame, spec.score_col, spec.recode, id_col=id_col, source=source)
        log(recode_message(spec.recode, counts))
    elif command is not None and {spec.criterion_col, spec.score_col} <= set(frame.columns):
        note = non_integer_note(frame, command, criterion_col=spec.criterion_col, score_col=spec.score_col)
        if note:
            log(note)
    cleaned = Ratings.clean(
        frame, id_col=id_col, rater_col=spec.rater_col, criterion_col=spec.criterion_col, score_col=spec.score_col,
        levels=spec.levels, drop_out_of_scale=spec.drop_out_of_scale, source=source, log=log,
        exchangeable=spec.exchangeable,
    )  # fmt: skip
    recoded = recode_record(dict.fromkeys(dropped), dropped) + recode_record(spec.recode, counts)
    return replace(cleaned, recoded=tuple(recoded))
