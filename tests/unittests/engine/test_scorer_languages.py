"""lang and the segmenter survive every parallel path: worker processes and the CPU-family process."""

from __future__ import annotations

import importlib.util

import pytest

from tutormetrics.engine import Scorer

PROMPTS = ["遍历这个列表", "遍历这个列表", "where did the cat sit", "変数の値を表示したいです。"] * 3
RESPONSES = ["遍历这个列表很简单。你试试！", "Loop over it with for.", "the cat sat on the mat.",
             "変数xの値を確認してください。"] * 3
IDS = [f"e{i}" for i in range(len(PROMPTS))]
pytestmark = pytest.mark.slow  # spawned worker processes: 8-15 s each on the shared 2-core machine
SEGMENTERS = ["char"] + (["rjieba"] if importlib.util.find_spec("rjieba") else [])


@pytest.mark.parametrize("segmenter", SEGMENTERS)
def test_worker_processes_match_one_process(segmenter):
    one = Scorer("lexical", chunk_size=3, n_jobs=1, progress=False, segmenter=segmenter).score(IDS, PROMPTS, RESPONSES)
    two = Scorer("lexical", chunk_size=3, n_jobs=2, progress=False, segmenter=segmenter).score(IDS, PROMPTS, RESPONSES)
    assert one.equals(two)
    assert one["lang"].to_list()[:4] == ["zh", "en", "en", "ja"]
    assert one["flesch_reading_ease"].is_nan().to_list()[:4] == [True, False, False, True]


@pytest.mark.parametrize("segmenter", SEGMENTERS)
def test_cpu_families_in_a_process_match_a_thread(tiny_cjk_model_dir, segmenter):
    from tutormetrics.encoders.hf import EncoderConfig

    config = EncoderConfig(model_name_or_path=str(tiny_cjk_model_dir))
    kw = dict(encoder=config, chunk_size=5, progress=False, segmenter=segmenter)
    thread = Scorer("all", cpu_overlap="thread", **kw).score(IDS, PROMPTS, RESPONSES)
    process = Scorer("all", cpu_overlap="process", **kw).score(IDS, PROMPTS, RESPONSES)
    assert thread.equals(process)
    assert process["flesch_reading_ease"].is_nan().to_list()[:4] == [True, False, False, True]
    if segmenter == "rjieba":  # the zh row's prompt and response are cut into words
        assert process["resp_words"][0] < len("遍历这个列表很简单你试试")
