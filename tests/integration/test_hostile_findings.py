"""Findings of the hostile review (issue 28), each a test that fails before its fix."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
import pytest

from tutormetrics.dialogue.model import Roles
from tutormetrics.dialogue.readers import ReadOptions, long_conversations
from tutormetrics.errors import InputSchemaError
from tutormetrics.io.atomic import save_figure, write_text_atomic
from tutormetrics.io.tables import read_table, scan_table, write_table
from tutormetrics.validity.join import join_targets


def test_int_ids_beyond_2_53_are_compared_exactly():
    big = [str(2**53 + k) for k in range(30)]
    metrics = pl.DataFrame({"exchange_id": big, "m": [float(k) for k in range(30)]})
    ratings = pl.DataFrame({"exchange_id": [str(2**53 + 100 + k) for k in range(30)], "tone": [1.0] * 30})
    with pytest.raises(InputSchemaError, match="match"):  # nothing matches: before the fix all 30 "matched"
        join_targets(metrics, ratings, id_type="int")
    same = pl.DataFrame({"exchange_id": [b + ".0" for b in big], "tone": [1.0] * 30})
    joined, _ = join_targets(metrics, same, id_type="int")
    assert joined.height == 30 and joined["exchange_id"].n_unique() == 30


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("reader", [read_table, scan_table])
def test_a_json_object_past_the_inferred_rows_is_refused_naming_the_line(tmp_path, reader):
    rows = [{"exchange_id": str(i), "prompt": "p", "response": "r"} for i in range(150)]
    rows.append({"exchange_id": "x", "prompt": {"text": "hidden"}, "response": "r"})
    with pytest.raises(InputSchemaError, match=r"line 151: 'prompt' holds a JSON object"):
        reader(_jsonl(tmp_path / "s.jsonl", rows))


@pytest.mark.parametrize("reader", [read_table, scan_table])
def test_duplicate_json_keys_are_refused(tmp_path, reader):
    path = tmp_path / "d.jsonl"
    path.write_text('{"exchange_id": "1", "prompt": "a", "prompt": "b", "response": "r"}\n')
    with pytest.raises(InputSchemaError, match="line 1: duplicate key 'prompt'"):
        reader(path)


def test_tsv_output_is_tab_separated_and_reads_back(tmp_path):
    df = pl.DataFrame({"exchange_id": ["1", "2"], "text": ["a,b", "c"], "x": [0.5, 1.0]})
    write_table(df, tmp_path / "m.tsv")
    first = (tmp_path / "m.tsv").read_text().splitlines()[0]
    assert first == "exchange_id\ttext\tx"
    assert read_table(tmp_path / "m.tsv", id_columns=["exchange_id"]).equals(df)


def test_header_cells_are_formula_guarded_and_read_back(tmp_path):
    df = pl.DataFrame({"exchange_id": ["1"], '=HYPERLINK("http://x")': [0.5], "@cmd": ["ok"]})
    write_table(df, tmp_path / "rho.csv")
    header = (tmp_path / "rho.csv").read_text().splitlines()[0]
    assert header.split(",")[2] == "'@cmd" and "'=HYPERLINK" in header
    assert read_table(tmp_path / "rho.csv").columns[2] == "@cmd"


def test_a_figure_replaces_a_planted_symlink_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "heatmap.png"
    link.symlink_to(victim)
    fig, _ = plt.subplots()
    save_figure(fig, link, dpi=50)
    plt.close(fig)
    assert victim.read_text() == "precious"
    assert not link.is_symlink() and link.read_bytes()[:4] == b"\x89PNG"


def test_a_failed_figure_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")

    class Broken:
        def savefig(self, path, **_kw):
            Path(path).write_bytes(b"half")
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left on device"):
        save_figure(Broken(), target)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["fig.png"]


def test_written_files_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "report.html", "<html></html>")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600


def test_turn_numbers_like_11_0_sort_as_numbers():
    frame = pl.DataFrame({"conversation_id": ["c"] * 3, "turn": ["2.0", "11.0", "10.0"],
                          "role": ["tutor", "student", "tutor"], "text": ["two", "eleven", "ten"]})
    conv = long_conversations(frame, ReadOptions(roles=Roles()))[0]
    assert [t.text for t in conv.turns] == ["two", "ten", "eleven"]  # text order would put 10.0 and 11.0 first


def test_os_errors_are_one_plain_message(tmp_path, monkeypatch, capsys):
    from tutormetrics import cli

    def full_disk(*_a, **_k):
        raise OSError(28, "No space left on device", str(tmp_path / "m.csv"))

    monkeypatch.setattr(cli, "app", full_disk)
    code = cli.main(["score", "x.csv", "-o", "m.csv"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: no space left on device (") and "Errno" not in err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def lexical_study(tmp_path_factory):
    from typer.testing import CliRunner

    from tutormetrics.cli import app

    out = tmp_path_factory.mktemp("study") / "out"
    result = CliRunner().invoke(app, ["run", "--example", "-o", str(out), "--metrics", "lexical"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("name", ["metrics.csv", "run.json", "correlations.csv"])
def test_report_never_overwrites_its_inputs(lexical_study, name):
    from typer.testing import CliRunner

    from tutormetrics.cli import app

    before = (lexical_study / name).read_bytes()
    result = CliRunner().invoke(app, ["report", str(lexical_study), "-o", str(lexical_study / name)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (lexical_study / name).read_bytes() == before


def test_report_never_overwrites_the_recorded_exchanges(lexical_study, tmp_path):
    from typer.testing import CliRunner

    from tutormetrics.cli import app

    run = json.loads((lexical_study / "run.json").read_text())
    exchanges = Path(run["exchanges"])
    copy = tmp_path / "exchanges.html"
    copy.write_bytes(exchanges.read_bytes())
    result = CliRunner().invoke(app, ["report", str(lexical_study), "--exchanges", str(copy), "-o", str(copy)])
    assert result.exit_code == 2 and "never overwrites an input" in result.output


def test_report_dash_writes_stdout_not_a_file_named_dash(lexical_study, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from tutormetrics.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", str(lexical_study), "-o", "-"])
    assert result.exit_code == 0 and result.stdout.lstrip().lower().startswith("<!doctype html")
    assert not (tmp_path / "-").exists()


def test_fifo_gzip_and_cr_only_inputs_get_their_own_message(tmp_path):
    import gzip

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputSchemaError, match="is a pipe"):
        read_table(fifo)
    packed = tmp_path / "e.csv"
    packed.write_bytes(gzip.compress(b"exchange_id,prompt,response\n1,a,b\n"))
    with pytest.raises(InputSchemaError, match="gzip-compressed"):
        read_table(packed)
    old_mac = tmp_path / "m.csv"
    old_mac.write_bytes(b"exchange_id,prompt,response\r1,a,b\r2,c,d\r")
    with pytest.raises(InputSchemaError, match="CR-only line endings"):
        scan_table(old_mac)


def test_one_lock_per_output(tmp_path):
    from tutormetrics.io.atomic import output_lock

    out = tmp_path / "corr.csv"
    code = (
        "import sys, time; from tutormetrics.io.atomic import output_lock\n"
        f"with output_lock([{str(out)!r}]):\n    print('held', flush=True); time.sleep(30)\n"
    )
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(InputSchemaError, match=rf"being written by another tutormetrics command \(pid {proc.pid}\)"):
            with output_lock([out]):
                pass
    finally:
        proc.kill()
        proc.wait()
    with output_lock([out, tmp_path]):  # a killed holder never blocks the next command; folders lock inside
        assert (tmp_path / ".tutormetrics.lock").exists()
    assert not (tmp_path / ".corr.csv.lock").exists()


def test_dollar_signs_in_names_are_drawn_literally(tmp_path):
    from tutormetrics.validity.heatmap import plot_heatmap

    table = pl.DataFrame({
        "metric": ["resp_words", "ttr"], "target": [r"$\foo$", r"$\foo$"], "family": ["length", "diversity"],
        "rho": [0.3, -0.2], "p": [0.01, 0.2], "p_adj": [0.02, 0.3], "stars": ["*", ""], "n": [40, 40],
    })
    fig = plot_heatmap(table, output=tmp_path / "h.png")  # mathtext on: ValueError (unknown symbol \foo)
    assert (tmp_path / "h.png").stat().st_size > 0
    assert any(r"$\foo$" in t.get_text() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels())


# --- issue 28, second round: locks for every command, run resumes, report from run.json -------------------


def _hold_lock(paths: list[Path]):
    """A subprocess holding ``output_lock(paths)`` until killed (the first of two commands)."""
    import subprocess
    import sys

    code = (
        "import time; from tutormetrics.io.atomic import output_lock\n"
        f"with output_lock({[str(p) for p in paths]!r}):\n    print('held', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.parametrize("command", ["validate", "score"])
def test_validate_and_score_writing_one_output_the_second_stops(tmp_path, example_dir, capsys, command):
    from tutormetrics import cli

    out = tmp_path / "m.csv"
    holder = _hold_lock([out])  # e.g. a `score -o m.csv` still running
    try:
        args = {
            "validate": ["validate", str(example_dir / "exchanges.csv"), "--ratings", str(example_dir / "ratings.csv"), "-o", str(out)],
            "score": ["score", str(example_dir / "exchanges.csv"), "--metrics", "lexical", "-o", str(out)],
        }[command]
        code = cli.main(args)
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert code == 2
    assert f"being written by another tutormetrics command (pid {holder.pid})" in err
    assert not out.exists()


def test_two_runs_into_one_folder_the_second_stops(tmp_path, capsys):
    from tutormetrics import cli

    folder = tmp_path / "study"  # not there yet: the first run creates it and locks inside it
    from types import SimpleNamespace

    from tutormetrics.commands.registration import output_paths

    output_paths(["output/"], SimpleNamespace(output=folder))
    holder = _hold_lock([folder])
    try:
        code = cli.main(["run", "--example", "-o", str(folder), "--metrics", "lexical"])
    finally:
        holder.kill()
        holder.wait()
    assert code == 2
    assert f"being written by another tutormetrics command (pid {holder.pid})" in capsys.readouterr().err
    assert not (folder / "metrics.csv").exists()


def _lock_cases(ex: Path, tmp: Path) -> dict[str, tuple[list[str], Path]]:
    """Per writing command: a call that would succeed, and the output another command is writing."""
    out = tmp / "out.csv"
    corr = tmp / "corr.csv"
    corr.write_text("metric,target,family,rho,p,p_adj,stars,n\nresp_words,theta,length,0.3,0.01,0.02,*,40\n")
    exchanges, ratings = str(ex / "exchanges.csv"), str(ex / "ratings.csv")
    metrics = tmp / "m.csv"
    metrics.write_text("exchange_id,tutor,resp_words\n" + "".join(f"e{i},t{i % 2},{i}\n" for i in range(12)))
    study = tmp / "study"
    study.mkdir()
    (study / "metrics.csv").write_text("exchange_id,resp_words\na,1\n")
    return {
        "score": (["score", exchanges, "--metrics", "lexical", "-o", str(out)], out),
        "validate": (["validate", exchanges, "--ratings", ratings, "-o", str(out)], out),
        "heatmap": (["heatmap", str(corr), "-o", str(tmp / "h.png")], tmp / "h.png"),
        "theta": (["theta", ratings, "-o", str(out)], out),
        "agree": (["agree", ratings, "-o", str(out)], out),
        "summarize": (["summarize", str(metrics), "--group-col", "tutor", "-o", str(out)], out),
        "compare": (["compare", str(ex / "fairness_turns.csv"), "--group-col", "level", "--block-col", "question_id", "-o", str(out)], out),
        "aggregate": (["aggregate", str(ex / "fairness_turns.csv"), "--by", "question_id,level", "-o", str(out)], out),
        "variability": (["variability", str(metrics), "--unit-col", "exchange_id", "--trial-col", "tutor", "-o", str(out)], out),
        "predict": (["predict", exchanges, "--ratings", ratings, "--group-col", "conversation_id", "-o", str(out)], out),
        "ppi": (["ppi", "--judge-labels", ratings, "--human-labels", ratings, "-o", str(out)], out),
        "report": (["report", str(study)], study / "report.html"),
        "convert": (["convert", "mrbench", str(Path(__file__).parents[1] / "fixtures/mrbench_raw/MRBench_V2_sample.json"), "-o", str(tmp / "conv")], tmp / "conv"),
        "run": (["run", "--example", "-o", str(tmp / "run"), "--metrics", "lexical"], tmp / "run"),
        "encoder export": (["encoder", "export", "--store", str(tmp / "store")], tmp / "store"),
    }


def _listing(folder: Path) -> list[str]:
    """A folder's files but the lock a killed holder leaves behind (the next command reclaims it)."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".tutormetrics.lock")


def test_every_command_that_writes_stops_when_another_writes_its_output(tmp_path, example_dir, capsys):
    """Each registered command that writes refuses (exit 2, nothing written) while another command holds the
    lock of its output: the lock itself is exercised, not an attribute of the command."""
    import typer

    from tutormetrics import cli

    root = typer.main.get_command(cli.app)  # every command, each built as it is reached (docs/development.md#command-loading)
    registered = {name for name, c in root.commands.items() if not hasattr(c, "commands")}
    registered |= {f"{name} {sub}" for name, c in root.commands.items() if hasattr(c, "commands") for sub in c.commands}
    cases = _lock_cases(example_dir, tmp_path)
    assert registered - {"metrics"} == set(cases)  # a new writing command needs a case here
    for name, (argv, output) in cases.items():
        if name in ("convert", "run", "encoder export"):  # folder outputs: the first command created the folder
            output.mkdir()
        before = _listing(output) if output.is_dir() else None
        holder = _hold_lock([output])
        try:
            code = cli.main(argv)
        finally:
            holder.kill()
            holder.wait()
        err = capsys.readouterr().err
        assert code == 2, (name, err)
        assert f"being written by another tutormetrics command (pid {holder.pid})" in err, (name, err)
        if before is None:
            assert not output.exists(), name
        else:
            assert _listing(output) == before, name


def test_report_waits_for_no_run_writing_its_folder(tmp_path, capsys):
    from tutormetrics import cli

    (tmp_path / "metrics.csv").write_text("exchange_id,resp_words\na,1\n")
    holder = _hold_lock([tmp_path])
    try:
        code = cli.main(["report", str(tmp_path)])
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and not (tmp_path / "report.html").exists()
    assert "being written by another tutormetrics command" in capsys.readouterr().err


def test_a_killed_run_leaves_no_report_temporary(tmp_path, capsys):
    """A kill during the report write leaves `.report.html.*.tmp`; the next command on the folder removes it."""
    from tutormetrics import cli

    folder = tmp_path / "study"
    folder.mkdir()
    stale = folder / ".report.html.x1y2z3.tmp"
    stale.write_text("<html>half")
    code = cli.main(["run", "--example", "-o", str(folder), "--metrics", "lexical", "--n-resamples", "100", "--ci", "percentile"])
    assert code == 0, capsys.readouterr().err
    assert not stale.exists()
    assert not list(folder.glob(".*.tmp")) and not list(folder.glob(".*.lock"))


def test_the_run_overwrite_guard_lists_every_file_a_dialogue_run_writes(tmp_path, capsys):
    from tutormetrics import cli
    from tutormetrics.runs import RUN_FILES

    folder = tmp_path / "dlg"
    code = cli.main(["run", "--example", "dialogue", "-o", str(folder), "--metrics", "lexical", "--cluster-col",
                     "conversation_id", "--n-resamples", "100", "--ci", "percentile", "--n-permutations", "100"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    written = {p.name for p in folder.iterdir()}
    assert {"turns_heatmap.png", "turns_heatmap.pdf", "conversations.csv"} <= written  # the turn level (datasets.md §6)
    assert written - set(RUN_FILES) == set()


@pytest.mark.parametrize("dialogue", [False, True])
def test_run_resumes_after_a_later_step_failed_without_rescoring(tmp_path, capsys, monkeypatch, dialogue):
    """A failure past scoring (here: the heatmap) keeps the verified scoring; the rerun scores nothing again and
    writes the same tables as an uninterrupted run."""
    from tutormetrics import cli
    from tutormetrics.engine.scorer import Scorer
    from tutormetrics.validity import heatmap

    calls = {"n": 0}
    score_chunk = Scorer.score_chunk

    def counting(self, chunk):
        calls["n"] += 1
        return score_chunk(self, chunk)

    monkeypatch.setattr(Scorer, "score_chunk", counting)
    example = ["--example", "dialogue"] if dialogue else ["--example"]
    args = [*example, "--metrics", "lexical", "--n-resamples", "100", "--ci", "percentile", "--n-permutations", "100", "--chunk-size", "16"]
    assert cli.main(["run", *args, "-o", str(tmp_path / "whole")]) == 0
    whole_calls, calls["n"] = calls["n"], 0
    assert whole_calls >= 2

    plot = heatmap.plot_heatmap

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device", "heatmap.png")

    monkeypatch.setattr(heatmap, "plot_heatmap", full_disk)
    out = tmp_path / "again"
    assert cli.main(["run", *args, "-o", str(out)]) == 2
    assert calls["n"] == whole_calls  # the first try scored everything, then failed
    scored = "turns.csv" if dialogue else "metrics.csv"
    assert (out / f"{scored}.partial").is_dir()
    monkeypatch.setattr(heatmap, "plot_heatmap", plot)
    calls["n"] = 0
    capsys.readouterr()
    assert cli.main(["run", *args, "-o", str(out)]) == 0
    assert calls["n"] == 0, "the rerun scored again"
    assert "resuming:" in capsys.readouterr().err
    assert not (out / f"{scored}.partial").exists()  # removed once the run finished
    for name in (scored, "correlations.csv", "rho_matrix.csv", "theta.csv", "agreement.csv"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, example_dir):
    """One `run` of a copy of the bundled example (its inputs may be edited by a test: copy the folder first)."""
    import shutil

    from tutormetrics import cli

    root = tmp_path_factory.mktemp("reported")
    for name in ("exchanges.csv", "ratings.csv"):
        shutil.copy(example_dir / name, root / name)
    out = root / "study"
    code = cli.main(["run", str(root / "exchanges.csv"), "--ratings", str(root / "ratings.csv"), "--prompt", "query", "--prompt", "code",
                     "-o", str(out), "--metrics", "lexical", "--n-resamples", "100", "--ci", "percentile"])  # fmt: skip
    assert code == 0
    return root


def _copy_run(run_folder, tmp_path) -> tuple[Path, Path]:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(run_folder, root)
    run = json.loads((root / "study" / "run.json").read_text())  # the copy's run.json names the original inputs
    run["exchanges"], run["ratings"] = str(root / "exchanges.csv"), str(root / "ratings.csv")
    (root / "study" / "run.json").write_text(json.dumps(run))
    return root, root / "study"


def _page_data(page: str) -> dict:
    import re

    return json.loads(re.search(r'<script type="application/json" id="tm-data">(.*?)</script>', page, re.S).group(1))


def test_run_records_the_hash_of_every_file_and_input(run_folder):
    from tutormetrics.io.hashing import file_sha256

    study = run_folder / "study"
    run = json.loads((study / "run.json").read_text())
    assert set(run["file_sha256"]) >= {"metrics.csv", "metrics.csv.manifest.json", "correlations.csv", "theta.csv", "agreement.csv"}
    assert all(run["file_sha256"][n] == file_sha256(study / n) for n in run["file_sha256"])
    assert run["input_sha256"]["exchanges"] == file_sha256(run_folder / "exchanges.csv")


def test_report_leaves_out_an_earlier_runs_tables(run_folder, tmp_path, capsys):
    from tutormetrics import cli
    from tutormetrics.report import collect_study

    _, study = _copy_run(run_folder, tmp_path)
    # left by an earlier dialogue run into the same folder (a name run writes, not listed by this run.json)
    pl.DataFrame({"metric": ["resp_words"], "target": ["stale_criterion"], "n": [12], "rho": [0.99]}).write_csv(
        study / "conversations_correlations.csv")
    # written there by another command: shown, with a note
    pl.DataFrame({"group": ["a"], "variable": ["resp_words"], "mean": [3.0]}).write_csv(study / "by_tutor.csv")
    data = collect_study(study)
    assert [c["file"] for c in data["correlations"]] == ["correlations.csv"]
    assert any("conversations_correlations.csv was written by an earlier run" in line for line in data["stale"])
    assert [t["file"] for t in data["summary"]] == ["by_tutor.csv"]
    assert any("by_tutor.csv" in note and "does not vouch" in note for note in data["notes"])
    assert cli.main(["report", str(study)]) == 0
    assert "conversations_correlations.csv was written by an earlier run" in capsys.readouterr().err
    page = (study / "report.html").read_text()
    assert "stale_criterion" not in page
    assert any("conversations_correlations.csv" in line for line in _page_data(page)["stale"])


def test_report_leaves_out_a_table_changed_since_the_run(run_folder, tmp_path, capsys):
    from tutormetrics.report import collect_study

    _, study = _copy_run(run_folder, tmp_path)
    corr = pl.read_csv(study / "correlations.csv").with_columns(pl.lit(0.999).alias("rho"))
    corr.write_csv(study / "correlations.csv")
    data = collect_study(study)
    assert data["correlations"] == []
    assert any("correlations.csv changed since `run` wrote it" in line for line in data["stale"])


def test_report_shows_the_input_text_only_while_its_hash_matches(run_folder, tmp_path):
    from tutormetrics.report import collect_study

    root, study = _copy_run(run_folder, tmp_path)
    assert "texts" in collect_study(study)["exchanges"]  # unchanged input: texts shown
    ex = pl.read_csv(root / "exchanges.csv")
    ex.with_columns(pl.lit("EDITED AFTER SCORING").alias("response")).write_csv(root / "exchanges.csv")
    ratings = pl.read_csv(root / "ratings.csv")
    ratings.with_columns(pl.lit(1).alias("score")).write_csv(root / "ratings.csv")
    data = collect_study(study)
    assert "texts" not in data["exchanges"]
    assert any("is not the input that was scored" in line for line in data["stale"])
    # the ratings shown are the targets run correlated (targets.csv, hashed in run.json), not the edited file's
    targets = pl.read_csv(study / "targets.csv")
    assert data["exchanges"]["ratings"]["mistake_location"] == targets["mistake_location"].to_list() != [1.0] * 40
    targets.with_columns(pl.lit(1.0).alias("mistake_location")).write_csv(study / "targets.csv")
    data = collect_study(study)
    assert not data["exchanges"]["ratings"]
    assert any("targets.csv changed since `run` wrote it" in line for line in data["stale"])


def test_a_run_after_an_earlier_run_marks_its_leftovers(tmp_path, example_dir, capsys):
    """θ estimated first (theta.csv, facets.csv), then given: the first run's facets.csv is left out of the report."""
    from tutormetrics import cli

    out = tmp_path / "study"
    base = ["run", "--example", "-o", str(out), "--metrics", "lexical", "--n-resamples", "100", "--ci", "percentile"]
    assert cli.main(base) == 0
    assert (out / "facets.csv").exists()
    capsys.readouterr()
    assert cli.main([*base, "--theta", str(example_dir / "theta.csv")]) == 0
    assert "facets.csv was written by an earlier run" in capsys.readouterr().err
    data = _page_data((out / "report.html").read_text())
    assert "facets" not in data and any("facets.csv" in line for line in data["stale"])
