"""Files in and out, one module per job (``docs/design/io.md``):

========================================  =====================================================================
module                                    job
========================================  =====================================================================
:mod:`tutormetrics.io.tables`             read, scan and write tables (CSV, TSV, Parquet, JSONL); ``require_columns``
:mod:`tutormetrics.io.atomic`             atomic writes (text, bytes, figures), stale temporaries, output locks
:mod:`tutormetrics.io.formula_guard`      the CSV formula guard and its record in ``<file>.manifest.json``
:mod:`tutormetrics.io.paths`              outputs checked before any work (``check_outputs``)
:mod:`tutormetrics.io.hashing`            ``file_sha256``
========================================  =====================================================================

Import from the module that does the job; this package re-exports nothing (one way in per name). A name imported
from ``tutormetrics.io`` itself fails with an ``ImportError`` that names its module.
"""

from __future__ import annotations

#: Where each name of the former single ``io`` module lives now (for the ImportError below).
MOVED = {
    **dict.fromkeys(("TableFormat", "csv_separator", "infer_format", "read_table", "require_columns", "scan_table",
                     "write_table"), "tutormetrics.io.tables"),
    **dict.fromkeys(("atomic_output", "output_lock", "remove_stale_temporaries", "save_figure", "write_bytes_atomic",
                     "write_text_atomic"), "tutormetrics.io.atomic"),
    **dict.fromkeys(("FORMULA_PREFIXES", "GUARD_RECORD_SUFFIX", "forget_guard", "guard_formulas", "needs_guard",
                     "record_guard", "unguard_formulas_expr", "unguard_headers", "written_with_guard"),
                    "tutormetrics.io.formula_guard"),
    "check_outputs": "tutormetrics.io.paths",
    "file_sha256": "tutormetrics.io.hashing",
    "join_prompt_columns": "tutormetrics.engine.exchanges",
    "stable_id": "tutormetrics.engine.exchanges",
}


def __getattr__(name: str) -> object:
    """``from tutormetrics.io import read_table`` says where ``read_table`` lives now (an ImportError, so that
    Python's import machinery passes the message on); any other missing name is an AttributeError."""
    if name in MOVED:
        raise ImportError(f"{name} is in {MOVED[name]} (tutormetrics.io is split by job: docs/design/io.md)", name=name)
    raise AttributeError(f"module 'tutormetrics.io' has no attribute {name!r}")
