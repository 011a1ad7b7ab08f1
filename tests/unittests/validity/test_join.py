"""Tests for joining metrics to targets without silently dropping rows."""

from __future__ import annotations

import polars as pl
import pytest

from tutormetrics.errors import InputSchemaError
from tutormetrics.validity.join import JoinReport, join_targets, metric_columns


def test_all_matched_summary() -> None:
    m = pl.DataFrame({"exchange_id": ["a", "b", "c"], "ttr": [0.1, 0.2, 0.3]})
    r = pl.DataFrame({"exchange_id": ["c", "a", "b"], "tone": [1.0, 0.0, 0.5]})
    joined, report = join_targets(m, r)
    assert isinstance(report, JoinReport)
    assert joined["exchange_id"].to_list() == ["a", "b", "c"]
    assert joined["tone"].to_list() == [0.0, 0.5, 1.0]
    assert report.summary() == "3 of 3 metric rows matched ratings; 0 rating ids without metrics"
    assert report.all_matched and report.n_matched == [3] and report.n_metrics_rows == 3


def test_unmatched_rows_are_kept_and_reported() -> None:
    m = pl.DataFrame({"exchange_id": ["a", "b", "x"], "ttr": [0.1, 0.2, 0.3]})
    r = pl.DataFrame({"exchange_id": ["a", "b", "y", "z"], "tone": [1.0, 0.0, 1.0, 1.0]})
    th = pl.DataFrame({"exchange_id": ["a"], "theta": [0.4]})
    joined, report = join_targets(m, r, th, names=["ratings", "theta"])
    assert joined.height == 3
    assert joined.columns == ["exchange_id", "ttr", "tone", "theta"]
    assert joined["tone"].to_list() == [1.0, 0.0, None]
    assert report.n_matched == [2, 1]
    assert report.unmatched_metric_ids == [["x"], ["b", "x"]]
    assert report.unmatched_target_ids == [["y", "z"], []]
    assert not report.all_matched
    lines = report.summary().splitlines()
    assert lines[0].startswith("2 of 3 metric rows matched ratings; 2 rating ids without metrics")
    assert "metric ids without ratings: x" in lines[0] and "rating ids without metrics: y, z" in lines[0]
    assert lines[1].startswith("1 of 3 metric rows matched theta; 0 theta ids without metrics")


def test_summary_caps_ids_at_ten() -> None:
    m = pl.DataFrame({"exchange_id": [f"m{i}" for i in range(16)], "ttr": [0.0] * 16})
    r = pl.DataFrame({"exchange_id": ["z", "m15"], "tone": [1.0, 0.0]})
    _, report = join_targets(m, r)
    assert len(report.unmatched_metric_ids[0]) == 15
    text = report.summary()
    assert "m9, ... (+5 more)" in text and "m10" not in text


def test_a_join_that_matches_nothing_is_an_error_with_both_sides_ids() -> None:
    m = pl.DataFrame({"exchange_id": ["1", "2", "3"], "ttr": [0.1, 0.2, 0.3]})
    r = pl.DataFrame({"exchange_id": ["1.0", "2.0"], "tone": [1.0, 0.0]})
    with pytest.raises(InputSchemaError, match=r"no id of ratings matches a metric id: metrics have 1, 2, 3, ratings have 1.0, 2.0") as info:
        join_targets(m, r)
    assert "--id-type int" in info.value.hint
    joined, report = join_targets(m, r, id_type="int")  # as whole numbers, 1 and 1.0 are one id
    assert joined["tone"].to_list() == [1.0, 0.0, None] and report.n_matched == [2]


def test_ids_as_text_keep_leading_zeros_apart() -> None:
    m = pl.DataFrame({"exchange_id": ["007", "7"], "ttr": [0.1, 0.2]})
    r = pl.DataFrame({"exchange_id": ["7"], "tone": [1.0]})
    joined, _ = join_targets(m, r)
    assert joined["tone"].to_list() == [None, 1.0]
    with pytest.raises(InputSchemaError, match="not a whole number"):
        join_targets(m, pl.DataFrame({"exchange_id": ["x7"], "tone": [1.0]}), id_type="int")


def test_ids_compared_as_text() -> None:
    m = pl.DataFrame({"exchange_id": [1, 2], "ttr": [0.1, 0.2]})
    r = pl.DataFrame({"exchange_id": ["2", "1"], "tone": [1.0, 0.0]})
    joined, report = join_targets(m, r)
    assert joined["tone"].to_list() == [0.0, 1.0]
    assert joined.schema["exchange_id"] == pl.Int64  # the metrics keep their own id type
    assert report.n_matched == [2]


def test_duplicate_ids_and_clashes_raise() -> None:
    m = pl.DataFrame({"exchange_id": ["a", "b"], "ttr": [0.1, 0.2]})
    with pytest.raises(InputSchemaError, match="more than once"):
        join_targets(m, pl.DataFrame({"exchange_id": ["a", "a"], "tone": [1.0, 0.0]}))
    with pytest.raises(InputSchemaError, match="already exist"):
        join_targets(m, pl.DataFrame({"exchange_id": ["a"], "ttr": [1.0]}))
    with pytest.raises(InputSchemaError, match="exchange_id"):
        join_targets(m, pl.DataFrame({"id": ["a"], "tone": [1.0]}))
    joined, _ = join_targets(m.rename({"exchange_id": "id"}), pl.DataFrame({"id": ["b"], "tone": [1.0]}), id_col="id")
    assert joined["tone"].to_list() == [None, 1.0]


def test_metric_columns_skip_id_and_diagnostics() -> None:
    df = pl.DataFrame(
        {
            "exchange_id": ["a"],
            "resp_chars": [10],
            "ttr": [0.5],
            "prompt_windows": [2],
            "resp_windows": [1],
            "resp_truncated": [0],  # the Scorer's flags by name (no suffix guess since issue 22)
            "resp_empty": [False],
            "tutor": ["GPT4"],
        }
    )
    assert metric_columns(df) == ["resp_chars", "ttr"]
    assert metric_columns(df, columns=["ttr"]) == ["ttr"]
    with pytest.raises(InputSchemaError, match="not numeric"):
        metric_columns(df, columns=["tutor"])
    with pytest.raises(InputSchemaError):
        metric_columns(df.select("exchange_id", "tutor"))
