"""What a ``run`` wrote, and its closing steps written once (``docs/commands/run.md``): ``run.json`` with the SHA-256
of every file written and of every input, the report, then the scoring checkpoints removed.

:class:`RunRecord` collects the files (``files``: key → path, in the order written), the head of ``run.json`` (inputs,
the level of validation, the θ source) and the warnings; :func:`close_run` is the one way a run ends, validated or not.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.tables import write_table
from tutormetrics.progress import Log
from tutormetrics.runs.layout import run_files
from tutormetrics.validity.study import ValidateOptions

#: The scored tables whose verified checkpoint (``<name>.partial/``) is kept until the run has finished.
SCORED_TABLES: tuple[str, ...] = ("metrics.csv", "turns.csv")


@dataclass
class RunRecord:
    """The inputs and options of one run, and what it has written so far.

    ``head`` opens ``run.json`` (``tutormetrics``, ``exchanges``, ``ratings``, then what the steps add: the level of
    validation, ``theta``, ``validated``); ``files`` maps a key (``metrics``, ``correlations``, ...) to the path written.
    """

    outdir: Path
    exchanges: Path
    ratings: Path
    thetas: list[Path]
    score_options: ScoreOptions
    validate_options: ValidateOptions
    files: dict[str, str] = field(default_factory=dict)
    head: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.head = {"tutormetrics": __version__, "exchanges": str(self.exchanges), "ratings": str(self.ratings), **self.head}

    def path(self, name: str) -> Path:
        """The path of ``name`` in the run folder."""
        return self.outdir / name

    def write(self, key: str, frame: pl.DataFrame, name: str | None = None) -> Path:
        """Write ``frame`` to ``name`` (default ``<key>.csv``) in the folder and record it under ``key``.

        Args:
            key: The name the file is recorded under in ``files``.
            frame: The table to write.
            name: File name inside the run folder; ``None``: ``<key>.csv``.
        """
        path = self.path(name or f"{key}.csv")
        write_table(frame, path)
        self.files[key] = str(path)
        return path


def close_run(record: RunRecord, log: Log, validity: dict[str, Any] | None = None) -> dict[str, Any]:
    """The closing steps of every run: ``run.json``, the report, the checkpoints removed; returns ``run.json``'s dict.

    ``run.json`` holds ``record.head``, ``files`` (the report last), ``validity`` (the join, ``n_metrics``,
    ``targets`` of a validated run), both option sets, the warnings, ``file_sha256`` (the files written: the report
    shows only those, while their bytes are these), ``run_files`` (a file of these names this run did not write is
    stale) and ``input_sha256``. The scoring checkpoints are kept until here: a rerun after a failed later step reuses
    them.

    Args:
        record: What the run wrote.
        log: Where the report's notes go.
        validity: The validated run's join summary and counts (``None``: nothing was validated).
    """
    from tutormetrics.engine.checkpoint import remove_checkpoint
    from tutormetrics.report import write_report
    from tutormetrics.report.provenance import input_hashes, record_hashes

    outdir, vo = record.outdir, record.validate_options
    written = [Path(p).name for p in record.files.values()]
    written += [f"{n}.manifest.json" for n in written if (outdir / f"{n}.manifest.json").is_file()]
    record.files["report"] = str(outdir / "report.html")  # written last, from the files above
    summary: dict[str, Any] = {
        **record.head, "files": record.files, **(validity or {}), "score_options": asdict(record.score_options),
        "validate_options": asdict(vo), "warnings": record.warnings, "file_sha256": record_hashes(outdir, written),
        "run_files": list(run_files(vo.figure_formats)),
        "input_sha256": input_hashes(exchanges=record.exchanges, ratings=record.ratings, theta=record.thetas or None),
    }  # fmt: skip
    write_text_atomic(outdir / "run.json", json.dumps(summary, indent=2, default=str))
    # `tutormetrics report OUTDIR` rebuilds it; files of an earlier run (a facets.csv when θ is now given) are left out
    write_report(outdir, on_stale=lambda line: log(f"note: report: {line}"))
    for scored in SCORED_TABLES:
        remove_checkpoint(outdir / scored)
    return summary
