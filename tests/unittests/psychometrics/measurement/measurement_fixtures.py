"""The measurement tests' helper: fit the MFRM and prepare the same ratings for the measurement tables."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
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


def _pcm_draw(rng: np.random.Generator, eta: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Partial-credit scores 0..len(tau) at linear predictors ``eta`` (any shape)."""
    logits = np.concatenate([np.zeros(eta.shape + (1,)), np.cumsum(eta[..., None] - tau, axis=-1)], axis=-1)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    cdf = np.cumsum(p / p.sum(-1, keepdims=True), axis=-1)
    return np.minimum((rng.random(eta.shape)[..., None] > cdf).sum(-1), tau.size)


def planted(
    seed: int, *, n: int = 500, random_rater: bool = True, severe: float = 1.5, dif: float = 2.0, impact: float = 0.0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """docs/measurement.md#planted: 500 exchanges x 6 criteria on 0-4 x 4 raters; r4 rates at random with each
    criterion's category shares; r2 is ``severe`` logits more severe on c5; c3 is ``dif`` logits harder for the
    ``human`` group (40%, θ shifted by ``impact``). Returns (ratings, groups)."""
    rng = np.random.default_rng(seed)
    n_crit = 6  # and 4 raters: the 4 severities of s below
    human = rng.permutation(np.arange(n) < int(0.4 * n))
    theta = rng.standard_normal(n) + impact * human
    b = np.linspace(-1.0, 1.0, n_crit)
    s = np.array([0.3, 0.1, -0.1, -0.3])
    tau = np.array([-1.5, -0.5, 0.5, 1.5])
    eta = theta[:, None, None] - b[None, :, None] - s[None, None, :]
    eta[:, 4, 1] -= severe
    eta[:, 2, :] -= dif * human[:, None]
    y = _pcm_draw(rng, eta, tau)
    if random_rater:
        for j in range(n_crit):
            shares = np.bincount(y[:, j, :3].ravel(), minlength=5) / (3 * n)
            y[:, j, 3] = rng.choice(5, size=n, p=shares)
    return _long(y), pl.DataFrame({"exchange_id": _ids(n), "tutor": np.where(human, "human", "llm")})


def planted_binary(seed: int, *, n: int = 1200, dif: float = 1.5, impact: float = 0.0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The one-rater binary companion: 1,200 x 8, c3 ``dif`` logits harder for ``human`` (40%)."""
    rng = np.random.default_rng(seed)
    human = rng.permutation(np.arange(n) < int(0.4 * n))
    theta = rng.standard_normal(n) + impact * human
    b = np.linspace(-1.5, 1.5, 8)
    eta = theta[:, None] - b[None, :]
    eta[:, 2] -= dif * human
    y = (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).astype(int)[:, :, None]
    return _long(y), pl.DataFrame({"exchange_id": _ids(n), "tutor": np.where(human, "human", "llm")})


def _ids(n: int) -> list[str]:
    return [f"ex{i:04d}" for i in range(n)]


def _long(y: np.ndarray) -> pl.DataFrame:
    n, n_crit, n_rat = y.shape
    ii, jj, rr = np.meshgrid(np.arange(n), np.arange(n_crit), np.arange(n_rat), indexing="ij")
    ids = np.array(_ids(n))
    return pl.DataFrame({
        "exchange_id": ids[ii.ravel()], "rater": [f"r{r + 1}" for r in rr.ravel()],
        "criterion": [f"c{j + 1}" for j in jj.ravel()], "score": y.ravel().astype(float),
    })  # fmt: skip
