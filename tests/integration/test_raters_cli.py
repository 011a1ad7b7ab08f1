"""End-to-end CLI tests for raters.md: agree (many raters, --judge), summarize (csv/md/tex) and compare
with k > 2 groups, --dimension and --figure, through the real `tutormetrics` entry point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main

MRBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mrbench"


def _metrics(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    n = 20
    base = rng.normal(0, 1, n)
    frame = pl.DataFrame(
        {
            "exchange_id": [f"{c}::{t}" for t in "ABC" for c in range(n)],
            "conversation_id": np.tile(np.arange(n), 3),
            "tutor": np.repeat(["A", "B", "C"], n),
            "ttr": np.r_[base + 0.8, base, base + rng.normal(0, 0.3, n)],
            "words": np.round(rng.normal(10, 2, 3 * n)),
            "source": np.tile(np.repeat(["x", "y"], n // 2), 3),
        }
    )
    path = tmp_path / "metrics.csv"
    frame.write_csv(path)
    return path


def test_compare_three_groups_figure_and_dimension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out, fig = _metrics(tmp_path), tmp_path / "cmp.csv", tmp_path / "effects.png"
    code = main(["compare", str(path), "--group-col", "tutor", "--metrics-cols", "ttr,words", "--n-resamples", "299",
                 "-o", str(out), "--figure", str(fig)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    table = pl.read_csv(out)
    assert table["test"].to_list() == ["friedman"] + ["wilcoxon"] * 3 + ["friedman"] + ["wilcoxon"] * 3
    ttr_a_b = table.filter((pl.col("metric") == "ttr") & (pl.col("group_a") == "A") & (pl.col("group_b") == "B")).row(0, named=True)
    assert ttr_a_b["r_rb"] == 1.0 and ttr_a_b["violation"] is True and ttr_a_b["n"] == 20
    assert fig.stat().st_size > 10_000 and fig.read_bytes()[:4] == b"\x89PNG"
    assert "2 Friedman and 6 pairwise rows" in capsys.readouterr().err
    by_dim = tmp_path / "dim.csv"
    code = main(["compare", str(path), "--metrics-cols", "ttr", "--dimension", "source", "--n-resamples", "0",
                 "--n-min", "5", "-o", str(by_dim)])  # fmt: skip
    assert code == 0
    dim = pl.read_csv(by_dim)
    assert dim["dimension"].unique().to_list() == ["source"]
    assert dim["dimension_value"].to_list() == ["x"] * 4 + ["y"] * 4
    assert dim.filter(pl.col("test") == "friedman")["n"].to_list() == [10, 10]


def test_compare_bad_figure_extension_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(_metrics(tmp_path)), "-o", str(tmp_path / "c.csv"), "--figure", str(tmp_path / "f.gif")])
    assert code == 2 and "figure" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()


def test_summarize_csv_md_tex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _metrics(tmp_path)
    ratings = tmp_path / "ratings.csv"
    pl.DataFrame(
        {
            "exchange_id": ["0::A", "0::A", "1::A", "0::B", "nope"],
            "rater": ["h1", "h2", "h1", "h1", "h1"],
            "criterion": ["tone"] * 5,
            "score": [2, 1, 2, 0, 2],
        }
    ).write_csv(ratings)
    out = tmp_path / "summary.csv"
    assert main(["summarize", str(path), "--ratings", str(ratings), "--group-col", "tutor", "-o", str(out), "--n-resamples", "200"]) == 0
    err = capsys.readouterr().err
    assert "1 id(s) not in the metrics were ignored" in err
    table = pl.read_csv(out)
    assert table.columns == ["group", "variable", "family", "n", "mean", "sd", "median", "ci_low", "ci_high"]
    # issue 22: only described metric columns are variables; an id (conversation_id) never is
    assert table["variable"].unique(maintain_order=True).to_list() == ["ttr", "words", "tone_score", "tone_endorsed"]
    assert table["family"].unique(maintain_order=True).to_list() == ["lexical_diversity", "other", "rating"]
    tone_a = table.filter((pl.col("group") == "A") & (pl.col("variable") == "tone_score")).row(0, named=True)
    assert tone_a["n"] == 2 and tone_a["mean"] == pytest.approx((1.5 + 2) / 2)
    endorsed_a = table.filter((pl.col("group") == "A") & (pl.col("variable") == "tone_endorsed")).row(0, named=True)
    assert endorsed_a["mean"] == pytest.approx((0.5 + 1) / 2)
    words = pl.read_csv(path).filter(pl.col("tutor") == "B")["words"].to_numpy()
    row = table.filter((pl.col("group") == "B") & (pl.col("variable") == "words")).row(0, named=True)
    assert row["mean"] == pytest.approx(words.mean()) and row["sd"] == pytest.approx(words.std(ddof=1))
    assert row["median"] == pytest.approx(np.median(words)) and row["ci_low"] < row["mean"] < row["ci_high"]
    md, tex = tmp_path / "s.md", tmp_path / "s.tex"
    # conversation_id is an id, not a variable (issue 22); a metric named n_words shows the escaping
    renamed = tmp_path / "renamed.csv"
    pl.read_csv(path).rename({"words": "n_words"}).write_csv(renamed)
    assert main(["summarize", str(renamed), "-o", str(md), "--n-resamples", "50"]) == 0
    assert main(["summarize", str(renamed), "-o", str(tex), "--n-resamples", "50"]) == 0
    lines = md.read_text().splitlines()
    assert lines[0] == "| tutor | ttr | n\\_words |" and len(lines) == 7  # paper.md §6: a blank line, then the caption
    assert lines[5:] == ["", "Table: Mean \\[95\\% bootstrap CI\\] per tutor (3 groups, n = 20 per group and variable)."]
    text = tex.read_text()
    assert text.startswith("\\begin{table}[htbp]\n\\centering\n\\caption{") and "\\label{tab:" in text  # tab:<stem> once summarize calls write_paper_table
    assert "\\begin{tabular}{lrr}\n\\toprule\ntutor & ttr & n\\_words \\\\" in text
    forced = tmp_path / "forced.txt"
    assert main(["summarize", str(path), "-o", str(forced), "--output-format", "md", "--n-resamples", "0"]) == 0
    assert forced.read_text().startswith("| tutor |")


def test_summarize_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _metrics(tmp_path)
    assert main(["summarize", str(path), "--group-col", "model", "-o", str(tmp_path / "s.csv")]) == 2
    assert "missing column" in capsys.readouterr().err
    assert main(["summarize", str(path), "-o", str(tmp_path / "s.csv"), "--output-format", "xlsx"]) == 2
    assert "unknown --output-format" in capsys.readouterr().err


def test_summarize_reads_ratings_as_theta_and_agree_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--ratings goes through read_ratings: --recode first, then the scale (off-scale stops unless dropped)."""
    from tutormetrics.ids import IdKey
    from tutormetrics.psychometrics.ratings_input import RatingsInput, read_ratings
    from tutormetrics.report.group_summary import SummarizeOptions, read_summary_metrics, summarize_metrics

    path = _metrics(tmp_path)
    ids = pl.read_csv(path)["exchange_id"].to_list()
    scores = [float(i % 2) for i in range(len(ids))]
    ratings = tmp_path / "r.csv"
    pl.DataFrame({"exchange_id": ids + ids[:1], "rater": ["h"] * len(ids) + ["typo"], "criterion": "tone",
                  "score": scores + [7.0]}).write_csv(ratings)  # fmt: skip
    out = tmp_path / "s.csv"
    base = ["summarize", str(path), "--ratings", str(ratings), "-o", str(out), "--n-resamples", "0"]
    assert main(base) == 2
    assert "off the scale" in capsys.readouterr().err
    assert main([*base, "--drop-out-of-scale"]) == 0
    dropped = pl.read_csv(out)
    assert "dropped 1 rating(s) off the scale" in capsys.readouterr().err
    out.unlink()
    assert main([*base, "--recode", "7=", "--levels", "0,1"]) == 0
    assert "recode 7 -> missing: 1 ratings" in capsys.readouterr().err
    assert pl.read_csv(out).equals(dropped)
    key = IdKey.of(None)
    frame = read_summary_metrics(path, key, "tutor")
    python = summarize_metrics(frame, SummarizeOptions(n_resamples=0), ratings=read_ratings(ratings, RatingsInput(drop_out_of_scale=True), key),
                               source=path)  # fmt: skip
    assert python.table.equals(dropped, null_equal=True)


def test_agree_many_raters_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 60)
    rows = [
        (f"e{i}", r, "guidance", float(truth[i] if rng.random() < 0.7 else rng.integers(0, 3)))
        for r in ("ann", "bob", "cat")
        for i in range(60)
        if rng.random() > 0.1
    ]
    path, out = tmp_path / "r.csv", tmp_path / "a.csv"
    pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row").write_csv(path)
    assert main(["agree", str(path), "-o", str(out), "--n-resamples", "300"]) == 0
    row = pl.read_csv(out).row(0, named=True)
    assert row["n_raters"] == 3 and row["n_ratings"] == len(rows)
    assert row["alpha_ci_low"] < row["krippendorff_alpha"] < row["alpha_ci_high"]
    assert "first_two_of_3_raters" in row["reason"]
    assert "alpha_quadratic" in pl.read_csv(out).columns


@pytest.mark.skipif(not MRBENCH.exists(), reason="shared MRBench data not available")
def test_summarize_mrbench_per_tutor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Per-tutor table of MRBench gold ratings (CSTutorBench-style), checked against a direct polars computation."""
    out = tmp_path / "mr.csv"
    code = main(["summarize", str(MRBENCH / "exchanges_meta.csv"), "--ratings", str(MRBENCH / "ratings.csv"),
                 "--group-col", "tutor", "-o", str(out), "--n-resamples", "200"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    table = pl.read_csv(out)
    assert table["group"].n_unique() == 9
    ratings = pl.read_csv(MRBENCH / "ratings.csv").join(
        pl.read_csv(MRBENCH / "exchanges_meta.csv", infer_schema_length=0).select("exchange_id", "tutor"), on="exchange_id"
    )
    expected = ratings.filter(pl.col("criterion") == "mistake_identification").group_by("tutor").agg(
        pl.col("score").mean().alias("score"), pl.col("endorsed").mean().alias("endorsed"), pl.len().alias("n")
    )
    for row in expected.iter_rows(named=True):
        got = table.filter((pl.col("group") == row["tutor"]) & (pl.col("variable") == "mistake_identification_score")).row(0, named=True)
        assert got["mean"] == pytest.approx(row["score"], abs=1e-12) and got["n"] == row["n"]
        got = table.filter((pl.col("group") == row["tutor"]) & (pl.col("variable") == "mistake_identification_endorsed")).row(0, named=True)
        assert got["mean"] == pytest.approx(row["endorsed"], abs=1e-12)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "no scores"),
        ("a,r1,c,1\na,r2,c,inf\n", "infinite"),
        ("a,r1,c,1\na,r1,c,0\n", "more than one score for exchange_id='a', rater='r1', criterion='c'"),
        ("a,r1,c,yes\n", "non-numeric value 'yes'"),
    ],
)
@pytest.mark.parametrize("judge", [[], ["--judge", "r1"]])
def test_agree_bad_ratings_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str, judge: list[str]) -> None:
    path = tmp_path / "r.csv"
    path.write_text("exchange_id,rater,criterion,score\n" + body)
    assert main(["agree", str(path), "-o", str(tmp_path / "o.csv"), *judge]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_agree_hostile_names_are_guarded_in_csv(tmp_path: Path) -> None:
    path, out = tmp_path / "r.csv", tmp_path / "o.csv"
    rows = [(f"e{i}", r, "=HYPERLINK(\"http://x\")", float(i % 2)) for i in range(12) for r in ("@a", "b")]
    pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row").write_csv(path)
    assert main(["agree", str(path), "-o", str(out), "--n-resamples", "0"]) == 0
    raw = out.read_text()
    assert "'=HYPERLINK" in raw and "'@a" in raw
    from tutormetrics.io.tables import read_table

    assert read_table(out)["criterion"][0] == "=HYPERLINK(\"http://x\")"  # read_table undoes the guard
