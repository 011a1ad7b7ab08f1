"""Fixtures of the measurement tests: the bundled example fitted once."""

from __future__ import annotations

import polars as pl
import pytest
from measurement_fixtures import Fitted, fitted


@pytest.fixture(scope="session")
def bundled(example_dir) -> Fitted:
    return fitted(pl.read_csv(example_dir / "ratings.csv"))
