"""θ with many raters in O(R) memory (issue 28): the O(k) Helmert map, rater SEs from the diagonal of the
observed information, and no (R−1)×R matrix anywhere above DENSE_BASIS_MAX raters."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from tutormetrics.psychometrics.mfrm import design, fit_mfrm, mml, simulate_mfrm
from tutormetrics.psychometrics.mfrm.design import (
    SIGMA_S,
    HelmertMap,
    prepare_ratings,
    quadrature,
    zero_sum_basis,
)


@pytest.mark.parametrize("k", [2, 3, 17, 1000])
def test_the_o_k_helmert_map_is_the_dense_basis(k):
    rng = np.random.default_rng(k)
    q, h = zero_sum_basis(k), HelmertMap(k)
    z, v = rng.normal(size=k - 1), rng.normal(size=k)
    np.testing.assert_allclose(h.expand(z), q.T @ z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(h.reduce(v), q @ v, rtol=0, atol=1e-12)
    assert abs(h.expand(z).sum()) < 1e-10  # zero-sum


def test_rater_information_is_the_second_derivative_of_the_marginal_likelihood():
    """Against central differences of the marginal log-likelihood in each s_r (partial credit, random x)."""
    rng = np.random.default_rng(0)
    sev = rng.normal(0, 0.5, 6)
    ratings, _ = simulate_mfrm(n_items=80, seed=1, severities=sev - sev.mean(), thresholds=[[-0.5, 0.5]] * 5)
    d = prepare_ratings(ratings).design
    t, w = quadrature(21)
    x = np.random.default_rng(2).normal(0, 0.3, sum(d.sizes().values()))
    real = mml._unpack

    def nll(r: int, delta: float) -> float:
        def shifted(x, d):
            p = real(x, d)
            s = p.s.copy()
            s[r] += delta
            return dataclasses.replace(p, s=s)

        mml._unpack = shifted
        try:
            return -mml._neg_log_posterior(x, d, t, np.log(w), want_grad=False)[3]
        finally:
            mml._unpack = real

    h = 1e-4
    fd = [(nll(r, h) - 2 * nll(r, 0) + nll(r, -h)) / h**2 for r in range(d.n_raters)]
    np.testing.assert_allclose(mml._rater_information(x, d, t, np.log(w)) - 1 / SIGMA_S**2, fd, rtol=1e-5)


def _crossed(n_raters: int = 8) -> pl.DataFrame:
    sev = np.random.default_rng(0).normal(0, 0.5, n_raters)
    return simulate_mfrm(n_items=150, seed=1, severities=sev - sev.mean())[0]


def test_the_many_rater_path_keeps_the_estimates_and_approximates_the_ses(monkeypatch):
    ratings = _crossed()
    dense = fit_mfrm(ratings)
    monkeypatch.setattr(design, "DENSE_BASIS_MAX", 4)
    monkeypatch.setattr(mml, "DENSE_BASIS_MAX", 4)
    many = fit_mfrm(ratings)
    np.testing.assert_allclose(many.theta, dense.theta, atol=1e-9)
    np.testing.assert_allclose(many.s, dense.s, atol=1e-9)
    np.testing.assert_allclose(many.b, dense.b, atol=1e-9)
    fa, fb = dense.facets_table(), many.facets_table()
    crit = fa.filter(pl.col("facet") == "criterion")["se"].to_numpy() / fb.filter(pl.col("facet") == "criterion")["se"].to_numpy()
    assert np.all(np.abs(crit - 1) < 0.01)  # raters held at the mode: criteria SEs within 1%
    ratio = fb.filter(pl.col("facet") == "rater")["se"].to_numpy() / fa.filter(pl.col("facet") == "rater")["se"].to_numpy()
    # the diagonal drops the zero-sum constraint (≈ √(R/(R−1)) = 1.07 at R = 8) and the θ-induced covariances of a
    # fully crossed design: conservative, by 13% here
    assert np.all((ratio > 1.0) & (ratio < 1.2)), ratio
    assert many.free_covariance.shape == (5, 5) and many.natural_map.shape[1] == 5
    assert not any(lab[0] == "rater" for lab in many.natural_labels)


def test_many_raters_never_build_a_dense_rater_matrix(monkeypatch):
    """600 raters (above DENSE_BASIS_MAX), each rating 2 of 300 exchanges: no (R−1)×R basis, no R×R covariance."""
    real = design.zero_sum_basis

    def no_big_basis(k: int) -> np.ndarray:
        assert k <= design.DENSE_BASIS_MAX, f"a dense {k - 1}x{k} basis"
        return real(k)

    monkeypatch.setattr(design, "zero_sum_basis", no_big_basis)
    rng = np.random.default_rng(3)
    n_items, n_raters = 300, 600
    item = np.repeat(np.arange(n_items), 4)
    rater = (item + np.tile(np.arange(4) * 150, n_items)) % n_raters
    rows = []
    for j, b in enumerate((-1.0, 0.0, 1.0)):
        eta = rng.standard_normal(n_items)[item] - b
        rows.append(pl.DataFrame({"exchange_id": [f"e{i}" for i in item], "rater": [f"r{r:03d}" for r in rater],
                                  "criterion": f"c{j}", "score": (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(int)}))  # fmt: skip
    res = fit_mfrm(pl.concat(rows))
    assert res.converged and len(res.raters) == n_raters
    assert res.covariance.shape == (3, 3) and res.rater_se is not None and np.all(np.isfinite(res.rater_se))
    raters = res.facets_table().filter(pl.col("facet") == "rater")
    assert raters.height == n_raters and raters["se"].is_finite().all()
    np.testing.assert_allclose(raters["se"].to_numpy(), res.rater_se)
