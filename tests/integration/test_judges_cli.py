"""Issue 33: the judge options of ``agree`` and ``ppi`` end to end (``docs/guide/judges.md``): the worked examples
through the command line, equal to the library tables, the errors (exit 2, one line) and, without the new options,
the outputs of main (``tests/fixtures/judges_cli``, written by main on ``examples/data``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tutormetrics.cli import main
from tutormetrics.psychometrics.agree_options import JudgeOptions
from tutormetrics.psychometrics.judge_tables import judge_tables
from tutormetrics.psychometrics.ppi_table import ppi_plan_table, ppi_table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "judges_cli"
EXAMPLES = Path(__file__).parents[2] / "src" / "tutormetrics" / "examples" / "data"

# docs/guide/judges.md worked example: 30 replies in 12 dialogues, humans A and B, judge J and its rerun K
A = [0, 1, 1, 2, 2, 2, 1, 2, 2, 1, 1, 2, 2, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1, 0]
B = [0, 1, 0, 2, 2, 2, 1, 2, 2, 2, 1, 2, 1, 2, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1, 0]
J = [0, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 2, 2, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 2, 2, 0, 1, 2, 1]
K = [0, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 2, 2, 0, 0, 2, 1, 1, 0, 2, 0, 0, 1, 2, 2, 0, 1, 1, 1]
WORDS = [39, 28, 37, 65, 31, 12, 26, 50, 29, 40, 54, 23, 69, 88, 47, 46, 61, 83, 33, 23, 39, 14, 11, 19, 44, 41, 12, 13, 28, 26]
SIZES = [3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 2, 2]
IDS = [f"e{i:02d}" for i in range(1, 31)]
DIALOGUE = [f"d{k + 1:02d}" for k, size in enumerate(SIZES) for _ in range(size)]
# ppi worked example (docs/design/predictive.md#ppi data): 12 labelled items first, then 30 unlabelled
Y = [1.0, 0, 1, 1, .5, 1, 0, 1, 1, .5, 1, 0]
F = [1.0, 0, 1, .5, .5, 1, .5, 1, 1, 1, 1, 0]
U = [1, 1, .5, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1, 0, 1, 1, 1, .5, 1, 1]


def _ratings(raters: dict[str, list[int]]) -> pl.DataFrame:
    rows = [(i, d, name, "c", s) for name, scores in raters.items() for i, d, s in zip(IDS, DIALOGUE, scores, strict=True)]
    return pl.DataFrame(rows, schema=["exchange_id", "conversation_id", "rater", "criterion", "score"], orient="row")


@pytest.fixture
def judge_files(tmp_path: Path) -> Path:
    _ratings({"A": A, "B": B, "J": J, "K": K}).write_csv(tmp_path / "ratings.csv")
    _ratings({"A": A, "B": B, "J": J, "K": K}).drop("conversation_id").write_csv(tmp_path / "plain.csv")
    pl.DataFrame({"exchange_id": IDS, "conversation_id": DIALOGUE, "resp_words": WORDS}).write_csv(tmp_path / "M.csv")
    return tmp_path


@pytest.fixture
def ppi_files(tmp_path: Path) -> Path:
    ids = [f"x{i:02d}" for i in range(42)]
    pl.DataFrame({"exchange_id": ids, "rater": "llm", "criterion": "c", "score": F + U, "conversation_id": [f"c{i % 14}" for i in range(42)],
                  "band": ["s1" if i % 3 == 0 else "s2" for i in range(42)]}).write_csv(tmp_path / "all.csv")  # fmt: skip
    pl.DataFrame({"exchange_id": ids[:12], "rater": "h", "criterion": "c", "score": Y}).write_csv(tmp_path / "sub.csv")
    pl.DataFrame({"stratum": ["s1", "s2"], "weight": [0.5, 0.5]}).write_csv(tmp_path / "W.csv")
    return tmp_path


def _agree(d: Path, *extra: str) -> int:
    return main(["agree", str(d / "ratings.csv"), "--judge", "J", "--judge", "K", "-o", str(d / "JUDGE.csv"), *extra])


def test_agree_cluster_length_bias_differences(judge_files: Path, capsys) -> None:
    d = judge_files
    code = _agree(d, "--cluster-col", "conversation_id", "--metrics-table", str(d / "M.csv"), "--length-bias", str(d / "LB.csv"),
                  "--differences", str(d / "DIFF.csv"))  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert "independent" not in err and err.strip().splitlines()[-1].startswith("agree: judge J, K, 1 criteria, κ vs majority")
    judge = pl.read_csv(d / "JUDGE.csv")
    row = judge.filter((pl.col("judge") == "J") & (pl.col("reference") == "A") & (pl.col("criterion") == "c")).row(0, named=True)
    assert (row["kappa_ci_low"], row["kappa_ci_high"]) == pytest.approx((0.1128656, 0.6391842), abs=5e-7)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((-0.3031469, 0.2413793), abs=5e-7)
    assert (row["f1_ci_low"], row["f1_ci_high"]) == pytest.approx((0.3981403, 0.7609470), abs=5e-7)
    assert row["n_clusters"] == 12 and row["ci_method"] == "cluster_percentile"
    lb = pl.read_csv(d / "LB.csv").filter(pl.col("judge") == "J").row(0, named=True)
    assert (lb["slope"], lb["slope_se"], lb["se_method"]) == (pytest.approx(0.3668966, abs=5e-8), pytest.approx(0.0591412, abs=5e-8), "cluster")
    assert (lb["rho"], lb["rho_ci_low"], lb["rho_ci_high"]) == pytest.approx((0.4784937, 0.0875410, 0.7364648), abs=5e-7)
    diff = pl.read_csv(d / "DIFF.csv").filter(pl.col("measure") == "cohen_kappa")
    jk = diff.filter((pl.col("contrast") == "judges") & (pl.col("reference") == "A")).row(0, named=True)
    assert (jk["estimate"], jk["ci_low"], jk["ci_high"]) == pytest.approx((-0.0406780, -0.2092571, 0.1311208), abs=5e-7)
    jh = diff.filter((pl.col("contrast") == "judge_vs_humans") & (pl.col("a") == "J")).row(0, named=True)
    assert (jh["estimate"], jh["ci_low"], jh["ci_high"]) == pytest.approx((-0.4483193, -0.8015267, -0.1215440), abs=5e-7)
    lib = judge_tables(_ratings({"A": A, "B": B, "J": J, "K": K}), ["J", "K"],
                       JudgeOptions(cluster_col="conversation_id", length_bias=True, differences=True),
                       metrics=pl.read_csv(d / "M.csv"))  # fmt: skip
    for path, table in (("JUDGE.csv", lib.table), ("LB.csv", lib.length_bias), ("DIFF.csv", lib.differences)):
        assert table is not None
        assert_frame_equal(pl.read_csv(d / path), pl.read_csv(table.write_csv().encode()), check_dtypes=False)


def test_agree_replies_and_the_independence_note(judge_files: Path, capsys) -> None:
    d = judge_files
    assert _agree(d, "--metrics-table", str(d / "M.csv"), "--length-bias", str(d / "LB.csv")) == 0
    err = capsys.readouterr().err
    assert err.count("treat its replies as independent") == 1 and "--cluster-col conversation_id" in err
    lb = pl.read_csv(d / "LB.csv").filter(pl.col("judge") == "J").row(0, named=True)
    assert (lb["slope_se"], lb["slope_ci_low"], lb["slope_ci_high"]) == pytest.approx((0.0901772, 0.1901526, 0.5436405), abs=5e-7)
    assert (lb["rho_ci_low"], lb["rho_ci_high"], lb["se_method"]) == (pytest.approx(0.1460157, abs=5e-7), pytest.approx(0.7120392, abs=5e-7), "hc3")
    row = pl.read_csv(d / "JUDGE.csv").filter((pl.col("judge") == "J") & (pl.col("reference") == "A")).row(0, named=True)
    assert (row["alpha_ci_low"], row["alpha_ci_high"]) == pytest.approx((0.1127634, 0.6497031), abs=5e-7)
    assert "n_clusters" not in pl.read_csv(d / "JUDGE.csv").columns
    # the cluster column may come from the metrics table
    assert main(["agree", str(d / "plain.csv"), "--judge", "J", "-o", str(d / "J2.csv"), "--cluster-col", "conversation_id",
                 "--metrics-table", str(d / "M.csv")]) == 0  # fmt: skip
    assert pl.read_csv(d / "J2.csv")["n_clusters"][0] == 12


def test_agree_many_raters_cluster_and_stability(judge_files: Path, capsys) -> None:
    d = judge_files
    out = d / "AGREE.csv"
    assert main(["agree", str(d / "ratings.csv"), "-o", str(out), "--cluster-col", "conversation_id", "--min-clusters", "13"]) == 0
    t = pl.read_csv(out)
    assert t["n_clusters"][0] == 12 and t["ci_method"][0] == "none" and "too_few_clusters" in t["reason"][0]
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("agree: 1 criteria, α ")
    flips = d / "FLIPS.csv"
    assert main(["agree", str(d / "ratings.csv"), "--stability", "J,K", "-o", str(flips), "--cluster-col", "conversation_id"]) == 0
    r = pl.read_csv(flips).row(0, named=True)
    assert (r["n"], r["flips"], r["n_clusters"]) == (30, 4, 12)
    assert (r["flip_rate"], r["flip_ci_low"], r["flip_ci_high"]) == pytest.approx((0.1333333, 0.0530966, 0.2968133), abs=5e-7)
    assert (r["mcnemar_p"], r["bowker_chi2"], r["bowker_df"], r["bowker_p"]) == pytest.approx((0.625, 2, 3, 0.5724067), abs=5e-7)
    assert (r["mcnemar_cluster_chi2"], r["mcnemar_cluster_p"]) == pytest.approx((1.0, 0.3173105), abs=5e-7)
    assert "agree: stability J vs K, 1 criteria, flip rate .13" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cluster-col", "dialog"], "--cluster-col 'dialog' is not a column"),
        (["--length-bias", "LB.csv", "--metrics-table", "M.csv"], "--length-bias needs --judge"),
        (["--judge", "J", "--length-bias", "LB.csv"], "--length-bias needs --metrics-table"),
        (["--judge", "J", "--length-bias", "LB.csv", "--metrics-table", "M.csv", "--length-col", "words"], "words"),
        (["--differences", "DIFF.csv"], "--differences needs --judge"),
        (["--judge", "J", "--raters", "A,B", "--differences", "DIFF.csv"], "--raters A,B and --judge"),
        (["--stability", "J,J"], "two distinct raters"),
        (["--stability", "J,K", "--judge", "J"], "cannot be combined with --judge"),
        (["--stability", "J,Z"], "'Z' is not a rater"),
    ],
)
def test_agree_errors(judge_files: Path, extra: list[str], message: str, capsys) -> None:
    d = judge_files
    extra = [str(d / e) if e.endswith(".csv") else e for e in extra]
    assert main(["agree", str(d / "ratings.csv"), "-o", str(d / "out.csv"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("error:") == 1


def test_differences_need_something_to_contrast(judge_files: Path, capsys) -> None:
    d = judge_files
    _ratings({"A": A, "J": J}).write_csv(d / "one.csv")
    assert main(["agree", str(d / "one.csv"), "--judge", "J", "-o", str(d / "o.csv"), "--differences", str(d / "D.csv")]) == 2
    assert capsys.readouterr().err.count("error:") == 1


def test_ppi_cluster_strata_plan(ppi_files: Path, capsys) -> None:
    d = ppi_files
    base = ["ppi", "--judge-labels", str(d / "all.csv"), "--human-labels", str(d / "sub.csv")]
    assert main([*base, "-o", str(d / "P.csv"), "--cluster-col", "conversation_id"]) == 0
    assert "independent" not in capsys.readouterr().err
    row = pl.read_csv(d / "P.csv").row(0, named=True)
    assert (row["estimate"], row["se"], row["se_rows"], row["design_effect"]) == pytest.approx((0.7416667, 0.0907875, 0.0966032, 0.8832196), abs=5e-7)
    assert row["reason"] == "few_labeled;few_labeled_clusters" and row["n_clusters"] == 14
    assert main([*base, "-o", str(d / "PA.csv"), "--cluster-col", "conversation_id", "--lambda", "auto"]) == 0
    auto = pl.read_csv(d / "PA.csv").row(0, named=True)
    assert (auto["lambda"], auto["estimate"], auto["se"]) == pytest.approx((0.6677549, 0.7167483, 0.0774841), abs=5e-7)
    assert main([*base, "-o", str(d / "S.csv"), "--strata-col", "band"]) == 0
    assert capsys.readouterr().err.count("treat its replies as independent") == 1
    comb = pl.read_csv(d / "S.csv").row(0, named=True)
    assert (comb["estimate"], comb["se"], comb["n_strata"]) == (pytest.approx(0.7416667, abs=5e-7), pytest.approx(0.0926275, abs=5e-7), 2)
    assert main([*base, "-o", str(d / "SW.csv"), "--strata-col", "band", "--strata-weights", str(d / "W.csv")]) == 0
    w = pl.read_csv(d / "SW.csv").row(0, named=True)
    assert (w["estimate"], w["se"]) == pytest.approx((0.7625, 0.1153459), abs=5e-7)
    judge, human = pl.read_csv(d / "all.csv"), pl.read_csv(d / "sub.csv")
    lib = ppi_table(judge, human, strata_col="band", strata_weights={"s1": 0.5, "s2": 0.5})
    assert_frame_equal(pl.read_csv(d / "SW.csv"), pl.read_csv(lib.write_csv().encode()), check_dtypes=False)
    for cluster in ([], ["--cluster-col", "conversation_id"]):
        assert main([*base, "-o", str(d / "PLAN.csv"), "--plan", "--half-width", "0.15", *cluster]) == 0
        plan = pl.read_csv(d / "PLAN.csv").row(0, named=True)
        assert (plan["n_classical"], plan["n_ppi"], plan["labels_saved"], plan["reason"]) == (34, 21, 13, "few_labeled")
        assert (plan["lambda_plan"], plan["achieved_half_width"]) == pytest.approx((0.5251348, 0.1490101), abs=5e-7)
        (d / "PLAN.csv").unlink()
    assert "ppi: plan for ±0.15, 1 criteria, human labels 34 classical, 21 PPI++" in capsys.readouterr().err
    main([*base, "-o", str(d / "PLAN.csv"), "--plan", "--half-width", "0.15"])
    lib_plan = ppi_plan_table(judge, human, half_width=0.15)
    assert_frame_equal(pl.read_csv(d / "PLAN.csv"), pl.read_csv(lib_plan.write_csv().encode()), check_dtypes=False)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cluster-col", "dialog"], "--cluster-col 'dialog' is not a column"),
        (["--strata-col", "nope"], "--strata-col 'nope' is not a column"),
        (["--strata-col", "band", "--cluster-col", "conversation_id"], "lie in two or more strata"),
        (["--strata-weights", "W.csv"], "--strata-weights needs --strata-col"),
        (["--strata-col", "band", "--strata-weights", "W1.csv"], "'s2'"),
        (["--strata-col", "band", "--strata-weights", "Wneg.csv"], "weight"),
        (["--plan"], "--plan needs --half-width"),
        (["--half-width", "0.1"], "--half-width is the target of --plan"),
        (["--plan", "--half-width", "0"], "--half-width must be > 0"),
        (["--plan", "--half-width", "0.1", "--strata-col", "band"], "--plan does not take --strata-col"),
    ],
)
def test_ppi_errors(ppi_files: Path, extra: list[str], message: str, capsys) -> None:
    d = ppi_files
    pl.DataFrame({"stratum": ["s1"], "weight": [1.0]}).write_csv(d / "W1.csv")
    pl.DataFrame({"stratum": ["s1", "s2"], "weight": [1.0, -1.0]}).write_csv(d / "Wneg.csv")
    extra = [str(d / e) if e.endswith(".csv") else e for e in extra]
    code = main(["ppi", "--judge-labels", str(d / "all.csv"), "--human-labels", str(d / "sub.csv"), "-o", str(d / "o.csv"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("error:") == 1 and "Traceback" not in err


def test_outputs_without_new_options_equal_main(tmp_path: Path, capsys) -> None:
    """agree (many raters, --judge with --confusion) and ppi on examples/data: byte-identical to main's files."""
    ratings = str(EXAMPLES / "ratings.csv")
    assert main(["agree", ratings, "-o", str(tmp_path / "agree.csv")]) == 0
    assert main(["agree", ratings, "--judge", "r2", "-o", str(tmp_path / "judge.csv"), "--confusion", str(tmp_path / "conf.csv")]) == 0
    assert main(["ppi", "--judge-labels", str(FIXTURES / "all.csv"), "--human-labels", str(FIXTURES / "sub.csv"),
                 "-o", str(tmp_path / "ppi2.csv")]) == 0  # fmt: skip
    for name in ("agree.csv", "judge.csv", "conf.csv", "ppi2.csv"):
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name
    err = capsys.readouterr().err
    assert "agreement: 5 criteria" in err and "agree: 5 criteria, α " in err and "agree: judge r2, 5 criteria" in err


def test_compare_prints_its_result_line(tmp_path: Path, capsys) -> None:
    """Issue 35: compare ends with one result line naming the table written (the closing line stays)."""
    rows = [(f"q{q}", g, q * 0.1 + (g == "b") * 0.5 + (q % 3) * 0.05) for q in range(12) for g in ("a", "b", "c")]
    pl.DataFrame(rows, schema=["question_id", "level", "m1"], orient="row").write_csv(tmp_path / "m.csv")
    code = main(["compare", str(tmp_path / "m.csv"), "--group-col", "level", "--block-col", "question_id", "-o", str(tmp_path / "c.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0 and err[-2].startswith("compare: 1 Friedman")
    assert err[-1].startswith("compare: 1 metrics, ") and err[-1].endswith(f"-> {tmp_path / 'c.csv'}")
