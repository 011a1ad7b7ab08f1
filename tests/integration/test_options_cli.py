"""Options declared once, on the options dataclasses (``docs/guide/options.md``): ``run`` takes every ``score``/``validate``
option but those naming their own outputs, each option field is one flag of each command that takes it, and ``run``
honours the options it gained (``--encoding``, ``--keep``, ``--strict``, repeated ``--theta``, ``--metrics-cols``)."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
import typer

from tutormetrics.cli import app, main
from tutormetrics.commands.run import RUN_EXCLUDES, RunArgs
from tutormetrics.commands.score import ScoreArgs
from tutormetrics.commands.validity import ValidateArgs
from tutormetrics.dialogue.file_scoring import DialogueOptions
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.examples import example_paths
from tutormetrics.flags import flag_fields, flag_of
from tutormetrics.validity.study import ValidateOptions

#: The typed command of each name, and the option fields it leaves out (validate has no --recode).
COMMANDS = {"score": (ScoreArgs, ()), "validate": (ValidateArgs, ()), "run": (RunArgs, RUN_EXCLUDES)}
#: Fields only the Python API sets (run's figure formats, the dialogue reader's response check).
API_ONLY = {ValidateOptions: {"figure_formats"}, ScoreOptions: set(), DialogueOptions: {"response_required"}}


def _params(name: str) -> list:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return [p for p in command.params if p.param_type_name == "option"]


def _flags(name: str) -> set[str]:
    return {f for p in _params(name) for f in (*p.opts, *p.secondary_opts)}


def _spelled(cls: type, names: set[str] | None = None) -> set[str]:
    """The flags (both halves of ``--x/--no-x``) of ``cls``'s option fields (only ``names`` when given)."""
    return {f for o in flag_fields(cls) if names is None or o.name in names for spec in o.flag.flags for f in spec.split("/")}


def test_run_takes_every_score_and_validate_option_but_output_names():
    """run = score ∪ validate − what names their outputs (score's own output fields, RUN_EXCLUDES) + run's own."""
    score_own = {f.name for f in dataclasses.fields(ScoreArgs)} - {f.name for f in dataclasses.fields(RunArgs)} | {"output"}
    own_outputs = _spelled(ScoreArgs, score_own) | _spelled(ScoreOptions, set(RUN_EXCLUDES))
    assert own_outputs == {"--output", "-o", "--output-format", "--manifest", "--no-manifest", "--conversations",
                           "--embeddings", "--embedding-layers"}  # fmt: skip
    run_own = _spelled(RunArgs, {"output", "example", "group_col"})
    # validate's --facets names the fit of a given --theta for --theta-pv; run --theta-pv uses the fit it estimates
    assert _flags("run") - run_own == (_flags("score") | _flags("validate")) - own_outputs - {"--facets"}
    # the ones the issue names, spelled out
    assert {"--encoding", "--format", "--keep", "--dedupe", "--max-seq-length", "--cache-mb", "--jobs", "--engine",
            "--resume", "--restart", "--strict", "--csv-formula-guard", "--no-csv-formula-guard", "--top",
            "--metrics-cols"} <= _flags("run")


def test_old_spellings_and_defaults_survive():
    assert {"--n-boot"} <= _flags("agree") and {"--min-pairs"} <= _flags("compare")
    params = {p.name: p for p in _params("validate")}
    assert params["estimate_theta"].default is False and params["n_resamples"].default == 9999
    assert ValidateArgs.__dataclass_fields__["validate"].default_factory().estimate_theta is False  # type: ignore[misc]
    run = {p.name: p for p in _params("run")}
    assert run["estimate_theta"].default is True and run["n_jobs"].opts == ["--jobs", "-j"]
    assert RunArgs().validate == ValidateOptions()  # run's study is the library's, defaults and all


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_field_is_one_flag_of_the_command(name):
    """Each flag field of the command's options dataclasses (nested ones flattened) is exactly one option of the
    command, under its first flag, with the default declared on the field."""
    cls, exclude = COMMANDS[name]
    params = _params(name)
    for option in flag_fields(cls):
        first = option.flag.flags[0].split("/")[0] if option.flag.flags else None
        matching = [p for p in params if first in p.opts]
        if option.name in exclude or first is None:
            assert not matching, f"{name}: {first} should not be offered"
            continue
        assert len(matching) == 1, f"{name}: {first} appears {len(matching)} times"
        assert matching[0].name == option.name


@pytest.mark.parametrize("cls", [ScoreOptions, ValidateOptions, DialogueOptions])
def test_every_library_field_is_a_flag_or_api_only(cls):
    """A field added to a library options dataclass without a flag is a field no command can set."""
    flagged = {f.name for f in dataclasses.fields(cls) if flag_of(f) is not None}
    assert flagged | API_ONLY[cls] == {f.name for f in dataclasses.fields(cls)}
    assert not flagged & API_ONLY[cls]
    assert {o.name for o in flag_fields(cls)} <= {o.name for o in flag_fields(RunArgs)} | {"recode"}


def test_run_honours_encoding_keep_metrics_cols_theta_and_strict(tmp_path, capsys):
    paths = example_paths()
    exchanges = pl.read_csv(paths["exchanges"], infer_schema_length=0)
    text = exchanges.with_columns(pl.col("response").str.replace("^", "Café: ")).write_csv()
    cp1252 = tmp_path / "exchanges_cp1252.csv"
    cp1252.write_bytes(text.encode("cp1252", errors="replace"))
    base = ["run", str(cp1252), "--ratings", str(paths["ratings"]), "--prompt", "query", "--metrics", "lexical",
            "--n-resamples", "99", "--n-permutations", "99", "--no-progress"]
    assert main([*base, "-o", str(tmp_path / "utf8")]) == 2  # not UTF-8: one message, exit 2
    assert "error:" in capsys.readouterr().err
    keep = exchanges.columns[1] if exchanges.columns[0] == "exchange_id" else exchanges.columns[0]
    out = tmp_path / "cp"
    assert main([*base, "-o", str(out), "--encoding", "cp1252", "--keep", keep, "--metrics-cols", "ttr,resp_words",
                 "--top", "0"]) == 0
    metrics = pl.read_csv(out / "metrics.csv", infer_schema_length=0)
    assert metrics.columns[1] == keep
    assert set(pl.read_csv(out / "correlations.csv")["metric"]) == {"ttr", "resp_words"}
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["score_options"]["encoding"] == "cp1252" and run_json["score_options"]["keep_columns"] == [keep]

    theta = pl.read_csv(out / "theta.csv", infer_schema_length=0).select("exchange_id", "theta")
    t1, t2 = tmp_path / "t1.csv", tmp_path / "t2.csv"
    theta.write_csv(t1)
    theta.select("exchange_id", (pl.col("theta").cast(pl.Float64) * -1).alias("theta_neg")).write_csv(t2)
    out2 = tmp_path / "two_theta"
    assert main([*base, "-o", str(out2), "--encoding", "cp1252", "--theta", str(t1), "--theta", str(t2)]) == 0
    corr = pl.read_csv(out2 / "correlations.csv")
    assert {"theta", "theta_neg"} <= set(corr["target"])
    rho = {t: corr.filter((pl.col("metric") == "ttr") & (pl.col("target") == t))["rho"][0] for t in ("theta", "theta_neg")}
    assert rho["theta"] == pytest.approx(-rho["theta_neg"])


def test_run_strict_exits_1_on_scoring_warnings(tmp_path):
    paths = example_paths()
    exchanges = pl.read_csv(paths["exchanges"], infer_schema_length=0)
    ex = tmp_path / "ex.csv"
    exchanges.with_columns(pl.lit("").alias("response")).write_csv(ex)  # empty replies: a scoring warning
    base = ["run", str(ex), "--ratings", str(paths["ratings"]), "--prompt", "query", "--metrics", "lexical",
            "--n-resamples", "99", "--no-estimate-theta", "--ci", "none", "--no-progress"]
    assert main([*base, "-o", str(tmp_path / "a")]) == 0
    warnings = json.loads((tmp_path / "a" / "run.json").read_text())["warnings"]
    assert warnings, "an all-empty response column should warn"
    assert main([*base, "-o", str(tmp_path / "b"), "--strict"]) == 1


@pytest.mark.parametrize("extra", [["--engine", "bogus"], ["dialogue", "--engine", "ray"]])
def test_run_refuses_a_bad_engine_before_writing(tmp_path, capsys, extra):
    out = tmp_path / "out"
    assert main(["run", "--example", *extra, "-o", str(out), "--metrics", "lexical"]) == 2
    assert "engine" in capsys.readouterr().err and not out.exists()
