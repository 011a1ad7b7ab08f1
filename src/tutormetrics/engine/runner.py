"""The one scoring runner: chunks → checkpoint → output → manifest, for every kind of file scoring
(``docs/design/scoring.md#the-runner``).

``score`` (local and ``--engine ray``), ``score --dialogue`` and ``score --history-col`` differ only in how they read
their input and what their rows look like; the sequence around them is written once, here (:func:`run_job`):

1. the run key (:func:`~tutormetrics.engine.run_summary.run_key`: the input's SHA-256, the options that change
   numbers, the resolved settings — once —, the families' parameters, the encoder fingerprint, the version, and the
   kind's own :meth:`ScoringJob.key_parts`);
2. the locked, verified checkpoint ``<output>.partial/`` (:class:`~tutormetrics.engine.checkpoint.Checkpoint`), and
   the temporaries of a killed write removed;
3. every chunk scored or reused (:class:`~tutormetrics.engine.chunk_run.ChunkRun`, or the kind's own engine), each
   chunk's counts and warnings kept with it, so a resumed run reports exactly what an uninterrupted one does;
4. the output written atomically (streamed from the chunk files, or from the frame when the kind needs it in memory),
   then the kind's further tables, then the checkpoint removed (unless kept for ``run``'s later steps);
5. warnings and notes logged, the manifest assembled (:func:`~tutormetrics.engine.run_summary.run_manifest`) and
   written beside the output.

A kind subclasses :class:`ScoringJob` and fills in: :meth:`~ScoringJob.items` (its chunks), :meth:`~ScoringJob.finish`
(a scored chunk's output rows), :meth:`~ScoringJob.empty` (the output with no rows), :meth:`~ScoringJob.key_parts`,
:meth:`~ScoringJob.manifest_fields` / :meth:`~ScoringJob.manifest_extra`, :meth:`~ScoringJob.write_more` (CONV) and
:meth:`~ScoringJob.done_message`; Ray replaces :meth:`~ScoringJob.chunk_run`.

Example:
    >>> import tempfile
    >>> from tutormetrics.engine.scorer import Scorer
    >>> from tutormetrics.engine.file_scoring import ScoreOptions
    >>> class Two(ScoringJob):
    ...     def items(self):
    ...         yield (["a"], ["x y"], ["x"]), None
    ...         yield (["b"], ["y"], ["y"]), None
    >>> folder = Path(tempfile.mkdtemp())
    >>> src = folder / "in.txt"; _ = src.write_text("the input")
    >>> scored = run_job(Two(src, Scorer("overlap", progress=False), total=2), folder / "out.csv",
    ...                  ScoreOptions(progress=False), keep_frame=True)
    >>> scored.frame["jaccard_1"].to_list(), (folder / "out.csv.manifest.json").is_file()
    ([0.5, 1.0], True)
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.chunk_run import ChunkRun, Item
from tutormetrics.engine.run_stats import ScoreStats
from tutormetrics.engine.run_summary import log_summary, run_key, run_manifest, write_run_manifest
from tutormetrics.engine.run_warnings import run_notes
from tutormetrics.io.atomic import remove_stale_temporaries
from tutormetrics.io.tables import write_table
from tutormetrics.progress import Log, quiet

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.engine.scorer import Scorer

__all__ = ["ChunkEngine", "Scored", "ScoringJob", "read_parts", "run_job"]


class ChunkEngine(Protocol):
    """What scores a job's chunks (:class:`~tutormetrics.engine.chunk_run.ChunkRun`, or Ray's one-chunk engine)."""

    n_reused: int

    @property
    def stats(self) -> ScoreStats: ...  # the run's counts (the manifest's and the notes')

    def frames(self, items: Iterator[Item]) -> Iterator[tuple[int, pl.DataFrame]]: ...

    def save_all(self, items: Iterator[Item]) -> list[Path]: ...

    def run_warnings(self) -> list[str]: ...


@dataclass
class Scored:
    """What :func:`run_job` did: the output frame (in memory, or ``keep_frame``), the chunk engine, the warnings,
    notes and NaN reasons of the run, and the manifest (also written beside the output)."""

    frame: pl.DataFrame | None
    run: Any
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nan_reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def n_reused(self) -> int:
        """Chunks reused from a verified checkpoint."""
        return int(self.run.n_reused)


class ScoringJob:
    """One kind of file scoring, as the runner sees it.

    Args:
        source: the input file (its SHA-256 keys the checkpoint; the manifest's ``input``).
        scorer: the configured :class:`~tutormetrics.engine.scorer.Scorer`.
        total: rows to score (the progress total).
        reader_warnings: warnings met while reading the input, reported before the scoring's own.
    """

    #: The kind needs the whole output in memory (further tables, row counts); otherwise it is streamed from the
    #: chunk files into the output and read only for ``keep_frame``.
    in_memory = False
    #: Python warnings raised while scoring are the run's warnings (recorded per chunk); Ray's driver counts its
    #: warnings from the scored frame instead.
    records_warnings = True

    def __init__(self, source: Path, scorer: Scorer, total: int, reader_warnings: Sequence[str] = ()) -> None:
        self.source, self.scorer, self.total = Path(source), scorer, total
        self.reader_warnings = list(reader_warnings)

    def items(self) -> Iterator[Item]:  # pragma: no cover - every kind defines it
        """The input in chunks: ``(chunk, extra)``, ``chunk`` as :meth:`Scorer.iter_scores` takes it."""
        raise NotImplementedError

    def finish(self, frame: pl.DataFrame, extra: Any) -> pl.DataFrame:
        """A scored chunk's output rows (``extra`` is the item's second half): as scored, by default."""
        return frame

    def empty(self) -> pl.DataFrame:
        """The output with no rows, with its full schema."""
        return self.scorer.empty_frame()

    def key_parts(self) -> dict[str, Any]:
        """What the run key holds beyond the options, the resolved settings, the parameters and the encoder."""
        return {}

    def chunk_run(self, caught: list[warnings.WarningMessage] | None, checkpoint: Checkpoint | None) -> ChunkEngine:
        """The engine that scores the chunks (the scorer's chunk pipeline)."""
        return ChunkRun(self.scorer, total=self.total, caught=caught, checkpoint=checkpoint, finish=self.finish)

    def manifest_fields(self, scored: Scored) -> dict[str, Any]:
        """The kind's manifest fields after ``input`` (``n_rows``, ...), and ``stats``/``load_encoder`` for
        :func:`~tutormetrics.engine.run_summary.run_manifest`."""
        return {}

    def manifest_extra(self, scored: Scored) -> dict[str, Any]:
        """Entries added at the end of the manifest (column descriptions and roles, the engine)."""
        return {}

    def write_more(self, scored: Scored, output: Path | None) -> None:
        """Further tables, written after the output and before its manifest (``score --dialogue``'s CONV)."""

    def done_message(self, scored: Scored, output: Path) -> str:
        """The last line of a run that wrote ``output``."""
        n = scored.frame.height if scored.frame is not None else self.total
        return f"scored {n:,} rows -> {output}"


def run_job(
    job: ScoringJob,
    output: Path | None,
    options: Any,
    *,
    log: Log = quiet,
    keep_frame: bool = False,
    keep_checkpoint: bool = False,
) -> Scored:
    """Score ``job`` into ``output`` (atomically, checkpointed) plus ``<output>.manifest.json``.

    With ``output=None`` nothing is written or checkpointed and the frame is returned; with ``keep_frame`` (or a kind
    that holds its output in memory) it is returned as well as written; ``keep_checkpoint`` leaves the verified chunks in ``<output>.partial/`` (``run``
    removes them when its later steps have finished: :func:`~tutormetrics.engine.checkpoint.remove_checkpoint`).

    Args:
        job: the kind of scoring (its chunks, rows, key parts, tables and manifest fields).
        output: the output table, or ``None`` for the frame in memory only.
        options: the :class:`~tutormetrics.engine.file_scoring.ScoreOptions` (``result_key()``, ``resume``,
            ``output_format``, ``csv_formula_guard``, ``write_manifest``).
        log: where notes, warnings and the last line go.
        keep_frame: return the frame although it was written.
        keep_checkpoint: keep the verified chunks after success.
    """
    scored = _score(job, output, options, log, keep_frame or output is None or job.in_memory, keep_checkpoint)
    log_summary(log, scored.warnings, scored.notes)
    job.write_more(scored, output)
    fields = job.manifest_fields(scored)
    scored.manifest = run_manifest(job.scorer, source=job.source, options=options, warnings=scored.warnings,
                                   nan_reasons=scored.nan_reasons, **fields) | job.manifest_extra(scored)  # fmt: skip
    if output is not None:
        write_run_manifest(output, scored.manifest, options)
        log(job.done_message(scored, output))
    return scored


def _score(job: ScoringJob, output: Path | None, options: Any, log: Log, want_frame: bool, keep_checkpoint: bool) -> Scored:
    """Steps 1–4 of the module docstring: the scored output (written when ``output``), its warnings and notes."""
    record = warnings.catch_warnings(record=True) if job.records_warnings else contextlib.nullcontext(None)
    with record as caught:
        if caught is not None:
            warnings.simplefilter("always")
        if output is None:
            run = job.chunk_run(caught, None)
            frames = [frame for _, frame in run.frames(job.items())]
            frame: pl.DataFrame | None = pl.concat(frames, how="vertical_relaxed") if frames else job.empty()
        else:
            key = run_key(job.source, job.scorer, options=options.result_key(), **job.key_parts())
            with Checkpoint(output, key) as checkpoint:
                checkpoint.open(options.resume, log)
                remove_stale_temporaries(output)
                run = job.chunk_run(caught, checkpoint)
                parts = run.save_all(job.items())
                frame = read_parts(parts, job.empty) if want_frame else None
                source = frame if job.in_memory else (pl.scan_parquet(parts) if parts else job.empty())
                write_table(source, output, options.output_format, formula_guard=options.csv_formula_guard,
                            record=options.write_manifest)  # fmt: skip
                if not keep_checkpoint:  # the output is written: the checkpoint has done its job
                    checkpoint.remove()
        all_warnings = [*job.reader_warnings, *run.run_warnings()]
    notes, nan_reasons = run_notes(run.stats, [f.name for f in job.scorer.families])
    return Scored(frame, run, all_warnings, notes, nan_reasons)


def read_parts(parts: Sequence[Path], empty: Any = None) -> pl.DataFrame:
    """The checkpointed chunks as one frame, in order; ``empty()`` when there are none. A column that is all null
    in one chunk (a ``--keep`` column of turns that lack it) takes the other chunks' type.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"k": [None]}).write_parquet(folder / "0.parquet")
    >>> pl.DataFrame({"k": ["x"]}).write_parquet(folder / "1.parquet")
    >>> read_parts([folder / "0.parquet", folder / "1.parquet"])["k"].to_list()
    [None, 'x']
    """
    if not parts:
        return empty() if empty is not None else pl.DataFrame()
    return pl.concat([pl.read_parquet(p) for p in parts], how="vertical_relaxed")
