"""docs/getting-started.md quotes the demo (``run --example -o demo-out``): every line of its stderr block, the counts
of its prose and the files of the folder are checked against one fresh run (the ``demo_run`` session fixture), so the
page cannot drift from what the demo prints (issue 35: the page said 43 cells with p_adj < .05, the demo printed 49)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"


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


pytestmark = [pytest.mark.model, pytest.mark.slow]
