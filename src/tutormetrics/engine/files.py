"""Score a file of exchanges: validate, stream in chunks, checkpoint each chunk, write atomically.

This is the library function behind ``tutormetrics score``; the command only parses options.

* **Streaming.** The input is read in chunks of ``chunk_size`` rows (polars ``collect_batches``), so
  peak memory does not grow with the number of exchanges.
* **Resumable.** Every scored chunk is written atomically to ``<output>.partial/`` together with a run
  key (SHA-256 of the input bytes, the options that change results, metric parameters, encoder
  fingerprint, package version). Rerunning the same command after an interruption (Ctrl-C, SIGKILL,
  power loss) skips the chunks already there; chunk boundaries are fixed, so the final file is
  byte-identical to an uninterrupted run.
* **Atomic output.** The final table is assembled in a temporary file and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io import (
    guard_formulas,
    infer_format,
    join_prompt_columns,
    require_columns,
    scan_table,
    stable_id,
    write_table,
)
from tutormetrics.engine.scorer import MOSTLY_NAN_MIN_ROWS, MOSTLY_NAN_SHARE, Scorer

Log = Callable[[str], None]


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
    dedupe: bool = False
    resume: bool = True
    csv_formula_guard: bool = True
    n_jobs: int = 0  # 0 = auto: up to 4 workers for large lexical-only inputs on machines with >= 4 cores
    keep_columns: list[str] = field(default_factory=list)  # input columns copied to the output after the id
    #: Family parameters, ``{family: {param: value}}`` (``--metric-param lexical_richness.mattr_window=10``).
    metric_params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def result_key(self) -> dict[str, Any]:
        """The options that can change the numbers (progress, manifest and resume cannot)."""
        skip = {"progress", "write_manifest", "resume", "output_format", "csv_formula_guard", "n_jobs"}
        return {k: v for k, v in asdict(self).items() if k not in skip}


@dataclass
class ScoreResult:
    frame: pl.DataFrame | None
    manifest: dict[str, Any]
    output: Path | None
    n_rows: int
    resumed_chunks: int = 0


@dataclass
class InputPlan:
    """What validation learnt about the input before scoring starts."""

    n_rows: int
    has_id: bool
    keep_rows: pl.Series | None  # row indices kept after --dedupe, or None for all
    n_dropped_duplicates: int


def plan_input(path: Path, options: ScoreOptions) -> tuple[pl.LazyFrame, InputPlan]:
    """Open the input lazily and check columns, ids and emptiness (one pass over the id column)."""
    lf = scan_table(path, options.input_format, encoding=options.encoding)
    try:
        columns = lf.collect_schema().names()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"{path}: could not be read: {str(exc).splitlines()[0]}") from exc
    probe = pl.DataFrame(schema=dict.fromkeys(columns, pl.String))
    require_columns(probe, list(options.prompt_columns), source=str(path), option="--prompt")
    require_columns(probe, [options.response_column], source=str(path), option="--response")
    require_columns(probe, list(options.keep_columns), source=str(path), option="--keep")
    has_id = options.id_column in columns
    if not has_id and options.id_column != "exchange_id":
        require_columns(probe, [options.id_column], source=str(path), option="--id")
    try:
        if has_id:
            ids = lf.select(pl.col(options.id_column).cast(pl.String)).collect().to_series()
        else:  # read the text columns too, so a malformed record fails here, not half-way through scoring
            ids = lf.select(pl.col(options.response_column).cast(pl.String).len()).collect().item()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"{path}: could not be read: {str(exc).splitlines()[0]}") from exc
    n_rows = len(ids) if has_id else int(ids)
    if n_rows == 0:
        raise InputSchemaError(f"{path}: has a header but no rows", hint="add at least one exchange")
    keep, dropped = None, 0
    if has_id:
        if ids.null_count() or (ids.str.strip_chars() == "").any():
            row = int((ids.is_null() | (ids.str.strip_chars() == "")).arg_true()[0])
            raise InputSchemaError(
                f"{path}: column {options.id_column!r} is empty in data row {row + 1}",
                hint="every exchange needs an id; drop the column to have stable content ids generated",
            )
        dup = ids.is_duplicated()
        if dup.any():
            if not options.dedupe:
                examples = ids.filter(dup).unique(maintain_order=True).head(3).to_list()
                raise InputSchemaError(
                    f"{path}: {int(dup.sum())} rows share {ids.filter(dup).n_unique()} ids in column "
                    f"{options.id_column!r} (e.g. {', '.join(map(repr, examples))})",
                    hint="ids key every join with ratings and theta; fix them, or pass --dedupe to keep the first row of each id",
                )
            first = ids.is_first_distinct()
            keep = first.arg_true()
            dropped = n_rows - len(keep)
    return lf, InputPlan(n_rows, has_id, keep, dropped)


def iter_exchanges(
    lf: pl.LazyFrame,
    plan: InputPlan,
    options: ScoreOptions,
    kept: deque[pl.DataFrame] | None = None,
    source: str = "input",
) -> Iterator[tuple[list[str], list[str | None], list[str | None]]]:
    """Yield ``(ids, prompts, responses)`` in chunks of exactly ``chunk_size`` rows (the last may be shorter).

    The ``--keep`` columns of each chunk are appended to ``kept`` in the same order.
    """
    id_cols = [options.id_column] if plan.has_id else []
    cols = list(dict.fromkeys([*options.prompt_columns, options.response_column, *id_cols]))
    frame = lf.select([pl.col(c).cast(pl.String) for c in cols] + [
        pl.col(c).alias(f"__keep_{c}") for c in options.keep_columns
    ])
    if plan.keep_rows is not None:
        frame = frame.with_row_index("__row").filter(pl.col("__row").is_in(plan.keep_rows.implode())).drop("__row")
    seen: dict[str, int] = {}
    buffer: list[pl.DataFrame] = []
    buffered = 0
    for batch in _batches(frame, options.chunk_size, source):
        buffer.append(batch)
        buffered += batch.height
        while buffered >= options.chunk_size:
            whole = pl.concat(buffer)
            head, rest = whole.head(options.chunk_size), whole.slice(options.chunk_size)
            yield _columns(head, plan, options, seen, kept)
            buffer, buffered = ([rest] if rest.height else []), rest.height
    if buffered:
        yield _columns(pl.concat(buffer), plan, options, seen, kept)


def _batches(frame: pl.LazyFrame, size: int, source: str) -> Iterator[pl.DataFrame]:
    """``collect_batches`` with read errors turned into a message that names the file."""
    batches = frame.collect_batches(chunk_size=size)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except pl.exceptions.PolarsError as exc:
            raise InputSchemaError(f"{source}: could not be read: {str(exc).splitlines()[0]}") from exc
        yield batch


def _columns(
    df: pl.DataFrame, plan: InputPlan, options: ScoreOptions, seen: dict[str, int], kept: deque[pl.DataFrame] | None
) -> tuple[list[str], list[str | None], list[str | None]]:
    if kept is not None and options.keep_columns:
        kept.append(df.select([pl.col(f"__keep_{c}").alias(c) for c in options.keep_columns]))
    prompts = join_prompt_columns(df, options.prompt_columns).to_list()
    responses = df.get_column(options.response_column).to_list()
    if plan.has_id:
        ids = df.get_column(options.id_column).to_list()
    else:
        ids = [stable_id(p, r, seen) for p, r in zip(prompts, responses)]
    return ids, prompts, responses


def build_scorer(options: ScoreOptions, n_rows: int | None = None) -> Scorer:
    """A :class:`Scorer` configured from options (the encoder is loaded only if an encoder family runs)."""
    from tutormetrics.metrics.registry import REGISTRY, instantiate_family

    names = REGISTRY.resolve(options.metrics)
    stray = [f for f in options.metric_params if f not in names]
    if stray:
        raise ConfigError(
            f"--metric-param names {', '.join(map(repr, stray))}, which is not among the selected metrics",
            hint=f"selected: {', '.join(names)}",
        )
    families = [
        instantiate_family(
            n, ({"syllables": options.syllables} if n == "readability" else {}) | options.metric_params.get(n, {})
        )
        for n in names
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
    n_jobs = options.n_jobs
    if n_jobs == 0:
        # Measured (benchmarks/RESULTS.md §3): on 2 cores, spawned workers compete with the reading and
        # writing parent and lose (20k rows: 10.0 s vs 7.7 s); on 16 cores two workers are 2.05x faster.
        import os

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        big = n_rows is not None and n_rows > 2 * options.chunk_size
        n_jobs = min(4, cores - 1) if big and encoder is None and cores >= 4 else 1
    return Scorer(
        families,
        encoder=encoder,
        chunk_size=options.chunk_size,
        progress=options.progress,
        id_column=options.id_column,
        n_jobs=n_jobs,
    )


def run_key(path: Path, options: ScoreOptions, scorer: Scorer) -> str:
    """SHA-256 over the input bytes, result-relevant options, metric params, encoder and version."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    params = {f.name: f.get_params() for f in scorer.families}
    encoder = scorer.encoder.config.fingerprint() if scorer.needs_encoder else None
    meta = {"options": options.result_key(), "params": params, "encoder": encoder, "version": __version__}
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return h.hexdigest()


class Checkpoint:
    """Chunk files of a run in ``<output>.partial/``, each written atomically, keyed by the run key."""

    def __init__(self, output: Path, key: str) -> None:
        self.dir = output.with_name(output.name + ".partial")
        self.key = key

    def open(self, resume: bool, log: Log) -> int:
        """Prepare the folder; return how many chunks an earlier run of the same key left."""
        state = self.dir / "run.json"
        if self.dir.exists():
            same = state.exists() and json.loads(state.read_text()).get("key") == self.key
            if resume and same:
                done = len(self.done())
                if done:
                    log(f"resuming: {done} chunk(s) already scored in {self.dir}")
                return done
            log(f"note: discarding partial results in {self.dir} from a different or older run")
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        _atomic_write_text(state, json.dumps({"key": self.key, "version": __version__}))
        return 0

    def path(self, index: int) -> Path:
        return self.dir / f"chunk-{index:06d}.parquet"

    def done(self) -> list[Path]:
        return sorted(self.dir.glob("chunk-*.parquet"))

    def save(self, index: int, frame: pl.DataFrame) -> None:
        target = self.path(index)
        tmp = target.with_suffix(".tmp")
        frame.write_parquet(tmp)
        tmp.replace(target)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def score_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    *,
    log: Log = lambda _m: None,
) -> ScoreResult:
    """Score every exchange of ``path`` and write ``output`` (atomically) plus ``output.manifest.json``.

    With ``output=None`` the scored frame is returned in memory (no checkpointing).
    """
    lf, plan = plan_input(path, options)
    if not plan.has_id:
        log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of prompt and response)")
    if plan.n_dropped_duplicates:
        log(f"note: --dedupe dropped {plan.n_dropped_duplicates} rows whose id appeared earlier")
    if output is not None:
        infer_format(output, options.output_format)  # fail before any work on a bad output name
    n_kept = plan.n_rows - plan.n_dropped_duplicates
    scorer = build_scorer(options, n_kept)
    kept: deque[pl.DataFrame] = deque()
    chunks = iter_exchanges(lf, plan, options, kept, source=str(path))
    scored = _with_kept_columns(scorer, chunks, kept, n_kept, options)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if output is None:
            frames = list(scored(0))
            frame: pl.DataFrame | None = pl.concat(frames) if frames else scorer.empty_frame()
            resumed = 0
        else:
            checkpoint = Checkpoint(output, run_key(path, options, scorer))
            resumed = checkpoint.open(options.resume, log)
            for offset, chunk_frame in enumerate(scored(resumed)):
                checkpoint.save(resumed + offset, chunk_frame)
            _assemble(checkpoint, output, options, scorer)
            checkpoint.remove()
            frame = None
    for w in caught:
        log(f"warning: {w.message}")
    stats = scorer.stats
    warned = stats.mostly_nan(MOSTLY_NAN_SHARE) if stats.n_exchanges >= MOSTLY_NAN_MIN_ROWS else {}
    for col, why in stats.nan_reasons.items():
        if col in warned:  # already said, with the same counts, in the warning
            continue
        log(f"note: {col} NaN for {sum(why.values()):,} of {stats.n_exchanges:,} exchanges (" + ", ".join(f"{k}: {v:,}" for k, v in why.items()) + ")")
    if stats.n_empty_responses or stats.n_empty_prompts:
        log(
            f"note: {stats.n_empty_responses} empty responses and {stats.n_empty_prompts} empty prompts were "
            "scored NaN where a metric is undefined (flag columns resp_empty, prompt_empty)"
        )
    manifest = scorer.manifest() | {
        "input": str(path),
        "n_rows": n_kept,
        "dropped_duplicates": plan.n_dropped_duplicates,
        "generated_ids": not plan.has_id,
        "options": asdict(options),
        "warnings": [str(w.message) for w in caught],
    }
    if output is not None:
        if options.write_manifest:
            _atomic_write_text(output.with_name(output.name + ".manifest.json"), json.dumps(manifest, indent=2, default=str))
        log(f"scored {n_kept:,} exchanges -> {output}")
    return ScoreResult(frame, manifest, output, n_kept, resumed)


def _with_kept_columns(
    scorer: Scorer, chunks: Iterator, kept: deque[pl.DataFrame], total: int, options: ScoreOptions
) -> Callable[[int], Iterator[pl.DataFrame]]:
    """Score chunks from index ``skip`` on (earlier ones are checkpointed), adding the ``--keep`` columns."""

    def run(skip: int) -> Iterator[pl.DataFrame]:
        def remaining() -> Iterator:
            for index, chunk in enumerate(chunks):
                if index < skip:
                    if kept:
                        kept.popleft()
                    continue
                yield chunk

        initial = min(skip * options.chunk_size, total)
        for frame in scorer.iter_scores(remaining(), total=total, initial=initial):
            if options.keep_columns:
                extra = kept.popleft()
                frame = pl.concat([frame.select(options.id_column), extra, frame.drop(options.id_column)], how="horizontal")
            yield frame

    return run


def _assemble(checkpoint: Checkpoint, output: Path, options: ScoreOptions, scorer: Scorer) -> None:
    parts = checkpoint.done()
    if not parts:
        write_table(scorer.empty_frame(), output, options.output_format)
        return
    kind = infer_format(output, options.output_format)
    frame = pl.scan_parquet(parts)
    if kind == "csv" and options.csv_formula_guard:
        frame = guard_formulas(frame)
    write_table(frame, output, options.output_format)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
