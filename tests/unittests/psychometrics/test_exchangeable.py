"""Anonymous rater slots and one rater on mixed scales (datasets.md §5): slot labels, the two warnings,
agreement and the judge with exchangeable raters, θ without a rater facet."""

from __future__ import annotations

import krippendorff
import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.exchangeable import (
    check_raters_mode,
    mixed_scale_warning,
    single_rater,
    slot_labels,
    slot_warning,
    theta_ratings,
)
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
from tutormetrics.psychometrics.ratings import Ratings

SLOTS = ["slot1", "slot2", "slot3"]


def _uptake_shaped(seed: int = 0) -> pl.DataFrame:
    """Like uptake's sample: 159 units with 3 ratings, 12 with 2, 8 with 1 (slots filled in order, scores
    in ascending order), on a 0-2 scale; plus an on-task criterion with 3 ratings everywhere."""
    rng = np.random.default_rng(seed)
    rows = []
    sizes = [3] * 159 + [2] * 12 + [1] * 8
    for u, k in enumerate(sizes):
        base = rng.integers(0, 3)
        scores = sorted(int(np.clip(base + rng.integers(-1, 2), 0, 2)) for _ in range(k))
        rows += [(f"u{u:03d}", SLOTS[i], "uptake", s) for i, s in enumerate(scores)]
        on = rng.integers(0, 2)
        rows += [(f"u{u:03d}", SLOTS[i], "teacher_on_task", int(on if rng.random() < 0.8 else 1 - on)) for i in range(3)]
    return pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")


def _slot_matrix(df: pl.DataFrame, crit: str) -> np.ndarray:
    """slot × unit reliability matrix (NaN = missing), the layout krippendorff.alpha takes."""
    sub = df.filter(pl.col("criterion") == crit)
    units = sorted(sub["exchange_id"].unique().to_list())
    raters = sorted(sub["rater"].unique().to_list())
    m = np.full((len(raters), len(units)), np.nan)
    for unit, rater, score in sub.select("exchange_id", "rater", "score").iter_rows():
        m[raters.index(rater), units.index(unit)] = score
    return m


def _long(df: pl.DataFrame) -> pl.DataFrame:
    return Ratings.clean(df).long


def test_slot_warning_has_the_spec_wording():
    df = _uptake_shaped()
    assert slot_warning(_long(df)) == (
        "warning: ratings: raters slot1, slot2, slot3 fill slots in order (uptake: 12 units have 2 ratings, 8 have 1): "
        "if they are anonymous, pass --raters exchangeable"
    )


def test_slot_warning_needs_two_counts_and_slots_filled_in_order():
    df = _uptake_shaped()
    full = df.filter(pl.col("criterion") == "teacher_on_task")
    assert slot_warning(_long(full)) is None  # one number of ratings per unit: people or slots, no way to tell
    # one unit rated by slot2 alone (not the first label): these are people who skipped units
    one = df.filter(~((pl.col("exchange_id") == "u178") & (pl.col("criterion") == "uptake")))
    one = pl.concat([one, pl.DataFrame({"exchange_id": ["u178"], "rater": ["slot2"], "criterion": ["uptake"], "score": [1]})])
    assert slot_warning(_long(one)) is None
    # a judge (sorted after the slots, rating every unit) breaks the pattern unless it is left out
    judge = pl.concat([df, df.filter(pl.col("rater") == "slot1").with_columns(pl.lit("zjudge").alias("rater"))])
    assert slot_warning(_long(judge)) is None
    assert slot_warning(_long(judge), exclude=["zjudge"]) == slot_warning(_long(df))


def test_slot_labels_keep_the_multiset_and_the_judge():
    long = pl.DataFrame({"_id": ["a"] * 4 + ["b"] * 2, "_rater": ["x", "x", "y", "J", "y", "J"], "_crit": ["c"] * 6,
                         "_score": [2.0, 0.0, 1.0, 2.0, 1.0, 0.0]})  # fmt: skip
    out = slot_labels(long, keep=["J"])
    assert out.height == long.height and out["_score"].to_list() == long["_score"].to_list()
    assert out.filter(pl.col("_id") == "a").sort("_rater")["_rater"].to_list() == ["J", "slot1", "slot2", "slot3"]
    assert out.filter(pl.col("_rater") == "slot1")["_score"].to_list() == [0.0, 1.0]  # ascending within a unit
    assert slot_labels(long.drop("_rater"))["_rater"].to_list()[:4] == ["slot3", "slot1", "slot2", "slot4"]
    with pytest.raises(InputSchemaError, match="the judge 'J' scores 'c' of 'a' more than once"):
        slot_labels(pl.concat([long, long.filter(pl.col("_rater") == "J").head(1)]), keep=["J"])
    # a judge whose name starts like the slots never collides with one
    assert set(slot_labels(long.with_columns(pl.col("_rater").replace("J", "slot1")), keep=["slot1"])["_rater"]) == {
        "slot1", "_slot1", "_slot2", "_slot3"}


def test_check_raters_mode():
    assert check_raters_mode("exchangeable", "theta") and not check_raters_mode(None, "theta")
    with pytest.raises(ConfigError, match="theta --raters 'a,b': the only value here is 'exchangeable'"):
        check_raters_mode("a,b", "theta")


def test_exchangeable_agreement_keeps_the_multirater_columns_and_empties_the_pair():
    df = _uptake_shaped()
    named = agreement_table(df, n_resamples=200, seed=1)
    table = agreement_table(df, n_resamples=200, seed=1, exchangeable=True)
    multi = ["n_units", "n_raters", "n_ratings", "exact", "fleiss_kappa", "krippendorff_alpha", "alpha_ordinal",
             "alpha_interval", "gwet_ac1", "alpha_ci_low", "alpha_ci_high"]  # fmt: skip
    assert table.select("criterion", *multi).equals(named.select("criterion", *multi))
    two = table.columns[table.columns.index("alpha_ci_high") + 1 : table.columns.index("reason")]
    assert "n" in two and "pabak" in two and "p_neg_ci_high" in two and "alpha_quadratic" in two
    assert "rater_a" in two and "rater_b" in two
    assert all(table[c].null_count() == table.height for c in two)
    assert [r.split(";")[-1] for r in table["reason"]] == ["exchangeable_raters"] * 2
    assert "first_two_of" not in ";".join(table["reason"])
    up = table.row(0, named=True)
    for level, col in (("nominal", "krippendorff_alpha"), ("ordinal", "alpha_ordinal"), ("interval", "alpha_interval")):
        ref = krippendorff.alpha(reliability_data=_slot_matrix(df, "uptake"), level_of_measurement=level)
        assert up[col] == pytest.approx(ref, abs=1e-12)


def test_exchangeable_agreement_ignores_labels_repeats_and_a_missing_rater_column():
    df = _uptake_shaped()
    base = agreement_table(df, n_resamples=100, exchangeable=True)
    one_label = df.with_columns(pl.lit("anon").alias("rater"))  # a label repeats within every unit
    assert agreement_table(one_label, n_resamples=100, exchangeable=True).equals(base)
    assert agreement_table(df.drop("rater"), n_resamples=100, exchangeable=True).equals(base)
    rng = np.random.default_rng(3)
    shuffled = df.with_columns(pl.Series("rater", rng.permutation(df["rater"].to_numpy())))  # labels moved between units
    assert agreement_table(shuffled, n_resamples=100, exchangeable=True).equals(base)
    assert agreement_table(Ratings.clean(df, exchangeable=True), n_resamples=100, exchangeable=True).equals(base)
    with pytest.raises(InputSchemaError, match="more than one score"):  # repeats are an error for named raters
        agreement_table(one_label, n_resamples=0)
    with pytest.raises(ConfigError, match="cannot be combined"):
        agreement_table(df, raters=("slot1", "slot2"), exchangeable=True)


def test_exchangeable_judge_has_only_the_majority_reference():
    """raters.md §3's worked example: humans A, B, C, judge J; the majority row does not depend on who is who."""
    a = [2, 2, 1, 0, 2, 1, 0, 2, 1, 2]
    b = [2, 1, 1, 0, 2, 0, 0, 2, 2, 2]
    c = [2, 2, 0, 0, 1, 1, None, 2, 0, 2]
    j = [2, 2, 1, 1, 2, 0, 0, 1, 2, 2]
    rows = [(f"u{i}", r, "c", s) for r, col in (("A", a), ("B", b), ("C", c), ("J", j)) for i, s in enumerate(col) if s is not None]
    df = pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")
    named = judge_table(df, "J", n_resamples=0, n_min=5).table
    anon = judge_table(df.with_columns(pl.when(pl.col("rater") == "J").then(pl.lit("J")).otherwise(pl.lit("h")).alias("rater")),
                       "J", n_resamples=0, n_min=5, exchangeable=True).table  # fmt: skip
    assert anon["reference"].to_list() == ["majority"] * 2 and anon["criterion"][1] == "(all)"  # + the pooled row
    assert anon.equals(named.filter(pl.col("reference") == "majority"))
    row = anon.row(0, named=True)
    assert (row["n"], row["accuracy"], row["reason"]) == (9, pytest.approx(0.6666667, abs=1e-7), "majority_ties_1;scale_inferred")
    assert row["cohen_kappa"] == pytest.approx(0.4705882, abs=1e-7)


def _theta(ratings: Ratings) -> np.ndarray:
    fitted, notes, warned = theta_ratings(ratings)
    assert notes and not warned
    return fit_mfrm(fitted, **fitted.columns()).theta_table()["theta"].to_numpy()


def test_theta_without_rater_facet_is_unchanged_by_permuting_or_merging_labels():
    ratings, _ = simulate_mfrm(n_items=60, seed=5)
    r = Ratings.clean(ratings, exchangeable=True)
    base = _theta(r)
    rng = np.random.default_rng(0)
    # permute the rater labels within each unit (exchange × criterion)
    keyed = ratings.with_columns(pl.Series("_key", rng.random(ratings.height)))
    permuted = keyed.with_columns(pl.col("rater").sort_by("_key").over(["exchange_id", "criterion"])).drop("_key")
    assert not permuted["rater"].equals(ratings["rater"])
    np.testing.assert_allclose(_theta(Ratings.clean(permuted, exchangeable=True)), base, rtol=0, atol=1e-10)
    merged = ratings.with_columns(pl.lit("anyone").alias("rater"))
    np.testing.assert_allclose(_theta(Ratings.clean(merged, exchangeable=True)), base, rtol=0, atol=1e-10)
    np.testing.assert_allclose(_theta(Ratings.clean(ratings.drop("rater"), exchangeable=True)), base, rtol=0, atol=1e-10)
    fit = fit_mfrm(single_rater(r), **r.columns())
    assert fit.facets_table().filter(pl.col("facet") == "rater").height == 0
    named = fit_mfrm(ratings)  # with the facet the severities move θ
    assert named.facets_table().filter(pl.col("facet") == "rater").height > 1


def test_mixed_scale_warning_has_the_spec_wording():
    n = 40
    df = pl.DataFrame({
        "conversation_id": [f"c{i}" for i in range(n) for _ in range(3)],
        "rater": ["gold"] * (3 * n),
        "criterion": ["self_correctness", "self_typical_confusion", "self_typical_interactions"] * n,
        "score": [v for i in range(n) for v in ((0.0, 0.5, 1.0)[i % 3], 1 + i % 5, 1 + (i + 2) % 5)],
    })  # fmt: skip
    r = Ratings.clean(df, id_col="conversation_id")
    assert mixed_scale_warning(r) == (
        "warning: θ: one rater ('gold') and criteria on different scales (self_correctness: 0, 0.5, 1; "
        "self_typical_confusion, self_typical_interactions: 1-5): θ pools them as one trait; fit θ on one scale, or "
        "pass --no-estimate-theta"
    )
    assert theta_ratings(r)[2] == [mixed_scale_warning(r)]
    assert mixed_scale_warning(Ratings.clean(df, id_col="conversation_id", exchangeable=True)) is None
    two = df.with_columns(pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b")).alias("rater"))
    assert mixed_scale_warning(Ratings.clean(two, id_col="conversation_id")) is None  # several raters
    same = df.filter(pl.col("criterion") != "self_correctness")
    assert mixed_scale_warning(Ratings.clean(same, id_col="conversation_id")) is None  # one scale
    assert "one rater (no rater column)" in mixed_scale_warning(Ratings.clean(df.drop("rater"), id_col="conversation_id"))


def test_per_rater_targets_refused_for_slots():
    r = Ratings.clean(_uptake_shaped(), exchangeable=True)
    assert r.targets("mean").height == 179
    with pytest.raises(ConfigError, match="anonymous slots"):
        r.targets("per_rater")
