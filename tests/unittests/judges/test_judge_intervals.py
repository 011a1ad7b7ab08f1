"""judges.md §1.2 and §3.1: the shared draws and the judge table's intervals, on the worked example (§3.5)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from judges import worked_example as ex
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.pairwise_agreement import cohen_kappa, gwet_ac, krippendorff_alpha
from tutormetrics.psychometrics.resampled_agreement import macro_f1_stacked, table_measures
from tutormetrics.stats.cluster_resample import ClusterDraws, cluster_codes, percentile_interval, resampled_sums

LABELS = dict(zip(ex.IDS, ex.DIALOGUE, strict=True))


def _row(table, ref="A", judge="J"):
    return next(r for r in table.iter_rows(named=True) if r["reference"] == ref and r["judge"] == judge)


def test_chunked_draws_equal_one_call() -> None:
    g, b = 10_001, 37
    whole = np.random.default_rng([5, 2]).integers(0, g, size=(b, g))
    expected = np.stack([np.bincount(row, minlength=g) for row in whole])
    draws = ClusterDraws(g, b, seed=5, criterion=2)
    got = np.concatenate([counts for _, counts in draws.chunks(max_elements=3 * g)])
    assert np.array_equal(got, expected)
    assert np.array_equal(resampled_sums(draws, np.eye(g)[:, :3]), expected[:, :3])


def test_cluster_codes_sort_as_text() -> None:
    codes, names = cluster_codes([10, 9, "a", 10])
    assert names == ["10", "9", "a"] and codes.tolist() == [0, 1, 2, 0]


def test_percentile_interval_counts_dropped() -> None:
    v = np.array([np.nan, 0.0, 1.0, np.inf, 2.0])
    assert percentile_interval(v, 0.5) == (0.5, 1.5, 2)
    assert np.isnan(percentile_interval(np.array([1.0, np.nan]), 0.95).low)


def test_stacked_measures_equal_sklearn_on_expanded_resamples() -> None:
    """κ, α, AC1, macro-F1 and accuracy of weighted tables = the same of the expanded resample."""
    rng = np.random.default_rng(1)
    y, yhat = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    w = rng.integers(0, 3, (6, 40))
    onehot = np.zeros((40, 9))
    onehot[np.arange(40), y * 3 + yhat] = 1
    tables = (w @ onehot).reshape(6, 3, 3)
    m = table_measures(tables, np.array([0.0, 1.0, 2.0]))
    for b in range(6):
        ey, eh = np.repeat(y, w[b]), np.repeat(yhat, w[b])
        assert m["cohen_kappa"][b] == pytest.approx(cohen_kappa_score(ey, eh), abs=1e-12)
        assert m["macro_f1"][b] == pytest.approx(f1_score(ey, eh, average="macro"), abs=1e-12)
        assert m["accuracy"][b] == pytest.approx(np.mean(ey == eh), abs=1e-12)
        assert m["mean_diff"][b] == pytest.approx(np.mean(eh - ey), abs=1e-12)
    assert np.allclose(m["krippendorff_alpha"], krippendorff_alpha(tables)) and np.allclose(m["gwet_ac1"], gwet_ac(tables))
    assert np.isnan(macro_f1_stacked(np.zeros((2, 2)))) and np.allclose(m["cohen_kappa"], cohen_kappa(tables))


def test_worked_example_unit_draws() -> None:
    """§3.5: J against A, unit draws (no cluster column): the new α, AC1 and F1 intervals."""
    res = judge_table(ex.ratings(), ["J"], n_resamples=2000, seed=0)
    row = _row(res.table)
    assert row["n"] == 30 and row["accuracy"] == pytest.approx(0.6)
    assert row["macro_f1"] == pytest.approx(0.6066616, abs=5e-8) and row["cohen_kappa"] == pytest.approx(0.4)
    assert row["krippendorff_alpha"] == pytest.approx(0.4065381, abs=5e-8)
    assert row["gwet_ac1"] == pytest.approx(0.4017449, abs=5e-8) and row["mean_diff"] == pytest.approx(-0.0333333, abs=5e-8)
    expected = {"alpha": (0.1127634, 0.6497031), "ac1": (0.1531580, 0.6553139), "f1": (0.4146367, 0.7637969)}
    for k, (lo, hi) in expected.items():
        assert (row[f"{k}_ci_low"], row[f"{k}_ci_high"]) == pytest.approx((lo, hi), abs=5e-8)
    assert "n_clusters" not in res.table.columns and "ci_method" not in res.table.columns


def test_worked_example_dialogue_draws() -> None:
    """§3.5: with the 12 dialogues every interval, κ and the mean difference included, resamples dialogues."""
    res = judge_table(ex.ratings(), ["J", "K"], n_resamples=2000, seed=0, cluster_labels=LABELS)
    row = _row(res.table)
    expected = {
        "kappa": (0.1128656, 0.6391842), "alpha": (0.1083070, 0.6429880), "ac1": (0.1376285, 0.6562020),
        "f1": (0.3981403, 0.7609470), "diff": (-0.3031469, 0.2413793),
    }  # fmt: skip
    for k, (lo, hi) in expected.items():
        assert (row[f"{k}_ci_low"], row[f"{k}_ci_high"]) == pytest.approx((lo, hi), abs=5e-8)
    assert row["n_clusters"] == 12 and row["ci_method"] == "cluster_percentile"
    assert row["cohen_kappa"] == pytest.approx(0.4)  # point estimates never change
    # judge by judge, then reference; each judge's pooled (all) rows follow its criterion (docs/guide/paper.md#pooled)
    assert res.table["judge"].to_list() == ["J"] * 6 + ["K"] * 6
    assert res.table["criterion"].to_list()[:6] == [res.table["criterion"][0]] * 3 + ["(all)"] * 3


def test_too_few_clusters_keeps_estimates() -> None:
    res = judge_table(ex.ratings(), "J", n_resamples=200, cluster_labels=LABELS, min_clusters=13)
    row = _row(res.table)
    assert row["ci_method"] == "none" and "too_few_clusters" in row["reason"]
    assert np.isnan(row["kappa_ci_low"]) and np.isnan(row["diff_ci_high"]) and np.isnan(row["f1_ci_low"])
    assert row["cohen_kappa"] == pytest.approx(0.4)


def test_ci_dropped_counts_undefined_resamples() -> None:
    """Dialogue x holds every 1: a resample without it has a constant table, so κ, α and AC1 are undefined."""
    a = [1] * 10 + [0] * 20
    labels = {i: ("x" if k < 10 else f"d{k}") for k, i in enumerate(ex.IDS)}  # x sorts last of 21 clusters
    res = judge_table(ex.ratings({"A": a, "J": a}), "J", n_resamples=500, cluster_labels=labels, min_clusters=2)
    idx = np.random.default_rng([0, 0]).integers(0, 21, size=(500, 21))
    dropped = int((~(idx == 20).any(axis=1)).sum())
    assert 0 < dropped < 500
    assert f"ci_dropped_{dropped}" in _row(res.table)["reason"].split(";")


def test_missing_cluster_label_is_an_error() -> None:
    from tutormetrics.errors import InputSchemaError

    with pytest.raises(InputSchemaError, match="1 rated exchange"):
        judge_table(ex.ratings(), "J", n_resamples=10, cluster_labels={i: "d" for i in ex.IDS[1:]})


def test_pattern_weights_sum_the_unit_weights() -> None:
    codes, pattern = np.array([0, 0, 1, 2, 2, 3]), np.array([1, 0, 1, 2, 1, 0])
    draws = ClusterDraws(4, 7, seed=3, criterion=1)
    for (_, units), (_, patterns) in zip(draws.unit_weights(codes), draws.unit_weights(codes, pattern), strict=True):
        expected = np.stack([np.bincount(pattern, weights=row, minlength=3) for row in units])
        assert np.array_equal(patterns, expected)


def test_without_clusters_kappa_and_diff_keep_their_draws() -> None:
    """judges.md §1.2: without a cluster column κ's and the mean difference's intervals are today's."""
    from tutormetrics.psychometrics.pairwise_agreement import bootstrap_tables, contingency_table
    from tutormetrics.stats.bootstrap import percentile_ci
    from tutormetrics.stats.paired import mean_diff_ci

    row = _row(judge_table(ex.ratings(), "J", n_resamples=500, seed=4).table)
    table = contingency_table(np.array(ex.A), np.array(ex.J), 3)
    kappa = percentile_ci(cohen_kappa(bootstrap_tables(table, 500, np.random.default_rng(4))), 0.95)
    diff = mean_diff_ci(np.array(ex.J, float), np.array(ex.A, float), n_resamples=500, seed=4)
    assert (row["kappa_ci_low"], row["kappa_ci_high"]) == kappa
    assert (row["diff_ci_low"], row["diff_ci_high"]) == (diff["diff_ci_low"], diff["diff_ci_high"])


def test_pattern_path_equals_the_count_matrix() -> None:
    """Repeated cluster features (single replies) are counted per pattern: the same sums."""
    rng = np.random.default_rng(0)
    feats = np.eye(9)[rng.integers(0, 9, 500)]
    draws = ClusterDraws(500, 30, seed=1, criterion=3)
    expected = np.concatenate([counts @ feats for _, counts in draws.chunks()])
    assert np.array_equal(resampled_sums(draws, feats), expected)
