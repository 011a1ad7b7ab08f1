"""Nothing overwritten, nothing silently corrupted (issue 18): outputs vs inputs, locked and verified
checkpoints under interrupt and tampering, the formula guard, planted symlinks, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.errors import InputSchemaError
from tutormetrics.io.hashing import file_sha256
from tutormetrics.io.tables import read_table

CHUNK = 7


@pytest.fixture
def exchanges(mrbench_dir: Path, tmp_path: Path) -> Path:
    """45 real MRBench exchanges (7 chunks of 7, the last shorter)."""
    src = tmp_path / "exchanges.csv"
    pl.read_csv(mrbench_dir / "exchanges.csv").select("exchange_id", "prompt", "response").slice(300, 45).write_csv(src)
    return src


def _options(tiny_model_dir: Path | None, **kw) -> ScoreOptions:
    """Lexical families; with ``tiny_model_dir`` also a tiny encoder whose 8-token windows make texts long
    (a warning per run, and window counts in the stats)."""
    if tiny_model_dir is None:
        return ScoreOptions(metrics="length,overlap", chunk_size=CHUNK, progress=False, **kw)
    return ScoreOptions(
        metrics="length,overlap,embedding_similarity", model_name_or_path=str(tiny_model_dir), max_seq_length=8,
        chunk_size=CHUNK, progress=False, **kw,
    )


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, n_saves: int) -> None:
    real = Checkpoint.save
    calls = {"n": 0}

    def save(self, *args, **kwargs):
        if calls["n"] == n_saves:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "save", save)


def _reference(exchanges: Path, tiny_model_dir: Path | None, tmp_path: Path) -> tuple[bytes, dict]:
    """An uninterrupted run: the output's bytes and its manifest."""
    out = tmp_path / "ref.csv"
    score_file(exchanges, out, _options(tiny_model_dir))
    return out.read_bytes(), json.loads((tmp_path / "ref.csv.manifest.json").read_text())


def _interrupted(exchanges: Path, out: Path, tiny_model_dir: Path | None, monkeypatch: pytest.MonkeyPatch, n: int = 4) -> Path:
    _interrupt_after(monkeypatch, n)
    with pytest.raises(KeyboardInterrupt):
        score_file(exchanges, out, _options(tiny_model_dir))
    monkeypatch.undo()
    partial = out.with_name(out.name + ".partial")
    assert len(list(partial.glob("chunk-*.parquet"))) == n and not out.exists()
    return partial


def _assert_same(out: Path, reference: tuple[bytes, dict]) -> None:
    assert out.read_bytes() == reference[0]
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
    assert manifest["stats"] == reference[1]["stats"] and manifest["stats"]["n_exchanges"] == 45
    assert manifest["warnings"] == reference[1]["warnings"]
    assert not out.with_name(out.name + ".partial").exists()


def test_resume_after_interrupt_is_identical_with_counts_and_warnings(exchanges, tiny_model_dir, tmp_path, monkeypatch):
    reference = _reference(exchanges, tiny_model_dir, tmp_path)
    assert "exceeded max_seq_length" in " ".join(reference[1]["warnings"])
    out = tmp_path / "m.csv"
    _interrupted(exchanges, out, tiny_model_dir, monkeypatch)
    logs: list[str] = []
    result = score_file(exchanges, out, _options(tiny_model_dir), log=logs.append)
    assert result.resumed_chunks == 4
    assert any("resuming: 4 verified chunk(s)" in m for m in logs)
    _assert_same(out, reference)


def test_a_resumed_run_interrupted_again_still_counts_each_chunk_once(exchanges, tiny_model_dir, tmp_path, monkeypatch):
    """Found by the state machine: a resumed run counted the reused chunks again in its first new chunk."""
    reference = _reference(exchanges, tiny_model_dir, tmp_path)
    out = tmp_path / "m.csv"
    _interrupted(exchanges, out, tiny_model_dir, monkeypatch, n=1)
    _interrupt_after(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        score_file(exchanges, out, _options(tiny_model_dir))
    monkeypatch.undo()
    score_file(exchanges, out, _options(tiny_model_dir))
    _assert_same(out, reference)


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "tamper",
    ["delete_middle", "flip_byte", "swap", "truncate", "garbage_run_json", "garbage_ledger", "foreign_chunk"],
)
def test_tampered_checkpoints_are_recomputed_never_used(exchanges, tmp_path, monkeypatch, tamper):
    reference = _reference(exchanges, None, tmp_path)
    out = tmp_path / "m.csv"
    partial = _interrupted(exchanges, out, None, monkeypatch)
    chunks = sorted(partial.glob("chunk-*.parquet"))
    if tamper == "delete_middle":
        chunks[1].unlink()
    elif tamper == "flip_byte":
        _flip_byte(chunks[2])
    elif tamper == "swap":
        a, b = chunks[0].read_bytes(), chunks[3].read_bytes()
        chunks[0].write_bytes(b)
        chunks[3].write_bytes(a)
    elif tamper == "truncate":
        chunks[1].write_bytes(chunks[1].read_bytes()[:100])
    elif tamper == "garbage_run_json":
        (partial / "run.json").write_text("{not json")
    elif tamper == "garbage_ledger":
        (partial / "chunks.json").write_text("[1, 2")
    else:  # a chunk file the ledger does not know, named as the next chunk
        (partial / "chunk-000004.parquet").write_bytes(chunks[0].read_bytes())
    logs: list[str] = []
    score_file(exchanges, out, _options(None), log=logs.append)
    _assert_same(out, reference)
    if tamper in ("delete_middle", "flip_byte", "swap", "truncate"):
        assert any("failed verification" in m for m in logs)
    if tamper == "garbage_run_json":
        assert any("discarding partial results" in m for m in logs)


def test_a_checkpoint_of_other_rows_is_not_reused(tmp_path):
    """The ids check is the second line of defence behind the run key and the hashes."""
    ckpt = Checkpoint(tmp_path / "m.csv", "k")
    ckpt.ledger = {0: {"rows": 3, "first_id": "a", "last_id": "c"}}
    assert ckpt.reusable(0, ["a", "b", "c"])
    assert not ckpt.reusable(0, ["x", "b", "c"]) and not ckpt.reusable(0, ["a", "c"]) and not ckpt.reusable(1, ["a", "b", "c"])


def test_strict_status_survives_a_resume(exchanges, tiny_model_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "m.csv"
    _interrupted(exchanges, out, tiny_model_dir, monkeypatch)
    args = [
        "score", str(exchanges), "-o", str(out), "-m", "length,overlap,embedding_similarity", "--chunk-size", str(CHUNK),
        "--model-name-or-path", str(tiny_model_dir), "--max-seq-length", "8", "--no-progress", "--strict",
    ]
    assert main(args) == 1
    assert "exceeded max_seq_length" in capsys.readouterr().err


def test_a_second_run_on_the_same_output_stops_and_names_the_holder(exchanges, tmp_path):
    out = tmp_path / "m.csv"
    with Checkpoint(out, "k"):
        res = subprocess.run(
            [sys.executable, "-m", "tutormetrics", "score", str(exchanges), "-o", str(out), "-m", "length", "--no-progress"],
            capture_output=True, text=True, timeout=120, check=False
        )
    assert res.returncode == 2
    assert f"another tutormetrics run is writing the same output (pid {os.getpid()}" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def test_lock_is_released_so_the_next_run_proceeds(exchanges, tmp_path):
    out = tmp_path / "m.csv"
    with Checkpoint(out, "k") as ckpt:
        ckpt.open(resume=True, log=lambda _m: None)
    score_file(exchanges, out, ScoreOptions(metrics="length", progress=False))
    assert pl.read_csv(out).height == 45


# ---------------------------------------------------------------------------- outputs vs inputs
def _example_ratings(example_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ratings.csv"
    dst.write_bytes((example_dir / "ratings.csv").read_bytes())
    return dst


@pytest.mark.parametrize(
    "case",
    ["score_same", "score_dotted", "theta_same", "theta_facets", "validate_ratings", "validate_rho", "run_input", "heatmap", "agree"],
)
def test_an_output_that_is_an_input_is_refused_before_any_work(case, exchanges, example_dir, tmp_path, capsys):
    ratings = _example_ratings(example_dir, tmp_path)
    before = {p: p.read_bytes() for p in (exchanges, ratings)}
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("exchange_id,x\na,1\n")
    corr = tmp_path / "corr.csv"
    corr.write_text("metric,target,rho\nx,y,0.5\n")
    args = {
        "score_same": ["score", str(exchanges), "-o", str(exchanges), "-m", "length"],
        "score_dotted": ["score", str(exchanges), "-o", str(tmp_path / "." / "exchanges.csv"), "-m", "length"],
        "theta_same": ["theta", str(ratings), "-o", str(ratings)],
        "theta_facets": ["theta", str(ratings), "-o", str(tmp_path / "t.csv"), "--facets", str(tmp_path / "t.csv")],
        "validate_ratings": ["validate", str(metrics), "--ratings", str(ratings), "-o", str(ratings)],
        "validate_rho": [],  # built below
        "run_input": ["run", str(tmp_path / "metrics.csv"), "--ratings", str(ratings), "-o", str(tmp_path)],
        "heatmap": ["heatmap", str(corr), "-o", str(corr)],
        "agree": ["agree", str(ratings), "-o", str(ratings)],
    }[case]
    if case == "validate_rho":  # the matrix written next to the output would land on the metrics input
        rho_input = tmp_path / "m_rho_matrix.csv"
        rho_input.write_text("exchange_id,x\na,1\n")
        before[rho_input] = rho_input.read_bytes()
        args = ["validate", str(rho_input), "--ratings", str(ratings), "-o", str(tmp_path / "m.csv")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "never overwrites an input" in err or "are the same file" in err
    for path, data in before.items():
        assert path.read_bytes() == data


def test_an_output_folder_that_cannot_be_written_fails_before_scoring(exchanges, tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    assert main(["score", str(exchanges), "-o", str(ro / "m.csv"), "-m", "length"]) == 2
    assert "not writable" in capsys.readouterr().err


def test_an_output_that_is_a_folder_fails_before_scoring(exchanges, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    assert main(["score", str(exchanges), "-o", str(tmp_path / "out"), "-m", "length"]) == 2
    assert "is a folder" in capsys.readouterr().err


# ---------------------------------------------------------------------------- formula guard and symlinks
def test_user_text_keeps_its_quote_and_numbers_are_never_guarded(tmp_path):
    src = tmp_path / "in.csv"
    pl.DataFrame(
        {"exchange_id": ["a", "b"], "prompt": ["p", "q"], "response": ["r", "s"], "note": ["'+kept", "=SUM(A1)"], "score": ["-3.5", "2"]}
    ).write_csv(src)
    assert read_table(src)["note"].to_list() == ["'+kept", "=SUM(A1)"]  # a user's file is read as it is
    out = tmp_path / "m.csv"
    assert main(["score", str(src), "-o", str(out), "-m", "length", "--keep", "note", "--keep", "score", "--no-progress"]) == 0
    raw = out.read_text().splitlines()
    assert raw[1].split(",")[1:3] == ["''+kept", "-3.5"] and raw[2].split(",")[1:3] == ["'=SUM(A1)", "2"]
    back = read_table(out)
    assert back["note"].to_list() == ["'+kept", "=SUM(A1)"]  # tutormetrics undoes its own guard exactly
    edited = tmp_path / "edited.csv"
    edited.write_bytes(out.read_bytes() + b"c,''x,1,1,1,1,1,1,false,false\n")
    assert read_table(edited)["note"][0] == "''+kept"  # no record for this file: nothing is undone


def test_every_csv_output_is_guarded(example_dir, tmp_path):
    ratings = pl.read_csv(example_dir / "ratings.csv").with_columns(
        pl.when(pl.col("criterion") == "mistake_location").then(pl.lit("=HYPERLINK(\"x\")")).otherwise(pl.col("criterion")).alias("criterion"),
        ("@" + pl.col("rater")).alias("rater"),
    )
    src = tmp_path / "r.csv"
    ratings.write_csv(src)
    assert main(["agree", str(src), "-o", str(tmp_path / "agree.csv"), "--n-resamples", "0"]) == 0
    assert main(["theta", str(src), "-o", str(tmp_path / "theta.csv"), "--facets", str(tmp_path / "facets.csv")]) == 0
    agree_text = (tmp_path / "agree.csv").read_text()
    assert "'=HYPERLINK" in agree_text and "\n=HYPERLINK" not in agree_text and "'@r1" in agree_text
    facets_text = (tmp_path / "facets.csv").read_text()
    assert "'=HYPERLINK" in facets_text and ",=HYPERLINK" not in facets_text and "'@r1" in facets_text
    assert read_table(tmp_path / "facets.csv").filter(pl.col("level") == "@r1").height >= 1


def test_planted_symlinks_are_replaced_not_followed(exchanges, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "m.csv"
    (tmp_path / "m.csv.manifest.json").symlink_to(victim)
    assert main(["score", str(exchanges), "-o", str(out), "-m", "length", "--no-progress"]) == 0
    assert victim.read_text() == "precious"
    assert not (tmp_path / "m.csv.manifest.json").is_symlink()


def test_leftover_temporaries_of_a_killed_assembly_are_cleaned(exchanges, tmp_path):
    out = tmp_path / "m.csv"
    stale = tmp_path / ".m.csv.abc123.tmp"
    stale.write_text("half a file")
    score_file(exchanges, out, ScoreOptions(metrics="length", progress=False))
    assert not stale.exists() and out.exists()


def test_ctrl_c_says_how_to_resume_and_exits_130(exchanges, tmp_path):
    out = tmp_path / "m.csv"
    code = (
        "import time, tutormetrics.engine.checkpoint as f\n"
        "real = f.Checkpoint.save\n"
        "def slow(self, *a, **k):\n    real(self, *a, **k); time.sleep(0.5)\n"
        "f.Checkpoint.save = slow\n"
        "from tutormetrics.cli import main\n"
        f"raise SystemExit(main(['score', {str(exchanges)!r}, '-o', {str(out)!r}, '-m', 'length', '--chunk-size', '5', '--no-progress']))\n"
    )
    # a shell's background jobs start with SIGINT ignored; give the child the default a terminal gives
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
        # the child must start with SIGINT at its default; this test starts no thread before the fork
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    partial = out.with_name(out.name + ".partial")
    deadline = time.time() + 60
    while time.time() < deadline and not list(partial.glob("chunk-*.parquet")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err
    assert list(partial.glob("chunk-*.parquet")) and not out.exists()


def test_owner_text_falls_back_when_the_owner_file_is_garbage(tmp_path):
    ckpt = Checkpoint(tmp_path / "m.csv", "k")
    ckpt.dir.mkdir()
    (ckpt.dir / "owner.json").write_text("nope")
    assert ckpt._owner_text().startswith("lock held on")
    assert file_sha256(ckpt.dir / "owner.json") == __import__("hashlib").sha256(b"nope").hexdigest()
    bad = tmp_path / "x.csv.partial"
    bad.write_text("file")
    with pytest.raises(InputSchemaError, match="not a folder"):
        Checkpoint(tmp_path / "x.csv", "k").acquire()


# ---------------------------------------------------------------------------- offline means offline
def test_a_hub_id_not_on_disk_fails_at_once_without_opening_a_socket(exchanges, tmp_path):
    """An audit hook records every socket the process opens or resolves; loading must open none."""
    code = (
        "import sys\n"
        "events = []\n"
        "sys.addaudithook(lambda e, a: events.append(e) if e.startswith(('socket.', 'http.')) else None)\n"
        "from tutormetrics.cli import main\n"
        f"rc = main(['score', {str(exchanges)!r}, '-o', {str(tmp_path / 'm.csv')!r}, '-m', 'embedding_similarity',"
        " '--model', 'sentence-transformers/all-mpnet-base-v2', '--no-progress'])\n"
        "print('EVENTS', sorted(set(events)))\n"
        "raise SystemExit(rc)\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "empty-hf-home")}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, check=False)
    assert res.returncode == 2, res.stderr
    assert "not found locally" in res.stderr and "pass a path" in res.stderr
    assert "EVENTS []" in res.stdout


def test_offline_switches_are_set_before_the_hub_reads_them():
    code = (
        "import huggingface_hub.constants as c\n"
        "before = c.HF_HUB_OFFLINE\n"
        "import tutormetrics.encoders.hf\n"
        "import os\n"
        "print(before, c.HF_HUB_OFFLINE, os.environ['HF_HUB_OFFLINE'], os.environ['TRANSFORMERS_OFFLINE'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, check=True)
    assert res.stdout.split() == ["False", "True", "1", "1"]


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_structured_values_in_a_text_field_are_an_error(tmp_path, capsys, kind):
    frame = pl.DataFrame({"exchange_id": ["a"], "prompt": ["q"], "response": [{"text": "hi", "score": 1}]})
    src = tmp_path / f"in.{kind}"
    frame.write_ndjson(src) if kind == "jsonl" else frame.write_parquet(src)
    assert main(["score", str(src), "-o", str(tmp_path / "m.csv"), "-m", "length"]) == 2
    err = capsys.readouterr().err
    assert "column 'response' holds Struct" in err and "not text" in err
