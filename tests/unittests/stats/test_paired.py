"""Tests for paired comparisons (statistics.md §4)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.stats.multiplicity import adjust_pvalues
from tutormetrics.stats.multiplicity import significance_stars as stars
from tutormetrics.stats.paired import (
    compare_groups,
    friedman,
    paired_wilcoxon,
    rank_biserial,
    sign_test,
)

D_REF = np.array([0.8, -0.3, 1.2, 2.1, -0.9, 0.4, 1.7, -1.4, 2.6, 0.6, 1.1, -0.2, 3.0, 0.5, 1.9])
FRIEDMAN = np.array(
    [
        [3.12, 3.95, 4.41],
        [2.53, 2.86, 3.80],
        [4.04, 3.61, 4.93],
        [3.31, 4.17, 4.02],
        [2.84, 3.52, 3.97],
        [3.66, 3.43, 4.26],
        [2.21, 3.09, 3.15],
        [3.90, 4.68, 4.85],
        [3.07, 3.28, 4.19],
        [2.75, 3.81, 3.54],
    ]
)


def test_wilcoxon_reference_and_t_plus_trap() -> None:
    res = paired_wilcoxon(D_REF, np.zeros(15), n_resamples=999)
    assert res["n"] == res["n_nonzero"] == 15
    assert res["t_plus"] == 100.0  # scipy's two-sided statistic would be min(T+, T−) = 20
    assert stats.wilcoxon(D_REF).statistic == 20.0
    assert res["p"] == pytest.approx(0.02154541015625, abs=1e-12)
    assert res["p_method"] == "exact"
    assert res["r_rb"] == pytest.approx(0.666667, abs=1e-6)
    assert res["r_rb"] == pytest.approx((100 - 20) / (100 + 20))
    assert res["ci_low"] < res["r_rb"] < res["ci_high"]
    assert res["reason"] == ""
    greater = stats.wilcoxon(D_REF, alternative="greater")
    assert greater.statistic == 100.0 and greater.pvalue == pytest.approx(0.010772705078125, abs=1e-12)
    # x < y flips the sign of r_rb and gives T+ = T−
    flipped = paired_wilcoxon(np.zeros(15), D_REF, n_resamples=0)
    assert flipped["t_plus"] == 20.0 and flipped["r_rb"] == pytest.approx(-0.666667, abs=1e-6)


def test_smallest_exact_p_table() -> None:
    for n, p_min in ((6, 0.03125), (10, 0.001953125), (15, 6.103515625e-05)):
        res = paired_wilcoxon(np.arange(1, n + 1, dtype=float), np.zeros(n), n_min=5, n_resamples=0)
        assert res["p"] == pytest.approx(p_min, rel=1e-9)
    res = paired_wilcoxon(np.arange(1, 6, dtype=float), np.zeros(5), n_min=5, n_resamples=0)
    assert res["p"] == pytest.approx(0.0625)


def test_rounding_zeros_and_reasons() -> None:
    x = np.array([0.1 + 0.2] * 3 + list(range(1, 16)), dtype=float)
    y = np.array([0.3] * 3 + [0.0] * 15)
    res = paired_wilcoxon(x, y, n_resamples=0)
    assert res["n"] == 18 and res["n_nonzero"] == 15  # 0.1 + 0.2 − 0.3 rounds to an exact zero
    assert paired_wilcoxon(np.ones(10), np.zeros(10))["reason"] == "too_few"
    assert np.isnan(paired_wilcoxon(np.ones(10), np.zeros(10))["p"])
    const = paired_wilcoxon(np.ones(20), np.ones(20))
    assert const["reason"] == "constant" and np.isnan(const["r_rb"])
    with_nan = paired_wilcoxon(np.r_[D_REF, np.nan], np.r_[np.zeros(15), 1.0], n_resamples=0)
    assert with_nan["n"] == 15 and with_nan["t_plus"] == 100.0


def test_tied_data_uses_seeded_permutation() -> None:
    rng = np.random.default_rng(0)
    d = rng.integers(-2, 5, 30).astype(float)
    res = paired_wilcoxon(d, np.zeros(30), n_resamples=0, seed=3)
    assert res["p_method"] == "permutation"
    nz = d[d != 0]
    expected = stats.wilcoxon(nz, method=stats.PermutationMethod(n_resamples=9999, rng=np.random.default_rng(3)))
    assert res["p"] == expected.pvalue
    asym = stats.wilcoxon(nz, method="asymptotic").pvalue
    assert res["p"] == pytest.approx(asym, abs=0.02)


def test_rank_biserial_vectorised_matches_definition() -> None:
    rng = np.random.default_rng(1)
    batch = np.round(rng.normal(0.3, 1, (50, 20)), 1)
    batch[:, :3] = 0.0
    out = rank_biserial(batch)
    for row, r in zip(batch, out, strict=True):
        nz = row[row != 0]
        ranks = stats.rankdata(np.abs(nz))
        t_plus, t_minus = ranks[nz > 0].sum(), ranks[nz < 0].sum()
        assert r == pytest.approx((t_plus - t_minus) / (t_plus + t_minus), abs=1e-12)
    assert rank_biserial(np.zeros(5)) == 0.0


def test_bca_matches_spec_call() -> None:
    """The vectorised statistic gives the same BCa interval as the spec's vectorized=False call."""

    def rbc(d: np.ndarray) -> float:
        nz = d[d != 0]
        r = stats.rankdata(np.abs(nz))
        return 4 * r[nz > 0].sum() / (nz.size * (nz.size + 1)) - 1 if nz.size else 0.0

    res = paired_wilcoxon(D_REF, np.zeros(15), n_resamples=999, seed=7)
    spec = stats.bootstrap((D_REF,), rbc, vectorized=False, method="BCa", n_resamples=999, rng=np.random.default_rng(7))
    assert res["ci_low"] == pytest.approx(spec.confidence_interval.low, abs=1e-12)
    assert res["ci_high"] == pytest.approx(spec.confidence_interval.high, abs=1e-12)


def test_friedman_reference() -> None:
    res = friedman(FRIEDMAN)
    assert res["chi2"] == pytest.approx(12.8, abs=1e-9)
    assert res["p"] == pytest.approx(0.0016616, abs=1e-7)
    assert res["kendall_w"] == pytest.approx(0.64, abs=1e-9)
    assert res["n"] == 10 and res["k"] == 3
    with_nan = friedman(np.vstack([FRIEDMAN, [1.0, np.nan, 2.0]]))
    assert with_nan["n"] == 10 and with_nan["chi2"] == pytest.approx(12.8)


def test_friedman_follow_up_with_holm() -> None:
    df = pl.DataFrame(
        {
            "block": np.repeat(np.arange(10), 3),
            "cond": np.tile(["c1", "c2", "c3"], 10),
            "m": FRIEDMAN.ravel(),
        }
    )
    table = compare_groups(df, metric_cols=["m"], group_col="cond", block_col="block", n_min=10, n_resamples=999)
    assert table.columns == [
        "metric", "group_a", "group_b", "n", "n_nonzero", "t_plus", "p", "p_adj",
        "adjust", "r_rb", "ci_low", "ci_high", "stars", "reason", "p_method",
        "test", "k", "chi2", "kendall_w", "violation",
        "mean_a", "mean_b", "mean_diff", "diff_ci_low", "diff_ci_high", "family", "favoured", "ci_level",
    ]  # fmt: skip
    assert table["test"].to_list() == ["friedman", "wilcoxon", "wilcoxon", "wilcoxon"]
    fr = table.row(0, named=True)
    assert (fr["n"], fr["k"], fr["group_a"], fr["group_b"], fr["violation"]) == (10, 3, None, None, None)
    assert fr["chi2"] == pytest.approx(12.8) and fr["kendall_w"] == pytest.approx(0.64)
    assert fr["p"] == pytest.approx(0.0016616, abs=5e-8) and fr["p_adj"] == fr["p"] and fr["stars"] == "**"
    out = table.filter(pl.col("test") == "wilcoxon")
    assert out["k"].is_null().all() and out["chi2"].is_nan().all()
    # every r_rb CI excludes 0 and n = 10 >= n_min = 10: three violations; with the default 15 pairs, none
    assert out["violation"].to_list() == [True, True, True]
    default = compare_groups(df, metric_cols=["m"], group_col="cond", block_col="block", n_resamples=99)
    assert default["violation"].to_list() == [None, False, False, False]
    assert default["reason"].to_list() == ["", "too_few", "too_few", "too_few"]
    assert list(zip(out["group_a"], out["group_b"], strict=True)) == [("c1", "c2"), ("c1", "c3"), ("c2", "c3")]
    np.testing.assert_allclose(out["p"], [0.02734375, 0.001953125, 0.02734375], atol=1e-12)
    np.testing.assert_allclose(out["p_adj"], [0.0546875, 0.005859375, 0.0546875], atol=1e-12)
    np.testing.assert_allclose(out["r_rb"], [-0.781818, -1.0, -0.781818], atol=1e-6)
    assert out["reason"].to_list() == ["", "ci_percentile", ""]
    assert out.row(1, named=True)["ci_low"] == out.row(1, named=True)["ci_high"] == -1.0
    assert out["stars"].to_list() == ["", "**", ""]
    assert out["adjust"].to_list() == ["holm"] * 3


def test_compare_groups_matching_and_options() -> None:
    rng = np.random.default_rng(2)
    n = 25
    base = rng.normal(0, 1, n)
    df = pl.DataFrame(
        {
            "conversation_id": np.tile(np.arange(n), 3),
            "tutor": np.repeat(["A", "B", "C"], n),
            "len": np.r_[base + 1.0, base, base + rng.normal(0, 0.1, n)],
            "other": rng.normal(0, 1, 3 * n),
        }
    )
    out = compare_groups(df, group_col="tutor", block_col="conversation_id", groups=["A", "B"], n_resamples=0)
    assert out["metric"].to_list() == ["len", "other"]
    # k = 2: the two-group table plus test and violation, no Friedman columns
    assert out.columns[-11:-8] == ["p_method", "test", "violation"] and "chi2" not in out.columns
    assert out["test"].to_list() == ["wilcoxon"] * 2
    assert out.row(0, named=True)["r_rb"] == 1.0 and out.row(0, named=True)["n"] == n
    # shuffling rows does not change the matched pairs
    shuffled = compare_groups(
        df.sample(fraction=1.0, shuffle=True, seed=4), group_col="tutor", block_col="conversation_id",
        groups=["A", "B"], n_resamples=0,
    )  # fmt: skip
    assert shuffled.equals(out)
    # an unmatched block is left out
    partial = compare_groups(
        df.filter(~((pl.col("tutor") == "B") & (pl.col("conversation_id") == 0))),
        metric_cols=["len"], group_col="tutor", block_col="conversation_id", groups=["A", "B"], n_resamples=0,
    )  # fmt: skip
    assert partial["n"][0] == n - 1
    fam = compare_groups(df, group_col="tutor", block_col="conversation_id", n_resamples=0, family="metric", adjust="bh")
    assert fam.height == 8 and set(fam["adjust"]) == {"bh"}
    wil = fam.filter(pl.col("test") == "wilcoxon")
    np.testing.assert_allclose(wil["p_adj"][:3], stats.false_discovery_control(wil["p"][:3].to_numpy()))
    fried = fam.filter(pl.col("test") == "friedman")
    # studies.md §2.2: family "metric" adjusts no Friedman row (p_adj = p); "dimension" adjusts them across metrics
    np.testing.assert_allclose(fried["p_adj"], fried["p"])
    dim = compare_groups(df, group_col="tutor", block_col="conversation_id", n_resamples=0, family="dimension", adjust="bh")
    fried = dim.filter(pl.col("test") == "friedman")
    np.testing.assert_allclose(fried["p_adj"], stats.false_discovery_control(fried["p"].to_numpy()))
    with pytest.raises(InputSchemaError, match="more than once"):
        compare_groups(pl.concat([df, df.head(1)]), group_col="tutor", block_col="conversation_id")
    with pytest.raises(ConfigError):
        compare_groups(df, group_col="tutor", block_col="conversation_id", groups=["A", "Z"])
    with pytest.raises(InputSchemaError, match="missing column"):
        compare_groups(df, group_col="tutr", block_col="conversation_id")


def test_sign_test_reference() -> None:
    res = sign_test([1] * 12 + [-1] * 3 + [0] * 4)
    assert res["n_pos"] == 12 and res["n_neg"] == 3
    assert res["p"] == pytest.approx(0.03515625, abs=1e-12)
    assert sign_test([0, 0], [0, 0])["reason"] == "constant"


def test_adjust_pvalues_spec_vector() -> None:
    """statistics.md §1.4 test vector [ref] (whole-matrix family)."""
    p = np.array([[0.0004, 0.03, 0.2], [0.008, 0.04, 0.6], [0.0001, 0.012, 0.049]])
    holm = adjust_pvalues(p.ravel(), "holm").reshape(3, 3)
    np.testing.assert_allclose(holm, [[0.0032, 0.15, 0.4], [0.056, 0.16, 0.6], [0.0009, 0.072, 0.16]], atol=1e-12)
    bh = adjust_pvalues(p.ravel(), "bh").reshape(3, 3)
    np.testing.assert_allclose(bh, [[0.0018, 0.054, 0.225], [0.024, 0.06, 0.6], [0.0009, 0.027, 0.063]], atol=1e-12)
    assert [[stars(v) for v in row] for row in bh] == [["**", "", ""], ["*", "", ""], ["***", "*", ""]]
    with_nan = adjust_pvalues(np.array([0.01, np.nan, 0.04]), "holm")
    assert np.isnan(with_nan[1]) and with_nan[0] == pytest.approx(0.02) and with_nan[2] == pytest.approx(0.04)
    np.testing.assert_array_equal(adjust_pvalues([0.2, 0.01], "none"), [0.2, 0.01])
    np.testing.assert_allclose(adjust_pvalues([0.01, np.nan, 0.4], "bonferroni"), [0.02, np.nan, 0.8])
    with pytest.raises(ConfigError):
        adjust_pvalues([0.1], "sidak")  # type: ignore[arg-type]


def test_small_tied_data_exact_enumeration_matches_scipy_auto() -> None:
    d = np.array([1.0, 1.0, 2.0, -1.0, 3.0, 3.0, 2.0, 4.0, -2.0, 1.0])
    res = paired_wilcoxon(d, np.zeros(10), n_min=10, n_resamples=0)
    assert res["p_method"] == "permutation_exact"
    assert res["p"] == pytest.approx(stats.wilcoxon(d).pvalue, abs=1e-12)


def test_dimension_runs_the_analysis_per_value() -> None:
    rng = np.random.default_rng(8)
    n = 20
    rows = []
    for dim_value, shift in (("female", 1.0), ("male", 0.0)):
        base = rng.normal(0, 1, n)
        for g, delta in (("A", shift), ("B", 0.0), ("C", 0.0)):
            for b in range(n):
                rows.append((f"{dim_value}-{b}", g, dim_value, base[b] + delta + rng.normal(0, 0.05)))
    df = pl.DataFrame(rows, schema=["block", "tutor", "gender", "m"], orient="row")
    out = compare_groups(df, group_col="tutor", block_col="block", dimensions=["gender"], n_resamples=199)
    assert out.columns[:2] == ["dimension", "dimension_value"]
    assert out["dimension_value"].to_list() == ["female"] * 4 + ["male"] * 4
    female = compare_groups(df.filter(pl.col("gender") == "female"), metric_cols=["m"], group_col="tutor", block_col="block", n_resamples=199)
    assert out.head(4).drop("dimension", "dimension_value").equals(female)
    assert female.filter(pl.col("group_a") == "A")["violation"].to_list() == [True, True]
    with pytest.raises(InputSchemaError, match="missing column"):
        compare_groups(df, group_col="tutor", block_col="block", dimensions=["age"])
