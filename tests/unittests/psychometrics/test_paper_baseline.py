"""The MML baseline probability is the mean over the effects draws (``docs/guide/paper.md#baseline``).

paper.md §2's worked example: seed 000's M1 (``--recode 0.5=0 --covariates covariates.csv --covariate-col suff``,
21 nodes). E, SD and the 94% HDI of σ(−b) for b ~ N(b̂, se²) are computed here independently (101-node
Gauss–Hermite quadrature and the quantile function), and the 4,000-draw summaries are compared with them
within 4 Monte Carlo standard errors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import optimize, stats
from scipy.special import expit

from tutormetrics.psychometrics.mfrm import fit_mfrm
from tutormetrics.psychometrics.recode import apply_recode

S = 4000
# paper.md §2 [ref]: b̂, se, plugin, E, SD, HDI
REF = {
    "i1": (1.283442, 0.354795, 0.216965, 0.222825, 0.060669, 0.1154, 0.3374),
    "i2": (1.467726, 0.359998, 0.187288, 0.193293, 0.055638, 0.0958, 0.2983),
    "i3": (-0.429025, 0.334456, 0.605641, 0.602956, 0.078125, 0.4557, 0.7472),
    "i4": (-1.762035, 0.359835, 0.853464, 0.847836, 0.046318, 0.7606, 0.9278),
    "i5": (-1.483083, 0.352109, 0.815038, 0.809296, 0.053905, 0.7076, 0.9039),
}


@pytest.fixture(scope="module")
def m1(paper_data: Path):
    ratings, counts = apply_recode(pl.read_csv(paper_data / "s000" / "ratings_raw.csv"), "score", {0.5: 0.0})
    assert counts == {0.5: 413}  # paper.md §1: 413 of 2,490 ratings are 0.5
    return fit_mfrm(ratings, covariates=pl.read_csv(paper_data / "s000" / "covariates.csv"), covariate_cols="suff")


def exact_summary(b: float, se: float) -> tuple[float, float, float, float]:
    """E, SD and the 94% HDI of σ(−b), b ~ N(b̂, se²): quadrature and the narrowest 94% quantile interval."""
    x, w = np.polynomial.hermite_e.hermegauss(101)
    w = w / w.sum()
    p = expit(-(b + se * x))
    mean = float(w @ p)
    sd = float(np.sqrt(w @ (p - mean) ** 2))

    def quantile(q: float) -> float:  # σ(−b) decreases in b
        return float(expit(-(b + se * stats.norm.ppf(1 - q))))

    a = optimize.minimize_scalar(lambda a: quantile(a + 0.94) - quantile(a), bounds=(1e-12, 0.06 - 1e-12), method="bounded",
                                 options={"xatol": 1e-10}).x  # fmt: skip
    return mean, sd, quantile(a), quantile(a + 0.94)


def test_exact_values_match_the_spec_table() -> None:
    for b, se, _plug, e, sd, lo, hi in REF.values():
        got = exact_summary(b, se)
        np.testing.assert_allclose(got[:2], (e, sd), atol=1e-6)
        np.testing.assert_allclose(got[2:], (lo, hi), atol=1e-4)


def test_baseline_rows_are_draw_means_within_monte_carlo_error(m1) -> None:
    ft = m1.facets_table()
    crit = {r["level"]: r for r in ft.filter(pl.col("facet") == "criterion").iter_rows(named=True)}
    base = {r["level"]: r for r in ft.filter(pl.col("facet") == "baseline_probability").iter_rows(named=True)}
    assert list(base) == list(REF)
    for level, (b, se, plug, *_rest) in REF.items():
        # the optimiser's tolerance moves b̂ by up to 2e-6 from the review's fit; the SEs and plug-ins agree to 1e-6
        assert crit[level]["estimate"] == pytest.approx(b, abs=5e-6)
        assert crit[level]["se"] == pytest.approx(se, abs=1e-6)
        assert base[level]["plugin"] == pytest.approx(plug, abs=1e-6)
        assert base[level]["plugin"] == pytest.approx(float(expit(-crit[level]["estimate"])), rel=1e-12)
        e, sd, lo, hi = exact_summary(crit[level]["estimate"], crit[level]["se"])
        mc = sd / np.sqrt(S)
        assert abs(base[level]["estimate"] - e) < 4 * mc
        assert abs(base[level]["se"] - sd) < 4 * sd / np.sqrt(2 * S)
        # an HDI endpoint's MC SD at 4,000 draws is at most 0.0035·√5 (effects.md §3.2): within 2 of those
        assert abs(base[level]["lower"] - lo) < 4 * 0.0035 * np.sqrt(5) / 2
        assert abs(base[level]["upper"] - hi) < 4 * 0.0035 * np.sqrt(5) / 2
    # the plug-ins are the old estimates: the mean is pulled towards 0.5, as the seed's Table 6
    assert base["i1"]["estimate"] > base["i1"]["plugin"] and base["i4"]["estimate"] < base["i4"]["plugin"]


def test_effects_p_ref_is_the_facets_estimate_bitwise(m1) -> None:
    eff = m1.effects_table()
    ft = m1.facets_table().filter(pl.col("facet") == "baseline_probability")
    np.testing.assert_array_equal(eff["p_ref"].to_numpy(), ft["estimate"].to_numpy())
    np.testing.assert_array_equal(eff["p_ref_plugin"].to_numpy(), ft["plugin"].to_numpy())
    assert eff.columns[eff.columns.index("p_ref") + 1] == "p_ref_plugin"
    # the seed and the number of draws are shared: another seed moves the baseline rows
    other = m1.facets_table(seed=1).filter(pl.col("facet") == "baseline_probability")
    assert not np.array_equal(other["estimate"].to_numpy(), ft["estimate"].to_numpy())
    np.testing.assert_array_equal(other["plugin"].to_numpy(), ft["plugin"].to_numpy())
    np.testing.assert_array_equal(
        m1.effects_table(n_draws=500, seed=3)["p_ref"].to_numpy(),
        m1.facets_table(n_draws=500, seed=3).filter(pl.col("facet") == "baseline_probability")["estimate"].to_numpy(),
    )


def test_sparse_rule_is_symmetric_in_coding(paper_data: Path) -> None:
    """paper.md §10: cov8.csv (8 exchanges at suff = 0, 241 at 1) is sparse_8 coded either way."""
    ratings, _ = apply_recode(pl.read_csv(paper_data / "s000" / "ratings_raw.csv"), "score", {0.5: 0.0})
    cov = pl.read_csv(paper_data / "s000" / "cov8.csv")
    assert int((cov["suff"] == 0).sum()) == 8 and int((cov["insuff"] == 1).sum()) == 8
    for col in ("suff", "insuff"):
        e = fit_mfrm(ratings, covariates=cov, covariate_cols=col).effects_table(n_draws=200)
        assert e["reason"].to_list() == ["sparse_8"] * 5, col
