"""κ-paradox indices and per-rater endorsement (effects.md §8, worked examples §11.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.kappa_paradox import PARADOX_COLUMNS, paradox_indices, per_rater_table
from tutormetrics.psychometrics.pairwise_agreement import cohen_kappa


def long_from_table(table: list[list[int]]) -> pl.DataFrame:
    """Two raters' ratings of units whose (A, B) scores fill ``table`` (rows A, columns B)."""
    rows, unit = [], 0
    for a, line in enumerate(table):
        for b, count in enumerate(line):
            for _ in range(count):
                rows += [{"exchange_id": f"u{unit:03d}", "rater": "A", "criterion": "c", "score": float(a)},
                         {"exchange_id": f"u{unit:03d}", "rater": "B", "criterion": "c", "score": float(b)}]  # fmt: skip
                unit += 1
    return pl.DataFrame(rows)


def test_spec_table_and_bootstrap_cis() -> None:
    out = agreement_table(long_from_table([[10, 3], [7, 80]]), n_resamples=2000, seed=0).row(0, named=True)
    want = {"pa": 0.90, "prevalence": 0.85, "kappa": 0.6090696, "ac1": 0.8657718, "pabak": 0.80,
            "prevalence_index": 0.70, "bias_index": 0.04, "p_pos": 0.9411765, "p_neg": 0.6666667}  # fmt: skip
    for k, v in want.items():
        assert out[k] == pytest.approx(v, abs=5e-8), k
    cis = {"kappa": (0.3627416, 0.8091603), "pabak": (0.68, 0.90), "prevalence_index": (0.57, 0.82),
           "bias_index": (-0.02, 0.10), "p_pos": (0.9024390, 0.9720670), "p_neg": (0.4347826, 0.8387097)}  # fmt: skip
    for k, (lo, hi) in cis.items():
        assert out[f"{k}_ci_low"] == pytest.approx(lo, abs=5e-8), k
        assert out[f"{k}_ci_high"] == pytest.approx(hi, abs=5e-8), k
    cols = list(agreement_table(long_from_table([[10, 3], [7, 80]]), n_resamples=0).columns)
    i = cols.index("alpha_nominal")
    assert cols[i + 1 : i + 6] == list(PARADOX_COLUMNS)
    j = cols.index("alpha_nominal_ci_high")
    assert cols[j + 1 : j + 11] == [f"{k}_ci_{s}" for k in PARADOX_COLUMNS for s in ("low", "high")]
    assert cols[-3:] == ["rater_a", "rater_b", "reason"]


def test_paradox_row_and_three_categories() -> None:
    out = paradox_indices(np.array([[2.0, 4.0], [4.0, 90.0]]))
    assert float(out["pabak"]) == pytest.approx(0.84, abs=1e-12)
    assert float(out["prevalence_index"]) == pytest.approx(0.88, abs=1e-12) and float(out["bias_index"]) == 0.0
    assert float(out["p_pos"]) == pytest.approx(0.9574468, abs=5e-8) and float(out["p_neg"]) == pytest.approx(1 / 3, abs=1e-12)
    three = paradox_indices(np.array([[30.0, 3, 1], [2, 29, 2], [1, 2, 30]]))
    pa = 89 / 100
    assert float(three["pabak"]) == pytest.approx((3 * pa - 1) / 2, abs=1e-12)
    assert all(np.isnan(three[k]) for k in PARADOX_COLUMNS[1:])
    assert all(np.isnan(v) for v in paradox_indices(np.array([[5.0]])).values())
    assert np.isnan(paradox_indices(np.array([[5.0, 0.0], [0.0, 0.0]]))["p_pos"])


def test_byrt_identity_on_random_tables() -> None:
    rng = np.random.default_rng(3)
    tables = rng.integers(0, 40, size=(500, 2, 2)).astype(float) + 1
    out = paradox_indices(tables)
    pabak, pi, bi = out["pabak"], out["prevalence_index"], out["bias_index"]
    np.testing.assert_allclose((pabak - pi**2 + bi**2) / (1 - pi**2 + bi**2), cohen_kappa(tables), atol=1e-13)
    # definitions from the cells
    a, b, c, d = tables[:, 1, 1], tables[:, 1, 0], tables[:, 0, 1], tables[:, 0, 0]
    n = tables.sum((1, 2))
    np.testing.assert_allclose(out["p_pos"], 2 * a / (2 * a + b + c), rtol=1e-15)
    np.testing.assert_allclose(pi, (a - d) / n, rtol=1e-15)


def test_per_rater_table_and_bias_index() -> None:
    long = long_from_table([[10, 3], [7, 80]])
    cleaned = long.rename({"exchange_id": "_id", "rater": "_rater", "criterion": "_crit", "score": "_score"})
    per = per_rater_table(cleaned)
    assert per.columns == ["criterion", "rater", "n", "endorsed", "rate", "top_score"]
    assert per["endorsed"].to_list() == [87, 83] and per["n"].to_list() == [100, 100]
    bi = agreement_table(long, n_resamples=0)["bias_index"][0]
    assert per["rate"][0] - per["rate"][1] == pytest.approx(bi, abs=1e-15)
    assert per_rater_table(cleaned, levels=[0.0, 1.0, 2.0])["endorsed"].to_list() == [0, 0]


R_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "r"


def _check_against_epir(ref: pl.DataFrame) -> None:
    for row in ref.iter_rows(named=True):
        a, b, c, d = (float(row[k]) for k in "abcd")
        table = np.array([[d, c], [b, a]])  # rows A (0, 1), columns B (0, 1)
        out = paradox_indices(table)
        assert float(out["pabak"]) == pytest.approx(row["pabak"], abs=1e-12), row["table"]
        assert float(out["prevalence_index"]) == pytest.approx(row["pindex"], abs=1e-12), row["table"]
        assert float(out["bias_index"]) == pytest.approx(row["bindex"], abs=1e-12), row["table"]
        assert float(cohen_kappa(table)) == pytest.approx(row["kappa"], abs=1e-12), row["table"]


def test_indices_equal_epir_fixture() -> None:
    """epiR::epi.kappa (tests/fixtures/r/kappa_paradox.R) on five tables: PABAK, PI, BI and κ, signs included."""
    _check_against_epir(pl.read_csv(R_DIR / "kappa_paradox.csv"))


def test_indices_equal_epir_rerun(tmp_path) -> None:
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("R not installed")
    run = subprocess.run(["Rscript", str(R_DIR / "kappa_paradox.R")], capture_output=True, text=True, timeout=120, check=False)
    if run.returncode != 0:
        pytest.skip(f"epiR not available: {run.stderr.strip()[:200]}")
    (tmp_path / "k.csv").write_text(run.stdout)
    _check_against_epir(pl.read_csv(tmp_path / "k.csv"))
