"""Separation, strata, reliability and the fixed χ² (docs/measurement.md#separation): the bundled example and the
formulas written out."""

from __future__ import annotations

import numpy as np
import pytest
from measurement_fixtures import fitted
from scipy import stats

from tutormetrics.psychometrics.measurement.separation import (
    SEPARATION_COLUMNS,
    separation_line,
    separation_row,
    separation_table,
)


def test_bundled_example(bundled):
    table = separation_table(bundled.est)
    assert table.columns == SEPARATION_COLUMNS
    crit, rater, exch = table.rows(named=True)
    expected = {"n": 5, "sd": 1.074152, "rmse": 0.3566047, "true_sd": 1.01323, "separation": 2.841326,
                "strata": 4.121768, "reliability": 0.8897845, "chi2": 45.49616, "df": 4}  # fmt: skip
    for key, value in expected.items():
        assert crit[key] == pytest.approx(value, rel=1e-6), key
    assert crit["p_chi2"] == pytest.approx(3.135e-09, rel=1e-3)
    for key, value in {"sd": 0.2104439, "rmse": 0.1389294, "separation": 1.137752, "reliability": 0.5641712, "chi2": 4.588958}.items():
        assert rater[key] == pytest.approx(value, rel=1e-6), key
    assert rater["p_chi2"] == pytest.approx(0.03217858, rel=1e-6)
    for key, value in {"sd": 0.9492217, "rmse": 0.6773068, "separation": 1.401465, "reliability": 0.6626299}.items():
        assert exch[key] == pytest.approx(value, rel=1e-6), key
    assert exch["reliability"] == pytest.approx(bundled.result.reliability, abs=1e-12)  # theta's EAP reliability
    assert np.isnan(exch["chi2"]) and exch["reason"] == "eap" and exch["estimator"] == "eap"
    assert separation_line(table) == "separation: criterion G 2.84 R 0.890; rater G 1.14 R 0.564; exchange G 1.40 R 0.663"


def test_formulas_written_out():
    rng = np.random.default_rng(0)
    d, se = rng.normal(size=7), rng.uniform(0.1, 0.5, size=7)
    row = separation_row("criterion", d, se, "mml")
    true_var = max(0.0, d.var() - np.mean(se**2))
    g = np.sqrt(true_var) / np.sqrt(np.mean(se**2))
    assert row["separation"] == pytest.approx(g, rel=1e-13) and row["strata"] == pytest.approx((4 * g + 1) / 3, rel=1e-13)
    assert row["reliability"] == pytest.approx(g**2 / (1 + g**2), rel=1e-13)
    w = 1 / se**2
    chi2 = np.sum(w * (d - np.average(d, weights=w)) ** 2)
    assert row["chi2"] == pytest.approx(chi2, rel=1e-13) and row["p_chi2"] == pytest.approx(stats.chi2.sf(chi2, 6), rel=1e-12)


def test_one_rater_and_missing_ses(bundled):
    one = fitted(bundled.ratings.filter(bundled.ratings["rater"] == "r1"))
    rater = separation_table(one.est).row(1, named=True)
    assert rater["reason"] == "one_element" and np.isnan(rater["separation"])
    assert separation_line(separation_table(one.est)).split("; ")[1] == "rater one element"
    row = separation_row("criterion", np.array([0.0, 1.0]), np.array([0.2, np.nan]), "mml")
    assert row["reason"] == "no_se" and np.isnan(row["reliability"]) and row["sd"] == 0.5
