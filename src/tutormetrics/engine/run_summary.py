"""One run key and one manifest for every engine (local, dialogue, Ray).

* :func:`run_key`: what a checkpoint is valid for — the input's SHA-256 (:func:`tutormetrics.io.hashing.file_sha256`),
  the options that change numbers, what ``auto`` became (once), every family's parameters, the encoder's fingerprint
  and the package version, plus whatever else an engine's numbers depend on (the dialogue options).
* :func:`run_manifest`: the scorer's manifest (versions, parameters, encoder, counts) plus the run's input,
  options, warnings and NaN reasons, and the engine's own fields.
* :func:`write_run_manifest`: ``<output>.manifest.json``, atomically, with the CSV guard noted again.

Example:
    >>> from tutormetrics.engine.scorer import Scorer
    >>> m = run_manifest(Scorer("length"), source=Path("x.csv"), options=None, warnings=[], n_rows=3)
    >>> [k for k in m if k in ("input", "n_rows", "options", "warnings", "nan_reasons")]
    ['input', 'n_rows', 'options', 'warnings', 'nan_reasons']
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutormetrics import __version__
from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.formula_guard import record_guard
from tutormetrics.io.hashing import file_sha256
from tutormetrics.io.tables import csv_separator, infer_format
from tutormetrics.metrics.columns import ROLES_KEY
from tutormetrics.progress import Log

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.engine.scorer import Scorer


def run_key_parts(path: Path, scorer: Scorer, **parts: Any) -> dict[str, Any]:
    """What :func:`run_key` hashes: the input's SHA-256, ``parts`` (``options=ScoreOptions.result_key()``, the
    options as given, and the kind's own: ``dialogue``, ``form``, ``engine``), the resolved settings
    (:func:`~tutormetrics.engine.resolved.resolved_settings`: what ``auto`` became; they enter here and only here),
    the families' parameters, the encoder fingerprint (``None`` without an encoder family) and the version.

    Args:
        path: the input file.
        scorer: the scorer (its families, encoder and resolved settings).
        parts: ``options=`` and the kind's own parts.
    """
    from tutormetrics.engine.resolved import resolved_settings

    if "resolved" in parts:
        raise ValueError("the resolved settings enter the run key once, from the scorer; do not pass them")
    return {
        "input_sha256": file_sha256(path),
        **parts,
        "resolved": resolved_settings(scorer),
        "params": {f.name: f.get_params() for f in scorer.families},
        "encoder": scorer.resolved_encoder.fingerprint if scorer.needs_encoder else None,
        "version": __version__,
    }


def run_key(path: Path, scorer: Scorer, **parts: Any) -> str:
    """SHA-256 of :func:`run_key_parts` as sorted JSON: what a checkpoint is valid for
    (``docs/design/scoring.md#the-run-key``).

    Args:
        path: the input file.
        scorer: the scorer.
        parts: as for :func:`run_key_parts`.
    """
    meta = run_key_parts(path, scorer, **parts)
    return hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()


def run_manifest(
    scorer: Scorer,
    *,
    source: Path,
    options: Any,
    warnings: Sequence[str],
    nan_reasons: Mapping[str, Mapping[str, int]] | None = None,
    stats: Mapping[str, Any] | None = None,
    load_encoder: bool = True,
    columns: Mapping[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """``scorer.manifest(stats)`` | ``input`` | ``fields`` (the engine's own, in order) | ``options`` (a dataclass,
    as a dict) | ``warnings`` | ``nan_reasons`` (| ``columns``, a description per output column, when given).

    Args:
        scorer: the scorer (versions, parameters, encoder, counts).
        source: the input file.
        options: the options (a dataclass is recorded as a dict).
        warnings: the run's warnings.
        nan_reasons: per column, why values are NaN.
        stats: counts to record instead of the scorer's.
        load_encoder: describe the loaded encoder (``False``: its config and fingerprint only).
        columns: a description per output column.
        fields: the kind's own fields, after ``input``.
    """
    from tutormetrics.engine.resolved import resolved_settings

    manifest = scorer.manifest(stats, load_encoder=load_encoder) | {"input": str(source), **fields}
    manifest |= {
        "options": dataclasses.asdict(options) if dataclasses.is_dataclass(options) else options,
        "resolved": resolved_settings(scorer),  # what ``auto`` options became on this machine
        "warnings": list(warnings),
        "nan_reasons": dict(nan_reasons or {}),
    }
    if columns is not None:
        manifest["columns"] = dict(columns)
    return manifest


def write_run_manifest(output: Path, manifest: Mapping[str, Any], options: Any) -> None:
    """Write ``<output>.manifest.json`` (when ``options.write_manifest``), and note the CSV guard of ``output``
    again (the manifest was rewritten) when ``options.csv_formula_guard`` and the output is CSV.

    Args:
        output: the table the manifest describes.
        manifest: the manifest.
        options: ``write_manifest``, ``csv_formula_guard``, ``output_format``, the id and kept columns.
    """
    if not options.write_manifest:
        return
    if ROLES_KEY not in manifest:  # each output column's role (docs/guide/input.md#composite-ids), from the file just written
        manifest = {**manifest, ROLES_KEY: output_roles(output, manifest, options)}
    write_text_atomic(output.with_name(output.name + ".manifest.json"), json.dumps(manifest, indent=2, default=str))
    if options.csv_formula_guard and infer_format(output, options.output_format) == "csv":
        record_guard(output)


def output_roles(output: Path, manifest: Mapping[str, Any], options: Any) -> dict[str, list[str]]:
    """The roles of the columns of ``output`` (its header, read without loading rows).

    Args:
        output: the written table.
        manifest: its manifest (the column descriptions).
        options: the id, id parts and kept columns.
    """
    import polars as pl

    from tutormetrics.metrics.columns import MANIFEST_KEY, ColumnDescription, column_roles

    kind = infer_format(output, getattr(options, "output_format", None))
    reader = {"csv": lambda p: pl.scan_csv(p, separator=csv_separator(p), infer_schema=False),
              "parquet": pl.scan_parquet, "jsonl": pl.scan_ndjson}[kind]  # fmt: skip
    columns = reader(output).collect_schema().names()
    described = [ColumnDescription.from_dict(d) for d in manifest.get(MANIFEST_KEY, [])]
    key = getattr(options, "id_key", None)
    parts = key.id_parts if key is not None else []
    return column_roles(columns, id_col=getattr(options, "id_column", "exchange_id"), descriptions=described, id_parts=parts,
                        kept=[c for c in getattr(options, "keep_columns", []) or [] if c not in parts])  # fmt: skip


def log_summary(log: Log, warnings: Sequence[str], notes: Sequence[str] = ()) -> None:
    """``warning: …`` then ``note: …`` lines, in order.

    Args:
        log: the logger.
        warnings: written as ``warning: ...``.
        notes: written as ``note: ...`` after them.
    """
    for message in warnings:
        log(f"warning: {message}")
    for note in notes:
        log(f"note: {note}")
