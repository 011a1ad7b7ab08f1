"""``tutormetrics score --engine ray``: the same Scorer on Ray Data (extra ``tutormetrics[ray]``).

1. The driver validates and reads the input with the local engine's reader (:func:`plan_input`,
   :func:`iter_exchanges`), so ids (given or generated), joined prompts, ``--dedupe`` and every input error
   are exactly those of ``--engine local``.
2. Rows are grouped by prompt (:func:`pack_blocks`): rows sharing a prompt go into one block of about
   ``chunk_size`` rows, and each block becomes one Ray Data block (``ray.data.from_arrow``), so the
   prompt is encoded once (and the text cache of each actor catches the rest).
3. ``map_batches(ScoreBatch, batch_size=None, concurrency=num_actors, num_gpus=gpus_per_actor)``: an actor
   pool, one Scorer (one model load, one text cache) per actor, one block per call.
4. Ray Data writes Parquet shards into a temporary folder beside the output; the driver sorts them back
   into input order by row number and writes the final file with the same atomic
   :func:`~tutormetrics.io.write_table` (CSV formula guard included), then removes the shards.

Fault tolerance: Ray Data restarts a dead actor and retries its blocks (its defaults for actor pools are
``max_restarts=-1``, ``max_task_retries=-1``), and re-runs lost read/write tasks, so a worker process or node lost
mid-run costs only its blocks (an exception raised by the scoring code itself is not retried: it fails the run). If the driver dies (Ctrl-C, the head node),
the run is lost: nothing is checkpointed, the shards folder is removed, and a rerun scores everything again
(use ``--engine local``, whose chunks are checkpointed and resumed, when runs are interrupted often).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections import deque
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.io import infer_format, write_table, write_text_atomic
from tutormetrics.engine.files import Log, ScoreOptions, ScoreResult, build_scorer, iter_exchanges, plan_input
from tutormetrics.engine.scorer import MOSTLY_NAN_MIN_ROWS, MOSTLY_NAN_SHARE, ScoreStats

ROW, PROMPT, RESPONSE = "__row", "__prompt", "__response"


def import_ray() -> Any:
    """``ray`` with Ray Data, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
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
    for rows in groups.values():
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


def score_file_ray(
    path: Path, output: Path | None, options: ScoreOptions, *, log: Log = lambda _m: None, keep_frame: bool = False
) -> ScoreResult:
    """Score ``path`` on Ray Data; the output (columns, ids, order, numbers) is that of the local engine."""
    ray = import_ray()
    lf, plan = plan_input(path, options)
    if not plan.has_id:
        log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of prompt and response)")
    if plan.n_dropped_duplicates:
        log(f"note: --dedupe dropped {plan.n_dropped_duplicates} rows whose id appeared earlier")
    if output is not None:
        infer_format(output, options.output_format)
    n_kept = plan.n_rows - plan.n_dropped_duplicates
    scorer = build_scorer(options, n_kept)  # columns and manifest on the driver; the model is not loaded here

    kept: deque[pl.DataFrame] = deque()
    ids: list[str] = []
    prompts: list[str] = []
    responses: list[str | None] = []
    for chunk_ids, chunk_prompts, chunk_responses in iter_exchanges(lf, plan, options, kept, source=str(path)):
        ids += chunk_ids
        prompts += chunk_prompts
        responses += chunk_responses
    table = pl.DataFrame(
        {ROW: list(range(len(ids))), options.id_column: ids, PROMPT: prompts, RESPONSE: responses},
        schema={ROW: pl.Int64, options.id_column: pl.String, PROMPT: pl.String, RESPONSE: pl.String},
    )
    blocks = [table[rows].to_arrow() for rows in pack_blocks(prompts, options.chunk_size)]
    actor_options = replace(options, prompt_columns=[PROMPT], response_column=RESPONSE, keep_columns=[])

    started = False
    if not ray.is_initialized():
        ray.init(address=options.ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        started = True
    shards = Path(tempfile.mkdtemp(prefix=f".{output.name if output else 'stdout'}.ray-", dir=output.parent if output else None))
    t0 = time.perf_counter()
    try:
        from tutormetrics.engine.batch import ScoreBatch

        n_actors, cpus = _actors(ray, options)
        _quiet(ray, options.progress)
        log(f"ray: {len(blocks)} blocks on {n_actors} actor(s) ({cpus:g} CPU, {options.gpus_per_actor:g} GPU each)")
        ds = ray.data.from_arrow(blocks).map_batches(
            ScoreBatch,
            fn_constructor_kwargs={"options": asdict(actor_options), "passthrough": [ROW]},
            batch_size=None,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=n_actors),
            num_cpus=cpus,
            num_gpus=options.gpus_per_actor or None,
        )  # Ray Data's actor defaults: max_restarts=-1, max_task_retries=-1 (a lost actor is restarted, its blocks rerun)
        ds.write_parquet(str(shards))
        scored = pl.read_parquet(sorted(shards.glob("*.parquet"))) if any(shards.glob("*.parquet")) else None
    finally:
        shutil.rmtree(shards, ignore_errors=True)
        if started:
            ray.shutdown()
    seconds = time.perf_counter() - t0
    frame = scorer.empty_frame() if scored is None else scored.sort(ROW).drop(ROW)
    if frame.height != n_kept or frame.get_column(options.id_column).to_list() != ids:  # pragma: no cover - Ray lost rows
        raise RuntimeError(f"Ray returned {frame.height} rows for {n_kept} exchanges")
    frame = frame.select(scorer.columns())
    if options.keep_columns:
        extra = pl.concat(list(kept)) if kept else pl.DataFrame()
        frame = pl.concat([frame.select(options.id_column), extra, frame.drop(options.id_column)], how="horizontal")

    stats, run_warnings = _stats(frame, scorer)
    for message in run_warnings:
        log(f"warning: {message}")
    manifest = _manifest(scorer, options, path, n_kept, plan, stats, run_warnings) | {
        "engine": {"name": "ray", "ray": ray.__version__, "actors": n_actors, "cpus_per_actor": cpus,
                   "gpus_per_actor": options.gpus_per_actor, "blocks": len(blocks), "seconds": round(seconds, 3)},
    }
    if output is not None:
        write_table(frame, output, options.output_format, formula_guard=options.csv_formula_guard, record=options.write_manifest)
        if options.write_manifest:
            import json

            from tutormetrics.io import record_guard

            write_text_atomic(output.with_name(output.name + ".manifest.json"), json.dumps(manifest, indent=2, default=str))
            if options.csv_formula_guard and infer_format(output, options.output_format) == "csv":
                record_guard(output)
        log(f"scored {n_kept:,} exchanges -> {output} (ray, {n_actors} actor(s))")
    keep = output is None or keep_frame
    return ScoreResult(frame if keep else None, manifest, output, n_kept, 0, scorer.column_families())


def _stats(frame: pl.DataFrame, scorer: Any) -> tuple[ScoreStats, list[str]]:
    """Run counts read back from the output (actors keep their own): rows, NaNs, empty texts, languages, windows."""
    cols = scorer.metric_columns()
    stats = ScoreStats(
        n_exchanges=frame.height,
        n_empty_prompts=int(frame.get_column("prompt_empty").sum()),
        n_empty_responses=int(frame.get_column("resp_empty").sum()),
        n_lang_zh=int((frame.get_column("lang") == "zh").sum()),
        n_lang_ja=int((frame.get_column("lang") == "ja").sum()),
        nan_counts={c: n for c in cols if (n := int(frame.get_column(c).is_nan().sum()))},
    )
    messages: list[str] = []
    if "resp_windows" in frame.columns:
        long_rows = int(((frame.get_column("resp_windows") > 1) | (frame.get_column("prompt_windows") > 1)).sum())
        if long_rows:
            messages.append(f"{long_rows} of {frame.height} exchanges have a text longer than max_seq_length (windowed or truncated)")
    if stats.n_exchanges >= MOSTLY_NAN_MIN_ROWS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scorer._warn_mostly_nan(stats)
        messages += [str(w.message) for w in caught]
    return stats, messages


def _manifest(scorer: Any, options: ScoreOptions, path: Path, n_rows: int, plan: Any, stats: ScoreStats,
              run_warnings: list[str]) -> dict[str, Any]:
    from tutormetrics import __version__

    info: dict[str, Any] = {
        "tutormetrics": __version__,
        "metrics": {f.name: {"class": type(f).__name__, "params": f.get_params()} for f in scorer.families},
        "chunk_size": options.chunk_size,
        "stats": {k: v for k, v in vars(stats).items() if k in ("n_exchanges", "n_empty_prompts", "n_empty_responses",
                                                               "n_lang_zh", "n_lang_ja", "nan_counts")},
        "input": str(path),
        "n_rows": n_rows,
        "dropped_duplicates": plan.n_dropped_duplicates,
        "generated_ids": not plan.has_id,
        "options": asdict(options),
        "warnings": run_warnings,
    }
    if scorer.needs_encoder:
        info["encoder"] = {"config": scorer.encoder_config.to_dict(), "fingerprint": scorer.encoder_config.fingerprint()}
    return info
