"""The three seeds end to end (``docs/studies.md#seeds``): every command of the walk-throughs runs as written on
the seeded synthetic data (``../shared/data/synthetic/paper_data.py``), and the files it names hold paper.md's
numbers (§5, §6, §8) in parseable ``.md``/``.tex`` tables."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import polars as pl
import pytest
from paper_files import check_paper_file

from tutormetrics.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "studies.md"
SEEDS = {"000": "s000", "001": "s001", "002": "s002"}


def _section(seed: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"### Seed {seed}")
    end = text.find("\n### ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def walkthrough(seed: str) -> list[list[str]]:
    """The ``tutormetrics`` commands of seed ``seed``'s bash block, continuation lines joined."""
    block = re.search(r"```bash\n(.*?)```", _section(seed), re.S).group(1)  # type: ignore[union-attr]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line)[1:] for line in joined.splitlines() if line.startswith("tutormetrics ")]


def prose_commands(seed: str) -> list[list[str]]:
    """The ``tutormetrics`` commands quoted inline in the section's prose (the preparation steps)."""
    prose = re.sub(r"```bash\n.*?```", "", _section(seed), flags=re.S)
    return [shlex.split(re.sub(r"\s+", " ", c))[1:] for c in re.findall(r"`(tutormetrics [^`]+)`", prose) if "-o" in c]


def _run(commands: list[list[str]], where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(where)
    for argv in commands:
        assert main(argv) == 0, argv


def _tex_rows(text: str) -> list[list[str]]:
    body = text.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
    return [[c.strip() for c in line.rstrip("\\ \n").split(" & ")] for line in body.strip().splitlines()]


def test_seed000_walkthrough(paper_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = paper_data / "s000"
    assert main(["score", str(d / "exchanges.csv"), "--prompt", "query", "--prompt", "code", "--prompt", "error",
                 "--metrics", "lexical", "-o", str(d / "metrics.csv")]) == 0  # fmt: skip
    commands = walkthrough("000")
    assert len(commands) <= 3
    _run(commands, d, monkeypatch)
    for name in ("table5_6.tex", "table7_8.tex", "kappa.tex", "table4.tex", "rho.tex"):
        check_paper_file(d / name)
    assert (d / "fig3.pdf").stat().st_size > 0 and (d / "fig2.pdf").stat().st_size > 0
    rows = _tex_rows((d / "table4.tex").read_text())
    assert rows[0] == ["i1", "r1", "249", "70", "0.281", "1"]
    assert "\\begin{tabular}{llrrrr}" in (d / "table4.tex").read_text()
    rho = {r[0]: r for r in _tex_rows((d / "rho.tex").read_text())}
    assert rho["resp\\_chars"][1].startswith("-0.212")  # paper.md §1: ρ(resp_chars, i1) recoded


def test_seed001_walkthrough(paper_data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    d = paper_data / "s001"
    commands = walkthrough("001")
    assert len(commands) <= 3
    _run(prose_commands("001") + commands, d, monkeypatch)
    assert "where: kept 2,700 of 3,600 rows (rater != judge)" in capsys.readouterr().err
    text = check_paper_file(d / "table3.md")
    alpha = {}
    header = [c.strip().replace("\\", "") for c in text.splitlines()[0].strip("|").split("|")]
    for line in text.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        alpha[cells[0].replace("\\", "")] = cells[header.index("α [95% CI]")]
    assert alpha["step_scaffolded"].startswith("0.606") and alpha["actionability"].startswith("0.724")  # paper.md §8
    check_paper_file(d / "cells.tex")
    assert (d / "bias.pdf").exists() and pl.read_csv(d / "fair.csv").height > 0


def test_seed002_walkthrough(paper_data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    d = paper_data / "s002"
    commands = walkthrough("002")
    assert len(commands) <= 3
    _run(commands, d, monkeypatch)
    assert "where: kept 561 of 1,122 rows (prompt == 2)" in capsys.readouterr().err
    table2 = check_paper_file(d / "table2.tex")
    assert "13.765" in next(line for line in table2.splitlines() if line.startswith("gemma3\\_27b"))
    check_paper_file(d / "var.md")
    judges = check_paper_file(d / "judges.tex")
    pooled = [r for r in _tex_rows(judges) if r[1] == "(all)"]
    assert len(pooled) >= 2
    assert any("89.5" in r and "77.8" in r for r in pooled) and any("76.0" in r for r in pooled)  # paper.md §5
