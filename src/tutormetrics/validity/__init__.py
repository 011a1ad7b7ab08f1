"""Validity statistics: targets from ratings, joins, Spearman matrices, heatmaps, MFRM θ, agreement, paired tests.

>>> from tutormetrics.validity import spearman_matrix, plot_heatmap, fit_mfrm, agreement_table
"""

from __future__ import annotations

from tutormetrics.validity.agreement import agreement_table
from tutormetrics.validity.correlate import adjust_pvalues, prevalence_ceiling, rho_matrix, spearman_matrix
from tutormetrics.validity.heatmap import plot_heatmap
from tutormetrics.validity.join import JoinReport, join_targets
from tutormetrics.validity.mfrm import MFRMResult, fit_mfrm, simulate_mfrm
from tutormetrics.validity.paired import compare_groups, paired_wilcoxon
from tutormetrics.validity.study import ValidityResult, correlate_with_targets
from tutormetrics.validity.targets import ratings_to_targets, read_ratings, read_theta, wide_ratings_to_targets

__all__ = [
    "agreement_table", "adjust_pvalues", "prevalence_ceiling", "rho_matrix", "spearman_matrix", "plot_heatmap",
    "JoinReport", "join_targets", "MFRMResult", "fit_mfrm", "simulate_mfrm", "compare_groups", "paired_wilcoxon",
    "ValidityResult", "correlate_with_targets", "ratings_to_targets", "read_ratings", "read_theta",
    "wide_ratings_to_targets",
]
