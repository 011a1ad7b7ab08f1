"""``run``: the whole study into one folder (``docs/commands/run.md``), above the validity study and the engines.

- :mod:`~tutormetrics.runs.folder`: :func:`run_pipeline`, the steps in order;
- :mod:`~tutormetrics.runs.levels`: what is scored and which levels are validated (exchanges, turns, conversations);
- :mod:`~tutormetrics.runs.outputs`: θ, agreement, the rating targets, the per-level tables and heatmaps, predict;
- :mod:`~tutormetrics.runs.record`: what a run wrote, and its closing steps (``run.json``, the report, checkpoints);
- :mod:`~tutormetrics.runs.layout`: the names of every file a run may write.

>>> from tutormetrics.runs import RUN_FILES
>>> "targets.csv" in RUN_FILES and "run.json" in RUN_FILES
True
"""

from __future__ import annotations

from tutormetrics.runs.folder import check_ratings_path, run_pipeline
from tutormetrics.runs.layout import RUN_FILES, run_files
from tutormetrics.runs.levels import dialogue_ratings_key

__all__ = ["RUN_FILES", "check_ratings_path", "dialogue_ratings_key", "run_files", "run_pipeline"]
