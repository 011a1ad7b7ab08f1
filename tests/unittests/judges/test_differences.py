"""judges.md §3.3: the --differences table, on the worked example (§3.5) and against scikit-learn."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score

from judges import worked_example as ex
from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.judge_differences import DIFFERENCE_COLUMNS, differences_table

LABELS = dict(zip(ex.IDS, ex.DIALOGUE, strict=True))


def _pick(t: pl.DataFrame, **where: object) -> dict:
    rows = t.filter(*[pl.col(k) == v for k, v in where.items()]).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def test_worked_example_dialogues() -> None:
    t = differences_table(ex.ratings(), ["J", "K"], n_resamples=2000, seed=0, cluster_labels=LABELS)
    assert t.columns == DIFFERENCE_COLUMNS
    r = _pick(t, contrast="judges", reference="A", measure="cohen_kappa")
    assert (r["a"], r["b"], r["estimate_a"]) == ("J", "K", pytest.approx(0.4))
    assert r["estimate_b"] == pytest.approx(0.4406780, abs=5e-8) and r["estimate"] == pytest.approx(-0.0406780, abs=5e-8)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((-0.2092571, 0.1311208), abs=5e-8)
    assert r["n"] == 30 and r["n_clusters"] == 12
    h = _pick(t, contrast="judge_vs_humans", a="J", measure="cohen_kappa")
    assert h["b"] == "humans" and h["reference"] is None
    assert h["estimate_a"] == pytest.approx(0.35) and h["estimate_b"] == pytest.approx(0.7983193, abs=5e-8)
    assert h["estimate"] == pytest.approx(-0.4483193, abs=5e-8)
    assert (h["ci_low"], h["ci_high"]) == pytest.approx((-0.8015267, -0.1215440), abs=5e-8)
    # humans sorted then majority, per judge pair; then one judge_vs_humans block per judge; five measures each
    assert t.height == (3 + 2) * 5
    assert t.filter(pl.col("contrast") == "judges")["reference"].unique(maintain_order=True).to_list() == ["A", "B", "majority"]


def test_estimates_equal_sklearn() -> None:
    t = differences_table(ex.ratings(), ["J", "K"], n_resamples=0)
    r = _pick(t, contrast="judge_vs_humans", a="K", measure="cohen_kappa")
    kj = [cohen_kappa_score(ex.A, ex.K), cohen_kappa_score(ex.B, ex.K)]
    assert r["estimate"] == pytest.approx(np.mean(kj) - cohen_kappa_score(ex.A, ex.B), abs=1e-12)
    acc = _pick(t, contrast="judges", reference="B", measure="accuracy")
    assert acc["estimate"] == pytest.approx(np.mean(np.array(ex.J) == ex.B) - np.mean(np.array(ex.K) == ex.B), abs=1e-12)
    assert np.isnan(acc["ci_low"]) and acc["n_clusters"] is None


def test_common_units_only() -> None:
    """A judges contrast is on the units both judges and the reference rated."""
    df = ex.ratings().filter(~((pl.col("rater") == "K") & pl.col("exchange_id").is_in(ex.IDS[:5])))
    r = _pick(differences_table(df, ["J", "K"], n_resamples=0), contrast="judges", reference="A", measure="accuracy")
    acc = lambda x: np.mean(np.array(x)[5:] == np.array(ex.A)[5:])  # noqa: E731
    assert r["n"] == 25 and r["estimate"] == pytest.approx(acc(ex.J) - acc(ex.K))


def test_nothing_to_contrast() -> None:
    with pytest.raises(ConfigError, match="nothing to contrast"):
        differences_table(ex.ratings({"A": ex.A, "J": ex.J}), "J", n_resamples=10)
