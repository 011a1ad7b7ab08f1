"""`score --metrics lexical_richness`: parameters from the CLI, NaN reasons in the summary, the mostly-NaN warning."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.metrics.functional.richness import hdd, mattr, mtld


@pytest.fixture
def exchanges(tmp_path: Path) -> Path:
    responses = ["a rose is a rose is a rose", "Great job, great job, great job!", "Let us check the first step together"] * 4
    path = tmp_path / "ex.csv"
    pl.DataFrame({"exchange_id": [f"e{i}" for i in range(12)], "prompt": ["why?"] * 12, "response": responses}).write_csv(path)
    return path


def test_defaults_warn_and_count_reasons(exchanges, tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["score", str(exchanges), "--metrics", "lexical_richness", "-o", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "warning: mattr is NaN for 12 of 12 exchanges (too_short: 12)" in err
    assert "warning: mtld is NaN" not in err and "note: mtld NaN for 4 of 12 exchanges (all_distinct: 4)" in err
    frame = pl.read_csv(out)
    assert frame["mtld"].to_list()[:2] == [8.0, 3.0] and math.isnan(frame["mtld"][2])
    manifest = json.loads((tmp_path / "m.csv.manifest.json").read_text())
    assert manifest["stats"]["nan_reasons"]["hdd"] == {"too_short": 12}
    assert manifest["metrics"]["lexical_richness"]["params"] == {"mtld_threshold": 0.72, "mattr_window": 50, "hdd_draws": 42}


def test_metric_params_from_the_cli(exchanges, tmp_path, capsys):
    out = tmp_path / "m.csv"
    args = ["score", str(exchanges), "--metrics", "lexical_richness", "-o", str(out), "--no-progress",
            "--metric-param", "lexical_richness.mattr_window=6", "--metric-param", "lexical_richness.hdd_draws=4",
            "--metric-param", "lexical_richness.mtld_threshold=0.5"]  # fmt: skip
    assert main(args) == 0
    assert "warning" not in capsys.readouterr().err
    frame = pl.read_csv(out)
    text = "a rose is a rose is a rose"
    assert frame["mattr"][0] == pytest.approx(mattr(text, 6)) and frame["hdd"][0] == pytest.approx(hdd(text, 4))
    assert frame["mtld"][0] == pytest.approx(mtld(text, 0.5))
    params = json.loads((tmp_path / "m.csv.manifest.json").read_text())["metrics"]["lexical_richness"]["params"]
    assert params == {"mtld_threshold": 0.5, "mattr_window": 6, "hdd_draws": 4}


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("lexical_richness.window=10", "valid: lexical_richness.mtld_threshold, lexical_richness.mattr_window"),
        ("lexical_richness.mattr_window=0", "mattr_window must be a positive integer"),
        ("length.n=2", "not among the selected metrics"),
        ("mattr_window=10", "family.name=value"),
    ],
)
def test_bad_metric_params_exit_2(exchanges, tmp_path, capsys, param, message):
    out = tmp_path / "m.csv"
    code = main(["score", str(exchanges), "--metrics", "lexical_richness", "-o", str(out), "--no-progress", "--metric-param", param])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
