"""resp_coherence: the value against a hand-built reference on the tiny BERT, the window and truncate
cases, one encoder pass shared with the other encoder families, and the sentence spans."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch

from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.engine import Scorer
from tutormetrics.metrics.coherence import Coherence, coherence_texts
from tutormetrics.metrics.functional.coherence import consecutive_cosine, sentence_spans

THREE = "the cat sat on the mat. good question! what is two plus four?"
ONE = "the cat sat on the mat"
# 8 sentences × 7 pieces = 56 pieces: two windows of 30 with the tiny model; sentence 5 straddles the cut
LONG = " ".join(["the cat sat on the mat."] * 4 + ["why did the cat sit."] + ["good question, add two."] * 3)


def _encoder(model_dir: Path, **kw) -> TextEncoder:
    return TextEncoder(EncoderConfig(model_name_or_path=str(model_dir), device="cpu", batch_size=4, **kw))


def _reference(st, text: str, sentences: list[str], window: int = 30, truncate: bool = False) -> float:
    """Independent: HF forward per window of ≤30 pieces in [CLS] … [SEP], last layer, spans by str.find."""
    tok, model = st.tokenizer, st[0].auto_model
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offs = enc["input_ids"], enc["offset_mapping"]
    chunks = [ids[i : i + window] for i in range(0, len(ids), window)]
    if truncate:
        chunks = chunks[:1]
    states = []
    with torch.inference_mode():
        for c in chunks:
            x = torch.tensor([[tok.cls_token_id, *c, tok.sep_token_id]])
            out = model(input_ids=x, attention_mask=torch.ones_like(x), token_type_ids=torch.zeros_like(x))
            states.append(out.last_hidden_state[0, 1:-1].double().numpy())
    vecs = np.concatenate(states)
    starts = np.array([a for a, _ in offs[: len(vecs)]])
    spans, cursor = [], 0
    for s in sentences:
        a = text.index(s, cursor)
        spans.append((a, a + len(s)))
        cursor = a + len(s)
    sent = [vecs[(starts >= a) & (starts < b)].mean(axis=0) for a, b in spans if ((starts >= a) & (starts < b)).any()]
    cos = [float(u @ v / np.linalg.norm(u) / np.linalg.norm(v)) for u, v in pairwise(sent)]
    return float(np.mean(cos)) if cos else math.nan


def _score(model_dir, responses, **kw):
    scorer = Scorer([Coherence()], encoder=_encoder(model_dir, **kw), progress=False)
    return scorer.score([f"e{i}" for i in range(len(responses))], ["what is two plus four"] * len(responses), responses)


def test_value_equals_reference(tiny_model_dir, tiny_st):
    frame = _score(tiny_model_dir, [THREE, ONE, "", "good. good."])
    ref = _reference(tiny_st, THREE, ["the cat sat on the mat.", "good question!", "what is two plus four?"])
    assert frame["resp_coherence"][0] == pytest.approx(ref, abs=1e-5)
    assert math.isnan(frame["resp_coherence"][1]) and math.isnan(frame["resp_coherence"][2])
    assert -1 <= frame["resp_coherence"][3] <= 1


def test_window_case_pools_pieces_of_both_windows(tiny_model_dir, tiny_st):
    sentences = ["the cat sat on the mat."] * 4 + ["why did the cat sit."] + ["good question, add two."] * 3
    frame = _score(tiny_model_dir, [LONG])
    assert frame["resp_coherence"][0] == pytest.approx(_reference(tiny_st, LONG, sentences), abs=1e-5)
    # truncate mode: only the first 30 pieces exist; sentences after the cut drop out
    cut = _score(tiny_model_dir, [LONG], long_text="truncate")
    expected = _reference(tiny_st, LONG, sentences, truncate=True)
    assert cut["resp_coherence"][0] == pytest.approx(expected, abs=1e-5)
    assert cut["resp_coherence"][0] != pytest.approx(frame["resp_coherence"][0], abs=1e-3)


def test_no_extra_forward_pass(tiny_model_dir):
    responses = [THREE, LONG, ONE, THREE]
    prompts = ["what is two plus four", "why did the cat sit", "the cat", "what is two plus four"]
    ids = [f"e{i}" for i in range(4)]
    alone, together = _encoder(tiny_model_dir), _encoder(tiny_model_dir)
    Scorer(["embedding_similarity"], encoder=alone, progress=False).score(ids, prompts, responses)
    frame = Scorer(["embedding_similarity", "coherence"], encoder=together, progress=False).score(ids, prompts, responses)
    assert together.forward_calls == alone.forward_calls > 0
    assert together.texts_encoded == alone.texts_encoded == 6  # 3 unique prompts + 3 unique responses
    assert together.windows_encoded == alone.windows_encoded
    assert frame["resp_coherence"].is_not_nan().sum() == 3


def test_encoder_artifact_offsets_and_norms(tiny_model_dir):
    enc = _encoder(tiny_model_dir).encode([THREE, "", LONG])
    assert enc.token_offsets is not None and enc.token_norms is not None
    for i in range(3):  # THREE, "", LONG
        assert enc.token_offsets[i].shape == (enc.n_content_tokens[i], 2)
        assert enc.token_norms[i].shape == (enc.n_content_tokens[i],)
    assert [THREE[a:b] for a, b in enc.token_offsets[0][:3]] == ["the", "cat", "sat"]
    sub = enc.subset([2, 0])
    np.testing.assert_array_equal(sub.token_offsets[1], enc.token_offsets[0])
    both = type(enc).concat([enc, sub])
    assert len(both.token_norms) == 5


def test_reasons_and_standalone(tiny_model_dir):
    scorer = Scorer([Coherence()], encoder=_encoder(tiny_model_dir), progress=False)
    scorer.score(["a", "b", "c"], ["the cat"] * 3, [THREE, ONE, " "])
    assert scorer.stats.nan_reasons == {"resp_coherence": {"one_sentence": 1, "empty": 1}}
    out = coherence_texts([THREE, ONE], encoder=_encoder(tiny_model_dir))
    assert not math.isnan(out[0]) and math.isnan(out[1])


def test_sentence_spans_follow_s():
    t = "1. Add the tens.\n2. Then   the ones!\n\nDr. Smith said so. Done"
    assert [t[a:b] for a, b in sentence_spans(t)] == ["Add the tens.", "Then   the ones!", "Dr. Smith said so.", "Done"]
    assert sentence_spans("") == [] and sentence_spans("?!") == []


def test_consecutive_cosine_rules():
    assert math.isnan(consecutive_cosine(np.ones((1, 3))))
    assert math.isnan(consecutive_cosine(np.zeros((3, 2))))
    assert math.isnan(consecutive_cosine(np.array([[1.0, 0], [0, 0], [1, 0]])))  # no pair without a zero row
    assert consecutive_cosine(np.array([[1.0, 0], [0, 0], [1, 0], [1, 0]])) == 1.0
