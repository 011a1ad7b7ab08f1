"""Psychometrics: ratings cleaned once (:class:`Ratings`) and turned into targets, many-facet Rasch models (θ), rater agreement.

Example:
    >>> from tutormetrics.psychometrics import fit_mfrm, simulate_mfrm
    >>> ratings, _ = simulate_mfrm(n_items=60, seed=2)
    >>> fit_mfrm(ratings).converged
    True
"""

from __future__ import annotations

from tutormetrics.lazy_exports import lazy_exports

#: Public name → submodule. Imported on first use, so ``tutormetrics.psychometrics.ratings`` (which the
#: command modules need for option parsing) does not pull in scipy through the Rasch and agreement code.
_EXPORTS = {
    "RatingsInput": "ratings_input",
    "RatingOptions": "ratings_input",
    "theta_study": "mfrm.study",
    "ThetaOptions": "theta_options",
    "agreement_study": "agreement_study",
    "AgreeOptions": "agree_options",
    "ppi_study": "ppi_table",
    "ppi_table": "ppi_table",
    "ppi_plan_table": "ppi_table",
    "agreement_table": "agreement",
    "judge_table": "judge",
    "MFRMResult": "mfrm",
    "fit_mfrm": "mfrm",
    "fit_theta": "mfrm",
    "simulate_mfrm": "mfrm",
    "Ratings": "ratings",
    "ratings_to_targets": "ratings",
    "read_ratings": "ratings_input",
    "read_theta": "ratings",
    "wide_ratings_to_targets": "ratings",
}

__all__ = [
    "AgreeOptions", "MFRMResult", "RatingOptions", "Ratings", "RatingsInput", "ThetaOptions", "agreement_study",
    "agreement_table", "fit_mfrm", "fit_theta", "judge_table", "ppi_plan_table", "ppi_study", "ppi_table",
    "ratings_to_targets", "read_ratings", "read_theta", "simulate_mfrm", "theta_study", "wide_ratings_to_targets",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
