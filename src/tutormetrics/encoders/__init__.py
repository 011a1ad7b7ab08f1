"""Encoders: offline model loading, windowing of long texts and on-device reductions to per-text artifacts.

Nothing here imports :mod:`tutormetrics.metrics`; the metric families read what the encoder produces
(:class:`~tutormetrics.encoders.artifacts.EncodedTexts`). torch loads with :mod:`tutormetrics.encoders.hf`
(the torch backend); the package :mod:`tutormetrics.encoders.onnx` is the ONNX Runtime backend (no torch):
its encoder, its export and the store of exports. Both backends share :mod:`~tutormetrics.encoders.base` and
:mod:`~tutormetrics.encoders.windows`, and :mod:`~tutormetrics.encoders.resolve` picks one for ``backend="auto"``.
"""
