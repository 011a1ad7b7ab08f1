"""Long texts in bounded memory: token states on disk, greedy matching and coherence in blocks, tokenisation in
segments — each checked against the in-memory, whole-text way it replaces."""

from __future__ import annotations

import json
import pickle
import re
from itertools import pairwise

import numpy as np
import polars as pl
import pytest

from tutormetrics.encoders.config import EncoderConfig
from tutormetrics.encoders.pieces import pieces_in_segments, segment_starts, splits_at_spaces
from tutormetrics.encoders.spill import SpilledTokens, is_spilled, row_blocks
from tutormetrics.metrics.functional import embedding as femb
from tutormetrics.metrics.functional.coherence import sentence_spans, sentence_vectors

HOSTILE = "Ünïcödé\u0301 tëxt\u00a0with\u2028odd\x1cspaces\x85and\tcontrol\x00chars — 数学 題 İstanbul \u200bzero =SUM(A1)"


def _long_text(mrbench_csv, n_chars: int) -> str:
    texts = pl.read_csv(mrbench_csv)["response"].to_list()
    out, n = [], 0
    for t in texts:
        out.append(t)
        n += len(t) + 1
        if n > n_chars:
            break
    return "\n".join(out)


@pytest.fixture(scope="module")
def mrbench_csv(mrbench_dir):
    return mrbench_dir / "exchanges.csv"


# -- SpilledTokens -----------------------------------------------------------------------------------------
def test_spilled_rows_round_trip_exactly_and_pickle_as_arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 7)).astype(np.float32)
    s = SpilledTokens(1000, 7)
    for start in range(0, 1000, 300):
        s.write_rows(start, x[start : start + 300])
    assert np.array_equal(np.asarray(s), x) and s.nbytes == 0 and s.disk_bytes == x.nbytes
    blocks = list(row_blocks(s, 256))
    assert [b0 for b0, _ in blocks] == [0, 256, 512, 768]
    assert np.array_equal(np.concatenate([b for _, b in blocks]), x)
    copy = pickle.loads(pickle.dumps(s))
    assert isinstance(copy, np.ndarray) and np.array_equal(copy, x)
    with pytest.raises(ValueError, match="cannot write"):
        s.write_rows(999, x[:2])


# -- greedy matching in blocks -------------------------------------------------------------------------------
@pytest.mark.parametrize("spill", [False, True])
def test_blocked_greedy_equals_the_full_product(monkeypatch, spill):
    rng = np.random.default_rng(1)
    resp = rng.standard_normal((500, 16)).astype(np.float32)
    prompt = rng.standard_normal((37, 16)).astype(np.float32)
    resp_nan = resp.copy()
    resp_nan[123] = 0.0  # a zero-norm token makes both values NaN, blocked or not
    expected = [femb.greedy_matching(r, prompt) for r in (resp, resp_nan)]
    monkeypatch.setattr(femb, "GREEDY_BLOCK_ELEMENTS", 64)  # blocks of a few rows
    monkeypatch.setattr(femb, "BLOCK_ROWS", 10)
    rs = []
    for dense in (resp, resp_nan):
        r = dense
        if spill:
            r = SpilledTokens(*dense.shape)
            r.write_rows(0, dense)
        rs.append(r)
    p_in = prompt
    if spill:
        p_in = SpilledTokens(*prompt.shape)
        p_in.write_rows(0, prompt)
    prec, rec = femb.greedy_matching_batch(rs, [p_in, p_in], [0, 0])
    np.testing.assert_allclose(prec[0], expected[0][0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(rec[0], expected[0][1], rtol=0, atol=1e-6)
    assert np.isnan(prec[1]) and np.isnan(rec[1]) and np.isnan(expected[1][0])


# -- coherence ------------------------------------------------------------------------------------------------
def _old_sentence_spans(text):
    from tutormetrics.text import split_sentences

    positions = [i for i, ch in enumerate(text) if not ch.isspace()]
    compact = "".join(text[i] for i in positions)
    spans, cursor = [], 0
    for sentence in split_sentences(text):
        needle = "".join(ch for ch in sentence if not ch.isspace())
        if not needle:
            continue
        at = compact.find(needle, cursor)
        if at < 0:
            continue
        spans.append((positions[at], positions[at + len(needle) - 1] + 1))
        cursor = at + len(needle)
    return spans


@pytest.mark.parametrize("text", [HOSTILE, "Good job.  Now   add 2.\n1. Then check.", "", "   ", "a. b? c!\u3000d。e"])
def test_sentence_spans_equal_the_character_scan(text):
    assert sentence_spans(text) == _old_sentence_spans(text)


def test_sentence_spans_on_real_replies(mrbench_csv):
    text = _long_text(mrbench_csv, 40_000)
    assert sentence_spans(text) == _old_sentence_spans(text)


def test_sentence_vectors_by_runs_equal_the_mask_selection():
    rng = np.random.default_rng(2)
    starts = np.sort(rng.integers(0, 400, 120))
    offsets = np.stack([starts, starts + 2], axis=1)
    vectors = rng.standard_normal((120, 5))
    spans = [(0, 37), (37, 90), (95, 96), (96, 300), (300, 401)]
    masks = [(starts >= a) & (starts < b) for a, b in spans]
    expected = np.array([vectors[m].mean(axis=0) for m in masks if m.any()])
    assert np.array_equal(sentence_vectors(vectors, offsets, spans), expected)
    shuffled = rng.permutation(120)  # out of text order: the mask path
    got = sentence_vectors(vectors[shuffled], offsets[shuffled], spans)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# -- tokenisation in segments -----------------------------------------------------------------------------------
def test_segment_starts_cut_before_ascii_after_space():
    text = "word " * 1000 + "ünï " * 10 + "tail"
    starts = segment_starts(text, 100)
    assert starts[0] == 0 and all(text[s - 1] in " \n" and text[s].isascii() and text[s].isalnum() for s in starts[1:])
    assert all(b - a <= 100 for a, b in pairwise(starts))
    assert segment_starts("x" * 500, 100) == [0]  # no place to cut: one segment


def test_segments_tokenise_exactly_as_the_whole_text(mrbench_csv):
    from tutormetrics.encoders.hf import TextEncoder

    enc = TextEncoder(EncoderConfig(device="cpu")).load()
    assert splits_at_spaces(enc.tokenizer)
    text = _long_text(mrbench_csv, 60_000) + "\n" + HOSTILE + " " + HOSTILE.upper() + " end"
    whole = enc._word_pieces([text], return_offsets_mapping=True)
    ids, offsets = pieces_in_segments(enc._word_pieces, text, True, max_chars=997)
    assert len(segment_starts(text, 997)) > 50
    assert ids.tolist() == list(whole["input_ids"][0])
    assert offsets.tolist() == [list(o) for o in whole["offset_mapping"][0]]


def test_byte_level_and_sentencepiece_tokenizers_are_tokenised_whole():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    assert not splits_at_spaces(PreTrainedTokenizerFast(tokenizer_object=bpe))
    sp = Tokenizer(models.WordPiece(vocab={"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    sp.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(" ", "▁")])
    sp.pre_tokenizer = pre_tokenizers.Metaspace()
    assert not splits_at_spaces(PreTrainedTokenizerFast(tokenizer_object=sp))
    wp = Tokenizer(models.WordPiece(vocab={"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer()
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert splits_at_spaces(PreTrainedTokenizerFast(tokenizer_object=wp))
    spec = json.loads(wp.to_str())
    assert spec["pre_tokenizer"]["type"] == "BertPreTokenizer"


# -- the encoder and the suite, spilled or not --------------------------------------------------------------
def _tiny(tiny_model_dir, spill_mb):
    from tutormetrics.encoders.hf import TextEncoder

    return TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", spill_mb=spill_mb))


def _texts():
    words = "the cat sat on the mat and then it ran to the dog . why did it go ? ".split()
    rng = np.random.default_rng(3)
    long = " ".join(rng.choice(words, 700)) + " . " + " ".join(rng.choice(words, 300))
    return ["where did the cat sit ?", long, "the cat sat .", long + " and more", ""]


def test_spilled_encoding_equals_the_in_memory_one(tiny_model_dir):
    texts = _texts()
    mem = _tiny(tiny_model_dir, None).encode(texts, progress=False)
    disk = _tiny(tiny_model_dir, 0).encode(texts, progress=False)
    assert [is_spilled(t) for t in disk.token_states] == [False, True, False, True, False]
    assert not any(is_spilled(t) for t in mem.token_states)
    for name in ("pools", "pools_content", "extrema", "maxima", "minima", "n_content_tokens", "n_windows"):
        assert np.array_equal(getattr(mem, name), getattr(disk, name), equal_nan=True), name
    for a, b in zip(mem.token_states, disk.token_states, strict=True):
        assert np.array_equal(a, np.asarray(b))
    for a, b in zip(mem.token_norms, disk.token_norms, strict=True):
        assert np.array_equal(a, b)
    for a, b in zip(mem.token_offsets, disk.token_offsets, strict=True):
        assert np.array_equal(a, b)


def test_suite_with_spilled_replies_equals_in_memory(tiny_model_dir):
    from tutormetrics.engine.scorer import Scorer

    texts = _texts()
    prompts, responses = [texts[0], texts[1], texts[2], texts[0]], [texts[1], texts[2], texts[3], texts[3]]
    ids = ["a", "b", "c", "d"]
    frames = []
    for spill_mb in (None, 0):
        config = EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", spill_mb=spill_mb)
        scorer = Scorer(["all", "coherence"], encoder=config, progress=False, lang="en")
        frames.append(scorer.score(ids, prompts, responses))
    mem, disk = frames
    assert mem.columns == disk.columns
    for c in mem.columns[1:]:
        a, b = mem[c].to_numpy(), disk[c].to_numpy()
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-6, err_msg=c)
        else:
            assert (a == b).all(), c
    assert np.isfinite(disk["resp_coherence"].to_numpy()[[0, 2]]).all()


def test_text_cache_keeps_no_spilled_entry(tiny_model_dir):
    from tutormetrics.engine.text_cache import TextCache

    enc = _tiny(tiny_model_dir, 0)
    cache = TextCache(2**30, enc.config.fingerprint())
    texts = _texts()[:3]
    values, seen, new_keys, fresh = cache.encode(texts, lambda t: enc.encode(t, progress=False))
    assert len(values) == 3 and is_spilled(values.token_states[1])
    assert len(cache) == 2 and cache.key(texts[1]) not in cache
    assert seen == [cache.key(texts[0]), cache.key(texts[2])] == new_keys
    assert len(fresh) == 2 and not any(is_spilled(t) for t in fresh.token_states)
    replayed = TextCache(2**30, enc.config.fingerprint())
    replayed.replay([(seen, new_keys, fresh)])
    assert list(replayed._entries) == list(cache._entries)


def test_spill_mb_is_checked_and_not_in_the_fingerprint():
    assert EncoderConfig(spill_mb=1).fingerprint() == EncoderConfig(spill_mb=None).fingerprint()
    with pytest.raises(Exception, match="spill_mb"):
        EncoderConfig(spill_mb=-1)
    assert re.search("spill_mb", EncoderConfig.__doc__)
