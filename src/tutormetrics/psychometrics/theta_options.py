"""The options of the θ study (:class:`ThetaOptions`, the flags of ``theta``) and the checks of their combinations,
run before any work (``docs/design/effects.md#explanatory-mfrm``; a bad combination is exit 2).

Example:
    >>> ThetaOptions().method, ThetaOptions(model="partial-credit").fit_model
    ('mml', 'partial_credit')
    >>> parse_specs(["M0=", "M1=suff"])
    [('M0', []), ('M1', ['suff'])]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, list_or_none, seed_flag, split_list
from tutormetrics.stats.group_columns import join_group_cols

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from tutormetrics.psychometrics.measurement.measurement_report import MeasurementOptions

__all__ = ["MODELS", "MeasurementFlags", "ThetaOptions", "parse_fit_pair", "parse_specs"]

#: ``--model`` spellings → the fit's model names.
MODELS = {"auto": "auto", "binary": "binary", "partial-credit": "partial_credit", "partial_credit": "partial_credit"}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
Specs = list[tuple[str, list[str]]]


def parse_specs(spec: Sequence[str] | None) -> Specs | None:
    """``NAME=TERMS`` items → ``[(name, [term, ...])]`` (``docs/design/effects.md#explanatory-mfrm``); ``None`` without any.

    Example:
        >>> parse_specs(["M0=", "M3=suff+topics"])
        [('M0', []), ('M3', ['suff', 'topics'])]
    """
    if not spec:
        return None
    out: Specs = []
    for item in spec:
        if "=" not in item:
            raise ConfigError(f"--spec {item!r} has no '='", hint="write NAME=TERMS, e.g. --spec M0= --spec M1=suff")
        name, terms = (p.strip() for p in item.split("=", 1))
        if not _NAME.match(name):
            raise ConfigError(f"--spec name {name!r} is not valid", hint="use letters, digits, _ . -")
        if any(name == n for n, _ in out):
            raise ConfigError(f"--spec name {name!r} is repeated", hint="give every model its own name")
        parts = [t.strip() for t in terms.split("+")] if terms else []
        if any(not t for t in parts):
            raise ConfigError(f"--spec {item!r} has an empty term", hint="join terms with +, e.g. suff+topics")
        out.append((name, parts))
    if len(out) < 2:
        raise ConfigError("--spec needs at least two models to compare", hint="e.g. --spec M0= --spec M1=suff")
    return out


@dataclass
class ThetaOptions:
    """How θ is fitted (``docs/statistics.md#many-facet-rasch-model-theta``): the model, the method and its
    sampler settings, the explanatory terms' columns and scale, the effect draws and the named models of
    ``--compare-models``. The same defaults from Python and from ``tutormetrics theta``.

    >>> ThetaOptions().nuts_options(), ThetaOptions(method="nuts", chains=2).nuts_options()["chains"]
    ({}, 2)
    """

    PANEL: ClassVar[str] = "Model"

    model: str = flag("--model", default="auto", help="auto, binary or partial-credit.")
    method: str = flag("--method", default="mml", help="mml (Gauss-Hermite MML + EAP) or nuts (Bayesian, needs the bayes extra).")
    draws: int = flag("--draws", default=1000, min=1, help="nuts: draws kept per chain.")
    tune: int = flag("--tune", default=1000, min=0, help="nuts: warm-up iterations per chain.")
    chains: int = flag("--chains", default=4, min=1, help="nuts: number of chains.")
    sampler: str = flag("--sampler", default="nutpie", help="nuts: nutpie or pymc.")
    seed: int = seed_flag(help="Seed of the NUTS sampler and of the MML draws (--effects, --effects-plot, baseline probabilities); 0 to 2**32-1.")
    covariate_col: list[str] | None = flag(
        "--covariate-col", default=None, parse=split_list, cli_type=list[str] | None, panel="Explanatory",
        help="Covariate column(s), repeat or comma-separate (default: all numeric).",
    )
    group_col: str | None = flag(
        "--group-col", default=None, parse=join_group_cols, cli_type=list[str] | None, panel="Explanatory",
        help="Group column(s) in --groups; repeat or comma-separate (a group is the combination, labelled a/b).",
    )
    covariate_scale: str = flag(
        "--covariate-scale", default="auto", panel="Explanatory", help="auto (0/1 covariates raw, others z-scored), raw or z."
    )
    topic_col: list[str] | None = flag(
        "--topic-col", default=None, parse=split_list, cli_type=list[str] | None, panel="Explanatory",
        help="Topic column(s), repeat or comma-separate (default: every 0/1 column).",
    )
    effect_draws: int = flag(
        "--effect-draws", default=4000, panel="Explanatory", help="mml: draws from N(mode, H^-1) for --effects, --effects-plot and the baseline probabilities (>= 100)."
    )
    spec: list[str] | None = flag(
        "--spec", default=None, parse=list_or_none, cli_type=list[str] | None, panel="Explanatory",
        help="nuts, with --compare-models: a named model NAME=TERMS (TERMS: covariate names, topics, groups joined "
        "by +; empty = facets only); repeat for several.",
    )

    @property
    def fit_model(self) -> str:
        """The fit's model name of ``--model`` (``partial-credit`` → ``partial_credit``)."""
        return MODELS[self.model]

    def fit_text(self) -> str:
        """The fit as a progress detail names it.

        >>> ThetaOptions().fit_text(), ThetaOptions(method="nuts", chains=2).fit_text()
        ('MML', 'NUTS, nutpie: 2 chains x (1,000 tune + 1,000 draws)')
        """
        if self.method != "nuts":
            return "MML"
        return f"NUTS, {self.sampler}: {self.chains} chains x ({self.tune:,} tune + {self.draws:,} draws)"

    def nuts_options(self) -> dict[str, Any]:
        """The sampler settings the NUTS fit takes (none for MML)."""
        if self.method != "nuts":
            return {}
        return {"draws": self.draws, "tune": self.tune, "chains": self.chains, "sampler": self.sampler, "seed": self.seed}

    def check(
        self, *, covariates: bool = False, groups: bool = False, topics: bool = False, effects: bool = False,
        compare_models: bool = False,
    ) -> Specs | None:
        """Refuse bad values and combinations before any work (exit 2); the parsed ``--spec`` models.

        Args:
            covariates: A covariate table is given (``--covariates``).
            groups: A group table is given (``--groups``).
            topics: A topic table is given (``--topics``).
            effects: The effects table is wanted (``--effects``).
            compare_models: The PSIS-LOO comparison is wanted (``--compare-models``).
        """
        if self.model not in MODELS:
            raise ConfigError(f"unknown --model {self.model!r}", hint="use auto, binary or partial-credit")
        if self.method not in ("mml", "nuts"):
            raise ConfigError(f"unknown --method {self.method!r}", hint="use mml or nuts")
        if self.sampler not in ("nutpie", "pymc"):
            raise ConfigError(f"unknown --sampler {self.sampler!r}", hint="use nutpie or pymc")
        specs = self._check_explanatory(covariates=covariates, groups=groups, topics=topics, effects=effects, compare_models=compare_models)
        if compare_models and self.method != "nuts":
            raise ConfigError("--compare-models needs --method nuts")
        if compare_models and not (covariates or groups or topics):
            raise ConfigError("--compare-models needs --covariates, --topics and/or --groups")
        if self.covariate_col and not covariates:
            raise ConfigError("--covariate-col needs --covariates")
        if self.group_col and not groups:
            raise ConfigError("--group-col needs --groups")
        return specs

    def _check_explanatory(self, *, covariates: bool, groups: bool, topics: bool, effects: bool, compare_models: bool) -> Specs | None:
        """The explanatory options (``docs/design/effects.md#explanatory-mfrm``): scale, topics, effects, named models."""
        if self.covariate_scale not in ("auto", "raw", "z"):
            raise ConfigError(f"unknown --covariate-scale {self.covariate_scale!r}", hint="use auto, raw or z")
        if self.topic_col and not topics:
            raise ConfigError("--topic-col needs --topics")
        if effects and not (covariates or topics or groups):
            raise ConfigError("--effects has nothing to contrast", hint="add --covariates, --topics or --groups")
        if self.effect_draws < 100:
            raise ConfigError(f"--effect-draws {self.effect_draws} is too few", hint="use at least 100 (default 4000)")
        if self.spec and (not compare_models or self.method != "nuts"):
            raise ConfigError("--spec needs --compare-models and --method nuts")
        specs = parse_specs(self.spec)
        for name, terms in specs or []:
            if "topics" in terms and not topics:
                raise ConfigError(f"--spec {name}: term 'topics' needs --topics")
            if "groups" in terms and not groups:
                raise ConfigError(f"--spec {name}: term 'groups' needs --groups")
            if any(t not in ("topics", "groups") for t in terms) and not covariates:
                raise ConfigError(f"--spec {name}: covariate terms need --covariates")
        return specs


def parse_fit_pair(text: str | tuple[float, float]) -> tuple[float, float]:
    """``--fit-range`` ``"lo,hi"`` → ``(lo, hi)`` with 0 < lo < 1 < hi (``docs/measurement.md#fit-flag``).

    >>> parse_fit_pair("0.7,1.3")
    (0.7, 1.3)
    """
    if isinstance(text, tuple):
        return text
    try:
        lo, hi = (float(p) for p in str(text).split(","))
    except ValueError:
        raise ConfigError(f"--fit-range {text!r} is not lo,hi", hint="e.g. --fit-range 0.5,1.5") from None
    if not 0 < lo < 1 < hi:
        raise ConfigError(f"--fit-range {text}: needs 0 < lo < 1 < hi", hint="e.g. --fit-range 0.5,1.5")
    return lo, hi


@dataclass
class MeasurementFlags:
    """The settings of the measurement tables of ``theta`` (``docs/measurement.md#commands``): the fit flag rule,
    the bias cells, the DIF groups' column and reference, the multiplicity adjustment and the number of plausible
    values. Which tables are written is the command's (one file option each); :meth:`options` joins both.

    >>> MeasurementFlags().fit_range, MeasurementFlags().adjust, MeasurementFlags().pv_draws
    ((0.5, 1.5), 'holm', 20)
    """

    PANEL: ClassVar[str] = "Measurement"

    fit_range: tuple[float, float] = flag(
        "--fit-range", default="0.5,1.5", parse=parse_fit_pair, cli_type=str,
        help="Fit flag: mean-squares outside lo,hi (with |ZSTD| >= --fit-zstd) are flagged.",
    )
    fit_zstd: float = flag("--fit-zstd", default=2.0, help="Fit flag: the |ZSTD| a misfit must also reach.")
    bias_facets: list[str] | None = flag(
        "--bias-facets", default=None, parse=split_list, cli_type=list[str] | None,
        help="Bias pairs: rater:criterion, criterion:rater, criterion:group, group:criterion; repeat or comma-separate "
        "(default rater:criterion with 2+ raters, plus criterion:group with --dif-groups).",
    )
    bias_min: int = flag("--bias-min", default=10, min=1, help="Bias: fewest ratings of a cell with an estimate.")
    bias_logit: float = flag("--bias-logit", default=0.5, help="Bias: the smallest |β| (logits) a flagged cell has.")
    dif_col: str | None = flag("--dif-col", default=None, help="DIF: the group column of --dif-groups.")
    dif_reference: str | None = flag(
        "--dif-reference", default=None, help="DIF: the reference level (default: the level with most exchanges)."
    )
    dif_min: int = flag("--dif-min", default=30, min=1, help="DIF: fewest exchanges of a group with an estimate.")
    adjust: str = flag("--adjust", default="holm", help="Multiplicity within each bias pair / DIF statistic: holm, bh, by or none.")
    pv_draws: int = flag("--pv-draws", default=20, help="Plausible values per exchange written by --pv (>= 2).")

    def check(self, *, dif: bool, groups: bool, pv: bool, model_group_col: str | None) -> None:
        """The errors of ``docs/measurement.md#errors`` that need no fit (exit 2 before any work).

        Args:
            dif: The DIF table is wanted (``--dif``).
            groups: A DIF group table is given (``--dif-groups``).
            pv: Plausible values are wanted (``--pv``).
            model_group_col: The model's own ``--group-col``.
        """
        from tutormetrics.psychometrics.measurement.bias import parse_bias_pairs
        from tutormetrics.stats.multiplicity import ADJUST_METHODS

        if self.adjust not in ADJUST_METHODS:
            raise ConfigError(f"unknown --adjust {self.adjust!r}", hint="use holm, bh, by or none")
        if not self.fit_zstd > 0:
            raise ConfigError(f"--fit-zstd {self.fit_zstd} must be positive", hint="e.g. --fit-zstd 2")
        if pv and self.pv_draws < 2:
            raise ConfigError(f"--pv-draws {self.pv_draws}: needs at least 2 draws", hint="e.g. --pv-draws 20")
        if dif and not (groups and self.dif_col):
            raise ConfigError("--dif needs --dif-groups and --dif-col", hint="name the exchange-level group table and its column")
        if groups != (self.dif_col is not None):
            raise ConfigError("--dif-groups and --dif-col go together", hint="name the group table and its column")
        if self.dif_col is not None and self.dif_col == model_group_col:
            raise ConfigError(
                f"--dif-col {self.dif_col} is the model's --group-col: its group effects already absorb DIF",
                hint="fit theta without --groups, or study DIF on another column",
            )
        if self.bias_facets:
            pairs = parse_bias_pairs(self.bias_facets)
            if any("group" in pair for pair in pairs) and not groups:
                raise ConfigError("--bias-facets with a group pair needs --dif-groups and --dif-col",
                                  hint="name the exchange-level group table and its column")  # fmt: skip

    def options(
        self, tables: set[str], *, seed: int, dif_groups: pl.DataFrame | None = None, model_group_col: str | None = None,
        exchangeable: bool = False, pv_path: str = "PV.csv",
    ) -> MeasurementOptions:
        """The library's :class:`~tutormetrics.psychometrics.measurement.MeasurementOptions` for the ``tables`` wanted
        (names among ``fit``, ``separation``, ``bias``, ``dif``, ``pv``).

        Args:
            tables: The tables to compute.
            seed: The plausible values' seed (``--seed``).
            dif_groups: The ``--dif-groups`` table.
            model_group_col: The model's ``--group-col`` (DIF on it is refused).
            exchangeable: ``--raters exchangeable``.
            pv_path: The PV file named in its stderr line.
        """
        from tutormetrics.psychometrics.measurement.measurement_report import MeasurementOptions

        return MeasurementOptions(
            fit="fit" in tables, fit_range=self.fit_range, fit_zstd=self.fit_zstd, separation="separation" in tables,
            bias="bias" in tables, bias_facets=self.bias_facets, bias_min=self.bias_min, bias_logit=self.bias_logit,
            dif="dif" in tables, dif_groups=dif_groups, dif_col=self.dif_col, dif_reference=self.dif_reference,
            dif_min=self.dif_min, adjust=self.adjust, pv="pv" in tables, pv_draws=self.pv_draws, seed=seed,
            pv_path=pv_path, model_group_col=model_group_col, exchangeable=exchangeable,
        )  # fmt: skip
