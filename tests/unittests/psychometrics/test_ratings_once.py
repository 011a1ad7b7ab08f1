"""Ratings cleaned once (issue 22): the :class:`Ratings` value gives the same targets, θ and agreement as
the frame it came from, and a whole study parses, cleans and scale-checks the ratings exactly once."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tutormetrics.errors import InputSchemaError
from tutormetrics.psychometrics import ratings as R
from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
from tutormetrics.psychometrics.ratings import Ratings, rating_variables, ratings_frame_to_targets


@pytest.fixture(scope="module")
def long() -> pl.DataFrame:
    ratings, _ = simulate_mfrm(n_items=40, severities=(0.3, 0.0, -0.3), seed=5)
    return ratings.with_columns(pl.col("exchange_id").cast(pl.String))


@pytest.mark.parametrize("aggregate", ["mean", "per_rater", "min", "max"])
def test_targets_match_the_frame_path(long, aggregate):
    r = Ratings.clean(long)
    assert_frame_equal(r.targets(aggregate), ratings_frame_to_targets(long, aggregate=aggregate))
    crit = long["criterion"].unique(maintain_order=True).to_list()[:2]
    assert_frame_equal(r.targets(aggregate, crit), ratings_frame_to_targets(long, aggregate=aggregate, columns=crit))


def test_wide_ratings_pass_through():
    wide = pl.DataFrame({"exchange_id": ["a", "b", "c"], "tone@r1": [1, 0, 1], "tone@r2": [0, 0, 1]})
    r = Ratings.clean(wide)
    assert not r.is_long and r.n_raters == 0 and r.levels == {}
    assert_frame_equal(r.targets(), ratings_frame_to_targets(wide))


def test_theta_agreement_judge_and_summaries_take_the_value(long):
    r = Ratings.clean(long)
    assert r.n_raters == 3 and set(r.levels.values()) <= {(0.0, 1.0), (0.0, 1.0, 2.0)}
    assert_frame_equal(fit_mfrm(r, **r.columns()).theta_table(), fit_mfrm(long).theta_table())
    assert_frame_equal(agreement_table(r, n_resamples=50), agreement_table(long, n_resamples=50))
    judge = long["rater"].unique().sort()[0]
    assert_frame_equal(judge_table(r, judge, n_resamples=20).table, judge_table(long, judge, n_resamples=20).table)
    assert_frame_equal(rating_variables(r), rating_variables(long))


def test_scale_drop_is_recorded_and_applied_to_both_tables():
    scores = [0, 1] * 20 + [7]
    raw = pl.DataFrame({"exchange_id": [str(i) for i in range(41)], "rater": ["r"] * 41, "criterion": ["c"] * 41,
                        "score": scores})
    with pytest.raises(InputSchemaError, match="off the scale"):
        Ratings.clean(raw)
    notes: list[str] = []
    r = Ratings.clean(raw, drop_out_of_scale=True, log=notes.append)
    assert r.frame.height == r.long.height == 40 and r.levels == {"c": (0.0, 1.0)}
    assert len(r.dropped) == 1 and "dropped 1 rating(s)" in r.dropped[0] and any("dropped" in n for n in notes)
    assert_frame_equal(R.check_scale(raw, drop=True), r.frame)


def test_a_study_cleans_parses_and_scale_checks_once(long, monkeypatch):
    """validate_metrics with θ estimated and the agreement of run: one clean, one parse, one scale check
    (before: 3 cleans, 2 scale checks, 5 parses of the score column)."""
    from tutormetrics.runs.outputs import agreement
    from tutormetrics.validity import study as validity_study

    calls = {"clean": 0, "parse": 0, "scale": 0}

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(R, "clean_long_ratings", counting("clean", R.clean_long_ratings))
    monkeypatch.setattr(R, "_as_float", counting("parse", R._as_float))
    monkeypatch.setattr(R, "scale_filter", counting("scale", R.scale_filter))
    ids = long["exchange_id"].unique(maintain_order=True)
    metrics = pl.DataFrame({"exchange_id": ids, "m": [float(i % 7) for i in range(ids.len())]})
    vo = validity_study.ValidateOptions(ci="none", n_permutations=10)
    study = validity_study.validate_metrics(metrics, ratings=long, options=vo)
    assert agreement(study.ratings) is not None
    again = validity_study.validate_metrics(metrics, ratings=study.ratings, options=vo)  # a second level reuses it
    assert study.theta_fit is not None and again.validity.table.height
    assert calls == {"clean": 1, "parse": 1, "scale": 1}
