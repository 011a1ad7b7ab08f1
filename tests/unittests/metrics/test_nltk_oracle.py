"""NLTK as an independent oracle for the tokeniser-based lexical metrics, on real MRBench replies.

NLTK is the `dev` extra's lexical oracle; only functions that need no downloaded data are used. Each property
feeds NLTK the spec's tokens ``T(x)`` (``tutormetrics.text.tokenize``) and recomputes the metric with NLTK's own
n-grams and counters; hypothesis draws replies, prompts and slices of them from MRBench V2.

Asserted, where ``metrics.md``/``richness.md`` and NLTK define the same quantity:

- n-grams (§0): ``text.ngrams(t, n) == list(nltk.util.ngrams(t, n))``, contiguous and unpadded, ``max(0, N−n+1)``;
- ``ttr``/``distinct_n = V_n/N_n`` and ``rep_n = 1 − V_n/N_n`` (§3): ``FreqDist.B()/FreqDist.N()`` over NLTK's
  n-grams; the variant ``distinct_n_li = V_n/N_1``;
- ``entropy_n = H_n/ln N_n`` (§3): ``H_n`` from ``nltk.probability.entropy(MLEProbDist(FreqDist))`` (bits, turned
  into nats), plus the ``_nats`` and ``_evenness`` variants;
- ``jaccard_n`` (§4): ``1 − nltk.metrics.distance.jaccard_distance`` of NLTK n-gram sets; containment as
  ``|A∩B|/|A|`` on the same NLTK sets (NLTK has no containment function);
- NaN exactly where NLTK's ratio is undefined (``FreqDist.N() == 0``; ``jaccard_distance`` of two empty sets
  raises ``ZeroDivisionError``);
- the Scorer's ``lexical_diversity`` and ``overlap`` columns for 60 MRBench exchanges;
- sentences (§2) on plain one-line prose built from MRBench words (sentences of words ending in ``.``, ``!`` or
  ``?``, a capital after the space, no abbreviation, digit or one-letter word): ``split_sentences`` equals
  NLTK's Punkt with its default (untrained, data-free) parameters, sentence for sentence.

Where the spec deliberately differs from NLTK (not asserted):

- **Tokens.** ``T(x)`` is one lowercased regex (``don't``, ``well-known`` and ``x_1`` are one token, ``3.5`` is
  ``3``, ``5``, punctuation dropped, each CJK character a token). ``nltk.word_tokenize`` needs the ``punkt_tab``
  download and splits ``don't`` into ``do`` + ``n't`` and keeps punctuation as tokens; it is never used.
- **Sentences.** ``S(x)`` splits at every line break, strips list and heading markers (``1.``, ``-``, ``#``) and
  merges after a fixed abbreviation list; Punkt keeps a paragraph's lines together, treats list numbers as
  sentences or abbreviations by its own heuristics and learns abbreviations from training data. On the first 800
  MRBench replies the two sentence counts agree for 773 (96.6%).
- **Entropy normalisation.** NLTK gives raw entropy (bits); ``entropy_n`` divides by ``ln N_n`` so it lies in
  [0, 1] (the raw value in nats is the ``_nats`` variant).
- **Undefined values.** The spec returns NaN where NLTK returns 0 (``FreqDist.freq`` of an empty distribution) or
  raises.
- **Overlap.** The spec's overlap is on n-gram *sets* (Broder); BLEU (``nltk.translate.bleu_score``) clips
  multiset counts, combines orders geometrically and adds a brevity penalty, so no family is BLEU-like and BLEU is
  no oracle here.
- **Readability and richness.** NLTK's CMUdict needs a download (textstat is the readability oracle); NLTK has
  no MTLD, MATTR or HD-D (lexicalrichness is their oracle).
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

nltk = pytest.importorskip("nltk")
from nltk import FreqDist  # noqa: E402
from nltk.metrics.distance import jaccard_distance  # noqa: E402
from nltk.probability import MLEProbDist, entropy  # noqa: E402
from nltk.tokenize.punkt import PunktSentenceTokenizer  # noqa: E402
from nltk.util import ngrams as nltk_ngrams  # noqa: E402

from tutormetrics.metrics import (  # noqa: E402
    containment,
    distinct_n,
    distinct_n_li,
    jaccard,
    ngram_entropy,
    ngram_entropy_evenness,
    ngram_entropy_nats,
    repetition_n,
    type_token_ratio,
)
from tutormetrics.text import ngrams, split_sentences, tokenize  # noqa: E402

MRBENCH = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "mrbench"


def _exchanges() -> list[tuple[str, str]]:
    path = MRBENCH / "exchanges.csv"
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return [(row["prompt"], row["response"]) for row in csv.DictReader(handle)]


EXCHANGES = _exchanges()
pytestmark = [pytest.mark.mrbench,
              pytest.mark.skipif(not EXCHANGES, reason="../shared/data/mrbench not available")]
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A real MRBench reply or prompt, whole or a slice of it (short, one-word and empty texts included)."""
    prompt, response = draw(st.sampled_from(EXCHANGES))
    text = draw(st.sampled_from([response, response, prompt]))
    if draw(st.booleans()):
        start = draw(st.integers(0, len(text)))
        text = text[start:start + draw(st.integers(0, 80))]
    return text


def _close(ours: float, ref: float) -> bool:
    return (math.isnan(ours) and math.isnan(ref)) or ours == pytest.approx(ref, rel=1e-12, abs=1e-12)


def _nltk_distinct(tokens: list[str], n: int) -> float:
    fd = FreqDist(nltk_ngrams(tokens, n))
    return fd.B() / fd.N() if fd.N() else math.nan


def _nltk_entropy_nats(tokens: list[str], n: int) -> float:
    fd = FreqDist(nltk_ngrams(tokens, n))
    return entropy(MLEProbDist(fd)) * math.log(2) if fd.N() else math.nan


@SETTINGS
@given(text=texts(), n=st.integers(1, 5))
def test_ngrams_equal_nltk(text: str, n: int):
    tokens = tokenize(text)
    assert ngrams(tokens, n) == list(nltk_ngrams(tokens, n))
    assert len(ngrams(tokens, n)) == max(0, len(tokens) - n + 1)


@SETTINGS
@given(text=texts(), n=st.integers(1, 4))
def test_distinct_rep_ttr_equal_nltk_freqdist(text: str, n: int):
    tokens = tokenize(text)
    ref = _nltk_distinct(tokens, n)
    assert _close(distinct_n(text, n), ref)
    assert _close(repetition_n(text, n), 1.0 - ref)
    fd1 = FreqDist(tokens)
    assert _close(type_token_ratio(text), fd1.B() / fd1.N() if fd1.N() else math.nan)
    li = FreqDist(nltk_ngrams(tokens, n)).B() / len(tokens) if tokens else math.nan
    assert _close(distinct_n_li(text, n), li)


@SETTINGS
@given(text=texts(), n=st.integers(1, 3))
def test_entropy_equals_nltk_entropy(text: str, n: int):
    tokens = tokenize(text)
    h = _nltk_entropy_nats(tokens, n)
    n_grams = max(0, len(tokens) - n + 1)
    v = FreqDist(nltk_ngrams(tokens, n)).B()
    assert _close(ngram_entropy_nats(text, n), h)
    assert _close(ngram_entropy(text, n), h / math.log(n_grams) if n_grams >= 2 else math.nan)
    assert _close(ngram_entropy_evenness(text, n), h / math.log(v) if v >= 2 else math.nan)


@SETTINGS
@given(pair=st.sampled_from(EXCHANGES), cut=st.integers(0, 400), n=st.integers(1, 3))
def test_jaccard_and_containment_equal_nltk_sets(pair: tuple[str, str], cut: int, n: int):
    prompt, response = pair[0][-cut:] if cut else "", pair[1]
    a = set(nltk_ngrams(tokenize(prompt), n))
    b = set(nltk_ngrams(tokenize(response), n))
    try:
        ref = 1.0 - jaccard_distance(a, b)
    except ZeroDivisionError:  # both sets empty: NLTK has no value, the spec says NaN
        ref = math.nan
    assert _close(jaccard(prompt, response, n), ref)
    assert _close(containment(prompt, response, n), len(a & b) / len(a) if a else math.nan)
    assert _close(containment(prompt, response, n, direction="resp_in_prompt"), len(a & b) / len(b) if b else math.nan)


def test_scorer_columns_equal_nltk_on_mrbench():
    from tutormetrics.engine import Scorer

    rows = random.Random(22).sample(EXCHANGES, 60)
    prompts, responses = [p for p, _ in rows], [r for _, r in rows]
    frame = Scorer(["lexical_diversity", "overlap"]).score([f"e{i}" for i in range(60)], prompts, responses)
    for i, (prompt, response) in enumerate(rows):
        t, tp = tokenize(response), tokenize(prompt)
        expected = {"ttr": _nltk_distinct(t, 1), "rep_1": 1 - _nltk_distinct(t, 1), "rep_2": 1 - _nltk_distinct(t, 2)}
        for n in (1, 2, 3):
            expected[f"distinct_{n}"] = _nltk_distinct(t, n)
        for n in (1, 2):
            h, n_grams = _nltk_entropy_nats(t, n), len(t) - n + 1
            expected[f"entropy_{n}"] = h / math.log(n_grams) if n_grams >= 2 else math.nan
            a, b = set(nltk_ngrams(tp, n)), set(nltk_ngrams(t, n))
            expected[f"jaccard_{n}"] = 1 - jaccard_distance(a, b) if a | b else math.nan
            suffix = "" if n == 1 else "_2"
            expected[f"contain_prompt_in_resp{suffix}"] = len(a & b) / len(a) if a else math.nan
            expected[f"contain_resp_in_prompt{suffix}"] = len(a & b) / len(b) if b else math.nan
        for column, value in expected.items():
            assert _close(frame[column][i], value), (column, i)


@st.composite
def plain_prose(draw: st.DrawFn) -> str:
    """One line of sentences made of words from a real MRBench reply, each ending in . ! or ?"""
    _, response = draw(st.sampled_from(EXCHANGES))
    abbreviations = {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "fig", "eq", "approx", "no"}
    words = [w for w in tokenize(response) if w.isalpha() and len(w) > 1 and w not in abbreviations]
    words = words or ["step", "check", "again"]
    sentences = []
    for _ in range(draw(st.integers(1, 6))):
        chosen = draw(st.lists(st.sampled_from(words), min_size=1, max_size=10))
        chosen[0] = chosen[0].capitalize()
        sentences.append(" ".join(chosen) + draw(st.sampled_from(".!?")))
    return " ".join(sentences)


@SETTINGS
@given(text=plain_prose())
def test_sentences_equal_untrained_punkt_on_plain_prose(text: str):
    assert split_sentences(text) == PunktSentenceTokenizer().tokenize(text)
