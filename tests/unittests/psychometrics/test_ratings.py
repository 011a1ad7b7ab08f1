"""Tests for ratings → targets (statistics.md §1.1)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.psychometrics.ratings import (
    clean_long_ratings,
    is_long_ratings,
    ratings_to_targets,
    read_theta,
    theta_to_targets,
    wide_ratings_to_targets,
)
from tutormetrics.psychometrics.ratings_input import read_ratings


@pytest.fixture
def long_two_raters() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "exchange_id": ["e2", "e2", "e1", "e1", "e2", "e2", "e1", "e1"],
            "rater": ["r1", "r2", "r1", "r2", "r1", "r2", "r1", "r2"],
            "criterion": ["tone", "tone", "tone", "tone", "guide", "guide", "guide", "guide"],
            "score": [1, 0, 1, 1, 0, 0, 1, 0],
        }
    )


def test_mean_over_two_binary_raters_gives_halves(long_two_raters: pl.DataFrame) -> None:
    out = ratings_to_targets(long_two_raters)
    assert out.columns == ["exchange_id", "tone", "guide"]  # first-appearance order
    assert out.schema["tone"] == pl.Float64
    assert out.rows() == [("e2", 0.5, 0.0), ("e1", 1.0, 0.5)]


def test_per_rater_min_max(long_two_raters: pl.DataFrame) -> None:
    per = ratings_to_targets(long_two_raters, aggregate="per_rater")
    assert per.columns == ["exchange_id", "tone@r1", "tone@r2", "guide@r1", "guide@r2"]
    assert per.row(1) == ("e1", 1.0, 1.0, 1.0, 0.0)
    assert ratings_to_targets(long_two_raters, aggregate="min").rows() == [("e2", 0.0, 0.0), ("e1", 1.0, 0.0)]
    assert ratings_to_targets(long_two_raters, aggregate="max").rows() == [("e2", 1.0, 0.0), ("e1", 1.0, 1.0)]


@pytest.mark.parametrize("scores", [[0, 1, 1, 0], [0.0, 0.5, 1.0, 0.5], [0, 2, 1, 2]])
def test_single_rating_without_rater_column_keeps_scale(scores: list[float]) -> None:
    df = pl.DataFrame({"exchange_id": ["a", "b", "c", "d"], "criterion": ["coh"] * 4, "score": scores})
    out = ratings_to_targets(df)
    assert out["coh"].to_list() == [float(s) for s in scores]


def test_numeric_text_and_missing_scores() -> None:
    df = pl.DataFrame(
        {
            "exchange_id": ["a", "a", "b", "b", "c"],
            "rater": ["r1", "r2", "r1", "r2", "r1"],
            "criterion": ["coh"] * 5,
            "score": ["1", " 0.5 ", "", "NA", "0"],
        }
    )
    out = ratings_to_targets(df)
    assert out.rows() == [("a", 0.75), ("b", None), ("c", 0.0)]  # b keeps its row, with no score


def test_non_numeric_score_names_column_and_row() -> None:
    df = pl.DataFrame({"exchange_id": ["a", "b", "c"], "criterion": ["coh"] * 3, "score": ["1", "Yes", "0"]})
    with pytest.raises(InputSchemaError, match=r"'score'.*'Yes'.*row 2.*exchange_id='b'"):
        ratings_to_targets(df)


def test_clean_long_ratings_types_and_keeps_missing_as_null() -> None:
    df = pl.DataFrame(
        {
            "exchange_id": [1, 1, 2, 2, 3],
            "rater": ["r1", "r2", "r1", "r2", "r1"],
            "criterion": ["coh"] * 5,
            "score": [" 1 ", "NaN", "0.5", "", "2"],
            "extra": ["x"] * 5,
        }
    )
    clean = clean_long_ratings(df)
    assert clean.columns == ["_id", "_crit", "_score", "_rater"]
    assert clean.schema["_id"] == pl.Int64  # ids keep their type
    assert clean["_score"].to_list() == [1.0, None, 0.5, None, 2.0]
    assert clean.filter(pl.col("_score").is_not_null()).select("_id", "_rater", "_score").rows() == [
        (1, "r1", 1.0), (2, "r1", 0.5), (3, "r1", 2.0)
    ]
    no_rater = clean_long_ratings(df.filter(pl.col("rater") == "r1").drop("rater"), rater_col=None)
    assert no_rater.columns == ["_id", "_crit", "_score"] and no_rater.height == 3
    with pytest.raises(InputSchemaError, match="more than one score"):
        clean_long_ratings(pl.concat([df, df.head(1)]))


@pytest.mark.parametrize(
    ("column", "message"),
    [("exchange_id", r"1 row\(s\) have an empty 'exchange_id'"), ("rater", "empty 'rater'"), ("criterion", "empty 'criterion'")],
)
def test_null_keys_are_rejected_everywhere(long_two_raters: pl.DataFrame, column: str, message: str) -> None:
    from tutormetrics.psychometrics.mfrm.design import prepare_ratings

    bad = long_two_raters.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col(column)).alias(column)
    )
    with pytest.raises(InputSchemaError, match=message):
        clean_long_ratings(bad)
    with pytest.raises(InputSchemaError, match=message):
        ratings_to_targets(bad)
    with pytest.raises(InputSchemaError, match=message):
        prepare_ratings(bad)


def test_mfrm_and_targets_read_scores_alike(long_two_raters: pl.DataFrame) -> None:
    """Score text ("1", " 0 ", blanks, NA) is parsed the same way for targets and for the MFRM."""
    from tutormetrics.psychometrics.mfrm.design import prepare_ratings

    text = long_two_raters.with_columns(pl.col("score").cast(pl.String).str.replace("^1$", " 1 "))
    text = pl.concat([text, text.head(1).with_columns(pl.lit("r3").alias("rater"), pl.lit("NA").alias("score"))])
    assert ratings_to_targets(text).rows() == ratings_to_targets(long_two_raters).rows()
    a, b = prepare_ratings(text), prepare_ratings(long_two_raters)
    assert a.design.n_obs == b.design.n_obs == long_two_raters.height
    assert a.cat.tolist() == b.cat.tolist() and a.raters == b.raters
    with pytest.raises(InputSchemaError, match=r"non-numeric value 'Yes'"):
        prepare_ratings(text.with_columns(pl.lit("Yes").alias("score")))


def test_duplicates_and_bad_options_raise(long_two_raters: pl.DataFrame) -> None:
    no_rater = long_two_raters.drop("rater")
    with pytest.raises(InputSchemaError, match="more than one score"):
        ratings_to_targets(no_rater)
    with pytest.raises(InputSchemaError, match="more than one score"):
        ratings_to_targets(pl.concat([long_two_raters, long_two_raters.head(1)]))
    with pytest.raises(ConfigError):
        ratings_to_targets(long_two_raters, aggregate="median")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rater column"):
        ratings_to_targets(no_rater.unique(["exchange_id", "criterion"]), aggregate="per_rater")
    with pytest.raises(InputSchemaError, match="score"):
        ratings_to_targets(long_two_raters.drop("score"))


def test_wide_plain_and_per_rater_columns() -> None:
    wide = pl.DataFrame(
        {
            "exchange_id": ["a", "b", "c"],
            "tone@r1": [1, 0, None],
            "tone@r2": [0, 0, 1],
            "coherence": [1.0, 0.5, 0.0],
            "tutor": ["x", "y", "z"],
        }
    )
    out = wide_ratings_to_targets(wide)
    assert out.columns == ["exchange_id", "tone", "coherence"]
    assert out["tone"].to_list() == [0.5, 0.0, 1.0]  # mean ignores the missing rater
    assert wide_ratings_to_targets(wide, aggregate="max")["tone"].to_list() == [1.0, 0.0, 1.0]
    per = wide_ratings_to_targets(wide, aggregate="per_rater")
    assert per.columns == ["exchange_id", "tone@r1", "tone@r2", "coherence"]
    picked = wide_ratings_to_targets(wide, columns=["coherence"])
    assert picked.columns == ["exchange_id", "coherence"]


def test_wide_errors() -> None:
    dup = pl.DataFrame({"exchange_id": ["a", "a"], "tone": [1, 0]})
    with pytest.raises(InputSchemaError, match="more than one row"):
        wide_ratings_to_targets(dup)
    mixed = pl.DataFrame({"exchange_id": ["a"], "tone": [1], "tone@r1": [0]})
    with pytest.raises(InputSchemaError, match="both a plain column"):
        wide_ratings_to_targets(mixed)
    with pytest.raises(InputSchemaError, match="no numeric"):
        wide_ratings_to_targets(pl.DataFrame({"exchange_id": ["a"], "note": ["x"]}))
    with pytest.raises(InputSchemaError, match="non-numeric"):
        wide_ratings_to_targets(pl.DataFrame({"exchange_id": ["a"], "note": ["x"]}), columns=["note"])


def test_wide_with_rater_rows_is_melted() -> None:
    df = pl.DataFrame({"exchange_id": ["a", "a", "b"], "rater": ["r1", "r2", "r1"], "tone": [1, 0, 1], "coh": [1, 1, 0]})
    out = wide_ratings_to_targets(df, rater_col="rater")
    assert out.rows() == [("a", 0.5, 1.0), ("b", 1.0, 0.0)]


def test_read_ratings_detects_layout(tmp_path: Path, long_two_raters: pl.DataFrame) -> None:
    long_path = tmp_path / "long.csv"
    long_two_raters.write_csv(long_path)
    assert is_long_ratings(long_two_raters)
    assert read_ratings(long_path).targets().columns == ["exchange_id", "tone", "guide"]
    assert read_ratings(long_path).targets(columns=["guide"]).columns == ["exchange_id", "guide"]
    with pytest.raises(InputSchemaError, match="'humour' not found"):
        read_ratings(long_path).targets(columns=["humour"])
    wide_path = tmp_path / "wide.parquet"
    pl.DataFrame({"exchange_id": ["a", "b"], "tone@x": [1, 0], "tone@y": [1, 1]}).write_parquet(wide_path)
    assert read_ratings(wide_path).targets().rows() == [("a", 1.0), ("b", 0.5)]


def test_theta_targets_skip_uncertainty_columns(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "exchange_id": [1, 2],
            "theta": [0.1, -0.2],
            "theta_sd": [0.5, 0.4],
            "theta_ci_low": [-1.0, -1.0],
            "theta_hdi_high": [1.0, 1.0],
            "theta_explanatory": [0.0, 0.3],
            "label": ["x", "y"],
        }
    )
    assert theta_to_targets(df).columns == ["exchange_id", "theta", "theta_explanatory"]
    path = tmp_path / "theta.csv"
    df.write_csv(path)
    assert read_theta(path)["theta"].to_list() == [0.1, -0.2]
    with pytest.raises(InputSchemaError, match="theta"):
        theta_to_targets(df.select("exchange_id", "theta_sd"))


@pytest.mark.mrbench
def test_mrbench_ratings_single_gold_rater(mrbench_dir: Path) -> None:
    targets = read_ratings(mrbench_dir / "ratings.csv").targets()
    assert targets.height == 1655
    assert len(targets.columns) == 9
    values = set(targets.drop("exchange_id").unpivot()["value"].to_list())
    assert values <= {0.0, 0.5, 1.0}
    per = read_ratings(mrbench_dir / "ratings.csv").targets("per_rater")
    assert all(c.endswith("@gold") for c in per.columns[1:])
    assert per.drop("exchange_id").to_numpy().tolist() == targets.drop("exchange_id").to_numpy().tolist()


# ---------------------------------------------------------------------------- the rating scale (issue 18)
from tutormetrics.psychometrics.ratings import check_scale, inferred_levels, parse_levels  # noqa: E402


def _binary_with(value: float) -> pl.DataFrame:
    scores = [0.0, 1.0] * 20 + [value]
    return pl.DataFrame({"exchange_id": [f"e{i}" for i in range(41)], "rater": ["r"] * 41, "criterion": ["c"] * 41, "score": scores})


@pytest.mark.parametrize("typo", [7.0, -1.0, 2.5])
def test_a_typo_off_a_binary_scale_is_an_error_naming_the_row(typo):
    with pytest.raises(InputSchemaError, match=rf"1 score\(s\) off the scale: data row 41 \(id 'e40', 'c' = {typo:g}, scale {{0, 1}}\)") as info:
        check_scale(_binary_with(typo))
    assert "--levels" in info.value.hint and "--drop-out-of-scale" in info.value.hint


def test_drop_out_of_scale_drops_and_reports():
    notes: list[str] = []
    kept = check_scale(_binary_with(7.0), drop=True, log=notes.append)
    assert kept.height == 40 and kept["score"].max() == 1.0
    assert any("dropped 1 rating(s) off the scale" in n for n in notes)


def test_declared_levels_rule_and_a_rare_real_category_is_kept():
    assert check_scale(_binary_with(7.0), levels=[0, 1, 7]).height == 41
    with pytest.raises(InputSchemaError, match="off the scale"):
        check_scale(_binary_with(1.0), levels=[0, 2])
    assert inferred_levels([1.0] * 40 + [0.0, 0.0]) == [0.0, 1.0]  # a rare adjacent category is real
    assert inferred_levels([0, 0.5, 1] * 10 + [2]) == [0.0, 0.5, 1.0]  # two steps beyond 0/0.5/1
    assert parse_levels("1, 0") == [0.0, 1.0]
    with pytest.raises(ConfigError):
        parse_levels("0")


def test_theta_refuses_a_silent_model_change(tmp_path, example_dir, capsys):
    from tutormetrics.cli import main

    df = pl.read_csv(example_dir / "ratings.csv")
    df = df.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(7).otherwise(pl.col("score")).alias("score"))
    src = tmp_path / "r.csv"
    df.write_csv(src)
    assert main(["theta", str(src), "-o", str(tmp_path / "t.csv")]) == 2
    assert "off the scale" in capsys.readouterr().err and not (tmp_path / "t.csv").exists()
    assert main(["theta", str(src), "-o", str(tmp_path / "t.csv"), "--drop-out-of-scale"]) == 0
    assert "MFRM binary" in capsys.readouterr().err  # still the binary model
