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
from typing import Any, ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, list_or_none, seed_flag, split_list

__all__ = ["MODELS", "ThetaOptions", "parse_specs"]

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
    seed: int = seed_flag()
    covariate_col: list[str] | None = flag(
        "--covariate-col", default=None, parse=split_list, cli_type=list[str] | None, panel="Explanatory",
        help="Covariate column(s), repeat or comma-separate (default: all numeric).",
    )
    group_col: str | None = flag("--group-col", default=None, panel="Explanatory", help="Group column in --groups.")
    covariate_scale: str = flag(
        "--covariate-scale", default="auto", panel="Explanatory", help="auto (0/1 covariates raw, others z-scored), raw or z."
    )
    topic_col: list[str] | None = flag(
        "--topic-col", default=None, parse=split_list, cli_type=list[str] | None, panel="Explanatory",
        help="Topic column(s), repeat or comma-separate (default: every 0/1 column).",
    )
    effect_draws: int = flag(
        "--effect-draws", default=4000, panel="Explanatory", help="mml: draws from N(mode, H^-1) for --effects (>= 100)."
    )
    spec: list[str] | None = flag(
        "--spec", default=None, parse=list_or_none, cli_type=list[str] | None, panel="Explanatory",
        help="nuts, with --compare-models: a named model NAME=TERMS (TERMS: covariate names, topics, groups joined "
        "by +; empty = facets only).",
    )

    @property
    def fit_model(self) -> str:
        """The fit's model name of ``--model`` (``partial-credit`` → ``partial_credit``)."""
        return MODELS[self.model]

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
