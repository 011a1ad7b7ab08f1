"""How far ``--quantize int8`` moves each encoder column from float32, measured on real replies.

:func:`int8_drift` scores the bundled example (40 real C++ debugging exchanges: query, code and error as the
prompt, the tutor reply as the response) with the onnx backend twice, float32 and int8, and reports per
encoder column ``max |Δ|`` and ``mean |Δ|``. ``tutormetrics encoder export`` stores it next to the export
(:data:`tutormetrics.encoders.onnx.store.DRIFT_NAME`) and every int8 run copies it into its manifest.

Example:
    >>> drift = int8_drift()                    # doctest: +SKIP
    >>> sorted(drift["max_abs"])[:2]            # doctest: +SKIP
    ['emb_extrema_cos', 'emb_greedy']
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from tutormetrics.progress import Log, quiet


def drift_table(reference: Any, other: Any, columns: list[str]) -> dict[str, dict[str, float]]:
    """Per column ``max |Δ|`` and ``mean |Δ|`` over rows where both are finite (polars frames).

    Args:
        reference: the reference table (polars).
        other: the table compared with it, same rows in the same order.
        columns: columns to compare.

    Example:
        >>> import polars as pl
        >>> drift_table(pl.DataFrame({"a": [1.0, 2.0]}), pl.DataFrame({"a": [1.5, 2.0]}), ["a"])
        {'max_abs': {'a': 0.5}, 'mean_abs': {'a': 0.25}}
    """
    out: dict[str, dict[str, float]] = {"max_abs": {}, "mean_abs": {}}
    for col in columns:
        d = np.abs(reference[col].to_numpy().astype(float) - other[col].to_numpy().astype(float))
        d = d[np.isfinite(d)]
        out["max_abs"][col] = float(d.max()) if d.size else float("nan")
        out["mean_abs"][col] = float(d.mean()) if d.size else float("nan")
    return out


def int8_drift(model_name_or_path: str | None = None) -> dict[str, Any]:
    """int8 vs float32 (both onnx) per encoder column on the bundled example's 40 real replies."""
    import polars as pl

    from tutormetrics.encoders.config import EncoderConfig
    from tutormetrics.engine.scorer import Scorer
    from tutormetrics.examples import EXAMPLE_PROMPT_COLUMNS, example_paths

    frame = pl.read_csv(example_paths()["exchanges"], infer_schema=False)
    ids = frame["exchange_id"].to_list()
    prompts = [[r[c] or "" for c in EXAMPLE_PROMPT_COLUMNS] for r in frame.iter_rows(named=True)]
    responses = frame["response"].to_list()
    scored = {}
    for q in (None, "int8"):
        cfg = EncoderConfig(model_name_or_path=model_name_or_path, backend="onnx", quantize=q)
        scorer = Scorer("encoder", encoder=cfg, progress=False)
        scored[q] = scorer.score(ids, prompts, responses)
        columns = scorer.metric_columns()
    return {
        "sample": "bundled example: 40 real C++ debugging exchanges (prompt = query, code, error)",
        "n_rows": len(ids),
        **drift_table(scored[None], scored["int8"], columns),
    }


def export_with_drift(
    path: str | os.PathLike[str] | None = None, store: str | os.PathLike[str] | None = None, *, force: bool = False,
    log: Log = quiet,
) -> Path:
    """``tutormetrics encoder export`` (``docs/commands/encoder.md``): export the model at ``path`` (default: the
    bundled MiniLM) to ONNX once, into ``store`` (default: ``$TUTORMETRICS_ONNX_DIR``, else the user cache), and record
    :func:`int8_drift` next to it (:data:`~tutormetrics.encoders.onnx.store.DRIFT_NAME`); returns the export folder.

    Args:
        path: A local sentence-transformers BERT-family model folder.
        store: The export store; the export goes to ``<store>/<model>-<hash>``.
        force: Export again even when a fresh export exists.
        log: Where the steps are reported.
    """
    import json

    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.export import export_model
    from tutormetrics.encoders.onnx.store import DRIFT_NAME, export_dir_for
    from tutormetrics.io.atomic import write_text_atomic

    out = None if store is None else export_dir_for(Path(path) if path is not None else default_model_path(), root=Path(store))
    folder = export_model(None if path is None else Path(path), out, force=force, log=log)
    drift_file = folder / DRIFT_NAME
    if not drift_file.exists():
        if store is not None:  # scoring finds the export in the store it was written to (this process only)
            os.environ["TUTORMETRICS_ONNX_DIR"] = str(store)
        log("export: measuring int8 drift per column on the bundled example's 40 real replies")
        drift = int8_drift(None if path is None else str(path))
        write_text_atomic(drift_file, json.dumps(drift, indent=2, sort_keys=True))
        worst = max(drift["max_abs"].items(), key=lambda kv: kv[1] if kv[1] == kv[1] else -1)  # NaN last
        log(f"export: int8 drift: largest max |Δ| {worst[1]:.2e} ({worst[0]}); recorded in {drift_file}")
    return folder
