"""The measurement tests' helper: fit the MFRM and prepare the same ratings for the measurement tables."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import polars as pl

from tutormetrics.psychometrics.measurement.estimates import Estimates, estimates_from_result
from tutormetrics.psychometrics.measurement.observations import Observations, observations
from tutormetrics.psychometrics.mfrm import fit_mfrm
from tutormetrics.psychometrics.mfrm.design import PreparedRatings, prepare_ratings


@dataclass
class Fitted:
    ratings: pl.DataFrame
    result: Any
    prep: PreparedRatings
    est: Estimates
    obs: Observations


def fitted(ratings: pl.DataFrame, **options: Any) -> Fitted:
    """Fit the MFRM and prepare the same ratings for the measurement tables."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the bundled example's rare-category note
        result = fit_mfrm(ratings, **options)
        prep = prepare_ratings(ratings, **{k: v for k, v in options.items() if k not in ("n_nodes", "compute_se", "maxiter")})
    est = estimates_from_result(result, prep)
    return Fitted(ratings, result, prep, est, observations(est, prep))
