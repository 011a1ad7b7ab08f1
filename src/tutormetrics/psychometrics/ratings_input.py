"""The one way in for ratings: how a ratings file is read and cleaned (:class:`RatingsInput`), how ratings become
targets (:class:`RatingOptions`), and :func:`read_ratings`, which every command that reads ratings calls
(``docs/guide/options.md#ratings``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from tutormetrics.flags import flag, split_list
from tutormetrics.ids import IdKey, read_keyed
from tutormetrics.io.tables import require_columns
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.exchangeable import EXCHANGEABLE, check_raters_mode
from tutormetrics.psychometrics.na_codes import drop_na_codes
from tutormetrics.psychometrics.ratings import Ratings, parse_levels
from tutormetrics.psychometrics.recode import apply_recode, parse_recode, recode_message
from tutormetrics.psychometrics.recode_report import recode_record
from tutormetrics.row_filter import apply_where

__all__ = ["RatingOptions", "RatingsInput", "read_ratings"]


def _parse_recode(items: Sequence[str] | None) -> dict[float, float | None]:
    """``--recode FROM=TO`` (repeatable) → ``{from: to or None}`` (:func:`tutormetrics.psychometrics.recode.parse_recode`)."""
    return parse_recode(items)


def _parse_raters(value: str | None) -> str | None:
    """``--raters``: ``None`` or ``exchangeable`` (:func:`tutormetrics.psychometrics.exchangeable.check_raters_mode`)."""
    return EXCHANGEABLE if check_raters_mode(value, "") else None


@dataclass
class RatingsInput:
    """How a ratings file is read and cleaned, the same for every command that reads one (``theta``, ``agree``,
    ``validate``, ``run``, ``predict``, ``summarize``, ``compare``, ``ppi``): its columns, the score recoding, the
    scale and whether the rater labels are people (``docs/guide/options.md#ratings``). :func:`read_ratings` is the
    one way in.

    >>> RatingsInput().score_col, RatingsInput(levels=[0.0, 1.0]).levels, RatingsInput().recode
    ('score', [0.0, 1.0], {})
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
    log: Log = quiet, require_long: bool = False, na: Sequence[float] | None = None,
    where: Sequence[str] | None = None,
) -> Ratings:
    """The one way in: read a ratings file (csv/parquet/jsonl) keyed by ``key``, recode its scores
    (``spec.recode``, reported to ``log``), then :meth:`Ratings.clean` it under ``spec``'s columns, scale and rater mode.

    Args:
        path: The ratings file.
        spec: Its columns, recoding, scale and rater mode (default: :class:`RatingsInput`).
        key: The id key (``--id``, ``--id-sep``; default ``exchange_id``).
        log: Where notes (recoded counts, ratings dropped off the scale) go.
        require_long: Stop (exit 2) unless the id, criterion, score and (named raters) rater columns are present.
        na: Scores that mean "not applicable" (``agree --na``): those ratings are dropped (counted to ``log``)
            before the recoding.
        where: ``--where`` expressions applied to the rows right after the file is read
            (``docs/guide/paper.md#where``).

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
        >>> _ = f.write_text("exchange_id,rater,criterion,score\\na,r1,tone,0.5\\na,r2,tone,1\\n")
        >>> read_ratings(f, RatingsInput(recode={0.5: 0.0})).long["_score"].to_list()
        [0.0, 1.0]
    """
    spec, key = spec or RatingsInput(), key or IdKey.of(None)
    source, id_col = str(path), key.column
    frame = read_keyed(path, key, id_columns=[id_col], drop_parts=True)
    if where:
        frame = apply_where(frame, where, source=source, log=log)
    if na:
        frame = drop_na_codes(frame, na, score_col=spec.score_col, log=log)
    counts: dict[float, int] = {}
    if spec.recode and spec.score_col in frame.columns:  # a missing column is reported by the next step
        frame, counts = apply_recode(frame, spec.score_col, spec.recode, id_col=id_col, source=source)
        log(recode_message(spec.recode, counts))
    if require_long:
        needed = [id_col, spec.criterion_col, spec.score_col] + ([] if spec.exchangeable else [spec.rater_col])
        require_columns(frame, needed, source="ratings")
    cleaned = Ratings.clean(
        frame, id_col=id_col, rater_col=spec.rater_col, criterion_col=spec.criterion_col, score_col=spec.score_col,
        levels=spec.levels, drop_out_of_scale=spec.drop_out_of_scale, source=source, log=log,
        exchangeable=spec.exchangeable,
    )
    return replace(cleaned, recoded=tuple(recode_record(spec.recode, counts)))
