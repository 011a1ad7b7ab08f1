"""T(x), S(x) and n-grams against the spec tables (metrics.md §0, §2)."""

import pytest

from tutormetrics.text import ngrams, normalize, split_sentences, tokenize

SENTENCE_CASES = [
    ("The cat sat on the mat.", 1),
    ("Hello", 1),
    ("", 0),
    ("   \n ", 0),
    ("This is a test. It is only a test.", 2),
    ("Here are the steps:\n1. Find the derivative\n2. Set it to zero\n3. Solve for x", 4),
    ("Great question! Let's think step by step. What do you already know about fractions?", 3),
    ("Sentence one.\n\nSentence two is here.", 2),
    ("Good job. Try again.", 2),
    ("Use the formula $E = mc^2$. For example, if m = 2.5 kg, then E = 2.5 * c^2.", 2),
    ("Dr. Smith earned 3.5 million dollars. He was happy.", 2),
    ("Wait... really?! Yes.", 3),
    ("Compare e.g. apples and pears. Done.", 2),
    ("```python\nx = 1\n```", 2),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCE_CASES)
def test_sentence_splitter_matches_spec_table(text, expected):
    assert len(split_sentences(text)) == expected


def test_sentence_splitter_abbreviation_merge_and_list_markers():
    assert split_sentences("Dr. Smith earned 3.5 million dollars. He was happy.")[0].startswith("Dr. Smith")
    assert split_sentences("- first point\n* second point") == ["first point", "second point"]
    assert split_sentences('He said "stop." Then left.') == ['He said "stop.', "Then left."]


def test_code_fences_can_be_stripped():
    assert len(split_sentences("Look:\n```cpp\nint x = 1;\n```\nDone.", strip_code_fences=True)) == 2


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Don't panic", ["don't", "panic"]),
        ("a well-known fact", ["a", "well-known", "fact"]),
        ("3.5 apples", ["3", "5", "apples"]),
        ("e.g. this", ["e", "g", "this"]),
        ("x_1 = y", ["x_1", "y"]),
        ("Hello, WORLD!!", ["hello", "world"]),
        ("don\u2019t", ["don\u2019t"]),
        ("", []),
    ],
)
def test_tokenizer(text, tokens):
    assert tokenize(text) == tokens


def test_nfc_normalisation_joins_combining_marks():
    decomposed = "cafe\u0301"
    assert normalize(decomposed) == "caf\u00e9"
    assert tokenize(decomposed) == ["caf\u00e9"]


def test_ngrams_count_and_no_padding():
    assert ngrams(list("abcd"), 2) == [("a", "b"), ("b", "c"), ("c", "d")]  # SimCTG's loop finds only 2
    assert ngrams(["a"], 3) == []  # Distinct-N raises here
    with pytest.raises(ValueError, match="n must be >= 1"):
        ngrams(["a"], 0)
