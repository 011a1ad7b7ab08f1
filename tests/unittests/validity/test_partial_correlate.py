"""Length-controlled validity (richness.md §1): the partial Spearman matrix and its table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.stats.multiplicity import adjust_pvalues
from tutormetrics.validity.correlate import (
    RESULT_COLUMNS,
    correlate_with_targets,
    spearman_matrix,
    split_by_control,
    summarize_correlations,
)

Z = [8, 12, 15, 19, 23, 27, 30, 34, 41, 47, 52, 60]
X = [0.91, 0.88, 0.93, 0.80, 0.84, 0.79, 0.83, 0.74, 0.77, 0.70, 0.73, 0.66]
Y = [0, 1, 0, 1, 1, 0, 2, 1, 2, 1, 2, 2]


def _example() -> pl.DataFrame:
    return pl.DataFrame({"exchange_id": [f"e{i}" for i in range(12)], "resp_words": Z, "ttr_like": X, "crit": Y})


def test_matrix_worked_example_and_columns():
    t = spearman_matrix(_example(), ["ttr_like", "resp_words"], ["crit"], control=["resp_words"], ci="fisher")
    assert t.columns == [*RESULT_COLUMNS, "control", "p_method", "ci_method"]
    row = t.row(0, named=True)
    assert row["rho"] == pytest.approx(0.3282452, abs=5e-8)
    assert row["p"] == pytest.approx(0.3243738, abs=5e-8)
    assert row["control"] == "resp_words" and row["p_method"] == "t" and row["n"] == 12
    # Fisher SE with n − 3 − k
    se = np.sqrt((1 + row["rho"] ** 2 / 2) / (12 - 3 - 1))
    assert row["ci_low"] == pytest.approx(np.tanh(np.arctanh(row["rho"]) - 1.959963984540054 * se), abs=1e-12)
    # the control as a metric: its residual is constant
    ctrl = t.row(1, named=True)
    assert ctrl["reason"] == "constant" and np.isnan(ctrl["rho"]) and np.isnan(ctrl["p"]) and ctrl["stars"] == ""


def test_bootstrap_ci_brackets_and_is_seeded():
    df = _example()
    a = spearman_matrix(df, ["ttr_like"], ["crit"], control=["resp_words"], n_resamples=999, seed=3)
    b = spearman_matrix(df, ["ttr_like"], ["crit"], control=["resp_words"], n_resamples=999, seed=3)
    assert a.equals(b)
    row = a.row(0, named=True)
    assert row["ci_method"] in ("bca", "percentile")
    assert -1 <= row["ci_low"] < row["rho"] < row["ci_high"] <= 1


def test_too_few_counts_df_and_complete_rows_need_the_control():
    df = _example().with_columns(pl.when(pl.col("resp_words") > 40).then(None).otherwise(pl.col("resp_words")).alias("resp_words"))
    t = spearman_matrix(df, ["ttr_like"], ["crit"], control=["resp_words"], ci="none", n_min=3)
    assert t["n"][0] == 8
    # n = 4 with two controls: df = 4 − 2 − 2 = 0 → too_few, even with n_min = 3
    tiny = _example().head(4).with_columns(pl.col("resp_words").alias("z2") * pl.Series([1, 3, 2, 4]))
    t2 = spearman_matrix(tiny, ["ttr_like"], ["crit"], control=["resp_words", "z2"], ci="none", n_min=3)
    assert t2["reason"][0] == "too_few" and np.isnan(t2["rho"][0])


def test_bad_controls():
    df = _example()
    with pytest.raises(InputSchemaError, match="missing column 'resp_wrds'"):
        spearman_matrix(df, ["ttr_like"], ["crit"], control=["resp_wrds"])
    with pytest.raises(InputSchemaError, match="constant"):
        spearman_matrix(df.with_columns(pl.lit(5.0).alias("k")), ["ttr_like"], ["crit"], control=["k"])
    with pytest.raises(InputSchemaError, match="no finite values"):
        spearman_matrix(df.with_columns(pl.lit(float("nan")).alias("k")), ["ttr_like"], ["crit"], control=["k"])
    with pytest.raises(ConfigError, match="also targets"):
        spearman_matrix(df, ["ttr_like"], ["crit"], control=["crit"])
    with pytest.raises(InputSchemaError, match="not numeric"):
        spearman_matrix(df.with_columns(pl.lit("a").alias("s")), ["ttr_like"], ["crit"], control=["s"])
    with pytest.raises(ConfigError, match="duplicate"):
        spearman_matrix(df, ["ttr_like"], ["crit"], control=["resp_words", "resp_words"])
    targets = df.select("exchange_id", "crit")
    with pytest.raises(ConfigError, match="also targets"):
        correlate_with_targets(df.drop("crit"), [targets], control=["crit"], ci="none")


def test_raw_then_partial_rows_adjusted_within_each_control():
    rng = np.random.default_rng(5)
    n = 80
    z = rng.integers(5, 80, n).astype(float)
    metrics = pl.DataFrame(
        {
            "exchange_id": [f"e{i}" for i in range(n)],
            "resp_words": z,
            "ttr": 1 - z / 100 + rng.normal(0, 0.05, n),
            "overlap": rng.uniform(size=n),
        }
    )
    targets = pl.DataFrame({"exchange_id": metrics["exchange_id"], "a": np.round(z / 40 + rng.uniform(0, 1, n)), "b": rng.integers(0, 2, n).astype(float)})
    res = correlate_with_targets(metrics, [targets], control=["resp_words"], ci="none", permutation="never")
    t = res.table
    assert t.height == 12 and t["control"].to_list() == [""] * 6 + ["resp_words"] * 6
    parts = split_by_control(t)
    assert list(parts) == ["", "resp_words"]
    for part in parts.values():
        np.testing.assert_allclose(part["p_adj"].to_numpy(), adjust_pvalues(part["p"].to_numpy(), "bh"), equal_nan=True)
    raw = spearman_matrix(res.joined, res.metric_cols, res.target_cols, ci="none", permutation="never")
    np.testing.assert_allclose(parts[""]["rho"].to_numpy(), raw["rho"].to_numpy(), equal_nan=True)
    text = summarize_correlations(t)
    assert "raw ρ:" in text and "partial ρ controlling for resp_words:" in text
    # a control that is not among --metrics-cols is still carried into the join
    only = correlate_with_targets(metrics, [targets], metrics_cols=["ttr"], control=["resp_words"], ci="none")
    assert only.table.filter(pl.col("control") == "resp_words")["rho"].is_not_nan().all()


# ------------------------------------------------------------------ real data


@pytest.mark.mrbench
def test_mrbench_partial_equals_pingouin(mrbench_dir: Path) -> None:
    """Every cell of lexical metrics × the eight criteria, controlling for resp_words, equals pingouin."""
    pg = pytest.importorskip("pingouin")
    from tutormetrics.engine import Scorer
    from tutormetrics.psychometrics.ratings_input import read_ratings

    ex = pl.read_csv(mrbench_dir / "exchanges.csv").sample(n=500, seed=20261130)
    scored = Scorer(["length", "lexical_diversity", "overlap"], progress=False).score(
        ex["exchange_id"].to_list(), ex["prompt"].to_list(), ex["response"].to_list()
    )
    targets = read_ratings(mrbench_dir / "ratings.csv").targets("mean")
    criteria = [c for c in targets.columns if c != "exchange_id"]
    data = scored.join(targets, on="exchange_id", how="left")
    metrics = ["resp_chars", "ttr", "distinct_2", "entropy_1", "rep_2", "jaccard_1", "contain_prompt_in_resp"]
    t = spearman_matrix(data, metrics, criteria, control=["resp_words"], ci="none")
    pdf = data.select(*metrics, *criteria, "resp_words").to_pandas()
    from tutormetrics.stats.ranks import tie_key

    for col in pdf.columns:  # effects.md §2.5: ranks use the 12-digit key; the reference must see the same values
        pdf[col] = tie_key(pdf[col].to_numpy())
    checked = 0
    for row in t.iter_rows(named=True):
        sub = pdf[[row["metric"], row["target"], "resp_words"]].dropna()
        assert row["n"] == len(sub)
        if row["reason"]:
            continue
        ref = pg.partial_corr(sub, x=row["metric"], y=row["target"], covar="resp_words", method="spearman")
        assert row["rho"] == pytest.approx(float(ref["r"].iloc[0]), abs=1e-12), row
        assert row["p"] == pytest.approx(float(ref["p_val"].iloc[0]), abs=1e-12), row
        checked += 1
    assert checked >= 50


def test_bca_interval_equals_scipy_bootstrap_of_the_partial_statistic():
    """Same seed stream as the matrix's first group: scipy.stats.bootstrap(BCa) on partial_spearman."""
    from scipy import stats

    from tutormetrics.stats.bootstrap import child_rng, seed_root
    from tutormetrics.stats.partial import partial_spearman

    rng = np.random.default_rng(8)
    n = 35
    z = rng.integers(5, 60, n).astype(float)
    x = -0.01 * z + rng.normal(0, 0.1, n)
    y = rng.integers(0, 3, n).astype(float)
    df = pl.DataFrame({"x": x, "y": y, "z": z})
    t = spearman_matrix(df, ["x"], ["y"], control=["z"], n_resamples=499, seed=5).row(0, named=True)
    res = stats.bootstrap(
        (x, y, z), lambda a, b, c: partial_spearman(a, b, c)[0], paired=True, vectorized=False,
        n_resamples=499, method="BCa", rng=child_rng(seed_root(5), 0, 0),
    )  # fmt: skip
    assert t["ci_method"] == "bca"
    assert t["ci_low"] == pytest.approx(res.confidence_interval.low, abs=1e-12)
    assert t["ci_high"] == pytest.approx(res.confidence_interval.high, abs=1e-12)
