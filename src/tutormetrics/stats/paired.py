"""Paired group comparisons (``docs/statistics.md#paired-group-comparisons``): Wilcoxon signed-rank with T+, Kerby's
rank-biserial r with a bootstrap CI, Friedman with Kendall's W, the sign test, and Holm/BH/BY.

* Differences are rounded first (``d = round(x − y, round_to)``) and zeros dropped (``"wilcox"``).
* **T+ comes from the ``"greater"`` statistic**: scipy's two-sided ``statistic`` is ``min(T+, T−)``.
* p is two-sided. ``method="auto"`` in scipy is exact without ties (n ≤ 50); with ties it is exact
  only up to n = 13 and normal above, so for tied data with 13 < n ≤ 50 a
  ``PermutationMethod(n_resamples=9999)`` (seeded) is used instead.
* ``r_rb = (T+ − T−)/(T+ + T−) = 4T+/(n(n+1)) − 1`` over the n non-zero differences; > 0 means x > y.
* CI: BCa bootstrap of r_rb over pairs; percentile fallback (reason ``ci_percentile``) when BCa
  degenerates (constant resampled statistic, e.g. all differences of one sign). The resamples,
  the interval and the fallback are ``scipy.stats.bootstrap``'s (same draws for the same seed and n),
  computed by :mod:`tutormetrics.stats.paired_bootstrap` from weight sums over the once-sorted |d|;
  ``compare`` shares the draws among all comparisons with the same n.
* For n > 50 non-zero differences p is scipy's normal approximation, computed from the same sort
  (:func:`tutormetrics.stats.signed_rank.wilcoxon_asymptotic_p`); below, scipy's exact or permutation test.

Example:
    >>> d = [0.8, -0.3, 1.2, 2.1, -0.9, 0.4, 1.7, -1.4, 2.6, 0.6, 1.1, -0.2, 3.0, 0.5, 1.9]
    >>> res = paired_wilcoxon(d, [0.0] * 15, n_resamples=999)
    >>> res["t_plus"], round(res["r_rb"], 6), res["p"]
    (100.0, 0.666667, 0.02154541015625)
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.frames import frame_inputs
from tutormetrics.io.tables import require_columns, require_distinct
from tutormetrics.progress import Log, quiet
from tutormetrics.stats.compare_options import DISTINCT_HINT
from tutormetrics.stats.multiplicity import ADJUST_METHODS, AdjustMethod, adjust_pvalues, significance_stars
from tutormetrics.stats.paired_bootstrap import (
    bootstrap_paired,
    paired_intervals,
    percentile_interval,
    rank_biserial_interval,
)
from tutormetrics.stats.signed_rank import signed_ranks, wilcoxon_asymptotic_p

__all__ = [
    "paired_wilcoxon",
    "rank_biserial",
    "compare_groups",
    "friedman",
    "sign_test",
    "mean_diff_ci",
    "k_of_m_lines",
    "FAMILIES",
]

_NAN = float("nan")


def rank_biserial(d: np.ndarray, axis: int = -1) -> np.ndarray:
    """Matched-pairs rank-biserial r (Kerby 2014), vectorised along ``axis``.

    Zeros are dropped, |d| is ranked with average ranks among the non-zero differences and
    ``r = 4T+/(n(n+1)) − 1``. A resample with no non-zero difference gives 0 (no direction).

    Example:
        >>> float(rank_biserial(np.array([1.0, 2.0, -0.5, 0.0])))
        0.6666666666666667
    """
    d = np.moveaxis(np.asarray(d, dtype=float), axis, -1)
    nonzero = d != 0
    n_zero = (~nonzero).sum(-1, keepdims=True)
    # zeros rank below every non-zero |d|; subtracting their count gives ranks among non-zeros
    ranks = stats.rankdata(np.abs(d), axis=-1) - n_zero
    t_plus = np.where(d > 0, ranks, 0.0).sum(-1)
    n = nonzero.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 4.0 * t_plus / (n * (n + 1.0)) - 1.0
    return np.where(n > 0, r, 0.0)


def _t_plus(d: np.ndarray, axis: int = -1) -> np.ndarray:
    """Wilcoxon T+ (sum of the ranks of |d| over positive d) along ``axis``; d has no zeros."""
    d = np.moveaxis(d, axis, -1)
    return np.where(d > 0, stats.rankdata(np.abs(d), axis=-1), 0.0).sum(-1)


def _nan_result(n: int, n_nonzero: int, reason: str) -> dict[str, Any]:
    return {
        "n": n,
        "n_nonzero": n_nonzero,
        "t_plus": _NAN,
        "p": _NAN,
        "r_rb": _NAN,
        "ci_low": _NAN,
        "ci_high": _NAN,
        "p_method": "",
        "reason": reason,
    }


def paired_wilcoxon(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    round_to: int = 10,
    n_min: int = 15,
    n_resamples: int = 9999,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Wilcoxon signed-rank test of x vs y over complete pairs, with T+, r_rb and its bootstrap CI.

    Returns a dict ``n, n_nonzero, t_plus, p, r_rb, ci_low, ci_high, p_method, reason``; ``reason``
    is ``too_few`` (n < ``n_min``), ``constant`` (every difference is zero) or ``ci_percentile``,
    joined by ``;``. ``n_resamples=0`` skips the CI.

    Args:
        x: first value of each pair.
        y: second value of each pair (same length); pairs with a non-finite side are dropped.
        round_to: decimals the differences are rounded to before zeros are counted.
        n_min: fewer complete pairs than this gives reason ``too_few``.
        n_resamples: bootstrap resamples of the r_rb CI; 0 skips it.
        confidence_level: coverage of the CI, in (0, 1).
        seed: seed of the bootstrap draws.

    Example:
        >>> res = paired_wilcoxon([3.1, 2.5], [2.0, 2.2])
        >>> res["reason"]
        'too_few'
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError("x and y must be 1-D arrays of equal length")
    mask = np.isfinite(x) & np.isfinite(y)
    d_all = np.round(x[mask] - y[mask], round_to)
    n = int(d_all.size)
    d = d_all[d_all != 0]
    n_nonzero = int(d.size)
    if n < n_min:
        return _nan_result(n, n_nonzero, "too_few")
    if n_nonzero == 0:
        return _nan_result(n, n_nonzero, "constant")
    sr = signed_ranks(d)
    has_ties = sr.has_ties
    p_method = "exact" if not has_ties and n_nonzero <= 50 else "asymptotic"
    t_plus = sr.t_plus  # = stats.wilcoxon(d, alternative="greater").statistic
    if n_nonzero > 50:
        p = wilcoxon_asymptotic_p(sr)  # = stats.wilcoxon(d, method="auto").pvalue (normal above n = 50)
    elif has_ties:
        # what stats.wilcoxon(method=PermutationMethod(9999)) computes (an exact enumeration when
        # 2**n <= 9999, i.e. n <= 13), with a vectorised T+ instead of a Python loop
        p = stats.permutation_test(
            (d,),
            _t_plus,
            permutation_type="samples",
            vectorized=True,
            n_resamples=9999,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        ).pvalue
        p_method = "permutation_exact" if n_nonzero <= 13 else "permutation"
    else:
        p = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided", method="auto").pvalue
    r_rb = 4.0 * t_plus / (n_nonzero * (n_nonzero + 1.0)) - 1.0
    reasons: list[str] = []
    lo = hi = _NAN
    if n_resamples > 0:
        lo, hi, used_percentile = _bootstrap_ci(d_all, n_resamples, confidence_level, seed)
        if used_percentile:
            reasons.append("ci_percentile")
    return {
        "n": n,
        "n_nonzero": n_nonzero,
        "t_plus": t_plus,
        "p": float(p),
        "r_rb": float(r_rb),
        "ci_low": lo,
        "ci_high": hi,
        "p_method": p_method,
        "reason": ";".join(reasons),
    }


def _bootstrap_ci(d: np.ndarray, n_resamples: int, confidence_level: float, seed: int) -> tuple[float, float, bool]:
    """BCa interval of r_rb over pairs (zeros included, as resampled units); percentile fallback.

    Equal to ``scipy.stats.bootstrap((d,), rank_biserial, method="BCa", rng=np.random.default_rng(seed))``
    (then ``method="percentile"`` when BCa is not finite); NaN for fewer than two pairs.
    """
    if d.size < 2 or n_resamples <= 0:
        return _NAN, _NAN, False
    sr = signed_ranks(d)
    (theta_b,), _ = bootstrap_paired([sr], [], d.size, n_resamples, seed)
    return rank_biserial_interval(sr, theta_b, confidence_level)  # type: ignore[arg-type]


def friedman(data: np.ndarray | Sequence[Sequence[float]]) -> dict[str, Any]:
    """Friedman test over blocks × conditions with Kendall's ``W = χ²/(n(k−1))``.

    Blocks with a missing value are dropped. Returns ``n, k, chi2, p, kendall_w, reason``.

    Example:
        >>> res = friedman([[1, 2, 3], [1, 3, 2], [1, 2, 3], [2, 1, 3]])
        >>> res["n"], res["k"], round(res["kendall_w"], 3)
        (4, 3, 0.562)
    """
    arr = np.asarray(data, dtype=float)
    if arr.ndim != 2:
        raise ConfigError("friedman needs a blocks x conditions 2-D array")
    arr = arr[np.all(np.isfinite(arr), axis=1)]
    n, k = arr.shape
    if k < 3 or n < 2:
        return {"n": n, "k": k, "chi2": _NAN, "p": _NAN, "kendall_w": _NAN, "reason": "too_few"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.friedmanchisquare(*arr.T)
    chi2 = float(res.statistic)
    reason = "" if np.isfinite(chi2) else "constant"
    return {"n": n, "k": k, "chi2": chi2, "p": float(res.pvalue), "kendall_w": chi2 / (n * (k - 1)), "reason": reason}


def sign_test(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray | None = None) -> dict[str, Any]:
    """Exact sign (McNemar) test: ``binomtest(n_pos, n_pos + n_neg)`` on the signs of x − y.

    Example:
        >>> sign_test([1] * 12 + [-1] * 3)["p"]
        0.03515625
    """
    d = np.asarray(x, dtype=float) - (0.0 if y is None else np.asarray(y, dtype=float))
    d = d[np.isfinite(d)]
    n_pos, n_neg = int((d > 0).sum()), int((d < 0).sum())
    if n_pos + n_neg == 0:
        return {"n_pos": 0, "n_neg": 0, "p": _NAN, "reason": "constant"}
    return {"n_pos": n_pos, "n_neg": n_neg, "p": float(stats.binomtest(n_pos, n_pos + n_neg).pvalue), "reason": ""}


_SCHEMA: dict[str, Any] = {
    "metric": pl.String,
    "group_a": pl.String,
    "group_b": pl.String,
    "n": pl.Int64,
    "n_nonzero": pl.Int64,
    "t_plus": pl.Float64,
    "p": pl.Float64,
    "p_adj": pl.Float64,
    "adjust": pl.String,
    "r_rb": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "stars": pl.String,
    "reason": pl.String,
    "p_method": pl.String,
    "test": pl.String,
    "k": pl.Int64,
    "chi2": pl.Float64,
    "kendall_w": pl.Float64,
    "violation": pl.Boolean,
    "mean_a": pl.Float64,
    "mean_b": pl.Float64,
    "mean_diff": pl.Float64,
    "diff_ci_low": pl.Float64,
    "diff_ci_high": pl.Float64,
    "family": pl.String,
    "favoured": pl.String,
    "ci_level": pl.Float64,
}

FAMILIES: tuple[str, ...] = ("metric", "dimension", "all")
DIRECTIONS: tuple[str, ...] = ("higher", "lower", "neutral")


def _resolve_groups(present: list[Any], groups: Sequence[Any] | None) -> list[Any]:
    """The groups of one subset: its levels (sorted), or the requested ones it has, in the requested order."""
    if groups is None:
        return present
    as_str = {str(g): g for g in present}
    return [g if g in present else as_str[str(g)] for g in groups if g in present or str(g) in as_str]


def _check_groups(df: pl.DataFrame, group_col: str, groups: Sequence[Any] | None) -> None:
    """A requested group found nowhere in the (subset) rows is a configuration error."""
    if groups is None:
        return
    present = df[group_col].drop_nulls().unique().sort().to_list()
    as_str = {str(g) for g in present}
    unknown = [g for g in groups if g not in present and str(g) not in as_str]
    if unknown:
        raise ConfigError(f"groups {unknown} not found in {group_col!r}", hint=f"available: {present}")


def _check_input(df: pl.DataFrame, metric_cols: Sequence[str] | None, group_col: str, block_col: str, skip: Sequence[str] = ()) -> list[str]:
    """Validated metric columns (default: every numeric column but the group, block and ``skip`` columns)."""
    require_columns(df, [group_col, block_col], source="metrics", option="--group-col/--block-col")
    if metric_cols is None:
        metric_cols = [c for c, dt in df.schema.items() if dt.is_numeric() and c not in (group_col, block_col, *skip)]
    metric_cols = list(metric_cols)
    if not metric_cols:
        raise InputSchemaError("metrics: no numeric metric column to compare", hint="name them with --metrics-cols")
    require_columns(df, metric_cols, source="metrics", option="--metrics-cols")
    for metric in metric_cols:
        if not (df.schema[metric].is_numeric() or df.schema[metric] in (pl.Boolean, pl.Null)):
            raise InputSchemaError(f"metrics: column {metric!r} is not numeric", hint="choose metric columns with --metrics-cols")
    return metric_cols


def _check_unique(df: pl.DataFrame, group_col: str, block_col: str, where: str = "") -> None:
    """One row per (block, group) in an analysis subset."""
    dup = df.group_by([block_col, group_col]).len().filter(pl.col("len") > 1)
    if dup.height:
        raise InputSchemaError(
            f"metrics: {dup.height} ({block_col}, {group_col}) combinations occur more than once" + (f" in {where}" if where else ""),
            hint="aggregate to one row per block and group before comparing (tutormetrics aggregate), or split them with --strata/--dimension",
        )


def _block_matrix(values: pl.DataFrame, groups: list[Any], group_col: str, block_col: str, metric: str) -> np.ndarray:
    """Blocks × groups matrix of one metric (NaN where a block lacks a group or a value)."""
    cols = []
    blocks = values.select(pl.col(block_col).unique().sort())
    for g in groups:
        sub = values.filter(pl.col(group_col) == g).select(block_col, pl.col(metric).alias("__v"))
        cols.append(blocks.join(sub, on=block_col, how="left")["__v"].fill_null(np.nan).to_numpy())
    return np.column_stack(cols) if cols else np.empty((0, 0))


def mean_diff_ci(
    x: np.ndarray, y: np.ndarray, *, n_resamples: int = 9999, confidence_level: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """Paired means over the complete pairs and a percentile bootstrap CI of mean(x − y) (``docs/design/studies.md#mean-differences``).

    The n pairs are resampled with replacement exactly as ``scipy.stats.bootstrap((x − y,), np.mean,
    method="percentile", rng=np.random.default_rng(seed))`` does (the same draws, taken in chunks; the
    resample means as weighted sums, equal to scipy's to float rounding); the CI is NaN when n < 2 or
    ``n_resamples = 0``. Means are reported whatever n.

    Args:
        x: first value of each pair.
        y: second value of each pair; pairs with a non-finite side are dropped.
        n_resamples: bootstrap resamples; 0 skips the CI.
        confidence_level: coverage of the CI, in (0, 1).
        seed: seed of the bootstrap draws.

    Example:
        >>> r = mean_diff_ci(np.array([3.0, 2.0, np.nan]), np.array([1.0, 1.0, 0.0]), n_resamples=0)
        >>> r["mean_a"], r["mean_b"], r["mean_diff"]
        (2.5, 1.0, 1.5)
    """
    mask = np.isfinite(x) & np.isfinite(y)
    xa, ya = x[mask], y[mask]
    n = xa.size
    out = {"mean_a": _NAN, "mean_b": _NAN, "mean_diff": _NAN, "diff_ci_low": _NAN, "diff_ci_high": _NAN}
    if n == 0:
        return out
    d = xa - ya
    out.update(mean_a=float(xa.mean()), mean_b=float(ya.mean()), mean_diff=float(d.mean()))
    if n >= 2 and n_resamples > 0:
        if np.all(d == d[0]):
            out.update(diff_ci_low=float(d[0]), diff_ci_high=float(d[0]))
            return out
        _, (theta_b,) = bootstrap_paired([], [d], n, n_resamples, seed)
        lo, hi = percentile_interval(theta_b, confidence_level)  # type: ignore[arg-type]
        out.update(diff_ci_low=lo, diff_ci_high=hi)
    return out


def _friedman_row(matrix: np.ndarray, metric: str) -> dict[str, Any]:
    """The Friedman row of one metric: complete blocks, χ², p, Kendall's W."""
    res = friedman(matrix)
    return {
        "metric": metric, "test": "friedman", "group_a": None, "group_b": None, "n": res["n"], "k": res["k"],
        "chi2": res["chi2"], "kendall_w": res["kendall_w"], "p": res["p"], "reason": res["reason"],
        "n_nonzero": None, "t_plus": _NAN, "r_rb": _NAN, "ci_low": _NAN, "ci_high": _NAN, "p_method": "", "violation": None,
        "mean_a": _NAN, "mean_b": _NAN, "mean_diff": _NAN, "diff_ci_low": _NAN, "diff_ci_high": _NAN, "favoured": None,
    }  # fmt: skip


def _favoured(r_rb: float, desirable: str | None, group_a: str, group_b: str) -> str | None:
    """The group the effect favours: by r_rb's sign and the metric's desirable direction."""
    if desirable not in ("higher", "lower") or r_rb is None or not np.isfinite(r_rb) or r_rb == 0:
        return None
    a_higher = r_rb > 0
    return group_a if a_higher == (desirable == "higher") else group_b


def _wilcoxon_rows(
    matrix: np.ndarray, groups: list[Any], metric: str, *, n_min: int, desirable: str | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    """The k(k − 1)/2 pairwise Wilcoxon rows of one metric, with ``violation`` (CI excludes 0, n ≥ n_min)
    and the paired means; their intervals are filled by :func:`_fill_intervals` for the whole table."""
    rows = []
    test_kwargs = {**kwargs, "n_resamples": 0}
    for i, j in itertools.combinations(range(len(groups)), 2):
        res = paired_wilcoxon(matrix[:, i], matrix[:, j], n_min=n_min, **test_kwargs)
        a, b = str(groups[i]), str(groups[j])
        rows.append(
            {
                "metric": metric, "test": "wilcoxon", "group_a": a, "group_b": b, **res,
                "k": None, "chi2": _NAN, "kendall_w": _NAN, "violation": False,
                **mean_diff_ci(matrix[:, i], matrix[:, j], n_resamples=0), "favoured": _favoured(res["r_rb"], desirable, a, b),
                "ci_level": kwargs.get("confidence_level", 0.95) if kwargs.get("n_resamples", 1) > 0 else _NAN,
                "_xy": (matrix[:, i], matrix[:, j]),
            }
        )  # fmt: skip
    return rows


def _fill_intervals(
    rows: list[dict[str, Any]], *, n_min: int, round_to: int = 10, n_resamples: int = 9999, confidence_level: float = 0.95, seed: int = 0
) -> None:
    """The r_rb interval (rows with n ≥ n_min and a non-zero difference) and the mean-difference interval
    (n ≥ 2, not all differences equal) of Wilcoxon rows, all rows with the same n on one stream of draws;
    then ``violation``. Same numbers as :func:`paired_wilcoxon` and :func:`mean_diff_ci` one row at a time."""
    jobs: list[tuple[np.ndarray | None, np.ndarray | None]] = []
    for r in rows:
        x, y = r["_xy"]
        mask = np.isfinite(x) & np.isfinite(y)
        d = x[mask] - y[mask]
        rank = np.round(d, round_to) if r["n"] >= n_min and r["n_nonzero"] else None
        mean = d if d.size >= 2 and not np.all(d == d[0]) else None
        if d.size >= 2 and mean is None and n_resamples > 0:  # every difference equal: a point interval
            r.update(diff_ci_low=float(d[0]), diff_ci_high=float(d[0]))
        jobs.append((rank, mean))
    for r, (rank, mean, theta_b) in zip(rows, paired_intervals(jobs, n_resamples, confidence_level, seed), strict=True):
        if rank is not None:
            r.update(ci_low=rank[0], ci_high=rank[1], _theta_b=theta_b)
            if rank[2]:
                r["reason"] = ";".join([c for c in r["reason"].split(";") if c] + ["ci_percentile"])
        if mean is not None:
            r.update(diff_ci_low=mean[0], diff_ci_high=mean[1])
        excludes_zero = bool(r["ci_low"] > 0 or r["ci_high"] < 0)  # False for NaN
        r["violation"] = excludes_zero and r["n"] >= n_min


def _adjust_family(fam: list[dict[str, Any]], adjust: str) -> None:
    if not fam:
        return
    p_adj = adjust_pvalues(np.array([r["p"] for r in fam], dtype=float), adjust)
    for r, pa in zip(fam, p_adj, strict=True):
        r.update(p_adj=float(pa), adjust=adjust, stars=significance_stars(float(pa)))


def _adjusted_intervals(families: list[list[dict[str, Any]]], *, n_min: int, round_to: int, n_resamples: int, confidence_level: float, seed: int) -> None:
    """Bonferroni-adjusted r_rb intervals [decision, issue 24]: in a Wilcoxon family with m finite p, the CI
    is recomputed at level ``1 − (1 − confidence_level)/m`` and ``violation`` follows it, so a mark
    never contradicts the family's correction as plainly as an unadjusted 95% interval can."""
    for fam in families:
        m = sum(1 for r in fam if r["p"] is not None and np.isfinite(r["p"]))
        if m <= 1 or n_resamples <= 0:
            continue
        level = 1.0 - (1.0 - confidence_level) / m
        for r in fam:
            if r["n"] < n_min or r["n_nonzero"] == 0:
                continue
            x, y = r["_xy"]
            mask = np.isfinite(x) & np.isfinite(y)
            d_all = np.round(x[mask] - y[mask], round_to)
            if r.get("_theta_b") is not None:  # the same resamples at another level
                lo, hi, used_percentile = rank_biserial_interval(signed_ranks(d_all), r["_theta_b"], level)
            else:
                lo, hi, used_percentile = _bootstrap_ci(d_all, n_resamples, level, seed)
            reasons = [c for c in r["reason"].split(";") if c and c != "ci_percentile"] + (["ci_percentile"] if used_percentile else [])
            r.update(ci_low=lo, ci_high=hi, ci_level=level, reason=";".join(reasons), violation=bool(lo > 0 or hi < 0))


def _adjust_rows(subsets: list[list[dict[str, Any]]], adjust: str, family: str) -> list[list[dict[str, Any]]]:
    """Fill ``p_adj``, ``adjust``, ``stars`` and ``family`` (``docs/design/studies.md#families``). Friedman and Wilcoxon
    rows never share a family. ``metric``: the pairs of one metric in one subset (Friedman p_adj = p);
    ``dimension``: every Wilcoxon row of one subset, and its Friedman rows across metrics; ``all``: the table."""
    for rows in subsets:
        for r in rows:
            r["family"] = family
    for test in ("friedman", "wilcoxon"):
        per_subset = [[r for r in rows if r["test"] == test] for rows in subsets]
        if family == "all":
            families = [[r for rows in per_subset for r in rows]]
        elif family == "dimension" or test == "friedman":
            families = per_subset
        else:
            families = [[r for r in rows if r["metric"] == m] for rows in per_subset for m in dict.fromkeys(r["metric"] for r in rows)]
        method = "none" if family == "metric" and test == "friedman" else adjust
        for fam in families:
            _adjust_family(fam, method)
            for r in fam:
                r["adjust"] = adjust
        if test == "wilcoxon":
            wilcoxon_families = families
    return wilcoxon_families


def _compare_one(
    df: pl.DataFrame,
    metric_cols: list[str],
    groups: list[Any],
    group_col: str,
    block_col: str,
    wilcoxon_kwargs: dict[str, Any],
    directions: Mapping[str, str],
) -> list[dict[str, Any]]:
    """All rows of one analysis subset (its own groups), before adjustment."""
    rows: list[dict[str, Any]] = []
    for metric in metric_cols:
        values = df.select([block_col, group_col, pl.col(metric).cast(pl.Float64)])
        matrix = _block_matrix(values, groups, group_col, block_col, metric)
        if len(groups) >= 3:
            rows.append(_friedman_row(matrix, metric))
        rows.extend(_wilcoxon_rows(matrix, groups, metric, desirable=directions.get(metric), **wilcoxon_kwargs))
    return rows


def _subsets(
    df: pl.DataFrame, strata: list[str], dimensions: list[str], log: Log
) -> list[tuple[dict[str, str], pl.DataFrame]]:
    """The analysis subsets (``docs/design/studies.md#analysis-subsets``): crossed strata, then one subset per value of each
    dimension inside each stratum (sorted as text; missing values skipped)."""
    if strata:
        missing = df.select(pl.any_horizontal(pl.col(c).is_null() for c in strata)).to_series()
        if missing.any():
            log(f"compare: {int(missing.sum())} row(s) with a missing --strata value dropped")
            df = df.filter(~missing)
        keys = df.select([pl.col(c).cast(pl.String) for c in strata])
        combos = sorted(set(keys.iter_rows()))
        strat = [
            (dict(zip(strata, combo, strict=True)), df.filter(pl.all_horizontal(keys[c] == v for c, v in zip(strata, combo, strict=True))))
            for combo in combos
        ]  # fmt: skip
    else:
        strat = [({}, df)]
    if not dimensions:
        return strat
    out = []
    for lead, part in strat:
        for dim in dimensions:
            levels = part.get_column(dim).cast(pl.String)
            for level in sorted(levels.drop_nulls().unique().to_list()):
                out.append(({**lead, "dimension": dim, "dimension_value": level}, part.filter(levels == level)))
    return out


def _describe(lead: dict[str, str]) -> str:
    return ";".join(f"{k}={v}" for k, v in lead.items() if k != "dimension") or "all rows"


@frame_inputs("df")
def compare_groups(
    df: pl.DataFrame,
    *,
    metric_cols: Sequence[str] | None = None,
    group_col: str,
    block_col: str,
    groups: Sequence[Any] | None = None,
    dimensions: Sequence[str] | None = None,
    strata: Sequence[str] | None = None,
    adjust: AdjustMethod = "holm",
    family: Literal["metric", "dimension", "all"] = "dimension",
    directions: Mapping[str, str] | None = None,
    violation_ci: Literal["unadjusted", "bonferroni"] = "unadjusted",
    round_to: int = 10,
    n_min: int = 15,
    n_resamples: int = 9999,
    confidence_level: float = 0.95,
    seed: int = 0,
    log: Log | None = None,
) -> pl.DataFrame:
    """Paired comparisons of groups matched on ``block_col``, for each metric and analysis subset
    (``docs/design/raters.md#compare-k-groups``, ``docs/design/studies.md#compare``).

    Analysis subsets: the crossed ``strata`` combinations, and inside each one subset per value of each
    ``dimensions`` column. **Groups are resolved per subset** (the values present in its rows, or the
    requested ``groups`` it has, in their order); a subset with fewer than two groups is skipped and
    counted through ``log``. With k ≥ 3 groups a metric gets a Friedman row (complete blocks ``n``,
    ``k``, ``chi2``, ``p``, ``kendall_w = χ²/(n(k − 1))``), then the k(k − 1)/2 pairwise Wilcoxon rows
    (x = group_a, y = group_b in blocks that have both) with the paired means, ``mean_diff = mean(x − y)``
    and its percentile bootstrap CI. ``family`` chooses the multiplicity family (``metric``,
    ``dimension`` = one subset, ``all``). ``violation`` (Wilcoxon rows) = the unadjusted 95% CI of r_rb
    excludes 0 and n ≥ ``n_min``; ``violation_ci="bonferroni"`` uses the interval at level 1 − 0.05/m of
    the row's Wilcoxon family instead, and ``ci_level`` records the level of ``ci_low, ci_high``.
    ``directions`` maps metric → higher|lower|neutral for ``favoured``.
    Columns: strata columns, ``dimension, dimension_value`` (with ``dimensions``), ``metric, group_a,
    group_b, n, n_nonzero, t_plus, p, p_adj, adjust, r_rb, ci_low, ci_high, stars, reason, p_method,
    test, [k, chi2, kendall_w], violation, mean_a, mean_b, mean_diff, diff_ci_low, diff_ci_high,
    family, favoured, ci_level`` (``k, chi2, kendall_w`` only when some subset has k ≥ 3).

    Args:
        df: the metrics table, one row per group × block (× subset).
        metric_cols: metrics to compare; ``None`` takes every numeric column but the group, block, strata and dimension
            ones.
        group_col: column naming the groups compared.
        block_col: column the groups are matched on (e.g. ``conversation_id``).
        groups: groups to compare, in this order; ``None`` takes every group present, sorted.
        dimensions: columns whose values each make one analysis subset.
        strata: columns whose crossed values make the analysis subsets.
        adjust: multiplicity adjustment: ``holm``, ``bonferroni``, ``bh``, ``by`` or ``none``.
        family: multiplicity family: ``metric``, ``dimension`` (one subset) or ``all``.
        directions: metric → ``higher``, ``lower`` or ``neutral`` (the desirable direction), for ``favoured``.
        violation_ci: interval behind ``violation``: ``unadjusted`` (95%) or ``bonferroni``.
        round_to: decimals the differences are rounded to before zeros are counted.
        n_min: fewer complete pairs than this gives reason ``too_few``.
        n_resamples: bootstrap resamples of the CIs; 0 skips them.
        confidence_level: coverage of ``ci_low, ci_high`` and the mean-difference CI, in (0, 1).
        seed: seed of the bootstrap draws.
        log: receives the notes (skipped subsets); ``None`` is quiet.

    Example:
        >>> df = pl.DataFrame({"conversation_id": [1, 1, 2, 2], "tutor": ["A", "B"] * 2, "m": [1., 2., 3., 5.]})
        >>> t = compare_groups(df, metric_cols=["m"], group_col="tutor", block_col="conversation_id")
        >>> t["reason"][0], t["mean_diff"][0]
        ('too_few', -1.5)
    """
    log = log or quiet
    if family not in FAMILIES:
        raise ConfigError(f"unknown family {family!r}", hint="use metric, dimension or all")
    if adjust not in ADJUST_METHODS:
        raise ConfigError(f"unknown adjustment {adjust!r}", hint="use holm, bonferroni, bh, by or none")
    if violation_ci not in ("unadjusted", "bonferroni"):
        raise ConfigError(f"unknown violation interval {violation_ci!r}", hint="use unadjusted or bonferroni")
    directions = dict(directions or {})
    bad = sorted({v for v in directions.values() if v not in DIRECTIONS})
    if bad:
        raise ConfigError(f"unknown direction(s) {bad}", hint="desirable is higher, lower or neutral")
    dimensions = list(dict.fromkeys(dimensions or []))
    strata = list(dict.fromkeys(strata or []))
    require_columns(df, strata, source="metrics", option="--strata")
    require_columns(df, dimensions, source="metrics", option="--dimension")
    require_distinct({"--group-col": group_col, "--block-col": block_col, "--strata": strata, "--dimension": dimensions,
                      "--metrics-cols": list(metric_cols or [])}, command="compare", hint=DISTINCT_HINT)  # fmt: skip
    metric_cols = _check_input(df.head(0), metric_cols, group_col, block_col, skip=[*strata, *dimensions])
    _check_groups(df, group_col, groups)
    wilcoxon_kwargs = {"round_to": round_to, "n_min": n_min, "n_resamples": n_resamples, "confidence_level": confidence_level, "seed": seed}
    done: list[tuple[dict[str, str], list[dict[str, Any]], int]] = []
    skipped: list[str] = []
    for lead, whole in _subsets(df, strata, dimensions, log):
        present = whole[group_col].drop_nulls().unique().sort().to_list()
        sub_groups = _resolve_groups(present, groups)
        if len(sub_groups) < 2:
            skipped.append(_describe(lead))
            continue
        subset = whole.filter(pl.col(group_col).is_in(sub_groups))
        _check_unique(subset, group_col, block_col, _describe(lead) if lead else "")
        done.append((lead, _compare_one(subset, metric_cols, sub_groups, group_col, block_col, wilcoxon_kwargs, directions), len(sub_groups)))
    # every comparison of the table with the same n shares one stream of bootstrap draws
    _fill_intervals([r for _, rows, _ in done for r in rows if r["test"] == "wilcoxon"], **wilcoxon_kwargs)
    if skipped:
        log(f"compare: {len(skipped)} subset(s) with fewer than two groups skipped: {', '.join(skipped)}")
    if not done:
        raise ConfigError(f"no analysis subset has two groups of {group_col!r} to compare", hint="check --groups, --strata and --dimension")
    families = _adjust_rows([rows for _, rows, _ in done], adjust, family)
    if violation_ci == "bonferroni":
        _adjusted_intervals(families, **wilcoxon_kwargs)
    k_cols = any(k >= 3 for _, _, k in done)
    lead_cols = [*strata, *(["dimension", "dimension_value"] if dimensions else [])]
    return _frame([{**lead, **r} for lead, rows, _ in done for r in rows], lead_cols, k_cols)


def k_of_m_lines(table: pl.DataFrame) -> list[str]:
    """The "k of m" lines (``docs/design/studies.md#k-of-m``): per (metric, group_a, group_b) in two or more subsets,
    how often group_b and group_a had the higher paired mean, and the violations.

    Example:
        >>> t = pl.DataFrame({"test": ["wilcoxon"] * 2, "metric": ["total"] * 2, "group_a": ["1"] * 2,
        ...                   "group_b": ["2"] * 2, "mean_diff": [-1.0, 0.5], "violation": [True, False]})
        >>> k_of_m_lines(t)
        ['compare: total: 2 > 1 in 1 of 2 subsets, 1 > 2 in 1 (1 violations)']
    """
    rows = table.filter(pl.col("test") == "wilcoxon")
    if rows.height == 0:
        return []
    counts = (
        rows.group_by(["metric", "group_a", "group_b"], maintain_order=True)
        .agg(
            pl.len().alias("m"),
            (pl.col("mean_diff") < 0).sum().alias("b"),
            (pl.col("mean_diff") > 0).sum().alias("a"),
            pl.col("violation").fill_null(False).sum().alias("v"),
        )
        .filter(pl.col("m") >= 2)
    )
    return [
        f"compare: {r['metric']}: {r['group_b']} > {r['group_a']} in {r['b']} of {r['m']} subsets, "
        f"{r['group_a']} > {r['group_b']} in {r['a']} ({r['v']} violations)"
        for r in counts.iter_rows(named=True)
    ]


def _frame(rows: list[dict[str, Any]], lead: list[str], k_cols: bool) -> pl.DataFrame:
    """Rows as a frame: ``lead`` columns first; ``k, chi2, kendall_w`` only when Friedman rows can occur."""
    schema = {**{k: pl.String for k in lead}, **_SCHEMA}
    if not k_cols:
        schema = {k: v for k, v in schema.items() if k not in ("k", "chi2", "kendall_w")}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")
