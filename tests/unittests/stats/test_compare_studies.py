"""compare per analysis subset (studies.md §2): groups per subset, strata, families, mean differences, directions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from tutormetrics.errors import ConfigError
from tutormetrics.stats.paired import compare_groups, k_of_m_lines, mean_diff_ci

D_REF = np.array([0.8, -0.3, 1.2, 2.1, -0.9, 0.4, 1.7, -1.4, 2.6, 0.6, 1.1, -0.2, 3.0, 0.5, 1.9])
FRIEDMAN = np.array(
    [
        [3.12, 3.95, 4.41], [2.53, 2.86, 3.80], [4.04, 3.61, 4.93], [3.31, 4.17, 4.02], [2.84, 3.52, 3.97],
        [3.66, 3.43, 4.26], [2.21, 3.09, 3.15], [3.90, 4.68, 4.85], [3.07, 3.28, 4.19], [2.75, 3.81, 3.54],
    ]
)  # fmt: skip


def toy() -> pl.DataFrame:
    """§2.6: gender on q01–q15 (female = d, male = 0), SES on q01–q10 (low/mid/high = the Friedman data)."""
    rows = []
    for i, d in enumerate(D_REF):
        q = f"q{i + 1:02d}"
        rows += [(q, "gender", "female", float(d)), (q, "gender", "male", 0.0)]
    for i, (lo, mid, hi) in enumerate(FRIEDMAN):
        q = f"q{i + 1:02d}"
        rows += [(q, "ses", "low", lo), (q, "ses", "mid", mid), (q, "ses", "high", hi)]
    return pl.DataFrame(rows, schema=["question_id", "dimension", "level", "m"], orient="row")


def run(df: pl.DataFrame, **kw: object) -> pl.DataFrame:
    args = {"group_col": "level", "block_col": "question_id", "dimensions": ["dimension"],
            "groups": ["female", "male", "low", "mid", "high"], "n_min": 10, "n_resamples": 999}  # fmt: skip
    return compare_groups(df, **{**args, **kw})  # type: ignore[arg-type]


def test_groups_are_resolved_per_subset_worked_example() -> None:
    """The regression: before the fix each subset got a 5-level Friedman row with n = 0 and 22 rows in all."""
    out = run(toy())
    assert out.height == 5
    assert out["dimension_value"].to_list() == ["gender", "ses", "ses", "ses", "ses"]
    assert out["test"].to_list() == ["wilcoxon", "friedman", "wilcoxon", "wilcoxon", "wilcoxon"]
    assert list(zip(out["group_a"], out["group_b"], strict=True)) == [("female", "male"), (None, None), ("low", "mid"), ("low", "high"), ("mid", "high")]
    assert out["n"].to_list() == [15, 10, 10, 10, 10]
    fr = out.row(1, named=True)
    assert fr["k"] == 3 and fr["chi2"] == pytest.approx(12.8, abs=1e-9) and fr["kendall_w"] == pytest.approx(0.64, abs=1e-12)
    assert fr["p"] == pytest.approx(stats.friedmanchisquare(*FRIEDMAN.T).pvalue, abs=1e-12)
    assert fr["p_adj"] == fr["p"]
    wil = out.filter(pl.col("test") == "wilcoxon")
    np.testing.assert_allclose(wil["r_rb"], [2 / 3, -0.7818181818, -1.0, -0.7818181818], atol=1e-9)
    np.testing.assert_allclose(wil["p"], [0.02154541015625, 0.02734375, 0.001953125, 0.02734375], atol=1e-12)
    m = FRIEDMAN.mean(0)
    np.testing.assert_allclose(wil["mean_a"], [D_REF.mean(), m[0], m[0], m[1]], atol=1e-12)
    np.testing.assert_allclose(wil["mean_b"], [0.0, m[1], m[2], m[2]], atol=1e-12)
    np.testing.assert_allclose(wil["mean_diff"], [0.8733333333, -0.497, -0.969, -0.472], atol=1e-9)
    np.testing.assert_allclose(wil["p_adj"], [0.02154541015625, 0.0546875, 0.005859375, 0.0546875], atol=1e-9)
    assert set(out["family"]) == {"dimension"}


@pytest.mark.parametrize(
    ("family", "adjust", "expected"),
    [
        ("metric", "holm", [0.0215454, 0.0546875, 0.005859375, 0.0546875]),
        ("dimension", "bonferroni", [0.0215454, 0.08203125, 0.005859375, 0.08203125]),
        ("metric", "bh", [0.0215454, 0.02734375, 0.005859375, 0.02734375]),
        ("all", "holm", [0.0646362, 0.0646362, 0.0078125, 0.0646362]),
        ("all", "bonferroni", [0.0861816, 0.109375, 0.0078125, 0.109375]),
        ("all", "bh", [0.02734375, 0.02734375, 0.0078125, 0.02734375]),
    ],
)
def test_families_worked_example(family: str, adjust: str, expected: list[float]) -> None:
    out = run(toy(), family=family, adjust=adjust, n_resamples=0)
    wil = out.filter(pl.col("test") == "wilcoxon")
    np.testing.assert_allclose(wil["p_adj"], expected, atol=5e-8)
    method = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}[adjust]
    if family == "all":
        ref = multipletests(wil["p"].to_numpy(), method=method)[1]
    else:
        ref = np.r_[wil["p"][0], multipletests(wil["p"][1:].to_numpy(), method=method)[1]]
    np.testing.assert_allclose(wil["p_adj"], ref, atol=1e-12)
    assert out.filter(pl.col("test") == "friedman")["p_adj"][0] == pytest.approx(0.0016616, abs=5e-8)
    assert set(out["family"]) == {family}


def test_mean_diff_bootstrap_is_scipy_percentile() -> None:
    x, y = FRIEDMAN[:, 0], FRIEDMAN[:, 2]
    res = mean_diff_ci(x, y, n_resamples=999, seed=3)
    ref = stats.bootstrap((x - y,), np.mean, method="percentile", n_resamples=999, rng=np.random.default_rng(3))
    assert res["diff_ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert res["diff_ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert np.isnan(mean_diff_ci(x[:1], y[:1])["diff_ci_low"])
    assert mean_diff_ci(x[:1], y[:1])["mean_diff"] == pytest.approx(x[0] - y[0])


def test_strata_are_crossed_and_k_of_m() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for model in ("M1", "M2"):
        for domain in ("math", "physics"):
            for q in range(20):
                base = rng.normal()
                rows += [(model, domain, f"q{q}", "T1", base), (model, domain, f"q{q}", "T2", base + 0.5 + rng.normal(0, 0.1))]
    df = pl.DataFrame(rows, schema=["model", "domain", "item", "trial", "total"], orient="row")
    df = pl.concat([df, pl.DataFrame([(None, "math", "q0", "T1", 1.0)], schema=df.schema, orient="row")])
    notes: list[str] = []
    out = compare_groups(df, group_col="trial", block_col="item", strata=["model", "domain"], n_resamples=0, log=notes.append)
    assert out.columns[:3] == ["model", "domain", "metric"]
    assert list(zip(out["model"], out["domain"], strict=True)) == [("M1", "math"), ("M1", "physics"), ("M2", "math"), ("M2", "physics")]
    assert notes == ["compare: 1 row(s) with a missing --strata value dropped"]
    one = compare_groups(df.filter((pl.col("model") == "M2") & (pl.col("domain") == "math")), metric_cols=["total"],
                         group_col="trial", block_col="item", n_resamples=0)  # fmt: skip
    assert out.row(2, named=True)["p"] == one["p"][0] and out.row(2, named=True)["mean_diff"] == one["mean_diff"][0]
    assert (out["mean_diff"] < 0).all()
    assert k_of_m_lines(out) == ["compare: total: T2 > T1 in 4 of 4 subsets, T1 > T2 in 0 (0 violations)"]


def test_directions_and_skipped_subsets() -> None:
    df = toy()
    df = pl.concat([df, pl.DataFrame([("q01", "age", "old", 1.0)], schema=df.schema, orient="row")])
    notes: list[str] = []
    out = run(df, groups=None, directions={"m": "lower"}, n_resamples=0, log=notes.append)
    assert notes == ["compare: 1 subset(s) with fewer than two groups skipped: dimension_value=age"]
    wil = out.filter(pl.col("test") == "wilcoxon")
    # sorted groups per subset: female/male; high/low/mid
    assert list(zip(wil["group_a"], wil["group_b"], strict=True)) == [("female", "male"), ("high", "low"), ("high", "mid"), ("low", "mid")]
    # lower is desirable: r_rb > 0 (group_a higher) favours group_b
    assert wil["favoured"].to_list() == ["male", "low", "mid", "low"]
    assert run(toy(), directions={"m": "neutral"})["favoured"].is_null().all()
    with pytest.raises(ConfigError, match="direction"):
        run(toy(), directions={"m": "up"})
    with pytest.raises(ConfigError, match="not found"):
        run(toy(), groups=["female", "nobody"])
    with pytest.raises(ConfigError, match="family"):
        run(toy(), family="pairs")


def summary_example() -> pl.DataFrame:
    """§3's worked example: one model M, r_rb per Wilcoxon row, mean_diff with r_rb's sign, three violations."""
    spec = [
        ("math", "gender", "step_scaffolded", [0.144], [True]),
        ("math", "gender", "corrective_tone", [-0.05], [False]),
        ("math", "ses", "step_scaffolded", [0.08, 0.21, 0.12], [False, True, False]),
        ("math", "ses", "corrective_tone", [0.02, -0.04, -0.06], [False] * 3),
        ("physics", "gender", "step_scaffolded", [-0.03], [False]),
        ("physics", "gender", "corrective_tone", [0.294], [True]),
        ("physics", "ses", "step_scaffolded", [0.05, 0.07, 0.01], [False] * 3),
        ("physics", "ses", "corrective_tone", [0.11, 0.16, 0.06], [False] * 3),
    ]
    rows = [
        ("M", dom, "dimension", dv, metric, "wilcoxon", r, v, r)
        for dom, dv, metric, rs, vs in spec
        for r, v in zip(rs, vs, strict=True)
    ]
    return pl.DataFrame(rows, schema=["model", "domain", "dimension", "dimension_value", "metric", "test", "r_rb", "violation", "mean_diff"], orient="row")


def test_summary_worked_example() -> None:
    from tutormetrics.stats.studies import bias_summary

    dirs = {"step_scaffolded": "higher", "corrective_tone": "neutral"}
    t = summary_example()
    s = bias_summary(t, by=["model"], cells=["model", "domain", "dimension_value"], strata=["model", "domain"], directions=dirs)
    r = s.row(0, named=True)
    assert (r["n_cells"], r["n_ge_threshold"], r["n_contrasts"], r["n_violations"], r["n_a_higher"], r["n_b_higher"]) == (4, 3, 16, 3, 12, 4)
    assert r["mean_abs_r"] == pytest.approx(0.12725, abs=1e-12) and r["max_abs_r"] == pytest.approx(0.162, abs=1e-12)
    assert r["max_cell"] == "domain=physics;dimension_value=gender" and r["share_ge_threshold"] == 0.75
    assert r["direction"] == "mixed" and r["reason"] == "" and r["threshold"] == 0.10
    mean = bias_summary(t, by=["model"], cells=["model", "domain", "dimension_value"], strata=["model", "domain"], reduce="mean").row(0, named=True)
    assert mean["mean_abs_r"] == pytest.approx(0.106, abs=1e-12) and mean["n_ge_threshold"] == 1 and mean["share_ge_threshold"] == 0.25
    by_metric = bias_summary(t, by=["model", "metric"], cells=["model", "domain", "metric"], strata=["model", "domain"], directions=dirs)
    assert by_metric["metric"].to_list() == ["corrective_tone", "step_scaffolded"]
    np.testing.assert_allclose(by_metric["mean_abs_r"], [0.141, 0.1135], atol=1e-12)
    assert by_metric["max_cell"].to_list() == ["domain=physics", "domain=math"]
    assert by_metric["n_ge_threshold"].to_list()[0] == 1 and by_metric["direction"].to_list() == ["neutral", "higher"]
    # an undefined cell is not counted
    nan = t.with_columns(pl.when(pl.col("domain") == "physics").then(float("nan")).otherwise(pl.col("r_rb")).alias("r_rb"))
    u = bias_summary(nan, by=["model"], cells=["model", "domain", "dimension_value"], strata=["model", "domain"]).row(0, named=True)
    assert u["n_cells"] == 2 and u["reason"] == "cells_undefined_2"
    with pytest.raises(ConfigError, match="must contain"):
        bias_summary(t, by=["model"], cells=["domain"], strata=["model", "domain"])
    with pytest.raises(ConfigError, match="unknown key"):
        bias_summary(t, by=["tutor"], strata=["model", "domain"])


def test_bonferroni_violation_interval() -> None:
    """The violation mark can use the family's Bonferroni interval (level 1 − 0.05/m) instead of the 95% one."""
    plain = run(toy(), family="all", n_resamples=999)
    adj = run(toy(), family="all", n_resamples=999, violation_ci="bonferroni")
    wil_p, wil_a = plain.filter(pl.col("test") == "wilcoxon"), adj.filter(pl.col("test") == "wilcoxon")
    assert set(wil_p["ci_level"]) == {0.95} and set(wil_a["ci_level"]) == {1 - 0.05 / 4}
    assert (wil_a["ci_high"] - wil_a["ci_low"] >= wil_p["ci_high"] - wil_p["ci_low"] - 1e-12).all()
    from tutormetrics.stats.paired import _bootstrap_ci

    d = np.round(FRIEDMAN[:, 0] - FRIEDMAN[:, 1], 10)
    lo, hi, _ = _bootstrap_ci(d, 999, 1 - 0.05 / 4, 0)
    assert (wil_a["ci_low"][1], wil_a["ci_high"][1]) == (lo, hi)
    assert wil_a["violation"].to_list() == [bool(a > 0 or b < 0) for a, b in zip(wil_a["ci_low"], wil_a["ci_high"], strict=True)]
    assert wil_a["p"].to_list() == wil_p["p"].to_list()


def test_effects_figure_names_interval_direction_and_empty_cells(tmp_path) -> None:
    """The small-multiple compare figure (docs/guide/paper.md#figures): its note names the direction, the bold rule
    and the interval behind the outline; undefined cells are grey (masked)."""
    from tutormetrics.report.effects import plot_effect_matrix

    t = run(toy(), n_min=12, n_resamples=199)
    fig = plot_effect_matrix(t, tmp_path / "f.png")
    note = fig._suptitle.get_text().replace("\n", " ")
    assert "unadjusted 95% CI" in note and "first group" in note and "|r| ≥ 0.1" in note
    masked = [int(np.ma.getmaskarray(ax.images[0].get_array()).sum()) for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert sum(masked) == 3  # the three too_few cells (n = 10 < 12)
    adj = plot_effect_matrix(run(toy(), family="all", n_resamples=199, violation_ci="bonferroni"))
    assert "Bonferroni-adjusted CI" in adj._suptitle.get_text().replace("\n", " ")
    assert (tmp_path / "f.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"group_col": "level", "block_col": "level"}, "--group-col and --block-col both name the column 'level'"),
        ({"group_col": "level", "block_col": "question_id", "metric_cols": ["m", "question_id"]}, "--block-col and --metrics-cols"),
        ({"group_col": "level", "block_col": "question_id", "strata": ["level"]}, "--group-col and --strata"),
        ({"group_col": "level", "block_col": "question_id", "strata": ["dimension"], "dimensions": ["dimension"]}, "--strata and --dimension"),
    ],
)
def test_compare_option_columns_must_differ(kw: dict[str, object], named: str) -> None:
    """Issue 35: --group-col grp --block-col grp was a polars DuplicateError; every pair of the pairing, subset and
    metric options naming one column is exit 2 naming both options, in the Python API and before reading (check)."""
    from tutormetrics.stats.compare_options import CompareOptions

    with pytest.raises(ConfigError, match=named) as exc:
        compare_groups(toy(), n_resamples=0, **kw)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value).split("\n  hint:")[0] and "Error" not in str(exc.value)
    names = {"group_col": "group_col", "block_col": "block_col", "metric_cols": "metrics_cols", "strata": "strata", "dimensions": "dimensions"}
    with pytest.raises(ConfigError, match=named):
        CompareOptions(**{names[k]: v for k, v in kw.items()}).check(summary=False)  # type: ignore[arg-type]
