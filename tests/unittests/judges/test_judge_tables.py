"""The one-call entry points of judges.md (what ``agree --judge …`` will run) and §7's errors."""

from __future__ import annotations

import polars as pl
import pytest

from judges import worked_example as ex
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.judge_tables import JudgeOptions, cluster_labels, judge_tables
from tutormetrics.psychometrics.ratings import Ratings


def test_all_tables_in_one_call() -> None:
    opts = JudgeOptions(n_resamples=300, cluster_col="conversation_id", length_bias=True, differences=True)
    out = judge_tables(Ratings.clean(ex.ratings()), ["J", "K"], opts, metrics=ex.metrics())
    assert out.table["ci_method"].unique().to_list() == ["cluster_percentile"]
    assert out.length_bias is not None and out.length_bias["judge"].to_list() == ["J", "K"]
    assert out.length_bias["se_method"].to_list() == ["cluster", "cluster"] and out.length_bias["n_clusters"][0] == 12
    assert out.differences is not None and set(out.differences["contrast"]) == {"judges", "judge_vs_humans"}
    assert out.notes == []


def test_cluster_column_from_the_metrics_table() -> None:
    ratings = ex.ratings().drop("conversation_id")
    labels = cluster_labels(ratings, "conversation_id", metrics=ex.metrics())
    assert labels is not None and labels["e04"] == "d02"
    with pytest.raises(InputSchemaError, match="--cluster-col 'dialog' is not a column of ratings or --metrics-table"):
        cluster_labels(ratings, "dialog", metrics=ex.metrics())
    two = ex.ratings().with_columns(pl.when(pl.col("rater") == "K").then(pl.lit("dx")).otherwise(pl.col("conversation_id")).alias("conversation_id"))
    with pytest.raises(InputSchemaError, match="30 exchange\\(s\\) carry two or more"):
        cluster_labels(two, "conversation_id")
    assert cluster_labels(ratings, None) is None
    with pytest.raises(ConfigError, match="is the ratings' rater column"):
        cluster_labels(ratings, "rater")


def test_independence_note_without_cluster_column() -> None:
    out = judge_tables(ex.ratings(), ["J"], JudgeOptions(n_resamples=0))
    assert any("treat its replies as independent" in n and "--cluster-col conversation_id" in n for n in out.notes)


def test_many_rater_table_with_dialogues() -> None:
    t = agreement_table(ex.ratings(), n_resamples=100, cluster_labels=cluster_labels(ex.ratings(), "conversation_id"))
    assert t["n_clusters"][0] == 12


def test_errors() -> None:
    with pytest.raises(ConfigError, match="--length-bias needs --metrics-table"):
        judge_tables(ex.ratings(), ["J"], JudgeOptions(length_bias=True))
    with pytest.raises(ConfigError, match="--length-col 'words'"):
        judge_tables(ex.ratings(), ["J"], JudgeOptions(length_bias=True, length_col="words"), metrics=ex.metrics())
    with pytest.raises(ConfigError, match="nothing to contrast"):
        judge_tables(ex.ratings({"A": ex.A, "J": ex.J}), ["J"], JudgeOptions(differences=True))


def test_option_rules() -> None:
    from tutormetrics.psychometrics.judge_tables import check_agree_options
    from tutormetrics.psychometrics.ppi_table import check_ppi_options

    with pytest.raises(ConfigError, match="--length-bias needs --judge"):
        check_agree_options(judges=None, metrics=True, length_bias=True)
    with pytest.raises(ConfigError, match="--differences needs --judge"):
        check_agree_options(judges=[], differences=True)
    with pytest.raises(ConfigError, match="--judge or --raters"):
        check_agree_options(judges=None, raters="a,b", stability="J,K")
    assert check_agree_options(judges=["J"], metrics=True, length_bias=True) is None
    for kw, message in (
        ({"plan": True, "half_width": None}, "--plan needs --half-width"),
        ({"plan": False, "half_width": 0.1}, "target of --plan"),
        ({"plan": True, "half_width": -1.0}, "must be > 0"),
        ({"plan": True, "half_width": 0.1, "strata_col": "band"}, "does not take --strata-col"),
        ({"plan": False, "half_width": None, "strata_weights": {"a": 1}}, "needs --strata-col"),
    ):
        with pytest.raises(ConfigError, match=message):
            check_ppi_options(**{"strata_col": None, "strata_weights": None, **kw})
