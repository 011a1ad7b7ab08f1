"""Validity: the in-memory study (:mod:`.study`), the Spearman engine (:mod:`.spearman`), correlation tables
(:mod:`.correlate`), the join of metrics to targets, heatmaps and grouped prediction.

>>> from tutormetrics.validity import spearman_matrix, plot_heatmap, correlate_with_targets, validate_metrics
"""

from __future__ import annotations

from tutormetrics.validity.correlate import (
    ValidityResult,
    correlate_with_targets,
    prevalence_ceiling,
    rho_matrix,
    spearman_matrix,
)
from tutormetrics.validity.heatmap import plot_heatmap
from tutormetrics.validity.join import JoinReport, join_targets
from tutormetrics.validity.spearman import SpearmanOptions
from tutormetrics.validity.study import StudyResult, ValidateOptions, estimate_theta_targets, validate_metrics

__all__ = [
    "JoinReport", "SpearmanOptions", "StudyResult", "ValidateOptions", "ValidityResult", "correlate_with_targets",
    "estimate_theta_targets", "join_targets", "plot_heatmap", "prevalence_ceiling", "rho_matrix", "spearman_matrix",
    "validate_metrics",
]
