"""``tutormetrics score --engine ray``: the same Scorer on Ray Data (extra ``tutormetrics[ray]``).

1. The driver validates and reads the input with the local engine's reader (:func:`plan_input`,
   :func:`iter_exchanges`), so ids (given or generated), joined prompts, ``--dedupe`` and every input error
   are exactly those of ``--engine local``; it reads ``32 · chunk_size`` rows at a time (bounded memory).
2. Each window is regrouped by prompt (:func:`pack_blocks`) into Parquet blocks of about ``chunk_size`` rows in a
   staging folder beside the output (:func:`stage_input`): rows sharing a prompt meet in one block, so the
   prompt is encoded once (and each actor's text cache catches prompts that recur later).
3. Ray Data reads the blocks (``read_parquet``) and runs ``map_batches(ScoreBatch, batch_size=None,
   compute=ActorPoolStrategy(size=num_actors), num_gpus=gpus_per_actor)``: one Scorer (one model load, one text
   cache) per actor, one block per call.
4. Ray Data writes Parquet shards; the driver sorts them back into input order by row number, checks that every
   row came back once, and writes the final file with the same atomic :func:`~tutormetrics.io.tables.write_table`
   (CSV formula guard included), then removes the staging folder. On a multi-node cluster the output's folder
   must be on storage every node sees (as for any Ray Data ``read_parquet``/``write_parquet``).

Fault tolerance: Ray Data restarts a dead actor and retries its blocks (its defaults for actor pools are
``max_restarts=-1``, ``max_task_retries=-1``), and re-runs lost read/write tasks, so a worker process or node lost
mid-run costs only its blocks (an exception raised by the scoring code itself is not retried: it fails the run). If the driver dies (Ctrl-C, the head node)
while Ray scores, that scoring is lost: the shards folder is removed and a rerun scores everything again (use
``--engine local``, whose chunks are checkpointed and resumed, when runs are interrupted often). Once Ray has
scored, the frame is checkpointed before the output is written (``<output>.partial/``), so a failure after that
(writing the output, or ``run``'s later steps) is resumed without Ray.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ExchangeFileJob, ScoreOptions, ScoreResult, iter_exchanges
from tutormetrics.engine.run_stats import ScoreStats
from tutormetrics.engine.run_warnings import long_text_warning, mostly_nan_warnings
from tutormetrics.engine.runner import Scored, run_job
from tutormetrics.errors import ConfigError
from tutormetrics.progress import Log, quiet

ROW, PROMPT, RESPONSE = "__row", "__prompt", "__response"


def import_ray() -> Any:
    """``ray`` with Ray Data, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError(
            "--engine ray needs Ray Data, which is not installed", hint="pip install 'tutormetrics[ray]'"
        ) from None
    return ray


def pack_blocks(prompts: list[str], size: int) -> list[list[int]]:
    """Row indices in blocks of about ``size`` rows, rows sharing a prompt together (first-seen order).

    A group larger than ``size`` fills blocks of its own; groups are never split otherwise.

    Example:
        >>> pack_blocks(["a", "b", "a", "c", "b", "a"], 4)
        [[0, 2, 5], [1, 4, 3]]
    """
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(p, []).append(i)
    blocks: list[list[int]] = []
    current: list[int] = []
    for group in groups.values():
        rows = group
        if current and len(current) + len(rows) > size:
            blocks.append(current)
            current = []
        while len(rows) > size:
            blocks.append(rows[:size])
            rows = rows[size:]
        current = current + rows
    if current:
        blocks.append(current)
    return blocks


def stage_input(lf: pl.LazyFrame, plan: Any, options: ScoreOptions, folder: Path, source: str) -> int:
    """Write the input as Parquet blocks for Ray Data, rows sharing a prompt in one block; returns the block count.

    The input is read with the local engine's reader, a window of ``32 · chunk_size`` rows at a time (memory stays
    bounded), and each window is packed with :func:`pack_blocks`. Columns: the row number, the id, the joined
    prompt, the response and the ``--keep`` columns (``__keep_<name>``).

    Args:
        lf: the input, opened by :func:`~tutormetrics.engine.file_scoring.plan_input`.
        plan: its plan.
        options: the score options (``chunk_size``, the columns).
        folder: the staging folder to create.
        source: the input's name in read errors.
    """
    folder.mkdir(parents=True)
    window = replace(options, chunk_size=32 * options.chunk_size)
    kept: deque[pl.DataFrame] = deque()
    start, n_blocks = 0, 0
    for ids, prompts, responses in iter_exchanges(lf, plan, window, kept, source=source):
        table = pl.DataFrame(
            {ROW: list(range(start, start + len(ids))), options.id_column: ids, PROMPT: prompts, RESPONSE: responses},
            schema={ROW: pl.Int64, options.id_column: pl.String, PROMPT: pl.String, RESPONSE: pl.String},
        )
        if plan.kept:  # a composite id's parts, then --keep
            extra = kept.popleft()
            table = pl.concat([table, extra.rename({c: f"__keep_{c}" for c in extra.columns})], how="horizontal")
        for rows in pack_blocks(prompts, options.chunk_size):
            table[rows].write_parquet(folder / f"block-{n_blocks:08d}.parquet")
            n_blocks += 1
        start += len(ids)
    return n_blocks


def _actors(ray: Any, options: ScoreOptions) -> tuple[int, float]:
    """(actors, CPUs per actor): one actor per GPU share, else one per 2 CPUs; fractional CPUs on small machines
    so Ray Data's own read and write tasks are not starved."""
    cpus = float(ray.cluster_resources().get("CPU", 1))
    if options.gpus_per_actor < 0:
        raise ConfigError("--gpus-per-actor must be >= 0")
    if options.num_actors is not None and options.num_actors < 1:
        raise ConfigError("--num-actors must be at least 1")
    per_cpu = 1.0 if cpus >= 4 else 0.5
    if options.num_actors is not None:
        return options.num_actors, per_cpu
    if options.gpus_per_actor > 0:
        gpus = float(ray.cluster_resources().get("GPU", 0))
        if gpus < options.gpus_per_actor:
            raise ConfigError(f"--gpus-per-actor {options.gpus_per_actor} but the Ray cluster has {gpus:g} GPU(s)")
        return max(1, int(gpus // options.gpus_per_actor)), per_cpu
    return max(1, int(cpus // 2)), per_cpu


def _quiet(ray: Any, progress: bool | None) -> None:
    """Ray Data's progress bars and INFO lines only when progress was asked for (stderr stays readable)."""
    import logging

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = bool(progress)
    ctx.print_on_execution_start = bool(progress)
    logging.getLogger("ray.data").setLevel(logging.INFO if progress else logging.WARNING)


class RayJob(ExchangeFileJob):
    """``--engine ray`` as a kind of :func:`~tutormetrics.engine.runner.run_job`: the local kind's reader and rows,
    one chunk (the whole input, scored by the actor pool: :class:`RayRun`), ``engine="ray"`` in the run key, and the
    counts of the manifest read back from the scored frame.

    Args:
        source: the exchange table.
        options: the score options (``num_actors``, ``gpus_per_actor``, ``ray_address``).
        log: where the input's notes and Ray's lines go.
        output: the output (its name is checked before any work).
    """

    in_memory = True  # the driver holds the frame Ray returns
    records_warnings = False  # the actors' warnings stay with them; the driver counts from the frame

    def __init__(self, source: Path, options: ScoreOptions, log: Log = quiet, output: Path | None = None) -> None:
        self.ray = import_ray()
        super().__init__(source, options, log, output)  # the model is not loaded on the driver
        self.log, self.output = log, output

    def items(self) -> Iterator[tuple[tuple[Any, ...], Any]]:
        yield (self.lf, self.plan), None  # one chunk: the whole input, staged for Ray Data

    def chunk_run(self, caught: Any, checkpoint: Checkpoint | None) -> RayRun:
        return RayRun(self, checkpoint)

    def key_parts(self) -> dict[str, Any]:
        return {"engine": "ray"}

    def manifest_fields(self, scored: Scored) -> dict[str, Any]:
        stats = vars(scored.run.stats)
        return {"stats": {k: v for k, v in stats.items() if k in _FRAME_STATS}, "load_encoder": False,
                **super().manifest_fields(scored)}  # fmt: skip

    def manifest_extra(self, scored: Scored) -> dict[str, Any]:
        return {"engine": scored.run.engine}

    def done_message(self, scored: Scored, output: Path) -> str:
        return f"scored {self.total:,} exchanges -> {output} (ray, {scored.run.engine['actors']} actor(s))"


class RayRun:
    """The chunk engine of :class:`RayJob`: its one chunk scored on Ray Data, or reused from the checkpoint (one
    verified Parquet chunk with the whole frame, keyed like the local engine's) without starting Ray; counts and
    warnings are read back from the frame."""

    def __init__(self, job: RayJob, checkpoint: Checkpoint | None) -> None:
        self.job, self.checkpoint = job, checkpoint
        self.n_reused = 0
        self.frame: pl.DataFrame | None = None
        self.engine: dict[str, Any] = {}
        self._stats: ScoreStats | None = None

    def frames(self, items: Iterator[Any]) -> Iterator[tuple[int, pl.DataFrame]]:
        yield 0, self._score(items)

    def save_all(self, items: Iterator[Any]) -> list[Path]:
        checkpoint, job = self.checkpoint, self.job
        assert checkpoint is not None
        done = checkpoint.ledger.get(0)
        if done is not None and done.get("rows") == job.total and isinstance(done.get("stats"), dict):
            self.frame, self.engine, self.n_reused = pl.read_parquet(checkpoint.path(0)), done["stats"]["engine"], 1
            job.log(f"ray: reusing the {job.total:,} rows scored by an earlier run (verified in {checkpoint.dir})")
        else:
            checkpoint.save(0, self._score(items), job.scorer.id_column, {"engine": self.engine}, [])
        return [checkpoint.path(0)]

    def _score(self, items: Iterator[Any]) -> pl.DataFrame:
        (lf, plan), _ = next(items)
        job = self.job
        self.frame, self.engine = _score_on_ray(job.ray, lf, plan, job.total, job.options, job.scorer, job.output,
                                                str(job.source), job.log)  # fmt: skip
        return self.frame

    @property
    def stats(self) -> ScoreStats:
        """The run's counts, read back once from the scored frame (:func:`frame_stats`)."""
        if self._stats is None:
            assert self.frame is not None
            self._stats = frame_stats(self.frame, self.job.scorer.metric_columns())
        return self._stats

    def run_warnings(self) -> list[str]:
        assert self.frame is not None
        return _long_text_warnings(self.frame, self.job.scorer) + mostly_nan_warnings(self.stats, self.job.scorer.nan_hints())


def score_file_ray(
    path: Path, output: Path | None, options: ScoreOptions, *, log: Log = quiet, keep_frame: bool = False,
    keep_checkpoint: bool = False,
) -> ScoreResult:
    """Score ``path`` on Ray Data; the output (columns, ids, order, numbers) is that of the local engine.

    With an output, the scored frame is checkpointed (``<output>.partial/``, one verified Parquet chunk, keyed by
    the input's hash and every option that changes numbers, as the local engine's) before the output is written;
    ``keep_checkpoint`` keeps it after success, so ``run`` can fail at a later step and its rerun reuses the scores
    without starting Ray.

    Args:
        path: the exchange table.
        output: the metrics table, or ``None`` for the frame in memory only.
        options: the score options (``num_actors``, ``gpus_per_actor``, ``ray_address`` for Ray).
        log: where notes, warnings, Ray's lines and the last line go.
        keep_frame: return the frame although it was written.
        keep_checkpoint: keep the verified chunk after success.
    """
    job = RayJob(path, options, log, output)
    scored = run_job(job, output, options, log=log, keep_frame=keep_frame, keep_checkpoint=keep_checkpoint)
    frame = scored.frame if output is None or keep_frame else None
    return ScoreResult(frame, scored.manifest, output, job.total, scored.n_reused, job.scorer.column_families())


def _score_on_ray(
    ray: Any, lf: pl.LazyFrame, plan: Any, n_kept: int, options: ScoreOptions, scorer: Any, output: Path | None, source: str,
    log: Log,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The scored frame in input order, and the manifest's ``engine`` entry: stage the blocks, run the actor
    pool, read the shards back (a Ray started here is shut down again)."""
    started = False
    if not ray.is_initialized():
        ray.init(address=options.ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        started = True
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name if output else 'stdout'}.ray-", dir=output.parent if output else None))
    t0 = time.perf_counter()
    try:
        n_blocks = stage_input(lf, plan, options, staging / "in", source)
        from tutormetrics.engine.batch import ScoreBatch

        n_actors, cpus = _actors(ray, options)
        _quiet(ray, options.progress)
        log(f"ray: {n_blocks} blocks on {n_actors} actor(s) ({cpus:g} CPU, {options.gpus_per_actor:g} GPU each)")
        keep = [f"__keep_{c}" for c in plan.kept]
        actor_options = replace(options, prompt_columns=[PROMPT], response_column=RESPONSE, keep_columns=[])
        ds = ray.data.read_parquet(str(staging / "in"), file_extensions=["parquet"]).map_batches(
            ScoreBatch,
            fn_constructor_kwargs={"options": asdict(actor_options), "passthrough": [ROW, *keep]},
            batch_size=None,  # one block = rows sharing a prompt
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=n_actors),
            num_cpus=cpus,
            num_gpus=options.gpus_per_actor or None,
        )  # Ray Data's actor defaults: max_restarts=-1, max_task_retries=-1 (a lost actor is restarted, its blocks rerun)
        ds.write_parquet(str(staging / "out"))
        parts = sorted((staging / "out").glob("*.parquet"))
        scored = pl.scan_parquet(parts).sort(ROW) if parts else None
        if scored is None:
            frame = scorer.empty_frame()
        else:
            rows = scored.select(ROW).collect().get_column(ROW)
            if rows.len() != n_kept or not (rows == pl.int_range(0, n_kept, eager=True)).all():  # pragma: no cover
                raise RuntimeError(f"Ray returned {rows.len()} rows for {n_kept} exchanges")
            order = [options.id_column, *keep, *scorer.columns()[1:]]
            frame = scored.select(order).rename({k: k[len("__keep_"):] for k in keep}).collect()
        engine = {"name": "ray", "ray": ray.__version__, "actors": n_actors, "cpus_per_actor": cpus,
                  "gpus_per_actor": options.gpus_per_actor, "blocks": n_blocks, "seconds": round(time.perf_counter() - t0, 3)}  # fmt: skip
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if started:
            ray.shutdown()
    return frame, engine


#: The counts :func:`frame_stats` reads back from an output (the others stay with the actors).
_FRAME_STATS = ("n_exchanges", "n_empty_prompts", "n_empty_responses", "n_lang_zh", "n_lang_ja", "nan_counts")


def frame_stats(frame: pl.DataFrame, metric_columns: list[str]) -> ScoreStats:
    """Run counts read back from a scored frame (the actors keep their own): rows, NaNs, empty texts, languages."""
    return ScoreStats(
        n_exchanges=frame.height,
        n_empty_prompts=int(frame.get_column("prompt_empty").sum()),
        n_empty_responses=int(frame.get_column("resp_empty").sum()),
        n_lang_zh=int((frame.get_column("lang") == "zh").sum()),
        n_lang_ja=int((frame.get_column("lang") == "ja").sum()),
        nan_counts={c: n for c in metric_columns if (n := int(frame.get_column(c).is_nan().sum()))},
    )


def _long_text_warnings(frame: pl.DataFrame, scorer: Any) -> list[str]:
    """The long-text warning, counted in exchanges (a prompt or response windowed or truncated): the unique
    texts are counted by the actors, each over its own blocks."""
    flags = [c for c in ("prompt_windows", "resp_windows") if c in frame.columns]
    if not flags:
        return []
    long_row = pl.any_horizontal([pl.col(c) > 1 for c in flags])
    truncated = [c for c in ("prompt_truncated", "resp_truncated") if c in frame.columns]
    if truncated:
        long_row = long_row | pl.any_horizontal([pl.col(c) for c in truncated])
    n_long = int(frame.select(long_row.sum()).item())
    if not n_long:
        return []
    config = scorer.encoder_config
    return [long_text_warning(n_long, frame.height, config.max_seq_length, config.long_text, unit="exchanges")]
