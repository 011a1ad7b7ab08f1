"""A "not applicable" −1 in every command that reads ratings (``docs/design/studies.md#na-codes``): without ``--na``
each warns that −1 is a category (θ would otherwise take it as the lowest one silently); with ``--na -1`` the warning
is gone, the ``recode -1 -> missing`` count is on stderr, and every file written equals, byte for byte, the file of
the same ratings with the −1 rows removed by hand. One declaration: the same ``--na`` (flag, parser, help) in every
command that reads ratings and in ``aggregate``, and a score given to both ``--na`` and ``--recode`` is exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer

from tutormetrics.cli import app, main
from tutormetrics.examples import dialogue_example_paths, example_paths

WARNING = "pass --na -1"
#: The commands that read a ratings file and how each is told the file (every one takes --na).
READERS = ("theta", "agree", "validate", "run", "predict", "summarize", "ppi")


def _with_na(ratings: pl.DataFrame, criteria: list[str], every: int) -> pl.DataFrame:
    """``ratings`` with every ``every``-th rating of ``criteria`` set to −1 ("not applicable")."""
    k = pl.int_range(pl.len()).over("criterion")
    hit = (k % every == 2) & pl.col("criterion").is_in(criteria)
    return ratings.with_columns(pl.when(hit).then(-1).otherwise(pl.col("score")).alias("score"))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bundled ratings with 26 −1 codes (``na.csv``), the same less those rows (``hand.csv``), a metrics table
    (three random metrics, the conversation and the tutor of each exchange) and the dialogue example's ratings with
    −1 codes."""
    d = tmp_path_factory.mktemp("na")
    raw = pl.read_csv(example_paths()["ratings"], schema_overrides={"exchange_id": pl.String})
    na = _with_na(raw, ["mistake_location", "next_step_correctness"], 6)
    na.write_csv(d / "na.csv")
    na.filter(pl.col("score") != -1).write_csv(d / "hand.csv")
    ids = raw["exchange_id"].unique(maintain_order=True)
    rng = np.random.default_rng(0)
    pl.DataFrame({"exchange_id": ids, "conversation_id": ids.str.split("::").list.get(0), "tutor": ids.str.split("::").list.get(1),
                  "resp_words": rng.normal(50, 10, len(ids)), "ttr": rng.random(len(ids)), "jaccard_1": rng.random(len(ids))},
                 ).write_csv(d / "metrics.csv")  # fmt: skip
    dialogue = pl.read_csv(dialogue_example_paths()["ratings"])
    _with_na(dialogue, ["guidance", "accuracy", "encouragement"], 5).write_csv(d / "dialogue_na.csv")
    return {"dir": d, "na": d / "na.csv", "hand": d / "hand.csv", "metrics": d / "metrics.csv", "dialogue_na": d / "dialogue_na.csv"}


def _three(files: dict[str, Path], capsys: pytest.CaptureFixture[str], argv: list[str], outs: list[str]) -> tuple[str, str]:
    """Run ``argv`` (``{R}`` the ratings, ``{O}`` the folder of the outputs ``outs``) on the −1 file, on it with
    ``--na -1`` and on the hand-cleaned file; the outputs of the last two are equal byte for byte. Returns stderr of
    the first two."""
    errs = []
    for name, ratings, extra in (("plain", files["na"], []), ("na", files["na"], ["--na", "-1"]), ("hand", files["hand"], [])):
        folder = files["dir"] / f"{argv[0]}-{name}"
        folder.mkdir(exist_ok=True)
        args = [a.replace("{R}", str(ratings)).replace("{O}", str(folder)) for a in argv]
        assert main([*args, *extra]) == 0, name
        errs.append(capsys.readouterr().err)
    for out in outs:
        na, hand = (files["dir"] / f"{argv[0]}-{name}" / out for name in ("na", "hand"))
        assert na.read_bytes() == hand.read_bytes(), out
    return errs[0], errs[1]


def _warned(plain: str, na: str, n: int = 13) -> None:
    """The −1 warning without ``--na``, for both criteria; with it none, and the count instead."""
    for criterion in ("mistake_location", "next_step_correctness"):
        line = (f"warning: ratings: criterion '{criterion}': score -1 ({n} ratings) is a category; "
                'if it means "not applicable", pass --na -1')  # fmt: skip
        assert line in plain
    assert WARNING not in na and "recode -1 -> missing: 26 ratings" in na


def test_theta(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    plain, na = _three(files, capsys, ["theta", "{R}", "-o", "{O}/theta.csv", "--facets", "{O}/facets.csv"],
                       ["theta.csv", "facets.csv"])  # fmt: skip
    _warned(plain, na)
    assert "partial_credit" in plain and "MFRM binary" in na  # −1 made two criteria three-category ones


def test_theta_strict_counts_the_warning(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theta", str(files["na"]), "-o", str(files["dir"] / "strict.csv"), "--strict"]) == 1
    assert WARNING in capsys.readouterr().err


def test_validate_estimate_theta(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["validate", str(files["metrics"]), "--ratings", "{R}", "--estimate-theta", "--n-resamples", "99", "-o", "{O}/v.csv"]
    plain, na = _three(files, capsys, argv, ["v.csv", "v_theta.csv", "v_rho_matrix.csv"])
    _warned(plain, na)


def test_predict(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sklearn")
    argv = ["predict", str(files["metrics"]), "--ratings", "{R}", "--group-col", "conversation_id", "--n-resamples", "20",
            "-o", "{O}/p.csv", "--predictions", "{O}/oos.csv"]  # fmt: skip
    plain, na = _three(files, capsys, argv, ["p.csv", "oos.csv"])
    _warned(plain, na)


def test_summarize(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["summarize", str(files["metrics"]), "--ratings", "{R}", "--group-col", "tutor", "--n-resamples", "0", "-o", "{O}/s.csv"]
    plain, na = _three(files, capsys, argv, ["s.csv"])
    _warned(plain, na)


def test_agree(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    plain, na = _three(files, capsys, ["agree", "{R}", "--n-resamples", "0", "-o", "{O}/a.csv"], ["a.csv"])
    _warned(plain, na)
    assert plain.count("criterion 'mistake_location': score -1") == 1  # said once, where the ratings are read


def test_ppi(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    d = files["dir"]
    ids = [f"e{i:02d}" for i in range(40)]
    judge = pl.DataFrame({"exchange_id": ids, "rater": "llm", "criterion": "c", "score": [float(i % 3 == 0) for i in range(40)]})
    human = pl.DataFrame({"exchange_id": ids[:16], "rater": "h", "criterion": "c", "score": [float(i % 2) for i in range(16)]})
    na_judge = judge.with_columns(pl.when(pl.int_range(pl.len()) % 4 == 1).then(-1.0).otherwise(pl.col("score")).alias("score"))
    na_human = human.with_columns(pl.when(pl.int_range(pl.len()) % 4 == 1).then(-1.0).otherwise(pl.col("score")).alias("score"))
    for name, j, h in (("na", na_judge, na_human), ("hand", na_judge.filter(pl.col("score") >= 0), na_human.filter(pl.col("score") >= 0))):
        j.write_csv(d / f"judge_{name}.csv")
        h.write_csv(d / f"human_{name}.csv")
    base = ["ppi", "--judge", "llm"]
    assert main([*base, "--judge-labels", str(d / "judge_na.csv"), "--human-labels", str(d / "human_na.csv"), "-o", str(d / "ppi_plain.csv")]) == 0
    plain = capsys.readouterr().err
    assert "criterion 'c': score -1 (10 ratings) is a category" in plain and "criterion 'c': score -1 (4 ratings)" in plain
    assert main([*base, "--judge-labels", str(d / "judge_na.csv"), "--human-labels", str(d / "human_na.csv"), "--na", "-1",
                 "-o", str(d / "ppi_na.csv")]) == 0  # fmt: skip
    na = capsys.readouterr().err
    assert WARNING not in na and "recode -1 -> missing: 10 ratings" in na and "recode -1 -> missing: 4 ratings" in na
    assert main([*base, "--judge-labels", str(d / "judge_hand.csv"), "--human-labels", str(d / "human_hand.csv"), "-o", str(d / "ppi_hand.csv")]) == 0
    assert (d / "ppi_na.csv").read_bytes() == (d / "ppi_hand.csv").read_bytes()


def test_run(files: dict[str, Path], capsys: pytest.CaptureFixture[str], example_dir: Path) -> None:
    """``run`` with ``--na -1`` equals ``run`` on the hand-cleaned ratings (θ, agreement, targets, ρ), and run.json
    records the codes dropped with the recodings."""
    outs, errs = {}, {}
    for name, ratings, extra in (("na", files["na"], ["--na", "-1"]), ("hand", files["hand"], [])):
        outs[name] = files["dir"] / f"run-{name}"
        code = main(["run", str(example_dir / "exchanges.csv"), "--prompt", "query", "--prompt", "code", "--prompt", "error",
                     "--metrics", "lexical", "--ratings", str(ratings), "--n-resamples", "99", "-o", str(outs[name]), *extra])  # fmt: skip
        assert code == 0, name
        errs[name] = capsys.readouterr().err
    assert WARNING not in errs["na"] and "recode -1 -> missing: 26 ratings" in errs["na"]
    for out in ("theta.csv", "facets.csv", "agreement.csv", "targets.csv", "correlations.csv", "rho_matrix.csv"):
        assert (outs["na"] / out).read_bytes() == (outs["hand"] / out).read_bytes(), out
    record = json.loads((outs["na"] / "run.json").read_text())
    assert record["recode"] == [{"from": -1.0, "to": None, "ratings": 26}]
    assert json.loads((outs["hand"] / "run.json").read_text())["recode"] == []


def test_run_dialogue_warns_and_strict_exits_1(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    dialogues = dialogue_example_paths()["dialogues"]
    code = main(["run", "--dialogue", str(dialogues), "--ratings", str(files["dialogue_na"]), "--metrics", "lexical",
                 "--n-resamples", "99", "--strict", "-o", str(files["dir"] / "drun")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    for criterion in ("guidance", "accuracy", "encouragement"):
        assert f"criterion {criterion!r}: score -1 (5 ratings) is a category" in err
    assert WARNING in json.dumps(json.loads((files["dir"] / "drun" / "run.json").read_text())["warnings"])


def _params(name: str) -> dict[str, object]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {o: p for p in command.params if p.param_type_name == "option" for o in p.opts}


def test_every_reader_has_the_one_na_option() -> None:
    """One declaration: ``--na`` in every command that reads ratings and in ``aggregate``, with one help text, and
    on each command's docs page."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "commands"
    helps = set()
    for name in (*READERS, "aggregate"):
        params = _params(name)
        assert "--na" in params, name
        helps.add(params["--na"].help)  # type: ignore[attr-defined]
        assert "`--na" in (docs / f"{name}.md").read_text(encoding="utf-8"), f"--na is not on docs/commands/{name}.md"
    assert len(helps) == 1, helps


@pytest.mark.parametrize("name", READERS)
def test_na_and_recode_of_one_score_is_exit_2(name: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    r, m, out = str(files["na"]), str(files["metrics"]), str(files["dir"] / f"both-{name}")
    argv = {
        "theta": ["theta", r, "-o", f"{out}.csv"], "agree": ["agree", r, "-o", f"{out}.csv"],
        "validate": ["validate", m, "--ratings", r, "-o", f"{out}.csv"],
        "run": ["run", str(example_paths()["exchanges"]), "--ratings", r, "-o", out],
        "predict": ["predict", m, "--ratings", r, "--group-col", "conversation_id", "-o", f"{out}.csv"],
        "summarize": ["summarize", m, "--ratings", r, "-o", f"{out}.csv"],
        "ppi": ["ppi", "--judge-labels", r, "--human-labels", r, "-o", f"{out}.csv"],
    }[name]
    assert main([*argv, "--na", "-1", "--recode", "-1=0"]) == 2
    err = capsys.readouterr().err
    assert "error: score -1 is given to both --na and --recode" in err and "Traceback" not in err
    assert not Path(out).exists() and not Path(f"{out}.csv").exists()


def test_na_on_wide_ratings_is_exit_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Wide ratings have no score column the codes could be read from: said, not ignored."""
    wide = files["dir"] / "wide.csv"
    pl.read_csv(files["metrics"]).select("exchange_id", pl.lit(1).alias("tone")).write_csv(wide)
    code = main(["validate", str(files["metrics"]), "--ratings", str(wide), "--na", "-1", "-o", str(files["dir"] / "w.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "--na -1: the ratings have no score column 'score'" in err and "Traceback" not in err
