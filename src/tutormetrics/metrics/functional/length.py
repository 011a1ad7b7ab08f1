"""Length and structure of the response (docs/metrics.md#length) and CSTutorBench's concision rule (docs/design/languages.md#concision)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.functional._util import NAN, as_tokens, ratio
from tutormetrics.text import normalize, split_sentences

#: CSTutorBench's constant: 100 characters per sentence-equivalent.
CHARS_PER_SENTENCE = 100.0
#: Band 2 up to 3 sentence-equivalents (the rubric's "1-3 sentences"), band 1 up to 6 (a project choice).
CONCISION_BANDS = (3.0, 6.0)


def char_count(text: str) -> int:
    """``len(NFC(x).strip())`` in code points. Example: ``char_count("  héllo ") == 5``."""
    return len(normalize(text).strip())


def word_count(text_or_tokens: str | Sequence[str]) -> int:
    """``len(T(x))``. Example: ``word_count("Don't panic!") == 2``."""
    return len(as_tokens(text_or_tokens))


def sentence_count(text: str) -> int:
    """``len(S(x))``. Example: ``sentence_count("Good job. Try again.") == 2``."""
    return len(split_sentences(text))


def mean_word_length(text_or_tokens: str | Sequence[str]) -> float:
    """Mean ``len(w)`` over ``T(x)``; NaN with no tokens. Example: ``mean_word_length("a bcd") == 2.0``."""
    tokens = as_tokens(text_or_tokens)
    return sum(len(t) for t in tokens) / len(tokens) if tokens else NAN


def length_ratio(prompt: str | Sequence[str], response: str | Sequence[str]) -> float:
    """``len(T(r)) / len(T(p))``; NaN when the prompt has no tokens. Example: ``length_ratio("a b", "c") == 0.5``."""
    return ratio(len(as_tokens(response)), len(as_tokens(prompt)))


def length_ratio_chars(prompt: str, response: str) -> float:
    """``resp_chars / len(NFC(p).strip())``; NaN when the prompt is empty."""
    return ratio(char_count(response), char_count(prompt))


def check_concision(chars_per_sentence: float, bands: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """Validate ``chars_per_sentence`` (> 0, finite) and the two band thresholds (finite, 0 ≤ full ≤ partial)."""
    try:
        cps = float(chars_per_sentence)
        full, partial = (float(b) for b in bands)
    except (TypeError, ValueError):
        raise ConfigError(
            f"concision: chars_per_sentence must be a number and the bands two numbers, got {chars_per_sentence!r} and {bands!r}",
            hint="e.g. --chars-per-sentence 100 --concision-bands 3,6",
        ) from None
    if not (math.isfinite(cps) and cps > 0):
        raise ConfigError(f"chars_per_sentence must be a positive number, got {chars_per_sentence!r}", hint="the default is 100")
    if not (math.isfinite(full) and math.isfinite(partial) and 0 <= full <= partial):
        raise ConfigError(
            f"concision bands must be two numbers 0 <= full <= partial, got {full:g},{partial:g}",
            hint="the default is --concision-bands 3,6",
        )
    return cps, (full, partial)


def sentence_equivalents(resp_chars: float, chars_per_sentence: float = CHARS_PER_SENTENCE) -> float:
    """``resp_sentence_equiv = resp_chars / chars_per_sentence`` (0 for an empty reply).

    >>> sentence_equivalents(301), sentence_equivalents(0)
    (3.01, 0.0)
    """
    return resp_chars / chars_per_sentence + 0.0


def concision_band(sentence_equiv: float, bands: Sequence[float] = CONCISION_BANDS) -> float:
    """2 if ``sentence_equiv ≤ full``, 1 if ``≤ partial``, else 0; NaN for an empty reply (``sentence_equiv == 0``).

    >>> [concision_band(x) for x in (0.0, 0.01, 3.0, 3.01, 6.0, 6.01)]
    [nan, 2.0, 2.0, 1.0, 1.0, 0.0]
    """
    full, partial = bands
    if sentence_equiv == 0 or math.isnan(sentence_equiv):
        return NAN
    return 2.0 if sentence_equiv <= full else 1.0 if sentence_equiv <= partial else 0.0


def length_structure(
    prompt: str,
    response: str,
    *,
    chars_per_sentence: float = CHARS_PER_SENTENCE,
    concision_bands: Sequence[float] = CONCISION_BANDS,
) -> dict[str, float]:
    """All length columns for one exchange.

    Args:
        prompt: the prompt text.
        response: the response text.
        chars_per_sentence: characters counted as one sentence equivalent (> 0).
        concision_bands: ``(full, partial)`` sentence-equivalent limits of bands 2 and 1.

    >>> length_structure("Where did the cat sit?", "The cat sat on the mat.")["len_ratio"]
    1.2
    """
    cps, bands = check_concision(chars_per_sentence, concision_bands)
    p_tok, r_tok = as_tokens(prompt), as_tokens(response)
    equiv = sentence_equivalents(char_count(response), cps)
    return {
        "resp_chars": float(char_count(response)),
        "resp_words": float(len(r_tok)),
        "resp_sentences": float(sentence_count(response)),
        "resp_mean_word_len": mean_word_length(r_tok),
        "len_ratio": ratio(len(r_tok), len(p_tok)),
        "len_ratio_chars": length_ratio_chars(prompt, response),
        "resp_sentence_equiv": equiv,
        "concision_band": concision_band(equiv, bands),
    }
