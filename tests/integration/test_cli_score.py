"""`tutormetrics score` end to end: MRBench, the bundled example, bad input, resume after SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.engine import Scorer

LEXICAL_COLUMNS = Scorer("lexical").metric_columns()


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tutormetrics", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_mrbench_lexical_all_rows(mrbench_dir, tmp_path):
    out = tmp_path / "metrics.csv"
    assert main(["score", str(mrbench_dir / "exchanges.csv"), "-o", str(out), "-m", "lexical", "--no-progress"]) == 0
    frame = pl.read_csv(out)
    source = pl.read_csv(mrbench_dir / "exchanges.csv")
    assert frame.height == 1655
    assert frame.columns == ["exchange_id", *LEXICAL_COLUMNS, "prompt_empty", "resp_empty", "lang"]
    assert set(frame["lang"]) == {"en"}  # MRBench is English
    assert frame["exchange_id"].to_list() == source["exchange_id"].to_list()
    assert frame["resp_words"].null_count() == 0 and frame["resp_words"].min() >= 1
    assert (out.parent / "metrics.csv.manifest.json").exists()
    assert not (out.parent / "metrics.csv.partial").exists()


def test_parquet_and_jsonl_round_trip(mrbench_dir, tmp_path):
    csv_out, pq_out, jl_out = tmp_path / "m.csv", tmp_path / "m.parquet", tmp_path / "m.jsonl"
    src = mrbench_dir / "exchanges.csv"
    pl.read_csv(src).head(40).write_parquet(tmp_path / "in.parquet")
    for out in (csv_out, pq_out, jl_out):
        assert main(["score", str(tmp_path / "in.parquet"), "-o", str(out), "-m", "lexical", "--no-progress"]) == 0
    a, b, c = pl.read_csv(csv_out), pl.read_parquet(pq_out), pl.read_ndjson(jl_out)
    assert a.height == b.height == c.height == 40
    assert a["ttr"].to_list() == pytest.approx(b["ttr"].to_list(), nan_ok=True)
    assert b["ttr"].to_list() == pytest.approx(c["ttr"].to_list(), nan_ok=True)


def test_example_with_joined_prompt_columns(example_dir, tmp_path):
    out = tmp_path / "m.csv"
    code = main(["score", str(example_dir / "exchanges.csv"), "--prompt", "query", "--prompt", "code",
                 "--prompt", "error", "-m", "overlap,length", "-o", str(out), "--no-progress"])
    assert code == 0
    frame = pl.read_csv(out)
    assert frame.height == 40 and frame["len_ratio"].is_nan().sum() == 0


def test_generated_ids_are_stable_and_reported(tmp_path, capsys):
    src = tmp_path / "no_ids.csv"
    pl.DataFrame({"prompt": ["a b", "c d", "a b"], "response": ["x", "y", "x"]}).write_csv(src)
    out = tmp_path / "m.csv"
    assert main(["score", str(src), "-o", str(out), "-m", "length", "--no-progress"]) == 0
    assert "generated stable content ids" in capsys.readouterr().err
    ids = pl.read_csv(out)["exchange_id"].to_list()
    assert ids[2] == ids[0] + "-2" and len(set(ids)) == 3


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    good = tmp_path / "good.csv"
    pl.DataFrame({"exchange_id": ["a", "b"], "prompt": ["p", "q"], "response": ["r", "s"]}).write_csv(good)
    dup = tmp_path / "dup.csv"
    pl.DataFrame({"exchange_id": ["a", "a"], "prompt": ["p", "q"], "response": ["r", "s"]}).write_csv(dup)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    header_only = tmp_path / "header.csv"
    header_only.write_text("exchange_id,prompt,response\n")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("exchange_id,prompt,response\na,caf\xe9,ok\n".encode("latin-1"))
    typo = tmp_path / "typo.csv"
    pl.DataFrame({"exchange_id": ["a"], "promt": ["p"], "response": ["r"]}).write_csv(typo)
    return {
        "missing file": (["score", str(tmp_path / "nope.csv"), "-o", str(tmp_path / "o.csv")], "file not found"),
        "empty file": (["score", str(empty), "-o", str(tmp_path / "o.csv")], "file is empty"),
        "header only": (["score", str(header_only), "-o", str(tmp_path / "o.csv")], "no rows"),
        "misspelt column": (["score", str(typo), "-o", str(tmp_path / "o.csv")], "did you mean 'promt'"),
        "duplicate ids": (["score", str(dup), "-o", str(tmp_path / "o.csv")], "--dedupe"),
        "not utf-8": (["score", str(latin), "-o", str(tmp_path / "o.csv")], "--encoding"),
        "unknown metric": (["score", str(good), "-m", "bleu", "-o", str(tmp_path / "o.csv")], "unknown metric"),
        "bad extension": (["score", str(good), "-o", str(tmp_path / "o.xlsx")], ".xlsx"),
        "unknown encoding": (["score", str(latin), "--encoding", "klingon", "-o", str(tmp_path / "o.csv")], "encoding"),
        # issue 35: a response scored against itself was exit 0
        "prompt is the response": (["score", str(good), "--prompt", "response", "-o", str(tmp_path / "o.csv")],
                                   "--prompt and --response both name the column 'response'"),
    }


@pytest.mark.parametrize(
    "case",
    ["missing file", "empty file", "header only", "misspelt column", "duplicate ids", "not utf-8",
     "unknown metric", "bad extension", "unknown encoding", "prompt is the response"],
)
def test_bad_input_exits_2_with_a_message(tmp_path, capsys, case):
    args, needle = _bad_inputs(tmp_path)[case]
    code = main([*args, "--no-progress", *([] if "-m" in args else ["-m", "lexical"])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path):
    proc = run_cli("score", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o.csv"))
    assert proc.returncode == 2
    assert "file not found" in proc.stderr and "Traceback" not in proc.stderr


def test_latin1_input_with_encoding_option(tmp_path):
    _bad_inputs(tmp_path)
    out = tmp_path / "o.csv"
    assert main(["score", str(tmp_path / "latin.csv"), "--encoding", "latin-1", "-m", "length", "-o", str(out)]) == 0
    assert pl.read_csv(out)["resp_chars"].to_list() == [2.0]


def test_dedupe_keeps_first(tmp_path):
    _bad_inputs(tmp_path)
    out = tmp_path / "o.csv"
    assert main(["score", str(tmp_path / "dup.csv"), "--dedupe", "-m", "length", "-o", str(out)]) == 0
    assert pl.read_csv(out)["exchange_id"].to_list() == ["a"]


def test_formula_guard_in_csv_output(tmp_path):
    src = tmp_path / "f.csv"
    pl.DataFrame({"exchange_id": ["=HYPERLINK(1)", "-2", "ok"], "prompt": ["a", "b", "c"], "response": ["x", "y", "z"]}).write_csv(src)
    out = tmp_path / "o.csv"
    assert main(["score", str(src), "-m", "length", "-o", str(out), "--no-progress"]) == 0
    raw = out.read_text().splitlines()
    assert raw[1].startswith("'=HYPERLINK(1)") and raw[2].startswith("-2,")  # a plain number is never a formula
    from tutormetrics.io.tables import read_table

    assert read_table(out)["exchange_id"].to_list() == ["=HYPERLINK(1)", "-2", "ok"]  # undone on reading


def test_strict_exits_1_when_warnings(tmp_path, capsys):
    """A run with a warning (mattr NaN for every one of 12 short replies) exits 0, and 1 with --strict; both write
    the same results. A run without warnings exits 0 even with --strict."""
    src = tmp_path / "e.csv"
    replies = [f"Try step {i} again and check the sign." for i in range(12)]
    pl.DataFrame({"exchange_id": [f"e{i}" for i in range(12)], "prompt": ["What is 3 - 5?"] * 12,
                  "response": replies}).write_csv(src)
    plain, strict = tmp_path / "plain.csv", tmp_path / "strict.csv"
    base = ["score", str(src), "-m", "lexical_richness", "--no-progress"]

    assert main([*base, "-o", str(plain)]) == 0
    assert "mattr is NaN for 12 of 12 exchanges" in capsys.readouterr().err  # the warning case is real
    assert main([*base, "-o", str(strict), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "mattr is NaN for 12 of 12 exchanges" in err and "strict:" in err
    assert pl.read_csv(strict).equals(pl.read_csv(plain))  # results are written either way

    quiet = tmp_path / "q.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["x " * 40], "response": ["y " * 40]}).write_csv(quiet)
    assert main(["score", str(quiet), "-m", "length", "-o", str(tmp_path / "o.csv"), "--strict", "--no-progress"]) == 0


@pytest.mark.slow  # scores MRBench twice around a SIGKILL: ~18 s
def test_resume_after_sigkill_is_byte_identical(mrbench_dir, tmp_path):
    src = mrbench_dir / "exchanges.csv"
    reference = tmp_path / "reference.csv"
    args = ["-m", "lexical", "--chunk-size", "25", "--no-progress"]
    assert run_cli("score", str(src), "-o", str(reference), *args).returncode == 0

    out = tmp_path / "resumed.csv"
    partial = tmp_path / "resumed.csv.partial"
    proc = subprocess.Popen([sys.executable, "-m", "tutormetrics", "score", str(src), "-o", str(out), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(partial.glob("chunk-*.parquet"))) < 5:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(partial.glob("chunk-*.parquet")))
    assert 5 <= done_before < 67, "the run must be killed part-way"
    assert not out.exists()

    rerun = run_cli("score", str(src), "-o", str(out), *args)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming" in rerun.stderr
    assert out.read_bytes() == reference.read_bytes()
    assert not partial.exists()


def test_changed_options_do_not_reuse_a_checkpoint(mrbench_dir, tmp_path, capsys):
    src = mrbench_dir / "exchanges.csv"
    out = tmp_path / "o.csv"
    partial = tmp_path / "o.csv.partial"
    partial.mkdir()
    (partial / "run.json").write_text('{"key": "something-else"}')
    (partial / "chunk-000000.parquet").write_bytes(b"garbage")
    assert main(["score", str(src), "-o", str(out), "-m", "length", "--no-progress"]) == 0
    assert "discarding partial results" in capsys.readouterr().err
    assert pl.read_csv(out).height == 1655


def test_metrics_command_lists_every_family(capsys):
    import json

    from tutormetrics.metrics import REGISTRY

    assert main(["metrics", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == REGISTRY.names()
    by_name = {r["name"]: r for r in rows}
    assert "sync_l06" in by_name["layerwise_synchrony"]["columns"]
    assert by_name["lexical_diversity"]["columns"]["rep_1"] is False
    assert by_name["readability"]["columns"]["flesch_reading_ease"] is True


def test_metric_param_reaches_the_family(tmp_path, capsys):
    """--metric-param family.name=value configures the family exactly as the Python API does."""
    from tutormetrics.metrics import LengthStructure

    src = tmp_path / "in.csv"
    texts = ["First point.Second point! Third?", "One sentence only. e.g. not two", "Ends here...and continues"]
    pl.DataFrame({"exchange_id": ["a", "b", "c"], "prompt": ["q"] * 3, "response": texts}).write_csv(src)
    out = tmp_path / "m.csv"
    args = ["score", str(src), "-o", str(out), "-m", "length", "--no-progress"]
    assert main([*args, "--metric-param", "length.sentence_mode=textstat"]) == 0
    via_cli = pl.read_csv(out)["resp_sentences"].to_list()
    via_api = Scorer([LengthStructure(sentence_mode="textstat")]).score(["a", "b", "c"], ["q"] * 3, texts)
    default = Scorer([LengthStructure()]).score(["a", "b", "c"], ["q"] * 3, texts)["resp_sentences"].to_list()
    assert via_cli == via_api["resp_sentences"].to_list()
    assert via_cli != default  # the parameter changed the numbers
    manifest = (tmp_path / "m.csv.manifest.json").read_text()
    assert '"sentence_mode": "textstat"' in manifest


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("length.bogus=1", "valid: length.sentence_mode, length.strip_code_fences"),
        ("length.strip_code_fences=maybe", "not a valid true or false"),
        ("overlap.n=2", "not among the selected metrics"),
        ("sentence_mode=textstat", "family.name=value"),
    ],
)
def test_metric_param_errors_name_the_valid_keys(tmp_path, capsys, param, message):
    src = tmp_path / "in.csv"
    pl.DataFrame({"exchange_id": ["a"], "prompt": ["q"], "response": ["r."]}).write_csv(src)
    out = tmp_path / "m.csv"
    assert main(["score", str(src), "-o", str(out), "-m", "length", "--metric-param", param]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
