"""One conformance suite over every registered metric family (built-in or plugged in).

Checks: declared columns == returned columns; NaN rules on empty input; documented ranges;
permutation invariance with >= 3 texts of distinct, non-monotone lengths (the sort permutation
[1, 2, 0] is not an involution, so a forward-permutation "restore" bug would show, metrics.md §9.3);
batch-composition invariance (chunking and encoder batch size); determinism; get_params round trip.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from tutormetrics.engine import Scorer
from tutormetrics.metrics import REGISTRY

COUNT_COLUMNS = {"resp_chars", "resp_words", "resp_sentences", "resp_sentence_equiv", "resp_questions"}  # 0, never NaN

# Prompts and responses in *different* length orders; lengths are distinct and non-monotone.
PROMPTS = [
    "where did the cat sit",  # 5 words
    "what is two plus four",  # 5 words, repeated below (dedupe path)
    "why is it half of the number? think step by step, we can add it again. is it two?",
    "the cat",
    "what is two plus four",
]
RESPONSES = [
    "the cat sat on the mat. good question!",
    "it is two plus four because you add",
    "yes",
    "can you try again? think of the fraction: half the number, then add two. what is it?",
    "no",
]
IDS = [f"ex{i}" for i in range(len(PROMPTS))]
#: One text per exchange for every aux name a family reads (``Metric.aux_texts``), e.g. a dialogue's previous
#: student turn; ``None`` = the exchange has none.
AUX_TEXTS = ["is the cat on the mat?", None, "half of it, then two", "", "what is two plus four"]


def score(scorer: Scorer, order=None, ids=IDS, prompts=PROMPTS, responses=RESPONSES, aux_texts=AUX_TEXTS):
    """``scorer.score`` of the exchanges in ``order``, with the aux texts its families read."""
    order = range(len(ids)) if order is None else order
    names = {a for f in scorer.families for a in f.aux_texts}
    aux = {a: [aux_texts[i] for i in order] for a in names} or None
    return scorer.score([ids[i] for i in order], [prompts[i] for i in order], [responses[i] for i in order], aux)


#: Families whose defaults leave every column NaN on these short texts get short-text settings here
#: (MATTR's 50-token window and HD-D's 42 draws exceed every response above).
SHORT_TEXT_PARAMS: dict[str, dict] = {"lexical_richness": {"mattr_window": 5, "hdd_draws": 5}}


def family_params():
    return [pytest.param(name, id=name) for name in REGISTRY.names()]


@pytest.fixture
def make_scorer(request):
    def make(name: str, **kwargs) -> Scorer:
        cls = REGISTRY.get_class(name)
        encoder = None
        if "encoder" in cls.requires:
            from tutormetrics.encoders.hf import EncoderConfig

            model_dir = request.getfixturevalue("tiny_model_dir")
            encoder = EncoderConfig(model_name_or_path=str(model_dir), batch_size=kwargs.pop("batch_size", 4))
        return Scorer([cls(**SHORT_TEXT_PARAMS.get(name, {}))], encoder=encoder, progress=False, **kwargs)

    return make


def as_dict(frame) -> dict[str, dict[str, float]]:
    cols = [c for c in frame.columns if c != "exchange_id"]
    return {row["exchange_id"]: {c: row[c] for c in cols} for row in frame.iter_rows(named=True)}


def assert_same(a: dict, b: dict, tol: float) -> None:
    assert a.keys() == b.keys()
    for key in a:
        for col, va in a[key].items():
            vb = b[key][col]
            if isinstance(va, float) and math.isnan(va):
                assert isinstance(vb, float) and math.isnan(vb), (key, col)
            else:
                assert vb == pytest.approx(va, abs=tol), (key, col)


@pytest.mark.parametrize("name", family_params())
def test_declared_columns_are_returned_and_well_named(name, make_scorer):
    scorer = make_scorer(name)
    frame = score(scorer)
    declared = scorer.metric_columns()
    assert len(declared) == len(set(declared))
    assert [c for c in frame.columns if c in declared] == declared
    for col in declared:
        assert col.islower() and " " not in col
        assert frame[col].dtype.is_float()


@pytest.mark.parametrize("name", family_params())
def test_values_lie_in_documented_ranges(name, make_scorer):
    scorer = make_scorer(name)
    frame = score(scorer)
    n_layers = scorer.n_layers
    for family in scorer.families:
        for col, (lo, hi) in family.column_ranges(n_layers).items():
            values = frame[col].to_numpy()
            defined = values[~np.isnan(values)]
            assert defined.size, f"{col} is NaN everywhere on ordinary text"
            assert np.all(defined >= lo - 1e-6) and np.all(defined <= hi + 1e-6), col
            assert not np.any(np.signbit(values[values == 0])), f"{col} has -0.0"


@pytest.mark.parametrize("name", family_params())
def test_empty_exchange_is_nan_except_counts(name, make_scorer):
    frame = score(make_scorer(name), ids=["e"], prompts=[""], responses=["   "], aux_texts=[""])
    assert frame["prompt_empty"][0] is True and frame["resp_empty"][0] is True
    assert frame["lang"][0] == "und"  # languages.md §3: no tokens
    for col in frame.columns:
        if col in ("exchange_id", "lang") or col.endswith(("_windows", "_truncated", "_empty")):
            continue
        value = frame[col][0]
        if col in COUNT_COLUMNS:
            assert value == 0.0, col
        else:
            assert math.isnan(value), col


@pytest.mark.parametrize("name", family_params())
def test_permutation_invariance(name, make_scorer):
    scorer = make_scorer(name)
    base = as_dict(score(scorer))
    for perm in ([1, 2, 0, 4, 3], [3, 0, 4, 2, 1]):
        permuted = score(scorer, perm)
        assert permuted["exchange_id"].to_list() == [IDS[i] for i in perm]  # rows keep input order
        assert_same(base, as_dict(permuted), 1e-6)


@pytest.mark.parametrize("name", family_params())
def test_batch_composition_invariance(name, make_scorer):
    together = as_dict(score(make_scorer(name, chunk_size=1000)))
    alone = as_dict(score(make_scorer(name, chunk_size=1)))
    assert_same(together, alone, 1e-5)
    if "encoder" in REGISTRY.get_class(name).requires:
        for batch_size in (1, 7):
            other = as_dict(score(make_scorer(name, batch_size=batch_size)))
            assert_same(together, other, 1e-5)


@pytest.mark.parametrize("name", family_params())
def test_deterministic(name, make_scorer):
    scorer = make_scorer(name)
    first = as_dict(score(scorer))
    assert_same(first, as_dict(score(scorer)), 0.0)


#: A valid non-default value for every parameter of every built-in family that has parameters, so the
#: round trip cannot pass by falling back on defaults.
NON_DEFAULT_PARAMS: dict[str, dict[str, object]] = {
    "length": {"sentence_mode": "textstat", "strip_code_fences": True, "chars_per_sentence": 40.0, "concision_bands": (2.0, 5.0)},
    "lexical_diversity": {"variants": True},
    "lexical_richness": {"mtld_threshold": 0.8, "mattr_window": 10, "hdd_draws": 10},
    "readability": {"syllables": "pyphen"},
    "layerwise_synchrony": {"exclude_special": True},
    "distinct_n": {"n": 3},
    "repetition_n": {"n": 2},
    "ngram_entropy": {"n": 3},
    "jaccard": {"n": 2},
    "containment": {"n": 2, "direction": "resp_in_prompt"},
    "dialogue_turn": {"encoder": True},
}


@pytest.mark.parametrize("name", family_params())
def test_params_round_trip_and_pickle(name):
    defaults = REGISTRY.get(name).get_params()
    if not defaults:
        params: dict[str, object] = {}
    elif name in NON_DEFAULT_PARAMS:
        params = NON_DEFAULT_PARAMS[name]
        assert set(params) == set(defaults), "give a non-default value for every parameter"
        assert all(params[k] != defaults[k] for k in params), "the values must differ from the defaults"
    else:
        pytest.skip(f"plugged-in family {name!r} has parameters without known non-default values")
    metric = REGISTRY.get_class(name)(**params)
    assert metric.get_params() == params
    clone = type(metric)(**metric.get_params())
    assert clone.get_params() == params
    assert clone.columns(6) == metric.columns(6)
    restored = pickle.loads(pickle.dumps(metric))
    assert restored.get_params() == params and type(restored) is type(metric)
    if "encoder" not in metric.requires:  # the parameters are the whole state: the copies score alike
        first = as_dict(score(Scorer([metric], progress=False)))
        for copy in (clone, restored):
            assert_same(first, as_dict(score(Scorer([copy], progress=False))), 0.0)
    assert isinstance(metric.description, str) and metric.description
    assert metric.higher_is_better in (True, False, None)


#: Replies that give every parameter something to act on: a code fence (strip_code_fences), an abbreviation and
#: several sentences (sentence_mode), one reply over 10 tokens (MATTR's and HD-D's non-default windows), repeats,
#: and 264 characters (2.64 sentence-equivalents: concision band 1 at FULL = 2, band 2 at the default 3).
SENSITIVE_RESPONSES = [
    "Try this:\n```python\nx = half(n) + 2\n```\nDoes it run? e.g. with n = 4 it gives four, so check it again.",
    "the cat sat on the mat. the cat sat on the mat again and again, then the cat sat down. " * 3,  # 264 chars
    "yes",
    "can you try again? think of the fraction: half the number, then add two. what is it? is it two or four?",
    "no",
]


def _single_parameter_changes() -> list:
    cases = []
    for name, params in NON_DEFAULT_PARAMS.items():
        for key, value in params.items():
            cases.append(pytest.param(name, key, value, id=f"{name}.{key}"))
    return cases


@pytest.mark.parametrize(("name", "key", "value"), _single_parameter_changes())
def test_each_non_default_parameter_changes_an_output(name, key, value, request):
    """Setting one parameter to its non-default value changes at least one number or column: a parameter that is
    accepted, stored and round-tripped but never reaches the computation fails here."""
    cls = REGISTRY.get_class(name)
    default = cls()
    variant = cls(**{key: value})
    encoder = None
    if "encoder" in default.requires | variant.requires:
        from tutormetrics.encoders.hf import EncoderConfig

        encoder = EncoderConfig(model_name_or_path=str(request.getfixturevalue("tiny_model_dir")), batch_size=4)

    def run(metric):
        return score(Scorer([metric], encoder=encoder, progress=False), responses=SENSITIVE_RESPONSES)

    base, changed = run(default), run(variant)
    if base.columns != changed.columns:
        return
    a, b = as_dict(base), as_dict(changed)
    differs = [
        (i, c) for i in a for c in a[i]
        if not (a[i][c] == b[i][c] or (isinstance(a[i][c], float) and isinstance(b[i][c], float) and math.isnan(a[i][c]) and math.isnan(b[i][c])))
    ]
    assert differs, f"{name}.{key}={value!r} changed no output"
