"""The report's table kinds (report/table_kinds.py): each recognised by the columns the library writes (judges' and
measurement tables), never shadowed by another, each flag rule on both sides of it."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.psychometrics.judge_differences import DIFFERENCE_COLUMNS
from tutormetrics.psychometrics.length_bias import LENGTH_BIAS_COLUMNS
from tutormetrics.psychometrics.measurement.bias import BIAS_COLUMNS
from tutormetrics.psychometrics.measurement.dif import DIF_COLUMNS
from tutormetrics.psychometrics.measurement.fit import FIT_COLUMNS
from tutormetrics.psychometrics.measurement.separation import SEPARATION_COLUMNS
from tutormetrics.psychometrics.stability import STABILITY_COLUMNS
from tutormetrics.report.collect import classify, collect_study
from tutormetrics.report.table_kinds import DECLARED, KINDS, kind_of

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "src" / "tutormetrics" / "examples" / "data"


def _judge_columns() -> list[str]:
    """The columns of the judge table ``agree --judge`` writes (the bundled example, rater r2 as the judge)."""
    from tutormetrics.psychometrics.judge_tables import JudgeOptions, judge_tables

    return judge_tables(pl.read_csv(EXAMPLE / "ratings.csv"), ["r2"], JudgeOptions(n_resamples=20)).table.columns


TABLES = {
    "length_bias": LENGTH_BIAS_COLUMNS, "stability": STABILITY_COLUMNS, "judge_differences": DIFFERENCE_COLUMNS,
    "judge": _judge_columns(), "fit": FIT_COLUMNS, "separation": SEPARATION_COLUMNS, "bias": BIAS_COLUMNS, "dif": DIF_COLUMNS,
}  # fmt: skip


@pytest.mark.parametrize(("kind", "columns"), TABLES.items())
def test_each_table_is_its_kind(kind, columns):
    assert classify(columns) == kind
    assert classify([*columns, "exchange_id"]) == kind  # before the metrics table it is not


def test_a_kind_is_never_shadowed_by_an_earlier_one():
    for kind in KINDS:
        assert kind_of(kind.columns) is kind, kind.name


@pytest.mark.parametrize("kind", DECLARED, ids=lambda k: k.name)
def test_declared_sections_name_their_columns_and_a_page_that_exists(kind):
    columns = set(TABLES[kind.name])
    assert kind.title and kind.lead and kind.place in ("agreement", "theta")
    assert set(kind.highlight) <= columns and {c for triple in kind.intervals for c in triple} <= columns
    page, _, anchor = kind.doc.partition("#")
    assert re.search(r"\{#" + re.escape(anchor) + r"\}", (ROOT / page).read_text(encoding="utf8")), kind.doc


def _kind(name):
    return next(k for k in KINDS if k.name == name)


def test_flag_rules():
    """Each rule on rows that sit on either side of it (and the empty cells CSV gives)."""
    nan = float("nan")
    lb = pl.DataFrame({"slope_ci_low": [0.1, -0.2, None, -0.5, 0.0, nan], "slope_ci_high": [0.5, 0.3, None, -0.1, 0.2, nan]})
    assert _kind("length_bias").flagged(lb) == [0, 3]  # [0, .2] touches 0; NaN (too_few_clusters) has no interval
    flips = pl.DataFrame({"mcnemar_p": [0.01, 0.5, 0.01, None, 0.049, nan], "mcnemar_cluster_p": [None, 0.01, 0.2, 0.3, nan, nan]})
    assert _kind("stability").flagged(flips) == [0, 1, 4]  # the clustered test wins where the table has it
    fit = pl.DataFrame({"flag": [None, "underfit", "overfit", "", "extreme"]})
    assert _kind("fit").flagged(fit) == [1, 2]
    dif = pl.DataFrame({"ets_class": ["A", "CC", "BB", "C", None], "rasch_class": ["C", "A", "B", None, None]})
    assert _kind("dif").flagged(dif) == [0, 1, 3]
    assert _kind("bias").flagged(pl.DataFrame({"flag": ["bias", None, ""]})) == [0]
    assert _kind("separation").flagged(pl.DataFrame({"facet": ["rater"]})) == []
    assert _kind("dif").flagged(pl.DataFrame({"ets_class": [None, None], "rasch_class": [None, None]})) == []


def test_undefined_intervals_read_from_csv_mark_nothing(tmp_path):
    """The tables as written (NaN as the text NaN, empty cells) and read back."""
    from tutormetrics.io.tables import read_table, write_table

    nan = float("nan")
    write_table(pl.DataFrame({"ci_low": [nan, 0.2, None], "ci_high": [nan, 0.4, None]}), tmp_path / "d.csv")
    assert _kind("judge_differences").flagged(read_table(tmp_path / "d.csv")) == [1]
    write_table(pl.DataFrame({"slope_ci_low": [None, None], "slope_ci_high": [None, None]}, schema={"slope_ci_low": pl.Float64,
                "slope_ci_high": pl.Float64}), tmp_path / "lb.csv")  # fmt: skip
    assert _kind("length_bias").flagged(read_table(tmp_path / "lb.csv")) == []


def test_measurement_tables_get_their_sections(tmp_path):
    """Tables with the measurement tables' columns and docs/measurement.md's bundled-example numbers (separation) are
    shown in the order of KINDS, flags computed on the table as read from CSV."""
    pl.DataFrame({"facet": ["criterion", "rater", "exchange"], "n": [5, 2, 40], "mean": [0.0, 0.0, 0.1],
                  "sd": [1.074152, 0.2104439, 0.9492217], "rmse": [0.3566047, 0.1389294, 0.6773068],
                  "true_sd": [1.01323, 0.1580, 0.665], "separation": [2.841326, 1.137752, 1.401465],
                  "strata": [4.121768, 1.85, 2.2], "reliability": [0.8897845, 0.5641712, 0.6626299],
                  "chi2": [45.49616, 4.588958, None], "df": [4, 1, None], "p_chi2": [3.135e-09, 0.03217858, None],
                  "estimator": ["mml", "mml", "eap"], "reason": ["", "", "eap"]}).write_csv(tmp_path / "SEP.csv")  # fmt: skip
    pl.DataFrame({"facet": ["criterion", "rater", "exchange"], "level": ["guidance_accuracy", "r1", "e07"], "n": [80, 200, 10],
                  "infit": [0.601, 0.744, 1.9], "infit_zstd": [-2.133, -1.2, 2.4], "outfit": [0.493, 0.575, 2.2],
                  "outfit_zstd": [-2.196, -1.0, 2.5], "flag": ["overfit", "", "underfit"], "reason": ["", "", ""]}).write_csv(tmp_path / "FIT.csv")  # fmt: skip
    data = collect_study(tmp_path)
    assert [s["kind"] for s in data["sections"]] == ["fit", "separation"]
    fit, sep = data["sections"]
    assert fit["tables"][0]["flagged"] == [0, 2] and fit["place"] == "theta" and "misfit" in fit["flag_label"]
    assert sep["tables"][0]["flagged"] == [] and sep["tables"][0]["table"]["rows"][0][6] == 2.84133
