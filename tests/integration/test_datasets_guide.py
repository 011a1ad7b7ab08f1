"""docs/guide/datasets.md as written (issue 35: CIMA's documented `run … --cluster-col dialogue_id` exited 2): every
command of the page (its ``bash`` blocks, its ``console`` block and the ``tutormetrics … -o …`` commands quoted in the
prose) runs in page order on the samples of ``../shared/data/public``, the raw file names of the page replaced by the
samples'. What the page quotes is then checked against the run: the
``converted …`` and ``validating …`` lines, the console block's output lines, ``N of M cells defined`` and ``K with
p_adj < .05``, every ``metric ~ target`` ρ (and its interval), Bridge's comparison, uptake's α and ids.

MRBench's numbers are for the full converted copy in ``../shared/data/mrbench``: its ``run`` and numbers are checked by
the slow test; its ``convert`` runs on the raw five-item sample of tests/fixtures/mrbench_raw.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "guide" / "datasets.md"
PUBLIC = ROOT.parent / "shared" / "data" / "public"
MRBENCH_COPY = ROOT.parent / "shared" / "data" / "mrbench"

#: The raw release files the page names → the samples the test converts instead.
RAW = {
    "MRBench/MRBench_V2.json": ROOT / "tests" / "fixtures" / "mrbench_raw" / "MRBench_V2_sample.json",
    "data/test.csv": PUBLIC / "mathdial" / "test_first40.csv",
    "data/test.jsonl": PUBLIC / "mathdial" / "test_first40.jsonl",
    "dataset.json": PUBLIC / "cima" / "dataset_first80.json",
    "dataset/validation.json": PUBLIC / "bridge" / "validation.json",
    "data/uptake_data.csv": PUBLIC / "uptake" / "uptake_data_first200.csv",
}
SECTIONS = ("MRBench", "MathDial", "CIMA", "Bridge", "Conversational uptake")
_BLOCK = re.compile(r"```(bash|console)\n(.*?)```", re.S)
_INLINE = re.compile(r"`(tutormetrics [^`]+)`")
_RHO = re.compile(r"`(?:(\w+) )?~ (\w+)`:? ρ = ([−-]?\.\d+)(?: \[([−-]?\.\d+), ([−-]?\.\d+)\])?")


@dataclass
class Command:
    argv: list[str]
    output: list[str] = field(default_factory=list)  # a console block's lines after the command


@dataclass
class Prose:
    text: str


def section(title: str) -> str:
    """The text of the ``## title…`` section."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def headline(title: str) -> str:
    """The row of the page's first table for the dataset ``title`` (its headline)."""
    name = title.split()[-1].lower()
    rows = [r for r in DOC.read_text(encoding="utf-8").splitlines() if r.startswith("| ") and r[2:].lower().startswith(name)]
    return rows[0] if rows else ""


def _words(command: str) -> list[str]:
    return shlex.split(re.sub(r"\s+", " ", command), comments=True)


def steps(text: str) -> list[Command | Prose]:
    """The commands of ``text`` and the prose between them, in page order."""
    out: list[Command | Prose] = []

    def prose(chunk: str) -> None:
        pos = 0
        for m in _INLINE.finditer(chunk):
            if " -o " not in m.group(1):  # a command named, not given (e.g. `tutormetrics compare --group-col ...`)
                continue
            out.append(Prose(chunk[pos : m.start()]))
            out.append(Command(_words(m.group(1))))
            pos = m.end()
        out.append(Prose(chunk[pos:]))

    pos = 0
    for block in _BLOCK.finditer(text):
        prose(text[pos : block.start()])
        pos = block.end()
        body = re.sub(r"\\\n\s*", " ", block.group(2))
        if block.group(1) == "bash":
            out += [Command(_words(line)) for line in body.splitlines() if line.startswith(("tutormetrics ", "python "))]
        else:
            for line in body.splitlines():
                if line.startswith("$ "):
                    out.append(Command(_words(line[2:])))
                elif line.strip() and isinstance(out[-1], Command):
                    out[-1].output.append(line.strip())
    prose(text[pos:])
    return out


def _num(text: str) -> str:
    return text.replace("−", "-")


def _two(v: float) -> str:
    """ρ as the page writes it: two decimals, no leading zero (``-.68``)."""
    text = f"{abs(v):.2f}"
    return ("-" if v < 0 else "") + (text[1:] if text.startswith("0.") else text)


class Run:
    """The page's commands run in order in ``where``; their stderr, and the study folders of the ``run`` commands."""

    def __init__(self, where: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.where, self.capsys = where, capsys
        self.err, self.studies = "", []  # type: tuple[str, list[Path]]

    def do(self, command: Command) -> str:
        argv = [str(RAW.get(a, a)) for a in command.argv]
        if argv[0] == "python":
            done = subprocess.run([sys.executable, *argv[1:]], cwd=self.where, capture_output=True, text=True, check=False)
            assert done.returncode == 0, (argv, done.stderr)
            return done.stderr
        code = main(argv[1:])
        err = self.capsys.readouterr().err
        assert code == 0, (argv, err)
        self.err += err
        if argv[1] == "run":
            self.studies.append(self.where / argv[argv.index("-o") + 1])
        for line in command.output:
            assert line in err.splitlines(), (argv, line, err)
        return err


def check_claims(text: str, run: Run, study: Path | None) -> None:
    """What ``text`` quotes, against the stderr so far and ``study`` (the run the text is about)."""
    for quoted in re.findall(r"`((?:converted|validating) [^`]+)`", text):
        assert re.sub(r"\s+", " ", quoted) in run.err, quoted
    if study is None or not (study / "correlations.csv").exists():  # nothing validated (Bridge)
        return
    corr = pl.read_csv(study / "correlations.csv")
    defined = corr.filter(pl.col("rho").is_not_null() & pl.col("rho").is_not_nan())
    for n_def, n_all in re.findall(r"([\d,]+) of ([\d,]+) cells defined", text):
        assert (f"{defined.height:,}", f"{corr.height:,}") == (n_def, n_all), study
    for n_sig in re.findall(r"([\d,]+) with p_adj < \.05", text):
        assert f"{defined.filter(pl.col('p_adj') < 0.05).height:,}" == n_sig, study
    metric = None
    for m in _RHO.finditer(re.sub(r"\s+", " ", text)):
        metric = m.group(1) or metric
        row = corr.filter((pl.col("metric") == metric) & (pl.col("target") == m.group(2)))
        assert row.height == 1, m.group(0)
        got = [_two(row["rho"][0])] + ([_two(row["ci_low"][0]), _two(row["ci_high"][0])] if m.group(4) else [])
        assert got == [_num(g) for g in m.groups()[2:] if g is not None], (m.group(0), got, study)
    for n in re.findall(r"resample the (\d+) dialogues", text):
        assert corr["n_clusters"].drop_nulls().unique().to_list() == [int(n)]


def run_section(title: str, where: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                *, claims: bool = True) -> Run:  # fmt: skip
    """Every command of the section in page order; each piece of prose checked against the run before it."""
    monkeypatch.chdir(where)
    run = Run(where, capsys)
    for step in steps(section(title)):
        if isinstance(step, Command):
            run.do(step)
        elif claims:
            check_claims(step.text, run, run.studies[-1] if run.studies else None)
    if claims and run.studies:
        check_claims(headline(title), run, run.studies[0])
    return run


@pytest.fixture(autouse=True)
def _public() -> None:
    if not all(p.exists() for p in RAW.values()):
        pytest.skip("../shared/data/public not available")


def test_every_section_has_commands():
    for title in SECTIONS:
        assert any(isinstance(s, Command) for s in steps(section(title))), title
    assert [c.argv[0] for s in SECTIONS for c in steps(section(s)) if isinstance(c, Command)].count("python") == 1


def test_mrbench_convert_runs_on_the_raw_sample(tmp_path, capsys, monkeypatch):
    """The five-item raw sample converts as written; its 43 exchanges are too few for the run (0.5 scores occur
    once or twice: off the inferred scale), which the slow test runs on the full copy."""
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path, capsys)
    converts = [s for s in steps(section("MRBench")) if isinstance(s, Command) and s.argv[1] == "convert"]
    assert len(converts) == 1
    run.do(converts[0])
    assert "converted mrbench MRBench_V2_sample.json -> mrbench: 5 conversations, 43 exchanges" in run.err


def test_mathdial_as_written(tmp_path, capsys, monkeypatch):
    run = run_section("MathDial", tmp_path, capsys, monkeypatch)
    tutor, convs = re.search(r"\((\d+) tutor turns of (\d+) conversations on the sample", section("MathDial")).groups()
    assert f"scored {tutor} tutor turns of {convs} conversations" in run.err


def test_cima_as_written(tmp_path, capsys, monkeypatch):
    run = run_section("CIMA", tmp_path, capsys, monkeypatch)
    assert [p.name for p in run.studies] == ["cima-study", "cima-dialogues"]
    assert "n_clusters" in pl.read_csv(run.studies[1] / "correlations.csv").columns


def test_bridge_as_written(tmp_path, capsys, monkeypatch):
    run_section("Bridge", tmp_path, capsys, monkeypatch)
    text = re.sub(r"\s+", " ", section("Bridge"))
    table = pl.read_csv(tmp_path / "bridge-compare.csv")
    n_metrics = int(re.search(r"of (\d+) metrics only `(\w+)` differs", text).group(1))
    only = re.search(r"only `(\w+)` differs at p_adj < \.05", text).group(1)
    assert table.height == n_metrics and table.filter(pl.col("p_adj") < 0.05)["metric"].to_list() == [only]
    r, lo, hi, p_adj, n = re.search(r"r_rb = ([−-]?\.\d+) \[([−-]?\.\d+), ([−-]?\.\d+)\], p_adj = (\.\d+), n = (\d+) pairs", text).groups()
    row = table.filter(pl.col("metric") == only).row(0, named=True)
    assert [_two(row["r_rb"]), _two(row["ci_low"]), _two(row["ci_high"])] == [_num(r), _num(lo), _num(hi)]
    assert (f"{row['p_adj']:.3f}"[1:], row["n"]) == (p_adj, int(n))
    diff = re.search(r"Expert − Novice: ([−-][\d.]+) sentences", text).group(1)
    assert (row["group_a"], row["group_b"], f"{row['mean_diff']:.2f}") == ("Expert", "Novice", _num(diff))
    a, b = re.search(r"\(([\d.]+) vs ([\d.]+) words", text).groups()
    words = table.filter(pl.col("metric") == "resp_words").row(0, named=True)
    assert (f"{words['mean_a']:.1f}", f"{words['mean_b']:.1f}") == (a, b)


def test_uptake_as_written(tmp_path, capsys, monkeypatch):
    run_section("Conversational uptake", tmp_path, capsys, monkeypatch)
    text = re.sub(r"\s+", " ", section("Conversational uptake"))
    nominal, ordinal, interval = re.search(r"uptake α nominal (\.\d+), ordinal (\.\d+), interval (\.\d+)", text).groups()
    row = pl.read_csv(tmp_path / "agreement.csv").filter(pl.col("criterion") == "uptake").row(0, named=True)
    got = [f"{row[c]:.3f}"[1:] for c in ("krippendorff_alpha", "alpha_ordinal", "alpha_interval")]
    assert got == [nominal, ordinal, interval]
    ids = re.search(r"gives the same ids \(`([^`]+)`, `([^`]+)`", text).groups()
    assert tuple(pl.read_csv(tmp_path / "m.csv", infer_schema=False)["exchange_id"][:2]) == ids
    assert (tmp_path / "uptake-study" / "targets.csv").exists() and (tmp_path / "uptake-theta" / "theta.csv").exists()


@pytest.mark.slow  # the run on all 1,655 MRBench exchanges with θ: ~50 s on two cores
@pytest.mark.mrbench
def test_mrbench_numbers_on_the_full_copy(tmp_path, capsys, monkeypatch):
    if not (MRBENCH_COPY / "exchanges.csv").exists():
        pytest.skip("../shared/data/mrbench not available")
    (tmp_path / "mrbench").symlink_to(MRBENCH_COPY, target_is_directory=True)  # what `convert` writes, byte for byte
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path, capsys)
    for step in steps(section("MRBench")):
        if isinstance(step, Command) and step.argv[1] == "run":
            run.do(step)
        elif isinstance(step, Prose):
            check_claims(step.text, run, run.studies[-1] if run.studies else None)
    check_claims(headline("MRBench"), run, run.studies[0])
    text = re.sub(r"\s+", " ", section("MRBench"))
    n, reliability = re.search(r"([\d,]+) of \1 metric rows matched ratings and θ \(MFRM, EAP reliability ([\d.]+)\)", text).groups()
    assert f"{n} of {n} metric rows matched ratings" in run.err and f"EAP reliability {reliability}" in run.err
