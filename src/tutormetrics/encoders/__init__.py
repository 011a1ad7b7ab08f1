"""Encoders: offline model loading, windowing of long texts and on-device reductions to per-text artifacts.

Nothing here imports :mod:`tutormetrics.metrics`; the metric families read what the encoder produces
(:class:`~tutormetrics.encoders.artifacts.EncodedTexts`). torch loads with :mod:`tutormetrics.encoders.hf`.
"""
