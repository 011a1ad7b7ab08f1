"""Infit and outfit mean-squares with Wilson–Hilferty ZSTD per element of every facet (``docs/measurement.md#fit``).

At the point estimates (THETA's EAP, FACETS' b, s, τ), for each rating ``z_n = (x_n − E_n)/√W_n`` and over the N
ratings of an element

    outfit = Σ z²/N                 q²_out = Σ (C/W²)/N² − 1/N
    infit  = Σ (x − E)² / Σ W       q²_in  = Σ (C − W²)/(Σ W)²
    ZSTD   = (MnSq^(1/3) − 1)(3/q) + q/3.

Ratings of exchanges or raters with an extreme score (all lowest or all top categories) enter no statistic.
The flag: ``underfit`` when a MnSq is above ``hi`` with its ZSTD ≥ z, else ``overfit`` when one is below ``lo``
with ZSTD ≤ −z.

Example:
    >>> sums = fit_sums(np.array([1.0, 0, 1, 1, 0, 1]), np.array([.8, .3, .6, .9, .5, .2]))
    >>> [round(float(v[0]), 6) for v in mean_squares(*sums)]
    [1.072072, 0.307722, 1.076058, 0.322465]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.estimates import Estimates
from tutormetrics.psychometrics.measurement.observations import Observations, category_moments

__all__ = [
    "FIT_COLUMNS",
    "FitRange",
    "extreme_elements",
    "fit_flags",
    "fit_line",
    "fit_sums",
    "fit_table",
    "mean_squares",
    "parse_fit_range",
    "wilson_hilferty",
]

FIT_COLUMNS = ["facet", "level", "n", "infit", "infit_zstd", "outfit", "outfit_zstd", "flag", "reason"]


@dataclass(frozen=True)
class FitRange:
    """The flag rule's cut-offs: MnSq outside ``(lo, hi)`` with |ZSTD| ≥ ``zstd`` (``docs/measurement.md#fit-flag``)."""

    lo: float = 0.5
    hi: float = 1.5
    zstd: float = 2.0

    def __post_init__(self) -> None:
        if not (0 < self.lo < 1 < self.hi):
            raise ConfigError(f"fit range {self.lo},{self.hi}: needs 0 < lo < 1 < hi", hint="e.g. --fit-range 0.5,1.5")
        if not self.zstd > 0:
            raise ConfigError(f"fit ZSTD cut-off {self.zstd} must be positive", hint="e.g. --fit-zstd 2")


def parse_fit_range(text: str, zstd: float = 2.0) -> FitRange:
    """``"lo,hi"`` → :class:`FitRange` (``--fit-range``).

    Example:
        >>> parse_fit_range("0.7,1.3")
        FitRange(lo=0.7, hi=1.3, zstd=2.0)
    """
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise ConfigError(f"--fit-range {text!r} is not lo,hi", hint="e.g. --fit-range 0.5,1.5") from None
    return FitRange(lo, hi, zstd)


def wilson_hilferty(msq: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """ZSTD ``(MnSq^(1/3) − 1)(3/q) + q/3`` with ``q = √q²``; NaN where q² ≤ 0.

    Example:
        >>> wilson_hilferty(np.array([1.0]), np.array([0.25])).round(6).tolist()
        [0.166667]
    """
    q2 = np.asarray(q2, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.sqrt(np.where(q2 > 0, q2, np.nan))
        return (np.cbrt(msq) - 1.0) * (3.0 / q) + q / 3.0


def fit_sums(
    x: np.ndarray, e: np.ndarray, w: np.ndarray | None = None, c: np.ndarray | None = None,
    key: np.ndarray | None = None, n_keys: int = 1,
) -> tuple[np.ndarray, ...]:  # fmt: skip
    """Per element (``key``, 0..n_keys−1; default one element) the sums (N, Σz², Σ C/W², Σ(x−E)², ΣW, Σ(C−W²)).

    ``w`` and ``c`` default to the binary moments of ``e`` = P.

    Args:
        x: Observed category per rating.
        e: Expected score E per rating.
        w: Variance W per rating; ``None``: e(1 − e).
        c: Kurtosis C per rating; ``None``: w(1 − 3w).
        key: Element index per rating (0..n_keys−1); ``None``: all 0.
        n_keys: Number of elements.
    """
    if w is None:
        w = e * (1.0 - e)
    if c is None:
        c = w * (1.0 - 3.0 * w)
    key = np.zeros(x.shape[0], dtype=np.int64) if key is None else key
    res2 = (x - e) ** 2

    def total(v: np.ndarray | None) -> np.ndarray:
        return np.bincount(key, weights=v, minlength=n_keys).astype(float)

    return total(None), total(res2 / w), total(c / (w * w)), total(res2), total(w), total(c - w * w)


def mean_squares(
    n: np.ndarray, z2: np.ndarray, cw2: np.ndarray, res2: np.ndarray, w: np.ndarray, cmw: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(infit, infit ZSTD, outfit, outfit ZSTD) from the sums of :func:`fit_sums` (NaN where N = 0).

    Args:
        n: Ratings per element (N).
        z2: Σz² per element.
        cw2: Σ C/W² per element.
        res2: Σ(x−E)² per element.
        w: ΣW per element.
        cmw: Σ(C−W²) per element.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.where(n > 0, n, np.nan)
        outfit = z2 / nn
        q2_out = cw2 / nn**2 - 1.0 / nn
        infit = res2 / np.where(n > 0, w, np.nan)
        q2_in = cmw / np.where(n > 0, w, np.nan) ** 2
    return infit, wilson_hilferty(infit, q2_in), outfit, wilson_hilferty(outfit, q2_out)


def fit_flags(infit: np.ndarray, infit_z: np.ndarray, outfit: np.ndarray, outfit_z: np.ndarray, rule: FitRange) -> list[str]:
    """``underfit``/``overfit``/empty per element by the rule of ``docs/measurement.md#fit-flag``.

    Args:
        infit: Infit mean square per element.
        infit_z: Infit ZSTD per element.
        outfit: Outfit mean square per element.
        outfit_z: Outfit ZSTD per element.
        rule: The mean-square range and ZSTD bound.
    """
    with np.errstate(invalid="ignore"):
        under = ((infit > rule.hi) & (infit_z >= rule.zstd)) | ((outfit > rule.hi) & (outfit_z >= rule.zstd))
        over = ((infit < rule.lo) & (infit_z <= -rule.zstd)) | ((outfit < rule.lo) & (outfit_z <= -rule.zstd))
    return ["underfit" if u else "overfit" if o else "" for u, o in zip(under, over, strict=True)]


def extreme_elements(key: np.ndarray, cat: np.ndarray, top: np.ndarray, n_keys: int) -> np.ndarray:
    """Elements whose every rating is its criterion's lowest category, or every one the top category.

    Args:
        key: Element index per rating.
        cat: Observed category per rating (0 lowest).
        top: Top category of each rating's criterion.
        n_keys: Number of elements.

    Example:
        >>> extreme_elements(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 2]), np.array([2, 1, 1, 2]), 2).tolist()
        [True, False]
    """
    n = np.bincount(key, minlength=n_keys)
    low = np.bincount(key, weights=(cat == 0), minlength=n_keys)
    high = np.bincount(key, weights=(cat == top), minlength=n_keys)
    return (n > 0) & ((low == n) | (high == n))


def fit_table(
    est: Estimates,
    obs: Observations,
    *,
    rule: FitRange = FitRange(),
    groups: tuple[Sequence[str], np.ndarray] | None = None,
) -> pl.DataFrame:
    """The fit table (``docs/measurement.md#fit-table``): rows ``criterion`` (FACETS order), ``rater`` (sorted),
    ``group`` (sorted levels of ``groups`` = (levels, level code per exchange)), ``exchange`` (THETA order);
    columns :data:`FIT_COLUMNS`.

    Args:
        est: The fitted estimates.
        obs: Their observations.
        rule: The flag rule (mean-square range and ZSTD bound).
        groups: (levels, level code per exchange) for the ``group`` rows; ``None``: none.

    Example:
        >>> from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
        >>> from tutormetrics.psychometrics.mfrm.design import prepare_ratings
        >>> from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
        >>> from tutormetrics.psychometrics.measurement.observations import observations
        >>> ratings, _ = simulate_mfrm(n_items=80, seed=4)
        >>> prep = prepare_ratings(ratings)
        >>> est = estimates_from_result(fit_mfrm(ratings), prep)
        >>> fit_table(est, observations(est, prep)).filter(pl.col("facet") == "rater")["level"].to_list()
        ['r1', 'r2']
    """
    e, w, c = category_moments(est.theta[obs.item] + obs.offset, obs.crit, est.tau, est.n_steps)
    x = obs.cat.astype(float)
    n_items, n_raters = est.n_items, len(est.raters)
    ext_item = extreme_elements(obs.item, obs.cat, obs.top, n_items)
    ext_rater = extreme_elements(obs.rater, obs.cat, obs.top, n_raters)
    used = ~ext_item[obs.item] & ~ext_rater[obs.rater]
    facets: list[tuple[str, list[str], np.ndarray, np.ndarray]] = [
        ("criterion", est.criteria, obs.crit, np.zeros(len(est.criteria), dtype=bool)),
        ("rater", est.raters, obs.rater, ext_rater),
    ]
    if groups is not None:
        levels, code = groups
        facets.append(("group", list(levels), np.asarray(code)[obs.item], np.zeros(len(levels), dtype=bool)))
    facets.append(("exchange", [str(v) for v in est.ids.to_list()], obs.item, ext_item))
    parts = [_facet_rows(name, levels, key, ext, x, e, w, c, used, rule) for name, levels, key, ext in facets]
    return pl.concat(parts, how="vertical")


def _facet_rows(
    facet: str, levels: list[str], key: np.ndarray, extreme: np.ndarray,
    x: np.ndarray, e: np.ndarray, w: np.ndarray, c: np.ndarray, used: np.ndarray, rule: FitRange,
) -> pl.DataFrame:  # fmt: skip
    """The rows of one facet: sums over the used ratings, NaN with a reason where there are none."""
    k = len(levels)
    sums = fit_sums(x[used], e[used], w[used], c[used], key=key[used], n_keys=k)
    infit, infit_z, outfit, outfit_z = mean_squares(*sums)
    n_all = np.bincount(key, minlength=k)
    reasons: list[str] = []
    for el in range(k):
        if extreme[el]:
            reasons.append("extreme")
        elif sums[0][el] == 0:
            reasons.append("no_observations")
        elif not (np.isfinite(infit_z[el]) and np.isfinite(outfit_z[el])):
            reasons.append("zstd_undefined")
        else:
            reasons.append("")
    bad = extreme | (sums[0] == 0)
    infit, infit_z, outfit, outfit_z = (np.where(bad, np.nan, v) for v in (infit, infit_z, outfit, outfit_z))
    n = np.where(extreme, n_all, sums[0]).astype(np.int64)
    return pl.DataFrame(
        {
            "facet": [facet] * k, "level": levels, "n": n, "infit": infit, "infit_zstd": infit_z,
            "outfit": outfit, "outfit_zstd": outfit_z, "flag": fit_flags(infit, infit_z, outfit, outfit_z, rule),
            "reason": reasons,
        },
        schema={"facet": pl.String, "level": pl.String, "n": pl.Int64, "infit": pl.Float64, "infit_zstd": pl.Float64,
                "outfit": pl.Float64, "outfit_zstd": pl.Float64, "flag": pl.String, "reason": pl.String},
    )  # fmt: skip


def fit_line(table: pl.DataFrame) -> str:
    """The stderr line: ``fit: 4 criteria, 1 rater, 2 groups, 2476 exchanges (1177 extreme, not fitted); 0 elements
    underfit, 104 overfit``."""
    count = {f: table.filter(pl.col("facet") == f).height for f in ("criterion", "rater", "group", "exchange")}
    extreme = table.filter((pl.col("facet") == "exchange") & pl.col("reason").str.contains("extreme")).height
    under = table.filter(pl.col("flag") == "underfit").height
    over = table.filter(pl.col("flag") == "overfit").height

    def n(word: str, k: int) -> str:
        return f"{k} {word}" + ("" if k == 1 else ("es" if word.endswith("x") else "s"))

    parts = [f"{count['criterion']} criteri{'on' if count['criterion'] == 1 else 'a'}", n("rater", count["rater"])]
    if count["group"]:
        parts.append(n("group", count["group"]))
    parts.append(f"{count['exchange']} exchange{'' if count['exchange'] == 1 else 's'} ({extreme} extreme, not fitted)")
    return f"fit: {', '.join(parts)}; {under} elements underfit, {over} overfit"
