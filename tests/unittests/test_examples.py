"""The bundled example is complete, consistent, and its θ is what the MFRM gives today."""

import numpy as np
import polars as pl

from tutormetrics.examples import example_paths
from tutormetrics.psychometrics.mfrm.mml import fit_mfrm


def test_example_files_are_consistent():
    paths = example_paths()
    ex = pl.read_csv(paths["exchanges"])
    ratings = pl.read_csv(paths["ratings"])
    assert ex.height == 40 and ex["exchange_id"].n_unique() == 40
    assert {"query", "code", "error", "response", "tutor", "conversation_id"} <= set(ex.columns)
    assert ratings.height == 400 and set(ratings["rater"]) == {"r1", "r2"}
    assert set(ratings["score"].unique()) == {0, 1}
    assert set(ratings["exchange_id"]) == set(ex["exchange_id"])


def test_bundled_theta_matches_a_fresh_fit():
    paths = example_paths()
    bundled = pl.read_csv(paths["theta"])
    fresh = fit_mfrm(pl.read_csv(paths["ratings"])).theta_table()
    merged = bundled.join(fresh, on="exchange_id", suffix="_fresh")
    assert merged.height == 40
    np.testing.assert_allclose(merged["theta"], merged["theta_fresh"], atol=1e-5)
