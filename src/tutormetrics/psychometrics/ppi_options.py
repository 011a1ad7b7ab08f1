"""The options of ``ppi`` (``docs/commands/ppi.md#from-python``): the judge, the groups, λ, the human aggregate,
the interval level, the dialogue and stratum columns (``docs/guide/judges.md#cluster-ppi``), each declaring its command-line flag. No numpy here: the command line reads it at start-up.

Example:
    >>> PPIOptions().lam, PPIOptions(lam="auto").lam, parse_lambda("0.5")
    (1.0, 'auto', 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import confidence_flag, flag

__all__ = ["AGGREGATES", "PPIOptions", "parse_lambda"]

#: ``--aggregate``: the ways to one human score per exchange and criterion.
AGGREGATES: tuple[str, ...] = ("mean", "min", "max")


def parse_lambda(text: str | float) -> float | str:
    """``"1"`` → 1.0, ``"auto"`` → ``"auto"``; a number outside [0, 1] or other text is an error.

    >>> parse_lambda("auto"), parse_lambda("0.5")
    ('auto', 0.5)
    """
    if isinstance(text, str) and text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"--lambda must be auto or a number in [0, 1], got {text!r}", hint="e.g. --lambda 1 or --lambda auto") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"--lambda must lie in [0, 1], got {value:g}", hint="λ = 0 is the classical mean, λ = 1 plain PPI")
    return value


@dataclass
class PPIOptions:
    """How ``ppi`` estimates (``docs/commands/ppi.md``): one set of names and defaults for the CLI and the API.

    >>> PPIOptions(group_col="tutor", aggregate="max").group_col
    'tutor'
    """

    PANEL: ClassVar[str] = "PPI"

    judge: str | None = flag("--judge", default=None, help="The judge's rater name when the judge labels hold several raters.")
    group_col: str | None = flag(
        "--group-col", default=None, help="Judge-labels column (e.g. tutor), constant per exchange: one row per group too."
    )
    #: λ in [0, 1] (0: humans only, 1: PPI) or ``"auto"`` (PPI++ power tuning)
    lam: float | str = flag(
        "--lambda", default="1", parse=parse_lambda, cli_type=str,
        help="1 (PPI), auto (PPI++ power tuning) or a number in [0, 1] (0 = humans only).",
    )
    aggregate: str = flag("--aggregate", default="mean", help="Human aggregation per exchange and criterion: mean, min or max.")
    confidence_level: float = confidence_flag()
    cluster_col: str | None = flag(
        "--cluster-col", default=None, show_default=False,
        help="Judge-labels column naming each reply's dialogue: cluster-robust se (the estimate is unchanged).",
    )
    strata_col: str | None = flag(
        "--strata-col", default=None, show_default=False,
        help="Judge-labels column, constant per exchange: PPI per stratum, combined by the strata's shares (or --strata-weights).",
    )
