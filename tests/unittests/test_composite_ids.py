"""Composite ids with a multi-character ``--id-sep`` (docs/design/datasets.md#composite-ids): no two different part
tuples may join to the same id."""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.errors import InputSchemaError
from tutormetrics.ids import IdKey, ambiguous_parts, joined_ids


@pytest.mark.parametrize(("a", "b"), [("k:", "v0"), ("k", ":v0")])
def test_parts_touching_a_multi_character_separator_are_refused_naming_the_row(a, b):
    frame = pl.DataFrame({"x": ["ok", a], "y": ["fine", b]})
    with pytest.raises(InputSchemaError, match=r"data row 2: id part '[xy]' = '(k:|:v0)' (begins|ends) with ':'"):
        joined_ids(frame, IdKey.of(["x", "y"], "::"), "t.csv")


def test_no_two_accepted_part_tuples_join_to_the_same_id():
    alphabet = ["a", ":", "-"]
    texts = ["".join(p) for n in (1, 2, 3) for p in itertools.product(alphabet, repeat=n)]
    for sep in ("::", ":-", "-:-", "/"):
        accepted = [t for t in texts if not ambiguous_parts(pl.Series([t]), sep)[0]]
        joined: dict[str, tuple[str, str]] = {}
        for a, b in itertools.product(accepted, repeat=2):
            key = f"{a}{sep}{b}"
            assert joined.setdefault(key, (a, b)) == (a, b), (sep, key, joined[key], (a, b))


def test_single_character_separator_rule_is_unchanged():
    # with the default "/" only a part containing "/" is refused, as before
    assert ambiguous_parts(pl.Series(["a/b", "/a", "a", "a:b"]), "/").to_list() == [True, True, False, False]
    assert joined_ids(pl.DataFrame({"a": ["4"], "b": ["65"]}), IdKey.of(["a", "b"]), "t").to_list() == ["4/65"]


def test_colliding_composite_ids_never_get_the_dedupe_hint(tmp_path, capsys):
    path = tmp_path / "x.csv"
    pl.DataFrame({"k": ["k:", "k"], "v": ["v0", ":v0"], "prompt": ["p", "q"], "response": ["r", "s"]}).write_csv(path)
    code = main(["score", str(path), "--id", "k", "--id", "v", "--id-sep", "::", "--prompt", "prompt",
                 "--metrics", "length", "-o", str(tmp_path / "m.csv")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--dedupe" not in err and "Traceback" not in err and not (tmp_path / "m.csv").exists()
    assert "data row 1: id part 'k' = 'k:' ends with ':'" in err
