"""Options declared once (``commands/options.py``): ``run`` takes every ``score``/``validate`` option that
does not name their own outputs, the declarations agree with the options dataclasses, and ``run`` honours
the options it gained (``--encoding``, ``--keep``, ``--strict``, repeated ``--theta``, ``--metrics-cols``)."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
import typer

from tutormetrics.cli import app, main
from tutormetrics.commands import options as opt
from tutormetrics.dialogue.file_scoring import DialogueOptions
from tutormetrics.engine.file_scoring import ScoreOptions
from tutormetrics.examples import example_paths
from tutormetrics.validity.study import ValidateOptions

#: Flags of score and validate that name their own outputs; run writes a fixed set of files instead.
OWN_OUTPUTS = {"--output", "-o", "--output-format", "--manifest", "--no-manifest", "--conversations",
               "--embeddings", "--embedding-layers"}  # score's embeddings side file and what it keeps
#: Fields only the Python API sets (run's figure formats).
API_ONLY = {ValidateOptions: {"figure_formats", "recode"}, ScoreOptions: set(), DialogueOptions: {"response_required"}}


def _flags(name: str) -> set[str]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {f for p in command.params if p.param_type_name == "option" for f in (*p.opts, *p.secondary_opts)}


def test_run_takes_every_score_and_validate_option_but_output_names():
    run = _flags("run")
    for name in ("score", "validate"):
        missing = _flags(name) - OWN_OUTPUTS - run
        assert not missing, f"run lacks {name}'s {sorted(missing)}"
    # the ones the issue names, spelled out
    assert {"--encoding", "--format", "--keep", "--dedupe", "--max-seq-length", "--cache-mb", "--jobs", "--engine",
            "--resume", "--restart", "--strict", "--csv-formula-guard", "--no-csv-formula-guard", "--top",
            "--metrics-cols"} <= run


def test_old_spellings_and_defaults_survive():
    assert {"--n-boot"} <= _flags("agree") and {"--min-pairs"} <= _flags("compare")
    params = {p.name: p for p in typer.main.get_command(app).commands["validate"].params}  # type: ignore[attr-defined]
    assert params["estimate_theta"].default is False and params["n_resamples"].default == 9999
    run = {p.name: p for p in typer.main.get_command(app).commands["run"].params}  # type: ignore[attr-defined]
    assert run["estimate_theta"].default is True and run["jobs"].opts == ["--jobs", "-j"]


@pytest.mark.parametrize("cls", [ScoreOptions, ValidateOptions, DialogueOptions])
def test_declared_defaults_are_the_dataclass_defaults(cls):
    """Each declaration's default, parsed, is the field's default; every field is declared once."""
    target = {ScoreOptions: "score", ValidateOptions: "validate", DialogueOptions: "dialogue"}[cls]
    declared = [o for o in opt.ALL if o.target == target]
    fields = [o.field for o in declared]
    assert len(fields) == len(set(fields)), "a field filled by two options"
    assert set(fields) | API_ONLY[cls] == {f.name for f in dataclasses.fields(cls)}
    assert opt.from_kwargs(cls, {o.name: o.default for o in declared}) == cls()


def test_reference_lists_every_declaration_by_group():
    ref = opt.reference()
    assert list(ref) == ["input", "scoring", "encoder", "engine", "output", "dialogue", "targets", "validity", "ratings"]
    names = [o["name"] for group in ref.values() for o in group]
    assert sorted(names) == sorted(o.name for o in opt.ALL)
    jobs = next(o for o in ref["engine"] if o["name"] == "jobs")
    assert jobs["field"] == "n_jobs" and jobs["commands"] == ["score", "run"] and jobs["default"] == 0
    rater = next(o for o in ref["ratings"] if o["name"] == "rater_col")
    assert rater["commands"] == ["validate", "run", "theta", "agree", "summarize", "predict", "ppi"]


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
