"""judges.md §3.2: the many-rater table's intervals resample dialogues (against krippendorff and scikit-learn
on the expanded resamples of the same draws)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from judges import worked_example as ex
from tutormetrics.psychometrics.agreement import agreement_table

LABELS = dict(zip(ex.IDS, ex.DIALOGUE, strict=True))
B = 300


def _reference_intervals() -> tuple[np.ndarray, np.ndarray]:
    idx = np.random.default_rng([0, 0]).integers(0, 12, size=(B, 12))
    data = np.array([ex.A, ex.B, ex.J, ex.K], dtype=float)
    alphas, kappas = [], []
    for b in range(B):
        w = np.bincount(idx[b], minlength=12)[ex.CLUSTER]
        expanded = np.repeat(data, w, axis=1)
        alphas.append(krippendorff.alpha(reliability_data=expanded, level_of_measurement="nominal", value_domain=[0, 1, 2]))
        kappas.append(cohen_kappa_score(expanded[0], expanded[1]))  # rater A vs B (first two sorted)
    q = [0.025, 0.975]
    return np.quantile(alphas, q), np.quantile(kappas, q)


def test_cluster_intervals_equal_expanded_resamples() -> None:
    t = agreement_table(ex.ratings(), n_resamples=B, cluster_labels=LABELS).row(0, named=True)
    alpha, kappa = _reference_intervals()
    assert (t["alpha_ci_low"], t["alpha_ci_high"]) == pytest.approx(tuple(alpha), abs=1e-12)
    assert (t["kappa_ci_low"], t["kappa_ci_high"]) == pytest.approx(tuple(kappa), abs=1e-12)
    assert t["n_clusters"] == 12 and t["ci_method"] == "cluster_percentile"


def test_without_clusters_nothing_moves() -> None:
    plain = agreement_table(ex.ratings(), n_resamples=B)
    clustered = agreement_table(ex.ratings(), n_resamples=B, cluster_labels=LABELS)
    assert "n_clusters" not in plain.columns
    assert clustered.columns[-2:] == ["n_clusters", "ci_method"]
    same = ["krippendorff_alpha", "kappa", "exact", "fleiss_kappa", "pa"]
    assert plain.select(same).equals(clustered.select(same))


def test_too_few_clusters() -> None:
    t = agreement_table(ex.ratings(), n_resamples=B, cluster_labels=LABELS, min_clusters=20).row(0, named=True)
    assert t["ci_method"] == "none" and "too_few_clusters" in t["reason"]
    assert np.isnan(t["alpha_ci_low"]) and np.isnan(t["kappa_ci_high"]) and t["krippendorff_alpha"] == t["krippendorff_alpha"]
