"""``--progress-every N`` reports every N seconds *within* a chunk (issue 35, "long runs are silent"): the rows done
and the encoder batches of the chunk under way, off a terminal (lines) and on one (the bar's postfix), from a
heartbeat, so one slow chunk is never silent. A slow encoder is simulated by sleeping in each forward batch."""

from __future__ import annotations

import io
import re
import time

import pytest

from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.progress import ProgressLines, RunProgress, run_progress


@pytest.fixture
def slow_batches(monkeypatch):
    from tutormetrics.encoders.hf import TextEncoder

    launch = TextEncoder._launch

    def slow(self, *args, **kwargs):
        time.sleep(0.4)
        return launch(self, *args, **kwargs)

    monkeypatch.setattr(TextEncoder, "_launch", slow)


def test_lines_come_within_one_slow_chunk_off_a_terminal(tmp_path, tiny_model_dir, slow_batches, capsys):
    rows = ["exchange_id,prompt,response"] + [f"e{i},Question number {i} about fractions?,Answer {i} with steps" for i in range(24)]
    (tmp_path / "in.csv").write_text("\n".join(rows) + "\n")
    options = ScoreOptions(metrics="embedding_similarity", model_name_or_path=str(tiny_model_dir), device="cpu",
                           batch_size=4, chunk_size=100, progress=None, progress_every=0.4, cache_mb=0)  # fmt: skip
    score_file(tmp_path / "in.csv", tmp_path / "m.csv", options)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("progress:")]
    within = [m for ln in lines if ln.startswith("progress: score 0/24 exchanges")
              and (m := re.search(r"; in chunk: encode (\d+)/(\d+) batches of 48 texts$", ln))]  # fmt: skip
    # 48 texts in several batches of 0.4 s or more each, all inside the one chunk: lines before the chunk ends
    assert len(within) >= 3, lines
    done = [int(m.group(1)) for m in within]
    assert done == sorted(done) and done[-1] > done[0] and int(within[0].group(2)) > 2  # the count moves between lines
    assert all("in chunk" not in ln for ln in lines if ln.startswith("progress: score 24/24"))  # a done chunk has no detail


def test_a_terminal_bar_is_refreshed_with_the_chunks_detail():
    class Bar:  # what RunProgress needs of tqdm
        def __init__(self):
            self.postfix, self.refreshed = [], 0

        def set_postfix_str(self, text, refresh=True):
            self.postfix.append(text)

        def refresh(self):
            self.refreshed += 1

        def update(self, n):
            pass

        def close(self):
            pass

    bar = Bar()
    run = RunProgress(bar, every=0.05)
    run.encoding(48)
    child = run.child(12, "encode", "batches")
    child.update(5)
    time.sleep(0.3)
    run.close()
    assert bar.postfix[-1] == "encode 5/12 batches of 48 texts" and bar.refreshed >= 2


def test_no_heartbeat_when_nothing_is_shown():
    assert not isinstance(run_progress(10, stage="s", unit="u", progress=False), RunProgress)
    assert not isinstance(run_progress(10, stage="s", unit="u", progress=None, every=0, file=io.StringIO()), RunProgress)
    shown = run_progress(10, stage="s", unit="u", progress=None, every=30, file=io.StringIO())
    assert isinstance(shown, RunProgress) and isinstance(shown.bar, ProgressLines)
    shown.close()
