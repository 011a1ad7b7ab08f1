"""Length, diversity and overlap: the spec's worked examples (metrics.md §8) to 1e-6, and edge cases."""

import math

import pytest

from tutormetrics.engine import score_texts
from tutormetrics.metrics import (
    containment,
    distinct_n,
    jaccard,
    length_structure,
    lexical_diversity,
    ngram_entropy,
    ngram_entropy_nats,
    prompt_overlap,
    repetition_n,
    type_token_ratio,
)

EX1 = ("Where did the cat sit?", "The cat sat on the mat.")
EX2 = ("a rose is a flower which is a rose", "a rose is a rose is a rose")

EX1_EXPECTED = {
    "resp_chars": 23, "resp_words": 6, "resp_sentences": 1, "resp_mean_word_len": 2.833333,
    "len_ratio": 1.2, "len_ratio_chars": 1.045455, "ttr": 0.833333, "distinct_1": 0.833333,
    "distinct_2": 1.0, "distinct_3": 1.0, "rep_1": 0.166667, "rep_2": 0.0,
    "entropy_1": 0.871049, "entropy_2": 1.0, "jaccard_1": 0.25, "jaccard_2": 0.125,
    "contain_prompt_in_resp": 0.4, "contain_resp_in_prompt": 0.4,
    "contain_prompt_in_resp_2": 0.25, "contain_resp_in_prompt_2": 0.2,
    "flesch_reading_ease": 116.145, "flesch_kincaid_grade": -1.45,
}
EX2_EXPECTED = {
    "resp_chars": 26, "resp_words": 8, "resp_mean_word_len": 2.375, "len_ratio": 0.888889,
    "len_ratio_chars": 0.764706, "ttr": 0.375, "distinct_2": 0.428571, "distinct_3": 0.5,
    "rep_1": 0.625, "rep_2": 0.571429, "entropy_1": 0.520426, "entropy_2": 0.554492,
    "jaccard_1": 0.6, "jaccard_2": 0.5, "contain_resp_in_prompt": 1.0, "contain_prompt_in_resp": 0.6,
    "contain_resp_in_prompt_2": 1.0, "contain_prompt_in_resp_2": 0.5,
    "flesch_reading_ease": 114.115, "flesch_kincaid_grade": -0.67,
}


@pytest.mark.parametrize(("pair", "expected"), [(EX1, EX1_EXPECTED), (EX2, EX2_EXPECTED)], ids=["ex1", "ex2"])
def test_worked_examples_through_the_suite(pair, expected):
    frame = score_texts([pair[0]], [pair[1]], metrics="lexical")
    for column, value in expected.items():
        assert frame[column][0] == pytest.approx(value, abs=1e-6), column


def test_worked_example_variants():
    ex1 = lexical_diversity(EX1[1], variants=True)
    assert ex1["entropy_1_nats"] == pytest.approx(1.560710, abs=1e-6)
    assert ex1["entropy_1_evenness"] == pytest.approx(0.969724, abs=1e-6)
    assert ex1["distinct_2_li"] == pytest.approx(0.833333, abs=1e-6)
    assert ex1["distinct_3_li"] == pytest.approx(0.666667, abs=1e-6)
    ex2 = lexical_diversity(EX2[1], variants=True)
    assert ngram_entropy_nats(EX2[1], 1) == pytest.approx(1.082196, abs=1e-6)
    assert ngram_entropy_nats(EX2[1], 2) == pytest.approx(1.078992, abs=1e-6)
    assert ex2["entropy_1_evenness"] == pytest.approx(0.985057, abs=1e-6)
    assert ex2["entropy_2_evenness"] == pytest.approx(0.982141, abs=1e-6)


def test_broder_resemblance_at_three_sizes():
    p, r = EX2
    assert [jaccard(p, r, n) for n in (1, 2, 3)] == pytest.approx([0.6, 0.5, 0.428571], abs=1e-6)


def test_redundancies_hold_exactly():
    text = "to be or not to be that is the question to be"
    assert type_token_ratio(text) == distinct_n(text, 1)
    for n in (1, 2):
        assert repetition_n(text, n) == pytest.approx(1 - distinct_n(text, n), abs=1e-15)


def test_nan_rules_from_the_spec():
    assert math.isnan(type_token_ratio(""))
    assert math.isnan(distinct_n(["hi"], 2))
    assert math.isnan(repetition_n(["hi"], 2))
    assert math.isnan(ngram_entropy(["hi"], 1))
    assert math.isnan(jaccard([], [], 1))
    assert math.isnan(containment("", "x", 1, direction="prompt_in_resp"))
    assert math.isnan(length_structure("", "x")["len_ratio"])
    assert distinct_n(["hi"], 1) == 1.0
    assert repetition_n(["hi"], 1) == 0.0
    value = ngram_entropy(["a", "a"], 1)
    assert value == 0.0 and math.copysign(1.0, value) == 1.0  # not -0.0


def test_empty_response_against_nonempty_prompt():
    overlap = prompt_overlap("Hi", "")
    assert overlap["jaccard_1"] == 0.0
    assert overlap["contain_prompt_in_resp"] == 0.0
    assert math.isnan(overlap["contain_resp_in_prompt"])
    assert math.isnan(overlap["jaccard_2"])
    assert length_structure("Hi", "")["len_ratio"] == 0.0
    counts = length_structure("Hi", "")
    assert (counts["resp_chars"], counts["resp_words"], counts["resp_sentences"]) == (0, 0, 0)


def test_entropy_is_exactly_one_when_nothing_repeats():
    assert ngram_entropy("one two three four five six seven", 2) == 1.0


def test_functions_accept_text_or_tokens():
    assert distinct_n("The cat sat on the mat.", 1) == distinct_n(["the", "cat", "sat", "on", "the", "mat"], 1)


def test_single_column_metrics_match_the_families_and_spec():
    from tutormetrics.engine import Scorer
    from tutormetrics.metrics import Containment, DistinctN, Jaccard, NGramEntropy, RepetitionN

    p, r = EX2
    assert Jaccard(n=3)(p, r) == pytest.approx(0.428571, abs=1e-6)  # Broder's third size
    frame = score_texts([p], [r], metrics="lexical")
    assert DistinctN(n=3)(r) == frame["distinct_3"][0]
    assert RepetitionN(n=2)(r) == frame["rep_2"][0]
    assert NGramEntropy(n=2)(r) == frame["entropy_2"][0]
    assert Containment(n=2, direction="resp_in_prompt")(p, r) == frame["contain_resp_in_prompt_2"][0]
    custom = Scorer([Jaccard(n=3), DistinctN(n=4)]).score(["x"], [p], [r])
    assert custom.columns[:3] == ["exchange_id", "jaccard_3", "distinct_4"]
    with pytest.raises(Exception, match="n must be a positive integer"):
        Jaccard(n=0)(p, r)


def test_sentence_modes_of_the_length_family():
    from tutormetrics.engine import Scorer
    from tutormetrics.metrics import LengthStructure

    texts = ["Great question! Let's think step by step. What do you already know about fractions?",
             "Look:\n```cpp\nint x = 1;\n```\nDone."]
    def count(**params):
        return Scorer([LengthStructure(**params)]).score(["a", "b"], ["p", "p"], texts)["resp_sentences"].to_list()
    assert count() == [3.0, 4.0]
    assert count(sentence_mode="textstat") == [2.0, 1.0]  # textstat drops segments of <= 2 words
    assert count(strip_code_fences=True) == [3.0, 2.0]
