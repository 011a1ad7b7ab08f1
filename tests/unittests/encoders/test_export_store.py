"""The ONNX export store's freshness check (``export.json`` format 2): every source and export file recorded as
``[name, size, mtime_ns, sha256]``; a file is read only when its (size, mtime_ns) changed, at most once per process;
an altered export file stops the run (exit 2), never used; the encoder is resolved once per run.

Fake exports (random bytes; ``check_export`` never opens a model) keep these tests free of torch and onnxruntime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutormetrics.encoders.config import EncoderConfig
from tutormetrics.encoders.onnx import store
from tutormetrics.encoders.resolve import resolve_backend, resolve_encoder
from tutormetrics.errors import ModelLoadError

ROOT = Path(__file__).resolve().parents[3]


def _fake_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A model folder and its export in a fresh store (``TUTORMETRICS_ONNX_DIR``), recorded as ``export_model`` does."""
    monkeypatch.setenv("TUTORMETRICS_ONNX_DIR", str(tmp_path / "store"))
    model = tmp_path / "tiny-model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text('{"num_hidden_layers": 2}')
    (model / "1_Pooling" / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(os.urandom(4096))
    folder = store.export_dir_for(model)
    folder.mkdir(parents=True)
    for name in store.EXPORT_FILES:
        (folder / name).write_bytes(os.urandom(2048))
    sources = store.file_records(model, store.source_names(model))
    meta = {"format": store.EXPORT_FORMAT, "source": str(model), "source_sha256": store.aggregate_hash(sources),
            "source_files": sources, "files": store.file_records(folder, store.EXPORT_FILES), "n_layers": 2}  # fmt: skip
    (folder / store.META_NAME).write_text(json.dumps(meta))
    return model, folder


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    return _fake_export(tmp_path, monkeypatch)


@pytest.fixture
def reads(fake: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files hashed once the fake export exists (a fresh process: the per-process digests are forgotten)."""
    seen: list[str] = []
    real = store._hash_file

    def counting(path: Path) -> str:
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(store, "_DIGESTS", {})
    monkeypatch.setattr(store, "_hash_file", counting)
    return seen


def _new_process(monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    monkeypatch.setattr(store, "_DIGESTS", {})
    reads.clear()


def _touch(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def test_unchanged_files_are_not_read(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    for _ in range(3):
        info, why = store.check_export(str(model))
        assert why is None and info is not None and info.folder == folder
    assert reads == []
    assert resolve_backend(EncoderConfig(model_name_or_path=str(model), device="cpu")) == "onnx"
    assert reads == []


def test_touched_file_is_hashed_once_and_still_passes(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    before = store.check_export(str(model))[0].fingerprint
    _touch(folder / "model.onnx")
    _touch(model / "model.safetensors")
    info, why = store.check_export(str(model))
    assert why is None and info is not None
    assert sorted(reads) == ["model.onnx", "model.safetensors"]
    assert info.fingerprint == before  # a touch changes no number: sizes and mtimes are not in the fingerprint
    assert not list(folder.glob(".*.tmp"))  # export.json was rewritten atomically
    recorded = {r[0]: r for r in json.loads((folder / store.META_NAME).read_text())["files"]}
    assert recorded["model.onnx"][2] == (folder / "model.onnx").stat().st_mtime_ns
    _new_process(monkeypatch, reads)
    assert store.check_export(str(model))[0] is not None
    assert reads == []  # the new stats are recorded: the next process reads nothing


def test_a_read_only_store_hashes_a_touched_file_once_per_process(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    monkeypatch.setattr(store, "_record_stats", lambda folder, meta: None)  # export.json cannot be rewritten
    _touch(folder / "tokenizer.json")
    for _ in range(3):
        assert store.check_export(str(model))[0] is not None
    assert reads == ["tokenizer.json"]


@pytest.mark.parametrize("name", ["model.onnx", "model.int8.onnx", "tokenizer.json"])
def test_an_altered_export_file_stops_every_backend_choice(fake, tmp_path, monkeypatch, reads, name):
    model, folder = fake
    data = bytearray((folder / name).read_bytes())
    data[7] ^= 1  # same size, other bytes, new mtime
    (folder / name).write_bytes(bytes(data))
    with pytest.raises(store.AlteredExportError, match=f"altered after it was exported: {name}") as err:
        store.check_export(str(model))
    assert "encoder export --force" in (err.value.hint or "")
    cfg = EncoderConfig(model_name_or_path=str(model), device="cpu")
    with pytest.raises(ModelLoadError, match="altered"):
        resolve_backend(cfg)  # auto does not fall back silently either
    with pytest.raises(ModelLoadError, match="altered"):
        cfg.fingerprint()


def test_a_replaced_or_missing_export_file(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    (folder / "model.int8.onnx").write_bytes(os.urandom(100))  # replaced: another size
    with pytest.raises(store.AlteredExportError, match=r"model\.int8\.onnx"):
        store.check_export(str(model))
    assert reads == []  # another size is enough: not even read
    (folder / "model.int8.onnx").unlink()
    info, why = store.check_export(str(model))
    assert info is None and "lacks model.int8.onnx" in why


def test_a_changed_source_model_makes_the_export_stale(fake, tmp_path, monkeypatch, reads):
    model, _ = fake
    data = bytearray((model / "model.safetensors").read_bytes())
    data[0] ^= 1
    (model / "model.safetensors").write_bytes(bytes(data))
    info, why = store.check_export(str(model))
    assert info is None and "stale" in why
    cfg = EncoderConfig(model_name_or_path=str(model), device="cpu")
    assert resolve_backend(cfg) == "torch"  # auto: a stale export is not used
    with pytest.raises(ModelLoadError, match="stale") as err:
        resolve_encoder(EncoderConfig(model_name_or_path=str(model), backend="onnx"))
    assert "export --force" in (err.value.hint or "")
    (model / "extra.json").write_text("{}")  # a new number-deciding file is a change too
    assert "stale" in store.check_export(str(model))[1]


def test_an_old_format_is_stale(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    meta = json.loads((folder / store.META_NAME).read_text())
    meta["format"] = 1
    meta["source_files"] = [r[:3] for r in meta["source_files"]]
    del meta["files"]
    (folder / store.META_NAME).write_text(json.dumps(meta))
    info, why = store.check_export(str(model))
    assert info is None and "format 1" in why
    with pytest.raises(ModelLoadError, match="format 1") as err:
        store.require_export(str(model))
    assert "export --force" in (err.value.hint or "")


def test_a_copied_export_is_found_by_its_sha256(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    copied = folder.with_name(folder.name.rsplit("-", 1)[0] + "-000000000000")
    folder.rename(copied)  # made for another install path of the same model
    assert store.check_export(str(model))[0].folder == copied
    assert reads == []  # same stats as recorded: nothing to read


def test_resolved_encoder_decides_once(fake, tmp_path, monkeypatch, reads):
    model, _ = fake
    calls: list[str] = []
    real = store.check_export

    def counting(*args, **kwargs):
        calls.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "check_export", counting)
    monkeypatch.setattr("tutormetrics.encoders.resolve.check_export", counting)
    from tutormetrics.engine.resolved import resolved_settings
    from tutormetrics.engine.scorer import Scorer

    scorer = Scorer("encoder", encoder=EncoderConfig(model_name_or_path=str(model), device="cpu"), progress=False)
    resolved = scorer.resolved_encoder
    assert resolved.backend == "onnx" and resolved.export is not None
    for _ in range(3):
        assert resolved_settings(scorer)["backend"] == "onnx"
        assert scorer.resolved_encoder.fingerprint == resolved.fingerprint
        assert scorer.manifest(load_encoder=False)["encoder"]["fingerprint"] == resolved.fingerprint
    assert scorer.text_cache is None or scorer.text_cache.fingerprint == resolved.fingerprint
    assert len(calls) == 1
    assert resolved.fingerprint == EncoderConfig(model_name_or_path=str(model), device="cpu").fingerprint()


def test_cli_stops_on_an_altered_model_file(fake, tmp_path, monkeypatch, reads):
    model, folder = fake
    data = bytearray((folder / "model.onnx").read_bytes())
    data[-1] ^= 1
    (folder / "model.onnx").write_bytes(bytes(data))
    src = tmp_path / "one.csv"
    src.write_text("exchange_id,prompt,response\ne1,Why?,Because the loop never ends.\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = ["score", str(src), "-o", str(tmp_path / "out.csv"), "--model", str(model), "--device", "cpu", "--metrics", "encoder"]
    r = subprocess.run([sys.executable, "-m", "tutormetrics", *args], check=False, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "altered after it was exported: model.onnx" in lines[0], r.stderr
    assert "hint:" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.model
def test_a_file_run_checks_the_export_once_and_hashes_nothing(onnx_export, tmp_path, monkeypatch):
    """One-row ``score --metrics all`` on the bundled MiniLM's export: one export check for the whole run, no file
    read to hash (its stats are the recorded ones), and the manifest's fingerprint is the run key's."""
    from tutormetrics.engine.file_scoring import ScoreOptions, score_file

    calls: list[str] = []
    hashed: list[str] = []
    real_check, real_hash = store.check_export, store._hash_file
    monkeypatch.setattr(store, "_DIGESTS", {})
    monkeypatch.setattr(store, "_hash_file", lambda p: hashed.append(Path(p).name) or real_hash(p))
    monkeypatch.setattr(store, "check_export", lambda *a, **k: calls.append(a[0]) or real_check(*a, **k))
    monkeypatch.setattr("tutormetrics.encoders.resolve.check_export", store.check_export)
    src = tmp_path / "one.csv"
    src.write_text('exchange_id,prompt,response\ne1,"Why does my loop never end?","Check the loop condition."\n')
    result = score_file(src, tmp_path / "out.csv", ScoreOptions(metrics="all", device="cpu", progress=False))
    assert result.manifest["encoder"]["backend"] == "onnx"
    assert len(calls) == 1 and hashed == []
    assert result.manifest["resolved"]["backend"] == "onnx"
