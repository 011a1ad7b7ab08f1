"""``score --embeddings`` → ``predict --features both --embeddings`` (docs/commands/predict.md#embeddings): the side
file round trip against sentence-transformers, a resumed run, and every refusal (exit 2). Tiny random BERT only."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import EXIT_INTERRUPTED, main
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.embedding_file import embeddings_manifest_path, read_embeddings

pytest.importorskip("sklearn")
WORDS = ["the", "a", "cat", "sat", "on", "mat", "where", "did", "sit", "what", "is", "two", "plus", "four", "why", "because", "you", "can", "try", "again", "good", "question", "step"]


@pytest.fixture
def study(tmp_path):
    rng = np.random.default_rng(0)
    rows, ratings = [], []
    for g in range(8):
        prompt = " ".join(rng.choice(WORDS, 6))
        for k in range(4):
            i = f"e{g}{k}"
            words = rng.choice(WORDS, int(rng.integers(2, 7)))
            rows.append((i, f"d{g}", prompt, " ".join(words)))
            ratings.append((i, "h1", "clear", float("cat" in words or k == 0)))
            ratings.append((i, "h1", "guide", [0.0, 0.5, 1.0][int(rng.integers(0, 3))]))
    pl.DataFrame(rows, schema=["exchange_id", "conversation_id", "prompt", "response"], orient="row").write_csv(tmp_path / "ex.csv")
    pl.DataFrame(ratings, schema=["exchange_id", "rater", "criterion", "score"], orient="row").write_csv(tmp_path / "r.csv")
    return tmp_path


def _score(study, tiny_model_dir, src="ex.csv", out="m.csv", emb="e.parquet", *extra):
    return main(["score", str(study / src), "--metrics", "length,embedding_similarity", "--model", str(tiny_model_dir),
                 "--keep", "conversation_id", "--no-progress", "-o", str(study / out), "--embeddings", str(study / emb), *extra])  # fmt: skip


def _predict(study, *extra):
    return main(["predict", str(study / "m.csv"), "--ratings", str(study / "r.csv"), "--group-col", "conversation_id",
                 "--folds", "3", "--n-resamples", "50", "-o", str(study / "p.csv"), *extra])  # fmt: skip


def test_side_file_holds_the_sentence_transformers_embeddings(study, tiny_model_dir, tiny_st):
    assert _score(study, tiny_model_dir) == 0
    table = read_embeddings(study / "e.parquet")
    ex = pl.read_csv(study / "ex.csv")
    assert table.ids == pl.read_csv(study / "m.csv")["exchange_id"].to_list() == ex["exchange_id"].to_list()
    for view, col in (("response", "response"), ("prompt", "prompt")):
        np.testing.assert_allclose(table.views[view], tiny_st.encode(ex[col].to_list()), atol=1e-5)
    manifest = json.loads(embeddings_manifest_path(study / "e.parquet").read_text())
    scored = json.loads((study / "m.csv.manifest.json").read_text())
    assert manifest["encoder"]["fingerprint"] == scored["encoder"]["fingerprint"] and manifest["n_rows"] == 32
    assert _predict(study, "--features", "both", "--embeddings", str(study / "e.parquet"), "--components", "3",
                    "--decision", "ordinal") == 0  # fmt: skip
    pred = pl.read_csv(study / "p.csv")
    assert pred.filter(pl.col("target") == "guide")["model"].unique(maintain_order=True).to_list() == [
        "all", "best_single", "metrics", "all-best_single", "all-metrics"]  # fmt: skip


def test_a_resumed_run_writes_the_same_side_file(study, tiny_model_dir, monkeypatch, capsys):
    assert _score(study, tiny_model_dir, "ex.csv", "ref.csv", "ref.parquet", "--chunk-size", "8") == 0
    real, calls = Checkpoint.save, {"n": 0}

    def save(self, *args, **kwargs):
        if calls["n"] == 2:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "save", save)
    assert _score(study, tiny_model_dir, "ex.csv", "m.csv", "e.parquet", "--chunk-size", "8") == EXIT_INTERRUPTED
    monkeypatch.undo()
    assert not (study / "e.parquet").exists()
    capsys.readouterr()
    assert _score(study, tiny_model_dir, "ex.csv", "m.csv", "e.parquet", "--chunk-size", "8") == 0
    assert "resuming: 2 verified chunk(s)" in capsys.readouterr().err  # their vectors come from the replayed text cache
    a, b = read_embeddings(study / "ref.parquet"), read_embeddings(study / "e.parquet")
    assert a.ids == b.ids
    for view in a.views:
        np.testing.assert_allclose(a.views[view], b.views[view], atol=1e-6)


def test_refusals_exit_2(study, tiny_model_dir, capsys):
    assert _score(study, tiny_model_dir) == 0
    emb = study / "e.parquet"
    capsys.readouterr()
    # --features both without a side file
    assert _predict(study, "--features", "both") == 2
    assert "needs --embeddings" in capsys.readouterr().err
    # a side file of other rows
    pl.read_csv(study / "ex.csv").head(20).write_csv(study / "head.csv")
    assert _score(study, tiny_model_dir, "head.csv", "m_head.csv", "e_head.parquet") == 0
    capsys.readouterr()
    assert _predict(study, "--features", "both", "--embeddings", str(study / "e_head.parquet")) == 2
    assert "12 metrics row(s) have no embedding" in capsys.readouterr().err
    # another model's vectors
    other = study / "other.parquet"
    shutil.copy(emb, other)
    manifest = json.loads(embeddings_manifest_path(emb).read_text())
    manifest["encoder"]["fingerprint"] = "0000000000000000"
    embeddings_manifest_path(other).write_text(json.dumps(manifest))
    assert _predict(study, "--features", "embedding", "--embeddings", str(other)) == 2
    assert "come from encoder 0000000000000000" in capsys.readouterr().err
    # ids edited after writing
    frame = pl.read_parquet(emb)
    frame.with_columns(pl.col("exchange_id").reverse()).write_parquet(other)
    embeddings_manifest_path(other).write_text(embeddings_manifest_path(emb).read_text())
    assert _predict(study, "--features", "both", "--embeddings", str(other)) == 2
    assert "do not match its manifest" in capsys.readouterr().err
    # a view the file does not hold (it keeps the last layer only)
    assert _predict(study, "--features", "both", "--embeddings", str(emb), "--representation", "response_l01") == 2
    assert "holds no view 'response_l01'" in capsys.readouterr().err
    # no manifest
    embeddings_manifest_path(other).unlink()
    assert _predict(study, "--features", "both", "--embeddings", str(other)) == 2
    assert "no readable manifest" in capsys.readouterr().err
    # score: no encoder family, not Parquet, with --dialogue
    assert main(["score", str(study / "ex.csv"), "--metrics", "lexical", "-o", str(study / "lx.csv"), "--embeddings",
                 str(study / "lx.parquet")]) == 2  # fmt: skip
    assert "needs an encoder family" in capsys.readouterr().err
    assert _score(study, tiny_model_dir, "ex.csv", "m2.csv", "e2.csv") == 2
    assert "is Parquet" in capsys.readouterr().err
