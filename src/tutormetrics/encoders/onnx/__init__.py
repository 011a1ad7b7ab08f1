"""The ONNX Runtime encoder backend, one module per job (no torch on the scoring path):

==========================================  ===================================================================
module                                      job
==========================================  ===================================================================
:mod:`tutormetrics.encoders.onnx.encoder`   :class:`~tutormetrics.encoders.onnx.encoder.OnnxTextEncoder`: score
                                            with an export (onnxruntime + tokenizers, numpy reductions)
:mod:`tutormetrics.encoders.onnx.export`    ``export_model``: make the export once (needs torch + transformers)
:mod:`tutormetrics.encoders.onnx.store`     where exports live and whether one is fresh (standard library only)
==========================================  ===================================================================

This file imports nothing, so ``tutormetrics.encoders.onnx.store`` stays a millisecond import for
:mod:`tutormetrics.encoders.resolve`. The int8-vs-float32 drift measurement scores the bundled example through
the engine, so it lives above this room: :mod:`tutormetrics.engine.int8_drift`.
"""
