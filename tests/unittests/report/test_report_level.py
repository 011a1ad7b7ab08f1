"""The report's banner says at which level a dialogue run validated (datasets.md §6)."""

from __future__ import annotations

import json

import polars as pl

from tutormetrics.report.collect import collect_study, level_banner


def _folder(tmp_path, run):
    folder = tmp_path / "out"
    folder.mkdir()
    pl.DataFrame({"metric": ["n_turns"], "target": ["guidance"], "n": [12], "rho": [0.5], "ci_low": [0.1], "ci_high": [0.8],
                  "p": [0.1], "p_adj": [0.2], "adjust": ["bh"], "stars": [""], "reason": [""]}).write_csv(folder / "correlations.csv")  # fmt: skip
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def test_conversation_level_banner_first_note(tmp_path):
    data = collect_study(_folder(tmp_path, {"level": "conversation", "n_conversations": 12}))
    assert data["notes"][0].startswith("Validated per conversation") and "12 conversations" in data["notes"][0]
    assert "--cluster-col conversation_id" in data["notes"][0]


def test_turn_level_named_when_written(tmp_path):
    text = level_banner({"level": "conversation", "n_conversations": 40, "turn_level": "turns_correlations.csv"})
    assert "turns_correlations.csv is the turn level" in text and "inherited_rating" in text


def test_no_banner_for_turn_or_exchange_runs(tmp_path):
    assert level_banner({"level": "turn"}) is None and level_banner({}) is None
    data = collect_study(_folder(tmp_path, {}))
    assert not any(n.startswith("Validated per") for n in data["notes"])
