"""The encoder object for a config: the onnx or the torch backend (:mod:`tutormetrics.encoders.resolve` decides).

Example:
    >>> from tutormetrics.encoders.config import EncoderConfig
    >>> type(make_encoder(EncoderConfig(backend="torch"))).__name__  # doctest: +SKIP
    'TextEncoder'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tutormetrics.encoders.resolve import gpu_visible, resolve_backend, torch_installed  # noqa: F401 - re-exported
from tutormetrics.errors import ModelLoadError

if TYPE_CHECKING:
    from tutormetrics.encoders.config import EncoderConfig


def make_encoder(config: EncoderConfig) -> Any:
    """The (unloaded) encoder for ``config``: :class:`~tutormetrics.encoders.onnx.encoder.OnnxTextEncoder` or
    :class:`~tutormetrics.encoders.hf.TextEncoder` (only then is torch imported)."""
    if resolve_backend(config) == "onnx":
        from tutormetrics.encoders.onnx.encoder import OnnxTextEncoder

        return OnnxTextEncoder(config)
    if not torch_installed():
        raise ModelLoadError(
            "the torch backend needs torch, which is not installed, and there is no fresh ONNX export of "
            f"'{config.resolved_model_path()}'",
            hint="install torch, or export the model once where torch is installed and copy the folder "
            "(tutormetrics encoder export; see README: scoring without torch)",
        )
    from tutormetrics.encoders.hf import TextEncoder

    return TextEncoder(config)


def is_encoder(obj: object) -> bool:
    """Whether ``obj`` is a ready encoder of either backend (no torch import to find out)."""
    kind = (type(obj).__module__, type(obj).__name__)
    return kind in (("tutormetrics.encoders.hf", "TextEncoder"), ("tutormetrics.encoders.onnx.encoder", "OnnxTextEncoder"))
