"""Partial Spearman pieces (richness.md §1): the worked example, pingouin parity, bootstrap parity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tutormetrics.stats.partial import (
    bootstrap_partial_block,
    jackknife_partial_block,
    partial_observed_block,
    partial_spearman,
    partial_t_p,
    residualize,
)

# richness.md §1.4
Z = [8, 12, 15, 19, 23, 27, 30, 34, 41, 47, 52, 60]
X = [0.91, 0.88, 0.93, 0.80, 0.84, 0.79, 0.83, 0.74, 0.77, 0.70, 0.73, 0.66]
Y = [0, 1, 0, 1, 1, 0, 2, 1, 2, 1, 2, 2]
PAIR = (np.array([0]), np.array([0]))


def test_worked_example():
    raw = stats.spearmanr(X, Y)
    assert raw.statistic == pytest.approx(-0.5848121, abs=5e-8)
    assert raw.pvalue == pytest.approx(0.0457979, abs=5e-8)
    rho, p = partial_spearman(X, Y, Z)
    assert rho == pytest.approx(0.3282452, abs=5e-8)
    assert p == pytest.approx(0.3243738, abs=5e-8)


def test_worked_example_equals_pingouin():
    pg = pytest.importorskip("pingouin")
    pd = pytest.importorskip("pandas")
    res = pg.partial_corr(pd.DataFrame({"x": X, "y": Y, "z": Z}), x="x", y="y", covar="z", method="spearman")
    rho, p = partial_spearman(X, Y, Z)
    assert rho == pytest.approx(float(res["r"].iloc[0]), abs=1e-13)
    assert p == pytest.approx(float(res["p_val"].iloc[0]), abs=1e-13)


def test_equals_inverse_covariance_formula_with_two_controls():
    rng = np.random.default_rng(3)
    n = 60
    z1 = rng.integers(0, 15, n).astype(float)  # ties
    z2 = rng.normal(size=n)
    x = z1 + rng.normal(0, 4, n)
    y = np.round(rng.uniform(0, 2, n) + 0.05 * z1)
    ranks = stats.rankdata(np.column_stack((x, y, z1, z2)), axis=0)
    prec = np.linalg.inv(np.cov(ranks, rowvar=False))
    expected = -prec[0, 1] / np.sqrt(prec[0, 0] * prec[1, 1])
    rho, p = partial_spearman(x, y, np.column_stack((z1, z2)))
    assert rho == pytest.approx(expected, abs=1e-12)
    t = expected * np.sqrt((n - 4) / (1 - expected**2))
    assert p == pytest.approx(2 * stats.t.sf(abs(t), n - 4), abs=1e-12)


def test_collinear_control_is_undefined_where_pingouin_returns_raw_rho():
    """§1.2 pitfall: the control's ranks equal the metric's; the residual is constant."""
    x = np.array(Z, dtype=float) / 100.0  # same ranks as Z
    rho, p = partial_spearman(x, Y, Z)
    assert np.isnan(rho) and np.isnan(p)
    rho_b, const = partial_observed_block(np.column_stack((x, Y, Z)), 1, 1, PAIR)
    assert const[0] and np.isnan(rho_b[0])
    pg = pytest.importorskip("pingouin")
    pd = pytest.importorskip("pandas")
    with pytest.warns(UserWarning, match="rank-deficient"):
        res = pg.partial_corr(pd.DataFrame({"x": x, "y": Y, "z": Z}), x="x", y="y", covar="z", method="spearman")
    assert float(res["r"].iloc[0]) == pytest.approx(stats.spearmanr(x, Y).statistic, abs=1e-9)


def test_residualize_is_orthogonal_to_design():
    rng = np.random.default_rng(0)
    r, z = rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    e = residualize(r, z)
    assert np.abs(np.column_stack((np.ones(30), z)).T @ e).max() < 1e-12


def test_t_p_matches_scipy():
    assert float(partial_t_p(0.5, 20)) == pytest.approx(2 * stats.t.sf(0.5 * np.sqrt(20 / 0.75), 20), abs=1e-14)
    assert float(partial_t_p(0.0, 5)) == 1.0


def _data(n=45, seed=11):
    rng = np.random.default_rng(seed)
    z = rng.integers(5, 60, n).astype(float)
    x = -0.01 * z + rng.normal(0, 0.1, n)
    y = rng.integers(0, 3, n).astype(float)
    return np.column_stack((x, z * 2 + rng.normal(0, 3, n), y, z))


def test_bootstrap_distribution_equals_scipy_with_the_same_stream():
    block = _data()
    pairs = (np.array([0, 1]), np.array([0, 0]))

    def stat(x, y, z):
        return partial_spearman(x, y, z)[0]

    b = bootstrap_partial_block(block, 2, 1, pairs, 199, np.random.default_rng(42))
    for k, col in enumerate((0, 1)):
        res = stats.bootstrap(
            (block[:, col], block[:, 2], block[:, 3]), stat, paired=True, vectorized=False,
            n_resamples=199, method="percentile", rng=np.random.default_rng(42),
        )
        np.testing.assert_allclose(b[k], res.bootstrap_distribution, atol=1e-12)


def test_jackknife_equals_leave_one_out():
    block = _data(n=25)[:, [0, 2, 3]]  # metric, target, control
    jack = jackknife_partial_block(block, 1, 1, PAIR)[0]
    expected = [partial_spearman(np.delete(block[:, 0], i), np.delete(block[:, 1], i), np.delete(block[:, 2], i))[0] for i in range(25)]
    np.testing.assert_allclose(jack, expected, atol=1e-12)


def test_bootstrap_with_collinear_metric_is_nan():
    block = _data(n=30)[:, [0, 2, 3]]
    block[:, 0] = block[:, 2] / 7.0
    b = bootstrap_partial_block(block, 1, 1, PAIR, 50, np.random.default_rng(1))
    assert np.isnan(b).all()
