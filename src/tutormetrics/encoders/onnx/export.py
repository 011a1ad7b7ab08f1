"""Export a local sentence-transformers BERT-family model to ONNX, once, for the onnx backend.

Needs torch, transformers, onnx and onnxruntime (only here: scoring with the export needs neither torch nor
transformers). Steps, all local (the model loads with ``local_files_only``; nothing is downloaded):

1. load the folder's transformer through transformers with eager attention (the graph ONNX Runtime's BERT
   fusions recognise) and its fast tokenizer;
2. ``torch.onnx.export`` (TorchScript exporter, opset 17) of a wrapper returning **every** hidden state
   (embeddings and each block: ``L + 1`` outputs, all that synchrony needs), batch and sequence dynamic;
3. ONNX Runtime's transformer optimizer for BERT (``onnxruntime.transformers.optimizer.optimize_model``):
   fused attention, embedding/skip layer norm and bias-GELU; the hidden-state outputs stay graph outputs;
4. ``onnxruntime.quantization.quantize_dynamic`` to int8 weights, per channel and in the reduced 7-bit range
   (plain per-tensor S8 weights saturate in AVX2/AVX-512 kernels: last-layer pooled cosine to float32 fell to
   0.89 on real replies, 0.98 with these settings), dynamic activations, no calibration data, for
   ``--quantize int8``;
5. a check: on a probe batch with padding, every float32 hidden state equals torch's within
   :data:`MAX_ABS_DIFF`, else nothing is written;
6. the tokenizer exactly as transformers configured it (``backend_tokenizer``), the special-token frame,
   window length, ``[name, size, mtime_ns, sha256]`` of every source and export file and the versions into
   ``export.json`` (:mod:`tutormetrics.encoders.onnx.store`); every file is fsynced and the folder appears
   atomically (renamed into place), ``export.json`` written through :mod:`tutormetrics.io.atomic`.

Example:
    >>> export_model(default_model_path())  # doctest: +SKIP
    PosixPath('/root/.cache/tutormetrics/onnx/all-MiniLM-L6-v2-…')
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from tutormetrics.encoders.config import default_model_path, ensure_offline
from tutormetrics.encoders.onnx.store import (
    EXPORT_FILES,
    EXPORT_FORMAT,
    META_NAME,
    MODEL_FILES,
    AlteredExportError,
    aggregate_hash,
    check_export,
    export_dir_for,
    file_records,
    source_names,
)
from tutormetrics.errors import ConfigError, ModelLoadError
from tutormetrics.progress import Log, quiet

#: Largest |ONNX − torch| allowed in any float32 hidden state on the probe batch (float32 kernels differ
#: by ~1e-5 on MiniLM's hidden states; pooled values and cosines agree to ~1e-6).
MAX_ABS_DIFF = 1e-3
OPSET = 17
_PROBE = [
    "Where did the cat sit? On the mat, because it was warm.",
    "Try again: what is two plus four?",
    "变量的值是多少",
    "",
]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("torch", "transformers", "onnx", "onnxruntime", "tokenizers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def export_model(
    model_path: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    keep_raw: bool = False,
    log: Log = quiet,
) -> Path:
    """Export ``model_path`` (default: the bundled all-MiniLM-L6-v2) into ``out_dir`` (default: its folder in
    the export store) and return the folder. A fresh export is kept unless ``force``; ``keep_raw`` also keeps
    the unfused export as ``raw.onnx`` (benchmarks compare it).

    Args:
        model_path: sentence-transformers model folder; ``None``: the bundled all-MiniLM-L6-v2.
        out_dir: export folder; ``None``: the model's folder in the export store.
        force: re-export even when the export is up to date.
        keep_raw: also keep the unfused export as ``raw.onnx``.
        log: receives the progress lines.
    """
    path = os.path.abspath(os.fspath(model_path)) if model_path is not None else default_model_path()
    if not Path(path).is_dir():
        raise ModelLoadError(f"model '{path}' is not a local folder", hint="pass a sentence-transformers model directory")
    from tutormetrics.encoders.layout import read_st_layout

    layout = read_st_layout(path)
    if layout is None:
        raise ConfigError(
            f"'{path}' is not a sentence-transformers folder the onnx backend reproduces",
            hint="export handles one Hugging Face transformer with mean pooling (optionally Normalize); use --backend torch",
        )
    target = Path(out_dir) if out_dir is not None else export_dir_for(path)
    try:
        info, why = check_export(path, target)
    except AlteredExportError as err:  # replaced below, with or without --force
        info, why = None, str(err).split("\n", 1)[0]
    if info is not None and not force:
        log(f"export: {target} is up to date (source SHA-256 {info.meta['source_sha256'][:12]}…)")
        return target
    if why is not None:
        log(f"export: replacing it: {why}")
    for name in ("torch", "transformers", "onnx", "onnxruntime"):
        import importlib.util

        if importlib.util.find_spec(name) is None:
            raise ModelLoadError(
                f"exporting needs {name}, which is not installed",
                hint="pip install 'tutormetrics[onnx]' torch transformers on a machine with torch, then copy the "
                "export folder (see README: scoring without torch)",
            )
    t0 = time.perf_counter()
    log(f"export: {path} -> {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        meta = _export_into(path, layout, work, log, keep_raw)
        meta["seconds"] = round(time.perf_counter() - t0, 2)
        _write_meta(work, meta)
        work.chmod(0o755)  # mkdtemp makes it private; an export is read by every user of the model
        _swap_in(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log(f"export: done in {time.perf_counter() - t0:.1f} s")
    return target


def _swap_in(work: Path, target: Path) -> None:
    """Rename the finished export ``work`` to ``target``. What stands at ``target`` (an old export, or a link planted
    there, dangling or not) is first renamed into a fresh hidden folder and removed with it: a link is moved and
    removed itself, never followed, so nothing outside the store is created or deleted. A failed rename puts the
    old export back (``docs/commands/encoder.md#the-export-store``).

    Args:
        work: The complete export (a fresh folder beside ``target``).
        target: The export's place in the store.
    """
    trash = Path(tempfile.mkdtemp(prefix=".export-old-", dir=target.parent))
    old = trash / "old"
    try:
        moved = os.path.lexists(target)
        if moved:
            target.rename(old)  # rename(2) moves a link, not what it points to
        try:
            work.rename(target)
        except BaseException:
            if moved and not os.path.lexists(target):
                old.rename(target)
            raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)  # rmtree removes links inside without following them


def _write_meta(work: Path, meta: dict[str, Any]) -> None:
    """Record every export file (``[name, size, mtime_ns, sha256]``) in ``meta``, make the files durable (fsync) and
    write ``export.json`` atomically: the folder renamed into place next holds complete files only."""
    from tutormetrics.io.atomic import write_text_atomic

    for name in EXPORT_FILES:
        with open(work / name, "rb+") as fh:
            os.fsync(fh.fileno())
    meta["files"] = file_records(work, EXPORT_FILES)
    write_text_atomic(work / META_NAME, json.dumps(meta, indent=2, sort_keys=True))


def _export_into(path: str, layout: Any, work: Path, log: Log, keep_raw: bool = False) -> dict[str, Any]:
    """Write model.onnx, model.int8.onnx and tokenizer.json into ``work``; return export.json's content."""
    ensure_offline()
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from tutormetrics.encoders.hf import _special_frame
    from tutormetrics.encoders.pieces import splits_at_spaces

    folder = str(layout.transformer_dir)
    hub = {"local_files_only": True}
    config = AutoConfig.from_pretrained(folder, **hub)
    text_cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    tok_kwargs = {} if layout.max_seq_length is None else {"model_max_length": layout.max_seq_length}
    tokenizer = AutoTokenizer.from_pretrained(folder, **hub, **tok_kwargs)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"encoder '{path}' has no fast tokenizer (tokenizer.json)", hint="use --backend torch")
    try:
        model = AutoModel.from_pretrained(folder, config=config, attn_implementation="eager", **hub).eval()
    except Exception as err:
        raise ModelLoadError(f"could not load '{path}' for export: {type(err).__name__}: {err}") from err
    n_layers, d = int(text_cfg.num_hidden_layers), int(text_cfg.hidden_size)
    n_heads = int(text_cfg.num_attention_heads)
    max_pos = getattr(text_cfg, "max_position_embeddings", None)
    msl = layout.max_seq_length
    if msl is None:
        msl = tokenizer.model_max_length
        if max_pos is not None and max_pos != -1:
            msl = min(msl, max_pos)
    prefix, suffix = _special_frame(tokenizer)
    uses_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if uses_types else [])
    outputs = [f"hidden_{i}" for i in range(n_layers + 1)]

    class AllHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> tuple[Any, ...]:
            out = self.inner(**dict(zip(inputs, args, strict=True)), output_hidden_states=True, return_dict=True)
            return tuple(out.hidden_states)

    batch = tokenizer(_PROBE, padding=True, return_tensors="pt")
    feed_t = tuple(batch[k] if k in batch else torch.zeros_like(batch["input_ids"]) for k in inputs)
    raw = work / "raw.onnx"
    log(f"export: torch.onnx.export ({n_layers + 1} hidden states as outputs)")
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        expected = [h.numpy() for h in AllHidden(model)(*feed_t)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            AllHidden(model), feed_t, str(raw), dynamo=False, opset_version=OPSET, input_names=inputs,
            output_names=outputs, dynamic_axes={k: {0: "batch", 1: "sequence"} for k in inputs + outputs},
        )  # fmt: skip
    fused = _optimise_and_quantise(raw, work, n_heads, d, outputs, keep_raw, log)
    diffs = _probe_diffs(work, dict(zip(inputs, feed_t, strict=True)), expected)
    if not diffs["float32"] <= MAX_ABS_DIFF:
        raise ModelLoadError(
            f"the ONNX export of '{path}' disagrees with torch by {diffs['float32']:.2e} (> {MAX_ABS_DIFF})",
            hint="this architecture is not supported by the onnx backend; use --backend torch",
        )
    tokenizer.backend_tokenizer.save(str(work / "tokenizer.json"))
    sources = file_records(Path(path), source_names(path))
    return {
        "format": EXPORT_FORMAT,
        "source": path,
        "source_sha256": aggregate_hash(sources),
        "source_files": sources,
        "architecture": type(model).__name__,
        "n_layers": n_layers,
        "hidden_size": d,
        "num_attention_heads": n_heads,
        "max_seq_length": int(msl),
        "max_position_embeddings": max_pos,
        "prefix": prefix,
        "suffix": suffix,
        "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
        "inputs": inputs,
        "outputs": outputs,
        "segmentable": splits_at_spaces(tokenizer),
        "exporter": f"torch.onnx.export(dynamo=False, opset_version={OPSET})",
        "optimizer": {"model_type": "bert", "fused": fused},
        "quantization": {
            "int8": "quantize_dynamic(weight_type=QInt8, per_channel=True, reduce_range=True): int8 weights per output "
            "channel, 7-bit range (no VPMADDUBSW saturation on AVX2/AVX-512), activations quantised per batch, no calibration"
        },
        "probe_max_abs_diff": diffs,
        "versions": _versions(),
    }


def _optimise_and_quantise(
    raw: Path, work: Path, n_heads: int, hidden: int, outputs: list[str], keep_raw: bool, log: Log
) -> dict[str, int]:
    """ONNX Runtime's BERT fusions on ``raw`` (saved as the float32 model), then its dynamic int8 copy; returns the
    fused operator counts. Every hidden-state output must survive the optimiser."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    log("export: ONNX Runtime BERT fusions")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized = optimize_model(str(raw), model_type="bert", num_heads=n_heads, hidden_size=hidden, opt_level=0)
    fused = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
    kept = [o.name for o in optimized.model.graph.output]
    if kept != outputs:
        raise ModelLoadError(f"the optimised graph lost hidden-state outputs ({kept} instead of {outputs})")
    fp32 = work / MODEL_FILES[None]
    optimized.save_model_to_file(str(fp32))
    if not keep_raw:
        raw.unlink()
    log("export: dynamic int8 quantisation")
    logging.disable(logging.WARNING)  # quantize_dynamic's "consider pre-processing" note goes to the root logger
    try:
        quantize_dynamic(
            str(fp32), str(work / MODEL_FILES["int8"]), weight_type=QuantType.QInt8, per_channel=True,
            reduce_range=True, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )  # fmt: skip
    finally:
        logging.disable(logging.NOTSET)
    return fused


def _probe_diffs(work: Path, tensors: dict[str, Any], expected: list[Any]) -> dict[str, float]:
    """Largest |ONNX − torch| over the probe's real (unpadded) positions and every hidden state, per exported copy."""
    import numpy as np

    feed = {k: v.numpy() for k, v in tensors.items()}
    mask = feed["attention_mask"].astype(bool)[:, :, None]
    diffs = {}
    for q in MODEL_FILES:
        got = _run_probe(work / MODEL_FILES[q], feed)
        diffs[q or "float32"] = max(float(np.abs(np.where(mask, a - b, 0)).max()) for a, b in zip(got, expected, strict=True))
    return diffs


def _run_probe(model_file: Path, feed: dict[str, Any]) -> list[Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    return session.run(None, feed)
