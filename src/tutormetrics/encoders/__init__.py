"""Encoders: offline model loading, windowing of long texts and on-device reductions to per-text artifacts.

Nothing here imports :mod:`tutormetrics.metrics`; the metric families read what the encoder produces
(:class:`~tutormetrics.encoders.artifacts.EncodedTexts`). torch loads with :mod:`tutormetrics.encoders.hf`
(the torch backend); :mod:`tutormetrics.encoders.onnx_encoder` is the ONNX Runtime backend (no torch), fed by
:mod:`~tutormetrics.encoders.onnx_export`; both share :mod:`~tutormetrics.encoders.windows`, and
:mod:`~tutormetrics.encoders.resolve` picks one for ``backend="auto"``.
"""
