"""The scoring suite: parallel paths give identical numbers; plug-ins; column collisions."""

from __future__ import annotations

import numpy as np
import pytest

from tutormetrics.engine import Scorer
from tutormetrics.errors import ConfigError
from tutormetrics.metrics import REGISTRY, Metric, register_metric

PROMPTS = ["where did the cat sit", "what is two plus four", "why is it half of the number? think", "the cat"] * 3
RESPONSES = ["the cat sat on the mat.", "it is six because you add", "yes", "can you try again? what is it?"] * 3
IDS = [f"e{i}" for i in range(len(PROMPTS))]


def test_worker_processes_match_one_process():
    one = Scorer("lexical", chunk_size=3, n_jobs=1, progress=False).score(IDS, PROMPTS, RESPONSES)
    two = Scorer("lexical", chunk_size=3, n_jobs=2, progress=False).score(IDS, PROMPTS, RESPONSES)
    assert one.equals(two)


def test_cpu_families_in_a_process_match_a_thread(tiny_model_dir):
    from tutormetrics.encoders.hf import EncoderConfig

    config = EncoderConfig(model_name_or_path=str(tiny_model_dir))
    thread = Scorer("all", encoder=config, cpu_overlap="thread", chunk_size=5, progress=False)
    process = Scorer("all", encoder=config, cpu_overlap="process", chunk_size=5, progress=False)
    assert thread.score(IDS, PROMPTS, RESPONSES).equals(process.score(IDS, PROMPTS, RESPONSES))
    assert process._pool is None  # the worker is stopped when scoring ends


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_cpu_worker_starts_before_the_model_loads(tiny_model_dir, monkeypatch, method):
    """The CPU-family worker is running before the encoder loads (its start-up hides under the load),
    whether forked or spawned, and the numbers equal the thread path's."""
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import concurrency

    if method == "fork" and concurrency.cpu_worker_start_method() != "fork":
        pytest.skip("fork is not available here")
    monkeypatch.setattr(concurrency, "cpu_worker_start_method", lambda: method)
    config = EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")
    process = Scorer("all", encoder=TextEncoder(config), cpu_overlap="process", progress=False)
    seen: list[bool] = []
    real_load = TextEncoder.load

    def load(self):
        if not self.is_loaded:
            seen.append(process._pool is not None and bool(process._pool._processes))
        return real_load(self)

    monkeypatch.setattr(TextEncoder, "load", load)
    got = process.score(IDS, PROMPTS, RESPONSES)
    assert seen and seen[0] is True
    want = Scorer("all", encoder=config, cpu_overlap="thread", progress=False).score(IDS, PROMPTS, RESPONSES)
    assert got.equals(want)


def test_plug_in_metric_runs_with_the_builtins():
    @register_metric
    class QuestionMarks(Metric):
        name = "question_marks_test"
        description = "question marks in the response"

        def columns(self, n_layers=None):
            return ["resp_questions"]

        def score(self, batch, art):
            return {"resp_questions": np.array([art.texts[i].count("?") for i in batch.response_idx], float)}

    try:
        frame = Scorer(["length", "question_marks_test"], progress=False).score(IDS, PROMPTS, RESPONSES)
        assert frame["resp_questions"].to_list()[:4] == [0.0, 0.0, 0.0, 2.0]
        assert "question_marks_test" in REGISTRY.resolve("all")
    finally:
        REGISTRY.unregister("question_marks_test")


def test_column_collisions_are_rejected_up_front():
    from tutormetrics.metrics import DistinctN

    with pytest.raises(ConfigError, match="both produce column 'distinct_2'"):
        Scorer(["lexical_diversity", DistinctN(n=2)])
    with pytest.raises(ConfigError, match="unknown metric 'lexicall'"):
        Scorer("lexicall")


def test_constructing_a_scorer_is_cheap() -> None:
    """Scorer('all') declares its columns (layer count from the model folder) without importing torch."""
    import subprocess
    import sys

    code = (
        "import sys; from tutormetrics.engine import Scorer; s = Scorer('all'); "
        "print(len(s.columns()), s.n_layers, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["6", "False"]
    assert int(out[0]) == len(Scorer("all").columns())  # the same columns the loaded encoder would give
