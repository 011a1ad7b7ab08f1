"""Multiplicity adjustment and significance stars: the one place the library adjusts p-values (``docs/statistics.md#multiplicity``, ``docs/statistics.md#paired-group-comparisons``).

Example:
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(3).tolist()
    [0.03, 0.06, 0.06]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from tutormetrics.errors import ConfigError

AdjustMethod = Literal["bh", "holm", "bonferroni", "by", "none"]
ADJUST_METHODS: tuple[str, ...] = ("bh", "holm", "bonferroni", "by", "none")


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: str = "bh") -> np.ndarray:
    """Adjust a 1-D vector of p-values for multiplicity; NaN entries stay NaN and are not counted.

    With the m non-NaN p sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:

    - ``"bh"`` (Benjamini–Hochberg): ``adj_(i) = min_{k ≥ i} min(1, m/k · p_(k))``;
    - ``"by"`` (Benjamini–Yekutieli): BH multiplied by ``c(m) = Σ_{k=1..m} 1/k``;
    - ``"holm"``: ``adj_(i) = max_{k ≤ i} min(1, (m − k + 1) · p_(k))``;
    - ``"bonferroni"``: ``adj = min(1, m · p)`` (``docs/design/studies.md#families``);
    - ``"none"``: ``adj = p``.

    Results are returned in the input order. The function never looks at a 2-D layout: pass the
    raveled p-values of the whole matrix so that the whole matrix is one family (docs/statistics.md#multiplicity).

    Example:
        >>> adjust_pvalues([0.01, 0.04, float("nan"), 0.03], "bh").round(3).tolist()
        [0.03, 0.04, nan, 0.04]
    """
    if method not in ADJUST_METHODS:
        raise ConfigError(f"unknown adjust method {method!r}", hint=f"use one of {', '.join(ADJUST_METHODS)}")
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1:
        raise ConfigError(
            f"adjust_pvalues expects a 1-D vector, got shape {arr.shape}",
            hint="ravel the matrix first so the whole matrix is one family",
        )
    out = np.full(arr.shape, np.nan)
    keep = ~np.isnan(arr)
    vals = arr[keep]
    m = vals.size
    if m == 0:
        return out
    if np.any((vals < 0) | (vals > 1)):
        raise ConfigError("p-values must lie in [0, 1]")
    if method == "none":
        out[keep] = vals
        return out
    if method == "bonferroni":
        out[keep] = np.minimum(1.0, m * vals)
        return out
    order = np.argsort(vals, kind="mergesort")
    ranked = vals[order]
    k = np.arange(1, m + 1, dtype=float)
    if method in ("bh", "by"):
        scale = m / k
        if method == "by":
            scale = scale * np.sum(1.0 / k)
        adj = np.minimum.accumulate((scale * ranked)[::-1])[::-1]
    else:  # holm
        adj = np.maximum.accumulate((m - k + 1.0) * ranked)
    adj = np.minimum(adj, 1.0)
    res = np.empty(m)
    res[order] = adj
    out[keep] = res
    return out


def significance_stars(p: float) -> str:
    """``"***"`` for p < .001, ``"**"`` for p < .01, ``"*"`` for p < .05, else ``""`` (NaN gives ``""``).

    Example:
        >>> [significance_stars(v) for v in (0.0009, 0.009, 0.049, 0.05, float("nan"))]
        ['***', '**', '*', '', '']
    """
    if p is None or not np.isfinite(p):
        return ""
    if p < 0.001:
        return "***"
    if p < 0.01:
        return "**"
    if p < 0.05:
        return "*"
    return ""

