"""judges.md §6: the flip table, on the worked example (§6.3) and against statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import SquareTable, mcnemar
from statsmodels.stats.proportion import proportion_confint

from judges import worked_example as ex
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.leniency import symmetry_tests
from tutormetrics.psychometrics.stability import STABILITY_COLUMNS, parse_stability, stability_table
from tutormetrics.stats.flip_tests import clustered_mcnemar, flip_design_effect, mcnemar_exact_p, wilson_interval

LABELS = dict(zip(ex.IDS, ex.DIALOGUE, strict=True))


def test_worked_example() -> None:
    t = stability_table(ex.ratings(), ("J", "K"), cluster_labels=LABELS)
    assert t.columns == STABILITY_COLUMNS
    r = t.row(0, named=True)
    assert (r["n"], r["n_clusters"], r["flips"]) == (30, 12, 4)
    expected = {"flip_rate": 0.1333333, "up_rate": 0.1, "down_rate": 0.0333333, "mean_shift": 0.0666667, "cohen_kappa": 0.8,
                "flip_ci_low": 0.0530966, "flip_ci_high": 0.2968133, "mcnemar_p": 0.625, "bowker_chi2": 2.0,
                "bowker_p": 0.5724067, "mcnemar_cluster_chi2": 1.0, "mcnemar_cluster_p": 0.3173105}  # fmt: skip
    for k, v in expected.items():
        assert r[k] == pytest.approx(v, abs=5e-8), k
    assert r["design_effect"] == 1.0 and r["bowker_df"] == 3 and r["reason"] == ""
    plain = stability_table(ex.ratings(), ("J", "K")).row(0, named=True)
    assert plain["n_clusters"] is None and plain["mcnemar_cluster_chi2"] is None and plain["flip_ci_low"] == r["flip_ci_low"]


@pytest.mark.parametrize("seed", range(8))
def test_against_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    up, down = int((b > a).sum()), int((b < a).sum())
    assert mcnemar_exact_p(up, down) == pytest.approx(mcnemar([[0, up], [down, 0]], exact=True).pvalue, abs=1e-15)
    p = float(np.mean(a != b))
    for deff in (1.0, 1.7):
        lo, hi = proportion_confint(p * n / deff, n / deff, alpha=0.05, method="wilson")
        assert wilson_interval(p, n / deff) == pytest.approx((lo, hi), abs=1e-14)
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    if ((table + table.T)[np.triu_indices(3, 1)] > 0).all():
        sym = SquareTable(table, shift_zeros=False).symmetry()
        ours = symmetry_tests(table)
        assert ours["bowker_chi2"] == pytest.approx(sym.statistic, abs=1e-12) and ours["bowker_p"] == pytest.approx(sym.pvalue, abs=1e-14)


def test_clustered_statistics() -> None:
    # singletons: the clustered McNemar is McNemar's χ² without continuity correction
    d = np.array([1] * 7 + [-1] * 3 + [0] * 5)
    chi2, p = clustered_mcnemar(d)
    assert chi2 == pytest.approx((7 - 3) ** 2 / (7 + 3)) and p == pytest.approx(mcnemar([[0, 7], [3, 0]], exact=False, correction=False).pvalue)
    flipped = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    clusters = np.repeat(np.arange(4), 3)  # every flip in one dialogue
    p_hat = flipped.mean()
    v_cl = sum((flipped[clusters == g] - p_hat).sum() ** 2 for g in range(4)) / 12**2
    assert flip_design_effect(flipped, clusters) == pytest.approx(v_cl / (p_hat * (1 - p_hat) / 12))
    assert flip_design_effect(np.zeros(5), np.arange(5)) == 1.0
    assert wilson_interval(0.0, 100)[1] == pytest.approx(3.84 / 103.84, abs=1e-3)


def test_reasons_and_errors() -> None:
    same = stability_table(ex.ratings({"J": ex.J, "K": ex.J}), ("J", "K")).row(0, named=True)
    assert same["reason"] == "no_flips" and same["mcnemar_p"] == 1.0 and same["flip_ci_low"] == 0.0
    small = stability_table(ex.ratings({"J": ex.J, "K": ex.K}), ("J", "K"), n_min=31).row(0, named=True)
    assert small["reason"] == "too_few" and small["flips"] == 4
    with pytest.raises(InputSchemaError, match="'Z' is not a rater"):
        stability_table(ex.ratings(), ("J", "Z"))
    with pytest.raises(ConfigError, match="two distinct raters"):
        parse_stability("J,J")
    with pytest.raises(ConfigError, match="--judge or --raters"):
        parse_stability("J,K", judges=["J"])
