"""The pages that quote the demo (``run --example -o demo-out``): docs/getting-started.md (its stderr block, the counts of
its prose, the files of the folder), docs/commands/run.md (its console block) and docs/commands/validate.md (``validate``
on the demo's metrics and θ: its console block and the first rows of ``correlations.csv``) are checked against one fresh
run (the ``demo_run`` session fixture), so no page drifts from what the demo prints (issue 35: the pages said 43 cells
with p_adj < .05, the demo printed 49)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "getting-started.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("## The whole study in one command", 1)[1].split("\n## ", 1)[0]


def block_pattern(block: str) -> re.Pattern[str]:
    """The stderr a ``text`` block stands for: each line as written (``…`` inside a line: any text), a line ``...``:
    any number of lines.

    >>> bool(block_pattern("a …/x\\n  ...\\nz").fullmatch("a /p/x\\nb\\nc\\nz\\n"))
    True
    """
    parts = []
    for line in block.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("…")) + r"\n")
    return re.compile("".join(parts))


def test_the_stderr_block_is_what_the_demo_prints(demo_run):
    _, err = demo_run
    section = _section()
    assert "tutormetrics run --example -o demo-out" in section  # the command the fixture runs
    block = re.search(r"```text\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    assert block_pattern(block).fullmatch(err), f"docs/getting-started.md's demo output differs from a run:\n{err}"


def test_the_folder_holds_the_files_the_page_names(demo_run):
    out, _ = demo_run
    prose = _section().split("```text", 1)[1].split("```", 1)[1].split("Each step is also", 1)[0]
    named = set(re.findall(r"`([\w.]+\.(?:csv|json|png|pdf|html))`", prose))
    assert named == {p.name for p in out.iterdir() if not p.name.startswith(".")}


def test_the_counts_of_the_prose(demo_run, example_dir):
    out, _ = demo_run
    prose = _section()
    assert "the bundled 40 C++ debugging exchanges (10 problems × 4 tutors)" in prose
    exchanges = pl.read_csv(example_dir / "exchanges.csv")
    assert (exchanges.height, exchanges["conversation_id"].n_unique(), exchanges["tutor"].n_unique()) == (40, 10, 4)
    assert pl.read_csv(out / "metrics.csv").height == 40
    assert "from the\ntwo raters" in prose and "the five rubric\ncriteria and θ" in prose
    ratings = pl.read_csv(example_dir / "ratings.csv")
    assert (ratings["rater"].n_unique(), ratings["criterion"].n_unique()) == (2, 5)
    assert set(pl.read_csv(out / "correlations.csv")["target"]) == {*ratings["criterion"].unique(), "theta"}


def console(page: Path, command: str) -> tuple[list[str], str]:
    """The argv of the console block of ``page`` that starts with ``$ command`` and the lines it shows printed."""
    text = page.read_text(encoding="utf-8")
    block = text[text.index(f"$ {command}") :].split("```", 1)[0]
    first, _, shown = block.partition("\n")
    return shlex.split(first[2:])[1:], shown


def test_run_page_shows_what_the_demo_prints(demo_run):
    _, err = demo_run
    argv, shown = console(DOCS / "commands" / "run.md", "tutormetrics run --example")
    assert argv == ["run", "--example", "-o", "demo-out"]
    assert block_pattern(shown).fullmatch(err), f"docs/commands/run.md's demo output differs from a run:\n{err}"


def test_validate_page_on_the_demo_metrics(demo_run, example_dir, tmp_path, monkeypatch, capsys):
    out, _ = demo_run
    for name in ("metrics.csv", "metrics.csv.manifest.json", "theta.csv"):
        shutil.copy(out / name, tmp_path / name)
    shutil.copy(example_dir / "ratings.csv", tmp_path / "ratings.csv")
    monkeypatch.chdir(tmp_path)
    page = DOCS / "commands" / "validate.md"
    argv, shown = console(page, "tutormetrics validate metrics.csv")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert block_pattern(shown).fullmatch(err), f"docs/commands/validate.md's output differs from a run:\n{err}"
    rows = re.search(r"```text\n(metric,target,n,rho.*?)```", page.read_text(encoding="utf-8"), re.S).group(1)  # type: ignore[union-attr]
    quoted = pl.read_csv(rows.encode())
    written = pl.read_csv(tmp_path / "correlations.csv").head(quoted.height)
    assert quoted.columns == written.columns and quoted.height == 5
    for col in quoted.columns:
        if quoted.schema[col].is_numeric():
            assert quoted[col].to_list() == pytest.approx(written[col].to_list(), rel=1e-9, abs=1e-12), col
        else:
            assert quoted[col].fill_null("").to_list() == written[col].fill_null("").to_list(), col


pytestmark = [pytest.mark.model, pytest.mark.slow]
