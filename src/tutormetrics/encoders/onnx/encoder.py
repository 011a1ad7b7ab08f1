"""The encoder on ONNX Runtime (CPU): the same windows, batches and pooling as :mod:`tutormetrics.encoders.hf`,
without torch or transformers.

:class:`OnnxTextEncoder` reads an export made by ``tutormetrics encoder export``
(:mod:`tutormetrics.encoders.onnx.export`, stored as :mod:`tutormetrics.encoders.onnx.store` says), tokenises
with the ``tokenizers`` package from the export's ``tokenizer.json`` (the tokenizer as transformers configured
it: no special tokens, no truncation, no padding), cuts windows and batches with
:mod:`tutormetrics.encoders.windows`, runs every batch through one ``onnxruntime.InferenceSession`` (all
``L + 1`` hidden states are graph outputs; intra-op threads = the cores this process may use, graph
optimisations on) and reduces the hidden states in numpy (:func:`~tutormetrics.encoders.windows.reduce_windows`).
Imports cost ~0.25 s and opening the session ~0.1-0.4 s, against seconds for torch + transformers.

``quantize="int8"`` runs the dynamically quantised copy (int8 weights, activations quantised per batch):
faster, and its numbers drift from float32 (``benchmarks/RESULTS.md`` §16b), so it is opt-in only.

Example:
    >>> enc = OnnxTextEncoder(EncoderConfig(backend="onnx"))        # doctest: +SKIP
    >>> enc.encode(["Where did the cat sit?", ""]).n_windows         # doctest: +SKIP
    array([1, 0])
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.base import EncoderBase
from tutormetrics.encoders.config import EncoderConfig
from tutormetrics.encoders.onnx.store import ExportInfo
from tutormetrics.encoders.windows import (
    WindowSink,
    batch_inputs,
    cut_windows,
    flatten,
    plan_batches,
    reduce_windows,
    word_pieces,
)
from tutormetrics.errors import ConfigError, ModelLoadError
from tutormetrics.progress import progress_bar


@dataclass(frozen=True)
class CpuDevice:
    """Stands in for ``torch.device("cpu")`` (callers read ``.type``)."""

    type: str = "cpu"

    def __str__(self) -> str:
        return self.type


def cpu_threads() -> int:
    """Cores this process may run on (``sched_getaffinity``, else ``os.cpu_count()``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class OnnxTextEncoder(EncoderBase):
    """Lazy ONNX Runtime encoder producing :class:`EncodedTexts`, with :class:`~tutormetrics.encoders.hf.TextEncoder`'s
    interface (``load``, ``encode``, ``tokenize``, ``describe``, ``with_options``, the counters)."""

    backend = "onnx"

    def __init__(self, config: EncoderConfig | None = None, resolved: Any = None) -> None:
        """``resolved``: the run's :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` (its export is opened, not
        checked again); ``None`` decides on first use."""
        config = config if config is not None else EncoderConfig(backend="onnx")
        if config.backend == "torch":
            raise ConfigError("OnnxTextEncoder is the onnx backend, the config asks for torch", hint="use make_encoder(config)")
        self.config = replace(config, backend="onnx") if config.backend == "auto" else config
        if self.config.device.split(":", 1)[0] not in ("auto", "cpu"):
            raise ConfigError(
                f"the onnx backend runs on the CPU, not on device {self.config.device!r}", hint="use --backend torch on a GPU"
            )
        if self.config.dtype not in ("auto", "float32"):
            raise ConfigError(f"dtype={self.config.dtype} needs the torch backend on a GPU", hint="use --backend torch")
        self._session: Any = None
        self._tokenizer: Any = None
        self._export: ExportInfo | None = None
        self._max_seq_length: int | None = None
        self._threads = 0
        self._adopt(resolved)
        self.reset_counters()

    def __repr__(self) -> str:
        return f"OnnxTextEncoder({self.config!r})"

    # ------------------------------------------------------------------ loading
    @property
    def is_loaded(self) -> bool:
        return self._session is not None

    def load(self) -> OnnxTextEncoder:
        """Open the export (once): check it is fresh, read the tokenizer, start the session."""
        if self._session is not None:
            return self
        path = self.config.resolved_model_path()
        info: ExportInfo = self.resolved.export
        meta = info.meta
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ModelLoadError(
                f"the onnx backend needs {err.name}, which is not installed", hint="pip install 'tutormetrics[onnx]'"
            ) from err
        try:
            tokenizer = Tokenizer.from_file(str(info.folder / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.intra_op_num_threads = cpu_threads()
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(info.model_file(self.config.quantize)), options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:
            raise ModelLoadError(
                f"could not open the ONNX export in {info.folder}: {type(err).__name__}: {err}",
                hint=f"re-export it: tutormetrics encoder export --force {path}",
            ) from err
        n_outputs = len(session.get_outputs())
        if n_outputs != int(meta["n_layers"]) + 1:
            raise ModelLoadError(f"the ONNX export has {n_outputs} outputs, expected n_layers + 1 = {meta['n_layers'] + 1}")
        self._session, self._tokenizer, self._export = session, tokenizer, info
        self._threads = options.intra_op_num_threads
        self._max_seq_length = _resolve_max_seq_length(self.config, meta)
        return self

    def with_options(self, **changes: Any) -> OnnxTextEncoder:
        """A new encoder with some config fields changed, sharing this one's session when only run-time fields
        change (``batch_size``, ``batch_tokens``, ``max_seq_length``, ``long_text``, ``spill_mb``)."""
        new = OnnxTextEncoder(replace(self.config, **changes), self._resolved)
        shared = ("model_name_or_path", "device", "dtype", "trust_remote_code", "backend", "quantize")
        if self._session is not None and all(getattr(new.config, f) == getattr(self.config, f) for f in shared):
            assert self._export is not None
            new._session, new._tokenizer, new._export, new._threads = self._session, self._tokenizer, self._export, self._threads
            new._max_seq_length = _resolve_max_seq_length(new.config, self._export.meta)
        return new

    @property
    def _meta(self) -> dict[str, Any]:
        self.load()
        assert self._export is not None
        return self._export.meta

    @property
    def n_layers(self) -> int:
        """Transformer blocks ``L`` (hidden states ``0..L``)."""
        return int(self._meta["n_layers"])

    @property
    def hidden_size(self) -> int:
        return int(self._meta["hidden_size"])

    @property
    def n_special_tokens(self) -> int:
        return len(self._meta["prefix"]) + len(self._meta["suffix"])

    @property
    def device(self) -> CpuDevice:
        return CpuDevice()

    @property
    def tokenizer(self) -> Any:
        """The ``tokenizers.Tokenizer``."""
        self.load()
        return self._tokenizer

    @property
    def loader(self) -> str:
        return "onnxruntime"

    def describe(self) -> dict[str, Any]:
        """Manifest entry: model, export, window settings, backend, quantisation and library versions."""
        self.load()
        from importlib.metadata import version

        import onnxruntime as ort

        meta = self._meta
        assert self._export is not None
        return {
            "model_name_or_path": self.config.resolved_model_path(),
            "fingerprint": self.resolved.fingerprint,
            "backend": "onnx",
            "quantize": self.config.quantize,
            "export": {
                "folder": str(self._export.folder),
                "file": self._export.model_file(self.config.quantize).name,
                "source_sha256": meta["source_sha256"],
                "exporter": meta.get("exporter"),
                "fused": meta.get("optimizer", {}).get("fused"),
                "probe_max_abs_diff": meta.get("probe_max_abs_diff"),
            },
            "architecture": meta.get("architecture"),
            "n_layers": self.n_layers,
            "hidden_size": self.hidden_size,
            "max_seq_length": self.max_seq_length,
            "window_content_tokens": self.window_size,
            "long_text": self.config.long_text,
            "pooling": "mean (CLS/SEP included), window-token-weighted",
            "loader": "onnxruntime",
            "batch_size": self.config.batch_size,
            "batch_tokens": self.config.batch_budget("cpu", self.max_seq_length),
            "device": "cpu",
            "intra_op_threads": self._threads,
            "dtype": "int8 weights (dynamic)" if self.config.quantize == "int8" else "float32",
            "autocast": False,
            "versions": {"onnxruntime": ort.__version__, "tokenizers": version("tokenizers")},
        } | ({"int8_drift": self._export.int8_drift() or "not measured: run `tutormetrics encoder export --force`"}
             if self.config.quantize == "int8" else {})

    # ----------------------------------------------------------------- encoding
    def _pieces(self, texts: Sequence[str], with_offsets: bool) -> tuple[list[Any], list[np.ndarray] | None]:
        self.load()
        return word_pieces(self._word_pieces, texts, with_offsets, bool(self._meta.get("segmentable")))

    def _word_pieces(self, texts: Sequence[str], return_offsets_mapping: bool = False) -> dict[str, Any]:
        """The tokenizer on ``texts`` as transformers' fast tokenizer calls it (``encode_batch``, no specials)."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        out: dict[str, Any] = {"input_ids": [e.ids for e in encodings]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encodings]
        return out

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> EncodedTexts:
        """Encode texts into per-text reductions (one forward pass per window; duplicates once)."""
        self.load()
        meta = self._meta
        texts = list(texts)
        index: dict[str, int] = {}
        inverse = np.array([index.setdefault(t, len(index)) for t in texts], dtype=np.int64)
        unique = list(index)
        ids, offsets = self._pieces(unique, with_offsets=True)
        L, d = self.n_layers, self.hidden_size
        n_tok = np.array([len(x) for x in ids], dtype=np.int64)
        win, n_win, truncated = cut_windows(n_tok, self.window_size, self.config.long_text)
        prefix, suffix = list(meta["prefix"]), list(meta["suffix"])
        n_special = len(prefix) + len(suffix)
        order = np.argsort(-win.length, kind="stable")  # longest first, as the torch path
        sink = WindowSink(win, n_win, L, d, self.config.spill_mb)
        bounds = plan_batches(
            win.length[order] + n_special, self.config.batch_size, self.config.batch_budget("cpu", self.max_seq_length)
        )
        flat_ids, text_start = flatten(ids)
        del ids
        input_names = list(meta["inputs"])
        bar = progress_bar(len(bounds), stage="encode", unit="batches", progress=progress, file=sys.stderr)
        try:
            for b0, b1 in bounds:
                sel = order[b0:b1]
                starts = text_start[win.text[sel]] + win.start[sel]
                content_len = win.length[sel]
                input_ids, attn, content, _ = batch_inputs(flat_ids, starts, content_len, prefix, suffix, int(meta["pad_token_id"]))
                feed = {"input_ids": input_ids, "attention_mask": attn}
                if "token_type_ids" in input_names:
                    feed["token_type_ids"] = np.zeros_like(input_ids)
                hidden = self._session.run(None, feed)
                sink.put(sel, reduce_windows(hidden, attn, content, content_len))
                bar.update(1)
        finally:
            bar.close()
        encoded = sink.combine(len(unique), L, d, n_special, truncated)
        if offsets is not None:
            encoded.token_offsets = [o[: int(k)] for o, k in zip(offsets, encoded.n_content_tokens, strict=True)]
        self.count(n_win, len(win.text), len(bounds), encoded)
        if len(unique) != len(texts) or len(texts) == 0:
            encoded = encoded.subset(inverse)
        return encoded


def _resolve_max_seq_length(cfg: EncoderConfig, meta: dict[str, Any]) -> int:
    """``cfg.max_seq_length`` or the export's, checked against the position embeddings (as the torch path)."""
    msl = cfg.max_seq_length if cfg.max_seq_length is not None else meta.get("max_seq_length")
    max_pos = meta.get("max_position_embeddings")
    if msl is None or msl > 100_000:
        msl = max_pos
    if msl is None:
        raise ConfigError("the export declares no max_seq_length", hint="pass max_seq_length")
    if max_pos is not None and msl > max_pos:
        raise ConfigError(
            f"max_seq_length={msl} exceeds the model's {max_pos} position embeddings", hint=f"use max_seq_length <= {max_pos}"
        )
    if msl - len(meta["prefix"]) - len(meta["suffix"]) < 1:
        raise ConfigError(f"max_seq_length={msl} leaves no room for content tokens")
    return int(msl)
