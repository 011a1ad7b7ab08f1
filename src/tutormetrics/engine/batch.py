"""A batch callable for distributed engines: :class:`ScoreBatch` scores a batch of exchanges and returns the
metric columns, built once per worker (the Scorer, the encoder and the text cache live as long as it does).

It takes and returns what the engines pass around: a pandas DataFrame (Ray ``batch_format="pandas"``, Spark
``predict_batch_udf`` via pandas, Dask ``map_partitions``), a pyarrow Table (Ray ``batch_format="pyarrow"``),
a polars DataFrame, or a dict of numpy arrays (Ray's default). Columns of the input named in ``passthrough``
(e.g. a row number) are copied to the output in front of the id.

Example:
    >>> import pandas as pd
    >>> sb = ScoreBatch({"metrics": "overlap"})
    >>> out = sb(pd.DataFrame({"exchange_id": ["e1"], "prompt": ["Where did the cat sit?"],
    ...                         "response": ["The cat sat on the mat."]}))
    >>> out["jaccard_1"].tolist()
    [0.25]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.engine.exchanges import exchange_rows
from tutormetrics.engine.file_scoring import ScoreOptions, build_scorer
from tutormetrics.errors import InputSchemaError
from tutormetrics.frames import frame_inputs, frame_kind, to_polars


class ScoreBatch:
    """Score one batch of exchanges per call (``ray.data.Dataset.map_batches(ScoreBatch, ...)``).

    Args:
        options: a :class:`~tutormetrics.engine.file_scoring.ScoreOptions` or a dict of its fields (``metrics``,
            ``prompt_columns``, ``response_column``, ``id_column``, encoder settings, ``chunk_size``,
            ``cache_mb``, ...). Progress bars are off.
        passthrough: input columns copied to the output before the id (e.g. ``["__row"]``).

    Rows without an id column get the same stable content ids as ``tutormetrics score`` (counted per batch,
    so a repeated prompt/response pair in *another* batch gets the same id: give ids when rows repeat).
    """

    def __init__(self, options: ScoreOptions | Mapping[str, Any] | None = None, passthrough: Sequence[str] = ()) -> None:
        if options is None:
            options = ScoreOptions()
        elif not isinstance(options, ScoreOptions):
            options = ScoreOptions(**dict(options))
        self.options = ScoreOptions(**{**asdict(options), "progress": False, "n_jobs": 1})
        self.passthrough = list(passthrough)
        self.scorer = build_scorer(self.options)

    def __call__(self, batch: Any) -> Any:
        frame, kind = _to_polars(batch)
        out = self.score_frame(frame)
        return _from_polars(out, kind)

    @frame_inputs("frame")
    def score_frame(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The scored polars frame of one batch (passthrough columns, id, metric and diagnostic columns)."""
        o = self.options
        missing = [c for c in [*o.prompt_columns, o.response_column, *self.passthrough] if c not in frame.columns]
        if missing:
            raise InputSchemaError(f"batch has no column(s) {', '.join(map(repr, missing))}", hint=f"columns: {frame.columns}")
        rows = exchange_rows(frame, o.prompt_columns, o.response_column, id_column=o.id_column)
        scored = self.scorer.score(*rows)
        if self.passthrough:
            scored = pl.concat([frame.select(self.passthrough), scored], how="horizontal")
        return scored


def _to_polars(batch: Any) -> tuple[pl.DataFrame, str]:
    """The batch as a polars frame (:func:`~tutormetrics.frames.to_polars`, or a dict of arrays) and its kind."""
    if isinstance(batch, Mapping):
        return pl.DataFrame({k: list(v) if isinstance(v, np.ndarray) and v.dtype == object else v for k, v in batch.items()}), "numpy"
    kind = frame_kind(batch)
    if kind is None:
        raise InputSchemaError(f"ScoreBatch cannot read a batch of type {type(batch).__name__}",
                               hint="pass a pandas DataFrame, pyarrow Table, polars DataFrame or dict of arrays")
    return to_polars(batch, "ScoreBatch: batch"), "polars" if kind == "lazy" else kind


def _from_polars(frame: pl.DataFrame, kind: str) -> Any:
    if kind == "polars":
        return frame
    if kind == "pyarrow":
        return frame.to_arrow()
    if kind == "pandas":
        return frame.to_pandas()
    return {c: frame.get_column(c).to_numpy() for c in frame.columns}
