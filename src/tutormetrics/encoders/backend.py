"""The encoder object for a config: the onnx or the torch backend (:mod:`tutormetrics.encoders.resolve` decides).

Example:
    >>> from tutormetrics.encoders.config import EncoderConfig
    >>> type(make_encoder(EncoderConfig(backend="torch"))).__name__  # doctest: +SKIP
    'TextEncoder'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tutormetrics.encoders.resolve import (  # noqa: F401 - re-exported
    ResolvedEncoder,
    gpu_visible,
    resolve_backend,
    resolve_encoder,
    torch_installed,
)
from tutormetrics.errors import ModelLoadError

if TYPE_CHECKING:
    from tutormetrics.encoders.config import EncoderConfig


def make_encoder(config: EncoderConfig | ResolvedEncoder) -> Any:
    """The (unloaded) encoder for ``config``: :class:`~tutormetrics.encoders.onnx.encoder.OnnxTextEncoder` or
    :class:`~tutormetrics.encoders.hf.TextEncoder` (only then is torch imported). A
    :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` (the run's, decided once) is handed to the encoder; a
    plain config is resolved here."""
    resolved = config if isinstance(config, ResolvedEncoder) else resolve_encoder(config)
    config = resolved.config
    if resolved.backend == "onnx":
        from tutormetrics.encoders.onnx.encoder import OnnxTextEncoder

        return OnnxTextEncoder(config, resolved)
    if not torch_installed():
        raise ModelLoadError(
            "the torch backend needs torch, which is not installed, and there is no fresh ONNX export of "
            f"'{config.resolved_model_path()}'",
            hint="install torch, or export the model once where torch is installed and copy the folder "
            "(tutormetrics encoder export; see README: scoring without torch)",
        )
    from tutormetrics.encoders.hf import TextEncoder

    return TextEncoder(config, resolved)


def is_encoder(obj: object) -> bool:
    """Whether ``obj`` is a ready encoder of either backend (no torch import to find out)."""
    kind = (type(obj).__module__, type(obj).__name__)
    return kind in (("tutormetrics.encoders.hf", "TextEncoder"), ("tutormetrics.encoders.onnx.encoder", "OnnxTextEncoder"))
