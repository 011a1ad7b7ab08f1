"""The options of the validity study, without its engine: :class:`SpearmanOptions` (how every cell is estimated, tested
and bounded) and :class:`ValidateOptions` (the ratings, targets and controls of ``validate`` and ``run``).

They carry their command-line flags (``docs/guide/options.md#options``) and import neither scipy nor the Spearman
engine, so the command line can declare ``validate`` and ``run`` without loading either
(``docs/statistics.md#spearman-tables-validate``).

Example:
    >>> ValidateOptions(ci="none").ci, ValidateOptions().n_resamples
    ('none', 9999)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.flags import (
    confidence_flag,
    control_flag,
    flag,
    min_clusters_flag,
    n_min_flag,
    n_resamples_flag,
    seed_flag,
)
from tutormetrics.frames import frame_inputs
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.ratings_input import RatingOptions, clean_ratings_frame
from tutormetrics.stats.multiplicity import ADJUST_METHODS
from tutormetrics.stats.ranks import DEFAULT_TIE_DIGITS

__all__ = ["CI_METHODS", "PERMUTATION_MODES", "STARS_ON", "SpearmanOptions", "ValidateOptions"]

CI_METHODS: tuple[str, ...] = ("bca", "percentile", "fisher", "none")
PERMUTATION_MODES: tuple[str, ...] = ("auto", "always", "never")
STARS_ON: tuple[str, ...] = ("p_adj", "p")


@dataclass
class SpearmanOptions:
    """How every cell is estimated, tested and bounded: one set of names and defaults for ``validate``, ``run`` and
    the API (:class:`~tutormetrics.validity.study.ValidateOptions` extends it).

    >>> SpearmanOptions().ci, SpearmanOptions(adjust="holm").adjust
    ('bca', 'holm')
    """

    #: p-value adjustment over the defined cells of the whole table: ``bh``, ``holm``, ``by`` or ``none``.
    adjust: str = flag('--adjust', default='bh', panel='Validity',
         help='Multiplicity over the whole matrix: bh, holm, by or none.')
    #: ``bca`` (default), ``percentile``, ``fisher`` or ``none``.
    ci: str = flag('--ci', default='bca', panel='Validity',
         help='Confidence interval: bca, percentile, fisher or none.')
    n_resamples: int = n_resamples_flag(9999, panel="Validity", min=2)
    confidence_level: float = confidence_flag("Validity")
    seed: int = seed_flag("Validity")
    #: ``auto`` (a permutation p below 50 pairs), ``always`` or ``never``.
    permutation: str = flag('--permutation', default='auto', panel='Validity',
         help='auto (permutation p when n < 50), always or never.')
    n_permutations: int = flag('--n-permutations', default=9999, panel='Validity', min=1,
         help='Permutations for a permutation p.')
    #: The column the stars mark: ``p_adj`` or ``p``.
    stars_on: str = flag('--stars-on', default='p_adj', panel='Validity',
         help='Column the stars refer to: p_adj or p.')
    #: Fewest complete pairs of a defined cell.
    n_min: int = n_min_flag(10, min=3, panel="Validity")
    #: Significant digits of the rank key (``docs/statistics.md#ties-binary-targets-and-the-prevalence-ceiling``);
    #: 0 = raw values.
    tie_digits: int = flag('--tie-digits', default=DEFAULT_TIE_DIGITS, panel='Validity', min=0,
         help='Rank values rounded to N significant digits, so float noise ties (0: raw values).')
    #: Fewest clusters of a cluster interval (fewer: no interval, reason ``too_few_clusters``).
    min_clusters: int = min_clusters_flag("Validity")

    def check(self) -> None:
        """Exit 2 (:class:`~tutormetrics.errors.ConfigError`) on a value outside its choices or range."""
        for value, allowed, name in (
            (self.adjust, ADJUST_METHODS, "adjust"),
            (self.ci, CI_METHODS, "ci"),
            (self.permutation, PERMUTATION_MODES, "permutation"),
            (self.stars_on, STARS_ON, "stars_on"),
        ):
            if value not in allowed:
                raise ConfigError(f"unknown {name} {value!r}", hint=f"use one of {', '.join(allowed)}")
        if self.ci in ("bca", "percentile") and self.n_resamples < 2:
            raise ConfigError(f"n_resamples must be at least 2, got {self.n_resamples}")
        if self.permutation != "never" and self.n_permutations < 1:
            raise ConfigError(f"n_permutations must be at least 1, got {self.n_permutations}")
        if not 0.0 < self.confidence_level < 1.0:
            raise ConfigError(f"confidence_level must lie in (0, 1), got {self.confidence_level}")
        if self.n_min < 3:
            raise ConfigError(f"n_min must be at least 3, got {self.n_min}", hint="Spearman ρ needs 3 or more pairs")
        if self.tie_digits < 0:
            raise ConfigError("tie_digits must be >= 0", hint="use 12 (default) or 0 for the raw values")


@dataclass
class ValidateOptions(SpearmanOptions, RatingOptions):
    """Options of the validation step: one set of names and defaults for ``validate``, ``run`` and the API. The rating
    fields are :class:`~tutormetrics.psychometrics.ratings.RatingOptions`', the engine's
    :class:`~tutormetrics.validity.spearman.SpearmanOptions`' (so the options object is what the engine takes).

    >>> vo = ValidateOptions(ci="none", levels=[0.0, 1.0])
    >>> isinstance(vo, SpearmanOptions), vo.ci, vo.levels
    (True, 'none', [0.0, 1.0])
    """

    estimate_theta: bool = flag('--estimate-theta/--no-estimate-theta', default=True, panel='Targets',
         help='Fit an MFRM for θ when --theta is not given.')
    #: Metrics columns held fixed for the partial rows (``docs/statistics.md#length-controlled-validity-control``);
    #: empty = raw only.
    control: list[str] = control_flag("Targets")
    #: Metrics column of cluster (dialogue) labels: intervals resample clusters
    #: (``docs/commands/predict.md#cluster-intervals-in-validate-and-run``).
    cluster_col: str | None = flag('--cluster-col', default=None, panel='Validity', show_default=False,
         help='METRICS column of cluster (dialogue) labels: intervals resample whole clusters, not rows.')
    #: Plausible values of θ per exchange for the ``theta_pv`` rows (``docs/measurement.md#theta-pv``); 0 = none.
    theta_pv: int = flag('--theta-pv', default=0, panel='Targets', min=0,
         help='Also ρ(metric, θ) over M plausible values of θ pooled by Rubin\'s rules (theta_pv rows; needs long '
              'ratings and --theta with --facets, or an estimated θ); 0 = off.')
    #: ``metric`` (PVs conditioned on each metric) or ``none`` (``theta --pv``'s unconditioned PVs).
    pv_condition: str = flag('--pv-condition', default='metric', panel='Targets',
         help='--theta-pv: draw the PVs conditioned on each metric (metric) or unconditioned (none).')
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])

    @frame_inputs(ratings=Ratings)
    def clean_ratings(
        self, ratings: pl.DataFrame | Ratings, *, id_col: str, source: str, log: Log = quiet, command: str = "validate"
    ) -> Ratings:
        """The :class:`~tutormetrics.psychometrics.ratings.Ratings` of a ratings frame under these columns, codes,
        recoding and scale (``--na``, ``--recode``, ``--levels``, ``--drop-out-of-scale``, ``--raters``):
        :func:`~tutormetrics.psychometrics.ratings_input.clean_ratings_frame`, the cleaning of
        :func:`~tutormetrics.psychometrics.ratings_input.read_ratings`; one already cleaned is returned as it is.

        Args:
            ratings: Long or wide ratings, or ratings already cleaned.
            id_col: The id column of the ratings.
            source: The ratings' name in messages.
            log: Where notes (recoded counts, non-integer scores, ratings dropped off the scale) go.
            command: The command named in the non-integer note (``docs/guide/paper.md#recode``).
        """
        if isinstance(ratings, Ratings):
            return ratings
        return clean_ratings_frame(ratings, self, id_col=id_col, source=source, log=log, command=command)
