"""``convert uptake``: the conversational-uptake CSV → exchanges, the released means, and each exchange's multiset of
ratings rebuilt from mean, agreement count and majority (docs/design/datasets.md#uptake).

The release keeps, per criterion, only the mean ``m`` over up to three raters, ``_num_agree`` ``k`` and
``_majority`` ``M``. The multiset is rebuilt by the table of docs/design/datasets.md#uptake and must reproduce ``m`` to 1e-9; the raters are
anonymous slots (``slot1``… in ascending score order): read them with ``--raters exchangeable``.
"""

from __future__ import annotations

from tutormetrics.datasets.cell_text import clean_text, score_text
from tutormetrics.datasets.conversion import RATINGS_HEADER, Conversion, Table, thousands
from tutormetrics.datasets.duplicate_ids import refuse_repeats
from tutormetrics.datasets.raw_files import empty_release, read_csv_rows
from tutormetrics.datasets.raw_values import finite_number, refuse
from tutormetrics.datasets.sources import Source, mit_notice
from tutormetrics.errors import ConfigError, InputSchemaError

SOURCE = Source(
    name="uptake",
    repository="github.com/ddemszky/conversational-uptake",
    licence="MIT, Copyright (c) 2021 ddemszky",
    licence_url="https://opensource.org/licenses/MIT",
    citation="Demszky, Liu, Mancenido, Cohen, Hill, Jurafsky & Hashimoto (2021), Measuring Conversational Uptake, ACL 2021",
    raw_hint="data/uptake_data.csv",
    licence_notice=mit_notice("Copyright (c) 2021 ddemszky"),
)
EXPECTED = "a CSV with obs_id, exchange_idx, student_text, teacher_text, uptake, uptake_num_agree, ..."
#: criterion → its levels (uptake 0-2, on-task 0/1), in the order of ratings_wide.csv.
CRITERIA = {"uptake": (0, 1, 2), "teacher_on_task": (0, 1), "student_on_task": (0, 1)}
REQUIRED = ["obs_id", "exchange_idx", "student_text", "teacher_text",
            *(f"{c}{s}" for c in CRITERIA for s in ("", "_num_agree", "_majority", "_zscore"))]
AMBIGUOUS = ("drop", "spread")


def rebuild(mean: float, agree: int, majority: float | None, levels: tuple[int, ...], spread: bool) -> tuple[list[float], str]:
    """The multiset of one exchange's ratings and its status (``exact`` or ``ambiguous``), ascending.

    Args:
        mean: the release's mean rating.
        agree: the release's ``num_agree`` (1, 2 or 3 raters agreeing).
        majority: the majority rating, ``None`` when no two raters agree.
        levels: the rating scale's levels (``(0, 1)`` or ``(0, 1, 2)``).
        spread: a lone mean of 1 on 0-2 gives ``0, 1, 2`` instead of no ratings.

    >>> rebuild(2 / 3, 2, 1.0, (0, 1), False)
    ([0.0, 1.0, 1.0], 'exact')
    >>> rebuild(1.0, 1, None, (0, 1, 2), False)
    ([], 'ambiguous')
    >>> rebuild(1.5, 1, None, (0, 1, 2), False)
    ([1.0, 2.0], 'exact')
    """
    if agree == 3 and majority is not None:
        scores = [majority] * 3
    elif agree == 2 and majority is not None:
        if abs(mean - majority) <= 1e-9:
            scores = [majority] * 2
        else:
            third = round(3 * mean - 2 * majority, 9)
            if third not in levels or third == majority:
                raise ValueError(f"mean {mean:g} with two raters at {majority:g} needs a third score {third:g} off the scale")
            scores = [majority, majority, third]
    elif agree == 1 and majority is None:
        if len(levels) == 3 and abs(mean - 1) <= 1e-9:
            return ([0.0, 1.0, 2.0] if spread else []), "ambiguous"
        if abs(mean - 0.5) <= 1e-9 or abs(mean - 1.5) <= 1e-9:
            scores = [mean - 0.5, mean + 0.5]
        elif any(abs(mean - level) <= 1e-9 for level in levels):
            scores = [round(mean)]
        else:
            raise ValueError(f"mean {mean:g} with no majority is neither a level nor halfway between two")
    else:
        raise ValueError(f"num_agree {agree} with majority {majority!r} is not a combination of the release")
    scores = sorted(float(s) for s in scores)
    if abs(sum(scores) / len(scores) - mean) > 1e-9:
        raise ValueError(f"the rebuilt scores {scores} do not give the mean {mean:g}")
    return scores, "exact"


def _float(text: str, where: str, field: str) -> float | None:
    """A mean or majority cell: empty is ``None``; ``nan``, ``inf`` and non-numbers are exit 2."""
    return finite_number(text, where, field) if text.strip() else None


def _agreement(text: str, where: str, field: str) -> int:
    """A ``_num_agree`` cell: a whole number (``2``, ``2.0``); anything else is exit 2."""
    number = finite_number(text, where, field)
    if not number.is_integer():
        raise refuse(where, f"{field} {text!r} is not a whole number")
    return int(number)


def _exchange_id(row: dict[str, str], where: str) -> str:
    """``<obs_id>/<exchange_idx>`` by the composite-id rule: an empty part, or one with ``/``, is exit 2."""
    for part in ("obs_id", "exchange_idx"):
        if not row[part].strip() or "/" in row[part]:
            raise refuse(where, f"{part} {row[part]!r} is empty or contains '/', the separator of the exchange id")
    return f"{row['obs_id']}/{row['exchange_idx']}"


def _ratings(row: dict[str, str], where: str, spread: bool) -> list[tuple[str, list[float], str]]:
    """``(criterion, rebuilt scores, status)`` per criterion of one row."""
    out = []
    for criterion, levels in CRITERIA.items():
        mean = _float(row[criterion], where, criterion)
        if mean is None:
            out.append((criterion, [], "unrated"))
            continue
        agree = _agreement(row[f"{criterion}_num_agree"], where, f"{criterion}_num_agree")
        majority = _float(row[f"{criterion}_majority"], where, f"{criterion}_majority")
        try:
            scores, status = rebuild(mean, agree, majority, levels, spread)
        except ValueError as exc:
            raise InputSchemaError(f"{where}, {criterion}: {exc}", hint="convert uptake reads the release as published") from None
        out.append((criterion, scores, status))
    return out


def convert(raw: bytes, raw_name: str, ambiguous: str = "drop") -> Conversion:
    """Convert ``data/uptake_data.csv``; ``ambiguous="spread"`` gives 0, 1, 2 for a lone mean of 1 on 0-2.

    Args:
        raw: bytes of ``data/uptake_data.csv``.
        raw_name: its name, for the messages.
        ambiguous: ``drop`` or ``spread`` (see above) for a lone mean of 1 on 0-2.
    """
    if ambiguous not in AMBIGUOUS:
        raise ConfigError(f"--ambiguous {ambiguous!r}: choose drop or spread")
    rows = read_csv_rows(raw, raw_name, SOURCE, EXPECTED, REQUIRED)
    if not rows:
        raise empty_release(raw_name, SOURCE, "exchanges")
    exchanges = Table(["exchange_id", "conversation_id", "exchange_idx", "prompt", "response"])
    wide = Table(["exchange_id", *(f"{c}{s}" for c in CRITERIA for s in ("", "_zscore"))])
    ratings = Table(list(RATINGS_HEADER))
    meta = Table(["exchange_id", "source_index", *(f"{c}_{s}" for c in CRITERIA for s in ("n_ratings", "status"))])
    n_ambiguous = n_unrated = 0
    for index, row in enumerate(rows):
        exchange = _exchange_id(row, f"uptake: row {index + 2}")
        exchanges.rows.append([exchange, row["obs_id"], row["exchange_idx"], clean_text(row["student_text"]),
                               clean_text(row["teacher_text"])])
        wide.rows.append([exchange, *(row[f"{c}{s}"] for c in CRITERIA for s in ("", "_zscore"))])
        status_cells: list[str] = []
        for criterion, scores, status in _ratings(row, f"uptake: row {index + 2} ({exchange})", ambiguous == "spread"):
            n_unrated += status == "unrated"
            n_ambiguous += status == "ambiguous"
            for slot, score in enumerate(scores, 1):
                ratings.rows.append([exchange, f"slot{slot}", criterion, score_text(score), score_text(score)])
            status_cells += [str(len(scores)), status]
        meta.rows.append([exchange, str(index), *status_cells])
    refuse_repeats([r[0] for r in exchanges.rows], [f"row {i + 2}" for i in range(len(rows))], "exchange id", raw_name)
    counts = {"exchanges": len(rows), "conversations": len({r[1] for r in exchanges.rows}), "ratings": len(ratings.rows),
              "ambiguous": n_ambiguous, "unrated": n_unrated}
    summary = (f"{thousands(len(rows))} exchanges of {thousands(counts['conversations'])} transcripts, "
               f"{thousands(len(ratings.rows))} ratings ({n_ambiguous} ambiguous "
               f"{'spread over 0, 1, 2' if ambiguous == 'spread' else 'dropped'}, {n_unrated} unrated)")
    notes = ["the rater labels slot1, slot2, slot3 are anonymous slots, not people: read ratings.csv with --raters exchangeable"]
    tables = {"exchanges.csv": exchanges, "ratings_wide.csv": wide, "ratings.csv": ratings, "exchanges_meta.csv": meta}
    return Conversion(tables, counts, summary, notes)
