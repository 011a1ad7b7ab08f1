"""The options of ``compare`` (``docs/commands/compare.md#options``), light enough for the command line to import
at start: :class:`CompareOptions` (each field carries its flag), its rules (:meth:`CompareOptions.check`) and the
``--directions`` table (:func:`read_directions`).

Example:
    >>> o = CompareOptions(groups=["A", "B"], strata=["model"])
    >>> o.group_col, o.n_min, o.n_resamples, o.summary_keys()
    ('tutor', 15, 9999, (['metric'], ['metric']))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag, metrics_cols_flag, n_min_flag, n_resamples_flag, seed_flag, split_list
from tutormetrics.io.tables import require_distinct
from tutormetrics.stats.group_columns import group_columns, join_group_cols

__all__ = ["ADJUST", "DISTINCT_HINT", "CompareOptions", "read_directions"]

#: ``--adjust`` of ``compare`` (``docs/statistics.md#paired-group-comparisons``).
ADJUST = ("holm", "bonferroni", "bh", "by", "none")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
#: why the group, block, subset and metric columns must differ (``docs/commands/compare.md#options``)
DISTINCT_HINT = "groups are compared within blocks, per subset, on metric columns: each option names a different column"


def _list(values: list[str] | str | None) -> list[str]:
    """A repeatable or comma-separated option as a list, ``[]`` when not given."""
    return split_list(values) or []


@dataclass(kw_only=True)
class CompareOptions:
    """Paired comparisons of groups matched on a block column (``docs/commands/compare.md``): the pairing, the
    metrics and groups, the analysis subsets (``strata`` × ``dimensions``), the multiplicity family and the
    intervals, and the ``--summary`` settings (``by``, ``cells``, ``threshold``, ``reduce``)."""

    PANEL: ClassVar[str] = "Compare"

    group_col: str = flag(
        "--group-col", default=["tutor"], parse=join_group_cols, cli_type=list[str] | None,
        help="Column(s) with the groups, e.g. tutor; repeat or comma-separate (a group is the combination, labelled a/b; "
        "--groups takes labels).",
    )
    block_col: str = flag("--block-col", default="conversation_id", help="Pairing column, e.g. conversation_id.")
    metrics_cols: list[str] | None = metrics_cols_flag()
    groups: list[str] | None = flag(
        "--groups", default=None, parse=split_list, cli_type=str | None, help="Groups to compare, a comma list 'A,B[,C]'; default: all."
    )
    dimensions: list[str] = flag(
        "--dimension", default=None, parse=_list, cli_type=list[str] | None, show_default=False,
        help="Run the analysis per value of this column (repeat or comma-separate for several), e.g. a demographic dimension.",
    )
    strata: list[str] = flag(
        "--strata", default=None, parse=_list, cli_type=list[str] | None, show_default=False,
        help="Split the rows by the crossed values of these columns (repeat or comma-separate), e.g. model,domain.",
    )
    adjust: str = flag("--adjust", default="holm", help="Multiplicity adjustment: holm, bonferroni, bh, by or none.")
    family: str = flag(
        "--family", default="dimension",
        help="Multiplicity family: metric (the pairs of one metric), dimension (one subset) or all (the table).",
    )
    violation_ci: str = flag(
        "--violation-ci", default="unadjusted",
        help="Interval behind violation and the figure's mark: unadjusted (95%) or bonferroni (1 - 0.05/m per family).",
    )
    n_min: int = n_min_flag(15)  # complete pairs; a violation needs at least this many
    n_resamples: int = n_resamples_flag(9999)
    seed: int = seed_flag()
    by: list[str] | None = flag(
        "--by", default=None, parse=split_list, cli_type=list[str] | None, panel="Summary",
        help="--summary: one row per these keys, repeat or comma-separate (default metric).",
    )
    cells: list[str] | None = flag(
        "--cells", default=None, parse=split_list, cli_type=list[str] | None, panel="Summary",
        help="--summary: cell keys, repeat or comma-separate; must contain --by (default: --by).",
    )
    threshold: float | None = flag(
        "--threshold", default=None, cli_type=float | None, panel="Summary",
        help="--summary: |r| at or above which a cell counts (default 0.10).",
    )
    reduce: str | None = flag(
        "--reduce", default=None, cli_type=str | None, panel="Summary",
        help="--summary: max or mean of the pairwise |r| of a 3+-level subset (default max).",
    )

    def summary_keys(self) -> tuple[list[str], list[str]]:
        """The ``--by`` and ``--cells`` keys of the bias summary (``metric``, and ``--by``, when not given)."""
        by = self.by or ["metric"]
        return by, self.cells or by

    def check(self, *, summary: bool = True, figure: str | os.PathLike[str] | None = None) -> None:
        """The option rules (``docs/commands/compare.md#options``), before anything is read; a broken one is exit 2.
        ``summary``: the bias summary is asked for (``--by``, ``--cells``, ``--threshold``, ``--reduce`` need it);
        ``figure``: the effect-matrix figure's path (its suffix names the format).

        >>> CompareOptions(by=["metric"]).check(summary=False)
        Traceback (most recent call last):
        ...
        tutormetrics.errors.ConfigError: --by need(s) --summary
        """
        if self.adjust not in ADJUST:
            raise ConfigError(f"unknown --adjust {self.adjust!r}", hint="use holm, bonferroni, bh, by or none")
        if self.family not in ("metric", "dimension", "all"):
            raise ConfigError(f"unknown --family {self.family!r}", hint="use metric, dimension or all")
        if self.violation_ci not in ("unadjusted", "bonferroni"):
            raise ConfigError(f"unknown --violation-ci {self.violation_ci!r}", hint="use unadjusted or bonferroni")
        given = {"--by": self.by, "--cells": self.cells, "--threshold": self.threshold, "--reduce": self.reduce}
        if not summary and any(v is not None for v in given.values()):
            raise ConfigError(f"{', '.join(k for k, v in given.items() if v is not None)} need(s) --summary")
        if self.reduce is not None and self.reduce not in ("max", "mean"):
            raise ConfigError(f"unknown --reduce {self.reduce!r}", hint="use max or mean")
        allowed = {*self.strata, "metric", *(("dimension", "dimension_value") if self.dimensions else ())}
        for name, keys in (("--by", self.by), ("--cells", self.cells)):
            bad = [k for k in keys or [] if k not in allowed]
            if bad:
                raise ConfigError(f"{name}: unknown key(s) {bad}", hint=f"use {', '.join(sorted(allowed))}")
        require_distinct({"--group-col": group_columns(self.group_col), "--block-col": self.block_col, "--strata": self.strata,
                          "--dimension": self.dimensions, "--metrics-cols": self.metrics_cols}, command="compare", hint=DISTINCT_HINT)  # fmt: skip
        if figure is not None and os.path.splitext(os.fspath(figure))[1].lower() not in FIGURE_SUFFIXES:
            raise ConfigError(f"{figure}: cannot tell the figure format", hint="name the figure .png, .svg or .pdf")


def read_directions(path: str | os.PathLike[str]) -> dict[str, str]:
    """``--directions`` (``metric, desirable``) as a dict; a desirable value other than higher|lower|neutral is exit 2."""
    from tutormetrics.io.tables import read_table, require_columns

    frame = read_table(path, string_columns=True)
    require_columns(frame, ["metric", "desirable"], source=str(path), option="--directions")
    out = {}
    for i, (metric, raw) in enumerate(frame.select("metric", "desirable").iter_rows(), start=1):
        value = (raw or "").strip().lower()
        if value not in ("higher", "lower", "neutral"):
            raise ConfigError(f"{path}: row {i}: desirable {value!r} for {metric!r}", hint="use higher, lower or neutral")
        out[str(metric)] = value
    return out
