"""Statistics shared by every room above: p-value adjustment and stars, the vectorised bootstrap,
Spearman building blocks, paired tests and Friedman.

Example:
    >>> from tutormetrics.stats import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(3).tolist()
    [0.03, 0.04, 0.04]
"""

from __future__ import annotations

from tutormetrics.lazy_exports import lazy_exports
from tutormetrics.stats.multiplicity import ADJUST_METHODS, adjust_pvalues, significance_stars

#: Names loaded with their module on first use (scipy stays out of the lexical path).
_EXPORTS = {
    "compare_study": "compare_study", "CompareOptions": "compare_options", "compare_groups": "paired",
    "icc_forms": "icc", "trial_variability": "variability", "VariabilityOptions": "variability",
    "aggregate_rates": "aggregate", "AggregateOptions": "aggregate", "ppi_mean": "ppi", "ppi_mean_clustered": "ppi",
}

__all__ = [
    "ADJUST_METHODS", "AggregateOptions", "CompareOptions", "VariabilityOptions", "adjust_pvalues", "aggregate_rates",
    "compare_groups", "compare_study", "icc_forms", "ppi_mean", "ppi_mean_clustered", "significance_stars",
    "trial_variability",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
