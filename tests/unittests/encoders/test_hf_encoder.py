"""TextEncoder on a tiny random BERT: windowing, truncation, order and batch invariance, NaN rules."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.engine.run_warnings import long_text_warning
from tutormetrics.errors import ConfigError, ModelLoadError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch
from tutormetrics.metrics.embedding import EmbeddingSimilarity, embedding_similarity_texts, window_diagnostics
from tutormetrics.metrics.functional.embedding import EMBEDDING_COLUMNS, extrema_vector
from tutormetrics.metrics.synchrony import LayerwiseSynchrony, layerwise_synchrony_texts

# Token lengths with the tiny vocabulary (one piece per listed word).
T3 = "the cat sat"  # 3
T1 = "cat"  # 1
T2 = "good question"  # 2
T4 = "what is two plus"  # 4
T5 = "why did the cat sit"  # 5
LONG = " ".join(["the cat sat on the mat"] * 3) + " good"  # 19 pieces


def make_encoder(model_dir: Path, **kw: object) -> TextEncoder:
    return TextEncoder(EncoderConfig(model_name_or_path=str(model_dir), device="cpu", **kw))


def score_all(encoded: EncodedTexts, texts: list[str], prompts: list[str], responses: list[str]) -> dict:
    pos = {t: i for i, t in enumerate(texts)}
    batch = ExchangeBatch(
        ids=tuple(str(i) for i in range(len(prompts))),
        prompt_idx=np.array([pos[p] for p in prompts]),
        response_idx=np.array([pos[r] for r in responses]),
    )
    art = Artifacts(texts=texts, encoded=encoded)
    out = EmbeddingSimilarity().score(batch, art)
    out.update(LayerwiseSynchrony().score(batch, art))
    return out


def assert_encoded_close(a: EncodedTexts, b: EncodedTexts, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(a.pools, b.pools, atol=atol, equal_nan=True)
    np.testing.assert_allclose(a.pools_content, b.pools_content, atol=atol, equal_nan=True)
    np.testing.assert_allclose(a.extrema, b.extrema, atol=atol, equal_nan=True)
    assert len(a.token_states) == len(b.token_states)
    for x, y in zip(a.token_states, b.token_states, strict=True):
        np.testing.assert_allclose(x, y, atol=atol)
    np.testing.assert_array_equal(a.n_windows, b.n_windows)
    np.testing.assert_array_equal(a.n_content_tokens, b.n_content_tokens)
    np.testing.assert_array_equal(a.truncated, b.truncated)


@pytest.fixture(scope="module")
def encoder(tiny_model_dir: Path) -> TextEncoder:
    return make_encoder(tiny_model_dir).load()


def test_token_lengths_of_fixture_texts(encoder: TextEncoder) -> None:
    assert [len(x) for x in encoder.tokenize([T3, T1, T2, T4, T5, LONG])] == [3, 1, 2, 4, 5, 19]


def test_shapes_and_fields(encoder: TextEncoder) -> None:
    out = encoder.encode([T3, T1], progress=False)
    L, d = encoder.n_layers, encoder.hidden_size
    assert (L, d, encoder.max_seq_length) == (2, 32, 32)
    assert out.pools.shape == (2, L + 1, d) and out.pools.dtype == np.float32
    assert out.pools_content.shape == (2, L + 1, d) and out.extrema.shape == (2, d)
    assert [t.shape for t in out.token_states] == [(3, d), (1, d)]
    np.testing.assert_allclose(next(np.linalg.norm(t, axis=1) for t in out.token_states), 1.0, atol=1e-6)
    np.testing.assert_array_equal(out.n_windows, [1, 1])
    np.testing.assert_array_equal(out.n_content_tokens, [3, 1])


def test_mean_pool_equals_sentence_transformers_encode(encoder: TextEncoder, tiny_st) -> None:
    texts = [T3, T1, T2, T4, T5, LONG]
    ours = encoder.encode(texts, progress=False).pools[:, encoder.n_layers]
    ref = tiny_st.encode(texts, convert_to_numpy=True, batch_size=4)
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def _reference_windows(model_dir: Path, ids: list[int], w: int) -> dict[str, np.ndarray]:
    """Encode each window separately with the plain HF model and combine by hand (metrics.md Ex5)."""
    from transformers import AutoTokenizer, BertModel

    model = BertModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    sums, sums_c, counts, counts_c, content = [], [], [], [], []
    for s in range(0, len(ids), w):
        chunk = ids[s : s + w]
        x = torch.tensor([[tok.cls_token_id, *chunk, tok.sep_token_id]])
        with torch.inference_mode():
            hs = torch.stack(model(input_ids=x, output_hidden_states=True).hidden_states)[:, 0].double().numpy()
        sums.append(hs.sum(axis=1))  # (L+1, d), CLS/SEP included
        sums_c.append(hs[:, 1:-1].sum(axis=1))
        counts.append(len(chunk) + 2)
        counts_c.append(len(chunk))
        content.append(hs[-1, 1:-1])
    tokens = np.concatenate(content)
    return {
        "pool": np.sum(sums, axis=0) / np.sum(counts),
        "pool_content": np.sum(sums_c, axis=0) / np.sum(counts_c),
        "extrema": extrema_vector(tokens),
        "tokens": tokens / np.linalg.norm(tokens, axis=1, keepdims=True),
        "n_windows": len(counts),
    }


@pytest.mark.parametrize(
    ("batch_size", "batch_tokens", "forward_calls"),
    [(1, 6, 6), (1, None, 2), (32, None, 1)],  # CPU budget batch_size × 32: 32 tokens hold 5 windows of 6, 1,024 all
)
def test_windowing_equals_hand_weighted_pool(tiny_model_dir: Path, batch_size: int, batch_tokens, forward_calls) -> None:
    enc = make_encoder(tiny_model_dir, max_seq_length=6, batch_size=batch_size, batch_tokens=batch_tokens)  # 4 content tokens a window
    out = enc.encode([LONG, T2], progress=False)
    ids = enc.tokenize([LONG])[0]
    ref = _reference_windows(tiny_model_dir, ids, w=4)
    assert ref["n_windows"] == 5
    np.testing.assert_array_equal(out.n_windows, [5, 1])
    assert not out.truncated.any()
    np.testing.assert_allclose(out.pools[0], ref["pool"], atol=1e-5)
    np.testing.assert_allclose(out.pools_content[0], ref["pool_content"], atol=1e-5)
    np.testing.assert_allclose(out.extrema[0], ref["extrema"], atol=1e-5)
    np.testing.assert_allclose(out.token_states[0], ref["tokens"], atol=1e-5)
    assert out.n_content_tokens[0] == 19 and out.n_windowed == 1
    assert enc.windows_encoded == 6 and enc.texts_encoded == 2
    assert enc.forward_calls == forward_calls
    msg = long_text_warning(out.n_windowed, len(out), enc.max_seq_length, enc.config.long_text)
    assert msg == "1 of 2 unique texts exceeded max_seq_length=6 and were windowed"


def test_truncate_mode_equals_sentence_transformers_encode(tiny_model_dir: Path, tiny_st) -> None:
    enc = make_encoder(tiny_model_dir, max_seq_length=8, long_text="truncate")
    texts = [LONG, T3, T5, "two plus four is what " * 2]
    out = enc.encode(texts, progress=False)
    old = tiny_st.max_seq_length
    try:
        tiny_st.max_seq_length = 8
        ref = tiny_st.encode(texts, convert_to_numpy=True)
    finally:
        tiny_st.max_seq_length = old
    np.testing.assert_allclose(out.pools[:, enc.n_layers], ref, atol=1e-6)
    np.testing.assert_array_equal(out.truncated, [True, False, False, True])
    np.testing.assert_array_equal(out.n_windows, [1, 1, 1, 1])
    np.testing.assert_array_equal(out.n_content_tokens, [6, 3, 5, 6])
    msg = long_text_warning(out.n_truncated, len(out), enc.max_seq_length, enc.config.long_text)
    assert msg == "2 of 4 unique texts exceeded max_seq_length=8 and were truncated"


def test_permutation_invariance_non_involution(encoder: TextEncoder, tiny_model_dir: Path) -> None:
    # metrics.md §9.3: prompts of [3, 1, 2] tokens, responses of [3, 1, 4] (a different length order),
    # pairs 0 and 1 identical. The longest-first permutation of the unique texts must not be an
    # involution, or a forward-permutation "restore" would go unnoticed.
    prompts = [T3, T1, T2]
    responses = [T3, T1, T4]
    texts = [T3, T1, T2, T4]
    order = np.argsort(-np.array([len(x) for x in encoder.tokenize(texts)]), kind="stable")
    assert not np.array_equal(order[order], np.arange(len(texts)))
    base = score_all(encoder.encode(texts, progress=False), texts, prompts, responses)
    for col in ("emb_mean_cos", "emb_extrema_cos", "emb_greedy", "emb_greedy_f1", "sync_last", "sync_mean"):
        np.testing.assert_allclose(base[col][:2], 1.0, atol=1e-5, err_msg=col)
        assert base[col][2] < 1 - 1e-4, col
    # Solo encodings are the ground truth for every text.
    solo = EncodedTexts.concat([encoder.with_options(batch_size=1).encode([t], progress=False) for t in texts])
    assert_encoded_close(encoder.encode(texts, progress=False), solo)
    # Any order of the unique texts and of the exchanges gives the same values per exchange.
    for perm in ([2, 0, 3, 1], [1, 2, 0, 3], [3, 2, 1, 0]):
        texts_p = [texts[i] for i in perm]
        ex_perm = [2, 0, 1]
        out = score_all(
            encoder.encode(texts_p, progress=False),
            texts_p,
            [prompts[i] for i in ex_perm],
            [responses[i] for i in ex_perm],
        )
        for col, vals in base.items():
            np.testing.assert_allclose(out[col], vals[ex_perm], atol=1e-5, err_msg=col)


def test_batch_size_invariance(encoder: TextEncoder) -> None:
    texts = [T3, LONG, T1, T5, "", T2, T4, LONG + " cat", "yes no " * 5]
    results = [
        encoder.with_options(batch_size=bs, max_seq_length=8).encode(texts, progress=False) for bs in (1, 2, 7)
    ]
    assert results[0].n_windowed == 3
    for other in results[1:]:
        assert_encoded_close(results[0], other, atol=1e-5)


def test_empty_texts_are_nan_and_not_encoded(tiny_model_dir: Path) -> None:
    enc = make_encoder(tiny_model_dir)
    texts = ["", "   \n\t", T3, "", T3, "\u200b", T1]
    out = enc.encode(texts, progress=False)
    empty = [0, 1, 3, 5]
    assert np.isnan(out.pools[empty]).all() and np.isnan(out.pools_content[empty]).all()
    assert np.isnan(out.extrema[empty]).all()
    assert all(out.token_states[i].shape == (0, 32) for i in empty)
    np.testing.assert_array_equal(out.n_windows, [0, 0, 1, 0, 1, 0, 1])
    np.testing.assert_array_equal(out.empty, [True, True, False, True, False, True, False])
    assert enc.texts_encoded == 2  # unique non-empty texts
    assert enc.windows_encoded == 2 and enc.forward_calls == 1
    np.testing.assert_array_equal(out.pools[2], out.pools[4])

    scores = score_all(out.subset([0, 2, 6]), ["", T3, T1], ["", T3, T1], [T3, "", T3])
    for col, vals in scores.items():
        assert np.isnan(vals[:2]).all(), col
        assert not np.isnan(vals[2]), col


def test_all_empty_and_no_texts(tiny_model_dir: Path) -> None:
    enc = make_encoder(tiny_model_dir)
    out = enc.encode(["", " "], progress=False)
    assert len(out) == 2 and np.isnan(out.pools).all() and enc.forward_calls == 0
    none = enc.encode([], progress=False)
    assert len(none) == 0 and none.pools.shape == (0, 3, 32)


def _reference_layer_pools(model_dir: Path, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean pools of every hidden layer (0 = embeddings .. L) computed with transformers directly
    (``sum(h·mask)/sum(mask)`` over the real tokens, CLS/SEP included, as sentence-transformers pools), and the
    ``SentenceTransformer.encode`` embeddings."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    module_dir = next(p.parent for p in sorted(model_dir.rglob("config.json")) if (p.parent / "tokenizer_config.json").exists())
    tokenizer = AutoTokenizer.from_pretrained(str(module_dir), local_files_only=True)
    model = AutoModel.from_pretrained(str(module_dir), local_files_only=True).eval()
    st_model = SentenceTransformer(str(model_dir), device="cpu")
    max_len = st_model.max_seq_length
    pools = []
    with torch.inference_mode():
        for text in texts:
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_len)
            hidden = model(**enc, output_hidden_states=True).hidden_states
            mask = enc["attention_mask"][0].bool()
            pools.append([h[0][mask].double().mean(0).numpy() for h in hidden])
    return np.array(pools), st_model.encode(texts, convert_to_numpy=True).astype(float)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_emb_mean_cos_and_sync_match_independent_references(encoder: TextEncoder, tiny_model_dir: Path) -> None:
    """``emb_mean_cos`` against ``SentenceTransformer.encode`` + cosine, and every ``sync_lNN`` against the mean pool
    of that hidden layer from ``transformers`` run directly: neither reference reads TextEncoder's arrays."""
    texts = [T3, T1, T2, T4, T5, LONG]
    prompts = [T3, T1, T2, LONG, T5]
    responses = [T4, T5, LONG, T1, T5]
    out = score_all(encoder.encode(texts, progress=False), texts, prompts, responses)
    layer_pools, st_embeddings = _reference_layer_pools(tiny_model_dir, texts)
    pos = {t: i for i, t in enumerate(texts)}
    pairs = [(pos[p], pos[r]) for p, r in zip(prompts, responses, strict=True)]

    expected_mean_cos = [_cos(st_embeddings[i], st_embeddings[j]) for i, j in pairs]
    np.testing.assert_allclose(out["emb_mean_cos"], expected_mean_cos, atol=1e-5)
    n_layers = layer_pools.shape[1] - 1
    sync = np.array([[_cos(layer_pools[i, layer], layer_pools[j, layer]) for layer in range(n_layers + 1)]
                     for i, j in pairs])
    for layer in range(n_layers + 1):
        np.testing.assert_allclose(out[f"sync_l{layer:02d}"], sync[:, layer], atol=1e-5, err_msg=f"layer {layer}")
    np.testing.assert_allclose(out["sync_last"], sync[:, n_layers], atol=1e-5)
    np.testing.assert_allclose(out["sync_mean"], sync[:, 1:].mean(axis=1), atol=1e-5)
    np.testing.assert_allclose(out["sync_min"], sync[:, 1:].min(axis=1), atol=1e-5)
    np.testing.assert_allclose(out["sync_max"], sync[:, 1:].max(axis=1), atol=1e-5)
    np.testing.assert_allclose(out["sync_mid"], sync[:, math.ceil(n_layers / 2)], atol=1e-5)
    assert out["emb_mean_cos"][-1] == pytest.approx(1.0, abs=1e-6)  # T5 against itself
    assert not np.allclose(sync[:, 0], sync[:, n_layers], atol=1e-3)  # the layers differ: the check is not vacuous
    assert set(EMBEDDING_COLUMNS) <= set(out)


def test_exclude_special_uses_content_pools(encoder: TextEncoder) -> None:
    texts = [T3, T4]
    enc = encoder.encode(texts, progress=False)
    batch = ExchangeBatch(ids=("a",), prompt_idx=np.array([0]), response_idx=np.array([1]))
    art = Artifacts(texts=texts, encoded=enc)
    plain = LayerwiseSynchrony().score(batch, art)
    excl = LayerwiseSynchrony(exclude_special=True).score(batch, art)
    p, r = enc.pools_content[0, 2].astype(float), enc.pools_content[1, 2].astype(float)
    assert excl["sync_last"][0] == pytest.approx(p @ r / np.linalg.norm(p) / np.linalg.norm(r), abs=1e-6)
    assert abs(excl["sync_last"][0] - plain["sync_last"][0]) > 1e-6
    assert LayerwiseSynchrony(exclude_special=True).get_params() == {"exclude_special": True}


def test_metric_metadata() -> None:
    emb, sync = EmbeddingSimilarity(), LayerwiseSynchrony()
    assert emb.name == "embedding_similarity" and emb.requires == frozenset({"encoder"})
    assert emb.columns() == list(EMBEDDING_COLUMNS) and emb.higher_is_better is True
    assert sync.name == "layerwise_synchrony" and sync.requires == frozenset({"encoder"})
    assert sync.columns() == sync.columns(6) and sync.columns(6)[6] == "sync_l06"
    assert len(sync.columns(12)) == 13 + 5
    with pytest.raises(ConfigError):
        sync.columns(0)


def test_texts_api_dedupes_and_scores(tiny_model_dir: Path) -> None:
    enc = make_encoder(tiny_model_dir)
    prompts = [T3, T3, T2, ""]
    responses = [T1, T3, T2, T1]
    out = embedding_similarity_texts(prompts, responses, encoder=enc)
    assert enc.texts_encoded == 3  # T3, T1, T2; "" never reaches the model
    np.testing.assert_allclose(out["emb_greedy"][1:3], 1.0, atol=1e-6)
    assert np.isnan(out["emb_mean_cos"][3])
    config = EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")
    sync = layerwise_synchrony_texts(prompts, responses, encoder=config)
    # both against transformers/sentence-transformers run directly on the same texts (not each other)
    layer_pools, st_embeddings = _reference_layer_pools(tiny_model_dir, [T3, T1, T2])
    pos = {T3: 0, T1: 1, T2: 2}
    pairs = [(pos[a], pos[b]) for a, b in zip(prompts[:3], responses[:3], strict=True)]
    np.testing.assert_allclose(out["emb_mean_cos"][:3], [_cos(st_embeddings[i], st_embeddings[j]) for i, j in pairs], atol=1e-5)
    last = layer_pools.shape[1] - 1
    np.testing.assert_allclose(sync["sync_last"][:3], [_cos(layer_pools[i, last], layer_pools[j, last]) for i, j in pairs], atol=1e-5)
    assert np.isnan(sync["sync_last"][3])
    with pytest.raises(ValueError, match="as many prompts"):
        embedding_similarity_texts([T1], [], encoder=enc)


def test_window_diagnostics(tiny_model_dir: Path) -> None:
    enc = make_encoder(tiny_model_dir, max_seq_length=6)
    out = enc.encode([LONG, T1, ""], progress=False)
    diag = window_diagnostics(out, np.array([0, 2]), np.array([1, 0]))
    np.testing.assert_array_equal(diag["prompt_windows"], [5, 0])
    np.testing.assert_array_equal(diag["resp_windows"], [1, 5])
    assert diag["prompt_truncated"].dtype == bool and not diag["resp_truncated"].any()


def test_subset_and_concat_roundtrip(encoder: TextEncoder) -> None:
    out = encoder.encode([T3, T1, "", T5], progress=False)
    again = EncodedTexts.concat([out.subset([0, 1]), out.subset([2, 3])])
    assert_encoded_close(out, again, atol=0)
    assert out.nbytes > 0


def test_config_validation_and_fingerprint(tiny_model_dir: Path) -> None:
    with pytest.raises(ConfigError):
        EncoderConfig(dtype="float16", device="cpu")
    with pytest.raises(ConfigError):
        EncoderConfig(long_text="chunk")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        EncoderConfig(batch_size=0)
    with pytest.raises(ConfigError):
        EncoderConfig(device="tpu")
    if not torch.cuda.is_available():  # "auto" resolves to the CPU here: half precision is refused at load
        with pytest.raises(ConfigError, match="only allowed on a GPU"):
            TextEncoder(
                EncoderConfig(model_name_or_path=str(tiny_model_dir), device="auto", dtype="bfloat16")
            ).load()
    a = EncoderConfig(model_name_or_path=str(tiny_model_dir))
    b = EncoderConfig(model_name_or_path=tiny_model_dir)  # a Path is accepted and normalised to str
    assert a == b and a.fingerprint() == b.fingerprint() and len(a.fingerprint()) == 16
    assert a.fingerprint() != EncoderConfig(model_name_or_path=str(tiny_model_dir), batch_size=8).fingerprint()
    assert a.to_dict()["long_text"] == "window"
    with pytest.raises(ConfigError, match="position embeddings"):
        make_encoder(tiny_model_dir, max_seq_length=65).load()


def test_constructor_is_lazy_and_missing_model_fails_cleanly(tmp_path: Path) -> None:
    enc = TextEncoder(EncoderConfig(model_name_or_path=str(tmp_path / "nope"), device="cpu"))
    assert not enc.is_loaded
    with pytest.raises(ModelLoadError, match="not on disk") as err:
        enc.encode(["hi"])
    assert "never downloads" in str(err.value)
    with pytest.raises(ModelLoadError):
        TextEncoder(EncoderConfig(model_name_or_path="someone/not-a-cached-model", device="cpu")).load()
    (tmp_path / "broken").mkdir()
    with pytest.raises(ModelLoadError):
        TextEncoder(EncoderConfig(model_name_or_path=str(tmp_path / "broken"), device="cpu")).load()


def test_with_options_shares_weights(encoder: TextEncoder) -> None:
    other = encoder.with_options(batch_size=3, long_text="truncate")
    assert other.is_loaded and other._model is encoder._model and other.tokenizer is encoder.tokenizer
    assert other.config.batch_size == 3 and other.texts_encoded == 0
    assert not encoder.with_options(dtype="float32", device="cpu", trust_remote_code=True).is_loaded


def test_describe(encoder: TextEncoder, tiny_model_dir: Path) -> None:
    d = encoder.describe()
    assert d["n_layers"] == 2 and d["hidden_size"] == 32 and d["max_seq_length"] == 32
    assert d["device"] == "cpu" and d["dtype"] == "float32" and d["window_content_tokens"] == 30
    assert d["model_name_or_path"] == str(tiny_model_dir) and {"torch", "transformers"} <= set(d["versions"])
