"""The θ study of ``tutormetrics theta``: prepared ratings → the MFRM fit → θ, facets, effects, NUTS diagnostics
and the PSIS-LOO comparison of nested models, with the notes and warnings for people
(``docs/commands/theta.md``, ``docs/design/effects.md#explanatory-mfrm``).

The wording of the stderr lines lives in :mod:`tutormetrics.psychometrics.mfrm.study_lines`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log, NoProgress, Progress, quiet
from tutormetrics.psychometrics.exchangeable import theta_ratings
from tutormetrics.psychometrics.mfrm import fit_theta
from tutormetrics.psychometrics.mfrm.study_lines import effects_with_line, fit_lines, loo_line, scale_lines
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.theta_options import ThetaOptions
from tutormetrics.stats.group_columns import group_columns, with_group_label

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.psychometrics.measurement.measurement_report import MeasurementOptions, MeasurementReport
    from tutormetrics.psychometrics.mfrm.bayes import BayesMFRMResult
    from tutormetrics.psychometrics.mfrm.mml import MFRMResult

__all__ = ["ThetaOptions", "ThetaStudy", "theta_study"]


@dataclass
class ThetaStudy:
    """What the θ study found: the fit (``theta``, ``facets`` and, with NUTS, ``diagnostics`` come from it), the
    effects table and the LOO comparison when asked for, the warnings (``--strict`` counts them) and the closing
    stderr lines (``report``: LOO, the fit summary, dropped criteria, convergence)."""

    fit: MFRMResult | BayesMFRMResult
    exchangeable: bool
    effects: pl.DataFrame | None = None
    loo: pl.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    measures: MeasurementReport | None = None

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """The measurement tables asked for (``fit``, ``separation``, ``bias``, ``dif``, ``pv``;
        ``docs/measurement.md#commands``); empty without any."""
        return self.measures.tables if self.measures is not None else {}

    @property
    def theta(self) -> pl.DataFrame:
        """One row per exchange: EAP θ, its posterior SD and 94% interval."""
        return self.fit.theta_table()

    @property
    def facets(self) -> pl.DataFrame:
        """Criterion difficulties, rater severities and the explanatory terms, with SEs and intervals."""
        return self.fit.facets_table()

    @property
    def diagnostics(self) -> pl.DataFrame | None:
        """NUTS: the per-parameter sampler diagnostics (R-hat, ESS); ``None`` for MML."""
        return self.fit.diagnostics() if hasattr(self.fit, "diagnostic_summary") else None


def _covariate_names(covariates: pl.DataFrame | None, options: ThetaOptions, id_col: str) -> list[str]:
    """The covariates a ``--spec`` term may name: ``--covariate-col``, else every numeric column."""
    if options.covariate_col:
        return list(options.covariate_col)
    if covariates is None:
        return []
    return [c for c, dt in covariates.schema.items() if c != id_col and dt.is_numeric()]


@frame_inputs("covariates", "groups", "topics")
def theta_study(
    ratings: Ratings,
    options: ThetaOptions | None = None,
    *,
    covariates: pl.DataFrame | None = None,
    groups: pl.DataFrame | None = None,
    topics: pl.DataFrame | None = None,
    effects: bool = False,
    compare_models: bool = False,
    measurement: MeasurementOptions | None = None,
    log: Log = quiet,
    progress: Progress | None = None,
) -> ThetaStudy:
    """Fit θ on ``ratings`` (from :func:`~tutormetrics.psychometrics.ratings_input.read_ratings`) under ``options``
    (``docs/statistics.md#many-facet-rasch-model-theta``); bad option combinations are exit 2 before the fit.

    Args:
        ratings: The cleaned long ratings (``--raters exchangeable``: no rater facet, s ≡ 0).
        options: Model, method, sampler and explanatory settings (default: :class:`ThetaOptions`).
        covariates: Exchange-level covariates keyed by the ratings' id column.
        groups: Exchange-level groups (column ``options.group_col``).
        topics: Exchange-level 0/1 topic columns (multi-hot).
        effects: Also compute Δp per covariate/topic/group and criterion (``docs/design/effects.md#explanatory-mfrm``).
        compare_models: NUTS: also compare the nested models by PSIS-LOO.
        measurement: Also the measurement tables these options ask for, with their stderr lines and the scale
            warnings (``docs/measurement.md#commands``); ``None``: none.
        log: Where notes, warnings and the scale and effect lines go (the closing lines are in ``report``).
        progress: Where the step under way is named (the fit, Δp, the model comparison, the measurement tables;
            :func:`~tutormetrics.progress.step_progress`); ``None``: nowhere.

    Example:
        >>> import polars as pl
        >>> long = pl.DataFrame({"exchange_id": [e for e in "abcdef" for _ in range(4)],
        ...                      "rater": ["r1", "r2"] * 12, "criterion": (["c1"] * 2 + ["c2"] * 2) * 6,
        ...                      "score": [1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1]})
        >>> study = theta_study(Ratings.clean(long))
        >>> study.fit.model, study.theta.height, study.facets["facet"].unique(maintain_order=True).to_list()
        ('binary', 6, ['criterion', 'rater', 'baseline_probability'])
    """
    options = options or ThetaOptions()
    given = {"covariates": covariates is not None, "groups": groups is not None, "topics": topics is not None}
    specs = options.check(**given, effects=effects, compare_models=compare_models)
    fitted, notes, warned = theta_ratings(ratings)  # one rater label with --raters exchangeable (s ≡ 0)
    for line in [*notes, *warned]:
        log(line)
    if specs:  # unknown terms fail before any sampling
        from tutormetrics.psychometrics.mfrm.bayes import model_specs

        names = _covariate_names(covariates, options, fitted.id_col)
        model_specs(specs, covariate_names=names, has_topics=topics is not None, has_groups=groups is not None)
    group_col, group_cols = options.group_col, group_columns(options.group_col)
    if groups is not None and len(group_cols) > 1:  # a group is the combination (docs/guide/paper.md#group-col)
        groups, group_col = with_group_label(groups, group_cols, source="groups")
    terms: dict[str, Any] = {
        "covariates": covariates, "covariate_cols": options.covariate_col, "covariate_scale": options.covariate_scale,
        "groups": groups, "group_col": group_col, "topics": topics, "topic_cols": options.topic_col,
        "model": options.fit_model, **options.nuts_options(), **fitted.columns(),
    }  # fmt: skip
    steps = progress if progress is not None else NoProgress()
    steps.detail(f"MFRM fit ({options.fit_text()}, {fitted.frame.height:,} ratings)")
    result = fit_theta(fitted, method=options.method, **terms)  # type: ignore[arg-type]
    for line in scale_lines(result):
        log(line)
    study = ThetaStudy(result, exchangeable=ratings.exchangeable, warnings=warned)
    if effects:
        steps.detail(f"effects (Δp, {options.effect_draws:,} draws)" if options.method == "mml" else "effects (Δp)")
        study.effects = effects_with_line(result, options, log)
    if compare_models:
        from tutormetrics.psychometrics.mfrm.bayes import compare_models as loo_comparison

        steps.detail(f"model comparison (PSIS-LOO, one {options.fit_text()} fit per model)")

        study.loo = loo_comparison(fitted, specs=specs, **terms)
        study.report.append(loo_line(study.loo))
    lines, warning = fit_lines(result, exchangeable=study.exchangeable, method=options.method)
    study.report += lines
    if warning:
        study.warnings.append(warning)
    if measurement is not None:
        steps.detail("measurement tables")
        _measure(study, fitted, terms, measurement)
    return study


def _measure(study: ThetaStudy, fitted: Ratings, terms: dict[str, Any], options: MeasurementOptions) -> None:
    """The measurement tables of the fit (``docs/measurement.md#commands``): their stderr lines, the scale warnings
    (counted by ``--strict``) and notes join ``report``."""
    from tutormetrics.psychometrics.measurement.measurement_report import measurement_report, prepare_like_fit

    study.measures = rep = measurement_report(study.fit, prepare_like_fit(fitted, study.fit, **terms), options)
    study.warnings += rep.warnings
    study.report += [*rep.warnings, *rep.lines, *rep.notes]
