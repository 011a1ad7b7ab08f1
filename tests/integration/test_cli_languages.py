"""`score --lang/--segmenter/--chars-per-sentence/--concision-bands` end to end on the bundled CJK example."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.examples import cjk_example_path


def test_cjk_example_scores_with_lang_and_concision(tmp_path, capsys):
    out = tmp_path / "m.csv"
    args = ["score", str(cjk_example_path()), "-o", str(out), "-m", "lexical", "--no-progress"]
    assert main([*args, "--chars-per-sentence", "40"]) == 0
    err = capsys.readouterr().err
    assert "12 responses are Chinese or Japanese (8 zh, 4 ja; column lang)" in err
    frame = pl.read_csv(out)
    assert frame.height == 12 and frame.columns[-1] == "lang"
    assert frame["lang"].to_list() == ["zh"] * 8 + ["ja"] * 4
    assert frame["flesch_reading_ease"].is_nan().all() and frame["flesch_kincaid_grade"].is_nan().all()
    by_id = {r["exchange_id"]: r for r in frame.iter_rows(named=True)}
    ex1 = by_id["zh01::concise"]  # languages.md Ex1
    assert (ex1["resp_chars"], ex1["resp_words"], ex1["resp_sentences"]) == (23, 15, 3)
    assert ex1["resp_sentence_equiv"] == pytest.approx(23 / 40) and ex1["concision_band"] == 2
    verbose = by_id["zh01::verbose"]
    assert verbose["resp_sentence_equiv"] == pytest.approx(verbose["resp_chars"] / 40)
    assert verbose["concision_band"] == 0  # 250 characters: 6.25 > 6 sentence-equivalents at 40
    assert by_id["zh02::verbose"]["concision_band"] == 1  # 145 / 40 = 3.625
    manifest = json.loads((tmp_path / "m.csv.manifest.json").read_text())
    assert manifest["text"] == {"lang": "auto", "segmenter": "char"}
    assert manifest["nan_reasons"]["flesch_reading_ease"] == {"lang_not_en": 12}
    assert manifest["stats"]["n_lang_zh"] == 8 and manifest["stats"]["n_lang_ja"] == 4
    assert manifest["metrics"]["length"]["params"]["chars_per_sentence"] == 40.0


def test_lang_en_and_bands_options(tmp_path):
    out = tmp_path / "m.csv"
    src = str(cjk_example_path())
    assert main(["score", src, "-o", str(out), "-m", "length,readability", "--lang", "en",
                 "--concision-bands", "0.3,1", "--no-progress"]) == 0
    frame = pl.read_csv(out)
    assert set(frame["lang"]) == {"en"}
    assert not frame["flesch_reading_ease"].is_nan().any()  # forced en: the English formula runs
    equiv = frame["resp_sentence_equiv"].to_list()
    expected = [2.0 if e <= 0.3 else 1.0 if e <= 1 else 0.0 for e in equiv]
    assert frame["concision_band"].to_list() == expected and len(set(expected)) == 3


def test_lang_zh_makes_readability_nan_on_english(tmp_path, example_dir):
    out = tmp_path / "m.csv"
    assert main(["score", str(example_dir / "exchanges.csv"), "--prompt", "query", "-m", "readability",
                 "--lang", "zh", "-o", str(out), "--no-progress"]) == 0
    frame = pl.read_csv(out)
    assert set(frame["lang"]) == {"zh"} and frame["flesch_reading_ease"].is_nan().all()


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["--lang", "fr"], "unknown language"),
        (["--segmenter", "jieba"], "unknown segmenter"),
        (["--chars-per-sentence", "0"], "chars_per_sentence"),
        (["--chars-per-sentence", "nan"], "chars_per_sentence"),
        (["--concision-bands", "3"], "--concision-bands"),
        (["--concision-bands", "6,3"], "concision bands"),
        (["--concision-bands", "a,b"], "--concision-bands"),
    ],
)
def test_bad_language_options_exit_2(tmp_path, capsys, option, needle):
    out = tmp_path / "o.csv"
    code = main(["score", str(cjk_example_path()), "-o", str(out), "-m", "length", "--no-progress", *option])
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and "Traceback" not in err
    assert not out.exists()


def test_run_accepts_the_language_options(tmp_path, example_dir):
    out = tmp_path / "run"
    code = main(["run", "--example", "-o", str(out), "-m", "length", "--lang", "en", "--chars-per-sentence", "50",
                 "--concision-bands", "2,4", "--n-resamples", "50", "--no-progress", "--no-estimate-theta",
                 "--theta", str(example_dir / "theta.csv")])
    assert code == 0
    metrics = pl.read_csv(out / "metrics.csv")
    assert metrics["resp_sentence_equiv"].to_list() == pytest.approx((metrics["resp_chars"] / 50).to_list())
    assert not any(math.isnan(x) for x in metrics["concision_band"].to_list())
