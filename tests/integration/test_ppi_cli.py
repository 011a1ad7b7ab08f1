"""``tutormetrics ppi`` end to end: the table, and bad input (exit 2)."""

from __future__ import annotations

import polars as pl
import pytest

from tutormetrics.cli import main


@pytest.fixture
def files(tmp_path):
    ids = [f"e{i:02d}" for i in range(40)]
    judge = pl.DataFrame({"exchange_id": ids * 2, "rater": ["llm"] * 40 + ["llm2"] * 40, "criterion": "c",
                          "score": [float(i % 3 == 0) for i in range(80)], "tutor": [f"t{i % 2}" for i in range(80)]})  # fmt: skip
    human = pl.DataFrame({"exchange_id": ids[:12], "rater": "h", "criterion": "c", "score": [float(i % 2) for i in range(12)]})
    judge.write_csv(tmp_path / "all.csv")
    human.write_csv(tmp_path / "sub.csv")
    return tmp_path


def test_ppi_cli(files):
    out = files / "ppi.csv"
    code = main(["ppi", "--judge-labels", str(files / "all.csv"), "--human-labels", str(files / "sub.csv"), "--judge", "llm",
                 "--group-col", "tutor", "--lambda", "auto", "-o", str(out)])  # fmt: skip
    assert code == 0
    t = pl.read_csv(out, schema_overrides={"group": pl.String})
    assert t["group"].fill_null("").to_list() == ["", "t0", "t1"]
    assert t["n_labeled"][0] == 12 and t["n_unlabeled"][0] == 28
    assert "few_labeled" in t["reason"][0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [([], "pick one with --judge"), (["--judge", "llm", "--lambda", "2"], "[0, 1]"),
     (["--judge", "nobody"], "not a rater"), (["--judge", "llm", "--group-col", "nope"], "--group-col 'nope' is not a column")],
)
def test_ppi_bad_input(files, extra, message, capsys):
    code = main(["ppi", "--judge-labels", str(files / "all.csv"), "--human-labels", str(files / "sub.csv"), "-o", str(files / "p.csv"), *extra])
    assert code == 2
    assert message in capsys.readouterr().err
