"""The options of ``predict`` (``docs/commands/predict.md#from-python``): the models, folds, intervals and features
(:class:`PredictOptions`) and the columns of the tables it reads (:class:`PredictColumns`).

Each field declares its command-line flag, so ``tutormetrics predict`` and a Python caller share one set of names
and defaults. This module imports neither numpy, scipy nor scikit-learn: the command line reads it at start-up.

Example:
    >>> PredictOptions().folds, PredictOptions().n_resamples, PredictColumns(group_col="dialog").metrics_cols
    (5, 2000, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import (
    confidence_flag,
    control_flag,
    flag,
    list_or_none,
    metrics_cols_flag,
    n_min_flag,
    n_resamples_flag,
    seed_flag,
)
from tutormetrics.stats.group_columns import join_group_cols

__all__ = [
    "CIS", "CLASS_WEIGHTS", "DECISIONS", "DEFAULT_REPRESENTATION", "FEATURES", "IMPORTANCE", "MODELS", "PredictColumns",
    "PredictOptions", "parse_representation",
]  # fmt: skip

MODELS: tuple[str, ...] = ("logistic", "ridge", "hgb")
CLASS_WEIGHTS: tuple[str, ...] = ("none", "balanced")
IMPORTANCE: tuple[str, ...] = ("none", "drop")
CIS: tuple[str, ...] = ("percentile", "none")
#: ``--decision``: the most probable level, or thresholds on the score tuned by inner grouped CV (``decision_rules``).
DECISIONS: tuple[str, ...] = ("argmax", "ordinal")
#: ``--features``: the metrics, the encoder's representation, or both (``docs/commands/predict.md#representation-features``).
FEATURES: tuple[str, ...] = ("metrics", "embedding", "both")
#: ``--representation`` default: the pooled response vector (benchmarks/RESULTS.md §17b compares the conditioned ones).
DEFAULT_REPRESENTATION = "response"


def parse_representation(spec: str) -> list[tuple[str, str, str]]:
    """``"response,response-prompt"`` → ``[("response", "", ""), ("response", "-", "prompt")]``.

    >>> parse_representation("response, response*prev_student")
    [('response', '', ''), ('response', '*', 'prev_student')]
    """
    terms = []
    for raw in spec.split(","):
        term = raw.strip()
        op = "-" if "-" in term else "*" if "*" in term else ""
        a, _, b = term.partition(op) if op else (term, "", "")
        if not a.strip() or (op and not b.strip()):
            raise ConfigError(f"--representation term {raw.strip()!r} is not VIEW, VIEW-VIEW or VIEW*VIEW",
                              hint="e.g. --representation response,response-prompt,response*prompt")  # fmt: skip
        terms.append((a.strip(), op, b.strip()))
    return terms


@dataclass
class PredictOptions:
    """Options of ``predict`` (``docs/commands/predict.md``); one set of names and defaults for the CLI and the API.

    >>> PredictOptions(model="ridge", ci="none").check()
    >>> PredictOptions(folds=1).check()
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --folds must be at least 2, got 1
    """

    PANEL: ClassVar[str] = "Prediction"

    folds: int = flag("--folds", default=5, help="Grouped folds K (at least 2).")
    model: str = flag("--model", default="logistic", help="logistic (L2; ridge for continuous targets), ridge or hgb (gradient boosting).")
    class_weight: str = flag("--class-weight", default="none", help="none or balanced (n / (L·n_k) per row of level k).")
    importance: str = flag("--importance", default="none", help="none or drop (refit without each metric family).")
    ci: str = flag("--ci", default="percentile", help="percentile (cluster bootstrap over groups) or none.")
    n_resamples: int = n_resamples_flag(2000, min=2)
    confidence_level: float = confidence_flag()
    seed: int = seed_flag()
    n_min: int = n_min_flag(10, min=3)  # complete pairs of a training ρ (the best single metric), rows of a fitted target
    #: ``metrics``, ``embedding`` or ``both`` (``docs/commands/predict.md#representation-features``)
    features: str = flag(
        "--features", default="metrics", panel="Representation",
        help="metrics, embedding (the encoder's representation, needs --embeddings) or both; with the representation "
        "a model 'metrics' and the difference all-metrics are added.",
    )
    #: the representation block: views of the embeddings file, ``a-b`` and ``a*b`` (:mod:`~tutormetrics.validity.representation`)
    representation: str = flag(
        "--representation", default=DEFAULT_REPRESENTATION, panel="Representation",
        help="The representation block: comma-separated views of the embeddings file (response, prompt, prev_student, "
        "response_l04 ...), VIEW-VIEW or VIEW*VIEW, e.g. response,response-prompt,response*prompt.",
    )
    #: principal components of the representation block, fitted in each training fold
    components: int = flag(
        "--components", default=128, min=1, panel="Representation",
        help="Principal components of the representation, fitted inside each training fold.",
    )
    decision: str = flag(
        "--decision", default="argmax",
        help="argmax (most probable level) or ordinal (thresholds on the score tuned for macro-F1 by inner grouped CV "
        "on the training folds).",
    )

    def check(self) -> None:
        """Exit 2 (:class:`~tutormetrics.errors.ConfigError`) on a value outside its choices or range."""
        for value, allowed, name in (
            (self.model, MODELS, "--model"),
            (self.class_weight, CLASS_WEIGHTS, "--class-weight"),
            (self.importance, IMPORTANCE, "--importance"),
            (self.ci, CIS, "--ci"),
            (self.features, FEATURES, "--features"),
            (self.decision, DECISIONS, "--decision"),
        ):
            if value not in allowed:
                raise ConfigError(f"unknown {name} {value!r}", hint=f"use one of {', '.join(allowed)}")
        if self.folds < 2:
            raise ConfigError(f"--folds must be at least 2, got {self.folds}")
        if self.ci != "none" and self.n_resamples < 2:
            raise ConfigError(f"--n-resamples must be at least 2, got {self.n_resamples}")
        if not 0.0 < self.confidence_level < 1.0:
            raise ConfigError(f"--confidence-level must lie in (0, 1), got {self.confidence_level}")
        if self.n_min < 3:
            raise ConfigError(f"--n-min must be at least 3, got {self.n_min}")
        parse_representation(self.representation)
        if self.components < 1:
            raise ConfigError(f"--components must be at least 1, got {self.components}")
        if self.features == "embedding" and self.importance == "drop":
            raise ConfigError("--importance drop leaves out metric families, which --features embedding does not use",
                              hint="use --features both, or drop --importance")  # fmt: skip


@dataclass(kw_only=True)
class PredictColumns:
    """Which columns of the metrics table ``predict`` uses: the groups the folds keep whole, the features, the
    controls and a judge (a rater of the long ratings, or metrics columns holding a judge's value).

    >>> PredictColumns(group_col="conversation_id", controls=["resp_words"]).controls
    ['resp_words']
    """

    PANEL: ClassVar[str] = "Prediction"

    group_col: str = flag(
        "--group-col", parse=lambda v: join_group_cols(v) or "", cli_type=list[str],
        help="METRICS column(s) of dialogue labels (compared as text; repeat or comma-separate: their combination); "
        "folds and intervals keep a group together.",
    )
    metrics_cols: list[str] | None = metrics_cols_flag("Targets")
    controls: list[str] = control_flag("Targets")
    judge: str | None = flag(
        "--judge", default=None, panel="Judge",
        help="Rater NAME of the long ratings is an LLM judge: its scores are predictions, targets use the other raters.",
    )
    judge_cols: list[str] | None = flag(
        "--judge-col", default=None, parse=list_or_none, cli_type=list[str] | None, panel="Judge",
        show_default=False, help="[TARGET=]COL: a METRICS column with a judge's value (bare COL: every target); repeatable.",
    )
