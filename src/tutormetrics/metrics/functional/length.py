"""Length and structure of the response (spec metrics.md §1)."""

from __future__ import annotations

from collections.abc import Sequence

from tutormetrics.metrics.functional._util import NAN, as_tokens, ratio
from tutormetrics.text import normalize, split_sentences


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


def length_structure(prompt: str, response: str) -> dict[str, float]:
    """All length columns for one exchange.

    >>> length_structure("Where did the cat sit?", "The cat sat on the mat.")["len_ratio"]
    1.2
    """
    p_tok, r_tok = as_tokens(prompt), as_tokens(response)
    return {
        "resp_chars": float(char_count(response)),
        "resp_words": float(len(r_tok)),
        "resp_sentences": float(sentence_count(response)),
        "resp_mean_word_len": mean_word_length(r_tok),
        "len_ratio": ratio(len(r_tok), len(p_tok)),
        "len_ratio_chars": length_ratio_chars(prompt, response),
    }
