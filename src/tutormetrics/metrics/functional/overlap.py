"""Prompt–response overlap on n-gram sets (docs/metrics.md#overlap, Broder 1997).

``A = set(ngrams(T(p), n))``, ``B = set(ngrams(T(r), n))``: ``jaccard_n = |A∩B|/|A∪B|``,
``contain_prompt_in_resp = |A∩B|/|A|`` and ``contain_resp_in_prompt = |A∩B|/|B|``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tutormetrics.metrics.functional._util import as_tokens, ratio
from tutormetrics.text import ngrams


def _sets(prompt: str | Sequence[str], response: str | Sequence[str], n: int) -> tuple[set, set]:
    return set(ngrams(as_tokens(prompt), n)), set(ngrams(as_tokens(response), n))


def jaccard(prompt: str | Sequence[str], response: str | Sequence[str], n: int = 1) -> float:
    """Resemblance ``|A∩B|/|A∪B|``; NaN when both sets are empty.

    Args:
        prompt: prompt text or tokens.
        response: response text or tokens.
        n: n-gram length.

    >>> jaccard("a rose is a flower which is a rose", "a rose is a rose is a rose", 1)
    0.6
    """
    a, b = _sets(prompt, response, n)
    return ratio(len(a & b), len(a | b))


def containment(prompt: str | Sequence[str], response: str | Sequence[str], n: int = 1, *, direction: str = "prompt_in_resp") -> float:
    """``|A∩B|/|A|`` (``prompt_in_resp``) or ``|A∩B|/|B|`` (``resp_in_prompt``); NaN for an empty denominator.

    Args:
        prompt: prompt text or tokens.
        response: response text or tokens.
        n: n-gram length.
        direction: ``prompt_in_resp`` (denominator |A|, the prompt's set) or ``resp_in_prompt`` (|B|).

    >>> containment("a rose is a flower which is a rose", "a rose is a rose is a rose", 1)
    0.6
    """
    a, b = _sets(prompt, response, n)
    if direction == "prompt_in_resp":
        return ratio(len(a & b), len(a))
    if direction == "resp_in_prompt":
        return ratio(len(a & b), len(b))
    raise ValueError("direction must be 'prompt_in_resp' or 'resp_in_prompt'")


def prompt_overlap(prompt: str | Sequence[str], response: str | Sequence[str]) -> dict[str, float]:
    """All overlap columns for one exchange (unigram and bigram sets)."""
    p_tok, r_tok = as_tokens(prompt), as_tokens(response)
    return overlap_from_sets(ngram_sets(p_tok), ngram_sets(r_tok))


def ngram_sets(tokens: Sequence[str]) -> tuple[set, set]:
    """Unigram and bigram sets of one text (computed once per unique text by the family class)."""
    return set(ngrams(tokens, 1)), set(ngrams(tokens, 2))


def overlap_from_sets(prompt_sets: tuple[set, set], response_sets: tuple[set, set]) -> dict[str, float]:
    """The six overlap columns from precomputed ``(unigram, bigram)`` sets of prompt and response."""
    out: dict[str, float] = {}
    for n, suffix, a, b in ((1, "", prompt_sets[0], response_sets[0]), (2, "_2", prompt_sets[1], response_sets[1])):
        inter = len(a & b)
        out[f"jaccard_{n}"] = ratio(inter, len(a | b))
        out[f"contain_prompt_in_resp{suffix}"] = ratio(inter, len(a))
        out[f"contain_resp_in_prompt{suffix}"] = ratio(inter, len(b))
    return {k: out[k] for k in OVERLAP_COLUMNS}


OVERLAP_COLUMNS = [
    "jaccard_1",
    "jaccard_2",
    "contain_prompt_in_resp",
    "contain_resp_in_prompt",
    "contain_prompt_in_resp_2",
    "contain_resp_in_prompt_2",
]
