"""Score a file of exchanges: validate, stream in chunks, checkpoint each chunk, write atomically.

This is the library function behind ``tutormetrics score``; the command only parses options.

* **Streaming.** The input is read in chunks of ``chunk_size`` rows (polars ``collect_batches``), so
  peak memory does not grow with the number of exchanges.
* **Resumable.** Every scored chunk is written atomically to ``<output>.partial/`` together with a run
  key (SHA-256 of the input bytes, the options that change results, metric parameters, encoder
  fingerprint, package version) and a ledger that verifies it (:mod:`tutormetrics.engine.checkpoint`).
  Rerunning the same command after an interruption (Ctrl-C, SIGKILL, power loss) reuses the verified
  chunks and recomputes the rest; chunk boundaries are fixed, so the final file is byte-identical to an
  uninterrupted run, and so are the manifest's counts and warnings.
* **Atomic output.** The final table is assembled in a temporary file and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io import (
    infer_format,
    record_guard,
    remove_stale_temporaries,
    join_prompt_columns,
    require_columns,
    scan_table,
    stable_id,
    write_table,
    write_text_atomic,
)
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.scorer import MOSTLY_NAN_MIN_ROWS, MOSTLY_NAN_SHARE, Scorer, ScoreStats

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
    backend: str = "auto"  # auto | torch | onnx (tutormetrics.encoders.backend)
    quantize: str | None = None  # None | int8 (onnx backend only)
    batch_size: int = 32
    max_seq_length: int | None = None
    long_text: str = "window"
    trust_remote_code: bool = False
    syllables: str = "auto"
    lang: str = "auto"  # auto | en | zh | ja (languages.md §3)
    segmenter: str = "char"  # char | rjieba (Chinese rows only; extra tutormetrics[zh])
    chars_per_sentence: float = 100.0  # concision: characters per sentence-equivalent
    concision_bands: tuple[float, float] = (3.0, 6.0)  # concision_band 2 up to the first, 1 up to the second
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
    #: Encoder results kept across chunks, MiB (``None``: sized for the machine; ``0``: off).
    cache_mb: float | None = None
    engine: str = "local"  # local | ray (extra tutormetrics[ray]; tutormetrics.engine.ray_engine)
    ray_address: str | None = None  # None: a local Ray started for the run; "auto" or ray://host:10001
    num_actors: int | None = None  # Ray actors, each holding one Scorer (None: one per GPU, else per 2 CPUs)
    gpus_per_actor: float = 0.0

    def result_key(self) -> dict[str, Any]:
        """The options that can change the numbers (progress, manifest and resume cannot). Whether the text cache
        is on decides how texts are batched (encoder values move in the last float32 bits), so it is part of the
        key; its budget is not (a resume replays the checkpointed cache; resume with the same ``--cache-mb`` for
        byte-identical encoder columns)."""
        skip = {"progress", "write_manifest", "resume", "output_format", "csv_formula_guard", "n_jobs", "cache_mb",
                "engine", "ray_address", "num_actors", "gpus_per_actor",
                "backend", "quantize"}  # the encoder fingerprint covers the resolved backend and quantisation
        key = {k: v for k, v in asdict(self).items() if k not in skip}
        return key | {"text_cache": self.cache_mb != 0}


@dataclass
class ScoreResult:
    """What :func:`score_file` did: the scored frame (in memory, or with ``keep_frame``), the manifest, and
    the Scorer's metric column → family map (the metric columns, in output order)."""

    frame: pl.DataFrame | None
    manifest: dict[str, Any]
    output: Path | None
    n_rows: int
    resumed_chunks: int = 0
    column_families: dict[str, str] = field(default_factory=dict)


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
    _check_text_columns(lf.collect_schema(), [*options.prompt_columns, options.response_column], path)
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


def _check_text_columns(schema: pl.Schema, columns: list[str], path: Path) -> None:
    """A prompt or response column must hold text: a JSON object or list (Parquet struct/list) is an error,
    never scored as its string form."""
    for col in columns:
        dtype = schema.get(col)
        if dtype is not None and (dtype.is_nested() or dtype == pl.Object):
            raise InputSchemaError(
                f"{path}: column {col!r} holds {dtype} values (structured data), not text",
                hint="flatten it to one text per row first, or choose another column with --prompt/--response",
            )


def open_input(path: Path, output: Path | None, options: ScoreOptions, log: Log) -> tuple[pl.LazyFrame, InputPlan, int]:
    """:func:`plan_input`, the notes on generated ids and dropped duplicates, the output name checked before any
    work; returns the lazy input, its plan and the number of rows that will be scored (every engine starts here)."""
    lf, plan = plan_input(path, options)
    if not plan.has_id:
        log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of prompt and response)")
    if plan.n_dropped_duplicates:
        log(f"note: --dedupe dropped {plan.n_dropped_duplicates} rows whose id appeared earlier")
    if output is not None:
        infer_format(output, options.output_format)  # fail before any work on a bad output name
    return lf, plan, plan.n_rows - plan.n_dropped_duplicates


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
    from tutormetrics.metrics.registry import REGISTRY

    from tutormetrics.metrics.functional.length import check_concision

    names = REGISTRY.resolve(options.metrics)
    not_selected = sorted(set(options.metric_params) - set(names))
    if not_selected:
        raise ConfigError(
            f"--metric-param names {', '.join(not_selected)}, which is not among the selected metrics",
            hint=f"selected: {', '.join(names)}",
        )
    cps, bands = check_concision(options.chars_per_sentence, options.concision_bands)
    base: dict[str, dict[str, Any]] = {
        "readability": {"syllables": options.syllables},
        "length": {"chars_per_sentence": cps, "concision_bands": bands},
    }
    families = [REGISTRY.configure(n, base.get(n, {}) | options.metric_params.get(n, {})) for n in names]
    encoder = None
    if any("encoder" in f.requires for f in families):
        from tutormetrics.encoders.config import EncoderConfig

        encoder = EncoderConfig(
            model_name_or_path=options.model_name_or_path,
            device=options.device,
            dtype=options.dtype,
            backend=options.backend,  # type: ignore[arg-type]
            quantize=options.quantize,  # type: ignore[arg-type]
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
        lang=options.lang,
        segmenter=options.segmenter,
        cache_mb=options.cache_mb,
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


def score_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    *,
    log: Log = lambda _m: None,
    keep_frame: bool = False,
) -> ScoreResult:
    """Score every exchange of ``path`` and write ``output`` (atomically) plus ``output.manifest.json``.

    With ``output=None`` the scored frame is returned in memory (no checkpointing); with ``keep_frame``
    it is returned as well as written (read from the verified chunk checkpoints, not from ``output``).
    """
    if options.engine != "local":  # the Ray engine sits above this module (it reuses the reader and the options)
        raise ConfigError(
            f"score_file runs the local engine, not {options.engine!r}",
            hint="for Ray call tutormetrics.engine.ray_engine.score_file_ray (the CLI: --engine ray)",
        )
    lf, plan, n_kept = open_input(path, output, options, log)
    scorer = build_scorer(options, n_kept)
    kept: deque[pl.DataFrame] = deque()
    chunks = iter_exchanges(lf, plan, options, kept, source=str(path))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if output is None:
            run = _ChunkRun(scorer, options, kept, caught, n_kept)
            frames = [frame for _, frame in run.scored(chunks)]
            frame: pl.DataFrame | None = pl.concat(frames) if frames else scorer.empty_frame()
            resumed, chunk_warnings = 0, run.warnings()
        else:
            with Checkpoint(output, run_key(path, options, scorer)) as checkpoint:
                checkpoint.open(options.resume, log)
                remove_stale_temporaries(output)
                run = _ChunkRun(scorer, options, kept, caught, n_kept, checkpoint)
                for index, chunk_frame in run.scored(chunks):
                    checkpoint.save(
                        index, chunk_frame, options.id_column, run.stats_of(index), run.warnings_of(index),
                        write_cache=run.cache_writer(index),
                    )
                _assemble(checkpoint.parts(run.n_chunks), output, options, scorer)
                frame = _read_parts(checkpoint.parts(run.n_chunks), scorer) if keep_frame else None
                resumed, chunk_warnings = run.n_reused, run.warnings()
                checkpoint.remove()
        run_warnings = [str(w.message) for w in caught[run.n_caught:]]
    all_warnings = chunk_warnings + run_warnings
    for message in all_warnings:
        log(f"warning: {message}")
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
    not_english = stats.n_lang_zh + stats.n_lang_ja
    nan_reasons: dict[str, dict[str, int]] = {}
    if not_english and any(f.name == "readability" for f in scorer.families):
        nan_reasons = {c: {"lang_not_en": not_english} for c in ("flesch_reading_ease", "flesch_kincaid_grade")}
        log(
            f"note: {not_english} responses are Chinese or Japanese ({stats.n_lang_zh} zh, {stats.n_lang_ja} ja; "
            "column lang): flesch_reading_ease and flesch_kincaid_grade are English formulas and NaN for them"
        )
    manifest = scorer.manifest() | {
        "input": str(path),
        "n_rows": n_kept,
        "dropped_duplicates": plan.n_dropped_duplicates,
        "generated_ids": not plan.has_id,
        "options": asdict(options),
        "warnings": all_warnings,
        "nan_reasons": nan_reasons,
    }
    if output is not None:
        if options.write_manifest:
            write_text_atomic(output.with_name(output.name + ".manifest.json"), json.dumps(manifest, indent=2, default=str))
            if options.csv_formula_guard and infer_format(output, options.output_format) == "csv":
                record_guard(output)  # the manifest was rewritten: note the guard of this output again
        log(f"scored {n_kept:,} exchanges -> {output}")
    return ScoreResult(frame, manifest, output, n_kept, resumed, scorer.column_families())


class _ChunkRun:
    """Feeds chunks to the Scorer, reusing verified checkpoint chunks, and keeps each chunk's counts and
    warnings (so a resumed run reports exactly what an uninterrupted one does)."""

    def __init__(
        self,
        scorer: Scorer,
        options: ScoreOptions,
        kept: deque[pl.DataFrame],
        caught: list[warnings.WarningMessage],
        total: int,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.scorer, self.options, self.kept, self.caught, self.total = scorer, options, kept, caught, total
        self.checkpoint = checkpoint
        self.n_chunks = 0
        self.n_reused = 0
        self.n_caught = 0
        self._stats: dict[int, dict[str, Any]] = {}
        self._baseline: dict[str, Any] = {}  # the scorer's counts when the last chunk's share was taken
        self._warnings: dict[int, list[str]] = {}
        self._deltas: dict[int, Any] = {}  # chunk index -> the Scorer's text-cache delta, until saved

    def scored(self, chunks: Iterator) -> Iterator[tuple[int, pl.DataFrame]]:
        """``(index, frame)`` for every chunk that is scored now (reused chunks are skipped)."""
        pending: deque[int] = deque()
        scorer, options = self.scorer, self.options
        initial = self._reused_rows()

        ahead = scorer.encode_ahead if scorer.needs_encoder else 1
        scorer.record_cache_ops = self.checkpoint is not None and scorer.text_cache is not None

        def windows() -> Iterator[tuple[int, Any, bool]]:
            """``(index, chunk, reusable)``; the texts of each window of ``ahead`` chunks are encoded at its start,
            as part of its first chunk (when that chunk is reused, its checkpointed cache replays the same)."""
            numbered = enumerate(chunks)
            while window := list(islice(numbered, ahead)):
                marked = [(i, c, self.checkpoint is not None and self.checkpoint.reusable(i, c[0])) for i, c in window]
                if ahead > 1 and not marked[0][2]:
                    scorer.prefetch([c for _, c, _ in marked])
                yield from marked

        def fresh() -> Iterator:
            for index, chunk, reusable in windows():
                self.n_chunks = index + 1
                extra = self.kept.popleft() if options.keep_columns else None
                if reusable:
                    self._reuse(index)
                    continue
                if self.checkpoint is not None:
                    self.checkpoint.forget(index)
                pending.append(index)
                self._extra[index] = extra
                yield chunk

        self._extra: dict[int, pl.DataFrame | None] = {}
        # A chunk's counts are what the scorer added since the previous chunk's frame; reused chunks merge
        # theirs into the scorer (for the run's totals) and into this baseline alike, so they never count twice.
        self._baseline = scorer.stats.snapshot()
        mark = len(self.caught)
        for frame in scorer.iter_scores(fresh(), total=self.total, initial=initial):
            index = pending.popleft()
            self._stats[index] = scorer.stats.since(self._baseline)
            self._warnings[index] = [str(w.message) for w in self.caught[mark:]]
            self._baseline, mark = scorer.stats.snapshot(), len(self.caught)
            if scorer.record_cache_ops:
                self._deltas[index] = scorer.take_cache_ops()
            extra = self._extra.pop(index)
            if extra is not None:
                frame = pl.concat([frame.select(options.id_column), extra, frame.drop(options.id_column)], how="horizontal")
            yield index, frame
            self.n_caught = mark
        self.n_caught = mark  # warnings after this point (e.g. the long-text summary) belong to the whole run

    def _reused_rows(self) -> int:
        if self.checkpoint is None:
            return 0
        return sum(int(e.get("rows", 0)) for e in self.checkpoint.ledger.values())

    def _reuse(self, index: int) -> None:
        assert self.checkpoint is not None
        entry = self.checkpoint.ledger[index]
        self.scorer.stats.merge(ScoreStats.from_dict(entry.get("stats", {})))
        baseline = ScoreStats.from_dict(self._baseline)
        baseline.merge(ScoreStats.from_dict(entry.get("stats", {})))
        self._baseline = baseline.snapshot()
        self._stats[index] = entry.get("stats", {})
        self._warnings[index] = list(entry.get("warnings", []))
        self.n_reused += 1
        cache = self.scorer.text_cache
        if cache is not None and entry.get("cache_sha256") is not None:
            from tutormetrics.engine.text_cache import load_delta

            # the cache state after this chunk, as the first run had it: later chunks encode the same texts
            # in the same batches, so a resumed run writes the same bytes
            cache.replay(load_delta(self.checkpoint.cache_path(index)))

    def cache_writer(self, index: int) -> Callable[[Path], None] | None:
        """Writes chunk ``index``'s text-cache delta next to its checkpoint (``None`` without a cache)."""
        delta = self._deltas.pop(index, None)
        if delta is None:
            return None
        from tutormetrics.engine.text_cache import save_delta

        return lambda path: save_delta(path, delta)

    def stats_of(self, index: int) -> dict[str, Any]:
        return self._stats.get(index, {})

    def warnings_of(self, index: int) -> list[str]:
        return self._warnings.get(index, [])

    def warnings(self) -> list[str]:
        """Warnings of every chunk, in chunk order."""
        return [w for i in sorted(self._warnings) for w in self._warnings[i]]


def _assemble(parts: list[Path], output: Path, options: ScoreOptions, scorer: Scorer) -> None:
    write_table(
        pl.scan_parquet(parts) if parts else scorer.empty_frame(),
        output,
        options.output_format,
        formula_guard=options.csv_formula_guard,
        record=options.write_manifest,
    )


def _read_parts(parts: list[Path], scorer: Scorer) -> pl.DataFrame:
    return pl.read_parquet(parts) if parts else scorer.empty_frame()
