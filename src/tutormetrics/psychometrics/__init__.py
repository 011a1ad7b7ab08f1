"""Psychometrics: reading and cleaning ratings into targets, many-facet Rasch models (θ), rater agreement.

Example:
    >>> from tutormetrics.psychometrics import fit_mfrm, simulate_mfrm
    >>> ratings, _ = simulate_mfrm(n_items=60, seed=2)
    >>> fit_mfrm(ratings).converged
    True
"""

from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.mfrm import MFRMResult, fit_mfrm, fit_theta, simulate_mfrm
from tutormetrics.psychometrics.ratings import ratings_to_targets, read_ratings, read_theta, wide_ratings_to_targets

__all__ = [
    "MFRMResult", "agreement_table", "fit_mfrm", "fit_theta", "judge_table", "ratings_to_targets", "read_ratings",
    "read_theta", "simulate_mfrm", "wide_ratings_to_targets",
]
