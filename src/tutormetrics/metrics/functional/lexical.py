"""Lexical diversity and repetition of the response (docs/metrics.md#lexical-diversity).

With ``G_n`` the n-grams of ``T(r)``, ``N_n = |G_n|`` and ``V_n = |set(G_n)|``:
``distinct_n = V_n/N_n``, ``rep_n = 1 − V_n/N_n`` (Welleck's seq-rep-n) and
``entropy_n = H_n / ln N_n`` with ``H_n`` the Shannon entropy (nats) of the n-gram counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from tutormetrics.metrics.functional._util import NAN, as_tokens, clean, ratio
from tutormetrics.text import ngrams


def type_token_ratio(text_or_tokens: str | Sequence[str]) -> float:
    """``V_1/N_1``; NaN for no tokens. Example: ``type_token_ratio("a a b b") == 0.5``."""
    return distinct_n(text_or_tokens, 1)


def distinct_n(text_or_tokens: str | Sequence[str], n: int = 2) -> float:
    """``V_n/N_n`` (n-gram denominator, as DialoGPT/SimCTG); NaN when ``N_n = 0``.

    >>> distinct_n("a rose is a rose is a rose", 2)
    0.42857142857142855
    """
    return _GramStats(ngrams(as_tokens(text_or_tokens), n)).distinct()


def distinct_n_li(text_or_tokens: str | Sequence[str], n: int = 2) -> float:
    """Variant ``V_n/N_1`` (Li et al. 2016 divide by tokens); NaN with no tokens."""
    tokens = as_tokens(text_or_tokens)
    return ratio(len(set(ngrams(tokens, n))), len(tokens))


def repetition_n(text_or_tokens: str | Sequence[str], n: int = 2) -> float:
    """``rep_n = 1 − V_n/N_n``; NaN when ``N_n = 0``. Example: ``repetition_n("a a", 1) == 0.5``."""
    return _GramStats(ngrams(as_tokens(text_or_tokens), n)).repetition()


def ngram_entropy_nats(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """``H_n = −Σ_g (c_g/N_n) ln(c_g/N_n)``; NaN when ``N_n = 0``."""
    return _GramStats(ngrams(as_tokens(text_or_tokens), n)).entropy_nats()


def ngram_entropy(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """Normalised entropy ``H_n / ln N_n`` in [0, 1]; NaN when ``N_n < 2``.

    >>> round(ngram_entropy("the cat sat on the mat", 1), 6)
    0.871049
    """
    return _GramStats(ngrams(as_tokens(text_or_tokens), n)).entropy()


def ngram_entropy_evenness(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """Variant ``H_n / ln V_n``; NaN when ``V_n < 2``."""
    return _GramStats(ngrams(as_tokens(text_or_tokens), n)).evenness()


def lexical_diversity(text_or_tokens: str | Sequence[str], *, variants: bool = False) -> dict[str, float]:
    """All diversity columns for one response; ``variants=True`` adds the reserved optional columns.

    Each n-gram list and its counts are built once and shared by distinct, rep and entropy.

    >>> lexical_diversity("The cat sat on the mat.")["ttr"]
    0.8333333333333334
    """
    tokens = as_tokens(text_or_tokens)
    stats = {n: _GramStats(ngrams(tokens, n)) for n in (1, 2, 3)}
    out = {
        "ttr": stats[1].distinct(),
        "distinct_1": stats[1].distinct(),
        "distinct_2": stats[2].distinct(),
        "distinct_3": stats[3].distinct(),
        "entropy_1": stats[1].entropy(),
        "entropy_2": stats[2].entropy(),
        "rep_1": stats[1].repetition(),
        "rep_2": stats[2].repetition(),
    }
    if variants:
        out.update(
            distinct_2_li=ratio(stats[2].types, len(tokens)),
            distinct_3_li=ratio(stats[3].types, len(tokens)),
            entropy_1_nats=stats[1].entropy_nats(),
            entropy_2_nats=stats[2].entropy_nats(),
            entropy_1_evenness=stats[1].evenness(),
            entropy_2_evenness=stats[2].evenness(),
        )
    return out


class _GramStats:
    """Counts of one n-gram list: N (tokens of the list), V (types) and the count per type."""

    def __init__(self, grams: list[tuple[str, ...]]) -> None:
        self.n = len(grams)
        self.counts = Counter(grams)
        self.types = len(self.counts)

    def distinct(self) -> float:
        return ratio(self.types, self.n)

    def repetition(self) -> float:
        return clean(1.0 - self.types / self.n) if self.n else NAN

    def entropy_nats(self) -> float:
        if not self.n:
            return NAN
        return clean(-sum((c / self.n) * math.log(c / self.n) for c in self.counts.values()))

    def entropy(self) -> float:
        if self.n < 2:
            return NAN
        if self.types == self.n:
            return 1.0
        return clean(min(1.0, self.entropy_nats() / math.log(self.n)))

    def evenness(self) -> float:
        return clean(min(1.0, self.entropy_nats() / math.log(self.types))) if self.types >= 2 else NAN
