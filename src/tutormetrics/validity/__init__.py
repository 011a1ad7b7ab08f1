"""Validity: the in-memory study (:mod:`.study`), the Spearman engine (:mod:`.spearman`), correlation tables
(:mod:`.correlate`), the join of metrics to targets, heatmaps and grouped prediction.

The names below load their module on first use, so importing :mod:`.options` (what the command line declares
``validate`` and ``run`` with) loads neither scipy nor matplotlib (``docs/guide/options.md#options``).

>>> from tutormetrics.validity import spearman_matrix, plot_heatmap, correlate_with_targets, validate_metrics
"""

from __future__ import annotations

from tutormetrics.lazy_exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS: dict[str, str] = {
    "predict_study": "predict_study", "predict_files": "predict_files", "PredictOptions": "predict_options",
    "ValidityResult": "correlate", "correlate_with_targets": "correlate", "prevalence_ceiling": "correlate",
    "rho_matrix": "correlate", "spearman_matrix": "correlate", "plot_heatmap": "heatmap", "JoinReport": "join",
    "join_targets": "join", "SpearmanOptions": "options", "ValidateOptions": "options", "StudyResult": "study",
    "estimate_theta_targets": "study", "validate_metrics": "study",
}

__all__ = [
    "PredictOptions", "predict_files", "predict_study",
    "JoinReport", "SpearmanOptions", "StudyResult", "ValidateOptions", "ValidityResult", "correlate_with_targets",
    "estimate_theta_targets", "join_targets", "plot_heatmap", "prevalence_ceiling", "rho_matrix", "spearman_matrix",
    "validate_metrics",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
