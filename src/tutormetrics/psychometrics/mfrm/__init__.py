"""Many-facet Rasch models: the shared design, the MML fit (default) and the optional Bayesian (NUTS) fit.

``fit_mfrm`` is marginal ML with EAP θ; ``fit_mfrm_bayes`` needs the ``bayes`` extra and is imported
only when used. :func:`fit_theta` picks one by name, for the CLI and the pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.frames import frame_inputs
from tutormetrics.psychometrics.mfrm.mml import MFRMResult, fit_mfrm, simulate_mfrm
from tutormetrics.psychometrics.ratings import Ratings

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.psychometrics.mfrm.bayes import BayesMFRMResult

THETA_METHODS: tuple[str, ...] = ("mml", "nuts")


@frame_inputs(ratings=Ratings)
def fit_theta(
    ratings: pl.DataFrame | Ratings, *, method: Literal["mml", "nuts"] = "mml", **options: Any
) -> MFRMResult | BayesMFRMResult:
    """Fit the MFRM with ``method`` (``"mml"``: :func:`fit_mfrm`; ``"nuts"``:
    :func:`~tutormetrics.psychometrics.mfrm.bayes.fit_mfrm_bayes`); both results have
    ``theta_table()``, ``facets_table()``, ``summary()`` and ``reliability``."""
    if method == "mml":
        return fit_mfrm(ratings, **options)
    if method == "nuts":
        from tutormetrics.psychometrics.mfrm.bayes import fit_mfrm_bayes

        return fit_mfrm_bayes(ratings, **options)
    raise ConfigError(f"method {method!r} is not available", hint=f"use one of {', '.join(THETA_METHODS)}")


__all__ = ["MFRMResult", "THETA_METHODS", "fit_mfrm", "fit_theta", "simulate_mfrm"]
