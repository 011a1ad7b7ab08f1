"""CLI tests of the measurement tables (docs/measurement.md#commands): `theta --fit/--separation/--bias/--dif/--pv/
--wright-map`, `validate --theta-pv` and `run`'s fit/separation/DIF tables and theta_pv rows. Each file equals the
library's table on the same fit; the errors are exit 2 with one `error:` line; without the new options the outputs
are those of main (byte for byte, when a main checkout is at hand)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.examples import example_paths
from tutormetrics.io.tables import write_table
from tutormetrics.psychometrics.measurement import MeasurementOptions, measurement_report, prepare_like_fit
from tutormetrics.psychometrics.mfrm import fit_mfrm

#: main's CLI (its editable install imports main's sources); the comparisons with main skip without it.
MAIN_CLI = Path(os.environ.get("TUTORMETRICS_MAIN_CLI", "/work/main/.venv/bin/tutormetrics"))
needs_main = pytest.mark.skipif(not MAIN_CLI.is_file(), reason="no main checkout to compare with")


def _main_cli(*args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(MAIN_CLI), *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bundled ratings, a group table over its exchanges and a metric (each exchange's position in THETA order)."""
    tmp = tmp_path_factory.mktemp("measure")
    ratings = tmp / "ratings.csv"
    shutil.copy(example_paths()["ratings"], ratings)
    ids = pl.read_csv(ratings)["exchange_id"].unique().sort()
    pl.DataFrame({"exchange_id": ids, "big": [int("gpt" in i or "claude" in i) for i in ids],
                  "one": ["x"] * len(ids)}).write_csv(tmp / "groups.csv")  # fmt: skip
    pl.DataFrame({"exchange_id": ids, "pos": np.arange(len(ids), dtype=float)}).write_csv(tmp / "metrics.csv")
    return {"dir": tmp, "ratings": ratings, "groups": tmp / "groups.csv", "metrics": tmp / "metrics.csv"}


@pytest.fixture(scope="module")
def theta_run(files: dict[str, Path]) -> dict[str, Path]:
    """`theta` with every measurement table, DIF by `big` (small groups: --dif-min 5), 5 PVs."""
    d = files["dir"]
    out = {name: d / f"{name}.csv" for name in ("theta", "facets", "fit", "separation", "bias", "dif", "pv")}
    code = main(["theta", str(files["ratings"]), "-o", str(out["theta"]), "--facets", str(out["facets"]),
                 "--fit", str(out["fit"]), "--separation", str(out["separation"]), "--bias", str(out["bias"]),
                 "--dif", str(out["dif"]), "--dif-groups", str(files["groups"]), "--dif-col", "big", "--dif-min", "5",
                 "--pv", str(out["pv"]), "--pv-draws", "5", "--wright-map", str(d / "wright.png")])  # fmt: skip
    assert code == 0
    return out


def test_theta_tables_equal_the_library(files: dict[str, Path], theta_run: dict[str, Path], tmp_path: Path) -> None:
    ratings = pl.read_csv(files["ratings"])
    result = fit_mfrm(ratings)
    options = MeasurementOptions(fit=True, separation=True, bias=True, dif=True, dif_groups=pl.read_csv(files["groups"]),
                                 dif_col="big", dif_min=5, pv=True, pv_draws=5)  # fmt: skip
    report = measurement_report(result, prepare_like_fit(ratings, result), options)
    for name in ("fit", "separation", "bias", "dif", "pv"):
        write_table(report.tables[name], tmp_path / f"{name}.csv")
        assert (tmp_path / f"{name}.csv").read_bytes() == theta_run[name].read_bytes(), name
    assert (files["dir"] / "wright.png").stat().st_size > 0


def test_theta_numbers_of_the_docs(theta_run: dict[str, Path]) -> None:
    """docs/measurement.md: the bundled example's separation and the first PVs of cpp01::gpt-4o (seed 0)."""
    sep = pl.read_csv(theta_run["separation"])
    crit = sep.filter(pl.col("facet") == "criterion").row(0, named=True)
    assert crit["separation"] == pytest.approx(2.841326, abs=1e-6) and crit["reliability"] == pytest.approx(0.8897845, abs=1e-6)
    pv = pl.read_csv(theta_run["pv"]).filter(pl.col("exchange_id") == "cpp01::gpt-4o")
    assert [pv[f"pv_{m}"][0] for m in range(1, 6)] == pytest.approx([1.367486, 1.23936, 1.634888, 0.8128708, 0.8830931], abs=1e-6)
    fit = pl.read_csv(theta_run["fit"])
    assert fit.filter(pl.col("level") == "guidance_accuracy")["flag"][0] == "overfit"


def test_theta_stderr_lines(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["theta", str(files["ratings"]), "-o", str(tmp_path / "t.csv"), "--fit", str(tmp_path / "fit.csv"),
                 "--separation", str(tmp_path / "sep.csv")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0
    assert "fit: 5 criteria, 2 raters, 40 exchanges (11 extreme, not fitted)" in err
    assert "separation: criterion G 2.84 R 0.890" in err


def test_scale_warning_names_the_criterion(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A criterion reversed (1 = worse) runs against the others: warned with the tables, naming it and --recode."""
    ratings = pl.read_csv(files["ratings"]).with_columns(
        pl.when(pl.col("criterion") == "next_step_correctness").then(1 - pl.col("score")).otherwise(pl.col("score")).alias("score")
    )
    ratings.write_csv(tmp_path / "r.csv")
    code = main(["theta", str(tmp_path / "r.csv"), "-o", str(tmp_path / "t.csv"), "--fit", str(tmp_path / "fit.csv"), "--strict"])
    err = capsys.readouterr().err
    assert code == 1  # --strict counts the scale warning
    line = next(x for x in err.splitlines() if "runs against the others" in x)
    assert "'next_step_correctness'" in line and "--recode" in line
    main(["theta", str(tmp_path / "r.csv"), "-o", str(tmp_path / "t2.csv")])
    assert "runs against the others" not in capsys.readouterr().err  # printed with the tables only


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dif", "D.csv"], "--dif needs --dif-groups and --dif-col"),
        (["--pv", "P.csv", "--pv-draws", "1"], "--pv-draws 1"),
        (["--fit", "F.csv", "--fit-range", "1.2,2"], "0 < lo < 1 < hi"),
        (["--fit", "F.csv", "--fit-range", "abc"], "is not lo,hi"),
        (["--wright-map", "W.jpg"], "--wright-map"),
        (["--bias", "B.csv", "--bias-facets", "rater:foo"], "is not a pair of facets"),
        (["--bias", "B.csv", "--bias-facets", "criterion:group"], "needs --dif-groups"),
        (["--fit", "same.csv", "--separation", "same.csv"], "two outputs are the same file"),
        (["--dif", "D.csv", "--dif-groups", "{groups}", "--dif-col", "one"], "has one level"),
        (["--dif", "D.csv", "--dif-groups", "{groups}", "--dif-col", "big", "--dif-reference", "7"], "7"),
        (["--adjust", "foo", "--fit", "F.csv"], "--adjust"),
    ],
)
def test_theta_errors(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    args = [a.format(groups=files["groups"]) if "{" in a else (str(tmp_path / a) if a.endswith((".csv", ".jpg")) else a) for a in extra]
    code = main(["theta", str(files["ratings"]), "-o", str(tmp_path / "t.csv"), *args])
    err = capsys.readouterr().err
    assert code == 2
    errors = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err


def test_one_rater_bias_error(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pl.read_csv(files["ratings"]).filter(pl.col("rater") == "r1").write_csv(tmp_path / "r1.csv")
    code = main(["theta", str(tmp_path / "r1.csv"), "-o", str(tmp_path / "t.csv"), "--bias", str(tmp_path / "b.csv"),
                 "--bias-facets", "rater:criterion"])  # fmt: skip
    assert code == 2 and "needs two" in capsys.readouterr().err


def test_validate_theta_pv(files: dict[str, Path], theta_run: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/measurement.md#theta-pv, bundled example: ρ_pv −0.1401478 [−0.4808749, 0.2373547] (metric = position)."""
    out = tmp_path / "c.csv"
    code = main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--theta", str(theta_run["theta"]),
                 "--facets", str(theta_run["facets"]), "--theta-pv", "20", "--ci", "fisher", "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0 and "theta_pv: 1 metrics, 20 PVs conditioned on each metric" in err
    table = pl.read_csv(out)
    targets = table["target"].to_list()
    assert targets[targets.index("theta") + 1] == "theta_pv"
    row = table.filter(pl.col("target") == "theta_pv").row(0, named=True)
    assert (row["rho"], row["ci_low"], row["ci_high"]) == pytest.approx((-0.1401478, -0.4808749, 0.2373547), abs=1e-6)
    assert row["pv_df"] == pytest.approx(26.0058, abs=1e-4) and row["p_method"] == "rubin"
    assert "theta_pv" in pl.read_csv(tmp_path / "c_rho_matrix.csv").columns
    # the library on the same fit: the same rows
    from tutormetrics.psychometrics.measurement import estimates_from_result, observations
    from tutormetrics.validity.plausible_rho import theta_pv_table

    ratings = pl.read_csv(files["ratings"])
    result = fit_mfrm(ratings)
    prep = prepare_like_fit(ratings, result)
    est = estimates_from_result(result, prep)
    lib = theta_pv_table(pl.read_csv(files["metrics"]), ["pos"], est, observations(est, prep), prep, draws=20, seed=0)
    got = table.filter(pl.col("target") == "theta_pv").select(lib.columns)
    for col in lib.columns:
        a, b = lib[col].to_list(), got[col].to_list()
        assert a == pytest.approx(b, abs=1e-12) if lib[col].dtype.is_numeric() else [x or "" for x in a] == [x or "" for x in b], col
    # --estimate-theta gives the same rows
    main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "--estimate-theta", "--theta-pv", "20",
          "--ci", "fisher", "-o", str(tmp_path / "e.csv")])  # fmt: skip
    est_rows = pl.read_csv(tmp_path / "e.csv").filter(pl.col("target") == "theta_pv")
    assert est_rows["rho"][0] == pytest.approx(row["rho"], abs=1e-9)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--theta", "{theta}", "--theta-pv", "20"], "needs --facets"),
        (["--theta", "{theta}", "--facets", "{facets}", "--theta-pv", "1"], "at least 2"),
        (["--theta-pv", "20"], "needs a θ"),
        (["--theta", "{theta}", "--facets", "{facets}", "--theta-pv", "5", "--pv-condition", "foo"], "--pv-condition"),
        (["--theta", "{bad}", "--facets", "{facets}", "--theta-pv", "5"], "come from different fits"),
    ],
)
def test_validate_theta_pv_errors(
    files: dict[str, Path], theta_run: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    extra: list[str], message: str,
) -> None:  # fmt: skip
    bad = tmp_path / "bad.csv"
    pl.read_csv(theta_run["theta"]).with_columns(pl.col("theta") + 0.01).write_csv(bad)
    names = {"theta": theta_run["theta"], "facets": theta_run["facets"], "bad": bad}
    args = [a.format(**names) for a in extra]
    code = main(["validate", str(files["metrics"]), "--ratings", str(files["ratings"]), "-o", str(tmp_path / "c.csv"), *args])
    err = capsys.readouterr().err
    assert code == 2
    errors = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], err


@needs_main
def test_theta_and_validate_without_the_options_are_mains(files: dict[str, Path], tmp_path: Path) -> None:
    ratings, metrics = str(files["ratings"]), str(files["metrics"])
    for where, run in (("main", lambda *a: _main_cli(*a, cwd=tmp_path)), ("here", lambda *a: main(list(a)))):
        run("theta", ratings, "-o", str(tmp_path / f"{where}_t.csv"), "--facets", str(tmp_path / f"{where}_f.csv"))
        run("validate", metrics, "--ratings", ratings, "--theta", str(tmp_path / f"{where}_t.csv"), "-o",
            str(tmp_path / f"{where}_c.csv"), "--n-resamples", "200")  # fmt: skip
    for name in ("t.csv", "f.csv", "c.csv", "c_rho_matrix.csv"):
        assert (tmp_path / f"main_{name}").read_bytes() == (tmp_path / f"here_{name}").read_bytes(), name


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    assert main(["run", "--example", "-o", str(out), "--group-col", "tutor", "--theta-pv", "5"]) == 0
    return out


def test_run_measurement_files(example_run: Path, tmp_path: Path) -> None:
    record = json.loads((example_run / "run.json").read_text())
    assert {"fit", "separation", "dif"} <= set(record["files"])
    assert {"fit.csv", "separation.csv", "dif.csv"} <= set(record["run_files"])
    assert record["theta_pv"] == {"draws": 5, "seed": 0, "condition": "metric", "n_metrics": 42}
    corr = pl.read_csv(example_run / "correlations.csv")
    assert corr.filter(pl.col("target") == "theta_pv").height == 42
    # the library on the run's own fit (theta.csv / facets.csv of the same ratings): the same tables
    ratings = pl.read_csv(example_paths()["ratings"])
    result = fit_mfrm(ratings)
    groups = pl.read_csv(example_run / "metrics.csv").select("exchange_id", "tutor").unique(maintain_order=True)
    report = measurement_report(result, prepare_like_fit(ratings, result),
                                MeasurementOptions(fit=True, separation=True, dif=True, dif_groups=groups, dif_col="tutor"))  # fmt: skip
    for name in ("fit", "separation", "dif"):
        write_table(report.tables[name], tmp_path / f"{name}.csv")
        assert (tmp_path / f"{name}.csv").read_bytes() == (example_run / f"{name}.csv").read_bytes(), name
    html = (example_run / "report.html").read_text()
    assert "docs/measurement.md#fit" in html and "docs/measurement.md#dif" in html


def test_run_theta_pv_with_given_theta_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    theta = tmp_path / "t.csv"
    pl.DataFrame({"exchange_id": ["a"], "theta": [0.0]}).write_csv(theta)
    code = main(["run", "--example", "-o", str(tmp_path / "o"), "--theta", str(theta), "--theta-pv", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "run --theta-pv needs θ estimated here" in err


@needs_main
def test_run_without_the_options_writes_mains_files(tmp_path: Path) -> None:
    """Every file main's `run --example` writes is the same here (the PDF's timestamp, the manifest's input path,
    run.json and the report aside), and the new ones are fit.csv and separation.csv only."""
    _main_cli("run", "--example", "-o", str(tmp_path / "main"), cwd=tmp_path)
    assert main(["run", "--example", "-o", str(tmp_path / "here")]) == 0
    ours = {p.name for p in (tmp_path / "here").iterdir()}
    theirs = {p.name for p in (tmp_path / "main").iterdir()}
    assert ours - theirs == {"fit.csv", "separation.csv"} and theirs <= ours
    for name in sorted(theirs - {"heatmap.pdf", "run.json", "report.html", "metrics.csv.manifest.json"}):
        assert (tmp_path / "main" / name).read_bytes() == (tmp_path / "here" / name).read_bytes(), name
    a, b = (json.loads((tmp_path / w / "metrics.csv.manifest.json").read_text()) for w in ("main", "here"))
    assert {k: v for k, v in a.items() if k != "input"} == {k: v for k, v in b.items() if k != "input"}
    ra, rb = (json.loads((tmp_path / w / "run.json").read_text()) for w in ("main", "here"))
    assert "theta_pv" not in rb and ra["theta"] == rb["theta"] and ra["warnings"] == rb["warnings"]
