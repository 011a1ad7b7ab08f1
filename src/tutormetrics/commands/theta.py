"""``tutormetrics theta``: θ per exchange from long ratings (``docs/commands/theta.md``).

Parse (:class:`ThetaArgs`) → :func:`~tutormetrics.psychometrics.ratings_input.read_ratings` →
:func:`~tutormetrics.psychometrics.mfrm.study.theta_study` → write the tables and the plot → ``--strict``.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl
import typer

from tutormetrics.commands.flag_groups import Gate
from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import check_table_path, write_data, write_result
from tutormetrics.commands.terminal import log, strict_gate
from tutormetrics.errors import ConfigError
from tutormetrics.flags import argument, dpi_flag, flag
from tutormetrics.ids import IdKey, TableIds, read_keyed
from tutormetrics.io.paths import check_outputs
from tutormetrics.progress import ProgressOptions, step_progress
from tutormetrics.psychometrics.ratings_input import RatingsInput, read_ratings
from tutormetrics.psychometrics.theta_options import MeasurementFlags, ThetaOptions

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.psychometrics.mfrm.study import ThetaStudy

__all__ = ["ThetaArgs", "register", "theta"]

_PLOT_SUFFIXES = (".png", ".pdf", ".svg")


@dataclass(kw_only=True)
class ThetaArgs(Gate):
    """The options of ``theta``: its files, the ratings' ids and columns, the fit's options and ``--strict``."""

    PANEL: ClassVar[str] = "Files"

    ratings: Path = argument(help="Long ratings table (exchange_id, rater, criterion, score).")
    output: Path = flag("--output", "-o", help="Theta table (csv/parquet/jsonl).")
    facets: Path | None = flag("--facets", default=None, help="Also write the facet estimates here (.md/.tex: paper table).")
    covariates: Path | None = flag("--covariates", default=None, help="Exchange-level covariate table.")
    groups: Path | None = flag("--groups", default=None, help="Exchange-level group table.")
    topics: Path | None = flag(
        "--topics", default=None, help="Exchange-level 0/1 topic table (multi-hot; effects sum to zero per criterion)."
    )
    effects: Path | None = flag(
        "--effects", default=None, help="Write Δp per covariate/topic/group and criterion with 94% HDIs here."
    )
    facets_plot: Path | None = flag(
        "--facets-plot", default=None, help="Draw θ and the facets on one logit axis: .png, .pdf or .svg."
    )
    effects_plot: Path | None = flag(
        "--effects-plot", default=None,
        help="Draw ΔP per term with its 94% HDI, one panel per criterion (needs what --effects needs): .png, .pdf or .svg.",
    )
    dpi: int = dpi_flag()
    compare_models: Path | None = flag(
        "--compare-models", default=None,
        help="nuts: write the PSIS-LOO comparison of the nested models (needs --covariates, --topics and/or --groups).",
    )
    fit_out: Path | None = flag("--fit", default=None, panel="Measurement",
                                help="Write infit/outfit mean-squares and ZSTD per criterion, rater, group and exchange.")
    separation_out: Path | None = flag("--separation", default=None, panel="Measurement",
                                       help="Write separation, strata and reliability per facet.")
    bias_out: Path | None = flag("--bias", default=None, panel="Measurement",
                                 help="Write the bias/interaction cells of --bias-facets.")
    dif_out: Path | None = flag("--dif", default=None, panel="Measurement",
                                help="Write DIF of the criteria across --dif-col (Mantel-Haenszel / Mantel, Rasch contrast).")
    dif_groups: Path | None = flag("--dif-groups", default=None, panel="Measurement",
                                   help="Exchange-level group table for --dif (one row per exchange).")
    pv_out: Path | None = flag("--pv", default=None, panel="Measurement",
                               help="Write --pv-draws unconditioned plausible values of theta per exchange.")
    wright_map: Path | None = flag("--wright-map", default=None, panel="Measurement",
                                   help="Draw the Wright map (exchanges, raters, criteria on one logit axis): .png, .pdf or .svg.")
    ids: TableIds = field(default_factory=TableIds)
    reading: RatingsInput = field(default_factory=RatingsInput)
    fit: ThetaOptions = field(default_factory=ThetaOptions)
    measure: MeasurementFlags = field(default_factory=MeasurementFlags)
    shown: ProgressOptions = field(default_factory=ProgressOptions)

    @property
    def tables(self) -> dict[str, Path]:
        """The measurement tables asked for and their files (``docs/measurement.md#commands``)."""
        named = {"fit": self.fit_out, "separation": self.separation_out, "bias": self.bias_out, "dif": self.dif_out,
                 "pv": self.pv_out}  # fmt: skip
        return {name: path for name, path in named.items() if path is not None}

    @property
    def diagnostics(self) -> Path | None:
        """NUTS: ``<output stem>_diagnostics.csv`` next to the output."""
        return self.output.with_name(f"{self.output.stem}_diagnostics.csv") if self.fit.method == "nuts" else None


def _read(path: Path | None, key: IdKey) -> pl.DataFrame | None:
    """An exchange-level side table (covariates, groups, topics) keyed like the ratings."""
    return read_keyed(path, key, id_columns=[key.column], drop_parts=True) if path else None


def theta(args: ThetaArgs) -> None:
    """Estimate theta (EAP) per exchange with a many-facet Rasch model (MML, Gauss-Hermite; or Bayesian NUTS).

    With ``--method nuts`` the sampler diagnostics are written to ``<output stem>_diagnostics.csv``
    next to the output and summarised on stderr.
    """
    a, key = args, args.ids.key
    check_outputs([a.ratings, a.covariates, a.groups, a.topics, a.dif_groups],
                  [a.output, a.facets, a.diagnostics, a.compare_models, a.effects, a.facets_plot, a.effects_plot,
                   *a.tables.values(), a.wright_map])  # fmt: skip
    for plot, option in ((a.facets_plot, "--facets-plot"), (a.effects_plot, "--effects-plot"), (a.wright_map, "--wright-map")):
        if plot is not None and plot.suffix.lower() not in _PLOT_SUFFIXES:
            raise ConfigError(f"{option} {plot}: cannot tell the figure format", hint="name the plot .png, .pdf or .svg")
    check_table_path(a.output, data=True, what="theta -o")
    asked = {"effects": a.effects is not None or a.effects_plot is not None, "compare_models": a.compare_models is not None}
    a.fit.check(covariates=a.covariates is not None, groups=a.groups is not None, topics=a.topics is not None, **asked)
    a.measure.check(dif="dif" in a.tables, groups=a.dif_groups is not None, pv="pv" in a.tables, model_group_col=a.fit.group_col)
    ratings = read_ratings(a.ratings, a.reading, key, log=log, require_long=True)
    from tutormetrics.psychometrics.mfrm.study import theta_study

    measuring = bool(a.tables) or a.wright_map is not None
    measurement = a.measure.options(
        set(a.tables) | ({"fit"} if a.wright_map else set()), seed=a.fit.seed, dif_groups=_read(a.dif_groups, key),
        model_group_col=a.fit.group_col, exchangeable=ratings.exchangeable, pv_path=str(a.pv_out),
    ) if measuring else None  # fmt: skip
    with step_progress("theta", progress=a.shown.progress, every=a.shown.progress_every) as steps:
        study = theta_study(ratings, a.fit, covariates=_read(a.covariates, key), groups=_read(a.groups, key),
                            topics=_read(a.topics, key), measurement=measurement, log=log, progress=steps, **asked)  # fmt: skip
    _write_tables(a, study)
    if a.diagnostics is not None and study.diagnostics is not None:
        write_data(study.diagnostics, a.diagnostics, "the diagnostics")
        log(f"{study.fit.diagnostic_summary}; per-parameter diagnostics: {a.diagnostics}")  # type: ignore[union-attr]
    _write_measures(a, study)
    for line in study.report:
        log(line)
    strict_gate(args.strict, [*ratings.warnings, *study.warnings])  # the ratings', θ's and docs/guide/datasets.md's slot warnings


def _write_tables(a: ThetaArgs, study: Any) -> None:
    """θ (a data table), the paper tables (``--facets``, ``--effects``, ``--compare-models``) and the figures."""
    write_data(study.theta, a.output, "theta -o")
    context = {"method": a.fit.method, "n_draws": a.fit.effect_draws, "seed": a.fit.seed}
    if a.facets:
        write_result(study.facets, a.facets, "facets", context=context)
    if a.effects and study.effects is not None:
        write_result(study.effects, a.effects, "effects", context=context)
    if a.compare_models and study.loo is not None:
        write_result(study.loo, a.compare_models, "compare_models")
    if a.facets_plot:
        from tutormetrics.report.facets_plot import save_facets_figure

        save_facets_figure(study.fit, a.facets_plot, dpi=a.dpi)
        log(f"facets plot: {a.facets_plot}")
    if a.effects_plot and study.effects is not None:
        from tutormetrics.report.delta_p_plot import save_delta_p_figure

        save_delta_p_figure(study.effects, a.effects_plot, seed=a.fit.seed, dpi=a.dpi)
        log(f"effects plot: {a.effects_plot}")


def _write_measures(args: ThetaArgs, study: ThetaStudy) -> None:
    """The measurement tables asked for, and the Wright map (``docs/measurement.md#wright-map``)."""
    for name, path in args.tables.items():
        write_result(study.tables[name], path)
    if args.wright_map is not None and study.measures is not None:
        from tutormetrics.report.wright_map import save_wright_map

        save_wright_map(study.measures.estimates, args.wright_map, study.tables.get("fit"))
        log(f"wright map: {args.wright_map}")


def register(app: typer.Typer) -> None:
    """Add ``theta`` to ``app``."""
    command(app, "theta", theta, outputs=(
        "output", "facets", "effects", "facets_plot", "effects_plot", "compare_models", "fit_out", "separation_out",
        "bias_out", "dif_out", "pv_out", "wright_map",
    ))  # fmt: skip
