"""Bad and odd input through the real CLI (``tutormetrics.cli.main``), one test per class of input.

The basics of ``score`` (missing file, empty file, header only, misspelt column, duplicate ids, not
UTF-8, unknown metric, bad extension, unknown encoding) are in ``test_cli_score.py``; this file covers
malformed JSONL, a fake Parquet file, blank and runaway texts, control characters, encoder options,
``--strict``, ``theta``/``agree`` ratings problems and ``validate``/``heatmap`` edge cases.

Every case asserts the exit code, a fragment of the message and that no traceback reached stderr.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main

NO_PROGRESS = "--no-progress"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    assert "Traceback" not in captured.out
    return code, captured.out, captured.err


def _write_jsonl(path: Path, rows: list[dict], bad_line: int, bad_text: str) -> Path:
    lines = [json.dumps(r) for r in rows]
    lines[bad_line] = bad_text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _jsonl_case(tmp_path: Path, case: str) -> Path:
    """A JSONL file with one malformed line: early (inside polars' schema sample) or late, with or without ids."""
    if case == "early_with_id":
        rows = [{"exchange_id": f"e{i}", "prompt": "p", "response": "r"} for i in range(5)]
        return _write_jsonl(tmp_path / "early.jsonl", rows, 2, '{"exchange_id": "e2", "prompt": ')
    if case == "late_with_id":
        rows = [{"exchange_id": f"e{i}", "prompt": "p", "response": "r"} for i in range(600)]
        return _write_jsonl(tmp_path / "late.jsonl", rows, 500, '{"exchange_id": "e500", "prompt": ')
    rows = [{"prompt": "p", "response": f"r{i}"} for i in range(600)]
    return _write_jsonl(tmp_path / "late_noid.jsonl", rows, 500, '{"prompt": ')


JSONL_CASES = ["early_with_id", "late_with_id", "late_without_id"]


# ----------------------------------------------------------------------------------- malformed input
@pytest.mark.parametrize("case", JSONL_CASES)
def test_jsonl_with_a_malformed_line_exits_2(tmp_path, capsys, case):
    src = _jsonl_case(tmp_path, case)
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "length", "--jobs", "1", "--chunk-size", "100", NO_PROGRESS)
    assert code == 2, err
    assert "error:" in err and "not valid JSON" in err and ": line " in err  # the line is named (issue 28)
    assert not out.exists()


@pytest.mark.parametrize(
    "case",
    [
        "early_with_id",
        "late_with_id",
        "late_without_id",
    ],
)
def test_jsonl_malformed_line_error_names_the_file(tmp_path, capsys, case):
    src = _jsonl_case(tmp_path, case)
    code, _, err = run(capsys, "score", str(src), "-o", str(tmp_path / "o.csv"), "-m", "length", "--jobs", "1", "--chunk-size", "100", NO_PROGRESS)
    assert code == 2
    error_line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert src.name in error_line, err
    assert "--debug" not in err, "an input error, not an unexpected one"


def test_parquet_file_that_is_csv_exits_2(tmp_path, capsys):
    src = tmp_path / "fake.parquet"
    src.write_text("exchange_id,prompt,response\na,p,r\n", encoding="utf-8")
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "length", NO_PROGRESS)
    assert code == 2, err
    assert "parquet" in err.lower()
    assert not out.exists()


def test_parquet_file_that_is_csv_error_names_the_file(tmp_path, capsys):
    src = tmp_path / "fake.parquet"
    src.write_text("exchange_id,prompt,response\na,p,r\n", encoding="utf-8")
    code, _, err = run(capsys, "score", str(src), "-o", str(tmp_path / "o.csv"), "-m", "length", NO_PROGRESS)
    assert code == 2
    error_line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert "fake.parquet" in error_line and "--debug" not in err, err


def test_malformed_jsonl_in_a_real_process(tmp_path):
    src = _jsonl_case(tmp_path, "early_with_id")
    proc = subprocess.run(
        [sys.executable, "-m", "tutormetrics", "score", str(src), "-o", str(tmp_path / "o.csv"), "-m", "length"],
        capture_output=True,
        text=True,
        timeout=120, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "o.csv").exists()


# ------------------------------------------------------------------------------------ odd texts (exit 0)
def test_null_empty_and_whitespace_responses_are_scored(tmp_path, capsys):
    src = tmp_path / "blank.csv"
    src.write_text(
        "exchange_id,prompt,response\n"
        "a,hello there,\n"  # null
        'b,hi,""\n'  # empty string
        'c,what,"   "\n'  # spaces
        'd,,"\t\r\n "\n'  # tab/CR/newline, and a null prompt
        "e,why,a fine answer\n",
        encoding="utf-8",
    )
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "lexical", NO_PROGRESS)
    assert code == 0, err
    frame = pl.read_csv(out)
    assert frame["exchange_id"].to_list() == ["a", "b", "c", "d", "e"]
    assert frame["resp_empty"].to_list() == [True, True, True, True, False]
    assert frame["prompt_empty"].to_list() == [False, False, False, True, False]
    blank = frame.head(4)
    assert blank["resp_chars"].to_list() == [0.0] * 4 and blank["resp_words"].to_list() == [0.0] * 4
    assert blank["resp_sentences"].to_list() == [0.0] * 4
    for col in ("ttr", "distinct_2", "entropy_1", "rep_1", "flesch_reading_ease", "resp_mean_word_len"):
        assert blank[col].is_nan().all(), col
    assert frame["len_ratio"][3] is not None and math.isnan(frame["len_ratio"][3])  # empty prompt
    assert "4 empty responses and 1 empty prompts" in err


def test_runaway_response_and_control_characters(tmp_path, capsys):
    runaway = ("Let us think step by step about fractions. " * 300)[:10_000]
    src = tmp_path / "odd.jsonl"
    rows = [
        {"exchange_id": "runaway", "prompt": "What is a half?", "response": runaway},
        {"exchange_id": "nul", "prompt": "nul\x00in the prompt", "response": "bytes\x00 and \x00NUL\x00 here."},
        {"exchange_id": "ctrl", "prompt": "\x07\x1b[31mred\x1b[0m", "response": "tab\tCR\rVT\x0bFF\x0cFS\x1c US\x1f \u202eRTL\u202c \u200bzw"},
        {"exchange_id": "only_ctrl", "prompt": "\x00\x01\x02", "response": "\x00\x01\x02\x03"},
        {"exchange_id": "emoji", "prompt": "👨\u200d👩\u200d👧 مرحبا", "response": "שלום 🙂 e\u0301"},
        {"exchange_id": "word5k", "prompt": "x", "response": "y" * 5000},
    ]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = tmp_path / "o.parquet"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "lexical", NO_PROGRESS)
    assert code == 0, err
    assert "scored 6 exchanges" in err
    frame = pl.read_parquet(out)
    assert frame["exchange_id"].to_list() == [r["exchange_id"] for r in rows]
    for col in frame.columns:
        if frame[col].dtype.is_float():
            values = frame[col].to_numpy()
            assert not np.isinf(values).any(), col  # finite or NaN, never inf
            assert frame[col].null_count() == 0, col
    by_id = {r["exchange_id"]: r for r in frame.iter_rows(named=True)}
    assert by_id["runaway"]["resp_chars"] == len(runaway.strip())
    assert by_id["runaway"]["resp_words"] > 1000
    assert by_id["nul"]["resp_words"] == 4  # bytes, and, nul, here: NUL separates tokens
    assert by_id["word5k"]["resp_words"] == 1 and by_id["word5k"]["resp_mean_word_len"] == 5000
    assert math.isnan(by_id["only_ctrl"]["ttr"]) and by_id["only_ctrl"]["resp_words"] == 0


# ------------------------------------------------------------------------------------- encoder options
@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--device", "tpu", "invalid device 'tpu'"),
        ("--device", "cuda:x", "invalid device 'cuda:x'"),
        ("--device", "cpu:0", "invalid device"),
        ("--dtype", "float8", "invalid dtype 'float8'"),
        ("--dtype", "int4", "invalid dtype"),
    ],
)
def test_bad_device_or_dtype_exits_2_with_hint(tmp_path, capsys, option, value, needle):
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["p"], "response": ["r"]}).write_csv(src)
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "encoder", option, value, NO_PROGRESS)
    assert code == 2, err
    assert needle in err and "hint:" in err
    assert not out.exists()


def test_half_precision_on_cpu_exits_2(tmp_path, capsys, tiny_model_dir):
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["p"], "response": ["r"]}).write_csv(src)
    code, _, err = run(
        capsys, "score", str(src), "-o", str(tmp_path / "o.csv"), "-m", "encoder", "--device", "cpu",
        "--dtype", "float16", "--model-name-or-path", str(tiny_model_dir), NO_PROGRESS,
    )  # fmt: skip
    assert code == 2, err
    assert "only allowed on a GPU" in err and "hint:" in err


def test_missing_model_path_exits_2_and_never_downloads(tmp_path, capsys):
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["p"], "response": ["r"]}).write_csv(src)
    out = tmp_path / "o.csv"
    code, _, err = run(
        capsys, "score", str(src), "-o", str(out), "-m", "encoder", "--model-name-or-path", "/nonexistent", NO_PROGRESS
    )
    assert code == 2, err
    assert "/nonexistent" in err and "never downloads" in err
    assert not out.exists()


def test_strict_exits_1_on_a_windowing_warning_but_writes_everything(tmp_path, capsys, tiny_model_dir):
    src = tmp_path / "in.csv"
    prompts = ["where did the cat sit " * 6, "what is two plus four", "", "why"]
    responses = ["the cat sat on the mat " * 8, "it is six", "yes", "because you can try again good question " * 3]
    ids = ["long", "short", "blank_prompt", "long_resp"]
    pl.DataFrame({"exchange_id": ids, "prompt": prompts, "response": responses}).write_csv(src)
    out = tmp_path / "o.csv"
    args = [
        "score", str(src), "-o", str(out), "--model-name-or-path", str(tiny_model_dir), "--max-seq-length", "8",
        "--metrics", "embedding_similarity", "--device", "cpu", NO_PROGRESS,
    ]  # fmt: skip
    code, _, err = run(capsys, *args, "--strict")
    assert code == 1, err
    assert "warning:" in err and "windowed" in err and "strict" in err
    frame = pl.read_csv(out)  # written and complete despite exit 1
    assert frame["exchange_id"].to_list() == ids
    assert {"emb_mean_cos", "emb_greedy_f1", "prompt_windows", "resp_windows"} <= set(frame.columns)
    assert frame["resp_windows"][0] > 1
    assert frame.filter(pl.col("exchange_id") != "blank_prompt")["emb_mean_cos"].is_nan().sum() == 0
    manifest = json.loads((tmp_path / "o.csv.manifest.json").read_text())
    assert manifest["warnings"] and "windowed" in manifest["warnings"][0]
    assert not (tmp_path / "o.csv.partial").exists()
    # the same run without --strict succeeds with the same numbers
    out2 = tmp_path / "o2.csv"
    code2, _, err2 = run(capsys, *[a if a != str(out) else str(out2) for a in args])
    assert code2 == 0, err2
    assert pl.read_csv(out2).equals(frame)


def test_max_seq_length_beyond_the_model_positions_exits_2(tmp_path, capsys, tiny_model_dir):
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["p"], "response": ["r"]}).write_csv(src)
    code, _, err = run(
        capsys, "score", str(src), "-o", str(tmp_path / "o.csv"), "-m", "encoder", "--device", "cpu",
        "--model-name-or-path", str(tiny_model_dir), "--max-seq-length", "1000", NO_PROGRESS,
    )  # fmt: skip
    assert code == 2, err
    assert "exceeds the model's 64 position embeddings" in err and "hint:" in err


# -------------------------------------------------------------------------------------- odd exchange ids
ODD_IDS = ["a\nb", "\tx", "=1+2", "x\x00y", " sp ", 'quote"d', "-3", "@home", "\u202eRTL", "🙂"]


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_odd_ids_round_trip_through_every_output_format(tmp_path, capsys, ext):
    from tutormetrics.io.tables import read_table

    src = tmp_path / "ids.jsonl"
    pl.DataFrame({"exchange_id": ODD_IDS, "prompt": ["p"] * len(ODD_IDS), "response": ["r"] * len(ODD_IDS)}).write_ndjson(src)
    out = tmp_path / f"o.{ext}"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "length", NO_PROGRESS)
    assert code == 0, err
    assert read_table(out)["exchange_id"].to_list() == ODD_IDS


def test_ids_starting_with_an_apostrophe_round_trip_through_csv(tmp_path, capsys):
    from tutormetrics.io.tables import read_table

    ids = ["'=already", "'-5", "plain"]
    src = tmp_path / "ids.jsonl"
    pl.DataFrame({"exchange_id": ids, "prompt": ["p"] * 3, "response": ["r"] * 3}).write_ndjson(src)
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "score", str(src), "-o", str(out), "-m", "length", NO_PROGRESS)
    assert code == 0, err
    assert read_table(out)["exchange_id"].to_list() == ids


# ----------------------------------------------------------------------------------- theta and agree
def _ratings(tmp_path: Path, *, drop: str | None = None, bad_score: object = None) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(30):
        for rater in ("r1", "r2"):
            for crit in ("guidance", "coherence"):
                rows.append({"exchange_id": f"ex{i:02d}", "rater": rater, "criterion": crit, "score": str(int(rng.uniform() > 0.4))})
    if bad_score is not None:
        rows[7]["score"] = bad_score
    frame = pl.DataFrame(rows)
    if drop:
        frame = frame.drop(drop)
    path = tmp_path / "ratings.csv"
    frame.write_csv(path)
    return path


@pytest.mark.parametrize("command", ["theta", "agree"])
@pytest.mark.parametrize("missing", ["score", "rater", "criterion", "exchange_id"])
def test_ratings_with_a_missing_column_exit_2_naming_it(tmp_path, capsys, command, missing):
    path = _ratings(tmp_path, drop=missing)
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, command, str(path), "-o", str(out), *(["--n-boot", "0"] if command == "agree" else []))
    assert code == 2, err
    assert f"missing column '{missing}'" in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["theta", "agree"])
def test_ratings_with_a_renamed_score_column_exit_2_naming_it(tmp_path, capsys, command):
    path = _ratings(tmp_path)
    code, _, err = run(capsys, command, str(path), "-o", str(tmp_path / "o.csv"), "--score", "rating")
    assert code == 2, err
    assert "'rating'" in err


@pytest.mark.parametrize("command", ["theta", "agree", "validate"])
@pytest.mark.parametrize("bad", ["good", "1,5"])
def test_ratings_with_non_numeric_scores_exit_2_naming_the_column(tmp_path, capsys, command, bad):
    path = _ratings(tmp_path, bad_score=bad)
    out = tmp_path / "o.csv"
    if command == "validate":
        metrics = tmp_path / "metrics.csv"
        pl.DataFrame({"exchange_id": [f"ex{i:02d}" for i in range(30)], "ttr": np.linspace(0, 1, 30)}).write_csv(metrics)
        args = ["validate", str(metrics), "--ratings", str(path), "-o", str(out)]
    else:
        args = [command, str(path), "-o", str(out), *(["--n-boot", "0"] if command == "agree" else [])]
    code, _, err = run(capsys, *args)
    assert code == 2, err
    assert "'score'" in err and ("not numeric" in err or "non-numeric" in err)
    assert not out.exists()


# ------------------------------------------------------------------------------- validate and heatmap
def _metrics_and_ratings(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    n = 30
    ids = [f"ex{i:02d}" for i in range(n)]
    pl.DataFrame(
        {"exchange_id": ids, "ttr": rng.uniform(size=n), "const": [1.0] * n, "resp_chars": rng.normal(size=n)}
    ).write_csv(tmp_path / "metrics.csv")
    rows = [
        (ex, rater, "guidance", float(rng.uniform() > 0.5))
        for ex in ids[:20] + ["zz1", "zz2"]
        for rater in ("r1", "r2")
    ]
    pl.DataFrame(rows, schema=["exchange_id", "rater", "criterion", "score"], orient="row").write_csv(tmp_path / "ratings.csv")
    return tmp_path / "metrics.csv", tmp_path / "ratings.csv"


FAST_VALIDATE = ["--n-resamples", "99", "--n-permutations", "99"]


def test_validate_with_partly_matching_ids_reports_the_join(tmp_path, capsys):
    metrics, ratings = _metrics_and_ratings(tmp_path)
    out = tmp_path / "corr.csv"
    code, _, err = run(capsys, "validate", str(metrics), "--ratings", str(ratings), "-o", str(out), *FAST_VALIDATE)
    assert code == 0, err
    assert "20 of 30 metric rows matched ratings" in err
    assert "2 rating ids without metrics" in err
    assert "zz1" in err and "zz2" in err and "ex20" in err
    table = pl.read_csv(out)
    assert set(table.filter(pl.col("metric") != "const")["n"].to_list()) == {20}


def test_validate_with_a_constant_metric_column(tmp_path, capsys):
    metrics, ratings = _metrics_and_ratings(tmp_path)
    out = tmp_path / "corr.csv"
    code, _, err = run(capsys, "validate", str(metrics), "--ratings", str(ratings), "-o", str(out), *FAST_VALIDATE)
    assert code == 0, err
    table = pl.read_csv(out)
    const = table.filter(pl.col("metric") == "const").row(0, named=True)
    assert "constant" in const["reason"]
    assert const["rho"] is None or math.isnan(const["rho"])
    assert "constant: 1" in err
    others = table.filter(pl.col("metric") != "const")
    assert others["rho"].is_not_nan().all()
    # and the heatmap of that table draws (a NaN cell, no crash)
    fig = tmp_path / "h.png"
    code, _, err = run(capsys, "heatmap", str(out), "-o", str(fig))
    assert code == 0, err
    assert fig.exists() and fig.stat().st_size > 0


def test_heatmap_of_a_table_without_rho_exits_2(tmp_path, capsys):
    metrics, ratings = _metrics_and_ratings(tmp_path)
    corr = tmp_path / "corr.csv"
    assert run(capsys, "validate", str(metrics), "--ratings", str(ratings), "-o", str(corr), *FAST_VALIDATE)[0] == 0
    no_rho = tmp_path / "no_rho.csv"
    pl.read_csv(corr).drop("rho").write_csv(no_rho)
    fig = tmp_path / "h.png"
    code, _, err = run(capsys, "heatmap", str(no_rho), "-o", str(fig))
    assert code == 2, err
    assert "missing column 'rho'" in err and "--value" in err
    assert not fig.exists()
