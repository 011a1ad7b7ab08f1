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

from typing import Any

import numpy as np


def drift_table(reference: Any, other: Any, columns: list[str]) -> dict[str, dict[str, float]]:
    """Per column ``max |Δ|`` and ``mean |Δ|`` over rows where both are finite (polars frames).

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
