"""A study folder is meant to be sent: the report holds no path of the machine it was made on (issue 35). Files inside
the folder are named relative to it, every other file by its name (docs/commands/report.md#paths)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.report import write_report
from tutormetrics.report.collect import collect_study
from tutormetrics.report.portable_paths import (
    is_whole_path,
    portable,
    scrub_text,
    shown_path,
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("/home/ana/study/inputs/ratings.csv", "inputs/ratings.csv"),
        ("/home/ana/study/targets.csv", "targets.csv"),
        ("/home/ana/data/exchanges.csv", "exchanges.csv"),
        ("/home/ana/study/../elsewhere/x.parquet", "x.parquet"),
        ("~/data/r.csv", "r.csv"),
        ("C:\\Users\\Ana\\study\\ex.csv", "ex.csv"),
        ("\\\\server\\share\\ex.csv", "ex.csv"),
    ],
)
def test_shown_path(value, shown):
    assert shown_path(value, Path("/home/ana/study")) == shown


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prompts and responses not shown: /tmp/a/b/ex.csv not found", "prompts and responses not shown: ex.csv not found"),
        ("θ from /srv/x/t1.csv, /srv/y/t2.csv", "θ from t1.csv, t2.csv"),
        ("read '/home/ana/My data/ex.csv': not JSON", "read 'ex.csv': not JSON"),  # quoted: spaces allowed
        ('a "/home/ana/x y/z.csv" b', 'a "z.csv" b'),
        ("/home/ana/My data/ex.csv", "ex.csv"),  # a whole value with a space
        ("see https://example.org/a/b and and/or 1/2, ratio a/b, /x", "see https://example.org/a/b and and/or 1/2, ratio a/b, /x"),
        ("12 of 12 metric rows matched ratings", "12 of 12 metric rows matched ratings"),
    ],
)
def test_scrub_text(text, expected):
    assert scrub_text(text, Path("/somewhere/else")) == expected


def test_whole_paths_only_in_table_cells():
    assert is_whole_path("/a/b.csv") and not is_whole_path("/b.csv") and not is_whole_path("tutor/llm")
    assert portable({"k": ["/a/b/c.csv", 1, None, {"/a/b/key.csv": "x"}]}, Path("/a")) == {"k": ["b/c.csv", 1, None, {"b/key.csv": "x"}]}


def _no_machine_paths(text: str, *roots: Path) -> list[str]:
    """The machine paths found in ``text`` (JSON-escaped or not)."""
    found = []
    for root in {*roots, Path.home(), Path.cwd()}:
        for form in {str(root), str(root.resolve()), json.dumps(str(root))[1:-1]}:
            if len(form) > 1 and form in text:
                found.append(form)
    return found


def test_a_sent_study_holds_no_absolute_path(tmp_path, example_dir):
    """run with the exchanges outside the folder and the ratings inside it; then the input moved away (the note and
    banner name files only) and a table a user wrote with a path cell."""
    study = tmp_path / "study"
    (study / "inputs").mkdir(parents=True)
    shutil.copy(example_dir / "ratings.csv", study / "inputs" / "ratings.csv")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(example_dir / "exchanges.csv", data_dir / "exchanges.csv")
    code = main(["run", str(data_dir / "exchanges.csv"), "--ratings", str(study / "inputs" / "ratings.csv"), "--prompt", "query",
                 "-m", "length", "--ci", "none", "--n-permutations", "99", "-o", str(study), "--no-progress"])  # fmt: skip
    assert code == 0
    assert str(tmp_path) in (study / "run.json").read_text()  # run.json itself keeps what the run was given
    page = (study / "report.html").read_text(encoding="utf8")
    assert _no_machine_paths(page, tmp_path, example_dir) == []
    data = collect_study(study)
    assert data["run"]["exchanges"] == "exchanges.csv" and data["run"]["ratings"] == "inputs/ratings.csv"
    assert data["manifest"]["input"] == "exchanges.csv" and data["run"]["files"]["correlations"] == "correlations.csv"
    assert "texts" in data["exchanges"]  # read from the recorded absolute path all the same

    pl.DataFrame({"group": ["a"], "variable": ["resp_words"], "mean": [1.0], "source": [str(data_dir / "exchanges.csv")]}).write_csv(study / "by_group.csv")
    moved = tmp_path / "moved.csv"
    os.replace(data_dir / "exchanges.csv", moved)
    page = write_report(study).read_text(encoding="utf8")
    assert _no_machine_paths(page, tmp_path, example_dir) == []
    data = collect_study(study)
    assert "prompts and responses not shown: exchanges.csv not found (pass --exchanges)" in data["notes"]
    assert data["summary"][0]["table"]["rows"][0][-1] == "exchanges.csv"
    (moved).write_text((example_dir / "exchanges.csv").read_text().replace("a", "b", 1))  # not the scored bytes
    data = collect_study(study, exchanges=moved)
    assert any(line.startswith("prompts and responses not shown: moved.csv is not the input") for line in data["stale"])


def test_the_dialogue_example_holds_no_repository_path(tmp_path):
    out = tmp_path / "demo"
    assert main(["run", "--example", "dialogue", "-m", "length", "--n-resamples", "99", "--no-progress", "-o", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf8")
    import tutormetrics

    package = Path(tutormetrics.__file__).parent
    assert _no_machine_paths(page, tmp_path, package) == []
    assert not re.search(r"(?<![\w.])/(?:tmp|home|root|work|Users|usr|srv|var)/", page)
