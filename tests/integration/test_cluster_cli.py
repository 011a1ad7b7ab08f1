"""``validate --cluster-col`` and ``run --cluster-col`` (predictive.md §2): columns, methods, errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    conv = np.repeat([f"00{j}" for j in range(12)], 4)  # labels with leading zeros stay text
    n = conv.size
    x = rng.normal(size=n) + np.repeat(rng.normal(size=12), 4)
    pl.DataFrame({"exchange_id": [f"e{i}" for i in range(n)], "conversation_id": conv, "len": x, "ttr": rng.normal(size=n)}).write_csv(tmp_path / "m.csv")
    pl.DataFrame({"exchange_id": [f"e{i}" for i in range(n)], "rater": "r1", "criterion": "clear",
                  "score": (x + rng.normal(size=n) > 0).astype(int)}).write_csv(tmp_path / "r.csv")  # fmt: skip
    return tmp_path


def test_validate_cluster_col(files):
    out = files / "corr.csv"
    assert main(["validate", str(files / "m.csv"), "--ratings", str(files / "r.csv"), "--cluster-col", "conversation_id",
                 "--n-resamples", "499", "-o", str(out)]) == 0  # fmt: skip
    t = pl.read_csv(out)
    assert t.columns[t.columns.index("reason") + 1] == "n_clusters"
    assert t["n_clusters"].to_list() == [12, 12]
    assert set(t["ci_method"]) == {"cluster_bca"}
    assert "conversation_id" not in t["metric"].to_list()
    assert main(["validate", str(files / "m.csv"), "--ratings", str(files / "r.csv"), "--cluster-col", "conversation_id",
                 "--n-resamples", "99", "--min-clusters", "20", "-o", str(files / "c2.csv")]) == 0  # fmt: skip
    assert set(pl.read_csv(files / "c2.csv")["reason"]) == {"too_few_clusters"}


@pytest.mark.parametrize(("extra", "message"), [(["--ci", "fisher"], "fisher"), ([], "empty cluster label")])
def test_validate_cluster_errors(files, extra, message, capsys):
    m = pl.read_csv(files / "m.csv", schema_overrides={"conversation_id": pl.String})
    if not extra:
        m = m.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("conversation_id")).alias("conversation_id"))
    m.write_csv(files / "m2.csv")
    code = main(["validate", str(files / "m2.csv"), "--ratings", str(files / "r.csv"), "--cluster-col", "conversation_id",
                 "-o", str(files / "c.csv"), *extra])  # fmt: skip
    assert code == 2
    assert message in capsys.readouterr().err


def test_run_dialogue_example_with_clusters(tmp_path):
    out = tmp_path / "demo"
    assert main(["run", "--example", "dialogue", "--metrics", "lexical", "--cluster-col", "conversation_id",
                 "--n-resamples", "199", "--no-estimate-theta", "-o", str(out)]) == 0  # fmt: skip
    # conversation ratings: correlations.csv is the CONV level (one row per cluster); the turn level with
    # cluster intervals is turns_correlations.csv (datasets.md §6; was: correlations.csv at the turn level)
    assert "n_clusters" not in pl.read_csv(out / "correlations.csv").columns
    t = pl.read_csv(out / "turns_correlations.csv")
    assert "n_clusters" in t.columns
    assert set(t["ci_method"].fill_null("")) <= {"cluster_bca", "cluster_percentile", "none", ""}
    assert "cluster_bca" in set(t["ci_method"])
