"""Lexical diversity and repetition of the response (spec metrics.md §3).

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
    grams = ngrams(as_tokens(text_or_tokens), n)
    return ratio(len(set(grams)), len(grams))


def distinct_n_li(text_or_tokens: str | Sequence[str], n: int = 2) -> float:
    """Variant ``V_n/N_1`` (Li et al. 2016 divide by tokens); NaN with no tokens."""
    tokens = as_tokens(text_or_tokens)
    return ratio(len(set(ngrams(tokens, n))), len(tokens))


def repetition_n(text_or_tokens: str | Sequence[str], n: int = 2) -> float:
    """``rep_n = 1 − V_n/N_n``; NaN when ``N_n = 0``. Example: ``repetition_n("a a", 1) == 0.5``."""
    d = distinct_n(text_or_tokens, n)
    return clean(1.0 - d) if not math.isnan(d) else NAN


def ngram_entropy_nats(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """``H_n = −Σ_g (c_g/N_n) ln(c_g/N_n)``; NaN when ``N_n = 0``."""
    grams = ngrams(as_tokens(text_or_tokens), n)
    return clean(_entropy(grams)) if grams else NAN


def ngram_entropy(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """Normalised entropy ``H_n / ln N_n`` in [0, 1]; NaN when ``N_n < 2``.

    >>> round(ngram_entropy("the cat sat on the mat", 1), 6)
    0.871049
    """
    grams = ngrams(as_tokens(text_or_tokens), n)
    if len(grams) < 2:
        return NAN
    if len(set(grams)) == len(grams):  # exact 1.0 when nothing repeats (avoids 1.0000000000000002)
        return 1.0
    return clean(min(1.0, _entropy(grams) / math.log(len(grams))))


def ngram_entropy_evenness(text_or_tokens: str | Sequence[str], n: int = 1) -> float:
    """Variant ``H_n / ln V_n``; NaN when ``V_n < 2``."""
    grams = ngrams(as_tokens(text_or_tokens), n)
    types = len(set(grams))
    return clean(min(1.0, _entropy(grams) / math.log(types))) if types >= 2 else NAN


def _entropy(grams: list[tuple[str, ...]]) -> float:
    counts = Counter(grams)
    total = len(grams)
    return -sum((c / total) * math.log(c / total) for c in counts.values())


def lexical_diversity(text_or_tokens: str | Sequence[str], *, variants: bool = False) -> dict[str, float]:
    """All diversity columns for one response; ``variants=True`` adds the reserved optional columns.

    >>> lexical_diversity("The cat sat on the mat.")["ttr"]
    0.8333333333333334
    """
    tokens = as_tokens(text_or_tokens)
    out = {
        "ttr": distinct_n(tokens, 1),
        "distinct_1": distinct_n(tokens, 1),
        "distinct_2": distinct_n(tokens, 2),
        "distinct_3": distinct_n(tokens, 3),
        "entropy_1": ngram_entropy(tokens, 1),
        "entropy_2": ngram_entropy(tokens, 2),
        "rep_1": repetition_n(tokens, 1),
        "rep_2": repetition_n(tokens, 2),
    }
    if variants:
        out.update(
            distinct_2_li=distinct_n_li(tokens, 2),
            distinct_3_li=distinct_n_li(tokens, 3),
            entropy_1_nats=ngram_entropy_nats(tokens, 1),
            entropy_2_nats=ngram_entropy_nats(tokens, 2),
            entropy_1_evenness=ngram_entropy_evenness(tokens, 1),
            entropy_2_evenness=ngram_entropy_evenness(tokens, 2),
        )
    return out
