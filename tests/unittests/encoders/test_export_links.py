"""Issue 35: ``encoder export`` never follows a planted link (docs/commands/encoder.md#the-export-store). Dangling links
at every file name the export writes, and at the export folder's own name, are replaced, and their targets are never
created; an up-to-date export's missing ``int8_drift.json`` replaces a dangling link too. A tiny BERT keeps it quick."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tutormetrics.cli import main

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

#: Every name ``encoder export`` writes in the export folder (``raw.onnx``: the unfused graph before the optimiser).
WRITTEN = ("model.onnx", "model.int8.onnx", "tokenizer.json", "export.json", "int8_drift.json", "raw.onnx")


def _export(model: Path, store: Path) -> int:
    return main(["encoder", "export", str(model), "--store", str(store)])


def _planted(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("planted-*"))


def _no_links(folder: Path) -> None:
    assert folder.is_dir() and not folder.is_symlink()
    for p in folder.iterdir():
        assert not p.is_symlink(), p


@pytest.fixture
def tiny(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    from tutormetrics.encoders.onnx.store import export_dir_for

    store = tmp_path / "store"
    monkeypatch.setenv("TUTORMETRICS_ONNX_DIR", str(store))
    model = tmp_path / "tiny"
    shutil.copytree(tiny_model_dir, model)
    return model, store, export_dir_for(model, root=store)


def test_dangling_links_at_every_export_file_are_replaced(tiny, tmp_path):
    model, store, folder = tiny
    folder.mkdir(parents=True)
    for name in WRITTEN:
        (folder / name).symlink_to(tmp_path / f"planted-{name}")
    assert _export(model, store) == 0
    assert _planted(tmp_path) == []
    _no_links(folder)
    assert set(WRITTEN) - {"raw.onnx"} <= {p.name for p in folder.iterdir()}

    # up to date: only the drift record is written again, over a dangling link
    (folder / "int8_drift.json").unlink()
    (folder / "int8_drift.json").symlink_to(tmp_path / "planted-drift")
    assert _export(model, store) == 0
    assert _planted(tmp_path) == []
    _no_links(folder)


def test_a_dangling_link_at_the_export_folder_is_replaced(tiny, tmp_path, capsys):
    model, store, folder = tiny
    folder.parent.mkdir(parents=True)
    folder.symlink_to(tmp_path / "planted-folder", target_is_directory=True)
    assert _export(model, store) == 0, capsys.readouterr().err
    assert _planted(tmp_path) == []
    _no_links(folder)
    assert not [p for p in store.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_link_to_a_folder_that_is_no_export_is_removed_not_its_target(tiny, tmp_path):
    model, store, folder = tiny
    elsewhere = tmp_path / "planted-data"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("keep me")
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere, target_is_directory=True)
    assert _export(model, store) == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["notes.txt"]  # untouched, nothing written into it
    _no_links(folder)
