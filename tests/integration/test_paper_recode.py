"""Recoding before validity (``docs/guide/paper.md#recode``): paper.md §1's worked example on seed 000 (413 of
2,490 ratings are 0.5), the non-integer note and run.json's record. The ratings are recoded with the library
(what ``--recode 0.5=0`` does right after reading) and ``validate`` runs on them; the oracle is scipy's
``spearmanr`` on keyed values (``effects.md`` §2.5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from tutormetrics.cli import main
from tutormetrics.psychometrics.recode import apply_recode, parse_recode
from tutormetrics.psychometrics.recode_report import non_integer_note, recode_record
from tutormetrics.stats.ranks import tie_key

# paper.md §1 [ref]: (metric, target) -> (recoded, on 1/0.5/0)
REF = {
    ("resp_chars", "i1"): (-0.212388, -0.142699),
    ("jaccard_1", "i1"): (0.339154, 0.205625),
    ("resp_chars", "i5"): (-0.212066, -0.212066),
}


@pytest.fixture(scope="module")
def scored(paper_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    out = tmp_path_factory.mktemp("recode")
    metrics, raw, recoded = out / "metrics.csv", paper_data / "s000" / "ratings_raw.csv", out / "ratings_recoded.csv"
    assert main(["score", str(paper_data / "s000" / "exchanges.csv"), "--prompt", "query", "--prompt", "code", "--prompt", "error",
                 "--metrics", "lexical", "-o", str(metrics)]) == 0  # fmt: skip
    frame, counts = apply_recode(pl.read_csv(raw), "score", parse_recode(["0.5=0"]))
    assert counts == {0.5: 413} and pl.read_csv(raw).height == 2490
    frame.write_csv(recoded)
    return metrics, raw, recoded


def _rho(metrics: Path, ratings: Path, out: Path) -> dict[tuple[str, str], float]:
    assert main(["validate", str(metrics), "--ratings", str(ratings), "--n-resamples", "99", "-o", str(out)]) == 0
    t = pl.read_csv(out)
    return {(r["metric"], r["target"]): r["rho"] for r in t.iter_rows(named=True)}


def test_validate_on_recoded_scores(scored, tmp_path: Path) -> None:
    metrics, raw, recoded = scored
    got_recoded, got_raw = _rho(metrics, recoded, tmp_path / "r.csv"), _rho(metrics, raw, tmp_path / "raw.csv")
    m = pl.read_csv(metrics)
    for (metric, target), (want_recoded, want_raw) in REF.items():
        assert got_recoded[(metric, target)] == pytest.approx(want_recoded, abs=1e-6)
        assert got_raw[(metric, target)] == pytest.approx(want_raw, abs=1e-6)
        for path, want in ((recoded, want_recoded), (raw, want_raw)):
            mean = pl.read_csv(path).filter(pl.col("criterion") == target).group_by("exchange_id").agg(pl.col("score").mean())
            joined = m.join(mean, on="exchange_id")
            oracle = spearmanr(tie_key(joined[metric].to_numpy()), tie_key(joined["score"].to_numpy())).statistic
            assert oracle == pytest.approx(want, abs=1e-6)


def test_non_integer_note_and_record(paper_data: Path) -> None:
    raw = pl.read_csv(paper_data / "s000" / "ratings_raw.csv")
    assert non_integer_note(raw, "validate") == (
        "validate: i1, i2, i3, i4 have non-integer scores (0.5); the targets use them as numbers (pass --recode 0.5=0 for endorsements)"
    )
    recoded, counts = apply_recode(raw, "score", {0.5: 0.0})
    assert non_integer_note(recoded, "run") == ""
    assert recode_record({0.5: 0.0}, counts) == [{"from": 0.5, "to": 0.0, "ratings": 413}]
    assert recode_record({-1.0: None}, {-1.0: 3}) == [{"from": -1.0, "to": None, "ratings": 3}] and recode_record({}, {}) == []
    assert np.isclose(recoded["score"].sum(), raw.filter(pl.col("score") == 1)["score"].sum())


def test_validate_recode_option_equals_recoding_the_file(scored, tmp_path: Path, capsys) -> None:
    """``validate --recode 0.5=0`` on the raw file gives the table of the recoded file, says what it recoded, and
    without ``--recode`` prints the non-integer note (docs/guide/paper.md#recode)."""
    metrics, raw, recoded = scored
    args = ["validate", str(metrics), "--n-resamples", "99"]
    assert main([*args, "--ratings", str(raw), "--recode", "0.5=0", "-o", str(tmp_path / "opt.csv")]) == 0
    err = capsys.readouterr().err
    assert "recode 0.5 -> 0: 413 ratings" in err and "non-integer" not in err
    assert main([*args, "--ratings", str(recoded), "-o", str(tmp_path / "file.csv")]) == 0
    capsys.readouterr()
    assert pl.read_csv(tmp_path / "opt.csv").equals(pl.read_csv(tmp_path / "file.csv"))
    assert main([*args, "--ratings", str(raw), "-o", str(tmp_path / "raw.csv")]) == 0
    assert "validate: i1, i2, i3, i4 have non-integer scores (0.5)" in capsys.readouterr().err


def test_run_records_its_recode_in_run_json(tmp_path: Path, capsys) -> None:
    import json

    out = tmp_path / "study"
    assert main(["run", "--example", "-o", str(out), "--metrics", "lexical", "--n-resamples", "99", "--recode", "1=1"]) == 0
    assert "recode 1 -> 1:" in capsys.readouterr().err
    record = json.loads((out / "run.json").read_text())["recode"]
    assert record[0]["from"] == 1.0 and record[0]["to"] == 1.0 and record[0]["ratings"] > 0
