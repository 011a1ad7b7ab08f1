"""Score a file of exchanges: read, validate, score with the suite, write the table and its manifest.

This is the library function behind ``tutormetrics score``; the command only parses options.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.errors import InputSchemaError
from tutormetrics.io import join_prompt_columns, read_table, require_columns, stable_ids, write_table
from tutormetrics.metrics.suite import Scorer


@dataclass
class ScoreOptions:
    """Everything ``score`` can be told; the same names as the CLI options and the Python API."""

    id_column: str = "exchange_id"
    prompt_columns: list[str] = field(default_factory=lambda: ["prompt"])
    response_column: str = "response"
    metrics: str = "all"
    input_format: str | None = None
    output_format: str | None = None
    encoding: str = "utf8"
    model_name_or_path: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 32
    max_seq_length: int | None = None
    long_text: str = "window"
    trust_remote_code: bool = False
    syllables: str = "auto"
    chunk_size: int = 2048
    progress: bool | None = None
    write_manifest: bool = True


@dataclass
class ScoreResult:
    frame: pl.DataFrame
    manifest: dict[str, Any]
    output: Path | None


@dataclass
class ExchangeTable:
    """Validated exchanges: aligned ids, prompts and responses."""

    ids: list[str]
    prompts: list[str | None]
    responses: list[str | None]
    generated_ids: bool


def load_exchanges(path: Path, options: ScoreOptions) -> ExchangeTable:
    """Read and validate an exchanges table (columns, ids), joining several prompt columns."""
    df = read_table(path, options.input_format, encoding=options.encoding)
    if df.height == 0:
        raise InputSchemaError(f"{path}: has a header but no rows", hint="add at least one exchange")
    require_columns(df, [*options.prompt_columns], source=str(path), option="--prompt")
    require_columns(df, [options.response_column], source=str(path), option="--response")
    prompts = join_prompt_columns(df, options.prompt_columns)
    responses = df.get_column(options.response_column).cast(pl.String)
    if options.id_column in df.columns:
        ids_series = df.get_column(options.id_column).cast(pl.String)
        if ids_series.null_count():
            row = ids_series.is_null().arg_true()[0]
            raise InputSchemaError(
                f"{path}: column {options.id_column!r} is empty in row {row + 2} (counting the header as row 1)",
                hint="every exchange needs an id",
            )
        dup = ids_series.is_duplicated()
        if dup.any():
            first = ids_series.filter(dup).unique(maintain_order=True).head(3).to_list()
            raise InputSchemaError(
                f"{path}: {int(dup.sum())} rows share an id in column {options.id_column!r} (e.g. {', '.join(map(repr, first))})",
                hint="ids must be unique: they key every join with ratings and theta",
            )
        return ExchangeTable(ids_series.to_list(), prompts.to_list(), responses.to_list(), False)
    if options.id_column != "exchange_id":
        require_columns(df, [options.id_column], source=str(path), option="--id")
    return ExchangeTable(stable_ids(prompts, responses), prompts.to_list(), responses.to_list(), True)


def build_scorer(options: ScoreOptions) -> Scorer:
    """A :class:`Scorer` configured from options (the encoder is loaded only if an encoder family runs)."""
    from tutormetrics.metrics.registry import REGISTRY

    names = REGISTRY.resolve(options.metrics)
    families = [
        REGISTRY.get(n, syllables=options.syllables) if n == "readability" else REGISTRY.get(n) for n in names
    ]
    encoder = None
    if any("encoder" in f.requires for f in families):
        from tutormetrics.encoders.hf import EncoderConfig

        encoder = EncoderConfig(
            model_name_or_path=options.model_name_or_path,
            device=options.device,
            dtype=options.dtype,
            batch_size=options.batch_size,
            max_seq_length=options.max_seq_length,
            long_text=options.long_text,  # type: ignore[arg-type]
            trust_remote_code=options.trust_remote_code,
        )
    return Scorer(
        families,
        encoder=encoder,
        chunk_size=options.chunk_size,
        progress=options.progress,
        id_column=options.id_column,
    )


def score_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    *,
    log: Callable[[str], None] = lambda _m: None,
) -> ScoreResult:
    """Read ``path``, score every exchange, write ``output`` (atomically) and ``output.manifest.json``."""
    table = load_exchanges(path, options)
    if table.generated_ids:
        log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of prompt and response)")
    scorer = build_scorer(options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = scorer.score(table.ids, table.prompts, table.responses)
    for w in caught:
        log(f"warning: {w.message}")
    stats = scorer.stats
    if stats.n_empty_responses or stats.n_empty_prompts:
        log(
            f"note: {stats.n_empty_responses} empty responses and {stats.n_empty_prompts} empty prompts "
            "were scored as NaN where a metric is undefined"
        )
    manifest = scorer.manifest() | {"input": str(path), "options": asdict(options)}
    if output is not None:
        write_table(frame, output, options.output_format)
        if options.write_manifest:
            manifest_path = output.with_name(output.name + ".manifest.json")
            manifest_path.write_text(json.dumps(manifest, indent=2, default=str))
        log(f"scored {frame.height:,} exchanges ({stats.n_unique_texts:,} unique texts) -> {output}")
    return ScoreResult(frame, manifest, output)
