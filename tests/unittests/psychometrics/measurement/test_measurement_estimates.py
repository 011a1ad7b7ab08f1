"""The estimates the tables read (docs/measurement.md#inputs): THETA/FACETS files give what the fitted result gives,
rows are aligned by id, and a table that does not belong to the ratings is refused."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import InputSchemaError
from tutormetrics.psychometrics.measurement.estimates import estimates_from_tables
from tutormetrics.psychometrics.measurement.fit import fit_table
from tutormetrics.psychometrics.measurement.observations import observations


def test_files_equal_the_result(bundled, tmp_path):
    bundled.result.theta_table().write_csv(tmp_path / "theta.csv")
    bundled.result.facets_table().write_csv(tmp_path / "facets.csv")
    theta = pl.read_csv(tmp_path / "theta.csv").sample(fraction=1.0, shuffle=True, seed=3)  # any row order
    est = estimates_from_tables(theta, pl.read_csv(tmp_path / "facets.csv"), bundled.prep)
    np.testing.assert_array_equal(est.theta, bundled.est.theta)
    np.testing.assert_array_equal(est.b, bundled.est.b)
    np.testing.assert_array_equal(est.s, bundled.est.s)
    assert fit_table(est, observations(est, bundled.prep)).equals(fit_table(bundled.est, bundled.obs))


def test_offsets_are_the_fit_linear_predictor(bundled):
    """o_n = −b_j − s_r per rating, read off the facets table."""
    b = dict(zip(bundled.est.criteria, bundled.est.b, strict=True))
    s = dict(zip(bundled.est.raters, bundled.est.s, strict=True))
    expected = np.array([-b[bundled.est.criteria[j]] - s[bundled.est.raters[r]] for j, r in zip(bundled.obs.crit, bundled.obs.rater, strict=True)])
    np.testing.assert_allclose(bundled.obs.offset, expected, atol=1e-15)
    assert bundled.obs.n == bundled.ratings.height


def test_tables_from_another_fit_are_refused(bundled):
    theta, facets = bundled.result.theta_table(), bundled.result.facets_table()
    with pytest.raises(InputSchemaError, match="no row 'criterion'"):
        estimates_from_tables(theta, facets.filter(pl.col("level") != "mistake_location"), bundled.prep)
    with pytest.raises(InputSchemaError, match="have no theta"):
        estimates_from_tables(theta.head(30), facets, bundled.prep)
    with pytest.raises(InputSchemaError, match="missing column"):
        estimates_from_tables(theta.drop("theta_sd"), facets, bundled.prep)
