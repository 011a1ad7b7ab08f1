"""The one place where texts are normalised, tokenised, split into sentences and given a language.

Rules: ``docs/metrics.md#conventions``, ``docs/metrics.md#sentences``, amended by ``docs/design/languages.md#tokeniser``,
``docs/design/languages.md#sentences``, ``docs/design/languages.md#lang``. Every metric's tokens ``T(x)`` and
sentences ``S(x)`` come from here. The regexes elsewhere do other jobs: readability reproduces textstat's own word and sentence counts
(:mod:`tutormetrics.metrics.functional.readability`), coherence finds ``S(x)``'s sentences in the text by
their whitespace runs (:mod:`tutormetrics.metrics.functional.coherence`), a question is found by its end mark
(:mod:`tutormetrics.metrics.dialogue_turn`) and the encoders cut long texts at spaces
(:mod:`tutormetrics.encoders.pieces`).

* ``T(x)``: each Chinese or Japanese character (Han, Hiragana, Katakana: the blocks of :data:`CJK`
  that are ``\\w``) is one token; every other ``\\w`` run is a token as before (``don't``, ``x_1``).
* ``S(x)``: lines, list markers, ``.!?`` + whitespace as before, plus ``。！？`` runs and ``……`` with no
  space after them, and ASCII ``.!?`` right before a CJK character.
* Language (``lang``): ``und`` without tokens, ``zh``/``ja`` when CJK characters are ≥ 30 % of the
  tokens (``ja`` when any of them is kana), else ``en``.

On text without CJK characters or CJK sentence punctuation, ``T`` and ``S`` are exactly the
``docs/metrics.md#metrics`` definitions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal

from tutormetrics.errors import ConfigError

#: Kana blocks of ``C`` (docs/design/languages.md#tokeniser): Hiragana, Katakana, Katakana Phonetic Extensions,
#: Halfwidth Katakana, Kana Extended-B … Small Kana Extension.
KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\U0001aff0-\U0001b16f"
#: Han blocks of ``C``: Extension A, Unified Ideographs, Compatibility Ideographs, planes 2–3.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
#: ``C``: every block whose ``\\w`` characters are one token each.
CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana Phonetic Extensions
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uff66-\uff9f"  # Halfwidth Katakana
    "\U0001aff0-\U0001b16f"  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension
    "\U00020000-\U0003ffff"  # planes 2-3: Extensions B-J, Compatibility Ideographs Supplement
)

_WORD = rf"[^\W{CJK}]+(?:['\u2019-][^\W{CJK}]+)*"
_TOKEN = re.compile(rf"(?=\w)[{CJK}]|{_WORD}")
# Fast paths (benchmarks/RESULTS.md §6): on text without a character of C the CJK-aware regexes equal the
# docs/metrics.md#metrics ones, which run 1.6x (T) and 7x (S) faster; one search for a CJK character decides.
_TOKEN_LATIN = re.compile(r"\w+(?:['\u2019-]\w+)*")
_ANY_CJK = re.compile(f"[{CJK}]")
_ANY_CJK_OR_STOP = re.compile(f"[{CJK}\u3002\uff01\uff1f\u2026]")
_TOKEN_HAN_RUNS = re.compile(rf"((?:(?=\w)[{HAN}])+)|(?=\w)[{CJK}]|{_WORD}")  # group 1: a maximal Han run
_CJK_TOKEN = re.compile(rf"(?=\w)[{CJK}]")
_KANA_TOKEN = re.compile(rf"[{KANA}]")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|#{1,6})\s+")
_CLOSE = "\"'\u201d\u2019)\\]\u300d\u300f\uff09\u3011"  # " ' ” ’ ) ] 」 』 ） 】
_SENTENCE_BREAK_LATIN = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")  # docs/design/languages.md#sentences rule 2 = (a)
_SENTENCE_BREAK = re.compile(
    r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+"  # (a) as in docs/design/languages.md#sentences
    r"|(?:(?<=[\u3002\uff01\uff1f])|(?<=\u2026\u2026))"  # (b) after 。！？ or ……
    rf"(?![\u3002\uff01\uff1f!?\u2026])[{_CLOSE}]*\s*"  # at the end of the run
    rf"|(?<=[.!?])[\"'\u201d\u2019)\]]*(?=[{CJK}])"  # (c) ASCII .!? right before CJK
)
_HAS_WORD = re.compile(r"\w")
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig", "eq", "approx", "no"}
)
_FENCE = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.MULTILINE | re.DOTALL)

Language = Literal["und", "en", "zh", "ja"]
#: Values of ``--lang``: ``auto`` applies the rule of docs/design/languages.md#lang per row.
LANG_CHOICES: tuple[str, ...] = ("auto", "en", "zh", "ja")
#: Values of ``--segmenter``: ``char`` (the default) or ``rjieba`` (extra ``tutormetrics[zh]``).
SEGMENTERS: tuple[str, ...] = ("char", "rjieba")


def normalize(text: str | None) -> str:
    """Unicode NFC; ``None`` becomes ``""``. Example: ``normalize("e\\u0301") == "\\u00e9"``."""
    return unicodedata.normalize("NFC", text) if text else ""


def tokenize(text: str, segmenter: str = "char") -> list[str]:
    """``T(x)``: lowercase word tokens; each CJK character is one token.

    ``segmenter="rjieba"`` replaces each maximal run of Han characters by ``rjieba.cut(run)``
    (HMM on); the engine uses it only for rows whose ``lang`` is ``zh``.

    >>> tokenize("Don't use well-known e.g. 3.5 x_1!")
    ["don't", 'use', 'well-known', 'e', 'g', '3', '5', 'x_1']
    >>> tokenize("用for循环遍历list，i从0到9。")
    ['用', 'for', '循', '环', '遍', '历', 'list', 'i', '从', '0', '到', '9']
    """
    text = normalize(text).lower()
    if _ANY_CJK.search(text) is None:
        if segmenter != "char":
            check_segmenter(segmenter)
        return _TOKEN_LATIN.findall(text)
    if segmenter == "char":
        return _TOKEN.findall(text)
    cut = _rjieba_cut(segmenter)
    tokens: list[str] = []
    for m in _TOKEN_HAN_RUNS.finditer(text):
        if m.group(1):
            tokens.extend(cut(m.group(1)))
        else:
            tokens.append(m.group(0))
    return tokens


def require_segmenter(segmenter: str) -> str:
    """Validate ``segmenter`` and import what it needs now (:class:`ConfigError` when missing); return it."""
    if check_segmenter(segmenter) != "char":
        _rjieba_cut(segmenter)
    return segmenter


def _rjieba_cut(segmenter: str) -> Callable[[str], list[str]]:
    check_segmenter(segmenter)
    try:
        import rjieba
    except ImportError as exc:
        raise ConfigError(
            "the rjieba segmenter needs the 'rjieba' package",
            hint="pip install 'tutormetrics[zh]', or use --segmenter char",
        ) from exc
    return lambda run: rjieba.cut(run, True)


def check_segmenter(segmenter: str) -> str:
    """Validate a ``--segmenter`` value (``char`` or ``rjieba``); return it."""
    if segmenter not in SEGMENTERS:
        raise ConfigError(f"unknown segmenter {segmenter!r}", hint="use --segmenter char or --segmenter rjieba")
    return segmenter


def check_lang(lang: str) -> str:
    """Validate a ``--lang`` value (``auto``, ``en``, ``zh`` or ``ja``); return it."""
    if lang not in LANG_CHOICES:
        raise ConfigError(f"unknown language {lang!r}", hint="use --lang auto, en, zh or ja")
    return lang


def segmenter_info(segmenter: str) -> dict[str, str]:
    """Segmenter name and, for ``rjieba``, its version: for the run manifest."""
    info = {"segmenter": check_segmenter(segmenter)}
    if segmenter == "rjieba":
        from importlib.metadata import PackageNotFoundError, version

        try:
            info["rjieba_version"] = version("rjieba")
        except PackageNotFoundError:
            info["rjieba_version"] = "not installed"
    return info


def is_cjk_token(token: str) -> bool:
    """A token that is one CJK character (Han or kana). Example: ``is_cjk_token("变") is True``."""
    return len(token) == 1 and _CJK_TOKEN.match(token) is not None


def detect_language(text_or_tokens: str | Sequence[str]) -> Language:
    """The language rule of docs/design/languages.md#lang on ``t = T(r)``.

    ``und`` if ``t`` is empty; else ``zh``/``ja`` if ``10·|c| ≥ 3·|t|`` with ``c`` the one-CJK-character
    tokens (``ja`` if any of them is kana); else ``en``.

    >>> detect_language("変数xの値を確認してください。"), detect_language("变量x的值是5。"), detect_language("")
    ('ja', 'zh', 'und')
    >>> detect_language("Use len(items) or items.size() to get 长度值.")
    'en'
    """
    if isinstance(text_or_tokens, str):
        lowered = normalize(text_or_tokens).lower()
        if _CJK_TOKEN.search(lowered) is None:  # fast path: no CJK token, so |c| = 0
            return "en" if _HAS_WORD.search(lowered) else "und"
        tokens: Sequence[str] = _TOKEN.findall(lowered)
    else:
        tokens = text_or_tokens
    if not tokens:
        return "und"
    cjk = [t for t in tokens if is_cjk_token(t)]
    if 10 * len(cjk) >= 3 * len(tokens):
        return "ja" if any(_KANA_TOKEN.match(t) for t in cjk) else "zh"
    return "en"


def text_language(text: str, lang: str = "auto") -> Language:
    """``lang`` of a response: the rule of :func:`detect_language` for ``auto``, else ``lang`` itself.

    >>> text_language("The cat sat.", "zh")
    'zh'
    """
    if check_lang(lang) == "auto":
        return detect_language(text)
    return lang  # type: ignore[return-value]


def split_sentences(text: str, *, strip_code_fences: bool = False) -> list[str]:
    """``S(x)``: deterministic sentence split (lines, list markers, terminal punctuation, abbreviations).

    >>> split_sentences("Dr. Smith earned 3.5 million dollars. He was happy.")
    ['Dr. Smith earned 3.5 million dollars.', 'He was happy.']
    >>> split_sentences("真的吗！？好的……继续。")
    ['真的吗！？', '好的……', '继续。']
    """
    text = normalize(text)
    if strip_code_fences:
        text = _FENCE.sub("", text)
    breaks = _SENTENCE_BREAK if _ANY_CJK_OR_STOP.search(text) else _SENTENCE_BREAK_LATIN
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = _LIST_MARKER.sub("", raw_line, count=1)
        segments = breaks.split(line)
        merged: list[str] = []
        carry = ""
        for piece in segments:
            seg = (carry + " " + piece) if carry else piece
            carry = ""
            stripped = seg.rstrip()
            if stripped.endswith("."):
                words = stripped.split()
                last = words[-1].strip(".").lower() if words else ""
                if last in _ABBREVIATIONS:
                    carry = stripped
                    continue
            merged.append(seg)
        if carry:
            merged.append(carry)
        sentences.extend(s.strip() for s in merged if _HAS_WORD.search(s))
    return sentences


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Contiguous n-grams without padding: ``max(0, N-n+1)`` of them.

    >>> ngrams(["a", "b", "c", "d"], 2)
    [('a', 'b'), ('b', 'c'), ('c', 'd')]
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    return list(zip(*(tokens[i:] for i in range(n)), strict=False))  # truncation is the point: the last n-1 tails are shorter; 3x faster than slicing per position (measured)
