"""Terms that cannot be told apart are refused before any fit (docs/design/effects.md#identifiability; issue 35):
collinear or duplicated covariates, identical topics, a topic equal to a covariate or a group, one group per
exchange, a one-level group column — for MML, NUTS and ``theta_study`` alike; full-rank designs still fit."""

from __future__ import annotations

import time
import warnings

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import InputSchemaError
from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
from tutormetrics.psychometrics.mfrm.design import prepare_ratings
from tutormetrics.psychometrics.mfrm.identify import check_identified
from tutormetrics.psychometrics.mfrm.study import theta_study
from tutormetrics.psychometrics.ratings import Ratings

N = 60
RATINGS, TRUTH = simulate_mfrm(n_items=N, seed=1)
IDS = TRUTH["exchange_id"].to_list()
_rng = np.random.default_rng(0)
X1, X2 = _rng.normal(size=N), _rng.normal(size=N)
FLAG = (_rng.random(N) < 0.3).astype(float)
MULTI = (_rng.random((N, 4)) < 0.4).astype(int)  # multi-hot, some exchanges with no topic
SINGLE = np.eye(3, dtype=int)[_rng.integers(0, 3, N)]  # one topic per exchange
GROUP = np.array(list("abcd") * (N // 4))


def table(**cols) -> pl.DataFrame:
    return pl.DataFrame({"exchange_id": IDS, **cols})


def topics(m: np.ndarray, names: str = "t1 t2 t3 t4") -> pl.DataFrame:
    return table(**{n: m[:, k] for k, n in enumerate(names.split()[: m.shape[1]])})


REFUSED = {
    "collinear covariates": (dict(covariates=table(x1=X1, x2=2 * X1 + 3)), ["covariate 'x2'", "covariate 'x1'", "linear function"]),
    "collinear raw covariates": (dict(covariates=table(x1=X1, x2=2 * X1 + 3), covariate_scale="raw"), ["'x2'", "'x1'"]),
    "duplicated 0/1 covariates": (dict(covariates=table(f1=FLAG, f2=FLAG)), ["covariate 'f2' is the same column as covariate 'f1'"]),
    "complementary 0/1 covariates": (dict(covariates=table(f1=FLAG, f2=1 - FLAG)), ["'f2'", "'f1'"]),
    "three collinear covariates": (dict(covariates=table(a=X1, b=X2, c=X1 - 2 * X2)),
                                   ["covariate 'a', covariate 'b' and covariate 'c' are linearly dependent"]),
    "identical topics": (dict(topics=topics(MULTI[:, [0, 0, 2]])), ["topic 't2' is the same column as topic 't1'"]),
    "topic equal to a covariate dummy": (dict(covariates=table(f=MULTI[:, 0] * 1.0), topics=topics(MULTI[:, :3])),
                                         ["topic 't1' is the same column as covariate 'f'"]),
    "covariate a sum of topics": (dict(covariates=table(v=(MULTI[:, 0] + MULTI[:, 1]) * 1.0), topics=topics(MULTI[:, :3])),
                                  ["covariate 'v', topic 't1' and topic 't2' are linearly dependent"]),
    "one group per exchange": (dict(groups=table(g=IDS)), ["every exchange is its own group", "θ"]),
    "one group per exchange with a covariate": (dict(groups=table(g=IDS), covariates=table(x=X1)), ["its own group"]),
    "topic equal to a group level": (dict(topics=topics(np.column_stack([GROUP == "b", MULTI[:, 1:3]]).astype(int)),
                                          groups=table(g=GROUP)), ["topic 't1' marks exactly the exchanges of group 'b'"]),
    "covariate constant within groups": (dict(covariates=table(size=np.where(GROUP < "c", 1.0, 2.5) + (GROUP == "d")),
                                              groups=table(g=GROUP)), ["covariate 'size' is constant within every group"]),
    "one-level groups": (dict(groups=table(g=["a"] * N)), ["groups: column 'g' has one level ('a')", "no group contrast"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_terms_that_cannot_be_told_apart_are_refused(case: str) -> None:
    terms, needles = REFUSED[case]
    with pytest.raises(InputSchemaError) as err:
        fit_mfrm(RATINGS, **terms)
    text = str(err.value)
    assert all(n in text for n in needles), text
    assert err.value.hint and "\n" not in err.value.args[0]


@pytest.mark.parametrize(
    "terms",
    [
        dict(covariates=table(x1=X1, x2=X2, f=FLAG)),
        dict(covariates=table(x1=X1, near=X1 + 0.1 * X2)),  # correlated (r ≈ 0.995) is not collinear
        dict(topics=topics(SINGLE)),  # one topic per exchange: the zero-sum coding fixes their common level
        dict(topics=topics(np.column_stack([MULTI[:, 0], 1 - MULTI[:, 0]]))),  # K = 2, single-label
        dict(topics=topics(np.column_stack([SINGLE, MULTI[:, 3]]))),  # a partition plus a multi-hot topic
        dict(covariates=table(x=X1, f=FLAG), topics=topics(SINGLE), groups=table(g=GROUP)),
    ],
    ids=["covariates", "correlated", "single-label", "two-complementary", "partition-plus-one", "all"],
)
def test_full_rank_designs_still_fit(terms: dict) -> None:
    res = fit_mfrm(RATINGS, **terms)
    assert res.converged
    eff = res.effects_table(n_draws=200)
    n_terms = len(res.covariate_names) + len(res.topic_names) + (len(res.group_levels) if res.group_levels else 0)
    assert eff.height == n_terms * len(res.criteria)


def test_a_derived_column_written_with_six_digits_is_refused() -> None:
    inches = np.round(X1 * 10 + 50, 6)
    cm = np.array([float(f"{v:.6g}") for v in inches * 2.54])
    with pytest.raises(InputSchemaError, match="'cm' is a linear function of covariate 'inches'"):
        prepare_ratings(RATINGS, covariates=table(inches=inches, cm=cm))


def test_theta_study_refuses_before_the_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    import tutormetrics.psychometrics.mfrm.mml as mml

    monkeypatch.setattr(mml, "_maximise_posterior", lambda *a, **k: pytest.fail("fitted"))
    with pytest.raises(InputSchemaError, match="covariate 'f2' is the same column as covariate 'f1'"):
        theta_study(Ratings.clean(RATINGS), covariates=table(f1=FLAG, f2=FLAG), effects=True)


def test_nuts_refuses_before_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pymc")
    import tutormetrics.psychometrics.mfrm.bayes as bayes

    monkeypatch.setattr(bayes, "_build_model", lambda *a, **k: pytest.fail("model built"))
    with pytest.raises(InputSchemaError, match="topic 't2' is the same column as topic 't1'"):
        bayes.fit_mfrm_bayes(RATINGS, topics=topics(MULTI[:, [0, 0, 2]]))


def test_groups_with_a_single_exchange_are_warned_about() -> None:
    groups = table(g=[*IDS[:10], *["rest"] * (N - 10)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        prepare_ratings(RATINGS, groups=groups)
    assert any("10 of 11 groups have a single exchange" in str(w.message) for w in seen)


def test_the_check_is_cheap_on_many_exchanges_and_groups() -> None:
    rng = np.random.default_rng(1)
    n = 200_000
    cov = rng.normal(size=(n, 6))
    top = (rng.random((n, 8)) < 0.3).astype(float)
    group = rng.integers(0, 5_000, n)
    start = time.perf_counter()
    check_identified(cov, [f"x{i}" for i in range(6)], top, [f"t{i}" for i in range(8)], group, [str(g) for g in range(5_000)])
    assert time.perf_counter() - start < 10  # about 0.5 s on the development machine


def _nested_raters(in_first: set[str]) -> pl.DataFrame:
    """The ratings with the raters of the exchanges in groups ``in_first`` renamed: two rater sets, no shared exchange."""
    first = {i for i, g in zip(IDS, GROUP, strict=True) if g in in_first}
    return RATINGS.with_columns(
        rater=pl.when(pl.col("exchange_id").is_in(list(first))).then("X" + pl.col("rater")).otherwise("Y" + pl.col("rater"))
    )


def test_raters_nested_in_groups_are_refused() -> None:
    with pytest.raises(InputSchemaError, match="2 sets that rate disjoint exchanges, and each set rates whole groups"):
        fit_mfrm(_nested_raters({"a", "b"}), groups=table(g=GROUP))


def test_a_covariate_that_tells_disjoint_rater_sets_apart_is_refused() -> None:
    with pytest.raises(InputSchemaError, match="covariate 'set' tells the sets apart: the rater severities"):
        fit_mfrm(_nested_raters({"a", "b"}), covariates=table(set=np.isin(GROUP, ["a", "b"]) * 1.0))


def test_disjoint_rater_sets_with_unrelated_terms_still_fit() -> None:
    res = fit_mfrm(_nested_raters({"a", "b"}), covariates=table(x=X1), topics=topics(MULTI[:, :3]))
    assert res.converged and len(res.raters) == 4
