"""The encoder families on Chinese and Japanese token streams (languages.md; metrics.md §6-§7).

A tiny random BERT whose vocabulary holds CJK characters (``tiny_cjk_model_dir`` in tests/conftest.py):
every Han character is its own word piece, kana runs are one piece per character. References are
computed here from the plain Hugging Face model, window by window, independently of TextEncoder.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.engine import Scorer
from tutormetrics.engine.run_warnings import WindowingWarning
from tutormetrics.examples import cjk_example_path
from tutormetrics.metrics import get_metric
from tutormetrics.metrics.base import Artifacts, ExchangeBatch
from tutormetrics.metrics.embedding import EmbeddingSimilarity
from tutormetrics.metrics.synchrony import LayerwiseSynchrony
from tutormetrics.text import tokenize

ZH_P = "为什么我的程序错误？"
ZH_R = "检查下标是不是超出列表长度。你试试打印它！"
JA_P = "変数の値を表示したいです。"
JA_R = "変数の値を確認してください。画面に表示できます！"
LONG_ZH = "递归函数需要基本情况，" * 5 + "否则不会停。"  # 61 pieces
MAX_LEN = 8  # 6 content tokens a window


def make_encoder(model_dir: Path, **kw: object) -> TextEncoder:
    return TextEncoder(EncoderConfig(model_name_or_path=str(model_dir), device="cpu", **kw))


@pytest.fixture(scope="module")
def hf(tiny_cjk_model_dir: Path):
    from transformers import AutoTokenizer, BertModel

    model = BertModel.from_pretrained(str(tiny_cjk_model_dir), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(tiny_cjk_model_dir), local_files_only=True)
    return model, tok


def reference(hf, text: str, w: int) -> dict[str, np.ndarray]:
    """Encode each window of ``w`` content pieces with the plain model; combine by hand (metrics.md §6.2)."""
    model, tok = hf
    ids = tok(text, add_special_tokens=False)["input_ids"]
    sums, count, content = [], 0, []
    for s in range(0, len(ids), w):
        x = torch.tensor([[tok.cls_token_id, *ids[s : s + w], tok.sep_token_id]])
        with torch.inference_mode():
            hs = torch.stack(model(input_ids=x, output_hidden_states=True).hidden_states)[:, 0].double().numpy()
        sums.append(hs.sum(axis=1))  # (L+1, d), CLS/SEP included
        count += hs.shape[1]
        content.append(hs[-1, 1:-1])
    tokens = np.concatenate(content)
    mx, mn = tokens.max(axis=0), tokens.min(axis=0)
    return {
        "pool": np.sum(sums, axis=0) / count,
        "tokens": tokens / np.linalg.norm(tokens, axis=1, keepdims=True),
        "extrema": np.where(mx >= np.abs(mn), mx, mn),
        "n_windows": math.ceil(len(ids) / w),
    }


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_cjk_texts_become_one_piece_per_character(tiny_cjk_model_dir: Path) -> None:
    enc = make_encoder(tiny_cjk_model_dir).load()
    unk = enc.tokenizer.unk_token_id
    for text in (ZH_P, ZH_R, JA_P, JA_R, LONG_ZH):
        pieces = enc.tokenize([text])[0]
        assert unk not in pieces, text
        chars = [c for c in text if not c.isspace()]
        assert len(pieces) == len(chars)  # punctuation is a piece too, unlike in T(x)
        assert len(tokenize(text)) == len(chars) - sum(not c.isalnum() for c in chars)


def test_windowing_on_a_chinese_token_stream(tiny_cjk_model_dir: Path, hf) -> None:
    enc = make_encoder(tiny_cjk_model_dir, max_seq_length=MAX_LEN, batch_size=3)
    out = enc.encode([LONG_ZH, ZH_P], progress=False)
    ref = reference(hf, LONG_ZH, MAX_LEN - 2)
    assert ref["n_windows"] == 11
    np.testing.assert_array_equal(out.n_windows, [11, 2])
    np.testing.assert_allclose(out.pools[0], ref["pool"], atol=1e-5)
    np.testing.assert_allclose(out.token_states[0], ref["tokens"], atol=1e-5)
    np.testing.assert_allclose(out.extrema[0], ref["extrema"], atol=1e-5)
    assert out.n_content_tokens[0] == 61


@pytest.mark.parametrize("max_seq_length", [MAX_LEN, 32])
def test_mean_extrema_greedy_and_synchrony_on_cjk_exchanges(tiny_cjk_model_dir: Path, hf, max_seq_length) -> None:
    enc = make_encoder(tiny_cjk_model_dir, max_seq_length=max_seq_length)
    texts = [ZH_P, ZH_R, JA_P, JA_R, LONG_ZH]
    encoded = enc.encode(texts, progress=False)
    batch = ExchangeBatch(("zh", "ja", "long"), np.array([0, 2, 0]), np.array([1, 3, 4]))
    art = Artifacts(texts=texts, encoded=encoded)
    emb = EmbeddingSimilarity().score(batch, art)
    sync = LayerwiseSynchrony().score(batch, art)
    refs = [reference(hf, t, max_seq_length - 2) for t in texts]
    L = enc.n_layers
    for row, (pi, ri) in enumerate(zip(batch.prompt_idx, batch.response_idx, strict=True)):
        p, r = refs[pi], refs[ri]
        s = r["tokens"] @ p["tokens"].T  # S_ij = cos(r_i, p_j)
        precision, recall = s.max(axis=1).mean(), s.max(axis=0).mean()
        expected = {
            "emb_mean_cos": cos(p["pool"][L], r["pool"][L]),
            "emb_extrema_cos": cos(p["extrema"], r["extrema"]),
            "emb_greedy_precision": precision,
            "emb_greedy_recall": recall,
            "emb_greedy": (precision + recall) / 2,
            "emb_greedy_f1": 2 * precision * recall / (precision + recall),
        }
        for col, want in expected.items():
            assert emb[col][row] == pytest.approx(want, abs=1e-5), (row, col)
        layers = [cos(p["pool"][k], r["pool"][k]) for k in range(L + 1)]
        for k in range(L + 1):
            assert sync[f"sync_l{k:02d}"][row] == pytest.approx(layers[k], abs=1e-5), (row, k)
        blocks = layers[1:]
        assert sync["sync_min"][row] == pytest.approx(min(blocks), abs=1e-5)
        assert sync["sync_mean"][row] == pytest.approx(np.mean(blocks), abs=1e-5)
        assert sync["sync_max"][row] == pytest.approx(max(blocks), abs=1e-5)
        assert sync["sync_mid"][row] == pytest.approx(layers[math.ceil(L / 2)], abs=1e-5)
        assert sync["sync_last"][row] == pytest.approx(layers[L], abs=1e-5)


def test_bundled_cjk_example_with_every_family(tiny_cjk_model_dir: Path) -> None:
    src = pl.read_csv(cjk_example_path())
    families = [get_metric(n) for n in ("length", "lexical_diversity", "overlap", "embedding_similarity",
                                        "layerwise_synchrony")] + [get_metric("readability", syllables="pyphen")]
    scorer = Scorer(families, encoder=EncoderConfig(model_name_or_path=str(tiny_cjk_model_dir), device="cpu"),
                    progress=False)
    with pytest.warns(WindowingWarning, match="exceeded max_seq_length=32 and were windowed"):
        frame = scorer.score(src["exchange_id"].to_list(), src["prompt"].to_list(), src["response"].to_list())
    assert frame["lang"].to_list() == ["zh"] * 8 + ["ja"] * 4
    assert frame["flesch_reading_ease"].is_nan().all()
    for col in ("emb_mean_cos", "emb_greedy", "emb_extrema_cos", "sync_l00", "sync_last", "resp_words", "ttr"):
        assert not frame[col].is_nan().any(), col
    # One-window rows against SentenceTransformer.encode + cosine (which truncates, so windowed rows are left out).
    from sentence_transformers import SentenceTransformer

    single = ((frame["prompt_windows"] == 1) & (frame["resp_windows"] == 1)).to_numpy()
    assert single.sum() >= 2
    st_model = SentenceTransformer(str(tiny_cjk_model_dir), device="cpu")
    vp = st_model.encode([p for p, keep in zip(src["prompt"].to_list(), single, strict=True) if keep])
    vr = st_model.encode([r for r, keep in zip(src["response"].to_list(), single, strict=True) if keep])
    expected = (vp * vr).sum(1) / np.linalg.norm(vp, axis=1) / np.linalg.norm(vr, axis=1)
    np.testing.assert_allclose(frame["emb_mean_cos"].to_numpy()[single], expected, atol=1e-5)
    np.testing.assert_allclose(frame["sync_last"].to_numpy()[single], expected, atol=1e-5)
    assert (frame["resp_windows"] > 1).sum() >= 3  # the long replies exceed 32 pieces and are windowed
