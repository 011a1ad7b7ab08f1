"""Cluster-bootstrap intervals of ``validate --cluster-col`` (predictive.md §2) against scipy.stats.bootstrap
run on cluster indices, and the spec's worked example §5.2."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.stats.bootstrap import (
    bca_levels,
    bootstrap_spearman_block,
    child_rng,
    jackknife_spearman_block,
    seed_root,
)
from tutormetrics.stats.partial import partial_spearman
from tutormetrics.validity.correlate import correlate_with_targets, spearman_matrix

M1 = [12, 30, 25, 8, 40, 22, 15, 35, 18, 27, 9, 33, 21, 14, 38, 11, 26, 19, 31, 16]
Y = [0, 1, .5, 0, 1, .5, 0, 1, .5, 1, 0, 1, .5, 0, .5, 0, 1, 0, 1, .5]
DIALOGUE = ["d1"] * 4 + ["d2"] * 4 + ["d3"] * 3 + ["d4"] * 3 + ["d5"] * 3 + ["d6"] * 3


def _example() -> pl.DataFrame:
    return pl.DataFrame({"m1": [float(v) for v in M1], "y": [float(v) for v in Y], "dialogue": DIALOGUE})


def test_worked_example_default_min_clusters():
    t = spearman_matrix(_example(), ["m1"], ["y"], cluster=DIALOGUE, n_resamples=999).row(0, named=True)
    assert t["rho"] == pytest.approx(0.8602076, abs=5e-8)
    assert (t["n"], t["n_clusters"], t["ci_method"], t["reason"]) == (20, 6, "none", "too_few_clusters")
    assert np.isnan(t["ci_low"]) and np.isnan(t["ci_high"])


def test_worked_example_draws():
    """§5.2 with the draws default_rng(0).integers(0, 6, (9999, 6))."""
    block = np.column_stack((M1, Y)).astype(float)
    pairs = (np.array([0]), np.array([0]))
    clusters = np.unique(DIALOGUE, return_inverse=True)[1].ravel()
    dist = bootstrap_spearman_block(block, 1, pairs, 9999, np.random.default_rng(0), clusters)[0]
    assert np.quantile(dist, [0.025, 0.975]) == pytest.approx([0.6862332, 0.9460323], abs=5e-8)
    jack = jackknife_spearman_block(block, 1, pairs, clusters)[0]
    assert jack.size == 6
    rho = float(spearman_matrix(_example(), ["m1"], ["y"], ci="none")["rho"][0])  # exact: resamples tie with it
    a1, a2 = bca_levels(rho, dist, jack, 0.025)
    assert np.quantile(dist, [a1, a2]) == pytest.approx([0.6616932, 0.9438798], abs=5e-8)
    # the row bootstrap from the same generator (scipy.stats.bootstrap paired BCa)
    row = bootstrap_spearman_block(block, 1, pairs, 9999, np.random.default_rng(0))[0]
    rj = jackknife_spearman_block(block, 1, pairs)[0]
    b1, b2 = bca_levels(rho, row, rj, 0.025)
    assert np.quantile(row, [b1, b2]) == pytest.approx([0.6059931, 0.9399125], abs=5e-8)


def _clustered(seed: int, n_clusters: int = 15):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_clusters)
    labels = np.repeat([f"k{rng.integers(0, 999):03d}{j}" for j in range(n_clusters)], sizes)
    n = labels.size
    shared = np.repeat(rng.normal(size=n_clusters), sizes)
    z = rng.normal(size=n) + shared
    x = z + rng.normal(size=n) + shared
    y = np.round(x + rng.normal(size=n) * 2)
    return x, y, z, labels


def _scipy_cluster_ci(stat, labels, method, b, rng):
    uniq, codes = np.unique(labels, return_inverse=True)
    members = [np.flatnonzero(codes == j) for j in range(uniq.size)]

    def expanded(idx):
        rows = np.concatenate([members[int(j)] for j in idx])
        return stat(rows)

    res = stats.bootstrap((np.arange(uniq.size),), expanded, vectorized=False, n_resamples=b, method=method, rng=rng)
    return res.confidence_interval


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_raw_cluster_interval_equals_scipy_on_cluster_indices(seed, method):
    x, y, _, labels = _clustered(seed)
    b = 499
    frame = pl.DataFrame({"x": x, "y": y})
    t = spearman_matrix(frame, ["x"], ["y"], cluster=labels, ci=method, n_resamples=b, seed=seed, min_clusters=5).row(0, named=True)
    lo, hi = _scipy_cluster_ci(lambda r: stats.spearmanr(x[r], y[r]).statistic, labels, "BCa" if method == "bca" else "percentile",
                               b, child_rng(seed_root(seed), 0, 0))  # fmt: skip
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    assert t["ci_method"] == f"cluster_{method}"
    assert t["n_clusters"] == np.unique(labels).size


def test_partial_cluster_interval_equals_scipy_on_cluster_indices():
    x, y, z, labels = _clustered(4, n_clusters=14)
    b = 299
    frame = pl.DataFrame({"x": x, "y": y, "z": z})
    t = spearman_matrix(frame, ["x"], ["y"], control=["z"], cluster=labels, n_resamples=b, seed=3, min_clusters=5).row(0, named=True)
    lo, hi = _scipy_cluster_ci(lambda r: partial_spearman(x[r], y[r], z[r])[0], labels, "BCa", b, child_rng(seed_root(3), 0, 0))
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((lo, hi), abs=1e-10)
    assert t["ci_method"] == "cluster_bca"


def test_one_row_per_cluster_is_the_row_bootstrap():
    x, y, _, _ = _clustered(5)
    labels = [f"r{i:04d}" for i in range(x.size)]  # sort in row order
    frame = pl.DataFrame({"x": x, "y": y})
    a = spearman_matrix(frame, ["x"], ["y"], cluster=labels, n_resamples=499).row(0, named=True)
    b = spearman_matrix(frame, ["x"], ["y"], n_resamples=499).row(0, named=True)
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((b["ci_low"], b["ci_high"]), abs=1e-15)


def test_cluster_intervals_are_wider_under_strong_clustering():
    rng = np.random.default_rng(11)
    shared = rng.normal(size=30)
    labels = np.repeat([f"c{j:02d}" for j in range(30)], 8)
    x = np.repeat(shared, 8) + 0.1 * rng.normal(size=240)
    y = np.repeat(shared + rng.normal(size=30), 8) + 0.1 * rng.normal(size=240)
    frame = pl.DataFrame({"x": x, "y": y})
    c = spearman_matrix(frame, ["x"], ["y"], cluster=labels, n_resamples=999).row(0, named=True)
    r = spearman_matrix(frame, ["x"], ["y"], n_resamples=999).row(0, named=True)
    assert (c["ci_high"] - c["ci_low"]) > 2 * (r["ci_high"] - r["ci_low"])
    assert c["p"] == r["p"] and c["rho"] == r["rho"]


def test_errors_and_columns():
    frame = _example()
    with pytest.raises(ConfigError, match="fisher"):
        spearman_matrix(frame, ["m1"], ["y"], cluster=DIALOGUE, ci="fisher")
    with pytest.raises(InputSchemaError, match="empty cluster label"):
        spearman_matrix(frame, ["m1"], ["y"], cluster=[""] + DIALOGUE[1:])
    metrics = frame.with_columns(pl.Series("exchange_id", [f"e{i}" for i in range(20)]), pl.Series("len", np.arange(20.0)))
    targets = metrics.select("exchange_id", "y")
    res = correlate_with_targets(metrics.drop("y"), [targets], cluster_col="dialogue", control=["len"], n_resamples=99, min_clusters=3)
    cols = res.table.columns
    assert cols[cols.index("reason") + 1 : cols.index("reason") + 3] == ["control", "n_clusters"]
    assert "dialogue" not in res.metric_cols
    assert set(res.table["ci_method"].to_list()) <= {"cluster_bca", "cluster_percentile", "none", ""}
