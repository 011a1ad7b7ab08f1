"""CLI tests of the explanatory-MFRM options (effects.md): byte-identical outputs under row shuffles,
--effects, --topics, --covariate-scale, --recode, --per-rater, --facets-plot and the exit-2 rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from tutormetrics.commands import agree, compare, theta
from tutormetrics.commands.validity import register as register_validity
from tutormetrics.psychometrics.mfrm.mml import simulate_mfrm


def register(app: typer.Typer) -> None:
    """The psychometrics commands on a bare app."""
    for module in (theta, agree, compare):
        module.register(app)


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    register_validity(app)
    return app


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def _shuffle_keep_first_appearance(df: pl.DataFrame, col: str, seed: int) -> pl.DataFrame:
    """Rows permuted, then the first row of each criterion (input order) moved to the front, so the
    display order — which effects.md §2.2 lets follow the input — is unchanged."""
    shuf = df.with_row_index("_k").sample(fraction=1.0, shuffle=True, seed=seed)
    firsts = df.with_row_index("_k").group_by(col, maintain_order=True).first()["_k"]
    head = shuf.filter(pl.col("_k").is_in(firsts.implode())).sort("_k")
    return pl.concat([head, shuf.filter(~pl.col("_k").is_in(firsts.implode()))]).drop("_k")


@pytest.fixture
def study(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(4)
    ratings, truth = simulate_mfrm(n_items=120, seed=4, gamma=[0.4, 0.3, 0.5, 0.2, 0.6])
    n = truth.height
    # partial credit on one rater so ties come from different float paths
    ratings = ratings.with_columns(
        pl.when((pl.col("rater") == "r2") & (pl.col("score") == 1) & (pl.int_range(pl.len()) % 3 == 0))
        .then(0.5).otherwise(pl.col("score")).alias("score")
    )  # fmt: skip
    cov = truth.select("exchange_id", suff=(pl.col("v") > -1.0).cast(pl.Int64), length=pl.col("v") * 80 + 300)
    topics = pl.DataFrame({"exchange_id": truth["exchange_id"], **{f"t_{k}": (rng.random(n) < 0.3).astype(int) for k in "abcd"}})
    metrics = pl.DataFrame({"exchange_id": truth["exchange_id"], "m1": rng.standard_normal(n), "m2": rng.integers(0, 5, n) * 1.0})
    p = {k: tmp_path / f"{k}.csv" for k in ("ratings", "cov", "topics", "metrics", "ratings2", "cov2", "topics2", "metrics2")}
    ratings.write_csv(p["ratings"])
    cov.write_csv(p["cov"])
    topics.write_csv(p["topics"])
    metrics.write_csv(p["metrics"])
    _shuffle_keep_first_appearance(ratings, "criterion", 1).write_csv(p["ratings2"])
    cov.sample(fraction=1.0, shuffle=True, seed=2).write_csv(p["cov2"])
    topics.sample(fraction=1.0, shuffle=True, seed=3).write_csv(p["topics2"])
    metrics.sample(fraction=1.0, shuffle=True, seed=5).write_csv(p["metrics2"])
    return p


def test_shuffled_inputs_change_no_byte(app, runner, study, tmp_path) -> None:
    outs = []
    for tag, (r, c, t, m) in {"a": ("ratings", "cov", "topics", "metrics"), "b": ("ratings2", "cov2", "topics2", "metrics")}.items():
        files = {k: tmp_path / f"{k}_{tag}.csv" for k in ("theta", "facets", "effects", "corr")}
        res = runner.invoke(app, ["theta", str(study[r]), "-o", str(files["theta"]), "--facets", str(files["facets"]),
                                  "--covariates", str(study[c]), "--topics", str(study[t]), "--effects", str(files["effects"]),
                                  "--effect-draws", "500", "--recode", "0.5=0"])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert "recode 0.5 -> 0:" in res.output and "covariates: suff raw (0/1), length z (mean" in res.output
        assert "effects: 30 rows, reference theta=0; s=0 (mean rater); suff=0 (raw); length=" in res.output
        res = runner.invoke(app, ["validate", str(study[m]), "--theta", str(files["theta"]), "-o", str(files["corr"]),
                                  "--ci", "percentile", "--n-resamples", "200"])  # fmt: skip
        assert res.exit_code == 0, res.output
        outs.append(files)
    for k in ("theta", "facets", "effects", "corr"):
        assert outs[0][k].read_bytes() == outs[1][k].read_bytes(), k
    eff = pl.read_csv(outs[0]["effects"])
    assert eff["effect"].to_list() == ["covariate"] * 10 + ["topic"] * 20
    assert eff.filter(pl.col("term") == "length")["contrast"][0].endswith("(+1 sd)")


def test_covariate_scale_and_topic_col(app, runner, study, tmp_path) -> None:
    out, facets = tmp_path / "t.csv", tmp_path / "f.csv"
    res = runner.invoke(app, ["theta", str(study["ratings"]), "-o", str(out), "--facets", str(facets), "--covariates",
                              str(study["cov"]), "--covariate-col", "suff", "--covariate-scale", "z", "--topics",
                              str(study["topics"]), "--topic-col", "t_a,t_b"])  # fmt: skip
    assert res.exit_code == 0, res.output
    ft = pl.read_csv(facets)
    assert set(ft["facet"]) >= {"covariate:suff", "topic:t_a", "topic:t_b"} and "topic:t_c" not in set(ft["facet"])
    assert ft.filter(pl.col("facet") == "covariate:suff")["reference"][0].startswith("z: per 1 sd (mean ")
    assert "(mean; z)" in ft.filter(pl.col("facet") == "baseline_probability")["reference"][0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--effects", "E.csv"], "nothing to contrast"),
        (["--covariates", "COV", "--effects", "E.csv", "--effect-draws", "50"], "too few"),
        (["--facets-plot", "F.gif"], "figure format"),
        (["--covariate-scale", "log"], "covariate-scale"),
        (["--recode", "a=0"], "not a number"),
        (["--recode", "1=0", "--recode", "1=2"], "two values"),
        (["--spec", "M0="], "--spec needs --compare-models"),
        (["--topic-col", "t_a"], "--topic-col needs --topics"),
        (["--topics", "COV"], "topic column"),
        (["--method", "nuts", "--compare-models", "L.csv", "--covariates", "COV", "--spec", "M0=", "--spec", "M1=nope"], "unknown term"),
        (["--method", "nuts", "--compare-models", "L.csv", "--covariates", "COV", "--spec", "M0=", "--spec", "M0=suff"], "repeated"),
        (["--method", "nuts", "--compare-models", "L.csv", "--covariates", "COV", "--spec", "M0="], "at least two"),
        (["--method", "nuts", "--compare-models", "L.csv", "--covariates", "COV", "--spec", "M0=", "--spec", "M1=topics"], "needs --topics"),
    ],
)
def test_theta_explanatory_errors_exit_2(app, runner, study, tmp_path, extra, message) -> None:
    extra = [str(study["cov"]) if e == "COV" else str(tmp_path / e) if e.endswith((".csv", ".gif")) else e for e in extra]
    res = runner.invoke(app, ["theta", str(study["ratings"]), "-o", str(tmp_path / "o.csv"), *extra])
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_agree_recode_and_per_rater(app, runner, study, tmp_path) -> None:
    out, per = tmp_path / "a.csv", tmp_path / "per.csv"
    res = runner.invoke(app, ["agree", str(study["ratings"]), "-o", str(out), "--recode", "0.5=0", "--per-rater", str(per),
                              "--n-resamples", "50"])  # fmt: skip
    assert res.exit_code == 0, res.output
    table, per_t = pl.read_csv(out), pl.read_csv(per)
    assert {"pabak", "prevalence_index", "bias_index", "p_pos", "p_neg", "pabak_ci_low"} <= set(table.columns)
    assert per_t.height == 10 and (per_t["top_score"] == 1.0).all()
    rates = per_t.filter(pl.col("criterion") == "c1")["rate"].to_list()
    assert table["bias_index"][0] == pytest.approx(rates[0] - rates[1], abs=1e-12)


@pytest.mark.parametrize(
    ("kind", "columns", "message"),
    [
        ("covariates", {"x1": "length", "x2": "length2"}, "covariate 'x2' is a linear function of covariate 'x1'"),
        ("covariates", {"f1": "suff", "f2": "suff"}, "covariate 'f2' is the same column as covariate 'f1'"),
        ("topics", {"t1": "t_a", "t2": "t_a", "t3": "t_b"}, "topic 't2' is the same column as topic 't1'"),
        ("groups", {"g": "exchange_id"}, "every exchange is its own group"),
        ("groups", {"g": "one"}, "groups: column 'g' has one level ('all')"),
    ],
    ids=["collinear", "duplicated-0/1", "identical-topics", "group-per-exchange", "one-level-group"],
)
def test_theta_effects_refuse_terms_that_cannot_be_told_apart(app, runner, study, tmp_path, kind, columns, message) -> None:
    """Issue 35: separate ΔP for terms that cannot be told apart was exit 0; now exit 2 before the fit, naming them,
    and nothing is written."""
    cov, top = pl.read_csv(study["cov"]), pl.read_csv(study["topics"])
    source = cov.join(top, on="exchange_id").with_columns(length2=pl.col("length") * 2 + 3, one=pl.lit("all"))
    bad = tmp_path / f"{kind}.csv"
    source.select("exchange_id", *[pl.col(src).alias(dst) for dst, src in columns.items()]).write_csv(bad)
    out, eff = tmp_path / "o.csv", tmp_path / "e.csv"
    res = runner.invoke(app, ["theta", str(study["ratings"]), "-o", str(out), f"--{kind}", str(bad), "--effects", str(eff),
                              "--effect-draws", "200"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert not out.exists() and not eff.exists()
