"""``-o x.md`` / ``-o x.tex`` for every table command and ``--caption`` (``docs/guide/paper.md#tables``): paper.md
§6's worked example, one paper table per command on the seeded synthetic data (parsed: cells, caption, escaping,
at most three decimals, no ``-0.000``), and the data tables that refuse ``.md``/``.tex`` (exit 2)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from paper_files import check_paper_file

from tutormetrics.cli import main

PER_RATER_MD = """| criterion | rater | n | endorsed | rate | top score |
|---|---|---|---|---|---|
| i1 | r1 | 249 | 70 | 0.281 | 1 |
| i1 | r2 | 249 | 52 | 0.209 | 1 |
"""
PER_RATER_CAPTION = "Table: Endorsement per criterion and rater: ratings at the top score of the rater's non-missing ratings."


def test_per_rater_worked_example(paper_data: Path, tmp_path: Path) -> None:
    raw = paper_data / "s000" / "ratings_raw.csv"
    md, tex = tmp_path / "pr.md", tmp_path / "pr.tex"
    for path in (md, tex):
        assert main(["agree", str(raw), "--recode", "0.5=0", "-o", str(tmp_path / f"k{path.suffix}"), "--per-rater", str(path),
                     "--n-resamples", "50"]) == 0  # fmt: skip
    text = check_paper_file(md)
    assert text.startswith(PER_RATER_MD) and text.rstrip().endswith(PER_RATER_CAPTION)
    # the oracle: the endorsement count from the raw rows
    r = pl.read_csv(raw).filter((pl.col("criterion") == "i1") & (pl.col("rater") == "r1"))
    assert int((r["score"] == 1).sum()) == 70 and r.height == 249
    tex_text = check_paper_file(tex)
    assert "\\begin{tabular}{llrrrr}" in tex_text and "i1 & r1 & 249 & 70 & 0.281 & 1 \\\\" in tex_text
    assert "\\label{tab:pr}" in tex_text
    check_paper_file(tmp_path / "k.tex")


def test_caption_and_judge_confusion(paper_data: Path, tmp_path: Path) -> None:
    cal = paper_data / "s002" / "calibration.csv"
    out, conf = tmp_path / "judges.md", tmp_path / "conf.tex"
    assert main(["agree", str(cal), "--judge", "phi4", "--levels", "0,1,2", "--n-resamples", "50", "--caption",
                 "Judge leniency_x 50% #1", "-o", str(out), "--confusion", str(conf)]) == 0  # fmt: skip
    text = check_paper_file(out)
    assert text.rstrip().endswith("Table: Judge leniency\\_x 50\\% \\#1")
    assert text.splitlines()[0].startswith("| judge | criterion | reference | n | accuracy |")
    conf_text = check_paper_file(conf)
    assert conf_text.count("\\toprule") == 1 and "judge\\_score" in conf_text.split("\\midrule")[0]


def test_summarize_caption_and_label(paper_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "table 2.tex"
    assert main(["summarize", str(paper_data / "s002" / "scores.csv"), "--group-col", "model", "--vars", "concision",
                 "--n-resamples", "50", "--caption", "Table 2: 100% of #items", "-o", str(out)]) == 0  # fmt: skip
    text = check_paper_file(out)
    assert "\\caption{Table 2: 100\\% of \\#items}" in text and "\\label{tab:table-2}" in text


def _ppi_files(paper_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    cal = pl.read_csv(paper_data / "s002" / "calibration.csv")
    judge, human = tmp_path / "judge.csv", tmp_path / "human.csv"
    cal.filter(pl.col("rater") == "phi4").write_csv(judge)
    ids = sorted(cal["exchange_id"].unique().to_list())[:30]
    cal.filter((pl.col("rater") == "human") & pl.col("exchange_id").is_in(ids)).write_csv(human)
    return judge, human


@pytest.mark.parametrize("suffix", [".md", ".tex"])
def test_ppi_paper_table(paper_data: Path, tmp_path: Path, suffix: str) -> None:
    judge, human = _ppi_files(paper_data, tmp_path)
    out = tmp_path / f"ppi{suffix}"
    assert main(["ppi", "--judge-labels", str(judge), "--human-labels", str(human), "--judge", "phi4", "--levels", "0,1,2", "-o", str(out),
                 "--caption", "PPI"]) == 0  # fmt: skip
    text = check_paper_file(out)
    assert ("Table: PPI" in text) if suffix == ".md" else ("\\caption{PPI}" in text)
    header = text.splitlines()[0] if suffix == ".md" else text.split("\\toprule\n")[1].splitlines()[0]
    assert header.rstrip(" |\\").endswith("reason")  # every CSV column, reason last


def test_predict_paper_table(paper_data: Path, tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    d = paper_data / "s000"
    metrics = tmp_path / "m.csv"
    ex = pl.read_csv(d / "exchanges.csv")
    ex.select("exchange_id", resp_chars=pl.col("response").str.len_chars(), group=pl.col("exchange_id").str.slice(0, 3)).write_csv(metrics)
    out = tmp_path / "pred.md"
    assert main(["predict", str(metrics), "--ratings", str(d / "ratings_raw.csv"), "--recode", "0.5=0", "--group-col", "group",
                 "--n-resamples", "50", "-o", str(out)]) == 0  # fmt: skip
    text = check_paper_file(out)
    assert text.splitlines()[0].startswith("| target |")


@pytest.mark.parametrize(("command", "what"), [
    (["theta", "{raw}", "-o", "{out}/theta.md"], "theta -o"),
    (["aggregate", "{raw}", "--by", "exchange_id", "-o", "{out}/rates.tex"], "aggregate -o"),
    (["summarize", "{scores}", "--group-col", "model", "--total", "t=concision+tone", "--totals-out", "{out}/t.md",
      "-o", "{out}/s.csv"], "--totals-out"),
])  # fmt: skip
def test_data_tables_refuse_md_and_tex(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       command: list[str], what: str) -> None:  # fmt: skip
    fill = {"raw": paper_data / "s000" / "ratings_raw.csv", "scores": paper_data / "s002" / "scores.csv", "out": tmp_path}
    assert main([a.format(**fill) for a in command]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and what in err and "is a data table" in err


@pytest.mark.parametrize("command", [
    ["agree", "{raw}", "-o", "{out}/a.docx"],
    ["theta", "{raw}", "-o", "{out}/t.csv", "--facets", "{out}/f.txt"],
])  # fmt: skip
def test_unknown_table_extension_exit_2(paper_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    fill = {"raw": paper_data / "s000" / "ratings_raw.csv", "out": tmp_path}
    assert main([a.format(**fill) for a in command]) == 2
    assert "cannot tell the table format" in capsys.readouterr().err
