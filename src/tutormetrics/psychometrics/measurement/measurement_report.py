"""The measurement report of one θ fit as a library call (``docs/measurement.md#commands``): whichever of the fit,
separation, bias, DIF and PV tables the options ask for, their stderr lines, and the scale warnings.

A θ study wires each ``theta`` option to one :class:`MeasurementOptions` field and calls
:func:`measurement_report` after the fit; the Wright map (``report.wright_map``) draws from the estimates and the
fit table it returns.

Example:
    >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
    >>> ratings, _ = simulate_mfrm(n_items=80, seed=4)
    >>> result = fit_mfrm(ratings)
    >>> rep = measurement_report(result, prepare_like_fit(ratings, result), MeasurementOptions(fit=True, separation=True))
    >>> sorted(rep.tables), rep.lines[1].split(";")[0]
    (['fit', 'separation'], 'separation: criterion G ...')
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.bias import (
    BiasRule,
    DifGroups,
    bias_line,
    bias_table,
    check_bias_pairs,
    default_bias_pairs,
    parse_bias_pairs,
)
from tutormetrics.psychometrics.measurement.dif import DifRule, dif_groups, dif_line, dif_table
from tutormetrics.psychometrics.measurement.estimates import Estimates, estimates_from_result
from tutormetrics.psychometrics.measurement.fit import FitRange, fit_line, fit_table
from tutormetrics.psychometrics.measurement.observations import Observations, observations
from tutormetrics.psychometrics.measurement.plausible import (
    nuts_theta_draws,
    plausible_values,
    plausible_values_from_draws,
    pv_line,
)
from tutormetrics.psychometrics.measurement.scale_checks import scale_warnings
from tutormetrics.psychometrics.measurement.separation import separation_line, separation_table
from tutormetrics.psychometrics.mfrm.design import PreparedRatings, prepare_ratings
from tutormetrics.stats.multiplicity import ADJUST_METHODS

__all__ = ["MeasurementOptions", "MeasurementReport", "check_measurement_options", "measurement_report", "prepare_like_fit"]


@dataclass(frozen=True)
class MeasurementOptions:
    """One field per ``theta`` option of ``docs/measurement.md#commands``.

    ``dif_groups`` is the ``--dif-groups`` table (one row per exchange, the ratings' id column and ``dif_col``);
    ``model_group_col`` the fit's own ``--group-col`` (DIF on it is refused), ``exchangeable`` ``--raters
    exchangeable``; ``pv_path`` only names the file in the stderr line.
    """

    fit: bool = False
    fit_range: tuple[float, float] = (0.5, 1.5)
    fit_zstd: float = 2.0
    separation: bool = False
    bias: bool = False
    bias_facets: Sequence[str] | None = None
    bias_min: int = 10
    bias_logit: float = 0.5
    dif: bool = False
    dif_groups: pl.DataFrame | None = None
    dif_col: str | None = None
    dif_reference: str | None = None
    dif_min: int = 30
    adjust: str = "holm"
    pv: bool = False
    pv_draws: int = 20
    seed: int = 0
    pv_path: str = "PV.csv"
    model_group_col: str | None = None
    exchangeable: bool = False


@dataclass
class MeasurementReport:
    """``tables`` by name (``fit``, ``separation``, ``bias``, ``dif``, ``pv``), one stderr line per table, the
    scale warnings, and the estimates and ratings they came from (for the Wright map)."""

    tables: dict[str, pl.DataFrame]
    lines: list[str]
    warnings: list[str]
    estimates: Estimates
    observations: Observations
    groups: DifGroups | None = None
    notes: list[str] = field(default_factory=list)


def prepare_like_fit(ratings: Any, result: Any, **fit_options: Any) -> PreparedRatings:
    """The ratings prepared as the fit prepared them: ``prepare_ratings`` with the fit's own options and model
    (its notes were shown by the fit and are not repeated)."""
    options = {k: v for k, v in fit_options.items() if k not in ("n_nodes", "compute_se", "maxiter", "method", "draws",
                                                                  "tune", "chains", "sampler", "seed", "target_accept")}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return prepare_ratings(ratings, **{**options, "model": result.model})


def check_measurement_options(options: MeasurementOptions, est: Estimates) -> list[tuple[str, str]]:
    """The errors of ``docs/measurement.md#errors`` that do not need the group table; the parsed bias pairs."""
    if options.adjust not in ADJUST_METHODS:
        raise ConfigError(f"--adjust {options.adjust!r}", hint="use holm, bh, by or none")
    FitRange(options.fit_range[0], options.fit_range[1], options.fit_zstd)
    if options.pv and options.pv_draws < 2:
        raise ConfigError(f"--pv-draws {options.pv_draws}: needs at least 2 draws", hint="e.g. --pv-draws 20")
    has_groups = options.dif_groups is not None and options.dif_col is not None
    if options.dif and not has_groups:
        raise ConfigError("--dif needs --dif-groups and --dif-col", hint="name the exchange-level group table and its column")
    if has_groups and options.dif_col == options.model_group_col:
        raise ConfigError(
            f"--dif-col {options.dif_col} is the model's --group-col: its group effects already absorb DIF",
            hint="fit theta without --groups, or study DIF on another column",
        )
    pairs = parse_bias_pairs(options.bias_facets) if options.bias_facets else parse_bias_pairs(
        default_bias_pairs(len(est.raters), has_groups))  # fmt: skip
    if options.bias:
        check_bias_pairs(pairs, est, has_groups, options.exchangeable)
    return pairs


def measurement_report(result: Any, prep: PreparedRatings, options: MeasurementOptions) -> MeasurementReport:
    """The tables ``options`` asks for, from a fitted MML or NUTS result and its prepared ratings.

    Args:
        result: A fitted MML or NUTS result.
        prep: Its prepared ratings.
        options: The tables asked for and their rules.
    """
    est = estimates_from_result(result, prep)
    pairs = check_measurement_options(options, est)
    obs = observations(est, prep)
    groups = dif_groups(options.dif_groups, options.dif_col, est.ids) if options.dif_groups is not None and options.dif_col else None
    report = MeasurementReport({}, [], scale_warnings(est, obs), est, obs, groups)
    if options.fit:
        rule = FitRange(options.fit_range[0], options.fit_range[1], options.fit_zstd)
        report.tables["fit"] = fit_table(est, obs, rule=rule, groups=_fit_groups(groups, prep, obs))
        report.lines.append(fit_line(report.tables["fit"]))
    if options.separation:
        report.tables["separation"] = separation_table(est)
        report.lines.append(separation_line(report.tables["separation"]))
    if options.bias:
        rule = BiasRule(min_n=options.bias_min, logit=options.bias_logit, adjust=options.adjust)
        report.tables["bias"] = bias_table(est, obs, prep, [f"{a}:{b}" for a, b in pairs], groups=groups, rule=rule)
        report.lines.append(bias_line(report.tables["bias"]))
    if options.dif:
        assert groups is not None
        rule = DifRule(reference=options.dif_reference, min_n=options.dif_min, adjust=options.adjust)
        report.tables["dif"] = table = dif_table(est, obs, prep, groups, rule)
        report.lines.append(dif_line(table, groups.name))
        report.notes += _dif_notes(table)
    if options.pv:
        if est.method == "nuts":
            report.tables["pv"] = plausible_values_from_draws(est, nuts_theta_draws(result), options.pv_draws)
        else:
            report.tables["pv"] = plausible_values(est, prep, options.pv_draws, options.seed)
        report.lines.append(pv_line(options.pv_draws, options.seed, options.pv_path))
        report.notes.append(
            "note: these PVs are unconditioned: their correlation with a metric is attenuated more than the EAP's; "
            "validate --theta-pv draws PVs conditioned on each metric"
        )
    return report


def _fit_groups(groups: DifGroups | None, prep: PreparedRatings, obs: Observations) -> tuple[list[str], np.ndarray] | None:
    """The fit table's group rows: the DIF groups, else the model's ``--groups``."""
    if groups is not None:
        return groups.levels, groups.code
    if len(prep.group_levels) < 2:
        return None
    code = np.zeros(prep.design.n_items, dtype=np.int64)
    code[obs.item] = prep.design.cell_g[obs.cell]
    return list(prep.group_levels), code


#: Below this many focal exchanges the DIF note says that only large effects can be detected.
ETS_FOCAL_SIZE = 200


def _dif_notes(table: pl.DataFrame) -> list[str]:
    """stderr notes: exchanges outside the modal design, and focal groups smaller than ETS's operational sizes."""
    notes = []
    for row in table.unique("focal", maintain_order=True).iter_rows(named=True):
        if row["n_excluded"]:
            notes.append(f"note: dif {row['focal']}: {row['n_excluded']} exchanges outside the modal design are not in the MH/Mantel rows")
        if 0 < row["n_focal"] < ETS_FOCAL_SIZE:
            notes.append(
                f"note: dif {row['focal']}: {row['n_focal']} focal exchanges; ETS's operational DIF screens use larger "
                "groups, so only large DIF is detectable here"
            )
    return notes
