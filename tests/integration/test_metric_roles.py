"""Which columns are metrics and targets (datasets.md §4): manifest roles, id-like names, wide-rating targets."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.metrics.columns import describe_table, is_id_like

UPTAKE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public" / "uptake" / "uptake_data_first200.csv"


def test_score_manifest_records_every_columns_role(example_dir, tmp_path):
    out = tmp_path / "m.csv"
    args = ["score", str(example_dir / "exchanges.csv"), "--prompt", "query", "--metrics", "length",
            "--keep", "tutor", "-o", str(out), "--no-progress"]
    assert main(args) == 0
    manifest = json.loads((tmp_path / "m.csv.manifest.json").read_text())
    roles = manifest["columns"]
    assert set(roles) == {"id", "id_parts", "kept", "tags", "structure", "metrics", "diagnostics"}
    assert roles["id"] == ["exchange_id"] and roles["kept"] == ["tutor"]
    assert "resp_words" in roles["metrics"] and "prompt_empty" in roles["diagnostics"]
    header = pl.read_csv(out, n_rows=0).columns
    assert sorted(c for cs in roles.values() for c in cs) == sorted(header)  # every column has exactly one role
    assert [d["name"] for d in manifest["column_descriptions"]] == roles["metrics"]


def test_without_a_manifest_id_like_names_are_not_metrics(tmp_path, capsys):
    metrics = pl.DataFrame({"exchange_id": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"],
                            "obs_id": list(range(12)), "exchange_idx": list(range(12, 24)),
                            "resp_words": [3, 5, 4, 8, 9, 1, 2, 7, 6, 5, 4, 3]})
    ratings = metrics.select("exchange_id", pl.col("resp_words").alias("tone") % 3)
    metrics.write_csv(tmp_path / "m.csv")
    ratings.write_csv(tmp_path / "r.csv")
    assert main(["validate", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--ci", "none",
                 "-o", str(tmp_path / "c.csv")]) == 0
    err = capsys.readouterr().err
    assert "note: validate: not metrics: obs_id (id-like name), exchange_idx (id-like name)" in err
    assert pl.read_csv(tmp_path / "c.csv")["metric"].unique().to_list() == ["resp_words"]
    code = main(["validate", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--metrics-cols", "obs_id",
                 "-o", str(tmp_path / "c2.csv")])
    assert code == 2 and "'obs_id' is an id column (id-like name), not a metric" in capsys.readouterr().err
    code = main(["validate", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--control", "exchange_idx",
                 "-o", str(tmp_path / "c3.csv")])
    assert code == 2 and "'exchange_idx' is an id column" in capsys.readouterr().err


def test_wide_ratings_targets_leave_ids_out_with_a_note(tmp_path, capsys):
    if not UPTAKE.exists():
        pytest.skip("../shared/data/public not available")
    raw = pl.read_csv(UPTAKE)
    metrics = raw.select(pl.format("{}/{}", "obs_id", "exchange_idx").alias("exchange_id"),
                         pl.col("teacher_text").str.len_chars().alias("resp_chars"))
    ratings = raw.with_columns(pl.format("{}/{}", "obs_id", "exchange_idx").alias("exchange_id"))
    metrics.write_csv(tmp_path / "m.csv")
    ratings.write_csv(tmp_path / "r.csv")
    assert main(["validate", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--ci", "none",
                 "-o", str(tmp_path / "c.csv")]) == 0
    err = capsys.readouterr().err
    assert "note: validate: 12 targets from wide ratings:" in err and "(not targets: obs_id, exchange_idx: ids)" in err
    targets = set(pl.read_csv(tmp_path / "c.csv")["target"].to_list())
    assert len(targets) == 12 and not targets & {"obs_id", "exchange_idx"}
    assert main(["validate", str(tmp_path / "m.csv"), "--ratings", str(tmp_path / "r.csv"), "--targets-from", "obs_id",
                 "-o", str(tmp_path / "c2.csv")]) == 2


@pytest.mark.parametrize(("name", "like"), [("id", True), ("QID", True), ("conv_key", True), ("row_uuid", True),
                                            ("index", True), ("valid", False), ("idea", False), ("tidy", False)])
def test_id_like_names(name, like):
    assert is_id_like(name) is like


def test_a_manifest_column_without_a_role_is_still_a_metric():
    from tutormetrics.metrics.columns import ColumnDescription

    desc = [ColumnDescription("resp_words", "length", "length")]
    roles = {"id": ["exchange_id"], "metrics": ["resp_words"], "diagnostics": ["resp_empty"]}
    got = describe_table(["exchange_id", "resp_words", "resp_empty", "my_score"], numeric=["resp_words", "my_score"],
                         manifest=desc, roles=roles)
    assert [(d.name, d.family) for d in got] == [("resp_words", "length"), ("my_score", "other")]
