"""The onnx encoder backend: export, freshness, backend resolution, and equality with the torch backend.

Every metric column of the onnx backend equals the torch backend's within 1e-5 on real MRBench replies and on
hostile texts (empty, whitespace, longer than one window, CJK, a reply tokenised in segments).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.encoders.backend import make_encoder, resolve_backend
from tutormetrics.encoders.config import EncoderConfig
from tutormetrics.errors import ConfigError, ModelLoadError

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = [
    "",
    "   ",
    "Try again: " + "what is two plus four, and why does the loop stop early? " * 40,  # > 256 tokens: windows
    "变量的值是多少？请打印它，然后检查循环条件。" * 3,
    "変数の値を確認してください。ループの条件式は真ですか？",
    "mixed 中文 and English, with émojis 🙂 and tabs\tand\nnewlines",
]


def _replies(mrbench_dir: Path, n: int = 36) -> list[str]:
    frame = pl.read_csv(mrbench_dir / "exchanges.csv")
    return frame["response"].drop_nulls().to_list()[:n]


@pytest.mark.model
def test_encoded_texts_equal_torch(onnx_export, mrbench_dir):
    from tutormetrics.encoders.hf import TextEncoder
    from tutormetrics.encoders.onnx.encoder import OnnxTextEncoder

    replies = _replies(mrbench_dir)
    texts = replies + HOSTILE + ["word " * 14_000]  # > 64k characters: tokenised in segments
    onnx = make_encoder(EncoderConfig(backend="onnx", batch_size=8))
    torch_enc = TextEncoder(EncoderConfig(backend="torch", batch_size=8))
    assert isinstance(onnx, OnnxTextEncoder)
    a, b = onnx.encode(texts), torch_enc.encode(texts)
    assert onnx.tokenize(texts[:5]) == torch_enc.tokenize(texts[:5])
    np.testing.assert_array_equal(a.n_windows, b.n_windows)
    assert a.n_windows[len(replies)] == 0 and a.n_windows[len(replies) + 2] > 1 and a.n_windows[-1] > 50
    np.testing.assert_array_equal(a.n_content_tokens, b.n_content_tokens)
    for name in ("pools", "pools_content", "extrema", "maxima", "minima"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-5, rtol=0, err_msg=name)
    for x, y in zip(a.token_states, b.token_states, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-5, rtol=0)
    for x, y in zip(a.token_offsets, b.token_offsets, strict=True):
        np.testing.assert_array_equal(x, y)
    assert onnx.describe()["backend"] == "onnx" and torch_enc.describe()["backend"] == "torch"


@pytest.mark.model
def test_every_metric_column_equals_torch(onnx_export, mrbench_dir):
    from tutormetrics.engine import Scorer

    replies = _replies(mrbench_dir) + HOSTILE
    prompts = ["Why does my loop stop early?"] * (len(replies) - 2) + ["", "变量的值是多少？"]
    ids = [f"r{i}" for i in range(len(replies))]
    frames = {
        b: Scorer("all", encoder=EncoderConfig(backend=b), progress=False).score(ids, prompts, replies)
        for b in ("torch", "onnx")
    }
    a, b = frames["torch"], frames["onnx"]
    assert a.columns == b.columns
    numeric = [c for c in a.columns if a[c].dtype.is_numeric()]
    assert {"emb_mean_cos", "sync_l06", "coherence"} & set(numeric) >= {"emb_mean_cos", "sync_l06"}
    for col in numeric:
        x, y = a[col].to_numpy().astype(float), b[col].to_numpy().astype(float)
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y), err_msg=col)
        np.testing.assert_allclose(x, y, atol=1e-5, rtol=0, equal_nan=True, err_msg=col)


@pytest.mark.model
def test_int8_is_opt_in_and_close(onnx_export, mrbench_dir):
    replies = _replies(mrbench_dir, 12)
    f32 = make_encoder(EncoderConfig(backend="onnx"))
    q = make_encoder(EncoderConfig(quantize="int8"))  # auto + int8 = onnx
    assert q.config.backend == "onnx" and f32.config.quantize is None
    a, b = f32.encode(replies), q.encode(replies)
    last = a.pools[:, -1], b.pools[:, -1]
    cos = np.sum(last[0] * last[1], 1) / np.linalg.norm(last[0], axis=1) / np.linalg.norm(last[1], axis=1)
    assert cos.min() > 0.97 and not np.allclose(a.pools, b.pools, atol=1e-5)  # close, and not the same numbers
    assert q.config.fingerprint() != f32.config.fingerprint()
    assert q.describe()["quantize"] == "int8"


def test_backend_resolution_and_errors(onnx_export):
    assert resolve_backend(EncoderConfig()) == "onnx"  # an export exists (CPU machine)
    assert resolve_backend(EncoderConfig(device="cpu")) == "onnx"
    assert resolve_backend(EncoderConfig(device="cuda")) == "torch"
    assert resolve_backend(EncoderConfig(trust_remote_code=True)) == "torch"
    assert resolve_backend(EncoderConfig(backend="torch")) == "torch"
    with pytest.raises(ConfigError, match="onnx backend"):
        EncoderConfig(backend="torch", quantize="int8")
    with pytest.raises(ConfigError, match="onnx backend runs"):
        EncoderConfig(backend="onnx", device="cuda")
    with pytest.raises(ConfigError, match="invalid backend"):
        EncoderConfig(backend="tensorflow")
    assert EncoderConfig(quantize="none").quantize is None
    fp = {b: EncoderConfig(backend=b).fingerprint() for b in ("auto", "torch", "onnx")}
    assert fp["auto"] == fp["onnx"] != fp["torch"]


def test_auto_without_an_export_is_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORMETRICS_ONNX_DIR", str(tmp_path / "empty"))
    cfg = EncoderConfig()
    assert resolve_backend(cfg) == "torch"
    assert cfg.fingerprint() == EncoderConfig(backend="torch").fingerprint()
    with pytest.raises(ModelLoadError, match="no ONNX export"):
        EncoderConfig(backend="onnx").fingerprint()


def test_any_bert_folder_exports_and_matches_torch(tiny_model_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from tutormetrics.encoders.hf import TextEncoder
    from tutormetrics.encoders.onnx.export import export_model
    from tutormetrics.encoders.onnx.store import check_export

    monkeypatch.setenv("TUTORMETRICS_ONNX_DIR", str(tmp_path / "store"))
    model = tmp_path / "tiny"
    shutil.copytree(tiny_model_dir, model)
    folder = export_model(model)
    meta = json.loads((folder / "export.json").read_text())
    assert len(meta["outputs"]) == meta["n_layers"] + 1 and meta["optimizer"]["fused"]
    texts = ["the cat sat on the mat", "", "why " * 50, "good question, try again"]
    cfg = dict(model_name_or_path=str(model), batch_size=2)
    a = make_encoder(EncoderConfig(**cfg)).encode(texts)  # auto: the fresh export
    b = TextEncoder(EncoderConfig(**cfg, backend="torch")).encode(texts)
    np.testing.assert_array_equal(a.n_windows, b.n_windows)
    np.testing.assert_allclose(a.pools, b.pools, atol=1e-5, rtol=0)

    copied = folder.with_name(folder.name.rsplit("-", 1)[0] + "-000000000000")
    folder.rename(copied)  # an export made for another install path of the same model: found by its SHA-256
    assert check_export(str(model))[0].folder == copied
    copied.rename(folder)
    os.utime(model / "config.json")  # touched, same bytes: still fresh (the SHA-256 decides)
    assert check_export(str(model))[0] is not None
    weights = next(model.rglob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    info, why = check_export(str(model))
    assert info is None and "stale" in why
    assert resolve_backend(EncoderConfig(**cfg)) == "torch"  # auto does not use a stale export
    with pytest.raises(ModelLoadError, match="stale"):
        make_encoder(EncoderConfig(**cfg, backend="onnx")).load()


def test_export_refuses_what_it_cannot_reproduce(tmp_path):
    from tutormetrics.encoders.onnx.export import export_model

    (tmp_path / "modules.json").write_text(json.dumps([{"idx": 0, "path": "", "type": "custom.Module"}]))
    with pytest.raises(ConfigError, match="not a sentence-transformers folder"):
        export_model(tmp_path, tmp_path / "out")
    with pytest.raises(ModelLoadError, match="not a local folder"):
        export_model(tmp_path / "missing")


_HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime")
_RUN_CLI = r"""
import runpy, sys
sys.argv = ["tutormetrics", *sys.argv[1:]]
if BLOCK:
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCK:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
    sys.meta_path.insert(0, Block())
code = 0
try:
    runpy.run_module("tutormetrics", run_name="__main__")
except SystemExit as exc:
    code = exc.code or 0
print("LOADED=" + ",".join(m for m in HEAVY if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def _cli(args: list[str], block: tuple[str, ...] = ()) -> tuple[int, set[str], str]:
    code = f"BLOCK = {block!r}\nHEAVY = {_HEAVY!r}\n" + _RUN_CLI
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300, check=False)
    loaded = [ln for ln in r.stderr.splitlines() if ln.startswith("LOADED=")]
    assert loaded, r.stderr
    return r.returncode, set(filter(None, loaded[-1][7:].split(","))), r.stderr


def test_help_metrics_and_lexical_runs_import_no_heavy_library(tmp_path, example_dir):
    out = tmp_path / "lex.csv"
    for args in (["--help"], ["metrics"], ["score", str(example_dir / "exchanges.csv"), "-o", str(out), "--metrics", "lexical", "--prompt", "query"]):
        code, loaded, err = _cli(args)
        assert code == 0, err
        assert loaded == set(), (args, loaded)


@pytest.mark.model
def test_scoring_without_torch_installed(onnx_export, tmp_path, example_dir):
    """A torch-free install (pip install --no-deps tutormetrics + the onnx extra) scores with an export."""
    src = tmp_path / "in.csv"
    pl.read_csv(example_dir / "exchanges.csv").head(8).write_csv(src)
    blocked = ("torch", "transformers", "sentence_transformers")
    code, loaded, err = _cli(["score", str(src), "-o", str(tmp_path / "out.csv"), "--prompt", "query"], block=blocked)
    assert code == 0, err
    assert loaded == {"onnxruntime"}
    manifest = json.loads((tmp_path / "out.csv.manifest.json").read_text())
    assert manifest["encoder"]["backend"] == "onnx"
    frame = pl.read_csv(tmp_path / "out.csv")
    assert len(frame) == 8 and frame["emb_mean_cos"].is_not_null().all()

    env_store = tmp_path / "nowhere"
    os.environ["TUTORMETRICS_ONNX_DIR"], saved = str(env_store), os.environ["TUTORMETRICS_ONNX_DIR"]
    try:
        code, _, err = _cli(["score", str(src), "-o", str(tmp_path / "out2.csv"), "--prompt", "query"], block=blocked)
    finally:
        os.environ["TUTORMETRICS_ONNX_DIR"] = saved
    assert code == 2 and "needs torch, which is not installed" in err and "ModuleNotFoundError" not in err, err


def test_cli_backend_errors_are_one_message(tmp_path, example_dir):
    args = ["score", str(example_dir / "exchanges.csv"), "-o", str(tmp_path / "o.csv"), "--prompt", "query"]
    code, _, err = _cli([*args, "--backend", "torch", "--quantize", "int8"])
    assert code == 2 and "runs on the onnx backend" in err and "Traceback (most recent" not in err
    code, _, err = _cli(["encoder", "export", str(tmp_path / "missing")])
    assert code == 2 and "not a local folder" in err
