"""The counts a run reports at the end and writes into the manifest (:class:`ScoreStats`), per chunk and in total."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class ScoreStats:
    """Counts a run reports at the end (and writes into the manifest)."""

    n_exchanges: int = 0
    n_unique_texts: int = 0
    n_encoded_texts: int = 0
    n_encoded_tokens: int = 0
    n_long_texts: int = 0
    n_empty_prompts: int = 0
    n_empty_responses: int = 0
    n_lang_zh: int = 0  # rows whose lang is zh (readability NaN for them)
    n_lang_ja: int = 0  # rows whose lang is ja (readability NaN for them)
    #: NaN values per metric column (exchanges, not unique texts).
    nan_counts: dict[str, int] = field(default_factory=dict)
    #: Why, per column and reason code, for families that say (``Metric.nan_reasons``).
    nan_reasons: dict[str, dict[str, int]] = field(default_factory=dict)

    def merge(self, other: ScoreStats) -> None:
        """Add another chunk's counts."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                merge_counts(mine, theirs)
            else:
                setattr(self, f.name, mine + theirs)

    def snapshot(self) -> dict[str, Any]:
        """The counts as plain, independent data (nested dicts copied)."""
        import copy

        return copy.deepcopy(dict(vars(self)))

    def since(self, before: dict[str, Any]) -> dict[str, Any]:
        """The counts added after ``before`` (a :meth:`snapshot`): one chunk's share.

        Example:
            >>> s = ScoreStats(n_exchanges=3, nan_counts={"ttr": 1}); before = s.snapshot()
            >>> s.merge(ScoreStats(n_exchanges=2, nan_counts={"ttr": 2, "mtld": 1})); s.since(before)["nan_counts"]
            {'ttr': 2, 'mtld': 1}
        """
        return _subtract(self.snapshot(), before)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreStats:
        """Counts saved with :meth:`snapshot`/:meth:`since` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def mostly_nan(self, share: float = 0.5) -> dict[str, int]:
        """Columns NaN for more than ``share`` of the exchanges: ``{column: n_nan}``."""
        if not self.n_exchanges:
            return {}
        return {c: k for c, k in self.nan_counts.items() if k > share * self.n_exchanges}


def _subtract(now: dict, before: dict) -> dict:
    out: dict = {}
    for key, value in now.items():
        if isinstance(value, dict):
            out[key] = {k: v for k, v in _subtract(value, before.get(key, {})).items() if v}
        else:
            out[key] = value - before.get(key, 0)
    return out


def merge_counts(into: dict, other: dict) -> None:
    for key, value in other.items():
        if isinstance(value, dict):
            merge_counts(into.setdefault(key, {}), value)
        else:
            into[key] = into.get(key, 0) + value
