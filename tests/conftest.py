"""Shared fixtures: paths to ../shared reference data and the bundled example."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
MRBENCH = SHARED / "data" / "mrbench"
EXAMPLE = ROOT / "src" / "tutormetrics" / "examples" / "data"


@pytest.fixture(scope="session")
def mrbench_dir() -> Path:
    if not (MRBENCH / "exchanges.csv").exists():
        pytest.skip("../shared/data/mrbench not available")
    return MRBENCH


@pytest.fixture(scope="session")
def example_dir() -> Path:
    return EXAMPLE
