"""The options of ``agree`` (``docs/commands/agree.md``), light enough for the command line to import at start:
:class:`JudgeOptions` (the resamples, seed and ``n_min`` every agreement table takes, plus the judge-only
knobs of :func:`~tutormetrics.psychometrics.judge_tables.judge_tables`), :class:`AgreeOptions` (``agree``'s),
the ``--raters A,B`` field of :class:`AgreeRatingsInput` and the cross-option rules (:func:`check_agree`). ``--na`` is
the ratings' (:class:`~tutormetrics.psychometrics.ratings_input.RatingsInput`), as in every command that reads them.

Example:
    >>> AgreeOptions().n_resamples, AgreeRatingsInput(na=(-1.0,)).na, AgreeRatingsInput(raters="a, b").pair
    (2000, (-1.0,), ('a', 'b'))
    >>> from tutormetrics.stats.cluster_resample import MIN_CLUSTERS
    >>> JudgeOptions().min_clusters == MIN_CLUSTERS
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, min_clusters_flag, n_min_flag, n_resamples_flag, seed_flag
from tutormetrics.psychometrics.exchangeable import EXCHANGEABLE
from tutormetrics.psychometrics.ratings_input import RatingsInput

__all__ = ["AgreeOptions", "AgreeRatingsInput", "JudgeOptions", "check_agree", "parse_pair"]

#: ``--raters`` of ``agree``: also the pair of the two-rater columns.
RATERS_HELP = (
    "'A,B': the two raters of the two-rater columns (default: the first two); or exchangeable: the labels are "
    "anonymous slots (e.g. uptake's slot1-3), so only the many-rater columns are filled (reason exchangeable_raters; "
    "the rater column may be absent; with --judge the reference is the human majority only)."
)


def parse_pair(raters: str | None) -> tuple[str, str] | None:
    """``--raters A,B`` → ``("A", "B")`` (``None`` when not given); anything but two names is exit 2.

    >>> parse_pair("alice, bob"), parse_pair(None)
    (('alice', 'bob'), None)
    """
    if not raters:
        return None
    parts = [r.strip() for r in raters.split(",") if r.strip()]
    if len(parts) != 2:
        raise ConfigError(f"--raters needs two names, got {raters!r}", hint="e.g. --raters alice,bob, or --raters exchangeable for anonymous slots")
    return parts[0], parts[1]


@dataclass
class AgreeRatingsInput(RatingsInput):
    """:class:`RatingsInput` whose ``--raters`` also takes the pair ``A,B`` of the two-rater columns
    (``docs/commands/agree.md#agree-any-number-of-raters-missing-ratings-allowed``); the value is kept as typed and
    read by :attr:`exchangeable` and :attr:`pair`."""

    raters: str | None = flag("--raters", default=None, cli_type=str | None, show_default=False, help=RATERS_HELP)

    @property
    def exchangeable(self) -> bool:
        """``--raters exchangeable``: the rater labels are anonymous slots."""
        return self.raters is not None and self.raters.strip() == EXCHANGEABLE

    @property
    def pair(self) -> tuple[str, str] | None:
        """The two raters of the two-rater columns (``None``: the first two, or exchangeable raters)."""
        return None if self.exchangeable else parse_pair(self.raters)


@dataclass(frozen=True)
class JudgeOptions:
    """The options of the agreement and judge tables (``docs/guide/judges.md#commands``): resamples, seed and
    ``n_min``, ``--cluster-col``, ``--min-clusters`` and ``--length-col`` are ``agree``'s flags; the tables asked for
    (``length_bias``, ``differences``) are set from the file options of the command."""

    PANEL: ClassVar[str] = "Agreement"

    n_resamples: int = n_resamples_flag(2000)
    seed: int = seed_flag()
    confidence_level: float = 0.95
    n_min: int = n_min_flag(10)  # units with two ratings (or judge pairs)
    #: The rating scale (``--levels``; ``None``: each criterion's observed categories).
    levels: tuple[float, ...] | None = None
    exchangeable: bool = False
    cluster_col: str | None = flag(
        "--cluster-col", default=None, show_default=False,
        help="Column (of RATINGS, else of --metrics-table) naming each reply's dialogue: intervals resample dialogues.",
    )
    #: stats.cluster_resample.MIN_CLUSTERS (not imported: it pulls in scipy)
    min_clusters: int = min_clusters_flag()
    length_col: str = flag("--length-col", default="resp_words", help="With --length-bias: the --metrics-table column with each reply's length.")
    length_bias: bool = False
    differences: bool = False


@dataclass(frozen=True)
class AgreeOptions(JudgeOptions):
    """``agree``'s options (``docs/commands/agree.md``): :class:`JudgeOptions`; the "not applicable" codes (``--na``)
    are how the ratings are read (:class:`~tutormetrics.psychometrics.ratings_input.RatingsInput`)."""


def check_agree(
    reading: RatingsInput, *, judges: Sequence[str] = (), confusion: bool = False, per_rater: bool = False
) -> None:
    """The option rules of ``agree`` (``docs/commands/agree.md``), before anything is read; a broken one is exit 2.

    Args:
        reading: How the ratings are read (``--raters``).
        judges: The ``--judge`` raters.
        confusion: ``--confusion`` was given (it needs a judge).
        per_rater: ``--per-rater`` was given (it needs named raters).

    >>> check_agree(AgreeRatingsInput(raters="a,b"), confusion=True)
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --confusion needs --judge
    """
    if confusion and not judges:
        raise ConfigError("--confusion needs --judge")
    if judges and reading.raters and not reading.exchangeable:
        raise ConfigError("--raters A,B and --judge cannot be combined", hint="--judge compares the judge with every human")
    if reading.exchangeable and per_rater:
        raise ConfigError(
            "--per-rater needs named raters, but --raters exchangeable says the labels are anonymous slots",
            hint="drop --per-rater, or drop --raters exchangeable if the labels are people",
        )
