"""Tests for two-rater agreement (statistics.md §3)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.pairwise_agreement import (
    cohen_kappa,
    contingency_table,
    gwet_ac,
    krippendorff_alpha,
    percent_agreement,
    scott_pi,
    weights_matrix,
)

IRRCAC = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
ORDINAL = np.array([[20, 5, 1], [4, 30, 6], [1, 7, 26]])


def test_weights_matrix() -> None:
    np.testing.assert_array_equal(weights_matrix(3), np.eye(3))
    np.testing.assert_allclose(weights_matrix(3, "linear"), [[1, 0.5, 0], [0.5, 1, 0.5], [0, 0.5, 1]])
    np.testing.assert_allclose(weights_matrix(3, "quadratic"), [[1, 0.75, 0], [0.75, 1, 0.75], [0, 0.75, 1]])
    np.testing.assert_allclose(weights_matrix(3, "quadratic", np.array([0, 0.5, 1])), weights_matrix(3, "quadratic"))
    np.testing.assert_array_equal(weights_matrix(2, "quadratic"), np.eye(2))
    with pytest.raises(ConfigError):
        weights_matrix(3, "cubic")  # type: ignore[arg-type]


def test_irrcac_reference_nominal() -> None:
    assert float(percent_agreement(IRRCAC)) == pytest.approx(0.89, abs=1e-12)
    assert float(cohen_kappa(IRRCAC)) == pytest.approx(0.7964094, abs=1e-6)
    assert float(scott_pi(IRRCAC)) == pytest.approx(0.7962397, abs=1e-6)
    assert float(gwet_ac(IRRCAC)) == pytest.approx(0.8493305, abs=1e-6)
    assert float(krippendorff_alpha(IRRCAC)) == pytest.approx(0.7972585, abs=1e-6)


@pytest.mark.parametrize(("kind", "ac2", "alpha"), [("quadratic", 0.940, 0.893), ("linear", 0.900, 0.844)])
def test_irrcac_reference_weighted(kind: str, ac2: float, alpha: float) -> None:
    w = weights_matrix(3, kind)  # type: ignore[arg-type]
    assert float(gwet_ac(IRRCAC, w)) == pytest.approx(ac2, abs=5e-4)
    assert float(krippendorff_alpha(IRRCAC, w)) == pytest.approx(alpha, abs=5e-4)


def test_ordinal_reference() -> None:
    w = weights_matrix(3, "quadratic")
    assert float(percent_agreement(ORDINAL, w)) == pytest.approx(0.925, abs=5e-4)
    assert float(cohen_kappa(ORDINAL, w)) == pytest.approx(0.743, abs=5e-4)
    assert float(gwet_ac(ORDINAL, w)) == pytest.approx(0.7828, abs=5e-5)
    assert float(krippendorff_alpha(ORDINAL, w)) == pytest.approx(0.7443, abs=5e-5)


def _paradox_table(prevalence: float, pa: float, n: int = 1000) -> np.ndarray:
    """2x2 counts with symmetric disagreement, pooled prevalence and percent agreement as given."""
    off = (1 - pa) / 2 * n
    pos = prevalence * n - off
    return np.array([[n - pos - 2 * off, off], [off, pos]])


@pytest.mark.parametrize(
    ("prevalence", "pa", "kappa", "ac1", "alpha"),
    [(0.82, 0.90, 0.661, 0.858, 0.661), (0.94, 0.92, 0.291, 0.910, 0.291), (0.50, 0.90, 0.800, 0.800, 0.800)],
)
def test_kappa_paradox(prevalence: float, pa: float, kappa: float, ac1: float, alpha: float) -> None:
    t = _paradox_table(prevalence, pa)
    assert float(percent_agreement(t)) == pytest.approx(pa, abs=1e-12)
    assert float(cohen_kappa(t)) == pytest.approx(kappa, abs=5e-4)
    assert float(gwet_ac(t)) == pytest.approx(ac1, abs=5e-4)
    assert float(krippendorff_alpha(t)) == pytest.approx(alpha, abs=5e-4)


def test_krippendorff_package_default_is_interval_trap() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    a, b = _units_from_table(IRRCAC)
    data = np.vstack([a, b]).astype(float)
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="nominal") == pytest.approx(0.79726, abs=1e-5)
    assert krippendorff.alpha(reliability_data=data) == pytest.approx(0.8926, abs=1e-4)  # interval default


def _units_from_table(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = t.shape[0]
    a = np.repeat(np.repeat(np.arange(q), q), t.ravel().astype(int))
    b = np.repeat(np.tile(np.arange(q), q), t.ravel().astype(int))
    return a, b


@pytest.mark.parametrize("seed", range(6))
def test_against_oracles(seed: int) -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 5))
    n = int(rng.integers(30, 120))
    a = rng.integers(0, q, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, q, n))
    t = contingency_table(a, b, q)
    assert t.sum() == n
    for kind, weights in (("identity", None), ("linear", "linear"), ("quadratic", "quadratic")):
        expected = sklearn_metrics.cohen_kappa_score(a, b, weights=weights, labels=np.arange(q))
        assert float(cohen_kappa(t, weights_matrix(q, kind))) == pytest.approx(expected, abs=1e-10)  # type: ignore[arg-type]
    data = np.vstack([a, b]).astype(float)
    for kind, level in (("identity", "nominal"), ("quadratic", "interval")):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=np.arange(q))
        assert float(krippendorff_alpha(t, weights_matrix(q, kind))) == pytest.approx(expected, abs=1e-10)  # type: ignore[arg-type]


def test_batched_tables_and_degenerate() -> None:
    stack = np.stack([IRRCAC, ORDINAL, np.array([[10, 0, 0], [0, 0, 0], [0, 0, 0]])])
    out = cohen_kappa(stack)
    assert out.shape == (3,)
    assert out[0] == pytest.approx(cohen_kappa(IRRCAC))
    assert np.isnan(out[2])  # one category only: p_e = 1
    assert np.isnan(krippendorff_alpha(stack)[2])
    assert percent_agreement(stack)[2] == 1.0


# ---------------------------------------------------------------- agreement_table


def _long_ratings(seed: int = 0, n: int = 80, raters: tuple[str, ...] = ("alice", "bob")) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        truth_bin = rng.random() < 0.7
        truth_ord = rng.integers(0, 3) / 2
        for r in raters:
            rows.append((f"ex{i:03d}", r, "binary_c", float(truth_bin if rng.random() < 0.85 else not truth_bin)))
            rows.append((f"ex{i:03d}", r, "ordinal_c", float(truth_ord if rng.random() < 0.7 else rng.integers(0, 3) / 2)))
    return pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row")


def test_agreement_table_values_and_columns() -> None:
    ratings = _long_ratings()
    out = agreement_table(ratings, n_resamples=300, seed=1)
    assert out.columns[:12] == [
        "criterion", "n_units", "n_raters", "n_ratings", "exact", "fleiss_kappa", "krippendorff_alpha",
        "alpha_ordinal", "alpha_interval", "gwet_ac1", "alpha_ci_low", "alpha_ci_high",
    ]  # fmt: skip
    assert out.columns[12:19] == ["n", "pa", "prevalence", "kappa", "scott_pi", "ac1", "alpha_nominal"]
    assert out.columns[-3:] == ["rater_a", "rater_b", "reason"]
    assert {"kappa_quadratic", "ac2_quadratic", "alpha_quadratic", "kappa_ci_low", "alpha_quadratic_ci_high"} <= set(out.columns)
    assert out["criterion"].to_list() == ["binary_c", "ordinal_c"]
    assert out["n"].to_list() == [80, 80]
    # recompute the ordinal row by hand
    wide = ratings.filter(pl.col("criterion") == "ordinal_c").pivot(on="rater", index="exchange_id", values="score")
    a = (wide["alice"].to_numpy() * 2).astype(int)
    b = (wide["bob"].to_numpy() * 2).astype(int)
    t = contingency_table(a, b, 3)
    row = out.row(1, named=True)
    assert row["kappa"] == pytest.approx(float(cohen_kappa(t)), abs=1e-12)
    assert row["alpha_quadratic"] == pytest.approx(float(krippendorff_alpha(t, weights_matrix(3, "quadratic"))), abs=1e-12)
    # two complete raters: the many-rater block equals the two-rater one where they coincide
    assert row["krippendorff_alpha"] == pytest.approx(row["alpha_nominal"], abs=1e-12)
    assert row["gwet_ac1"] == pytest.approx(row["ac1"], abs=1e-12)
    assert row["exact"] == pytest.approx(row["pa"], abs=1e-12)
    assert row["fleiss_kappa"] == pytest.approx(row["scott_pi"], abs=1e-12)
    assert row["alpha_interval"] == pytest.approx(row["alpha_quadratic"], abs=1e-12)
    assert row["prevalence"] == pytest.approx(((a == 2).sum() + (b == 2).sum()) / 160)
    for stat in ("pa", "kappa", "ac1", "alpha_nominal", "ac2_quadratic"):
        assert row[f"{stat}_ci_low"] <= row[stat] <= row[f"{stat}_ci_high"]
    # binary criterion: ordinal columns not applicable
    assert np.isnan(out.row(0, named=True)["kappa_quadratic"])
    assert out["reason"].to_list() == ["fleiss_80_of_80_units_with_2_ratings"] * 2
    # reproducible with the seed
    assert out.equals(agreement_table(ratings, n_resamples=300, seed=1))


def test_agreement_table_binary_only_has_no_ordinal_columns() -> None:
    ratings = _long_ratings().filter(pl.col("criterion") == "binary_c")
    out = agreement_table(ratings, n_resamples=0)
    assert "kappa_quadratic" not in out.columns
    assert np.isnan(out["kappa_ci_low"][0])


def test_agreement_reasons() -> None:
    ratings = _long_ratings(n=8)
    out = agreement_table(ratings, n_resamples=50)
    assert out["reason"].to_list() == ["too_few;fleiss_8_of_8_units_with_2_ratings"] * 2
    assert out["kappa"].is_nan().all()
    const = _long_ratings(n=20).with_columns(pl.lit(1.0).alias("score"))
    out = agreement_table(const, n_resamples=50)
    assert out["reason"][0] == "constant;fleiss_20_of_20_units_with_2_ratings"
    assert out["pa"][0] == 1.0 and np.isnan(out["kappa"][0])
    assert out["exact"][0] == 1.0 and np.isnan(out["krippendorff_alpha"][0]) and np.isnan(out["gwet_ac1"][0])


def test_agreement_more_than_two_raters() -> None:
    ratings = _long_ratings(raters=("carol", "alice", "bob"))
    out = agreement_table(ratings, n_resamples=0)
    assert out["rater_a"][0] == "alice" and out["rater_b"][0] == "bob"
    assert out["reason"][0] == "fleiss_80_of_80_units_with_3_ratings;first_two_of_3_raters"
    assert out["n_raters"][0] == 3 and out["n_ratings"][0] == 240
    out = agreement_table(ratings, n_resamples=0, raters=("bob", "carol"))
    assert out["reason"][0] == "fleiss_80_of_80_units_with_3_ratings"
    with pytest.raises(ConfigError):
        agreement_table(ratings, raters=("bob", "dave"))


def test_agreement_input_errors() -> None:
    ratings = _long_ratings()
    one = agreement_table(ratings.filter(pl.col("rater") == "alice"), n_resamples=20)
    assert one["reason"].to_list() == ["one_rater", "one_rater"]
    assert one["n_raters"].to_list() == [1, 1] and one["n_units"].to_list() == [80, 80]
    numeric = [c for c, dt in one.schema.items() if dt == pl.Float64]
    assert all(one[c].is_nan().all() for c in numeric)
    with pytest.raises(InputSchemaError, match="more than one score"):
        agreement_table(pl.concat([ratings, ratings.head(1)]))
    with pytest.raises(InputSchemaError, match="missing column"):
        agreement_table(ratings.drop("rater"))
