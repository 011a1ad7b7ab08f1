"""Validity: the in-memory study (:mod:`.study`), the Spearman engine (:mod:`.spearman`), correlation tables
(:mod:`.correlate`), the join of metrics to targets, heatmaps and grouped prediction.

>>> from tutormetrics.validity import spearman_matrix, plot_heatmap, correlate_with_targets, validate_metrics
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name → submodule. Imported on first use, so the light options modules (``predict_options``), which the
#: command modules need at start-up, do not pull in scipy and matplotlib through the study and the heatmap.
_EXPORTS = {
    "ValidityResult": "correlate",
    "correlate_with_targets": "correlate",
    "prevalence_ceiling": "correlate",
    "rho_matrix": "correlate",
    "spearman_matrix": "correlate",
    "plot_heatmap": "heatmap",
    "JoinReport": "join",
    "join_targets": "join",
    "SpearmanOptions": "spearman",
    "StudyResult": "study",
    "ValidateOptions": "study",
    "estimate_theta_targets": "study",
    "validate_metrics": "study",
}

__all__ = [
    "JoinReport", "SpearmanOptions", "StudyResult", "ValidateOptions", "ValidityResult", "correlate_with_targets",
    "estimate_theta_targets", "join_targets", "plot_heatmap", "prevalence_ceiling", "rho_matrix", "spearman_matrix",
    "validate_metrics",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tutormetrics.validity' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tutormetrics.validity.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
