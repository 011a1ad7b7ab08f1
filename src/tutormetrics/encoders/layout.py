"""What a sentence-transformers model folder asks for, read from its JSON files (no torch, no ST import).

:func:`read_st_layout` decides whether :mod:`tutormetrics.encoders.hf` may load a folder through
``transformers`` directly (``AutoTokenizer`` + ``AutoModel``) instead of ``SentenceTransformer``, which
costs seconds of imports (it pulls in scikit-learn). The direct path is taken only for layouts whose
numbers it reproduces exactly: the first module a plain Hugging Face ``Transformer`` whose
``sentence_bert_config.json`` says nothing but ``max_seq_length`` (and neutral defaults), a mean
``Pooling`` module (tutormetrics computes mean pooling, ``docs/metrics.md#pooling``), optionally ``Normalize``
(cosines ignore it). Anything else (``do_lower_case``, custom kwargs, Dense layers, CLS pooling,
encoder-decoder configs, hub ids) returns ``None``: the caller falls back to ``SentenceTransformer``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: sentence_bert_config.json names sentence-transformers tries, in its order.
_ST_CONFIG_NAMES = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
#: Keys of sentence_bert_config.json that the direct loader understands, with the values it accepts.
_NEUTRAL = {
    "do_lower_case": (False,),
    "transformer_task": ("feature-extraction",),
    "module_output_name": ("token_embeddings",),
    "modality_config": ({"text": {"method": "forward", "method_output_name": "last_hidden_state"}},),
}
_KWARG_KEYS = ("model_args", "model_kwargs", "tokenizer_args", "processor_kwargs", "config_args", "config_kwargs")


@dataclass(frozen=True)
class DirectLayout:
    """A folder the direct loader handles: where the HF model is and the window length ST would use.

    Attributes:
        transformer_dir: folder with ``config.json``, the weights and the tokenizer.
        max_seq_length: ``sentence_bert_config.json``'s value, or ``None`` (ST then uses the tokenizer's
            ``model_max_length`` capped at ``max_position_embeddings``).
        pooling: always ``"mean"`` (the only pooling tutormetrics computes).
    """

    transformer_dir: Path
    max_seq_length: int | None
    pooling: str = "mean"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def is_mean_pooling(config: dict[str, Any]) -> bool:
    """Whether a ``1_Pooling/config.json`` asks for plain mean pooling (old or new key style).

    Example:
        >>> is_mean_pooling({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False})
        True
        >>> is_mean_pooling({"pooling_mode": "cls"})
        False
    """
    if "pooling_mode" in config:
        return config["pooling_mode"] == "mean" and not config.get("pooling_mode_weightedmean_tokens", False)
    modes = {k: v for k, v in config.items() if k.startswith("pooling_mode_")}
    return modes.get("pooling_mode_mean_tokens") is True and not any(v for k, v in modes.items() if k != "pooling_mode_mean_tokens")


def _transformer_config_ok(folder: Path) -> int | bool | None:
    """``max_seq_length`` from the folder's sentence_bert_config (``None`` when absent); ``False`` = not handled."""
    for name in _ST_CONFIG_NAMES:
        f = folder / name
        if f.is_file():
            cfg = _read_json(f)
            break
    else:
        return None
    if not isinstance(cfg, dict):
        return False
    for key, value in cfg.items():
        if key == "max_seq_length":
            continue
        if key in _KWARG_KEYS:
            if value:  # any kwarg for the model, tokenizer or config: let ST apply it
                return False
        elif key in _NEUTRAL:
            if value not in _NEUTRAL[key]:
                return False
        else:
            return False
    msl = cfg.get("max_seq_length")
    if msl is None:
        return None
    return int(msl) if isinstance(msl, int) and not isinstance(msl, bool) and msl > 0 else False


def read_st_layout(path: str | os.PathLike[str]) -> DirectLayout | None:
    """The folder's :class:`DirectLayout` when transformers alone reproduces it, else ``None`` (use ST).

    Example:
        >>> from tutormetrics.encoders.config import default_model_path
        >>> layout = read_st_layout(default_model_path())
        >>> layout.max_seq_length, layout.pooling
        (256, 'mean')
        >>> read_st_layout("no/such/folder") is None
        True
    """
    root = Path(path)
    if not root.is_dir():
        return None
    try:
        folder = root
        modules_file = root / "modules.json"
        if modules_file.is_file():
            modules = sorted(_read_json(modules_file), key=lambda m: int(m.get("idx", 0)))
            if not modules or not str(modules[0].get("type", "")).endswith(".Transformer"):
                return None
            folder = root / str(modules[0].get("path", ""))
            for module in modules[1:]:
                kind = str(module.get("type", "")).rsplit(".", 1)[-1]
                if kind == "Pooling":
                    pool_cfg = root / str(module.get("path", "")) / "config.json"
                    if not pool_cfg.is_file() or not is_mean_pooling(_read_json(pool_cfg)):
                        return None
                elif kind != "Normalize":  # Dense, LayerNorm, custom modules: ST's job
                    return None
        if not folder.resolve().is_relative_to(root.resolve()):
            return None
        config_json = folder / "config.json"
        if not config_json.is_file():
            return None
        hf_cfg = _read_json(config_json)
        if not isinstance(hf_cfg, dict) or hf_cfg.get("is_encoder_decoder") or "auto_map" in hf_cfg:
            return None
        msl = _transformer_config_ok(folder)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if msl is False:
        return None
    return DirectLayout(transformer_dir=folder, max_seq_length=msl if isinstance(msl, int) else None)
