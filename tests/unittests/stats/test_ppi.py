"""``ppi`` (predictive.md §3) against ppi_py and the spec's worked example §5.3."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tutormetrics.psychometrics.ppi_table import COLUMNS, ppi_table
from tutormetrics.stats.ppi import ppi_mean

Y = [1, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
F = [1, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
U = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]


def test_worked_example():
    r = ppi_mean(Y, F, U, lam=1.0)
    assert (r.estimate, r.se, r.ci_low, r.ci_high) == pytest.approx((0.7416667, 0.0966032, 0.5523279, 0.9310054), abs=5e-8)
    assert (r.classical, r.classical_se, r.classical_ci_low, r.classical_ci_high) == pytest.approx(
        (0.6666667, 0.1226633, 0.4262509, 0.9070824), abs=5e-8)
    assert r.judge_mean == pytest.approx(0.7619048, abs=5e-8)
    assert r.n_effective == pytest.approx(19.3476374, abs=5e-8)
    assert r.reasons == ["few_labeled"]
    a = ppi_mean(Y, F, U, lam="auto")
    assert (a.lam, a.estimate, a.se, a.ci_low, a.ci_high, a.n_effective) == pytest.approx(
        (0.6876766, 0.7182424, 0.0872982, 0.5471411, 0.8893438, 23.6919150), abs=5e-8)


def _reference(y, f, u, lam, alpha):
    """The formulas re-derived independently of tutormetrics.stats.ppi."""
    n, big_n = len(y), len(u)
    if lam is None:
        g = y - (u.mean() + (y - f).mean())
        gh = f - (u.mean() + (y - f).mean())
        cov = 2 * np.mean((g - g.mean()) * (gh - gh.mean()))
        var = np.cov(np.concatenate((gh, u - (u.mean() + (y - f).mean()))))
        lam = float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1))
    est = np.mean(lam * u) + np.mean(y - lam * f)
    se = np.sqrt(np.std(lam * u) ** 2 / big_n + np.std(y - lam * f) ** 2 / n)
    z = stats.norm.ppf(1 - alpha / 2)
    return lam, est, est - z * se, est + z * se


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("lam", [0.0, 0.37, 1.0, None])
def test_equals_ppi_py_and_reference(seed, lam):
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(5, 60)), int(rng.integers(10, 300))
    truth = rng.normal(size=n + big_n)
    judge = truth * rng.uniform(0, 1.5) + rng.normal(size=n + big_n) * rng.uniform(0.1, 2) + rng.normal()
    y, f, u = truth[:n], judge[:n], judge[n:]
    alpha = 0.1
    r = ppi_mean(y, f, u, lam="auto" if lam is None else lam, confidence_level=1 - alpha)
    ref_lam, ref_est, ref_lo, ref_hi = _reference(y, f, u, lam, alpha)
    assert (r.lam, r.estimate, r.ci_low, r.ci_high) == pytest.approx((ref_lam, ref_est, ref_lo, ref_hi), abs=1e-9)
    ppi_py = pytest.importorskip("ppi_py")
    est = ppi_py.ppi_mean_pointestimate(y, f, u, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=alpha, lam=lam)
    assert r.estimate == pytest.approx(float(np.ravel(est)[0]), abs=1e-9)
    assert (r.ci_low, r.ci_high) == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])), abs=1e-9)
    clo, chi = ppi_py.classical_mean_ci(y, alpha=alpha)
    assert (r.classical_ci_low, r.classical_ci_high) == pytest.approx((float(np.ravel(clo)[0]), float(np.ravel(chi)[0])), abs=1e-9)


def test_edge_cases():
    assert ppi_mean([1.0], [1.0], [0.0, 1.0]).reasons == ["too_few_labeled"]
    r = ppi_mean([1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [], lam="auto")
    assert r.reasons == ["few_labeled", "no_unlabeled"] and r.lam == 0 and r.estimate == r.classical and r.n_effective == 3
    c = ppi_mean([1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0], lam="auto")
    assert "judge_constant" in c.reasons and c.lam == 0 and c.estimate == pytest.approx(2 / 3)


def test_table_groups_and_reasons():
    rng = np.random.default_rng(0)
    ids = [f"e{i:03d}" for i in range(200)]
    tutor = np.where(np.arange(200) % 2 == 0, "t1", "t2")
    truth = rng.integers(0, 2, 200).astype(float)
    judge = np.where(rng.random(200) < 0.8, truth, 1 - truth)
    jl = pl.DataFrame({"exchange_id": ids, "rater": "llm", "criterion": "clear", "score": judge, "tutor": tutor})
    labeled = rng.choice(200, 50, replace=False)
    hl = pl.DataFrame({"exchange_id": [ids[i] for i in labeled] + ["x999"], "rater": "h1", "criterion": "clear",
                       "score": [truth[i] for i in labeled] + [1.0]})  # fmt: skip
    t = ppi_table(jl, hl, group_col="tutor", lam="auto")
    assert tuple(t.columns) == COLUMNS
    assert t["group"].to_list() == ["", "t1", "t2"]
    assert t["reason"][0] == "human_without_judge_1"
    assert t["n_labeled"].to_list()[0] == 50 and t["n_unlabeled"][0] == 150
    assert sum(t["n_labeled"][1:]) == 50
    lab = np.isin(np.arange(200), labeled)
    sub = tutor == "t1"
    r = ppi_mean(truth[lab & sub], judge[lab & sub], judge[~lab & sub], lam="auto")
    assert t["estimate"][1] == pytest.approx(r.estimate, abs=1e-12)
