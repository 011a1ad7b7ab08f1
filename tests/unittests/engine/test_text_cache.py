"""The text cache across chunks: each unique text is encoded once per run, eviction changes no number, and a
resumed run replays the checkpointed cache instead of encoding again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.engine.scorer import Scorer
from tutormetrics.engine.text_cache import TextCache, load_delta, save_delta

PROMPTS = ["where did the cat sit", "what is two plus four", "why is it half"]
RESPONSES = ["the cat sat on the mat", "good question", "try again", "it is two", "yes", "no we add it"]


def _rows(n: int = 24) -> tuple[list[str], list[str], list[str]]:
    """Every 3 rows share a prompt, and prompts come back in later chunks; responses repeat too."""
    ids = [f"e{i}" for i in range(n)]
    prompts = [PROMPTS[(i // 3) % len(PROMPTS)] for i in range(n)]
    responses = [RESPONSES[(i * 5) % len(RESPONSES)] + (" step" * (i % 4)) for i in range(n)]
    return ids, prompts, responses


def _scorer(tiny_model_dir: Path, **kw) -> Scorer:
    from tutormetrics.encoders.config import EncoderConfig

    enc = EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", batch_size=4)
    return Scorer(["overlap", "embedding_similarity"], encoder=enc, progress=False, **kw)


def test_each_unique_text_is_encoded_once_across_chunks(tiny_model_dir):
    ids, prompts, responses = _rows()
    n_unique = len(set(prompts) | set(responses))
    cached = _scorer(tiny_model_dir, chunk_size=4)
    out = cached.score(ids, prompts, responses)
    assert cached.encoder.texts_encoded == n_unique  # the forward passes saw each text once
    uncached = _scorer(tiny_model_dir, chunk_size=4, cache_mb=0)
    ref = uncached.score(ids, prompts, responses)
    assert uncached.encoder.texts_encoded > n_unique  # without the cache shared texts come back per chunk
    info = cached.manifest()["text_cache"]
    assert info["texts_encoded"] == n_unique and info["evictions"] == 0
    # the 6 chunks of 4 lie in one encode-ahead window (2048 rows): its texts are encoded up front, in one
    # pass, and every chunk's own lookups are then served from the cache
    assert cached.encode_ahead == 512 and info["texts_from_cache"] == cached.stats.n_encoded_texts
    assert "text_cache" not in uncached.manifest()
    assert out["jaccard_1"].to_list() == ref["jaccard_1"].to_list()
    np.testing.assert_allclose(out["emb_mean_cos"].to_numpy(), ref["emb_mean_cos"].to_numpy(), atol=1e-6)
    np.testing.assert_allclose(out["emb_greedy_f1"].to_numpy(), ref["emb_greedy_f1"].to_numpy(), atol=1e-6)


def test_lru_eviction_under_a_tiny_budget_gives_the_same_numbers(tiny_model_dir):
    ids, prompts, responses = _rows()
    big = _scorer(tiny_model_dir, chunk_size=4)
    ref = big.score(ids, prompts, responses)
    tiny = _scorer(tiny_model_dir, chunk_size=4, cache_mb=0.004)  # ~4 KiB: two or three entries
    out = tiny.score(ids, prompts, responses)
    info = tiny.manifest()["text_cache"]
    assert info["evictions"] > 0 and info["peak_mb"] <= 0.004 + 0.002
    assert tiny.encoder.texts_encoded > big.encoder.texts_encoded
    assert out.columns == ref.columns and out["exchange_id"].to_list() == ids
    for col in ref.columns[1:]:
        a, b = out[col].to_numpy(), ref[col].to_numpy()
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, atol=1e-6, equal_nan=True)
        else:
            assert a.tolist() == b.tolist()


def test_lru_order_and_budget():
    from tutormetrics.encoders.artifacts import EncodedTexts

    def fake(texts: list[str]) -> EncodedTexts:
        e = EncodedTexts.empty_like(1, 2, len(texts))
        e.n_content_tokens[:] = [len(t) for t in texts]
        return e

    one = EncodedTexts.empty_like(1, 2, 1)
    from tutormetrics.engine.text_cache import entry_nbytes

    cache = TextCache(budget_bytes=2 * entry_nbytes(one), fingerprint="fp")
    cache.encode(["a", "b"], fake)
    cache.encode(["a"], fake)  # a is now the most recent
    _, _, new_keys, _ = cache.encode(["c"], fake)  # evicts b, the least recently used
    assert cache.key("a") in cache and cache.key("b") not in cache and new_keys == [cache.key("c")]
    assert cache.counts.evictions == 1 and cache.counts.texts_from_cache == 1 and cache.counts.texts_encoded == 3
    assert TextCache(10**6, "other").key("a") != cache.key("a")  # the encoder fingerprint is part of the key


def test_delta_round_trip_and_replay(tiny_model_dir, tmp_path):
    s = _scorer(tiny_model_dir)
    cache = s.text_cache
    _, keys, new_keys, fresh = cache.encode(["the cat", "", "a mat"], s.encoder.encode)
    _, keys1, new1, fresh1 = cache.encode(["the cat", "on it"], s.encoder.encode)
    save_delta(tmp_path / "d.npz", [(keys, new_keys, fresh), (keys1, new1, fresh1)])
    ops = load_delta(tmp_path / "d.npz")
    (k2, n2, back), (k3, n3, back1) = ops
    assert k2 == keys and n2 == new_keys and back is not None and k3 == keys1 and n3 == [cache.key("on it")]
    assert len(back1) == 1
    for name in ("pools", "extrema", "n_windows", "maxima"):
        np.testing.assert_array_equal(getattr(back, name), getattr(fresh, name), err_msg=name)
    for a, b in zip(back.token_states, fresh.token_states, strict=True):
        np.testing.assert_array_equal(a, b)
    other = TextCache(cache.budget_bytes, cache.fingerprint)
    other.replay(ops)
    assert len(other) == 4 and other.counts.texts_replayed == 4
    assert list(other._entries) == list(cache._entries)  # the same least-recently-used order
    with pytest.raises(KeyError):
        TextCache(10**6, "fp").replay([(keys, [], None)])


@pytest.mark.parametrize("ahead_rows", [2048, 8])
@pytest.mark.parametrize("damage", [False, True])
def test_resume_replays_the_checkpointed_cache(tiny_model_dir, tmp_path, monkeypatch, ahead_rows, damage):
    """Byte-identical after a resume, with one encode-ahead window or windows of 2 chunks, also when a
    checkpointed chunk in the middle failed verification and was recomputed."""
    from tutormetrics.engine.checkpoint import Checkpoint

    monkeypatch.setattr(Scorer, "ENCODE_AHEAD_ROWS", ahead_rows)
    ids, prompts, responses = _rows()
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ids, "prompt": prompts, "response": responses}).write_csv(src)
    opts = {"metrics": "overlap,embedding_similarity", "model_name_or_path": str(tiny_model_dir), "device": "cpu",
            "batch_size": 4, "chunk_size": 4, "progress": False}
    ref = tmp_path / "ref.csv"
    score_file(src, ref, ScoreOptions(**opts))
    real, calls = Checkpoint.save, {"n": 0}

    def save(self, *a, **k):
        if calls["n"] == 3:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(self, *a, **k)

    monkeypatch.setattr(Checkpoint, "save", save)
    out = tmp_path / "m.csv"
    with pytest.raises(KeyboardInterrupt):
        score_file(src, out, ScoreOptions(**opts))
    monkeypatch.setattr(Checkpoint, "save", real)
    partial = tmp_path / "m.csv.partial"
    assert len(list(partial.glob("cache-*.npz"))) == 3
    if damage:
        data = bytearray((partial / "cache-000001.npz").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (partial / "cache-000001.npz").write_bytes(bytes(data))
    logs: list[str] = []
    score_file(src, out, ScoreOptions(**opts), log=logs.append)
    want = "resuming: 2 verified" if damage else "resuming: 3 verified"
    assert any(want in m for m in logs), logs
    assert out.read_bytes() == ref.read_bytes()
    a = json.loads((tmp_path / "m.csv.manifest.json").read_text())
    b = json.loads((tmp_path / "ref.csv.manifest.json").read_text())
    assert a["stats"] == b["stats"]
    assert a["text_cache"]["texts_restored_from_checkpoint"] > 0
    # restored + encoded now = what the uninterrupted run encoded (minus what it had evicted: nothing here)
    assert a["text_cache"]["texts_restored_from_checkpoint"] + a["text_cache"]["texts_encoded"] == b["text_cache"]["texts_encoded"]


def test_cache_mb_must_not_be_negative():
    from tutormetrics.errors import ConfigError

    with pytest.raises(ConfigError):
        Scorer(["overlap"], cache_mb=-1)
