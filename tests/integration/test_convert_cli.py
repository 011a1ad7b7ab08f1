"""``tutormetrics convert`` end to end: files, meta.json, stderr, exit codes (datasets.md §2)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from tutormetrics.cli import app

PUBLIC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public"


@pytest.fixture
def mathdial_csv() -> Path:
    path = PUBLIC / "mathdial" / "test_first40.csv"
    if not path.exists():
        pytest.skip("../shared/data/public not available")
    return path


def test_convert_mathdial_writes_tables_meta_and_licence(mathdial_csv, tmp_path):
    out = tmp_path / "md"
    (tmp_path / "md").mkdir()
    (out / "keep.txt").write_text("mine")
    result = CliRunner().invoke(app, ["convert", "mathdial", str(mathdial_csv), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "converted mathdial test_first40.csv -> " in result.output
    assert ": 40 conversations, 487 turns (256 tutor, 231 student), 120 ratings, 1,024 turn ratings" in result.output
    assert "licence: CC BY-SA 4.0; cite Macina" in result.output
    assert (out / "keep.txt").read_text() == "mine"  # others left alone
    meta = json.loads((out / "meta.json").read_text())
    assert meta["raw"] == {"name": "test_first40.csv", "bytes": mathdial_csv.stat().st_size,
                           "sha256": hashlib.sha256(mathdial_csv.read_bytes()).hexdigest()}
    assert meta["files"] == {"dialogues.csv": 487, "ratings.csv": 120, "turn_ratings.csv": 1024, "conversations_meta.csv": 40}
    assert meta["share_alike"] is True and meta["csv_formula_guard"] is False and meta["licence"] == "CC BY-SA 4.0"
    assert meta["attribution"].endswith("Data: https://github.com/eth-nlped/mathdial (CC BY-SA 4.0). Converted by tutormetrics convert mathdial.")
    turns = pl.read_csv(out / "dialogues.csv", infer_schema_length=0)
    assert turns.columns == ["conversation_id", "turn", "role", "speaker", "move", "text"] and turns.height == 487


def test_convert_output_is_read_by_score(mathdial_csv, tmp_path):
    out = tmp_path / "md"
    assert CliRunner().invoke(app, ["convert", "mathdial", str(mathdial_csv), "-o", str(out)]).exit_code == 0
    result = CliRunner().invoke(app, ["score", str(out / "dialogues.csv"), "--dialogue", "--metrics", "length",
                                      "-o", str(tmp_path / "turns.csv"), "--conversations", str(tmp_path / "conv.csv")])
    assert result.exit_code == 0, result.output
    conv = pl.read_csv(tmp_path / "conv.csv")
    assert conv.height == 40 and (conv["student_words"] > 0).all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["convert", "nope", "RAW", "-o", "OUT"], "unknown dataset 'nope'"),
        (["convert", "bridge", "RAW", "-o", "OUT"], "not a bridge file"),
        (["convert", "mathdial", "RAW", "-o", "OUT", "--ambiguous", "spread"], "--ambiguous belongs to convert uptake"),
        (["convert", "uptake", "RAW", "-o", "OUT", "--ambiguous", "sometimes"], "choose drop or spread"),
    ],
)
def test_convert_bad_input_exits_2_with_one_message(mathdial_csv, tmp_path, args, message):
    args = [str(mathdial_csv) if a == "RAW" else str(tmp_path / "o") if a == "OUT" else a for a in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_convert_never_overwrites_its_raw_file(tmp_path):
    raw = tmp_path / "ratings.csv"
    src = PUBLIC / "bridge" / "validation.json"
    if not src.exists():
        pytest.skip("../shared/data/public not available")
    raw.write_bytes(src.read_bytes())
    result = CliRunner().invoke(app, ["convert", "bridge", str(raw), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "never overwrites an input" in result.output
    assert raw.read_bytes() == src.read_bytes()


def test_bridge_raw_file_to_report_in_two_commands(tmp_path, capsys):
    """Bridge ships no ratings (header-only ratings.csv): `run` scores and writes the report, validating nothing."""
    from tutormetrics.cli import main

    raw = PUBLIC / "bridge" / "validation.json"
    if not raw.exists():
        pytest.skip("../shared/data/public not available")
    assert main(["convert", "bridge", str(raw), "-o", str(tmp_path / "br")]) == 0
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "br" / "exchanges.csv"), "--ratings", str(tmp_path / "br" / "ratings.csv"),
                 "--metrics", "lexical", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "holds no ratings: scoring and the report only" in err
    run = json.loads((out / "run.json").read_text())
    assert run["validated"] is False and not (out / "correlations.csv").exists()
    assert pl.read_csv(out / "metrics.csv").height == 142
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
