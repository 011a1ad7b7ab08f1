"""Judge leniency (studies.md §7): the worked example with two judges, statsmodels SquareTable and scipy
binomtest oracles, edge cases; "not applicable" codes (§4)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import SquareTable

from tutormetrics.errors import ConfigError
from tutormetrics.na_codes import (
    drop_na_codes,
    negative_category_warnings,
)
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.leniency import POOLED, symmetry_tests

WIDE = {
    "A": [2, 2, 1, 0, 2, 1, 0, 2, 1, 2],
    "B": [2, 1, 1, 0, 2, 0, 0, 2, 2, 2],
    "C": [2, 2, 0, 0, 1, 1, None, 2, 0, 2],
    "J": [2, 2, 1, 1, 2, 0, 0, 1, 2, 2],
    "L": [2, 2, 2, 1, 2, 2, 1, 2, 2, 2],
}
# judge, ref: n, mean_judge, mean_ref, mean_diff, pct_judge, pct_ref, over, under, sign_p, bowker, bowker_p, sm, sm_p
SPEC = {
    ("J", "A"): (10, 1.3, 1.3, 0, 65, 65, 0.2, 0.2, 1, 0, 1, 0, 1),
    ("J", "majority"): (9, 1.2222222, 1.3333333, -0.1111111, 61.1111111, 66.6666667, 0.1111111, 0.2222222, 1, 1, 0.8012520, 1, 0.6065307),
    ("L", "A"): (10, 1.8, 1.3, 0.5, 90, 65, 0.5, 0, 0.0625, 5, 0.1717971, 5, 0.0820850),
    ("L", "majority"): (9, 1.7777778, 1.3333333, 0.4444444, 88.8888889, 66.6666667, 0.4444444, 0, 0.125, 4, 0.2614641, 4, 0.1353353),
}
COLS = ["n", "mean_judge", "mean_ref", "mean_diff", "pct_max_judge", "pct_max_ref", "over_rate", "under_rate", "sign_p",
        "bowker_chi2", "bowker_p", "stuart_maxwell_chi2", "stuart_maxwell_p"]  # fmt: skip


def _long(wide: dict[str, list]) -> pl.DataFrame:
    rows = [(f"u{i:02d}", r, "c", float(s)) for r, scores in wide.items() for i, s in enumerate(scores) if s is not None]
    return pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")


def test_two_judges_worked_example() -> None:
    res = judge_table(_long(WIDE), ["J", "L"], n_resamples=500, n_min=9)
    # paper.md §5: each judge's pooled rows (one criterion here) follow its criterion rows
    assert res.table["criterion"].to_list() == (["c"] * 4 + [POOLED] * 4) * 2
    t = res.table.filter(pl.col("criterion") != POOLED)
    assert t["judge"].to_list() == ["J"] * 4 + ["L"] * 4
    assert t["reference"].to_list() == ["A", "B", "C", "majority"] * 2  # L is not a human reference of J
    rows = {(r["judge"], r["reference"]): r for r in t.iter_rows(named=True)}
    for key, expected in SPEC.items():
        assert [rows[key][c] for c in COLS] == pytest.approx(list(expected), abs=5e-7), key
        assert rows[key]["bowker_df"] == 3
    assert rows[("J", "majority")]["stuart_maxwell_df"] == 2
    lb = rows[("L", "B")]
    assert lb["bowker_chi2"] == pytest.approx(5) and lb["bowker_p"] == pytest.approx(0.1717971, abs=5e-8)
    assert lb["stuart_maxwell_chi2"] == pytest.approx(4.5) and lb["stuart_maxwell_p"] == pytest.approx(0.1053992, abs=5e-8)
    # the single-judge table's agreement numbers do not change with a second judge
    one = judge_table(_long({k: v for k, v in WIDE.items() if k != "L"}), "J", n_resamples=500, n_min=9).table.head(4)
    assert one.drop("reason").equals(t.head(4).drop("reason"))
    assert res.confusion.columns[0] == "judge" and set(res.confusion["judge"]) == {"J", "L"}
    # the mean-difference CI is the percentile bootstrap over units of mean(ŷ − y)
    la = rows[("L", "A")]
    d = np.array(WIDE["L"], float) - np.array(WIDE["A"], float)
    ref = stats.bootstrap((d,), np.mean, method="percentile", n_resamples=500, rng=np.random.default_rng(0))
    assert (la["diff_ci_low"], la["diff_ci_high"]) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-12)
    with pytest.raises(ConfigError, match="twice"):
        judge_table(_long(WIDE), ["J", "J"])


@pytest.mark.parametrize("seed", range(6))
def test_symmetry_tests_equal_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 6))
    t = rng.integers(1, 12, (q, q)).astype(float)  # every category discordant
    res = symmetry_tests(t)
    st = SquareTable(t, shift_zeros=False)
    sym, hom = st.symmetry(), st.homogeneity()
    assert res["bowker_chi2"] == pytest.approx(sym.statistic, abs=1e-9) and res["bowker_p"] == pytest.approx(sym.pvalue, abs=1e-9)
    assert res["bowker_df"] == sym.df
    assert res["stuart_maxwell_chi2"] == pytest.approx(hom.statistic, abs=1e-9)
    assert res["stuart_maxwell_p"] == pytest.approx(hom.pvalue, abs=1e-9) and res["stuart_maxwell_df"] == hom.df
    over, under = int(np.triu(t, 1).sum()), int(np.tril(t, -1).sum())
    assert res["sign_p"] == pytest.approx(stats.binomtest(over, over + under).pvalue, abs=1e-12)
    if q == 2:  # both equal McNemar's chi2 without continuity correction
        mc = (t[0, 1] - t[1, 0]) ** 2 / (t[0, 1] + t[1, 0])
        assert res["bowker_chi2"] == pytest.approx(mc) and res["stuart_maxwell_chi2"] == pytest.approx(mc)


def test_symmetry_edge_cases() -> None:
    none = symmetry_tests(np.diag([3.0, 4.0, 2.0]))
    assert none["reasons"] == ["no_discordant"] and none["sign_p"] == 1 and none["bowker_chi2"] == 0 and none["bowker_p"] == 1
    assert none["stuart_maxwell_chi2"] == 0 and np.isnan(none["stuart_maxwell_df"]) and none["stuart_maxwell_p"] == 1
    # a category without discordant units is left out of Stuart–Maxwell (statsmodels gives NaN instead)
    t = np.array([[5.0, 2.0, 0.0], [1.0, 4.0, 0.0], [0.0, 0.0, 3.0]])
    r = symmetry_tests(t)
    assert r["stuart_maxwell_df"] == 1 and r["stuart_maxwell_chi2"] == pytest.approx(1 / 3)
    assert r["bowker_df"] == 3 and r["bowker_chi2"] == pytest.approx(1 / 3)


def test_na_codes_and_negative_warning() -> None:
    r = pl.DataFrame({"criterion": ["tone"] * 6 + ["x"] * 2, "score": [1, 0, -1, -1, 1, -1, -1, -2]})
    warn = negative_category_warnings(r)
    assert warn == ["warning: ratings: criterion 'tone': score -1 (3 ratings) is a category; if it means \"not applicable\", pass --na -1"]
    notes: list[str] = []
    out = drop_na_codes(r, [-1, -9], log=notes.append)
    assert out.height == 4 and notes == ["recode -1 -> missing: 4 ratings; -9 -> missing: 0 ratings"]
    assert negative_category_warnings(out) == []
