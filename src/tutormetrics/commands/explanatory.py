"""Checks and stderr reports of the explanatory-MFRM options of ``theta`` (``effects.md`` §1, §10):
``--covariate-scale``, ``--topics``, ``--effects``, ``--facets-plot``, ``--spec``.

The statistics live in the library (:mod:`tutormetrics.psychometrics.mfrm.effects`,
:mod:`tutormetrics.report.facets_plot`); this module only validates option combinations before any
work and words the stderr lines.

Example:
    >>> parse_specs(["M0=", "M1=suff"])
    [('M0', []), ('M1', ['suff'])]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.progress import Log

__all__ = ["Explanatory", "check_explanatory_options", "parse_specs"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def parse_specs(spec: Sequence[str] | None) -> list[tuple[str, list[str]]] | None:
    """``NAME=TERMS`` items → ``[(name, [term, ...])]`` (``effects.md`` §6); ``None`` without any.

    Example:
        >>> parse_specs(["M0=", "M3=suff+topics"])
        [('M0', []), ('M3', ['suff', 'topics'])]
    """
    if not spec:
        return None
    out: list[tuple[str, list[str]]] = []
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
class Explanatory:
    """The checked options; methods word the stderr lines and call the library."""

    effect_draws: int
    specs: list[tuple[str, list[str]]] | None

    def report_scales(self, result: Any, log: Log) -> None:
        """``covariates: flag raw (0/1), len z (mean 212.4, sd 85.7)``; a raw non-0/1 column gets its range."""
        topics = getattr(result, "topic_matrix", None)
        if topics is not None:
            none = int((topics.sum(axis=1) == 0).sum())
            log(f"topics: {', '.join(result.topic_names)}" + (f"; {none} exchanges have no topic" if none else ""))
        names = list(getattr(result, "covariate_names", []) or [])
        scales = list(getattr(result, "covariate_scales", []) or [])
        if not names or not scales:
            return
        raw = getattr(result, "covariate_raw", None)
        parts = []
        for c, (name, (kind, mean, sd)) in enumerate(zip(names, scales)):
            col = raw[:, c] if raw is not None else None
            binary = col is not None and bool(np.all((col == 0) | (col == 1)))
            if kind == "z":
                parts.append(f"{name} z (mean {mean:.6g}, sd {sd:.6g})")
            elif binary:
                parts.append(f"{name} raw (0/1)")
            else:
                lo, hi = (float(col.min()), float(col.max())) if col is not None else (float("nan"),) * 2
                parts.append(f"{name} raw (range {lo:.6g} to {hi:.6g}; gamma is per unit)")
        log("covariates: " + ", ".join(parts))

    def effects(self, result: Any, *, method: str, seed: int, log: Log) -> pl.DataFrame:
        """The effects table of the fit, with its stderr line (``effects.md`` §3.3)."""
        from tutormetrics.psychometrics.mfrm.effects import effects_summary_line

        if method == "nuts":
            if self.effect_draws != 4000:
                log("note: --effect-draws is ignored with --method nuts (every posterior draw is used)")
            table = result.effects_table()
            text = f"NUTS draws {int(table['n_draws'].max() or 0)}"
        else:
            table = result.effects_table(n_draws=self.effect_draws, seed=seed)
            if table.height and int(table["n_draws"].max() or 0) == 0:
                log("warning: the Hessian is not positive definite; effect draws are NaN (reason no_covariance)")
            text = f"MML draws {self.effect_draws} from N(mode, H^-1), seed {seed}"
        log(effects_summary_line(table, result.reference_point, text))
        return table


def check_explanatory_options(
    *,
    method: str,
    covariates: Path | None,
    topics: Path | None,
    groups: Path | None,
    topic_col: list[str] | None,
    covariate_scale: str,
    effects: Path | None,
    effect_draws: int,
    facets_plot: Path | None,
    compare_models: Path | None,
    spec: list[str] | None,
) -> Explanatory:
    """Refuse bad combinations before any work (``effects.md`` §10, exit 2)."""
    if covariate_scale not in ("auto", "raw", "z"):
        raise ConfigError(f"unknown --covariate-scale {covariate_scale!r}", hint="use auto, raw or z")
    if topic_col and topics is None:
        raise ConfigError("--topic-col needs --topics")
    if effects is not None and covariates is None and topics is None and groups is None:
        raise ConfigError("--effects has nothing to contrast", hint="add --covariates, --topics or --groups")
    if effect_draws < 100:
        raise ConfigError(f"--effect-draws {effect_draws} is too few", hint="use at least 100 (default 4000)")
    if facets_plot is not None and facets_plot.suffix.lower() not in PLOT_SUFFIXES:
        raise ConfigError(f"{facets_plot}: cannot tell the figure format", hint="name the plot .png, .pdf or .svg")
    if spec and (compare_models is None or method != "nuts"):
        raise ConfigError("--spec needs --compare-models and --method nuts")
    specs = parse_specs(spec)
    for name, terms in specs or []:
        if "topics" in terms and topics is None:
            raise ConfigError(f"--spec {name}: term 'topics' needs --topics")
        if "groups" in terms and groups is None:
            raise ConfigError(f"--spec {name}: term 'groups' needs --groups")
        if any(t not in ("topics", "groups") for t in terms) and covariates is None:
            raise ConfigError(f"--spec {name}: covariate terms need --covariates")
    return Explanatory(effect_draws=effect_draws, specs=specs)
