"""Many-rater agreement (raters.md §2): spec worked example, oracles (krippendorff, statsmodels) on
simulated and real ratings, bootstrap, edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.multirater_agreement import (
    _alpha_nominal_from_sums,
    alpha_bootstrap,
    alpha_bootstrap_values,
    coincidence_matrix,
    exact_agreement,
    fleiss_kappa_modal,
    gwet_ac1_counts,
    krippendorff_alpha_counts,
    unit_counts,
)
from tutormetrics.psychometrics.pairwise_agreement import contingency_table, gwet_ac

MRBENCH = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "mrbench"

# irrCAC raw_4raters (Gwet 2014), raters.md §2.6; None = missing
RAW4 = {
    "R1": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "R2": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, None],
    "R3": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 3],
    "R4": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def _long(wide: dict[str, list], criterion: str = "c") -> pl.DataFrame:
    rows = [
        (f"u{i:02d}", rater, criterion, score)
        for rater, scores in wide.items()
        for i, score in enumerate(scores)
        if score is not None
    ]
    return pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")


def test_spec_worked_example() -> None:
    row = agreement_table(_long(RAW4), n_resamples=500).row(0, named=True)
    assert (row["n_units"], row["n_raters"], row["n_ratings"]) == (12, 4, 41)
    assert row["exact"] == pytest.approx(8 / 11, abs=1e-12)
    assert row["fleiss_kappa"] == pytest.approx(0.6414566, abs=1e-7)
    assert row["krippendorff_alpha"] == pytest.approx(0.7434211, abs=1e-7)
    assert row["alpha_ordinal"] == pytest.approx(0.8153875, abs=1e-7)
    assert row["alpha_interval"] == pytest.approx(0.8491071, abs=1e-7)
    assert row["gwet_ac1"] == pytest.approx(0.7754441, abs=1e-7)
    assert row["alpha_ci_low"] < row["krippendorff_alpha"] < row["alpha_ci_high"]
    # the two-rater block (R1, R2: 9 common units) is too_few on its own
    assert row["reason"] == "fleiss_8_of_11_units_with_4_ratings;too_few;first_two_of_4_raters"
    assert np.isnan(row["kappa"])
    assert row["rater_a"] == "R1" and row["rater_b"] == "R2" and row["n"] == 9


def test_spec_example_against_oracles() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    data = np.array([[np.nan if v is None else v for v in s] for s in RAW4.values()], dtype=float)
    counts = np.stack([(data == k).sum(0) for k in range(1, 6)], 1)
    complete = counts[counts.sum(1) == 4]
    assert fleiss_kappa_modal(counts).kappa == pytest.approx(inter_rater.fleiss_kappa(complete), abs=1e-14)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha_counts(counts, np.arange(1, 6), level) == pytest.approx(expected, abs=1e-14)


def _simulated(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(raters × units) scores with ~10 % missing, and the category values."""
    rng = np.random.default_rng(seed)
    q, n_raters, n_units = int(rng.integers(2, 6)), int(rng.integers(2, 7)), int(rng.integers(30, 400))
    values = np.sort(rng.choice(np.arange(0, 10), q, replace=False)).astype(float) / 2
    truth = rng.integers(0, q, n_units)
    codes = np.where(rng.random((n_raters, n_units)) < 0.6, truth, rng.integers(0, q, (n_raters, n_units)))
    data = values[codes]
    data[rng.random(data.shape) < 0.1] = np.nan
    return data, values


def _counts(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.unique(data[np.isfinite(data)])
    return np.stack([(data == v).sum(0) for v in values], 1), values


@pytest.mark.parametrize("seed", range(12))
def test_against_krippendorff_and_statsmodels(seed: int) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    data, _ = _simulated(seed)
    counts, values = _counts(data)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha_counts(counts, values, level) == pytest.approx(expected, abs=1e-12)
    res = fleiss_kappa_modal(counts)
    modal = counts[counts.sum(1) == res.m]
    assert res.u == modal.shape[0]
    assert res.kappa == pytest.approx(inter_rater.fleiss_kappa(modal), abs=1e-12)


def test_ac1_two_complete_raters_equals_two_rater_ac1() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 3, 200))
    counts = unit_counts(np.r_[np.arange(200), np.arange(200)], np.r_[a, b], 200, 3)
    assert gwet_ac1_counts(counts) == pytest.approx(float(gwet_ac(contingency_table(a, b, 3))), abs=1e-14)


def test_ac1_single_rated_units_count_in_pi_only() -> None:
    # by hand: p_a = mean(1, 1, 0) over the pairable units; π from all four units
    counts = np.array([[2, 0], [0, 2], [1, 1], [1, 0]])
    pi = np.array([(1 + 0 + 0.5 + 1) / 4, (0 + 1 + 0.5 + 0) / 4])
    p_e = (pi * (1 - pi)).sum()
    assert gwet_ac1_counts(counts) == pytest.approx((2 / 3 - p_e) / (1 - p_e), abs=1e-14)
    assert np.isnan(gwet_ac1_counts(np.array([[3], [2]])))


def test_fleiss_modal_tie_takes_larger_and_exact() -> None:
    counts = np.array([[2, 0], [1, 1], [3, 0], [1, 2], [1, 0]])
    res = fleiss_kappa_modal(counts)
    assert (res.m, res.u, res.v) == (3, 2, 4)
    assert res.reason == "fleiss_2_of_4_units_with_3_ratings"
    assert exact_agreement(counts) == 0.5


def test_coincidence_matrix_sums_to_pairable_values() -> None:
    data, _ = _simulated(3)
    counts, _ = _counts(data)
    o = coincidence_matrix(counts)
    np.testing.assert_allclose(o, o.T)
    assert o.sum() == pytest.approx(counts[counts.sum(1) >= 2].sum())


def test_bootstrap_statistic_equals_naive_unit_resampling() -> None:
    data, _ = _simulated(7)
    counts, _ = _counts(data)
    n_units, b = counts.shape[0], 200
    idx = np.random.default_rng(11).integers(0, n_units, size=(b, n_units))
    naive = np.array([krippendorff_alpha_counts(counts[i]) for i in idx])
    weights = np.stack([np.bincount(i, minlength=n_units) for i in idx])
    np.testing.assert_allclose(alpha_bootstrap_values(counts, weights), naive, atol=1e-12)
    assert np.isnan(_alpha_nominal_from_sums(np.array([[3.0, 0.0, 3.0]])))[0]


def test_multinomial_bootstrap_matches_index_bootstrap_in_distribution() -> None:
    data, _ = _simulated(9)
    counts, _ = _counts(data)
    n_units, b = counts.shape[0], 4000
    idx = np.random.default_rng(1).integers(0, n_units, size=(b, n_units))
    weights = np.stack([np.bincount(i, minlength=n_units) for i in idx])
    naive = np.quantile(alpha_bootstrap_values(counts, weights), [0.025, 0.975])
    lo, hi = alpha_bootstrap(counts, n_resamples=b, seed=2)
    # two independent bootstraps of the same distribution: bounds agree to Monte-Carlo error
    assert lo == pytest.approx(naive[0], abs=0.02) and hi == pytest.approx(naive[1], abs=0.02)
    assert alpha_bootstrap(counts, n_resamples=300, seed=5) == alpha_bootstrap(counts, n_resamples=300, seed=5)


def test_too_few_and_constant_and_one_rater_rows() -> None:
    few = {r: s[:9] for r, s in RAW4.items()}
    row = agreement_table(_long(few), n_resamples=50).row(0, named=True)
    assert row["reason"].startswith("too_few;fleiss_")
    assert np.isnan(row["krippendorff_alpha"]) and np.isnan(row["alpha_ci_low"])
    const = _long({"a": [1] * 12, "b": [1] * 12, "c": [1] * 11 + [None]})
    row = agreement_table(const, n_resamples=50).row(0, named=True)
    assert row["reason"].startswith("constant;fleiss_11_of_12_units_with_3_ratings")
    assert row["exact"] == 1.0
    assert all(np.isnan(row[k]) for k in ("fleiss_kappa", "krippendorff_alpha", "gwet_ac1", "alpha_ci_low"))
    one = agreement_table(_long({"a": [1, 0] * 10}), n_resamples=50).row(0, named=True)
    assert one["reason"] == "one_rater" and np.isnan(one["exact"]) and np.isnan(one["pa"])


def test_binary_scale_has_no_ordinal_alpha_and_missing_scores_skipped() -> None:
    wide = {"a": [0, 1] * 8, "b": [0, 1] * 7 + [1, 1], "c": [0, None] * 8}
    extra = pl.DataFrame({"exchange_id": ["u00"], "rater": ["d"], "criterion": ["c"], "score": [float("nan")]})
    ratings = pl.concat([_long(wide), extra], how="vertical_relaxed")
    row = agreement_table(ratings, n_resamples=0).row(0, named=True)
    assert np.isnan(row["alpha_ordinal"]) and np.isnan(row["alpha_interval"])
    assert row["n_raters"] == 3 and row["n_ratings"] == 40


def _ac1_and_exact_by_loop(data: np.ndarray) -> tuple[float, float]:
    """Gwet's multi-rater AC1 (irrCAC ``gwet.ac1.raw``) and exact agreement, written unit by unit from the
    raters × units matrix with NaN for missing ratings, as an independent check of the count-matrix code."""
    categories = sorted({float(v) for v in data.ravel() if np.isfinite(v)})
    q = len(categories)
    pa_terms, pi_sum, n_rated, all_equal = [], dict.fromkeys(categories, 0.0), 0, []
    for unit in data.T:
        vals = [float(v) for v in unit if np.isfinite(v)]
        if not vals:
            continue
        n_rated += 1
        for k in categories:
            pi_sum[k] += vals.count(k) / len(vals)
        if len(vals) >= 2:
            r = len(vals)
            pa_terms.append(sum(vals.count(k) * (vals.count(k) - 1) for k in categories) / (r * (r - 1)))
            all_equal.append(len(set(vals)) == 1)
    p_a = sum(pa_terms) / len(pa_terms)
    p_e = sum((pi_sum[k] / n_rated) * (1 - pi_sum[k] / n_rated) for k in categories) / (q - 1)
    return (p_a - p_e) / (1 - p_e), sum(all_equal) / len(all_equal)


def test_loop_oracle_reproduces_the_spec_example() -> None:
    data = np.array([[np.nan if v is None else v for v in s] for s in RAW4.values()], dtype=float)
    ac1, exact = _ac1_and_exact_by_loop(data)
    assert ac1 == pytest.approx(0.7754441, abs=1e-7) and exact == pytest.approx(8 / 11)


@pytest.mark.parametrize("seed", range(4))
def test_ac1_against_loop_oracle_on_simulated(seed: int) -> None:
    data, _ = _simulated(seed)
    counts, _ = _counts(data)
    ac1, exact = _ac1_and_exact_by_loop(data)
    assert gwet_ac1_counts(counts) == pytest.approx(ac1, abs=1e-12)
    assert exact_agreement(counts) == pytest.approx(exact, abs=1e-12)


@pytest.mark.skipif(not MRBENCH.exists(), reason="shared MRBench data not available")
def test_mrbench_tutors_as_raters_against_oracles() -> None:
    """Real ratings: conversations are units, the 9 tutors are 'raters' (Novice only in Bridge: missing)."""
    krippendorff = pytest.importorskip("krippendorff")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    ratings = pl.read_csv(MRBENCH / "ratings.csv")
    meta = pl.read_csv(MRBENCH / "exchanges_meta.csv", infer_schema_length=0).select("exchange_id", "conversation_id", "tutor")
    long = ratings.join(meta, on="exchange_id").select(
        pl.col("conversation_id").alias("exchange_id"), pl.col("tutor").alias("rater"), "criterion", "score"
    )
    table = agreement_table(long, n_resamples=0)
    assert table.height == 8
    for row in table.iter_rows(named=True):
        sub = long.filter(pl.col("criterion") == row["criterion"])
        wide = sub.pivot(on="rater", index="exchange_id", values="score").sort("exchange_id")
        data = wide.drop("exchange_id").to_numpy().T.astype(float)
        counts, values = _counts(data)
        assert row["n_units"] == 200 and row["n_raters"] == 9 and row["n_ratings"] == 1655
        for col, level in (("krippendorff_alpha", "nominal"), ("alpha_ordinal", "ordinal"), ("alpha_interval", "interval")):
            if values.size > 2:
                expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
                assert row[col] == pytest.approx(expected, abs=1e-12)
        modal = counts[counts.sum(1) == 8]
        assert row["fleiss_kappa"] == pytest.approx(inter_rater.fleiss_kappa(modal), abs=1e-12)
        ac1, exact = _ac1_and_exact_by_loop(data)
        assert row["gwet_ac1"] == pytest.approx(ac1, abs=1e-12)
        assert row["exact"] == pytest.approx(exact, abs=1e-12)
        assert row["reason"].startswith("fleiss_145_of_200_units_with_8_ratings")
