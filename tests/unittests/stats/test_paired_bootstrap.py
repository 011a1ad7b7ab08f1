"""The fast r_rb / mean-difference bootstrap and the sorted signed ranks agree with scipy (statistics.md §4)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

import tutormetrics.stats.paired_bootstrap as pb
from tutormetrics.stats.paired import (
    _bootstrap_ci,
    compare_groups,
    mean_diff_ci,
    paired_wilcoxon,
    rank_biserial,
)
from tutormetrics.stats.paired_bootstrap import (
    bootstrap_paired,
    paired_intervals,
    rank_biserial_interval,
)
from tutormetrics.stats.signed_rank import (
    jackknife_rank_biserial,
    signed_ranks,
    wilcoxon_asymptotic_p,
)


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    out = [
        rng.normal(0.3, 1, 40),  # continuous, no ties
        np.round(rng.normal(0.2, 1, 120), 1),  # many ties and some zeros
        rng.integers(-2, 3, 60).astype(float),  # few levels, zeros
        np.r_[np.zeros(10), rng.integers(1, 4, 25).astype(float), -rng.integers(1, 4, 5).astype(float)],
        rng.integers(0, 2, 30).astype(float),  # binary 0/1: BCa degenerates, percentile fallback
        np.abs(rng.normal(size=25)) + 0.1,  # one sign: r_rb = 1 in every resample
        np.r_[np.zeros(19), 1.0],  # one non-zero difference
    ]
    return out


def _scipy(d: np.ndarray, n_resamples: int, level: float, seed: int) -> tuple[float, float, bool]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"n_resamples": n_resamples, "confidence_level": level, "vectorized": True, "axis": -1}
        res = stats.bootstrap((d,), rank_biserial, method="BCa", rng=np.random.default_rng(seed), **kw)
        lo, hi = res.confidence_interval
        if np.isfinite(lo) and np.isfinite(hi):
            return float(lo), float(hi), False
        res = stats.bootstrap((d,), rank_biserial, method="percentile", rng=np.random.default_rng(seed), **kw)
    return float(res.confidence_interval.low), float(res.confidence_interval.high), True


@pytest.mark.parametrize("case", range(7))
def test_rank_biserial_bca_equals_scipy(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _inputs()[case]
    level = (0.95, 0.9, 0.99)[case % 3]
    seed = 100 + case
    expected = _scipy(d, 499, level, seed)
    got = _bootstrap_ci(d, 499, level, seed)
    assert got[2] == expected[2]
    assert got[0] == pytest.approx(expected[0], abs=1e-12) and got[1] == pytest.approx(expected[1], abs=1e-12)
    # small chunks: the draws are the same stream, the weights the same counts
    monkeypatch.setattr(pb, "_WEIGHT_ELEMENTS", 97)
    monkeypatch.setattr(pb, "_DRAW_ELEMENTS", 41)
    again = _bootstrap_ci(d, 499, level, seed)
    assert again == got


def test_bootstrap_distribution_is_scipys() -> None:
    """Every resampled r_rb equals scipy's (exactly: both are whole-number rank sums), for several
    comparisons sharing one stream of draws."""
    rng = np.random.default_rng(4)
    ds = [np.round(rng.normal(m, 1, 80), 1) for m in (0.0, 0.4, -0.8)]
    rb, mb = bootstrap_paired([signed_ranks(d) for d in ds], ds, 80, 300, seed=9)
    for d, r, m in zip(ds, rb, mb, strict=True):
        res = stats.bootstrap((d,), rank_biserial, method="percentile", n_resamples=300, rng=np.random.default_rng(9), vectorized=True, axis=-1)
        np.testing.assert_array_equal(r, res.bootstrap_distribution)
        means = stats.bootstrap((d,), np.mean, method="percentile", n_resamples=300, rng=np.random.default_rng(9), vectorized=True, axis=-1)
        np.testing.assert_allclose(m, means.bootstrap_distribution, rtol=0, atol=1e-13)


def test_mean_diff_interval_equals_scipy_on_ties_and_float_noise() -> None:
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(3, 1, 70), 2)
    y = np.round(x + rng.integers(-2, 3, 70) * 0.1, 2)  # x − y has float noise beyond 10 decimals
    res = mean_diff_ci(x, y, n_resamples=777, confidence_level=0.9, seed=2)
    ref = stats.bootstrap((x - y,), np.mean, method="percentile", n_resamples=777, confidence_level=0.9, rng=np.random.default_rng(2))
    assert res["diff_ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert res["diff_ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_jackknife_and_tests_equal_scipy() -> None:
    rng = np.random.default_rng(6)
    for d in _inputs() + [np.round(rng.normal(0.1, 1, 300), 0), rng.normal(size=75)]:
        sr = signed_ranks(d)
        assert sr.r_rb == float(rank_biserial(d))
        loo = np.array([rank_biserial(np.delete(d, i)) for i in range(d.size)])
        np.testing.assert_array_equal(jackknife_rank_biserial(sr), loo)
        nz = d[d != 0]
        if nz.size > 1:
            assert sr.t_plus == stats.wilcoxon(nz, alternative="greater", method="asymptotic").statistic
            assert wilcoxon_asymptotic_p(sr) == pytest.approx(stats.wilcoxon(nz, method="asymptotic").pvalue, rel=1e-12, abs=1e-15)


def test_large_n_uses_scipys_normal_approximation() -> None:
    rng = np.random.default_rng(7)
    x = np.round(rng.normal(0.05, 1, 400), 1)  # ties: scipy's "auto" is asymptotic above n = 50
    res = paired_wilcoxon(x, np.zeros(400), n_resamples=0)
    nz = x[x != 0]
    assert res["p_method"] == "asymptotic"
    assert res["p"] == pytest.approx(stats.wilcoxon(nz).pvalue, rel=1e-12)
    assert res["t_plus"] == stats.wilcoxon(nz, alternative="greater").statistic
    no_ties = rng.normal(0.1, 1, 60)
    assert paired_wilcoxon(no_ties, np.zeros(60), n_resamples=0)["p"] == pytest.approx(stats.wilcoxon(no_ties).pvalue, rel=1e-12)


def test_compare_rows_equal_one_comparison_at_a_time() -> None:
    """compare batches the bootstrap over every pair and metric with the same n; each row's intervals
    equal the per-pair functions, including a pair with a missing block (another n, another stream)."""
    rng = np.random.default_rng(8)
    blocks, groups = 40, ["a", "b", "c"]
    rows = []
    for b in range(blocks):
        base = rng.normal()
        for k, g in enumerate(groups):
            rows.append((b, g, round(base + 0.3 * k + rng.normal(0, 1), 1), round(rng.normal(), 2)))
    df = pl.DataFrame(rows, schema=["block", "g", "m1", "m2"], orient="row")
    df = df.with_columns(pl.when((pl.col("block") == 3) & (pl.col("g") == "c")).then(None).otherwise(pl.col("m1")).alias("m1"))
    out = compare_groups(df, group_col="g", block_col="block", n_resamples=299, seed=5).filter(pl.col("test") == "wilcoxon")
    for r in out.iter_rows(named=True):
        x = df.filter(pl.col("g") == r["group_a"]).sort("block")[r["metric"]].to_numpy().astype(float)
        y = df.filter(pl.col("g") == r["group_b"]).sort("block")[r["metric"]].to_numpy().astype(float)
        one = paired_wilcoxon(x, y, n_resamples=299, seed=5)
        assert (r["ci_low"], r["ci_high"], r["reason"], r["p"]) == (one["ci_low"], one["ci_high"], one["reason"], one["p"])
        mean = mean_diff_ci(x, y, n_resamples=299, seed=5)
        assert r["diff_ci_low"] == pytest.approx(mean["diff_ci_low"], abs=1e-12)
        assert r["diff_ci_high"] == pytest.approx(mean["diff_ci_high"], abs=1e-12)
    assert sorted(set(out["n"].to_list())) == [39, 40]


def test_paired_intervals_skips_what_is_not_asked() -> None:
    d = np.array([1.0, -2.0, 3.0, 0.5])
    res = paired_intervals([(d, None), (None, d), (None, None), (d[:1], d[:1])], 50, 0.95, seed=0)
    assert res[0][1] is None and res[0][0] is not None and res[1][0] is None and res[1][1] is not None
    assert res[2] == (None, None, None) and res[3] == (None, None, None)
    assert rank_biserial_interval(signed_ranks(d), res[0][2], 0.95) == res[0][0]
    assert np.isnan(_bootstrap_ci(d[:1], 50, 0.95, 0)[0])
