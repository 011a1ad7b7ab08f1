"""Missing and clashing column names (issue 35): the close names in the message, the option in the hint, one line."""

from __future__ import annotations

import polars as pl
import pytest

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.tables import close_columns, require_columns, require_distinct


def test_require_columns_suggests_close_names_and_the_option() -> None:
    df = pl.DataFrame(schema=dict.fromkeys(["exchange_id", "conversation_id", "dialogue_id", "Tutor", *[f"m{i}" for i in range(30)]], pl.String))
    with pytest.raises(InputSchemaError) as exc:
        require_columns(df, ["dialogue", "tutor"], source="x.csv", option="--group-col")
    message, hint = str(exc.value).split("\n  hint: ")
    assert message == "x.csv: missing column 'dialogue' (did you mean 'dialogue_id'?), 'tutor' (did you mean 'Tutor'?)"
    assert hint.startswith("name an existing column with --group-col; the columns are exchange_id, ")
    assert hint.endswith("… (34 in all)") and "--keep" not in hint
    with pytest.raises(InputSchemaError, match="carry an input column with `score --keep zz`"):
        require_columns(df, ["zz"], source="metrics", option="--group-col", also="carry an input column with `score --keep zz`")
    assert close_columns("zz", df.columns) == []


def test_require_columns_is_linear_in_the_columns() -> None:
    """Before: ``df.columns`` was rebuilt once per required column (4,000 labels: 16 million name comparisons)."""
    df = pl.DataFrame({f"c{i}": [0] for i in range(4000)})
    calls = {"n": 0}
    original = pl.DataFrame.columns

    class Counting(pl.DataFrame):
        @property
        def columns(self) -> list[str]:  # type: ignore[override]
            calls["n"] += 1
            return original.fget(self)  # type: ignore[attr-defined]

    require_columns(Counting(df), df.columns, source="t")
    assert calls["n"] <= 2


def test_require_distinct_names_both_options() -> None:
    require_distinct({"--unit-col": "item", "--trial-col": "trial", "--group-col": ["model", "model"]}, command="variability")
    with pytest.raises(ConfigError) as exc:
        require_distinct({"--unit-col": "item", "--trial-col": "trial", "--cols": ["x", "trial"]}, command="variability")
    assert str(exc.value).split("\n")[0] == "variability: --trial-col and --cols both name the column 'trial'"
