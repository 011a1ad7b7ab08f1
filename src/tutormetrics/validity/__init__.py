"""Validity: join metrics to targets, Spearman matrices (tidy tables), heatmaps.

>>> from tutormetrics.validity import spearman_matrix, plot_heatmap, correlate_with_targets
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

__all__ = [
    "JoinReport", "ValidityResult", "correlate_with_targets", "join_targets", "plot_heatmap", "prevalence_ceiling",
    "rho_matrix", "spearman_matrix",
]
