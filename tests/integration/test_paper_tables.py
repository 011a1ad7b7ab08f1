"""Paper tables (``docs/guide/paper.md#tables``): every layout written as ``.md`` and ``.tex`` from the real
tables of the seed data and parsed back: the cells, the caption, no unescaped ``_ % #``, no number with more
than three decimals, no ``-0.000``; paper.md §6's ``agree --per-rater pr.md`` example exactly."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.agreement import agreement_table
from tutormetrics.psychometrics.judge import judge_table
from tutormetrics.psychometrics.kappa_paradox import per_rater_table
from tutormetrics.psychometrics.mfrm import fit_mfrm
from tutormetrics.psychometrics.recode import apply_recode
from tutormetrics.report.paper_tables import (
    PAPER_KINDS,
    render_paper_table,
    table_kind,
    without_negative_zero,
    write_data_table,
    write_paper_table,
)  # fmt: skip
from tutormetrics.report.tables import number_text

COLUMNS = {"id_col": "exchange_id", "rater_col": "rater", "criterion_col": "criterion", "score_col": "score"}


# ---------------------------------------------------------------------------------------------- parsing


def md_cells(line: str) -> list[str]:
    """The cells of one pipe-table line, splitting at unescaped ``|``."""
    inner = line.strip()[1:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def parse_md(text: str) -> tuple[list[str], list[list[str]], str]:
    lines = text.rstrip("\n").split("\n")
    blank = lines.index("")
    table, rest = lines[:blank], lines[blank + 1 :]
    assert table[1] == "|" + "---|" * len(md_cells(table[0]))
    assert len(rest) == 1 and rest[0].startswith("Table: ")
    return md_cells(table[0]), [md_cells(line) for line in table[2:]], rest[0][len("Table: ") :]


def tex_cells(line: str) -> list[str]:
    assert line.endswith(r" \\")
    return [c.strip() for c in re.split(r"(?<!\\)&", line[: -len(r" \\")])]


def parse_tex(text: str) -> tuple[str, list[str], list[list[str]], str, str]:
    lines = text.rstrip("\n").split("\n")
    assert lines[:2] == [r"\begin{table}[htbp]", r"\centering"] and lines[-3:] == [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    caption = re.fullmatch(r"\\caption\{(.*)\}", lines[2]).group(1)  # type: ignore[union-attr]
    label = re.fullmatch(r"\\label\{(tab:[A-Za-z0-9-]+)\}", lines[3]).group(1)  # type: ignore[union-attr]
    spec = re.fullmatch(r"\\begin\{tabular\}\{([lr]+)\}", lines[4]).group(1)  # type: ignore[union-attr]
    assert lines[5] == r"\toprule" and lines[7] == r"\midrule"
    header = tex_cells(lines[6])
    rows = [tex_cells(line) for line in lines[8:-3]]
    assert len(spec) == len(header) and all(len(r) == len(header) for r in rows)
    return spec, header, rows, caption, label


def check_text(text: str, fmt: str) -> None:
    """No unescaped ``_ % #``, no number with more than three decimals, no negative zero."""
    body = "\n".join(line for line in text.split("\n") if not line.startswith((r"\label", r"\begin", r"\end")))
    assert not re.search(r"(?<!\\)[_%#]", body), re.search(r".{0,30}(?<!\\)[_%#].{0,30}", body)
    assert not re.search(r"\d+\.\d{4,}", body), re.search(r".{0,30}\d+\.\d{4,}.{0,30}", body)
    assert not re.search(r"-0\.0+(?!\d)", body) and "-0 " not in body
    if fmt == "tex":
        assert "[" not in body.replace("{[}", "").replace("{]}", "").replace(r"\begin{table}[htbp]", "")


def write_both(table: pl.DataFrame, tmp_path: Path, stem: str, **kw) -> tuple[tuple, tuple]:
    md, tex = tmp_path / f"{stem}.md", tmp_path / f"{stem}.tex"
    write_paper_table(table, md, **kw)
    write_paper_table(table, tex, **kw)
    md_text, tex_text = md.read_text(), tex.read_text()
    check_text(md_text, "md")
    check_text(tex_text, "tex")
    parsed_md, parsed_tex = parse_md(md_text), parse_tex(tex_text)
    assert len(parsed_md[1]) == len(parsed_tex[2])  # the same rows
    assert parsed_tex[4] == "tab:" + re.sub(r"[^A-Za-z0-9]", "-", stem)
    return parsed_md, parsed_tex


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def s000(paper_data: Path) -> pl.DataFrame:
    recoded, _ = apply_recode(pl.read_csv(paper_data / "s000" / "ratings_raw.csv"), "score", {0.5: 0.0})
    return recoded


def test_per_rater_worked_example(s000: pl.DataFrame, tmp_path: Path) -> None:
    """paper.md §6 [ref]: ``agree --per-rater pr.md`` on s000 recoded."""
    long = s000.select(pl.col("exchange_id").alias("_id"), pl.col("rater").alias("_rater"), pl.col("criterion").alias("_crit"),
                       pl.col("score").cast(pl.Float64).alias("_score"))  # per_rater_table's cleaned columns
    per = per_rater_table(long)
    md = tmp_path / "pr.md"
    write_paper_table(per, md, kind="per_rater")
    lines = md.read_text().split("\n")
    assert lines[:4] == [
        "| criterion | rater | n | endorsed | rate | top score |",
        "|---|---|---|---|---|---|",
        "| i1 | r1 | 249 | 70 | 0.281 | 1 |",
        "| i1 | r2 | 249 | 52 | 0.209 | 1 |",
    ]
    assert lines[-3:] == ["", "Table: Endorsement per criterion and rater: ratings at the top score of the rater's non-missing ratings.", ""]
    # independent counts: pandas
    pdf = s000.to_pandas()
    i1 = pdf[pdf["criterion"] == "i1"]
    assert (i1[i1["rater"] == "r1"]["score"] == 1).sum() == 70 and (i1[i1["rater"] == "r2"]["score"] == 1).sum() == 52
    tex = tmp_path / "pr.tex"
    write_paper_table(per, tex)  # the kind is told from the columns
    text = tex.read_text()
    assert "\\begin{tabular}{llrrrr}\n" in text and "\ni1 & r1 & 249 & 70 & 0.281 & 1 \\\\\n" in text
    assert "\\caption{Endorsement per criterion and rater: ratings at the top score of the rater's non-missing ratings.}" in text
    assert "\\label{tab:pr}" in text
    write_both(per, tmp_path, "table4")


def test_agree_and_judge_layouts(s000: pl.DataFrame, paper_data: Path, tmp_path: Path) -> None:
    agree = agreement_table(s000, **COLUMNS, n_resamples=200)
    (header, rows, caption), (spec, tex_header, *_rest) = write_both(agree, tmp_path, "kappa")
    assert header == ["criterion", "units", "raters", "exact", "Fleiss κ", "α \\[95\\% CI\\]", "AC1", "κ \\[95\\% CI\\]", "PABAK",
                      "PI", "BI", "reason"]  # fmt: skip
    assert tex_header[4] == r"Fleiss $\kappa$" and tex_header[5] == r"$\alpha$ {[}95\% CI{]}" and spec == "lrrrrrrrrrrl"
    first = agree.row(0, named=True)
    assert rows[0][:3] == ["i1", "249", "2"] and rows[0][5] == (
        f"{number_text(first['krippendorff_alpha'])} [{number_text(first['alpha_ci_low'])}, {number_text(first['alpha_ci_high'])}]"
    )
    assert rows[0][-1] == "fleiss\\_249\\_of\\_249\\_units\\_with\\_2\\_ratings" and "r1 vs r2" in caption
    judges = judge_table(pl.read_csv(paper_data / "s002" / "calibration.csv"), ["phi4", "sonnet4"], n_resamples=200, levels=[0, 1, 2])
    assert table_kind(judges.table) == "judge"
    (header, rows, _), (_, tex_header, tex_rows, *_r) = write_both(judges.table, tmp_path, "judges")
    assert header[:4] == ["judge", "criterion", "reference", "n"] and header[14] == "Bowker χ² \\(df\\)"
    assert tex_header[14] == r"Bowker $\chi^2$ (df)"
    pooled = [r for r in rows if r[1] == "\\(all\\)"]  # md escapes punctuation
    assert len(pooled) == 4 and pooled[0][:4] == ["phi4", "\\(all\\)", "human", "408"]
    assert pooled[0][9:13] == ["89.5", "77.8", "0.233", "0.000"] and pooled[0][13] == "<0.001"  # % max, over, under, sign p
    assert next(r for r in tex_rows if r[1] == "(all)")[13] == "$<$0.001"
    vocab = next(r for r in rows if r[:3] == ["phi4", "vocabulary", "human"])
    assert vocab[14:16] == ["5.000 (3)", "0.172"]  # paper.md §4 on the declared scale
    write_both(judges.confusion, tmp_path, "confusion", kind="confusion")


def test_theta_layouts(s000: pl.DataFrame, paper_data: Path, tmp_path: Path) -> None:
    fit = fit_mfrm(s000, covariates=pl.read_csv(paper_data / "s000" / "covariates.csv"), covariate_cols="suff")
    (header, rows, caption), _ = write_both(fit.facets_table(), tmp_path, "table5_6", context={"seed": 0})
    assert header == ["facet", "level", "estimate \\[94\\% interval\\]", "SE"]
    base = next(r for r in rows if r[0] == "baseline\\_probability" and r[1] == "i1")
    assert base[2].startswith("0.22") and "94% Wald interval" in caption.replace("\\", "") and "4000 MML draws" in caption
    eff = fit.effects_table()
    (header, rows, caption), (_, tex_header, *_r) = write_both(eff, tmp_path, "table7_8", context={"seed": 0})
    assert header == ["effect", "term", "criterion", "P\\_ref", "ΔP \\[94\\% HDI\\]", "P\\(ΔP \\> 0\\)", "HDI excludes 0", "reason"]
    assert tex_header[4] == r"$\Delta P$ {[}94\% HDI{]}"
    r0 = eff.row(0, named=True)
    assert rows[0][3] == number_text(r0["p_ref"]) and rows[0][4].startswith(number_text(r0["delta_p_mean"]) + " [")
    # paper.md §6's example caption, as it reads (md escapes % and ^)
    assert caption.replace("\\", "") == "ΔP at theta=0; s=0 (mean rater); suff=0 (raw): mean and 94% HDI over 4000 MML draws from N(mode, H^-1), seed 0."
    assert "94\\% HDI" in caption and "H\\^-1" in caption
    loo = pl.DataFrame({"model": ["M1", "M0"], "terms": ["suff", ""], "elpd_loo": [-1200.123456, -1202.5], "se": [20.1, 20.3],
                        "p_loo": [260.2, 255.0], "weight": [0.9, 0.1], "share_k_ok": [1.0, 0.998], "n_points": [2490, 2490],
                        "ref_model": ["M0", "M0"], "delta_elpd_ref": [2.45, 0.0], "delta_elpd_ref_se": [1.2, 0.0],
                        "warning": [False, True]})  # fmt: skip
    (header, rows, _), _ = write_both(loo, tmp_path, "loo")
    assert rows[0][2:] == ["-1200.123 (20.100)", "260.200", "2.450 (1.200)", "0.900", "100.0", ""] and rows[1][-1] == "yes"


def test_studies_layouts(paper_data: Path, tmp_path: Path) -> None:
    rates, fair, cells = tmp_path / "rates.csv", tmp_path / "fair.csv", tmp_path / "cells.csv"
    s001 = paper_data / "s001"
    labels = "answer_leakage,step_scaffolded,actionability,corrective_tone,mistake_recognize"
    assert main(["aggregate", str(s001 / "turns.csv"), "--by", "question_id,model,domain,dimension,level", "--cols", labels,
                 "--na", "-1", "-o", str(rates)]) == 0  # fmt: skip
    small = tmp_path / "rates2.csv"  # two tutors keep the test quick
    pl.read_csv(rates).filter(pl.col("model").is_in(["llama31_8b", "gpt5_mini"])).write_csv(small)
    assert main(["compare", str(small), "--group-col", "level", "--block-col", "question_id", "--strata", "model,domain",
                 "--dimension", "dimension", "--family", "metric", "--directions", str(s001 / "directions.csv"),
                 "--summary", str(cells), "--by", "model", "--cells", "model,domain,dimension_value", "--threshold", "0.10",
                 "--n-resamples", "99", "-o", str(fair)]) == 0  # fmt: skip
    table = pl.read_csv(fair)
    (header, rows, _), (spec, *_r) = write_both(table, tmp_path, "fair")
    assert header[:3] == ["model", "domain", "dimension\\_value"] and header[5] == "n" and spec.startswith("lllllr")
    friedman = next(r for r, raw in zip(rows, table.iter_rows(named=True), strict=True) if raw["test"] == "friedman")
    assert friedman[4] == "Friedman \\(k \\= 3\\)" and re.fullmatch(r"χ² = \d+\.\d{3}, W = \d\.\d{3}", friedman[6])
    wil = next(r for r in rows if " vs " in r[4])
    assert re.fullmatch(r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]", wil[6])
    (header, rows, _), (_, tex_header, *_r) = write_both(pl.read_csv(cells), tmp_path, "cells")
    assert header[0] == "model" and header[5] == "≥ threshold" and tex_header[5] == r"$\geq$ threshold"
    assert re.fullmatch(r"\d+/12", rows[0][5]) and len(rows) == 2
    var = tmp_path / "var.csv"
    pl.DataFrame({"item": [f"u{i}" for i in range(6) for _ in range(3)], "trial": [1, 2, 3] * 6,
                  "total": [9, 2, 5, 8, 4, 7, 6, 3, 3, 7, 1, 2, 10, 5, 6, 6, 2, 4]}).write_csv(tmp_path / "t.csv")  # fmt: skip
    assert main(["variability", str(tmp_path / "t.csv"), "--unit-col", "item", "--trial-col", "trial", "-o", str(var)]) == 0
    (header, rows, _), (_, tex_header, *_r) = write_both(pl.read_csv(var), tmp_path, "var")
    assert header[3] == "McGraw–Wong" and tex_header[3] == "McGraw--Wong" and re.fullmatch(r"\d+\.\d{3} \(\d+, \d+\)", rows[0][7])


def test_validate_predict_ppi_and_summarize_layouts(tmp_path: Path) -> None:
    corr = pl.DataFrame({"metric": ["resp_chars", "resp_chars", "jaccard_1", "jaccard_1"], "target": ["i1", "theta"] * 2,
                         "n": [249] * 4, "rho": [-0.2123884, -0.00004, 0.339154, 0.1], "p_adj": [0.001, 0.9, 1e-8, 0.1],
                         "adjust": ["bh"] * 4, "stars": ["**", "", "***", ""], "reason": [""] * 4})  # fmt: skip
    (header, rows, caption), (_, _, tex_rows, *_r) = write_both(corr, tmp_path, "rho")
    assert header == ["metric", "i1", "theta"] and rows[0] == ["resp\\_chars", "-0.212\\*\\*", "0.000"]
    assert tex_rows[1] == ["jaccard\\_1", "0.339$^{***}$", "0.100"] and "(bh)" in caption and "n = 249" in caption
    pred = pl.DataFrame({"target": ["i1"], "kind": ["binary"], "model": ["logistic"], "measure": ["auc"], "estimate": [0.71234],
                         "ci_low": [0.6], "ci_high": [0.8], "n": [249], "n_groups": [0], "folds": [5], "n_features": [3],
                         "selected": [True], "reason": [""]})  # fmt: skip
    (header, rows, _), _ = write_both(pred, tmp_path, "predict", kind="predict")
    assert header[-1] == "reason" and rows[0][4:8] == ["0.712", "0.600", "0.800", "249"] and rows[0][-2] == "yes"
    ppi = pl.DataFrame({"criterion": ["tone"], "group": [""], "n_labeled": [51], "n_unlabeled": [1071], "lambda": [0.8],
                        "estimate": [0.61], "se": [0.02], "ci_low": [0.57], "ci_high": [0.65], "classical": [0.6], "reason": ["x_y"]})
    (header, rows, _), _ = write_both(ppi, tmp_path, "ppi")
    assert header[2] == "n\\_labeled" and rows[0][2:4] == ["51", "1071"] and rows[0][-1] == "x\\_y"
    summary = pl.DataFrame({"group": ["A", "B"], "variable": ["tone_score"] * 2, "n": [3, 5], "mean": [0.5, -0.00001],
                            "ci_low": [0.2, -0.1], "ci_high": [0.8, 0.1]})  # fmt: skip
    (header, rows, caption), _ = write_both(summary, tmp_path, "table2", context={"group_label": "model"})
    assert header == ["model", "tone\\_score"] and rows[1][1] == "0.000 [-0.100, 0.100]" and "per model" in caption


def test_captions_numbers_and_refusals(tmp_path: Path) -> None:
    t = pl.DataFrame({"criterion": ["c#1"], "rater": ["r_1 & co"], "n": [3], "endorsed": [1], "rate": [1 / 3], "top_score": [2.0]})
    text = render_paper_table(t, "tex", caption="50% of {x}_y #1 [a]")
    assert r"\caption{50\% of \{x\}\_y \#1 {[}a{]}}" in text and r"c\#1 & r\_1 \& co & 3 & 1 & 0.333 & 2 \\" in text
    md = render_paper_table(t, "md", caption="50% of x_y: it's [a]")
    assert md.endswith("Table: 50\\% of x\\_y: it's \\[a\\]") and "| c\\#1 | r\\_1 \\& co |" in md
    assert number_text(-0.0004) == "0.000" and number_text(-0.0004, "p") == "<0.001" and number_text(-0.04, "1") == "0.0"
    assert without_negative_zero(pl.DataFrame({"x": [-0.0]}))["x"].to_list()[0].hex() == "0x0.0p+0"
    out = tmp_path / "x.csv"
    write_paper_table(pl.DataFrame({"x": [-0.0, 1.0]}), out)
    assert out.read_text().split() == ["x", "0.0", "1.0"]
    for bad in ("x.txt", "x"):
        with pytest.raises(ConfigError, match="cannot tell the table format"):
            write_paper_table(t, tmp_path / bad)
    with pytest.raises(ConfigError, match="score -o is a data table"):
        write_data_table(t, tmp_path / "s.tex", what="score -o")
    write_data_table(t, tmp_path / "s.parquet")
    assert pl.read_parquet(tmp_path / "s.parquet").equals(t)
    assert set(PAPER_KINDS) >= {"validate", "facets", "effects", "compare_models", "agree", "judge", "per_rater", "compare",
                                "compare_summary", "variability", "summarize", "confusion", "predict", "ppi"}  # fmt: skip
    assert np.isnan(float("nan")) and number_text(float("nan")) == ""


def test_agree_strict_exits_1_on_an_inferred_leniency_scale(tmp_path: Path, capsys) -> None:
    """docs/guide/paper.md#scale: without --levels the judge's scale is inferred — one stderr note, reason
    scale_inferred on its rows, and --strict exits 1 after writing; with the scale declared it exits 0."""
    rows = ["exchange_id,rater,criterion,score"]
    for i in range(12):
        rows += [f"e{i},human,tone,{1 + i % 2}", f"e{i},judge,tone,{1 + (i // 2) % 2}"]
    ratings = tmp_path / "r.csv"
    ratings.write_text("\n".join(rows) + "\n")
    out = tmp_path / "j.csv"
    assert main(["agree", str(ratings), "--judge", "judge", "--n-resamples", "0", "-o", str(out), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "leniency scale inferred from the data (no --levels): " in err and "strict: 1 warning(s)" in err
    assert out.exists() and "scale_inferred" in out.read_text()
    assert main(["agree", str(ratings), "--judge", "judge", "--n-resamples", "0", "--levels", "0,1,2", "-o", str(out), "--strict"]) == 0
    assert "scale inferred" not in capsys.readouterr().err
