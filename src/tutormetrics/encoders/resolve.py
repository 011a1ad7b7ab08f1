"""Which encoder backend runs a config, decided without importing torch (no encoder module imported either).

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
"""

from __future__ import annotations

import importlib.util
import os
import platform
from pathlib import Path
from typing import Any

from tutormetrics.encoders.onnx.store import check_export


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
    if config.backend != "auto":
        return config.backend
    if config.quantize is not None:
        return "onnx"
    kind = config.device.split(":", 1)[0]
    if kind in ("cuda", "mps") or config.dtype in ("float16", "bfloat16") or config.trust_remote_code:
        return "torch"
    if kind == "auto" and torch_installed() and gpu_visible():
        return "torch"
    path = config.resolved_model_path()
    if not Path(path).is_dir():
        return "torch"
    info, _ = check_export(path)
    return "onnx" if info is not None else "torch"
