"""The sorted-order rank sums of the cluster bootstrap (``predictive.md`` §1.7) against the per-resample ranks.

Every resample's ρ and AUC from one fixed order per score (:class:`SortedScore`) must equal the per-resample
weighted ranks (:func:`spearman`, :func:`auc`) and scipy / scikit-learn on the expanded resample (rows of a
group drawn twice appear twice), on continuous and heavily tied scores.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tutormetrics.validity import predict_measures as pm

sklearn = pytest.importorskip("sklearn")
from sklearn.metrics import roc_auc_score  # noqa: E402


def _case(seed: int, n: int, n_groups: int, n_levels: int, ties: str):
    rng = np.random.default_rng(seed)
    group = np.sort(rng.integers(0, n_groups, n))
    group = np.unique(group, return_inverse=True)[1]  # codes 0…G−1, every group present
    y = rng.integers(0, n_levels, n)
    score = y + rng.normal(scale=1.5, size=n)
    if ties == "rounded":
        score = np.round(score)  # a few values, long ties across groups
    elif ties == "constant":
        score = np.zeros(n)
    elif ties == "some":
        score[rng.random(n) < 0.3] = 0.25
    perm = rng.permutation(n)  # rows not in group order
    return group[perm], y[perm], score[perm], int(group.max()) + 1


CASES = [(s, n, g, k, t) for s, (n, g, k, t) in enumerate([
    (60, 12, 2, "none"), (60, 12, 3, "none"), (200, 25, 3, "rounded"), (150, 30, 2, "rounded"),
    (97, 13, 3, "some"), (40, 40, 2, "some"), (50, 7, 3, "constant"), (300, 37, 3, "rounded"),
])]  # fmt: skip


@pytest.mark.parametrize(("seed", "n", "n_groups", "n_levels", "ties"), CASES)
def test_sorted_rho_and_auc_equal_per_resample_ranks(seed, n, n_groups, n_levels, ties):
    group, y, score, g = _case(seed, n, n_groups, n_levels, ties)
    idx = np.random.default_rng([seed, 1]).integers(0, g, size=(300, g))
    w = pm.Weights.draws(idx, group, g)
    sc = pm.SortedScore.of(score, group, y, n_levels)
    plan_s, plan_y = pm._plan(score), pm._plan(y.astype(float))  # kept alive: the weights cache ranks by plan
    old_rho = pm.spearman(w, plan_s, plan_y)
    new_rho = pm.spearman_sorted(w, sc)
    np.testing.assert_allclose(new_rho, old_rho, rtol=0, atol=1e-12, equal_nan=True)
    assert np.array_equal(np.isnan(new_rho), np.isnan(old_rho))
    for positive in ([False] * (n_levels - 1) + [True], [False] + [True] * (n_levels - 1)):
        pos = np.asarray(positive)
        old_auc = pm.auc(w, pos[y], plan_s)
        new_auc = pm.auc_sorted(w, sc, pos)
        np.testing.assert_allclose(new_auc, old_auc, rtol=0, atol=1e-12, equal_nan=True)
        assert np.array_equal(np.isnan(new_auc), np.isnan(old_auc))


@pytest.mark.parametrize(("seed", "n", "n_groups", "n_levels", "ties"), CASES)
def test_sorted_measures_equal_scipy_and_sklearn_on_expanded_resamples(seed, n, n_groups, n_levels, ties):
    group, y, score, g = _case(seed, n, n_groups, n_levels, ties)
    idx = np.random.default_rng([seed, 2]).integers(0, g, size=(40, g))
    w = pm.Weights.draws(idx, group, g)
    sc = pm.SortedScore.of(score, group, y, n_levels)
    rho = pm.spearman_sorted(w, sc)
    top = np.arange(n_levels) == n_levels - 1
    auc = pm.auc_sorted(w, sc, top)
    for b, draw in enumerate(idx):
        rows = np.concatenate([np.flatnonzero(group == j) for j in draw])
        yy, ss = y[rows], score[rows]
        ref_rho = stats.spearmanr(ss, yy).statistic if np.ptp(yy) and np.ptp(ss) else np.nan
        np.testing.assert_allclose(rho[b], ref_rho, rtol=0, atol=1e-12, equal_nan=True)
        pos = yy == n_levels - 1
        ref_auc = roc_auc_score(pos, ss) if 0 < pos.sum() < pos.size else np.nan
        np.testing.assert_allclose(auc[b], ref_auc, rtol=0, atol=1e-12, equal_nan=True)


def test_rank_sums_equal_expanded_ranks_and_tie_cubes():
    """``S_l = Σ w(2r − 1)`` per label and ``Σ_t W_t³`` against scipy's average ranks on the expanded rows."""
    group, y, score, g = _case(11, 120, 15, 3, "rounded")
    idx = np.random.default_rng(3).integers(0, g, size=(25, g))
    s, t3 = pm.rank_sums(pm.Weights.draws(idx, group, g), pm.SortedScore.of(score, group, y, 3))
    for b, draw in enumerate(idx):
        rows = np.concatenate([np.flatnonzero(group == j) for j in draw])
        r = stats.rankdata(score[rows])
        ref = [np.sum(2 * r[y[rows] == lv] - 1) for lv in range(3)]
        np.testing.assert_allclose(s[b], ref, rtol=0, atol=1e-9)
        _, tie_sizes = np.unique(score[rows], return_counts=True)
        assert t3[b] == np.sum(tie_sizes.astype(float) ** 3)


def test_full_sample_is_unit_weights():
    group, y, score, _ = _case(4, 80, 10, 2, "some")
    sc = pm.SortedScore.of(score, group, y, 2)
    ones = pm.Weights.ones(group)
    assert pm.spearman_sorted(ones, sc)[0] == pytest.approx(stats.spearmanr(score, y).statistic, abs=1e-12)
    assert pm.auc_sorted(ones, sc, np.array([False, True]))[0] == pytest.approx(roc_auc_score(y == 1, score), abs=1e-12)
