"""``--where EXPR`` (``docs/guide/paper.md#where``): the grammar, the comparisons, the exit-2 messages, and
paper.md §8's worked examples (s002 Table 2 on prompt 2; s001's annotators' α without the judge), checked
against pandas and krippendorff."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.errors import ConfigError
from tutormetrics.row_filter import Condition, apply_where, describe, parse_where, where_mask

FRAME = pl.DataFrame(
    {
        "prompt": [1, 2, 2, None],
        "score": [0.5, 2.0, 1.0, float("nan")],
        "model": ["a", "b", "", None],
        "odd name": ["x", "y", "x", "y"],
        "t.v:w-1": [True, False, True, False],
    }
)


def keep(*expr: str) -> list[int]:
    return where_mask(FRAME.with_row_index(), parse_where(list(expr))).arg_true().to_list()


def test_grammar_and_comparisons() -> None:
    assert keep("prompt == 2") == keep("prompt==2") == keep("prompt == 2.0") == keep("prompt=='2'") == [1, 2]
    assert keep("prompt != 2") == [0, 3]  # the complement of ==: a missing cell differs from 2
    assert keep('prompt == ""') == [3] and keep("prompt != ''") == [0, 1, 2]
    assert keep('model == ""') == [2, 3]  # an empty or missing text cell
    assert keep("score == 2") == [1] and keep('score == ""') == [3]  # NaN counts as missing
    assert keep("model in a,b") == keep("model in a , 'b'") == keep('model in "a", b') == [0, 1]
    assert keep("`odd name` == x", "prompt in 1, 2") == keep("`odd name` == x and prompt in 1,2") == [0, 2]
    assert keep("t.v:w-1 == true") == [0, 2]  # a boolean column compares as text
    assert keep("model == 'a b'") == []
    assert keep("prompt == abc") == []  # a numeric column and a non-number: the cell's text
    assert keep("model == 2") == []


def test_parse_and_describe() -> None:
    conds = parse_where(["prompt==2", "model in 'a b',c and `odd name` != x"])
    assert conds == [
        Condition("prompt", "==", ("2",), 1),
        Condition("model", "in", ("a b", "c"), 1),
        Condition("odd name", "!=", ("x",), 22),
    ]
    assert describe(conds) == "prompt == 2 and model in 'a b', c and `odd name` != x"


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("prompt == 2 or prompt == 1", "--where: 'or' is not supported; repeat --where for 'and' (at position 13 of"),
        ("(prompt == 2)", "parentheses are not supported"),
        ("prompt == 2 and (model == a)", "parentheses are not supported"),
        ("prompt == (2)", "parentheses are not supported"),
        ("prompt > 2", "the operator '>' is not supported; use ==, != or in (at position 8"),
        ("prompt >= 2", "the operator '>=' is not supported"),
        ("model =~ a", "the operator '=~' is not supported"),
        ("model = a", "the operator '=' is not supported"),
        ("model === a", "the operator '===' is not supported"),
        ("prompt ==", "a value is missing"),
        ("model in a,", "a value is missing"),
        ("prompt", "expected ==, != or in"),
        ("", "the expression is empty"),
        ("prompt == 2 AND model == a", "keywords are lower case"),
        ("prompt == 2 model == a", "expected 'and' or the end"),
        ("model == 'a", "the quote ' is not closed"),
        ("`model == a", "the backtick is not closed"),
        ("2prompt == 2", "expected a column name"),
    ],
)
def test_errors_name_the_position(expr: str, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        apply_where(FRAME, [expr])
    assert message in str(exc.value)
    assert "position" in str(exc.value)


def test_unknown_column_and_no_rows_left() -> None:
    with pytest.raises(ConfigError, match=r"has no column 'modle' \(at position 17\)"):
        apply_where(FRAME, "prompt == 2 and modle == a")
    with pytest.raises(ConfigError, match=r"no row of input is left \(prompt == 7\)"):
        apply_where(FRAME, "prompt == 7")


def test_nothing_reaches_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("eval called")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    with pytest.raises(ConfigError, match="no row"):  # compared as text, never run
        apply_where(FRAME, "model == '__import__(\"os\").system(\"true\")'")
    assert apply_where(FRAME, ["prompt == 2", "model != b"]).height == 1


def test_s002_table_2_on_prompt_2(paper_data: Path) -> None:
    """paper.md §8: `summarize scores.csv --where "prompt == 2" --group-col model --total … --max 16` keeps 561 of
    1,122 rows; gemma3_27b has n 51, mean total 13.764706, rank 1 (pandas computes the same)."""
    from tutormetrics.report.group_summary import summarize
    from tutormetrics.stats.totals import parse_slots, parse_total

    scores = pl.read_csv(paper_data / "s002" / "scores.csv")
    lines: list[str] = []
    kept = apply_where(scores, "prompt == 2", log=lines.append)
    assert lines == ["where: kept 561 of 1,122 rows (prompt == 2)"]
    general = "concision+vocabulary+accuracy+formatting+tone+actionability+targeting"
    total = parse_total(f"total={general}+specific")
    slots = parse_slots(["specific=hint_not_answer,ack_progress,build_on_success,concept_clarity"])
    res = summarize(kept.drop("exchange_id", "item", "item_type", "prompt", "run"), group_col="model", id_col="exchange_id",
                    total=total, slots=slots, max_total=16, n_resamples=0)  # fmt: skip
    row = res.table.filter(pl.col("group") == "gemma3_27b", pl.col("variable") == "total").row(0, named=True)
    assert (row["n"], row["rank"]) == (51, 1) and row["mean"] == pytest.approx(13.764706, abs=1e-6)
    pdf = scores.to_pandas()
    pdf = pdf[pdf["prompt"] == 2]
    slot = pdf[["hint_not_answer", "ack_progress", "build_on_success", "concept_clarity"]].sum(axis=1, min_count=1)
    pdf = pdf.assign(total=pdf[general.split("+")].sum(axis=1) + slot)
    means = pdf.groupby("model")["total"].mean()
    assert len(pdf) == 561 and means.idxmax() == "gemma3_27b" and means["gemma3_27b"] == pytest.approx(row["mean"], abs=1e-12)


def test_s001_annotators_alpha_without_the_judge(paper_data: Path) -> None:
    """paper.md §8: `agree calibration.csv --where "rater != judge" --na -1`: α step_scaffolded 0.605972 (0.600402
    with the judge), actionability 0.724068 (0.654462); krippendorff computes the same."""
    krippendorff = pytest.importorskip("krippendorff")
    from tutormetrics.na_codes import drop_na_codes
    from tutormetrics.psychometrics.agreement import agreement_table

    calib = pl.read_csv(paper_data / "s001" / "calibration.csv")
    lines: list[str] = []
    humans = apply_where(calib, "rater != judge", log=lines.append)
    assert lines == ["where: kept 2,700 of 3,600 rows (rater != judge)"]
    want = {"step_scaffolded": (0.605972, 0.600402), "actionability": (0.724068, 0.654462)}
    for frame, k in ((humans, 0), (calib, 1)):
        table = agreement_table(drop_na_codes(frame, [-1]), id_col="exchange_id", rater_col="rater", criterion_col="criterion",
                                score_col="score", n_resamples=0)  # fmt: skip
        alpha = dict(zip(table["criterion"].to_list(), table["krippendorff_alpha"].to_list(), strict=True))
        for crit, values in want.items():
            assert alpha[crit] == pytest.approx(values[k], abs=1e-6), (crit, k)
            sub = frame.filter(pl.col("criterion") == crit, pl.col("score") != -1).pivot(on="exchange_id", index="rater", values="score")
            data = sub.drop("rater").to_numpy().astype(float)
            ref = krippendorff.alpha(reliability_data=np.where(np.isfinite(data), data, np.nan), level_of_measurement="nominal")
            assert alpha[crit] == pytest.approx(ref, abs=1e-9)
