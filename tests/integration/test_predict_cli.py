"""``tutormetrics predict`` end to end: files, columns, errors (exit 2), and a lazy scikit-learn import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.validity.predictive import TABLE_COLUMNS

pytest.importorskip("sklearn")


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n_groups = 30
    sizes = rng.integers(3, 8, n_groups)
    conv = np.repeat([f"c{j:02d}" for j in range(n_groups)], sizes)
    n = conv.size
    x = rng.normal(size=(n, 3))
    ids = [f"e{i:03d}" for i in range(n)]
    metrics = pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "resp_words": x[:, 0] * 10 + 50,
                            "ttr": x[:, 1], "jaccard_1": x[:, 2], "llm": (x[:, 0] > 0).astype(float), "const": np.ones(n)})  # fmt: skip
    lin = x[:, 0] + rng.normal(size=n)
    rows = []
    for i in range(n):
        rows.append((ids[i], "h1", "clear", float(lin[i] > 0)))
        rows.append((ids[i], "h1", "guide", float(np.digitize(lin[i], [-0.5, 0.5])) / 2))
        rows.append((ids[i], "llm", "clear", float(x[i, 0] > 0)))
        rows.append((ids[i], "llm", "guide", 0.5))
    ratings = pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")
    metrics.write_csv(tmp_path / "m.csv")
    ratings.write_csv(tmp_path / "r.csv")
    return tmp_path


def test_predict_writes_both_tables(files):
    out, oos = files / "pred.csv", files / "oos.csv"
    code = main(["predict", str(files / "m.csv"), "--ratings", str(files / "r.csv"), "--group-col", "conversation_id",
                 "--judge", "llm", "--importance", "drop", "--control", "resp_words", "--n-resamples", "200",
                 "--metrics-cols", "ttr,jaccard_1,resp_words,llm", "-o", str(out), "--predictions", str(oos)])  # fmt: skip
    assert code == 0
    table = pl.read_csv(out)
    assert tuple(table.columns) == TABLE_COLUMNS
    models = table.filter(pl.col("target") == "clear")["model"].unique(maintain_order=True).to_list()
    assert models == ["all", "best_single", "control", "judge", "drop:lexical_diversity", "drop:overlap", "drop:llm",
                      "all-best_single", "all-control", "all-judge", "all-drop:lexical_diversity", "all-drop:overlap", "all-drop:llm"]  # fmt: skip
    # the control is in every model but the judge; n_features as the spec counts them
    nf = dict(table.filter((pl.col("target") == "clear") & (pl.col("measure") == "rho")).select("model", "n_features").iter_rows())
    assert (nf["all"], nf["best_single"], nf["control"], nf["drop:overlap"]) == (4, 2, 1, 3)
    preds = pl.read_csv(oos)
    assert preds.columns == ["exchange_id", "group", "target", "model", "fold", "y", "score", "label", "p_0", "p_1", "p_2"]
    assert "judge" not in preds["model"].to_list()
    # the judge rated guide 0.5 everywhere: a constant score has no ρ
    row = table.filter((pl.col("target") == "guide") & (pl.col("model") == "judge") & (pl.col("measure") == "rho"))
    assert row["reason"][0] == "undefined"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--group-col", "nope"], "missing column 'nope'"),
        (["--group-col", "conversation_id", "--folds", "1"], "--folds must be at least 2"),
        (["--group-col", "conversation_id", "--judge", "gpt"], "the judge 'gpt' is not a rater"),
        (["--group-col", "conversation_id", "--judge-col", "missing_col"], "missing_col"),
        (["--group-col", "conversation_id", "--control", "clear"], "missing column 'clear'"),
        (["--group-col", "conversation_id", "--control", "const"], "control column 'const' is constant"),
        (["--group-col", "conversation_id", "--model", "svm"], "unknown --model"),
    ],
)
def test_predict_bad_input_exits_2(files, extra, message, capsys):
    code = main(["predict", str(files / "m.csv"), "--ratings", str(files / "r.csv"), "-o", str(files / "p.csv"), *extra])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (files / "p.csv").exists()


def test_empty_group_label_exits_2(files, capsys):
    m = pl.read_csv(files / "m.csv").with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("conversation_id")).alias("conversation_id"))
    m.write_csv(files / "m2.csv")
    code = main(["predict", str(files / "m2.csv"), "--ratings", str(files / "r.csv"), "--group-col", "conversation_id", "-o", str(files / "p.csv")])
    assert code == 2
    assert "empty group label" in capsys.readouterr().err


def test_help_does_not_import_sklearn():
    code = "import sys; from tutormetrics.cli import main; main(['--help']) if False else None; import tutormetrics.commands.predict; print(any(m.startswith('sklearn') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    run = subprocess.run([sys.executable, "-m", "tutormetrics", "predict", "--help"], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "--group-col" in run.stdout


def test_run_group_col_writes_predictive_and_report_section(tmp_path):
    from tutormetrics.report.collect import classify, collect_study

    out = tmp_path / "demo"
    assert main(["run", "--example", "--metrics", "lexical", "--group-col", "conversation_id", "--no-estimate-theta",
                 "--n-resamples", "99", "-o", str(out)]) == 0  # fmt: skip
    table = pl.read_csv(out / "predictive.csv")
    assert tuple(table.columns) == TABLE_COLUMNS
    assert classify(table.columns) == "predictive"
    data = collect_study(out)
    assert [p["file"] for p in data["predictive"]] == ["predictive.csv"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Predictive validity: the metrics together" in html


@pytest.mark.parametrize("other_group", [True, False])
def test_a_rated_exchange_twice_in_the_metrics_exits_2(files, capsys, other_group):
    """Issue 35: a copy of a rated exchange (here in another conversation) made n = rows + 1 and could put one rating in
    a training and a test fold; refused as validate refuses it (docs/commands/predict.md#one-row-per-id)."""
    m = pl.read_csv(files / "m.csv")
    copy = m.head(1).with_columns(pl.lit("c29" if other_group else m["conversation_id"][0]).alias("conversation_id"))
    pl.concat([m, copy]).write_csv(files / "dup.csv")
    code = main(["predict", str(files / "dup.csv"), "--ratings", str(files / "r.csv"), "--group-col", "conversation_id",
                 "-o", str(files / "p.csv")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and not (files / "p.csv").exists()
    assert f"predict: {m.height + 1} metric rows share {m.height} ids of the targets ('exchange_id'), e.g. 'e000'" in err
    assert "Traceback" not in err and "hint: keep one metrics row per rated id" in err
