"""The Rasch measurement report: fit, separation, bias/interaction, DIF and plausible values of an MFRM fit
(``docs/measurement.md``). One module per job; :func:`measurement_report` makes whichever tables the options ask for.

>>> from tutormetrics.psychometrics.measurement import MeasurementOptions, measurement_report, prepare_like_fit
"""

from __future__ import annotations

from tutormetrics.psychometrics.measurement.bias import BiasRule, DifGroups, bias_table
from tutormetrics.psychometrics.measurement.dif import DifRule, dif_groups, dif_table
from tutormetrics.psychometrics.measurement.estimates import Estimates, estimates_from_result, estimates_from_tables
from tutormetrics.psychometrics.measurement.fit import FitRange, fit_table
from tutormetrics.psychometrics.measurement.measurement_report import (
    MeasurementOptions,
    MeasurementReport,
    measurement_report,
    prepare_like_fit,
)
from tutormetrics.psychometrics.measurement.observations import Observations, observations
from tutormetrics.psychometrics.measurement.plausible import plausible_values
from tutormetrics.psychometrics.measurement.scale_checks import scale_warnings
from tutormetrics.psychometrics.measurement.separation import separation_table

__all__ = [
    "BiasRule", "DifGroups", "DifRule", "Estimates", "FitRange", "MeasurementOptions", "MeasurementReport", "Observations",
    "bias_table", "dif_groups", "dif_table", "estimates_from_result", "estimates_from_tables", "fit_table",
    "measurement_report", "observations", "plausible_values", "prepare_like_fit", "scale_warnings", "separation_table",
]  # fmt: skip
