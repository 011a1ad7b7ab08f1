"""Lexical richness family: ``mtld``, ``mattr``, ``hdd`` (``docs/metrics.md#lexical-richness``), on the one tokeniser.

Tutor replies are short: with the literature's defaults (window 50, 42 draws) MATTR and HD-D are
undefined for most of them (MRBench V2: 90.4% and 81.9%). The window, the draws and the MTLD threshold
are parameters, recorded in the run manifest; lower them for corpora of short replies and report the
values used. Why a value is NaN is counted per column by :meth:`LexicalRichness.nan_reasons`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, ClassVar

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.richness import (
    HDD_DRAWS,
    MATTR_WINDOW,
    MTLD_THRESHOLD,
    RICHNESS_COLUMNS,
    check_richness_params,
    lexical_richness,
    richness_reasons,
)
from tutormetrics.text import tokenize

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class LexicalRichness(Metric):
    """MTLD (bidirectional, partial factor), MATTR and HD-D of the response.

    Args:
        mtld_threshold: TTR at which an MTLD factor ends (0.72).
        mattr_window: MATTR window W in tokens (50); NaN for replies with fewer tokens.
        hdd_draws: HD-D sample size d (42); NaN for replies with fewer tokens.

    Example:
        >>> LexicalRichness(mattr_window=10).get_params()
        {'mtld_threshold': 0.72, 'mattr_window': 10, 'hdd_draws': 42}
    """

    name = "lexical_richness"
    label = "richness"
    description = "Length-robust lexical diversity of the response: MTLD, MATTR (window 50) and HD-D (42 draws)"
    requires = frozenset({"tokens"})
    higher_is_better = True
    #: Opt-in (``--metrics lexical_richness``): with the literature's defaults MATTR and HD-D are NaN
    #: for most tutor replies, so ``all`` would gain mostly-NaN columns.
    include_in_all: ClassVar[bool] = False
    nan_hints: ClassVar[dict[str, str]] = {
        "mattr": "; the replies are shorter than mattr_window: lower it, e.g. --metric-param lexical_richness.mattr_window=10",
        "hdd": "; the replies are shorter than hdd_draws: lower it, e.g. --metric-param lexical_richness.hdd_draws=10",
        "mtld": "; MTLD is undefined when every token of a reply is distinct",
    }

    def __init__(
        self, mtld_threshold: float = MTLD_THRESHOLD, mattr_window: int = MATTR_WINDOW, hdd_draws: int = HDD_DRAWS
    ) -> None:
        self.mtld_threshold = mtld_threshold
        self.mattr_window = mattr_window
        self.hdd_draws = hdd_draws

    def columns(self, n_layers: int | None = None) -> list[str]:
        return list(RICHNESS_COLUMNS)

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        return {"mtld": (0.0, math.inf), "mattr": (0.0, 1.0), "hdd": (0.0, 1.0)}

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        check_richness_params(self.mtld_threshold, self.mattr_window, self.hdd_draws)
        tokens = _response_tokens(batch, art)
        cache = {
            i: lexical_richness(
                toks, mtld_threshold=self.mtld_threshold, mattr_window=self.mattr_window, hdd_draws=self.hdd_draws
            )
            for i, toks in tokens.items()
        }
        return {c: np.array([cache[i][c] for i in batch.response_idx], dtype=np.float64) for c in self.columns()}

    def nan_reasons(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, dict[str, int]]:
        """Per column, how many exchanges of the batch are NaN and why (``empty``, ``all_distinct``, ``too_short``)."""
        tokens = _response_tokens(batch, art)
        why = {i: richness_reasons(t, mattr_window=self.mattr_window, hdd_draws=self.hdd_draws) for i, t in tokens.items()}
        out: dict[str, dict[str, int]] = {}
        for col in self.columns():
            counts = Counter(why[i][col] for i in batch.response_idx.tolist())
            counts.pop("", None)
            if counts:
                out[col] = dict(counts)
        return out

    def describe(self) -> dict[str, str]:
        """Manifest note on what NaN means for these columns."""
        return {
            "nan_rule": (
                f"mtld NaN with no tokens or every token distinct; mattr NaN below {self.mattr_window} tokens; "
                f"hdd NaN below {self.hdd_draws} tokens"
            )
        }


def _response_tokens(batch: ExchangeBatch, art: Artifacts) -> dict[int, list[str]]:
    """T(r) per unique response of the batch (from the shared artifact when it was built)."""
    idx = set(batch.response_idx.tolist())
    if art.tokens is not None:
        return {i: art.tokens[i] for i in idx}
    return {i: tokenize(art.texts[i]) for i in idx}
