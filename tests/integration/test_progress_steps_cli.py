"""Long commands are never silent (issue 35): ``predict``, ``theta``, ``validate``, ``agree`` and ``run`` after scoring
write a progress line every ``--progress-every`` seconds off a terminal, naming the step under way
(``docs/design/scoring.md#progress``). A fake clock (``tutormetrics.progress.now``) moves 100 s per reading, so every
step and fold is "due": the tests never wait for real time, and the heartbeat thread (real 30 s waits) never fires."""

from __future__ import annotations

import itertools
import re

import pytest

import tutormetrics.progress as progress_module
from tutormetrics.cli import main

pytest.importorskip("sklearn")


@pytest.fixture
def fake_clock(monkeypatch):
    ticks = itertools.count(0.0, 100.0)
    monkeypatch.setattr(progress_module, "now", lambda: next(ticks))


def _lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("progress: ")]


@pytest.fixture
def predict_files(tmp_path):
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    conv = np.repeat([f"c{j:02d}" for j in range(20)], 4)
    x = rng.normal(size=(conv.size, 2))
    ids = [f"e{i:03d}" for i in range(conv.size)]
    pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "resp_words": x[:, 0], "ttr": x[:, 1]}).write_csv(tmp_path / "m.csv")
    y = x[:, 0] + rng.normal(size=conv.size)
    rows = [(i, "h1", c, float(v > 0)) for i, v in zip(ids, y, strict=True) for c in ("clear", "kind")]
    pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row").write_csv(tmp_path / "r.csv")
    return tmp_path


@pytest.mark.parametrize("model", ["logistic", "hgb"])
def test_predict_prints_a_line_per_fold_fitted(predict_files, fake_clock, capsys, model):
    args = ["predict", str(predict_files / "m.csv"), "--ratings", str(predict_files / "r.csv"), "--group-col", "conversation_id",
            "--model", model, "--folds", "3", "--n-resamples", "20", "--progress-every", "30", "-o", str(predict_files / "p.csv")]  # fmt: skip
    assert main(args) == 0
    lines = _lines(capsys)
    total = 2 * 2 * 3  # targets x models (all, best_single) x folds
    counts = [int(m.group(1)) for ln in lines if (m := re.match(rf"progress: predict (\d+)/{total} fits \(\d+%\), \S+ elapsed", ln))]
    assert counts[-1] == total and counts == sorted(counts), lines
    # while a fold fits, the line names it
    assert any(ln.endswith("; now: clear: model all, fold 1/3") for ln in lines), lines
    assert any(ln.endswith("; now: kind: model best_single, fold 3/3") for ln in lines), lines
    assert any("now: kind: intervals (20 resamples over 20 groups)" in ln for ln in lines), lines


def test_progress_every_zero_and_no_progress_print_nothing(predict_files, fake_clock, capsys):
    base = ["predict", str(predict_files / "m.csv"), "--ratings", str(predict_files / "r.csv"), "--group-col", "conversation_id",
            "--folds", "3", "--n-resamples", "20"]  # fmt: skip
    assert main([*base, "--progress-every", "0", "-o", str(predict_files / "a.csv")]) == 0
    assert main([*base, "--no-progress", "-o", str(predict_files / "b.csv")]) == 0
    assert _lines(capsys) == []


def test_progress_every_is_checked(predict_files, capsys):
    args = ["predict", str(predict_files / "m.csv"), "--ratings", str(predict_files / "r.csv"), "--group-col", "conversation_id",
            "--progress-every", "0.01", "-o", str(predict_files / "p.csv")]  # fmt: skip
    assert main(args) == 2
    assert "--progress-every 0.01: use 0 (no progress lines) or at least 0.1 seconds" in capsys.readouterr().err


def test_run_dialogue_prints_lines_within_its_steps(tmp_path, fake_clock, capsys):
    out = tmp_path / "study"
    assert main(["run", "--example", "dialogue", "--metrics", "lexical", "--progress-every", "30", "-o", str(out)]) == 0
    lines = _lines(capsys)
    assert any(re.match(r"progress: score [\d,]+/[\d,]+ tutor turns", ln) for ln in lines), lines
    steps = [ln.partition("; now: ")[2] for ln in lines if ln.startswith("progress: run, ")]
    for step in ("θ: MFRM fit (MML, ", "correlations: ", "agreement", "tables and heatmaps", "report"):
        assert any(s.startswith(step) for s in steps), (step, steps)


def test_theta_validate_agree_and_compare_name_their_step(example_dir, tmp_path, fake_clock, capsys):
    ratings, metrics = example_dir / "ratings.csv", tmp_path / "m.csv"
    assert main(["theta", str(ratings), "--progress-every", "30", "-o", str(tmp_path / "t.csv")]) == 0
    assert any(re.match(r"progress: theta, \S+ elapsed; now: MFRM fit \(MML", ln) for ln in _lines(capsys))
    assert main(["agree", str(ratings), "--progress-every", "30", "-o", str(tmp_path / "a.csv")]) == 0
    assert any(re.match(r"progress: agree, \S+ elapsed; now: agreement of \d+ criteria", ln) for ln in _lines(capsys))
    assert main(["score", str(example_dir / "exchanges.csv"), "--prompt", "query", "-m", "lexical", "--keep", "tutor",
                 "--keep", "conversation_id", "--progress-every", "0", "-o", str(metrics)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["validate", str(metrics), "--ratings", str(ratings), "--estimate-theta", "--n-resamples", "50", "--progress-every", "30",
                 "-o", str(tmp_path / "v.csv")]) == 0  # fmt: skip
    steps = [ln.partition("; now: ")[2] for ln in _lines(capsys) if ln.startswith("progress: validate, ")]
    assert any(s.startswith("θ: MFRM fit (MML") for s in steps) and any(s.startswith("correlations: ") for s in steps), steps
    assert main(["compare", str(metrics), "--group-col", "tutor", "--block-col", "conversation_id", "--n-resamples", "50",
                 "--progress-every", "30", "-o", str(tmp_path / "c.csv")]) == 0  # fmt: skip
    assert any(re.match(r"progress: compare, \S+ elapsed; now: paired comparisons of tutor within conversation_id", ln)
               for ln in _lines(capsys))  # fmt: skip
