"""The θ study from Python (docs/commands/theta.md#from-python): the command's defaults, the option checks
(exit 2 before any fit) and the same tables and lines as ``tutormetrics theta``."""

from __future__ import annotations

import polars as pl
import pytest

from tutormetrics.commands.registration import build_args, command_options
from tutormetrics.commands.theta import ThetaArgs
from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.mfrm.mml import simulate_mfrm
from tutormetrics.psychometrics.mfrm.study import theta_study
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.theta_options import ThetaOptions


def test_python_defaults_are_the_command_line_defaults() -> None:
    assert build_args(ThetaOptions, {}) == ThetaOptions()
    names = {o.name for o in command_options(ThetaArgs)}
    assert {"model", "method", "draws", "tune", "chains", "sampler", "seed", "covariate_col", "group_col",
            "covariate_scale", "topic_col", "effect_draws", "spec", "recode", "raters", "strict"} <= names  # fmt: skip


@pytest.mark.parametrize(
    ("options", "given", "message"),
    [
        (ThetaOptions(model="rasch"), {}, "unknown --model"),
        (ThetaOptions(method="vi"), {}, "unknown --method"),
        (ThetaOptions(sampler="stan"), {}, "unknown --sampler"),
        (ThetaOptions(covariate_scale="log"), {}, "--covariate-scale"),
        (ThetaOptions(), {"effects": True}, "nothing to contrast"),
        (ThetaOptions(effect_draws=50), {}, "too few"),
        (ThetaOptions(), {"compare_models": True, "covariates": True}, "--compare-models needs --method nuts"),
        (ThetaOptions(spec=["M0=", "M1=x"]), {"covariates": True}, "--spec needs --compare-models"),
        (ThetaOptions(covariate_col=["x"]), {}, "--covariate-col needs --covariates"),
        (ThetaOptions(group_col="g"), {}, "--group-col needs --groups"),
    ],
)
def test_bad_options_raise_before_the_fit(options, given, message) -> None:
    with pytest.raises(ConfigError, match=message):
        options.check(**given)


def test_study_tables_lines_and_effects() -> None:
    long, truth = simulate_mfrm(n_items=30, seed=1, gamma=[0.4, 0.3, 0.5, 0.2, 0.6])
    cov = truth.select("exchange_id", v=pl.col("v"))
    lines: list[str] = []
    study = theta_study(Ratings.clean(long), ThetaOptions(effect_draws=200), covariates=cov, effects=True, log=lines.append)
    assert study.theta.height == 30 and study.diagnostics is None and study.loo is None
    assert lines[0].startswith("covariates: v z (mean") and lines[1].startswith("effects: ")
    assert study.effects is not None and set(study.effects["effect"]) == {"covariate"}
    assert study.report[0].startswith("MFRM binary: 300 observations, 30 exchanges") and study.warnings == []
