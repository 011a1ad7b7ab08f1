"""Tests for the Spearman matrix (statistics.md §1): parity with scipy, multiplicity, CIs, reasons."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.stats.correlation import fisher_ci
from tutormetrics.stats.multiplicity import adjust_pvalues, significance_stars
from tutormetrics.validity.correlate import (
    DIAGNOSTIC_COLUMNS,
    RESULT_COLUMNS,
    prevalence_ceiling,
    rho_matrix,
    spearman_matrix,
    summarize_correlations,
)

# statistics.md §1.4 test vector
P = np.array([[0.0004, 0.03, 0.2], [0.008, 0.04, 0.6], [0.0001, 0.012, 0.049]])
BH_WHOLE = np.array([[0.0018, 0.054, 0.225], [0.024, 0.06, 0.6], [0.0009, 0.027, 0.063]])
BH_PER_COLUMN = np.array([[0.0006, 0.04, 0.3], [0.008, 0.04, 0.6], [0.0003, 0.036, 0.147]])
HOLM = np.array([[0.0032, 0.15, 0.4], [0.056, 0.16, 0.6], [0.0009, 0.072, 0.16]])
STARS = [["**", "", ""], ["*", "", ""], ["***", "*", ""]]

# statistics.md §1.5 statpsych ci.spear reference
SP_Y = [21, 4, 9, 12, 35, 18, 10, 22, 24, 1, 6, 8, 13, 16, 19]
SP_X = [67, 28, 30, 28, 52, 40, 25, 37, 44, 10, 14, 20, 28, 40, 51]


def _data(n: int = 150, seed: int = 7) -> pl.DataFrame:
    """Metrics with ties and NaNs; targets binary, 0/0.5/1 and continuous (with NaNs)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    m1 = z + rng.normal(size=n)
    m2 = np.round(2 * z + rng.normal(size=n))  # many ties
    m2[rng.choice(n, 9, replace=False)] = np.nan
    m3 = rng.normal(size=n)
    m3[rng.choice(n, 4, replace=False)] = np.nan
    t_bin = (z + rng.normal(size=n) > 0.8).astype(float)
    t_tri = np.digitize(z + rng.normal(size=n), [-0.5, 0.5]) / 2.0
    t_cont = z + 2 * rng.normal(size=n)
    t_cont[rng.choice(n, 6, replace=False)] = np.nan
    return pl.DataFrame({"m1": m1, "m2": m2, "m3": m3, "t_bin": t_bin, "t_tri": t_tri, "t_cont": t_cont})


METRICS = ["m1", "m2", "m3"]
TARGETS = ["t_bin", "t_tri", "t_cont"]


# ------------------------------------------------------------------ multiplicity (§1.4)


def test_bh_whole_matrix_reproduces_spec() -> None:
    adj = adjust_pvalues(P.ravel(), "bh").reshape(3, 3)
    np.testing.assert_allclose(adj, BH_WHOLE, rtol=0, atol=1e-12)


def test_holm_reproduces_spec() -> None:
    adj = adjust_pvalues(P.ravel(), "holm").reshape(3, 3)
    np.testing.assert_allclose(adj, HOLM, rtol=0, atol=1e-12)


def test_stars_on_whole_matrix_bh_reproduce_spec() -> None:
    adj = adjust_pvalues(P.ravel(), "bh").reshape(3, 3)
    assert [[significance_stars(v) for v in row] for row in adj] == STARS


def test_per_column_bh_is_the_axis_trap() -> None:
    per_col = np.column_stack([adjust_pvalues(P[:, j], "bh") for j in range(3)])
    np.testing.assert_allclose(per_col, BH_PER_COLUMN, atol=1e-12)
    # scipy's default axis=0 makes the same (wrong) per-column family
    np.testing.assert_allclose(stats.false_discovery_control(P), BH_PER_COLUMN, atol=1e-12)
    assert not np.allclose(per_col, adjust_pvalues(P.ravel(), "bh").reshape(3, 3))


@pytest.mark.parametrize("method", ["bh", "by"])
def test_bh_by_match_scipy_axis_none(method: str) -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=(6, 5)) ** 3
    expected = stats.false_discovery_control(p, axis=None, method=method)
    np.testing.assert_allclose(adjust_pvalues(p.ravel(), method), expected, rtol=1e-12)


def test_adjust_ignores_nan_and_none_is_identity() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03])
    adj = adjust_pvalues(p, "bh")
    assert np.isnan(adj[1])
    np.testing.assert_allclose(adj[[0, 2, 3]], adjust_pvalues(p[[0, 2, 3]], "bh"))
    np.testing.assert_array_equal(adjust_pvalues(p, "none"), p)
    assert np.all(np.isnan(adjust_pvalues([np.nan, np.nan], "holm")))


def test_adjust_rejects_bad_input() -> None:
    with pytest.raises(ConfigError):
        adjust_pvalues([0.1], "sidak")  # bonferroni is valid since studies.md §2.2
    with pytest.raises(ConfigError):
        adjust_pvalues(P, "bh")  # 2-D must be raveled explicitly
    with pytest.raises(ConfigError):
        adjust_pvalues([1.2], "bh")


def test_matrix_adjusts_all_defined_cells_together() -> None:
    table = spearman_matrix(_data(), METRICS, TARGETS, ci="none", permutation="never")
    p = table["p"].to_numpy()
    np.testing.assert_allclose(table["p_adj"].to_numpy(), adjust_pvalues(p, "bh"), rtol=1e-12)
    per_target = np.concatenate(
        [adjust_pvalues(table.filter(pl.col("target") == t)["p"].to_numpy(), "bh") for t in TARGETS]
    )
    whole = np.concatenate([table.filter(pl.col("target") == t)["p_adj"].to_numpy() for t in TARGETS])
    assert not np.allclose(per_target, whole)
    holm = spearman_matrix(_data(), METRICS, TARGETS, ci="none", permutation="never", adjust="holm")
    np.testing.assert_allclose(holm["p_adj"].to_numpy(), adjust_pvalues(p, "holm"), rtol=1e-12)
    assert set(holm["adjust"]) == {"holm"}


# ------------------------------------------------------------------ rho and p parity


def test_rho_and_p_match_spearmanr_with_nans_and_ties() -> None:
    df = _data()
    table = spearman_matrix(df, METRICS, TARGETS, ci="none", permutation="never")
    assert table.columns == [*RESULT_COLUMNS, *DIAGNOSTIC_COLUMNS]
    assert table.select("metric", "target").rows() == [(m, t) for m in METRICS for t in TARGETS]
    for row in table.iter_rows(named=True):
        x, y = df[row["metric"]].to_numpy(), df[row["target"]].to_numpy()
        mask = np.isfinite(x) & np.isfinite(y)
        ref = stats.spearmanr(x[mask], y[mask])
        assert row["n"] == mask.sum()
        assert abs(row["rho"] - ref.statistic) < 1e-12
        assert abs(row["p"] - ref.pvalue) < 1e-12
        assert row["p_method"] == "asymptotic" and row["reason"] == ""


def test_binary_target_matches_pearson_on_ranks() -> None:
    df = _data()
    table = spearman_matrix(df, ["m1"], ["t_bin"], ci="none", permutation="never")
    rx = stats.rankdata(df["m1"].to_numpy())
    ry = stats.rankdata(df["t_bin"].to_numpy())
    assert abs(table["rho"][0] - stats.pearsonr(rx, ry).statistic) < 1e-12


def test_permutation_p_for_small_n() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=30)
    df = pl.DataFrame({"x": x, "y": x + 1.5 * rng.normal(size=30)})
    auto = spearman_matrix(df, ["x"], ["y"], ci="none", n_permutations=1999)
    never = spearman_matrix(df, ["x"], ["y"], ci="none", permutation="never")
    assert auto["p_method"][0] == "permutation"
    assert never["p_method"][0] == "asymptotic"
    assert auto["p"][0] >= 1 / 2000
    assert abs(auto["p"][0] - never["p"][0]) < 0.02
    # reproducible, and identical to scipy's permutation_test with the spec's statistic
    again = spearman_matrix(df, ["x"], ["y"], ci="none", n_permutations=1999)
    assert auto["p"][0] == again["p"][0]
    big = pl.DataFrame({"x": np.arange(60.0), "y": np.arange(60.0) % 7})
    assert spearman_matrix(big, ["x"], ["y"], ci="none")["p_method"][0] == "asymptotic"
    assert spearman_matrix(big, ["x"], ["y"], ci="none", permutation="always", n_permutations=99)["p_method"][0] == (
        "permutation"
    )


# ------------------------------------------------------------------ reasons (§1.6)


def test_reason_codes_constant_and_too_few() -> None:
    rng = np.random.default_rng(5)
    n = 40
    few = np.full(n, np.nan)
    few[:5] = rng.normal(size=5)
    few_const = np.full(n, np.nan)
    few_const[:4] = 1.0
    df = pl.DataFrame(
        {
            "ok": rng.normal(size=n),
            "const": np.ones(n),
            "few": few,
            "few_const": few_const,
            "y": rng.normal(size=n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConstantInputWarning may escape
        table = spearman_matrix(df, ["ok", "const", "few", "few_const"], ["y"], ci="bca", n_resamples=199)
    reasons = dict(zip(table["metric"], table["reason"], strict=True))
    assert reasons == {"ok": "", "const": "constant", "few": "too_few", "few_const": "too_few;constant"}
    bad = table.filter(pl.col("metric") != "ok")
    for col in ("rho", "ci_low", "ci_high", "p", "p_adj"):
        assert bad[col].is_nan().all(), col
    assert (bad["stars"] == "").all()
    assert table.filter(pl.col("metric") == "few")["n"][0] == 5
    ok = table.filter(pl.col("metric") == "ok")
    assert ok["p_adj"][0] == pytest.approx(ok["p"][0])  # a family of one defined cell


def test_bca_fallback_to_percentile_when_degenerate() -> None:
    x = np.arange(20.0)
    df = pl.DataFrame({"x": x, "y": x**2})  # rho = 1 in every resample: BCa acceleration is 0/0
    for backend in ("vectorized", "scipy"):
        row = spearman_matrix(df, ["x"], ["y"], n_resamples=199, n_permutations=199, ci_backend=backend).row(0, named=True)
        assert row["rho"] == pytest.approx(1.0)
        assert row["reason"] == "ci_percentile"
        assert row["ci_method"] == "percentile"
        assert row["ci_low"] == pytest.approx(1.0) and row["ci_high"] == pytest.approx(1.0)


# ------------------------------------------------------------------ confidence intervals (§1.5)


def test_fisher_ci_reproduces_statpsych() -> None:
    low, high, se = fisher_ci(stats.spearmanr(SP_X, SP_Y).statistic, 15)
    assert round(low, 7) == 0.5840951
    assert round(high, 7) == 0.9638297
    assert round(se, 7) == 0.0824133
    df = pl.DataFrame({"x": SP_X, "y": SP_Y})
    row = spearman_matrix(df, ["x"], ["y"], ci="fisher", n_permutations=999).row(0, named=True)
    assert round(row["rho"], 7) == 0.8699639
    assert round(row["ci_low"], 7) == 0.5840951
    assert round(row["ci_high"], 7) == 0.9638297
    assert row["ci_method"] == "fisher" and row["p_method"] == "permutation"
    assert np.isnan(fisher_ci(0.5, 3)[0])


def test_vectorized_bca_equals_scipy_with_the_same_resamples() -> None:
    """Same seed → same resample indices, so the two paths must agree to rounding."""
    df = _data(n=120)
    fast = spearman_matrix(df, METRICS, TARGETS, n_resamples=499, permutation="never")
    ref = spearman_matrix(df, METRICS, TARGETS, n_resamples=499, permutation="never", ci_backend="scipy")
    np.testing.assert_allclose(fast["ci_low"].to_numpy(), ref["ci_low"].to_numpy(), atol=1e-10)
    np.testing.assert_allclose(fast["ci_high"].to_numpy(), ref["ci_high"].to_numpy(), atol=1e-10)
    assert (fast["ci_method"] == "bca").all()
    pct = spearman_matrix(df, ["m1"], TARGETS, ci="percentile", n_resamples=299, permutation="never")
    pct_ref = spearman_matrix(
        df, ["m1"], TARGETS, ci="percentile", n_resamples=299, permutation="never", ci_backend="scipy"
    )
    np.testing.assert_allclose(pct["ci_low"].to_numpy(), pct_ref["ci_low"].to_numpy(), atol=1e-10)


@pytest.mark.parametrize(("metric", "target"), [("m1", "t_tri"), ("m2", "t_cont")])
def test_vectorized_bca_close_to_independent_scipy_bootstrap(metric: str, target: str) -> None:
    """Independent streams: endpoints agree within Monte Carlo error."""
    df = _data(n=150)
    ours = spearman_matrix(df, [metric], [target], n_resamples=3999, permutation="never", seed=1).row(0, named=True)
    x, y = df[metric].to_numpy(), df[target].to_numpy()
    mask = np.isfinite(x) & np.isfinite(y)

    def stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return stats.pearsonr(stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis), axis=axis).statistic

    ref = stats.bootstrap(
        (x[mask], y[mask]), stat, paired=True, vectorized=True, method="BCa", n_resamples=3999,
        rng=np.random.default_rng(12345),
    ).confidence_interval
    assert abs(ours["ci_low"] - ref.low) < 0.03
    assert abs(ours["ci_high"] - ref.high) < 0.03


def test_bootstrap_cis_contain_rho_and_are_seeded() -> None:
    df = _data()
    a = spearman_matrix(df, METRICS, TARGETS, n_resamples=499, permutation="never", seed=3)
    b = spearman_matrix(df, METRICS, TARGETS, n_resamples=499, permutation="never", seed=3)
    c = spearman_matrix(df, METRICS, TARGETS, n_resamples=499, permutation="never", seed=4)
    assert a.equals(b)
    assert not np.allclose(a["ci_low"].to_numpy(), c["ci_low"].to_numpy())
    assert ((a["ci_low"] <= a["rho"]) & (a["rho"] <= a["ci_high"])).all()
    assert (a["ci_high"] - a["ci_low"] > 0).all()


def test_ci_none_and_confidence_level() -> None:
    df = _data()
    none = spearman_matrix(df, ["m1"], ["t_tri"], ci="none", permutation="never")
    assert np.isnan(none["ci_low"][0]) and none["ci_method"][0] == "none"
    wide = spearman_matrix(df, ["m1"], ["t_tri"], ci="fisher", confidence_level=0.99, permutation="never")
    narrow = spearman_matrix(df, ["m1"], ["t_tri"], ci="fisher", confidence_level=0.90, permutation="never")
    assert wide["ci_low"][0] < narrow["ci_low"][0] < narrow["ci_high"][0] < wide["ci_high"][0]


# ------------------------------------------------------------------ stars, options, output


def test_stars_on_p_versus_p_adj() -> None:
    df = _data()
    on_adj = spearman_matrix(df, METRICS, TARGETS, ci="none", permutation="never")
    on_p = spearman_matrix(df, METRICS, TARGETS, ci="none", permutation="never", stars_on="p")
    assert on_adj["stars"].to_list() == [significance_stars(v) for v in on_adj["p_adj"]]
    assert on_p["stars"].to_list() == [significance_stars(v) for v in on_p["p"]]


def test_option_and_schema_errors() -> None:
    df = _data()
    with pytest.raises(ConfigError):
        spearman_matrix(df, METRICS, TARGETS, adjust="fdr")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        spearman_matrix(df, METRICS, TARGETS, ci="bootstrap")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        spearman_matrix(df, METRICS, TARGETS, n_min=2)
    with pytest.raises(ConfigError):
        spearman_matrix(df, [], TARGETS)
    with pytest.raises(InputSchemaError, match="m9"):
        spearman_matrix(df, ["m9"], TARGETS)
    with pytest.raises(InputSchemaError, match="not numeric"):
        spearman_matrix(df.with_columns(pl.lit("a").alias("txt")), ["txt"], TARGETS)


def test_rho_matrix_pivot_keeps_order() -> None:
    table = spearman_matrix(_data(), ["m3", "m1"], ["t_tri", "t_bin"], ci="none", permutation="never")
    wide = rho_matrix(table)
    assert wide.columns == ["metric", "t_tri", "t_bin"]
    assert wide["metric"].to_list() == ["m3", "m1"]
    assert wide["t_bin"][1] == table.filter((pl.col("metric") == "m1") & (pl.col("target") == "t_bin"))["rho"][0]
    assert rho_matrix(table, value="stars").schema["t_tri"] == pl.String


def test_summary_lists_strongest_cells() -> None:
    table = spearman_matrix(_data(), METRICS, TARGETS, ci="fisher", permutation="never")
    text = summarize_correlations(table, top=3)
    assert text.startswith("9 of 9 cells defined")
    assert len(text.splitlines()) == 4


def test_prevalence_ceiling_reference_values() -> None:
    assert prevalence_ceiling([1] * 124 + [0] * 125) == pytest.approx(0.866, abs=5e-4)
    assert prevalence_ceiling([1] * 45 + [0] * 204) == pytest.approx(0.666, abs=5e-4)
    assert prevalence_ceiling([1] * 12 + [0] * 237) == pytest.approx(0.371, abs=5e-4)
    assert prevalence_ceiling([0, 0.5, 1] * 1000) == pytest.approx(0.943, abs=5e-4)
    assert prevalence_ceiling([1] * 50 + [0] * 950) == pytest.approx(0.378, abs=1e-3)  # sqrt(.1425) = .3775
    p = 0.18
    assert prevalence_ceiling(np.r_[np.ones(180), np.zeros(820), np.nan]) == pytest.approx(np.sqrt(3 * p * (1 - p)))
    assert np.isnan(prevalence_ceiling([]))


# ------------------------------------------------------------------ real data


@pytest.mark.mrbench
def test_mrbench_response_length_vs_criteria(mrbench_dir: Path) -> None:
    from tutormetrics.psychometrics.ratings_input import read_ratings

    ex = pl.read_csv(mrbench_dir / "exchanges.csv")
    metrics = pl.DataFrame({"exchange_id": ex["exchange_id"], "resp_chars": [float(len(r)) for r in ex["response"]]})
    targets = read_ratings(mrbench_dir / "ratings.csv").targets("mean")
    criteria = [c for c in targets.columns if c != "exchange_id"]
    assert len(criteria) == 8
    data = metrics.join(targets, on="exchange_id", how="left")
    table = spearman_matrix(data, ["resp_chars"], criteria, n_resamples=999)
    assert table.height == 8
    assert (table["n"] == 1655).all()
    assert (table["reason"] == "").all() and (table["ci_method"] == "bca").all()
    for row in table.iter_rows(named=True):
        y = data[row["target"]].to_numpy()
        assert row["rho"] == pytest.approx(stats.spearmanr(data["resp_chars"].to_numpy(), y).statistic, abs=1e-12)
        assert abs(row["rho"]) <= prevalence_ceiling(y)
        assert row["ci_low"] <= row["rho"] <= row["ci_high"]
    mi = table.filter(pl.col("target") == "mistake_identification").row(0, named=True)
    assert mi["rho"] == pytest.approx(0.1787, abs=5e-4)
    assert mi["stars"] == "***"


def test_summary_never_prints_p_adj_zero() -> None:
    """Issue 35: CIMA printed ``p_adj = 0`` (a p below the float's range); the line says ``< 1e-300``."""
    t = pl.DataFrame({"metric": ["a", "b"], "target": ["y", "y"], "n": [245, 245], "rho": [0.9, 0.5],
                      "ci_low": [0.8, 0.4], "ci_high": [0.95, 0.6], "p": [0.0, 1e-20], "p_adj": [0.0, 2e-20],
                      "adjust": ["bh", "bh"], "stars": ["***", "***"], "reason": ["", ""]})  # fmt: skip
    lines = summarize_correlations(t).splitlines()
    assert lines[1] == "  a ~ y: ρ = .90 [.80, .95], n = 245, p_adj < 1e-300 ***"
    assert lines[2].endswith("p_adj = 2e-20 ***") and "p_adj = 0 " not in "\n".join(lines)
