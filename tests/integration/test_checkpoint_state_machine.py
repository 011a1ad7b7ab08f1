"""Interrupt, tamper and resume in any order (a hypothesis state machine): whatever happened to the checkpoint
folder in between, a run that finishes writes exactly the bytes, counts and warnings of an uninterrupted run."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import polars as pl
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.file_scoring import ScoreOptions, score_file

CHUNK = 7
TAMPERS = ("delete", "flip_byte", "truncate", "swap", "garbage_run_json", "garbage_ledger", "foreign_chunk", "empty_file")


def _options() -> ScoreOptions:
    return ScoreOptions(metrics="length,overlap,lexical_diversity", chunk_size=CHUNK, progress=False)


class CheckpointMachine(RuleBasedStateMachine):
    """The output ``m.csv`` of one input, scored in 7 chunks of 7 rows; ``reference`` an uninterrupted run."""

    source: Path  # set by the test below

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="tm-state-"))
        self.inp = self.tmp / "in.csv"
        shutil.copyfile(self.source, self.inp)
        ref = self.tmp / "ref.csv"
        score_file(self.inp, ref, _options())
        self.reference = ref.read_bytes(), json.loads((self.tmp / "ref.csv.manifest.json").read_text())
        self.out = self.tmp / "m.csv"
        self.partial = self.tmp / "m.csv.partial"

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _chunks(self) -> list[Path]:
        return sorted(self.partial.glob("chunk-*.parquet"))

    @rule(saves=st.integers(0, 5))
    def interrupt(self, saves: int) -> None:
        """A run stopped by Ctrl-C after ``saves`` more checkpoints."""
        real, calls = Checkpoint.save, {"n": 0}

        def save(cp, *args, **kwargs):
            if calls["n"] == saves:
                raise KeyboardInterrupt
            calls["n"] += 1
            return real(cp, *args, **kwargs)

        with mock.patch.object(Checkpoint, "save", save):
            try:
                score_file(self.inp, self.out, _options())
            except KeyboardInterrupt:
                pass

    @precondition(lambda self: self.partial.exists())
    @rule(kind=st.sampled_from(TAMPERS), pick=st.integers(0, 10))
    def tamper(self, kind: str, pick: int) -> None:
        chunks = self._chunks()
        target = chunks[pick % len(chunks)] if chunks else None
        if kind == "garbage_run_json":
            (self.partial / "run.json").write_text("{not json")
        elif kind == "garbage_ledger":
            (self.partial / "chunks.json").write_text("[1, 2")
        elif target is None:
            return
        elif kind == "delete":
            target.unlink()
        elif kind == "flip_byte":
            data = bytearray(target.read_bytes())
            data[len(data) // 2] ^= 0xFF
            target.write_bytes(bytes(data))
        elif kind == "truncate":
            target.write_bytes(target.read_bytes()[: max(1, target.stat().st_size // 3)])
        elif kind == "empty_file":
            target.write_bytes(b"")
        elif kind == "swap" and len(chunks) > 1:
            other = chunks[(pick + 1) % len(chunks)]
            a, b = target.read_bytes(), other.read_bytes()
            target.write_bytes(b)
            other.write_bytes(a)
        elif kind == "foreign_chunk":
            (self.partial / f"chunk-{len(chunks) + pick:06d}.parquet").write_bytes(target.read_bytes())

    @rule()
    def resume(self) -> None:
        """A run to the end: the reference, byte for byte, then start over."""
        score_file(self.inp, self.out, _options())
        assert self.out.read_bytes() == self.reference[0]
        manifest = json.loads(self.out.with_name("m.csv.manifest.json").read_text())
        assert manifest["stats"] == self.reference[1]["stats"]
        assert manifest["warnings"] == self.reference[1]["warnings"]
        assert not self.partial.exists()
        self.out.unlink()
        self.out.with_name("m.csv.manifest.json").unlink()

    @invariant()
    def never_a_wrong_output(self) -> None:
        if self.out.exists():
            assert self.out.read_bytes() == self.reference[0]


def test_interrupt_tamper_resume_in_any_order(mrbench_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "exchanges.csv"
    pl.read_csv(mrbench_dir / "exchanges.csv").select("exchange_id", "prompt", "response").slice(600, 45).write_csv(src)
    CheckpointMachine.source = src
    run = settings(
        max_examples=12, stateful_step_count=8, deadline=None, suppress_health_check=list(HealthCheck)
    )(CheckpointMachine).TestCase
    run().runTest()
