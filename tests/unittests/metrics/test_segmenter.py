"""Optional Chinese word segmentation (languages.md §1, ``--segmenter rjieba``, extra ``tutormetrics[zh]``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tutormetrics.engine import Scorer
from tutormetrics.text import tokenize

rjieba = pytest.importorskip("rjieba")


def test_spec_example_and_non_han_text_untouched():
    assert tokenize("遍历这个列表") == ["遍", "历", "这", "个", "列", "表"]
    assert tokenize("遍历这个列表", "rjieba") == ["遍历", "这个", "列表"]
    # only maximal Han runs are cut; Latin words, digits and kana stay as in T
    assert tokenize("用for循环遍历list，i从0到9。", "rjieba") == ["用", "for", "循环", "遍历", "list", "i", "从", "0", "到", "9"]
    assert tokenize("コードを確認", "rjieba") == ["コ", "ー", "ド", "を", *rjieba.cut("確認", True)]
    assert tokenize("Don't use well-known e.g. 3.5 x_1!", "rjieba") == tokenize("Don't use well-known e.g. 3.5 x_1!")


def test_only_chinese_rows_are_segmented_and_shared_prompts_stay_consistent():
    prompt = "遍历这个列表"
    ids, prompts = ["zh", "en"], [prompt, prompt]
    responses = ["遍历这个列表很简单。", "Just loop over it with a for statement."]
    char = Scorer("length,overlap", progress=False).score(ids, prompts, responses)
    seg = Scorer("length,overlap", progress=False, segmenter="rjieba").score(ids, prompts, responses)
    assert seg["lang"].to_list() == ["zh", "en"]
    r_seg = tokenize(responses[0], "rjieba")
    assert seg["resp_words"][0] == len(r_seg) < char["resp_words"][0] == 9
    assert seg["len_ratio"][0] == pytest.approx(len(r_seg) / 3)  # the prompt is segmented in the zh row
    assert seg["contain_prompt_in_resp"][0] == 1.0  # 遍历 / 这个 / 列表 all found
    # the en row sees the same prompt by characters, as without the segmenter
    for col in seg.columns:
        assert seg[col][1] == char[col][1] or col == "exchange_id"
    assert seg["resp_chars"].to_list() == char["resp_chars"].to_list()  # characters never change


def test_manifest_records_segmenter_and_version():
    from importlib.metadata import version

    info = Scorer("length", segmenter="rjieba").manifest()["text"]
    assert info == {"lang": "auto", "segmenter": "rjieba", "rjieba_version": version("rjieba")}
    assert Scorer("length").manifest()["text"] == {"lang": "auto", "segmenter": "char"}


def test_segmenter_writes_no_cache_file(tmp_path: Path):
    """jieba writes jieba.cache into the temp dir; rjieba must write nothing anywhere we can see."""
    home, tmp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for d in (home, tmp, work):
        d.mkdir()
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp), XDG_CACHE_HOME=str(home / ".cache"))
    code = textwrap.dedent(
        """
        from tutormetrics.text import tokenize
        assert tokenize("他来到了网易杭研大厦", "rjieba") == ["他", "来到", "了", "网易", "杭研", "大厦"]
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, env=env, check=True, timeout=120)
    assert [p for d in (home, tmp, work) for p in d.rglob("*")] == []
