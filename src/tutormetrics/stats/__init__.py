"""Statistics shared by every room above: p-value adjustment and stars, the vectorised bootstrap,
Spearman building blocks, paired tests and Friedman.

Example:
    >>> from tutormetrics.stats import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(3).tolist()
    [0.03, 0.04, 0.04]
"""

from tutormetrics.stats.multiplicity import ADJUST_METHODS, adjust_pvalues, significance_stars

__all__ = ["ADJUST_METHODS", "adjust_pvalues", "significance_stars"]
