"""What a run says at the end, for every engine (local, dialogue, Ray): the warnings (texts longer than the
encoder's window, columns that are mostly NaN) and the notes (why values are NaN, empty texts, non-English rows).

One wording each, so the three engines say the same thing about the same data.

Example:
    >>> long_text_warning(3, 200, 256, "window")
    '3 of 200 unique texts exceeded max_seq_length=256 and were windowed'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tutormetrics.engine.run_stats import ScoreStats


class WindowingWarning(UserWarning):
    """Some texts were longer than the encoder's max_seq_length (windowed or truncated)."""


class MostlyNaNWarning(UserWarning):
    """A metric column is NaN for more than half of the exchanges (e.g. MATTR on short replies)."""


#: A run warns about a column that is NaN for more than this share of at least MOSTLY_NAN_MIN_ROWS rows.
MOSTLY_NAN_SHARE = 0.5
MOSTLY_NAN_MIN_ROWS = 10

def long_text_warning(
    n_long: int, n_texts: int, max_seq_length: int | None, long_text: str, unit: str = "unique texts"
) -> str:
    """``"{n_long} of {n_texts} {unit} exceeded max_seq_length={L} and were {windowed|truncated}"``.

    ``max_seq_length=None``: the model's own limit (not known without loading the model).

    Args:
        n_long: texts over the length limit.
        n_texts: texts in all.
        max_seq_length: the limit in word pieces; ``None``: the model's own.
        long_text: ``"truncate"`` or ``"window"``: what was done with them.
        unit: what the texts are, for the message.

    >>> long_text_warning(2, 4, None, "truncate", unit="exchanges")
    "2 of 4 exchanges exceeded the model's max_seq_length and were truncated"
    """
    verb = "truncated" if long_text == "truncate" else "windowed"
    limit = f"max_seq_length={max_seq_length}" if max_seq_length is not None else "the model's max_seq_length"
    return f"{n_long} of {n_texts} {unit} exceeded {limit} and were {verb}"


def mostly_nan_warnings(stats: ScoreStats, hints: Mapping[str, str] | None = None) -> list[str]:
    """One message per metric column NaN for most exchanges of a run (runs of MOSTLY_NAN_MIN_ROWS or more),
    with the reasons when the family gives them and its hint (``Metric.nan_hints``) when there is one.

    >>> from tutormetrics.engine.run_stats import ScoreStats
    >>> mostly_nan_warnings(ScoreStats(n_exchanges=10, nan_counts={"mtld": 6, "ttr": 1}), {"mtld": "; no repeats"})
    ['mtld is NaN for 6 of 10 exchanges; no repeats']
    """
    if stats.n_exchanges < MOSTLY_NAN_MIN_ROWS:
        return []
    out = []
    for col, n_nan in stats.mostly_nan(MOSTLY_NAN_SHARE).items():
        why = stats.nan_reasons.get(col, {})
        detail = f" ({', '.join(f'{k}: {v:,}' for k, v in why.items())})" if why else ""
        out.append(f"{col} is NaN for {n_nan:,} of {stats.n_exchanges:,} exchanges{detail}{(hints or {}).get(col, '')}")
    return out


def run_notes(stats: ScoreStats, family_names: Sequence[str]) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The end-of-run notes (each without its ``note:`` prefix) and the manifest's ``nan_reasons``.

    Notes: why a column is NaN (columns already named by :func:`mostly_nan_warnings` are not repeated), how
    many texts were empty, and how many responses are Chinese or Japanese when readability ran (its English
    formulas are NaN for them; those counts are the ``nan_reasons``).

    >>> from tutormetrics.engine.run_stats import ScoreStats
    >>> run_notes(ScoreStats(n_exchanges=4, n_lang_zh=1), ["readability"])[1]
    {'flesch_reading_ease': {'lang_not_en': 1}, 'flesch_kincaid_grade': {'lang_not_en': 1}}
    """
    notes: list[str] = []
    warned = stats.mostly_nan(MOSTLY_NAN_SHARE) if stats.n_exchanges >= MOSTLY_NAN_MIN_ROWS else {}
    for col, why in stats.nan_reasons.items():
        if col in warned:  # already said, with the same counts, in the warning
            continue
        counts = ", ".join(f"{k}: {v:,}" for k, v in why.items())
        notes.append(f"{col} NaN for {sum(why.values()):,} of {stats.n_exchanges:,} exchanges ({counts})")
    if stats.n_empty_responses or stats.n_empty_prompts:
        notes.append(
            f"{stats.n_empty_responses} empty responses and {stats.n_empty_prompts} empty prompts were "
            "scored NaN where a metric is undefined (flag columns resp_empty, prompt_empty)"
        )
    not_english = stats.n_lang_zh + stats.n_lang_ja
    nan_reasons: dict[str, dict[str, Any]] = {}
    if not_english and "readability" in family_names:
        nan_reasons = {c: {"lang_not_en": not_english} for c in ("flesch_reading_ease", "flesch_kincaid_grade")}
        notes.append(
            f"{not_english} responses are Chinese or Japanese ({stats.n_lang_zh} zh, {stats.n_lang_ja} ja; "
            "column lang): flesch_reading_ease and flesch_kincaid_grade are English formulas and NaN for them"
        )
    return notes, nan_reasons
