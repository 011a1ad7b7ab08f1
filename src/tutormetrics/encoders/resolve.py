"""Which encoder backend runs a config, decided once per run without importing torch (no encoder module either).

:func:`resolve_encoder` decides the backend, the export it runs and the fingerprint in one go
(:class:`ResolvedEncoder`); the scorer keeps that value and hands it to every layer (the encoder, the text cache,
the run key, the manifest), so no layer decides again. :func:`resolve_backend` is the backend alone.

``backend="auto"`` (the default) resolves, in this order:

1. ``quantize="int8"`` → onnx (int8 exists only there; never chosen unless asked for);
2. a GPU asked for (``device`` cuda/mps, half ``dtype``) or model code (``trust_remote_code``) → torch;
3. ``device="auto"`` with torch installed and a GPU visible (``/dev/nvidia*``, Apple silicon) → torch;
4. a fresh ONNX export of the model (:func:`tutormetrics.encoders.onnx.store.check_export`) → onnx;
5. else torch (a stale export is not used: ``--backend onnx`` says why).

Example:
    >>> from tutormetrics.encoders.config import EncoderConfig
    >>> resolve_backend(EncoderConfig(backend="torch"))
    'torch'
    >>> resolve_backend(EncoderConfig(quantize="int8"))
    'onnx'
    >>> resolve_encoder(EncoderConfig(backend="torch")).backend
    'torch'
"""

from __future__ import annotations

import importlib.util
import os
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tutormetrics.encoders.onnx.store import ExportInfo, check_export, require_export


def torch_installed() -> bool:
    """Whether ``import torch`` would find a package (nothing is imported)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # an import hook that refuses torch
        return False


def gpu_visible() -> bool:
    """A cheap guess that torch would pick a GPU for ``device="auto"``: an NVIDIA device node not hidden by
    ``CUDA_VISIBLE_DEVICES``, or Apple silicon (MPS)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if (visible is None or visible.strip() not in ("", "-1")) and any(Path("/dev").glob("nvidia[0-9]*")):
        return True
    return platform.system() == "Darwin" and platform.machine() == "arm64"


def resolve_backend(config: Any) -> str:
    """``"torch"`` or ``"onnx"`` for an :class:`~tutormetrics.encoders.config.EncoderConfig` (see the module
    docstring; not imported here: the config module calls this one)."""
    return _decide(config)[0]


def _decide(config: Any) -> tuple[str, ExportInfo | None]:
    """The backend and, when it is onnx by ``auto``, the fresh export that decided it (one ``check_export``)."""
    if config.backend != "auto":
        return config.backend, None
    if config.quantize is not None:
        return "onnx", None
    kind = config.device.split(":", 1)[0]
    if kind in ("cuda", "mps") or config.dtype in ("float16", "bfloat16") or config.trust_remote_code:
        return "torch", None
    if kind == "auto" and torch_installed() and gpu_visible():
        return "torch", None
    path = config.resolved_model_path()
    if not Path(path).is_dir():
        return "torch", None
    info, _ = check_export(path)
    return ("onnx", info) if info is not None else ("torch", None)


@dataclass(frozen=True)
class ResolvedEncoder:
    """An encoder config as this run uses it, decided once: the backend, the export (onnx) and the fingerprint.

    Attributes:
        config: the config as given (``backend`` may be ``auto``).
        backend: ``"torch"`` or ``"onnx"``.
        export: the fresh export the onnx backend runs (``None`` for torch).
        fingerprint: :meth:`EncoderConfig.fingerprint` of the config with this backend and export.
    """

    config: Any  # an EncoderConfig (not imported: the config module imports this one)
    backend: str
    export: ExportInfo | None
    fingerprint: str
    _device: list[str] = field(default_factory=list, compare=False, repr=False)  # the torch device, once found

    def settings(self, torch_device: Any = None) -> dict[str, str]:
        """``backend``, ``device`` and ``dtype`` as resolved; ``torch_device``: the function that picks the torch
        device for ``device="auto"`` (called once; :func:`tutormetrics.engine.resolved.encoder_settings` hands in
        :func:`tutormetrics.encoders.hf.resolve_device`; without it ``auto`` stays the word)."""
        dtype = "float32" if self.config.dtype == "auto" else str(self.config.dtype)
        if self.backend == "onnx":
            return {"backend": "onnx", "device": "cpu", "dtype": dtype}
        device = str(self.config.device)
        if device == "auto" and not self._device and torch_device is not None:
            self._device.append(str(torch_device()))
        return {"backend": "torch", "device": self._device[0] if self._device else device, "dtype": dtype}

    def with_config(self, config: Any) -> ResolvedEncoder:
        """The same backend and export for a config differing in run-time fields (``batch_size``, …): a new
        fingerprint, no new decision."""
        fingerprint = config.fingerprint_for(self.backend, self.export)
        return replace(self, config=config, fingerprint=fingerprint, _device=list(self._device))


def resolve_encoder(config: Any) -> ResolvedEncoder:
    """Decide ``config``'s backend, export and fingerprint (at most one export check; files hashed only when their
    size or mtime changed: :mod:`tutormetrics.encoders.onnx.store`).

    Raises:
        ModelLoadError: the onnx backend is asked for and there is no fresh export.
        AlteredExportError: the export's files are not the ones it recorded.
    """
    backend, export = _decide(config)
    if backend == "onnx" and export is None:
        export = require_export(config.resolved_model_path())
    return ResolvedEncoder(config, backend, export, config.fingerprint_for(backend, export))
